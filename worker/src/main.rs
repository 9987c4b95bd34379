//! `air-worker`: one agent process. It speaks NDJSON on stdin/stdout with airsd (D-039):
//! stdout carries protocol messages only, stderr only crash text.
//!
//! Exit codes (D-039): 0 protocol-level completion, 1 uncaught error, 2 startup or
//! protocol error, 3 permission error, 4 cancelled by the parent (or the parent went
//! away: stdin closed), 5 killed on hard timeout.

use std::io::{Read, Write};
use std::process::ExitCode;

use air_proto::codec::{self, NdjsonDecoder, DEFAULT_MAX_LINE};
use air_proto::ipc::{
    ControlMessage, Direction, IpcBody, IpcHeader, IpcMessage, LogLevel, LogRecord,
};

const EXIT_PROTOCOL: u8 = 2;
const EXIT_CANCELLED: u8 = 4;

struct Peer {
    session_id: String,
    agent_id: String,
}

impl Peer {
    fn send(&self, body: IpcBody, correlation: Option<&IpcHeader>) -> std::io::Result<()> {
        let header = match correlation {
            Some(request) => IpcHeader::reply_to(request, Direction::WorkerToParent),
            None => IpcHeader::new(Direction::WorkerToParent, &self.session_id, &self.agent_id),
        };
        let line = codec::encode(&IpcMessage { header, body }, DEFAULT_MAX_LINE)
            .map_err(std::io::Error::other)?;
        let mut out = std::io::stdout().lock();
        out.write_all(&line)?;
        out.flush()
    }
}

fn main() -> ExitCode {
    let mut peer = Peer {
        session_id: String::new(),
        agent_id: String::new(),
    };
    let mut decoder = NdjsonDecoder::new(DEFAULT_MAX_LINE);
    let mut stdin = std::io::stdin().lock();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match stdin.read(&mut buf) {
            Ok(0) => return ExitCode::from(EXIT_CANCELLED),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                eprintln!("air-worker: cannot read stdin: {e}");
                return ExitCode::from(EXIT_PROTOCOL);
            }
        };
        decoder.push(&buf[..n]);
        while let Some(next) = decoder.next_message::<IpcMessage>() {
            let message = match next {
                Ok(m) => m,
                Err(e) => {
                    let _ = peer.send(IpcBody::ProtocolError(e.to_protocol_error()), None);
                    return ExitCode::from(EXIT_PROTOCOL);
                }
            };
            if let Some(code) = handle(&mut peer, message) {
                return ExitCode::from(code);
            }
        }
    }
}

/// Handles one message; `Some(code)` ends the process with that exit code.
fn handle(peer: &mut Peer, message: IpcMessage) -> Option<u8> {
    match message.body {
        IpcBody::Control(ControlMessage::Start(start)) => {
            peer.session_id = start.runtime.session_id.clone();
            peer.agent_id = start.runtime.agent_id.clone();
            let _ = peer.send(
                IpcBody::Log(LogRecord {
                    level: LogLevel::Error,
                    message: format!(
                        "this air-worker has no agent loop for task type `{}`",
                        start.task_spec.task_type.as_str()
                    ),
                    data: None,
                }),
                Some(&message.header),
            );
            Some(EXIT_PROTOCOL)
        }
        IpcBody::Control(ControlMessage::Cancel { .. }) => Some(EXIT_CANCELLED),
        IpcBody::Control(_) => None,
        other => {
            let kind = other.kind();
            let _ = peer.send(
                IpcBody::ProtocolError(air_proto::ipc::ProtocolError {
                    code: air_proto::ipc::ProtocolErrorCode::UnexpectedMessage,
                    message: format!("a worker does not accept `{}` messages", kind.as_str()),
                    line: None,
                    path: Some("kind".into()),
                }),
                Some(&message.header),
            );
            Some(EXIT_PROTOCOL)
        }
    }
}
