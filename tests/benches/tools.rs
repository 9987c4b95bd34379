//! Tool benchmarks: the `tool.call` round trip worker → airsd → worker (`fs.read` of a
//! 10 KB file, and `shell.run` of `true` under the sandbox), `fs.grep` against the `rg`
//! binary on a 50,000-file tree, and a command printing 100 MB: the daemon's peak
//! memory growth and the RPC latency other clients see meanwhile. Prints figures.
//!
//! Run: `cargo build --release --workspace && cargo bench -p air-tests --bench tools`
//! (the grep comparison needs ripgrep: `apt-get install ripgrep`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashSet;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use air_proto::api::AirApiClient;
use air_proto::client::{connect, ConnectOptions};
use air_proto::layout::ProjectPaths;
use air_tests::release_bin;

fn air(root: &Path) -> Command {
    let mut c = Command::new(release_bin("air"));
    c.current_dir(root)
        .env("AIR_WORKER", release_bin("air-test-worker"))
        .env("AIR_HEARTBEAT_MS", "1000");
    c
}

fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let out = air(dir.path()).arg("init").output().unwrap();
    assert!(out.status.success());
    dir
}

fn run_plan(root: &Path, plan: &str) {
    std::fs::write(root.join("p.md"), plan).unwrap();
    let out = air(root).args(["run", "--plan", "p.md"]).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// Round trips measured inside the worker: the call sent, airsd's checks, the tool,
/// the records, the answer back.
fn round_trip(tool: &str, n: usize, input: &str, what: &str, target: &str) {
    let dir = project();
    let root = dir.path();
    std::fs::write(
        root.join("notes.txt"),
        "a line of notes, forty-odd bytes long.\n".repeat(256),
    )
    .unwrap();
    let out = root.join("lat.txt");
    run_plan(
        root,
        &format!(
            "## Task A: bench\n\nair-test-bench: {tool} {n} {} {input}\n\nAcceptance criteria:\n- done\n",
            out.display()
        ),
    );
    let _ = air(root).args(["daemon", "stop"]).output();
    let mut us: Vec<f64> = std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    us.sort_by(f64::total_cmp);
    println!(
        "{what}, {n} sequential calls: p50 {:.0} µs, p99 {:.0} µs, max {:.0} µs (target {target})",
        percentile(&us, 0.5),
        percentile(&us, 0.99),
        us[us.len() - 1]
    );
}

/// 50,000 files in 500 directories, ~1 KB each; one line in 1,000 files matches.
fn tree(root: &Path) {
    for d in 0..500 {
        let dir = root.join(format!("pkg{d:03}"));
        std::fs::create_dir_all(&dir).unwrap();
        for f in 0..100 {
            let mut text = String::new();
            for l in 0..24 {
                text.push_str(&format!("fn item_{d}_{f}_{l}() -> u32 {{ {l} }}\n"));
            }
            if (d * 100 + f) % 50 == 0 {
                text.push_str("// NEEDLE: the line both searches look for\n");
            }
            std::fs::write(dir.join(format!("m{f:03}.rs")), text).unwrap();
        }
    }
}

fn grep_vs_rg() {
    if Command::new("rg").arg("--version").output().is_err() {
        println!("fs.grep vs rg: skipped (ripgrep is not installed: apt-get install ripgrep)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    tree(&root);
    let engine = airsd::tools::permission::Engine::new(
        &root,
        None,
        None,
        air_proto::plan::PermissionMode::Default,
        &Default::default(),
    )
    .unwrap();
    let permits =
        airsd::tools::permission::Permits::new(&engine, None, Default::default(), HashSet::new());
    let ledger = airsd::tools::ReadLedger::default();
    let scope = airsd::tools::scope::Scope::default();
    let ctx = airsd::tools::FsContext {
        root: &root,
        agent_id: "bench",
        ledger: &ledger,
        scope: &scope,
        perm: &permits,
    };
    let input: airsd::tools::search::GrepInput =
        serde_json::from_value(serde_json::json!({ "pattern": "NEEDLE", "head_limit": 100000 }))
            .unwrap();
    let mut ours = Vec::new();
    let mut found = 0;
    for _ in 0..5 {
        let t = Instant::now();
        let out = airsd::tools::search::grep(&ctx, &input).unwrap();
        ours.push(t.elapsed().as_secs_f64() * 1e3);
        found = out.files.len();
    }
    let mut theirs = Vec::new();
    let mut rg_found = 0;
    for _ in 0..5 {
        let t = Instant::now();
        let out = Command::new("rg")
            .args(["-l", "NEEDLE", "."])
            .current_dir(&root)
            .output()
            .unwrap();
        theirs.push(t.elapsed().as_secs_f64() * 1e3);
        rg_found = String::from_utf8_lossy(&out.stdout).lines().count();
    }
    ours.sort_by(f64::total_cmp);
    theirs.sort_by(f64::total_cmp);
    assert_eq!(found, rg_found, "fs.grep and rg disagree");
    let (a, b) = (ours[2], theirs[2]);
    println!(
        "fs.grep (files with matches) over 50,000 files (warm cache), median of 5: {a:.0} ms; rg -l: {b:.0} ms; ratio {:.2}× ({found} files found by both)",
        a / b
    );
}

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// A command printing 100 MB: the daemon's memory and other clients' RPC latency
/// while it runs.
fn huge_output() {
    let dir = project();
    let root = dir.path().to_path_buf();
    std::fs::write(
        root.join("p.md"),
        "## Task A: floods\n\nair-test-call: shell.run {\"command\": \"head -c 100000000 /dev/zero | tr '\\\\0' x | fold -w 99\", \"timeout_ms\": 300000}\n\nAcceptance criteria:\n- done\n",
    )
    .unwrap();
    // The daemon first, with nothing to do: its resting memory.
    let out = air(&root).args(["status", "--json"]).output().unwrap();
    assert!(out.status.success());
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let pid = status["daemon"]["pid"]
        .as_u64()
        .or_else(|| status["pid"].as_u64())
        .unwrap() as u32;
    let before = rss_kib(pid);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let options = ConnectOptions::new(ProjectPaths::new(&root), "bench", "0");
    let t0 = Instant::now();
    let out = air(&root)
        .args(["run", "--plan", "p.md", "--detach"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (lat, peak) = rt.block_on(async {
        let conn = connect(&options).await.unwrap();
        let mut lat = Vec::new();
        let mut peak = before;
        let deadline = Instant::now() + Duration::from_secs(300);
        loop {
            let t = Instant::now();
            let s = conn.client.status().await.unwrap();
            lat.push(t.elapsed().as_secs_f64() * 1e3);
            peak = peak.max(rss_kib(pid));
            if s.runs.is_empty() || Instant::now() > deadline {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        (lat, peak)
    });
    let wall = t0.elapsed();
    let _ = air(&root).args(["wait"]).output();
    // What the agent got, and what was kept.
    let paths = ProjectPaths::new(&root);
    let session = std::fs::read_dir(paths.sessions())
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .file_name();
    let conn = rusqlite::Connection::open(paths.session_db(&session.to_string_lossy())).unwrap();
    let (output, kept): (String, i64) = conn
        .query_row(
            "SELECT t.output_json, (SELECT SUM(size_bytes) FROM artifacts WHERE command_run_id IS NOT NULL)
             FROM tool_runs t WHERE t.tool = 'shell.run'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    let output: serde_json::Value = serde_json::from_str(&output).unwrap();
    let _ = air(&root).args(["daemon", "stop"]).output();
    let mut lat = lat;
    lat.sort_by(f64::total_cmp);
    println!(
        "shell.run printing 100 MB ({} bytes of stdout, {:.1} s end to end): daemon RSS {:.1} MiB at rest, peak {:.1} MiB, growth {:.1} MiB (target < 50 MB); result shown {} bytes; artifacts {:.1} MB gzip",
        output["stdout_bytes"],
        wall.as_secs_f64(),
        before as f64 / 1024.0,
        peak as f64 / 1024.0,
        (peak.saturating_sub(before)) as f64 / 1024.0,
        output["stdout"].as_str().map(str::len).unwrap_or(0),
        kept as f64 / 1e6,
    );
    println!(
        "  daemon.status from another client meanwhile, {} calls: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms (target p99 < 10 ms)",
        lat.len(),
        percentile(&lat, 0.5),
        percentile(&lat, 0.99),
        lat[lat.len() - 1]
    );
}

fn main() {
    let which = std::env::args().nth(1).filter(|a| !a.starts_with('-'));
    let all = which.is_none();
    let on = |name: &str| all || which.as_deref() == Some(name);
    if on("roundtrip") {
        round_trip(
            "fs.read",
            2000,
            r#"{"path": "notes.txt"}"#,
            "tool.call round trip worker → airsd → worker, fs.read of a 10 KB file",
            "p50 < 1 ms",
        );
        round_trip("shell.run", 200, r#"{"command": "true"}"#, "tool.call round trip, shell.run of `true` (bash under the Landlock launcher, output kept)", "—");
    }
    if on("grep") {
        grep_vs_rg();
    }
    if on("huge") {
        huge_output();
    }
}
