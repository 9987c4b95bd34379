//! The run's ask policy (`on_ask`) against real permission requests in a real
//! session, with the real scheduler and real worker processes: deny, fail, queue, the
//! ask timeout, and a person's answer (first answer wins).

use std::sync::Arc;
use std::time::{Duration, Instant};

use air_proto::api::params::RunStart;
use air_proto::layout::ProjectPaths;
use air_proto::payload as p;
use air_proto::plan::OnAsk;
use air_proto::projection::{Projection, TaskStatus};
use air_tests::bin;
use airsd::agents::supervisor::WorkerCommand;
use airsd::daemon::DaemonState;
use airsd::scheduler::shell::ShellConfig;

const PLAN: &str = "## Task A: works for a while\n\nair-test-sleep: 1500\n";

pub(crate) fn state(dir: &std::path::Path, ask_timeout: Duration) -> Arc<DaemonState> {
    state_with(dir, ask_timeout, |_| {})
}

/// [`state`] with the shell's configuration changed by `f`.
pub(crate) fn state_with(
    dir: &std::path::Path,
    ask_timeout: Duration,
    f: impl FnOnce(&mut ShellConfig),
) -> Arc<DaemonState> {
    air_proto::layout::init(dir, "2026-11-30T00:00:00Z").unwrap();
    let paths = ProjectPaths::new(dir);
    let project = paths.read_project().unwrap();
    let mut shell = ShellConfig::new(WorkerCommand {
        program: bin("air-test-worker"),
        args: Vec::new(),
        env: airsd::agents::supervisor::worker_env(std::env::vars_os()),
        cancel_grace: Duration::from_millis(300),
        queue: 64,
    });
    shell.heartbeat_interval_ms = 100;
    shell.core.ask_timeout_ms = u64::try_from(ask_timeout.as_millis()).unwrap_or(u64::MAX);
    // Commands run under the OS sandbox, launched by the real airsd binary.
    shell.sandbox_exe = Some(bin("airsd"));
    f(&mut shell);
    Arc::new(
        DaemonState::new(paths, project, dir.join("unused.sock"), Duration::ZERO).with_shell(shell),
    )
}

async fn start(state: &DaemonState, on_ask: OnAsk) -> String {
    start_plan(state, PLAN, on_ask, None).await
}

/// Starts a run of `plan_text` (as `plan.md`) and returns its session.
pub(crate) async fn start_plan(
    state: &DaemonState,
    plan_text: &str,
    on_ask: OnAsk,
    mode: Option<air_proto::plan::PermissionMode>,
) -> String {
    start_budgeted(state, plan_text, on_ask, mode, None).await
}

/// [`start_plan`] with a cost budget (US dollars).
pub(crate) async fn start_budgeted(
    state: &DaemonState,
    plan_text: &str,
    on_ask: OnAsk,
    mode: Option<air_proto::plan::PermissionMode>,
    max_cost: Option<f64>,
) -> String {
    state
        .start_run(run_start(plan_text, on_ask, mode, max_cost))
        .await
        .unwrap()
        .session_id
}

/// A `run.start` of `plan_text` with these settings, the rest left to defaults.
pub(crate) fn run_start(
    plan_text: &str,
    on_ask: OnAsk,
    mode: Option<air_proto::plan::PermissionMode>,
    max_cost: Option<f64>,
) -> RunStart {
    RunStart {
        plan: "plan.md".into(),
        plan_text: plan_text.into(),
        title: None,
        concurrency: None,
        on_ask: Some(on_ask),
        permission_mode: mode,
        max_cost,
        max_tokens: None,
        max_time_ms: None,
        model: None,
        record: None,
        replay: None,
        learn: None,
        worktrees: None,
        land: None,
        env: None,
    }
}

pub(crate) async fn until(
    state: &DaemonState,
    session: &str,
    f: impl Fn(&Projection) -> bool,
) -> Projection {
    until_within(state, session, Duration::from_secs(20), f).await
}

/// [`until`] with a bound of its own (a run whose commands install packages).
pub(crate) async fn until_within(
    state: &DaemonState,
    session: &str,
    limit: Duration,
    f: impl Fn(&Projection) -> bool,
) -> Projection {
    let end = Instant::now() + limit;
    loop {
        let p = state.session(session).await.unwrap().snapshot();
        if f(&p) {
            return p;
        }
        assert!(Instant::now() < end, "timed out; last projection: {p:#?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Once the executor runs, it "asks" (as the tools will) for a permission.
async fn ask(state: &DaemonState, session: &str) {
    until(state, session, |p| {
        p.agents.iter().any(|a| a.id == "A-executor-1")
    })
    .await;
    let s = state.session(session).await.unwrap();
    let e = air_proto::event::RuntimeEvent::typed(
        "permission.requested",
        session,
        air_proto::event::EventSource::system(),
        &p::PermissionRequested {
            request_id: "R1".into(),
            action: "write /etc/hosts".into(),
            tool: Some("fs.write".into()),
            tool_run_id: None,
            agent_id: Some("A-executor-1".into()),
            task_id: Some("A".into()),
            risk: Some("system_sensitive".into()),
            reason: None,
        },
    )
    .unwrap();
    s.store().append(e).await.unwrap();
}

fn decision(p: &Projection, state_dir: &std::path::Path, session: &str) -> (String, String) {
    let _ = p;
    let conn =
        rusqlite::Connection::open(ProjectPaths::new(state_dir).session_db(session)).unwrap();
    conn.query_row(
        "SELECT decision, decided_by FROM permission_requests WHERE id = 'R1'",
        [],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
    .unwrap()
}

#[test]
fn deny_refuses_at_once_and_the_denial_counts() {
    let dir = tempfile::tempdir().unwrap();
    crate::rt().block_on(async {
        let state = state(dir.path(), Duration::from_secs(600));
        let session = start(&state, OnAsk::Deny).await;
        ask(&state, &session).await;
        let p = until(&state, &session, |p| p.permission_requests.is_empty()).await;
        assert_eq!(p.counters.permission_denials, 1);
        assert_eq!(
            decision(&p, dir.path(), &session),
            ("deny".into(), "policy".into())
        );
        // The agent adapts: the task still completes.
        let p = until(&state, &session, |p| {
            p.run.as_ref().is_some_and(|r| r.outcome.is_some())
        })
        .await;
        assert_eq!(p.task("A").unwrap().status, TaskStatus::Completed);
        assert_eq!(p.counters.permission_denials, 1, "counted in the report");
        state.stop_runs().await;
    });
}

#[test]
fn fail_refuses_and_blocks_the_task() {
    let dir = tempfile::tempdir().unwrap();
    crate::rt().block_on(async {
        let state = state(dir.path(), Duration::from_secs(600));
        let session = start(&state, OnAsk::Fail).await;
        ask(&state, &session).await;
        let p = until(&state, &session, |p| {
            p.run.as_ref().is_some_and(|r| r.outcome.is_some())
        })
        .await;
        let a = p.task("A").unwrap();
        assert_eq!(a.status, TaskStatus::Blocked);
        assert!(
            a.reason.as_deref().unwrap().contains("write /etc/hosts"),
            "{a:?}"
        );
        assert_eq!(
            p.run.as_ref().unwrap().outcome,
            Some(p::RunOutcome::Blocked)
        );
        assert_eq!(decision(&p, dir.path(), &session).0, "deny");
        state.stop_runs().await;
    });
}

#[test]
fn queue_waits_for_a_person_then_denies_at_the_timeout() {
    let dir = tempfile::tempdir().unwrap();
    crate::rt().block_on(async {
        let state = state(dir.path(), Duration::from_millis(700));
        let session = start(&state, OnAsk::Queue).await;
        ask(&state, &session).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        let p = state.session(&session).await.unwrap().snapshot();
        assert_eq!(p.permission_requests.len(), 1, "still waiting for a person");
        let p = until(&state, &session, |p| p.permission_requests.is_empty()).await;
        assert_eq!(
            decision(&p, dir.path(), &session),
            ("deny".into(), "policy".into())
        );
        state.stop_runs().await;
    });
}

#[test]
fn a_person_answers_first_and_a_second_answer_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    crate::rt().block_on(async {
        let state = state(dir.path(), Duration::from_secs(600));
        let session = start(&state, OnAsk::Queue).await;
        ask(&state, &session).await;
        state
            .respond_permission(
                &session,
                "R1",
                true,
                Some("fine".into()),
                Some("air (pid 1)".into()),
            )
            .await
            .unwrap();
        let p = until(&state, &session, |p| p.permission_requests.is_empty()).await;
        assert_eq!(
            decision(&p, dir.path(), &session),
            ("allow".into(), "air (pid 1)".into())
        );
        assert_eq!(p.counters.permission_denials, 0);
        let again = state
            .respond_permission(&session, "R1", false, None, Some("tui".into()))
            .await
            .unwrap_err()
            .to_string();
        assert!(again.contains("already answered by air (pid 1)"), "{again}");
        let missing = state
            .respond_permission(&session, "R9", true, None, None)
            .await
            .unwrap_err()
            .to_string();
        assert!(missing.contains("no permission request R9"), "{missing}");
        state.stop_runs().await;
    });
}

#[test]
fn a_request_left_when_its_agent_ends_expires_without_counting_as_a_denial() {
    let dir = tempfile::tempdir().unwrap();
    crate::rt().block_on(async {
        let state = state(dir.path(), Duration::from_secs(600));
        let session = start(&state, OnAsk::Queue).await;
        ask(&state, &session).await;
        let p = until(&state, &session, |p| {
            p.run.as_ref().is_some_and(|r| r.outcome.is_some())
        })
        .await;
        assert!(p.permission_requests.is_empty());
        assert_eq!(
            decision(&p, dir.path(), &session),
            ("deny".into(), "expired".into())
        );
        assert_eq!(p.counters.permission_denials, 0);
        assert_eq!(
            state
                .session(&session)
                .await
                .unwrap()
                .rehydrate()
                .unwrap()
                .counters
                .permission_denials,
            0
        );
        let late = state
            .respond_permission(&session, "R1", true, None, None)
            .await
            .unwrap_err()
            .to_string();
        assert!(late.contains("already answered by expired"), "{late}");
        state.stop_runs().await;
    });
}

/// The permission mode changes while the run goes on: told to its scheduler, which
/// records it.
#[test]
fn the_permission_mode_changes_while_the_run_goes_on() {
    use air_proto::plan::PermissionMode;
    let dir = tempfile::tempdir().unwrap();
    crate::rt().block_on(async {
        let state = state(dir.path(), Duration::from_secs(600));
        let session = start_plan(&state, PLAN, OnAsk::Deny, Some(PermissionMode::Default)).await;
        let mode = |p: &Projection| p.run.as_ref().and_then(|r| r.permission_mode);
        let p = until(&state, &session, |p| {
            p.task("A").is_some_and(|t| t.status == TaskStatus::Running)
        })
        .await;
        assert_eq!(mode(&p), Some(PermissionMode::Default));
        assert!(state
            .set_mode(&session, PermissionMode::Plan, Some("zed".into()))
            .await
            .unwrap());
        let p = until(&state, &session, |p| mode(p) == Some(PermissionMode::Plan)).await;
        assert!(p
            .run
            .as_ref()
            .is_some_and(|r| r.status == air_proto::projection::RunState::Running));
        // A session with no run has no mode to change.
        let bare = state.create_session(Default::default()).await.unwrap().id;
        let refused = state
            .set_mode(&bare, PermissionMode::Plan, None)
            .await
            .unwrap_err()
            .to_string();
        assert!(refused.contains("no run"), "{refused}");
        state.stop_runs().await;
        // On record, with who changed it, for a run picked up again (a conversation's
        // next turn starts in it: tests/all/acp.rs).
        let session_db = air_proto::layout::ProjectPaths::new(dir.path()).session_db(&session);
        let conn = rusqlite::Connection::open(session_db).unwrap();
        let changed: String = conn
            .query_row(
                "SELECT payload_json FROM events WHERE type = 'run.mode_changed'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert!(
            changed.contains("\"plan\"") && changed.contains("zed"),
            "{changed}"
        );
    });
}
