//! The check of an Architecture Designer's proposal: a 200-task plan in four phases,
//! each task depending on earlier ones, compiled and checked as `propose_plan` will
//! (`air_proto::planning::check_proposal`: the compiler of `air plan check`, its
//! cycle and wave checks included).
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
    };
    let mut times: Vec<Duration> = (0..RUNS)
        .map(|_| {
            let t = Instant::now();
            let compiled = check_proposal(&proposal).unwrap();
            let took = t.elapsed();
            assert_eq!(compiled.graph.tasks.len(), TASKS);
            took
        })
        .collect();
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "propose_plan's check of a {TASKS}-task plan ({} bytes, 4 phases), {RUNS} runs: median {:.2} ms, max {:.2} ms (target ≤ 20 ms, with showing it)",
        proposal.plan.len(),
        ms(times[RUNS / 2]),
        ms(times[RUNS - 1])
    );
}
