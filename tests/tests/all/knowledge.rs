//! The project's debug knowledge with the real `air-worker`, airsd and `air`: what a
//! debugger found is kept in `.air/local/debug-records.db`; in a later session a
//! debugger handed a failure like it is told the earlier finding; `air debug search`
//! finds it.

use std::process::Command;

use air_proto::layout::ProjectPaths;
use air_proto::projection::TaskStatus;
use air_tests::bin;
use air_tests::mock_provider::{Exchange, Expect, MockProvider, Reply};
use serde_json::json;

use crate::agents::{any, call, ended, review, start, state};
use crate::asks::until;

const CHECK: &str = "grep -qx hello hello.txt";

fn plan(file: &str) -> String {
    format!("## Task A: write a greeting\n\n- model: anthropic/claude-haiku-4-5\n- verify: `grep -qx hello {file}`\n- retry_budget: 2\n\nCreate {file} saying hello.\n")
}

/// An executor that gets `file` wrong, a debugger that fixes it (told `expect`), and
/// the next attempt and review.
fn exchanges(file: &str, debugger_expects: &[&str]) -> Vec<Exchange> {
    let check = format!("grep -qx hello {file}");
    let x = |reply: Reply| Exchange {
        request: None,
        expect: any(),
        reply,
    };
    vec![
        x(call(
            "e1",
            "fs_write",
            json!({"path": file, "content": "helo\n"}),
        )),
        x(call("e2", "shell_run", json!({"command": check}))),
        x(call(
            "e3",
            "submit_result",
            json!({"status": "failed", "summary": "The check fails.", "verification": [{"name": check, "status": "failed"}]}),
        )),
        Exchange {
            request: None,
            expect: Expect {
                contains: debugger_expects.iter().map(|s| s.to_string()).collect(),
                tools: vec![],
            },
            reply: call("d1", "shell_run", json!({"command": check})),
        },
        x(call("d2", "fs_read", json!({"path": file}))),
        x(call(
            "d3",
            "fs_edit",
            json!({"path": file, "old_string": "helo", "new_string": "hello"}),
        )),
        x(call("d4", "shell_run", json!({"command": check}))),
        x(call(
            "d5",
            "submit_result",
            json!({
                "status": "completed", "summary": "It said helo; fixed.",
                "verification": [{"name": check, "status": "passed"}],
                "analysis": format!("The check failed because {file} says helo."), "root_cause": "a misspelt greeting (helo for hello)", "fixed": true
            }),
        )),
        x(call("e4", "shell_run", json!({"command": check}))),
        x(call(
            "e5",
            "submit_result",
            json!({
                "status": "completed", "summary": "The check passes.",
                "verification": [{"name": check, "status": "passed"}],
                "evidence": [{"ref": check, "claim": "the check passes"}]
            }),
        )),
        x(review("approved", json!([]))),
    ]
}

/// One session of the plan for `file` against the mock provider, to its end: the
/// task completes.
async fn session(root: &std::path::Path, file: &str, debugger_expects: &[&str]) -> MockProvider {
    let mock = MockProvider::start(exchanges(file, debugger_expects)).await;
    let env = [
        ("ANTHROPIC_API_KEY", "sk-test".to_string()),
        ("ANTHROPIC_BASE_URL", mock.url.clone()),
    ];
    let state = state(root, &env);
    let session = start(&state, &plan(file)).await;
    let p = until(&state, &session, ended).await;
    assert!(mock.mismatches().is_empty(), "{:?}", mock.mismatches());
    assert_eq!(
        p.task("A").map(|t| t.status),
        Some(TaskStatus::Completed),
        "{p:#?}"
    );
    state.stop_runs().await;
    mock
}

#[test]
fn what_a_debugger_found_is_kept_told_to_the_next_and_searchable() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    crate::rt().block_on(async {
        // A first session: nothing on record, so nothing is told.
        let mock = session(&root, "hello.txt", &[]).await;
        let debugger = mock
            .received()
            .iter()
            .find(|r| r.body.to_string().contains("You are the debugger"))
            .cloned()
            .unwrap();
        assert!(!debugger
            .body
            .to_string()
            .contains("Debugging records of this project"));
        // The record is kept (written beside the run: a moment may pass).
        let db = ProjectPaths::new(&root).debug_records();
        let t0 = std::time::Instant::now();
        let hits = loop {
            let hits = if db.exists() {
                airsd::learning::knowledge::DebugRecords::open(&db)
                    .unwrap()
                    .search("greeting helo", 5)
                    .unwrap()
            } else {
                Vec::new()
            };
            if !hits.is_empty() || t0.elapsed() > std::time::Duration::from_secs(5) {
                break hits;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        };
        assert_eq!(hits.len(), 1, "{hits:?}");
        assert_eq!(hits[0].symptom, format!("`{CHECK}` failed"));
        assert_eq!(
            hits[0].root_cause.as_deref(),
            Some("a misspelt greeting (helo for hello)")
        );
        assert_eq!(hits[0].fix, "hello.txt");
        assert!(hits[0].fixed);

        // A second session, a failure like it: the debugger is told the finding.
        session(
            &root,
            "greeting.txt",
            &[
                "Debugging records of this project that may apply",
                "a misspelt greeting (helo for hello)",
            ],
        )
        .await;
    });
    // `air debug search` asks airsd for the same.
    let air = |args: &[&str]| {
        Command::new(bin("air"))
            .args(args)
            .current_dir(&root)
            .env("AIR_HOME", root.join("air-home"))
            .output()
            .unwrap()
    };
    let out = air(&["debug", "search", "helo", "greeting"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("root cause: a misspelt greeting (helo for hello)"),
        "{text}"
    );
    assert_eq!(
        text.matches("symptom:").count(),
        2,
        "both sessions' records: {text}"
    );
    let out = air(&["debug", "search", "--json", "nothing", "matches", "this"]);
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "[]");
    let _ = air(&["daemon", "stop"]);
}

/// A project skill is shown to the executor by name and description, and its
/// instructions (with its files) are loaded when the model asks; `air skills list`
/// shows it, and a broken one is named.
#[test]
fn a_skill_is_shown_loaded_when_it_applies_and_listed() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    air_proto::layout::init(&root, "2026-12-02T00:00:00Z").unwrap();
    let skill = root.join(".air/shared/skills/greeting");
    std::fs::create_dir_all(skill.join("scripts")).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        "---\nname: greeting\ndescription: How this project writes greeting files. Use when asked to greet.\n---\nWrite the word in lower case, then a newline. Check with scripts/check.sh.\n",
    )
    .unwrap();
    std::fs::write(skill.join("scripts/check.sh"), "grep -qx hello hello.txt\n").unwrap();
    let broken = root.join(".air/shared/skills/broken");
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::write(broken.join("SKILL.md"), "no front matter\n").unwrap();
    crate::rt().block_on(async {
        let mock = MockProvider::start(vec![
            Exchange {
                request: None,
                expect: Expect {
                    contains: vec!["## Skills".into(), "`greeting`: How this project writes greeting files.".into()],
                    tools: vec!["skill_load".into()],
                },
                reply: call("s1", "skill_load", json!({"name": "greeting"})),
            },
            Exchange {
                request: None,
                expect: Expect { contains: vec!["Write the word in lower case".into(), "greeting/scripts/check.sh".into()], tools: vec![] },
                reply: call("s2", "fs_write", json!({"path": "hello.txt", "content": "hello\n"})),
            },
            Exchange { request: None, expect: any(), reply: call("s3", "submit_result", json!({"status": "completed", "summary": "Wrote hello.txt as the skill says."})) },
            Exchange { request: None, expect: any(), reply: review("approved", json!([])) },
        ])
        .await;
        let env = [("ANTHROPIC_API_KEY", "sk-test".to_string()), ("ANTHROPIC_BASE_URL", mock.url.clone())];
        let state = state(&root, &env);
        let session = start(&state, "## Task A: greet\n\n- model: anthropic/claude-haiku-4-5\n\nCreate hello.txt saying hello.\n").await;
        let p = until(&state, &session, ended).await;
        assert!(mock.mismatches().is_empty(), "{:?}", mock.mismatches());
        assert_eq!(p.task("A").map(|t| t.status), Some(TaskStatus::Completed), "{p:#?}");
        state.stop_runs().await;
    });
    let out = Command::new(bin("air"))
        .args(["skills", "list"])
        .current_dir(&root)
        .env("AIR_HOME", root.join("air-home"))
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(
        stdout.contains("greeting")
            && stdout.contains("project")
            && stdout.contains("Use when asked to greet."),
        "{stdout}"
    );
    assert!(
        stderr.contains("broken/SKILL.md: no front matter"),
        "{stderr}"
    );
}
