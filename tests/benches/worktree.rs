//! A task's worktree (`airsd::workspace::create`) in a generated git repository of
//! 10,000 files (100 directories of 100), beside `git worktree add -b` by hand on the
//! same repository: airsd's as the scheduler runs it (git under the sandbox, when
//! the kernel allows one) and with the sandbox off. Each made worktree is removed
//! before the next.
//!
//! Run: `cargo bench -p air-tests --bench worktree`
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use airsd::launcher::Launcher;

const DIRS: usize = 100;
const FILES: usize = 100;
const ROUNDS: usize = 7;

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn git(root: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(["-c", "user.name=b", "-c", "user.email=b@example.invalid"])
        .args(args)
        .current_dir(root)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

/// airsd's git for the repository at `root` under the sandbox (none where this
/// machine has none) and with it off, both with the git of PATH, as the daemon finds
/// it (and as `git` by hand is).
fn launchers(root: &Path) -> (Option<Launcher>, Launcher) {
    let airsd_exe = air_tests::bin("airsd");
    let protections = airsd::sandbox::protections(&airsd_exe);
    let engine = airsd::tools::permission::Engine::new(
        root,
        None,
        None,
        air_proto::plan::PermissionMode::AcceptEdits,
        &Default::default(),
    )
    .unwrap();
    let path = std::env::var_os("PATH");
    let sandboxed = (protections.landlock || protections.isolation.is_ok()).then(|| {
        Launcher::new(
            root,
            path.as_deref(),
            Some((airsd_exe.clone(), protections.clone())),
            engine.views(&[], &[], &[]),
        )
    });
    let plain = Launcher::new(root, path.as_deref(), None, Default::default());
    (sandboxed, plain)
}

/// What one of airsd's git runs costs on a small repository: `git rev-parse HEAD` by
/// hand, through the launcher with the sandbox off, and under the sandbox, 50 of
/// each, interleaved.
fn call_cost() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    git(&root, &["init", "-q", "-b", "main"]);
    std::fs::write(root.join("a.txt"), "a\n").unwrap();
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-qm", "a"]);
    let (sandboxed, plain) = launchers(&root);
    // Without a sandbox here, the launcher as the daemon would run it: unconfined.
    let sandboxed = sandboxed.unwrap_or_else(|| plain.clone());
    let (mut hand, mut off, mut on) = (Vec::new(), Vec::new(), Vec::new());
    let read = airsd::launcher::Reads::Metadata;
    for _ in 0..50 {
        let t = Instant::now();
        git(&root, &["rev-parse", "-q", "HEAD"]);
        hand.push(ms(t.elapsed()));
        let t = Instant::now();
        plain
            .git(&["rev-parse", "HEAD"], read, 4096, Duration::from_secs(30))
            .unwrap();
        off.push(ms(t.elapsed()));
        let t = Instant::now();
        sandboxed
            .git(&["rev-parse", "HEAD"], read, 4096, Duration::from_secs(30))
            .unwrap();
        on.push(ms(t.elapsed()));
    }
    println!(
        "one git run (rev-parse HEAD), median of 50: by hand {:.2} ms, airsd's launcher sandbox off {:.2} ms, under the sandbox {:.2} ms",
        median(hand),
        median(off),
        median(on)
    );
}

fn main() {
    call_cost();
    if std::env::args().any(|a| a == "calls") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    git(&root, &["init", "-q", "-b", "main"]);
    std::fs::write(root.join(".gitignore"), ".air/local/\n/hand/\n").unwrap();
    for d in 0..DIRS {
        let sub = root.join(format!("src{d}"));
        std::fs::create_dir_all(&sub).unwrap();
        for f in 0..FILES {
            std::fs::write(
                sub.join(format!("file{f}.c")),
                format!("int f{d}_{f}(void) {{ return {f}; }}\n"),
            )
            .unwrap();
        }
    }
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-qm", "tree"]);
    println!("a repository of {} files", DIRS * FILES + 1);
    let worktrees = air_proto::layout::ProjectPaths::new(&root).workspaces();

    let (sandboxed, plain) = launchers(&root);
    // Interleaved, round by round, so that what the file system does with the trees
    // removed before falls on all three alike.
    let (mut by_hand, mut off, mut on) = (Vec::new(), Vec::new(), Vec::new());
    let airsd_round = |launcher: &Launcher, session: &str, i: usize| -> f64 {
        let t0 = Instant::now();
        let ws = airsd::workspace::create(launcher, &worktrees, session, &format!("T{i}"), "HEAD")
            .unwrap();
        let took = ms(t0.elapsed());
        assert!(ws.path.join("src99/file99.c").exists());
        airsd::workspace::remove(launcher, &ws, &worktrees).unwrap();
        took
    };
    for i in 0..ROUNDS {
        let path = root.join("hand").join(format!("w{i}"));
        let t0 = Instant::now();
        git(
            &root,
            &[
                "worktree",
                "add",
                "-q",
                "-b",
                &format!("hand/w{i}"),
                path.to_str().unwrap(),
                "HEAD",
            ],
        );
        by_hand.push(ms(t0.elapsed()));
        git(
            &root,
            &["worktree", "remove", "--force", path.to_str().unwrap()],
        );
        off.push(airsd_round(
            &plain,
            "00000000-0000-0000-0000-00000000aaaa",
            i,
        ));
        if let Some(l) = &sandboxed {
            on.push(airsd_round(l, "00000000-0000-0000-0000-00000000bbbb", i));
        }
    }
    let hand = median(by_hand);
    println!(
        "{:<34} median {hand:7.1} ms over {ROUNDS}",
        "git worktree add -b, by hand"
    );
    for (label, times) in [
        ("airsd, sandbox off", off),
        ("airsd, under the sandbox", on),
    ] {
        if times.is_empty() {
            println!("{label}: no sandbox here");
            continue;
        }
        let m = median(times);
        println!(
            "{label:<34} median {m:7.1} ms over {ROUNDS}  ({:.2}x by hand)",
            m / hand
        );
    }
}
