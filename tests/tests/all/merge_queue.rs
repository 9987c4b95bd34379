//! The merge queue end to end, with the scripted worker and real git and Python: six
//! tasks at concurrency 3 in a git project. T1–T3 each add a function to a different
//! region of one file, in parallel; T4 needs all three; T5, beside T1 from the start,
//! changes the line T1 changes in another file (a textual conflict: whichever of the
//! two merges second goes to the debugger, and its next attempt resolves it); T6's check passes in its own worktree and fails once merged with T1–T3
//! (its names list is stale), so its merge is refused and debugged. The checkout is
//! untouched until the run lands, and a file the person writes into it mid-run is no
//! task's change.

use crate::daemon::Project;
use crate::run::{air, db, expect, until};
use air_tests::git;

const CALC: &str = "\
# region one
def one():
    return 1


# the second region
def two():
    return 2


# the third region
def three():
    return 3
";

/// An edit that adds `added` after `anchor` (as a model edits: the rest of the file as
/// its worktree has it, whatever was merged into it).
fn after(anchor: &str, added: &str) -> String {
    format!(
        "{{\"path\": \"calc.py\", \"old_string\": {}, \"new_string\": {}}}",
        json(anchor),
        json(&format!("{anchor}\n{added}"))
    )
}

fn json(s: &str) -> String {
    serde_json::to_string(s).unwrap()
}

/// A task whose attempts make `calls` (`N:` before a call: only on the N-th attempt).
fn task(id: &str, title: &str, extra: &str, calls: &[(u32, &str, String)]) -> String {
    let mut s = format!(
        "## Task {id}: {title}\n\n- verify: `python3 -m unittest discover -s tests`\n{extra}\n"
    );
    for (n, tool, input) in calls {
        s.push_str(&format!("air-test-call-{n}: {tool} {input}\n"));
    }
    s.push('\n');
    s
}

fn write(path: &str, content: &str) -> String {
    format!(
        "{{\"path\": {}, \"content\": {}}}",
        json(path),
        json(content)
    )
}

fn read(path: &str) -> String {
    format!("{{\"path\": {}}}", json(path))
}

fn test_of(name: &str, call: &str, value: i64) -> String {
    format!(
        "import unittest\n\nimport calc\n\n\nclass T(unittest.TestCase):\n    def test_{name}(self):\n        self.assertEqual(calc.{call}, {value})\n"
    )
}

fn plan(release: &std::path::Path) -> String {
    let both = "double added\nthe first\n";
    let double = after(
        "def one():\n    return 1\n",
        "\ndef double(x):\n    return 2 * x\n",
    );
    let triple = after(
        "def two():\n    return 2\n",
        "\ndef triple(x):\n    return 3 * x\n",
    );
    let square = after(
        "def three():\n    return 3\n",
        "\ndef square(x):\n    return x * x\n",
    );
    let names = "import unittest\n\nimport calc\n\n\nclass T(unittest.TestCase):\n    def test_names(self):\n        names = sorted(n for n in dir(calc) if not n.startswith('_'))\n        with open('names.txt') as f:\n            self.assertEqual(names, f.read().split())\n";
    let mut md = String::from("---\nconcurrency: 3\n---\n\n# Six\n\n");
    md.push_str(&task(
        "T6",
        "names",
        "",
        &[
            // First in the plan, it starts before anything is merged and goes on
            // once T1–T3 are (the test says so in the checkout): its check then meets
            // their functions only when it is merged.
            (
                1,
                "shell.run",
                format!(
                    "{{\"command\": {}}}",
                    json(&format!(
                        "until [ -e '{}' ]; do sleep 0.05; done",
                        release.display()
                    ))
                ),
            ),
            (1, "fs.write", write("names.txt", "one three two\n")),
            (1, "fs.write", write("tests/test_names.py", names)),
            (2, "fs.read", read("names.txt")),
            (
                2,
                "fs.write",
                write("names.txt", "double one square three triple two\n"),
            ),
        ],
    ));
    md.push_str(&task(
        "T1",
        "double",
        "",
        &[
            (1, "fs.read", read("calc.py")),
            (1, "fs.edit", double.clone()),
            (
                1,
                "fs.write",
                write("tests/test_double.py", &test_of("double", "double(2)", 4)),
            ),
            (1, "fs.read", read("notes.txt")),
            (1, "fs.write", write("notes.txt", "double added\n")),
            // Should its merge be the one that meets T5's change.
            (2, "fs.read", read("notes.txt")),
            (2, "fs.write", write("notes.txt", both)),
        ],
    ));
    md.push_str(&task(
        "T5",
        "the first",
        "",
        &[
            (1, "fs.read", read("notes.txt")),
            (1, "fs.write", write("notes.txt", "the first\n")),
            (2, "fs.read", read("notes.txt")),
            (2, "fs.write", write("notes.txt", both)),
        ],
    ));
    md.push_str(&task(
        "T2",
        "triple",
        "",
        &[
            (1, "fs.read", read("calc.py")),
            (1, "fs.edit", triple.clone()),
            (
                1,
                "fs.write",
                write("tests/test_triple.py", &test_of("triple", "triple(2)", 6)),
            ),
        ],
    ));
    md.push_str(&task(
        "T3",
        "square",
        "",
        &[
            (1, "fs.read", read("calc.py")),
            (1, "fs.edit", square.clone()),
            (
                1,
                "fs.write",
                write("tests/test_square.py", &test_of("square", "square(3)", 9)),
            ),
        ],
    ));
    md.push_str(&task(
        "T4",
        "all three",
        "- depends_on: T1, T2, T3\n",
        &[(
            1,
            "fs.write",
            write(
                "tests/test_total.py",
                &test_of("total", "double(2) + calc.triple(1) + calc.square(3)", 16),
            ),
        )],
    ));
    md
}

#[test]
fn six_tasks_merge_in_order_behind_their_check_and_land() {
    let p = Project::new();
    std::fs::write(p.root.join("calc.py"), CALC).unwrap();
    std::fs::create_dir_all(p.root.join("tests")).unwrap();
    std::fs::write(
        p.root.join("tests/test_base.py"),
        test_of("base", "one() + calc.two() + calc.three()", 6),
    )
    .unwrap();
    std::fs::write(p.root.join("notes.txt"), "notes\n").unwrap();
    std::fs::write(p.root.join(".gitignore"), "__pycache__/\n").unwrap();
    git(&p.root, &["init", "-q", "-b", "main"]);
    git(&p.root, &["add", "-A"]);
    git(&p.root, &["commit", "-qm", "start"]);
    let release = p.root.join("release");
    std::fs::write(p.root.join("plan.md"), plan(&release)).unwrap();
    let out = air(&p, &["run", "--plan", "plan.md", "--detach"]);
    expect(&out, 0);
    let session = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let count = |sql: &str| -> i64 {
        db(&p, &session)
            .query_row(sql, [], |r| r.get(0))
            .unwrap_or(0)
    };
    // T1–T3 merged (one merge commit each on the integration branch's first-parent
    // line): the checkout is still as committed, and the person writes a file there.
    let merged = |task: &str| {
        format!(
            "SELECT COUNT(*) FROM events e JOIN workspaces w ON w.id = json_extract(e.payload_json, '$.workspace_id') WHERE e.type = 'workspace.merged' AND w.task_id = '{task}'"
        )
    };
    let state = || -> String {
        db(&p, &session)
            .query_row(
                "SELECT (SELECT group_concat(id || ' ' || status, ', ') FROM tasks) || ' || ' || (SELECT group_concat(seq || ' ' || type || ' ' || substr(payload_json, 1, 400), '\n') FROM events WHERE type LIKE 'workspace.%' OR type LIKE 'task.%' OR type LIKE 'agent.completed' OR type = 'agent.failed')",
                [],
                |r| r.get(0),
            )
            .unwrap_or_default()
    };
    assert!(
        until(60, || ["T1", "T2", "T3"]
            .iter()
            .all(|t| count(&merged(t)) == 1)),
        "{}",
        state()
    );
    assert_eq!(
        std::fs::read_to_string(p.root.join("calc.py")).unwrap(),
        CALC
    );
    std::fs::write(&release, "the person's file\n").unwrap();
    assert!(
        until(300, || count(
            "SELECT COUNT(*) FROM events WHERE type = 'run.completed'"
        ) == 1),
        "{}",
        state()
    );
    let conn = db(&p, &session);
    let statuses: Vec<(String, String)> = conn
        .prepare("SELECT id, status FROM tasks ORDER BY id")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let failures: Vec<(String, String)> = conn
        .prepare("SELECT json_extract(payload_json, '$.task_id'), json_extract(payload_json, '$.reason') FROM events WHERE type = 'workspace.merge_failed' ORDER BY seq")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    for (id, status) in &statuses {
        assert_eq!(status, "completed", "{id}: {statuses:?} {failures:#?}");
    }
    // The conflict went to a debugger with both sides' hunks: T5's (or T1's, had it
    // merged second).
    let conflict = failures
        .iter()
        .find(|(t, r)| (t == "T5" || t == "T1") && r.contains("conflicts"))
        .unwrap_or_else(|| panic!("{failures:#?}"));
    assert!(
        conflict.1.contains("<<<<<<<")
            && conflict.1.contains("double added")
            && conflict.1.contains("the first")
            && conflict.1.contains("notes.txt"),
        "{}",
        conflict.1
    );
    // T6's check failed on the merged tree; the integration branch did not move then.
    let gate = failures
        .iter()
        .find(|(t, _)| t == "T6")
        .unwrap_or_else(|| panic!("{failures:#?}"));
    assert!(
        gate.1.contains("failed on its change merged with"),
        "{}",
        gate.1
    );
    for t in [&conflict.0, &"T6".to_string()] {
        assert!(
            count(&format!(
                "SELECT COUNT(*) FROM events WHERE type = 'task.debugging' AND json_extract(payload_json, '$.task_id') = '{t}'"
            )) >= 1,
            "{t} was debugged"
        );
    }
    // Each task is one merge on the integration branch, never a conflict marker.
    let integration = airsd::workspace::integration_branch(&session);
    let log = git(
        &p.root,
        &["log", "--first-parent", "--format=%s", &integration],
    );
    let subjects = String::from_utf8_lossy(&log.stdout).into_owned();
    for t in ["T1", "T2", "T3", "T4", "T5", "T6"] {
        let n = subjects
            .lines()
            .filter(|s| s.starts_with(&format!("air: merge {t} ")))
            .count();
        assert_eq!(n, 1, "{t}: {subjects}");
    }
    // The person's file is no task's change.
    assert_eq!(
        count("SELECT COUNT(*) FROM events WHERE type IN ('agent.completed', 'tool.completed') AND payload_json LIKE '%\"release\"%'"),
        0
    );
    // Landed: all three functions, both notes, and the person's file as it was.
    let calc = std::fs::read_to_string(p.root.join("calc.py")).unwrap();
    for f in ["def double", "def triple", "def square"] {
        assert!(calc.contains(f), "{calc}");
    }
    let notes = std::fs::read_to_string(p.root.join("notes.txt")).unwrap();
    assert!(
        notes.contains("double added") && notes.contains("the first") && !notes.contains("<<<"),
        "{notes}"
    );
    assert_eq!(
        std::fs::read_to_string(&release).unwrap(),
        "the person's file\n"
    );
    let check = std::process::Command::new("python3")
        .args(["-m", "unittest", "discover", "-s", "tests"])
        .current_dir(&p.root)
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    // `air status` shows the run's tasks, each with its branch and where its change
    // is; the same from a daemon started again (its view rebuilt from the records).
    for restarted in [false, true] {
        if restarted {
            p.air(&["daemon", "stop"]);
        }
        let out = p.air(&["status"]);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(text.contains("the newest run"), "{text}");
        for t in ["T1", "T2", "T3", "T4", "T6"] {
            let line = text
                .lines()
                .find(|l| l.split_whitespace().nth(1) == Some(t))
                .unwrap_or_default();
            assert!(
                line.contains(&format!("/{t}: merged]")),
                "{t} (restarted: {restarted}): {text}"
            );
        }
    }
}

/// Two runs started at once in one project: each has its own integration branch, they
/// proceed side by side, and both land, one after the other (the second beside the
/// first's landing, which is air's own).
#[test]
fn two_runs_at_once_both_complete_and_land() {
    let p = Project::new();
    std::fs::write(p.root.join("README.md"), "# two runs\n").unwrap();
    git(&p.root, &["init", "-q", "-b", "main"]);
    git(&p.root, &["add", "-A"]);
    git(&p.root, &["commit", "-qm", "start"]);
    let plan = |name: &str| {
        let mut md = format!("# Run {name}\n\n");
        for i in 1..=2 {
            md.push_str(&format!(
                "## Task {name}{i}: file {i}\n\n- evidence: none\n\nair-test-call: fs.write {}\n\n",
                write(&format!("{name}{i}.txt"), &format!("{name} {i}\n"))
            ));
        }
        md
    };
    std::fs::write(p.root.join("a.md"), plan("A")).unwrap();
    std::fs::write(p.root.join("b.md"), plan("B")).unwrap();
    // Both started before either ends.
    let a = crate::run::command(&p, &["run", "--plan", "a.md", "--json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let b = crate::run::command(&p, &["run", "--plan", "b.md", "--json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    for out in [a.wait_with_output().unwrap(), b.wait_with_output().unwrap()] {
        expect(&out, 0);
        // The report is the last line.
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let last = text.lines().last().unwrap_or_default();
        let report: serde_json::Value = serde_json::from_str(last).unwrap();
        assert_eq!(
            report["landing"]["landed"],
            serde_json::Value::Bool(true),
            "{report:#}"
        );
    }
    for name in ["A1", "A2", "B1", "B2"] {
        assert!(p.root.join(format!("{name}.txt")).is_file(), "{name}");
    }
    let status = git(&p.root, &["status", "--porcelain", "--untracked-files=no"]);
    assert!(
        status.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&status.stdout)
    );
}

/// `air undo TASK` takes one task's merged change back out: of the integration branch
/// as a new commit (the other tasks' changes stay), and of the checkout where the run
/// had landed; once only.
#[test]
fn undo_takes_one_task_back_out_of_the_work_and_the_checkout() {
    let p = Project::new();
    std::fs::write(p.root.join("README.md"), "# undo\n").unwrap();
    git(&p.root, &["init", "-q", "-b", "main"]);
    git(&p.root, &["add", "-A"]);
    git(&p.root, &["commit", "-qm", "start"]);
    let mut md = String::from("# Three\n\n");
    for i in 1..=3 {
        md.push_str(&format!(
            "## Task U{i}: file {i}\n\n- evidence: none\n\nair-test-call: fs.write {}\n\n",
            write(&format!("u{i}.txt"), &format!("{i}\n"))
        ));
    }
    std::fs::write(p.root.join("plan.md"), md).unwrap();
    let out = air(&p, &["run", "--plan", "plan.md"]);
    expect(&out, 0);
    assert!(p.root.join("u2.txt").is_file());
    let out = air(&p, &["undo", "U2"]);
    expect(&out, 0);
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        said.contains("u2.txt") && said.contains("checkout"),
        "{said}"
    );
    assert!(!p.root.join("u2.txt").exists());
    assert!(p.root.join("u1.txt").is_file() && p.root.join("u3.txt").is_file());
    let status = git(&p.root, &["status", "--porcelain", "--untracked-files=no"]);
    assert!(status.stdout.is_empty());
    // Recorded in the session: what was undone, the commit, the files.
    let undone: Vec<(String, String)> = std::fs::read_dir(p.paths().sessions())
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let session = e.file_name().to_string_lossy().into_owned();
            db(&p, &session)
                .query_row(
                    "SELECT json_extract(payload_json, '$.task_id'), json_extract(payload_json, '$.files') FROM events WHERE type = 'workspace.undone'",
                    [],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .ok()
        })
        .collect();
    assert_eq!(undone, [("U2".to_string(), "[\"u2.txt\"]".to_string())]);
    // Once: a second undo says so, and a task with no branch is named.
    let out = air(&p, &["undo", "U2"]);
    assert_ne!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stderr).contains("undone already"));
    let out = air(&p, &["undo", "U9"]);
    assert_ne!(out.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("has no branch"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `air gc` prunes a blocked task's kept worktree (only when asked, or past the age
/// limit or the budget), its work committed on its branch first.
#[test]
fn gc_prunes_a_kept_worktree_and_keeps_its_work_on_its_branch() {
    let p = Project::new();
    std::fs::write(p.root.join("README.md"), "# gc\n").unwrap();
    git(&p.root, &["init", "-q", "-b", "main"]);
    git(&p.root, &["add", "-A"]);
    git(&p.root, &["commit", "-qm", "start"]);
    let md = format!(
        "# Kept\n\n## Task K1: stuck\n\n- evidence: none\n\nair-test: executor=block\nair-test-call: fs.write {}\n",
        write("k1.txt", "tried\n")
    );
    std::fs::write(p.root.join("plan.md"), md).unwrap();
    let out = air(&p, &["run", "--plan", "plan.md", "--json"]);
    expect(&out, 3);
    let kept: Vec<_> = std::fs::read_dir(p.paths().workspaces())
        .unwrap()
        .flat_map(|s| std::fs::read_dir(s.unwrap().path()).unwrap())
        .map(|t| t.unwrap().path())
        .collect();
    assert_eq!(kept.len(), 1, "{kept:?}");
    // The person looked inside and left a note, uncommitted.
    std::fs::write(kept[0].join("note.txt"), "looked\n").unwrap();
    // Young and small: an ordinary pruning keeps it; a dry `--all` names it.
    let out = air(&p, &["gc"]);
    expect(&out, 0);
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("kept "));
    let out = air(&p, &["gc", "--all", "--dry-run"]);
    expect(&out, 0);
    assert!(String::from_utf8_lossy(&out.stdout).contains("would remove"));
    assert!(kept[0].exists());
    let out = air(&p, &["gc", "--all"]);
    expect(&out, 0);
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        said.starts_with("removed ") && said.contains("air/"),
        "{said}"
    );
    assert!(!kept[0].exists());
    // Its work, the attempt's and the note, is on its branch.
    let branch = said
        .split_whitespace()
        .find(|w| w.trim_start_matches('(').starts_with("air/"))
        .unwrap()
        .trim_start_matches('(')
        .trim_end_matches(',')
        .to_string();
    for (file, text) in [("k1.txt", "tried\n"), ("note.txt", "looked\n")] {
        let shown = git(&p.root, &["show", &format!("{branch}:{file}")]);
        assert_eq!(String::from_utf8_lossy(&shown.stdout), text, "{file}");
    }
}
