//! Planning from a requirement, end to end: the real daemon state and the real
//! `air-worker` against the loopback provider. The Architecture Designer discusses the
//! requirement (two questions answered, requirements agreed), proposes a plan (one
//! with errors sent back and fixed), the user asks for a change, then confirms;
//! airsd writes the plan and the run carries it out to a summary in the
//! conversation.

use air_proto::api::params::{ConversationStart, PlanningAnswer, PlanningDecide};
use air_proto::plan::PermissionMode;
use air_proto::planning::{PlanDecision, PlanningPhase};
use air_proto::projection::{Projection, TaskStatus};
use air_tests::mock_provider::{Exchange, MockProvider, Reply};
use airsd::daemon::DaemonState;
use serde_json::{json, Value};

use crate::agents::{call, ended, key, state};
use crate::asks::until;
use crate::conversation::{expect, text};

/// A plan of one task that writes hello.txt (`extra` added to its description).
pub(crate) fn hello_plan(extra: &str) -> String {
    format!(
        "# Hello\n\nA greeting file.\n\n## Task T1: Write hello.txt\n\n- category: docs\n- expected_files: `hello.txt`\n\nWrite `hello.txt` saying hello.{extra}\n\nAcceptance criteria:\n- hello.txt says hello\n"
    )
}

pub(crate) fn proposal(plan: &str) -> Value {
    json!({
        "summary": "One file, written by one task.",
        "modules": [{"name": "hello", "responsibility": "the greeting"}],
        "decisions": [{"title": "Plain text", "context": "Nothing reads it but people.", "decision": "A text file, no format."}],
        "plan": plan,
    })
}

/// The designer's turns of the whole discussion, as a model does them.
pub(crate) fn discussion() -> Vec<Exchange> {
    vec![
        // plan:1, discussing: a write is refused, and so is proposing at once; it
        // asks instead.
        Exchange {
            request: None,
            expect: expect(
                &["# The requirement", "a hello file", "Phase: `discussing`"],
                &["ask_user", "settle_requirements", "fs_read", "fs_glob"],
            ),
            reply: call(
                "d0",
                "fs_write",
                json!({"path": "hello.txt", "content": "hi\n"}),
            ),
        },
        Exchange {
            request: None,
            expect: expect(
                &["`fs_write` is not allowed for the Architecture Designer"],
                &[],
            ),
            reply: call("d1", "propose_plan", proposal(&hello_plan(""))),
        },
        Exchange {
            request: None,
            expect: expect(&["`propose_plan` is refused while discussing"], &[]),
            reply: call(
                "d2",
                "ask_user",
                json!({"questions": [
                    {"id": "where", "text": "Where should the file go?"},
                    {"id": "words", "text": "Which words?", "options": ["hello", "hi"]}
                ]}),
            ),
        },
        // plan:2: the answers, then the requirements stated.
        Exchange {
            request: None,
            expect: expect(
                &[
                    "## The discussion so far",
                    "[where]",
                    "the project root",
                    "[words]",
                ],
                &["settle_requirements"],
            ),
            reply: call(
                "d3",
                "settle_requirements",
                json!({"requirements": ["hello.txt in the project root says hello."]}),
            ),
        },
        // plan:3, proposing: a plan with an error, sent back; then a good one.
        Exchange {
            request: None,
            expect: expect(
                &[
                    "Phase: `proposing`",
                    "## The plan format",
                    "agreed to the requirements",
                ],
                &["propose_plan"],
            ),
            reply: call(
                "d4",
                "propose_plan",
                proposal("## Task T1: Write hello.txt\n\n- depends_on: T9\n\nWrite it.\n"),
            ),
        },
        Exchange {
            request: None,
            expect: expect(&["proposed plan:", "T9"], &[]),
            reply: call("d5", "propose_plan", proposal(&hello_plan(""))),
        },
        // plan:4, after the change asked for: discussing again.
        Exchange {
            request: None,
            expect: expect(&["Phase: `discussing`", "end with a newline"], &[]),
            reply: call(
                "d6",
                "settle_requirements",
                json!({"requirements": ["hello.txt says hello and ends with a newline."]}),
            ),
        },
        // plan:5: the changed plan.
        Exchange {
            request: None,
            expect: expect(&["Phase: `proposing`"], &[]),
            reply: call(
                "d7",
                "propose_plan",
                proposal(&hello_plan(" End it with a newline.")),
            ),
        },
    ]
}

/// The one value `sql` reads from the session's database.
async fn one<T: rusqlite::types::FromSql>(state: &DaemonState, session: &str, sql: &str) -> T {
    let conn = state
        .session(session)
        .await
        .unwrap()
        .readers()
        .get()
        .unwrap();
    conn.query_row(sql, [], |r| r.get(0)).unwrap()
}

/// A conversation (edits accepted) whose first message is `plan`.
async fn planning(state: &DaemonState, plan: &str) -> String {
    let session = state
        .start_conversation(
            ConversationStart {
                permission_mode: Some(PermissionMode::AcceptEdits),
                ..ConversationStart::default()
            },
            Default::default(),
        )
        .await
        .unwrap()
        .id;
    state.converse(&session, plan, None, None).await.unwrap();
    session
}

async fn waiting(state: &DaemonState, session: &str, turn: &str) -> Projection {
    until(state, session, |p| {
        p.planning
            .as_ref()
            .is_some_and(|v| v.waiting_on.as_deref() == Some(turn))
    })
    .await
}

fn answer(session: &str, answers: &[(&str, &str)], go_ahead: bool) -> PlanningAnswer {
    PlanningAnswer {
        session_id: session.into(),
        task_id: None,
        answers: Some(
            answers
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        ),
        note: None,
        go_ahead: Some(go_ahead),
    }
}

#[test]
fn a_requirement_is_discussed_proposed_changed_confirmed_written_and_run() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    crate::rt().block_on(async {
        let mut exchanges = discussion();
        exchanges.extend(crate::conversation::hello_work(
            expect(
                &["Write `hello.txt` saying hello. End it with a newline."],
                &[],
            ),
            call(
                "e1",
                "fs_write",
                json!({"path": "hello.txt", "content": "hello\n"}),
            ),
            "hello.txt written",
        ));
        exchanges.push(Exchange {
            request: None,
            expect: expect(&["# Summarise for the user", "T1"], &[]),
            reply: text("Done: hello.txt says hello (T1, approved)."),
        });
        let mock = MockProvider::start(exchanges).await;
        let state = state(&root, &key(&mock));
        let session = planning(&state, "/plan a hello file").await;
        let p = waiting(&state, &session, "plan:1").await;
        let v = p.planning.clone().unwrap();
        assert_eq!(v.phase, PlanningPhase::Discussing);
        assert_eq!(v.requirement, "a hello file");
        assert_eq!(v.questions.len(), 2, "{v:?}");
        // An answer to a question never asked is named.
        let e = state
            .answer_planning(answer(&session, &[("colour", "red")], false), None)
            .await
            .unwrap_err();
        assert!(e.to_string().contains("answers.colour"), "{e}");
        let e = state
            .decide_plan(
                PlanningDecide {
                    session_id: session.clone(),
                    task_id: None,
                    decision: PlanDecision::Confirm,
                    note: None,
                    run: None,
                },
                None,
            )
            .await
            .unwrap_err();
        assert!(e.to_string().contains("proposed no plan"), "{e}");
        state
            .answer_planning(
                answer(
                    &session,
                    &[("where", "the project root"), ("words", "hello")],
                    false,
                ),
                Some("air plan new".into()),
            )
            .await
            .unwrap();
        let p = waiting(&state, &session, "plan:2").await;
        assert_eq!(p.planning.as_ref().unwrap().requirements.len(), 1);
        state
            .answer_planning(answer(&session, &[], true), None)
            .await
            .unwrap();
        let p = waiting(&state, &session, "plan:3").await;
        let v = p.planning.clone().unwrap();
        assert_eq!(
            (v.phase, v.tasks.clone()),
            (PlanningPhase::Proposing, vec!["T1".to_string()])
        );
        assert!(
            !root.join(".air/shared/plan/plan.md").exists(),
            "nothing written before the user confirms"
        );
        let decide = |decision, note: Option<&str>| PlanningDecide {
            session_id: session.clone(),
            task_id: None,
            decision,
            note: note.map(str::to_string),
            run: None,
        };
        state
            .decide_plan(
                decide(PlanDecision::Change, Some("end with a newline")),
                None,
            )
            .await
            .unwrap();
        waiting(&state, &session, "plan:4").await;
        state
            .answer_planning(answer(&session, &[], true), None)
            .await
            .unwrap();
        waiting(&state, &session, "plan:5").await;
        state
            .decide_plan(decide(PlanDecision::Confirm, None), None)
            .await
            .unwrap();
        let p = until(&state, &session, |p| {
            ended(p) && p.task("main:1").is_some_and(|t| t.status.is_terminal())
        })
        .await;
        assert_eq!(
            p.task("T1").map(|t| t.status),
            Some(TaskStatus::Completed),
            "{p:#?}"
        );
        assert_eq!(
            p.run.as_ref().and_then(|r| r.outcome),
            Some(air_proto::payload::RunOutcome::Completed)
        );
        let v = p.planning.clone().unwrap();
        assert_eq!(v.phase, PlanningPhase::Confirmed);
        assert!(
            v.files
                .contains(&".air/shared/plan/task-graph.json".to_string()),
            "{v:?}"
        );
        let plan = std::fs::read_to_string(root.join(".air/shared/plan/plan.md")).unwrap();
        assert!(plan.contains("End it with a newline."), "{plan}");
        let req = std::fs::read_to_string(root.join(".air/shared/plan/requirements.md")).unwrap();
        assert!(req.contains("ends with a newline"), "{req}");
        assert!(root.join("docs/ADR-0001-plain-text.md").exists());
        assert_eq!(
            std::fs::read_to_string(root.join("hello.txt")).unwrap(),
            "hello\n"
        );
        assert!(mock.mismatches().is_empty(), "{:?}", mock.mismatches());
        assert_eq!(
            mock.received().len(),
            12,
            "every exchange served, none more"
        );
        // The designer is never offered a write, a command or submit_result.
        for r in mock.received() {
            let tools: Vec<String> = r.body["tools"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|t| t["name"].as_str().map(str::to_string))
                .collect();
            if tools.iter().any(|t| t == "ask_user" || t == "propose_plan") {
                for forbidden in ["fs_write", "fs_edit", "shell_run", "submit_result"] {
                    assert!(
                        !tools.iter().any(|t| t == forbidden),
                        "{forbidden}: {tools:?}"
                    );
                }
            }
        }
        // The refused proposal is on record as refused.
        let refused: i64 = one(
            &state,
            &session,
            "SELECT COUNT(*) FROM tool_runs WHERE tool = 'propose_plan' AND status = 'failed'",
        )
        .await;
        assert_eq!(
            refused, 2,
            "the proposal while discussing and the one with errors"
        );
        let wrote: i64 = one(
            &state,
            &session,
            "SELECT COUNT(*) FROM tool_runs WHERE tool = 'fs.write' AND status = 'failed' AND task_id = 'plan:1'",
        )
        .await;
        assert_eq!(wrote, 1, "the designer's write is refused and recorded");
        state.stop_runs().await;
    });
}

/// `air plan new` through the real binaries, its stdin `input`, with `args`.
fn plan_new(
    rt: &tokio::runtime::Runtime,
    p: &crate::daemon::Project,
    mock: &MockProvider,
    args: &[&str],
    input: &str,
) -> std::process::Output {
    let mut c = crate::run::real_worker(p, &[&["plan", "new"], args].concat());
    c.envs(key(mock));
    c.stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let input = input.to_string();
    // The mock provider is served by this runtime while the command runs.
    rt.block_on(async move {
        use tokio::io::AsyncWriteExt as _;
        let mut child = tokio::process::Command::from(c).spawn().unwrap();
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(input.as_bytes()).await.unwrap();
        drop(stdin);
        child.wait_with_output().await.unwrap()
    })
}

fn shown(out: &std::process::Output) -> String {
    format!(
        "code {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The same discussion in a pipe: one answer from `--answers`, the rest and every
/// decision (a change asked for, then confirm) on stdin; the plan runs to its end.
#[test]
fn air_plan_new_in_a_pipe_discusses_changes_confirms_and_runs_the_plan() {
    let p = crate::daemon::Project::new();
    let mut exchanges = discussion();
    exchanges.extend(crate::conversation::hello_work(
        expect(&["End it with a newline."], &[]),
        call(
            "e1",
            "fs_write",
            json!({"path": "hello.txt", "content": "hello\n"}),
        ),
        "hello.txt written",
    ));
    exchanges.push(Exchange {
        request: None,
        expect: expect(&["# Summarise for the user"], &[]),
        reply: text("Done: hello.txt says hello."),
    });
    let rt = crate::rt();
    let mock = rt.block_on(MockProvider::start(exchanges));
    std::fs::write(p.root.join("answers.yaml"), "where: the project root\n").unwrap();
    // words; agree; change; agree; confirm.
    let out = plan_new(
        &rt,
        &p,
        &mock,
        &[
            "a hello file",
            "--answers",
            "answers.yaml",
            "--permission-mode",
            "accept-edits",
        ],
        "hello\ny\nend with a newline\n\nc\n",
    );
    assert_eq!(out.status.code(), Some(0), "{}", shown(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    for said in [
        "[where] Where should the file go?",
        "  → the project root",
        "[words] Which words? (hello / hi)",
        "  - hello.txt in the project root says hello.",
        "The proposal (plan:3)",
        "wave 1 (1 task)",
        "T1: files hello.txt",
        "Done: hello.txt says hello.",
    ] {
        assert!(stdout.contains(said), "{said}\n{}", shown(&out));
    }
    assert_eq!(
        std::fs::read_to_string(p.root.join("hello.txt")).unwrap(),
        "hello\n"
    );
    assert!(p.root.join(".air/shared/plan/plan.md").exists());
    assert!(mock.mismatches().is_empty(), "{:?}", mock.mismatches());
    let _ = p.air(&["daemon", "stop"]);
}

/// In CI: a question nobody answered stops the command (exit 3) rather than being
/// guessed, and the run is cancelled; with every answer given, `--out` writes the
/// confirmed plan to the file and runs nothing.
#[test]
fn air_plan_new_never_guesses_and_out_writes_the_plan_without_running_it() {
    let p = crate::daemon::Project::new();
    let ask = || Exchange {
        request: None,
        expect: expect(&["Phase: `discussing`"], &[]),
        reply: call(
            "d1",
            "ask_user",
            json!({"questions": [{"id": "where", "text": "Where should the file go?"}]}),
        ),
    };
    let rt = crate::rt();
    let mock = rt.block_on(MockProvider::start(vec![ask()]));
    let out = plan_new(&rt, &p, &mock, &["a hello file", "--yes"], "");
    assert_eq!(out.status.code(), Some(3), "{}", shown(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("question `where` was not answered") && stderr.contains("--answers"),
        "{}",
        shown(&out)
    );
    let _ = p.air(&["daemon", "stop"]);

    let q = crate::daemon::Project::new();
    let mock = rt.block_on(MockProvider::start(vec![
        ask(),
        Exchange {
            request: None,
            expect: expect(&["the project root"], &[]),
            reply: call(
                "d2",
                "settle_requirements",
                json!({"requirements": ["hello.txt says hello."]}),
            ),
        },
        Exchange {
            request: None,
            expect: expect(&["Phase: `proposing`"], &[]),
            reply: call("d3", "propose_plan", proposal(&hello_plan(""))),
        },
    ]));
    std::fs::write(q.root.join("answers.yaml"), "where: the project root\n").unwrap();
    let out = plan_new(
        &rt,
        &q,
        &mock,
        &[
            "a hello file",
            "--answers",
            "answers.yaml",
            "--yes",
            "--out",
            "hello-plan.md",
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(0), "{}", shown(&out));
    let plan = std::fs::read_to_string(q.root.join("hello-plan.md")).unwrap();
    assert!(plan.contains("## Task T1: Write hello.txt"), "{plan}");
    assert_eq!(
        plan,
        std::fs::read_to_string(q.root.join(".air/shared/plan/plan.md")).unwrap()
    );
    assert!(!q.root.join("hello.txt").exists(), "--out runs nothing");
    assert!(mock.mismatches().is_empty(), "{:?}", mock.mismatches());
    let _ = q.air(&["daemon", "stop"]);
}

/// The README's quick start: the example planned from a one-line requirement,
/// replayed from the recording shipped with it, with no key: the designer's two
/// questions answered from the shipped answers, the plan confirmed, written and run
/// by the real agents to the Main Agent's summary.
#[test]
fn the_shipped_planning_replays_with_no_key() {
    let p = crate::run::project();
    let out = crate::run::real_worker(
        &p,
        &[
            "plan",
            "new",
            "A Python package that counts words in text and lists the most frequent ones",
            "--replay",
            "planning",
            "--answers",
            "planning/answers.yaml",
            "--yes",
            "--permission-mode",
            "accept-edits",
        ],
    )
    .stdin(std::process::Stdio::null())
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", shown(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("  → alphabetically"), "{}", shown(&out));
    assert!(stdout.contains("The plan is done."), "{}", shown(&out));
    let graph = std::fs::read_to_string(p.root.join(".air/shared/plan/task-graph.json")).unwrap();
    let graph: air_proto::plan::TaskGraph = serde_json::from_str(&graph).unwrap();
    assert_eq!(graph.waves, [["T1".to_string()], ["T2".to_string()]]);
    assert!(p
        .root
        .join("docs/ADR-0001-words-by-a-regular-expression.md")
        .exists());
    let counter = std::fs::read_to_string(p.root.join("wordcount/counter.py")).unwrap();
    assert!(counter.contains("def top_words"), "{counter}");

    // Replayed again here, where the project is no longer the one it was recorded in:
    // refused before any agent runs, naming what differs, and nothing is changed.
    let init = std::fs::read_to_string(p.root.join("wordcount/__init__.py")).unwrap();
    let again = crate::run::real_worker(
        &p,
        &[
            "plan",
            "new",
            "A Python package that counts words in text and lists the most frequent ones",
            "--replay",
            "planning",
            "--answers",
            "planning/answers.yaml",
            "--yes",
        ],
    )
    .stdin(std::process::Stdio::null())
    .output()
    .unwrap();
    let said = String::from_utf8_lossy(&again.stderr);
    assert_ne!(again.status.code(), Some(0), "{}", shown(&again));
    assert!(
        said.contains("this project differs from the one the recording in")
            && said.contains("changed since it was recorded: wordcount/__init__.py")
            && said.contains("not there when it was recorded: ")
            && said.contains("wordcount/counter.py"),
        "{}",
        shown(&again)
    );
    assert_eq!(
        std::fs::read_to_string(p.root.join("wordcount/__init__.py")).unwrap(),
        init
    );
    let _ = p.air(&["daemon", "stop"]);
}

/// `air chat -p "/plan …"` returns once the designer waits for the user, printing
/// what it stated and how to answer; the next message answers it.
#[test]
fn air_chat_stops_where_the_designer_waits_and_the_next_message_answers() {
    let p = crate::daemon::Project::new();
    let rt = crate::rt();
    let mock = rt.block_on(MockProvider::start(vec![
        Exchange {
            request: None,
            expect: expect(&["Phase: `discussing`"], &[]),
            reply: call(
                "d1",
                "settle_requirements",
                json!({"requirements": ["hello.txt says hello."]}),
            ),
        },
        Exchange {
            request: None,
            expect: expect(&["The user said: yes, that is it"], &[]),
            reply: call(
                "d2",
                "settle_requirements",
                json!({"requirements": ["hello.txt says hello."], "user_agreed": true}),
            ),
        },
        Exchange {
            request: None,
            expect: expect(
                &["Phase: `proposing`", "The user agreed to the requirements"],
                &[],
            ),
            reply: call("d3", "propose_plan", proposal(&hello_plan(""))),
        },
    ]));
    let env = key(&mock);
    let env: Vec<(&str, String)> = env.iter().map(|(k, v)| (*k, v.clone())).collect();
    let chat = |args: &[&str]| {
        let c = crate::conversation::chat_command(&p, args, &env);
        rt.block_on(async { tokio::process::Command::from(c).output().await })
            .unwrap()
    };
    let out = chat(&[
        "-p",
        "/plan a hello file",
        "--permission-mode",
        "accept-edits",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", shown(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("  - hello.txt says hello."),
        "{}",
        shown(&out)
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("waits for your answer"),
        "{}",
        shown(&out)
    );
    let sessions = p.air(&["sessions", "--json"]);
    let list: Value = serde_json::from_slice(&sessions.stdout).unwrap();
    let session = list[0]["id"].as_str().unwrap().to_string();
    let out = chat(&["-s", &session, "-p", "yes, that is it"]);
    assert_eq!(out.status.code(), Some(0), "{}", shown(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("The proposal (plan:3)") && stdout.contains("wave 1"),
        "{}",
        shown(&out)
    );
    assert!(mock.mismatches().is_empty(), "{:?}", mock.mismatches());
    let _ = p.air(&["daemon", "stop"]);
}

/// A requirement change in the middle of a run (`requirement.change`, as `air change`
/// sends it): while T1's executor works, dispatch freezes; the designer says what the
/// change is (it names T2); airsd finds T1 SAFE (it goes on) and T2 IMPACTED; the
/// designer re-plans only T2; the user confirms; the new graph is applied
/// (`architecture.plan.updated`) and T2 runs as re-planned after T1.
#[test]
fn a_requirement_change_mid_run_replaces_the_unfinished_task_and_the_run_finishes() {
    replanned_mid_run(false);
}

/// The same change made by editing `.air/shared/plan/requirements.md` while the run
/// goes (airsd watches it): seen as a requirement change, re-planned the same way.
#[test]
fn an_edit_of_the_requirements_file_mid_run_is_a_requirement_change() {
    replanned_mid_run(true);
}

fn replanned_mid_run(by_editing: bool) {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let two = |file: &str| {
        format!(
            "{}\n## Task T2: Write {file}\n\n- category: docs\n- depends_on: T1\n- expected_files: `{file}`\n\nWrite `{file}` saying bye.\n",
            hello_plan("")
        )
    };
    let mut replanned = proposal(&two("goodbye.txt"));
    let change = json!({"scope": "implementation", "affected_modules": ["bye"], "tasks": ["T2"], "summary": "T2 writes goodbye.txt instead of bye.txt"});
    replanned["change"] = change.clone();
    // The designer talks to its own provider: its turns and T1's executor run at once.
    let designer = vec![
        Exchange {
            request: None,
            expect: expect(&["Phase: `discussing`"], &[]),
            reply: call(
                "d1",
                "settle_requirements",
                json!({"requirements": ["hello.txt, then bye.txt."]}),
            ),
        },
        Exchange {
            request: None,
            expect: expect(&["Phase: `proposing`"], &[]),
            reply: call("d2", "propose_plan", proposal(&two("bye.txt"))),
        },
        Exchange {
            request: None,
            expect: expect(
                &[
                    "# The requirement changed",
                    if by_editing {
                        "The user edited .air/shared/plan/requirements.md"
                    } else {
                        "goodbye.txt instead"
                    },
                    "Phase: `classifying`",
                    ".air/shared/plan/plan.md",
                ],
                &["classify_change", "fs_read"],
            ),
            reply: call("d3", "classify_change", change),
        },
        Exchange {
            request: None,
            expect: expect(
                &[
                    "the impacted part",
                    "IMPACTED: T2",
                    "SAFE: T1",
                    "Re-plan only these tasks: T2",
                ],
                &["propose_plan"],
            ),
            reply: call("d4", "propose_plan", replanned),
        },
    ];
    let exchanges = vec![
        // T1's executor takes its time: the requirement changes meanwhile.
        Exchange {
            request: None,
            expect: expect(&["Write `hello.txt` saying hello."], &[]),
            reply: Reply::Slow {
                events: air_tests::mock_provider::tool_use_events(
                    "e1",
                    "fs_write",
                    &json!({"path": "hello.txt", "content": "hello\n"}),
                ),
                // An edit is seen within the watcher's 2 seconds.
                gap_ms: if by_editing { 1_200 } else { 600 },
            },
        },
        Exchange {
            request: None,
            expect: any_expect(),
            reply: call(
                "e2",
                "submit_result",
                json!({"status": "completed", "summary": "hello.txt written"}),
            ),
        },
        Exchange {
            request: None,
            expect: any_expect(),
            reply: crate::agents::review("approved", json!([])),
        },
        Exchange {
            request: None,
            expect: expect(&["Write `goodbye.txt` saying bye.", "re-planned"], &[]),
            reply: call(
                "e3",
                "fs_write",
                json!({"path": "goodbye.txt", "content": "bye\n"}),
            ),
        },
        Exchange {
            request: None,
            expect: any_expect(),
            reply: call(
                "e4",
                "submit_result",
                json!({"status": "completed", "summary": "goodbye.txt written"}),
            ),
        },
        Exchange {
            request: None,
            expect: any_expect(),
            reply: crate::agents::review("approved", json!([])),
        },
        Exchange {
            request: None,
            expect: expect(&["# Summarise for the user"], &[]),
            reply: text("Done: hello.txt and goodbye.txt."),
        },
    ];
    crate::rt().block_on(async {
        let mock = MockProvider::start(exchanges).await;
        let designs = MockProvider::start(designer).await;
        crate::agents::own_provider(&root, "architecture_designer", &designs);
        let state = state(&root, &key(&mock));
        let session = planning(&state, "/plan hello, then bye").await;
        waiting(&state, &session, "plan:1").await;
        state
            .answer_planning(answer(&session, &[], true), None)
            .await
            .unwrap();
        waiting(&state, &session, "plan:2").await;
        let confirm = || PlanningDecide {
            session_id: session.clone(),
            task_id: None,
            decision: PlanDecision::Confirm,
            note: None,
            run: None,
        };
        state.decide_plan(confirm(), None).await.unwrap();
        until(&state, &session, |p| {
            p.agents.iter().any(|a| a.id == "T1-executor-1")
        })
        .await;
        let e = state
            .change_requirement(
                air_proto::api::params::RequirementChange {
                    session_id: session.clone(),
                    change: " ".into(),
                },
                None,
            )
            .await
            .unwrap_err();
        assert!(e.to_string().contains("change"), "{e}");
        if by_editing {
            let file = root.join(".air/shared/plan/requirements.md");
            let mut text = std::fs::read_to_string(&file).unwrap();
            text.push_str("- T2 should write goodbye.txt instead of bye.txt.\n");
            std::fs::write(&file, text).unwrap();
        } else {
            state
                .change_requirement(
                    air_proto::api::params::RequirementChange {
                        session_id: session.clone(),
                        change: "T2 should write goodbye.txt instead of bye.txt".into(),
                    },
                    Some("air change".into()),
                )
                .await
                .unwrap();
        }
        let p = waiting(&state, &session, "plan:4").await;
        assert_eq!(
            p.planning.as_ref().unwrap().proposed_by.as_deref(),
            Some("plan:4")
        );
        assert_eq!(
            p.task("T2").map(|t| t.status),
            Some(TaskStatus::Pending),
            "T2 has not started"
        );
        state.decide_plan(confirm(), None).await.unwrap();
        let p = until(&state, &session, |p| {
            ended(p) && p.task("main:1").is_some_and(|t| t.status.is_terminal())
        })
        .await;
        assert_eq!(
            p.task("T2").map(|t| t.title.as_str()),
            Some("Write goodbye.txt"),
            "{p:#?}"
        );
        for id in ["T1", "T2"] {
            assert_eq!(
                p.task(id).map(|t| t.status),
                Some(TaskStatus::Completed),
                "{id}"
            );
        }
        assert_eq!(
            std::fs::read_to_string(root.join("goodbye.txt")).unwrap(),
            "bye\n"
        );
        assert!(!root.join("bye.txt").exists());
        let plan = std::fs::read_to_string(root.join(".air/shared/plan/plan.md")).unwrap();
        assert!(
            plan.contains("goodbye.txt"),
            "the plan on disk is the new one: {plan}"
        );
        let updated: String = one(
            &state,
            &session,
            "SELECT payload_json FROM events WHERE type = 'architecture.plan.updated'",
        )
        .await;
        let updated: Value = serde_json::from_str(&updated).unwrap();
        assert_eq!(updated["changed"][0]["id"], "T2");
        assert_eq!(
            updated["summary"],
            "T2 writes goodbye.txt instead of bye.txt"
        );
        // What the change impacted, recorded and shown.
        let impact: String = one(
            &state,
            &session,
            "SELECT payload_json FROM events WHERE type = 'architecture.impact.completed'",
        )
        .await;
        let impact: Value = serde_json::from_str(&impact).unwrap();
        let zones: Vec<(String, String)> = impact["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                (
                    t["task_id"].as_str().unwrap().to_string(),
                    t["zone"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        assert_eq!(
            zones,
            [
                ("T1".to_string(), "safe".to_string()),
                ("T2".to_string(), "impacted".to_string())
            ]
        );
        assert!(mock.mismatches().is_empty(), "{:?}", mock.mismatches());
        assert!(
            designs.mismatches().is_empty(),
            "{:?}",
            designs.mismatches()
        );
        state.stop_runs().await;
    });
}

fn any_expect() -> air_tests::mock_provider::Expect {
    crate::agents::any()
}
