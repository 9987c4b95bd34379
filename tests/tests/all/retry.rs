//! Retrying ended tasks (`run.continue` with `task_ids`, `air retry`): while the run
//! goes on, a task that gave up and the task waiting on it run again at once; after the
//! run ended, only the tasks asked for (and what waits on them) reopen. A task that
//! did not end unfinished cannot be retried.

use std::time::Duration;

use air_proto::projection::{RunState, TaskStatus};

use crate::asks::{start_plan, state, until};

const PLAN: &str = "## Task A: gives up at first

- retry_budget: 0

air-test: executor=block,complete

## Task B: waits for A

- depends_on: A

## Task L: takes a while

air-test-sleep: 2500
";

fn status(p: &air_proto::projection::Projection, id: &str) -> Option<TaskStatus> {
    p.task(id).map(|t| t.status)
}

/// Given up: blocked, or failed once the debugger and the Architecture Designer had
/// their say.
fn ended_unfinished(s: Option<TaskStatus>) -> bool {
    matches!(s, Some(TaskStatus::Blocked | TaskStatus::Failed))
}

#[test]
fn a_task_that_gave_up_is_retried_while_the_run_goes_on_with_what_waits_on_it() {
    let dir = tempfile::tempdir().unwrap();
    crate::rt().block_on(async {
        let state = state(dir.path(), Duration::from_secs(60));
        let session = start_plan(&state, PLAN, air_proto::plan::OnAsk::Deny, None).await;
        let p = until(&state, &session, |p| {
            ended_unfinished(status(p, "A")) && status(p, "B").is_some_and(|s| s.is_terminal())
        })
        .await;
        assert_eq!(status(&p, "L"), Some(TaskStatus::Running), "{p:#?}");
        // Not one that ended unfinished: refused, saying why.
        let refused = state
            .continue_run(&session, None, Default::default(), Some(vec!["L".into()]))
            .await
            .unwrap_err()
            .to_string();
        assert!(
            refused
                .contains("L is running: only a failed, blocked or cancelled task can be retried"),
            "{refused}"
        );
        let unknown = state
            .continue_run(&session, None, Default::default(), Some(vec!["Z".into()]))
            .await
            .unwrap_err()
            .to_string();
        assert!(unknown.contains("has no task `Z`"), "{unknown}");
        // Asked for B: A, which B needs and which gave up too, comes along; both
        // start over while L still runs.
        let info = state
            .continue_run(
                &session,
                Some("client:test".into()),
                Default::default(),
                Some(vec!["B".into()]),
            )
            .await
            .unwrap();
        assert_eq!(info.reopened, vec!["A".to_string(), "B".to_string()]);
        let p = until(&state, &session, |p| {
            p.run.as_ref().is_some_and(|r| r.status == RunState::Ended)
        })
        .await;
        for id in ["A", "B", "L"] {
            assert_eq!(status(&p, id), Some(TaskStatus::Completed), "{id}: {p:#?}");
        }
        assert_eq!(
            p.run.as_ref().and_then(|r| r.outcome).map(|o| o.as_str()),
            Some("completed")
        );
        // The retry is on record, with who asked; A's second executor did the work.
        let conn = rusqlite::Connection::open(
            air_proto::layout::ProjectPaths::new(dir.path()).session_db(&session),
        )
        .unwrap();
        let (ids, by): (String, String) = conn
            .query_row(
                "SELECT json_extract(payload_json, '$.task_ids'), json_extract(payload_json, '$.by')
                 FROM events WHERE type = 'task.retried'",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        assert_eq!((ids.as_str(), by.as_str()), (r#"["A","B"]"#, "client:test"));
        assert!(p.agents.iter().any(|a| a.id == "A-executor-2"), "{p:#?}");
        state.stop_runs().await;
    });
}

#[test]
fn after_the_run_ended_only_the_tasks_asked_for_run_again() {
    let dir = tempfile::tempdir().unwrap();
    crate::rt().block_on(async {
        let state = state(dir.path(), Duration::from_secs(60));
        let plan = "## Task A: gives up at first\n\n- retry_budget: 0\n\nair-test: executor=block,complete\n\n## Task C: gives up too\n\n- retry_budget: 0\n\nair-test: executor=block,complete\n";
        let session = start_plan(&state, plan, air_proto::plan::OnAsk::Deny, None).await;
        until(&state, &session, |p| {
            p.run.as_ref().is_some_and(|r| r.status == RunState::Ended)
        })
        .await;
        let info = state
            .continue_run(&session, None, Default::default(), Some(vec!["C".into()]))
            .await
            .unwrap();
        assert_eq!(info.reopened, vec!["C".to_string()]);
        let p = until(&state, &session, |p| {
            p.run.as_ref().is_some_and(|r| r.status == RunState::Ended)
                && status(p, "C") == Some(TaskStatus::Completed)
        })
        .await;
        assert!(ended_unfinished(status(&p, "A")), "{p:#?}");
        assert_ne!(
            p.run.as_ref().and_then(|r| r.outcome).map(|o| o.as_str()),
            Some("completed")
        );
        state.stop_runs().await;
    });
}
