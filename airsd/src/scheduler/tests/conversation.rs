//! The conversation's turns in the core: one turn a message, one at a time, no slot
//! taken; a task handed on runs as a plan task and is summarised when it ends; and
//! the same at every point of a recovery.

use air_proto::conversation::{DelegatedTask, Intent, MainResult};

use super::*;

/// The user says `text`; an ended run is continued for it first, as airsd does.
fn say(sim: &mut Sim, n: u32, text: &str) {
    if sim.core.is_finished() {
        sim.record(Fact::Continued {
            task_ids: Vec::new(),
            budgets: Default::default(),
        });
    }
    sim.record(Fact::UserMessage {
        message_id: format!("m{n}"),
        text: text.into(),
        to: None,
    });
}

fn answer(d: &Dispatch, task: Option<DelegatedTask>) -> Play {
    let mut r = result_for(d, WorkerStatus::Completed, false);
    r.changed_files.clear();
    r.result = serde_json::to_value(MainResult {
        intent: if task.is_some() {
            Intent::SimpleTask
        } else {
            Intent::Chat
        },
        answer: "ok".into(),
        task,
        cancel: Vec::new(),
    })
    .unwrap();
    res(r)
}

/// A conversation's run in the `default` permission mode: work handed on waits for
/// the user's confirmation.
fn confirming() -> Sim {
    let start = Fact::RunStarted {
        concurrency: 1,
        on_ask: air_proto::plan::OnAsk::Deny,
        budgets: Default::default(),
        confirm: true,
        isolated: false,
    };
    Sim::with_start(config(1), start, &[])
}

fn hello() -> DelegatedTask {
    DelegatedTask {
        title: "Write hello.txt".into(),
        description: "Create it".into(),
        acceptance_criteria: vec!["it says hello".into()],
        expected_files: vec!["hello.txt".into()],
        verify: vec![],
        category: Some(air_proto::task::TaskCategory::Docs),
    }
}

#[test]
fn turns_go_one_at_a_time_take_no_slot_and_hand_on_tasks_that_are_summarised() {
    // One slot, held by a plan's task the whole time.
    let mut sim = Sim::new(config(1), &plan("## Task A: a\n"));
    let a = only(&sim.settle(), "A's executor").clone();
    say(&mut sim, 1, "what is A doing?");
    say(&mut sim, 2, "/task write hello.txt");
    let t1 = only(&sim.settle(), "the first turn, beside A").clone();
    assert_eq!((t1.task_id.as_str(), t1.role), ("main:1", AgentType::Main));
    assert_eq!(t1.spec.description, "what is A doing?");
    assert!(
        sim.settle().is_empty(),
        "the second turn waits for the first"
    );
    sim.finish(&t1.agent_id, answer(&t1, None));
    let t2 = only(&sim.settle(), "the second turn").clone();
    assert_eq!(t2.task_id, "main:2");
    sim.finish(&t2.agent_id, answer(&t2, Some(hello())));
    sim.settle();
    assert_eq!(sim.core.status("main:2"), Some(TaskStatus::Completed));
    // T1 waits for the slot A holds, like any task.
    assert_eq!(sim.core.status("T1"), Some(TaskStatus::Ready));
    sim.finish(&a.agent_id, ok(&a));
    let r = only(&sim.settle(), "A's reviewer").clone();
    sim.finish(&r.agent_id, ok(&r));
    let e = only(&sim.settle(), "T1's executor").clone();
    assert_eq!((e.task_id.as_str(), e.role), ("T1", AgentType::Executor));
    assert_eq!(e.spec.scope.expected_files, Some(vec!["hello.txt".into()]));
    sim.finish(&e.agent_id, ok(&e));
    let r = only(&sim.settle(), "T1's reviewer").clone();
    assert_eq!(r.role, AgentType::Reviewer, "a handed-on task is reviewed");
    sim.finish(&r.agent_id, ok(&r));
    let s = only(&sim.settle(), "the summary turn").clone();
    assert_eq!(s.task_id, "main:3");
    assert_eq!(
        air_proto::conversation::summarised(&s.spec),
        ["T1".to_string()]
    );
    sim.finish(&s.agent_id, answer(&s, None));
    sim.settle();
    let outcome = sim.outcome.clone().unwrap();
    assert_eq!(
        (outcome.outcome, outcome.completed),
        (RunOutcome::Completed, 2),
        "the outcome counts A and T1, not the turns"
    );

    // Recovered from any point of the record after both messages, the run ends the
    // same.
    let facts = sim.facts.clone();
    let said = facts
        .iter()
        .rposition(|f| matches!(f, Fact::UserMessage { .. }))
        .unwrap();
    for cut in said + 1..=facts.len() {
        let mut r = Sim::recover(config(1), &facts[..cut], sim.now_ms);
        r.run(
            &mut |d| {
                if d.role == AgentType::Main {
                    answer(d, (d.task_id == "main:2").then(hello))
                } else {
                    ok(d)
                }
            },
            200,
        );
        let end = r.outcome.clone().unwrap();
        assert_eq!(
            (end.outcome, end.completed),
            (RunOutcome::Completed, 2),
            "cut at {cut}"
        );
        for id in ["main:1", "main:2", "main:3", "T1"] {
            assert_eq!(
                r.core.status(id),
                Some(TaskStatus::Completed),
                "{id}, cut at {cut}"
            );
        }
    }
}

#[test]
fn a_message_outside_a_run_is_a_record_only() {
    let mut sim = Sim::new(config(1), &plan("## Task A: a\n"));
    sim.run(&mut |d| ok(d), 50);
    assert!(sim.core.is_finished());
    sim.record(Fact::UserMessage {
        message_id: "m1".into(),
        text: "hello?".into(),
        to: None,
    });
    assert!(sim.settle().is_empty());
    assert_eq!(sim.core.status("main:1"), None);
}

#[test]
fn said_to_a_running_task_it_reaches_its_agent_and_the_next_one_and_stop_cancels() {
    let mut sim = Sim::new(config(2), &plan("## Task A: a\n\n## Task B: b\n"));
    let started = sim.settle();
    assert_eq!(started.len(), 2);
    sim.record(Fact::UserMessage {
        message_id: "m1".into(),
        text: "@A use argparse".into(),
        to: Some("A".into()),
    });
    let out = sim.core.decide(sim.now_ms);
    assert!(
        out.iter().any(|d| matches!(d, Decision::Deliver { agent_id, text } if agent_id == "A-executor-1" && text == "@A use argparse")),
        "{out:?}"
    );
    assert_eq!(
        sim.core.status("main:1"),
        None,
        "no turn for a message to a task"
    );
    // The reviewer that follows is told too.
    let a = started.iter().find(|d| d.task_id == "A").unwrap().clone();
    sim.finish(&a.agent_id, ok(&a));
    let r = only(&sim.settle(), "A's reviewer").clone();
    assert!(
        r.notes.iter().any(|n| n.contains("use argparse")),
        "{:?}",
        r.notes
    );

    // "stop B": the turn's answer cancels B.
    say(&mut sim, 2, "stop B");
    let t = only(&sim.settle(), "the turn").clone();
    let mut stop = result_for(&t, WorkerStatus::Completed, false);
    stop.result = serde_json::to_value(MainResult {
        intent: Intent::Chat,
        answer: "Stopping B.".into(),
        task: None,
        cancel: vec![air_proto::conversation::CancelTask {
            task_id: "B".into(),
            reason: "the user said stop".into(),
        }],
    })
    .unwrap();
    sim.finish(&t.agent_id, res(stop));
    sim.run(&mut |d| ok(d), 50);
    let (status, reason) = finish_reason(&sim, "B");
    assert_eq!(status, TaskStatus::Cancelled);
    assert!(reason.unwrap().contains("the user asked to stop it"));
    assert_eq!(sim.core.status("A"), Some(TaskStatus::Completed));
}

/// In the `default` permission mode (D-017) a task handed on waits for the user:
/// asked once, started on yes, cancelled with the reason on no; the run waits for
/// the answer rather than ending or escalating.
#[test]
fn work_handed_on_in_default_mode_waits_for_the_users_confirmation() {
    for allow in [true, false] {
        let mut sim = confirming();
        say(&mut sim, 1, "/task write hello.txt");
        let t = only(&sim.settle(), "the turn").clone();
        sim.finish(&t.agent_id, answer(&t, Some(hello())));
        assert!(sim.settle().is_empty(), "nothing starts before the answer");
        let asks: Vec<&Decision> = sim
            .decisions
            .iter()
            .filter(|d| matches!(d, Decision::AskConfirmation { .. }))
            .collect();
        assert_eq!(asks.len(), 1, "asked once: {asks:?}");
        assert_eq!(sim.core.status("T1"), Some(TaskStatus::Pending));
        assert!(!sim.core.is_finished(), "the run waits for the answer");
        sim.record(Fact::Confirmed {
            task_id: "T1".into(),
            allow,
            reason: (!allow).then(|| "the user declined it".into()),
        });
        sim.run(
            &mut |d| {
                if d.role == AgentType::Main {
                    answer(d, None)
                } else {
                    ok(d)
                }
            },
            50,
        );
        if allow {
            assert_eq!(sim.core.status("T1"), Some(TaskStatus::Completed));
        } else {
            let (status, reason) = finish_reason(&sim, "T1");
            assert_eq!(status, TaskStatus::Cancelled);
            assert_eq!(reason.as_deref(), Some("not started: the user declined it"));
        }
        assert_eq!(
            sim.core.status("main:2"),
            Some(TaskStatus::Completed),
            "summarised"
        );
    }
}

/// `/direct …` is done at once by an executor in the direct lane: no turn before it,
/// no slot taken from the task graph, no reviewer; one at a time.
#[test]
fn the_direct_lane_takes_no_slot_and_its_answer_ends_it() {
    let mut sim = Sim::new(config(1), &plan("## Task A: a\n"));
    let a = only(&sim.settle(), "A's executor").clone();
    say(&mut sim, 1, "/direct run the tests");
    say(&mut sim, 2, "/direct then the linter");
    let d = only(&sim.settle(), "the first direct request, beside A").clone();
    assert_eq!(
        (d.task_id.as_str(), d.role),
        ("direct:1", AgentType::Executor)
    );
    assert_eq!(sim.core.status("main:1"), None, "no turn before it");
    sim.finish(
        &d.agent_id,
        res(result_for(&d, WorkerStatus::Completed, false)),
    );
    let d2 = only(&sim.settle(), "the second, after the first").clone();
    assert_eq!(d2.task_id, "direct:2");
    assert_eq!(
        sim.core.status("direct:1"),
        Some(TaskStatus::Completed),
        "no reviewer"
    );
    sim.finish(
        &d2.agent_id,
        res(result_for(&d2, WorkerStatus::Failed, false)),
    );
    sim.settle();
    let (status, reason) = finish_reason(&sim, "direct:2");
    assert_eq!(status, TaskStatus::Failed, "no debugger either: {reason:?}");
    sim.finish(&a.agent_id, ok(&a));
    sim.run(&mut |d| ok(d), 50);
    assert_eq!(sim.core.status("A"), Some(TaskStatus::Completed));
}

/// `/review` after the direct lane's work: a reviewer looks at that result (no new
/// attempt follows, whatever it decides), and the Main Agent summarises its findings.
#[test]
fn review_asks_a_reviewer_about_the_direct_lanes_latest_work() {
    let mut sim = Sim::new(config(1), &[]);
    say(&mut sim, 1, "/review");
    let t = only(&sim.settle(), "nothing to review: a turn says so").clone();
    assert_eq!(t.role, AgentType::Main);
    sim.finish(&t.agent_id, answer(&t, None));
    say(&mut sim, 2, "/direct fix the typo");
    let d = only(&sim.settle(), "the direct lane").clone();
    sim.finish(
        &d.agent_id,
        res(result_for(&d, WorkerStatus::Completed, false)),
    );
    sim.settle();
    say(&mut sim, 3, "/review please");
    let r = only(&sim.settle(), "the review").clone();
    assert_eq!(
        (r.task_id.as_str(), r.role),
        ("review:1", AgentType::Reviewer)
    );
    assert_eq!(
        r.previous.as_ref().map(|p| p.task_id.as_str()),
        Some("direct:1")
    );
    let mut found = review(&r, ReviewDecision::ChangesRequested);
    if let Ok(mut o) = serde_json::from_value::<ReviewerOutput>(found.result.clone()) {
        o.findings = vec![ReviewFinding {
            severity: Severity::High,
            file: Some("README.md".into()),
            line: Some(3),
            summary: "the typo is still there".into(),
        }];
        found.result = serde_json::to_value(o).unwrap();
    }
    sim.finish(&r.agent_id, res(found));
    let s = only(&sim.settle(), "the summary of the review").clone();
    assert_eq!(s.role, AgentType::Main);
    assert_eq!(
        air_proto::conversation::summarised(&s.spec),
        ["review:1".to_string()]
    );
    let (status, reason) = finish_reason(&sim, "review:1");
    assert_eq!(
        status,
        TaskStatus::Completed,
        "no new attempt follows a review"
    );
    let reason = reason.unwrap();
    assert!(
        reason.starts_with("changes_requested")
            && reason.contains("README.md:3: the typo is still there"),
        "{reason}"
    );
    assert_eq!(sim.core.status("direct:1"), Some(TaskStatus::Completed));
}

/// Work waiting for its confirmation that ends another way (cancelled) closes its
/// question and no longer holds the run open; a run stopped by its budget answers
/// no more messages, and says so.
#[test]
fn a_cancelled_confirmation_closes_and_a_stopped_run_says_it_answers_no_more() {
    let mut sim = confirming();
    say(&mut sim, 1, "/task write hello.txt");
    let t = only(&sim.settle(), "the turn").clone();
    sim.finish(&t.agent_id, answer(&t, Some(hello())));
    sim.settle();
    sim.record(Fact::CancelRequested {
        task_id: Some("T1".into()),
        reason: "the user changed their mind".into(),
        block: false,
    });
    sim.run(&mut |d| answer(d, None), 50);
    assert!(
        sim.decisions
            .iter()
            .any(|d| matches!(d, Decision::Refuse(r) if r.request_id == "confirm:T1")),
        "the question is closed"
    );
    assert_eq!(sim.core.status("T1"), Some(TaskStatus::Cancelled));
    assert!(
        sim.core.is_finished(),
        "the run does not wait for a closed question"
    );
    // The budget is spent: a message's turn ends blocked with why.
    say(&mut sim, 2, "anything else?");
    sim.record(Fact::Stopped {
        reason: "the run's max_cost of $1.00 is spent".into(),
    });
    sim.run(&mut |d| answer(d, None), 50);
    let (status, reason) = finish_reason(&sim, "main:3");
    assert_eq!(status, TaskStatus::Blocked);
    assert_eq!(
        reason.as_deref(),
        Some("not answered: the run's max_cost of $1.00 is spent")
    );
    assert!(
        !sim.core.unfinished().iter().any(|t| t.starts_with("main:")),
        "turns are not reopened"
    );
}
