//! Typed payloads of the event types whose effects are kept in domain tables or in the
//! projection. The registry validates an event's payload against its type here; types
//! without a typed payload carry any JSON object.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::plan::{Budgets, OnAsk, PermissionMode};
use crate::result::{ArtifactRef, EvidenceRef, WorkerResult};
use crate::role::AgentType;
use crate::task::TaskSpec;

pub use crate::memory::{
    MemoryArchived, MemoryCandidateCreated, MemoryPromoted, OutdatedReported, SkillLoaded,
};

/// `session.created`.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SessionCreated {
    pub title: Option<String>,
    pub plan_ref: Option<String>,
}

/// `session.archived`, `session.deleted`.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SessionStatusChanged {
    pub reason: Option<String>,
}

/// `user.message.created`, `assistant.message.created`: a complete canonical message
/// (Anthropic content blocks).
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MessageCreated {
    pub message_id: String,
    /// Anthropic content: a string or an array of content blocks.
    pub content: Value,
    pub agent_id: Option<String>,
    /// The task whose agent wrote it; for a user message, the task it is addressed
    /// to (`@T2 …`), if any.
    pub task_id: Option<String>,
    /// For a user message, the client that sent it (its `daemon.hello` name).
    pub client: Option<String>,
    pub model: Option<String>,
    pub usage: Option<Usage>,
}

/// Token usage of one provider turn.
#[serde_with::skip_serializing_none]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_read_input_tokens: Option<u64>,
    pub cache_creation_input_tokens: Option<u64>,
    /// What the turn cost, in millionths of a US dollar, when the worker knows the
    /// model's prices.
    pub cost_micro_usd: Option<u64>,
}

/// `agent.started`.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AgentStarted {
    pub agent_id: String,
    pub agent_type: AgentType,
    pub task_id: Option<String>,
    pub pid: Option<u32>,
    pub model: Option<String>,
    /// What the agent's starting context holds, left out and costs (D-046).
    pub context: Option<crate::context::ContextSummary>,
}

/// `debug.record.created`: what a debugger found — the symptom, its analysis and root
/// cause, whether and how it fixed it, and the command runs that show it.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DebugRecordCreated {
    pub task_id: String,
    pub agent_id: String,
    pub symptom: String,
    pub analysis: String,
    pub root_cause: Option<String>,
    pub fixed: bool,
    #[serde(default)]
    pub changed_files: Vec<String>,
    #[serde(default)]
    pub command_run_ids: Vec<String>,
}

/// `context.compaction.requested`: a context passed its model's compaction threshold.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CompactionRequested {
    pub agent_id: Option<String>,
    pub task_id: Option<String>,
    pub reason: String,
    pub estimated_tokens: u64,
    pub threshold_tokens: u64,
    pub context_window_tokens: u64,
    /// The last message of the agent's loop the compaction covers (its snapshot
    /// is messages 1…N, up to this one); absent when the starting context alone is
    /// over the threshold.
    pub upto_message_id: Option<String>,
}

/// `context.compaction.completed`: a Compactor summarised an agent's messages; the
/// agent's next request holds the summary, the compaction marker and the messages
/// after `upto_message_id`. The originals are kept.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CompactionCompleted {
    /// The agent whose context was compacted.
    pub agent_id: String,
    pub task_id: Option<String>,
    /// The Compactor that wrote the summary.
    pub compactor_id: String,
    pub summary_id: String,
    pub upto_message_id: String,
    /// Messages the summary stands for (the earlier summary's among them).
    pub messages: u32,
    /// Tokens of those messages, estimated, and of the summary that replaces them.
    pub tokens_before: u64,
    pub tokens_after: u64,
}

/// `summary.created`: a structured summary of an agent's messages 1…N, stored; the
/// messages themselves stay.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SummaryCreated {
    pub summary_id: String,
    pub agent_id: String,
    pub task_id: Option<String>,
    /// The first and last message it stands for.
    pub from_message_id: Option<String>,
    pub upto_message_id: String,
    /// The text the agent's context holds in their place: the Compactor's summary,
    /// then what the rules keep word for word.
    pub text: String,
    /// How many messages of each class it covers, and what the rules did with each
    /// class (`keep`, `summarise`, `drop_if_needed`).
    pub classes: Vec<ClassCount>,
    /// Rules files that could not be used, each by file:line and why (the tiers
    /// before them were).
    pub warnings: Option<Vec<String>>,
}

/// Messages of one class in a compaction.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ClassCount {
    pub class: String,
    pub rule: String,
    pub messages: u32,
    /// Left out of the Compactor's input to fit its window (`drop_if_needed`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub dropped: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// `agent.completed`: the worker exited after a protocol-level completion.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AgentCompleted {
    pub agent_id: String,
    pub exit_code: Option<i32>,
    pub result: Option<WorkerResult>,
    /// The evidence gate's verdict on the result, from airsd's records of its attempt
    /// (`air_proto::gate::check`): what counted and why it cannot complete its task.
    /// Absent for roles that claim nothing, and in sessions recorded before airsd
    /// derived evidence (their results are judged by their claims, as then).
    pub gate: Option<crate::gate::Verdict>,
}

/// `agent.failed`.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AgentFailed {
    pub agent_id: String,
    pub reason: String,
    pub exit_code: Option<i32>,
    /// Why the worker ended without a result; decides what the scheduler does next.
    pub failure: Option<AgentFailure>,
}

wire_enum! {
    /// How a worker ended without handing back a result.
    pub enum AgentFailure {
        /// It exited or died on its own (any exit code but a clean completion).
        Crash = "crash",
        /// Killed at its hard timeout (exit code 5 semantics).
        Timeout = "timeout",
        /// Killed after it stopped sending heartbeats.
        Stalled = "stalled",
        /// Killed while its heartbeats kept coming but it moved no further: its turn
        /// and output stood still, with no tool and no model answer awaited.
        Stuck = "stuck",
        /// Stopped after breaking the NDJSON protocol.
        Protocol = "protocol",
        /// airsd stopped or crashed while it ran; the work is retried without counting
        /// against the retry budget.
        Interrupted = "interrupted",
        /// Cancelled on request.
        Cancelled = "cancelled",
        /// Could not be started.
        Spawn = "spawn",
        /// Stopped on a permission error (exit code 3): retrying cannot help.
        Permission = "permission",
        /// Stopped (at its hard timeout, or silent) while its model's provider had said
        /// nothing of the answer for long: the provider's fault, not the task's.
        Provider = "provider",
    }
}

/// `run.started`: a plan run began in this session, with its effective settings.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunStarted {
    /// The plan file, as given.
    pub plan: String,
    pub title: Option<String>,
    pub concurrency: u32,
    pub permission_mode: PermissionMode,
    pub on_ask: OnAsk,
    #[serde(default, skip_serializing_if = "Budgets::is_empty")]
    pub budgets: Budgets,
    /// The phases in plan order (each ends with a milestone review).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub phases: Vec<String>,
    /// The model every agent of the run uses (`--model`/`--provider`), when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The plan's text outside any task, for the agents' context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overview: Option<String>,
    /// The directory the agents record their provider exchanges into.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record: Option<String>,
    /// The directory of the recording the run replays instead of a live provider.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<String>,
    /// Whether the ExperienceMiner learns from the run (D-024).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub learn: bool,
    /// Whether each task works in its own worktree in a git project (absent: yes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktrees: Option<bool>,
    /// When the merged work lands in the checkout (absent: `clean`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub land: Option<crate::plan::Land>,
}

wire_enum! {
    /// How a run ended.
    pub enum RunOutcome {
        /// Every task completed.
        Completed = "completed",
        /// At least one task failed.
        Failed = "failed",
        /// Nothing failed, but something needs a human: a blocked task, or a budget
        /// that ran out.
        Blocked = "blocked",
        /// The run was cancelled.
        Interrupted = "interrupted",
    }
}

/// `run.completed`: the scheduler has nothing left to do.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunCompleted {
    pub outcome: RunOutcome,
    pub reason: Option<String>,
    pub completed: u32,
    pub failed: u32,
    pub blocked: u32,
    pub cancelled: u32,
    /// Tasks that never reached an end (a budget stopped the run).
    pub unfinished: u32,
    /// Where the tasks' merged work went, in a run whose tasks worked in worktrees.
    pub landing: Option<Landing>,
}

/// A [`Landing`]'s reason when the checkout held all of it already.
pub const NOTHING_TO_LAND: &str = "nothing to land";

/// What became of a run's integration branch when the run ended.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Landing {
    /// The session's branch its completed tasks were merged into.
    pub integration_branch: String,
    /// Whether the checkout's branch now holds it.
    pub landed: bool,
    /// The checkout's branch it landed on.
    pub branch: Option<String>,
    /// The files landing changed in the checkout.
    #[serde(default)]
    pub files: Vec<String>,
    /// Why it was not landed, and how to land it.
    pub reason: Option<String>,
}

/// What `run.undo` did: a task's merged change taken back out of the session's
/// integration branch (and out of the checkout, where the branch had landed).
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct UndoResult {
    pub integration_branch: String,
    /// Whether the change was taken out.
    pub undone: bool,
    /// The integration branch's new head: the undo commit.
    pub commit: Option<String>,
    /// The files the undo changed.
    #[serde(default)]
    pub files: Vec<String>,
    /// Why nothing was undone.
    pub reason: Option<String>,
    /// Where the branch had landed in the checkout: the undo landed there too, or why
    /// not.
    pub landing: Option<Landing>,
}

/// What `workspace.prune` did (or, `dry`, would do) to the kept worktrees.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PruneResult {
    pub dry: bool,
    pub removed: Vec<PrunedWorktree>,
    pub kept: Vec<PrunedWorktree>,
}

/// One kept worktree and what became of it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PrunedWorktree {
    pub path: String,
    pub branch: String,
    /// Its size on disk.
    pub bytes: u64,
    /// Since it last changed.
    pub age_secs: u64,
    /// Why it was removed or kept.
    pub why: String,
}

/// `run.continued`: an ended run goes on; its unfinished tasks are pending again.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunContinued {
    pub task_ids: Vec<String>,
    pub by: Option<String>,
    /// Budgets that replace the run's from here on (the time budget counts from this
    /// event).
    #[serde(default, skip_serializing_if = "Budgets::is_empty")]
    pub budgets: Budgets,
}

/// `run.mode_changed`: the run's permission mode changed; later calls are judged by
/// it, and work the Main Agent hands on waits for a confirmation in `default` only.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunModeChanged {
    pub permission_mode: PermissionMode,
    pub by: Option<String>,
}

/// `hook.completed`: a hook ran at its event (or was passed over, and why).
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct HookCompleted {
    /// Claude Code's name of the event (`PreToolUse` …).
    pub event: String,
    pub command: String,
    /// Where it is declared: `user`, `project`, `claude`.
    pub source: String,
    /// The tool it ran for.
    pub tool: Option<String>,
    pub tool_run_id: Option<String>,
    pub task_id: Option<String>,
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    /// It refused what it ran for (exit code 2, or its JSON said so).
    pub blocked: bool,
    /// Its words: why it blocked, or what it said on stderr.
    pub reason: Option<String>,
    /// Why it did not run (a project's hook nobody trusted as it is now).
    pub skipped: Option<String>,
    pub duration_ms: Option<u64>,
}

/// `task.retried`: while the run goes on, a person asked for these ended tasks (failed,
/// blocked or cancelled; the ones asked for and those waiting on them) to run again.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TasksRetried {
    pub task_ids: Vec<String>,
    pub by: Option<String>,
}

/// `agent.timeout_extension.requested`: a worker past its soft timeout asks for more
/// time.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TimeoutExtensionRequested {
    pub agent_id: String,
    pub extra_ms: u64,
    pub reason: Option<String>,
}

/// `agent.paused`, `agent.resumed`: a person held a running agent between its steps
/// (its model call or tool call under way finishes first), or let it go on.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AgentPauseChange {
    pub agent_id: String,
    pub task_id: Option<String>,
    /// Who asked (a client name).
    pub by: Option<String>,
}

/// `scheduler.paused`, `scheduler.resumed`, `scheduler.stopped` (a budget ran out).
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SchedulerControl {
    pub reason: Option<String>,
    /// Who asked (a client name), when a person did.
    pub by: Option<String>,
    /// The budget that ran out: `max_cost`, `max_tokens` or `max_time`.
    pub budget: Option<String>,
}

/// `run.halted` (ephemeral): the scheduler stopped because the session could not be
/// written (a full disk, a read-only database); `reason: null` when it runs again.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunHalted {
    pub reason: Option<String>,
}

/// `scheduler.cancel_requested`: cancel one task, or the whole run when `task_id` is
/// absent.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CancelRequested {
    pub task_id: Option<String>,
    pub reason: Option<String>,
    pub by: Option<String>,
    /// End the task as blocked rather than cancelled (the run's `on_ask: fail`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub block: bool,
}

/// `agent.soft_timeout`: a worker passed its soft timeout and was warned.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AgentSoftTimeout {
    pub agent_id: String,
    pub task_id: Option<String>,
    pub elapsed_ms: u64,
    /// When the worker will be killed unless it asks for more time.
    pub hard_timeout_ms: u64,
}

/// `agent.timeout_extended`: the scheduler granted a worker more time.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TimeoutExtended {
    pub agent_id: String,
    pub extra_ms: u64,
    pub reason: Option<String>,
}

/// `agent.model_fallback`: the agent's provider kept failing (after its retries), so
/// it goes on with the next model configured for its agent type; the failed turn is
/// asked again of that model (no tool ran for it).
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ModelFallback {
    pub agent_id: String,
    pub task_id: Option<String>,
    /// `provider/model` it talked to.
    pub from_model: String,
    /// `provider/model` it talks to now.
    pub to_model: String,
    /// The provider's last failure, and configured models passed over on the way.
    pub reason: String,
}

/// `agent.loop_detected`: the patrol within an agent's turns found it in a loop (the
/// same call with the same input again and again, or turns that brought nothing
/// new). The first time the agent is told; a loop after that stops it, and airsd tells
/// the person.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct LoopDetected {
    pub agent_id: String,
    pub task_id: String,
    /// The agent's turn when it was found.
    pub turn: u32,
    /// What repeated.
    pub reason: String,
    /// Whether the agent was stopped (else it was told).
    pub stopped: bool,
}

/// `agent.model_selected`: an agent whose task lets it choose its model
/// (`model_policy: agent_select`) chose another one, with why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ModelSelected {
    pub agent_id: String,
    pub task_id: String,
    /// `provider/model` it talked to.
    pub from_model: String,
    /// `provider/model` it talks to now.
    pub to_model: String,
    pub reason: String,
}

/// `agent.rate_limited`: an agent's provider asked it to slow down (429, 529) and it
/// waits to try again; airsd runs fewer agents for a while (D-019).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RateLimited {
    pub agent_id: String,
    pub provider: String,
}

/// `scheduler.concurrency_changed`: how many agents the scheduler runs at once now,
/// and why (a provider asked to slow down, the machine is loaded, or it recovered).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ConcurrencyChanged {
    pub concurrency: u32,
    /// The run's own (the most it runs).
    pub configured: u32,
    pub reason: String,
}

/// `scheduler.patrol`: nothing happened for a while, so every running agent was checked.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Patrol {
    pub idle_ms: u64,
    pub agents: Vec<PatrolEntry>,
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PatrolEntry {
    pub agent_id: String,
    pub task_id: Option<String>,
    /// Time since its last heartbeat.
    pub silent_ms: u64,
}

/// `task.created`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TaskCreated {
    pub task: TaskSpec,
}

/// Every task status event (`task.ready`, `task.started`, `task.reviewing`,
/// `task.debugging`, `task.completed`, `task.failed`, `task.blocked`, `task.cancelled`);
/// the new status is the event type.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TaskStatusChanged {
    pub task_id: String,
    /// Attempt number (1-based) for `task.started`; absent means "the next one".
    pub attempt: Option<u32>,
    pub agent_id: Option<String>,
    pub agent_type: Option<AgentType>,
    pub reason: Option<String>,
}

/// `tool.started`: written before the tool runs, so it is the write-ahead record a
/// recovery finds for a tool call that never finished.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ToolStarted {
    pub tool_run_id: String,
    pub tool: String,
    pub input: Value,
    pub agent_id: Option<String>,
    pub task_id: Option<String>,
    pub origin_message_id: Option<String>,
}

/// `tool.completed`.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ToolCompleted {
    pub tool_run_id: String,
    pub output: Option<Value>,
    pub duration_ms: Option<u64>,
}

/// `tool.failed`.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ToolFailed {
    pub tool_run_id: String,
    pub error: String,
    pub duration_ms: Option<u64>,
}

/// `command.started`.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CommandStarted {
    pub command_run_id: String,
    pub command: String,
    pub cwd: Option<String>,
    pub tool_run_id: Option<String>,
    pub agent_id: Option<String>,
    pub task_id: Option<String>,
    pub origin_message_id: Option<String>,
}

/// `command.completed`: the command ran to its end (any exit code).
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CommandCompleted {
    pub command_run_id: String,
    pub exit_code: i32,
    pub duration_ms: Option<u64>,
}

/// `command.failed`: the command could not run, or was killed (timeout, cancel).
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CommandFailed {
    pub command_run_id: String,
    pub error: String,
    pub exit_code: Option<i32>,
    pub duration_ms: Option<u64>,
}

/// `artifact.created`.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ArtifactCreated {
    pub artifact: ArtifactRef,
    /// Path relative to the session's `artifacts/` directory.
    pub path: Option<String>,
    pub original_name: Option<String>,
    pub task_id: Option<String>,
    pub agent_id: Option<String>,
    pub tool_run_id: Option<String>,
    pub command_run_id: Option<String>,
    /// Generic association for entities without a dedicated column.
    pub entity_type: Option<String>,
    pub entity_id: Option<String>,
}

/// `diagnostic.created`: one compiler/linker/analyzer finding.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DiagnosticCreated {
    pub diagnostic_id: String,
    pub severity: DiagnosticSeverity,
    pub message: String,
    pub file: Option<String>,
    pub line: Option<u32>,
    pub column: Option<u32>,
    pub code: Option<String>,
    /// Normalised signature, equal for the same error across compilers.
    pub signature: Option<String>,
    pub source_tool: Option<String>,
    pub command_run_id: Option<String>,
    pub task_id: Option<String>,
    pub agent_id: Option<String>,
}

wire_enum! {
    pub enum DiagnosticSeverity {
        Error = "error",
        Warning = "warning",
        Note = "note",
    }
}

/// `evidence.created`.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EvidenceCreated {
    pub evidence: EvidenceRef,
    pub task_id: Option<String>,
    pub agent_id: Option<String>,
    /// The command run airsd derived it from.
    pub command_run_id: Option<String>,
    /// For `static_analysis`: the paths the analysis covered, from the project root.
    pub covers: Option<Vec<String>>,
}

/// `workspace.created`.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct WorkspaceCreated {
    pub workspace_id: String,
    pub path: String,
    pub task_id: Option<String>,
    pub branch: Option<String>,
    pub base_ref: Option<String>,
}

/// `workspace.merge_failed`: the merge queue did not merge a reviewed task's change,
/// and its debugger follows (or, with no retry left, the task is blocked). Nothing of
/// the session's integration branch moved.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct WorkspaceMergeFailed {
    pub workspace_id: String,
    pub task_id: String,
    /// `true`: both changed the same lines of `files`; `false`: the task's check
    /// failed on the merged tree.
    pub conflict: bool,
    /// The conflicting files, or the files the merge brought in.
    pub files: Vec<String>,
    /// What happened, with the conflicting hunks or the failing run's output: what the
    /// debugger is given.
    pub reason: String,
    /// The run of the task's check on the merged tree that failed.
    pub command_run_id: Option<String>,
}

/// `workspace.undone`: `air undo` took one task's merged change back out of the
/// session's integration branch (a new commit on it), and out of the checkout where
/// the branch had landed.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct WorkspaceUndone {
    pub task_id: String,
    pub integration_branch: String,
    /// The undo commit: the integration branch's new head.
    pub commit: String,
    /// The files the undo changed.
    pub files: Vec<String>,
    /// Where the branch had landed: the undo landed there too, or why not.
    pub landing: Option<Landing>,
}

/// `workspace.revert_failed`: a re-plan's revert of a completed task's merged change
/// could not be done (what later tasks changed touches the same lines, the change
/// was never merged, git failed); the change stays, and the re-planned task is
/// redone on top of it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RevertFailed {
    pub task_id: String,
    pub reason: String,
}

/// `workspace.merged`, `workspace.removed`.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct WorkspaceChanged {
    pub workspace_id: String,
    pub reason: Option<String>,
    /// Merged: the files the merge brought into the integration branch.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
}

/// `permission.requested`: a decision that needs a human (or the run's policy).
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PermissionRequested {
    pub request_id: String,
    /// What is asked, e.g. `write /etc/hosts`, `run sudo apt-get install cmake`.
    pub action: String,
    pub tool: Option<String>,
    pub tool_run_id: Option<String>,
    pub agent_id: Option<String>,
    pub task_id: Option<String>,
    pub risk: Option<String>,
    pub reason: Option<String>,
}

/// `decided_by` of a request closed because the agent that asked ended (or its run):
/// not an answer, and not counted as a denial.
pub const EXPIRED: &str = "expired";

/// `permission.decision.recorded`: an answer to a request, or a decision the policy took
/// on its own (no `request_id`).
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PermissionDecisionRecorded {
    pub request_id: Option<String>,
    pub decision: PermissionDecision,
    /// Who decided: a client (`client:<id>`), the user, or `policy`.
    pub decided_by: String,
    pub scope: Option<DecisionScope>,
    pub reason: Option<String>,
}

wire_enum! {
    pub enum PermissionDecision {
        Allow = "allow",
        Deny = "deny",
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DecisionScope {
    Once,
    Session,
    Always,
}

// ---- ephemeral ------------------------------------------------------------------

/// `token.delta`: a piece of a streaming assistant message.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TokenDelta {
    pub message_id: String,
    /// Index of the content block within the message.
    pub block_index: u32,
    pub kind: DeltaKind,
    pub text: String,
    pub agent_id: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DeltaKind {
    Text,
    Thinking,
    InputJson,
}

/// `stdout.delta`, `stderr.delta`: a chunk of a running command's output.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct OutputDelta {
    pub command_run_id: String,
    pub data: String,
}

/// `tool.progress`.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ToolProgress {
    pub tool_run_id: String,
    pub message: Option<String>,
    /// 0.0 ..= 1.0 when known.
    pub fraction: Option<f64>,
}

/// `task.progress`.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TaskProgress {
    pub task_id: String,
    pub message: Option<String>,
    pub fraction: Option<f64>,
}

/// `agent.heartbeat` (D-008: pushed by the worker every few seconds).
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AgentHeartbeat {
    pub agent_id: String,
    /// Loop state, e.g. `THINKING`.
    pub state: Option<String>,
    pub turn: Option<u32>,
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    /// How long the agent has waited on its model's provider with nothing of the
    /// answer yet (keep-alives do not count), in milliseconds; absent when it is not
    /// waiting on its model.
    pub model_silent_ms: Option<u64>,
    /// How many of its tool calls it waits on (absent: none): an agent waiting on a
    /// tool is not stuck, however long the tool runs within its own limits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools_running: Option<u32>,
}

/// `architecture.questions.asked`: the designer's questions, accepted by airsd, which
/// wait for the user's answers. With no questions, the designer answered in words (or
/// its turn ended without an answer), and the user's words are awaited.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct QuestionsAsked {
    /// The planning turn that asked (`plan:<n>`).
    pub task_id: String,
    pub questions: Vec<crate::planning::Question>,
}

/// `architecture.requirements.settled`: the requirements the designer stated, which
/// wait for the user to agree.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RequirementsSettled {
    pub task_id: String,
    pub requirements: Vec<String>,
    /// The designer says the user's words agreed to the requirements it stated
    /// before: accepted only when the user spoke last about stated requirements.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub user_agreed: bool,
}

/// `architecture.questions.answered`: the user's answer to what the designer asked or
/// stated: answers by question id, words of the user's own, or go ahead (propose now;
/// for stated requirements, agreement).
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct QuestionsAnswered {
    /// The planning turn answered.
    pub task_id: String,
    #[serde(default)]
    pub answers: std::collections::BTreeMap<String, String>,
    pub note: Option<String>,
    #[serde(default)]
    pub go_ahead: bool,
    /// The client that answered.
    pub client: Option<String>,
}

/// `architecture.plan.proposed`: a proposal that compiled, shown to the user.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PlanProposed {
    pub task_id: String,
    pub proposal: crate::planning::Proposal,
    /// The compiled graph's tasks, in plan order, and its waves.
    pub tasks: Vec<String>,
    pub waves: Vec<Vec<String>>,
}

/// `architecture.plan.decided`: the user's answer to a proposal.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PlanDecided {
    /// The planning turn that proposed.
    pub task_id: String,
    pub decision: crate::planning::PlanDecision,
    /// What to change, or why not.
    pub note: Option<String>,
    /// On confirmation: run the plan now (else it is only written).
    #[serde(default = "yes")]
    pub run: bool,
    pub client: Option<String>,
}

fn yes() -> bool {
    true
}

/// `architecture.plan.confirmed`: airsd wrote the confirmed plan (`files`, relative to
/// the project), or could not (`error`, and nothing was written).
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PlanConfirmed {
    pub task_id: String,
    #[serde(default)]
    pub files: Vec<String>,
    pub error: Option<String>,
    /// The plan's tasks run now.
    #[serde(default)]
    pub run: bool,
}

/// `architecture.change.classified`: the designer said what a requirement change is
/// (seed 001 §14, phase 1); airsd works out its impact next.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ChangeClassified {
    /// The planning turn that classified it.
    pub task_id: String,
    pub change: crate::planning::ChangeDescription,
}

/// `architecture.impact.completed`: what a classified change impacts (phase 2) and
/// what is done with each task (phase 3): IMPACTED running agents stopped, impacted
/// completed changes taken back out, BOUNDARY tasks verified after the change, SAFE
/// work going on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ImpactCompleted {
    /// The planning turn whose classification it assessed.
    pub task_id: String,
    pub change: crate::planning::ChangeDescription,
    /// Every task of the graph, in order.
    pub tasks: Vec<crate::impact::TaskImpact>,
}

/// `architecture.plan.updated`: a confirmed re-plan applied to the run's graph. Added
/// tasks are created (`task.created` follows), changed ones are pending again with
/// their new spec, removed ones end cancelled as replaced; completed tasks are never
/// touched (their interfaces are frozen).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PlanUpdated {
    /// The planning turn that proposed the new graph.
    pub task_id: String,
    /// What changed, as the designer described it.
    pub summary: String,
    #[serde(default)]
    pub added: Vec<TaskSpec>,
    #[serde(default)]
    pub changed: Vec<TaskSpec>,
    #[serde(default)]
    pub removed: Vec<String>,
}
