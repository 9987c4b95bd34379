//! The rules the core took over from the shell: the run's budgets, the `on_ask`
//! policy and its timeout, and how a worker's end is classified, one test per rule and
//! a property test that mixes them into random runs.

use air_proto::plan::{Budgets, OnAsk};
use air_proto::result::WorkerResult;

use super::super::core::{classify_exit, AgentEnd, Ask, ProcessEnd};
use super::*;

fn started(on_ask: OnAsk, budgets: Budgets, concurrency: u32) -> Fact {
    Fact::RunStarted {
        concurrency,
        on_ask,
        budgets,
        confirm: false,
        isolated: false,
    }
}

/// A run of `md` under `on_ask`, whose executor has just asked for a permission.
fn asking(cfg: Config, on_ask: OnAsk, humans: bool, md: &str) -> (Sim, Dispatch) {
    let mut sim = Sim::with_start(cfg, started(on_ask, Budgets::default(), 1), &plan(md));
    sim.humans = humans;
    let exec = only(&sim.settle(), "executor").clone();
    sim.asks.push(ask(&exec, sim.now_ms));
    (sim, exec)
}

fn ask(d: &Dispatch, now_ms: u64) -> Ask {
    Ask {
        request_id: format!("req-{}", d.agent_id),
        task_id: None,
        agent_id: Some(d.agent_id.clone()),
        action: "write /etc/hosts".into(),
        requested_ms: now_ms,
    }
}

fn stops(sim: &Sim) -> Vec<String> {
    sim.decisions
        .iter()
        .filter_map(|d| match d {
            Decision::StopForBudget { budget, .. } => Some(budget.clone()),
            _ => None,
        })
        .collect()
}

fn end(code: Option<i32>) -> ProcessEnd {
    ProcessEnd {
        code,
        text: match code {
            Some(c) => format!("exit code {c}"),
            None => "killed by SIGKILL".into(),
        },
        logged: None,
        stderr_tail: Some("thread 'main' panicked".into()),
    }
}

#[test]
fn a_spent_token_budget_stops_dispatching_and_the_running_agent_finishes() {
    let tasks = plan("## Task A: a\n\n## Task B: b\n");
    let budgets = Budgets {
        max_tokens: Some(1_000),
        ..Budgets::default()
    };
    let mut sim = Sim::with_start(config(1), started(OnAsk::Deny, budgets, 1), &tasks);
    let exec = only(&sim.settle(), "the first executor").clone();
    sim.usage = (999, 0);
    assert!(sim.settle().is_empty());
    assert!(stops(&sim).is_empty(), "999 of 1000 tokens is not spent");
    sim.usage = (1_000, 0);
    assert!(sim.settle().is_empty(), "nothing new starts");
    assert_eq!(stops(&sim), ["max_tokens"], "stopped once");
    // The running agent finishes its work; its review is not dispatched.
    sim.exit(
        &exec.agent_id,
        Some(result_for(&exec, WorkerStatus::Completed, true)),
        Some(0),
    );
    assert!(sim.settle().is_empty());
    let outcome = sim.outcome.clone().unwrap();
    assert_eq!(outcome.outcome, RunOutcome::Blocked);
    assert_eq!(
        outcome.reason.as_deref(),
        Some("the token budget (1000) ran out")
    );
    assert_eq!(stops(&sim), ["max_tokens"]);
}

#[test]
fn a_budget_spent_before_a_restart_stops_dispatching_at_once() {
    let tasks = plan("## Task A: a\n\n## Task B: b\n");
    let budgets = Budgets {
        max_tokens: Some(100),
        ..Budgets::default()
    };
    let mut sim = Sim::with_start(config(1), started(OnAsk::Deny, budgets, 1), &tasks);
    only(&sim.settle(), "A runs, B is ready and waits for a slot");
    // airsd restarts with the budget spent: the interrupted A frees the slot, and
    // the ready B must not take it.
    let mut sim = Sim::recover(config(1), &sim.facts, sim.now_ms + 1_000);
    sim.usage = (100, 0);
    assert!(sim.settle().is_empty(), "nothing is dispatched");
    assert_eq!(stops(&sim), ["max_tokens"]);
    assert_eq!(sim.outcome.clone().unwrap().unfinished, 2);
}

#[test]
fn the_time_budget_counts_from_the_start_and_a_continuation_brings_new_budgets() {
    let tasks = plan("## Task A: a\n\n## Task B: b\n\n- depends_on: A\n");
    let budgets = Budgets {
        max_time_ms: Some(60_000),
        max_cost: Some(5.0),
        ..Budgets::default()
    };
    let mut sim = Sim::with_start(config(1), started(OnAsk::Deny, budgets, 1), &tasks);
    let exec = only(&sim.settle(), "executor").clone();
    sim.now_ms += 59_999;
    sim.settle();
    assert!(stops(&sim).is_empty());
    sim.now_ms += 1;
    sim.settle();
    assert_eq!(stops(&sim), ["max_time"]);
    sim.finish(&exec.agent_id, ok(&exec));
    sim.settle();
    assert_eq!(
        sim.outcome.clone().unwrap().reason.as_deref(),
        Some("the time budget (1m) ran out")
    );
    // Continued with more time, the run dispatches again; the cost budget stays and
    // is the next to stop it.
    sim.record(Fact::Continued {
        task_ids: sim.core.unfinished(),
        budgets: Budgets {
            max_time_ms: Some(3_600_000),
            ..Budgets::default()
        },
    });
    assert_eq!(only(&sim.settle(), "again").task_id, "A");
    sim.usage = (0, 5_000_000);
    sim.settle();
    assert_eq!(stops(&sim), ["max_time", "max_cost"]);
}

#[test]
fn under_deny_a_request_nobody_can_answer_is_refused_and_the_agent_goes_on() {
    let (mut sim, exec) = asking(config(1), OnAsk::Deny, false, "## Task A: a\n");
    sim.settle();
    assert_eq!(sim.refusals.len(), 1);
    let r = &sim.refusals[0];
    assert_eq!(r.request_id, format!("req-{}", exec.agent_id));
    assert!(r.reason.contains("on_ask=deny"), "{}", r.reason);
    assert_eq!(r.block, None);
    assert_eq!(sim.core.running_agents().len(), 1, "the agent goes on");
    // Answered once.
    sim.settle();
    assert_eq!(sim.refusals.len(), 1);
}

#[test]
fn under_fail_the_refused_request_blocks_its_task() {
    let (mut sim, _) = asking(
        config(1),
        OnAsk::Fail,
        false,
        "## Task A: a\n\n- retry_budget: 3\n",
    );
    sim.settle();
    let (task, why) = sim.refusals[0].block.clone().unwrap();
    assert_eq!(task, "A", "the task is found from the asking agent");
    assert!(why.contains("permission to write /etc/hosts was needed"));
    let (status, reason) = finish_reason(&sim, "A");
    assert_eq!(status, TaskStatus::Blocked);
    assert!(reason.unwrap().contains("on_ask=fail"));
}

#[test]
fn under_queue_or_with_a_person_attached_a_request_waits_until_its_timeout() {
    for (on_ask, humans) in [
        (OnAsk::Queue, false),
        (OnAsk::Deny, true),
        (OnAsk::Fail, true),
    ] {
        let cfg = Config {
            ask_timeout_ms: 30_000,
            stall_ms: 600_000,
            ..config(1)
        };
        let (mut sim, _) = asking(cfg, on_ask, humans, "## Task A: a\n");
        sim.now_ms += 29_999;
        sim.settle();
        assert!(sim.refusals.is_empty(), "{on_ask:?} humans={humans}: waits");
        sim.now_ms += 1;
        sim.settle();
        assert_eq!(sim.refusals.len(), 1, "{on_ask:?}: denied at the timeout");
        assert!(sim.refusals[0]
            .reason
            .contains("nobody answered within 30s"));
        // A timeout under `fail` still blocks the task.
        assert_eq!(sim.refusals[0].block.is_some(), on_ask == OnAsk::Fail);
    }
}

#[test]
fn a_request_answered_by_a_person_is_not_refused() {
    let (mut sim, _) = asking(config(1), OnAsk::Deny, true, "## Task A: a\n");
    sim.settle();
    // The person answers, then leaves.
    sim.asks.clear();
    sim.humans = false;
    sim.settle();
    assert!(sim.refusals.is_empty());
}

#[test]
fn a_worker_end_is_classified_by_its_result_its_stop_and_its_exit_code() {
    let d = Dispatch {
        task_id: "A".into(),
        agent_id: "A-executor-1".into(),
        role: AgentType::Executor,
        attempt: 1,
        spec: plan("## Task A: a\n").remove(0),
        notes: Vec::new(),
        previous: None,
    };
    let result = || Some(result_for(&d, WorkerStatus::Completed, true));
    let failed = |e: AgentEnd| match e {
        AgentEnd::Failed {
            failure, reason, ..
        } => (failure, reason),
        AgentEnd::Completed { .. } => panic!("completed: {e:?}"),
    };
    let completed = |e: &AgentEnd| matches!(e, AgentEnd::Completed { .. });
    // A result and exit code 0 complete.
    assert!(completed(&classify_exit(result(), None, &end(Some(0)))));
    // A result with another code does not count.
    let (f, why) = failed(classify_exit(result(), None, &end(Some(1))));
    assert_eq!(f, AgentFailure::Crash);
    assert_eq!(why, "crashed (exit code 1): thread 'main' panicked");
    // Without a result, the code says why.
    for (code, failure, words) in [
        (
            Some(0),
            AgentFailure::Protocol,
            "exited without sending a result",
        ),
        (
            Some(2),
            AgentFailure::Protocol,
            "startup or protocol error (exit code 2)",
        ),
        (
            Some(3),
            AgentFailure::Permission,
            "permission error (exit code 3)",
        ),
        (
            Some(4),
            AgentFailure::Crash,
            "exited as cancelled (exit code 4) unasked",
        ),
        (
            Some(5),
            AgentFailure::Timeout,
            "gave up at its hard timeout (exit code 5)",
        ),
        (Some(101), AgentFailure::Crash, "crashed (exit code 101)"),
        (None, AgentFailure::Crash, "crashed (killed by SIGKILL)"),
    ] {
        let (f, why) = failed(classify_exit(None, None, &end(code)));
        assert_eq!(f, failure, "{code:?}");
        assert!(why.starts_with(words), "{code:?}: {why}");
    }
    // A cancelled agent failed as cancelled, whatever it sent.
    let stop = |f: AgentFailure| Some((f, "why".to_string()));
    let (f, why) = failed(classify_exit(
        result(),
        stop(AgentFailure::Cancelled),
        &end(Some(0)),
    ));
    assert_eq!((f, why.as_str()), (AgentFailure::Cancelled, "why"));
    // A result that came before a timeout or stall kill counts.
    for f in [AgentFailure::Timeout, AgentFailure::Stalled] {
        assert!(completed(&classify_exit(result(), stop(f), &end(None))));
        let (got, why) = failed(classify_exit(None, stop(f), &end(None)));
        assert_eq!(got, f);
        assert_eq!(why, "why (killed by SIGKILL)");
    }
    // A protocol stop says what the worker logged.
    let mut logged = end(Some(2));
    logged.logged = Some("bad line".into());
    let (f, why) = failed(classify_exit(
        result(),
        stop(AgentFailure::Protocol),
        &logged,
    ));
    assert_eq!(f, AgentFailure::Protocol);
    assert_eq!(why, "why (exit code 2); it said: bad line");
}

#[test]
fn a_result_for_another_task_has_its_worker_killed_as_a_protocol_failure() {
    let mut sim = Sim::new(config(1), &plan("## Task A: a\n\n## Task B: b\n"));
    let exec = only(&sim.settle(), "executor").clone();
    let mut wrong: WorkerResult = result_for(&exec, WorkerStatus::Completed, true);
    wrong.task_id = "B".into();
    sim.core.apply(
        &Fact::ResultReceived {
            agent_id: exec.agent_id.clone(),
            result: Box::new(wrong),
        },
        sim.now_ms,
    );
    let decisions = sim.core.decide(sim.now_ms);
    assert!(
        decisions.iter().any(
            |d| matches!(d, Decision::Kill { agent_id, failure: AgentFailure::Protocol, reason }
            if *agent_id == exec.agent_id && reason.contains("names task `B`"))
        ),
        "{decisions:?}"
    );
    sim.exit(&exec.agent_id, None, None);
    sim.settle();
    assert!(sim.facts.iter().any(|f| matches!(f,
        Fact::AgentFailed { agent_id, failure: AgentFailure::Protocol, reason }
            if *agent_id == exec.agent_id && reason.contains("names task `B`") && reason.contains("killed by SIGKILL"))));
}

/// How an agent of the random run ends.
#[derive(Clone, Copy, Debug)]
enum Ending {
    /// Its result, then exit code 0.
    Clean,
    /// An exit with this code (or a signal) and no result.
    Code(Option<i32>),
}

#[derive(Clone, Debug)]
struct Mixed {
    case: Case,
    on_ask: OnAsk,
    humans: bool,
    max_tokens: Option<u64>,
    /// By agent start (cycled): whether it asks for a permission first, how it ends.
    asks: Vec<bool>,
    endings: Vec<Ending>,
}

fn mixed() -> impl Strategy<Value = Mixed> {
    (
        case(),
        0u8..3,
        any::<bool>(),
        proptest::option::of(50u64..400),
        proptest::collection::vec(proptest::bool::weighted(0.2), 1..8),
        proptest::collection::vec(0u8..10, 1..8),
    )
        .prop_map(|(case, on_ask, humans, max_tokens, asks, endings)| Mixed {
            case,
            on_ask: [OnAsk::Deny, OnAsk::Fail, OnAsk::Queue][usize::from(on_ask)],
            humans,
            max_tokens,
            asks,
            endings: endings
                .into_iter()
                .map(|e| match e {
                    0 => Ending::Code(Some(2)),
                    1 => Ending::Code(None),
                    2 => Ending::Code(Some(0)),
                    _ => Ending::Clean,
                })
                .collect(),
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Random runs whose agents ask for permissions, spend tokens and end by exit
    /// codes keep every rule of the log, and: nothing is dispatched after a budget
    /// stop, which comes once and only when the budget is spent; a request is refused
    /// only when nobody can answer it under deny or fail, or at its timeout, and under
    /// fail its task ends blocked; an agent completes only with its result and exit
    /// code 0.
    #[test]
    fn budgets_asks_and_exits_keep_their_rules(m in mixed()) {
        let budgets = Budgets { max_tokens: m.max_tokens, ..Budgets::default() };
        let cfg = Config { ask_timeout_ms: 120_000, ..config(m.case.concurrency) };
        let mut sim = Sim::with_start(cfg, started(m.on_ask, budgets, m.case.concurrency), &m.case.tasks);
        sim.humans = m.humans;
        let mut play = player(m.case.fates.clone());
        let mut n = 0usize;
        let mut clean_exits = std::collections::HashSet::new();
        sim.settle();
        for _ in 0..600 {
            if sim.core.is_finished() {
                break;
            }
            let Some(d) = sim.running.first().cloned() else {
                sim.now_ms += 60_000;
                sim.settle();
                continue;
            };
            let k = n;
            n += 1;
            if m.asks[k % m.asks.len()] && !sim.asks.iter().any(|a| a.agent_id.as_deref() == Some(d.agent_id.as_str())) {
                sim.asks.push(ask(&d, sim.now_ms));
                sim.settle();
                if !sim.running.iter().any(|r| r.agent_id == d.agent_id) {
                    continue;
                }
            }
            sim.usage.0 += 40;
            match (m.endings[k % m.endings.len()], play(&d, &sim.facts)) {
                (Ending::Clean, Play::Result(r)) => {
                    clean_exits.insert(d.agent_id.clone());
                    sim.exit(&d.agent_id, Some(*r), Some(0));
                }
                (Ending::Clean, Play::Fail(..) | Play::Hang) => sim.exit(&d.agent_id, None, None),
                (Ending::Code(code), _) => sim.exit(&d.agent_id, None, code),
            }
            sim.now_ms += 7;
            sim.settle();
        }
        prop_assert!(sim.core.is_finished(), "the run ended");
        check_log(&m.case, &sim.facts);

        // Budgets.
        let stop_at = sim.decisions.iter().position(|d| matches!(d, Decision::StopForBudget { .. }));
        let stopped = sim.decisions.iter().filter(|d| matches!(d, Decision::StopForBudget { .. })).count();
        prop_assert!(stopped <= 1, "stopped {stopped} times");
        if let Some(at) = stop_at {
            prop_assert!(m.max_tokens.is_some_and(|max| sim.usage.0 >= max));
            prop_assert!(!sim.decisions[at..].iter().any(|d| matches!(d, Decision::Dispatch(_))), "dispatched after the stop");
        }

        // Asks.
        for r in &sim.refusals {
            let timeout = r.reason.contains("nobody answered within");
            prop_assert!(timeout || (!m.humans && m.on_ask != OnAsk::Queue), "{r:?}");
            prop_assert_eq!(r.block.is_some(), m.on_ask == OnAsk::Fail);
            if let Some((task, _)) = &r.block {
                prop_assert_eq!(finish_reason(&sim, task).0, TaskStatus::Blocked);
            }
        }
        if m.humans {
            // Time moves only when nothing runs, so no request reaches its timeout.
            prop_assert!(sim.refusals.is_empty());
        }

        // Exits.
        for f in &sim.facts {
            if let Fact::AgentResult { agent_id, .. } = f {
                prop_assert!(clean_exits.contains(agent_id), "{agent_id} completed without a clean exit");
            }
        }
    }
}

/// D-019: a provider's 429 halves how many agents start (a burst counts once), a
/// machine loaded for a while takes one more away, and after a quiet minute they come
/// back one at a time, never past the run's own; running agents are never stopped.
#[test]
fn concurrency_backs_off_on_rate_limits_and_load_and_recovers() {
    let tasks = plan(
        &(1..=12)
            .map(|n| format!("## Task T{n}: t\n\n"))
            .collect::<String>(),
    );
    let mut sim = Sim::new(config(8), &tasks);
    assert_eq!(sim.settle().len(), 8);
    let changes = |sim: &Sim| -> Vec<u32> {
        sim.decisions
            .iter()
            .filter_map(|d| match d {
                Decision::Concurrency { concurrency, .. } => Some(*concurrency),
                _ => None,
            })
            .collect()
    };
    // Three agents' providers answer 429 at once: halved once.
    for _ in 0..3 {
        sim.record(Fact::SlowDown);
    }
    sim.settle();
    assert_eq!(changes(&sim), [4]);
    // Running agents go on; as they end, no more than four start.
    for d in sim.running.clone() {
        sim.finish(&d.agent_id, ok(&d));
    }
    sim.settle();
    let executors = sim
        .running
        .iter()
        .filter(|d| d.role == AgentType::Executor)
        .count();
    assert!(executors <= 4, "{executors}");
    // Another 429 later: halved again. A heavy load for a moment takes nothing; a
    // heavy load for a while takes one.
    sim.now_ms += 40_000;
    sim.record(Fact::SlowDown);
    sim.settle();
    assert_eq!(changes(&sim), [4, 2]);
    sim.now_ms += 1_000;
    sim.record(Fact::Load { per_core: 3_000 });
    sim.settle();
    assert_eq!(changes(&sim), [4, 2]);
    sim.now_ms += 15_000;
    sim.record(Fact::Load { per_core: 3_000 });
    sim.settle();
    assert_eq!(changes(&sim), [4, 2, 1]);
    // Never below one.
    sim.now_ms += 20_000;
    sim.record(Fact::SlowDown);
    sim.record(Fact::Load { per_core: 3_000 });
    sim.settle();
    assert_eq!(changes(&sim), [4, 2, 1]);
    // Quiet and light: one more every 15 s after a minute, up to the run's eight.
    sim.record(Fact::Load { per_core: 500 });
    sim.now_ms += 60_000;
    for _ in 0..20 {
        sim.settle();
        sim.now_ms += 15_000;
    }
    assert_eq!(changes(&sim), [4, 2, 1, 2, 3, 4, 5, 6, 7, 8]);
}
