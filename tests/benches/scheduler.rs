//! Scheduler benchmarks: decision time of the core on a 1,000-task DAG, the cost of a
//! worker process, a 1,000-task plan through the real daemon with an instantly
//! completing worker, and cold `air run` to the first `agent.start`. Prints figures.
//!
//! Run: `cargo build --release --workspace && cargo bench -p air-tests --bench scheduler`
#![allow(clippy::unwrap_used, clippy::expect_used)]

use air_tests::release_bin;
use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use air_proto::ipc::{ControlMessage, Direction, IpcBody, IpcHeader, IpcMessage};
use airsd::agents::supervisor::{Worker, WorkerCommand, WorkerEvent};
use airsd::scheduler::sim::{diligent, Play};
use airsd::scheduler::{Config, Core, Decision, Fact};

/// A plan of `layers` × `width` tasks; each task after the first layer depends on two
/// tasks of the layer before.
fn big_plan(layers: usize, width: usize) -> String {
    let mut md = String::from("---\nconcurrency: 50\n---\n# Big\n\n");
    for l in 0..layers {
        for w in 0..width {
            let _ = writeln!(md, "## Task L{l}W{w}: task {l}.{w}\n");
            if l > 0 {
                let a = (w * 7 + 3) % width;
                let b = (w * 13 + 5) % width;
                let _ = writeln!(md, "- depends_on: L{}W{a}, L{}W{b}\n", l - 1, l - 1);
            }
            md.push_str("Acceptance criteria:\n- done\n\n");
        }
    }
    md
}

fn decisions() {
    let tasks = air_proto::plan::compile("big.md", &big_plan(20, 50))
        .unwrap()
        .graph
        .tasks;
    let mut core = Core::new(Config {
        concurrency: 50,
        ..Config::default()
    });
    let mut facts = vec![Fact::run_started(50)];
    facts.extend(tasks.iter().map(|t| Fact::TaskCreated(Box::new(t.clone()))));
    let mut decide = Duration::ZERO;
    let mut apply = Duration::ZERO;
    let mut now = 1_000u64;
    let mut running: Vec<airsd::scheduler::Dispatch> = Vec::new();
    let (mut n_decisions, mut n_facts) = (0usize, 0usize);
    let t_all = Instant::now();
    loop {
        for f in facts.drain(..) {
            let t = Instant::now();
            core.apply(&f, now);
            apply += t.elapsed();
            n_facts += 1;
        }
        let t = Instant::now();
        let ds = core.decide(now);
        decide += t.elapsed();
        n_decisions += ds.len();
        if ds.is_empty() {
            if core.is_finished() {
                break;
            }
            // Every running agent finishes.
            for d in running.drain(..) {
                if let Play::Result(r) = diligent(&d) {
                    facts.push(Fact::AgentResult {
                        agent_id: d.agent_id.clone(),
                        result: r,
                        gate: None,
                    });
                }
            }
            now += 10;
            assert!(!facts.is_empty(), "stuck");
            continue;
        }
        for d in ds {
            facts.push(match d {
                Decision::Ready { task_id } => Fact::TaskReady { task_id },
                Decision::Dispatch(d) => {
                    let f = Fact::Dispatched {
                        task_id: d.task_id.clone(),
                        agent_id: d.agent_id.clone(),
                        role: d.role,
                        attempt: d.attempt,
                    };
                    running.push(*d);
                    f
                }
                Decision::Finish {
                    task_id,
                    status,
                    reason,
                } => Fact::TaskFinished {
                    task_id,
                    status,
                    reason,
                },
                Decision::CreateTask(s) => Fact::TaskCreated(s),
                Decision::RunComplete(c) => Fact::RunCompleted(c),
                other => panic!("unexpected {other:?}"),
            });
        }
    }
    let total = t_all.elapsed();
    let statuses = core.statuses();
    assert!(statuses.iter().all(|(_, s)| s.as_str() == "completed"));
    let per_task = (decide + apply) / 1000;
    println!("core, 1,000 tasks (20 waves × 50), concurrency 50, every agent succeeds:");
    println!(
        "  decide {:.1} ms + apply {:.1} ms over {n_decisions} decisions and {n_facts} facts",
        decide.as_secs_f64() * 1e3,
        apply.as_secs_f64() * 1e3
    );
    println!(
        "  scheduler time per task: {:.1} µs (target < 100 µs); whole simulation {:.1} ms",
        per_task.as_secs_f64() * 1e6,
        total.as_secs_f64() * 1e3
    );
}

fn spawn_cost(dir: &Path) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let command = WorkerCommand {
        program: release_bin("air-test-worker"),
        args: Vec::new(),
        env: airsd::agents::supervisor::worker_env(std::env::vars_os()),
        cancel_grace: Duration::from_secs(1),
        queue: 64,
    };
    let spec = air_proto::plan::compile("p.md", "## Task A: a\n")
        .unwrap()
        .graph
        .tasks[0]
        .clone();
    let n = 200;
    let elapsed = rt.block_on(async {
        let t = Instant::now();
        for i in 0..n {
            let (tx, mut rx) = tokio::sync::mpsc::channel(64);
            let agent = format!("A-executor-{}", i + 1);
            let start = IpcMessage {
                header: IpcHeader::new(Direction::ParentToWorker, "s", &agent),
                body: IpcBody::Control(ControlMessage::Start(Box::new(
                    air_proto::ipc::AgentStart {
                        version: 1,
                        task_spec: spec.clone(),
                        context_pack: Default::default(),
                        runtime: air_proto::context::AgentRuntimeContext {
                            session_id: "s".into(),
                            project_id: "p".into(),
                            agent_id: agent.clone(),
                            worktree_path: None,
                            permission_template: air_proto::context::PermissionTemplate::Executor,
                            agent_type: Some(air_proto::event::AgentType::Executor),
                            attempt: Some(1),
                            heartbeat_interval_ms: Some(60_000),
                            model: None,
                            resolved: None,
                            record: None,
                            replay: None,
                        },
                        tools: Vec::new(),
                    },
                ))),
            };
            let _w = Worker::spawn(
                &command,
                dir,
                &dir.join(format!("{agent}.stderr")),
                &start,
                tx,
            )
            .unwrap();
            let mut got_result = false;
            while let Some(e) = rx.recv().await {
                match e {
                    WorkerEvent::Message { message, .. } => {
                        got_result |= matches!(message.body, IpcBody::WorkerResult(_))
                    }
                    WorkerEvent::Exited { exit, .. } => {
                        assert_eq!(exit.code, Some(0));
                        break;
                    }
                    WorkerEvent::ProtocolViolation { error, .. } => panic!("{error:?}"),
                }
            }
            assert!(got_result);
        }
        t.elapsed()
    });
    println!(
        "worker process: spawn, agent.start, result, exit: {:.2} ms each ({n} in a row)",
        elapsed.as_secs_f64() * 1e3 / f64::from(n)
    );
}

fn project(root: &Path) {
    let out = Command::new(release_bin("air"))
        .args(["init", "--no-model"])
        .current_dir(root)
        .output()
        .unwrap();
    assert!(out.status.success());
}

fn air(root: &Path) -> Command {
    let mut c = Command::new(release_bin("air"));
    c.current_dir(root)
        .env("AIR_WORKER", release_bin("air-test-worker"))
        .env("AIR_HEARTBEAT_MS", "1000");
    c
}

/// `air` with `args` in `root`, which must succeed: its output and how long it took.
fn timed_run(root: &Path, args: &[&str]) -> (std::process::Output, std::time::Duration) {
    let t = Instant::now();
    let out = air(root).args(args).output().unwrap();
    let wall = t.elapsed();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (out, wall)
}

fn whole_run() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    project(root);
    std::fs::write(root.join("big.md"), big_plan(20, 50)).unwrap();
    let (out, wall) = timed_run(root, &["run", "--plan", "big.md"]);
    let status = air(root)
        .args(["daemon", "status", "--json"])
        .output()
        .unwrap();
    let _ = air(root).args(["daemon", "stop"]).output();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let agents = stdout.matches(" started (").count() + stdout.matches(" reviewing (").count();
    println!("air run, 1,000-task plan (20 waves × 50), concurrency 50, instant scripted worker:");
    println!(
        "  wall {:.2} s for {agents} agents: {:.2} ms per task, {:.2} ms per agent",
        wall.as_secs_f64(),
        wall.as_secs_f64() * 1e3 / 1000.0,
        wall.as_secs_f64() * 1e3 / agents.max(1) as f64
    );
    let _ = status;
}

/// 1,000 independent `docs` tasks, each writing its own file: outside git (the
/// shared tree), and in a git repository where each works in its own worktree,
/// committed, merged through the queue and landed. Prints each, with the git work's
/// share per task from the session's records.
fn docs_run(git: bool) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    if git {
        git_in(root, &["init", "-q", "-b", "main"]);
        std::fs::write(root.join("README.md"), "# docs\n").unwrap();
        git_in(root, &["add", "-A"]);
        git_in(
            root,
            &[
                "-c",
                "user.name=b",
                "-c",
                "user.email=b@example.invalid",
                "commit",
                "-qm",
                "start",
            ],
        );
    }
    project(root);
    let n: usize = std::env::var("AIR_BENCH_DOCS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let mut md = String::from("---\nconcurrency: 50\n---\n# Docs\n\n");
    for i in 0..n {
        let _ = writeln!(
            md,
            "## Task D{i}: page {i}\n\n- category: docs\n\nair-test-call: fs.write {{\"path\": \"docs/d{i}.md\", \"content\": \"page {i}\\n\"}}\n"
        );
    }
    std::fs::write(root.join("docs.md"), md).unwrap();
    let (out, wall) = timed_run(root, &["run", "--plan", "docs.md", "--json"]);
    let _ = air(root).args(["daemon", "stop"]).output();
    let landed = String::from_utf8_lossy(&out.stdout).contains("\"landed\":true");
    println!(
        "air run, {n} independent docs tasks, concurrency 50, {}: wall {:.2} s, {:.2} ms per task{}",
        if git {
            "in a git repository (a worktree each, merged, landed)"
        } else {
            "outside git (the shared tree)"
        },
        wall.as_secs_f64(),
        wall.as_secs_f64() * 1e3 / n as f64,
        if git {
            format!(", landed: {landed}")
        } else {
            String::new()
        }
    );
    if git {
        print_git_share(root);
        by_hand(root, n);
    }
}

/// Runs git in `root`, which must succeed: its output.
fn git_in(root: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(root)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// The floor under the worktree run, in the same repository: `n` worktrees made
/// by hand with plain git (`worktree add -b`, then `worktree remove`), one at a
/// time, 50 alive at most, each from the next commit of the session's integration
/// branch (as many files as the run's tasks found there in turn).
fn by_hand(root: &Path, n: usize) {
    let git_out = |args: &[&str]| git_in(root, args);
    let g = |args: &[&str]| {
        git_in(root, args);
    };
    let integration = git_out(&[
        "for-each-ref",
        "--format=%(refname)",
        "refs/heads/air/*/integration",
    ]);
    let integration = integration.lines().next().unwrap().to_string();
    let commits: Vec<String> = git_out(&["rev-list", "--first-parent", "--reverse", &integration])
        .lines()
        .map(str::to_string)
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let t = Instant::now();
    for i in 0..n {
        let at = dir.path().join(i.to_string());
        let at = at.to_str().unwrap();
        let from = &commits[i.min(commits.len() - 1)];
        g(&[
            "worktree",
            "add",
            "-q",
            "-b",
            &format!("hand/{i}"),
            at,
            from,
        ]);
        if i >= 50 {
            let old = dir.path().join((i - 50).to_string());
            g(&["worktree", "remove", "--force", old.to_str().unwrap()]);
        }
    }
    let wall = t.elapsed();
    println!(
        "  by hand in the same repository, {n} × `git worktree add -b` from each commit of the integration branch in turn (and its `remove`, 50 alive): wall {:.2} s, {:.2} ms per worktree",
        wall.as_secs_f64(),
        wall.as_secs_f64() * 1e3 / n as f64
    );
}

/// From the newest session's records: how long, per task, the worktree's making
/// (task.ready to workspace.created), the attempt's commit and the reviewer's start
/// (executor's end to reviewer's start), and the merge (the reviewer's end to
/// task.completed, which includes waiting in the queue) took.
fn print_git_share(root: &Path) {
    let paths = air_proto::layout::ProjectPaths::new(root);
    let Some(session) = std::fs::read_dir(paths.sessions())
        .ok()
        .and_then(|d| d.flatten().map(|e| e.file_name()).max())
    else {
        return;
    };
    let db = paths.session_db(&session.to_string_lossy());
    let conn = rusqlite::Connection::open(db).unwrap();
    let avg = |sql: &str| -> f64 {
        conn.query_row(sql, [], |r| r.get::<_, Option<f64>>(0))
            .unwrap()
            .unwrap_or(0.0)
    };
    let ms = |a: &str, b: &str| {
        format!(
            "SELECT AVG((julianday(b.timestamp) - julianday(a.timestamp)) * 86400000.0) FROM events a JOIN events b ON coalesce(a.task_id, json_extract(a.payload_json, '$.result.task_id')) = coalesce(b.task_id, json_extract(b.payload_json, '$.task_id')) WHERE {a} AND {b}"
        )
    };
    let make = avg(&ms("a.type = 'task.ready'", "b.type = 'workspace.created'"));
    let review = avg(&ms(
        "a.type = 'agent.completed' AND a.agent_id LIKE '%-executor-%'",
        "b.type = 'task.reviewing'",
    ));
    let merge = avg(&ms(
        "a.type = 'agent.completed' AND a.agent_id LIKE '%-reviewer-%'",
        "b.type = 'task.completed'",
    ));
    // The pace of the two things done one at a time: worktrees made as agents
    // start, and the queue's merges.
    let pace = |ty: &str| {
        avg(&format!(
            "SELECT (julianday(MAX(timestamp)) - julianday(MIN(timestamp))) * 86400000.0 / MAX(COUNT(*) - 1, 1) FROM events WHERE type = '{ty}'"
        ))
    };
    println!(
        "  one worktree made every {:.1} ms; one task merged every {:.1} ms",
        pace("workspace.created"),
        pace("workspace.merged")
    );
    println!(
        "  per task, on average: worktree made {make:.1} ms after ready; reviewer started {review:.1} ms after the executor ended (its commit and diff); completed {merge:.1} ms after the review (the queue's wait and the merge)"
    );
}

fn now_ns() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

fn cold_start() {
    let mut samples = Vec::new();
    for _ in 0..10 {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        project(root);
        std::fs::write(
            root.join("p.md"),
            "## Task A: a\n\nAcceptance criteria:\n- done\n",
        )
        .unwrap();
        let stamp = root.join("stamp");
        let t0 = now_ns();
        let out = air(root)
            .env("AIR_TEST_WORKER_STAMP", &stamp)
            .args(["run", "--plan", "p.md", "--detach"])
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let deadline = Instant::now() + Duration::from_secs(10);
        let first = loop {
            if let Some(line) = std::fs::read_to_string(&stamp)
                .ok()
                .and_then(|s| s.lines().next().map(str::to_string))
            {
                break line.trim().parse::<u128>().unwrap();
            }
            assert!(Instant::now() < deadline, "no agent.start");
            std::thread::sleep(Duration::from_millis(1));
        };
        samples.push(Duration::from_nanos((first - t0) as u64));
        let _ = air(root).args(["wait"]).output();
        let _ = air(root).args(["daemon", "stop"]).output();
    }
    samples.sort();
    println!(
        "cold air run --plan (no daemon) to the first agent.start in a worker: median {:.1} ms, min {:.1} ms, max {:.1} ms (target < 40 ms)",
        samples[samples.len() / 2].as_secs_f64() * 1e3,
        samples[0].as_secs_f64() * 1e3,
        samples[samples.len() - 1].as_secs_f64() * 1e3
    );
}

fn main() {
    if std::env::args().any(|a| a == "docs") {
        docs_run(false);
        docs_run(true);
        return;
    }
    decisions();
    let dir = tempfile::tempdir().unwrap();
    spawn_cost(dir.path());
    cold_start();
    whole_run();
    docs_run(false);
    docs_run(true);
}
