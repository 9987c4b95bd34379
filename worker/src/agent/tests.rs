//! The tests of `agent`.

use std::sync::Mutex;

use air_proto::ipc::ToolResultStatus;
use serde_json::json;

use super::*;

#[test]
fn refusals_name_the_tools_as_the_model_knows_them() {
    let names = vec![
        ("fs_read".to_string(), "fs.read".to_string()),
        ("shell_run".to_string(), "shell.run".to_string()),
    ];
    assert_eq!(
        model_names(
            "a.txt: read it with fs.read first, or `shell.run`. Not my.fs.read, fs.reader, scripts/shell.run or docs/fs.read.md.",
            &names
        ),
        "a.txt: read it with fs_read first, or `shell_run`. Not my.fs.read, fs.reader, scripts/shell.run or docs/fs.read.md."
    );
}

/// A link that answers tool calls from a script and keeps what the loop says.
#[derive(Default)]
struct Script {
    states: Mutex<Vec<&'static str>>,
    events: Mutex<Vec<RuntimeEvent>>,
    shell_exits: Mutex<Vec<i64>>,
    calls: Mutex<Vec<String>>,
}

impl Link for Script {
    fn event(&self, event: RuntimeEvent) {
        self.events.lock().unwrap().push(event);
    }

    fn progress(&self, state: LoopState, _turn: u32, _tokens: (u64, u64)) {
        let mut s = self.states.lock().unwrap();
        if s.last() != Some(&state.as_str()) {
            s.push(state.as_str());
        }
    }

    async fn call_tool(&self, id: &str, tool: &str, _input: Value, _origin: &str) -> ToolResult {
        self.calls.lock().unwrap().push(tool.to_string());
        let output = match tool {
            "shell.run" => {
                let code = self.shell_exits.lock().unwrap().remove(0);
                json!({"exit_code": code, "command_run_id": format!("run-{code}")})
            }
            _ => json!({"ok": true}),
        };
        ToolResult {
            tool_call_id: id.into(),
            status: ToolResultStatus::Ok,
            output: Some(output),
            content: None,
            error: None,
            truncated: false,
            artifact_ref: None,
        }
    }
}

fn tool_turn(id: &str, name: &str, input: Value) -> Value {
    json!({"reply": {"events": [
        {"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant", "content": [], "model": "x", "stop_reason": null, "usage": {"input_tokens": 5, "output_tokens": 1}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": input.to_string()}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 3}},
        {"type": "message_stop"}
    ]}})
}

/// The debugger's loop goes GATHERING → ANALYZING → FIXING → RECORDING and leaves
/// a DebugRecord naming the failed check, the cause and the command runs. A fix
/// before any evidence that bears on the failure (after `true`, as a model in a
/// hurry does) is refused, and reaches no tool.
#[test]
fn the_debugger_gathers_analyzes_fixes_and_records() {
    let dir = tempfile::tempdir().unwrap();
    let check = "grep -qx hello hello.txt";
    let recording = json!({"provider": "anthropic", "exchanges": [
        tool_turn("d0", "shell_run", json!({"command": "true"})),
        tool_turn("d0b", "fs_edit", json!({"path": "hello.txt", "old_string": "helo", "new_string": "hello"})),
        tool_turn("d1", "shell_run", json!({"command": check})),
        tool_turn("d2", "fs_read", json!({"path": "hello.txt"})),
        tool_turn("d3", "fs_edit", json!({"path": "hello.txt", "old_string": "helo", "new_string": "hello"})),
        tool_turn("d4", "shell_run", json!({"command": check})),
        tool_turn("d5", "submit_result", json!({
            "status": "completed", "summary": "Fixed the typo.",
            "verification": [{"name": check, "status": "passed"}],
            "analysis": "hello.txt says helo", "root_cause": "a typo", "fixed": true
        })),
    ]});
    std::fs::write(dir.path().join("T1-debugger-1.json"), recording.to_string()).unwrap();
    let tools: Vec<Value> = ["fs.read", "fs.edit", "shell.run"]
        .iter()
        .map(|n| json!({"name": n, "version": 1, "description": n, "category": "filesystem", "input_schema": {"type": "object"}, "output_schema": {"type": "object"}, "permissions": {}, "streaming": false}))
        .collect();
    let control: air_proto::ipc::ControlMessage = serde_json::from_value(json!({
        "type": "agent.start",
        "version": 1,
        "task_spec": {"id": "T1", "type": "execute", "title": "Greet", "description": "Write hello.txt.",
            "acceptance_criteria": [], "scope": {}, "dependencies": [],
            "verification": {"commands": [check], "required": true, "fallback_allowed": false},
            "constraints": {"max_turns": 10, "soft_timeout_ms": 1000, "hard_timeout_ms": 2000, "retry_budget": 1, "model_policy": "agent_select"},
            "context_refs": {}, "output_contract": "DebuggerResult"},
        "context_pack": {"refs": {},
            "previous_result": {"task_id": "T1", "agent_id": "T1-executor-1", "agent_type": "executor", "status": "failed",
                "summary": "The check fails.", "changed_files": [], "artifacts": [], "risks": [], "follow_up_tasks": [], "evidence_refs": [],
                "verification": [{"name": check, "status": "failed"}], "result": null},
            "assembled": {"request_id": "r", "system": ["You debug."], "messages": [{"role": "user", "content": [{"type": "text", "text": "Find out why."}]}],
                "included_refs": {}, "token_estimate": {"total": 10, "by_section": {}, "model_id": "x"},
                "budget": {"context_window_tokens": 100000, "reserved_output_tokens": 1000, "safety_margin_tokens": 100, "target_usage_ratio": 0.7},
                "compaction": {"needed": false}}},
        "runtime": {"session_id": "s", "project_id": "p", "agent_id": "T1-debugger-1", "permission_template": "debugger",
            "agent_type": "debugger", "replay": dir.path().display().to_string()},
        "tools": tools
    }))
    .unwrap();
    let air_proto::ipc::ControlMessage::Start(start) = control else {
        panic!("not a start")
    };
    let link = Script {
        shell_exits: Mutex::new(vec![0, 1, 0]),
        ..Default::default()
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let result = rt.block_on(run(&start, &link));
    assert_eq!(result.status, WorkerStatus::Completed, "{}", result.summary);
    assert_eq!(
        *link.states.lock().unwrap(),
        ["LOADING", "GATHERING", "ANALYZING", "FIXING", "RECORDING"]
    );
    let events = link.events.lock().unwrap();
    let record = events
        .iter()
        .find(|e| e.event_type == "debug.record.created")
        .map(|e| e.payload.clone())
        .unwrap();
    assert_eq!(record["symptom"], format!("`{check}` failed"));
    assert_eq!(record["root_cause"], "a typo");
    assert_eq!(record["fixed"], true);
    assert_eq!(
        record["command_run_ids"],
        json!(["run-0", "run-1", "run-0"])
    );
    assert_eq!(
        *link.calls.lock().unwrap(),
        [
            "shell.run",
            "shell.run",
            "fs.read",
            "fs.edit",
            "shell.run",
            "evidence.check"
        ]
    );
    let refused = events
        .iter()
        .filter(|e| e.event_type == "context.message.created")
        .map(|e| e.payload["content"].to_string())
        .find(|c| c.contains("refused: a debugger changes files only once"))
        .unwrap();
    assert!(refused.contains(check), "{refused}");
}
