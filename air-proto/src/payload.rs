//! Typed payloads of the event types whose effects are kept in domain tables or in the
//! projection. The registry validates an event's payload against its type here; types
//! without a typed payload carry any JSON object.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::event::AgentType;
use crate::result::{ArtifactRef, EvidenceRef, WorkerResult};
use crate::task::TaskSpec;

/// `session.created`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionCreated {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_ref: Option<String>,
}

/// `session.archived`, `session.deleted`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionStatusChanged {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `user.message.created`, `assistant.message.created`: a complete canonical message
/// (Anthropic content blocks).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MessageCreated {
    pub message_id: String,
    /// Anthropic content: a string or an array of content blocks.
    pub content: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
}

/// Token usage of one provider turn.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read_input_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_creation_input_tokens: Option<u64>,
}

/// `agent.started`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AgentStarted {
    pub agent_id: String,
    pub agent_type: AgentType,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// `agent.completed`: the worker exited after a protocol-level completion.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AgentCompleted {
    pub agent_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<WorkerResult>,
}

/// `agent.failed`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AgentFailed {
    pub agent_id: String,
    pub reason: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
}

/// `task.created`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskCreated {
    pub task: TaskSpec,
}

/// Every task status event (`task.ready`, `task.started`, `task.reviewing`,
/// `task.debugging`, `task.completed`, `task.failed`, `task.blocked`, `task.cancelled`);
/// the new status is the event type.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskStatusChanged {
    pub task_id: String,
    /// Attempt number (1-based) for `task.started`; absent means "the next one".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_type: Option<AgentType>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `tool.started`: written before the tool runs, so it is the write-ahead record a
/// recovery finds for a tool call that never finished.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolStarted {
    pub tool_run_id: String,
    pub tool: String,
    pub input: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin_message_id: Option<String>,
}

/// `tool.completed`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCompleted {
    pub tool_run_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
}

/// `tool.failed`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolFailed {
    pub tool_run_id: String,
    pub error: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
}

/// `command.started`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CommandStarted {
    pub command_run_id: String,
    pub command: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_run_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin_message_id: Option<String>,
}

/// `command.completed`: the command ran to its end (any exit code).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CommandCompleted {
    pub command_run_id: String,
    pub exit_code: i32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
}

/// `command.failed`: the command could not run, or was killed (timeout, cancel).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CommandFailed {
    pub command_run_id: String,
    pub error: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
}

/// `artifact.created`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ArtifactCreated {
    pub artifact: ArtifactRef,
    /// Path relative to the session's `artifacts/` directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub original_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_run_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command_run_id: Option<String>,
    /// Generic association for entities without a dedicated column.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entity_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entity_id: Option<String>,
}

/// `diagnostic.created`: one compiler/linker/analyzer finding.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DiagnosticCreated {
    pub diagnostic_id: String,
    pub severity: DiagnosticSeverity,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub column: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// Normalised signature, equal for the same error across compilers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_tool: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command_run_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DiagnosticSeverity {
    Error,
    Warning,
    Note,
}

impl DiagnosticSeverity {
    pub fn as_str(self) -> &'static str {
        match self {
            DiagnosticSeverity::Error => "error",
            DiagnosticSeverity::Warning => "warning",
            DiagnosticSeverity::Note => "note",
        }
    }
}

/// `evidence.created`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EvidenceCreated {
    pub evidence: EvidenceRef,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
}

/// `workspace.created`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorkspaceCreated {
    pub workspace_id: String,
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_ref: Option<String>,
}

/// `workspace.merged`, `workspace.removed`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorkspaceChanged {
    pub workspace_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `permission.requested`: a decision that needs a human (or the run's policy).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PermissionRequested {
    pub request_id: String,
    /// What is asked, e.g. `write /etc/hosts`, `run sudo apt-get install cmake`.
    pub action: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_run_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub risk: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `permission.decision.recorded`: an answer to a request, or a decision the policy took
/// on its own (no `request_id`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PermissionDecisionRecorded {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    pub decision: PermissionDecision,
    /// Who decided: a client (`client:<id>`), the user, or `policy`.
    pub decided_by: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<DecisionScope>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PermissionDecision {
    Allow,
    Deny,
}

impl PermissionDecision {
    pub fn as_str(self) -> &'static str {
        match self {
            PermissionDecision::Allow => "allow",
            PermissionDecision::Deny => "deny",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DecisionScope {
    Once,
    Session,
    Always,
}

// ---- ephemeral ------------------------------------------------------------------

/// `token.delta`: a piece of a streaming assistant message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TokenDelta {
    pub message_id: String,
    /// Index of the content block within the message.
    pub block_index: u32,
    pub kind: DeltaKind,
    pub text: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeltaKind {
    Text,
    Thinking,
    InputJson,
}

/// `stdout.delta`, `stderr.delta`: a chunk of a running command's output.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OutputDelta {
    pub command_run_id: String,
    pub data: String,
}

/// `tool.progress`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolProgress {
    pub tool_run_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// 0.0 ..= 1.0 when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fraction: Option<f64>,
}

/// `task.progress`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskProgress {
    pub task_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fraction: Option<f64>,
}

/// `agent.heartbeat` (D-008: pushed by the worker every few seconds).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AgentHeartbeat {
    pub agent_id: String,
    /// Loop state, e.g. `THINKING`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
}
