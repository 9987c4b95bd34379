//! What a worker hands back (D-042 WorkerResult) and the references it carries
//! (D-043 ArtifactRef / EvidenceRef, baseline §14 result helpers).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::role::AgentType;
use crate::task::EvidenceType;
use crate::time::IsoTime;

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct WorkerResult {
    pub task_id: String,
    pub agent_id: String,
    pub agent_type: AgentType,
    pub status: WorkerStatus,
    /// 3–6 sentences for people: what was done, evidence, conclusion, risk. Never used
    /// for scheduling decisions.
    pub summary: String,
    pub changed_files: Vec<String>,
    pub diff_ref: Option<String>,
    pub artifacts: Vec<ArtifactRef>,
    pub verification: Vec<VerificationResult>,
    pub risks: Vec<Risk>,
    pub follow_up_tasks: Vec<FollowUpTask>,
    pub evidence_refs: Vec<EvidenceRef>,
    /// The agent-type specific result (ExecutorResult, ReviewerResult, …).
    pub result: Value,
}

/// The key of [`WorkerResult::result`] with which an agent says it ended because no
/// model answered: every provider and fallback failed, or a replay no longer matches
/// the recording. That is not the task's failure: no debugger is sent after it (it
/// would ask the same model).
pub const MODEL_UNREACHABLE: &str = "model_unreachable";

impl WorkerResult {
    /// Why no model answered the agent, when that is how it ended.
    pub fn model_unreachable(&self) -> Option<&str> {
        self.result.get(MODEL_UNREACHABLE).and_then(|v| v.as_str())
    }

    /// A result with only its identity, status and summary (every list empty).
    pub fn new(
        task_id: &str,
        agent_id: &str,
        agent_type: AgentType,
        status: WorkerStatus,
        summary: String,
    ) -> WorkerResult {
        WorkerResult {
            task_id: task_id.to_string(),
            agent_id: agent_id.to_string(),
            agent_type,
            status,
            summary,
            changed_files: Vec::new(),
            diff_ref: None,
            artifacts: Vec::new(),
            verification: Vec::new(),
            risks: Vec::new(),
            follow_up_tasks: Vec::new(),
            evidence_refs: Vec::new(),
            result: Value::Null,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WorkerStatus {
    Completed,
    Failed,
    Blocked,
    Cancelled,
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ArtifactRef {
    pub id: String,
    #[serde(rename = "type")]
    pub artifact_type: ArtifactType,
    pub uri: String,
    pub size_bytes: Option<u64>,
    pub sha256: Option<String>,
    pub created_at: IsoTime,
}

wire_enum! {
    pub enum ArtifactType {
        BuildLog = "build_log",
        TestLog = "test_log",
        Screenshot = "screenshot",
        Pcap = "pcap",
        CoreDump = "core_dump",
        TerminalCast = "terminal_cast",
        Diff = "diff",
        Report = "report",
        Other = "other",
    }
}

/// A claim with a pointer to what supports it (D-043). `evidence_type` ties it to the
/// evidence policy (seed 001 §8.2); it is omitted when the claim is not evidence of a
/// policy kind.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EvidenceRef {
    pub id: String,
    pub kind: EvidenceKind,
    #[serde(rename = "ref")]
    pub reference: String,
    pub location: Option<EvidenceLocation>,
    pub claim: String,
    pub evidence_type: Option<EvidenceType>,
}

wire_enum! {
    pub enum EvidenceKind {
        ArtifactExcerpt = "artifact_excerpt",
        StructuredResult = "structured_result",
        Message = "message",
        ToolRun = "tool_run",
        CommandRun = "command_run",
        Diagnostic = "diagnostic",
    }
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EvidenceLocation {
    pub line_start: Option<u64>,
    pub line_end: Option<u64>,
    pub byte_start: Option<u64>,
    pub byte_end: Option<u64>,
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct VerificationResult {
    /// The check: the exact command that ran it.
    pub name: String,
    /// How it came out.
    pub status: VerificationStatus,
    /// The `command_run_id` of the run.
    pub evidence_refs: Option<Vec<String>>,
    /// Anything a reader of the result should know about it.
    pub notes: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum VerificationStatus {
    Passed,
    Failed,
    Skipped,
    Unknown,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Risk {
    /// How much it matters.
    pub severity: Severity,
    /// What could go wrong, and where.
    pub summary: String,
}

#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Low,
    #[default]
    Medium,
    High,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FollowUpTask {
    /// The task, in a few words.
    pub title: String,
    /// What it must do, and why.
    pub description: String,
    /// What kind of work it is (default: a change to execute).
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub task_type: Option<FollowUpType>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FollowUpType {
    Execute,
    Review,
    Debug,
    Docs,
}

/// The `result` of a reviewer's (or a milestone review's) WorkerResult.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ReviewerOutput {
    pub decision: ReviewDecision,
    #[serde(default)]
    pub findings: Vec<ReviewFinding>,
    /// A milestone review only: the architecture has drifted from the plan so that
    /// the plan no longer fits the later work (not a fix within the phase): what
    /// drifted. airsd then re-plans what it impacts, as after a requirement change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deviation: Option<String>,
}

wire_enum! {
    pub enum ReviewDecision {
        Approved = "approved",
        ChangesRequested = "changes_requested",
        Blocked = "blocked",
    }
}

/// One thing a reviewer wants changed or noticed.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ReviewFinding {
    /// How much it matters (default `medium`).
    #[serde(default)]
    pub severity: Severity,
    /// What is wrong and what to change.
    pub summary: String,
    /// The file, relative to the project root.
    pub file: Option<String>,
    /// The line, when one is meant.
    pub line: Option<u64>,
}

/// The `result` of the Architecture Designer consulted by the scheduler about a task
/// that is about to end blocked or failed (seed 001 §4.3: LLM judgement where the
/// rules run out).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ConsultOutput {
    /// `retry`: one more executor attempt, with `advice` as its guidance; `stop`: the
    /// task ends as the scheduler said, with `advice` for the person who picks it up.
    pub decision: ConsultDecision,
    pub advice: String,
}

/// The `result` of a Compactor (CompactorResult): the summary that stands for an
/// agent's messages 1…N in its context.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CompactorOutput {
    pub summary: String,
}

wire_enum! {
    pub enum ConsultDecision {
        Retry = "retry",
        Stop = "stop",
    }
}

/// The `result` of a debugger's WorkerResult.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DebuggerOutput {
    /// What is wrong and why, with the evidence that shows it.
    pub analysis: String,
    pub root_cause: Option<String>,
    /// Whether the debugger changed the code to fix it.
    #[serde(default)]
    pub fixed: bool,
}
