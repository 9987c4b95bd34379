//! `air-worker`: one agent process. It speaks NDJSON on stdin/stdout with airsd (D-039):
//! stdout carries protocol messages only, stderr only crash text. After `agent.start`
//! it runs the agent loop (`worker::agent`) and ends with `worker.result`.
//!
//! Exit codes (D-039): 0 protocol-level completion, 1 uncaught error, 2 startup or
//! protocol error, 3 permission error, 4 cancelled by the parent (or the parent went
//! away: stdin closed), 5 killed on hard timeout.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use air_proto::codec::{self, NdjsonDecoder, DEFAULT_MAX_LINE};
use air_proto::event::{EventSource, RuntimeEvent};
use air_proto::ipc::{
    AgentStart, ControlMessage, Direction, IpcBody, IpcHeader, IpcMessage, ProtocolError, ToolCall,
    ToolResult, ToolResultStatus,
};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use air_proto::ipc::WorkerExit;

const EXIT_PROTOCOL: u8 = WorkerExit::Protocol.code();
const EXIT_CANCELLED: u8 = WorkerExit::Cancelled.code();

/// The pipe to airsd.
struct Peer {
    session_id: String,
    agent_id: String,
    out: Mutex<std::io::Stdout>,
    /// Tool calls waiting for their answer, by id.
    waiting: Mutex<HashMap<String, oneshot::Sender<ToolResult>>>,
    /// Where the loop is, for the heartbeats: state, turn, tokens in and out.
    progress: Mutex<(&'static str, u32, (u64, u64))>,
    /// Since when its model's provider has said nothing of the answer it waits for.
    model_silent: Mutex<Option<std::time::Instant>>,
    role: air_proto::event::AgentType,
    /// Held by airsd (`agent.pause`) until `agent.resume`.
    paused: tokio::sync::watch::Sender<bool>,
    /// What the user said to this agent (`agent.message`), until its next turn.
    inbox: Mutex<Vec<String>>,
    /// airsd's word that the soft timeout passed (time so far, hard timeout), until
    /// the loop takes it.
    notice: Mutex<Option<(u64, u64)>>,
    /// airsd's word on the compaction asked for, until the loop takes it.
    compacted: Mutex<Option<worker::agent::Compacted>>,
    /// The request for more time waiting for airsd's answer.
    granted: Mutex<Option<oneshot::Sender<(u64, String)>>>,
}

impl Peer {
    fn heartbeat(&self) {
        let (state, turn, tokens) = *self.progress.lock().unwrap_or_else(|p| p.into_inner());
        if let Ok(e) = RuntimeEvent::of(
            self.session_id.as_str(),
            EventSource::agent(self.agent_id.as_str(), self.role),
            &air_proto::payload::AgentHeartbeat {
                agent_id: self.agent_id.clone(),
                state: Some(state.into()),
                turn: (turn > 0).then_some(turn),
                input_tokens: (tokens.0 > 0).then_some(tokens.0),
                output_tokens: (tokens.1 > 0).then_some(tokens.1),
                model_silent_ms: self
                    .model_silent
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .map(|t| u64::try_from(t.elapsed().as_millis()).unwrap_or(u64::MAX)),
                tools_running: u32::try_from(
                    self.waiting.lock().unwrap_or_else(|p| p.into_inner()).len(),
                )
                .ok()
                .filter(|n| *n > 0),
            },
        ) {
            let _ = self.send(IpcBody::Event(e), None);
        }
    }
}

impl Peer {
    fn send(&self, body: IpcBody, correlation: Option<&IpcHeader>) -> std::io::Result<()> {
        let header = match correlation {
            Some(request) => IpcHeader::reply_to(request, Direction::WorkerToParent),
            None => IpcHeader::new(Direction::WorkerToParent, &self.session_id, &self.agent_id),
        };
        let line = codec::encode(&IpcMessage { header, body }, DEFAULT_MAX_LINE)
            .map_err(std::io::Error::other)?;
        let mut out = self.out.lock().unwrap_or_else(|p| p.into_inner());
        out.write_all(&line)?;
        out.flush()
    }
}

impl worker::agent::Link for Peer {
    fn model_silent_since(&self, since: Option<std::time::Instant>) {
        *self.model_silent.lock().unwrap_or_else(|p| p.into_inner()) = since;
    }

    fn event(&self, event: RuntimeEvent) {
        let _ = self.send(IpcBody::Event(event), None);
    }

    fn progress(&self, state: worker::agent::LoopState, turn: u32, tokens: (u64, u64)) {
        let changed = {
            let mut p = self.progress.lock().unwrap_or_else(|p| p.into_inner());
            let changed = p.0 != state.as_str();
            *p = (state.as_str(), turn, tokens);
            changed
        };
        if changed {
            self.heartbeat();
        }
    }

    fn inbox(&self) -> Vec<String> {
        std::mem::take(&mut *self.inbox.lock().unwrap_or_else(|p| p.into_inner()))
    }

    fn compacted(&self) -> Option<worker::agent::Compacted> {
        self.compacted
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
    }

    fn time_notice(&self) -> Option<(u64, u64)> {
        self.notice.lock().unwrap_or_else(|p| p.into_inner()).take()
    }

    async fn ask_for_time(&self, extra_ms: u64, reason: String) -> (u64, String) {
        let (tx, rx) = oneshot::channel();
        *self.granted.lock().unwrap_or_else(|p| p.into_inner()) = Some(tx);
        let ask = RuntimeEvent::of(
            self.session_id.as_str(),
            EventSource::agent(self.agent_id.as_str(), self.role),
            &air_proto::payload::TimeoutExtensionRequested {
                agent_id: self.agent_id.clone(),
                extra_ms,
                reason: Some(reason),
            },
        );
        let sent = match ask {
            Ok(e) => self
                .send(IpcBody::Event(e), None)
                .map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        if let Err(e) = sent {
            return (0, format!("the request could not be sent to airsd: {e}"));
        }
        match tokio::time::timeout(Duration::from_secs(60), rx).await {
            Ok(Ok(answer)) => answer,
            _ => (0, "airsd did not answer within a minute".into()),
        }
    }

    async fn hold(&self) {
        let mut paused = self.paused.subscribe();
        if !*paused.borrow_and_update() {
            return;
        }
        // Held: the heartbeats say so until it goes on.
        let before = {
            let mut p = self.progress.lock().unwrap_or_else(|p| p.into_inner());
            std::mem::replace(&mut p.0, "PAUSED")
        };
        self.heartbeat();
        while *paused.borrow_and_update() {
            if paused.changed().await.is_err() {
                break;
            }
        }
        self.progress.lock().unwrap_or_else(|p| p.into_inner()).0 = before;
        self.heartbeat();
    }

    async fn call_tool(
        &self,
        tool_call_id: &str,
        tool: &str,
        input: Value,
        origin_message_id: &str,
    ) -> ToolResult {
        let (tx, rx) = oneshot::channel();
        self.waiting
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(tool_call_id.to_string(), tx);
        let sent = self.send(
            IpcBody::ToolCall(ToolCall {
                tool_call_id: tool_call_id.to_string(),
                tool: tool.to_string(),
                input,
                origin_message_id: (!origin_message_id.is_empty())
                    .then(|| origin_message_id.to_string()),
            }),
            None,
        );
        let failed = |message: String| ToolResult {
            tool_call_id: tool_call_id.to_string(),
            status: ToolResultStatus::Error,
            output: None,
            content: None,
            error: Some(air_proto::error::WireError {
                kind: air_proto::error::ErrorKind::Internal,
                message,
                details: None,
            }),
            truncated: false,
            artifact_ref: None,
        };
        if let Err(e) = sent {
            return failed(format!("the call could not be sent to airsd: {e}"));
        }
        rx.await
            .unwrap_or_else(|_| failed("airsd went away before answering".into()))
    }
}

/// What comes in on stdin.
enum Incoming {
    Message(Box<IpcMessage>),
    Malformed(ProtocolError),
    Closed,
}

fn read_stdin(tx: mpsc::UnboundedSender<Incoming>) {
    let mut decoder = NdjsonDecoder::new(DEFAULT_MAX_LINE);
    let mut stdin = std::io::stdin().lock();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match stdin.read(&mut buf) {
            Ok(0) | Err(_) => {
                let _ = tx.send(Incoming::Closed);
                return;
            }
            Ok(n) => n,
        };
        decoder.push(&buf[..n]);
        while let Some(next) = decoder.next_message::<IpcMessage>() {
            let item = match next {
                Ok(m) => Incoming::Message(Box::new(m)),
                Err(e) => Incoming::Malformed(e.to_protocol_error()),
            };
            if tx.send(item).is_err() {
                return;
            }
        }
    }
}

fn unexpected(kind: &str) -> ProtocolError {
    ProtocolError {
        code: air_proto::ipc::ProtocolErrorCode::UnexpectedMessage,
        message: format!("a worker does not accept `{kind}` messages"),
        line: None,
        path: Some("kind".into()),
    }
}

/// `air-worker --resolve JSON`: answers which model each [`ModelQuery`] would use,
/// as a JSON array of [`ModelReply`] on stdout (exit 0), or names the bad input
/// (exit 2).
///
/// [`ModelQuery`]: air_proto::ipc::ModelQuery
/// [`ModelReply`]: air_proto::ipc::ModelReply
fn resolve(json: &str) -> ExitCode {
    let queries: Vec<air_proto::ipc::ModelQuery> =
        match serde_path_to_error::deserialize(&mut serde_json::Deserializer::from_str(json)) {
            Ok(q) => q,
            Err(e) => {
                eprintln!("air-worker --resolve: {}: {}", e.path(), e.inner());
                return ExitCode::from(EXIT_PROTOCOL);
            }
        };
    let replies: Vec<_> = queries.iter().map(worker::model::answer).collect();
    match serde_json::to_string(&replies) {
        Ok(line) => {
            println!("{line}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("air-worker --resolve: {e}");
            ExitCode::from(EXIT_PROTOCOL)
        }
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [] => {}
        [flag, json] if flag == "--resolve" => return resolve(json),
        _ => {
            eprintln!("usage: air-worker (started by airsd, NDJSON on stdin/stdout) | air-worker --resolve JSON");
            return ExitCode::from(EXIT_PROTOCOL);
        }
    }
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("air-worker: cannot start: {e}");
            return ExitCode::from(EXIT_PROTOCOL);
        }
    };
    ExitCode::from(rt.block_on(run()))
}

async fn run() -> u8 {
    let (tx, mut rx) = mpsc::unbounded_channel();
    std::thread::spawn(move || read_stdin(tx));
    let mut peer = Peer {
        session_id: String::new(),
        agent_id: String::new(),
        out: Mutex::new(std::io::stdout()),
        waiting: Mutex::new(HashMap::new()),
        progress: Mutex::new(("LOADING", 0, (0, 0))),
        model_silent: Mutex::new(None),
        role: air_proto::event::AgentType::Executor,
        paused: tokio::sync::watch::Sender::new(false),
        inbox: Mutex::new(Vec::new()),
        notice: Mutex::new(None),
        compacted: Mutex::new(None),
        granted: Mutex::new(None),
    };
    // The first message must be `agent.start`.
    let start: Box<AgentStart> = loop {
        match rx.recv().await {
            None | Some(Incoming::Closed) => return EXIT_CANCELLED,
            Some(Incoming::Malformed(e)) => {
                let _ = peer.send(IpcBody::ProtocolError(e), None);
                return EXIT_PROTOCOL;
            }
            Some(Incoming::Message(m)) => match m.body {
                IpcBody::Control(ControlMessage::Start(start)) => break start,
                IpcBody::Control(ControlMessage::Cancel { .. }) => return EXIT_CANCELLED,
                IpcBody::Control(_) => {}
                other => {
                    let _ = peer.send(
                        IpcBody::ProtocolError(unexpected(other.kind().as_str())),
                        Some(&m.header),
                    );
                    return EXIT_PROTOCOL;
                }
            },
        }
    };
    peer.session_id = start.runtime.session_id.clone();
    peer.agent_id = start.runtime.agent_id.clone();
    peer.role = start
        .runtime
        .agent_type
        .unwrap_or(air_proto::event::AgentType::Executor);
    let peer = Arc::new(peer);

    // Everything after the start: answers to tool calls, cancels, and violations.
    let (stop_tx, mut stop_rx) = mpsc::unbounded_channel::<u8>();
    {
        let peer = peer.clone();
        tokio::spawn(async move {
            while let Some(item) = rx.recv().await {
                let code = match item {
                    Incoming::Closed => Some(EXIT_CANCELLED),
                    Incoming::Malformed(e) => {
                        let _ = peer.send(IpcBody::ProtocolError(e), None);
                        Some(EXIT_PROTOCOL)
                    }
                    Incoming::Message(m) => match m.body {
                        IpcBody::ToolResult(result) => {
                            let waiter = peer
                                .waiting
                                .lock()
                                .unwrap_or_else(|p| p.into_inner())
                                .remove(&result.tool_call_id);
                            if let Some(w) = waiter {
                                let _ = w.send(result);
                            }
                            None
                        }
                        IpcBody::ToolStream(_) => None,
                        IpcBody::Control(ControlMessage::Cancel { .. }) => Some(EXIT_CANCELLED),
                        IpcBody::Control(ControlMessage::Pause { .. }) => {
                            peer.paused.send_replace(true);
                            None
                        }
                        IpcBody::Control(ControlMessage::Resume) => {
                            peer.paused.send_replace(false);
                            None
                        }
                        IpcBody::Control(ControlMessage::SoftTimeout {
                            elapsed_ms,
                            hard_timeout_ms,
                        }) => {
                            *peer.notice.lock().unwrap_or_else(|p| p.into_inner()) =
                                Some((elapsed_ms, hard_timeout_ms));
                            None
                        }
                        IpcBody::Control(ControlMessage::ExtendTimeout { extra_ms, reason }) => {
                            let waiter = peer
                                .granted
                                .lock()
                                .unwrap_or_else(|p| p.into_inner())
                                .take();
                            if let Some(w) = waiter {
                                let _ = w.send((extra_ms, reason));
                            }
                            None
                        }
                        IpcBody::Control(ControlMessage::Compacted {
                            upto_message_id,
                            text,
                            reason,
                            ..
                        }) => {
                            *peer.compacted.lock().unwrap_or_else(|p| p.into_inner()) =
                                Some(worker::agent::Compacted {
                                    upto_message_id,
                                    text,
                                    reason,
                                });
                            None
                        }
                        IpcBody::Control(ControlMessage::Message { text }) => {
                            peer.inbox
                                .lock()
                                .unwrap_or_else(|p| p.into_inner())
                                .push(text);
                            None
                        }
                        IpcBody::Control(_) => None,
                        other => {
                            let _ = peer.send(
                                IpcBody::ProtocolError(unexpected(other.kind().as_str())),
                                Some(&m.header),
                            );
                            Some(EXIT_PROTOCOL)
                        }
                    },
                };
                if let Some(code) = code {
                    let _ = stop_tx.send(code);
                    return;
                }
            }
        });
    }

    // Heartbeats, as airsd asks.
    {
        let peer = peer.clone();
        let every =
            Duration::from_millis(start.runtime.heartbeat_interval_ms.unwrap_or(5_000).max(10));
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            loop {
                tick.tick().await;
                peer.heartbeat();
            }
        });
    }

    tokio::select! {
        result = worker::agent::run(&start, peer.as_ref()) => {
            if peer.send(IpcBody::WorkerResult(result), None).is_err() {
                return EXIT_CANCELLED;
            }
            WorkerExit::Completed.code()
        }
        code = stop_rx.recv() => code.unwrap_or(EXIT_CANCELLED),
    }
}
