//! Where the time of `air chat -p --direct` goes: each step from the command's start
//! to the first request at the provider, and from the provider's last answer to the
//! command's exit, read from the session's own event times (microseconds, written as
//! each step happened) and the loopback provider's arrival times. Cold (the command
//! starts the daemon), with a daemon just started, and with a daemon that has answered
//! a conversation before; with one shell command and with none.
//!
//! Run: `cargo build --release --workspace && cargo bench -p air-tests --bench trace`
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, SystemTime};

use air_tests::mock_provider::{
    text_events, tool_use_events, Exchange, Expect, MockProvider, Reply,
};

const RUNS: usize = 10;

fn answer(with_tool: bool) -> Vec<Exchange> {
    let plain = |reply| Exchange {
        request: None,
        expect: Expect::default(),
        reply,
    };
    let mut out = Vec::new();
    if with_tool {
        out.push(plain(Reply::Events(tool_use_events(
            "d1",
            "shell_run",
            &serde_json::json!({"command": "echo hi"}),
        ))));
    }
    out.push(plain(Reply::Events(text_events("It printed hi."))));
    out
}

/// The steps, in order: a name and its end (the start is the step before's end).
type Trace = Vec<(&'static str, SystemTime)>;

fn at(iso: &str) -> SystemTime {
    air_proto::time::parse(iso).expect("an event time")
}

/// How the daemon stands when the measured command starts.
#[derive(Clone, Copy, PartialEq)]
enum Daemon {
    /// None runs: the command starts it.
    Cold,
    /// Just started (`air daemon start`).
    Started,
    /// Running, and it has answered one conversation already.
    Used,
}

/// One run's trace.
fn one(rt: &tokio::runtime::Runtime, daemon: Daemon, with_tool: bool) -> Trace {
    let mut exchanges = answer(with_tool);
    if daemon == Daemon::Used {
        exchanges.extend(answer(with_tool));
    }
    let mock = rt.block_on(MockProvider::start(exchanges));
    let (dir, air) = air_tests::release_project(&mock.url);
    let root = dir.path().to_path_buf();
    if daemon != Daemon::Cold {
        assert!(air(&["daemon", "start"]).output().unwrap().status.success());
    }
    if daemon == Daemon::Used {
        let out = air(&["chat", "-p", "--direct", "say hi with echo"])
            .output()
            .unwrap();
        assert!(out.status.success());
    }
    let start = SystemTime::now();
    let out = air(&["chat", "-p", "--direct", "say hi with echo"])
        .output()
        .unwrap();
    let exit = SystemTime::now();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let received = mock.received();
    let received = &received[received.len() - answer(with_tool).len()..];
    // The newest session (ids sort by time).
    let session = std::fs::read_dir(root.join(".air/local/sessions"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .max()
        .unwrap();
    let conn = rusqlite::Connection::open(session.join("session.db")).unwrap();
    let mut stmt = conn
        .prepare("SELECT type, timestamp FROM events ORDER BY seq")
        .unwrap();
    let events: Vec<(String, String)> = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .flatten()
        .collect();
    let first = |ty: &str| {
        at(&events
            .iter()
            .find(|(t, _)| t == ty)
            .unwrap_or_else(|| panic!("no {ty}"))
            .1)
    };
    let last = |ty: &str| {
        at(&events
            .iter()
            .rev()
            .find(|(t, _)| t == ty)
            .unwrap_or_else(|| panic!("no {ty}"))
            .1)
    };
    let _ = air(&["daemon", "stop"]).output();
    vec![
        ("start", start),
        (
            "session recorded (session.created)",
            first("session.created"),
        ),
        ("run recorded (run.started)", first("run.started")),
        (
            "message recorded (user.message.created)",
            first("user.message.created"),
        ),
        ("turn's task made (task.created)", first("task.created")),
        ("task ready (task.ready)", first("task.ready")),
        ("task started (task.started)", first("task.started")),
        ("worker spawned (agent.started)", first("agent.started")),
        ("first request at the provider", received[0].at),
        (
            "last request at the provider (its answer is instant)",
            received[received.len() - 1].at,
        ),
        (
            "last answer recorded (assistant.message.created)",
            last("assistant.message.created"),
        ),
        ("agent ended (agent.completed)", last("agent.completed")),
        ("task completed (task.completed)", last("task.completed")),
        ("run ended (run.completed)", last("run.completed")),
        ("air exited", exit),
    ]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn report(what: &str, traces: &[Trace]) {
    println!(
        "\n{what}, {} runs (median ms of each step; min–max):",
        traces.len()
    );
    let steps = traces[0].len();
    for i in 1..steps {
        let v: Vec<f64> = traces
            .iter()
            .map(|t| ms(t[i].1.duration_since(t[i - 1].1).unwrap_or_default()))
            .collect();
        let (lo, hi) = v
            .iter()
            .fold((f64::MAX, 0f64), |(a, b), x| (a.min(*x), b.max(*x)));
        println!(
            "  {:>6.1}  {:<56} ({lo:.1}–{hi:.1})",
            median(v),
            traces[0][i].0
        );
    }
    let span = |from: usize, to: usize| {
        median(
            traces
                .iter()
                .map(|t| ms(t[to].1.duration_since(t[from].1).unwrap_or_default()))
                .collect(),
        )
    };
    println!(
        "  start → first request {:.1} ms · last request → exit {:.1} ms",
        span(0, 8),
        span(9, steps - 1)
    );
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    for (daemon, with_tool, what) in [
        (
            Daemon::Cold,
            true,
            "cold, one shell command (target: first request ≤ 40 ms)",
        ),
        (
            Daemon::Started,
            true,
            "daemon just started, one shell command (target: first request ≤ 20 ms, last → exit ≤ 10 ms)",
        ),
        (
            Daemon::Started,
            false,
            "daemon just started, no tool call (target: last → exit ≤ 10 ms)",
        ),
        (
            Daemon::Used,
            true,
            "daemon running, its second conversation, one shell command (target: first request ≤ 20 ms)",
        ),
    ] {
        let traces: Vec<Trace> = (0..RUNS).map(|_| one(&rt, daemon, with_tool)).collect();
        report(what, &traces);
    }
}
