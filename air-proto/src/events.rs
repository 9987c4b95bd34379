//! Every event type as a Rust type, its wire name stated once: [`Event::TYPE`] (also an
//! inherent `TYPE` const, usable in `match` patterns). A payload used by one event type
//! is that event (`AgentFailed` is `agent.failed`); a payload several types share gets a
//! transparent wrapper per type (`TaskReady(TaskStatusChanged)` is `task.ready`); a
//! free-form one wraps its JSON object. [`crate::event::RuntimeEvent::of`] builds an
//! event from one, and the registry's table refers to these types, so an event's name
//! cannot be written apart from its payload.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::payload as p;

/// A payload that does not match its type's schema.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("payload.{path}: {message}")]
pub struct PayloadError {
    /// JSON path inside the payload (`.` for the payload itself).
    pub path: String,
    pub message: String,
}

/// An event type: its wire name and its payload.
pub trait Event: Serialize + DeserializeOwned {
    /// The wire name (`agent.failed`).
    const TYPE: &'static str;
    /// The payload type's name in `air_proto::payload`, or `object` for free-form.
    const PAYLOAD: &'static str;

    /// Checks a payload against the type's schema, naming the JSON path of a mismatch.
    fn check(payload: &Value) -> Result<(), PayloadError> {
        serde_path_to_error::deserialize::<_, Self>(payload)
            .map(drop)
            .map_err(|e| {
                let message = e.inner().to_string();
                let path = crate::codec::full_path(&e.path().to_string(), &message);
                PayloadError { path, message }
            })
    }
}

/// Payloads that are one event type each.
macro_rules! own {
    ($( $ty:ident => $name:literal, )*) => {$(
        pub use p::$ty;

        impl p::$ty {
            pub const TYPE: &'static str = $name;
        }

        impl Event for p::$ty {
            const TYPE: &'static str = $name;
            const PAYLOAD: &'static str = stringify!($ty);
        }
    )*};
}

/// Event types that share a payload: a transparent wrapper each.
macro_rules! shared {
    ($( $wrapper:ident($ty:ident) => $name:literal, )*) => {$(
        #[doc = concat!("`", $name, "`, whose payload is [`p::", stringify!($ty), "`].")]
        #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $wrapper(pub p::$ty);

        impl $wrapper {
            pub const TYPE: &'static str = $name;
        }

        impl Event for $wrapper {
            const TYPE: &'static str = $name;
            const PAYLOAD: &'static str = stringify!($ty);
        }
    )*};
}

/// Free-form event types: any JSON object.
macro_rules! free {
    ($( $wrapper:ident => $name:literal, )*) => {$(
        #[doc = concat!("`", $name, "`, a free-form JSON object.")]
        #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $wrapper(pub serde_json::Map<String, Value>);

        impl $wrapper {
            pub const TYPE: &'static str = $name;
        }

        impl Event for $wrapper {
            const TYPE: &'static str = $name;
            const PAYLOAD: &'static str = "object";

            fn check(payload: &Value) -> Result<(), PayloadError> {
                if payload.is_object() {
                    Ok(())
                } else {
                    Err(PayloadError {
                        path: ".".into(),
                        message: "expected a JSON object".into(),
                    })
                }
            }
        }
    )*};
}

own! {
    SessionCreated => "session.created",
    AgentStarted => "agent.started",
    AgentCompleted => "agent.completed",
    AgentFailed => "agent.failed",
    AgentSoftTimeout => "agent.soft_timeout",
    TimeoutExtended => "agent.timeout_extended",
    ModelFallback => "agent.model_fallback",
    LoopDetected => "agent.loop_detected",
    ModelSelected => "agent.model_selected",
    RateLimited => "agent.rate_limited",
    ConcurrencyChanged => "scheduler.concurrency_changed",
    RunStarted => "run.started",
    RunCompleted => "run.completed",
    RunContinued => "run.continued",
    RunModeChanged => "run.mode_changed",
    HookCompleted => "hook.completed",
    CancelRequested => "scheduler.cancel_requested",
    Patrol => "scheduler.patrol",
    TaskCreated => "task.created",
    TasksRetried => "task.retried",
    ToolStarted => "tool.started",
    ToolCompleted => "tool.completed",
    ToolFailed => "tool.failed",
    CommandStarted => "command.started",
    CommandCompleted => "command.completed",
    CommandFailed => "command.failed",
    ArtifactCreated => "artifact.created",
    DiagnosticCreated => "diagnostic.created",
    EvidenceCreated => "evidence.created",
    CompactionRequested => "context.compaction.requested",
    CompactionCompleted => "context.compaction.completed",
    SummaryCreated => "summary.created",
    PermissionRequested => "permission.requested",
    PermissionDecisionRecorded => "permission.decision.recorded",
    WorkspaceCreated => "workspace.created",
    WorkspaceMergeFailed => "workspace.merge_failed",
    WorkspaceUndone => "workspace.undone",
    RevertFailed => "workspace.revert_failed",
    DebugRecordCreated => "debug.record.created",
    MemoryCandidateCreated => "memory.candidate.created",
    MemoryPromoted => "memory.promoted",
    MemoryArchived => "memory.archived",
    SkillLoaded => "skill.loaded",
    OutdatedReported => "memory.outdated.reported",
    AgentHeartbeat => "agent.heartbeat",
    TimeoutExtensionRequested => "agent.timeout_extension.requested",
    RunHalted => "run.halted",
    TaskProgress => "task.progress",
    TokenDelta => "token.delta",
    ToolProgress => "tool.progress",
    QuestionsAsked => "architecture.questions.asked",
    QuestionsAnswered => "architecture.questions.answered",
    RequirementsSettled => "architecture.requirements.settled",
    PlanProposed => "architecture.plan.proposed",
    PlanDecided => "architecture.plan.decided",
    PlanConfirmed => "architecture.plan.confirmed",
    PlanUpdated => "architecture.plan.updated",
    ChangeClassified => "architecture.change.classified",
}

shared! {
    SessionArchived(SessionStatusChanged) => "session.archived",
    ArchitectureImpactCompleted(ImpactCompleted) => "architecture.impact.completed",
    SessionDeleted(SessionStatusChanged) => "session.deleted",
    UserMessageCreated(MessageCreated) => "user.message.created",
    AssistantMessageCreated(MessageCreated) => "assistant.message.created",
    ContextMessageCreated(MessageCreated) => "context.message.created",
    AgentPaused(AgentPauseChange) => "agent.paused",
    AgentResumed(AgentPauseChange) => "agent.resumed",
    SchedulerPaused(SchedulerControl) => "scheduler.paused",
    SchedulerResumed(SchedulerControl) => "scheduler.resumed",
    SchedulerStopped(SchedulerControl) => "scheduler.stopped",
    TaskReady(TaskStatusChanged) => "task.ready",
    TaskStarted(TaskStatusChanged) => "task.started",
    TaskReviewing(TaskStatusChanged) => "task.reviewing",
    TaskDebugging(TaskStatusChanged) => "task.debugging",
    TaskCompleted(TaskStatusChanged) => "task.completed",
    TaskBlocked(TaskStatusChanged) => "task.blocked",
    TaskFailed(TaskStatusChanged) => "task.failed",
    TaskCancelled(TaskStatusChanged) => "task.cancelled",
    StdoutDelta(OutputDelta) => "stdout.delta",
    StderrDelta(OutputDelta) => "stderr.delta",
    WorkspaceMerged(WorkspaceChanged) => "workspace.merged",
    WorkspaceRemoved(WorkspaceChanged) => "workspace.removed",
    WorkspaceMerging(WorkspaceChanged) => "workspace.merging",
}

free! {
    DoctorCheckCompleted => "doctor.check.completed",
    DoctorFixApplied => "doctor.fix.applied",
    RequirementChanged => "requirement.changed",
    HudFrameRendered => "hud.frame.rendered",
}
