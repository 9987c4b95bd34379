//! Conversation benchmarks against the loopback mock provider (an instant model):
//! `air chat -p --direct` cold (no daemon) to the first request at the provider, the
//! whole one-shot run with one shell command (cold and with the daemon running), and
//! the size of the Main Agent's first request.
//!
//! Run: `cargo build --release --workspace && cargo bench -p air-tests --bench chat`
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant, SystemTime};

use air_tests::mock_provider::{
    text_events, tool_use_events, Exchange, Expect, MockProvider, Reply,
};

const RUNS: usize = 10;

fn one_command() -> Vec<Exchange> {
    vec![
        Exchange {
            request: None,
            expect: Expect::default(),
            reply: Reply::Events(tool_use_events(
                "d1",
                "shell_run",
                &serde_json::json!({"command": "echo hi"}),
            )),
        },
        Exchange {
            request: None,
            expect: Expect::default(),
            reply: Reply::Events(text_events("It printed hi.")),
        },
    ]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn report(what: &str, mut times: Vec<Duration>, target: &str) {
    times.sort();
    println!(
        "{what}, {} runs: median {:.1} ms, min {:.1} ms, max {:.1} ms ({target})",
        times.len(),
        ms(times[times.len() / 2]),
        ms(times[0]),
        ms(times[times.len() - 1])
    );
}

/// One `air chat -p --direct` in a fresh project: the time to the first request and
/// to the command's exit.
fn one_shot(rt: &tokio::runtime::Runtime, warm: bool) -> (Duration, Duration) {
    let mock = rt.block_on(MockProvider::start(one_command()));
    let (_dir, air) = air_tests::release_project(&mock.url);
    if warm {
        assert!(air(&["daemon", "start"]).output().unwrap().status.success());
    }
    let start = SystemTime::now();
    let t = Instant::now();
    let out = air(&["chat", "-p", "say hi with echo", "--direct"])
        .output()
        .unwrap();
    let whole = t.elapsed();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "It printed hi.\n");
    let first = mock.received()[0]
        .at
        .duration_since(start)
        .unwrap_or_default();
    let _ = air(&["daemon", "stop"]).output();
    (first, whole)
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let (mut firsts, mut cold, mut warm) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..RUNS {
        let (first, whole) = one_shot(&rt, false);
        firsts.push(first);
        cold.push(whole);
        warm.push(one_shot(&rt, true).1);
    }
    report(
        "air chat -p --direct cold (no daemon) to the first request at the provider",
        firsts,
        "target ≤ 60 ms",
    );
    report(
        "whole air chat -p --direct, one shell command, instant provider, cold (the daemon started by it)",
        cold,
        "target ≤ 150 ms",
    );
    report(
        "the same with the daemon already running",
        warm,
        "target ≤ 150 ms",
    );

    // The Main Agent's first request: its prompt, the message and its tools.
    let mock = rt.block_on(MockProvider::start(vec![Exchange {
        request: None,
        expect: Expect::default(),
        reply: Reply::Events(text_events("A greeting tool.")),
    }]));
    let (_dir, air) = air_tests::release_project(&mock.url);
    let out = air(&["chat", "-p", "What is this project?"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let body = &mock.received()[0].body;
    let tools = body["tools"].as_array().map_or(0, Vec::len);
    println!(
        "the Main Agent's first request: {} bytes ({tools} tool definitions; target ≤ 12 KB)",
        body.to_string().len()
    );
    let _ = air(&["daemon", "stop"]).output();
}
