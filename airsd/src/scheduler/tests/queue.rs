//! The merge queue's rules in the core: in a run whose tasks work in their own
//! worktrees a reviewed task completes only through [`Decision::Merge`], one merge at
//! a time, in plan order; a refused merge goes to the debugger and then a new
//! attempt, and with no retry left blocks the task.

use super::*;

fn isolated(concurrency: u32) -> Fact {
    Fact::RunStarted {
        concurrency,
        on_ask: air_proto::plan::OnAsk::Queue,
        budgets: air_proto::plan::Budgets::default(),
        confirm: false,
        isolated: true,
    }
}

/// Plays every running agent diligently until none runs.
fn drain(sim: &mut Sim) {
    for _ in 0..50 {
        let batch: Vec<Dispatch> = sim.running.clone();
        if batch.is_empty() {
            return;
        }
        for d in batch {
            sim.finish(&d.agent_id, ok(&d));
            sim.now_ms += 10;
            sim.settle();
        }
    }
}

fn status(sim: &Sim, task: &str) -> Option<TaskStatus> {
    sim.core.status(task)
}

#[test]
fn reviewed_tasks_merge_one_at_a_time_in_plan_order() {
    let tasks = plan("## Task A: a\n\n## Task B: b\n\n## Task C: c\n\n- depends_on: A\n");
    let mut sim = Sim::with_start(config(3), isolated(3), &tasks);
    sim.hold_merges = true;
    sim.settle();
    drain(&mut sim);
    // A and B are reviewed; only A (first in the plan) merges, B waits its turn.
    assert_eq!(sim.merging, ["A"]);
    assert_eq!(status(&sim, "A"), Some(TaskStatus::Reviewing));
    assert_eq!(
        status(&sim, "C"),
        Some(TaskStatus::Pending),
        "C waits for A's merge"
    );
    sim.settle();
    assert_eq!(sim.merging, ["A"], "never two at once");
    sim.end_merge("A", Ok(()));
    sim.settle();
    assert_eq!(status(&sim, "A"), Some(TaskStatus::Completed));
    assert_eq!(sim.merging, ["B"]);
    // C starts once A is merged, and queues behind B.
    drain(&mut sim);
    assert_eq!(sim.merging, ["B"]);
    sim.end_merge("B", Ok(()));
    sim.settle();
    assert_eq!(sim.merging, ["C"]);
    sim.end_merge("C", Ok(()));
    sim.settle();
    assert_eq!(
        sim.outcome.as_ref().map(|o| o.outcome),
        Some(RunOutcome::Completed)
    );
}

#[test]
fn a_refused_merge_is_debugged_then_attempted_again_and_blocks_when_no_retry_is_left() {
    let tasks = plan("## Task A: a\n\n- retry_budget: 1\n");
    let mut sim = Sim::with_start(config(1), isolated(1), &tasks);
    sim.hold_merges = true;
    sim.settle();
    drain(&mut sim);
    assert_eq!(sim.merging, ["A"]);
    sim.end_merge(
        "A",
        Err("its check `make test` failed on the merged tree".into()),
    );
    let dbg = only(&sim.settle(), "the debugger").clone();
    assert_eq!(dbg.role, AgentType::Debugger);
    assert!(
        dbg.notes
            .iter()
            .any(|n| n.contains("failed on the merged tree")),
        "{:?}",
        dbg.notes
    );
    sim.finish(&dbg.agent_id, ok(&dbg));
    let exec = only(&sim.settle(), "the next attempt").clone();
    assert_eq!((exec.role, exec.attempt), (AgentType::Executor, 2));
    drain(&mut sim);
    assert_eq!(sim.merging, ["A"], "merged again after its review");
    sim.end_merge("A", Err("it conflicts in calc.py".into()));
    sim.settle();
    let (end, why) = finish_reason(&sim, "A");
    assert_eq!(end, TaskStatus::Blocked);
    assert!(why.unwrap_or_default().contains("conflicts in calc.py"));
}

#[test]
fn a_run_that_shares_the_checkout_completes_without_the_queue() {
    let tasks = plan("## Task A: a\n");
    let mut sim = Sim::new(config(1), &tasks);
    sim.hold_merges = true;
    sim.settle();
    drain(&mut sim);
    assert!(sim.merging.is_empty());
    assert_eq!(status(&sim, "A"), Some(TaskStatus::Completed));
}

#[test]
fn new_tasks_wait_while_the_merge_queue_is_full() {
    let mut md = String::new();
    for i in 0..10 {
        md.push_str(&format!("## Task T{i}: t{i}\n\n"));
    }
    let tasks = plan(&md);
    let mut sim = Sim::with_start(config(2), isolated(2), &tasks);
    sim.hold_merges = true;
    sim.settle();
    drain(&mut sim);
    // At most six are started and not finished (as many as may run, 2, and then
    // the least the queue holds, 4, over a concurrency of 2): the rest wait.
    let queued = |sim: &Sim| {
        (0..10)
            .filter(|i| status(sim, &format!("T{i}")) == Some(TaskStatus::Reviewing))
            .count()
    };
    assert_eq!(queued(&sim), 6);
    assert!(sim.running.is_empty());
    assert_eq!(status(&sim, "T9"), Some(TaskStatus::Ready));
    // Each merge lets one more start; everything completes.
    for i in 0..10 {
        assert_eq!(sim.merging, [format!("T{i}")]);
        sim.end_merge(&format!("T{i}"), Ok(()));
        sim.settle();
        drain(&mut sim);
        assert!(queued(&sim) <= 6);
    }
    assert_eq!(
        sim.outcome.as_ref().map(|o| o.outcome),
        Some(RunOutcome::Completed)
    );
}
