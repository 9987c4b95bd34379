//! Which recorded events are facts of the core, in one table: the event type, whether
//! recovery folds it, and how its payload becomes the fact.

use air_proto::events as ev;
use air_proto::payload::{self as p, RunStarted};
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::*;

/// One event type the core folds.
struct Entry {
    event_type: &'static str,
    /// Recovery folds it (a heartbeat matters only while its agent lives).
    recovered: bool,
    fact: fn(&str, &Value) -> Option<Fact>,
}

fn de<T: DeserializeOwned>(v: &Value) -> Option<T> {
    serde_json::from_value(v.clone()).ok()
}

fn dispatched(_: &str, v: &Value) -> Option<Fact> {
    let pl: p::TaskStatusChanged = de(v)?;
    Some(Fact::Dispatched {
        task_id: pl.task_id,
        agent_id: pl.agent_id?,
        role: pl.agent_type?,
        attempt: pl.attempt.unwrap_or(1),
    })
}

fn finished(event_type: &str, v: &Value) -> Option<Fact> {
    let pl: p::TaskStatusChanged = de(v)?;
    Some(Fact::TaskFinished {
        task_id: pl.task_id,
        status: TaskStatus::from_event_type(event_type)?,
        reason: pl.reason,
    })
}

fn planning(f: PlanningFact) -> Option<Fact> {
    Some(Fact::Planning(Box::new(f)))
}

const fn entry(event_type: &'static str, fact: fn(&str, &Value) -> Option<Fact>) -> Entry {
    Entry {
        event_type,
        recovered: true,
        fact,
    }
}

const TABLE: &[Entry] = &[
    entry(ev::RunStarted::TYPE, |_, v| {
        let run: RunStarted = de(v)?;
        Some(Fact::RunStarted {
            concurrency: run.concurrency,
            on_ask: run.on_ask,
            budgets: run.budgets,
            confirm: run.permission_mode == air_proto::plan::PermissionMode::Default,
            isolated: run.worktrees == Some(true),
        })
    }),
    entry(ev::RunCompleted::TYPE, |_, v| {
        Some(Fact::RunCompleted(de(v)?))
    }),
    entry(ev::RunModeChanged::TYPE, |_, v| {
        let pl: p::RunModeChanged = de(v)?;
        Some(Fact::ModeChanged {
            confirm: pl.permission_mode == air_proto::plan::PermissionMode::Default,
        })
    }),
    entry(ev::RunContinued::TYPE, |_, v| {
        let pl: p::RunContinued = de(v)?;
        Some(Fact::Continued {
            task_ids: pl.task_ids,
            budgets: pl.budgets,
        })
    }),
    entry(ev::HookCompleted::TYPE, |_, v| {
        let pl: p::HookCompleted = de(v)?;
        (pl.blocked && pl.event == air_proto::hooks::HookEvent::TaskCompleted.as_str()).then(|| {
            Fact::CompletionRefused {
                task_id: pl.task_id.unwrap_or_default(),
                reason: pl
                    .reason
                    .or(pl.skipped)
                    .unwrap_or_else(|| "no reason given".into()),
            }
        })
    }),
    entry(ev::WorkspaceMergeFailed::TYPE, |_, v| {
        let pl: p::WorkspaceMergeFailed = de(v)?;
        Some(Fact::MergeFailed {
            task_id: pl.task_id,
            reason: pl.reason,
        })
    }),
    entry(ev::TaskCreated::TYPE, |_, v| {
        Some(Fact::TaskCreated(Box::new(de::<p::TaskCreated>(v)?.task)))
    }),
    entry(ev::PermissionRequested::TYPE, |_, v| {
        let pl: p::PermissionRequested = de(v)?;
        (pl.tool.as_deref() == Some(TASK_START)).then_some(Fact::ConfirmationAsked {
            task_id: pl.task_id?,
        })
    }),
    entry(ev::PermissionDecisionRecorded::TYPE, |_, v| {
        let pl: p::PermissionDecisionRecorded = de(v)?;
        let task_id = pl.request_id?.strip_prefix(CONFIRM)?.to_string();
        Some(Fact::Confirmed {
            task_id,
            allow: pl.decision == p::PermissionDecision::Allow,
            reason: pl.reason,
        })
    }),
    entry(ev::UserMessageCreated::TYPE, |_, v| {
        let pl: p::MessageCreated = de(v)?;
        Some(Fact::UserMessage {
            text: air_proto::message::text_of(&pl.content),
            message_id: pl.message_id,
            to: pl.task_id,
        })
    }),
    entry(ev::QuestionsAsked::TYPE, |_, v| {
        planning(PlanningFact::Asked(de(v)?))
    }),
    entry(ev::RequirementsSettled::TYPE, |_, v| {
        planning(PlanningFact::Settled(de(v)?))
    }),
    entry(ev::PlanProposed::TYPE, |_, v| {
        planning(PlanningFact::Proposed(Box::new(de(v)?)))
    }),
    entry(ev::QuestionsAnswered::TYPE, |_, v| {
        planning(PlanningFact::Answered(de(v)?))
    }),
    entry(ev::PlanDecided::TYPE, |_, v| {
        planning(PlanningFact::Decided(de(v)?))
    }),
    entry(ev::PlanConfirmed::TYPE, |_, v| {
        planning(PlanningFact::Written(de(v)?))
    }),
    entry(ev::PlanUpdated::TYPE, |_, v| {
        planning(PlanningFact::Updated(Box::new(de(v)?)))
    }),
    entry(ev::RequirementChanged::TYPE, |_, v| {
        Some(Fact::RequirementChanged {
            change: v.get("change")?.as_str()?.to_string(),
        })
    }),
    entry(ev::TaskReady::TYPE, |_, v| {
        Some(Fact::TaskReady {
            task_id: de::<p::TaskStatusChanged>(v)?.task_id,
        })
    }),
    entry(ev::TaskStarted::TYPE, dispatched),
    entry(ev::TaskReviewing::TYPE, dispatched),
    entry(ev::TaskDebugging::TYPE, dispatched),
    entry(ev::TaskCompleted::TYPE, finished),
    entry(ev::TaskFailed::TYPE, finished),
    entry(ev::TaskBlocked::TYPE, finished),
    entry(ev::TaskCancelled::TYPE, finished),
    entry(ev::AgentCompleted::TYPE, |_, v| {
        let pl: p::AgentCompleted = de(v)?;
        Some(match pl.result {
            Some(result) => Fact::AgentResult {
                agent_id: pl.agent_id,
                result: Box::new(result),
                gate: pl.gate.map(Box::new),
            },
            None => Fact::AgentFailed {
                agent_id: pl.agent_id,
                failure: AgentFailure::Protocol,
                reason: "completed without a result".into(),
            },
        })
    }),
    entry(ev::WorkspaceUndone::TYPE, |_, v| {
        Some(Fact::Reverted {
            task_id: de::<p::WorkspaceUndone>(v)?.task_id,
            error: None,
        })
    }),
    entry(ev::RevertFailed::TYPE, |_, v| {
        let pl: p::RevertFailed = de(v)?;
        Some(Fact::Reverted {
            task_id: pl.task_id,
            error: Some(pl.reason),
        })
    }),
    entry(ev::ChangeClassified::TYPE, |_, v| {
        planning(PlanningFact::Classified(de(v)?))
    }),
    entry(ev::ArchitectureImpactCompleted::TYPE, |_, v| {
        planning(PlanningFact::Impact(Box::new(de(v)?)))
    }),
    entry(ev::LoopDetected::TYPE, |_, v| {
        let pl: p::LoopDetected = de(v)?;
        Some(Fact::LoopDetected {
            agent_id: pl.agent_id,
            task_id: pl.task_id,
            reason: pl.reason,
            stopped: pl.stopped,
        })
    }),
    entry(ev::AgentFailed::TYPE, |_, v| {
        let pl: p::AgentFailed = de(v)?;
        Some(Fact::AgentFailed {
            agent_id: pl.agent_id,
            failure: pl.failure.unwrap_or(AgentFailure::Crash),
            reason: pl.reason,
        })
    }),
    Entry {
        event_type: ev::AgentHeartbeat::TYPE,
        recovered: false,
        fact: |_, v| {
            let h = de::<p::AgentHeartbeat>(v)?;
            Some(Fact::Heartbeat {
                agent_id: h.agent_id,
                model: Some(h.model_silent_ms),
                beat: Some(super::Beat {
                    turn: h.turn.unwrap_or(0),
                    output_tokens: h.output_tokens.unwrap_or(0),
                    tools: h.tools_running.unwrap_or(0),
                }),
            })
        },
    },
    entry(ev::AgentSoftTimeout::TYPE, |_, v| {
        Some(Fact::SoftTimeoutWarned {
            agent_id: de::<p::AgentSoftTimeout>(v)?.agent_id,
        })
    }),
    entry(ev::TimeoutExtended::TYPE, |_, v| {
        let pl: p::TimeoutExtended = de(v)?;
        Some(Fact::TimeoutExtended {
            agent_id: pl.agent_id,
            extra_ms: pl.extra_ms,
        })
    }),
    entry(ev::SchedulerPaused::TYPE, |_, _| Some(Fact::Paused)),
    entry(ev::SchedulerResumed::TYPE, |_, _| Some(Fact::Resumed)),
    entry(ev::SchedulerStopped::TYPE, |_, v| {
        Some(Fact::Stopped {
            reason: de::<p::SchedulerControl>(v)?
                .reason
                .unwrap_or_else(|| "stopped".into()),
        })
    }),
    entry(ev::CancelRequested::TYPE, |_, v| {
        let pl: p::CancelRequested = de(v)?;
        Some(Fact::CancelRequested {
            task_id: pl.task_id,
            reason: pl.reason.unwrap_or_else(|| "cancelled".into()),
            block: pl.block,
        })
    }),
    entry(ev::AgentPaused::TYPE, |_, v| {
        Some(Fact::AgentHeld {
            agent_id: de::<p::AgentPauseChange>(v)?.agent_id,
        })
    }),
    entry(ev::AgentResumed::TYPE, |_, v| {
        Some(Fact::AgentReleased {
            agent_id: de::<p::AgentPauseChange>(v)?.agent_id,
        })
    }),
    entry(ev::TasksRetried::TYPE, |_, v| {
        Some(Fact::Retried {
            task_ids: de::<p::TasksRetried>(v)?.task_ids,
        })
    }),
];

/// The event types recovery folds, in no particular order.
pub fn recovered_types() -> impl Iterator<Item = &'static str> {
    TABLE.iter().filter(|e| e.recovered).map(|e| e.event_type)
}

/// The fact a recorded event is, if the core cares about it.
pub fn fact_of(event_type: &str, payload: &Value) -> Option<Fact> {
    let entry = TABLE.iter().find(|e| e.event_type == event_type)?;
    (entry.fact)(event_type, payload)
}

impl Fact {
    /// Whether the fact is work moving (the patrol's clock), rather than an agent
    /// saying it lives or an observation of the session.
    pub fn is_activity(&self) -> bool {
        !matches!(
            self,
            Fact::Heartbeat { .. }
                | Fact::Usage { .. }
                | Fact::Asks { .. }
                | Fact::SlowDown
                | Fact::Load { .. }
        )
    }
}
