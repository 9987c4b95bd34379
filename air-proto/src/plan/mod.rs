//! Plans: the Markdown plan format (`docs/plan-format.md`) and the task graph it
//! compiles to.
//!
//! The types and the graph algorithms are always available; the compiler from Markdown
//! (`compile`) comes with the `plan` feature, because it pulls in the Markdown and YAML
//! parsers.

#[cfg(feature = "plan")]
mod blocks;
#[cfg(feature = "plan")]
mod compile;
pub mod graph;

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::task::{ModelPolicy, TaskSpec};

#[cfg(feature = "plan")]
pub use compile::{compile, FIELDS, FRONT_MATTER_KEYS};

/// Version of the `task-graph.json` shape.
pub const TASK_GRAPH_VERSION: u32 = 1;

/// A compiled plan: settings, phases, tasks (full TaskSpecs with defaults applied) and
/// the waves of its hard dependencies. Written to `.air/shared/plan/task-graph.json`.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TaskGraph {
    pub version: u32,
    pub title: Option<String>,
    /// The plan file the graph was compiled from, as given.
    pub source: Option<String>,
    /// The plan's text outside any task (goal, background), for agents' context.
    pub overview: Option<String>,
    pub settings: PlanSettings,
    pub phases: Vec<Phase>,
    pub tasks: Vec<TaskSpec>,
    pub waves: Vec<Vec<String>>,
}

/// A phase (milestone): when all its tasks are done, the Architecture Designer reviews
/// it.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Phase {
    pub id: String,
    pub title: Option<String>,
}

/// Plan-wide settings from the front matter. Absent fields fall back to the user's
/// config and then to built-in defaults; command-line flags override them.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PlanSettings {
    /// Most agents running at once.
    pub concurrency: Option<u32>,
    pub permission_mode: Option<PermissionMode>,
    pub on_ask: Option<OnAsk>,
    /// Whether each task works in its own worktree in a git project (`false`: the
    /// tasks share the checkout, as outside git).
    pub worktrees: Option<bool>,
    /// When the merged work lands in the checkout.
    pub land: Option<Land>,
    #[serde(default, skip_serializing_if = "ConstraintDefaults::is_empty")]
    pub defaults: ConstraintDefaults,
    #[serde(default, skip_serializing_if = "Budgets::is_empty")]
    pub budgets: Budgets,
}

/// Defaults for the constraints of every task that does not set its own.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ConstraintDefaults {
    pub max_turns: Option<u32>,
    pub soft_timeout_ms: Option<u64>,
    pub hard_timeout_ms: Option<u64>,
    pub retry_budget: Option<u32>,
    pub model_policy: Option<ModelPolicy>,
    pub model_id: Option<String>,
}

impl ConstraintDefaults {
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// Plan-wide budgets: when one is reached the scheduler stops dispatching.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Budgets {
    /// US dollars.
    pub max_cost: Option<f64>,
    pub max_tokens: Option<u64>,
    pub max_time_ms: Option<u64>,
}

impl Budgets {
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// These budgets with every one `over` sets replaced.
    pub fn overridden_by(&self, over: &Budgets) -> Budgets {
        Budgets {
            max_cost: over.max_cost.or(self.max_cost),
            max_tokens: over.max_tokens.or(self.max_tokens),
            max_time_ms: over.max_time_ms.or(self.max_time_ms),
        }
    }
}

wire_enum! {
    /// How much the PermissionEngine lets agents do without asking (the modes Claude
    /// Code users know).
    pub enum PermissionMode {
        /// Reads and project writes are allowed; risky actions ask.
        Default = "default",
        /// Like default, and edits inside the task's scope never ask.
        AcceptEdits = "accept_edits",
        /// Read-only: every write and command is refused.
        Plan = "plan",
        /// Nothing asks, except what the security model always confirms.
        BypassPermissions = "bypass_permissions",
    }
}

wire_enum! {
    /// What happens to a permission request that needs a human when none is there.
    pub enum OnAsk {
        /// Refuse; the agent is told and adapts.
        Deny = "deny",
        /// Stop the task as blocked.
        Fail = "fail",
        /// Keep the request until a client answers it, then deny after a timeout.
        Queue = "queue",
    }
}

wire_enum! {
    /// When a run whose tasks worked in worktrees brings its merged work into the
    /// person's checkout.
    pub enum Land {
        /// Never: the work stays on the session's integration branch.
        Never = "never",
        /// When the checkout's branch has not moved on and the work touches none of
        /// the person's uncommitted or untracked files (the default).
        Clean = "clean",
        /// Also when the checkout's branch moved on (as a merge commit), unless git
        /// finds a conflict; never over uncommitted or untracked files.
        Always = "always",
    }
}

/// Most agents running at once when neither the run, the plan nor the user's
/// configuration sets it.
pub const DEFAULT_CONCURRENCY: u32 = 4;

/// Built-in constraint defaults, used when neither the task nor the plan sets one (the
/// worker applies the same turn limit to a task that names none).
pub const DEFAULT_MAX_TURNS: u32 = 50;
pub const DEFAULT_SOFT_TIMEOUT_MS: u64 = 15 * 60 * 1000;
pub const DEFAULT_HARD_TIMEOUT_MS: u64 = 45 * 60 * 1000;
pub const DEFAULT_RETRY_BUDGET: u32 = 2;

/// One finding about a plan: where, which field, what.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PlanDiagnostic {
    /// 1-based line in the plan file.
    pub line: u32,
    /// The field, front matter key or section concerned.
    pub field: Option<String>,
    /// The task concerned.
    pub task_id: Option<String>,
    pub message: String,
}

impl PlanDiagnostic {
    pub fn new(line: u32, field: Option<&str>, message: impl Into<String>) -> Self {
        Self {
            line,
            field: field.map(str::to_string),
            task_id: None,
            message: message.into(),
        }
    }

    /// `file:line: field: message`.
    pub fn display<'a>(&'a self, file: &'a str) -> impl fmt::Display + 'a {
        DisplayDiagnostic {
            file,
            diagnostic: self,
        }
    }
}

struct DisplayDiagnostic<'a> {
    file: &'a str,
    diagnostic: &'a PlanDiagnostic,
}

impl fmt::Display for DisplayDiagnostic<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = self.diagnostic;
        write!(f, "{}:{}: ", self.file, d.line)?;
        if let Some(field) = &d.field {
            write!(f, "{field}: ")?;
        }
        f.write_str(&d.message)
    }
}

/// Every error found in a plan, in line order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PlanErrors {
    pub file: String,
    pub errors: Vec<PlanDiagnostic>,
}

impl fmt::Display for PlanErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.errors.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "{}", e.display(&self.file))?;
        }
        Ok(())
    }
}

impl std::error::Error for PlanErrors {}

/// A plan that compiled, with the warnings found on the way.
#[derive(Clone, Debug, PartialEq)]
pub struct Compiled {
    pub graph: TaskGraph,
    pub warnings: Vec<PlanDiagnostic>,
}
