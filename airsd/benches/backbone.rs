//! Backbone benchmarks. Prints figures; asserts nothing about time.
//!
//! - ingest: durable events, each acknowledged only after its commit (synchronous=FULL,
//!   group commit), from many concurrent producers on one core;
//! - hydrate: the projection of a session holding 1,000,000 events, read from the
//!   state tables;
//! - fanout: 10 subscribers × 100,000 ephemeral events with one stalled subscriber.
//!
//! Run: `cargo bench -p airsd --bench backbone` (add `-- ingest|hydrate|fanout` for one).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use air_proto::event::{EventSource, RuntimeEvent};
use air_proto::layout::ProjectPaths;
use air_proto::payload::SessionCreated;
use air_proto::projection::Projection;
use airsd::bus::{BusConfig, EventBus, Recv};
use airsd::{Session, SessionConfig};
use serde_json::{json, Value};

const PROJECT: &str = "6f1c1e0a-3b2d-4c5e-8f9a-0b1c2d3e4f50";

fn ev(session: &str, ty: &str, payload: Value) -> RuntimeEvent {
    RuntimeEvent::new(ty, session, EventSource::scheduler(), payload)
}

fn task(id: &str) -> Value {
    json!({"task": {"id": id, "type": "execute", "title": format!("task {id}"), "description": "bench",
        "acceptance_criteria": ["done"], "scope": {"write_area": "src"}, "dependencies": [],
        "verification": {"commands": ["make test"], "required": true, "fallback_allowed": false},
        "constraints": {"max_turns": 20, "soft_timeout_ms": 60000, "hard_timeout_ms": 120000, "retry_budget": 2, "model_policy": "agent_select"},
        "context_refs": {}, "output_contract": "ExecutorResult"}})
}

fn tool_pair(session: &str, id: &str, agent: &str, task: &str) -> [RuntimeEvent; 2] {
    [
        ev(
            session,
            "tool.started",
            json!({"tool_run_id": id, "tool": "fs.read", "agent_id": agent, "task_id": task, "input": {"path": "src/main.cpp", "offset": 0, "limit": 200}}),
        ),
        ev(
            session,
            "tool.completed",
            json!({"tool_run_id": id, "duration_ms": 3, "output": {"lines": 200, "truncated": false}}),
        ),
    ]
}

fn new_session(dir: &std::path::Path, id: &str) -> Session {
    air_proto::layout::init(dir, "2026-11-30T00:00:00Z").unwrap();
    Session::create(
        &ProjectPaths::new(dir),
        PROJECT,
        id,
        &SessionCreated::default(),
        SessionConfig::default(),
    )
    .unwrap()
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn ingest() {
    // Group commit amortises one fsync over every request waiting at that moment, so
    // throughput depends on how many appends are in flight: report several levels.
    for producers in [64, 256, 1024] {
        ingest_with(producers, 204_800 / 2 / producers);
    }
}

fn ingest_with(producers: usize, pairs_per_producer: usize) {
    let dir = tempfile::tempdir().unwrap();
    let session = Arc::new(new_session(dir.path(), "s-ingest"));
    let sid = session.id().to_string();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        session
            .store()
            .append(ev(&sid, "task.created", task("T1")))
            .await
            .unwrap();
        session
            .store()
            .append(ev(
                &sid,
                "agent.started",
                json!({"agent_id": "A1", "agent_type": "executor", "task_id": "T1"}),
            ))
            .await
            .unwrap();
    });
    let start = Instant::now();
    let latencies = rt.block_on(async {
        let mut set = tokio::task::JoinSet::new();
        for p in 0..producers {
            let session = session.clone();
            let sid = sid.clone();
            set.spawn(async move {
                let mut lat = Vec::with_capacity(pairs_per_producer * 2);
                for i in 0..pairs_per_producer {
                    let _ = (p, i);
                    // Ids as the daemon makes them: time-ordered UUIDs.
                    for e in tool_pair(&sid, &air_proto::ids::new_id(), "A1", "T1") {
                        let t = Instant::now();
                        session.store().append(e).await.unwrap();
                        lat.push(t.elapsed());
                    }
                }
                lat
            });
        }
        let mut all = Vec::new();
        for lat in set.join_all().await {
            all.extend(lat);
        }
        all
    });
    let elapsed = start.elapsed();
    let mut lat = latencies;
    lat.sort();
    let n = lat.len();
    println!(
        "ingest: {producers:>4} producers: {n} durable events, each acked after its commit (synchronous=FULL), in {:.2} s = {:.0} events/s; ack latency p50 {:.2} ms, p99 {:.2} ms",
        elapsed.as_secs_f64(),
        n as f64 / elapsed.as_secs_f64(),
        percentile(&lat, 0.5).as_secs_f64() * 1e3,
        percentile(&lat, 0.99).as_secs_f64() * 1e3,
    );
    let conn = session.readers().get().unwrap();
    let stored: u64 = conn
        .query_row("SELECT COUNT(*) FROM events", [], |r| r.get(0))
        .unwrap();
    assert_eq!(stored as usize, n + 3);
}

fn hydrate() {
    const UNITS: usize = 2_000;
    const PAIRS: usize = 247; // 2,000 × (6 + 2 × 247) = 1,000,000 events
    let dir = tempfile::tempdir().unwrap();
    let session = new_session(dir.path(), "s-hydrate");
    let sid = session.id().to_string();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let start = Instant::now();
    rt.block_on(async {
        for u in 0..UNITS {
            let (t, a) = (format!("T{u}"), format!("A{u}"));
            let mut batch = vec![
                ev(&sid, "task.created", task(&t)),
                ev(&sid, "agent.started", json!({"agent_id": a, "agent_type": "executor", "task_id": t})),
                ev(&sid, "task.started", json!({"task_id": t, "agent_id": a})),
            ];
            for i in 0..PAIRS {
                let _ = i;
                batch.extend(tool_pair(&sid, &air_proto::ids::new_id(), &a, &t));
            }
            batch.push(ev(&sid, "task.completed", json!({"task_id": t})));
            batch.push(ev(&sid, "agent.completed", json!({"agent_id": a, "exit_code": 0})));
            batch.push(ev(&sid, "assistant.message.created", json!({"message_id": format!("M{u}"), "agent_id": a, "content": [{"type": "text", "text": "done"}], "usage": {"input_tokens": 1200, "output_tokens": 300}})));
            session.store().append_batch(batch).await.unwrap();
        }
    });
    let fill = start.elapsed();
    let live = session.snapshot();
    let db = session.db_path().to_path_buf();
    session.close();
    let size = std::fs::metadata(&db).unwrap().len();
    println!(
        "hydrate: wrote {} events in {:.1} s ({:.0} events/s in batches of {}); database {:.0} MiB",
        live.seq,
        fill.as_secs_f64(),
        live.seq as f64 / fill.as_secs_f64(),
        6 + 2 * PAIRS,
        size as f64 / (1 << 20) as f64
    );
    let conn = rusqlite::Connection::open(&db).unwrap();
    let mut times = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let p = airsd::projection::hydrate(&conn, "s-hydrate").unwrap();
        times.push(t.elapsed());
        assert_eq!(
            serde_json::to_string(&p).unwrap(),
            serde_json::to_string(&live).unwrap()
        );
    }
    times.sort();
    println!(
        "hydrate: projection of {} events ({} tasks, {} agents, {} tool runs) from state tables: median {:.1} ms, max {:.1} ms (5 runs)",
        live.seq,
        live.tasks.len(),
        live.agents.len(),
        live.counters.tool_runs,
        times[2].as_secs_f64() * 1e3,
        times[4].as_secs_f64() * 1e3
    );
    let t = Instant::now();
    let session = Session::open_path(&db, "s-hydrate", SessionConfig::default()).unwrap();
    println!(
        "hydrate: cold Session::open (schema check + hydrate + writer start): {:.1} ms",
        t.elapsed().as_secs_f64() * 1e3
    );
    session.close();
}

fn fanout() {
    const SUBSCRIBERS: usize = 10;
    const EVENTS: usize = 100_000;
    let bus = Arc::new(EventBus::new(Projection::new("s"), 0, BusConfig::default()));
    let _stalled = bus.subscribe(); // never reads
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut handles = Vec::new();
    for _ in 0..SUBSCRIBERS {
        let mut sub = bus.subscribe();
        handles.push(rt.spawn(async move {
            let mut batch = Vec::with_capacity(4096);
            let (mut deliveries, mut covered) = (0usize, 0usize);
            loop {
                batch.clear();
                match sub.recv_many(&mut batch).await {
                    None => {
                        deliveries += batch.len();
                        for d in &batch {
                            covered += d.event.payload["text"].as_str().map_or(1, |t| t.len() / 8);
                        }
                    }
                    Some(Recv::Closed) => return (deliveries, covered, false),
                    Some(_) => return (deliveries, covered, true),
                }
            }
        }));
    }
    let events: Vec<Arc<RuntimeEvent>> = (0..EVENTS)
        .map(|i| {
            Arc::new(ev("s", "token.delta", json!({"message_id": format!("M{}", i % 8), "block_index": 0, "kind": "text", "text": format!("{i:07}.")})))
        })
        .collect();
    let start = Instant::now();
    for e in &events {
        bus.publish_ephemeral(e.clone());
    }
    let published = start.elapsed();
    bus.close();
    let results: Vec<(usize, usize, bool)> = rt.block_on(async {
        let mut out = Vec::new();
        for h in handles {
            out.push(h.await.unwrap());
        }
        out
    });
    let elapsed = start.elapsed();
    let deliveries: usize = results.iter().map(|r| r.0).sum();
    let covered: usize = results.iter().map(|r| r.1).sum();
    let resyncs = results.iter().filter(|r| r.2).count();
    println!(
        "fanout: {SUBSCRIBERS} subscribers + 1 stalled × {EVENTS} ephemeral events: publish {:.0} ms, all delivered in {:.0} ms = {:.0} deliveries/s ({} deltas carrying {} events, {} coalesced; resyncs among live subscribers: {resyncs})",
        published.as_secs_f64() * 1e3,
        elapsed.as_secs_f64() * 1e3,
        covered as f64 / elapsed.as_secs_f64(),
        deliveries,
        covered,
        covered - deliveries
    );
    assert_eq!(
        covered,
        SUBSCRIBERS * EVENTS,
        "every event reached every live subscriber"
    );
}

fn main() {
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let run = |name: &str| filter.is_empty() || filter.iter().any(|f| name.contains(f.as_str()));
    if run("ingest") {
        ingest();
    }
    if run("fanout") {
        fanout();
    }
    if run("hydrate") {
        hydrate();
    }
}
