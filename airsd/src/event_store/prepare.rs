//! Checking an event before it reaches the writer: registered type, registry version,
//! this session, a payload that matches its schema. The typed payload and the JSON
//! columns are produced here, off the writer thread, so the writer only runs SQL.

use air_proto::event::RuntimeEvent;
use air_proto::events as ev;
use air_proto::payload as p;
use air_proto::projection::TaskStatus;
use air_proto::registry::{self, EventSpec};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::{Error, Result};

/// A validated durable event, ready for the writer.
#[derive(Debug)]
pub(crate) struct Prepared {
    pub event: RuntimeEvent,
    pub payload_json: String,
    pub route_json: String,
    pub route_text: String,
    pub ids: EventIds,
    pub change: DomainChange,
}

/// Ids extracted into query-friendly columns of `events` (D-052).
#[derive(Debug, Default)]
pub(crate) struct EventIds {
    pub task_id: Option<String>,
    pub agent_id: Option<String>,
    pub tool_run_id: Option<String>,
    pub command_run_id: Option<String>,
}

/// What a durable event changes in the domain tables.
#[derive(Debug)]
pub(crate) enum DomainChange {
    None,
    SessionCreated(p::SessionCreated),
    SessionStatus(&'static str),
    Message {
        role: &'static str,
        payload: p::MessageCreated,
        content_json: String,
        usage_json: Option<String>,
    },
    /// `context.message.created`, with the agent the event is filed under.
    ContextMessage {
        agent_id: Option<String>,
        payload: p::MessageCreated,
        content_json: String,
    },
    TaskCreated {
        task: Box<air_proto::task::TaskSpec>,
        spec_json: String,
    },
    TaskStatus(TaskStatus, p::TaskStatusChanged),
    /// `run.continued`, `task.retried`: tasks back to pending.
    TasksReopened(Vec<String>),
    AgentStarted(p::AgentStarted),
    AgentCompleted {
        payload: p::AgentCompleted,
        result_json: Option<String>,
    },
    AgentFailed(p::AgentFailed),
    ToolStarted {
        payload: p::ToolStarted,
        input_json: String,
    },
    ToolCompleted {
        payload: p::ToolCompleted,
        output_json: Option<String>,
    },
    ToolFailed(p::ToolFailed),
    CommandStarted(p::CommandStarted),
    CommandCompleted(p::CommandCompleted),
    CommandFailed(p::CommandFailed),
    Artifact(Box<p::ArtifactCreated>),
    Diagnostic(p::DiagnosticCreated),
    Evidence {
        payload: Box<p::EvidenceCreated>,
        location_json: Option<String>,
    },
    WorkspaceCreated(p::WorkspaceCreated),
    WorkspaceChanged {
        status: &'static str,
        payload: p::WorkspaceChanged,
    },
    PermissionRequested(p::PermissionRequested),
    PermissionDecision(p::PermissionDecisionRecorded),
}

/// Looks `event` up in the registry and checks its envelope and payload.
pub(crate) fn check(event: &RuntimeEvent, session_id: &str) -> Result<&'static EventSpec> {
    let ty = &event.event_type;
    let spec = registry::lookup(ty).ok_or_else(|| Error::UnknownEventType {
        event_type: ty.clone(),
    })?;
    if event.version != spec.version {
        return Err(Error::EventVersion {
            event_type: ty.clone(),
            found: event.version,
            expected: spec.version,
        });
    }
    if event.session_id != session_id {
        return Err(Error::WrongSession {
            event_type: ty.clone(),
            expected: session_id.to_string(),
            found: event.session_id.clone(),
        });
    }
    if !air_proto::time::is_iso_time(&event.timestamp) {
        return Err(Error::invalid(
            ty,
            "timestamp",
            format!("`{}` is not an RFC 3339 timestamp", event.timestamp),
        ));
    }
    if event.id.is_empty() {
        return Err(Error::invalid(ty, "id", "must not be empty"));
    }
    spec.validate(&event.payload)
        .map_err(|source| Error::Payload {
            event_type: ty.clone(),
            source,
        })?;
    Ok(spec)
}

fn typed<T: DeserializeOwned>(event: &RuntimeEvent) -> Result<T> {
    T::deserialize(&event.payload)
        .map_err(|e| Error::invalid(&event.event_type, "payload", e.to_string()))
}

fn json<T: serde::Serialize + ?Sized>(event: &RuntimeEvent, value: &T) -> Result<String> {
    serde_json::to_string(value).map_err(|e| Error::Internal(format!("{}: {e}", event.event_type)))
}

fn str_field(payload: &Value, key: &str) -> Option<String> {
    payload.get(key).and_then(Value::as_str).map(str::to_owned)
}

/// Largest token count one message may report: sums over a session then stay far from
/// overflowing a 64-bit integer.
const MAX_TOKENS: u64 = 1_000_000_000_000;
/// Largest attempt number of a task.
pub(crate) const MAX_ATTEMPT: u32 = 1_000_000;
/// Largest value a database integer column holds.
const MAX_STORED: u64 = i64::MAX as u64;

fn at_most<T: PartialOrd + std::fmt::Display>(
    event: &RuntimeEvent,
    field: &str,
    value: Option<T>,
    max: T,
) -> Result<()> {
    match value {
        Some(v) if v > max => Err(Error::invalid(
            &event.event_type,
            field,
            format!("{v} is out of range (at most {max})"),
        )),
        _ => Ok(()),
    }
}

/// Numbers the schema accepts but the database or a running total could not hold.
fn check_ranges(event: &RuntimeEvent, change: &DomainChange) -> Result<()> {
    match change {
        DomainChange::Message { payload, .. } => {
            let usage = payload.usage.unwrap_or_default();
            at_most(
                event,
                "payload.usage.input_tokens",
                Some(usage.input_tokens),
                MAX_TOKENS,
            )?;
            at_most(
                event,
                "payload.usage.output_tokens",
                Some(usage.output_tokens),
                MAX_TOKENS,
            )
        }
        DomainChange::TaskStatus(_, pl) => {
            at_most(event, "payload.attempt", pl.attempt, MAX_ATTEMPT)
        }
        DomainChange::ToolCompleted { payload, .. } => at_most(
            event,
            "payload.duration_ms",
            payload.duration_ms,
            MAX_STORED,
        ),
        DomainChange::ToolFailed(pl) => {
            at_most(event, "payload.duration_ms", pl.duration_ms, MAX_STORED)
        }
        DomainChange::CommandCompleted(pl) => {
            at_most(event, "payload.duration_ms", pl.duration_ms, MAX_STORED)
        }
        DomainChange::CommandFailed(pl) => {
            at_most(event, "payload.duration_ms", pl.duration_ms, MAX_STORED)
        }
        DomainChange::Artifact(pl) => at_most(
            event,
            "payload.artifact.size_bytes",
            pl.artifact.size_bytes,
            MAX_STORED,
        ),
        _ => Ok(()),
    }
}

/// Builds the writer's input for a checked durable event.
pub(crate) fn prepare(event: RuntimeEvent) -> Result<Prepared> {
    let ty = event.event_type.as_str();
    let change = if let Some(status) = TaskStatus::from_event_type(ty) {
        DomainChange::TaskStatus(status, typed(&event)?)
    } else {
        match ty {
            ev::SessionCreated::TYPE => DomainChange::SessionCreated(typed(&event)?),
            ev::SessionArchived::TYPE => DomainChange::SessionStatus("archived"),
            ev::SessionDeleted::TYPE => DomainChange::SessionStatus("deleted"),
            ev::UserMessageCreated::TYPE | ev::AssistantMessageCreated::TYPE => {
                let payload: p::MessageCreated = typed(&event)?;
                let content_json = json(&event, &payload.content)?;
                let usage_json = payload
                    .usage
                    .as_ref()
                    .map(|u| json(&event, u))
                    .transpose()?;
                let role = if ty == ev::UserMessageCreated::TYPE {
                    "user"
                } else {
                    "assistant"
                };
                DomainChange::Message {
                    role,
                    payload,
                    content_json,
                    usage_json,
                }
            }
            ev::ContextMessageCreated::TYPE => {
                let payload: p::MessageCreated = typed(&event)?;
                let content_json = json(&event, &payload.content)?;
                // As the event's `agent_id` column has it.
                let agent_id = payload.agent_id.clone().or_else(|| {
                    (event.source.kind == air_proto::event::SourceKind::Agent)
                        .then(|| event.source.id.clone())
                        .flatten()
                });
                DomainChange::ContextMessage {
                    agent_id,
                    payload,
                    content_json,
                }
            }
            ev::TaskCreated::TYPE => {
                let payload: p::TaskCreated = typed(&event)?;
                let spec_json = json(&event, &payload.task)?;
                DomainChange::TaskCreated {
                    task: Box::new(payload.task),
                    spec_json,
                }
            }
            ev::RunContinued::TYPE => {
                DomainChange::TasksReopened(typed::<p::RunContinued>(&event)?.task_ids)
            }
            ev::TasksRetried::TYPE => {
                DomainChange::TasksReopened(typed::<p::TasksRetried>(&event)?.task_ids)
            }
            ev::AgentStarted::TYPE => DomainChange::AgentStarted(typed(&event)?),
            ev::AgentCompleted::TYPE => {
                let payload: p::AgentCompleted = typed(&event)?;
                let result_json = payload
                    .result
                    .as_ref()
                    .map(|r| json(&event, r))
                    .transpose()?;
                DomainChange::AgentCompleted {
                    payload,
                    result_json,
                }
            }
            ev::AgentFailed::TYPE => DomainChange::AgentFailed(typed(&event)?),
            ev::ToolStarted::TYPE => {
                let payload: p::ToolStarted = typed(&event)?;
                let input_json = json(&event, &payload.input)?;
                DomainChange::ToolStarted {
                    payload,
                    input_json,
                }
            }
            ev::ToolCompleted::TYPE => {
                let payload: p::ToolCompleted = typed(&event)?;
                let output_json = payload
                    .output
                    .as_ref()
                    .map(|o| json(&event, o))
                    .transpose()?;
                DomainChange::ToolCompleted {
                    payload,
                    output_json,
                }
            }
            ev::ToolFailed::TYPE => DomainChange::ToolFailed(typed(&event)?),
            ev::CommandStarted::TYPE => DomainChange::CommandStarted(typed(&event)?),
            ev::CommandCompleted::TYPE => DomainChange::CommandCompleted(typed(&event)?),
            ev::CommandFailed::TYPE => DomainChange::CommandFailed(typed(&event)?),
            ev::ArtifactCreated::TYPE => DomainChange::Artifact(Box::new(typed(&event)?)),
            ev::DiagnosticCreated::TYPE => DomainChange::Diagnostic(typed(&event)?),
            ev::EvidenceCreated::TYPE => {
                let payload: p::EvidenceCreated = typed(&event)?;
                let location_json = payload
                    .evidence
                    .location
                    .as_ref()
                    .map(|l| json(&event, l))
                    .transpose()?;
                DomainChange::Evidence {
                    payload: Box::new(payload),
                    location_json,
                }
            }
            ev::WorkspaceCreated::TYPE => DomainChange::WorkspaceCreated(typed(&event)?),
            ev::WorkspaceMerged::TYPE => DomainChange::WorkspaceChanged {
                status: "merged",
                payload: typed(&event)?,
            },
            ev::WorkspaceMergeFailed::TYPE => {
                let pl: p::WorkspaceMergeFailed = typed(&event)?;
                DomainChange::WorkspaceChanged {
                    status: "active",
                    payload: p::WorkspaceChanged {
                        workspace_id: pl.workspace_id,
                        reason: Some(pl.reason),
                        files: Vec::new(),
                    },
                }
            }
            ev::WorkspaceRemoved::TYPE => DomainChange::WorkspaceChanged {
                status: "removed",
                payload: typed(&event)?,
            },
            ev::PermissionRequested::TYPE => DomainChange::PermissionRequested(typed(&event)?),
            ev::PermissionDecisionRecorded::TYPE => {
                DomainChange::PermissionDecision(typed(&event)?)
            }
            _ => DomainChange::None,
        }
    };
    check_ranges(&event, &change)?;
    let payload = &event.payload;
    let mut ids = EventIds {
        task_id: str_field(payload, "task_id"),
        agent_id: str_field(payload, "agent_id"),
        tool_run_id: str_field(payload, "tool_run_id"),
        command_run_id: str_field(payload, "command_run_id"),
    };
    if let DomainChange::TaskCreated { task, .. } = &change {
        ids.task_id = Some(task.id.clone());
    }
    if ids.agent_id.is_none() && event.source.kind == air_proto::event::SourceKind::Agent {
        ids.agent_id = event.source.id.clone();
    }
    let payload_json = json(&event, &event.payload)?;
    let route_json = json(&event, &event.route)?;
    let route_text = event.route.join(" > ");
    Ok(Prepared {
        event,
        payload_json,
        route_json,
        route_text,
        ids,
        change,
    })
}
