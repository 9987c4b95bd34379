//! `air status` started cold — no daemon running, so `air` starts `airsd` and waits
//! for it to answer — from the tarball installed in a fresh prefix (`scripts/release`,
//! unpacked, its `bin/` on PATH, no source tree around) beside the same from the build
//! tree (`target/release`), and warm (the daemon already running) for both.
//!
//! Run: `cargo build --release --workspace --bins && cargo bench -p air-tests --bench
//! cold_start`
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use air_tests::release_bin;

const RUNS: usize = 15;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn air(exe: &Path, root: &Path, home: &Path, path: &str, args: &[&str]) -> std::process::Output {
    Command::new(exe)
        .args(args)
        .current_dir(root)
        .env("HOME", home)
        .env("PATH", path)
        .env_remove("AIR_AIRSD")
        .env_remove("AIR_WORKER")
        .env_remove("AIR_HOME")
        .output()
        .unwrap()
}

/// Median milliseconds of `air status` cold and warm with `exe`.
fn measure(exe: &Path, work: &Path, path: &str) -> (f64, f64) {
    let root = work.join("project");
    let home = work.join("home");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::create_dir_all(&home).unwrap();
    let out = air(exe, &root, &home, path, &["init", "--no-model"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (mut cold, mut warm) = (Vec::new(), Vec::new());
    for _ in 0..RUNS {
        let t = Instant::now();
        let out = air(exe, &root, &home, path, &["status"]);
        cold.push(t.elapsed().as_secs_f64() * 1000.0);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let t = Instant::now();
        let out = air(exe, &root, &home, path, &["status"]);
        warm.push(t.elapsed().as_secs_f64() * 1000.0);
        assert!(out.status.success());
        let out = air(exe, &root, &home, path, &["daemon", "stop"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    (median(cold), median(warm))
}

fn main() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let bin_dir = release_bin("air").parent().unwrap().to_path_buf();
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(repo.join("scripts/release"))
        .arg("--bin-dir")
        .arg(&bin_dir)
        .arg("--out")
        .arg(dir.path().join("dist"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let tarball = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim().to_string());
    let prefix = dir.path().join("prefix");
    std::fs::create_dir_all(&prefix).unwrap();
    let out = Command::new("tar")
        .arg("-xzf")
        .arg(&tarball)
        .arg("-C")
        .arg(&prefix)
        .arg("--strip-components=1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let system = "/usr/local/bin:/usr/bin:/bin";
    let installed = prefix.join("bin");
    let (tar_cold, tar_warm) = measure(
        &installed.join("air"),
        &dir.path().join("from-tarball"),
        &format!("{}:{system}", installed.display()),
    );
    let (tree_cold, tree_warm) = measure(
        &bin_dir.join("air"),
        &dir.path().join("from-tree"),
        &format!("{}:{system}", bin_dir.display()),
    );
    println!(
        "air status, cold (starts airsd), median of {RUNS}: tarball install {tar_cold:.1} ms, build tree {tree_cold:.1} ms (ratio {:.2})",
        tar_cold / tree_cold
    );
    println!(
        "air status, warm (airsd running), median of {RUNS}: tarball install {tar_warm:.1} ms, build tree {tree_warm:.1} ms (ratio {:.2})",
        tar_warm / tree_warm
    );
}
