//! Messages on the worker pipe (D-039, baseline §8): NDJSON over the worker's stdin and
//! stdout, one [`IpcMessage`] per line.
//!
//! Every message carries the same header (`id`, `kind`, `direction`, `timestamp`,
//! `session_id`, `agent_id`, optional `correlation_id`) and one body field chosen by
//! `kind`: `control`, `event`, the inline `level`/`message`/`data` of a log line, or for
//! the dotted kinds the kind with `.` turned into `_` (`tool.call` → `tool_call`,
//! `protocol.error` → `protocol_error`, …). A body field that does not belong to the
//! kind is rejected, so a message means one thing only.

use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;

pub use crate::codec::{ProtocolError, ProtocolErrorCode};
use crate::context::{AgentRuntimeContext, ContextPack};
use crate::error::WireError;
use crate::event::RuntimeEvent;
use crate::result::WorkerResult;
use crate::task::TaskSpec;
use crate::time::IsoTime;

#[derive(Clone, Debug, PartialEq)]
pub struct IpcMessage {
    pub header: IpcHeader,
    pub body: IpcBody,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IpcHeader {
    pub id: String,
    pub direction: Direction,
    pub timestamp: IsoTime,
    pub session_id: String,
    pub agent_id: String,
    pub correlation_id: Option<String>,
}

impl IpcHeader {
    /// A header with a fresh id and the current time.
    pub fn new(direction: Direction, session_id: &str, agent_id: &str) -> Self {
        Self {
            id: crate::ids::new_id(),
            direction,
            timestamp: crate::time::now_iso(),
            session_id: session_id.to_owned(),
            agent_id: agent_id.to_owned(),
            correlation_id: None,
        }
    }

    /// The same header answering `request`: fresh id, `correlation_id` = the request's id.
    pub fn reply_to(request: &IpcHeader, direction: Direction) -> Self {
        let mut header = Self::new(direction, &request.session_id, &request.agent_id);
        header.correlation_id = Some(request.id.clone());
        header
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    ParentToWorker,
    WorkerToParent,
}

#[derive(Clone, Debug, PartialEq)]
pub enum IpcBody {
    Control(ControlMessage),
    Event(RuntimeEvent),
    Log(LogRecord),
    ToolCall(ToolCall),
    ToolResult(ToolResult),
    ToolStream(ToolStream),
    WorkerResult(WorkerResult),
    WorkerCheckpoint(WorkerCheckpoint),
    ProtocolError(ProtocolError),
}

impl IpcBody {
    pub fn kind(&self) -> IpcKind {
        match self {
            IpcBody::Control(_) => IpcKind::Control,
            IpcBody::Event(_) => IpcKind::Event,
            IpcBody::Log(_) => IpcKind::Log,
            IpcBody::ToolCall(_) => IpcKind::ToolCall,
            IpcBody::ToolResult(_) => IpcKind::ToolResult,
            IpcBody::ToolStream(_) => IpcKind::ToolStream,
            IpcBody::WorkerResult(_) => IpcKind::WorkerResult,
            IpcBody::WorkerCheckpoint(_) => IpcKind::WorkerCheckpoint,
            IpcBody::ProtocolError(_) => IpcKind::ProtocolError,
        }
    }
}

/// The V1 IPC kinds (baseline §8).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum IpcKind {
    #[serde(rename = "control")]
    Control,
    #[serde(rename = "event")]
    Event,
    #[serde(rename = "log")]
    Log,
    #[serde(rename = "tool.call")]
    ToolCall,
    #[serde(rename = "tool.result")]
    ToolResult,
    #[serde(rename = "tool.stream")]
    ToolStream,
    #[serde(rename = "worker.result")]
    WorkerResult,
    #[serde(rename = "worker.checkpoint")]
    WorkerCheckpoint,
    #[serde(rename = "protocol.error")]
    ProtocolError,
}

impl IpcKind {
    pub fn as_str(self) -> &'static str {
        match self {
            IpcKind::Control => "control",
            IpcKind::Event => "event",
            IpcKind::Log => "log",
            IpcKind::ToolCall => "tool.call",
            IpcKind::ToolResult => "tool.result",
            IpcKind::ToolStream => "tool.stream",
            IpcKind::WorkerResult => "worker.result",
            IpcKind::WorkerCheckpoint => "worker.checkpoint",
            IpcKind::ProtocolError => "protocol.error",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LogRecord {
    pub level: LogLevel,
    pub message: String,
    pub data: Option<Value>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LogLevel {
    Debug,
    Info,
    Warn,
    Error,
}

/// A worker asks airsd to run a tool (every effect on the project is one of these).
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub tool_call_id: String,
    pub tool: String,
    pub input: Value,
    /// The assistant message whose tool_use block asked for this call.
    pub origin_message_id: Option<String>,
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    pub tool_call_id: String,
    pub status: ToolResultStatus,
    pub output: Option<Value>,
    /// The output as the model reads it, rendered by the tool as plain text (the
    /// structured `output` is for the record and the clients); absent: the model
    /// reads `output` as JSON.
    pub content: Option<String>,
    pub error: Option<WireError>,
    /// The output was cut to a bounded size; the whole of it is in `artifact_ref`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncated: bool,
    pub artifact_ref: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolResultStatus {
    Ok,
    Error,
}

/// Partial output of a running streaming tool; the final `tool.result` still follows.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolStream {
    pub tool_call_id: String,
    pub channel: StreamChannel,
    pub text: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StreamChannel {
    Stdout,
    Stderr,
    Progress,
}

/// Where an agent loop stands, so a restarted worker can be told what happened before.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorkerCheckpoint {
    pub turn: u32,
    /// Loop state, e.g. `THINKING`, `REVIEWING`, `GATHERING`.
    pub state: String,
    pub message_ids: Option<Vec<String>>,
    pub note: Option<String>,
}

/// Control messages from the Scheduler to a worker (baseline §14).
#[derive(Clone, Debug, PartialEq)]
pub enum ControlMessage {
    Start(Box<AgentStart>),
    Cancel {
        reason: String,
    },
    Pause {
        reason: String,
    },
    Resume,
    ExtendTimeout {
        extra_ms: u64,
        reason: String,
    },
    /// The agent's soft timeout passed (`elapsed_ms` of its time so far; the hard
    /// timeout ends it at `hard_timeout_ms`): it should finish, or ask for more time
    /// with the reason (`agent.timeout_extension.requested`, answered by
    /// `agent.extend_timeout`).
    SoftTimeout {
        elapsed_ms: u64,
        hard_timeout_ms: u64,
    },
    /// What the user said to this agent's task (`@T2 …`): given to the model before
    /// its next turn (D-018).
    Message {
        text: String,
    },
    /// A Compactor finished with the agent's messages up to `upto_message_id`: with
    /// `summary_id` and `text`, the agent's next request holds `text` in their place;
    /// without them, the compaction failed (`reason`) and the agent goes on as it was.
    Compacted {
        upto_message_id: String,
        summary_id: Option<String>,
        text: Option<String>,
        reason: Option<String>,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub struct AgentStart {
    pub version: u32,
    pub task_spec: TaskSpec,
    pub context_pack: ContextPack,
    pub runtime: AgentRuntimeContext,
    /// The tools this agent may call (its whitelist), with their schemas; airsd
    /// still checks every call.
    pub tools: Vec<crate::tool::ToolDefinition>,
}

/// `air-worker --resolve JSON`: which model an agent would talk to. airsd asks the
/// worker binary before a run starts, because the worker is what reads the keys and
/// talks to providers (and inherits airsd's environment); a run whose agents could
/// not reach a model is refused before any task starts.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelQuery {
    pub agent_type: crate::role::AgentType,
    /// The run's `--model`/`--provider` override (`provider/model`, `model` or
    /// `provider/`): before `AIR_MODEL`.
    pub flag: Option<String>,
    /// The task's `model` from the plan: after `AIR_MODEL`.
    pub task: Option<String>,
    /// The run replays the recording in this directory (`--replay`).
    pub replay: Option<String>,
}

/// The answer to one [`ModelQuery`]: exactly one of `resolved` and `error`.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelReply {
    pub resolved: Option<ModelChoice>,
    pub error: Option<String>,
}

pub use crate::context::ModelChoice;

impl ControlMessage {
    pub fn type_name(&self) -> &'static str {
        match self {
            ControlMessage::Start(_) => "agent.start",
            ControlMessage::Cancel { .. } => "agent.cancel",
            ControlMessage::Pause { .. } => "agent.pause",
            ControlMessage::Resume => "agent.resume",
            ControlMessage::ExtendTimeout { .. } => "agent.extend_timeout",
            ControlMessage::SoftTimeout { .. } => "agent.soft_timeout",
            ControlMessage::Message { .. } => "agent.message",
            ControlMessage::Compacted { .. } => "agent.compacted",
        }
    }
}

// ---- wire forms -------------------------------------------------------------------
//
// The public enums are converted to and from flat wire structs so that serde tracks the
// JSON path of every field (internally tagged enums lose it) and so that "exactly one
// body, the one the kind names" is checked in one place.

#[derive(Serialize)]
struct IpcWireRef<'a> {
    id: &'a str,
    kind: IpcKind,
    direction: Direction,
    timestamp: &'a str,
    session_id: &'a str,
    agent_id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    correlation_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    control: Option<&'a ControlMessage>,
    #[serde(skip_serializing_if = "Option::is_none")]
    event: Option<&'a RuntimeEvent>,
    #[serde(skip_serializing_if = "Option::is_none")]
    level: Option<LogLevel>,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call: Option<&'a ToolCall>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_result: Option<&'a ToolResult>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_stream: Option<&'a ToolStream>,
    #[serde(skip_serializing_if = "Option::is_none")]
    worker_result: Option<&'a WorkerResult>,
    #[serde(skip_serializing_if = "Option::is_none")]
    worker_checkpoint: Option<&'a WorkerCheckpoint>,
    #[serde(skip_serializing_if = "Option::is_none")]
    protocol_error: Option<&'a ProtocolError>,
}

#[derive(Deserialize)]
struct IpcWire {
    id: String,
    kind: IpcKind,
    direction: Direction,
    timestamp: String,
    session_id: String,
    agent_id: String,
    #[serde(default)]
    correlation_id: Option<String>,
    #[serde(default)]
    control: Option<ControlMessage>,
    #[serde(default)]
    event: Option<RuntimeEvent>,
    #[serde(default)]
    level: Option<LogLevel>,
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    data: Option<Value>,
    #[serde(default)]
    tool_call: Option<ToolCall>,
    #[serde(default)]
    tool_result: Option<ToolResult>,
    #[serde(default)]
    tool_stream: Option<ToolStream>,
    #[serde(default)]
    worker_result: Option<WorkerResult>,
    #[serde(default)]
    worker_checkpoint: Option<WorkerCheckpoint>,
    #[serde(default)]
    protocol_error: Option<ProtocolError>,
}

/// How a worker process ends (D-039): its exit code says why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkerExit {
    /// 0: it sent its result (protocol-level completion).
    Completed,
    /// 1: an uncaught error.
    Uncaught,
    /// 2: a startup or protocol error.
    Protocol,
    /// 3: a permission error.
    Permission,
    /// 4: cancelled by the parent, or the parent went away (stdin closed).
    Cancelled,
    /// 5: it gave up at its hard timeout.
    Timeout,
    /// Any other code.
    Other(i32),
}

impl WorkerExit {
    pub fn from_code(code: i32) -> Self {
        match code {
            0 => Self::Completed,
            1 => Self::Uncaught,
            2 => Self::Protocol,
            3 => Self::Permission,
            4 => Self::Cancelled,
            5 => Self::Timeout,
            other => Self::Other(other),
        }
    }

    /// The process exit code.
    pub const fn code(self) -> u8 {
        match self {
            Self::Completed => 0,
            Self::Uncaught => 1,
            Self::Protocol => 2,
            Self::Permission => 3,
            Self::Cancelled => 4,
            Self::Timeout => 5,
            Self::Other(c) if c >= 0 && c <= 255 => c as u8,
            Self::Other(_) => 1,
        }
    }
}

impl Serialize for IpcMessage {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let h = &self.header;
        let mut wire = IpcWireRef {
            id: &h.id,
            kind: self.body.kind(),
            direction: h.direction,
            timestamp: &h.timestamp,
            session_id: &h.session_id,
            agent_id: &h.agent_id,
            correlation_id: h.correlation_id.as_deref(),
            control: None,
            event: None,
            level: None,
            message: None,
            data: None,
            tool_call: None,
            tool_result: None,
            tool_stream: None,
            worker_result: None,
            worker_checkpoint: None,
            protocol_error: None,
        };
        match &self.body {
            IpcBody::Control(c) => wire.control = Some(c),
            IpcBody::Event(e) => wire.event = Some(e),
            IpcBody::Log(l) => {
                wire.level = Some(l.level);
                wire.message = Some(&l.message);
                wire.data = l.data.as_ref();
            }
            IpcBody::ToolCall(c) => wire.tool_call = Some(c),
            IpcBody::ToolResult(r) => wire.tool_result = Some(r),
            IpcBody::ToolStream(s) => wire.tool_stream = Some(s),
            IpcBody::WorkerResult(r) => wire.worker_result = Some(r),
            IpcBody::WorkerCheckpoint(c) => wire.worker_checkpoint = Some(c),
            IpcBody::ProtocolError(e) => wire.protocol_error = Some(e),
        }
        wire.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for IpcMessage {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let wire = IpcWire::deserialize(deserializer)?;
        IpcMessage::try_from(wire).map_err(serde::de::Error::custom)
    }
}

impl TryFrom<IpcWire> for IpcMessage {
    type Error = String;

    fn try_from(w: IpcWire) -> Result<Self, String> {
        let kind = w.kind;
        let present: [(&str, bool); 11] = [
            ("control", w.control.is_some()),
            ("event", w.event.is_some()),
            ("level", w.level.is_some()),
            ("message", w.message.is_some()),
            ("data", w.data.is_some()),
            ("tool_call", w.tool_call.is_some()),
            ("tool_result", w.tool_result.is_some()),
            ("tool_stream", w.tool_stream.is_some()),
            ("worker_result", w.worker_result.is_some()),
            ("worker_checkpoint", w.worker_checkpoint.is_some()),
            ("protocol_error", w.protocol_error.is_some()),
        ];
        let allowed: &[&str] = match kind {
            IpcKind::Control => &["control"],
            IpcKind::Event => &["event"],
            IpcKind::Log => &["level", "message", "data"],
            IpcKind::ToolCall => &["tool_call"],
            IpcKind::ToolResult => &["tool_result"],
            IpcKind::ToolStream => &["tool_stream"],
            IpcKind::WorkerResult => &["worker_result"],
            IpcKind::WorkerCheckpoint => &["worker_checkpoint"],
            IpcKind::ProtocolError => &["protocol_error"],
        };
        if let Some((field, _)) = present.iter().find(|(f, p)| *p && !allowed.contains(f)) {
            return Err(format!(
                "field `{field}` is not allowed with kind `{}`",
                kind.as_str()
            ));
        }
        let missing = |field: &str| format!("kind `{}` requires field `{field}`", kind.as_str());
        let body = match kind {
            IpcKind::Control => IpcBody::Control(w.control.ok_or_else(|| missing("control"))?),
            IpcKind::Event => IpcBody::Event(w.event.ok_or_else(|| missing("event"))?),
            IpcKind::Log => IpcBody::Log(LogRecord {
                level: w.level.ok_or_else(|| missing("level"))?,
                message: w.message.ok_or_else(|| missing("message"))?,
                data: w.data,
            }),
            IpcKind::ToolCall => {
                IpcBody::ToolCall(w.tool_call.ok_or_else(|| missing("tool_call"))?)
            }
            IpcKind::ToolResult => {
                IpcBody::ToolResult(w.tool_result.ok_or_else(|| missing("tool_result"))?)
            }
            IpcKind::ToolStream => {
                IpcBody::ToolStream(w.tool_stream.ok_or_else(|| missing("tool_stream"))?)
            }
            IpcKind::WorkerResult => {
                IpcBody::WorkerResult(w.worker_result.ok_or_else(|| missing("worker_result"))?)
            }
            IpcKind::WorkerCheckpoint => IpcBody::WorkerCheckpoint(
                w.worker_checkpoint
                    .ok_or_else(|| missing("worker_checkpoint"))?,
            ),
            IpcKind::ProtocolError => {
                IpcBody::ProtocolError(w.protocol_error.ok_or_else(|| missing("protocol_error"))?)
            }
        };
        Ok(IpcMessage {
            header: IpcHeader {
                id: w.id,
                direction: w.direction,
                timestamp: w.timestamp,
                session_id: w.session_id,
                agent_id: w.agent_id,
                correlation_id: w.correlation_id,
            },
            body,
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
enum ControlType {
    #[serde(rename = "agent.start")]
    Start,
    #[serde(rename = "agent.cancel")]
    Cancel,
    #[serde(rename = "agent.pause")]
    Pause,
    #[serde(rename = "agent.resume")]
    Resume,
    #[serde(rename = "agent.extend_timeout")]
    ExtendTimeout,
    #[serde(rename = "agent.soft_timeout")]
    SoftTimeout,
    #[serde(rename = "agent.message")]
    Message,
    #[serde(rename = "agent.compacted")]
    Compacted,
}

#[derive(Serialize)]
struct ControlWireRef<'a> {
    #[serde(rename = "type")]
    control_type: ControlType,
    #[serde(skip_serializing_if = "Option::is_none")]
    version: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    task_spec: Option<&'a TaskSpec>,
    #[serde(skip_serializing_if = "Option::is_none")]
    context_pack: Option<&'a ContextPack>,
    #[serde(skip_serializing_if = "Option::is_none")]
    runtime: Option<&'a AgentRuntimeContext>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tools: Option<&'a [crate::tool::ToolDefinition]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    extra_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    elapsed_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    hard_timeout_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    upto_message_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    summary_id: Option<&'a str>,
}

#[derive(Deserialize)]
struct ControlWire {
    #[serde(rename = "type")]
    control_type: ControlType,
    #[serde(default)]
    version: Option<u32>,
    #[serde(default)]
    task_spec: Option<TaskSpec>,
    #[serde(default)]
    context_pack: Option<ContextPack>,
    #[serde(default)]
    runtime: Option<AgentRuntimeContext>,
    #[serde(default)]
    tools: Option<Vec<crate::tool::ToolDefinition>>,
    #[serde(default)]
    extra_ms: Option<u64>,
    #[serde(default)]
    elapsed_ms: Option<u64>,
    #[serde(default)]
    hard_timeout_ms: Option<u64>,
    #[serde(default)]
    reason: Option<String>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    upto_message_id: Option<String>,
    #[serde(default)]
    summary_id: Option<String>,
}

impl Serialize for ControlMessage {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut wire = ControlWireRef {
            control_type: ControlType::Resume,
            version: None,
            task_spec: None,
            context_pack: None,
            runtime: None,
            tools: None,
            extra_ms: None,
            elapsed_ms: None,
            hard_timeout_ms: None,
            reason: None,
            text: None,
            upto_message_id: None,
            summary_id: None,
        };
        match self {
            ControlMessage::Start(start) => {
                wire.control_type = ControlType::Start;
                wire.version = Some(start.version);
                wire.task_spec = Some(&start.task_spec);
                wire.context_pack = Some(&start.context_pack);
                wire.runtime = Some(&start.runtime);
                wire.tools = (!start.tools.is_empty()).then_some(start.tools.as_slice());
            }
            ControlMessage::Cancel { reason } => {
                wire.control_type = ControlType::Cancel;
                wire.reason = Some(reason);
            }
            ControlMessage::Pause { reason } => {
                wire.control_type = ControlType::Pause;
                wire.reason = Some(reason);
            }
            ControlMessage::Resume => {}
            ControlMessage::ExtendTimeout { extra_ms, reason } => {
                wire.control_type = ControlType::ExtendTimeout;
                wire.extra_ms = Some(*extra_ms);
                wire.reason = Some(reason);
            }
            ControlMessage::SoftTimeout {
                elapsed_ms,
                hard_timeout_ms,
            } => {
                wire.control_type = ControlType::SoftTimeout;
                wire.elapsed_ms = Some(*elapsed_ms);
                wire.hard_timeout_ms = Some(*hard_timeout_ms);
            }
            ControlMessage::Message { text } => {
                wire.control_type = ControlType::Message;
                wire.text = Some(text);
            }
            ControlMessage::Compacted {
                upto_message_id,
                summary_id,
                text,
                reason,
            } => {
                wire.control_type = ControlType::Compacted;
                wire.upto_message_id = Some(upto_message_id);
                wire.summary_id = summary_id.as_deref();
                wire.text = text.as_deref();
                wire.reason = reason.as_deref();
            }
        }
        wire.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for ControlMessage {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let wire = ControlWire::deserialize(deserializer)?;
        ControlMessage::try_from(wire).map_err(serde::de::Error::custom)
    }
}

impl TryFrom<ControlWire> for ControlMessage {
    type Error = String;

    fn try_from(w: ControlWire) -> Result<Self, String> {
        let name = match w.control_type {
            ControlType::Start => "agent.start",
            ControlType::Cancel => "agent.cancel",
            ControlType::Pause => "agent.pause",
            ControlType::Resume => "agent.resume",
            ControlType::ExtendTimeout => "agent.extend_timeout",
            ControlType::SoftTimeout => "agent.soft_timeout",
            ControlType::Message => "agent.message",
            ControlType::Compacted => "agent.compacted",
        };
        let missing = |field: &str| format!("control `{name}` requires field `{field}`");
        let allowed: &[&str] = match w.control_type {
            ControlType::Start => &["version", "task_spec", "context_pack", "runtime", "tools"],
            ControlType::Cancel | ControlType::Pause => &["reason"],
            ControlType::Resume => &[],
            ControlType::ExtendTimeout => &["extra_ms", "reason"],
            ControlType::SoftTimeout => &["elapsed_ms", "hard_timeout_ms"],
            ControlType::Message => &["text"],
            ControlType::Compacted => &["upto_message_id", "summary_id", "text", "reason"],
        };
        let present = [
            ("version", w.version.is_some()),
            ("task_spec", w.task_spec.is_some()),
            ("context_pack", w.context_pack.is_some()),
            ("runtime", w.runtime.is_some()),
            ("tools", w.tools.is_some()),
            ("extra_ms", w.extra_ms.is_some()),
            ("elapsed_ms", w.elapsed_ms.is_some()),
            ("hard_timeout_ms", w.hard_timeout_ms.is_some()),
            ("reason", w.reason.is_some()),
            ("text", w.text.is_some()),
            ("upto_message_id", w.upto_message_id.is_some()),
            ("summary_id", w.summary_id.is_some()),
        ];
        if let Some((field, _)) = present.iter().find(|(f, p)| *p && !allowed.contains(f)) {
            return Err(format!(
                "field `{field}` is not allowed with control `{name}`"
            ));
        }
        Ok(match w.control_type {
            ControlType::Start => {
                let version = w.version.ok_or_else(|| missing("version"))?;
                if version != 1 {
                    return Err(format!(
                        "control `agent.start` version {version} is not supported (expected 1)"
                    ));
                }
                ControlMessage::Start(Box::new(AgentStart {
                    version,
                    task_spec: w.task_spec.ok_or_else(|| missing("task_spec"))?,
                    context_pack: w.context_pack.ok_or_else(|| missing("context_pack"))?,
                    runtime: w.runtime.ok_or_else(|| missing("runtime"))?,
                    tools: w.tools.unwrap_or_default(),
                }))
            }
            ControlType::Cancel => ControlMessage::Cancel {
                reason: w.reason.ok_or_else(|| missing("reason"))?,
            },
            ControlType::Pause => ControlMessage::Pause {
                reason: w.reason.ok_or_else(|| missing("reason"))?,
            },
            ControlType::Resume => ControlMessage::Resume,
            ControlType::ExtendTimeout => ControlMessage::ExtendTimeout {
                extra_ms: w.extra_ms.ok_or_else(|| missing("extra_ms"))?,
                reason: w.reason.ok_or_else(|| missing("reason"))?,
            },
            ControlType::SoftTimeout => ControlMessage::SoftTimeout {
                elapsed_ms: w.elapsed_ms.ok_or_else(|| missing("elapsed_ms"))?,
                hard_timeout_ms: w
                    .hard_timeout_ms
                    .ok_or_else(|| missing("hard_timeout_ms"))?,
            },
            ControlType::Message => ControlMessage::Message {
                text: w.text.ok_or_else(|| missing("text"))?,
            },
            ControlType::Compacted => {
                if w.summary_id.is_some() != w.text.is_some() {
                    return Err(
                        "control `agent.compacted` carries `summary_id` and `text` together, or neither (a failure, with `reason`)"
                            .into(),
                    );
                }
                ControlMessage::Compacted {
                    upto_message_id: w
                        .upto_message_id
                        .ok_or_else(|| missing("upto_message_id"))?,
                    summary_id: w.summary_id,
                    text: w.text,
                    reason: w.reason,
                }
            }
        })
    }
}

/// The file in a recording directory (`--record DIR`) that says what project it was
/// made in (a hash of each of its files), beside each agent's `<agent id>.json`.
pub const RECORDING_MANIFEST: &str = "project-files.json";
