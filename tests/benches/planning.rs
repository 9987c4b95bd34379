//! The check of an Architecture Designer's proposal: a 200-task plan in four phases,
//! each task depending on earlier ones, compiled and checked as `propose_plan` is
//! (`airsd::scheduler::core::proposed`: the compiler of `air plan check`, its cycle
//! and wave checks included, and the task ids against the session's), then shown:
//! the recorded `architecture.plan.proposed` encoded, and the graph drawn in waves as
//! `air plan new` and the TUI show it.
//!
//! Run: `cargo bench -p air-tests --bench planning`
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use air_proto::planning::{check_proposal, Proposal};

const TASKS: usize = 200;
const RUNS: usize = 50;

fn plan() -> String {
    let mut s = String::from(
        "---\ntitle: A big plan\nconcurrency: 4\n---\n\n# A big plan\n\nMany tasks.\n\n",
    );
    for phase in 0..4 {
        let _ = writeln!(s, "## Phase p{phase}: Part {phase}\n");
        for k in 0..TASKS / 4 {
            let n = phase * (TASKS / 4) + k + 1;
            let _ = writeln!(s, "### Task T{n}: Step {n}\n");
            let _ = writeln!(s, "- category: logic");
            let _ = writeln!(s, "- expected_files: `src/m{n}.rs`");
            if n > 2 {
                let _ = writeln!(s, "- depends_on: T{}, T{}", n - 1, n / 2);
            }
            let _ = writeln!(s, "- verify: `cargo test m{n}`\n");
            let _ = writeln!(s, "Build step {n} of the thing.\n");
            let _ = writeln!(s, "Acceptance criteria:\n- step {n} works\n");
        }
    }
    s
}

fn main() {
    let proposal = Proposal {
        summary: "Four parts, built in order.".into(),
        modules: Vec::new(),
        decisions: Vec::new(),
        plan: plan(),
        change: None,
    };
    // The session's tasks so far: a conversation's.
    let taken: Vec<String> = (1..=20).map(|n| format!("main:{n}")).collect();
    let mut times: Vec<Duration> = (0..RUNS)
        .map(|_| {
            let t = Instant::now();
            let pl = airsd::scheduler::core::proposed("plan:3", "", proposal.clone(), &taken, None)
                .unwrap();
            let recorded = serde_json::to_vec(&pl).unwrap();
            let compiled = check_proposal(&pl.proposal).unwrap();
            let shown = air_proto::plan::graph::text(&compiled.graph, &Default::default());
            let took = t.elapsed();
            assert_eq!(pl.tasks.len(), TASKS);
            assert!(recorded.len() > proposal.plan.len() && shown.contains("wave 1"));
            took
        })
        .collect();
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "propose_plan's check of a {TASKS}-task plan ({} bytes, 4 phases), recorded and shown in waves, {RUNS} runs: median {:.2} ms, max {:.2} ms (target ≤ 20 ms)",
        proposal.plan.len(),
        ms(times[RUNS / 2]),
        ms(times[RUNS - 1])
    );
}
