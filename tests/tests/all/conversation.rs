//! The conversation with the Main Agent, end to end: the real daemon state and the
//! real `air-worker` against the loopback provider. A message is answered by a turn
//! of the Main Agent (`main:<n>`); a `simple_task` it hands on runs through executor
//! and reviewer and is summarised in the conversation.

use air_proto::api::params::ConversationStart;
use air_proto::conversation::MainState;
use air_proto::plan::PermissionMode;
use air_proto::projection::{MessageRole, Projection, TaskStatus};
use air_tests::mock_provider::{text_events, Exchange, Expect, MockProvider, Reply};
use airsd::daemon::DaemonState;
use serde_json::{json, Value};

use crate::agents::{any, call, ended, key, review, state};
use crate::asks::until;

pub(crate) fn expect(contains: &[&str], tools: &[&str]) -> Expect {
    Expect {
        contains: contains.iter().map(|s| s.to_string()).collect(),
        tools: tools.iter().map(|s| s.to_string()).collect(),
    }
}

pub(crate) fn text(t: &str) -> Reply {
    Reply::Events(text_events(t))
}

pub(crate) async fn conversation(state: &DaemonState) -> String {
    state
        .start_conversation(
            ConversationStart {
                permission_mode: Some(PermissionMode::AcceptEdits),
                ..ConversationStart::default()
            },
            Default::default(),
        )
        .await
        .unwrap()
        .id
}

/// A question about the project answered from its README: classified chat, the file
/// read, the answer (`answer`) given.
pub(crate) fn readme_question(answer: &str) -> Vec<Exchange> {
    vec![
        Exchange {
            request: None,
            expect: any(),
            reply: call(
                "m1",
                "classify",
                json!({"intent": "chat", "reason": "a question"}),
            ),
        },
        Exchange {
            request: None,
            expect: any(),
            reply: call("m2", "fs_read", json!({"path": "README.md"})),
        },
        Exchange {
            request: None,
            expect: expect(&["A greeting tool."], &[]),
            reply: text(answer),
        },
    ]
}

/// An executor's work on T1 as a model does it: the write (`write`, its request
/// expected to hold `first`), a completed result saying `summary`, the reviewer's
/// approval.
pub(crate) fn hello_work(first: Expect, write: Reply, summary: &str) -> Vec<Exchange> {
    vec![
        Exchange {
            request: None,
            expect: first,
            reply: write,
        },
        Exchange {
            request: None,
            expect: any(),
            reply: call(
                "e2",
                "submit_result",
                json!({"status": "completed", "summary": summary}),
            ),
        },
        Exchange {
            request: None,
            expect: any(),
            reply: review("approved", json!([])),
        },
    ]
}

/// The tool names one request offered the model.
fn offered(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str().map(str::to_string))
        .collect()
}

fn answered(p: &Projection, turn: &str) -> bool {
    p.task(turn).is_some_and(|t| t.status.is_terminal()) && ended(p)
}

/// A question is classified as chat, answered after reading a file, and the answer is
/// the conversation's; a second message (`/ask`, no classifier) sees the first
/// exchange. The Main Agent is offered no write and no command, and the message says
/// which client sent it.
#[test]
fn a_question_is_answered_from_the_project_and_the_next_turn_sees_it() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::write(root.join("README.md"), "A greeting tool.\n").unwrap();
    crate::rt().block_on(async {
        let mock = MockProvider::start(vec![
            Exchange {
                request: None,
                expect: expect(
                    &[
                        "# The user's message",
                        "What is this project?",
                        "Classify it first",
                    ],
                    &["classify", "delegate_task", "fs_read", "fs_grep"],
                ),
                reply: call(
                    "m1",
                    "classify",
                    json!({"intent": "chat", "reason": "a question"}),
                ),
            },
            Exchange {
                request: None,
                expect: expect(&["Noted: chat"], &[]),
                reply: call("m2", "fs_read", json!({"path": "README.md"})),
            },
            Exchange {
                request: None,
                expect: expect(&["A greeting tool."], &[]),
                reply: text("It is a greeting tool (README.md:1)."),
            },
            Exchange {
                request: None,
                expect: expect(
                    &[
                        "## The conversation so far",
                        "What is this project?",
                        "It is a greeting tool (README.md:1).",
                        "there is no classify tool this turn",
                    ],
                    &["fs_read"],
                ),
                reply: text("Nothing else: one file."),
            },
        ])
        .await;
        let state = state(&root, &key(&mock));
        let session = conversation(&state).await;
        state
            .converse(
                &session,
                "What is this project?",
                None,
                Some("air (pid 7)".into()),
            )
            .await
            .unwrap();
        let p = until(&state, &session, |p| answered(p, "main:1")).await;
        assert_eq!(
            p.task("main:1").map(|t| t.status),
            Some(TaskStatus::Completed),
            "{p:#?}"
        );
        assert_eq!(p.main_state(), MainState::Idle);
        let user = p
            .messages
            .iter()
            .find(|m| m.role == MessageRole::User)
            .unwrap();
        assert_eq!(user.client.as_deref(), Some("air (pid 7)"));
        assert!(p.messages.iter().any(|m| m.role == MessageRole::Assistant
            && m.task_id.as_deref() == Some("main:1")
            && m.preview.contains("greeting tool")));

        state
            .converse(&session, "/ask anything else?", None, None)
            .await
            .unwrap();
        let p = until(&state, &session, |p| answered(p, "main:2")).await;
        assert_eq!(
            p.task("main:2").map(|t| t.status),
            Some(TaskStatus::Completed),
            "{p:#?}"
        );
        assert!(mock.mismatches().is_empty(), "{:?}", mock.mismatches());
        let bodies: Vec<Value> = mock.received().into_iter().map(|r| r.body).collect();
        for b in &bodies {
            let tools = offered(b);
            for forbidden in ["fs_write", "fs_edit", "shell_run", "submit_result"] {
                assert!(
                    !tools.iter().any(|t| t == forbidden),
                    "{forbidden} offered: {tools:?}"
                );
            }
        }
        assert!(
            !offered(&bodies[3]).iter().any(|t| t == "classify"),
            "a named /ask is not classified"
        );
        // The conversation as clients page it: the user's messages with who sent
        // them, the turns' messages, no other agent's.
        let page = |after, before, limit| {
            state.conversation_page(air_proto::api::params::ConversationList {
                session_id: session.clone(),
                after_seq: after,
                before_seq: before,
                limit,
            })
        };
        let all = page(None, None, None).await.unwrap();
        let texts: Vec<String> = all
            .messages
            .iter()
            .map(|m| air_proto::message::text_of(&m.content))
            .collect();
        assert_eq!(all.messages.len(), 6, "{texts:?}");
        assert_eq!(texts[0], "What is this project?");
        assert_eq!(all.messages[0].client.as_deref(), Some("air (pid 7)"));
        assert_eq!(texts[5], "Nothing else: one file.");
        assert_eq!(all.next_after_seq, None);
        let first = page(None, None, Some(2)).await.unwrap();
        assert_eq!(first.messages.len(), 2);
        let rest = page(first.next_after_seq, None, Some(100)).await.unwrap();
        assert_eq!(rest.messages.len(), 4);
        let last = page(None, Some(u64::MAX), Some(1)).await.unwrap();
        assert_eq!(
            air_proto::message::text_of(&last.messages[0].content),
            "Nothing else: one file."
        );
        let bad = page(Some(1), Some(9), None).await.unwrap_err();
        assert!(bad.to_string().contains("before_seq"), "{bad}");
        state.stop_runs().await;
    });
}

/// A model that answers in plain text instead of calling the classifier has answered
/// a chat message: the turn completes with that answer, never as an error.
#[test]
fn plain_text_instead_of_the_classifier_is_a_chat_answer() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    crate::rt().block_on(async {
        let mock = MockProvider::start(vec![Exchange {
            request: None,
            expect: any(),
            reply: text("Hello! Ask me about the project."),
        }])
        .await;
        let state = state(&root, &key(&mock));
        let session = conversation(&state).await;
        state.converse(&session, "hi", None, None).await.unwrap();
        let p = until(&state, &session, |p| answered(p, "main:1")).await;
        assert_eq!(
            p.task("main:1").map(|t| t.status),
            Some(TaskStatus::Completed),
            "{p:#?}"
        );
        let conn = rusqlite::Connection::open(
            air_proto::layout::ProjectPaths::new(&root).session_db(&session),
        )
        .unwrap();
        let result: String = conn
            .query_row(
                "SELECT result_json FROM agents WHERE task_id = 'main:1'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        let result: Value = serde_json::from_str(&result).unwrap();
        assert_eq!(result["result"]["intent"], "chat", "{result}");
        assert_eq!(
            result["result"]["answer"],
            "Hello! Ask me about the project."
        );
        state.stop_runs().await;
    });
}

/// A first message given with `conversation.start` is in the session's file from its
/// creation (session, run, message: nothing between them), the calling connection
/// steers the session before its run can ask anything, and the turn answers it as if
/// it had been sent after the start. An empty one is refused by name.
#[test]
fn a_conversation_starts_with_its_first_message_in_one_file() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    crate::rt().block_on(async {
        let mock = MockProvider::start(vec![Exchange {
            request: None,
            expect: expect(&["hi there"], &[]),
            reply: text("Hello! Ask me about the project."),
        }])
        .await;
        let state = state(&root, &key(&mock));
        let by = airsd::daemon::Caller {
            conn: Some(42),
            name: Some("air (pid 7)".into()),
        };
        let start = |message: &str, steer| ConversationStart {
            permission_mode: Some(PermissionMode::AcceptEdits),
            message: Some(message.into()),
            steer: Some(steer),
            ..ConversationStart::default()
        };
        let refused = state
            .start_conversation(start("  ", true), by.clone())
            .await
            .unwrap_err()
            .to_string();
        assert!(refused.contains("message"), "{refused}");
        // Only a connection that said hello steers.
        let refused = state
            .start_conversation(start("hi there", true), by.clone())
            .await
            .unwrap_err()
            .to_string();
        assert!(
            refused.contains("steer") && refused.contains("hello"),
            "{refused}"
        );
        assert!(
            state.list_sessions().await.unwrap().is_empty(),
            "nothing was recorded"
        );
        state.register_client(
            42,
            air_proto::api::ClientInfo {
                client_id: "c42".into(),
                client: "air".into(),
                version: "0".into(),
                pid: Some(7),
                connected_at: air_proto::time::now_iso(),
                session_id: None,
                mode: air_proto::api::ClientMode::Watching,
            },
        );

        let info = state
            .start_conversation(start("hi there", true), by)
            .await
            .unwrap();
        let sent = info
            .message
            .clone()
            .expect("the first message's id and seq");
        assert_eq!(sent.seq, info.seq);
        assert_eq!(sent.seq, 3, "session.created, run.started, the message");
        let steering = state.clients();
        assert_eq!(steering.len(), 1, "{steering:?}");
        assert_eq!(steering[0].session_id.as_deref(), Some(info.id.as_str()));
        assert_eq!(steering[0].mode, air_proto::api::ClientMode::Steering);

        let p = until(&state, &info.id, |p| answered(p, "main:1")).await;
        assert_eq!(
            p.task("main:1").map(|t| t.status),
            Some(TaskStatus::Completed),
            "{p:#?}"
        );
        let user = p
            .messages
            .iter()
            .find(|m| m.role == MessageRole::User)
            .unwrap();
        assert_eq!(user.id, sent.message_id);
        assert_eq!(user.client.as_deref(), Some("air (pid 7)"));
        let conn = rusqlite::Connection::open(
            air_proto::layout::ProjectPaths::new(&root).session_db(&info.id),
        )
        .unwrap();
        let first: Vec<String> = conn
            .prepare("SELECT type FROM events ORDER BY seq LIMIT 4")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .flatten()
            .collect();
        assert_eq!(
            first,
            [
                "session.created",
                "run.started",
                "user.message.created",
                "task.created"
            ]
        );
        assert!(mock.mismatches().is_empty(), "{:?}", mock.mismatches());
        state.stop_runs().await;
    });
}

/// A first message whose run cannot start (a rules file is broken) is kept in
/// its session, whose run is ended as blocked (no later start of airsd answers it),
/// and the error names the file's problem and the session.
#[test]
fn a_first_message_whose_run_cannot_start_ends_its_run_and_names_the_session() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    crate::rt().block_on(async {
        let mock = MockProvider::start(Vec::new()).await;
        let state = state(&root, &key(&mock));
        std::fs::create_dir_all(root.join(".air/shared/rules")).unwrap();
        std::fs::write(
            root.join(".air/shared/rules/style.md"),
            "---\npaths: [\"src/[\"]\n---\nShort lines.\n",
        )
        .unwrap();
        let refused = state
            .start_conversation(
                ConversationStart {
                    message: Some("hi".into()),
                    ..ConversationStart::default()
                },
                Default::default(),
            )
            .await
            .unwrap_err()
            .to_string();
        assert!(
            refused.contains("rules") && refused.contains("bad glob"),
            "{refused}"
        );
        let sessions = state.list_sessions().await.unwrap();
        assert_eq!(sessions.len(), 1, "{sessions:?}");
        assert!(refused.contains(&sessions[0].id), "{refused}");
        let p = state.session(&sessions[0].id).await.unwrap().snapshot();
        let run = p.run.expect("its run");
        assert_eq!(
            run.status,
            air_proto::projection::RunState::Ended,
            "{run:?}"
        );
        assert_eq!(p.messages.len(), 1);
        assert!(p.tasks.is_empty(), "no turn started: {:?}", p.tasks);
        // A next message, the file still broken, is refused and recorded nowhere.
        let again = state
            .converse(&sessions[0].id, "hi again", None, None)
            .await
            .unwrap_err()
            .to_string();
        assert!(again.contains("bad glob"), "{again}");
        let p = state.session(&sessions[0].id).await.unwrap().snapshot();
        assert_eq!(p.messages.len(), 1, "{:?}", p.messages);
        assert_eq!(
            p.run.map(|r| r.status),
            Some(air_proto::projection::RunState::Ended)
        );
        assert!(mock.received().is_empty());
    });
}

/// A request for a change is classified `simple_task`; the Main Agent writes the task,
/// which runs as a plan task would (executor, then the reviewer), and a summary turn
/// tells the user how it ended.
#[test]
fn a_simple_task_runs_through_executor_and_reviewer_and_is_summarised() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    crate::rt().block_on(async {
        let task = json!({
            "title": "Write hello.txt",
            "description": "Create hello.txt at the project root saying hello.",
            "acceptance_criteria": ["hello.txt says hello"],
            "expected_files": ["hello.txt"],
            "category": "docs"
        });
        let mut exchanges = vec![
            Exchange {
                request: None,
                expect: expect(&["make hello.txt"], &["classify", "delegate_task"]),
                reply: call(
                    "m1",
                    "classify",
                    json!({"intent": "simple_task", "reason": "one file"}),
                ),
            },
            Exchange {
                request: None,
                expect: expect(&["Noted: simple_task"], &[]),
                reply: call("m2", "delegate_task", task),
            },
            Exchange {
                request: None,
                expect: expect(
                    &["Accepted: \\\"Write hello.txt\\\" becomes a task when this turn ends"],
                    &[],
                ),
                reply: text(
                    "I've asked for hello.txt to be written; I'll tell you when it's done.",
                ),
            },
        ];
        exchanges.extend(hello_work(
            expect(
                &["# Task T1: Write hello.txt", "hello.txt says hello"],
                &["fs_write", "submit_result"],
            ),
            call(
                "e1",
                "fs_write",
                json!({"path": "hello.txt", "content": "hello\n"}),
            ),
            "Wrote hello.txt saying hello.",
        ));
        exchanges.extend([Exchange {
            request: None,
            expect: expect(
                &[
                    "# Summarise for the user",
                    "T1 (completed): Write hello.txt",
                    "Wrote hello.txt saying hello.",
                    // What it is asked to tell: the files, the review.
                    "Changed: `hello.txt`",
                    "Review: approved",
                ],
                &["fs_read"],
            ),
            reply: text("Done: T1 wrote hello.txt, and the reviewer approved it."),
        }]);
        let mock = MockProvider::start(exchanges).await;
        let state = state(&root, &key(&mock));
        let session = conversation(&state).await;
        state
            .converse(&session, "please make hello.txt", None, None)
            .await
            .unwrap();
        let p = until(&state, &session, |p| answered(p, "main:2")).await;
        assert!(mock.mismatches().is_empty(), "{:?}", mock.mismatches());
        for (id, status) in [
            ("main:1", TaskStatus::Completed),
            ("T1", TaskStatus::Completed),
            ("main:2", TaskStatus::Completed),
        ] {
            assert_eq!(p.task(id).map(|t| t.status), Some(status), "{id}: {p:#?}");
        }
        assert_eq!(
            std::fs::read_to_string(root.join("hello.txt")).unwrap(),
            "hello\n"
        );
        assert_eq!(p.main_state(), MainState::Idle);
        assert!(p
            .messages
            .iter()
            .any(|m| m.task_id.as_deref() == Some("main:2") && m.preview.starts_with("Done: T1")));
        // The summary turn was offered no hand-over and no classifier.
        let bodies: Vec<Value> = mock.received().into_iter().map(|r| r.body).collect();
        let last = offered(bodies.last().unwrap());
        assert!(
            !last.iter().any(|t| t == "classify" || t == "delegate_task"),
            "{last:?}"
        );
        state.stop_runs().await;
    });
}

pub(crate) fn chat_command(
    p: &crate::daemon::Project,
    args: &[&str],
    env: &[(&str, String)],
) -> std::process::Command {
    let mut c = crate::run::real_worker(p, &[&["chat"], args].concat());
    c.envs(env.iter().map(|(k, v)| (*k, v.as_str())));
    c.stdin(std::process::Stdio::null());
    c
}

/// `air chat ARGS` with the real worker while `rt` serves the loopback provider; its
/// output, once it exited 0 (else its stderr is shown).
pub(crate) fn chat_ok(
    rt: &tokio::runtime::Runtime,
    p: &crate::daemon::Project,
    args: &[&str],
    env: &[(&str, String)],
) -> std::process::Output {
    let out = rt
        .block_on(async {
            tokio::process::Command::from(chat_command(p, args, env))
                .output()
                .await
        })
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn chat(p: &crate::daemon::Project, args: &[&str], env: &[(&str, String)]) -> std::process::Output {
    chat_command(p, args, env).output().unwrap()
}

/// `air chat -p` through the real binaries: the answer on stdout and exit 0; what
/// it recorded replays in another project with no key and no provider, to the same
/// answer.
#[test]
fn air_chat_print_mode_answers_on_stdout_and_replays_with_no_key() {
    let p = crate::daemon::Project::new();
    std::fs::write(p.root.join("README.md"), "A greeting tool.\n").unwrap();
    let rec = tempfile::tempdir().unwrap();
    let rec_dir = rec.path().join("recording");
    let rt = crate::rt();
    let mock = rt.block_on(MockProvider::start(readme_question(
        "It is a greeting tool (README.md:1).",
    )));
    let env = key(&mock);
    let env: Vec<(&str, String)> = env.iter().map(|(k, v)| (*k, v.clone())).collect();
    let rec_arg = rec_dir.display().to_string();
    let args = ["-p", "What is this project?", "--record", rec_arg.as_str()];
    // The mock provider is served by this runtime while the command runs.
    let out = chat_ok(&rt, &p, &args, &env);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "It is a greeting tool (README.md:1).\n"
    );
    assert!(mock.mismatches().is_empty(), "{:?}", mock.mismatches());
    assert!(
        out.stderr.is_empty(),
        "no progress off a terminal: {}",
        String::from_utf8_lossy(&out.stderr)
    );

    let q = crate::daemon::Project::new();
    std::fs::write(q.root.join("README.md"), "A greeting tool.\n").unwrap();
    // --json: the session's events, one JSON object a line.
    let json = chat(
        &q,
        &[
            "-p",
            "What is this project?",
            "--replay",
            &rec_arg,
            "--json",
        ],
        &[],
    );
    assert_eq!(
        json.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&json.stderr)
    );
    let events: Vec<Value> = String::from_utf8_lossy(&json.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(events.iter().any(|e| e["type"] == "user.message.created"));
    assert!(events.iter().any(|e| e["type"] == "run.completed"));
    let out = chat(
        &q,
        &["-p", "What is this project?", "--replay", &rec_arg],
        &[],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "It is a greeting tool (README.md:1).\n"
    );
}

/// Waits until the provider has been asked `n` requests.
async fn asked(mock: &MockProvider, n: usize) {
    let end = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while mock.received().len() < n {
        assert!(
            std::time::Instant::now() < end,
            "the provider got {} requests, not {n}",
            mock.received().len()
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}

fn slow(id: &str, tool: &str, input: Value, gap_ms: u64) -> Reply {
    Reply::Slow {
        events: air_tests::mock_provider::tool_use_events(id, tool, &input),
        gap_ms,
    }
}

fn hello_task() -> Value {
    json!({
        "title": "Write hello.txt",
        "description": "Create hello.txt at the project root saying hello.",
        "acceptance_criteria": ["hello.txt says hello"],
        "category": "docs"
    })
}

/// While a task it handed on runs, the user asks how it goes (answered by a turn
/// from the session's state, the task going on untouched) and says something to the
/// task itself (`@T1 …`), which its agent reads before its next model turn.
#[test]
fn while_work_runs_a_question_is_answered_and_a_word_to_the_task_reaches_its_agent() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    crate::rt().block_on(async {
        let mock = MockProvider::start(vec![
            Exchange {
                request: None,
                expect: any(),
                reply: call("m1", "delegate_task", hello_task()),
            },
            Exchange {
                request: None,
                expect: any(),
                reply: text("Started T1."),
            },
            // The executor's first answer streams slowly: the user speaks meanwhile.
            Exchange {
                request: None,
                expect: expect(&["# Task T1: Write hello.txt"], &[]),
                reply: slow(
                    "e1",
                    "fs_write",
                    json!({"path": "hello.txt", "content": "hello\n"}),
                    300,
                ),
            },
            Exchange {
                request: None,
                expect: expect(
                    &["how is it going?", "T1 (running): Write hello.txt"],
                    &["fs_read"],
                ),
                reply: text("T1 is running: the executor is writing hello.txt."),
            },
            Exchange {
                request: None,
                expect: expect(
                    &["The user says, while you work: @T1 keep it to one line"],
                    &[],
                ),
                reply: call(
                    "e2",
                    "submit_result",
                    json!({"status": "completed", "summary": "Wrote hello.txt, one line."}),
                ),
            },
            Exchange {
                request: None,
                expect: any(),
                reply: review("approved", json!([])),
            },
            Exchange {
                request: None,
                expect: expect(&["# Summarise for the user"], &[]),
                reply: text("T1 is done."),
            },
        ])
        .await;
        let state = state(&root, &key(&mock));
        let session = conversation(&state).await;
        state
            .converse(&session, "/task write hello.txt", None, None)
            .await
            .unwrap();
        asked(&mock, 3).await;
        let sent = state
            .converse(&session, "@T1 keep it to one line", None, None)
            .await
            .unwrap();
        assert!(sent.unanswered.is_none());
        state
            .converse(&session, "how is it going?", None, None)
            .await
            .unwrap();
        let during = until(&state, &session, |p| p.task("main:2").is_some()).await;
        assert_eq!(
            during.task("T1").map(|t| t.status),
            Some(TaskStatus::Running)
        );
        let p = until(&state, &session, |p| answered(p, "main:3")).await;
        assert!(mock.mismatches().is_empty(), "{:?}", mock.mismatches());
        assert_eq!(
            p.task("T1").map(|t| t.status),
            Some(TaskStatus::Completed),
            "{p:#?}"
        );
        assert_eq!(p.task("main:4"), None, "a word to a task is not a turn");
        let to_task = p
            .messages
            .iter()
            .find(|m| m.preview.starts_with("@T1"))
            .unwrap();
        assert_eq!(to_task.task_id.as_deref(), Some("T1"));
        state.stop_runs().await;
    });
}

/// "Stop": the turn records the change of mind and cancels the running task, which
/// ends cancelled before it wrote anything; the summary says so.
#[test]
fn stop_cancels_the_running_task_and_a_change_of_mind_is_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    crate::rt().block_on(async {
        let mock = MockProvider::start(vec![
            Exchange { request: None, expect: any(), reply: call("m1", "delegate_task", hello_task()) },
            Exchange { request: None, expect: any(), reply: text("Started T1.") },
            Exchange {
                request: None,
                expect: any(),
                reply: slow("e1", "fs_write", json!({"path": "hello.txt", "content": "hello\n"}), 1_000),
            },
            Exchange {
                request: None,
                expect: expect(&["stop, I want it in French"], &["cancel_task", "note_requirement_change"]),
                reply: call("m2", "note_requirement_change", json!({"change": "hello.txt in French", "task_ids": ["T1"]})),
            },
            Exchange {
                request: None,
                expect: expect(&["A task you handed on is not changed by it"], &[]),
                reply: call("m3", "cancel_task", json!({"task_id": "T1", "reason": "the user said stop"})),
            },
            Exchange { request: None, expect: expect(&["Asked: T1 is cancelled"], &[]), reply: text("Stopping T1.") },
            Exchange { request: None, expect: expect(&["T1 (cancelled)"], &[]), reply: text("T1 was stopped before it wrote anything.") },
        ])
        .await;
        let state = state(&root, &key(&mock));
        let session = conversation(&state).await;
        state.converse(&session, "/task write hello.txt", None, None).await.unwrap();
        asked(&mock, 3).await;
        state.converse(&session, "stop, I want it in French", None, None).await.unwrap();
        let p = until(&state, &session, |p| answered(p, "main:3")).await;
        assert!(mock.mismatches().is_empty(), "{:?}", mock.mismatches());
        assert_eq!(p.task("T1").map(|t| t.status), Some(TaskStatus::Cancelled), "{p:#?}");
        assert!(p.task("T1").and_then(|t| t.reason.clone()).unwrap_or_default().contains("the user asked to stop it"));
        assert!(!root.join("hello.txt").exists());
        let conn = rusqlite::Connection::open(air_proto::layout::ProjectPaths::new(&root).session_db(&session)).unwrap();
        let change: String = conn
            .query_row("SELECT json_extract(payload_json, '$.change') FROM events WHERE type = 'requirement.changed'", [], |r| r.get(0))
            .unwrap();
        assert_eq!(change, "hello.txt in French");
        state.stop_runs().await;
    });
}

/// `air chat -p` in the default permission mode: with `--yes` the task the Main
/// Agent hands on starts, runs through executor and reviewer, and both answers reach
/// stdout (exit 0); without a terminal and without `--yes` it is not started, the
/// user is told why, and the command exits 3 (the work needs a human).
#[test]
fn air_chat_confirms_work_with_yes_and_never_starts_it_unasked() {
    let rt = crate::rt();
    let turn = |summary: &str| {
        vec![
            Exchange {
                request: None,
                expect: any(),
                reply: call("m1", "delegate_task", hello_task()),
            },
            Exchange {
                request: None,
                expect: expect(&["it starts once the user confirms it"], &[]),
                reply: text("I'll have hello.txt written."),
            },
            Exchange {
                request: None,
                expect: any(),
                reply: text(summary),
            },
        ]
    };
    // With --yes.
    let p = crate::daemon::Project::new();
    let mut exchanges = turn("");
    exchanges.pop();
    exchanges.extend(hello_work(
        expect(&["# Task T1: Write hello.txt"], &[]),
        call(
            "e1",
            "fs_write",
            json!({"path": "hello.txt", "content": "hello\n"}),
        ),
        "Wrote hello.txt.",
    ));
    exchanges.extend([Exchange {
        request: None,
        expect: expect(&["T1 (completed)"], &[]),
        reply: text("Done: hello.txt says hello."),
    }]);
    let mock = rt.block_on(MockProvider::start(exchanges));
    let env: Vec<(&str, String)> = key(&mock).into_iter().collect();
    let args = ["-p", "/task write hello.txt", "--yes"];
    let out = chat_ok(&rt, &p, &args, &env);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "I'll have hello.txt written.\n\nDone: hello.txt says hello.\n"
    );
    assert!(mock.mismatches().is_empty(), "{:?}", mock.mismatches());
    assert_eq!(
        std::fs::read_to_string(p.root.join("hello.txt")).unwrap(),
        "hello\n"
    );

    // Without: nothing is started.
    let q = crate::daemon::Project::new();
    let mock = rt.block_on(MockProvider::start(turn(
        "T1 was not started: you did not confirm it.",
    )));
    let env: Vec<(&str, String)> = key(&mock).into_iter().collect();
    let args = ["-p", "/task write hello.txt"];
    let out = rt
        .block_on(async {
            tokio::process::Command::from(chat_command(&q, &args, &env))
                .output()
                .await
        })
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("not started: start task T1: Write hello.txt"),
        "{stderr}"
    );
    assert!(String::from_utf8_lossy(&out.stdout).ends_with("you did not confirm it.\n"));
    assert!(mock.mismatches().is_empty(), "{:?}", mock.mismatches());
    assert!(!q.root.join("hello.txt").exists());
}

/// `air chat -p --direct`: air's one-shot agent. An executor in the foreground lane
/// runs a command and answers in plain text, on stdout, exit 0; no Main Agent turn
/// before it, no result form, no reviewer after it.
#[test]
fn air_chat_direct_runs_a_command_and_answers_on_stdout() {
    let p = crate::daemon::Project::new();
    let rt = crate::rt();
    let mock = rt.block_on(MockProvider::start(vec![
        Exchange {
            request: None,
            expect: expect(
                &["# The user's request", "say hi with echo", "Do it now"],
                &["shell_run", "fs_write"],
            ),
            reply: call("d1", "shell_run", json!({"command": "echo hi"})),
        },
        Exchange {
            request: None,
            expect: expect(&["Exit code 0", "hi"], &[]),
            reply: text("I ran `echo hi`; it printed hi."),
        },
    ]));
    let env: Vec<(&str, String)> = key(&mock).into_iter().collect();
    let args = ["-p", "say hi with echo", "--direct"];
    let out = chat_ok(&rt, &p, &args, &env);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "I ran `echo hi`; it printed hi.\n"
    );
    assert!(mock.mismatches().is_empty(), "{:?}", mock.mismatches());
    let bodies: Vec<Value> = mock.received().into_iter().map(|r| r.body).collect();
    assert_eq!(bodies.len(), 2, "no turn before, no reviewer after");
    assert!(!offered(&bodies[0]).iter().any(|t| t == "submit_result"));
}

/// A message the model classifies `direct` goes to the direct lane after the turn.
#[test]
fn a_message_classified_direct_is_done_in_the_direct_lane() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    crate::rt().block_on(async {
        let mock = MockProvider::start(vec![
            Exchange {
                request: None,
                expect: any(),
                reply: call(
                    "m1",
                    "classify",
                    json!({"intent": "direct", "reason": "small, now"}),
                ),
            },
            Exchange {
                request: None,
                expect: expect(&["Noted: direct"], &[]),
                reply: text("On it."),
            },
            Exchange {
                request: None,
                expect: expect(
                    &[
                        "# The user's request",
                        "write hi.txt saying hi",
                        "## The conversation so far",
                        "On it.",
                    ],
                    &[],
                ),
                reply: call(
                    "d1",
                    "fs_write",
                    json!({"path": "hi.txt", "content": "hi\n"}),
                ),
            },
            Exchange {
                request: None,
                expect: any(),
                reply: text("Wrote hi.txt."),
            },
            // `/review`: the reviewer looks at the direct lane's result; the Main
            // Agent says what it found.
            Exchange {
                request: None,
                expect: expect(
                    &["# Task review:1: Review direct:1", "Wrote hi.txt."],
                    &["submit_result"],
                ),
                reply: review("approved", json!([])),
            },
            Exchange {
                request: None,
                expect: expect(&["# Summarise for the user", "review:1 (completed)"], &[]),
                reply: text("The reviewer approved the change to hi.txt."),
            },
        ])
        .await;
        let state = state(&root, &key(&mock));
        let session = conversation(&state).await;
        state
            .converse(&session, "write hi.txt saying hi", None, None)
            .await
            .unwrap();
        let p = until(&state, &session, |p| answered(p, "direct:1")).await;
        assert!(mock.mismatches().is_empty(), "{:?}", mock.mismatches());
        assert_eq!(
            p.task("direct:1").map(|t| t.status),
            Some(TaskStatus::Completed),
            "{p:#?}"
        );
        assert_eq!(
            std::fs::read_to_string(root.join("hi.txt")).unwrap(),
            "hi\n"
        );
        assert_eq!(
            p.task("main:2"),
            None,
            "the direct lane's answer is its own summary"
        );
        state
            .converse(&session, "/review", None, None)
            .await
            .unwrap();
        let p = until(&state, &session, |p| answered(p, "main:2")).await;
        assert!(mock.mismatches().is_empty(), "{:?}", mock.mismatches());
        assert_eq!(
            p.task("review:1").map(|t| t.status),
            Some(TaskStatus::Completed),
            "{p:#?}"
        );
        state.stop_runs().await;
    });
}

/// A model that calls a write or a command it was not offered (the Main Agent's
/// tools are read-only) is refused by airsd, which records each attempt; nothing is
/// written, and the refusal names the tool as the model does.
#[test]
fn the_main_agents_writes_and_commands_are_refused_by_airsd_and_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    crate::rt().block_on(async {
        let mock = MockProvider::start(vec![
            Exchange {
                request: None,
                expect: any(),
                reply: call("m1", "fs_write", json!({"path": "x.txt", "content": "x"})),
            },
            Exchange {
                request: None,
                expect: expect(&["`fs_write` is not allowed for the main agent"], &[]),
                reply: call("m2", "shell_run", json!({"command": "touch y.txt"})),
            },
            Exchange {
                request: None,
                expect: expect(&["`shell_run` is not allowed for the main agent"], &[]),
                reply: text("I cannot change files myself; I can hand it on as a task."),
            },
        ])
        .await;
        let state = state(&root, &key(&mock));
        let session = conversation(&state).await;
        state
            .converse(&session, "write x.txt", None, None)
            .await
            .unwrap();
        let p = until(&state, &session, |p| answered(p, "main:1")).await;
        assert!(mock.mismatches().is_empty(), "{:?}", mock.mismatches());
        assert!(!root.join("x.txt").exists() && !root.join("y.txt").exists());
        let conn = rusqlite::Connection::open(
            air_proto::layout::ProjectPaths::new(&root).session_db(&session),
        )
        .unwrap();
        let mut stmt = conn
            .prepare(
                "SELECT tool, status, error FROM tool_runs WHERE task_id = 'main:1' ORDER BY seq",
            )
            .unwrap();
        let runs: Vec<(String, String, String)> = stmt
            .query_map([], |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get::<_, Option<String>>(2)?.unwrap_or_default(),
                ))
            })
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(runs.len(), 2, "{runs:?}");
        for ((tool, status, error), wanted) in runs.iter().zip(["fs.write", "shell.run"]) {
            assert_eq!((tool.as_str(), status.as_str()), (wanted, "failed"));
            assert!(error.contains("not allowed for the main agent"), "{error}");
        }
        assert_eq!(
            p.task("main:1").map(|t| t.status),
            Some(TaskStatus::Completed)
        );
        state.stop_runs().await;
    });
}

/// The conversation is durable: after the daemon stops and a new one starts on the
/// project, the next message's turn sees the whole exchange before it.
#[test]
fn the_conversation_survives_a_restart_of_the_daemon() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::write(root.join("README.md"), "A greeting tool.\n").unwrap();
    crate::rt().block_on(async {
        let mut exchanges = readme_question("It is a greeting tool (README.md:1).");
        exchanges.push(Exchange {
            request: None,
            expect: expect(
                &[
                    "## The conversation so far",
                    "What is this project?",
                    "It is a greeting tool (README.md:1).",
                ],
                &[],
            ),
            reply: text("Still a greeting tool."),
        });
        let mock = MockProvider::start(exchanges).await;
        let first = state(&root, &key(&mock));
        let session = conversation(&first).await;
        first
            .converse(&session, "What is this project?", None, None)
            .await
            .unwrap();
        until(&first, &session, |p| answered(p, "main:1")).await;
        first.stop_runs().await;
        drop(first);
        let second = state(&root, &key(&mock));
        second
            .converse(&session, "/ask still?", None, None)
            .await
            .unwrap();
        let p = until(&second, &session, |p| answered(p, "main:2")).await;
        assert!(mock.mismatches().is_empty(), "{:?}", mock.mismatches());
        assert_eq!(
            p.task("main:2").map(|t| t.status),
            Some(TaskStatus::Completed),
            "{p:#?}"
        );
        second.stop_runs().await;
    });
}
