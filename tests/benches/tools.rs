//! Tool benchmarks: the `tool.call` round trip worker → airsd → worker (`fs.read` of a
//! 10 KB file, and `shell.run` of `true` under the sandbox), `fs.grep` against the `rg`
//! binary on a 50,000-file tree, a command printing 100 MB (the daemon's peak
//! memory growth and the RPC latency other clients see meanwhile), and the daemon's
//! peak memory while an agent reads a 1 GB file, `/dev/zero`, `/dev/urandom`, a 20 GB
//! sparse file and a FIFO, greps `/` and lists a 1,000,000-file tree. Prints figures.
//!
//! Run: `cargo build --release --workspace && cargo bench -p air-tests --bench tools`
//! (`-- roundtrip`, `-- grep`, `-- huge` or `-- hostile` for one part)
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
    let out = air(dir.path())
        .args(["init", "--no-model"])
        .output()
        .unwrap();
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
/// With `git_files` above 0 the project is a git repository of that many committed
/// files (a command's changed files come from git's status around it).
fn round_trip(tool: &str, n: usize, input: &str, what: &str, target: &str, git_files: usize) {
    let dir = project();
    let root = dir.path();
    std::fs::write(
        root.join("notes.txt"),
        "a line of notes, forty-odd bytes long.\n".repeat(256),
    )
    .unwrap();
    if git_files > 0 {
        std::fs::create_dir_all(root.join("src")).unwrap();
        for i in 0..git_files {
            std::fs::write(root.join(format!("src/f{i}.txt")), format!("file {i}\n")).unwrap();
        }
        for args in [
            &["init", "-q"][..],
            &["add", "-A"],
            &["commit", "-qm", "files"],
        ] {
            let ok = Command::new("git")
                .args(["-c", "user.name=b", "-c", "user.email=b@example.invalid"])
                .args(args)
                .current_dir(root)
                .status()
                .unwrap()
                .success();
            assert!(ok, "git {args:?}");
        }
    }
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
    let launcher = airsd::launcher::Launcher::plain(&root);
    let ctx = airsd::tools::FsContext {
        root: &root,
        agent_id: "bench",
        ledger: &ledger,
        scope: &scope,
        perm: &permits,
        launcher: &launcher,
        overlay: None,
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

/// Starts the project's daemon (with nothing to do) and returns its pid.
fn daemon_pid(root: &Path) -> u32 {
    let out = air(root).args(["status", "--json"]).output().unwrap();
    assert!(out.status.success());
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    status["daemon"]["pid"]
        .as_u64()
        .or_else(|| status["pid"].as_u64())
        .unwrap() as u32
}

/// The database of the project's one session.
fn only_session_db(root: &Path) -> rusqlite::Connection {
    let paths = ProjectPaths::new(root);
    let session = std::fs::read_dir(paths.sessions())
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .file_name();
    rusqlite::Connection::open(paths.session_db(&session.to_string_lossy())).unwrap()
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
    let pid = daemon_pid(&root);
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
            let s = conn
                .client
                .status(air_proto::api::params::NoParams {})
                .await
                .unwrap();
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
    let conn = only_session_db(&root);
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

/// What an agent can ask that once took the daemon down: airsd's RSS sampled every
/// 2 ms throughout, and how long each call took.
fn hostile() {
    let dir = project();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    // A 1 GB text file, a 20 GB sparse one, a FIFO.
    {
        use std::io::Write as _;
        let mut f = std::io::BufWriter::new(std::fs::File::create(root.join("big.txt")).unwrap());
        let line = "a line of a very large file, sixty-four bytes long, give or take\n";
        for _ in 0..(1_000_000_000 / line.len()) {
            f.write_all(line.as_bytes()).unwrap();
        }
    }
    std::fs::File::create(root.join("sparse"))
        .unwrap()
        .set_len(20 * 1024 * 1024 * 1024)
        .unwrap();
    let fifo = root.join("fifo");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    // 1,000,000 empty files in 1,000 directories, outside the project.
    let trees = tempfile::tempdir().unwrap();
    let tree = std::fs::canonicalize(trees.path()).unwrap();
    let t = Instant::now();
    for d in 0..1000 {
        let sub = tree.join(format!("d{d:03}"));
        std::fs::create_dir(&sub).unwrap();
        for f in 0..1000 {
            std::fs::File::create(sub.join(format!("f{f:03}.rs"))).unwrap();
        }
    }
    println!(
        "  (made the 1 GB file and the 1,000,000-file tree in {:.0} s)",
        t.elapsed().as_secs_f64()
    );
    let calls = [
        (
            "fs.read",
            serde_json::json!({ "path": "big.txt", "offset": 10_000_000, "limit": 100 }),
        ),
        ("fs.read", serde_json::json!({ "path": "/dev/zero" })),
        ("fs.read", serde_json::json!({ "path": "/dev/urandom" })),
        ("fs.read", serde_json::json!({ "path": "sparse" })),
        ("fs.read", serde_json::json!({ "path": "fifo" })),
        (
            "fs.grep",
            serde_json::json!({ "pattern": "NEEDLE-THAT-IS-NOWHERE", "path": "/" }),
        ),
        (
            "fs.glob",
            serde_json::json!({ "pattern": "**/*.rs", "path": tree }),
        ),
        (
            "fs.grep",
            serde_json::json!({ "pattern": "x", "path": tree, "output_mode": "count" }),
        ),
    ];
    let mut plan = String::from("## Task A: asks what once hurt\n\n");
    for (tool, input) in &calls {
        plan.push_str(&format!("air-test-call: {tool} {input}\n"));
    }
    plan.push_str("\nAcceptance criteria:\n- done\n");
    std::fs::write(root.join("p.md"), plan).unwrap();
    let pid = daemon_pid(&root);
    let before = rss_kib(pid);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sampler = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut peak = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                peak = peak.max(rss_kib(pid));
                std::thread::sleep(Duration::from_millis(2));
            }
            peak
        })
    };
    let t0 = Instant::now();
    let out = air(&root).args(["run", "--plan", "p.md"]).output().unwrap();
    let wall = t0.elapsed();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let peak = sampler.join().unwrap().max(before);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let conn = only_session_db(&root);
    let mut stmt = conn
        .prepare("SELECT tool, input_json, status, duration_ms, coalesce(error, substr(output_json, 1, 160)) FROM tool_runs ORDER BY seq")
        .unwrap();
    let rows: Vec<(String, String, String, i64, String)> = stmt
        .query_map([], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let _ = air(&root).args(["daemon", "stop"]).output();
    println!(
        "hostile tool calls, {:.1} s end to end: airsd RSS {:.1} MiB at rest, peak {:.1} MiB (target < 100 MB)",
        wall.as_secs_f64(),
        before as f64 / 1024.0,
        peak as f64 / 1024.0
    );
    for (tool, input, status, ms, what) in rows {
        let what: String = what.chars().take(110).collect();
        println!("  {tool} {input}: {status} in {ms} ms — {what}");
    }
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
            0,
        );
        round_trip("shell.run", 200, r#"{"command": "true"}"#, "tool.call round trip, shell.run of `true` (bash under the sandbox launcher: Landlock and namespaces, output kept)", "—", 0);
        round_trip("shell.run", 200, r#"{"command": "true"}"#, "the same in a git repository of 1,000 files (git's status read before and after, for the files it changed)", "—", 1_000);
    }
    if on("grep") {
        grep_vs_rg();
    }
    if on("huge") {
        huge_output();
    }
    if on("hostile") {
        hostile();
    }
}
