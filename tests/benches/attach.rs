//! `air attach` under a fast token stream. The loopback provider streams an
//! executor's answer at 10,000 text deltas a second; they pass through the real
//! `air-worker` and `airsd` to a client subscribed over the Unix socket, which runs
//! the TUI's state and renderer with its frame policy (a delta only marks the screen
//! stale, a 33 ms tick draws it, a key is handled and drawn at once) on a 160×48
//! `TestBackend`. Keys arrive every 50 ms from another task, as a typing user's would.
//!
//! Printed: the rate received; delta-to-screen latency (from the delta's timestamp,
//! set by the worker as the provider's piece arrives, to the end of the frame that
//! shows it); key-to-screen latency (from the key's arrival to the end of its frame);
//! frames drawn; the client's CPU time per second of stream.
//!
//! Run: `cargo build --release --workspace && cargo bench -p air-tests --bench attach`
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant, SystemTime};

use air_proto::api::{params, AirApiClient, SessionUpdate};
use air_proto::client::{connect, ConnectOptions};
use air_proto::layout::ProjectPaths;
use air_tests::mock_provider::{text_events, text_pieces, Exchange, Expect, MockProvider, Reply};
use air_tui::app::{App, Key};
use air_tui::theme::{Palette, Theme};
use ratatui::backend::TestBackend;
use ratatui::Terminal;

/// Text deltas streamed, and their rate.
const DELTAS: usize = 30_000;
const PER_SECOND: u32 = 10_000;
/// The TUI's frame (run.rs draws at most this often).
const FRAME: Duration = Duration::from_millis(33);

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i]
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

/// User and system CPU time of this process so far.
fn cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let f: Vec<u64> = after
        .split_whitespace()
        .filter_map(|x| x.parse().ok())
        .collect();
    // Fields 14 and 15 (utime, stime) are the 12th and 13th after the name.
    let ticks = f.get(10).unwrap_or(&0) + f.get(11).unwrap_or(&0);
    Duration::from_millis(ticks * 10)
}

fn main() {
    // The provider on its own thread, like a remote server.
    let provider_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let mut exchanges = vec![Exchange {
        request: None,
        expect: Expect::default(),
        reply: Reply::Paced {
            events: text_pieces((0..DELTAS).map(|i| format!("w{i} "))),
            per_second: PER_SECOND,
        },
    }];
    exchanges.extend((0..3).map(|_| Exchange {
        request: None,
        expect: Expect::default(),
        reply: Reply::Events(text_events("thinking")),
    }));
    let mock = provider_rt.block_on(MockProvider::start(exchanges));

    let (dir, air) = air_tests::release_project(&mock.url);
    let root = dir.path().to_path_buf();
    std::fs::write(
        root.join("p.md"),
        "## Task A: talk\n\nSay a lot.\n\nAcceptance criteria:\n- said\n",
    )
    .unwrap();
    let out = air(&["run", "--plan", "p.md", "--detach"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let session = String::from_utf8_lossy(&out.stdout).trim().to_string();

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let report = rt.block_on(async {
        let options = ConnectOptions::new(ProjectPaths::new(&root), "bench", "0");
        let conn = connect(&options).await.unwrap();
        let snapshot = conn
            .client
            .session_snapshot(params::Session {
                session_id: session.clone(),
            })
            .await
            .unwrap();
        let mut sub = conn
            .client
            .session_subscribe(params::Subscribe {
                session_id: session.clone(),
                from_seq: Some(snapshot.seq),
            })
            .await
            .unwrap();
        let mut app = App::new(snapshot);
        let theme = Theme::dark(Palette::TrueColor);
        let mut terminal = Terminal::new(TestBackend::new(160, 48)).unwrap();
        // Keys every 50 ms, from elsewhere, stamped as they are sent.
        let (keys_tx, mut keys) = tokio::sync::mpsc::channel::<(Key, Instant)>(16);
        tokio::spawn(async move {
            let mut every = tokio::time::interval(Duration::from_millis(50));
            let mut down = true;
            loop {
                every.tick().await;
                let key = if down { Key::Down } else { Key::Up };
                down = !down;
                if keys_tx.send((key, Instant::now())).await.is_err() {
                    return;
                }
            }
        });
        let mut tick = tokio::time::interval(FRAME);
        let mut dirty = false;
        // The timestamps of the token deltas not yet on screen.
        let mut waiting: Vec<SystemTime> = Vec::new();
        let mut delta_latency = Vec::with_capacity(DELTAS);
        let mut key_latency = Vec::new();
        let mut frames = 0u64;
        let mut received = 0usize;
        let mut first: Option<(Instant, Duration)> = None;
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut draw = |app: &App, waiting: &mut Vec<SystemTime>, frames: &mut u64| {
            terminal
                .draw(|f| air_tui::view::render(f, app, &theme))
                .unwrap();
            *frames += 1;
            let now = SystemTime::now();
            for at in waiting.drain(..) {
                delta_latency.push(now.duration_since(at).unwrap_or_default());
            }
        };
        while received < DELTAS && Instant::now() < deadline {
            tokio::select! {
                update = sub.next() => {
                    let Some(Ok(update)) = update else { break };
                    let before = waiting.len();
                    if let SessionUpdate::Delta { event, .. } = &update {
                        if event.event_type == "token.delta" {
                            waiting.extend(air_proto::time::parse(&event.timestamp));
                        }
                    }
                    if let SessionUpdate::Deltas { deltas } = &update {
                        for d in deltas.iter().filter(|d| d.event.event_type == "token.delta") {
                            waiting.extend(air_proto::time::parse(&d.event.timestamp));
                        }
                    }
                    received += waiting.len() - before;
                    if received > 0 && first.is_none() {
                        first = Some((Instant::now(), cpu()));
                    }
                    app.update(update);
                    dirty = true;
                }
                _ = tick.tick() => {
                    if dirty {
                        app.frame += 1;
                        draw(&app, &mut waiting, &mut frames);
                        dirty = false;
                    }
                }
                Some((key, sent)) = keys.recv() => {
                    app.key(key);
                    draw(&app, &mut waiting, &mut frames);
                    dirty = false;
                    key_latency.push(sent.elapsed());
                }
            }
        }
        draw(&app, &mut waiting, &mut frames);
        let (started, cpu_start) = first.unwrap_or((Instant::now(), cpu()));
        let span = started.elapsed();
        let cpu_used = cpu().saturating_sub(cpu_start);
        (delta_latency, key_latency, frames, span, cpu_used, received)
    });
    let (mut delta_latency, mut key_latency, frames, span, cpu_used, received) = report;
    let _ = air(&["cancel"]).output();
    let _ = air(&["daemon", "stop"]).output();

    delta_latency.sort();
    key_latency.sort();
    let secs = span.as_secs_f64().max(1e-9);
    println!(
        "air attach under a token stream ({DELTAS} text deltas sent at {PER_SECOND}/s; 160x48)"
    );
    println!(
        "  received: {received} deltas in {:.2} s = {:.0}/s; {frames} frames ({:.1}/s)",
        secs,
        received as f64 / secs,
        frames as f64 / secs
    );
    println!(
        "  delta-to-screen: p50 {}  p99 {}  max {}",
        ms(percentile(&delta_latency, 0.5)),
        ms(percentile(&delta_latency, 0.99)),
        ms(percentile(&delta_latency, 1.0))
    );
    println!(
        "  key-to-screen ({} keys): p50 {}  p99 {}  max {}  (a frame is {})",
        key_latency.len(),
        ms(percentile(&key_latency, 0.5)),
        ms(percentile(&key_latency, 0.99)),
        ms(percentile(&key_latency, 1.0)),
        ms(FRAME)
    );
    println!(
        "  CPU of this process (the client and the provider): {:.0} ms per second of stream ({:.1} % of a core)",
        cpu_used.as_secs_f64() * 1e3 / secs,
        cpu_used.as_secs_f64() * 100.0 / secs
    );
}
