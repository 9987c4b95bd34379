//! The patrol that acts, end to end with the real worker: a model that repeats one
//! call forever is told once, then stopped within a few turns, its task goes to the
//! debugger, and the Main Agent tells the person in the conversation.

use air_proto::projection::TaskStatus;
use air_tests::mock_provider::{Exchange, MockProvider};
use serde_json::json;

use crate::agents::{any, call, key, state};
use crate::asks::until;
use crate::conversation::{expect, text};

#[test]
fn a_model_that_repeats_one_call_forever_is_stopped_and_the_person_is_told() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    std::fs::write(root.join("README.md"), "A greeting tool.\n").unwrap();
    crate::rt().block_on(async {
        // The executor reads the same file again and again, as a model that lost
        // its way does; then the debugger finds it blocked.
        let repeats = 2 * worker::agent::LOOP_REPEATS;
        let mut work: Vec<Exchange> = (0..repeats)
            .map(|n| Exchange {
                request: None,
                expect: if n == worker::agent::LOOP_REPEATS {
                    expect(
                        &["airsd's patrol: you called fs_read with the same input 3 times in a row"],
                        &[],
                    )
                } else {
                    any()
                },
                reply: call(&format!("e{n}"), "fs_read", json!({"path": "README.md"})),
            })
            .collect();
        work.push(Exchange {
            request: None,
            expect: expect(&["stopped in a loop on turn 6"], &[]),
            reply: call(
                "d1",
                "submit_result",
                json!({"status": "blocked", "summary": "The executor kept reading README.md.",
                       "analysis": "It read README.md six times and never wrote hello.txt.",
                       "root_cause": "a loop in the model's turns", "fixed": false}),
            ),
        });
        let talk = vec![
            Exchange {
                request: None,
                expect: any(),
                reply: call(
                    "m1",
                    "classify",
                    json!({"intent": "simple_task", "reason": "one file"}),
                ),
            },
            Exchange {
                request: None,
                expect: any(),
                reply: call(
                    "m2",
                    "delegate_task",
                    json!({"title": "Write hello.txt", "description": "Create hello.txt saying hello.",
                           "acceptance_criteria": ["hello.txt says hello"], "expected_files": ["hello.txt"],
                           "category": "docs"}),
                ),
            },
            Exchange {
                request: None,
                expect: any(),
                reply: text("I've asked for hello.txt to be written."),
            },
            Exchange {
                request: None,
                expect: expect(&["# Tell the user", "T1: its agent was stopped in a loop"], &[]),
                reply: text("T1 went in circles: it read README.md again and again, so airsd stopped it and a debugger is looking."),
            },
            Exchange {
                request: None,
                expect: expect(&["# Summarise for the user"], &[]),
                reply: text("T1 is blocked: the debugger says the work looped."),
            },
        ];
        let work = MockProvider::start(work).await;
        let main = MockProvider::start(talk).await;
        // The Main Agent talks to its own provider, so that its turns and the task's
        // agents never wait on each other's scripts.
        crate::agents::own_provider(&root, "main", &main);
        let state = state(&root, &key(&work));
        let session = crate::conversation::conversation(&state).await;
        state
            .converse(&session, "please make hello.txt", None, None)
            .await
            .unwrap();
        let p = until(&state, &session, |p| {
            p.task("main:3").is_some_and(|t| t.status.is_terminal())
        })
        .await;
        assert!(work.mismatches().is_empty(), "{:?}", work.mismatches());
        assert!(main.mismatches().is_empty(), "{:?}", main.mismatches());
        // Stopped at its sixth turn: the debugger's request came next, and nothing else.
        assert_eq!(work.received().len(), repeats + 1);
        assert_eq!(p.task("T1").map(|t| t.status), Some(TaskStatus::Blocked));
        assert!(
            p.messages
                .iter()
                .any(|m| m.task_id.as_deref() == Some("main:2") && m.preview.starts_with("T1 went in circles")),
            "{:#?}",
            p.messages
        );
        let events = crate::limits::events_of(&root, &session, "agent.loop_detected");
        let stopped: Vec<bool> = events.iter().map(|e| e["stopped"] == true).collect();
        assert_eq!(stopped, [false, true], "{events:?}");
        state.stop_runs().await;
    });
}
