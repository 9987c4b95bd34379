//! `air plan check` and `air plan graph` through the real binary.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use air_tests::bin;

fn example_plan() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/wordcount/plan.md")
}

fn air(args: &[&str]) -> Output {
    Command::new(bin("air")).args(args).output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn plan_check_prints_the_waves_of_the_example() {
    let plan = example_plan();
    let out = air(&["plan", "check", plan.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("ok — 5 tasks in 4 waves, 2 phases"),
        "{stdout}"
    );
    assert!(
        stdout.contains("wave 3 (2 tasks)\n  T3  Command-line tool"),
        "{stdout}"
    );

    let out = air(&["plan", "check", "--json", plan.to_str().unwrap()]);
    let graph: air_proto::plan::TaskGraph = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(graph.tasks.len(), 5);
}

#[test]
fn plan_check_reports_all_errors_and_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.md");
    std::fs::write(
        &plan,
        "# P\n\n## Task A: a\n\n- depends_on: B\n- colour: red\n\n## Task B: b\n\n- depends_on: A\n",
    )
    .unwrap();
    let out = air(&["plan", "check", plan.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    let name = plan.display().to_string();
    assert!(
        stderr.contains(&format!(
            "{name}:3: depends_on: dependency cycle: A → B → A"
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("{name}:6: colour: unknown field `colour`")),
        "{stderr}"
    );
    assert!(stderr.contains("2 errors in the plan"), "{stderr}");

    let out = air(&["plan", "check", "/nonexistent/plan.md"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("cannot read the plan /nonexistent/plan.md"));
}

#[test]
fn plan_graph_draws_every_format() {
    let plan = example_plan();
    for (format, marker) in [
        ("mermaid", "flowchart TD"),
        ("dot", "digraph plan {"),
        ("text", "wave 1 (1 task)"),
    ] {
        let out = air(&["plan", "graph", "--format", format, plan.to_str().unwrap()]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{format}: {}",
            text(&out.stderr)
        );
        assert!(text(&out.stdout).starts_with(marker), "{format}");
    }
}

/// `air plan check` says where the tasks would work: outside git, in the checkout
/// itself (tasks of one write area one at a time); in a git repository, each in its
/// own worktree.
#[test]
fn plan_check_says_where_the_tasks_work() {
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.md");
    std::fs::write(&plan, "# P\n\n## Task A: a\n").unwrap();
    let out = air(&["plan", "check", plan.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("not a git repository: tasks work in the checkout itself"),
        "{}",
        text(&out.stdout)
    );
    air_tests::git(dir.path(), &["init", "-q"]);
    let out = air(&["plan", "check", plan.to_str().unwrap()]);
    assert!(
        text(&out.stdout).contains("each task works in its own worktree"),
        "{}",
        text(&out.stdout)
    );
}
