//! `cpp.build` against `cmake --build` run by hand, on the same tree: the C++ example
//! (`examples/intstats`) carried out first by its shipped recording (the real agents
//! and tools), then built from a clean build directory again and again, alternately
//! by hand (`cmake -S . -B build -G Ninja -DCMAKE_EXPORT_COMPILE_COMMANDS=ON` then
//! `cmake --build build --parallel`, what `cpp.build` runs) and by `cpp.build`
//! through airsd (a scripted agent's call: judged, sandboxed, output streamed and
//! kept, evidence and findings recorded), timed from outside for the hand builds and
//! by airsd's own record of the call (`tool_runs.duration_ms`) for `cpp.build`.
//!
//! Run: `cargo build --release --workspace && cargo bench -p air-tests --bench cpp_build`
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use air_tests::release_bin;

const RUNS: usize = 5;

fn air(root: &Path, worker: &str) -> Command {
    let mut c = Command::new(release_bin("air"));
    c.current_dir(root)
        .env("AIR_WORKER", release_bin(worker))
        .env("AIR_HOME", root.join(".bench-home"))
        .env_remove("ANTHROPIC_API_KEY");
    c
}

fn ok(c: &mut Command) {
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The compiler cache across worktrees: the C++ example (as its replay leaves it)
/// copied to two places, as two tasks' worktrees are, and built in each from a clean
/// build directory with the commands `cpp.build` runs where ccache is installed (the
/// launcher `env;CCACHE_BASEDIR=<root>;CCACHE_NOHASHDIR=true;ccache`), one fresh
/// cache per round: the second place's build against the first's (cold). Three
/// rounds; the median ratio.
fn ccache_across_worktrees(example: &Path) {
    if Command::new("ccache").arg("--version").output().is_err() {
        println!("ccache is not installed: the cache across worktrees is not measured (air doctor --fix installs it)");
        return;
    }
    let mut ratios = Vec::new();
    let (mut colds, mut warms) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("cache");
        let mut times = Vec::new();
        for place in ["one", "two"] {
            let root = dir.path().join(place).join("intstats");
            air_tests::copy_dir(example, &root);
            std::fs::remove_dir_all(root.join("build")).ok();
            std::fs::remove_dir_all(root.join(".air")).ok();
            let l = format!(
                "env;CCACHE_BASEDIR={};CCACHE_NOHASHDIR=true;ccache",
                root.display()
            );
            let t = Instant::now();
            ok(Command::new("cmake")
                .env("CCACHE_DIR", &cache)
                .args([
                    "-S",
                    ".",
                    "-B",
                    "build",
                    "-G",
                    "Ninja",
                    "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON",
                    &format!("-DCMAKE_C_COMPILER_LAUNCHER={l}"),
                    &format!("-DCMAKE_CXX_COMPILER_LAUNCHER={l}"),
                ])
                .current_dir(&root));
            ok(Command::new("cmake")
                .env("CCACHE_DIR", &cache)
                .args(["--build", "build"])
                .current_dir(&root));
            times.push(t.elapsed().as_secs_f64() * 1e3);
        }
        colds.push(times[0]);
        warms.push(times[1]);
        ratios.push(times[1] / times[0]);
    }
    println!(
        "ccache across worktrees, the C++ example from a clean build directory: cold {:.0} ms, the second worktree {:.0} ms (medians of 3): {:.2}x (target <= 0.3x)",
        median(colds),
        median(warms),
        median(ratios)
    );
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("intstats");
    air_tests::copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/intstats"),
        &root,
    );
    ok(air(&root, "air-worker").args(["init", "--no-model"]));
    ok(air(&root, "air-worker").args(["run", "--plan", "plan.md", "--replay", "recording"]));
    ok(air(&root, "air-worker").args(["daemon", "stop"]));
    ccache_across_worktrees(&root);
    if std::env::args().any(|a| a == "ccache") {
        return;
    }
    let mut by_hand = Vec::new();
    let mut by_tool = Vec::new();
    for i in 0..RUNS {
        // By hand.
        std::fs::remove_dir_all(root.join("build")).ok();
        let t = Instant::now();
        ok(Command::new("cmake")
            .args([
                "-S",
                ".",
                "-B",
                "build",
                "-G",
                "Ninja",
                "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON",
            ])
            .current_dir(&root));
        ok(Command::new("cmake")
            .args(["--build", "build", "--parallel"])
            .current_dir(&root));
        by_hand.push(t.elapsed().as_secs_f64() * 1e3);
        // Through airsd.
        std::fs::remove_dir_all(root.join("build")).ok();
        let plan = format!("# Bench {i}\n\n## Task B{i}: build\n\nair-test: executor=complete\nair-test-call: cpp.build {{}}\n");
        std::fs::write(root.join("bench.md"), plan).unwrap();
        ok(air(&root, "air-test-worker").args(["run", "--plan", "bench.md"]));
        let sessions = air(&root, "air-test-worker")
            .args(["sessions", "--json"])
            .output()
            .unwrap();
        let list: serde_json::Value = serde_json::from_slice(&sessions.stdout).unwrap();
        let session = list[0]["id"].as_str().unwrap().to_string();
        let db = root.join(format!(".air/local/sessions/{session}/session.db"));
        let conn =
            rusqlite::Connection::open_with_flags(&db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
                .unwrap();
        let (ms, output): (f64, String) = conn
            .query_row(
                "SELECT duration_ms, output_json FROM tool_runs WHERE tool = 'cpp.build' ORDER BY seq DESC LIMIT 1",
                [],
                |r| Ok((r.get::<_, i64>(0)? as f64, r.get(1)?)),
            )
            .unwrap();
        assert!(output.contains("\"passed\":true"), "{output}");
        by_tool.push(ms);
    }
    ok(air(&root, "air-test-worker").args(["daemon", "stop"]));
    let (hand, tool) = (median(by_hand.clone()), median(by_tool.clone()));
    println!(
        "cpp.build of the C++ example from a clean build directory (configure with Ninja, then build): median {tool:.0} ms through airsd against {hand:.0} ms by hand, {:.3}× ({RUNS} runs each, alternating; by hand {:?} ms, cpp.build {:?} ms); target ≤ 1.05×",
        tool / hand,
        by_hand.iter().map(|v| v.round() as i64).collect::<Vec<_>>(),
        by_tool.iter().map(|v| v.round() as i64).collect::<Vec<_>>(),
    );
}
