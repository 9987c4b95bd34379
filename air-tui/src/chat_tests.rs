//! The conversation pane: drawn from a conversation's real events (TestBackend
//! snapshot), and the input box's keys.

use air_proto::event::{AgentType, EventSource, RuntimeEvent};
use serde_json::json;

use crate::app::{App, Command, Key, Pane};
use crate::tests::{applied, draw};
use crate::theme::Palette;

const S: &str = "01CHAT";

fn turn(id: &str, title: &str) -> serde_json::Value {
    json!({"task": {
        "id": id, "type": "execute", "title": title, "description": "d",
        "acceptance_criteria": [], "scope": {}, "dependencies": [],
        "verification": {"required": false, "fallback_allowed": false},
        "constraints": {"max_turns": 24, "soft_timeout_ms": 1000, "hard_timeout_ms": 2000, "retry_budget": 0, "model_policy": "scheduler_forced"},
        "context_refs": {}, "output_contract": "ExecutorResult"
    }})
}

/// A conversation: a question answered after reading a file, then a second question
/// whose answer is streaming.
fn conversation() -> App {
    let main = |id: &str| EventSource::agent(id, AgentType::Main);
    let events = [
        ("session.created", json!({}), EventSource::scheduler(), true),
        (
            "run.started",
            json!({"plan": "(conversation)", "concurrency": 4, "permission_mode": "default", "on_ask": "deny"}),
            EventSource::scheduler(),
            true,
        ),
        (
            "user.message.created",
            json!({"message_id": "u1", "content": [{"type": "text", "text": "What is this project?"}], "client": "air (pid 7)"}),
            EventSource::scheduler(),
            true,
        ),
        (
            "task.created",
            turn("main:1", "Reply to the user"),
            EventSource::scheduler(),
            true,
        ),
        (
            "task.started",
            json!({"task_id": "main:1", "attempt": 1, "agent_id": "main:1-main-1", "agent_type": "main"}),
            EventSource::scheduler(),
            true,
        ),
        (
            "agent.started",
            json!({"agent_id": "main:1-main-1", "agent_type": "main", "task_id": "main:1"}),
            EventSource::scheduler(),
            true,
        ),
        (
            "assistant.message.created",
            json!({"message_id": "a1", "agent_id": "main:1-main-1", "task_id": "main:1", "content": [{"type": "tool_use", "id": "t1", "name": "fs_read", "input": {"path": "README.md"}}]}),
            main("main:1-main-1"),
            true,
        ),
        (
            "assistant.message.created",
            json!({"message_id": "a2", "agent_id": "main:1-main-1", "task_id": "main:1", "content": [{"type": "text", "text": "It is **a greeting tool**:\n\n- `greet` says hello\n- `wave` waves"}]}),
            main("main:1-main-1"),
            true,
        ),
        (
            "agent.completed",
            json!({"agent_id": "main:1-main-1"}),
            EventSource::scheduler(),
            true,
        ),
        (
            "task.completed",
            json!({"task_id": "main:1"}),
            EventSource::scheduler(),
            true,
        ),
        (
            "user.message.created",
            json!({"message_id": "u2", "content": [{"type": "text", "text": "And the tests?"}], "client": "air attach (pid 9)"}),
            EventSource::scheduler(),
            true,
        ),
        (
            "task.created",
            turn("main:2", "Reply to the user"),
            EventSource::scheduler(),
            true,
        ),
        (
            "task.started",
            json!({"task_id": "main:2", "attempt": 1, "agent_id": "main:2-main-1", "agent_type": "main"}),
            EventSource::scheduler(),
            true,
        ),
        (
            "agent.started",
            json!({"agent_id": "main:2-main-1", "agent_type": "main", "task_id": "main:2"}),
            EventSource::scheduler(),
            true,
        ),
        (
            "agent.heartbeat",
            json!({"agent_id": "main:2-main-1", "state": "DELEGATING", "turn": 2}),
            main("main:2-main-1"),
            false,
        ),
        (
            "token.delta",
            json!({"message_id": "a3", "block_index": 0, "kind": "text", "text": "There are two tests", "agent_id": "main:2-main-1"}),
            main("main:2-main-1"),
            false,
        ),
    ];
    let events = events
        .into_iter()
        .enumerate()
        .map(|(i, (ty, payload, source, durable))| {
            let mut e = RuntimeEvent::typed(ty, S, source, &payload).unwrap();
            e.timestamp = format!("2026-12-01T12:00:{i:02}.000000Z");
            (e, durable)
        })
        .collect();
    let mut app = applied(S, events);
    app.now = air_proto::time::parse("2026-12-01T12:01:00Z");
    app
}

#[test]
fn the_conversation_pane_shows_who_said_what_the_tools_and_the_stream() {
    let app = conversation();
    assert!(app.chat.shown, "a conversation's session opens on it");
    assert_eq!(app.ui.focus, Pane::Chat);
    insta::assert_snapshot!(
        "conversation_100x30",
        draw(&app, 100, 30, Palette::Mono).backend()
    );
    let screen = format!("{:?}", draw(&app, 100, 30, Palette::Mono).backend());
    for part in [
        "Conversation — DELEGATING",
        "you · air (pid 7)",
        "· fs_read README.md",
        "It is a greeting tool:",
        "you · air attach (pid 9)",
        "There are two tests",
    ] {
        assert!(screen.contains(part), "{part} missing:\n{screen}");
    }
}

#[test]
fn the_input_box_sends_recalls_completes_and_keeps_pastes_whole() {
    let mut app = conversation();
    for c in "hi".chars() {
        assert_eq!(app.key(Key::Char(c)), None);
    }
    // Letters that are keys elsewhere are text here.
    assert_eq!(app.key(Key::Char('q')), None);
    assert_eq!(app.chat.input, "hiq");
    app.key(Key::Backspace);
    app.key(Key::Ctrl('j'));
    app.key(Key::Char('x'));
    assert_eq!(
        app.key(Key::Enter),
        Some(Command::Send {
            text: "hi\nx".into()
        })
    );
    assert_eq!(app.chat.input, "");
    assert_eq!(app.key(Key::Enter), None, "nothing to send");
    // Up recalls what was sent, Down goes back to an empty box.
    app.key(Key::Up);
    assert_eq!(app.chat.input, "hi\nx");
    app.key(Key::Down);
    assert_eq!(app.chat.input, "");
    // Tab completes a command; a paste keeps its lines and does not send.
    for c in "/ta".chars() {
        app.key(Key::Char(c));
    }
    app.key(Key::Tab);
    assert_eq!(app.chat.input, "/task ");
    app.paste("fix a\r\nand b");
    assert_eq!(app.chat.input, "/task fix a\nand b");
    // Ctrl-O shows the tool calls with their whole input.
    app.key(Key::Ctrl('o'));
    let screen = format!("{:?}", draw(&app, 100, 30, Palette::Mono).backend());
    assert!(screen.contains("\"path\": \"README.md\""), "{screen}");
    app.key(Key::Ctrl('o'));
    // Esc leaves the box: keys are actions again, and `i` comes back to it.
    app.key(Key::Esc);
    assert_eq!(app.ui.focus, Pane::Tasks);
    assert_eq!(app.key(Key::Char('q')), Some(Command::Detach));
    app.key(Key::Char('i'));
    assert_eq!(app.ui.focus, Pane::Chat);
}

/// A planning session in the TUI: the designer's questions, then its proposal, each in
/// a dialog over the session (not while typing in the conversation); approve confirms
/// the proposal, deny rejects it, and the dialog closes when the answer is recorded.
#[test]
fn the_planning_dialog_shows_the_questions_then_the_proposal_and_answers_it() {
    use air_proto::planning::PlanDecision;
    let designer = |id: &str| EventSource::agent(id, AgentType::ArchitectureDesigner);
    let mut plan_turn = turn("plan:1", "Discuss the requirement");
    plan_turn["task"]["description"] = json!("a word counter");
    plan_turn["task"]["context_refs"] = json!({"artifacts": ["planning-phase:discussing"]});
    let mut proposing = turn("plan:2", "Propose the architecture and the plan");
    proposing["task"]["description"] = json!("a word counter");
    proposing["task"]["context_refs"] = json!({"artifacts": ["planning-phase:proposing"]});
    let e = |ty: &str, payload: serde_json::Value, source: EventSource| {
        let mut e = RuntimeEvent::new(ty, S, source, payload);
        e.timestamp = "2026-12-01T12:00:00.000000Z".into();
        (e, true)
    };
    let mut events = vec![
        e("session.created", json!({}), EventSource::scheduler()),
        e(
            "run.started",
            json!({"plan": "(conversation)", "concurrency": 4, "permission_mode": "default", "on_ask": "deny"}),
            EventSource::scheduler(),
        ),
        e("task.created", plan_turn, EventSource::scheduler()),
        e(
            "architecture.questions.asked",
            json!({"task_id": "plan:1", "questions": [
                {"id": "case", "text": "Ignore case?", "options": ["yes", "no"]},
                {"id": "ties", "text": "How are ties ordered?"}
            ]}),
            designer("plan:1-architecture_designer-1"),
        ),
    ];
    let mut app = applied(S, events.clone());
    app.ui.focus = Pane::Tasks;
    let screen = format!("{:?}", draw(&app, 100, 30, Palette::Mono).backend());
    for part in [
        "Questions (plan:1)",
        "[case] Ignore case?  (yes / no)",
        "answer in the conversation",
    ] {
        assert!(screen.contains(part), "{part} missing:\n{screen}");
    }
    // While typing the answer, the conversation is not covered.
    app.ui.focus = Pane::Chat;
    let screen = format!("{:?}", draw(&app, 100, 30, Palette::Mono).backend());
    assert!(!screen.contains("Questions (plan:1)"), "{screen}");

    events.extend([
        e("task.created", proposing, EventSource::scheduler()),
        e(
            "architecture.plan.proposed",
            json!({"task_id": "plan:2", "tasks": ["T1", "T2"], "waves": [["T1"], ["T2"]], "proposal": {
                "summary": "One module, two tasks.",
                "modules": [{"name": "wordcount.counter", "responsibility": "counting"}],
                "decisions": [{"title": "Words by a pattern", "context": "c", "decision": "One regular expression."}],
                "plan": "## Task T1: Count\n\nCount.\n\n## Task T2: Top\n\n- depends_on: T1\n\nTop.\n"
            }}),
            designer("plan:2-architecture_designer-1"),
        ),
    ]);
    let mut app = applied(S, events.clone());
    app.now = air_proto::time::parse("2026-12-01T12:01:00Z");
    app.ui.focus = Pane::Tasks;
    insta::assert_snapshot!(
        "planning_proposal_100x30",
        draw(&app, 100, 30, Palette::Mono).backend()
    );
    let confirm = app.key(Key::Char('a'));
    assert_eq!(
        confirm,
        Some(Command::DecidePlan {
            task_id: "plan:2".into(),
            decision: PlanDecision::Confirm
        })
    );
    assert_eq!(
        app.key(Key::Char('d')),
        Some(Command::DecidePlan {
            task_id: "plan:2".into(),
            decision: PlanDecision::Reject
        })
    );
    // Confirmed from another terminal: the dialog closes here, saying who.
    events.push(e(
        "architecture.plan.decided",
        json!({"task_id": "plan:2", "decision": "confirm", "run": true, "client": "air attach (pid 9)"}),
        EventSource::scheduler(),
    ));
    let app = applied(S, events);
    let screen = format!("{:?}", draw(&app, 100, 30, Palette::Mono).backend());
    assert!(!screen.contains("Proposed plan"), "{screen}");
    assert!(
        screen.contains("plan:2 confirmed by air attach (pid 9)"),
        "{screen}"
    );
}
