//! The limits a run holds with the real `air-worker` against the loopback mock
//! provider: money (each turn priced from `models.yaml`, `--max-cost` stopping the
//! run), a provider that keeps failing (the next model configured for the agent
//! type takes the turn over, recorded, no tool call made twice), and time (the
//! worker is told when its soft timeout passes, its model asks for more, and works
//! on past the hard timeout it had).

use air_proto::layout::ProjectPaths;
use air_proto::plan::OnAsk;
use air_proto::projection::TaskStatus;
use air_tests::mock_provider::{Exchange, Expect, MockProvider, Reply};
use airsd::daemon::DaemonState;
use serde_json::json;

use crate::agents::{any, call, ended, key, review, state};
use crate::asks::until;

async fn start(state: &DaemonState, plan: &str, max_cost: Option<f64>) -> String {
    crate::asks::start_budgeted(state, plan, OnAsk::Deny, None, max_cost).await
}

pub(crate) fn events_of(
    root: &std::path::Path,
    session: &str,
    kind: &str,
) -> Vec<serde_json::Value> {
    let conn = rusqlite::Connection::open(ProjectPaths::new(root).session_db(session)).unwrap();
    let mut q = conn
        .prepare("SELECT payload_json FROM events WHERE type = ?1 ORDER BY seq")
        .unwrap();
    let rows = q.query_map([kind], |r| r.get::<_, String>(0)).unwrap();
    rows.map(|r| serde_json::from_str(&r.unwrap()).unwrap())
        .collect()
}

const TWO_TASKS: &str = "## Task A: write a greeting\n\n- model: anthropic/claude-haiku-4-5\n\nCreate hello.txt saying hello.\n\n## Task B: write a farewell\n\n- depends_on: A\n- model: anthropic/claude-haiku-4-5\n\nCreate bye.txt saying bye.\n";

/// The provider of the executor's model is overloaded through all its retries; the
/// model configured to fall back on finishes the task from where it was, no tool
/// call repeated; every turn is priced as `models.yaml` says, and the run stops at
/// its cost budget before task B starts.
#[test]
fn a_failing_provider_falls_back_and_the_cost_budget_stops_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    crate::rt().block_on(async {
        let overloaded = || Exchange {
            request: None,
            expect: any(),
            reply: Reply::Status { status: 529, retry_after: Some(0), error_type: None },
        };
        // The primary: overloaded for all six attempts of the executor's first turn,
        // then well again for the reviewer (a new agent starts on its own model).
        let mut primary: Vec<Exchange> = (0..6).map(|_| overloaded()).collect();
        primary.push(Exchange { request: None, expect: any(), reply: review("approved", json!([])) });
        let primary = MockProvider::start(primary).await;
        let backup = MockProvider::start(vec![
            Exchange {
                request: None,
                expect: Expect { contains: vec!["Create hello.txt".into()], tools: vec!["fs_write".into()] },
                reply: call("t1", "fs_write", json!({"path": "hello.txt", "content": "hello\n"})),
            },
            Exchange {
                request: None,
                expect: any(),
                reply: call("t2", "submit_result", json!({"status": "completed", "summary": "Wrote hello.txt"})),
            },
        ])
        .await;
        let home = root.join("home").join(".air");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::write(
            home.join("models.yaml"),
            format!(
                "providers:\n  backup:\n    kind: anthropic\n    base_url: {}\n    api_key_env: BACKUP_KEY\n  nokey:\n    kind: anthropic\n    base_url: http://127.0.0.1:9\n    api_key_env: AIR_TEST_UNSET_KEY\nfallbacks:\n  executor: [nokey/x, backup/claude-haiku-4-5]\n",
                backup.url
            ),
        )
        .unwrap();
        let mut env = key(&primary);
        env.push(("BACKUP_KEY", "sk-backup".into()));
        let state = state(&root, &env);
        // Each turn: 50 tokens in at $1, 20 out at $5 per million: 150 µ$.
        let session = start(&state, TWO_TASKS, Some(0.00045)).await;
        let p = until(&state, &session, ended).await;
        assert!(primary.mismatches().is_empty(), "{:?}", primary.mismatches());
        assert!(backup.mismatches().is_empty(), "{:?}", backup.mismatches());
        assert_eq!(p.task("A").map(|t| t.status), Some(TaskStatus::Completed), "{p:#?}");
        assert_eq!(p.task("B").map(|t| (t.status, t.attempts)), Some((TaskStatus::Ready, 0)), "B never started");
        assert_eq!(std::fs::read_to_string(root.join("hello.txt")).unwrap(), "hello\n");

        let fallbacks = events_of(&root, &session, "agent.model_fallback");
        assert_eq!(fallbacks.len(), 1, "{fallbacks:?}");
        let f = &fallbacks[0];
        assert_eq!((f["from_model"].as_str(), f["to_model"].as_str()), (Some("anthropic/claude-haiku-4-5"), Some("backup/claude-haiku-4-5")));
        let reason = f["reason"].as_str().unwrap_or_default();
        assert!(reason.contains("gave up after 6 attempts") && reason.contains("passed over: nokey/x"), "{reason}");
        // The fallback model got the whole conversation, without the failed model's
        // thinking settings.
        let first = &backup.received()[0].body;
        assert_eq!(first["model"], "claude-haiku-4-5");
        assert!(first.get("thinking").is_none(), "{first}");

        // Three turns were answered (write, submit, review): each priced.
        let costs: Vec<u64> = events_of(&root, &session, "assistant.message.created")
            .iter()
            .map(|m| m["usage"]["cost_micro_usd"].as_u64().unwrap_or(0))
            .collect();
        assert_eq!(costs, [150, 150, 150]);
        assert_eq!(p.counters.cost_micro_usd, 450);
        let stops = events_of(&root, &session, "scheduler.stopped");
        assert_eq!(stops.len(), 1, "{stops:?}");
        assert_eq!(stops[0]["budget"], "max_cost");
        assert_eq!(stops[0]["reason"], "the cost budget ($0.00045) ran out");
        state.stop_runs().await;
    });
}

/// The executor's soft timeout passes while a command runs: its next turn is told so
/// and offered `request_more_time`; it asks for a minute, airsd grants what its rule
/// allows (one more hard timeout in all), and the agent works on past
/// the hard timeout it started with and completes.
#[test]
fn the_worker_is_told_at_its_soft_timeout_and_may_ask_for_more_time() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    crate::rt().block_on(async {
        let mock = MockProvider::start(vec![
            Exchange { request: None, expect: any(), reply: call("t1", "shell_run", json!({"command": "sleep 1.5"})) },
            Exchange {
                request: None,
                expect: Expect { contains: vec!["soft time limit has passed".into()], tools: vec!["request_more_time".into()] },
                reply: call("t2", "request_more_time", json!({"minutes": 1, "reason": "the build is slow"})),
            },
            Exchange {
                request: None,
                expect: Expect { contains: vec!["granted: 3 s more".into()], tools: vec![] },
                reply: call("t3", "shell_run", json!({"command": "sleep 2"})),
            },
            Exchange { request: None, expect: any(), reply: call("t4", "fs_write", json!({"path": "hello.txt", "content": "hello\n"})) },
            Exchange { request: None, expect: any(), reply: call("t5", "submit_result", json!({"status": "completed", "summary": "Wrote hello.txt"})) },
            Exchange { request: None, expect: any(), reply: review("approved", json!([])) },
        ])
        .await;
        let state = state(&root, &key(&mock));
        let plan = "## Task A: write a greeting\n\n- model: anthropic/claude-haiku-4-5\n- soft_timeout: 1s\n- hard_timeout: 3s\n\nCreate hello.txt saying hello.\n";
        let session = start(&state, plan, None).await;
        let p = until(&state, &session, ended).await;
        assert!(mock.mismatches().is_empty(), "{:?}", mock.mismatches());
        assert_eq!(p.task("A").map(|t| t.status), Some(TaskStatus::Completed), "{p:#?}");
        let extended = events_of(&root, &session, "agent.timeout_extended");
        assert_eq!(extended.len(), 1, "{extended:?}");
        assert_eq!(extended[0]["extra_ms"], 3_000, "up to one more hard timeout in all");
        assert_eq!(extended[0]["reason"], "the build is slow");
        assert_eq!(events_of(&root, &session, "agent.soft_timeout").len(), 1);
        state.stop_runs().await;
    });
}

/// A cost budget cannot hold where a model has no known price (its tokens would be
/// counted as free): the run is refused at its start, naming the model and how to
/// price it; a local model costs nothing and needs no price.
#[test]
fn a_cost_budget_with_an_unpriced_model_is_refused_at_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    crate::rt().block_on(async {
        let env = vec![("OPENROUTER_API_KEY", "sk-test".to_string())];
        let state = state(&root, &env);
        let plan = "## Task A: write a greeting\n\n- model: openrouter/acme/unpriced-1\n\nCreate hello.txt saying hello.\n";
        let refused = state
            .start_run(crate::asks::run_start(plan, OnAsk::Deny, None, Some(1.0)))
            .await
            .map(|_| ())
            .unwrap_err()
            .to_string();
        assert!(
            refused.contains("no price is known for openrouter/acme/unpriced-1")
                && refused.contains("prices:"),
            "{refused}"
        );
    });
}

/// `model_policy: agent_select` lets the executor choose another model of those
/// configured here (priced or on this machine): it moves for the rest of its turns,
/// recorded as `agent.model_selected`; its reviewer and a task left to the scheduler
/// (`scheduler_forced`, the default) are offered no choice.
#[test]
fn an_executor_may_choose_its_model_only_where_its_task_lets_it() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    crate::rt().block_on(async {
        let offered = |tool: &str| Expect {
            contains: Vec::new(),
            tools: vec![tool.into()],
        };
        let mock = MockProvider::start(vec![
            Exchange {
                request: None,
                expect: offered("select_model"),
                reply: call(
                    "s1",
                    "select_model",
                    json!({"model": "anthropic/claude-opus-4-5", "reason": "the parser is subtle"}),
                ),
            },
            Exchange {
                request: None,
                expect: any(),
                reply: call("s2", "fs_write", json!({"path": "hello.txt", "content": "hello\n"})),
            },
            Exchange {
                request: None,
                expect: any(),
                reply: call("s3", "submit_result", json!({"status": "completed", "summary": "Wrote hello.txt"})),
            },
            Exchange { request: None, expect: any(), reply: review("approved", json!([])) },
            Exchange {
                request: None,
                expect: any(),
                reply: call("b1", "fs_write", json!({"path": "bye.txt", "content": "bye\n"})),
            },
            Exchange {
                request: None,
                expect: any(),
                reply: call("b2", "submit_result", json!({"status": "completed", "summary": "Wrote bye.txt"})),
            },
            Exchange { request: None, expect: any(), reply: review("approved", json!([])) },
        ])
        .await;
        let state = state(&root, &key(&mock));
        let plan = "## Task A: write a greeting\n\n- model_policy: agent_select\n\nCreate hello.txt saying hello.\n\n## Task B: write a farewell\n\n- depends_on: A\n\nCreate bye.txt saying bye.\n";
        let session = start(&state, plan, None).await;
        let p = until(&state, &session, ended).await;
        assert!(mock.mismatches().is_empty(), "{:?}", mock.mismatches());
        for id in ["A", "B"] {
            assert_eq!(p.task(id).map(|t| t.status), Some(TaskStatus::Completed), "{id}");
        }
        let bodies: Vec<serde_json::Value> = mock.received().into_iter().map(|r| r.body).collect();
        let models: Vec<&str> = bodies.iter().map(|b| b["model"].as_str().unwrap_or("")).collect();
        // A's executor moved after its first turn; its reviewer and B kept theirs.
        assert_eq!(models[0], "claude-sonnet-4-5");
        assert_eq!(&models[1..3], ["claude-opus-4-5", "claude-opus-4-5"]);
        assert!(models[3..].iter().all(|m| *m == "claude-sonnet-4-5"), "{models:?}");
        let tools = |b: &serde_json::Value| -> Vec<String> {
            b["tools"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|t| t["name"].as_str().map(str::to_string))
                .collect()
        };
        for b in &bodies[3..] {
            assert!(!tools(b).contains(&"select_model".to_string()), "{:?}", tools(b));
        }
        let chosen = events_of(&root, &session, "agent.model_selected");
        assert_eq!(chosen.len(), 1, "{chosen:?}");
        assert_eq!(chosen[0]["to_model"], "anthropic/claude-opus-4-5");
        assert_eq!(chosen[0]["reason"], "the parser is subtle");
        state.stop_runs().await;
    });
}
