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
    pub agent_type: Option<crate::role::AgentType>,
    /// The executor attempt of the task this agent belongs to (1-based).
    pub attempt: Option<u32>,
    /// The run's model override (`--model`/`--provider`), which comes before
    /// `AIR_MODEL` and the task's model.
    pub model: Option<String>,
    /// The model airsd resolved for this agent before the run started (asking the
    /// worker binary, with the override, `AIR_MODEL` and the task's model already
    /// weighed): the worker talks to this one, so the two never disagree.
    #[serde(default)]
    pub resolved: Option<ModelChoice>,
    /// Record the agent's provider exchanges into this directory (`--record`).
    pub record: Option<String>,
    /// Answer the agent from the recording in this directory instead of a live
    /// provider (`--replay`).
    pub replay: Option<String>,
    /// How often the worker must push `agent.heartbeat`; silence for much longer
    /// gets it killed as stalled.
    pub heartbeat_interval_ms: Option<u64>,
}

/// A resolved model, without its key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelChoice {
    pub provider: String,
    pub model: String,
    pub context_window: u64,
    pub max_output: u32,
    /// The extended-thinking budget the agent's turns ask for, when they think.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_budget: Option<u32>,
    /// No price is known for it (and it is not a local model, which costs nothing):
    /// its tokens would be counted as costing nothing, so a cost budget cannot hold.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unpriced: bool,
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
    /// The files the task's agents changed so far in this run, from airsd's record of
    /// their calls (a retry starts from them).
    pub task_changes: Option<Vec<String>>,
    /// The starting context airsd's ContextAssembler built for this agent (a few KB,
    /// so it travels inline; `assembled_context_ref` is for larger ones).
    pub assembled: Option<Box<AssembledContext>>,
    /// The skills installed (D-058), which the agent may load with `skill_load`.
    pub skills: Option<Vec<crate::skills::SkillRef>>,
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

/// An agent's starting context (D-046): Anthropic canonical messages, what went
/// into them, what was left out and why, and the token estimate against the model's
/// budget.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AssembledContext {
    pub request_id: String,
    /// The system prompt, layer by layer (system, agent type, project rules).
    pub system: Vec<String>,
    pub messages: Vec<crate::message::Message>,
    #[serde(flatten)]
    pub summary: ContextSummary,
}

wire_enum! {
    /// What a context is assembled for (D-046's `purpose`).
    pub enum ContextPurpose {
        UserResponse = "user_response",
        ArchitecturePlanning = "architecture_planning",
        TaskExecution = "task_execution",
        Review = "review",
        Debug = "debug",
        Compaction = "compaction",
        ExperienceMining = "experience_mining",
        ProjectProfile = "project_profile",
    }
}

/// Everything about an assembled context except its text: recorded with
/// `agent.started`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ContextSummary {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub purpose: Option<ContextPurpose>,
    pub included_refs: IncludedRefs,
    pub token_estimate: TokenEstimate,
    pub budget: BudgetPolicy,
    pub compaction: CompactionNeed,
    #[serde(default)]
    pub omissions: Vec<Omission>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct IncludedRefs {
    #[serde(default)]
    pub messages: Vec<String>,
    #[serde(default)]
    pub summaries: Vec<String>,
    #[serde(default)]
    pub artifacts: Vec<String>,
    #[serde(default)]
    pub rules: Vec<String>,
    #[serde(default)]
    pub tasks: Vec<String>,
    /// Learned memories (their ids).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub memories: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TokenEstimate {
    pub total: u64,
    /// Section name (`system`, `role`, `rules`, `task`, `plan`, `neighbours`,
    /// `parents`, `notes`, `previous`, `tools`) to its estimate.
    pub by_section: std::collections::BTreeMap<String, u64>,
    pub model_id: String,
}

/// How much of the model's window a context may use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct BudgetPolicy {
    pub context_window_tokens: u64,
    pub reserved_output_tokens: u64,
    pub safety_margin_tokens: u64,
    /// Above this share of the usable window, compaction is requested.
    pub target_usage_ratio: f64,
}

impl BudgetPolicy {
    /// Tokens the context may take before compaction is requested.
    pub fn threshold(&self) -> u64 {
        let usable = self
            .context_window_tokens
            .saturating_sub(self.reserved_output_tokens)
            .saturating_sub(self.safety_margin_tokens);
        // Window sizes are far below 2^52, so the float round trip is exact enough.
        (usable as f64 * self.target_usage_ratio) as u64
    }
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CompactionNeed {
    pub needed: bool,
    pub reason: Option<String>,
    pub requested_event_id: Option<String>,
}

/// Something left out of a context, and why (so the agent knows to look for it).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Omission {
    #[serde(rename = "ref")]
    pub reference: String,
    pub reason: String,
}

/// The heading of the section of an agent's first message that says where it works
/// (project root, platform, date, the working tree's state): facts of the machine and
/// the moment, which a replay does not compare.
pub const ENVIRONMENT_HEADING: &str = "## Environment";

/// The heading of the section of a reviewer's first message that holds the diff of
/// the task's changes: the working tree's state (outside a git repository there is
/// none), which a replay does not compare either.
pub const DIFF_HEADING: &str = "## The diff of the changes";

/// The sections whose text is the machine's and the moment's, not air's.
pub const MACHINE_SECTIONS: [&str; 2] = [ENVIRONMENT_HEADING, DIFF_HEADING];

/// The heading of the section that gives the project's profile (languages, build and
/// test commands, layout, conventions): the project's, as detected from its files or
/// as its user said it, present or not by the project's state. A replay leaves it out
/// of what it compares, so that a recording made before a project had a profile
/// replays after, and one project's recording in another's.
pub const PROJECT_HEADING: &str = "## The project";
