//! The one client library of airsd, shared by the CLI, the TUI and tests: find the
//! socket, connect (starting the daemon when none runs), and shake hands.
//!
//! Auto-start: when nothing answers on the socket, the client spawns `airsd --detached`
//! for the project (stdio to `.air/local/logs/airsd.log`) and waits, bounded, for the
//! socket to answer. Two clients doing this at once end with one daemon: the daemon
//! takes the project lock before it binds, and the loser exits at once.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use jsonrpsee_ws_client::{WsClient, WsClientBuilder};
use tokio::net::UnixStream;

use crate::api::{params, AirApiClient, ClientHello, ClientMode, Hello};
use crate::layout::ProjectPaths;

/// Exit code of `airsd` when another daemon already serves the project.
const AIRSD_ALREADY_RUNNING: i32 = 3;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("no airsd answers on {socket}: {source}")]
    Unreachable {
        socket: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot start {airsd}: {source}")]
    Spawn {
        airsd: PathBuf,
        source: std::io::Error,
    },
    #[error("airsd did not answer within {waited:?}; the end of {log}:\n{tail}")]
    StartTimeout {
        waited: Duration,
        log: PathBuf,
        tail: String,
    },
    #[error("airsd exited at start ({status}); the end of {log}:\n{tail}")]
    StartFailed {
        status: String,
        log: PathBuf,
        tail: String,
    },
    #[error("{socket} is served by a process of another user (uid {uid}); refusing to talk to it")]
    ForeignServer { socket: PathBuf, uid: u32 },
    #[error("{socket} is served by the daemon of {other}, not of {ours}")]
    WrongProject {
        socket: PathBuf,
        ours: PathBuf,
        other: PathBuf,
    },
    #[error("{0}")]
    Rpc(#[from] jsonrpsee::core::ClientError),
}

impl ClientError {
    /// True when the daemon could not be reached or started (as opposed to a request
    /// that failed).
    pub fn is_unreachable(&self) -> bool {
        !matches!(
            self,
            ClientError::Rpc(jsonrpsee::core::ClientError::Call(_))
        )
    }
}

/// How to reach a project's daemon.
#[derive(Clone, Debug)]
pub struct ConnectOptions {
    pub paths: ProjectPaths,
    /// Who we are, for `daemon.hello`.
    pub client: String,
    pub version: String,
    pub session_id: Option<String>,
    pub mode: ClientMode,
    /// The `airsd` binary to start when none runs; `None` disables auto-start.
    pub airsd: Option<PathBuf>,
    /// How long to wait for a started daemon to answer.
    pub start_wait: Duration,
}

impl ConnectOptions {
    pub fn new(paths: ProjectPaths, client: &str, version: &str) -> Self {
        Self {
            paths,
            client: client.to_string(),
            version: version.to_string(),
            session_id: None,
            mode: ClientMode::Watching,
            airsd: None,
            start_wait: Duration::from_secs(10),
        }
    }
}

/// A connection to airsd, after the handshake.
pub struct Connection {
    pub client: WsClient,
    pub hello: Hello,
    pub socket: PathBuf,
    /// This client started the daemon.
    pub started_daemon: bool,
}

async fn open(socket: &Path) -> Result<WsClient, ClientError> {
    let stream = UnixStream::connect(socket)
        .await
        .map_err(|source| ClientError::Unreachable {
            socket: socket.to_path_buf(),
            source,
        })?;
    Ok(WsClientBuilder::default()
        .max_request_size(crate::api::MAX_MESSAGE_BYTES)
        .max_response_size(64 * 1024 * 1024)
        .max_buffer_capacity_per_subscription(65_536)
        .request_timeout(Duration::from_secs(60))
        .build_with_stream("ws://localhost/", stream)
        .await?)
}

async fn handshake(
    client: WsClient,
    options: &ConnectOptions,
    socket: PathBuf,
    started: bool,
) -> Result<Connection, ClientError> {
    let hello = client
        .hello(params::Hello {
            hello: ClientHello {
                client: options.client.clone(),
                version: options.version.clone(),
                protocol_version: crate::PROTOCOL_VERSION,
                session_id: options.session_id.clone(),
                mode: options.mode,
            },
        })
        .await?;
    Ok(Connection {
        client,
        hello,
        socket,
        started_daemon: started,
    })
}

/// Connects to the project's daemon, starting it when none runs and `options.airsd` is
/// set.
pub async fn connect(options: &ConnectOptions) -> Result<Connection, ClientError> {
    let socket = options.paths.client_socket();
    let first = match open(&socket).await {
        Ok(client) => match handshake(client, options, socket, false).await {
            // A daemon that was stopping closed the connection before it said hello:
            // it is gone or going, and another is started as when none answers.
            Err(ClientError::Rpc(
                e @ (jsonrpsee::core::ClientError::RestartNeeded(_)
                | jsonrpsee::core::ClientError::Transport(_)),
            )) if options.airsd.is_some() => ClientError::Rpc(e),
            answered => return answered,
        },
        Err(e) => e,
    };
    let Some(airsd) = &options.airsd else {
        return Err(first);
    };
    let mut child = spawn_daemon(airsd, &options.paths)?;
    let mut respawn_at: Option<Instant> = None;
    let started = Instant::now();
    let mut delay = Duration::from_millis(2);
    loop {
        // The socket path may change (a fallback is recorded at bind).
        let socket = options.paths.client_socket();
        if let Ok(client) = open(&socket).await {
            return handshake(client, options, socket, true).await;
        }
        if let Some(c) = child.as_mut() {
            if let Ok(Some(status)) = c.try_wait() {
                child = None;
                if status.code() != Some(AIRSD_ALREADY_RUNNING) {
                    return Err(ClientError::StartFailed {
                        status: status.to_string(),
                        log: options.paths.daemon_log(),
                        tail: log_tail(&options.paths.daemon_log(), 20),
                    });
                }
                // Another daemon holds the lock: one starting (its socket comes soon) or
                // one stopping (its lock goes soon). Try again shortly either way.
                respawn_at = Some(Instant::now() + Duration::from_millis(100));
            }
        }
        if child.is_none() && respawn_at.is_some_and(|at| Instant::now() >= at) {
            respawn_at = None;
            child = spawn_daemon(airsd, &options.paths)?;
        }
        if started.elapsed() >= options.start_wait {
            return Err(ClientError::StartTimeout {
                waited: options.start_wait,
                log: options.paths.daemon_log(),
                tail: log_tail(&options.paths.daemon_log(), 20),
            });
        }
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(Duration::from_millis(50));
    }
}

/// Connects without starting anything.
pub async fn connect_running(options: &ConnectOptions) -> Result<Connection, ClientError> {
    let mut options = options.clone();
    options.airsd = None;
    connect(&options).await
}

fn spawn_daemon(airsd: &Path, paths: &ProjectPaths) -> Result<Option<Child>, ClientError> {
    let spawn_err = |source| ClientError::Spawn {
        airsd: airsd.to_path_buf(),
        source,
    };
    let log = paths.daemon_log();
    if let Some(dir) = log.parent() {
        std::fs::create_dir_all(dir).map_err(spawn_err)?;
    }
    let out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log)
        .map_err(spawn_err)?;
    let err = out.try_clone().map_err(spawn_err)?;
    let child = Command::new(airsd)
        .arg("--detached")
        .arg("--project")
        .arg(paths.root())
        .current_dir(paths.root())
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .map_err(spawn_err)?;
    Ok(Some(child))
}

/// The last `n` lines of a log file (empty if it cannot be read).
pub fn log_tail(path: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// The `airsd` binary beside `exe` (how `air` finds the daemon it ships with).
pub fn airsd_beside(exe: &Path) -> PathBuf {
    exe.parent()
        .map(|d| d.join("airsd"))
        .unwrap_or_else(|| PathBuf::from("airsd"))
}

/// What a failed call says, for people: the daemon's message as it wrote it (not
/// the error object's debug form), on one line.
pub fn said(e: &jsonrpsee::core::client::Error) -> String {
    let text = match e {
        jsonrpsee::core::client::Error::Call(obj) => obj.message().to_string(),
        other => other.to_string(),
    };
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ")
}
