//! Agent benchmarks against the loopback mock provider: cold `air run --plan` (no
//! daemon running) on a one-task plan to the first request arriving at the provider,
//! and the size of the executor's first request (system, brief, tool definitions).
//!
//! Run: `cargo build --release --workspace && cargo bench -p air-tests --bench agents`
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;
use std::time::{Duration, Instant, SystemTime};

use air_tests::mock_provider::{text_events, Exchange, Expect, MockProvider, Reply};
use air_tests::release_bin;

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
        let air = |args: &[&str]| {
            let mut c = Command::new(release_bin("air"));
            c.args(args)
                .current_dir(root)
                .env("HOME", &home)
                .env_remove("OPENAI_API_KEY")
                .env_remove("OPENROUTER_API_KEY")
                .env("ANTHROPIC_API_KEY", "sk-bench")
                .env("ANTHROPIC_BASE_URL", &mock.url)
                .env("AIR_WORKER", release_bin("air-worker"));
            c
        };
        assert!(air(&["init"]).output().unwrap().status.success());
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
    println!("the executor's first request: {size} bytes (system prompt, brief, 9 tool definitions and submit_result; target ≤ 20 KB)");
}
