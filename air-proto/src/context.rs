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
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextPack {
    pub refs: ContextPackRefs,
    pub assembled_context_ref: Option<String>,
    pub notes: Option<Vec<String>>,
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
