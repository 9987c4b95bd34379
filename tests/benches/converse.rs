//! The conversation in `air attach`, against the loopback provider answering at once:
//! Enter in the input box to the first streamed token of the answer on screen (the
//! TUI's state, renderer and frame policy on a 160×48 `TestBackend`, subscribed over
//! the Unix socket to the release daemon and worker), and the memory of the real
//! `air attach` (in tmux) on a session whose conversation holds 1,000 messages.
//!
//! Run: `cargo build --release --workspace && cargo bench -p air-tests --bench converse`
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use air_proto::api::{params, AirApiClient};
use air_proto::client::{connect, ConnectOptions};
use air_proto::layout::ProjectPaths;
use air_tests::mock_provider::{text_events, Exchange, Expect, MockProvider, Reply};
use air_tui::app::{App, Command, Key};
use air_tui::theme::{Palette, Theme};
use ratatui::backend::TestBackend;
use ratatui::Terminal;

/// Messages typed for the latency figure.
const TYPED: usize = 20;
/// Questions (each answered) in the conversation the memory figure attaches to.
const QUESTIONS: usize = 500;
/// The TUI's frame (run.rs draws at most this often).
const FRAME: Duration = Duration::from_millis(33);

fn answer(i: usize) -> Exchange {
    Exchange {
        request: None,
        expect: Expect::default(),
        reply: Reply::Events(text_events(&format!(
            "Answer {i}: the project counts **words**; see `wordcount/counter.py`."
        ))),
    }
}

fn main() {
    let provider_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let mock = provider_rt.block_on(MockProvider::start(
        (0..TYPED + QUESTIONS).map(answer).collect(),
    ));
    let (dir, air) = air_tests::release_project(&mock.url);
    let root = dir.path().to_path_buf();
    let home = root.join("home");
    assert!(air(&["daemon", "start"]).output().unwrap().status.success());

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (latencies, session) = rt.block_on(async {
        let options = ConnectOptions::new(ProjectPaths::new(&root), "bench", "0");
        let conn = connect(&options).await.unwrap();
        let session = conn
            .client
            .conversation_start(params::ConversationStart::default())
            .await
            .unwrap()
            .id;
        let snapshot = conn
            .client
            .session_snapshot(params::Session { session_id: session.clone() })
            .await
            .unwrap();
        let mut sub = conn
            .client
            .session_subscribe(params::Subscribe { session_id: session.clone(), from_seq: Some(snapshot.seq) })
            .await
            .unwrap();
        let mut app = App::new(snapshot);
        app.open_chat();
        let theme = Theme::dark(Palette::TrueColor);
        let mut terminal = Terminal::new(TestBackend::new(160, 48)).unwrap();
        let mut tick = tokio::time::interval(FRAME);
        let mut latencies = Vec::new();
        for i in 0..TYPED {
            // Typed, then Enter: the message goes out, and the clock runs until a
            // frame shows the answer's first token.
            for c in format!("question {i}").chars() {
                app.key(Key::Char(c));
            }
            let enter = Instant::now();
            let Some(Command::Send { text }) = app.key(Key::Enter) else {
                panic!("Enter did not send");
            };
            conn.client
                .message_send(params::MessageSend { session_id: session.clone(), text, to: None , env: None})
                .await
                .unwrap();
            terminal.draw(|f| air_tui::view::render(f, &app, &theme)).unwrap();
            let mut dirty = false;
            let shown = loop {
                tokio::select! {
                    update = sub.next() => {
                        let Some(Ok(update)) = update else { panic!("the subscription ended") };
                        app.update(update);
                        dirty = true;
                    }
                    _ = tick.tick() => {
                        if dirty {
                            terminal.draw(|f| air_tui::view::render(f, &app, &theme)).unwrap();
                            dirty = false;
                            if app.chat_stream().is_some() || app.chat.said.iter().any(|s| !s.user && s.text.starts_with(&format!("Answer {i}:"))) {
                                break enter.elapsed();
                            }
                        }
                    }
                }
            };
            latencies.push(shown);
            // The turn ends before the next question (the run goes idle).
            loop {
                let ended = app.projection.run.as_ref().is_some_and(|r| r.status == air_proto::projection::RunState::Ended)
                    && app.projection.tasks.iter().all(|t| t.status.is_terminal());
                if ended {
                    break;
                }
                let Some(Ok(update)) = sub.next().await else { panic!("the subscription ended") };
                app.update(update);
            }
        }
        // The conversation the memory figure attaches to: QUESTIONS more, answered.
        for i in 0..QUESTIONS {
            conn.client
                .message_send(params::MessageSend { session_id: session.clone(), text: format!("more {i}"), to: None, env: None })
                .await
                .unwrap();
        }
        (latencies, session)
    });
    let mut sorted = latencies.clone();
    sorted.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "Enter in air attach to the answer's first token on screen ({TYPED} messages, instant provider, 33 ms frames): p50 {:.1} ms, min {:.1} ms, max {:.1} ms (target p50 ≤ 40 ms)",
        ms(sorted[sorted.len() / 2]),
        ms(sorted[0]),
        ms(sorted[sorted.len() - 1])
    );

    // Wait for every answer, then the real `air attach` on it, in tmux.
    let end = Instant::now() + Duration::from_secs(300);
    while mock.received().len() < TYPED + QUESTIONS {
        assert!(
            Instant::now() < end,
            "only {} answers",
            mock.received().len()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(500));
    let socket = format!("air-bench-{}", std::process::id());
    let tmux = |args: &[&str]| {
        std::process::Command::new("tmux")
            .args(["-L", &socket])
            .args(args)
            .output()
            .unwrap()
    };
    let shell = format!(
        "cd '{}' && HOME='{}' '{}' attach -s {session}; sleep 60",
        root.display(),
        home.display(),
        air_tests::release_bin("air").display()
    );
    assert!(tmux(&[
        "new-session",
        "-d",
        "-s",
        "b",
        "-x",
        "160",
        "-y",
        "48",
        &shell
    ])
    .status
    .success());
    let end = Instant::now() + Duration::from_secs(30);
    let last = format!("Answer {}:", TYPED + QUESTIONS - 1);
    loop {
        let screen =
            String::from_utf8_lossy(&tmux(&["capture-pane", "-p", "-t", "b"]).stdout).into_owned();
        if screen.contains(&last) {
            break;
        }
        assert!(
            Instant::now() < end,
            "the conversation did not show:\n{screen}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_secs(1));
    let pid = String::from_utf8_lossy(
        &std::process::Command::new("pgrep")
            .args(["-n", "-f", &format!("attach -s {session}")])
            .output()
            .unwrap()
            .stdout,
    )
    .trim()
    .to_string();
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .map(|v| v.trim().to_string())
            .unwrap_or_default()
    };
    let messages = 2 * (TYPED + QUESTIONS);
    println!(
        "air attach on a conversation of {messages} messages (160x48): RSS {} (peak {}) (target < 30 MB)",
        field("VmRSS:"),
        field("VmHWM:")
    );
    let _ = tmux(&["kill-server"]);
    let _ = air(&["daemon", "stop"]).output();
}
