#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The rules of the scheduler core, one test per rule, and property tests on random
//! graphs (ordering, exclusion, termination, evidence, crash recovery).

use std::collections::{HashMap, HashSet};

use air_proto::event::AgentType;
use air_proto::payload::{AgentFailure, RunOutcome};
use air_proto::projection::TaskStatus;
use air_proto::result::{
    FollowUpTask, ReviewDecision, ReviewFinding, ReviewerOutput, Severity, VerificationResult,
    VerificationStatus, WorkerStatus,
};
use air_proto::task::{DependencyType, TaskSpec};
use proptest::prelude::*;

mod conversation;
mod planning;
mod policy;
mod queue;
mod replan;

use super::sim::{debug, diligent, result_for, review, Play, Sim};
use super::{gate, Config, Decision, Dispatch, Fact};

fn plan(md: &str) -> Vec<TaskSpec> {
    air_proto::plan::compile("t.md", md).unwrap().graph.tasks
}

fn config(concurrency: u32) -> Config {
    Config {
        concurrency,
        ..Config::default()
    }
}

fn only<'a>(started: &'a [Dispatch], what: &str) -> &'a Dispatch {
    assert_eq!(started.len(), 1, "{what}: {started:?}");
    &started[0]
}

fn finish_reason(sim: &Sim, task: &str) -> (TaskStatus, Option<String>) {
    sim.facts
        .iter()
        .rev()
        .find_map(|f| match f {
            Fact::TaskFinished {
                task_id,
                status,
                reason,
            } if task_id == task => Some((*status, reason.clone())),
            _ => None,
        })
        .unwrap()
}

/// The Architecture Designer the scheduler consults when a task runs out of attempts:
/// dispatched once, told how the task would end, answering `decision`.
fn consulted(sim: &mut Sim, decision: air_proto::result::ConsultDecision, end: &str) -> Dispatch {
    let ad = only(&sim.settle(), "the consult").clone();
    assert_eq!(ad.role, AgentType::ArchitectureDesigner);
    assert_eq!(
        ad.agent_id,
        format!("{}-architecture_designer-1", ad.task_id)
    );
    assert!(
        ad.notes
            .iter()
            .any(|n| n.contains(&format!("about to end this task as {end}"))),
        "{:?}",
        ad.notes
    );
    sim.finish(&ad.agent_id, res(super::sim::consult(&ad, decision)));
    ad
}

fn ok(d: &Dispatch) -> Play {
    diligent(d)
}

fn res(r: air_proto::result::WorkerResult) -> Play {
    Play::Result(Box::new(r))
}

#[test]
fn an_executor_result_always_goes_to_a_reviewer_before_completion() {
    let mut sim = Sim::new(config(2), &plan("## Task A: a\n\n- category: logic\n"));
    let started = sim.settle();
    let exec = only(&started, "executor").clone();
    assert_eq!(
        (exec.role, exec.attempt, exec.agent_id.as_str()),
        (AgentType::Executor, 1, "A-executor-1")
    );
    assert_eq!(sim.core.status("A"), Some(TaskStatus::Running));

    sim.finish(&exec.agent_id, ok(&exec));
    let started = sim.settle();
    let reviewer = only(&started, "reviewer").clone();
    assert_eq!(reviewer.role, AgentType::Reviewer);
    assert_eq!(reviewer.previous.as_ref().unwrap().agent_id, "A-executor-1");
    assert_eq!(sim.core.status("A"), Some(TaskStatus::Reviewing));

    sim.finish(&reviewer.agent_id, ok(&reviewer));
    sim.settle();
    assert_eq!(sim.core.status("A"), Some(TaskStatus::Completed));
    let outcome = sim.outcome.clone().unwrap();
    assert_eq!(
        (outcome.outcome, outcome.completed),
        (RunOutcome::Completed, 1)
    );
    assert!(sim.core.is_finished());
}

/// A review counts by its decision, whatever its status word: a reviewer that says
/// `failed` with findings has rejected, and the findings reach the next attempt.
#[test]
fn a_rejection_under_any_status_word_sends_its_findings_to_the_next_attempt() {
    for status in [
        WorkerStatus::Failed,
        WorkerStatus::Blocked,
        WorkerStatus::Completed,
    ] {
        let mut sim = Sim::new(config(1), &plan("## Task A: a\n"));
        let exec = only(&sim.settle(), "executor").clone();
        sim.finish(&exec.agent_id, ok(&exec));
        let rev = only(&sim.settle(), "reviewer").clone();
        let mut r = review(&rev, ReviewDecision::ChangesRequested);
        r.status = status;
        r.result = serde_json::to_value(ReviewerOutput {
            decision: ReviewDecision::ChangesRequested,
            findings: vec![ReviewFinding {
                severity: Severity::High,
                summary: "an empty string must give an empty dict".into(),
                file: Some("wordcount/counter.py".into()),
                line: Some(9),
            }],
            deviation: None,
        })
        .unwrap();
        sim.finish(&rev.agent_id, res(r));
        let again = only(&sim.settle(), "the executor again").clone();
        assert_eq!(again.role, AgentType::Executor, "{status:?}");
        assert!(
            again
                .notes
                .iter()
                .any(|n| n
                    .contains("wordcount/counter.py:9: an empty string must give an empty dict")),
            "{status:?}: {:?}",
            again.notes
        );
    }
}

#[test]
fn changes_requested_twice_are_redispatched_and_the_third_escalates() {
    let mut sim = Sim::new(config(1), &plan("## Task A: a\n"));
    for round in 1..=3 {
        let exec = only(&sim.settle(), "executor").clone();
        assert_eq!(exec.attempt, round);
        if round > 1 {
            assert!(exec.notes[0].contains("missing tests"), "{:?}", exec.notes);
        }
        sim.finish(&exec.agent_id, ok(&exec));
        let rev = only(&sim.settle(), "reviewer").clone();
        let mut r = review(&rev, ReviewDecision::ChangesRequested);
        r.result = serde_json::to_value(ReviewerOutput {
            decision: ReviewDecision::ChangesRequested,
            findings: vec![ReviewFinding {
                severity: Severity::High,
                summary: "missing tests".into(),
                file: Some("src/a.rs".into()),
                line: Some(3),
            }],
            deviation: None,
        })
        .unwrap();
        sim.finish(&rev.agent_id, res(r));
    }
    consulted(
        &mut sim,
        air_proto::result::ConsultDecision::Stop,
        "blocked",
    );
    sim.settle();
    let (status, reason) = finish_reason(&sim, "A");
    assert_eq!(status, TaskStatus::Blocked);
    let reason = reason.unwrap();
    assert!(
        reason.contains("requested changes 3 times in a row"),
        "{reason}"
    );
    assert!(
        reason.contains("the Architecture Designer, consulted, advised stopping: advice on A"),
        "{reason}"
    );
    assert_eq!(sim.outcome.unwrap().outcome, RunOutcome::Blocked);
}

#[test]
fn a_result_without_its_evidence_cannot_complete_the_task() {
    let mut sim = Sim::new(
        config(1),
        &plan("## Task A: a\n\n- category: logic\n- verify: `make test`\n"),
    );
    for round in 1..=3 {
        let exec = only(&sim.settle(), "executor").clone();
        assert_eq!(
            exec.role,
            AgentType::Executor,
            "round {round}: no reviewer for a lying result"
        );
        if round > 1 {
            let note = &exec.notes[0];
            assert!(note.contains("missing build_pass evidence"), "{note}");
            assert!(note.contains("missing test_pass evidence"), "{note}");
            assert!(note.contains("verification is required"), "{note}");
        }
        // Claims completion with nothing to show for it.
        sim.finish(
            &exec.agent_id,
            res(result_for(&exec, WorkerStatus::Completed, false)),
        );
    }
    consulted(
        &mut sim,
        air_proto::result::ConsultDecision::Stop,
        "blocked",
    );
    sim.settle();
    let (status, reason) = finish_reason(&sim, "A");
    assert_eq!(status, TaskStatus::Blocked);
    assert!(reason.unwrap().contains("failed its evidence gate 3 times"));
}

#[test]
fn the_global_evidence_rules_apply() {
    let spec = &plan("## Task A: a\n\n- category: docs\n")[0];
    let d = Dispatch {
        task_id: "A".into(),
        agent_id: "A-executor-1".into(),
        role: AgentType::Executor,
        attempt: 1,
        spec: spec.clone(),
        notes: vec![],
        previous: None,
    };
    let mut r = result_for(&d, WorkerStatus::Completed, false);
    r.changed_files.clear();
    assert_eq!(
        gate::check_recorded_claims(spec, &r).unwrap_err(),
        ["missing explanation evidence"],
        "done without changes needs an explanation"
    );
    r.changed_files = vec!["src/net/socket.CPP".into()];
    assert_eq!(
        gate::check_recorded_claims(spec, &r).unwrap_err(),
        ["missing static_analysis evidence"],
        "C++ changes need static analysis"
    );
    r.status = WorkerStatus::Failed;
    assert!(gate::required_evidence(spec, &r)
        .contains(&air_proto::task::EvidenceType::DebuggerAnalysis));
    // verification.required: a failed check and no passed one.
    let spec = &plan("## Task B: b\n\n- verify: `make`\n")[0];
    let mut r = result_for(
        &Dispatch {
            spec: spec.clone(),
            ..d
        },
        WorkerStatus::Completed,
        false,
    );
    r.verification.push(VerificationResult {
        name: "make".into(),
        status: VerificationStatus::Failed,
        evidence_refs: None,
        notes: None,
    });
    let reasons = gate::check_recorded_claims(spec, &r).unwrap_err();
    assert!(
        reasons.contains(&"verification `make` is failed".to_string()),
        "{reasons:?}"
    );
    assert!(
        reasons.contains(&"no verification passed".to_string()),
        "{reasons:?}"
    );
}

#[test]
fn a_failure_goes_to_the_debugger_and_retries_while_the_budget_lasts() {
    let tasks = plan("## Task A: a\n\n- retry_budget: 1\n\n## Task B: b\n\n- depends_on: A\n");
    let mut sim = Sim::new(config(2), &tasks);
    let failing = |d: &Dispatch| {
        let mut r = result_for(d, WorkerStatus::Failed, false);
        r.verification.push(VerificationResult {
            name: format!("build {}", d.attempt),
            status: VerificationStatus::Failed,
            evidence_refs: None,
            notes: None,
        });
        r
    };
    let exec = only(&sim.settle(), "executor").clone();
    sim.finish(&exec.agent_id, res(failing(&exec)));
    let dbg = only(&sim.settle(), "debugger").clone();
    assert_eq!(dbg.role, AgentType::Debugger);
    assert_eq!(sim.core.status("A"), Some(TaskStatus::Debugging));
    assert_eq!(dbg.previous.as_ref().unwrap().status, WorkerStatus::Failed);
    sim.finish(&dbg.agent_id, res(debug(&dbg, WorkerStatus::Completed)));

    let exec = only(&sim.settle(), "retry").clone();
    assert_eq!(exec.attempt, 2);
    assert!(exec.notes[0].starts_with("The debugger's analysis: the cause of A"));
    sim.finish(&exec.agent_id, res(failing(&exec)));
    let dbg = only(&sim.settle(), "debugger 2").clone();
    assert_eq!(dbg.agent_id, "A-debugger-2");
    sim.finish(&dbg.agent_id, res(debug(&dbg, WorkerStatus::Completed)));
    consulted(&mut sim, air_proto::result::ConsultDecision::Stop, "failed");
    sim.settle();
    let (status, reason) = finish_reason(&sim, "A");
    assert_eq!(status, TaskStatus::Failed);
    let reason = reason.unwrap();
    assert!(
        reason.contains("retry budget (1) spent; debugger analysis: the cause of A"),
        "{reason}"
    );
    let (status, reason) = finish_reason(&sim, "B");
    assert_eq!(status, TaskStatus::Blocked);
    assert_eq!(reason.unwrap(), "waits for A, which is failed");
    assert_eq!(sim.outcome.unwrap().outcome, RunOutcome::Failed);
}

#[test]
fn a_debugger_without_an_analysis_cannot_fail_a_task_silently() {
    let mut sim = Sim::new(config(1), &plan("## Task A: a\n"));
    let exec = only(&sim.settle(), "executor").clone();
    sim.finish(
        &exec.agent_id,
        res(result_for(&exec, WorkerStatus::Failed, false)),
    );
    let dbg = only(&sim.settle(), "debugger").clone();
    sim.finish(
        &dbg.agent_id,
        res(result_for(&dbg, WorkerStatus::Failed, false)),
    );
    sim.settle();
    let (status, reason) = finish_reason(&sim, "A");
    assert_eq!(status, TaskStatus::Blocked);
    assert!(reason
        .unwrap()
        .contains("the debugger returned no analysis"));
}

/// No model answered the executor (its provider and fallbacks failed, or a replay no
/// longer matches): no debugger is sent to ask the same model; the task waits for a
/// person, with that reason, and what waits on it says so.
#[test]
fn an_unreachable_model_blocks_the_task_without_a_debugger() {
    let mut sim = Sim::new(
        config(1),
        &plan("## Task A: a\n\n## Task B: b\n\n- depends_on: A\n"),
    );
    let exec = only(&sim.settle(), "executor").clone();
    let mut r = air_proto::result::WorkerResult::new(
        &exec.task_id,
        &exec.agent_id,
        exec.role,
        WorkerStatus::Blocked,
        "the model could not be reached: request 4: the request no longer matches the recording"
            .into(),
    );
    r.result = serde_json::json!({ air_proto::result::MODEL_UNREACHABLE: "request 4" });
    sim.finish(&exec.agent_id, res(r));
    let next = sim.settle();
    assert!(
        next.iter().all(|d| d.role != AgentType::Debugger),
        "{next:?}"
    );
    let (status, reason) = finish_reason(&sim, "A");
    assert_eq!(status, TaskStatus::Blocked);
    assert!(
        reason.unwrap().contains("no longer matches the recording"),
        "the cause is the reason"
    );
    assert_eq!(sim.core.status("B"), Some(TaskStatus::Blocked));
}

/// An executor that crashed left no result: the debugger analyses it (global rule
/// 1), then the task retries as a new attempt within its budget.
fn crash_then_analyse(
    sim: &mut Sim,
    attempt: u32,
    failure: AgentFailure,
    reason: &str,
) -> Dispatch {
    let exec = only(&sim.settle(), "executor").clone();
    assert_eq!(exec.role, AgentType::Executor);
    assert_eq!(exec.attempt, attempt);
    sim.finish(&exec.agent_id, Play::Fail(failure, reason.into()));
    let dbg = only(&sim.settle(), "the debugger's analysis").clone();
    assert_eq!(dbg.role, AgentType::Debugger);
    assert_eq!(
        dbg.attempt, attempt,
        "the debugger works on the failed attempt"
    );
    assert!(
        dbg.notes[0].contains(&format!(
            "ended without a result ({}): {reason}",
            failure.as_str()
        )),
        "{:?}",
        dbg.notes
    );
    dbg
}

#[test]
fn crashes_are_analysed_then_retried_and_the_same_crash_three_times_escalates() {
    let mut sim = Sim::new(config(1), &plan("## Task A: a\n\n- retry_budget: 5\n"));
    for attempt in 1..=3 {
        let reason = format!("exit code 101 (pid {})", 4000 + attempt);
        let dbg = crash_then_analyse(&mut sim, attempt, AgentFailure::Crash, &reason);
        sim.finish(&dbg.agent_id, res(debug(&dbg, WorkerStatus::Completed)));
    }
    sim.settle();
    let (status, reason) = finish_reason(&sim, "A");
    assert_eq!(status, TaskStatus::Blocked);
    let reason = reason.unwrap();
    assert!(
        reason.contains("the same failure 3 times, escalated: crash: exit code"),
        "{reason}"
    );
    assert!(
        reason.contains("debugger analysis: the cause of A's failure"),
        "{reason}"
    );

    // Different failures run out of budget instead, each analysed.
    let no_consult = Config {
        consult: false,
        ..config(1)
    };
    let mut sim = Sim::new(no_consult, &plan("## Task A: a\n\n- retry_budget: 1\n"));
    let dbg = crash_then_analyse(&mut sim, 1, AgentFailure::Crash, "segfault");
    sim.finish(&dbg.agent_id, res(debug(&dbg, WorkerStatus::Completed)));
    let dbg = crash_then_analyse(&mut sim, 2, AgentFailure::Protocol, "garbage on stdout");
    sim.finish(&dbg.agent_id, res(debug(&dbg, WorkerStatus::Completed)));
    sim.settle();
    let (status, reason) = finish_reason(&sim, "A");
    assert_eq!(status, TaskStatus::Failed);
    let reason = reason.unwrap();
    assert!(
        reason.contains("retry budget (1) spent; debugger analysis"),
        "{reason}"
    );
}

#[test]
fn soft_timeouts_warn_and_allow_extensions_hard_timeouts_kill() {
    let mut sim = Sim::new(
        Config {
            consult: false,
            ..config(1)
        },
        &plan("## Task A: a\n\n- soft_timeout: 10m\n- hard_timeout: 20m\n- retry_budget: 0\n"),
    );
    let exec = only(&sim.settle(), "executor").clone();
    assert_eq!(
        sim.core.extension_grant(&exec.agent_id, 60_000),
        0,
        "not before the warning"
    );
    let beat = |sim: &mut Sim, to: u64| {
        while sim.now_ms < to {
            sim.now_ms += 60_000;
            sim.record(Fact::Heartbeat {
                agent_id: exec.agent_id.clone(),
                model: None,
                beat: None,
            });
            sim.settle();
        }
    };
    beat(&mut sim, 1_000 + 600_000);
    assert!(sim.decisions.iter().any(
        |d| matches!(d, Decision::WarnSoftTimeout { agent_id, .. } if agent_id == &exec.agent_id)
    ));
    let grant = sim.core.extension_grant(&exec.agent_id, 5 * 60_000);
    assert_eq!(grant, 300_000);
    assert_eq!(
        sim.core.extension_grant(&exec.agent_id, 10 * 3_600_000),
        1_200_000,
        "capped at the hard timeout"
    );
    sim.record(Fact::TimeoutExtended {
        agent_id: exec.agent_id.clone(),
        extra_ms: grant,
    });
    beat(&mut sim, 1_000 + 1_200_000 + 60_000);
    assert!(
        !sim.decisions
            .iter()
            .any(|d| matches!(d, Decision::Kill { .. })),
        "extended"
    );
    beat(&mut sim, 1_000 + 1_500_000 + 60_000);
    let kill = sim
        .decisions
        .iter()
        .find(|d| matches!(d, Decision::Kill { .. }))
        .unwrap();
    let Decision::Kill {
        failure, reason, ..
    } = kill
    else {
        unreachable!()
    };
    assert_eq!(*failure, AgentFailure::Timeout);
    assert!(reason.starts_with("hard timeout"), "{reason}");
    // Killed on its hard timeout, it is analysed before the task fails.
    let dbg = sim
        .decisions
        .iter()
        .rev()
        .find_map(|d| match d {
            Decision::Dispatch(d) if d.role == AgentType::Debugger => Some((**d).clone()),
            _ => None,
        })
        .expect("the debugger after a timeout");
    sim.finish(&dbg.agent_id, res(debug(&dbg, WorkerStatus::Completed)));
    sim.settle();
    let (status, reason) = finish_reason(&sim, "A");
    assert_eq!(status, TaskStatus::Failed);
    assert!(reason.unwrap().contains("debugger analysis"));
}

/// A hold stops an agent's clock only once its worker holds (the step under way may
/// still time out); released, its limits move by the time it was held, and the hard
/// timeout message counts only the time it ran.
#[test]
fn a_held_agent_stops_its_clock_once_it_holds() {
    let mut sim = Sim::new(
        config(1),
        &plan("## Task A: a\n\n- soft_timeout: 10m\n- hard_timeout: 20m\n- retry_budget: 0\n"),
    );
    let exec = only(&sim.settle(), "executor").clone();
    let id = exec.agent_id.clone();
    let beat = |sim: &mut Sim, to: u64| {
        while sim.now_ms < to {
            sim.now_ms += 60_000;
            sim.record(Fact::Heartbeat {
                agent_id: id.clone(),
                model: None,
                beat: None,
            });
            sim.settle();
        }
    };
    let killed = |sim: &Sim| {
        sim.decisions.iter().find_map(|d| match d {
            Decision::Kill { reason, .. } => Some(reason.clone()),
            _ => None,
        })
    };
    sim.record(Fact::AgentHeld {
        agent_id: id.clone(),
    });
    // Asked, not yet holding: the clock runs (the soft warning comes at 10 min).
    beat(&mut sim, 1_000 + 11 * 60_000);
    assert!(sim
        .decisions
        .iter()
        .any(|d| matches!(d, Decision::WarnSoftTimeout { agent_id, .. } if agent_id == &id)));
    // Holding from minute 11 to minute 71: past the 20 min limit, nothing is killed.
    sim.record(Fact::Holding {
        agent_id: id.clone(),
    });
    beat(&mut sim, 1_000 + 71 * 60_000);
    assert_eq!(killed(&sim), None);
    sim.record(Fact::AgentReleased {
        agent_id: id.clone(),
    });
    // 9 more minutes of work are within the limit; the tenth is past it.
    beat(&mut sim, 1_000 + 79 * 60_000);
    assert_eq!(killed(&sim), None);
    beat(&mut sim, 1_000 + 82 * 60_000);
    let reason = killed(&sim).unwrap();
    assert_eq!(reason, "hard timeout: ran 1200 s (limit 1200 s)");
}

#[test]
fn a_silent_agent_is_killed_as_stalled_and_retried() {
    let mut sim = Sim::new(config(1), &plan("## Task A: a\n"));
    let exec = only(&sim.settle(), "executor").clone();
    sim.now_ms += 119_000;
    assert!(sim.settle().is_empty());
    sim.now_ms += 2_000;
    let dbg = only(&sim.settle(), "the debugger after a stall").clone();
    assert!(sim.decisions.iter().any(|d| matches!(d, Decision::Kill { agent_id, failure: AgentFailure::Stalled, .. } if agent_id == &exec.agent_id)));
    assert_eq!(dbg.role, AgentType::Debugger);
    sim.finish(&dbg.agent_id, res(debug(&dbg, WorkerStatus::Completed)));
    let retry = only(&sim.settle(), "retry after the analysis").clone();
    assert_eq!((retry.role, retry.attempt), (AgentType::Executor, 2));
}

/// An agent whose heartbeats keep coming while it moves no further is stuck: not
/// while its turns move, nor while it waits on a tool or on its model, however long;
/// once it stands still waiting on nothing, it is stopped and its task goes to the
/// debugger.
#[test]
fn an_agent_that_heartbeats_but_moves_no_further_is_stopped_as_stuck() {
    let mut sim = Sim::new(
        Config {
            stuck_ms: 300_000,
            ..config(1)
        },
        &plan("## Task A: a\n\n- hard_timeout: 3h\n- soft_timeout: 2h\n"),
    );
    let exec = only(&sim.settle(), "executor").clone();
    let beat = |sim: &mut Sim, turn: u32, tools: u32, model: Option<u64>| {
        sim.now_ms += 60_000;
        sim.record(Fact::Heartbeat {
            agent_id: exec.agent_id.clone(),
            model: Some(model),
            beat: Some(super::core::Beat {
                turn,
                output_tokens: u64::from(turn) * 10,
                tools,
            }),
        });
        sim.settle();
    };
    let stuck = |sim: &Sim| {
        sim.decisions.iter().find_map(|d| match d {
            Decision::Kill {
                failure: AgentFailure::Stuck,
                reason,
                ..
            } => Some(reason.clone()),
            _ => None,
        })
    };
    // Turns that move.
    for turn in 1..=10 {
        beat(&mut sim, turn, 0, None);
    }
    // A build of twenty minutes, then a model that thinks for ten.
    for _ in 0..20 {
        beat(&mut sim, 10, 1, None);
    }
    for n in 1..=10 {
        beat(&mut sim, 10, 0, Some(n * 60_000));
    }
    assert_eq!(stuck(&sim), None);
    // Standing still, waiting on nothing: four minutes are not yet five.
    for _ in 0..4 {
        beat(&mut sim, 10, 0, None);
    }
    assert_eq!(stuck(&sim), None);
    beat(&mut sim, 10, 0, None);
    let reason = stuck(&sim).expect("stopped as stuck");
    assert!(
        reason.starts_with("stuck: its heartbeats came, but for 300 s"),
        "{reason}"
    );
    assert!(
        sim.decisions.iter().any(
            |d| matches!(d, Decision::Dispatch(d) if d.role == AgentType::Debugger && d.task_id == "A")
        ),
        "the debugger after it was stuck"
    );
}

#[test]
fn concurrency_write_areas_and_conflicts_limit_what_runs_together() {
    let tasks = plan(
        "## Task A: a\n\n- write_area: core\n\n## Task B: b\n\n- write_area: core\n\n\
         ## Task C: c\n\n- conflicts_with: D\n\n## Task D: d\n\n## Task E: e\n\n\
         ## Task F: f\n\n- serialize_with: E\n",
    );
    let mut sim = Sim::new(config(10), &tasks);
    let started: Vec<String> = sim.settle().into_iter().map(|d| d.task_id).collect();
    assert_eq!(started, ["A", "C", "E"]);
    let mut sim = Sim::new(config(2), &tasks);
    assert_eq!(sim.settle().len(), 2, "the concurrency limit");
}

#[test]
fn soft_dependencies_order_but_do_not_wait() {
    let tasks = plan("## Task B: b\n\n- soft_depends_on: A\n\n## Task A: a\n");
    let mut sim = Sim::new(config(1), &tasks);
    assert_eq!(only(&sim.settle(), "first").task_id, "A");
    let mut sim = Sim::new(config(2), &tasks);
    assert_eq!(sim.settle().len(), 2, "with room, both run");
}

#[test]
fn phases_wait_for_their_milestone_review() {
    let tasks = plan(
        "## Phase one: first\n\n### Task A: a\n\n### Task B: b\n\n\
         ## Phase two: second\n\n### Task C: c\n",
    );
    let mut sim = Sim::new(config(4), &tasks);
    let mut seen = Vec::new();
    let mut reviews = 0;
    sim.run(
        &mut |d| {
            seen.push((d.task_id.clone(), d.role));
            if d.role == AgentType::ArchitectureDesigner && d.task_id == "one:milestone-1" {
                reviews += 1;
                let mut r = review(d, ReviewDecision::ChangesRequested);
                r.follow_up_tasks.push(FollowUpTask {
                    title: "Align the module names".into(),
                    description: "A and B disagree".into(),
                    task_type: None,
                });
                return res(r);
            }
            diligent(d)
        },
        200,
    );
    let order: Vec<&str> = seen.iter().map(|(t, _)| t.as_str()).collect();
    let first_c = order.iter().position(|t| *t == "C").unwrap();
    let approved = order.iter().position(|t| *t == "one:milestone-2").unwrap();
    assert!(
        first_c > approved,
        "phase two starts after phase one's review: {order:?}"
    );
    assert!(order.contains(&"one:fix-1-1"), "{order:?}");
    assert!(order.contains(&"two:milestone-1"), "{order:?}");
    assert_eq!(reviews, 1);
    assert!(seen.contains(&("one:milestone-1".into(), AgentType::ArchitectureDesigner)));
    assert_eq!(sim.outcome.unwrap().outcome, RunOutcome::Completed);
}

#[test]
fn cancelling_a_task_stops_its_agent_and_blocks_its_dependents() {
    let tasks = plan("## Task A: a\n\n## Task B: b\n\n- depends_on: A\n\n## Task C: c\n");
    let mut sim = Sim::new(config(2), &tasks);
    sim.settle();
    sim.record(Fact::CancelRequested {
        task_id: Some("A".into()),
        reason: "by user".into(),
        block: false,
    });
    sim.settle();
    assert!(sim
        .decisions
        .iter()
        .any(|d| matches!(d, Decision::Cancel { agent_id, .. } if agent_id == "A-executor-1")));
    assert_eq!(sim.core.status("A"), Some(TaskStatus::Cancelled));
    assert_eq!(sim.core.status("B"), Some(TaskStatus::Blocked));
    let c = sim.running[0].clone();
    sim.finish(&c.agent_id, ok(&c));
    sim.settle();
    let r = sim.running[0].clone();
    sim.finish(&r.agent_id, ok(&r));
    sim.settle();
    assert_eq!(sim.outcome.clone().unwrap().outcome, RunOutcome::Blocked);

    // Cancelling the run interrupts it.
    let mut sim = Sim::new(config(2), &tasks);
    sim.settle();
    sim.record(Fact::CancelRequested {
        task_id: None,
        reason: "SIGINT".into(),
        block: false,
    });
    sim.settle();
    let outcome = sim.outcome.unwrap();
    assert_eq!(outcome.outcome, RunOutcome::Interrupted);
    assert_eq!(outcome.cancelled, 3);
}

#[test]
fn pause_stops_dispatching_and_a_budget_stop_lets_running_agents_finish() {
    let tasks = plan("## Task A: a\n\n## Task B: b\n\n- depends_on: A\n");
    let mut sim = Sim::new(config(2), &tasks);
    sim.record(Fact::Paused);
    assert!(sim.settle().is_empty());
    sim.record(Fact::Resumed);
    let exec = only(&sim.settle(), "after resume").clone();
    sim.record(Fact::Stopped {
        reason: "budget max_cost ($5.00) reached".into(),
    });
    sim.finish(&exec.agent_id, ok(&exec));
    assert!(sim.settle().is_empty(), "no reviewer after the stop");
    let outcome = sim.outcome.unwrap();
    assert_eq!(outcome.outcome, RunOutcome::Blocked);
    assert_eq!(outcome.unfinished, 2);
    assert_eq!(
        outcome.reason.as_deref(),
        Some("budget max_cost ($5.00) reached")
    );
}

#[test]
fn ten_quiet_minutes_trigger_a_patrol() {
    let mut sim = Sim::new(
        config(1),
        &plan("## Task A: a\n\n- hard_timeout: 2h\n- soft_timeout: 1h\n"),
    );
    let exec = only(&sim.settle(), "executor").clone();
    let patrols = |sim: &Sim| {
        sim.decisions
            .iter()
            .filter_map(|d| match d {
                Decision::Patrol { idle_ms, agents } => Some((*idle_ms, agents.clone())),
                _ => None,
            })
            .collect::<Vec<_>>()
    };
    // Heartbeats say the agent lives, not that the work moves.
    for _ in 0..9 {
        sim.now_ms += 60_000;
        sim.record(Fact::Heartbeat {
            agent_id: exec.agent_id.clone(),
            model: None,
            beat: None,
        });
        sim.settle();
    }
    assert!(patrols(&sim).is_empty());
    sim.now_ms += 60_000;
    sim.record(Fact::Heartbeat {
        agent_id: exec.agent_id.clone(),
        model: None,
        beat: None,
    });
    sim.settle();
    let found = patrols(&sim);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].0, 600_000);
    assert_eq!(found[0].1[0].agent_id, exec.agent_id);
    assert_eq!(found[0].1[0].silent_ms, 0);
    sim.now_ms += 60_000;
    sim.settle();
    assert_eq!(patrols(&sim).len(), 1, "once per quiet period");
}

#[test]
fn a_task_that_can_never_run_is_escalated_not_left_waiting() {
    let mut spec = plan("## Task A: a\n")[0].clone();
    spec.dependencies.push(air_proto::task::TaskDependency {
        depends_on_task_id: "ghost".into(),
        dependency_type: DependencyType::Hard,
        reason: None,
        source: None,
    });
    let mut sim = Sim::new(config(1), &[spec]);
    sim.settle();
    let (status, reason) = finish_reason(&sim, "A");
    assert_eq!(status, TaskStatus::Blocked);
    assert!(reason.unwrap().contains("no way forward"));
    assert!(sim.core.is_finished());
}

#[test]
fn after_a_restart_interrupted_work_is_retried_without_spending_the_budget() {
    let tasks = plan("## Task A: a\n\n- retry_budget: 0\n");
    let mut sim = Sim::new(config(1), &tasks);
    let exec = only(&sim.settle(), "executor").clone();
    let mut recovered = Sim::recover(config(1), &sim.facts, sim.now_ms + 5_000);
    let retry = only(&recovered.settle(), "retry").clone();
    assert_ne!(retry.agent_id, exec.agent_id);
    assert_eq!(retry.attempt, 2);
    assert!(retry.notes[0].contains("was interrupted (airsd restarted)"));
    recovered.run(&mut ok, 10);
    assert_eq!(recovered.outcome.unwrap().outcome, RunOutcome::Completed);
}

// ---- properties ------------------------------------------------------------------

/// A task's fate in a random run, fixed per task so that it does not depend on how
/// often the task's agents were interrupted.
#[derive(Clone, Copy, Debug)]
enum Fate {
    Clean,
    ReviewedTwice,
    FixedOnce,
    Hopeless,
    Blocks,
    Lies,
}

#[derive(Clone, Debug)]
struct Case {
    tasks: Vec<TaskSpec>,
    fates: HashMap<String, Fate>,
    concurrency: u32,
}

fn case() -> impl Strategy<Value = Case> {
    (2usize..14, 1u32..5).prop_flat_map(|(n, concurrency)| {
        let deps = proptest::collection::vec(
            proptest::collection::vec(any::<prop::sample::Index>(), 0..3),
            n,
        );
        let areas = proptest::collection::vec(proptest::option::weighted(0.3, 0u8..3), n);
        let conflicts = proptest::collection::vec(
            (any::<prop::sample::Index>(), any::<prop::sample::Index>()),
            0..3,
        );
        let fates = proptest::collection::vec(0u8..6, n);
        (Just(n), Just(concurrency), deps, areas, conflicts, fates).prop_map(
            |(n, concurrency, deps, areas, conflicts, fates)| {
                let mut md = String::new();
                for i in 0..n {
                    md.push_str(&format!(
                        "## Task T{i}: t{i}\n\n- category: logic\n- retry_budget: 1\n"
                    ));
                    let mut hard: Vec<usize> = if i == 0 {
                        Vec::new()
                    } else {
                        deps[i].iter().map(|x| x.index(i)).collect()
                    };
                    hard.sort();
                    hard.dedup();
                    if !hard.is_empty() {
                        let list: Vec<String> = hard.iter().map(|d| format!("T{d}")).collect();
                        md.push_str(&format!("- depends_on: {}\n", list.join(", ")));
                    }
                    if let Some(a) = areas[i] {
                        md.push_str(&format!("- write_area: area{a}\n"));
                    }
                    for (x, y) in &conflicts {
                        let (x, y) = (x.index(n), y.index(n));
                        if x == i && y != i {
                            md.push_str(&format!("- conflicts_with: T{y}\n"));
                        }
                    }
                    md.push('\n');
                }
                let tasks = plan(&md);
                let fates = tasks
                    .iter()
                    .zip(fates)
                    .map(|(t, f)| {
                        let fate = match f {
                            0 | 1 => Fate::Clean,
                            2 => Fate::ReviewedTwice,
                            3 => Fate::FixedOnce,
                            4 => Fate::Hopeless,
                            _ => [Fate::Blocks, Fate::Lies][t.id.len() % 2],
                        };
                        (t.id.clone(), fate)
                    })
                    .collect();
                Case {
                    tasks,
                    fates,
                    concurrency,
                }
            },
        )
    })
}

/// Plays agents by their task's fate and how many results that role has already
/// produced for the task (interrupted runs produce none).
fn player(fates: HashMap<String, Fate>) -> impl FnMut(&Dispatch, &[Fact]) -> Play {
    move |d, facts| {
        let prior = facts
            .iter()
            .filter(|f| matches!(f, Fact::AgentResult { result, .. } if result.task_id == d.task_id && result.agent_type == d.role))
            .count();
        let fate = fates.get(&d.task_id).copied().unwrap_or(Fate::Clean);
        let failing = |d: &Dispatch| {
            let mut r = result_for(d, WorkerStatus::Failed, false);
            r.verification.push(VerificationResult {
                name: "tests".into(),
                status: VerificationStatus::Failed,
                evidence_refs: None,
                notes: None,
            });
            res(r)
        };
        match (d.role, fate) {
            (AgentType::Executor, Fate::FixedOnce) if prior == 0 => failing(d),
            (AgentType::Executor, Fate::Hopeless) => failing(d),
            (AgentType::Executor, Fate::Lies) => res(result_for(d, WorkerStatus::Completed, false)),
            (AgentType::Executor, Fate::Blocks) => res(result_for(d, WorkerStatus::Blocked, false)),
            (AgentType::Reviewer, Fate::ReviewedTwice) if prior < 2 => {
                res(review(d, ReviewDecision::ChangesRequested))
            }
            (AgentType::Debugger, Fate::Blocks) => res(debug(d, WorkerStatus::Blocked)),
            _ => diligent(d),
        }
    }
}

fn drive(
    sim: &mut Sim,
    play: &mut impl FnMut(&Dispatch, &[Fact]) -> Play,
    stop_after: Option<usize>,
) -> bool {
    sim.settle();
    for _ in 0..500 {
        if sim.core.is_finished() {
            return true;
        }
        let Some(d) = sim.running.first().cloned() else {
            sim.now_ms += 60_000;
            sim.settle();
            continue;
        };
        let p = play(&d, &sim.facts);
        sim.finish(&d.agent_id, p);
        sim.now_ms += 7;
        sim.settle();
        if stop_after.is_some_and(|k| sim.facts.len() >= k) {
            return false;
        }
    }
    sim.core.is_finished()
}

fn hard_deps(t: &TaskSpec) -> Vec<&str> {
    t.dependencies
        .iter()
        .filter(|d| d.dependency_type == DependencyType::Hard)
        .map(|d| d.depends_on_task_id.as_str())
        .collect()
}

/// Whether two tasks may not run together; with worktrees (`isolated`) a shared write
/// area is only a hint.
fn excluded(a: &TaskSpec, b: &TaskSpec, isolated: bool) -> bool {
    let area =
        !isolated && a.scope.write_area.is_some() && a.scope.write_area == b.scope.write_area;
    let edge = |x: &TaskSpec, y: &TaskSpec| {
        x.dependencies.iter().any(|d| {
            d.depends_on_task_id == y.id
                && matches!(
                    d.dependency_type,
                    DependencyType::Conflict | DependencyType::Serialization
                )
        })
    };
    area || edge(a, b) || edge(b, a)
}

/// The invariants every recorded run must satisfy.
fn check_log(case: &Case, facts: &[Fact]) {
    check_run(case, facts, false)
}

/// The same, for a run whose tasks work in their own worktrees (`isolated`) or not.
fn check_run(case: &Case, facts: &[Fact], isolated: bool) {
    let specs: HashMap<&str, &TaskSpec> = case.tasks.iter().map(|t| (t.id.as_str(), t)).collect();
    let mut completed: HashSet<String> = HashSet::new();
    let mut in_progress: HashSet<String> = HashSet::new();
    let mut running_agents: HashSet<String> = HashSet::new();
    let mut last_exec: HashMap<String, air_proto::result::WorkerResult> = HashMap::new();
    let mut approved: HashSet<String> = HashSet::new();
    let mut agent_task: HashMap<String, String> = HashMap::new();
    let mut finishes: HashMap<String, u32> = HashMap::new();
    for f in facts {
        match f {
            Fact::Dispatched {
                task_id,
                agent_id,
                role,
                ..
            } => {
                running_agents.insert(agent_id.clone());
                agent_task.insert(agent_id.clone(), task_id.clone());
                assert!(
                    running_agents.len() as u32 <= case.concurrency,
                    "concurrency exceeded"
                );
                if let Some(spec) = specs.get(task_id.as_str()) {
                    for dep in hard_deps(spec) {
                        assert!(
                            completed.contains(dep),
                            "{task_id} started before {dep} completed"
                        );
                    }
                    if !in_progress.contains(task_id) {
                        for other in &in_progress {
                            if let Some(o) = specs.get(other.as_str()) {
                                assert!(
                                    !excluded(spec, o, isolated),
                                    "{task_id} overlapped {other}"
                                );
                            }
                        }
                    }
                }
                let _ = role;
                in_progress.insert(task_id.clone());
            }
            Fact::AgentResult {
                agent_id, result, ..
            } => {
                running_agents.remove(agent_id);
                if result.agent_type == AgentType::Executor {
                    last_exec.insert(result.task_id.clone(), (**result).clone());
                }
                if result.agent_type == AgentType::Reviewer {
                    let out: Option<ReviewerOutput> =
                        serde_json::from_value(result.result.clone()).ok();
                    if out.is_some_and(|o| o.decision == ReviewDecision::Approved) {
                        approved.insert(result.task_id.clone());
                    }
                }
            }
            Fact::AgentFailed { agent_id, .. } => {
                running_agents.remove(agent_id);
            }
            Fact::TaskFinished {
                task_id, status, ..
            } => {
                *finishes.entry(task_id.clone()).or_insert(0) += 1;
                in_progress.remove(task_id);
                if *status == TaskStatus::Completed {
                    if let Some(spec) = specs.get(task_id.as_str()) {
                        let r = last_exec
                            .get(task_id)
                            .expect("an executor result before completion");
                        gate::check_recorded_claims(spec, r).expect("evidence gate held");
                        assert!(
                            approved.contains(task_id),
                            "{task_id} completed without approval"
                        );
                    }
                    completed.insert(task_id.clone());
                }
            }
            _ => {}
        }
    }
    for (task, n) in finishes {
        assert_eq!(n, 1, "{task} finished {n} times");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn random_graphs_keep_every_rule(case in case()) {
        let mut sim = Sim::new(config(case.concurrency), &case.tasks);
        let mut play = player(case.fates.clone());
        prop_assert!(drive(&mut sim, &mut play, None), "the run ended");
        check_log(&case, &sim.facts);
        for (id, status) in sim.core.statuses() {
            prop_assert!(matches!(status, TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Blocked | TaskStatus::Cancelled), "{id} ended {status:?}");
        }
    }

    #[test]
    fn a_crash_at_any_point_changes_nothing_in_the_outcome(case in case(), cut in any::<prop::sample::Index>()) {
        let mut whole = Sim::new(config(case.concurrency), &case.tasks);
        let mut play = player(case.fates.clone());
        prop_assert!(drive(&mut whole, &mut play, None));
        let k = 1 + cut.index(whole.facts.len().max(1));
        // The same run, stopped after k facts, then rebuilt from them.
        let mut first = Sim::new(config(case.concurrency), &case.tasks);
        let mut play = player(case.fates.clone());
        drive(&mut first, &mut play, Some(k));
        let mut second = Sim::recover(config(case.concurrency), &first.facts, first.now_ms + 1_000);
        prop_assert!(drive(&mut second, &mut play, None));
        prop_assert_eq!(second.core.statuses(), whole.core.statuses());
        let (a, b) = (second.outcome.clone().unwrap(), whole.outcome.clone().unwrap());
        prop_assert_eq!((a.outcome, a.completed, a.failed, a.blocked), (b.outcome, b.completed, b.failed, b.blocked));
        check_log(&case, &second.facts);
    }

    /// The same with each task in its own worktree: completion goes through the merge
    /// queue, some merges are refused (to the debugger), and a crash between a
    /// review's approval and its merge's record redoes the merge once.
    #[test]
    fn a_crash_around_merges_changes_nothing_in_the_outcome(case in case(), cut in any::<prop::sample::Index>()) {
        let isolated = Fact::RunStarted {
            concurrency: case.concurrency,
            on_ask: air_proto::plan::OnAsk::Queue,
            budgets: air_proto::plan::Budgets::default(),
            confirm: false,
            isolated: true,
        };
        let refusals: HashMap<String, u32> = case
            .tasks
            .iter()
            .enumerate()
            .filter(|(i, _)| i % 3 == 1)
            .map(|(_, t)| (t.id.clone(), 1))
            .collect();
        let start = |sim: &mut Sim| sim.refuse_merges = refusals.clone();
        let mut whole = Sim::with_start(config(case.concurrency), isolated.clone(), &case.tasks);
        start(&mut whole);
        let mut play = player(case.fates.clone());
        prop_assert!(drive(&mut whole, &mut play, None));
        check_run(&case, &whole.facts, true);
        let k = 1 + cut.index(whole.facts.len().max(1));
        let mut first = Sim::with_start(config(case.concurrency), isolated, &case.tasks);
        start(&mut first);
        let mut play = player(case.fates.clone());
        drive(&mut first, &mut play, Some(k));
        let mut second = Sim::recover(config(case.concurrency), &first.facts, first.now_ms + 1_000);
        start(&mut second);
        prop_assert!(drive(&mut second, &mut play, None));
        prop_assert_eq!(second.core.statuses(), whole.core.statuses());
        let (a, b) = (second.outcome.clone().unwrap(), whole.outcome.clone().unwrap());
        prop_assert_eq!((a.outcome, a.completed, a.failed, a.blocked), (b.outcome, b.completed, b.failed, b.blocked));
        check_run(&case, &second.facts, true);
    }
}

#[test]
fn a_paused_run_whose_last_task_ends_completes() {
    let mut sim = Sim::new(config(1), &plan("## Task A: a\n"));
    let exec = only(&sim.settle(), "executor").clone();
    sim.finish(&exec.agent_id, ok(&exec));
    let rev = only(&sim.settle(), "reviewer").clone();
    sim.record(Fact::Paused);
    sim.finish(&rev.agent_id, ok(&rev));
    sim.settle();
    assert_eq!(sim.outcome.unwrap().outcome, RunOutcome::Completed);
}

#[test]
fn a_permission_error_blocks_instead_of_retrying() {
    let mut sim = Sim::new(config(1), &plan("## Task A: a\n\n- retry_budget: 5\n"));
    let exec = only(&sim.settle(), "executor").clone();
    sim.finish(
        &exec.agent_id,
        Play::Fail(AgentFailure::Permission, "exit code 3".into()),
    );
    sim.settle();
    let (status, reason) = finish_reason(&sim, "A");
    assert_eq!(status, TaskStatus::Blocked);
    assert!(reason.unwrap().contains("permission error"));
}

/// Consulted when a task runs out of attempts, the Architecture Designer may grant one
/// more, with its advice as the executor's guidance; the task is not consulted about
/// twice.
#[test]
fn the_consulted_architecture_designer_may_grant_one_more_attempt() {
    let mut sim = Sim::new(config(1), &plan("## Task A: a\n"));
    let changes = |sim: &mut Sim| {
        let exec = only(&sim.settle(), "executor").clone();
        sim.finish(&exec.agent_id, ok(&exec));
        let rev = only(&sim.settle(), "reviewer").clone();
        sim.finish(
            &rev.agent_id,
            res(review(&rev, ReviewDecision::ChangesRequested)),
        );
        exec
    };
    for _ in 0..3 {
        changes(&mut sim);
    }
    let ad = consulted(
        &mut sim,
        air_proto::result::ConsultDecision::Retry,
        "blocked",
    );
    // The consult saw the latest executor result.
    assert!(ad.previous.is_some());
    let exec = changes(&mut sim);
    assert_eq!(exec.attempt, 4);
    assert!(
        exec.notes.iter().any(|n| n
            .contains("The Architecture Designer, consulted after this task ran out of attempts")
            && n.contains("advises: advice on A")),
        "{:?}",
        exec.notes
    );
    // Its rejections count again from zero: two more are re-dispatched …
    changes(&mut sim);
    changes(&mut sim);
    // … and the next escalation ends the task, with no second consult.
    sim.settle();
    let (status, reason) = finish_reason(&sim, "A");
    assert_eq!(status, TaskStatus::Blocked);
    assert!(reason
        .unwrap()
        .contains("requested changes 3 times in a row"));
    assert!(!sim.facts.iter().any(|f| matches!(f, Fact::Dispatched { agent_id, .. } if agent_id == "A-architecture_designer-2")));
}
