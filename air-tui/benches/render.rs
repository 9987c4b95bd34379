//! TUI benchmarks: frame render time for a large session (1,000 tasks, 100,000
//! events through the log), and the cost of applying a delta (the work between a
//! delta arriving and the next frame, at 10,000 deltas a second).
//!
//! Run: `cargo bench -p air-tui --bench render`
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Instant;

use air_proto::api::{DeltaItem, SessionUpdate, Snapshot};
use air_proto::event::{EventSource, RuntimeEvent};
use air_proto::projection::Projection;
use air_tui::app::App;
use air_tui::theme::{Palette, Theme};
use ratatui::backend::TestBackend;
use ratatui::Terminal;
use serde_json::json;

const S: &str = "01BENCH";

fn event(ty: &str, payload: serde_json::Value) -> RuntimeEvent {
    RuntimeEvent::typed(ty, S, EventSource::scheduler(), &payload).unwrap()
}

fn spec(id: &str) -> serde_json::Value {
    json!({
        "id": id, "type": "execute", "title": format!("Task number {id} of the big plan"), "description": "x",
        "acceptance_criteria": [], "scope": {}, "dependencies": [],
        "verification": {"required": false, "fallback_allowed": true},
        "constraints": {"max_turns": 10, "soft_timeout_ms": 1000, "hard_timeout_ms": 2000, "retry_budget": 1, "model_policy": "agent_select"},
        "context_refs": {}, "output_contract": "ExecutorResult"
    })
}

fn main() {
    let mut app = App::new(Snapshot {
        session_id: S.into(),
        seq: 0,
        projection: Projection::new(S),
    });
    let mut seq = 0;
    let mut push = |app: &mut App, e: RuntimeEvent, durable: bool| {
        if durable {
            seq += 1;
        }
        app.update(SessionUpdate::Deltas {
            deltas: vec![DeltaItem {
                seq,
                durable,
                event: e,
            }],
        });
    };
    push(
        &mut app,
        event(
            "run.started",
            json!({"plan": "big.md", "title": "A big plan", "concurrency": 8, "permission_mode": "default", "on_ask": "deny"}),
        ),
        true,
    );
    for i in 0..1_000 {
        push(
            &mut app,
            event("task.created", json!({"task": spec(&format!("T{i:04}"))})),
            true,
        );
    }
    // 100,000 events through the log: tool calls on the first tasks.
    let t = Instant::now();
    for i in 0..50_000u64 {
        let task = format!("T{:04}", i % 1_000);
        push(
            &mut app,
            event(
                "tool.started",
                json!({"tool_run_id": format!("R{i}"), "tool": "fs.read", "input": {}, "task_id": task}),
            ),
            true,
        );
        push(
            &mut app,
            event(
                "tool.completed",
                json!({"tool_run_id": format!("R{i}"), "duration_ms": 1}),
            ),
            true,
        );
    }
    let per_delta = t.elapsed().as_secs_f64() * 1e6 / 100_000.0;
    app.ui.selected = 500;
    let theme = Theme::dark(Palette::TrueColor);
    let mut frames = Vec::new();
    for (w, h) in [(160u16, 48u16), (80, 24)] {
        let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
        let mut times = Vec::new();
        for _ in 0..200 {
            let t = Instant::now();
            term.draw(|f| air_tui::view::render(f, &app, &theme))
                .unwrap();
            times.push(t.elapsed());
            app.frame += 1;
        }
        times.sort();
        frames.push((w, h, times[times.len() / 2], times[times.len() * 99 / 100]));
    }
    for (w, h, p50, p99) in frames {
        println!(
            "frame render, 1,000 tasks and 100,000 events (log holds {} lines), {w}x{h}: p50 {:.2} ms, p99 {:.2} ms (target < 5 ms)",
            app.log.len(),
            p50.as_secs_f64() * 1e3,
            p99.as_secs_f64() * 1e3
        );
    }
    println!(
        "applying a delta (projection fold and log line): {per_delta:.2} µs each, so 10,000 deltas a second take {:.0} % of a core; the screen follows at the next frame (≤ 33 ms)",
        per_delta * 10_000.0 / 1e6 * 100.0
    );
    let rss = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .map(|l| l.to_string())
        })
        .unwrap_or_default();
    println!(
        "peak RSS of this process holding that session: {} (target < 50 MB)",
        rss.trim_start_matches("VmHWM:").trim()
    );
}
