//! TaskSpec: what the Scheduler hands an agent (D-041, baseline §9), with MVP-0.3's
//! interface contracts (`contracts.provides/requires`), `scope.preserved_paths` and
//! `verification.evidence_types`, and the evidence categories of seed 001 §8.2.

use serde::{Deserialize, Serialize};

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TaskSpec {
    pub id: String,
    #[serde(rename = "type")]
    pub task_type: TaskType,
    pub title: String,
    pub description: String,
    pub acceptance_criteria: Vec<String>,
    /// Evidence category (seed 001 §8.2); decides the required evidence.
    pub category: Option<TaskCategory>,
    /// Phase or milestone the task belongs to (milestone review groups by it).
    pub phase: Option<String>,
    pub scope: TaskScope,
    #[serde(default, skip_serializing_if = "Contracts::is_empty")]
    pub contracts: Contracts,
    pub dependencies: Vec<TaskDependency>,
    pub verification: Verification,
    pub constraints: Constraints,
    pub context_refs: ContextRefs,
    pub output_contract: OutputContract,
}

wire_enum! {
    pub enum TaskType {
        Execute = "execute",
        Review = "review",
        Debug = "debug",
        Compact = "compact",
        MineExperience = "mine_experience",
    }
}

/// Task categories of the evidence policy (seed 001 §8.2): the C++ ones and their
/// language-neutral counterparts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TaskCategory {
    CppLogic,
    CppBuild,
    CppGui,
    CppNetwork,
    CppDeploy,
    Logic,
    Build,
    Gui,
    Network,
    Deploy,
    Config,
    Docs,
    Test,
    Refactor,
    Bugfix,
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TaskScope {
    pub write_area: Option<String>,
    pub expected_files: Option<Vec<String>>,
    pub allowed_paths: Option<Vec<String>>,
    pub denied_paths: Option<Vec<String>>,
    pub preserved_paths: Option<Vec<String>>,
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Contracts {
    pub provides: Option<Vec<InterfaceContract>>,
    pub requires: Option<Vec<InterfaceContract>>,
}

impl Contracts {
    pub fn is_empty(&self) -> bool {
        self.provides.is_none() && self.requires.is_none()
    }
}

/// An interface a task provides or requires (seed 001 §6.1).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct InterfaceContract {
    pub module: String,
    pub kind: ContractKind,
    pub spec: String,
    pub stability: Stability,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ContractKind {
    Api,
    Schema,
    File,
    Config,
    Protocol,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Stability {
    Stable,
    Volatile,
    Frozen,
}

/// One dependency edge (baseline §9).
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TaskDependency {
    pub depends_on_task_id: String,
    pub dependency_type: DependencyType,
    pub reason: Option<String>,
    pub source: Option<DependencySource>,
}

wire_enum! {
    pub enum DependencyType {
        Hard = "hard",
        Soft = "soft",
        Conflict = "conflict",
        Serialization = "serialization",
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DependencySource {
    Architecture,
    Scheduler,
    Worker,
    User,
    System,
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Verification {
    /// Recommended commands; agents may run more and must report what they ran.
    pub commands: Option<Vec<String>>,
    pub required: bool,
    pub fallback_allowed: bool,
    pub evidence_types: Option<Vec<EvidenceType>>,
}

/// Evidence kinds of the evidence policy (seed 001 §8.2), including the two the global
/// rules add (`debugger_analysis`, `explanation`).
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum EvidenceType {
    BuildPass,
    TestPass,
    TestOutput,
    StaticAnalysis,
    Screenshot,
    Pcap,
    DeployVerify,
    SmokeTest,
    DiffReview,
    Reproduction,
    BuildLog,
    CodeTrace,
    DebuggerAnalysis,
    Explanation,
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Constraints {
    pub max_turns: u32,
    pub soft_timeout_ms: u64,
    pub hard_timeout_ms: u64,
    pub retry_budget: u32,
    pub model_policy: ModelPolicy,
    pub model_id: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ModelPolicy {
    SchedulerForced,
    AgentSelect,
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ContextRefs {
    pub plan_ref: Option<String>,
    pub arc_ref: Option<String>,
    pub parent_task_results: Option<Vec<String>>,
    pub artifacts: Option<Vec<String>>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub enum OutputContract {
    ExecutorResult,
    ReviewerResult,
    DebuggerResult,
    CompactorResult,
    ExperienceMinerResult,
}
