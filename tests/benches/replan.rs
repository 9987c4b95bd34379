//! Re-plan bookkeeping on a 1,000-task graph, model time excluded: 500 tasks done, a
//! requirement change freezes dispatch, the designer says what it touches, the core
//! works out its impact on every task (seed 001 §14) and stops the impacted running
//! one, the designer's new graph (what the change does not touch kept, 100 unfinished
//! tasks changed, 50 removed, 50 added) is checked, the user confirms, and the core
//! computes the diff and applies it — from the `requirement.changed` fact to the
//! updated graph ready to dispatch.
//!
//! Run: `cargo bench -p air-tests --bench replan`
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use air_proto::event::AgentType;
use air_proto::payload::PlanDecided;
use air_proto::planning::{ChangeDescription, ChangeScope, PlanDecision, PlanningTurn, Proposal};
use air_proto::projection::TaskStatus;
use air_proto::result::WorkerStatus;
use airsd::scheduler::core::PlanningFact;
use airsd::scheduler::sim::{diligent, result_for, Play, Sim};
use airsd::scheduler::{Config, Fact};

const TASKS: usize = 1_000;
const RUNS: usize = 5;

/// A task of the plan; `v` marks its version (a changed task says so).
fn task(s: &mut String, n: usize, v: &str) {
    let _ = writeln!(s, "## Task T{n}: Step {n}\n");
    let _ = writeln!(s, "- category: docs");
    let _ = writeln!(s, "- expected_files: `doc/s{n}.md`");
    if n > 1 {
        let _ = writeln!(s, "- depends_on: T{}", n - 1);
    }
    let _ = writeln!(s, "\nWrite step {n}{v}.\n");
}

fn old_plan() -> String {
    let mut s = String::from("# A big plan\n\nMany steps.\n\n");
    for n in 1..=TASKS {
        task(&mut s, n, "");
    }
    s
}

/// The new graph: 1–500 kept (done), 501–600 changed, 601–900 kept, 901–950
/// removed, 951–1000 kept, 1001–1050 added.
fn new_plan() -> String {
    let mut s = String::from("# A big plan\n\nMany steps.\n\n");
    for n in 1..=TASKS + 50 {
        match n {
            501..=600 => task(&mut s, n, ", as changed"),
            901..=950 => {}
            951 => {
                // Its dependency was removed: it now follows T900.
                let _ = writeln!(s, "## Task T951: Step 951\n\n- category: docs\n- expected_files: `doc/s951.md`\n- depends_on: T900\n\nWrite step 951.\n");
            }
            _ => task(&mut s, n, ""),
        }
    }
    s
}

/// The change as the designer classifies it: the steps it rewrites or drops.
fn change() -> ChangeDescription {
    ChangeDescription {
        scope: ChangeScope::Implementation,
        affected_modules: Vec::new(),
        tasks: (501..=600)
            .chain(901..=951)
            .map(|n| format!("T{n}"))
            .collect(),
        summary: "a change of half the remaining steps".into(),
    }
}

/// The designer's turn answering with `turn`.
fn answer(sim: &mut Sim, turn: PlanningTurn) -> String {
    let designer = sim
        .settle()
        .into_iter()
        .find(|d| d.role == AgentType::ArchitectureDesigner)
        .unwrap();
    let mut r = result_for(&designer, WorkerStatus::Completed, false);
    r.changed_files.clear();
    r.result = serde_json::to_value(turn).unwrap();
    sim.finish(&designer.agent_id, Play::Result(Box::new(r)));
    designer.task_id
}

fn main() {
    let tasks = air_proto::plan::compile("big.md", &old_plan())
        .unwrap()
        .graph
        .tasks;
    let proposal = Proposal {
        summary: "Steps 501–600 change, 901–950 go, 50 more come.".into(),
        modules: Vec::new(),
        decisions: Vec::new(),
        plan: new_plan(),
        change: Some(change()),
    };
    let config = Config {
        concurrency: 1,
        ..Config::default()
    };
    let mut times = Vec::new();
    let mut shown = (0, 0, 0);
    for _ in 0..RUNS {
        let start = Fact::RunStarted {
            concurrency: 1,
            on_ask: air_proto::plan::OnAsk::Deny,
            budgets: Default::default(),
            confirm: false,
            isolated: false,
        };
        let mut sim = Sim::with_start(config.clone(), start, &tasks);
        // 500 tasks done (the setup, not measured).
        while sim.core.status("T500") != Some(TaskStatus::Completed) {
            let d = sim
                .settle()
                .into_iter()
                .next()
                .or_else(|| sim.running.first().cloned())
                .unwrap();
            sim.finish(&d.agent_id, diligent(&d));
        }
        let t = Instant::now();
        sim.record(Fact::RequirementChanged {
            change: "half the remaining steps change".into(),
        });
        answer(
            &mut sim,
            PlanningTurn {
                classified: Some(change()),
                ..PlanningTurn::default()
            },
        );
        let turn = answer(
            &mut sim,
            PlanningTurn {
                proposal: Some(proposal.clone()),
                ..PlanningTurn::default()
            },
        );
        sim.settle();
        sim.record(Fact::Planning(Box::new(PlanningFact::Decided(
            PlanDecided {
                task_id: turn,
                decision: PlanDecision::Confirm,
                note: None,
                run: true,
                client: None,
            },
        ))));
        // The running T501 is impacted: stopped at once, the update goes on.
        for _ in 0..4 {
            if let Some(d) = sim
                .running
                .iter()
                .find(|d| d.role != AgentType::ArchitectureDesigner)
                .cloned()
            {
                sim.finish(&d.agent_id, diligent(&d));
            }
            sim.settle();
        }
        let took = t.elapsed();
        let update = sim.plan_update().expect("the update was applied");
        shown = (
            update.changed.len(),
            update.removed.len(),
            update.added.len(),
        );
        assert_eq!(sim.core.status("T1050"), Some(TaskStatus::Pending));
        times.push(took);
    }
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "re-plan bookkeeping on a {TASKS}-task graph (500 done; {} changed, {} removed, {} added), {RUNS} runs: median {:.1} ms, max {:.1} ms (target ≤ 50 ms)",
        shown.0,
        shown.1,
        shown.2,
        ms(times[RUNS / 2]),
        ms(times[RUNS - 1])
    );
}
