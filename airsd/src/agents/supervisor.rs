//! The worker supervisor: starts `air-worker` processes and speaks NDJSON with them
//! (D-039).
//!
//! One process per agent, in its own process group, with the project as its working
//! directory and a clean environment plus what the provider needs. `agent.start` is
//! the first line written to it. Its stdout is decoded as protocol messages; its stderr
//! goes to a file in the session's artifacts. A worker that prints anything that is not
//! a valid message is told so (`protocol.error`) and killed. A worker whose parent dies
//! sees its stdin close and exits.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use air_proto::codec::{self, NdjsonDecoder, DEFAULT_MAX_LINE};
use air_proto::ipc::{ControlMessage, Direction, IpcBody, IpcHeader, IpcMessage, ProtocolError};
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;
use tokio::sync::mpsc;

/// How workers are started.
#[derive(Clone, Debug)]
pub struct WorkerCommand {
    pub program: PathBuf,
    pub args: Vec<OsString>,
    /// The whole environment of a worker (nothing else is inherited).
    pub env: Vec<(OsString, OsString)>,
    /// How long a cancelled worker has to exit before it is killed.
    pub cancel_grace: Duration,
    /// Most messages buffered from one worker before reading pauses.
    pub queue: usize,
}

/// Environment variables a worker gets from airsd's environment: the basics of a
/// process, TLS and proxy settings, provider keys and endpoints, and air's own.
pub fn worker_env(vars: impl Iterator<Item = (OsString, OsString)>) -> Vec<(OsString, OsString)> {
    const KEEP: &[&str] = &[
        "PATH",
        "HOME",
        "USER",
        "LOGNAME",
        "SHELL",
        "LANG",
        "LC_ALL",
        "LC_CTYPE",
        "TZ",
        "TMPDIR",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "NO_PROXY",
        "http_proxy",
        "https_proxy",
        "no_proxy",
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
    ];
    vars.filter(|(k, _)| {
        k.to_str().is_some_and(|k| {
            KEEP.contains(&k) || k.starts_with("AIR_") || air_proto::env::is_provider_var(k)
        })
    })
    .collect()
}

/// The answer to a tool call of an agent that has no project tools (the Compactor, the
/// ExperienceMiner, the Main Agent proposing the profile): refused, naming the call.
pub fn not_its_tool(call: &air_proto::ipc::ToolCall) -> air_proto::ipc::ToolResult {
    air_proto::ipc::ToolResult {
        tool_call_id: call.tool_call_id.clone(),
        status: air_proto::ipc::ToolResultStatus::Error,
        output: None,
        content: None,
        error: Some(air_proto::error::WireError {
            kind: air_proto::error::ErrorKind::PermissionDenied,
            message: format!(
                "`{}` is not this agent's tool: it only hands back its result (submit_result)",
                call.tool
            ),
            details: None,
        }),
        truncated: false,
        artifact_ref: None,
    }
}

/// What a worker reports to its owner.
#[derive(Debug)]
pub enum WorkerEvent {
    /// A valid message from the worker.
    Message {
        agent_id: String,
        message: Box<IpcMessage>,
    },
    /// The worker broke the protocol; it has been told and is being killed.
    ProtocolViolation {
        agent_id: String,
        error: ProtocolError,
    },
    /// The process ended (after its stdout closed).
    Exited { agent_id: String, exit: Exit },
}

/// How a worker process ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Exit {
    pub code: Option<i32>,
    pub signal: Option<i32>,
}

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.code, self.signal) {
            (Some(c), _) => write!(f, "exit code {c}"),
            (None, Some(s)) => match Signal::try_from(s) {
                Ok(sig) => write!(f, "killed by {sig}"),
                Err(_) => write!(f, "killed by signal {s}"),
            },
            (None, None) => f.write_str("ended"),
        }
    }
}

/// A running worker (clones share the same process and pipe).
#[derive(Clone)]
pub struct Worker {
    pub agent_id: String,
    pub pid: u32,
    stdin: mpsc::UnboundedSender<Vec<u8>>,
    session_id: String,
    exited: Arc<AtomicBool>,
    cancel_grace: Duration,
}

/// Why a worker could not start.
#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    #[error("cannot start {program}: {source}")]
    Spawn {
        program: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot create {path}: {source}")]
    Stderr {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot encode agent.start: {0}")]
    Encode(String),
}

impl Worker {
    /// Starts a worker and writes `start` to it. Messages and the exit arrive on
    /// `events`.
    pub fn spawn(
        command: &WorkerCommand,
        cwd: &Path,
        stderr_path: &Path,
        start: &IpcMessage,
        events: mpsc::Sender<WorkerEvent>,
    ) -> Result<Worker, SpawnError> {
        let agent_id = start.header.agent_id.clone();
        let first = codec::encode(start, DEFAULT_MAX_LINE)
            .map_err(|e| SpawnError::Encode(e.to_string()))?;
        if let Some(dir) = stderr_path.parent() {
            std::fs::create_dir_all(dir).map_err(|source| SpawnError::Stderr {
                path: dir.to_path_buf(),
                source,
            })?;
        }
        let stderr = std::fs::File::create(stderr_path).map_err(|source| SpawnError::Stderr {
            path: stderr_path.to_path_buf(),
            source,
        })?;
        let mut child = Command::new(&command.program)
            .args(&command.args)
            .env_clear()
            .envs(command.env.iter().map(|(k, v)| (k, v)))
            .current_dir(cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(stderr))
            .process_group(0)
            .kill_on_drop(false)
            .spawn()
            .map_err(|source| SpawnError::Spawn {
                program: command.program.clone(),
                source,
            })?;
        let pid = child.id().unwrap_or(0);
        let (Some(mut stdin), Some(mut stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = kill_group(pid, Signal::SIGKILL);
            return Err(SpawnError::Spawn {
                program: command.program.clone(),
                source: std::io::Error::other("no pipes to the child"),
            });
        };
        // As much of the first line as the pipe takes goes now, not when the writer
        // task is first polled: the worker waits for it before anything else.
        let sent = nix::unistd::write(&stdin, &first).unwrap_or(0);
        let (line_tx, mut line_rx) = mpsc::unbounded_channel::<Vec<u8>>();
        if sent < first.len() {
            let _ = line_tx.send(first[sent..].to_vec());
        }
        let exited = Arc::new(AtomicBool::new(false));
        // Writer: lines to stdin, in order; stops when the worker closes its end.
        tokio::spawn(async move {
            while let Some(line) = line_rx.recv().await {
                if stdin.write_all(&line).await.is_err() || stdin.flush().await.is_err() {
                    break;
                }
            }
        });
        let session_id = start.header.session_id.clone();
        let reader_events = events.clone();
        let reader_agent = agent_id.clone();
        let reader_lines = line_tx.clone();
        let reader_session = session_id.clone();
        // Reader, then waiter: stdout until EOF (or a violation), then the exit.
        tokio::spawn({
            let exited = exited.clone();
            async move {
                // Read stdout until EOF, but also notice the worker's exit while a
                // grandchild still holds the pipe open: then drain what is buffered for
                // a moment and move on.
                let mut status = None;
                let violation = {
                    let read = read_messages(&mut stdout, &reader_agent, &reader_events);
                    tokio::pin!(read);
                    tokio::select! {
                        violation = &mut read => violation,
                        waited = child.wait() => {
                            status = Some(waited);
                            tokio::time::timeout(Duration::from_millis(500), &mut read)
                                .await
                                .unwrap_or(None)
                        }
                    }
                };
                if let Some(error) = violation {
                    let header =
                        IpcHeader::new(Direction::ParentToWorker, &reader_session, &reader_agent);
                    if let Ok(line) = codec::encode(
                        &IpcMessage {
                            header,
                            body: IpcBody::ProtocolError(error.clone()),
                        },
                        DEFAULT_MAX_LINE,
                    ) {
                        let _ = reader_lines.send(line);
                    }
                    let _ = reader_events
                        .send(WorkerEvent::ProtocolViolation {
                            agent_id: reader_agent.clone(),
                            error,
                        })
                        .await;
                    // Give the notice a moment to reach the worker, then stop it.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    let _ = kill_group(pid, Signal::SIGKILL);
                }
                drop(stdout);
                let waited = match status {
                    Some(waited) => waited,
                    None => child.wait().await,
                };
                let exit = match waited {
                    Ok(status) => {
                        use std::os::unix::process::ExitStatusExt;
                        Exit {
                            code: status.code(),
                            signal: status.signal(),
                        }
                    }
                    Err(_) => Exit {
                        code: None,
                        signal: None,
                    },
                };
                exited.store(true, Ordering::SeqCst);
                // Reap anything left in the group (grandchildren of a crashed worker).
                let _ = kill_group(pid, Signal::SIGKILL);
                let _ = reader_events
                    .send(WorkerEvent::Exited {
                        agent_id: reader_agent,
                        exit,
                    })
                    .await;
            }
        });
        Ok(Worker {
            agent_id,
            pid,
            stdin: line_tx,
            session_id,
            exited,
            cancel_grace: command.cancel_grace,
        })
    }

    /// Sends a control message; false when the worker is gone.
    pub fn control(&self, control: ControlMessage) -> bool {
        let message = IpcMessage {
            header: IpcHeader::new(Direction::ParentToWorker, &self.session_id, &self.agent_id),
            body: IpcBody::Control(control),
        };
        match codec::encode(&message, DEFAULT_MAX_LINE) {
            Ok(line) => self.stdin.send(line).is_ok(),
            Err(_) => false,
        }
    }

    /// Sends a reply (tool results) correlated to `request`.
    pub fn reply(&self, request: &IpcHeader, body: IpcBody) -> bool {
        let message = IpcMessage {
            header: IpcHeader::reply_to(request, Direction::ParentToWorker),
            body,
        };
        match codec::encode(&message, DEFAULT_MAX_LINE) {
            Ok(line) => self.stdin.send(line).is_ok(),
            Err(_) => false,
        }
    }

    /// Kills the worker's whole process group now.
    /// Whether the worker process has ended.
    pub fn exited(&self) -> bool {
        self.exited.load(Ordering::SeqCst)
    }

    pub fn kill(&self) {
        if !self.exited.load(Ordering::SeqCst) {
            let _ = kill_group(self.pid, Signal::SIGKILL);
        }
    }

    /// Asks the worker to hold between its steps (`agent.pause`).
    pub fn pause(&self, reason: &str) {
        self.control(ControlMessage::Pause {
            reason: reason.to_string(),
        });
    }

    /// Gives the worker what the user said to its task (`agent.message`).
    pub fn tell(&self, text: &str) {
        self.control(ControlMessage::Message {
            text: text.to_string(),
        });
    }

    /// Lets a held worker go on (`agent.resume`).
    pub fn resume(&self) {
        self.control(ControlMessage::Resume);
    }

    /// Asks the worker to stop (`agent.cancel`); terminates its process group after the
    /// grace period, and kills it a second later.
    pub fn cancel(&self, reason: &str) {
        self.control(ControlMessage::Cancel {
            reason: reason.to_string(),
        });
        let (pid, grace, exited) = (self.pid, self.cancel_grace, self.exited.clone());
        tokio::spawn(async move {
            tokio::time::sleep(grace).await;
            if exited.load(Ordering::SeqCst) {
                return;
            }
            let _ = kill_group(pid, Signal::SIGTERM);
            tokio::time::sleep(Duration::from_secs(1)).await;
            if !exited.load(Ordering::SeqCst) {
                let _ = kill_group(pid, Signal::SIGKILL);
            }
        });
    }
}

fn kill_group(pid: u32, signal: Signal) -> nix::Result<()> {
    let Ok(pid) = i32::try_from(pid) else {
        return Ok(());
    };
    if pid <= 1 {
        return Ok(());
    }
    killpg(Pid::from_raw(pid), signal)
}

/// Reads messages until EOF. Returns the first protocol violation, if any.
async fn read_messages(
    stdout: &mut tokio::process::ChildStdout,
    agent_id: &str,
    events: &mpsc::Sender<WorkerEvent>,
) -> Option<ProtocolError> {
    let mut decoder = NdjsonDecoder::new(DEFAULT_MAX_LINE);
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match stdout.read(&mut buf).await {
            Ok(0) | Err(_) => {
                return match decoder.finish::<IpcMessage>() {
                    Some(Err(e)) => Some(e.to_protocol_error()),
                    Some(Ok(message)) => {
                        let _ = deliver(agent_id, message, events).await;
                        None
                    }
                    None => None,
                };
            }
            Ok(n) => n,
        };
        decoder.push(&buf[..n]);
        while let Some(next) = decoder.next_message::<IpcMessage>() {
            match next {
                Ok(message) => {
                    if let Some(error) = deliver(agent_id, message, events).await {
                        return Some(error);
                    }
                }
                Err(e) => return Some(e.to_protocol_error()),
            }
        }
    }
}

/// Hands a message on, after checking it is one a worker may send as this agent.
async fn deliver(
    agent_id: &str,
    message: IpcMessage,
    events: &mpsc::Sender<WorkerEvent>,
) -> Option<ProtocolError> {
    use air_proto::ipc::ProtocolErrorCode;
    if message.header.direction != Direction::WorkerToParent {
        return Some(ProtocolError {
            code: ProtocolErrorCode::InvalidMessage,
            message: "a worker's messages must have direction worker_to_parent".into(),
            line: None,
            path: Some("direction".into()),
        });
    }
    if message.header.agent_id != agent_id {
        return Some(ProtocolError {
            code: ProtocolErrorCode::InvalidMessage,
            message: format!(
                "agent_id `{}` is not this worker's (`{agent_id}`)",
                message.header.agent_id
            ),
            line: None,
            path: Some("agent_id".into()),
        });
    }
    if let IpcBody::Control(_) = message.body {
        return Some(ProtocolError {
            code: ProtocolErrorCode::UnexpectedMessage,
            message: "a worker does not send control messages".into(),
            line: None,
            path: Some("kind".into()),
        });
    }
    let _ = events
        .send(WorkerEvent::Message {
            agent_id: agent_id.to_string(),
            message: Box::new(message),
        })
        .await;
    None
}
