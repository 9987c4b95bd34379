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

// Task categories of the evidence policy (seed 001 §8.2): the C++ ones and their
// language-neutral counterparts. (Not a doc comment: it would reach the models in the
// schemas.)
wire_enum! {
    pub enum TaskCategory {
        CppLogic = "cpp_logic",
        CppBuild = "cpp_build",
        CppGui = "cpp_gui",
        CppNetwork = "cpp_network",
        CppDeploy = "cpp_deploy",
        Logic = "logic",
        Build = "build",
        Gui = "gui",
        Network = "network",
        Deploy = "deploy",
        Config = "config",
        Docs = "docs",
        Test = "test",
        Refactor = "refactor",
        Bugfix = "bugfix",
    }
}

impl TaskCategory {
    /// The evidence a completed task of this category must carry (seed 001 §8.2, the
    /// evidence policy table; the language-neutral categories follow their C++
    /// counterparts).
    pub fn required_evidence(self) -> &'static [EvidenceType] {
        use EvidenceType::*;
        match self {
            Self::CppLogic | Self::Logic => &[BuildPass, TestPass],
            Self::CppBuild | Self::Build | Self::Config => &[BuildPass],
            Self::CppGui | Self::Gui => &[BuildPass, Screenshot],
            Self::CppNetwork | Self::Network => &[BuildPass, Pcap],
            Self::CppDeploy | Self::Deploy => &[BuildPass, DeployVerify],
            Self::Docs => &[],
            Self::Test => &[BuildPass, TestOutput],
            Self::Refactor => &[BuildPass, TestPass, DiffReview],
            Self::Bugfix => &[BuildPass, TestPass, Reproduction],
        }
    }

    /// Evidence the policy table lists as optional for this category.
    pub fn optional_evidence(self) -> &'static [EvidenceType] {
        use EvidenceType::*;
        match self {
            Self::CppLogic | Self::Logic | Self::Refactor => &[StaticAnalysis],
            Self::CppGui | Self::Gui | Self::CppNetwork | Self::Network => &[TestPass],
            Self::CppDeploy | Self::Deploy => &[SmokeTest],
            Self::Bugfix => &[Screenshot, Pcap],
            Self::CppBuild | Self::Build | Self::Config | Self::Docs | Self::Test => &[],
        }
    }
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

wire_enum! {
    pub enum ContractKind {
        Api = "api",
        Schema = "schema",
        File = "file",
        Config = "config",
        Protocol = "protocol",
    }
}

wire_enum! {
    pub enum Stability {
        Stable = "stable",
        Volatile = "volatile",
        Frozen = "frozen",
    }
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
    /// Checks the plan declares evidence of: a command here that passes is that
    /// evidence (`- \`./smoke.sh\` [smoke_test]`), whatever airsd would read in it.
    pub declared: Option<Vec<DeclaredCheck>>,
}

/// A verify command and the evidence it yields when it passes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DeclaredCheck {
    pub command: String,
    pub evidence_type: EvidenceType,
}

/// The evidence a plan may declare a check to yield (those a passing command can
/// show); the others need a tool of air that records them.
pub const DECLARABLE: &[EvidenceType] = &[
    EvidenceType::BuildPass,
    EvidenceType::TestPass,
    EvidenceType::TestOutput,
    EvidenceType::StaticAnalysis,
    EvidenceType::SmokeTest,
];

impl Verification {
    /// No commands, nothing required.
    pub fn none() -> Verification {
        Verification {
            commands: None,
            required: false,
            fallback_allowed: false,
            evidence_types: None,
            declared: None,
        }
    }
}

// The evidence kinds of the evidence policy (seed 001 §8.2), including the two the
// global rules add (`debugger_analysis`, `explanation`). (Not a doc comment: it would
// reach the models in the schemas.)
wire_enum! {
    pub enum EvidenceType {
        BuildPass = "build_pass",
        TestPass = "test_pass",
        TestOutput = "test_output",
        StaticAnalysis = "static_analysis",
        Screenshot = "screenshot",
        Pcap = "pcap",
        DeployVerify = "deploy_verify",
        SmokeTest = "smoke_test",
        DiffReview = "diff_review",
        Reproduction = "reproduction",
        BuildLog = "build_log",
        CodeTrace = "code_trace",
        DebuggerAnalysis = "debugger_analysis",
        Explanation = "explanation",
    }
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

wire_enum! {
    pub enum ModelPolicy {
        SchedulerForced = "scheduler_forced",
        AgentSelect = "agent_select",
    }
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ContextRefs {
    pub plan_ref: Option<String>,
    pub arc_ref: Option<String>,
    pub parent_task_results: Option<Vec<String>>,
    pub artifacts: Option<Vec<String>>,
}

wire_enum! {
    pub enum OutputContract {
        ExecutorResult = "ExecutorResult",
        ReviewerResult = "ReviewerResult",
        DebuggerResult = "DebuggerResult",
        CompactorResult = "CompactorResult",
        ExperienceMinerResult = "ExperienceMinerResult",
        ProjectProfile = "ProjectProfile",
    }
}

impl TaskType {
    /// The WorkerResult shape an agent working on a task of this type returns.
    pub fn output_contract(self) -> OutputContract {
        match self {
            Self::Execute => OutputContract::ExecutorResult,
            Self::Review => OutputContract::ReviewerResult,
            Self::Debug => OutputContract::DebuggerResult,
            Self::Compact => OutputContract::CompactorResult,
            Self::MineExperience => OutputContract::ExperienceMinerResult,
        }
    }
}

/// What joins a phase and a round in a milestone review's task id
/// (`<phase>:milestone-<n>`), which the scheduler adds at the end of each phase.
pub const MILESTONE: &str = ":milestone-";

/// The phase a milestone review is of, if `task_id` is one.
pub fn milestone_phase(task_id: &str) -> Option<&str> {
    task_id.split_once(MILESTONE).map(|(phase, _)| phase)
}
