//! Learning with the real `air-worker`, airsd and `air`, replayed from recordings
//! (each agent its own, so a miner working beside an executor changes nothing of what
//! either is answered). In a run that learns, the ExperienceMiner is started when an
//! agent reports a skill wrong, when an agent reaches the nudge counter and when the
//! run ends; what it proposes is kept in `.air/local/learned-memory.db`. A lesson
//! proposed in three sessions asks the user; promoted, it is in the next executor's
//! context. The skill correction is shown with its diff and written when promoted;
//! `air memory` lists, exports and forgets.

use std::process::Command;

use air_proto::memory::{MemoryKind, MemoryStatus};
use air_proto::projection::{RunStatus, TaskStatus};
use air_tests::bin;
use serde_json::{json, Value};

use crate::agents::{ended, state};
use crate::asks::until;
use crate::compaction::{expecting, recording, turn};

const PLAN: &str = "## Task A: write a greeting\n\n- model: anthropic/claude-haiku-4-5\n\nCreate hello.txt saying hello.\n";
const LESSON: &str = "Greeting files hold one lower-case word and a newline";

fn write(dir: &std::path::Path, name: &str, mut v: Value) {
    v["exchanges"][0]["request"] = json!({"model": "claude-haiku-4-5"});
    std::fs::write(dir.join(format!("{name}.json")), v.to_string()).unwrap();
}

fn review(dir: &std::path::Path) {
    write(
        dir,
        "A-reviewer-1",
        recording(vec![turn(
            "r1",
            "submit_result",
            json!({"decision": "approved", "summary": "hello.txt is right", "findings": []}),
            3_000,
        )]),
    );
}

/// A session-end miner that proposes the lesson (again).
fn session_miner(dir: &std::path::Path, name: &str) {
    write(
        dir,
        name,
        recording(vec![expecting(
            turn(
                "m1",
                "submit_result",
                json!({"memories": [{"kind": "project", "title": LESSON, "body": "hello.txt says `hello` and a newline; the reviewer checks it.", "files": ["hello.txt"]}]}),
                2_000,
            ),
            &[
                "The session that just ended",
                "A write a greeting: completed",
            ],
        )]),
    );
}

fn submit() -> Value {
    turn(
        "e9",
        "submit_result",
        json!({"status": "completed", "summary": "hello.txt says hello."}),
        3_000,
    )
}

async fn learn_run(state: &airsd::daemon::DaemonState, replay: &std::path::Path) -> String {
    let record = tempfile::tempdir().unwrap().keep();
    state
        .start_run(air_proto::api::params::RunStart {
            plan: "plan.md".into(),
            plan_text: PLAN.into(),
            on_ask: Some(air_proto::plan::OnAsk::Deny),
            record: Some(record.display().to_string()),
            replay: Some(replay.display().to_string()),
            learn: Some(true),
            ..Default::default()
        })
        .await
        .unwrap()
        .session_id
}

/// The run ended and its last miner is done.
fn mined(last: &'static str) -> impl Fn(&air_proto::projection::Projection) -> bool {
    move |p| {
        ended(p)
            && p.agents
                .iter()
                .any(|a| a.id == last && a.status != RunStatus::Running)
    }
}

#[test]
fn what_runs_teach_is_proposed_counted_promoted_and_given_to_the_next_executor() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    air_proto::layout::init(&root, "2026-12-02T00:00:00Z").unwrap();
    for n in 1..=8 {
        std::fs::write(root.join(format!("note{n}.txt")), format!("note {n}\n")).unwrap();
    }
    let skill = root.join(".air/shared/skills/greeting/SKILL.md");
    std::fs::create_dir_all(skill.parent().unwrap()).unwrap();
    std::fs::write(
        &skill,
        "---\nname: greeting\ndescription: How this project writes greeting files.\n---\nWrite the word in upper case.\n",
    )
    .unwrap();

    // The first run: the executor reports the skill wrong at once, then takes ten
    // turns (the nudge), then the run ends.
    let first = tempfile::tempdir().unwrap();
    let mut exec = vec![turn(
        "e0",
        "report_outdated",
        json!({"target": "skill:greeting", "problem": "The greeting skill says upper case, but the reviewer and the check want `hello` in lower case."}),
        2_000,
    )];
    for n in 1..=8 {
        exec.push(turn(
            &format!("e{n}"),
            "fs_read",
            json!({"path": format!("note{n}.txt")}),
            2_000,
        ));
    }
    exec.push(turn(
        "e8w",
        "fs_write",
        json!({"path": "hello.txt", "content": "hello\n"}),
        2_500,
    ));
    exec.push(submit());
    write(first.path(), "A-executor-1", recording(exec));
    review(first.path());
    write(
        first.path(),
        "miner-1",
        recording(vec![expecting(
            turn(
                "m1",
                "submit_result",
                json!({"memories": [{"kind": "patch", "target": "skill:greeting", "title": "Greetings are lower case", "body": "Write the word in lower case, then a newline."}]}),
                2_000,
            ),
            &[
                "A skill or rules file was reported wrong",
                "Target: `skill:greeting`",
                "Write the word in upper case.",
            ],
        )]),
    );
    write(
        first.path(),
        "miner-2",
        recording(vec![expecting(
            turn(
                "m2",
                "submit_result",
                json!({"memories": [{"kind": "user", "title": "The user keeps greetings short", "body": "One word."}]}),
                2_000,
            ),
            &[
                "A stretch of the session's work",
                "## The executor on task A: write a greeting, messages 1 to",
                "note8.txt",
            ],
        )]),
    );
    session_miner(first.path(), "miner-3");

    // Later runs: a short executor, and the session-end miner proposing the lesson.
    let later = tempfile::tempdir().unwrap();
    write(
        later.path(),
        "A-executor-1",
        recording(vec![
            turn("e0", "fs_read", json!({"path": "hello.txt"}), 2_000),
            turn(
                "e1",
                "fs_write",
                json!({"path": "hello.txt", "content": "hello\n"}),
                2_000,
            ),
            submit(),
        ]),
    );
    review(later.path());
    session_miner(later.path(), "miner-1");
    // The run after the promotion: the executor is told the lesson.
    let told = tempfile::tempdir().unwrap();
    write(
        told.path(),
        "A-executor-1",
        recording(vec![
            expecting(
                turn("e0", "fs_read", json!({"path": "hello.txt"}), 2_000),
                &["What was learned before", LESSON],
            ),
            turn(
                "e1",
                "fs_write",
                json!({"path": "hello.txt", "content": "hello\n"}),
                2_000,
            ),
            submit(),
        ]),
    );
    review(told.path());
    session_miner(told.path(), "miner-1");

    crate::rt().block_on(async {
        let state = state(&root, &[]);
        let s1 = learn_run(&state, first.path()).await;
        let p = until(&state, &s1, mined("miner-3")).await;
        assert_eq!(p.task("A").map(|t| t.status), Some(TaskStatus::Completed), "{p:#?}");
        let miners: Vec<(&str, RunStatus)> = p
            .agents
            .iter()
            .filter(|a| a.agent_type == air_proto::event::AgentType::ExperienceMiner)
            .map(|a| (a.id.as_str(), a.status))
            .collect();
        assert_eq!(
            miners,
            [
                ("miner-1", RunStatus::Completed),
                ("miner-2", RunStatus::Completed),
                ("miner-3", RunStatus::Completed)
            ],
            "the report, the nudge and the end, one after another"
        );
        let all = state.memory_list(None, None, None).await.unwrap();
        assert_eq!(all.len(), 3, "{all:#?}");
        let patch = all.iter().find(|e| e.kind == MemoryKind::Patch).unwrap();
        assert!(patch.awaits_user(), "a correction always waits for the user");
        let lesson = all.iter().find(|e| e.title == LESSON).unwrap().clone();
        assert_eq!((lesson.seen, lesson.status), (1, MemoryStatus::Candidate));
        assert!(!lesson.awaits_user());

        // Two more sessions propose the lesson again: the third time, the user is asked.
        for _ in 0..2 {
            let s = learn_run(&state, later.path()).await;
            let p = until(&state, &s, mined("miner-1")).await;
            assert_eq!(p.task("A").map(|t| t.status), Some(TaskStatus::Completed), "{p:#?}");
            let miner = p.agents.iter().find(|a| a.id == "miner-1").unwrap();
            assert_eq!(miner.status, RunStatus::Completed, "{miner:#?}");
        }
        let lesson = state
            .memory_show(lesson.id.clone())
            .await
            .unwrap()
            .entry;
        assert_eq!(lesson.seen, 3);
        assert!(lesson.awaits_user());
        let conn = rusqlite::Connection::open(
            air_proto::layout::ProjectPaths::new(&root).session_db(&state.list_sessions().await.unwrap()[0].id),
        )
        .unwrap();
        let asked: String = conn
            .query_row(
                "SELECT payload_json FROM events WHERE type = 'memory.candidate.created'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert!(asked.contains("\"ask_user\":true"), "{asked}");

        // The correction is shown with its diff, and written when promoted.
        let view = state.memory_show(patch.id.clone()).await.unwrap();
        let diff = view.diff.unwrap();
        assert!(
            diff.contains("-Write the word in upper case.")
                && diff.contains("+Write the word in lower case, then a newline."),
            "{diff}"
        );
        state.memory_promote(patch.id.clone()).await.unwrap();
        let text = std::fs::read_to_string(&skill).unwrap();
        assert!(
            text.starts_with("---\nname: greeting\n") && text.contains("lower case"),
            "the front matter stays: {text}"
        );

        // The lesson promoted: the next executor is told it (the recording expects it).
        let promoted = state.memory_promote(lesson.id.clone()).await.unwrap();
        assert_eq!(promoted.entry.status, MemoryStatus::Promoted);
        let s4 = learn_run(&state, told.path()).await;
        let p = until(&state, &s4, mined("miner-1")).await;
        assert_eq!(p.task("A").map(|t| t.status), Some(TaskStatus::Completed), "{p:#?}");
        let conn = rusqlite::Connection::open(
            air_proto::layout::ProjectPaths::new(&root).session_db(&s4),
        )
        .unwrap();
        let context: String = conn
            .query_row(
                "SELECT json_extract(payload_json, '$.context.included_refs.memories') FROM events
                 WHERE type = 'agent.started' AND json_extract(payload_json, '$.agent_id') = 'A-executor-1'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(context, json!([lesson.id]).to_string());
        // Counted for the Curator: the executor's context and the reviewer's.
        assert_eq!(state.memory_show(lesson.id.clone()).await.unwrap().entry.uses, 2);
        state.stop_runs().await;
    });

    // `air memory` asks airsd for the same.
    let air = |args: &[&str]| {
        let out = Command::new(bin("air"))
            .args(args)
            .current_dir(&root)
            .env("AIR_HOME", root.join("air-home"))
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "{args:?}: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        text
    };
    let listed = air(&["memory", "list", "--status", "promoted"]);
    assert!(
        listed.contains(LESSON) && listed.contains("promoted"),
        "{listed}"
    );
    std::fs::write(root.join("AIR.md"), "# Our rules\n\nBe kind.\n").unwrap();
    air(&["memory", "export", "--project-rules", "AIR.md"]);
    let exported = std::fs::read_to_string(root.join("AIR.md")).unwrap();
    assert!(
        exported.starts_with("# Our rules\n\nBe kind.\n"),
        "{exported}"
    );
    assert!(exported.contains(&format!("### {LESSON}")), "{exported}");
    assert!(
        !exported.contains("keeps greetings short"),
        "the user's own stay private"
    );
    // A second export replaces its part, nothing else.
    air(&["memory", "export", "--project-rules", "AIR.md"]);
    assert_eq!(
        std::fs::read_to_string(root.join("AIR.md")).unwrap(),
        exported
    );
    let user = air(&["memory", "list", "--kind", "user", "--json"]);
    let id = serde_json::from_str::<Value>(&user).unwrap()[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(air(&["memory", "forget", &id]).contains("forgot"));
    assert!(air(&["memory", "curate"]).contains("nothing to curate"));
    let out = Command::new(bin("air"))
        .args(["memory", "show", &id])
        .current_dir(&root)
        .env("AIR_HOME", root.join("air-home"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains(&format!("no memory {id}")));
    let _ = air(&["daemon", "stop"]);
}

/// A debugger's record starts a miner on what it found; the lesson it proposes is
/// tied to the record and, the fix being proven by the check that passed after it,
/// promoted on that evidence without asking.
#[test]
fn a_debugging_lesson_is_mined_from_the_record_and_promoted_on_its_evidence() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    air_proto::layout::init(&root, "2026-12-02T00:00:00Z").unwrap();
    let check = "grep -qx hello hello.txt";
    let rec = tempfile::tempdir().unwrap();
    let r = rec.path();
    write(
        r,
        "A-executor-1",
        recording(vec![
            turn(
                "e1",
                "fs_write",
                json!({"path": "hello.txt", "content": "helo\n"}),
                2_000,
            ),
            turn("e2", "shell_run", json!({"command": check}), 2_000),
            turn(
                "e3",
                "submit_result",
                json!({"status": "failed", "summary": "The check fails.", "verification": [{"name": check, "status": "failed"}]}),
                2_000,
            ),
        ]),
    );
    write(
        r,
        "A-debugger-1",
        recording(vec![
            turn("d1", "shell_run", json!({"command": check}), 2_000),
            turn("d2", "fs_read", json!({"path": "hello.txt"}), 2_000),
            turn(
                "d3",
                "fs_edit",
                json!({"path": "hello.txt", "old_string": "helo", "new_string": "hello"}),
                2_000,
            ),
            turn("d4", "shell_run", json!({"command": check}), 2_000),
            turn(
                "d5",
                "submit_result",
                json!({
                    "status": "completed", "summary": "It said helo; fixed.",
                    "verification": [{"name": check, "status": "passed"}],
                    "analysis": "The check failed because hello.txt says helo.",
                    "root_cause": "a misspelt greeting (helo for hello)", "fixed": true
                }),
                2_000,
            ),
        ]),
    );
    write(
        r,
        "A-executor-2",
        recording(vec![
            turn("f1", "shell_run", json!({"command": check}), 2_000),
            turn(
                "f2",
                "submit_result",
                json!({"status": "completed", "summary": "The check passes.", "verification": [{"name": check, "status": "passed"}]}),
                2_000,
            ),
        ]),
    );
    review(r);
    write(
        r,
        "miner-1",
        recording(vec![expecting(
            turn(
                "m1",
                "submit_result",
                json!({"memories": [{"kind": "project", "title": "The greeting is spelt hello", "body": "A misspelt greeting (helo) fails the check; write `hello`.", "files": ["hello.txt"]}]}),
                2_000,
            ),
            &[
                "What a debugger found",
                "Root cause: a misspelt greeting (helo for hello)",
                "verified: airsd saw a build or tests pass after the fix",
                "[#7 assistant · tool_call] shell_run",
            ],
        )]),
    );
    write(
        r,
        "miner-2",
        recording(vec![turn(
            "m2",
            "submit_result",
            json!({"memories": []}),
            2_000,
        )]),
    );
    let plan = format!("## Task A: write a greeting\n\n- model: anthropic/claude-haiku-4-5\n- verify: `{check}` [build_pass]\n- retry_budget: 2\n\nCreate hello.txt saying hello.\n");
    crate::rt().block_on(async {
        let state = state(&root, &[]);
        let record = tempfile::tempdir().unwrap();
        let session = state
            .start_run(air_proto::api::params::RunStart {
                plan: "plan.md".into(),
                plan_text: plan,
                on_ask: Some(air_proto::plan::OnAsk::Deny),
                record: Some(record.path().display().to_string()),
                replay: Some(r.display().to_string()),
                learn: Some(true),
                ..Default::default()
            })
            .await
            .unwrap()
            .session_id;
        let p = until(&state, &session, mined("miner-2")).await;
        assert_eq!(p.task("A").map(|t| t.status), Some(TaskStatus::Completed), "{p:#?}");
        for m in ["miner-1", "miner-2"] {
            let a = p.agents.iter().find(|a| a.id == m).unwrap();
            assert_eq!(a.status, RunStatus::Completed, "{a:#?}");
        }
        let all = state.memory_list(None, None, None).await.unwrap();
        assert_eq!(all.len(), 1, "{all:#?}");
        let lesson = &all[0];
        assert!(lesson.debug_record_id.is_some(), "tied to the record");
        assert!(lesson.verified);
        assert_eq!(lesson.status, MemoryStatus::Promoted, "promoted on its evidence");
        assert!(!lesson.awaits_user());
        let conn = rusqlite::Connection::open(
            air_proto::layout::ProjectPaths::new(&root).session_db(&session),
        )
        .unwrap();
        let by: String = conn
            .query_row(
                "SELECT json_extract(payload_json, '$.by') FROM events WHERE type = 'memory.promoted'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(by, "evidence");
        state.stop_runs().await;
    });
}
