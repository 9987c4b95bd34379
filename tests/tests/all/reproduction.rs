//! What each judging turn is given, with the real worker and the loopback provider:
//! a bugfix task with a model that fixes first and tests after, as real ones do (airsd
//! runs the task's check before the model begins, the model is told it failed, and
//! that failure plus the model's passing run after its fix is the reproduction, on its
//! first dispatch, without undoing the fix); and a milestone review, given its phase's
//! tasks, results, reviews and diff.

use air_proto::layout::ProjectPaths;
use air_proto::projection::TaskStatus;
use air_tests::mock_provider::{Exchange, Expect, MockProvider};
use serde_json::json;

use crate::agents::{call, first_request_fits, key, plain, review, run_to_end, state};

const CHECK: &str = "python3 -m unittest discover -s tests";

#[test]
fn a_bugfix_fixed_before_it_is_tested_completes_on_airsds_run_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::create_dir_all(root.join("calc")).unwrap();
    std::fs::create_dir_all(root.join("tests")).unwrap();
    std::fs::write(
        root.join("calc/__init__.py"),
        "def add(a, b):\n    return a - b\n",
    )
    .unwrap();
    std::fs::write(
        root.join("tests/test_calc.py"),
        "import unittest\n\nfrom calc import add\n\n\nclass Add(unittest.TestCase):\n    def test_adds(self):\n        self.assertEqual(add(2, 3), 5)\n",
    )
    .unwrap();
    let plan = format!(
        "## Task A: add subtracts\n\n- model: anthropic/claude-haiku-4-5\n- category: bugfix\n- verify: `{CHECK}`\n\n`calc.add(2, 3)` gives -1.\n"
    );
    crate::rt().block_on(async {

        let mock = MockProvider::start(vec![
            // Told before its first turn that the check failed.
            Exchange {
                request: None,
                expect: Expect {
                    contains: vec!["Before you began".into(), "It failed (exit 1)".into()],
                    tools: vec![],
                },
                reply: call("e1", "fs_read", json!({"path": "calc/__init__.py"})),
            },
            // It fixes first, then tests, wrapped as models do.
            plain(call("e2", "fs_edit", json!({"path": "calc/__init__.py", "old_string": "a - b", "new_string": "a + b"}))),
            plain(call("e3", "shell_run", json!({"command": format!("{CHECK} -v 2>&1 | tail -20")}))),
            plain(call("e4", "submit_result", json!({
                "status": "completed", "summary": "add subtracted; it adds now.",
                "verification": [{"name": CHECK, "status": "passed"}],
            }))),
            plain(review("approved", json!([]))),
        ])
        .await;
        let state = state(&root, &key(&mock));
        let (session, p) = run_to_end(&state, &plan, &mock).await;
        assert_eq!(p.task("A").map(|t| t.status), Some(TaskStatus::Completed), "{p:#?}");
        first_request_fits(&mock, "You are the executor");
        let conn =
            rusqlite::Connection::open(ProjectPaths::new(&root).session_db(&session)).unwrap();
        // airsd's run before the model began is the executor's own record.
        let (tool, agent): (String, String) = conn
            .query_row(
                "SELECT tool, agent_id FROM tool_runs ORDER BY seq LIMIT 1",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert_eq!((tool.as_str(), agent.as_str()), ("check.before", "A-executor-1"));
        let gate: String = conn
            .query_row(
                "SELECT payload_json FROM events WHERE type = 'agent.completed' AND agent_id = 'A-executor-1'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        let gate: serde_json::Value = serde_json::from_str(&gate).unwrap();
        let verdict: air_proto::gate::Verdict = serde_json::from_value(gate["gate"].clone()).unwrap();
        let r = verdict
            .counted
            .iter()
            .find(|c| c.evidence_type == air_proto::task::EvidenceType::Reproduction)
            .unwrap_or_else(|| panic!("{verdict:#?}"));
        assert!(r.claim.contains("before the task changed anything"), "{r:?}");
        state.stop_runs().await;
    });
}

/// A milestone review is given what it judges: its phase's tasks with their results,
/// the files they changed, the reviews, and the diff of those files.
#[test]
fn a_milestone_review_is_given_its_phases_tasks_results_and_diff() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(&root)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
    };
    std::fs::write(root.join("README.md"), "# greet\n").unwrap();
    git(&["init", "-q"]);
    git(&["add", "-A"]);
    git(&[
        "-c",
        "user.email=t@t",
        "-c",
        "user.name=t",
        "commit",
        "-qm",
        "start",
    ]);
    let plan = "# Greeting\n\n## Phase core: The greeting\n\n### Task A: write a greeting\n\n- model: anthropic/claude-haiku-4-5\n- expected_files: `hello.txt`\n\nCreate hello.txt saying hello.\n";
    crate::rt().block_on(async {
        let mock = MockProvider::start(vec![
            plain(call(
                "e1",
                "fs_write",
                json!({"path": "hello.txt", "content": "hello\n"}),
            )),
            plain(call(
                "e2",
                "submit_result",
                json!({"status": "completed", "summary": "Wrote hello.txt saying hello."}),
            )),
            plain(review("approved", json!([]))),
            Exchange {
                request: None,
                expect: Expect {
                    contains: vec![
                        "## The phase's tasks".into(),
                        "A (completed): write a greeting".into(),
                        "Wrote hello.txt saying hello.".into(),
                        "Changed: `hello.txt`".into(),
                        "Review: approved".into(),
                        "+hello".into(),
                    ],
                    tools: vec![],
                },
                reply: review("approved", json!([])),
            },
        ])
        .await;
        let state = state(&root, &key(&mock));
        let (_, p) = run_to_end(&state, plan, &mock).await;
        assert_eq!(
            p.task("A").map(|t| t.status),
            Some(TaskStatus::Completed),
            "{p:#?}"
        );
        assert_eq!(
            p.task("core:milestone-1").map(|t| t.status),
            Some(TaskStatus::Completed),
            "{p:#?}"
        );
        state.stop_runs().await;
    });
}
