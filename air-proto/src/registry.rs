//! The event registry: every event type air knows, in one table, with its family,
//! durability, payload version and payload schema (D-040, baseline §7).
//!
//! Durability belongs to the type, never to the producer: the EventStore looks the type
//! up here and persists durable events in the same transaction as their domain-table
//! change, while ephemeral ones only go over the bus. An unknown type is an error.
//! `docs/event-registry.md` is generated from this table (a test keeps it current).

use serde_json::Value;

pub use crate::events::PayloadError;
use crate::events::{self as ev, Event};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// Written to the session database before anyone sees it.
    Durable,
    /// Published on the bus only; may be coalesced for a slow subscriber.
    Ephemeral,
}

impl Durability {
    pub fn as_str(self) -> &'static str {
        match self {
            Durability::Durable => "durable",
            Durability::Ephemeral => "ephemeral",
        }
    }
}

/// How a slow subscriber's queued ephemeral events of one type may be merged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Coalesce {
    /// Never merged (every durable event).
    Never,
    /// Events with equal `key` fields are merged by appending `text` field contents.
    Concat {
        key: &'static [&'static str],
        text: &'static str,
    },
    /// Events with equal `key` fields are merged by keeping the newest.
    Latest { key: &'static [&'static str] },
}

/// One registered event type.
#[derive(Clone, Copy, Debug)]
pub struct EventSpec {
    pub name: &'static str,
    pub family: &'static str,
    pub durability: Durability,
    /// Payload schema version; a change to the payload shape increments it.
    pub version: u32,
    /// Name of the payload type in `air_proto::payload`, or `object` for free-form.
    pub payload: &'static str,
    pub coalesce: Coalesce,
    /// A worker may publish it itself (the rest belong to airsd).
    pub from_worker: bool,
    pub description: &'static str,
    validate: fn(&Value) -> Result<(), PayloadError>,
}

impl EventSpec {
    pub fn is_durable(&self) -> bool {
        self.durability == Durability::Durable
    }

    /// Checks `payload` against this type's schema.
    pub fn validate(&self, payload: &Value) -> Result<(), PayloadError> {
        (self.validate)(payload)
    }
}

macro_rules! spec {
    ($ty:ty, $family:literal, $durability:expr, $coalesce:expr, $worker:expr, $desc:literal) => {
        EventSpec {
            name: <$ty as Event>::TYPE,
            family: $family,
            durability: $durability,
            version: 1,
            payload: <$ty as Event>::PAYLOAD,
            coalesce: $coalesce,
            from_worker: $worker,
            description: $desc,
            validate: <$ty as Event>::check,
        }
    };
}

/// A durable event type (`worker`: a worker may publish it itself).
macro_rules! durable {
    (worker $ty:ty, $family:literal, $desc:literal) => {
        spec!(
            $ty,
            $family,
            Durability::Durable,
            Coalesce::Never,
            true,
            $desc
        )
    };
    ($ty:ty, $family:literal, $desc:literal) => {
        spec!(
            $ty,
            $family,
            Durability::Durable,
            Coalesce::Never,
            false,
            $desc
        )
    };
}

/// An ephemeral event type and how it coalesces.
macro_rules! ephemeral {
    (worker $ty:ty, $family:literal, $coalesce:expr, $desc:literal) => {
        spec!($ty, $family, Durability::Ephemeral, $coalesce, true, $desc)
    };
    ($ty:ty, $family:literal, $coalesce:expr, $desc:literal) => {
        spec!($ty, $family, Durability::Ephemeral, $coalesce, false, $desc)
    };
}

/// Every event type, grouped by family.
pub static EVENTS: &[EventSpec] = &[
    durable!(ev::SessionCreated, "session", "A session began; always its first event."),
    durable!(ev::SessionArchived, "session", "The session was archived; artifacts are kept."),
    durable!(ev::SessionDeleted, "session", "The session was deleted; artifacts are purged."),
    durable!(ev::UserMessageCreated, "message", "A complete user message (canonical content)."),
    durable!(worker ev::AssistantMessageCreated, "message", "A complete assistant message; its draft is dropped."),
    durable!(worker ev::ContextMessageCreated, "message", "A message an agent's loop gave its model (tool results, notes): kept in the session's events so the agent's conversation can be compacted and read back whole."),
    durable!(ev::AgentStarted, "agent", "A worker process for an agent was started."),
    durable!(ev::AgentCompleted, "agent", "A worker finished at protocol level (its task may still have failed)."),
    durable!(ev::AgentFailed, "agent", "A worker crashed, timed out, broke the protocol or was killed."),
    durable!(ev::AgentSoftTimeout, "agent", "A worker passed its soft timeout and was warned."),
    durable!(ev::TimeoutExtended, "agent", "A worker was granted more time before its hard timeout."),
    durable!(worker ev::ModelFallback, "agent", "An agent's provider kept failing; it went on with the next model configured for its agent type."),
    durable!(worker ev::ModelSelected, "agent", "An agent whose task lets it choose its model (`model_policy: agent_select`) chose another, with why."),
    durable!(worker ev::LoopDetected, "agent", "An agent was found in a loop within its own turns: told the first time, stopped the next (its task goes on without it, and the person is told)."),
    durable!(ev::AgentPaused, "agent", "A running agent is held between its steps; its time limits stop counting."),
    durable!(ev::AgentResumed, "agent", "A held agent goes on; its time limits move by the time it was held."),
    durable!(ev::RunStarted, "run", "A plan run began, with its effective settings."),
    durable!(ev::RunCompleted, "run", "The scheduler has nothing left to do; the run's outcome."),
    durable!(ev::RunContinued, "run", "An ended run goes on; its unfinished tasks are pending again."),
    durable!(ev::RunModeChanged, "run", "The run's permission mode changed (`run.set_mode`, an editor's mode): later calls are judged by it."),
    durable!(ev::SchedulerPaused, "scheduler", "Dispatching stopped on request; running agents go on."),
    durable!(ev::SchedulerResumed, "scheduler", "Dispatching resumed."),
    durable!(ev::SchedulerStopped, "scheduler", "A budget ran out: nothing new is dispatched; running agents finish."),
    durable!(ev::CancelRequested, "scheduler", "A task, or the whole run, is to be cancelled."),
    durable!(ev::ConcurrencyChanged, "scheduler", "How many agents the scheduler runs at once changed: fewer when a provider asks to slow down or the machine is loaded, more again as it recovers (D-019)."),
    durable!(ev::Patrol, "scheduler", "Nothing happened for a while; every running agent was checked."),
    durable!(ev::TaskCreated, "task", "A task entered the graph, with its dependencies."),
    durable!(ev::TaskReady, "task", "All hard dependencies of a task are done."),
    durable!(ev::TaskStarted, "task", "An executor attempt of a task began."),
    durable!(ev::TaskReviewing, "task", "A reviewer was dispatched for the task."),
    durable!(ev::TaskDebugging, "task", "A debugger was dispatched for the task."),
    durable!(ev::TaskCompleted, "task", "The task passed review and its evidence gates."),
    durable!(ev::TaskBlocked, "task", "The task needs a decision from above."),
    durable!(ev::TaskFailed, "task", "The task's goal was not achieved and its retries are spent."),
    durable!(ev::TaskCancelled, "task", "The task was cancelled."),
    durable!(ev::TasksRetried, "task", "While the run goes on, ended tasks are pending again at a person's request."),
    durable!(ev::HookCompleted, "hook", "A hook ran at its event, or was passed over (a project's hook nobody trusted as it is now); whether it blocked what it ran for, and why."),
    durable!(ev::ToolStarted, "tool", "A tool call is about to run (the write-ahead record)."),
    durable!(ev::ToolCompleted, "tool", "A tool call finished."),
    durable!(ev::ToolFailed, "tool", "A tool call failed or was refused."),
    durable!(ev::CommandStarted, "command", "A shell command is about to run."),
    durable!(ev::CommandCompleted, "command", "A shell command ran to its end (any exit code)."),
    durable!(ev::CommandFailed, "command", "A shell command could not run or was killed."),
    durable!(ev::ArtifactCreated, "artifact", "A file was stored under the session's artifacts."),
    durable!(ev::DiagnosticCreated, "diagnostic", "A compiler, linker or analyzer finding was parsed."),
    durable!(ev::EvidenceCreated, "evidence", "A claim-supporting reference was recorded."),
    durable!(worker ev::CompactionRequested, "context", "Context usage passed the compaction threshold."),
    durable!(ev::CompactionCompleted, "context", "A Compactor summarised an agent's messages 1…N: its next request holds the summary, the marker and the messages after N; nothing is deleted."),
    durable!(ev::SummaryCreated, "summary", "A structured summary of an agent's messages was stored (the messages stay)."),
    durable!(ev::PermissionRequested, "permission", "A decision that needs a human (or the run's policy)."),
    durable!(ev::PermissionDecisionRecorded, "permission", "A permission decision, answered or by policy."),
    durable!(ev::DoctorCheckCompleted, "doctor", "A doctor run finished, with its findings."),
    durable!(ev::DoctorFixApplied, "doctor", "A doctor repair ran."),
    durable!(worker ev::RequirementChanged, "requirement", "The user changed a requirement mid-run (the Main Agent records it, or `air change`): dispatch freezes while the Architecture Designer re-plans the unfinished work."),
    durable!(ev::QuestionsAsked, "architecture", "The Architecture Designer asked the user questions about a requirement (airsd accepted them)."),
    durable!(ev::QuestionsAnswered, "architecture", "The user answered the designer's questions or stated requirements, or said to go ahead."),
    durable!(ev::RequirementsSettled, "architecture", "The designer stated the requirements the discussion settled, for the user to agree to."),
    durable!(ev::PlanProposed, "architecture", "The designer proposed an architecture and a task graph that compiles; the user's answer is awaited."),
    durable!(ev::PlanDecided, "architecture", "The user confirmed a proposal, asked for changes, or rejected it."),
    durable!(ev::PlanConfirmed, "architecture", "airsd wrote the confirmed plan under .air/shared/plan/ (or says why it could not, having written nothing)."),
    durable!(ev::PlanUpdated, "architecture", "A re-plan after a requirement change was confirmed and applied: tasks added, changed (pending again with their new spec) and removed (cancelled as replaced)."),
    durable!(ev::ChangeClassified, "architecture", "The designer said what a requirement change is (its scope, modules, tasks); its impact is assessed next."),
    durable!(ev::ArchitectureImpactCompleted, "architecture", "What a requirement change impacts: every task SAFE, BOUNDARY or IMPACTED, and what is done with it (kept, stopped, reverted, verified, held)."),
    durable!(ev::WorkspaceCreated, "workspace", "An isolated workspace (git worktree) was created."),
    durable!(ev::WorkspaceMerged, "workspace", "A workspace was merged back."),
    durable!(ev::WorkspaceRemoved, "workspace", "A workspace was removed."),
    durable!(ev::WorkspaceMergeFailed, "workspace", "The merge queue did not merge a reviewed task: its change conflicts with the integration branch (committed with the markers on the task's branch) or its check failed on the merged tree; the integration branch did not move, and the task's debugger follows."),
    durable!(ev::WorkspaceUndone, "workspace", "A task's merged change was taken back out of the session's integration branch (`air undo`, or a re-plan that found it impacted): a new commit there, landed in the checkout too where the branch had landed."),
    durable!(ev::RevertFailed, "workspace", "A re-plan could not take an impacted task's merged change back out; it stays, and the re-planned task is redone on top of it."),
    durable!(ev::MemoryCandidateCreated, "memory", "The ExperienceMiner proposed a memory, a skill draft or a correction of a skill or rules file (proposed again: `seen` counts; `ask_user` when the user is now asked to promote it)."),
    durable!(ev::MemoryPromoted, "memory", "A memory was promoted (by the user, or by the evidence of a fix): agents are shown it when it concerns their task; a skill draft or patch was written."),
    durable!(ev::MemoryArchived, "memory", "A memory was set aside (by the user or the Curator), or forgotten at the user's word."),
    durable!(worker ev::DebugRecordCreated, "debug", "A debugging record (symptom, cause, fix, evidence) was stored."),
    durable!(worker ev::SkillLoaded, "skill", "An agent loaded a skill's instructions (the Curator counts uses)."),
    durable!(worker ev::OutdatedReported, "memory", "An agent found a skill or rules file wrong: the ExperienceMiner proposes a correction for the user."),
    ephemeral!(worker ev::AgentHeartbeat, "agent", Coalesce::Latest { key: &["agent_id"] },
        "Pushed by a worker every few seconds."),
    ephemeral!(worker ev::RateLimited, "agent", Coalesce::Never,
        "An agent's provider asked it to slow down (429, 529); it waits to try again, and airsd runs fewer agents for a while."),
    ephemeral!(worker ev::TimeoutExtensionRequested, "agent", Coalesce::Never,
        "A worker past its soft timeout asks for more time."),
    ephemeral!(ev::WorkspaceMerging, "workspace", Coalesce::Latest { key: &["workspace_id"] },
        "The merge queue took a reviewed task's change: it is being merged now, behind its check (one task at a time; the others wait, queued)."),
    ephemeral!(ev::RunHalted, "run", Coalesce::Latest { key: &[] },
        "The scheduler stopped because the session could not be written (a full disk, a read-only database): nothing recorded is lost, and `air run --resume` goes on once it can write again. `reason: null` when it runs again."),
    ephemeral!(worker ev::TaskProgress, "task", Coalesce::Latest { key: &["task_id"] },
        "Progress of a task."),
    ephemeral!(worker ev::TokenDelta, "message", Coalesce::Concat {
            key: &["message_id", "block_index", "kind"],
            text: "text"
        },
        "A piece of a streaming assistant message."),
    ephemeral!(ev::StdoutDelta, "command", Coalesce::Concat {
            key: &["command_run_id"],
            text: "data"
        },
        "A chunk of a running command's stdout."),
    ephemeral!(ev::StderrDelta, "command", Coalesce::Concat {
            key: &["command_run_id"],
            text: "data"
        },
        "A chunk of a running command's stderr."),
    ephemeral!(ev::ToolProgress, "tool", Coalesce::Latest {
            key: &["tool_run_id"]
        },
        "Progress of a running tool."),
    ephemeral!(ev::HudFrameRendered, "hud", Coalesce::Latest { key: &[] },
        "A HUD frame was rendered."),
];

/// Whether a worker may publish `event_type` itself; the rest belong to airsd.
pub fn worker_may_send(event_type: &str) -> bool {
    lookup(event_type).is_some_and(|spec| spec.from_worker)
}

/// The spec of `event_type`, if registered.
pub fn lookup(event_type: &str) -> Option<&'static EventSpec> {
    EVENTS.iter().find(|spec| spec.name == event_type)
}

/// The registry as a Markdown document (`docs/event-registry.md`).
pub fn markdown() -> String {
    let mut out = String::from(
        "# Event registry\n\n\
         Generated from `air-proto/src/registry.rs` (`air_proto::registry::markdown`); a test \
         fails when this file is stale. Regenerate with \
         `AIR_UPDATE_DOCS=1 cargo test -p air-proto registry`.\n\n\
         Durability is decided by the EventStore from this table, never by the producer. \
         Durable events are committed with their domain-table change in one transaction and \
         published only after the commit; ephemeral events go over the bus only and may be \
         coalesced for a slow subscriber. Payload types are in `air_proto::payload`.\n\n\
         | type | family | durability | version | payload | coalescing | meaning |\n\
         |---|---|---|---|---|---|---|\n",
    );
    for spec in EVENTS {
        let coalesce = match spec.coalesce {
            Coalesce::Never => "—".to_string(),
            Coalesce::Concat { key, text } => format!("append `{text}` by {}", keys(key)),
            Coalesce::Latest { key } => format!("keep newest by {}", keys(key)),
        };
        out.push_str(&format!(
            "| `{}` | {} | {} | {} | `{}` | {} | {} |\n",
            spec.name,
            spec.family,
            spec.durability.as_str(),
            spec.version,
            spec.payload,
            coalesce,
            spec.description
        ));
    }
    out
}

fn keys(key: &[&str]) -> String {
    if key.is_empty() {
        "type".to_string()
    } else {
        key.iter()
            .map(|k| format!("`{k}`"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}
