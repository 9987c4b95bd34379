//! Agent benchmarks against the loopback mock provider: cold `air run --plan` (no
//! daemon running) on a one-task plan to the first request arriving at the provider;
//! the size of the executor's first request (system, context, tool definitions); the
//! peak RSS of the whole process tree (client, daemon, workers) and of a worker
//! during a run; the overhead outside the LLM of a turn with 10 tool calls; and the
//! ContextAssembler's time per context.
//!
//! Run: `cargo build --release --workspace && cargo bench -p air-tests --bench agents`
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant, SystemTime};

use air_tests::mock_provider::{text_events, Exchange, Expect, MockProvider, Reply};

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let mut firsts = Vec::new();
    let mut size = 0;
    for _ in 0..10 {
        let mock = rt.block_on(async {
            // The model answers with text and no submission; the run is stopped once
            // the first request is in.
            MockProvider::start(
                (0..3)
                    .map(|_| Exchange {
                        request: None,
                        expect: Expect::default(),
                        reply: Reply::Events(text_events("thinking")),
                    })
                    .collect(),
            )
            .await
        });
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let home = root.join("home");
        std::fs::create_dir_all(&home).unwrap();
        let air = |args: &[&str]| air_tests::release_air(root, &home, &mock.url, args);
        assert!(air(&["init", "--no-model"])
            .output()
            .unwrap()
            .status
            .success());
        std::fs::write(root.join("p.md"), "## Task A: greet\n\nCreate hello.txt saying hello.\n\nAcceptance criteria:\n- hello.txt says hello\n").unwrap();
        let t = Instant::now();
        let start = SystemTime::now();
        let out = air(&["run", "--plan", "p.md", "--detach"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        while mock.received().is_empty() {
            assert!(
                t.elapsed() < Duration::from_secs(10),
                "no request reached the provider"
            );
            std::thread::sleep(Duration::from_micros(200));
        }
        let first = &mock.received()[0];
        firsts.push(first.at.duration_since(start).unwrap_or_default());
        size = first.body.to_string().len();
        let _ = air(&["cancel"]).output();
        let _ = air(&["daemon", "stop"]).output();
    }
    firsts.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "cold air run --plan (no daemon) to the first request at the provider, 10 runs: median {:.1} ms, min {:.1} ms, max {:.1} ms (target ≤ 60 ms)",
        ms(firsts[firsts.len() / 2]),
        ms(firsts[0]),
        ms(firsts[firsts.len() - 1])
    );
    println!("the executor's first request: {size} bytes (system prompt, context, 10 tool definitions and submit_result; target ≤ 16 KiB)");
    memory_and_turns(&rt);
    end_of_run(&rt);
    assembly();
}

/// From the model's last reply to `air run`'s exit: the last agent's result and exit,
/// the task's and the run's end recorded, the report, the client's final snapshot.
fn end_of_run(rt: &tokio::runtime::Runtime) {
    let mut tails = Vec::new();
    for _ in 0..10 {
        let mock = rt.block_on(MockProvider::start(write_then_approve()));
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("home")).unwrap();
        let air = |args: &[&str]| air_tests::release_air(root, &root.join("home"), &mock.url, args);
        assert!(air(&["init", "--no-model"])
            .output()
            .unwrap()
            .status
            .success());
        assert!(air(&["daemon", "start"]).output().unwrap().status.success());
        std::fs::write(
            root.join("p.md"),
            "## Task A: greet\n\nCreate hello.txt saying hello.\n",
        )
        .unwrap();
        let mut client = air(&["run", "--plan", "p.md"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let status = client.wait().unwrap();
        let exited = SystemTime::now();
        assert!(status.success(), "the run failed: {status}");
        let got = mock.received();
        if got.len() == 3 {
            tails.push(exited.duration_since(got[2].at).unwrap_or_default());
        }
        let _ = air(&["daemon", "stop"]).output();
    }
    tails.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    if !tails.is_empty() {
        println!(
            "the end of a run: from the model's last request to `air run`'s exit, median of {}: {:.1} ms, min {:.1} ms, max {:.1} ms (target < 20 ms)",
            tails.len(),
            ms(tails[tails.len() / 2]),
            ms(tails[0]),
            ms(tails[tails.len() - 1])
        );
    }
}

/// A field of a process's memory accounting, in KiB.
fn mem_kib(pid: u32, file: &str, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/{file}"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse().ok())
        })
        .unwrap_or(0)
}

/// VmRSS of a process, in KiB.
fn rss_kib(pid: u32) -> u64 {
    mem_kib(pid, "status", "VmRSS:")
}

/// PSS of a process (shared pages divided among their sharers), in KiB: summed over
/// a process tree it counts each page once, where RSS counts a page shared by a
/// process and a child it just forked twice.
fn pss_kib(pid: u32) -> u64 {
    mem_kib(pid, "smaps_rollup", "Pss:")
}

/// Every process (pid, parent, name).
fn processes() -> Vec<(u32, u32, String)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // pid (comm) state ppid …
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let comm = stat[open + 1..close].to_string();
        let ppid = stat[close + 2..]
            .split_whitespace()
            .nth(1)
            .and_then(|p| p.parse().ok())
            .unwrap_or(0);
        out.push((pid, ppid, comm));
    }
    out
}

/// The pids of `roots` and all their descendants, with names.
fn tree(roots: &[u32]) -> Vec<(u32, String)> {
    let all = processes();
    let mut out: Vec<(u32, String)> = all
        .iter()
        .filter(|p| roots.contains(&p.0))
        .map(|p| (p.0, p.2.clone()))
        .collect();
    let mut i = 0;
    while i < out.len() {
        let parent = out[i].0;
        for p in &all {
            if p.1 == parent && !out.iter().any(|o| o.0 == p.0) {
                out.push((p.0, p.2.clone()));
            }
        }
        i += 1;
    }
    out
}

fn call(id: &str, name: &str, input: serde_json::Value) -> Exchange {
    Exchange {
        request: None,
        expect: Expect::default(),
        reply: Reply::Events(air_tests::mock_provider::tool_use_events(id, name, &input)),
    }
}

/// One turn of `n` tool calls (Anthropic events).
/// The executor writes hello.txt and submits; the reviewer approves.
fn write_then_approve() -> Vec<Exchange> {
    vec![
        call(
            "w",
            "fs_write",
            serde_json::json!({"path": "hello.txt", "content": "hello\n"}),
        ),
        call(
            "s",
            "submit_result",
            serde_json::json!({"status": "completed", "summary": "Wrote hello.txt."}),
        ),
        call(
            "r",
            "submit_result",
            serde_json::json!({"decision": "approved", "summary": "hello.txt says hello."}),
        ),
    ]
}

fn many_calls(n: usize) -> Exchange {
    let mut events = vec![
        serde_json::json!({"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant", "content": [], "model": "mock", "stop_reason": null, "usage": {"input_tokens": 10, "output_tokens": 1}}}),
    ];
    for i in 0..n {
        let input = serde_json::json!({"path": format!("src/f{i}.txt")}).to_string();
        events.push(serde_json::json!({"type": "content_block_start", "index": i, "content_block": {"type": "tool_use", "id": format!("t{i}"), "name": "fs_read", "input": {}}}));
        events.push(serde_json::json!({"type": "content_block_delta", "index": i, "delta": {"type": "input_json_delta", "partial_json": input}}));
        events.push(serde_json::json!({"type": "content_block_stop", "index": i}));
    }
    events.push(serde_json::json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 50}}));
    events.push(serde_json::json!({"type": "message_stop"}));
    Exchange {
        request: None,
        expect: Expect::default(),
        reply: Reply::Events(events),
    }
}

/// Full runs of a one-task plan through the real client, daemon and workers: the
/// process tree's peak RSS, the worker's, and the time between the end of a turn
/// with 10 tool calls and the next request (tool round trips, the next request).
fn memory_and_turns(rt: &tokio::runtime::Runtime) {
    let mut tree_peak = 0u64;
    let mut peak_parts: Vec<(String, u64)> = Vec::new();
    let mut worker_peak = 0u64;
    let mut gaps = Vec::new();
    for _ in 0..5 {
        let mut exchanges = vec![many_calls(10)];
        exchanges.extend(write_then_approve());
        let mock = rt.block_on(MockProvider::start(exchanges));
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("home")).unwrap();
        std::fs::create_dir_all(root.join("src")).unwrap();
        for i in 0..10 {
            std::fs::write(root.join(format!("src/f{i}.txt")), "some text\n".repeat(50)).unwrap();
        }
        let air = |args: &[&str]| air_tests::release_air(root, &root.join("home"), &mock.url, args);
        assert!(air(&["init", "--no-model"])
            .output()
            .unwrap()
            .status
            .success());
        std::fs::write(root.join("p.md"), "## Task A: greet\n\nRead src/, then create hello.txt saying hello.\n\nAcceptance criteria:\n- hello.txt says hello\n").unwrap();
        let mut client = air(&["run", "--plan", "p.md"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let lock = root.join(".air/local/locks/airsd.lock");
        let t = Instant::now();
        loop {
            if let Some(status) = client.try_wait().unwrap() {
                assert!(status.success(), "the run failed: {status}");
                break;
            }
            assert!(t.elapsed() < Duration::from_secs(30), "the run did not end");
            let daemon: Option<u32> = std::fs::read_to_string(&lock)
                .ok()
                .and_then(|s| s.trim().parse().ok());
            let mut roots = vec![client.id()];
            roots.extend(daemon);
            let procs = tree(&roots);
            let sizes: Vec<(String, u64)> = procs
                .iter()
                .map(|(p, n)| (n.clone(), pss_kib(*p)))
                .collect();
            let total: u64 = sizes.iter().map(|s| s.1).sum();
            if total > tree_peak {
                tree_peak = total;
                peak_parts = sizes;
            }
            for (p, name) in &procs {
                if name == "air-worker" {
                    worker_peak = worker_peak.max(rss_kib(*p));
                }
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        let got = mock.received();
        if got.len() >= 2 {
            gaps.push(got[1].at.duration_since(got[0].at).unwrap_or_default());
        }
        let _ = air(&["daemon", "stop"]).output();
    }
    gaps.sort();
    let mib = |k: u64| k as f64 / 1024.0;
    println!(
        "peak memory of the process tree during a run (air client + airsd + workers; PSS, which counts shared pages once), 5 runs: {:.1} MiB (target ≤ 40 MB)",
        mib(tree_peak)
    );
    let parts: Vec<String> = peak_parts
        .iter()
        .map(|(n, k)| format!("{n} {:.1}", mib(*k)))
        .collect();
    println!("  at the peak (MiB): {}", parts.join(", "));
    println!(
        "peak RSS of a worker during its turns: {:.1} MiB (target < 20 MB)",
        mib(worker_peak)
    );
    if !gaps.is_empty() {
        println!(
            "a turn with 10 tool calls: from its request to the next request (stream, 10 tool round trips through airsd, next request), median of {}: {:.2} ms",
            gaps.len(),
            gaps[gaps.len() / 2].as_secs_f64() * 1e3
        );
    }
}

/// The ContextAssembler on a realistic executor context (the example plan's T4: the
/// plan, rules, neighbours, two parents' results).
fn assembly() {
    use airsd::context::{assemble, budget, Neighbour, Relation, Request, Rule, Sources};
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/wordcount/plan.md"),
    )
    .unwrap();
    let graph = air_proto::plan::compile("plan.md", &text).unwrap().graph;
    let spec = graph.tasks.iter().find(|t| t.id == "T4").unwrap().clone();
    let neighbours: Vec<Neighbour> = graph
        .tasks
        .iter()
        .filter(|t| ["T1", "T2", "T3"].contains(&t.id.as_str()))
        .map(|t| Neighbour {
            spec: t.clone(),
            status: air_proto::projection::TaskStatus::Completed,
            relation: Relation::Dependency(air_proto::task::DependencyType::Hard),
            result: Some(air_proto::result::WorkerResult::new(
                &t.id,
                "a",
                air_proto::event::AgentType::Executor,
                air_proto::result::WorkerStatus::Completed,
                "Did the thing, and checked it with the verification commands, which passed."
                    .into(),
            )),
        })
        .collect();
    let sources = Sources {
        project: None,
        plan_title: graph.title.clone(),
        overview: graph.overview.clone(),
        rules: vec![
            Rule {
                name: ".air/shared/rules/style.md".into(),
                paths: Vec::new(),
                body: "Standard library only. Type hints on public functions.".repeat(5),
                scoped: false,
            },
            Rule {
                name: ".air/shared/rules/tests.md".into(),
                paths: vec!["tests/**".into()],
                body: "Tests use unittest; one class per function.".repeat(5),
                scoped: false,
            },
        ],
    };
    let tools = airsd::tools::offered(air_proto::event::AgentType::Executor);
    let req = Request {
        role: air_proto::event::AgentType::Executor,
        spec: &spec,
        notes: &[],
        previous: None,
        neighbours: &neighbours,
        tools: &tools,
        model_id: "anthropic/claude-sonnet-4-5",
        budget: budget(200_000, 64_000, Some(4_096)),
        diff: None,
        task_changes: &[],
        conversation: None,
        skills: &[],
        memory: None,
        environment: Some(&airsd::context::Environment {
            root: "/home/user/project".into(),
            os: "linux (x86_64)".into(),
            date: "2026-12-01".into(),
            tree: airsd::context::Worktree::Git {
                branch: Some("main".into()),
                dirty: vec!["wordcount/counter.py".into()],
            },
            mode: air_proto::plan::PermissionMode::AcceptEdits,
        }),
    };
    let n = 2_000;
    let t = Instant::now();
    let mut tokens = 0;
    for _ in 0..n {
        tokens = assemble(&sources, &req).summary.token_estimate.total;
    }
    println!(
        "ContextAssembler: {:.1} µs per executor context (~{tokens} tokens estimated, tools included)",
        t.elapsed().as_secs_f64() * 1e6 / f64::from(n)
    );
}
