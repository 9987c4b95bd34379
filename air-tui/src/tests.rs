//! Render tests: a session built from real events, drawn into ratatui's `TestBackend`
//! at 80×24 and 160×48 and compared with insta snapshots; and the state test — the
//! deltas applied one by one give the same screen as the snapshot taken at the end.

use crate::pointer::Pointer as _;
use air_proto::api::{DeltaItem, SessionUpdate, Snapshot};
use air_proto::event::{AgentType, EventSource, RuntimeEvent};
use air_proto::payload as p;
use air_proto::projection::Projection;
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use serde_json::json;

use crate::app::{App, Command, Key};
use crate::theme::{Palette, Theme};

const S: &str = "01SESSION";

fn spec(id: &str, title: &str, deps: &[&str]) -> serde_json::Value {
    json!({
        "id": id, "type": "execute", "title": title, "description": format!("{title}."),
        "acceptance_criteria": [], "scope": {},
        "dependencies": deps.iter().map(|d| json!({"depends_on_task_id": d, "dependency_type": "hard"})).collect::<Vec<_>>(),
        "verification": {"required": false, "fallback_allowed": true},
        "constraints": {"max_turns": 10, "soft_timeout_ms": 1000, "hard_timeout_ms": 2000, "retry_budget": 1, "model_policy": "agent_select"},
        "context_refs": {}, "output_contract": "ExecutorResult"
    })
}

/// The events of a small run, timestamps fixed: three tasks, one completed with its
/// evidence, one running with a live stream and tool calls, one waiting; a
/// permission request open.
fn events() -> Vec<(RuntimeEvent, bool)> {
    let mut n = 0;
    let mut ev = |ty: &str, payload: serde_json::Value, durable: bool| {
        n += 1;
        let mut e = RuntimeEvent::typed(ty, S, EventSource::scheduler(), &payload).unwrap();
        e.timestamp = format!("2026-11-30T12:00:{:02}.000000Z", n % 60);
        (e, durable)
    };
    vec![
        ev("session.created", json!({"title": "Word counting"}), true),
        ev(
            "run.started",
            json!({"plan": "plan.md", "title": "Word counting library and CLI", "concurrency": 2, "permission_mode": "default", "on_ask": "queue"}),
            true,
        ),
        ev(
            "task.created",
            json!({"task": spec("T1", "Count words in a string", &[])}),
            true,
        ),
        ev(
            "task.created",
            json!({"task": spec("T2", "Top words", &["T1"])}),
            true,
        ),
        ev(
            "task.created",
            json!({"task": spec("T3", "Command-line tool", &["T2"])}),
            true,
        ),
        ev(
            "agent.started",
            json!({"agent_id": "T1-executor-1", "agent_type": "executor", "task_id": "T1", "model": "anthropic/claude-sonnet-4-5"}),
            true,
        ),
        ev(
            "task.started",
            json!({"task_id": "T1", "agent_id": "T1-executor-1", "attempt": 1}),
            true,
        ),
        ev(
            "evidence.created",
            json!({"evidence": {"id": "ev1", "kind": "command_run", "ref": "command-run:c1", "claim": "`python3 -m unittest` ran 2 test(s), none failed", "evidence_type": "test_pass"},
                "task_id": "T1", "agent_id": "T1-executor-1", "command_run_id": "c1"}),
            true,
        ),
        ev(
            "agent.completed",
            json!({"agent_id": "T1-executor-1", "exit_code": 0, "result": {
            "task_id": "T1", "agent_id": "T1-executor-1", "agent_type": "executor", "status": "completed",
            "summary": "Added count_words; both checks pass.", "changed_files": ["wordcount/counter.py"], "artifacts": [],
            "verification": [{"name": "unit tests", "status": "passed", "notes": "2 tests"}],
            "risks": [{"severity": "medium", "summary": "punctuation counts as part of a word"}],
            "follow_up_tasks": [{"title": "Strip punctuation", "description": "Split on non-letters."}], "result": null,
            "evidence_refs": [{"id": "e1", "kind": "command_run", "ref": "python3 -m unittest", "claim": "the tests pass", "evidence_type": "test_pass"}]}}),
            true,
        ),
        ev("task.completed", json!({"task_id": "T1"}), true),
        ev(
            "agent.started",
            json!({"agent_id": "T2-executor-1", "agent_type": "executor", "task_id": "T2", "model": "anthropic/claude-sonnet-4-5"}),
            true,
        ),
        ev(
            "task.started",
            json!({"task_id": "T2", "agent_id": "T2-executor-1", "attempt": 1}),
            true,
        ),
        ev(
            "agent.heartbeat",
            json!({"agent_id": "T2-executor-1", "state": "ACTING", "turn": 3, "input_tokens": 12400, "output_tokens": 900}),
            false,
        ),
        ev(
            "tool.started",
            json!({"tool_run_id": "R1", "tool": "fs.read", "input": {"path": "wordcount/counter.py"}, "agent_id": "T2-executor-1", "task_id": "T2"}),
            true,
        ),
        ev(
            "tool.completed",
            json!({"tool_run_id": "R1", "duration_ms": 1}),
            true,
        ),
        ev(
            "tool.started",
            json!({"tool_run_id": "R2", "tool": "fs.edit", "input": {"path": "wordcount/counter.py"}, "agent_id": "T2-executor-1", "task_id": "T2"}),
            true,
        ),
        ev(
            "tool.completed",
            json!({"tool_run_id": "R2", "duration_ms": 3, "output": {"path": "wordcount/counter.py", "replacements": 1, "diff": "--- a/wordcount/counter.py\n+++ b/wordcount/counter.py\n@@ -9,3 +9,8 @@\n     return counts\n+\n+\n+def top_words(text, n):\n+    return sorted(count_words(text).items(), key=lambda kv: (-kv[1], kv[0]))[:n]\n"}}),
            true,
        ),
        ev(
            "tool.started",
            json!({"tool_run_id": "R3", "tool": "todo.write", "input": {"todos": []}, "agent_id": "T2-executor-1", "task_id": "T2"}),
            true,
        ),
        ev(
            "tool.completed",
            json!({"tool_run_id": "R3", "duration_ms": 0, "output": {"todos": [
                {"content": "Read count_words", "status": "completed"},
                {"content": "Add top_words after count_words", "status": "in_progress"},
                {"content": "Run the tests", "status": "pending"}],
                "pending": 1, "in_progress": 1, "completed": 1}}),
            true,
        ),
        ev(
            "command.started",
            json!({"command_run_id": "C1", "command": "python3 -m unittest", "agent_id": "T2-executor-1", "task_id": "T2"}),
            true,
        ),
        ev(
            "stdout.delta",
            json!({"command_run_id": "C1", "data": "..\n----------------------------------------------------------------------\nRan 2 tests in 0.001s\n\nOK\n"}),
            false,
        ),
        ev(
            "token.delta",
            json!({"message_id": "m1", "block_index": 0, "kind": "text", "text": "Adding top_words after count_words,\nthen I run the tests.", "agent_id": "T2-executor-1"}),
            false,
        ),
        ev(
            "permission.requested",
            json!({"request_id": "P1", "action": "write /etc/hosts", "tool": "fs.write", "agent_id": "T2-executor-1", "task_id": "T2", "risk": "system_sensitive", "reason": "a system path"}),
            true,
        ),
    ]
}

/// A session's state from nothing, after `events` applied one by one as the
/// subscription delivers them (each durable one takes the next seq).
pub(crate) fn applied(session: &str, events: Vec<(RuntimeEvent, bool)>) -> App {
    let mut app = App::new(Snapshot {
        session_id: session.into(),
        seq: 0,
        projection: Projection::new(session),
    });
    let mut seq = 0;
    for (event, durable) in events {
        if durable {
            seq += 1;
        }
        app.update(SessionUpdate::Deltas {
            deltas: vec![DeltaItem {
                seq,
                durable,
                event,
            }],
        });
    }
    app
}

/// The state after every event, applied as the subscription delivers them.
fn live() -> App {
    let mut app = applied(S, events());
    app.ui.selected = 1;
    app.now = air_proto::time::parse("2026-11-30T12:01:00Z");
    app
}

pub(crate) fn draw(app: &App, width: u16, height: u16, palette: Palette) -> Terminal<TestBackend> {
    let mut t = Terminal::new(TestBackend::new(width, height)).unwrap();
    let theme = Theme::dark(palette);
    t.draw(|f| crate::view::render(f, app, &theme)).unwrap();
    t
}

#[test]
fn the_session_view_at_80x24_and_160x48() {
    let app = live();
    insta::assert_snapshot!(
        "permission_80x24",
        draw(&app, 80, 24, Palette::TrueColor).backend()
    );
    insta::assert_snapshot!(
        "permission_160x48",
        draw(&app, 160, 48, Palette::TrueColor).backend()
    );
}

#[test]
fn the_task_detail_help_and_cancel_dialogs() {
    let mut app = live();
    // Deny the request: it closes when its answer comes back.
    assert_eq!(
        app.key(Key::Char('d')),
        Some(Command::Deny {
            request_id: "P1".into()
        })
    );
    let mut e = RuntimeEvent::typed(
        "permission.decision.recorded",
        S,
        EventSource::agent("someone", AgentType::Executor),
        &json!({"request_id": "P1", "decision": "deny", "decided_by": "client:other", "reason": "no"}),
    )
    .unwrap();
    e.timestamp = "2026-11-30T12:01:00.000000Z".into();
    app.update(SessionUpdate::Delta {
        seq: app.seq() + 1,
        durable: true,
        event: e,
    });
    assert!(app.open_request().is_none());
    assert_eq!(app.ui.toast.as_deref(), Some("P1 denied by client:other"));
    insta::assert_snapshot!(
        "detail_80x24",
        draw(&app, 80, 24, Palette::TrueColor).backend()
    );
    insta::assert_snapshot!(
        "detail_160x48",
        draw(&app, 160, 48, Palette::TrueColor).backend()
    );
    assert_eq!(app.key(Key::Char('?')), None);
    insta::assert_snapshot!("help_80x24", draw(&app, 80, 24, Palette::Mono).backend());
    // Longer than the screen: it scrolls to its last key, and any other key closes it.
    let text = |app: &App| {
        let t = draw(app, 80, 24, Palette::Mono);
        let b = t.backend().buffer().clone();
        b.content().iter().map(|c| c.symbol()).collect::<String>()
    };
    assert!(!text(&app).contains("Detach (the run goes on)"));
    for _ in 0..30 {
        app.key(Key::Char('j'));
    }
    assert!(text(&app).contains("Detach (the run goes on)"));
    assert!(app.ui.help);
    app.key(Key::Esc);
    assert!(!app.ui.help);
    assert_eq!(app.key(Key::Char('c')), None);
    insta::assert_snapshot!(
        "cancel_80x24",
        draw(&app, 80, 24, Palette::Ansi16).backend()
    );
    assert_eq!(
        app.key(Key::Char('y')),
        Some(Command::CancelTask {
            task_id: "T2".into()
        })
    );
    assert_eq!(app.key(Key::Char('q')), Some(Command::Detach));
    // The completed task: its result, evidence, verification, risks and follow-ups;
    // the detail pane scrolls when it has the keys.
    app.key(Key::Up);
    assert_eq!(app.ui.selected, 0);
    insta::assert_snapshot!(
        "result_80x24",
        draw(&app, 80, 24, Palette::TrueColor).backend()
    );
    app.key(Key::Tab);
    app.key(Key::Down);
    app.key(Key::Down);
    assert_eq!(app.ui.detail_scroll, 2);
    assert_eq!(app.ui.selected, 0, "in the detail pane, the keys scroll it");
    app.key(Key::Tab);
    app.key(Key::Tab);
    app.key(Key::Down);
    assert_eq!((app.ui.selected, app.ui.detail_scroll), (1, 0));
}

/// The deltas applied to an empty state give the same screen as the final snapshot
/// (the projection airsd would serve) — live updates and resyncs agree.
#[test]
fn deltas_and_the_final_snapshot_draw_the_same_screen() {
    let app = live();
    let mut projection = Projection::new(S);
    let mut seq = 0;
    for (e, durable) in events() {
        if durable {
            seq += 1;
        }
        projection.apply(seq, &e, durable);
    }
    let mut fresh = App::new(Snapshot {
        session_id: S.into(),
        seq,
        projection,
    });
    fresh.ui = app.ui.clone();
    fresh.log = app.log.clone();
    fresh.streams = app.streams.clone();
    fresh.diffs = app.diffs.clone();
    fresh.output = app.output.clone();
    fresh.now = app.now;
    let a = draw(&app, 120, 30, Palette::TrueColor);
    let b = draw(&fresh, 120, 30, Palette::TrueColor);
    assert_eq!(a.backend().buffer(), b.backend().buffer());
    // A resync keeps the user's place.
    let mut moved = live();
    let snapshot = Snapshot {
        session_id: S.into(),
        seq,
        projection: fresh.projection.clone(),
    };
    moved.update(SessionUpdate::Resync {
        reason: "fell behind".into(),
        snapshot: Box::new(snapshot),
    });
    assert_eq!(moved.selected_task().map(|t| t.id.as_str()), Some("T2"));
    assert!(moved
        .log
        .back()
        .is_some_and(|l| l.text.contains("resynchronized: fell behind")));
    // History from `events.list` goes above what streamed in.
    let first = events().remove(0).0;
    moved.history(&[(1, first)]);
    assert!(
        moved.log.front().is_some_and(
            |l| l.text.contains("session started") && l.event_type == "session.created"
        ),
        "{:?}",
        moved.log.front()
    );
    let _ = p::DeltaKind::Text;
}

#[test]
fn the_session_picker_preselects_the_newest_running_session() {
    use crate::app::{Picked, Picker, PickerRow};
    let row = |id: &str, title: &str, state: &str| PickerRow {
        id: id.into(),
        title: title.into(),
        state: state.into(),
        created_at: "2026-11-30T12:00:00.000000Z".into(),
    };
    let mut picker = Picker::new(vec![
        row("01C", "Docs pass", "completed"),
        row("01B", "Word counting library and CLI", "running"),
        row("01A", "First try", "failed"),
    ]);
    assert_eq!(picker.selected, 1);
    let mut t = Terminal::new(TestBackend::new(80, 24)).unwrap();
    let theme = Theme::dark(Palette::TrueColor);
    t.draw(|f| crate::picker_view::render_picker(f, &picker, &theme))
        .unwrap();
    insta::assert_snapshot!("picker_80x24", t.backend());
    assert_eq!(picker.key(Key::Down), None);
    assert_eq!(picker.key(Key::Enter), Some(Picked::Session("01A".into())));
    assert_eq!(picker.key(Key::Char('q')), Some(Picked::Quit));
}

/// With no model, bare `air` opens here: how to give air one, the sessions, and the
/// shipped examples to watch; Enter on an example asks for its replay.
#[test]
fn the_first_run_screen_says_how_to_set_a_model_and_offers_the_examples() {
    use crate::app::{ExampleRow, Picked, Picker, PickerRow};
    let example = |name: &str, title: &str| ExampleRow {
        name: name.into(),
        title: title.into(),
        dir: std::path::PathBuf::from(format!("/opt/air/examples/{name}")),
    };
    let mut picker = Picker::first_run(
        vec![PickerRow {
            id: "01a244a6-cc37-719b-be9c-286556b310f6".into(),
            title: "A session whose title is far too long to fit in the row beside its date".into(),
            state: "completed".into(),
            created_at: "2026-11-30T12:00:00.000000Z".into(),
        }],
        vec![
            example("intstats", "Integer statistics in C++"),
            example("wordcount", "Word counting library and CLI"),
        ],
        "no LLM provider is configured.".into(),
    );
    let theme = Theme::dark(Palette::TrueColor);
    for (w, h) in [(80, 24), (160, 45)] {
        let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
        t.draw(|f| crate::picker_view::render_picker(f, &picker, &theme))
            .unwrap();
        insta::assert_snapshot!(format!("first_run_{w}x{h}"), t.backend());
    }
    assert_eq!(picker.key(Key::Down), None);
    assert_eq!(picker.key(Key::Down), None);
    assert_eq!(
        picker.key(Key::Enter),
        Some(Picked::Example("/opt/air/examples/wordcount".into()))
    );
    // Past the last row it stays there.
    assert_eq!(picker.key(Key::Down), None);
    assert_eq!(picker.selected, 2);
}

/// The event pane is words; `J` shows the events in view as they are stored.
#[test]
fn the_raw_events_in_view_are_a_key_away() {
    let mut app = live();
    app.projection.permission_requests.clear();
    app.ui.log_rows = 3;
    let durable: Vec<u64> = app
        .log
        .iter()
        .filter(|l| l.durable)
        .map(|l| l.seq)
        .collect();
    let last = *durable.last().unwrap();
    match app.key(Key::Char('J')) {
        Some(Command::ShowEvents { from, to }) => {
            assert_eq!(to, last);
            assert!(from <= to && from >= durable[durable.len().saturating_sub(3)]);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_command_palette_finds_actions_as_you_type() {
    use crate::app::fuzzy;
    assert!(fuzzy("cancel", "Cancel the selected task").is_some());
    assert!(fuzzy("xyz", "Cancel the selected task").is_none());
    assert!(fuzzy("pr", "Pause or resume the run") > fuzzy("pr", "Approve the permission request"));
    let mut app = live();
    // Close the permission dialog first (the palette works over it too).
    app.projection.permission_requests.clear();
    assert_eq!(app.key(Key::Ctrl('p')), None);
    for c in "pause".chars() {
        assert_eq!(app.key(Key::Char(c)), None);
    }
    insta::assert_snapshot!(
        "palette_80x24",
        draw(&app, 80, 24, Palette::TrueColor).backend()
    );
    assert_eq!(app.key(Key::Enter), Some(Command::Pause));
    assert!(app.ui.palette.is_none());
    // Esc closes it without doing anything; Backspace edits the query.
    app.key(Key::Ctrl('p'));
    app.key(Key::Char('z'));
    app.key(Key::Backspace);
    assert_eq!(app.ui.palette.as_ref().map(|p| p.query.as_str()), Some(""));
    assert_eq!(app.key(Key::Esc), None);
    assert!(app.ui.palette.is_none());
    // Every action is listed; going down past the screen keeps the chosen one shown.
    app.key(Key::Ctrl('p'));
    let all = app.ui.palette.as_ref().unwrap().matches();
    assert_eq!(all.len(), crate::keymap::Action::ALL.len() - 1);
    for _ in 0..all.len() {
        app.key(Key::Down);
    }
    let t = draw(&app, 80, 24, Palette::Mono);
    let text: String = t
        .backend()
        .buffer()
        .content()
        .iter()
        .map(|c| c.symbol())
        .collect();
    let last = all.last().unwrap().title();
    assert!(text.contains(last), "{last} not shown");
    assert_eq!(all.last(), Some(&crate::keymap::Action::Detach));
    assert_eq!(app.key(Key::Enter), Some(Command::Detach));
}

#[test]
fn the_event_filter_and_rebound_keys() {
    let mut app = live();
    app.projection.permission_requests.clear();
    let type_in = |app: &mut App, text: &str| {
        app.key(Key::Char('/'));
        // The filter in force is there to edit: clear it first.
        for _ in 0..40 {
            app.key(Key::Backspace);
        }
        for c in text.chars() {
            app.key(Key::Char(c));
        }
        app.key(Key::Enter);
    };
    // The tasks have the keys: `/` filters them (the selection moves onto one shown).
    type_in(&mut app, "pending");
    assert_eq!(app.ui.task_filter.as_deref(), Some("pending"));
    assert_eq!(app.visible_tasks(), vec![2]);
    assert_eq!(app.ui.selected, 2);
    app.key(Key::Up);
    assert_eq!(
        app.ui.selected, 2,
        "the selection stays among the shown tasks"
    );
    insta::assert_snapshot!(
        "task_filter_80x24",
        draw(&app, 80, 24, Palette::TrueColor).backend()
    );
    type_in(&mut app, "");
    assert_eq!(app.ui.task_filter, None);
    assert_eq!(app.visible_tasks(), vec![0, 1, 2]);
    app.key(Key::Up);
    assert_eq!(app.ui.selected, 1);
    // The event log has them: `/` filters the events, by words and by field.
    app.key(Key::Tab);
    app.key(Key::Tab);
    type_in(&mut app, "tool.s");
    assert_eq!(app.ui.filter.as_deref(), Some("tool.s"));
    assert_eq!(app.visible_log().len(), 3);
    insta::assert_snapshot!(
        "filter_80x24",
        draw(&app, 80, 24, Palette::TrueColor).backend()
    );
    type_in(&mut app, "type:tool.*");
    assert_eq!(app.visible_log().len(), 6);
    type_in(&mut app, "type:tool.* counter");
    assert_eq!(
        app.visible_log().len(),
        3,
        "tool lines say the path they work on, as the model gave it"
    );
    type_in(&mut app, "task:t2 type:task.started");
    assert_eq!(app.visible_log().len(), 1);
    type_in(&mut app, "agent:T2-exec*");
    assert!(app.visible_log().iter().all(|l| l.contains("T2")));
    app.key(Key::Tab);
    // Keys from the config replace the defaults.
    let mut keys = std::collections::BTreeMap::new();
    keys.insert("cancel".to_string(), crate::keymap::Keys::One("x".into()));
    app.keymap = crate::keymap::Keymap::with(&keys).unwrap();
    // The footer names the keys as bound.
    let t = draw(&app, 100, 24, Palette::Mono);
    let footer: String = (0..100)
        .map(|x| t.backend().buffer()[(x, 23)].symbol().to_string())
        .collect();
    assert!(footer.contains("x cancel"), "{footer}");
    assert_eq!(app.key(Key::Char('c')), None);
    assert!(app.ui.confirm_cancel.is_none());
    app.key(Key::Char('x'));
    assert_eq!(app.ui.confirm_cancel.as_deref(), Some("T2"));
}

#[test]
fn the_tasks_in_waves_and_as_a_graph() {
    let mut app = live();
    app.projection.permission_requests.clear();
    app.key(Key::Char('v'));
    insta::assert_snapshot!(
        "waves_80x24",
        draw(&app, 80, 24, Palette::TrueColor).backend()
    );
    app.key(Key::Char('v'));
    insta::assert_snapshot!(
        "graph_160x48",
        draw(&app, 160, 48, Palette::TrueColor).backend()
    );
    // Too narrow for the graph: the waves instead.
    let narrow = draw(&app, 80, 24, Palette::TrueColor);
    assert!(format!("{:?}", narrow.backend()).contains("in waves"));
    app.key(Key::Char('v'));
    assert_eq!(app.ui.layout, crate::app::Layout::List);
}

#[test]
fn a_diamond_graph_routes_its_edges_between_the_columns() {
    let mut app = App::new(Snapshot {
        session_id: S.into(),
        seq: 0,
        projection: Projection::new(S),
    });
    for (seq, (id, deps)) in (1u64..).zip([
        ("A", vec![]),
        ("B", vec!["A"]),
        ("C", vec!["A"]),
        // A → D passes B's column: it goes round B's box, not through it.
        ("D", vec!["B", "C", "A"]),
        ("E", vec![]),
    ]) {
        let mut e = RuntimeEvent::typed(
            "task.created",
            S,
            EventSource::scheduler(),
            &json!({"task": spec(id, &format!("task {id}"), &deps)}),
        )
        .unwrap();
        e.timestamp = "2026-11-30T12:00:00.000000Z".into();
        app.update(SessionUpdate::Delta {
            seq,
            durable: true,
            event: e,
        });
    }
    app.ui.layout = crate::app::Layout::Graph;
    app.ui.selected = 3;
    insta::assert_snapshot!(
        "diamond_120x30",
        draw(&app, 120, 30, Palette::TrueColor).backend()
    );
}

/// The graph's boxes say where a task's change is while the merge queue holds it
/// or refused it, in place of its status.
#[test]
fn the_graph_says_merging_and_conflict() {
    use air_proto::projection::TaskStatus;
    use air_proto::workspace_view::{WorkspaceState, WorkspaceView};
    let mut app = App::new(Snapshot {
        session_id: S.into(),
        seq: 0,
        projection: Projection::new(S),
    });
    for (seq, id) in (1u64..).zip(["A", "B", "C", "D"]) {
        let e = RuntimeEvent::typed(
            "task.created",
            S,
            EventSource::scheduler(),
            &json!({"task": spec(id, &format!("task {id}"), &[])}),
        )
        .unwrap();
        app.update(SessionUpdate::Delta {
            seq,
            durable: true,
            event: e,
        });
    }
    let states = [
        (TaskStatus::Reviewing, WorkspaceState::Merging),
        (TaskStatus::Reviewing, WorkspaceState::Queued),
        (TaskStatus::Debugging, WorkspaceState::Conflict),
        (TaskStatus::Running, WorkspaceState::Working),
    ];
    for (t, (status, state)) in app.projection.tasks.iter_mut().zip(states) {
        t.status = status;
        t.workspace = Some(WorkspaceView {
            id: format!("w-{}", t.id),
            branch: format!("air/abcd1234/{}", t.id),
            state,
            files: Vec::new(),
        });
    }
    app.ui.layout = crate::app::Layout::Graph;
    let text = format!("{:?}", draw(&app, 120, 30, Palette::TrueColor).backend());
    // The boxes' lines (the header and the detail still say the statuses).
    let boxes: Vec<&str> = text
        .split('"')
        .filter_map(|l| l.split('│').nth(2))
        .collect();
    let said = |w: &str| boxes.iter().any(|b| b.contains(w));
    assert!(
        said("merging") && said("queued") && said("conflict") && said("running"),
        "{text}"
    );
    assert!(!said("reviewing") && !said("debugging"), "{text}");
}

#[test]
fn the_users_place_is_saved_and_restored() {
    let mut app = live();
    app.projection.permission_requests.clear();
    app.key(Key::Char('v'));
    // With the tasks focused, `/` filters the tasks; with the detail, the events.
    for k in [Key::Char('/'), Key::Char('t'), Key::Char('2'), Key::Enter] {
        app.key(k);
    }
    app.key(Key::Tab);
    app.key(Key::Char('/'));
    app.key(Key::Char('x'));
    app.key(Key::Enter);
    let saved = app.saved_ui();
    assert_eq!(
        saved,
        json!({"selected_task": "T2", "layout": "waves", "focus": "detail", "filter": "x",
               "task_filter": "t2", "chat": false, "typed": ""})
    );
    let mut other = live();
    other.restore_ui(&saved);
    assert_eq!(other.ui.selected, 1);
    assert_eq!(other.ui.layout, crate::app::Layout::Waves);
    assert_eq!(other.ui.focus, crate::app::Pane::Detail);
    assert_eq!(other.ui.filter.as_deref(), Some("x"));
    assert_eq!(other.ui.task_filter.as_deref(), Some("t2"));
    assert_eq!(other.visible_tasks(), vec![1]);
    other.restore_ui(&json!({"layout": 3, "selected_task": "gone"}));
    assert_eq!(other.ui.layout, crate::app::Layout::List);
}

#[test]
fn retry_cancel_run_edit_and_copy() {
    let mut app = live();
    app.projection.permission_requests.clear();
    // The run is going: retrying them all waits for its end; the selected task is
    // running, nothing to retry; a whole-run cancel asks first.
    assert_eq!(app.key(Key::Char('R')), None);
    assert!(app
        .ui
        .toast
        .as_deref()
        .unwrap_or("")
        .contains("still going"));
    assert_eq!(app.key(Key::Char('r')), None);
    assert!(app
        .ui
        .toast
        .as_deref()
        .unwrap_or("")
        .starts_with("T2 is running: r retries a failed"));
    assert_eq!(app.key(Key::Char('C')), None);
    insta::assert_snapshot!(
        "cancel_run_80x24",
        draw(&app, 80, 24, Palette::TrueColor).backend()
    );
    assert_eq!(app.key(Key::Char('y')), Some(Command::CancelRun));
    // The latest changed file opens in the editor; the id is copied.
    assert_eq!(
        app.key(Key::Char('e')),
        Some(Command::Edit {
            path: "wordcount/counter.py".into()
        })
    );
    assert_eq!(
        app.key(Key::Char('y')),
        Some(Command::Copy { text: "T2".into() })
    );
    app.key(Key::Char('k'));
    assert_eq!(app.key(Key::Char('e')), None);
    assert!(app
        .ui
        .toast
        .as_deref()
        .unwrap_or("")
        .contains("no changed file"));
    // Once the run has ended with a failed task, retry continues it.
    let ended = |app: &mut App, ty: &str, payload: serde_json::Value| {
        let mut e = RuntimeEvent::typed(ty, S, EventSource::scheduler(), &payload).unwrap();
        e.timestamp = "2026-11-30T12:02:00.000000Z".into();
        app.update(SessionUpdate::Delta {
            seq: app.seq() + 1,
            durable: true,
            event: e,
        });
    };
    ended(
        &mut app,
        "task.failed",
        json!({"task_id": "T2", "reason": "checks failed"}),
    );
    // A failed task is retried at once, the run still going or not.
    app.key(Key::Char('j'));
    assert_eq!(
        app.key(Key::Char('r')),
        Some(Command::Retry {
            task_ids: vec!["T2".into()]
        })
    );
    ended(
        &mut app,
        "run.completed",
        json!({"outcome": "failed", "completed": 1, "failed": 1, "blocked": 0, "cancelled": 0, "unfinished": 1}),
    );
    assert_eq!(
        app.key(Key::Char('R')),
        Some(Command::Retry { task_ids: vec![] }),
        "{:?}",
        app.projection.run
    );
}

#[test]
fn reading_back_to_the_top_of_the_log_asks_for_the_page_before() {
    let mut app = live();
    app.projection.permission_requests.clear();
    // History from seq 900 on is in the log; nothing older yet.
    let old: Vec<_> = (900..905)
        .map(|n| {
            let mut e = RuntimeEvent::typed(
                "task.progress",
                S,
                EventSource::scheduler(),
                &json!({"task_id": "T1", "message": format!("step {n}")}),
            )
            .unwrap();
            e.timestamp = "2026-11-30T11:00:00.000000Z".into();
            (n, e)
        })
        .collect();
    app.history(&old);
    assert_eq!(app.oldest_seq, Some(900));
    assert_eq!(app.older_page(), None, "not scrolled up");
    app.key(Key::Tab);
    app.key(Key::Tab);
    for _ in 0..100 {
        app.key(Key::PageUp);
    }
    assert!(app.ui.want_older);
    assert_eq!(app.older_page(), Some((399, 500)));
    let before = app.log.len();
    let mut e = RuntimeEvent::typed(
        "task.progress",
        S,
        EventSource::scheduler(),
        &json!({"task_id": "T1", "message": "step 899"}),
    )
    .unwrap();
    e.timestamp = "2026-11-30T10:59:00.000000Z".into();
    app.history(&[(899, e)]);
    assert_eq!(app.log.len(), before + 1);
    assert!(app
        .log
        .front()
        .is_some_and(|l| l.text.contains("task progress")));
    assert_eq!(app.oldest_seq, Some(899));
    assert!(!app.ui.want_older);
}

/// When the bounded log drops its oldest lines, the page to read back from starts
/// exactly at the oldest stored event still held: nothing is skipped or repeated.
#[test]
fn a_trimmed_log_pages_back_from_its_oldest_line_exactly() {
    let mut app = live();
    app.projection.permission_requests.clear();
    let first = app.seq() + 1;
    let n = crate::app::LOG_LINES as u64 + 37;
    for i in 0..n {
        let mut e = RuntimeEvent::typed(
            "task.progress",
            S,
            EventSource::scheduler(),
            &json!({"task_id": "T2", "message": format!("step {i}")}),
        )
        .unwrap();
        e.timestamp = "2026-11-30T12:02:00.000000Z".into();
        // Ephemeral lines in between carry the seq of the durable state before them.
        let durable = i % 3 != 0;
        let seq = if durable { app.seq() + 1 } else { app.seq() };
        app.update(SessionUpdate::Delta {
            seq,
            durable,
            event: e,
        });
    }
    assert_eq!(app.log.len(), crate::app::LOG_LINES);
    let oldest = app.log.iter().find(|l| l.durable).map(|l| l.seq);
    assert_eq!(app.oldest_seq, oldest);
    let oldest = oldest.unwrap();
    assert!(oldest > first);
    app.key(Key::Tab);
    app.key(Key::Tab);
    app.scroll_log(usize::MAX / 2);
    let (after, limit) = app.older_page().unwrap();
    assert_eq!(
        after + u64::from(limit),
        oldest - 1,
        "the page ends just before it"
    );
}

/// `D` shows the task's whole latest change, `o` asks for its command's whole output
/// (or, while it runs, shows what has streamed); the viewer scrolls, opens its text
/// in `$EDITOR`, and closes with Esc.
#[test]
fn the_viewer_shows_a_whole_diff_and_a_commands_output() {
    let mut app = live();
    app.projection.permission_requests.clear();
    assert_eq!(app.key(Key::Char('D')), None);
    let v = app.ui.viewer.as_ref().unwrap();
    assert!(v.diff && v.title.contains("wordcount/counter.py"));
    insta::assert_snapshot!(
        "viewer_diff_80x24",
        draw(&app, 80, 24, Palette::TrueColor).backend()
    );
    app.key(Key::Char('G'));
    assert_eq!(app.ui.viewer.as_ref().unwrap().top, 7);
    app.key(Key::Char('k'));
    assert_eq!(app.ui.viewer.as_ref().unwrap().top, 6);
    match app.key(Key::Char('e')) {
        Some(Command::EditText { name, text }) => {
            assert_eq!(name, "T2.diff");
            assert!(text.contains("+def top_words(text, n):"));
        }
        other => panic!("{other:?}"),
    }
    app.key(Key::Esc);
    assert!(app.ui.viewer.is_none());
    // `o`: the whole output of the task's latest command, read by the caller.
    assert_eq!(
        app.key(Key::Char('o')),
        Some(Command::ShowOutput {
            command_run_id: "C1".into(),
            command: "python3 -m unittest".into()
        })
    );
    app.show_streamed_output();
    let v = app.ui.viewer.as_ref().unwrap();
    assert!(v.title.starts_with("$ python3 -m unittest (running"));
    assert_eq!(v.lines.last().map(String::as_str), Some("OK"));
    // A permission question has the keys over the viewer.
    app.ui.viewer = Some(crate::app::Viewer::new("t".into(), "t".into(), "x", false));
    app.projection = live().projection;
    assert_eq!(
        app.key(Key::Char('a')),
        Some(Command::Approve {
            request_id: "P1".into()
        })
    );
    // No command for a task that has run none.
    app.projection.permission_requests.clear();
    app.ui.viewer = None;
    app.ui.selected = 2;
    assert_eq!(app.key(Key::Char('o')), None);
    assert_eq!(
        app.ui.toast.as_deref(),
        Some("no command has run for this task yet")
    );
}

/// Only the rows in view are built; the selected task stays in view at the bottom,
/// in the list and in waves, as the list widget would scroll it.
#[test]
fn a_long_task_list_keeps_the_selection_in_view() {
    let mut app = App::new(Snapshot {
        session_id: S.into(),
        seq: 0,
        projection: Projection::new(S),
    });
    for n in 0..60 {
        let id = format!("T{n}");
        let deps: Vec<String> = (n > 0).then(|| format!("T{}", n - 1)).into_iter().collect();
        let deps: Vec<&str> = deps.iter().map(String::as_str).collect();
        let e = RuntimeEvent::typed(
            "task.created",
            S,
            EventSource::scheduler(),
            &json!({"task": spec(&id, &format!("step {n}"), &deps)}),
        )
        .unwrap();
        app.update(SessionUpdate::Delta {
            seq: n + 1,
            durable: true,
            event: e,
        });
    }
    app.key(Key::Char('G'));
    assert_eq!(app.ui.selected, 59);
    let screen = |app: &App| {
        let t = draw(app, 80, 24, Palette::Mono);
        let b = t.backend().buffer().clone();
        (0..b.area.height)
            .map(|y| {
                (0..34)
                    .map(|x| b[(x, y)].symbol().to_string())
                    .collect::<String>()
            })
            .collect::<Vec<_>>()
    };
    let rows = screen(&app);
    // The task list's last row (above its border) is the selected, last task.
    let events = rows.iter().position(|r| r.contains("Events")).unwrap();
    let last = rows[..events]
        .iter()
        .rposition(|r| r.contains("step"))
        .unwrap();
    assert!(rows[last].contains("T59 "), "{rows:#?}");
    assert!(!rows.iter().any(|r| r.contains("T0 ")), "{rows:#?}");
    app.key(Key::Char('v'));
    let rows = screen(&app);
    let events = rows.iter().position(|r| r.contains("Events")).unwrap();
    let last = rows[..events]
        .iter()
        .rposition(|r| r.contains("step"))
        .unwrap();
    assert!(rows[last].contains("T59 "), "{rows:#?}");
    assert!(rows[last - 1].contains("wave 60"), "{rows:#?}");
    app.key(Key::Char('g'));
    let rows = screen(&app);
    assert!(
        rows[2].contains("wave 1") && rows[3].contains("T0 "),
        "{rows:#?}"
    );
}

/// A click focuses the pane under it and selects the task clicked; the wheel scrolls
/// the pane under the pointer; dialogs keep the mouse out, the viewer scrolls.
#[test]
fn the_mouse_selects_focuses_and_scrolls() {
    use crate::app::{Mouse, Pane};
    let screen = ratatui::layout::Rect::new(0, 0, 80, 24);
    let mut app = live();
    // The permission dialog is open: the mouse does nothing.
    app.mouse(Mouse::Click { x: 5, y: 2 }, screen);
    assert_eq!((app.ui.selected, app.ui.focus), (1, Pane::Tasks));
    app.projection.permission_requests.clear();
    // The task list starts at row 1 (its border), the first task on row 2.
    app.mouse(Mouse::Click { x: 5, y: 2 }, screen);
    assert_eq!(app.ui.selected, 0);
    app.mouse(Mouse::Click { x: 5, y: 4 }, screen);
    assert_eq!(app.ui.selected, 2);
    app.mouse(Mouse::Click { x: 5, y: 9 }, screen);
    assert_eq!(app.ui.selected, 2, "below the last task: nothing");
    app.mouse(Mouse::ScrollUp { x: 5, y: 9 }, screen);
    assert_eq!(app.ui.selected, 1);
    // The detail pane (right of the 34-column list), the event log (below).
    app.mouse(Mouse::Click { x: 50, y: 5 }, screen);
    assert_eq!(app.ui.focus, Pane::Detail);
    app.mouse(Mouse::ScrollDown { x: 50, y: 5 }, screen);
    assert_eq!(app.ui.detail_scroll, 3);
    app.mouse(Mouse::Click { x: 10, y: 20 }, screen);
    assert_eq!(app.ui.focus, Pane::Log);
    app.mouse(Mouse::ScrollUp { x: 10, y: 20 }, screen);
    assert_eq!(app.ui.log_scroll, 3);
    app.mouse(Mouse::ScrollDown { x: 10, y: 20 }, screen);
    assert_eq!(app.ui.log_scroll, 0);
    // In waves, the rows include the headings.
    app.key(Key::Char('v'));
    app.mouse(Mouse::Click { x: 5, y: 2 }, screen);
    assert_eq!(app.ui.selected, 1, "a wave heading selects nothing");
    app.mouse(Mouse::Click { x: 5, y: 7 }, screen);
    assert_eq!(app.ui.selected, 2);
    // As a graph (wide enough): a click on a box selects its task.
    let wide = ratatui::layout::Rect::new(0, 0, 160, 48);
    app.ui.layout = crate::app::Layout::Graph;
    app.mouse(Mouse::Click { x: 53, y: 3 }, wide);
    assert_eq!(app.ui.selected, 2, "T3's box, third column");
    app.mouse(Mouse::Click { x: 3, y: 3 }, wide);
    assert_eq!(app.ui.selected, 0, "T1's box");
    app.mouse(Mouse::Click { x: 23, y: 3 }, wide);
    assert_eq!(app.ui.selected, 0, "the gap between boxes selects nothing");
    app.ui.layout = crate::app::Layout::Waves;
    app.ui.selected = 2;
    // The viewer takes the wheel.
    app.key(Key::Char('k'));
    app.key(Key::Char('D'));
    app.mouse(Mouse::ScrollDown { x: 5, y: 5 }, screen);
    assert_eq!(app.ui.viewer.as_ref().map(|v| v.top), Some(3));
    assert_eq!(app.ui.selected, 1);
}

/// `P` pauses the selected task's running agent, or resumes it once it is held (the
/// list and the detail say so); a task no agent runs cannot be paused.
#[test]
fn the_selected_tasks_agent_pauses_and_resumes() {
    let mut app = live();
    app.projection.permission_requests.clear();
    assert_eq!(
        app.key(Key::Char('P')),
        Some(Command::PauseTask {
            task_id: "T2".into()
        })
    );
    let mut e = RuntimeEvent::typed(
        "agent.paused",
        S,
        EventSource::scheduler(),
        &json!({"agent_id": "T2-executor-1", "task_id": "T2", "by": "client:other"}),
    )
    .unwrap();
    e.timestamp = "2026-11-30T12:00:30.000000Z".into();
    app.update(SessionUpdate::Delta {
        seq: app.seq() + 1,
        durable: true,
        event: e,
    });
    insta::assert_snapshot!(
        "paused_80x24",
        draw(&app, 80, 24, Palette::TrueColor).backend()
    );
    assert_eq!(
        app.key(Key::Char('P')),
        Some(Command::ResumeTask {
            task_id: "T2".into()
        })
    );
    app.key(Key::Down);
    assert_eq!(app.key(Key::Char('P')), None);
    assert_eq!(
        app.ui.toast.as_deref(),
        Some("no agent is running T3 (it is pending); p pauses the whole run")
    );
}

/// A resync leaves a gap in the log, named in `gap`; its stored events go in their
/// place, before what came live after the new snapshot, and a diff in the gap counts.
/// Ctrl-D detaches from anywhere; `Y` copies the session's id.
#[test]
fn a_resync_fills_the_logs_gap_in_place_and_ctrl_d_detaches_from_anywhere() {
    let mut app = live();
    let before = app.seq();
    let mut later = app.projection.clone();
    let mut stored = Vec::new();
    for n in 1..=3u64 {
        let mut e = RuntimeEvent::typed(
            "task.progress",
            S,
            EventSource::scheduler(),
            &json!({"task_id": "T2", "message": format!("gap {n}")}),
        )
        .unwrap();
        e.timestamp = "2026-11-30T12:03:00.000000Z".into();
        later.apply(before + n, &e, true);
        stored.push((before + n, e));
    }
    app.update(SessionUpdate::Resync {
        reason: "fell behind".into(),
        snapshot: Box::new(Snapshot {
            session_id: S.into(),
            seq: before + 3,
            projection: later,
        }),
    });
    assert_eq!(app.gap, Some((before, before + 3)));
    // Something live arrives before the gap is fetched.
    let mut live_event = RuntimeEvent::typed(
        "task.progress",
        S,
        EventSource::scheduler(),
        &json!({"task_id": "T2", "message": "live"}),
    )
    .unwrap();
    live_event.timestamp = "2026-11-30T12:04:00.000000Z".into();
    app.update(SessionUpdate::Delta {
        seq: before + 4,
        durable: true,
        event: live_event,
    });
    app.gap = None;
    app.catch_up(&stored, before + 3, 0);
    let tail: Vec<u64> = app.log.iter().rev().take(5).map(|l| l.seq).collect();
    assert_eq!(
        tail,
        vec![before + 4, before + 3, before + 3, before + 2, before + 1]
    );
    assert!(app
        .log
        .iter()
        .rev()
        .nth(1)
        .is_some_and(|l| l.text.contains("resynchronized")));
    // Ctrl-D while a filter is typed, in the palette, in the viewer: detach.
    app.projection.permission_requests.clear();
    app.key(Key::Tab);
    app.key(Key::Tab);
    app.key(Key::Char('/'));
    assert_eq!(app.key(Key::Ctrl('d')), Some(Command::Detach));
    app.ui.filter_input = None;
    app.key(Key::Ctrl('p'));
    assert_eq!(app.key(Key::Ctrl('c')), Some(Command::Detach));
    app.ui.palette = None;
    assert_eq!(
        app.key(Key::Char('Y')),
        Some(Command::Copy { text: S.into() })
    );
}
