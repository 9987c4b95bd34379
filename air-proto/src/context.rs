//! What an agent is started with besides its TaskSpec (baseline §14): the runtime
//! context and the reference-based ContextPack.

use serde::{Deserialize, Serialize};

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentRuntimeContext {
    pub session_id: String,
    pub project_id: String,
    pub agent_id: String,
    pub worktree_path: Option<String>,
    pub permission_template: PermissionTemplate,
    /// The role this agent plays on the task (a reviewer works on an `execute` task).
    pub agent_type: Option<crate::event::AgentType>,
    /// The executor attempt of the task this agent belongs to (1-based).
    pub attempt: Option<u32>,
    /// How often the worker must push `agent.heartbeat`; silence for much longer
    /// gets it killed as stalled.
    pub heartbeat_interval_ms: Option<u64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PermissionTemplate {
    MainDirect,
    Executor,
    Reviewer,
    Debugger,
    System,
}

/// Lightweight and reference-based: large bodies live in artifacts and summaries and are
/// loaded through the ContextAssembler.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ContextPack {
    pub refs: ContextPackRefs,
    pub assembled_context_ref: Option<String>,
    pub notes: Option<Vec<String>>,
    /// The executor result a reviewer reviews or a debugger investigates.
    pub previous_result: Option<Box<crate::result::WorkerResult>>,
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextPackRefs {
    pub plan_ref: Option<String>,
    pub arc_ref: Option<String>,
    pub task_refs: Option<Vec<String>>,
    pub artifact_refs: Option<Vec<String>>,
    pub rule_refs: Option<Vec<String>>,
}
