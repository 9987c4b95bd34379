//! The conversation in `air attach`, the real binaries in real terminals (tmux) with
//! the real `air-worker` against the loopback provider: `air` opens the conversation,
//! a question typed there is answered on screen; a second terminal on the session
//! shows the same conversation with who sent each message; a task asked for there is
//! confirmed in the first, runs while that terminal detaches, and a new attach shows
//! it finished and summarised.

use std::process::Command;

use air_tests::bin;
use air_tests::mock_provider::{text_events, tool_use_events, Exchange, MockProvider, Reply};
use serde_json::json;

use crate::agents::{any, call};
use crate::daemon::Project;
use crate::tui::Tmux;

fn text(t: &str) -> Reply {
    Reply::Events(text_events(t))
}

#[test]
fn a_conversation_in_two_terminals_and_a_task_that_finishes_while_detached() {
    let p = Project::new();
    std::fs::write(p.root.join("README.md"), "A greeting tool.\n").unwrap();
    // The provider lives on its own threads for the whole test.
    let rt = crate::provider_rt();
    let task = json!({
        "title": "Write hello.txt",
        "description": "Create hello.txt at the project root saying hello.",
        "acceptance_criteria": ["hello.txt says hello"],
        "category": "docs"
    });
    let mut exchanges =
        crate::conversation::readme_question("It is **a greeting tool** (README.md:1).");
    exchanges.extend([
        Exchange {
            request: None,
            expect: any(),
            reply: call("m3", "delegate_task", task),
        },
        Exchange {
            request: None,
            expect: any(),
            reply: text("I'll have hello.txt written once you confirm."),
        },
    ]);
    // The executor takes its time: the terminal detaches meanwhile.
    exchanges.extend(crate::conversation::hello_work(
        any(),
        Reply::Slow {
            events: tool_use_events(
                "e1",
                "fs_write",
                &json!({"path": "hello.txt", "content": "hello\n"}),
            ),
            gap_ms: 250,
        },
        "Wrote hello.txt.",
    ));
    exchanges.extend([Exchange {
        request: None,
        expect: any(),
        reply: text("Done: T1 wrote hello.txt and the reviewer approved it."),
    }]);
    let mock = rt.block_on(MockProvider::start(exchanges));
    let env = daemon_for(&p, &mock);

    let tmux = Tmux::new();
    tmux.run_air("one", &p.root, &env, "");
    tmux.wait_for(
        "one",
        &|s| s.contains("Conversation — IDLE") && s.contains("Enter sends"),
        "air did not open the conversation",
    );
    tmux.run_air("two", &p.root, &env, "attach");
    tmux.wait_for(
        "two",
        &|s| s.contains("Conversation — IDLE"),
        "the second terminal did not show the conversation",
    );

    // A question typed in one: answered there and shown in both, with who asked.
    tmux.type_text("one", "What is this project?");
    tmux.keys("one", "Enter");
    let answered = |s: &str| s.contains("It is a greeting tool (README.md:1).");
    tmux.wait_for("one", &answered, "no answer on screen");
    let two = tmux.wait_for("two", &answered, "the answer is not in the other terminal");
    assert!(
        two.contains("What is this project?") && two.contains("you · air attach (pid"),
        "{two}"
    );
    assert!(
        two.contains("· fs_read README.md"),
        "the tool call in brief: {two}"
    );
    assert!(
        two.contains("attached: air attach ×2"),
        "who is attached: {two}"
    );

    // A task asked for in two is confirmed in one (the default permission mode).
    tmux.type_text("two", "/task write hello.txt");
    tmux.keys("two", "Enter");
    let asks = |s: &str| s.contains("Permission") && s.contains("start task T1: Write hello.txt");
    let asked = tmux.wait_for("one", &asks, "no confirmation asked");
    assert!(asked.contains("Esc, then a approve"), "{asked}");
    // A letter typed in the conversation is text, not an answer.
    tmux.type_text("one", "a");
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(
        asks(&tmux.screen("one")),
        "a typed letter answered the question"
    );
    tmux.keys("one", "BSpace");
    tmux.keys("one", "Escape");
    tmux.keys("one", "a");
    tmux.wait_for(
        "one",
        &|s| s.contains("T1") && s.contains("running"),
        "T1 did not start",
    );
    // Both leave while it runs (Esc leaves the input box, q detaches).
    tmux.keys("two", "Escape");
    for w in ["one", "two"] {
        tmux.keys(w, "q");
        tmux.wait_for(w, &|s| s.contains("DETACHED"), "did not detach");
    }
    let end = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while mock.received().len() < 9 {
        assert!(
            std::time::Instant::now() < end,
            "the work did not finish: {} requests",
            mock.received().len()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // A new terminal shows it finished and summarised.
    tmux.run_air("three", &p.root, &env, "attach");
    let shown = tmux.wait_for(
        "three",
        &|s| {
            s.contains("Done: T1 wrote hello.txt")
                && s.lines().any(|l| l.contains("✓ T1 Write hello.txt"))
        },
        "the finished task and its summary are not shown",
    );
    assert!(
        shown.contains("It is a greeting tool"),
        "the whole conversation: {shown}"
    );
    assert!(mock.mismatches().is_empty(), "{:?}", mock.mismatches());
    assert_eq!(
        std::fs::read_to_string(p.root.join("hello.txt")).unwrap(),
        "hello\n"
    );
}

/// The project's daemon, started with the real worker and the loopback provider's
/// settings (the terminals use it); the same settings for a terminal's shell.
pub(crate) fn daemon_for(p: &Project, mock: &MockProvider) -> String {
    let env = format!(
        "AIR_WORKER='{}' ANTHROPIC_API_KEY=sk-test ANTHROPIC_BASE_URL='{}'",
        bin("air-worker").display(),
        mock.url
    );
    let started = Command::new(bin("air"))
        .args(["daemon", "start"])
        .current_dir(&p.root)
        .env("AIR_WORKER", bin("air-worker"))
        .env("ANTHROPIC_API_KEY", "sk-test")
        .env("ANTHROPIC_BASE_URL", &mock.url)
        .output()
        .unwrap();
    assert!(
        started.status.success(),
        "{}",
        String::from_utf8_lossy(&started.stderr)
    );
    env
}
