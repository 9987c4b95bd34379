//! The contract a model meets, through the real `air-worker` against the loopback
//! provider: what it reads (tool results as text, tool names as it knows them, the
//! diff of new files for the reviewer), what it may say (no `cancelled`, no changed
//! files of its own), and what airsd takes from its records instead.

use std::process::Command;

use air_proto::layout::ProjectPaths;
use air_proto::projection::TaskStatus;
use air_tests::git;
use air_tests::mock_provider::{Exchange, Expect, MockProvider};
use serde_json::{json, Value};

use crate::agents::{any, call, ended, key, review, start, state};
use crate::asks::until;

/// The first `agent.completed` of task A's executor, as recorded.
fn executor_result(root: &std::path::Path, session: &str) -> Value {
    let conn = rusqlite::Connection::open(ProjectPaths::new(root).session_db(session)).unwrap();
    let payload: String = conn
        .query_row(
            "SELECT payload_json FROM events WHERE type = 'agent.completed' AND payload_json LIKE '%A-executor-1%' ORDER BY seq LIMIT 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    serde_json::from_str(&payload).unwrap()
}

/// The text of every tool result the model was sent.
fn tool_results(bodies: &[Value]) -> Vec<String> {
    let mut out = Vec::new();
    for b in bodies {
        for m in b["messages"].as_array().into_iter().flatten() {
            for c in m["content"].as_array().into_iter().flatten() {
                if c["type"] == "tool_result" {
                    out.push(c["content"].as_str().unwrap_or_default().to_string());
                }
            }
        }
    }
    out
}

/// airsd's own names of its tools, which the model never sees.
fn internal_names(text: &str) -> Vec<&'static str> {
    [
        "fs.read",
        "fs.write",
        "fs.edit",
        "fs.multi_edit",
        "fs.glob",
        "fs.grep",
        "git.status",
        "git.diff",
        "shell.run",
        "shell.output",
    ]
    .into_iter()
    .filter(|n| text.contains(n))
    .collect()
}

const PLAN: &str = "---\npermission_mode: accept_edits\n---\n## Task A: write a greeting\n\n- model: anthropic/claude-haiku-4-5\n\nCreate hello.txt saying hello.\n\nAcceptance criteria:\n- hello.txt says hello\n";

/// The executor writes one file with fs_write and makes another with a command whose
/// pipeline fails at its start: the command's answer is text starting with its exit
/// code (1, by pipefail) and naming the file it made; the reviewer's first request
/// holds the diff of both new files; the result's changed files are airsd's record,
/// not the model's word; every refusal and answer names tools as the model knows them.
#[test]
fn new_files_reach_the_reviewer_and_the_changed_files_are_airsds_record() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::write(root.join("README.md"), "A greeting.\n").unwrap();
    git(&root, &["init", "-q"]);
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-qm", "start"]);
    crate::rt().block_on(async {
        let x = |reply| Exchange { request: None, expect: any(), reply };
        let mock = MockProvider::start(vec![
            // An edit before any read is refused, naming fs_read.
            x(call("e0", "fs_edit", json!({"path": "README.md", "old_string": "A", "new_string": "One"}))),
            x(call("e1", "fs_write", json!({"path": "hello.txt", "content": "hello\n"}))),
            Exchange {
                request: None,
                expect: Expect { contains: vec!["Created hello.txt (6 bytes).".into()], tools: vec![] },
                reply: call("e2", "shell_run", json!({"command": "printf 'made\\n' > made.txt; false | true"})),
            },
            Exchange {
                request: None,
                expect: Expect { contains: vec!["Exit code 1 after".into(), "files this command changed: made.txt".into()], tools: vec![] },
                reply: call("e3", "submit_result", json!({"status": "completed", "summary": "Wrote hello.txt; made.txt came from a command."})),
            },
            Exchange {
                request: None,
                expect: Expect {
                    contains: vec![
                        "## The diff of the changes".into(),
                        "+++ b/hello.txt".into(),
                        "+hello".into(),
                        "+++ b/made.txt".into(),
                    ],
                    tools: vec!["git_diff".into(), "fs_read".into(), "submit_result".into()],
                },
                reply: review("approved", json!([])),
            },
        ])
        .await;
        let state = state(&root, &key(&mock));
        let session = start(&state, PLAN).await;
        let p = until(&state, &session, ended).await;
        assert!(mock.mismatches().is_empty(), "{:?}", mock.mismatches());
        assert_eq!(p.task("A").map(|t| t.status), Some(TaskStatus::Completed), "{p:#?}");
        let result = executor_result(&root, &session);
        assert_eq!(result["result"]["changed_files"], json!(["hello.txt", "made.txt"]), "{result}");
        let bodies: Vec<Value> = mock.received().into_iter().map(|r| r.body).collect();
        let results = tool_results(&bodies);
        let refused = results
            .iter()
            .find(|t| t.contains("README.md"))
            .cloned()
            .unwrap_or_default();
        assert!(refused.contains("read the file with fs_read before changing it"), "{refused}");
        for t in &results {
            assert!(internal_names(t).is_empty(), "a tool result names airsd's tools: {t}");
            assert!(!t.starts_with('{'), "a tool result went out as JSON: {t}");
        }
        state.stop_runs().await;
    });
}

/// No form an agent fills offers `cancelled` or asks for changed files: every
/// `submit_result` the worker offered in this run, and every tool schema.
#[test]
fn no_agent_is_offered_cancelled_or_asked_for_its_changed_files() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    crate::rt().block_on(async {
        let x = |reply| Exchange {
            request: None,
            expect: any(),
            reply,
        };
        let mock = MockProvider::start(vec![
            x(call(
                "e1",
                "fs_write",
                json!({"path": "hello.txt", "content": "hello\n"}),
            )),
            x(call(
                "e2",
                "submit_result",
                json!({"status": "cancelled", "summary": "Stopping."}),
            )),
            Exchange {
                request: None,
                expect: Expect {
                    contains: vec!["submit_result at `status`".into()],
                    tools: vec![],
                },
                reply: call(
                    "e3",
                    "submit_result",
                    json!({"status": "completed", "summary": "Wrote hello.txt"}),
                ),
            },
            x(review("approved", json!([]))),
        ])
        .await;
        let state = state(&root, &key(&mock));
        let session = start(&state, PLAN).await;
        let p = until(&state, &session, ended).await;
        assert!(mock.mismatches().is_empty(), "{:?}", mock.mismatches());
        assert_eq!(
            p.task("A").map(|t| t.status),
            Some(TaskStatus::Completed),
            "{p:#?}"
        );
        for r in mock.received() {
            for t in r.body["tools"].as_array().into_iter().flatten() {
                let schema = t["input_schema"].to_string();
                assert!(!schema.contains("cancelled"), "{}: {schema}", t["name"]);
                assert!(!schema.contains("changed_files"), "{}: {schema}", t["name"]);
            }
        }
        state.stop_runs().await;
    });
}

/// A worker that lists a file its calls never changed: the result holds airsd's
/// record of what changed, and the claim is kept as a risk.
#[test]
fn a_changed_file_the_record_does_not_show_is_reported_not_trusted() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    crate::rt().block_on(async {
        let state = crate::asks::state(&root, std::time::Duration::from_secs(5));
        let plan = "## Task A: claims more\n\nair-test: executor=overclaim\n";
        let session =
            crate::asks::start_plan(&state, plan, air_proto::plan::OnAsk::Deny, None).await;
        let p = until(&state, &session, ended).await;
        assert_eq!(
            p.task("A").map(|t| t.status),
            Some(TaskStatus::Completed),
            "{p:#?}"
        );
        let result = executor_result(&root, &session);
        assert_eq!(
            result["result"]["changed_files"],
            json!(["out/A.txt"]),
            "{result}"
        );
        let risks = result["result"]["risks"].to_string();
        assert!(
            risks.contains("src/never-written.rs") && risks.contains("no record"),
            "{risks}"
        );
        state.stop_runs().await;
    });
}

/// Every agent's first request in the shipped examples fits in 16 KiB, the Main
/// Agent's in 12 KiB (each is said),
/// and nothing air sends names its own design documents (decision ids, seed
/// sections): the model reads what it needs, in its own terms.
#[test]
fn the_shipped_first_requests_are_small_and_name_no_internal_reference() {
    let examples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let internal = regex::Regex::new(r"\bD-\d{3}\b|§|\bseed \d{3}\b|\bbaseline §").unwrap();
    let mut seen = 0;
    let dirs = std::fs::read_dir(&examples)
        .unwrap()
        .flatten()
        .flat_map(|e| ["recording", "conversation", "planning"].map(|d| e.path().join(d)));
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut files: Vec<_> = entries.flatten().map(|e| e.path()).collect();
        files.sort();
        for f in files
            .iter()
            .filter(|f| f.extension().is_some_and(|x| x == "json"))
            .filter(|f| {
                f.file_name()
                    .is_some_and(|n| n != air_proto::ipc::RECORDING_MANIFEST)
            })
        {
            let r: Value = serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap();
            let name = f.file_name().unwrap().to_string_lossy().into_owned();
            let first = r["request_bytes"][0]
                .as_u64()
                .unwrap_or_else(|| panic!("{name}: no request_bytes; re-record it"));
            println!("{name}: first request {first} bytes");
            // The Main Agent's answers the user: its first request is smaller still.
            // The agents that work a task (executor, debugger) carry its tools for
            // long work too (servers in the background, a todo list): 1 KiB more.
            let limit = if name.starts_with("main_") {
                12 * 1024
            } else if name.contains("-executor-") || name.contains("-debugger-") {
                crate::agents::WORKER_FIRST_REQUEST
            } else {
                16 * 1024
            };
            assert!(
                first <= limit,
                "{name}: the first request is {first} bytes, over {limit}"
            );
            for (i, x) in r["exchanges"].as_array().unwrap().iter().enumerate() {
                let text = x["request"].to_string();
                let found: Vec<&str> = internal.find_iter(&text).map(|m| m.as_str()).collect();
                assert!(
                    found.is_empty(),
                    "{name}: request {} names {found:?}",
                    i + 1
                );
            }
            seen += 1;
        }
    }
    assert!(
        seen >= 13,
        "only {seen} recordings found under {}",
        examples.display()
    );
}

/// Copies a directory tree (what an example ships, its recording aside).
fn copy_tree(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let (src, dst) = (e.path(), to.join(e.file_name()));
        if e.file_name() == "recording" {
            continue;
        }
        if src.is_dir() {
            copy_tree(&src, &dst);
        } else {
            std::fs::copy(&src, &dst).unwrap();
        }
    }
}

/// The real thing, at the size a user tries first: each shipped example's plan
/// carried out by a live provider (whichever key the environment has), every task
/// completed, and the example's own tests passing afterwards. Ignored — reported as
/// skipped — unless `tests/run` finds a key and runs the ignored tests.
#[test]
#[ignore = "talks to a live LLM provider: tests/run runs it when ANTHROPIC_API_KEY, OPENAI_API_KEY or OPENROUTER_API_KEY is set"]
fn live_provider_carries_out_the_shipped_example_plans() {
    let env = crate::agents::live_env();
    let examples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let mut ran = 0;
    for example in std::fs::read_dir(&examples).unwrap().flatten() {
        let plan = example.path().join("plan.md");
        if !plan.is_file() {
            continue;
        }
        let name = example.file_name().to_string_lossy().into_owned();
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap().join(&name);
        copy_tree(&example.path(), &root);
        git(&root, &["init", "-q"]);
        git(&root, &["add", "-A"]);
        git(&root, &["commit", "-qm", &name]);
        let text = std::fs::read_to_string(&plan).unwrap();
        crate::rt().block_on(async {
            let state = state(&root, &env);
            let session =
                crate::asks::start_plan(&state, &text, air_proto::plan::OnAsk::Deny, None).await;
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(1800);
            let p = loop {
                let p = state.session(&session).await.unwrap().snapshot();
                if ended(&p) {
                    break p;
                }
                assert!(
                    std::time::Instant::now() < deadline,
                    "{name}: the live run took over 30 minutes: {p:#?}"
                );
                tokio::time::sleep(std::time::Duration::from_secs(1)).await;
            };
            state.stop_runs().await;
            let unfinished: Vec<String> = p
                .tasks
                .iter()
                .filter(|t| t.status != TaskStatus::Completed)
                .map(|t| {
                    format!(
                        "{} {:?}: {}",
                        t.id,
                        t.status,
                        t.reason.clone().unwrap_or_default()
                    )
                })
                .collect();
            assert!(unfinished.is_empty(), "{name}: {unfinished:#?}");
        });
        // Every task's checks pass on the finished project, run afresh.
        let compiled = air_proto::plan::compile("plan.md", &text).unwrap();
        let mut checks: Vec<String> = compiled
            .graph
            .tasks
            .iter()
            .flat_map(|t| t.verification.commands.clone().unwrap_or_default())
            .collect();
        checks.dedup();
        for check in checks {
            let out = Command::new("bash")
                .args(["-o", "pipefail", "-c", &check])
                .current_dir(&root)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{name}: `{check}` fails after the run: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        ran += 1;
    }
    assert!(ran > 0, "no example plan under {}", examples.display());
}
