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

/// A git repository whose one commit holds `lib.txt` (`one`), ignoring air's state.
fn committed() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    git(&root, &["init", "-q", "-b", "main"]);
    std::fs::write(root.join(".gitignore"), ".air/local/\n").unwrap();
    std::fs::write(root.join("lib.txt"), "one\n").unwrap();
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-qm", "one"]);
    (dir, root)
}

/// A committed project with two tasks' worktrees, a record in air's state and an
/// uncommitted edit of the person's.
fn project() -> (tempfile::TempDir, PathBuf, PathBuf, PathBuf) {
    let (dir, root) = committed();
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
    // Another task's worktree and air's records: air's state, neither read nor
    // written.
    for p in [
        theirs.join("lib.txt"),
        root.join(".air/local/sessions/s1/session.db"),
    ] {
        for access in [Access::Read, Access::Write] {
            assert!(
                matches!(e.check(&p, access), Verdict::Deny(_)),
                "{}",
                p.display()
            );
        }
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
    let (_dir, root) = committed();
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

/// Four tasks, each writing its own file in its own worktree; the fourth after the
/// other three.
const FOUR: &str = "\
# Four

## Task W1: one

- evidence: none

air-test-call: fs.write {\"path\": \"w1.txt\", \"content\": \"one\\n\"}
air-test-sleep: 300

## Task W2: two

- evidence: none

air-test-call: fs.write {\"path\": \"w2.txt\", \"content\": \"two\\n\"}
air-test-sleep: 300

## Task W3: three

- evidence: none

air-test-call: fs.write {\"path\": \"w3.txt\", \"content\": \"three\\n\"}
air-test-sleep: 300

## Task W4: four

- depends_on: W1, W2, W3
- evidence: none

air-test-call: fs.write {\"path\": \"w4.txt\", \"content\": \"four\\n\"}
air-test-sleep: 300
";

/// kill -9 of airsd while tasks merge, at a different point each trial, then the
/// run resumed: every task is merged into the integration branch exactly once,
/// every worktree's record ends, and the whole result lands in the checkout.
#[test]
fn kill_9_while_tasks_merge_loses_and_repeats_nothing() {
    use crate::daemon::Project;
    use crate::run::{air, db, expect, until};
    for trial in 1..=3 {
        let p = Project::new();
        std::fs::write(p.root.join("plan.md"), FOUR).unwrap();
        std::fs::write(p.root.join("README.md"), "# four\n").unwrap();
        git(&p.root, &["init", "-q", "-b", "main"]);
        git(&p.root, &["add", "-A"]);
        git(&p.root, &["commit", "-qm", "start"]);
        let out = air(&p, &["run", "--plan", "plan.md", "--detach"]);
        expect(&out, 0);
        let session = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let merged = |p: &Project| -> i64 {
            db(p, &session)
                .query_row(
                    "SELECT COUNT(*) FROM events WHERE type = 'workspace.merged'",
                    [],
                    |r| r.get(0),
                )
                .unwrap_or(0)
        };
        // Killed once `trial` merges are recorded: the next is under way or near.
        assert!(until(30, || merged(&p) >= trial));
        let pid = nix::unistd::Pid::from_raw(p.daemon_pid().unwrap() as i32);
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL).unwrap();
        assert!(until(5, || nix::sys::signal::kill(pid, None).is_err()));
        let out = air(&p, &["run", "--resume", &session]);
        expect(&out, 0);
        let conn = db(&p, &session);
        let one = |sql: &str| -> i64 { conn.query_row(sql, [], |r| r.get(0)).unwrap() };
        assert_eq!(
            one("SELECT COUNT(*) FROM tasks WHERE status = 'completed'"),
            4,
            "trial {trial}"
        );
        let rows: String = conn
            .query_row(
                "SELECT (SELECT group_concat(task_id || ' ' || status || ' ' || id, '; ') FROM workspaces) || ' || ' || (SELECT group_concat(seq || ' ' || type || ' ' || substr(payload_json, 1, 300), '; ') FROM events WHERE type LIKE 'workspace.%' OR type LIKE 'task.%')",
                [],
                |r| r.get(0),
            )
            .unwrap_or_default();
        let logs = std::fs::read_to_string(ProjectPaths::new(&p.root).logs().join("airsd.log"))
            .unwrap_or_default();
        assert_eq!(
            one("SELECT COUNT(*) FROM workspaces WHERE status = 'active'"),
            0,
            "trial {trial}: {rows}\n{logs}"
        );
        assert_eq!(
            one("SELECT COUNT(*) FROM events WHERE type = 'workspace.merged'"),
            4,
            "trial {trial}: {rows}\n{logs}"
        );
        // Each task's merge commit once on the integration branch.
        let log = git(
            &p.root,
            &[
                "log",
                "--merges",
                "--format=%s",
                &airsd::workspace::integration_branch(&session),
            ],
        );
        let subjects = String::from_utf8_lossy(&log.stdout).into_owned();
        for task in ["W1", "W2", "W3", "W4"] {
            let n = subjects
                .lines()
                .filter(|s| s.starts_with(&format!("air: merge {task} ")))
                .count();
            assert_eq!(n, 1, "trial {trial}: {task} in {subjects}");
        }
        // Landed: the checkout's branch holds all four files.
        let ended: String = conn
            .query_row(
                "SELECT group_concat(payload_json, ' | ') FROM events WHERE type = 'run.completed'",
                [],
                |r| r.get(0),
            )
            .unwrap_or_default();
        for (f, text) in [
            ("w1.txt", "one\n"),
            ("w2.txt", "two\n"),
            ("w3.txt", "three\n"),
            ("w4.txt", "four\n"),
        ] {
            assert_eq!(
                std::fs::read_to_string(p.root.join(f)).unwrap_or_default(),
                text,
                "trial {trial}: {f}: {ended}"
            );
        }
        // The report shows each task's branch, merged (from the recovered view).
        let report: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(
                ProjectPaths::new(&p.root)
                    .artifacts(&session)
                    .join("reports/run-report.json"),
            )
            .unwrap(),
        )
        .unwrap();
        for t in report["tasks"].as_array().unwrap() {
            let branch = t["branch"].as_str().unwrap_or_default();
            assert!(branch.ends_with(": merged"), "trial {trial}: {t}");
        }
        let _ = air(&p, &["daemon", "stop"]);
    }
}

/// `land: never`: the checkout is untouched at the end; `air diff` shows a task's
/// change and `air land` brings the work in later, once.
#[test]
fn a_run_that_does_not_land_is_landed_later_and_its_diffs_are_shown() {
    use crate::daemon::Project;
    use crate::run::{air, expect};
    let p = Project::new();
    std::fs::write(
        p.root.join("plan.md"),
        format!("---\nland: never\n---\n{FOUR}"),
    )
    .unwrap();
    git(&p.root, &["init", "-q", "-b", "main"]);
    git(&p.root, &["add", "-A"]);
    git(&p.root, &["commit", "-qm", "start"]);
    let out = air(&p, &["run", "--plan", "plan.md"]);
    expect(&out, 0);
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(said.contains("kept on air/"), "{said}");
    assert!(!p.root.join("w1.txt").exists());
    let diff = air(&p, &["diff", "W2"]);
    expect(&diff, 0);
    let shown = String::from_utf8_lossy(&diff.stdout).into_owned();
    assert!(
        shown.contains("+++ b/w2.txt") && shown.contains("+two"),
        "{shown}"
    );
    assert!(!shown.contains("w1.txt"), "{shown}");
    let landed = air(&p, &["land"]);
    expect(&landed, 0);
    let said = String::from_utf8_lossy(&landed.stdout).into_owned();
    assert!(said.contains("4 file(s) changed"), "{said}");
    for f in ["w1.txt", "w2.txt", "w3.txt", "w4.txt"] {
        assert!(p.root.join(f).exists(), "{f}");
    }
    let again = air(&p, &["land"]);
    expect(&again, 0);
    assert!(String::from_utf8_lossy(&again.stdout).contains("nothing to land"));
    let _ = air(&p, &["daemon", "stop"]);
}

/// Three tasks of one write area, each changing a different function of one file:
/// in their own worktrees they run together, all three merge, and the landed file
/// holds the three changes.
#[test]
fn tasks_of_one_area_edit_one_file_together_and_all_land() {
    use crate::daemon::Project;
    use crate::run::{air, db, expect};
    let p = Project::new();
    let lib = "def a():\n    return 1\n\n\n\n\n\ndef b():\n    return 2\n\n\n\n\n\ndef c():\n    return 3\n";
    std::fs::write(p.root.join("lib.py"), lib).unwrap();
    let task = |id: &str, from: &str, to: &str| {
        format!(
            "## Task {id}: change {id}\n\n- write_area: lib\n- evidence: none\n\nair-test-call: fs.read {{\"path\": \"lib.py\"}}\nair-test-call: fs.edit {{\"path\": \"lib.py\", \"old_string\": \"{from}\", \"new_string\": \"{to}\"}}\nair-test-sleep: 400\n\n"
        )
    };
    let plan = format!(
        "---\nconcurrency: 3\n---\n# One file\n\n{}{}{}",
        task("A", "return 1", "return 10"),
        task("B", "return 2", "return 20"),
        task("C", "return 3", "return 30"),
    );
    std::fs::write(p.root.join("plan.md"), plan).unwrap();
    git(&p.root, &["init", "-q", "-b", "main"]);
    git(&p.root, &["add", "-A"]);
    git(&p.root, &["commit", "-qm", "start"]);
    let out = air(&p, &["run", "--plan", "plan.md", "--json"]);
    expect(&out, 0);
    let session = crate::run::newest_session(&p);
    // All three were running before any of them was reviewed.
    let conn = db(&p, &session);
    let first_review: i64 = conn
        .query_row(
            "SELECT MIN(seq) FROM events WHERE type = 'task.reviewing'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let started_before: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM events WHERE type = 'task.started' AND seq < ?1",
            [first_review],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(started_before, 3);
    let landed = std::fs::read_to_string(p.root.join("lib.py")).unwrap();
    for n in ["return 10", "return 20", "return 30"] {
        assert!(landed.contains(n), "{landed}");
    }
    let _ = air(&p, &["daemon", "stop"]);
}
