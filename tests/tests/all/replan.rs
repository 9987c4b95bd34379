//! A change of plan mid-run in a git repository, end to end with the scripted worker:
//! the impacted completed task's merged change is taken back out of the integration
//! branch (its branch kept), it is redone on a fresh branch as re-planned, the SAFE
//! task runs on, and what lands is the re-planned work.

use air_proto::api::params::{PlanningDecide, RequirementChange};
use air_proto::plan::OnAsk;
use air_proto::planning::PlanDecision;
use air_proto::projection::TaskStatus;
use air_tests::{bin, git};

use crate::agents::ended;
use crate::asks::until;

const A: &str = "## Task A: login api\n\n- evidence: none\n\nWrite the login.\n\nair-test-call: fs.write {\"path\": \"a.txt\", \"content\": \"VERSION\\n\"}\n\nProvides:\n\n- api auth: POST /login (volatile)\n\n";
const B: &str = "## Task B: docs\n\n- evidence: none\n\nWrite the docs.\n\nair-test-call: fs.write {\"path\": \"b.txt\", \"content\": \"docs\\n\"}\nair-test-sleep: 1500\n";

#[test]
fn an_impacted_merged_task_is_taken_back_out_and_redone_on_a_fresh_branch() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::write(root.join("README.md"), "# login\n").unwrap();
    let plan = format!("# Login\n\n{}{B}", A.replace("VERSION", "one"));
    // What the designer proposes when it re-plans: A writes `two`, B as it was.
    std::fs::write(
        root.join("replan.md"),
        format!("# Login\n\n{}{B}", A.replace("VERSION", "two")),
    )
    .unwrap();
    git(&root, &["init", "-q", "-b", "main"]);
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-qm", "start"]);
    crate::rt().block_on(async {
        let state = crate::agents::state_with(&root, &[], |shell| {
            shell.worker.program = bin("air-test-worker");
        });
        let session = crate::asks::start_plan(&state, &plan, OnAsk::Deny, None).await;
        // A is merged (B, slower, is likely still at work).
        until(&state, &session, |p| {
            p.task("A").is_some_and(|t| t.status == TaskStatus::Completed)
        })
        .await;
        state
            .change_requirement(
                RequirementChange {
                    session_id: session.clone(),
                    change: "Logins take a one-time code.\nair-test-classify: {\"scope\": \"external_interface\", \"affected_modules\": [\"auth\"], \"summary\": \"logins take a code\"}\nair-test-propose: replan.md".into(),
                },
                Some("test".into()),
            )
            .await
            .unwrap();
        let p = until(&state, &session, |p| {
            p.planning.as_ref().is_some_and(|v| v.proposed_by.is_some())
        })
        .await;
        // B went on meanwhile: SAFE work is not held by the re-plan.
        assert_ne!(p.task("B").map(|t| t.status), Some(TaskStatus::Pending));
        assert_ne!(p.task("B").map(|t| t.status), Some(TaskStatus::Ready));
        state
            .decide_plan(
                PlanningDecide {
                    session_id: session.clone(),
                    task_id: None,
                    decision: PlanDecision::Confirm,
                    note: None,
                    run: None,
                },
                None,
            )
            .await
            .unwrap();
        let p = until(&state, &session, ended).await;
        for id in ["A", "B"] {
            assert_eq!(p.task(id).map(|t| t.status), Some(TaskStatus::Completed), "{id}: {p:#?}");
        }
        let events = |kind: &str| crate::limits::events_of(&root, &session, kind);
        let impact = events("architecture.impact.completed");
        let zones: Vec<(String, String)> = impact[0]["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| (t["task_id"].as_str().unwrap().into(), t["action"].as_str().unwrap().into()))
            .collect();
        assert_eq!(
            zones,
            [("A".to_string(), "revert".to_string()), ("B".to_string(), "keep".to_string())]
        );
        let undone = events("workspace.undone");
        assert_eq!(
            undone.len(),
            1,
            "{undone:?} {:?} {:?}",
            events("workspace.revert_failed"),
            events("run.started")
        );
        assert_eq!(undone[0]["task_id"], "A");
        assert!(events("workspace.revert_failed").is_empty());
        state.stop_runs().await;
        // What landed is the re-planned A, and B; the first A's branch is kept.
        assert_eq!(std::fs::read_to_string(root.join("a.txt")).unwrap(), "two\n");
        assert_eq!(std::fs::read_to_string(root.join("b.txt")).unwrap(), "docs\n");
        let branches = git(&root, &["branch", "--list", "air/*"]);
        let branches = String::from_utf8_lossy(&branches.stdout);
        assert!(branches.contains("/A-replaced-1"), "{branches}");
    });
}

/// airsd's own gate on a debugger (whatever its worker does): a write after a command
/// that ran nothing (`true`) is refused; after a run of the failing check it goes.
#[test]
fn airsd_refuses_a_debuggers_fix_after_true_and_allows_it_after_the_check() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let plan = "## Task A: make done.txt\n\n- verify: `test -f done.txt`\n- evidence: none\n\nair-test: executor=fail,complete debugger=fix\nair-test-debug-call: shell.run {\"command\": \"true\"}\nair-test-debug-call: fs.write {\"path\": \"early.txt\", \"content\": \"x\\n\"}\nair-test-debug-call: shell.run {\"command\": \"test -f done.txt 2>&1 | tail -5\"}\nair-test-debug-call: fs.write {\"path\": \"done.txt\", \"content\": \"x\\n\"}\n";
    crate::rt().block_on(async {
        let state = crate::agents::state_with(&root, &[], |shell| {
            shell.worker.program = bin("air-test-worker");
        });
        let session = crate::asks::start_plan(&state, plan, OnAsk::Deny, None).await;
        let p = until(&state, &session, ended).await;
        assert_eq!(p.task("A").map(|t| t.status), Some(TaskStatus::Completed), "{p:#?}");
        state.stop_runs().await;
        let conn =
            rusqlite::Connection::open(air_proto::layout::ProjectPaths::new(&root).session_db(&session))
                .unwrap();
        let writes: Vec<(String, Option<String>)> = conn
            .prepare("SELECT status, error FROM tool_runs WHERE agent_id = 'A-debugger-1' AND tool = 'fs.write' ORDER BY seq")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(writes.len(), 2, "{writes:?}");
        assert!(
            writes[0].1.as_deref().is_some_and(|e| e.contains("not allowed for a debugger yet")),
            "{writes:?}"
        );
        assert_eq!(writes[1].0, "completed", "{writes:?}");
    });
    assert!(
        !root.join("early.txt").exists(),
        "a fix after `true` went through"
    );
    assert!(root.join("done.txt").exists());
}
