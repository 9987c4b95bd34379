//! Compaction with the real `air-worker` and airsd, replayed from recordings (each
//! agent its own, so nothing depends on which of two agents asks first): an executor
//! whose model has a small window reads files until its conversation passes the
//! threshold twice; each time airsd starts a Compactor on a snapshot of its messages
//! while it goes on, and its next request holds the summary, the marker and the
//! messages after the snapshot — smaller than the threshold. The originals stay in the
//! session and `context_recall` reads them back; the task finishes.

use air_proto::layout::ProjectPaths;
use air_proto::projection::TaskStatus;
use serde_json::{json, Value};

use crate::agents::{ended, state};
use crate::asks::until;

/// The model's window: 24,000 tokens, 4,096 out; compaction past
/// (24,000 − 4,096 − 2,048) × 0.7 = 12,514.
const THRESHOLD: u64 = 12_514;

/// One recorded turn: the model calls `name` with `input`, having read `input_tokens`.
pub(crate) fn turn(id: &str, name: &str, input: Value, input_tokens: u64) -> Value {
    json!({"reply": {"events": [
        {"type": "message_start", "message": {"id": format!("msg_{id}"), "type": "message", "role": "assistant", "content": [], "model": "tiny-coder", "stop_reason": null, "usage": {"input_tokens": input_tokens, "output_tokens": 1}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": input.to_string()}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 30}},
        {"type": "message_stop"}
    ]}})
}

/// `turn` whose request must contain each of `contains`.
pub(crate) fn expecting(mut t: Value, contains: &[&str]) -> Value {
    t["expect"] = json!({"contains": contains});
    t
}

pub(crate) fn recording(exchanges: Vec<Value>) -> Value {
    let mut exchanges = exchanges;
    // The model a replay uses is the one its first request names.
    exchanges[0]["request"] = json!({"model": "tiny-coder"});
    json!({"provider": "anthropic", "exchanges": exchanges})
}

fn start_replayed<'a>(
    state: &'a airsd::daemon::DaemonState,
    plan: &str,
    replay: &std::path::Path,
    record: &std::path::Path,
) -> impl std::future::Future<Output = String> + 'a {
    let (plan, replay, record) = (
        plan.to_string(),
        replay.display().to_string(),
        record.display().to_string(),
    );
    async move {
        state
            .start_run(air_proto::api::params::RunStart {
                plan: "plan.md".into(),
                plan_text: plan,
                title: None,
                concurrency: None,
                on_ask: Some(air_proto::plan::OnAsk::Deny),
                permission_mode: None,
                max_cost: None,
                max_tokens: None,
                max_time_ms: None,
                model: None,
                record: Some(record),
                replay: Some(replay),
                learn: None,
                worktrees: None,
                land: None,
                env: None,
            })
            .await
            .unwrap()
            .session_id
    }
}

/// A project with big1.txt … big5.txt and a model of a 24,000-token window.
fn project(root: &std::path::Path) {
    for (n, secret) in [
        (1, "AMBER"),
        (2, "BASALT"),
        (3, "CEDAR"),
        (4, "DUNE"),
        (5, "EMBER"),
    ] {
        std::fs::write(root.join(format!("big{n}.txt")), big(secret)).unwrap();
    }
    let home = root.join("home").join(".air");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(
        home.join("models.yaml"),
        "capabilities:\n  tiny-coder: { context_window: 24000, max_output: 4096 }\n",
    )
    .unwrap();
}

fn read(id: &str, n: u32, tokens: u64) -> Value {
    turn(
        id,
        "fs_read",
        json!({"path": format!("big{n}.txt")}),
        tokens,
    )
}

const PLAN: &str = "## Task A: name the secrets\n\n- model: anthropic/tiny-coder\n\nRead big1.txt to big5.txt and write answer.txt with the secrets of big1, big4 and big5.\n";

/// A file of about 6,000 tokens whose one line that matters is `secret`.
fn big(secret: &str) -> String {
    let filler = "lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod\n";
    let mut s = String::new();
    for i in 0..340 {
        s.push_str(&format!("{i:03} {filler}"));
        if i == 170 {
            s.push_str(&format!("the secret is {secret}\n"));
        }
    }
    s
}

#[test]
fn a_task_that_needs_two_compactions_finishes_and_reads_an_original_back() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    project(&root);
    let recordings = tempfile::tempdir().unwrap();
    let rec = recordings.path().to_path_buf();
    let rerecorded = tempfile::tempdir().unwrap();
    let write = |name: &str, v: Value| {
        std::fs::write(rec.join(format!("{name}.json")), v.to_string()).unwrap()
    };
    write(
        "A-executor-1",
        recording(vec![
            read("t1", 1, 4_000),
            read("t2", 2, 10_000),
            // Past the threshold: a Compactor starts on messages 1–4 (both reads).
            read("t3", 3, 16_000),
            turn("t4", "shell_run", json!({"command": "sleep 3"}), 16_500),
            // The first compaction is in: the secrets of big1 and big2 are in the summary.
            expecting(
                read("t5", 4, 11_000),
                &["Compaction marker: messages 1–4", "big1 holds AMBER"],
            ),
            // Past it again: the second covers messages 1–10 (the summary among them).
            read("t6", 5, 17_000),
            turn("t7", "shell_run", json!({"command": "sleep 3"}), 17_500),
            expecting(
                turn("t8", "context_recall", json!({"from": 2}), 9_000),
                &["Compaction marker: messages 1–10", "big4 holds DUNE"],
            ),
            // What context_recall read back: big1 as the model first read it.
            expecting(
                turn(
                    "t9",
                    "fs_write",
                    json!({"path": "answer.txt", "content": "AMBER DUNE EMBER\n"}),
                    12_000,
                ),
                &["the secret is AMBER"],
            ),
            turn(
                "t10",
                "submit_result",
                json!({"status": "completed", "summary": "answer.txt names the secrets of big1, big4 and big5."}),
                12_200,
            ),
        ]),
    );
    write(
        "A-compactor-1",
        recording(vec![expecting(
            turn(
                "c1",
                "submit_result",
                json!({"summary": "Read big1.txt and big2.txt: big1 holds AMBER (line 86), big2 holds BASALT. Left: read big3–big5, write answer.txt."}),
                7_000,
            ),
            &[
                "Summarise messages 1–4",
                "the secret is AMBER",
                "the secret is BASALT",
                "[#1 assistant · tool_call] fs_read",
                "[#2 user · tool_output]",
            ],
        )]),
    );
    write(
        "A-compactor-2",
        recording(vec![expecting(
            turn(
                "c2",
                "submit_result",
                json!({"summary": "big1 holds AMBER, big2 BASALT, big3 CEDAR, big4 holds DUNE. Left: read big5, write answer.txt with the secrets of big1, big4 and big5."}),
                8_000,
            ),
            &[
                "Summarise messages 1–10",
                "[#5 assistant · tool_call]",
                "The summary of the messages before these",
                "big1 holds AMBER",
                "the secret is DUNE",
            ],
        )]),
    );
    write(
        "A-reviewer-1",
        recording(vec![turn(
            "r1",
            "submit_result",
            json!({"decision": "approved", "summary": "answer.txt is right", "findings": []}),
            3_000,
        )]),
    );
    crate::rt().block_on(async {
        let state = state(&root, &[]);
        let session = start_replayed(&state, PLAN, &rec, rerecorded.path()).await;
        let p = until(&state, &session, ended).await;
        assert_eq!(
            p.task("A").map(|t| t.status),
            Some(TaskStatus::Completed),
            "{p:#?}"
        );
        assert_eq!(
            std::fs::read_to_string(root.join("answer.txt")).unwrap(),
            "AMBER DUNE EMBER\n"
        );

        let conn =
            rusqlite::Connection::open(ProjectPaths::new(&root).session_db(&session)).unwrap();
        let of = |kind: &str| -> Vec<Value> {
            let mut q = conn
                .prepare("SELECT payload_json FROM events WHERE type = ?1 ORDER BY seq")
                .unwrap();
            let rows = q.query_map([kind], |r| r.get::<_, String>(0)).unwrap();
            rows.map(|r| serde_json::from_str(&r.unwrap()).unwrap())
                .collect()
        };
        let completed = of("context.compaction.completed");
        assert_eq!(completed.len(), 2, "{completed:?}");
        assert_eq!(completed[0]["messages"], 4);
        assert_eq!(completed[1]["messages"], 10);
        assert_eq!(completed[1]["compactor_id"], "A-compactor-2");
        for c in &completed {
            assert!(
                c["tokens_after"].as_u64() < c["tokens_before"].as_u64(),
                "{c}"
            );
        }
        let summaries = of("summary.created");
        assert_eq!(summaries.len(), 2);
        assert!(summaries[1]["text"]
            .as_str()
            .unwrap()
            .contains("big4 holds DUNE"));
        // Nothing is deleted: every message the executor's loop gave its model is in
        // the session, the big files' text with them.
        let originals = of("context.message.created");
        assert!(
            originals
                .iter()
                .filter(|m| m["agent_id"] == "A-executor-1")
                .count()
                >= 9
        );
        assert!(originals
            .iter()
            .any(|m| m["content"].to_string().contains("the secret is AMBER")));

        // The requests after each compaction are smaller than the threshold, and
        // hold the summary, not the messages it stands for.
        let sent: Value = serde_json::from_str(
            &std::fs::read_to_string(rerecorded.path().join("A-executor-1.json")).unwrap(),
        )
        .unwrap();
        let bytes: Vec<u64> = sent["request_bytes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b.as_u64().unwrap())
            .collect();
        assert_eq!(bytes.len(), 10);
        for after in [4, 7] {
            let request = sent["exchanges"][after]["request"].to_string();
            assert!(request.contains("Compaction marker"), "request {after}");
            assert!(
                bytes[after] / 4 < THRESHOLD,
                "request {after}: {} bytes",
                bytes[after]
            );
        }
        assert!(!sent["exchanges"][4]["request"]
            .to_string()
            .contains("the secret is BASALT"));
        assert!(
            bytes[2] > bytes[4],
            "the third request, before compaction, was the larger: {bytes:?}"
        );
        state.stop_runs().await;
    });
}

/// `t` answered slowly (a second before each event).
fn slow(mut t: Value) -> Value {
    let events = t["reply"]["events"].take();
    t["reply"] = json!({"slow": {"events": events, "gap_ms": 1_000}});
    t
}

/// airsd goes away while a Compactor works: the Compactor is recorded as interrupted
/// when the run is picked up again, no summary is made of half a job, every message
/// the executor's loop gave its model is still in the session, and the task finishes
/// with a new executor.
#[test]
fn a_crash_during_compaction_keeps_the_originals_and_the_run_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    project(&root);
    let recordings = tempfile::tempdir().unwrap();
    let rec = recordings.path().to_path_buf();
    let rerecorded = tempfile::tempdir().unwrap();
    let write = |name: &str, v: Value| {
        std::fs::write(rec.join(format!("{name}.json")), v.to_string()).unwrap()
    };
    write(
        "A-executor-1",
        recording(vec![
            read("t1", 1, 4_000),
            read("t2", 2, 10_000),
            read("t3", 3, 16_000),
            // The model is slow too (a tool still running would hold the session
            // open in this process, as no crash would).
            slow(turn("t4", "shell_run", json!({"command": "true"}), 16_500)),
        ]),
    );
    // The Compactor's answer is slow: airsd goes away before it comes.
    let mut slow = turn(
        "c1",
        "submit_result",
        json!({"summary": "never used"}),
        7_000,
    );
    let events = slow["reply"]["events"].take();
    slow["reply"] = json!({"slow": {"events": events, "gap_ms": 3_000}});
    write("A-compactor-1", recording(vec![slow]));
    write(
        "A-executor-2",
        recording(vec![
            turn(
                "u1",
                "fs_write",
                json!({"path": "answer.txt", "content": "AMBER DUNE EMBER\n"}),
                3_000,
            ),
            turn(
                "u2",
                "submit_result",
                json!({"status": "completed", "summary": "Wrote answer.txt."}),
                3_100,
            ),
        ]),
    );
    write(
        "A-reviewer-1",
        recording(vec![turn(
            "r1",
            "submit_result",
            json!({"decision": "approved", "summary": "right", "findings": []}),
            3_000,
        )]),
    );
    crate::rt().block_on(async {
        let state = state(&root, &[]);
        let session = start_replayed(&state, PLAN, &rec, rerecorded.path()).await;
        let db = ProjectPaths::new(&root).session_db(&session);
        let count = |q: &str| {
            let conn = rusqlite::Connection::open(&db).unwrap();
            conn.query_row(q, [], |r| r.get::<_, i64>(0)).unwrap()
        };
        let t0 = std::time::Instant::now();
        while count("SELECT COUNT(*) FROM agents WHERE id = 'A-compactor-1' AND status = 'running'") == 0 {
            assert!(t0.elapsed() < std::time::Duration::from_secs(20), "no Compactor started");
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        // airsd goes away: its workers die, its session's writes end.
        state.stop_runs().await;
        state.close_sessions().await;
        drop(state);

        let state = crate::agents::state(&root, &[]);
        state.recover_runs().await;
        let p = until(&state, &session, ended).await;
        assert_eq!(p.task("A").map(|t| t.status), Some(TaskStatus::Completed), "{p:#?}");
        let conn = rusqlite::Connection::open(&db).unwrap();
        let reason: String = conn
            .query_row("SELECT reason FROM agents WHERE id = 'A-compactor-1'", [], |r| r.get(0))
            .unwrap();
        assert!(reason.starts_with("airsd stopped while the Compactor ran"), "{reason}");
        assert_eq!(count("SELECT COUNT(*) FROM events WHERE type = 'summary.created'"), 0);
        let originals: Vec<String> = {
            let mut q = conn
                .prepare("SELECT payload_json FROM events WHERE type = 'context.message.created' AND agent_id = 'A-executor-1' ORDER BY seq")
                .unwrap();
            let rows = q.query_map([], |r| r.get::<_, String>(0)).unwrap();
            rows.map(Result::unwrap).collect()
        };
        // The answers of the reads the model had been given (the third is given with
        // the next request, which may not have gone out before airsd went away).
        assert!((2..=3).contains(&originals.len()), "{}", originals.len());
        for (n, secret) in [(0, "AMBER"), (1, "BASALT")] {
            assert!(originals[n].contains(&format!("the secret is {secret}")), "{n}");
        }
        state.stop_runs().await;
    });
}
