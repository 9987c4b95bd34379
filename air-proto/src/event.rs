//! The runtime event envelope (D-038, baseline §7 and §14).
//!
//! An event does not say whether it is durable: the EventStore decides that by type from
//! the [`registry`](crate::registry).

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use crate::role::AgentType;
use crate::time::IsoTime;

/// Who produced an event (baseline §14 `EventSource`).
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EventSource {
    pub kind: SourceKind,
    pub id: Option<String>,
    pub agent_type: Option<AgentType>,
}

impl EventSource {
    pub fn new(kind: SourceKind) -> Self {
        Self {
            kind,
            id: None,
            agent_type: None,
        }
    }

    pub fn system() -> Self {
        Self::new(SourceKind::System)
    }

    pub fn scheduler() -> Self {
        Self::new(SourceKind::Scheduler)
    }

    pub fn agent(id: impl Into<String>, agent_type: AgentType) -> Self {
        Self {
            kind: SourceKind::Agent,
            id: Some(id.into()),
            agent_type: Some(agent_type),
        }
    }

    pub fn tool(id: impl Into<String>) -> Self {
        Self {
            kind: SourceKind::Tool,
            id: Some(id.into()),
            agent_type: None,
        }
    }
}

wire_enum! {
    pub enum SourceKind {
        Main = "main",
        ArchitectureDesigner = "architecture_designer",
        Scheduler = "scheduler",
        Agent = "agent",
        Tool = "tool",
        System = "system",
    }
}

/// The event envelope (D-038).
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RuntimeEvent {
    pub id: String,
    #[serde(rename = "type")]
    pub event_type: String,
    pub version: u32,
    pub timestamp: IsoTime,
    pub session_id: String,
    pub project_id: Option<String>,
    pub source: EventSource,
    /// Append-only route chain, e.g. `["main", "scheduler", "executor:a1", "fs.edit"]`.
    pub route: Vec<String>,
    pub payload: Value,
}

impl RuntimeEvent {
    /// A new event with a fresh id, the current time and the registry's version for
    /// `event_type` (1 for a type the registry does not know: the store will reject it).
    pub fn new(
        event_type: impl Into<String>,
        session_id: impl Into<String>,
        source: EventSource,
        payload: Value,
    ) -> Self {
        let event_type = event_type.into();
        let version = crate::registry::lookup(&event_type).map_or(1, |spec| spec.version);
        Self {
            id: crate::ids::new_id(),
            event_type,
            version,
            timestamp: crate::time::now_iso(),
            session_id: session_id.into(),
            project_id: None,
            source,
            route: Vec::new(),
            payload,
        }
    }

    /// Appends one hop to the route chain.
    pub fn via(mut self, hop: impl Into<String>) -> Self {
        self.route.push(hop.into());
        self
    }

    /// Builds an event from a typed payload.
    /// An event of a registered type, from its payload (the type names itself).
    pub fn of<E: crate::events::Event>(
        session_id: impl Into<String>,
        source: EventSource,
        event: &E,
    ) -> Result<Self, serde_json::Error> {
        Self::typed(E::TYPE, session_id, source, event)
    }

    pub fn typed<P: Serialize>(
        event_type: impl Into<String>,
        session_id: impl Into<String>,
        source: EventSource,
        payload: &P,
    ) -> Result<Self, serde_json::Error> {
        Ok(Self::new(
            event_type,
            session_id,
            source,
            serde_json::to_value(payload)?,
        ))
    }
}
