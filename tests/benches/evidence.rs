//! The evidence gate on a result, from airsd's records: a session holding 10,000
//! evidence rows (500 tasks' agents, each with its commands, changes and evidence),
//! and one executor's result judged as airsd judges it when the result comes
//! (`airsd::evidence::judge`: the attempt's ledger read from the session database by
//! the agents' index, then `air_proto::gate::check`).
//!
//! Run: `cargo bench -p air-tests --bench evidence`
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::{Duration, Instant};

use air_proto::event::{AgentType, EventSource, RuntimeEvent};
use air_proto::layout::ProjectPaths;
use air_proto::payload as p;
use air_proto::result::{EvidenceKind, EvidenceRef, WorkerResult, WorkerStatus};
use air_proto::task::EvidenceType;
use airsd::evidence::{judge, GateSubject};
use airsd::{Session, SessionConfig};

const AGENTS: usize = 500;
/// Commands per agent, each with two evidence rows: 500 × 10 × 2 = 10,000 rows.
const STEPS: usize = 10;
const RUNS: usize = 500;

fn events(session: &str, agent: &str, task: &str) -> Vec<RuntimeEvent> {
    let source = EventSource::agent(agent, AgentType::Executor);
    let of = |payload: &dyn erased::Payload| payload.event(session, source.clone());
    let mut out = Vec::new();
    for k in 0..STEPS {
        // A change, then a command that builds and tests, with its evidence.
        let tool_run_id = format!("{agent}-w{k}");
        out.push(of(&p::ToolStarted {
            tool_run_id: tool_run_id.clone(),
            tool: "fs.write".into(),
            input: serde_json::json!({"path": format!("src/f{k}.py"), "content": "x"}),
            agent_id: Some(agent.into()),
            task_id: Some(task.into()),
            origin_message_id: None,
        }));
        out.push(of(&p::ToolCompleted {
            tool_run_id,
            output: Some(
                serde_json::json!({"path": format!("src/f{k}.py"), "created": true, "bytes": 1}),
            ),
            duration_ms: Some(1),
        }));
        let command_run_id = format!("{agent}-c{k}");
        out.push(of(&p::CommandStarted {
            command_run_id: command_run_id.clone(),
            command: "python3 -m compileall -q src && python3 -m unittest".into(),
            cwd: None,
            tool_run_id: None,
            agent_id: Some(agent.into()),
            task_id: Some(task.into()),
            origin_message_id: None,
        }));
        out.push(of(&p::CommandCompleted {
            command_run_id: command_run_id.clone(),
            exit_code: 0,
            duration_ms: Some(100),
        }));
        for kind in [EvidenceType::BuildPass, EvidenceType::TestPass] {
            out.push(of(&p::EvidenceCreated {
                evidence: EvidenceRef {
                    id: format!("{agent}-e{k}-{}", kind.as_str()),
                    kind: EvidenceKind::CommandRun,
                    reference: format!("command-run:{command_run_id}"),
                    location: None,
                    claim: "it passed".into(),
                    evidence_type: Some(kind),
                },
                task_id: Some(task.into()),
                agent_id: Some(agent.into()),
                command_run_id: Some(command_run_id.clone()),
                covers: None,
            }));
        }
    }
    out
}

/// Typed payloads of different types as events.
mod erased {
    use air_proto::event::{EventSource, RuntimeEvent};
    use air_proto::events::Event;

    pub trait Payload {
        fn event(&self, session: &str, source: EventSource) -> RuntimeEvent;
    }

    impl<E: Event> Payload for E {
        fn event(&self, session: &str, source: EventSource) -> RuntimeEvent {
            RuntimeEvent::of(session, source, self).unwrap()
        }
    }
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    air_proto::layout::init(dir.path(), "2026-12-02T00:00:00Z").unwrap();
    let session = Session::create(
        &ProjectPaths::new(dir.path()),
        "6f1c1e0a-3b2d-4c5e-8f9a-0b1c2d3e4f50",
        "s-bench",
        &p::SessionCreated {
            title: Some("bench".into()),
            plan_ref: None,
        },
        SessionConfig::default(),
    )
    .unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let t0 = Instant::now();
    rt.block_on(async {
        for a in 0..AGENTS {
            let evs = events(session.id(), &format!("T{a}-executor-1"), &format!("T{a}"));
            session.store().append_batch(evs).await.unwrap();
        }
    });
    let rows: i64 = session
        .readers()
        .get()
        .unwrap()
        .query_row("SELECT COUNT(*) FROM evidence_refs", [], |r| r.get(0))
        .unwrap();
    println!(
        "session: {rows} evidence rows, {} commands, {} changes, loaded in {:.1} s",
        AGENTS * STEPS,
        AGENTS * STEPS,
        t0.elapsed().as_secs_f64()
    );
    let spec = air_tests::task_spec("T250", &[]);
    let mut spec = spec;
    spec.category = Some(air_proto::task::TaskCategory::Logic);
    let subject = GateSubject {
        spec,
        agents: vec!["T250-executor-1".into()],
        completes: true,
    };
    let mut result = WorkerResult::new(
        "T250",
        "T250-executor-1",
        AgentType::Executor,
        WorkerStatus::Completed,
        "done".into(),
    );
    result.changed_files = vec!["src/f0.py".into()];
    let verdict = judge(&session, dir.path(), &subject, &result);
    assert!(verdict.passed(), "{verdict:?}");
    let mut times: Vec<Duration> = (0..RUNS)
        .map(|_| {
            let t = Instant::now();
            let v = judge(&session, dir.path(), &subject, &result);
            let d = t.elapsed();
            assert!(v.passed());
            d
        })
        .collect();
    times.sort();
    let at = |q: f64| times[((RUNS as f64 - 1.0) * q) as usize];
    println!(
        "gate on a result (ledger of {} commands, {} changes, {} pieces read, then checked): median {:.3} ms, p99 {:.3} ms, max {:.3} ms ({RUNS} runs); target ≤ 1 ms",
        STEPS,
        STEPS,
        STEPS * 2,
        at(0.5).as_secs_f64() * 1e3,
        at(0.99).as_secs_f64() * 1e3,
        times[RUNS - 1].as_secs_f64() * 1e3,
    );
}
