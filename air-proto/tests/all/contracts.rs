//! The contracts against their fixtures: every type round-trips exactly, every IPC
//! kind and control message parses to its variant, and bad input names its path.

use std::path::PathBuf;

use air_proto::dependency::DependencySpec;
use air_proto::event::RuntimeEvent;
use air_proto::ipc::{ControlMessage, IpcBody, IpcMessage};
use air_proto::result::WorkerResult;
use air_proto::task::TaskSpec;
use air_proto::tool::ToolDefinition;
use proptest::prelude::*;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

fn fixture(name: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

/// Parses a fixture as `T` and serializes it back: the JSON must be identical.
fn round_trip<T: Serialize + DeserializeOwned>(name: &str) -> T {
    let original = fixture(name);
    let parsed: T = serde_path_to_error::deserialize(&original)
        .unwrap_or_else(|e| panic!("{name}: {} at {}", e.inner(), e.path()));
    let back = serde_json::to_value(&parsed).unwrap();
    assert_eq!(back, original, "{name} does not round-trip exactly");
    parsed
}

#[test]
fn fixtures_round_trip_exactly() {
    let spec: TaskSpec = round_trip("task_spec.json");
    assert_eq!(spec.dependencies.len(), 2);
    round_trip::<TaskSpec>("task_spec_baseline.json");
    let result: WorkerResult = round_trip("worker_result.json");
    assert_eq!(
        result.evidence_refs[1].location.as_ref().unwrap().line_end,
        Some(22)
    );
    round_trip::<RuntimeEvent>("runtime_event.json");
    round_trip::<ToolDefinition>("tool_definition.json");
    round_trip::<DependencySpec>("dependency_spec.json");
}

#[test]
fn every_ipc_kind_round_trips() {
    let cases = [
        ("ipc_control_start.json", "control"),
        ("ipc_control_cancel.json", "control"),
        ("ipc_control_pause.json", "control"),
        ("ipc_control_resume.json", "control"),
        ("ipc_control_extend_timeout.json", "control"),
        ("ipc_event.json", "event"),
        ("ipc_log.json", "log"),
        ("ipc_tool_call.json", "tool.call"),
        ("ipc_tool_result.json", "tool.result"),
        ("ipc_tool_stream.json", "tool.stream"),
        ("ipc_worker_result.json", "worker.result"),
        ("ipc_worker_checkpoint.json", "worker.checkpoint"),
        ("ipc_protocol_error.json", "protocol.error"),
    ];
    let mut kinds = std::collections::BTreeSet::new();
    for (file, kind) in cases {
        let msg: IpcMessage = round_trip(file);
        assert_eq!(msg.body.kind().as_str(), kind, "{file}");
        kinds.insert(kind);
    }
    assert_eq!(kinds.len(), 9, "all nine V1 kinds are covered");
}

#[test]
fn control_messages_parse_to_their_variants() {
    let msg: IpcMessage =
        serde_json::from_value(fixture("ipc_control_extend_timeout.json")).unwrap();
    match msg.body {
        IpcBody::Control(ControlMessage::ExtendTimeout { extra_ms, reason }) => {
            assert_eq!(extra_ms, 300_000);
            assert_eq!(reason, "full rebuild needed");
        }
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(msg.header.correlation_id.as_deref(), Some("w-9"));
}

/// Removes the value at `path` (dot-separated, numeric segments index arrays).
fn remove(value: &mut Value, path: &str) {
    let mut parts: Vec<&str> = path.split('.').collect();
    let last = parts.pop().unwrap();
    let mut v = value;
    for p in parts {
        v = match p.parse::<usize>() {
            Ok(i) => &mut v[i],
            Err(_) => &mut v[p],
        };
    }
    v.as_object_mut()
        .unwrap()
        .remove(last)
        .unwrap_or_else(|| panic!("no field {path}"));
}

/// Decoding a fixture without `path` fails with an error naming that path.
fn check_missing<T: DeserializeOwned + std::fmt::Debug>(file: &str, path: &str, expect_path: &str) {
    let mut value = fixture(file);
    remove(&mut value, path);
    let line = serde_json::to_vec(&value).unwrap();
    let err = air_proto::codec::decode_line::<T>(7, &line).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains(expect_path),
        "{file} without {path}: `{text}` does not name `{expect_path}`"
    );
    assert_eq!(err.line, 7);
    let pe = err.to_protocol_error();
    assert_eq!(pe.line, Some(7));
}

#[test]
fn missing_required_fields_are_named_by_path() {
    check_missing::<TaskSpec>("task_spec.json", "title", "title");
    check_missing::<TaskSpec>(
        "task_spec.json",
        "constraints.max_turns",
        "constraints.max_turns",
    );
    check_missing::<TaskSpec>(
        "task_spec.json",
        "contracts.provides.0.stability",
        "contracts.provides[0].stability",
    );
    check_missing::<TaskSpec>(
        "task_spec.json",
        "dependencies.1.dependency_type",
        "dependencies[1].dependency_type",
    );
    check_missing::<WorkerResult>(
        "worker_result.json",
        "evidence_refs.0.claim",
        "evidence_refs[0].claim",
    );
    check_missing::<RuntimeEvent>("runtime_event.json", "source.kind", "source.kind");
    check_missing::<IpcMessage>(
        "ipc_control_start.json",
        "control.task_spec.verification.required",
        "control.task_spec.verification.required",
    );
    check_missing::<IpcMessage>("ipc_tool_call.json", "tool_call.tool", "tool_call.tool");
    check_missing::<IpcMessage>("ipc_log.json", "level", "level");
    check_missing::<IpcMessage>("ipc_control_start.json", "control.runtime", "runtime");
    check_missing::<IpcMessage>("ipc_control_cancel.json", "session_id", "session_id");
}

#[test]
fn a_body_must_match_its_kind() {
    let mut value = fixture("ipc_tool_call.json");
    value["kind"] = "tool.result".into();
    let err = serde_json::from_value::<IpcMessage>(value)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("field `tool_call` is not allowed with kind `tool.result`"),
        "{err}"
    );

    let mut value = fixture("ipc_control_cancel.json");
    value["control"]["extra_ms"] = 5.into();
    let err = serde_json::from_value::<IpcMessage>(value)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("`extra_ms` is not allowed with control `agent.cancel`"),
        "{err}"
    );
}

#[test]
fn enum_values_are_the_seeds_strings() {
    let mut value = fixture("task_spec.json");
    value["constraints"]["model_policy"] = "scheduler-forced".into();
    let err = air_proto::codec::decode_line::<TaskSpec>(1, &serde_json::to_vec(&value).unwrap())
        .unwrap_err()
        .to_string();
    assert!(err.contains("constraints.model_policy"), "{err}");
    assert!(
        err.contains("scheduler_forced"),
        "lists the accepted values: {err}"
    );
}

fn opt<T: std::fmt::Debug + Clone + 'static>(
    s: impl Strategy<Value = T> + 'static,
) -> BoxedStrategy<Option<T>> {
    proptest::option::of(s).boxed()
}

fn text() -> BoxedStrategy<String> {
    proptest::string::string_regex("[a-zA-Z0-9 _./\\-\u{e9}\u{4e2d}\n\"]{0,16}")
        .unwrap()
        .boxed()
}

prop_compose! {
    fn task_spec()(
        id in "[A-Z][0-9]{1,3}",
        ty in prop_oneof![Just("execute"), Just("review"), Just("debug"), Just("compact"), Just("mine_experience")],
        title in text(),
        criteria in proptest::collection::vec(text(), 0..3),
        write_area in opt(text()),
        denied in opt(proptest::collection::vec(text(), 0..3)),
        deps in proptest::collection::vec(("[A-Z][0-9]", prop_oneof![Just("hard"), Just("soft"), Just("conflict"), Just("serialization")], opt(text())), 0..4),
        commands in opt(proptest::collection::vec(text(), 0..3)),
        required in any::<bool>(),
        evidence in opt(proptest::collection::vec(prop_oneof![Just("build_pass"), Just("screenshot"), Just("static_analysis")], 0..3)),
        max_turns in any::<u32>(),
        hard in any::<u64>(),
        model_id in opt(text()),
        provides in opt(proptest::collection::vec((text(), prop_oneof![Just("api"), Just("file")], prop_oneof![Just("stable"), Just("frozen")]), 0..2)),
    ) -> Value {
        let mut scope = serde_json::Map::new();
        if let Some(w) = write_area { scope.insert("write_area".into(), w.into()); }
        if let Some(d) = denied { scope.insert("denied_paths".into(), d.into()); }
        let mut verification = serde_json::json!({"required": required, "fallback_allowed": !required});
        if let Some(c) = commands { verification["commands"] = c.into(); }
        if let Some(e) = evidence { verification["evidence_types"] = e.into(); }
        let mut constraints = serde_json::json!({"max_turns": max_turns, "soft_timeout_ms": hard / 2, "hard_timeout_ms": hard, "retry_budget": 2, "model_policy": "agent_select"});
        if let Some(m) = model_id { constraints["model_id"] = m.into(); }
        let mut v = serde_json::json!({
            "id": id, "type": ty, "title": title, "description": "d", "acceptance_criteria": criteria,
            "scope": scope,
            "dependencies": deps.into_iter().map(|(d, t, r)| {
                let mut dep = serde_json::json!({"depends_on_task_id": d, "dependency_type": t});
                if let Some(r) = r { dep["reason"] = r.into(); }
                dep
            }).collect::<Vec<_>>(),
            "verification": verification, "constraints": constraints, "context_refs": {},
            "output_contract": "ExecutorResult",
        });
        if let Some(p) = provides {
            v["contracts"] = serde_json::json!({"provides": p.into_iter().map(|(m, k, s)| serde_json::json!({"module": m, "kind": k, "spec": "s", "stability": s})).collect::<Vec<_>>()});
        }
        v
    }
}

proptest! {
    #[test]
    fn task_specs_round_trip(value in task_spec()) {
        let spec: TaskSpec = serde_json::from_value(value.clone()).unwrap();
        prop_assert_eq!(serde_json::to_value(&spec).unwrap(), value);
    }

    #[test]
    fn agent_start_round_trips_through_the_codec(value in task_spec(), agent in "[a-z0-9-]{1,12}", corr in opt("[a-z0-9]{1,8}".boxed())) {
        let mut msg = fixture("ipc_control_start.json");
        msg["control"]["task_spec"] = value;
        msg["agent_id"] = agent.into();
        if let Some(c) = corr { msg["correlation_id"] = c.into(); }
        let parsed: IpcMessage = serde_json::from_value(msg.clone()).unwrap();
        let line = air_proto::codec::encode(&parsed, air_proto::codec::DEFAULT_MAX_LINE).unwrap();
        prop_assert_eq!(line.iter().filter(|&&b| b == b'\n').count(), 1);
        let mut dec = air_proto::codec::NdjsonDecoder::default();
        dec.push(&line);
        let back: IpcMessage = dec.next_message().unwrap().unwrap();
        prop_assert_eq!(&back, &parsed);
        prop_assert_eq!(serde_json::to_value(&back).unwrap(), msg);
    }

    #[test]
    fn log_and_stream_messages_round_trip(level in prop_oneof![Just("debug"), Just("info"), Just("warn"), Just("error")], message in text(), chunk in text()) {
        let log = serde_json::json!({"id": "1", "kind": "log", "direction": "worker_to_parent", "timestamp": "t", "session_id": "s", "agent_id": "a", "level": level, "message": message});
        let parsed: IpcMessage = serde_json::from_value(log.clone()).unwrap();
        prop_assert_eq!(serde_json::to_value(&parsed).unwrap(), log);
        let stream = serde_json::json!({"id": "2", "kind": "tool.stream", "direction": "parent_to_worker", "timestamp": "t", "session_id": "s", "agent_id": "a", "tool_stream": {"tool_call_id": "c", "channel": "stderr", "text": chunk}});
        let parsed: IpcMessage = serde_json::from_value(stream.clone()).unwrap();
        prop_assert_eq!(serde_json::to_value(&parsed).unwrap(), stream);
    }
}

#[test]
fn as_str_matches_the_serialized_form() {
    use air_proto::event::{AgentType, SourceKind};
    use air_proto::projection::{enum_str, TaskStatus};
    for k in [
        SourceKind::Main,
        SourceKind::ArchitectureDesigner,
        SourceKind::Scheduler,
        SourceKind::Agent,
        SourceKind::Tool,
        SourceKind::System,
    ] {
        assert_eq!(enum_str(&k).as_deref(), Some(k.as_str()));
    }
    for t in AgentType::ALL {
        assert_eq!(enum_str(&t).as_deref(), Some(t.as_str()));
    }
    for s in TaskStatus::ALL {
        assert_eq!(enum_str(&s).as_deref(), Some(s.as_str()));
    }
}

#[test]
fn every_api_method_has_a_param_check() {
    let checked: std::collections::BTreeSet<&str> = air_proto::api::params::methods().collect();
    for (method, _) in air_proto::api::METHODS {
        assert!(checked.contains(method), "{method} has no param check");
    }
    let v = |m: &str, p: &str| air_proto::api::params::validate(m, Some(p)).unwrap();
    assert!(v("session.get", r#"{"session_id":"a"}"#).is_ok());
    assert!(v("session.get", r#"["a"]"#).is_ok());
    assert_eq!(
        v("session.get", r#"["a","b"]"#).unwrap_err(),
        "`session.get` takes at most 1 params (session_id), got 2"
    );
    assert_eq!(
        v("message.send", r#"{"session_id":"a"}"#).unwrap_err(),
        "text: missing field `text`"
    );
    assert!(air_proto::api::params::validate("no.such", None).is_none());
}

#[test]
fn docs_api_openrpc_is_current() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/api.openrpc.json");
    let mut generated = serde_json::to_string_pretty(&air_proto::api::openrpc()).unwrap();
    generated.push('\n');
    if std::env::var_os("AIR_UPDATE_DOCS").is_some() {
        std::fs::write(&path, &generated).unwrap();
    }
    let committed: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap_or_default())
            .unwrap_or_default();
    assert!(
        committed == air_proto::api::openrpc(),
        "docs/api.openrpc.json is stale: run `AIR_UPDATE_DOCS=1 cargo test -p air-proto docs_`"
    );
    let doc: serde_json::Value = serde_json::from_str(&generated).unwrap();
    let names: Vec<&str> = doc["methods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap())
        .collect();
    for (method, _) in air_proto::api::METHODS {
        assert!(
            names.contains(method),
            "{method} missing from the OpenRPC document"
        );
    }
    let get = doc["methods"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "session.get")
        .unwrap();
    assert_eq!(get["params"][0]["name"], "session_id");
    assert_eq!(get["params"][0]["required"], true);
    assert!(doc["components"]["schemas"]["Projection"].is_object());
}
