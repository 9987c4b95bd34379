//! The tests of `agent::states`.

use super::*;
use proptest::prelude::*;
use serde_json::json;

fn ok(output: Value) -> ToolResult {
    ToolResult {
        tool_call_id: "c".into(),
        status: ToolResultStatus::Ok,
        output: Some(output),
        content: None,
        error: None,
        truncated: false,
        artifact_ref: None,
    }
}

fn failure() -> Failure {
    Failure {
        checks: vec!["npm test".into()],
        files: vec!["src/parse.js".into()],
    }
}

fn debugger() -> Machine {
    Machine::Debug(Debug::Gathering, failure())
}

fn ran(m: &mut Machine, command: &str, exit: i64) {
    ran_as(m, command, exit, &[]);
}

/// A run that airsd said ran `checks` of the task.
fn ran_as(m: &mut Machine, command: &str, exit: i64, checks: &[&str]) {
    let input = json!({"command": command});
    let answer = ok(json!({"exit_code": exit, "command_run_id": "r", "checks": checks}));
    m.step(Step::Calling { tool: "shell.run" });
    m.step(Step::Called {
        tool: "shell.run",
        input: &input,
        answer: &answer,
    });
}

#[test]
fn the_debuggers_gate_refuses_a_fix_after_true_and_opens_after_the_failing_check() {
    let mut m = debugger();
    assert!(m.allows("fs.read").is_ok());
    let refused = m.allows("fs.edit").unwrap_err();
    assert!(
        refused.contains("`npm test`") && refused.contains("`src/parse.js`"),
        "{refused}"
    );
    ran(&mut m, "true", 0);
    ran(&mut m, "echo ok && pwd", 0);
    // Another program, or the check made to pass whatever it says, is no evidence.
    ran(&mut m, "npm run lint", 1);
    ran(&mut m, "npm test || true", 0);
    assert_eq!(m.state(), LoopState::Gathering);
    assert!(m.allows("fs.write").is_err());
    // The check, wrapped as models wrap it, as airsd read it.
    ran_as(
        &mut m,
        "npm test -- --verbose 2>&1 | tail -30",
        1,
        &["npm test"],
    );
    assert_eq!(m.state(), LoopState::Analyzing);
    assert!(m.allows("fs.edit").is_ok());
    // Read by the worker itself when airsd says nothing.
    let mut m = debugger();
    ran(&mut m, "npm test 2>&1 | tail -30", 1);
    assert_eq!(m.state(), LoopState::Analyzing);
}

#[test]
fn a_read_of_a_file_the_failure_names_opens_the_gate_and_another_does_not() {
    let mut m = debugger();
    let other = json!({"path": "README.md"});
    let named = json!({"path": "./src/parse.js"});
    let answer = ok(json!({"content": "x"}));
    m.step(Step::Called {
        tool: "fs.read",
        input: &other,
        answer: &answer,
    });
    assert_eq!(m.state(), LoopState::Gathering);
    m.step(Step::Called {
        tool: "fs.read",
        input: &named,
        answer: &answer,
    });
    assert_eq!(m.state(), LoopState::Analyzing);
}

#[test]
fn the_failure_is_read_from_the_failed_attempt() {
    let control: air_proto::ipc::ControlMessage = serde_json::from_value(json!({
        "type": "agent.start",
        "version": 1,
        "task_spec": {"id": "T1", "type": "execute", "title": "t", "description": "d",
            "acceptance_criteria": [], "scope": {}, "dependencies": [],
            "verification": {"commands": ["make check"], "required": true, "fallback_allowed": false},
            "constraints": {"max_turns": 10, "soft_timeout_ms": 1000, "hard_timeout_ms": 2000, "retry_budget": 1, "model_policy": "agent_select"},
            "context_refs": {}, "output_contract": "DebuggerResult"},
        "context_pack": {"refs": {},
            "notes": ["The build failed: src/lexer.c:41:7: error: 'tok' undeclared (see https://gcc.gnu.org/x.html)."],
            "previous_result": {"task_id": "T1", "agent_id": "a", "agent_type": "executor", "status": "failed",
                "summary": "Changing include/lexer.h broke the build.", "changed_files": ["include/lexer.h"],
                "artifacts": [], "risks": [], "follow_up_tasks": [], "evidence_refs": [],
                "verification": [{"name": "make check 2>&1 | tail -20", "status": "failed"}, {"name": "make -C build test", "status": "failed"}, {"name": "make lint", "status": "passed"}],
                "result": null}},
        "runtime": {"session_id": "s", "project_id": "p", "agent_id": "d", "permission_template": "debugger", "agent_type": "debugger"},
        "tools": []
    }))
    .unwrap();
    let air_proto::ipc::ControlMessage::Start(start) = control else {
        panic!("not a start")
    };
    let f = failure_of(&start);
    // The task's check its wrapped run failed, and a failed check of its own.
    assert_eq!(f.checks, ["make check", "make -C build test"]);
    assert_eq!(f.files, ["include/lexer.h", "src/lexer.c"]);
}

fn step_strategy() -> impl Strategy<Value = (u8, u8, bool)> {
    (0u8..6, 0u8..7, any::<bool>())
}

/// The tools and inputs the property drives the machines with.
fn call_of(n: u8) -> (&'static str, Value, i64) {
    match n {
        0 => ("shell.run", json!({"command": "true"}), 0),
        1 => ("shell.run", json!({"command": "npm test 2>&1 | tail"}), 1),
        2 => ("fs.read", json!({"path": "README.md"}), 0),
        3 => ("fs.read", json!({"path": "src/parse.js"}), 0),
        4 => ("fs.edit", json!({"path": "src/parse.js"}), 0),
        5 => ("propose_plan", json!({}), 0),
        _ => ("search.grep", json!({"pattern": "x"}), 0),
    }
}

/// The edges each loop may take (D-006), besides staying where it is.
fn edge(from: LoopState, to: LoopState) -> bool {
    use LoopState::*;
    matches!(
        (from, to),
        (
            Loading,
            Thinking | Acting | Reviewing | Finalizing | Deciding | Delegating | Reading
        ) | (Thinking, Acting | Finalizing | Delegating)
            | (Acting, Thinking | Observing | Finalizing)
            | (Observing, Thinking | Acting | Finalizing)
            | (Reviewing, Deciding)
            | (Gathering, Analyzing | Recording | Escalating)
            | (Analyzing, Fixing | Recording | Escalating)
            | (Fixing, Recording | Escalating)
            | (Delegating, Finalizing)
            | (Loading, Proposing | Summarizing)
            | (Reading, Proposing | Summarizing | Finalizing)
            | (Proposing, Finalizing)
    )
}

proptest! {
    /// Whatever the model does, each loop moves only along its own edges, stays
    /// where it ended, and a debugger is let write only after a step that bore on
    /// the failure.
    #[test]
    fn loops_move_only_along_their_edges(
        role in 0u8..7,
        steps in proptest::collection::vec(step_strategy(), 0..40),
    ) {
        let mut m = match role {
            0 => Machine::Work(Work::Loading),
            1 => Machine::Review(Review::Loading),
            2 => debugger(),
            3 => Machine::Talk(Talk::Loading),
            4 => Machine::Plan(Plan::Loading),
            5 => Machine::Compact(Compact::Loading),
            _ => Machine::Mine(Mine::Loading),
        };
        let mut bore = false;
        for (kind, call, flag) in steps {
            let before = m.state();
            let was_ended = m.ended();
            let (tool, input, exit) = call_of(call);
            let answer = ok(json!({"exit_code": exit}));
            match kind {
                0 => m.step(Step::Turn),
                1 | 2 => {
                    if m.allows(tool).is_err() {
                        // Only a debugger before evidence is refused here.
                        prop_assert!(!bore && writes(tool));
                        continue;
                    }
                    if matches!(m, Machine::Debug(..)) && writes(tool) && !m.ended() {
                        prop_assert!(bore, "a debugger wrote before any evidence");
                    }
                    m.step(Step::Calling { tool });
                    bore |= failure().bears(tool, &input, &answer);
                    m.step(Step::Called { tool, input: &input, answer: &answer });
                }
                3 => m.step(Step::Answered),
                4 => m.step(Step::Delegating),
                _ => m.step(Step::Submitted { fixed: flag }),
            }
            let after = m.state();
            if was_ended {
                prop_assert_eq!(before, after);
            }
            prop_assert!(before == after || edge(before, after), "{:?} -> {:?}", before, after);
            if after == LoopState::Fixing {
                prop_assert!(bore);
            }
        }
    }
}
