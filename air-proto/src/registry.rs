//! The event registry: every event type air knows, in one table, with its family,
//! durability, payload version and payload schema (D-040, baseline §7).
//!
//! Durability belongs to the type, never to the producer: the EventStore looks the type
//! up here and persists durable events in the same transaction as their domain-table
//! change, while ephemeral ones only go over the bus. An unknown type is an error.
//! `docs/event-registry.md` is generated from this table (a test keeps it current).

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::payload as p;

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

/// A payload that does not match its type's schema.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("payload.{path}: {message}")]
pub struct PayloadError {
    /// JSON path inside the payload (`.` for the payload itself).
    pub path: String,
    pub message: String,
}

fn typed<T: DeserializeOwned>(payload: &Value) -> Result<(), PayloadError> {
    serde_path_to_error::deserialize::<_, T>(payload)
        .map(drop)
        .map_err(|e| {
            let message = e.inner().to_string();
            let path = crate::codec::full_path(&e.path().to_string(), &message);
            PayloadError { path, message }
        })
}

fn object(payload: &Value) -> Result<(), PayloadError> {
    if payload.is_object() {
        Ok(())
    } else {
        Err(PayloadError {
            path: ".".into(),
            message: "expected a JSON object".into(),
        })
    }
}

macro_rules! durable {
    ($name:literal, $family:literal, $ty:ident, $desc:literal) => {
        EventSpec {
            name: $name,
            family: $family,
            durability: Durability::Durable,
            version: 1,
            payload: stringify!($ty),
            coalesce: Coalesce::Never,
            description: $desc,
            validate: typed::<p::$ty>,
        }
    };
    ($name:literal, $family:literal, $desc:literal) => {
        EventSpec {
            name: $name,
            family: $family,
            durability: Durability::Durable,
            version: 1,
            payload: "object",
            coalesce: Coalesce::Never,
            description: $desc,
            validate: object,
        }
    };
}

macro_rules! ephemeral {
    ($name:literal, $family:literal, $ty:ident, $coalesce:expr, $desc:literal) => {
        EventSpec {
            name: $name,
            family: $family,
            durability: Durability::Ephemeral,
            version: 1,
            payload: stringify!($ty),
            coalesce: $coalesce,
            description: $desc,
            validate: typed::<p::$ty>,
        }
    };
    ($name:literal, $family:literal, $coalesce:expr, $desc:literal) => {
        EventSpec {
            name: $name,
            family: $family,
            durability: Durability::Ephemeral,
            version: 1,
            payload: "object",
            coalesce: $coalesce,
            description: $desc,
            validate: object,
        }
    };
}

/// Every event type, grouped by family.
pub static EVENTS: &[EventSpec] = &[
    durable!(
        "session.created",
        "session",
        SessionCreated,
        "A session began; always its first event."
    ),
    durable!(
        "session.archived",
        "session",
        SessionStatusChanged,
        "The session was archived; artifacts are kept."
    ),
    durable!(
        "session.deleted",
        "session",
        SessionStatusChanged,
        "The session was deleted; artifacts are purged."
    ),
    durable!(
        "user.message.created",
        "message",
        MessageCreated,
        "A complete user message (canonical content)."
    ),
    durable!(
        "assistant.message.created",
        "message",
        MessageCreated,
        "A complete assistant message; its draft is dropped."
    ),
    durable!(
        "agent.started",
        "agent",
        AgentStarted,
        "A worker process for an agent was started."
    ),
    durable!(
        "agent.completed",
        "agent",
        AgentCompleted,
        "A worker finished at protocol level (its task may still have failed)."
    ),
    durable!(
        "agent.failed",
        "agent",
        AgentFailed,
        "A worker crashed, timed out, broke the protocol or was killed."
    ),
    durable!(
        "agent.soft_timeout",
        "agent",
        AgentSoftTimeout,
        "A worker passed its soft timeout and was warned."
    ),
    durable!(
        "agent.timeout_extended",
        "agent",
        TimeoutExtended,
        "A worker was granted more time before its hard timeout."
    ),
    durable!(
        "agent.paused",
        "agent",
        AgentPauseChange,
        "A running agent is held between its steps; its time limits stop counting."
    ),
    durable!(
        "agent.resumed",
        "agent",
        AgentPauseChange,
        "A held agent goes on; its time limits move by the time it was held."
    ),
    durable!(
        "run.started",
        "run",
        RunStarted,
        "A plan run began, with its effective settings."
    ),
    durable!(
        "run.completed",
        "run",
        RunCompleted,
        "The scheduler has nothing left to do; the run's outcome."
    ),
    durable!(
        "run.continued",
        "run",
        RunContinued,
        "An ended run goes on; its unfinished tasks are pending again."
    ),
    durable!(
        "scheduler.paused",
        "scheduler",
        SchedulerControl,
        "Dispatching stopped on request; running agents go on."
    ),
    durable!(
        "scheduler.resumed",
        "scheduler",
        SchedulerControl,
        "Dispatching resumed."
    ),
    durable!(
        "scheduler.stopped",
        "scheduler",
        SchedulerControl,
        "A budget ran out: nothing new is dispatched; running agents finish."
    ),
    durable!(
        "scheduler.cancel_requested",
        "scheduler",
        CancelRequested,
        "A task, or the whole run, is to be cancelled."
    ),
    durable!(
        "scheduler.patrol",
        "scheduler",
        Patrol,
        "Nothing happened for a while; every running agent was checked."
    ),
    durable!(
        "task.created",
        "task",
        TaskCreated,
        "A task entered the graph, with its dependencies."
    ),
    durable!(
        "task.ready",
        "task",
        TaskStatusChanged,
        "All hard dependencies of a task are done."
    ),
    durable!(
        "task.started",
        "task",
        TaskStatusChanged,
        "An executor attempt of a task began."
    ),
    durable!(
        "task.reviewing",
        "task",
        TaskStatusChanged,
        "A reviewer was dispatched for the task."
    ),
    durable!(
        "task.debugging",
        "task",
        TaskStatusChanged,
        "A debugger was dispatched for the task."
    ),
    durable!(
        "task.completed",
        "task",
        TaskStatusChanged,
        "The task passed review and its evidence gates."
    ),
    durable!(
        "task.blocked",
        "task",
        TaskStatusChanged,
        "The task needs a decision from above."
    ),
    durable!(
        "task.failed",
        "task",
        TaskStatusChanged,
        "The task's goal was not achieved and its retries are spent."
    ),
    durable!(
        "task.cancelled",
        "task",
        TaskStatusChanged,
        "The task was cancelled."
    ),
    durable!(
        "task.retried",
        "task",
        TasksRetried,
        "While the run goes on, ended tasks are pending again at a person's request."
    ),
    durable!(
        "tool.started",
        "tool",
        ToolStarted,
        "A tool call is about to run (the write-ahead record)."
    ),
    durable!(
        "tool.completed",
        "tool",
        ToolCompleted,
        "A tool call finished."
    ),
    durable!(
        "tool.failed",
        "tool",
        ToolFailed,
        "A tool call failed or was refused."
    ),
    durable!(
        "command.started",
        "command",
        CommandStarted,
        "A shell command is about to run."
    ),
    durable!(
        "command.completed",
        "command",
        CommandCompleted,
        "A shell command ran to its end (any exit code)."
    ),
    durable!(
        "command.failed",
        "command",
        CommandFailed,
        "A shell command could not run or was killed."
    ),
    durable!(
        "artifact.created",
        "artifact",
        ArtifactCreated,
        "A file was stored under the session's artifacts."
    ),
    durable!(
        "diagnostic.created",
        "diagnostic",
        DiagnosticCreated,
        "A compiler, linker or analyzer finding was parsed."
    ),
    durable!(
        "evidence.created",
        "evidence",
        EvidenceCreated,
        "A claim-supporting reference was recorded."
    ),
    durable!(
        "context.compaction.requested",
        "context",
        CompactionRequested,
        "Context usage passed the compaction threshold."
    ),
    durable!(
        "context.compaction.completed",
        "context",
        "A compaction marker was inserted."
    ),
    durable!(
        "summary.created",
        "summary",
        "A structured summary of messages was stored."
    ),
    durable!(
        "permission.requested",
        "permission",
        PermissionRequested,
        "A decision that needs a human (or the run's policy)."
    ),
    durable!(
        "permission.decision.recorded",
        "permission",
        PermissionDecisionRecorded,
        "A permission decision, answered or by policy."
    ),
    durable!(
        "doctor.check.completed",
        "doctor",
        "A doctor run finished, with its findings."
    ),
    durable!("doctor.fix.applied", "doctor", "A doctor repair ran."),
    durable!(
        "requirement.changed",
        "requirement",
        "The user changed a requirement mid-run."
    ),
    durable!(
        "architecture.plan.updated",
        "architecture",
        "The architecture plan or task graph changed."
    ),
    durable!(
        "architecture.impact.completed",
        "architecture",
        "An impact assessment of a change finished."
    ),
    durable!(
        "workspace.created",
        "workspace",
        WorkspaceCreated,
        "An isolated workspace (git worktree) was created."
    ),
    durable!(
        "workspace.merged",
        "workspace",
        WorkspaceChanged,
        "A workspace was merged back."
    ),
    durable!(
        "workspace.removed",
        "workspace",
        WorkspaceChanged,
        "A workspace was removed."
    ),
    durable!(
        "memory.candidate.created",
        "memory",
        "The experience miner proposed a memory."
    ),
    durable!(
        "memory.promoted",
        "memory",
        "A memory candidate was promoted."
    ),
    durable!("memory.archived", "memory", "A memory was archived."),
    durable!(
        "debug.record.created",
        "debug",
        DebugRecordCreated,
        "A debugging record (symptom, cause, fix, evidence) was stored."
    ),
    ephemeral!(
        "agent.heartbeat",
        "agent",
        AgentHeartbeat,
        Coalesce::Latest { key: &["agent_id"] },
        "Pushed by a worker every few seconds."
    ),
    ephemeral!(
        "agent.timeout_extension.requested",
        "agent",
        TimeoutExtensionRequested,
        Coalesce::Never,
        "A worker past its soft timeout asks for more time."
    ),
    ephemeral!(
        "run.halted",
        "run",
        RunHalted,
        Coalesce::Latest { key: &[] },
        "The scheduler stopped because the session could not be written (a full disk, a read-only database): nothing recorded is lost, and `air run --resume` goes on once it can write again. `reason: null` when it runs again."
    ),
    ephemeral!(
        "task.progress",
        "task",
        TaskProgress,
        Coalesce::Latest { key: &["task_id"] },
        "Progress of a task."
    ),
    ephemeral!(
        "token.delta",
        "message",
        TokenDelta,
        Coalesce::Concat {
            key: &["message_id", "block_index", "kind"],
            text: "text"
        },
        "A piece of a streaming assistant message."
    ),
    ephemeral!(
        "stdout.delta",
        "command",
        OutputDelta,
        Coalesce::Concat {
            key: &["command_run_id"],
            text: "data"
        },
        "A chunk of a running command's stdout."
    ),
    ephemeral!(
        "stderr.delta",
        "command",
        OutputDelta,
        Coalesce::Concat {
            key: &["command_run_id"],
            text: "data"
        },
        "A chunk of a running command's stderr."
    ),
    ephemeral!(
        "tool.progress",
        "tool",
        ToolProgress,
        Coalesce::Latest {
            key: &["tool_run_id"]
        },
        "Progress of a running tool."
    ),
    ephemeral!(
        "hud.frame.rendered",
        "hud",
        Coalesce::Latest { key: &[] },
        "A HUD frame was rendered."
    ),
];

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
