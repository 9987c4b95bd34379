//! The event registry: every seed event registered with its durability, unique
//! names, payloads validated naming the path, and `docs/event-registry.md` current.

use std::collections::BTreeSet;

use air_proto::registry::{self, Coalesce, Durability, EVENTS};
use serde_json::json;

/// D-040's lists, verbatim.
const D040_DURABLE: &[&str] = &[
    "session.created",
    "session.archived",
    "session.deleted",
    "user.message.created",
    "assistant.message.created",
    "agent.started",
    "agent.completed",
    "agent.failed",
    "task.created",
    "task.started",
    "task.completed",
    "task.blocked",
    "task.failed",
    "task.cancelled",
    "tool.started",
    "tool.completed",
    "tool.failed",
    "command.started",
    "command.completed",
    "command.failed",
    "artifact.created",
    "context.compaction.completed",
    "summary.created",
    "memory.candidate.created",
    "memory.promoted",
    "memory.archived",
    "debug.record.created",
    "permission.decision.recorded",
    "requirement.changed",
    "architecture.plan.updated",
    "architecture.impact.completed",
];
const D040_EPHEMERAL: &[&str] = &[
    "agent.heartbeat",
    "task.progress",
    "token.delta",
    "stdout.delta",
    "stderr.delta",
    "hud.frame.rendered",
    "tool.progress",
];
/// Baseline §7's durable families.
const DURABLE_FAMILIES: &[&str] = &[
    "session",
    "message",
    "agent",
    "task",
    "tool",
    "command",
    "artifact",
    "diagnostic",
    "evidence",
    "context",
    "summary",
    "permission",
    "doctor",
    "requirement",
    "architecture",
    "workspace",
    "memory",
    "debug",
];

#[test]
fn every_seed_event_is_registered_with_its_durability() {
    for name in D040_DURABLE {
        let spec = registry::lookup(name).unwrap_or_else(|| panic!("{name} missing"));
        assert_eq!(spec.durability, Durability::Durable, "{name}");
        assert_eq!(spec.coalesce, Coalesce::Never, "{name}");
    }
    for name in D040_EPHEMERAL {
        let spec = registry::lookup(name).unwrap_or_else(|| panic!("{name} missing"));
        assert_eq!(spec.durability, Durability::Ephemeral, "{name}");
    }
    let families: BTreeSet<&str> = EVENTS
        .iter()
        .filter(|e| e.is_durable())
        .map(|e| e.family)
        .collect();
    for family in DURABLE_FAMILIES {
        assert!(
            families.contains(family),
            "no durable event in family {family}"
        );
    }
    assert!(
        registry::lookup("context.compaction.requested").is_some_and(|s| s.is_durable()),
        "D-046 names it"
    );
}

#[test]
fn names_are_unique_and_versions_positive() {
    let mut seen = BTreeSet::new();
    for spec in EVENTS {
        assert!(seen.insert(spec.name), "{} registered twice", spec.name);
        assert!(spec.version >= 1);
        assert!(
            spec.name.starts_with(spec.family)
                || spec.family == "message"
                || spec.family == "command",
            "{} in family {}",
            spec.name,
            spec.family
        );
    }
}

#[test]
fn payloads_are_validated_naming_the_path() {
    let spec = registry::lookup("task.started").unwrap();
    assert!(spec.validate(&json!({"task_id": "T1"})).is_ok());
    let err = spec.validate(&json!({"attempt": 1})).unwrap_err();
    assert_eq!(err.to_string(), "payload.task_id: missing field `task_id`");
    let err = registry::lookup("tool.started")
        .unwrap()
        .validate(&json!({"tool_run_id": "r", "tool": 5, "input": {}}))
        .unwrap_err();
    assert_eq!(err.path, "tool");
    let err = registry::lookup("doctor.check.completed")
        .unwrap()
        .validate(&json!([1]))
        .unwrap_err();
    assert!(err.message.contains("object"));
}

#[test]
fn docs_event_registry_is_current() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/event-registry.md");
    let generated = registry::markdown();
    if std::env::var_os("AIR_UPDATE_DOCS").is_some() {
        std::fs::write(&path, &generated).unwrap();
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "docs/event-registry.md is stale: run `AIR_UPDATE_DOCS=1 cargo test -p air-proto registry`"
    );
}

/// An event is built from its payload's type, which names it; a shared payload's
/// wrapper is transparent on the wire; what a worker may publish is the registry's.
#[test]
fn events_are_built_from_their_types() {
    use air_proto::event::{EventSource, RuntimeEvent};
    use air_proto::events::{self as ev, Event};
    use air_proto::payload as p;

    let failed = p::AgentFailed {
        agent_id: "a".into(),
        reason: "crashed".into(),
        exit_code: Some(1),
        failure: None,
    };
    let e = RuntimeEvent::of("s", EventSource::scheduler(), &failed).unwrap();
    assert_eq!(e.event_type, "agent.failed");
    assert_eq!(e.payload, serde_json::to_value(&failed).unwrap());

    let status = p::TaskStatusChanged {
        task_id: "T1".into(),
        ..Default::default()
    };
    let e = RuntimeEvent::of(
        "s",
        EventSource::scheduler(),
        &ev::TaskReady(status.clone()),
    )
    .unwrap();
    assert_eq!(e.event_type, "task.ready");
    assert_eq!(e.payload, serde_json::to_value(&status).unwrap());
    assert_eq!(ev::TaskReady::PAYLOAD, "TaskStatusChanged");

    // The registry's entry of each type is the one its Rust type names.
    for (name, payload) in [
        (ev::AgentFailed::TYPE, "AgentFailed"),
        (ev::TaskReady::TYPE, "TaskStatusChanged"),
        (ev::SummaryCreated::TYPE, "SummaryCreated"),
        (ev::DoctorCheckCompleted::TYPE, "object"),
    ] {
        assert_eq!(registry::lookup(name).unwrap().payload, payload, "{name}");
    }

    let from_workers: Vec<&str> = registry::EVENTS
        .iter()
        .filter(|s| s.from_worker)
        .map(|s| s.name)
        .collect();
    assert_eq!(
        from_workers,
        [
            "assistant.message.created",
            "context.message.created",
            "agent.model_fallback",
            "agent.model_selected",
            "agent.loop_detected",
            "context.compaction.requested",
            "requirement.changed",
            "debug.record.created",
            "skill.loaded",
            "memory.outdated.reported",
            "agent.heartbeat",
            "agent.rate_limited",
            "agent.timeout_extension.requested",
            "task.progress",
            "token.delta",
        ]
    );
    assert!(registry::worker_may_send("token.delta"));
    assert!(!registry::worker_may_send("task.completed"));
    assert!(!registry::worker_may_send("no.such"));
}
