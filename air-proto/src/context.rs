//! What an agent is started with besides its TaskSpec (baseline §14): the runtime
//! context and the reference-based ContextPack.

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentRuntimeContext {
    pub session_id: String,
    pub project_id: String,
    pub agent_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
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
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextPack {
    pub refs: ContextPackRefs,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assembled_context_ref: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notes: Option<Vec<String>>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextPackRefs {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_ref: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arc_ref: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_refs: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_refs: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rule_refs: Option<Vec<String>>,
}
