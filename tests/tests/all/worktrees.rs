//! A task's own worktree, as its commands and file tools see it: the worktree is its
//! project (written, its git working), the checkout is read and never written, and
//! the rest of air's state (other tasks' worktrees, the records, the socket) stays
//! out of sight, though the worktree lies inside it.

use std::path::{Path, PathBuf};

use air_proto::config::PermissionsConfig;
use air_proto::layout::ProjectPaths;
use air_proto::plan::PermissionMode;
use air_tests::{bin, git};
use airsd::launcher::Launcher;
use airsd::tools::permission::{Access, Engine, Verdict};

/// A committed project with two tasks' worktrees, a record in air's state and an
/// uncommitted edit of the person's.
fn project() -> (tempfile::TempDir, PathBuf, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    git(&root, &["init", "-q", "-b", "main"]);
    std::fs::write(root.join(".gitignore"), ".air/local/\n").unwrap();
    std::fs::write(root.join("lib.txt"), "one\n").unwrap();
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-qm", "one"]);
    std::fs::write(root.join("lib.txt"), "the person's edit\n").unwrap();
    let paths = ProjectPaths::new(&root);
    std::fs::create_dir_all(paths.local().join("sessions/s1")).unwrap();
    std::fs::write(paths.local().join("sessions/s1/session.db"), "records\n").unwrap();
    let main = Launcher::plain(&root);
    let worktrees = paths.workspaces();
    let mine = airsd::workspace::create(&main, &worktrees, "s1", "T1", "HEAD").unwrap();
    let theirs = airsd::workspace::create(&main, &worktrees, "s1", "T2", "HEAD").unwrap();
    (dir, root, mine.path, theirs.path)
}

fn engine(root: &Path) -> Engine {
    Engine::new(
        root,
        None,
        None,
        PermissionMode::AcceptEdits,
        &PermissionsConfig::default(),
    )
    .unwrap()
}

#[test]
fn the_file_rules_of_a_task_in_its_worktree() {
    let (_dir, root, mine, theirs) = project();
    let e = engine(&root).rooted(&mine);
    assert_eq!(e.root(), mine);
    assert_eq!(e.checkout(), root);
    assert!(matches!(
        e.check(&mine.join("lib.txt"), Access::Write),
        Verdict::Allow
    ));
    // The checkout: read, never written, and the refusal says where to write.
    assert!(matches!(
        e.check(&root.join("lib.txt"), Access::Read),
        Verdict::Allow
    ));
    match e.check(&root.join("lib.txt"), Access::Write) {
        Verdict::Deny(why) => assert!(
            why.contains(&mine.join("lib.txt").display().to_string()),
            "{why}"
        ),
        other => panic!("a write to the checkout: {other:?}"),
    }
    // Another task's worktree and air's records: air's state.
    for p in [theirs.join("lib.txt"), root.join(".air/local/x")] {
        assert!(
            matches!(e.check(&p, Access::Write), Verdict::Deny(_)),
            "{}",
            p.display()
        );
    }
    // The worktree's own `.air/local` is bookkeeping too, and its `.git` file (which
    // names the git directory) is git's control.
    assert!(matches!(
        e.check(&mine.join(".air/local/x"), Access::Write),
        Verdict::Deny(_)
    ));
    assert!(matches!(
        e.check(&mine.join(".git"), Access::Write),
        Verdict::Ask(_)
    ));
}

#[test]
fn a_command_of_a_task_sees_its_worktree_and_only_reads_the_checkout() {
    let protections = airsd::sandbox::protections(&bin("airsd"));
    if protections.isolation.is_err() || !protections.landlock {
        println!("skipped: the sandbox is not whole here ({protections:?})");
        return;
    }
    let (_dir, root, mine, theirs) = project();
    let e = engine(&root).rooted(&mine);
    let writable = airsd::sandbox::writable(e.root(), None, &[]);
    let policy = airsd::sandbox::Policy {
        writable: writable.clone(),
        home: None,
        home_read: Vec::new(),
        isolate: Some(e.views(&writable, &[], &[])),
        net: None,
    };
    let script = format!(
        "cat lib.txt; echo new > new.txt && echo wrote-mine; \
         echo x > {checkout}/lib.txt 2>/dev/null && echo wrote-checkout; \
         cat {checkout}/lib.txt; \
         ls {theirs} 2>/dev/null | grep -q lib && echo saw-theirs; \
         cat {checkout}/.air/local/sessions/s1/session.db 2>/dev/null; \
         echo 'gitdir: /tmp' > .git 2>/dev/null && echo wrote-dotgit; \
         git status --porcelain --untracked-files=all; pwd",
        checkout = root.display(),
        theirs = theirs.display(),
    );
    let out = std::process::Command::new(bin("airsd"))
        .args(airsd::sandbox::launcher_args(
            &policy,
            "/bin/sh",
            &["-c".to_string(), script],
        ))
        .current_dir(&mine)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let seen = format!("{stdout}\n--- stderr\n{stderr}");
    // Its own files, as committed; its write lands; git works in it.
    assert!(stdout.starts_with("one\nwrote-mine\n"), "{seen}");
    assert!(stdout.contains("?? new.txt"), "{seen}");
    assert!(
        stdout.trim_end().ends_with(&mine.display().to_string()),
        "{seen}"
    );
    assert_eq!(
        std::fs::read_to_string(mine.join("new.txt")).unwrap(),
        "new\n"
    );
    // The checkout is read (the person's edit is there) and not written.
    assert!(!stdout.contains("wrote-checkout"), "{seen}");
    // The worktree's `.git`, which names its git directory, stays as airsd made it.
    assert!(!stdout.contains("wrote-dotgit"), "{seen}");
    assert!(stdout.contains("the person's edit"), "{seen}");
    assert_eq!(
        std::fs::read_to_string(root.join("lib.txt")).unwrap(),
        "the person's edit\n"
    );
    // Nothing else of air's state.
    assert!(!stdout.contains("saw-theirs"), "{seen}");
    assert!(!stdout.contains("records"), "{seen}");
}

/// airsd's own git for a worktree runs under the sandbox: it sees the worktrees'
/// directory inside air's hidden state and writes only git's objects, refs and
/// worktrees, never its configuration or the checkout's index.
#[test]
fn airsd_makes_and_commits_a_worktree_under_the_sandbox() {
    let protections = airsd::sandbox::protections(&bin("airsd"));
    if protections.isolation.is_err() || !protections.landlock {
        println!("skipped: the sandbox is not whole here ({protections:?})");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    git(&root, &["init", "-q", "-b", "main"]);
    std::fs::write(root.join(".gitignore"), ".air/local/\n").unwrap();
    std::fs::write(root.join("lib.txt"), "one\n").unwrap();
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-qm", "one"]);
    let config = std::fs::read(root.join(".git/config")).unwrap();
    let index = std::fs::read(root.join(".git/index")).unwrap();
    let paths = ProjectPaths::new(&root);
    std::fs::create_dir_all(paths.local()).unwrap();
    let engine = engine(&root);
    let main = Launcher::new(
        &root,
        None,
        Some((bin("airsd"), protections)),
        engine.views(&[], &[], &[]),
    );
    let worktrees = paths.workspaces();
    let ws = airsd::workspace::create(&main, &worktrees, "s1", "T1", "HEAD").unwrap();
    assert_eq!(
        std::fs::read_to_string(ws.path.join("lib.txt")).unwrap(),
        "one\n"
    );
    std::fs::write(ws.path.join("lib.txt"), "two\n").unwrap();
    let head = airsd::workspace::commit_attempt(&main, &ws, &worktrees, "T1: attempt 1").unwrap();
    assert!(head.is_some());
    assert_eq!(airsd::workspace::changed(&main, &ws).unwrap(), ["lib.txt"]);
    assert_eq!(std::fs::read(root.join(".git/config")).unwrap(), config);
    assert_eq!(std::fs::read(root.join(".git/index")).unwrap(), index);
    assert_eq!(
        std::fs::read_to_string(root.join("lib.txt")).unwrap(),
        "one\n"
    );
    airsd::workspace::remove(&main, &ws, &worktrees).unwrap();
    assert!(!ws.path.exists());
}
