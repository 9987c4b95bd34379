//! The planning session in the core: a requirement discussed (questions answered),
//! requirements agreed, a proposal changed once and confirmed, the plan written and
//! run to a summary; what each phase refuses; and the same at every point of a
//! recovery.

use std::collections::{BTreeMap, VecDeque};

use air_proto::payload::{PlanDecided, QuestionsAnswered};
use air_proto::planning::{
    AskUser, PlanDecision, PlanningPhase, PlanningTurn, Proposal, Question, Settle,
};

use super::*;
use crate::scheduler::core::PlanningFact;

fn conversation(confirm: bool) -> Sim {
    let start = Fact::RunStarted {
        concurrency: 1,
        on_ask: air_proto::plan::OnAsk::Deny,
        budgets: Default::default(),
        confirm,
        isolated: false,
    };
    Sim::with_start(config(1), start, &[])
}

fn say(sim: &mut Sim, n: u32, text: &str) {
    sim.record(Fact::UserMessage {
        message_id: format!("m{n}"),
        text: text.into(),
        to: None,
    });
}

pub(super) fn turn(d: &Dispatch, t: PlanningTurn) -> Play {
    let mut r = result_for(d, WorkerStatus::Completed, false);
    r.changed_files.clear();
    r.result = serde_json::to_value(t).unwrap();
    res(r)
}

fn asks(d: &Dispatch) -> Play {
    let q = |id: &str, text: &str| Question {
        id: id.into(),
        text: text.into(),
        options: vec![],
    };
    turn(
        d,
        PlanningTurn {
            asked: Some(AskUser {
                questions: vec![
                    q("input", "Read a file or stdin?"),
                    q("case", "Count Word and word as one?"),
                ],
            }),
            answer: "Two questions first.".into(),
            ..PlanningTurn::default()
        },
    )
}

fn settles(d: &Dispatch) -> Play {
    turn(
        d,
        PlanningTurn {
            settled: Some(Settle {
                requirements: vec!["Words are read from a file.".into()],
                user_agreed: d.notes.iter().any(|n| n.contains("looks right")),
            }),
            ..PlanningTurn::default()
        },
    )
}

const PLAN: &str = "# Word counter\n\n## Task T1: Count words\n\n- category: logic\n\nCount them.\n\n## Task T2: The command\n\n- category: logic\n- depends_on: T1\n\nPrint them.\n";

pub(super) fn proposal(plan: &str) -> Proposal {
    Proposal {
        summary: "A library and a command.".into(),
        modules: vec![],
        decisions: vec![],
        plan: plan.into(),
        change: None,
    }
}

fn proposes(d: &Dispatch, plan: &str) -> Play {
    turn(
        d,
        PlanningTurn {
            proposal: Some(proposal(plan)),
            ..PlanningTurn::default()
        },
    )
}

fn answered(task: &str, answers: &[(&str, &str)], go_ahead: bool) -> Fact {
    Fact::Planning(Box::new(PlanningFact::Answered(QuestionsAnswered {
        task_id: task.into(),
        answers: answers
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect::<BTreeMap<_, _>>(),
        note: None,
        go_ahead,
        client: None,
    })))
}

pub(super) fn decided(task: &str, decision: PlanDecision, note: Option<&str>) -> Fact {
    Fact::Planning(Box::new(PlanningFact::Decided(PlanDecided {
        task_id: task.into(),
        decision,
        note: note.map(str::to_string),
        run: true,
        client: None,
    })))
}

/// The designer's answers, by turn: questions, requirements, a proposal (changed
/// once), requirements again, the proposal again.
fn designer(d: &Dispatch) -> Play {
    match d.task_id.as_str() {
        "plan:1" => asks(d),
        "plan:2" | "plan:4" => settles(d),
        _ => proposes(d, PLAN),
    }
}

pub(super) fn agent(d: &Dispatch) -> Play {
    match d.role {
        AgentType::ArchitectureDesigner => designer(d),
        AgentType::Main => {
            let mut r = result_for(d, WorkerStatus::Completed, false);
            r.changed_files.clear();
            r.result = serde_json::json!({"intent": "chat", "answer": "done"});
            res(r)
        }
        _ => ok(d),
    }
}

pub(super) fn phase(d: &Dispatch) -> PlanningPhase {
    air_proto::planning::phase_of(&d.spec).unwrap()
}

#[test]
fn a_requirement_is_discussed_proposed_changed_confirmed_written_and_run() {
    let mut sim = conversation(false);
    say(&mut sim, 1, "/plan a word counter");
    let p1 = only(&sim.settle(), "the designer's first turn").clone();
    assert_eq!(
        (p1.task_id.as_str(), p1.role, phase(&p1)),
        (
            "plan:1",
            AgentType::ArchitectureDesigner,
            PlanningPhase::Discussing
        )
    );
    assert_eq!(p1.spec.description, "a word counter");
    sim.finish(&p1.agent_id, asks(&p1));
    assert!(sim.settle().is_empty(), "the questions wait for the user");
    assert!(!sim.core.is_finished(), "the run waits for the planning");
    sim.record(answered(
        "plan:1",
        &[("input", "a file"), ("case", "yes")],
        false,
    ));
    let p2 = only(&sim.settle(), "the second turn").clone();
    assert_eq!(phase(&p2), PlanningPhase::Discussing);
    assert!(
        p2.notes
            .iter()
            .any(|n| n.contains("[input]") && n.contains("a file")),
        "{:?}",
        p2.notes
    );
    sim.finish(&p2.agent_id, settles(&p2));
    sim.settle();
    sim.record(answered("plan:2", &[], true));
    let p3 = only(&sim.settle(), "the proposing turn").clone();
    assert_eq!(phase(&p3), PlanningPhase::Proposing);
    assert!(
        p3.notes.iter().any(|n| n.contains("agreed")),
        "{:?}",
        p3.notes
    );
    sim.finish(&p3.agent_id, proposes(&p3, PLAN));
    sim.settle();
    // A decision for a turn that proposed nothing changes nothing.
    sim.record(decided("plan:2", PlanDecision::Confirm, None));
    assert!(sim.settle().is_empty());
    sim.record(decided("plan:3", PlanDecision::Change, Some("tests too")));
    let p4 = only(&sim.settle(), "back to discussing").clone();
    assert_eq!(phase(&p4), PlanningPhase::Discussing);
    assert!(p4.notes.iter().any(|n| n.contains("tests too")));
    sim.finish(&p4.agent_id, settles(&p4));
    sim.settle();
    sim.record(answered("plan:4", &[], true));
    let p5 = only(&sim.settle(), "proposing again").clone();
    sim.finish(&p5.agent_id, proposes(&p5, PLAN));
    sim.settle();
    sim.record(decided("plan:5", PlanDecision::Confirm, None));
    let t1 = only(&sim.settle(), "T1, once the plan is written").clone();
    assert!(sim
        .decisions
        .iter()
        .any(|d| matches!(d, Decision::WritePlan { task_id, .. } if task_id == "plan:5")));
    assert_eq!((t1.task_id.as_str(), t1.role), ("T1", AgentType::Executor));
    sim.run(&mut agent, 100);
    let end = sim.outcome.clone().unwrap();
    assert_eq!(
        (end.outcome, end.completed),
        (RunOutcome::Completed, 2),
        "the plan's two tasks, not the turns"
    );
    let summary = sim
        .decisions
        .iter()
        .find_map(|d| match d {
            Decision::Dispatch(d) if d.role == AgentType::Main => Some(d.clone()),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        air_proto::conversation::summarised(&summary.spec),
        ["T1".to_string(), "T2".to_string()]
    );

    // Recovered from any point after the request, with the user's answers given
    // when the session waits for them, the run ends the same.
    let facts = sim.facts.clone();
    let from = facts
        .iter()
        .position(|f| matches!(f, Fact::UserMessage { .. }))
        .unwrap();
    let is_user = |f: &Fact| matches!(f, Fact::Planning(b) if matches!(**b, PlanningFact::Answered(_) | PlanningFact::Decided(_)));
    for cut in from + 1..=facts.len() {
        let mut r = Sim::recover(config(1), &facts[..cut], sim.now_ms);
        let mut user: VecDeque<Fact> = facts[cut..]
            .iter()
            .filter(|f| is_user(f))
            .cloned()
            .collect();
        for _ in 0..400 {
            r.settle();
            if r.core.is_finished() {
                break;
            }
            if let Some(d) = r.running.first().cloned() {
                r.finish(&d.agent_id, agent(&d));
            } else if let Some(f) = user.pop_front() {
                r.record(f);
            } else {
                r.now_ms += 60_000;
            }
        }
        let end = r
            .outcome
            .clone()
            .unwrap_or_else(|| panic!("cut at {cut}: no end"));
        assert_eq!(
            (end.outcome, end.completed),
            (RunOutcome::Completed, 2),
            "cut at {cut}"
        );
    }
}

/// Agreement in the user's own words: the designer says so, and the plan is proposed
/// next; without the user's words about stated requirements, saying so is a statement
/// like any other.
#[test]
fn the_user_agrees_in_words_and_the_designer_may_say_so() {
    let mut sim = conversation(false);
    say(&mut sim, 1, "/plan a word counter");
    let p1 = only(&sim.settle(), "discussing").clone();
    sim.finish(&p1.agent_id, settles(&p1));
    sim.settle();
    say(&mut sim, 2, "that looks right");
    let p2 = only(&sim.settle(), "the user's words").clone();
    assert_eq!(phase(&p2), PlanningPhase::Discussing);
    sim.finish(&p2.agent_id, settles(&p2));
    let p3 = only(&sim.settle(), "proposing, with no wait").clone();
    assert_eq!(phase(&p3), PlanningPhase::Proposing);
    assert!(p3
        .notes
        .iter()
        .any(|n| n.contains("The user agreed to the requirements")));
}

#[test]
fn each_phase_refuses_what_it_does_not_allow_and_a_bad_plan_never_reaches_the_user() {
    let mut sim = conversation(false);
    say(&mut sim, 1, "/plan a word counter");
    // Proposing while discussing is refused: the designer is told why and goes on.
    let p1 = only(&sim.settle(), "discussing").clone();
    sim.finish(&p1.agent_id, proposes(&p1, PLAN));
    let p2 = only(&sim.settle(), "another turn").clone();
    assert_eq!(phase(&p2), PlanningPhase::Discussing);
    assert!(
        p2.notes
            .iter()
            .any(|n| n.contains("refused while discussing")),
        "{:?}",
        p2.notes
    );
    assert!(!sim
        .facts
        .iter()
        .any(|f| matches!(f, Fact::Planning(b) if matches!(**b, PlanningFact::Proposed(_)))));
    sim.finish(&p2.agent_id, settles(&p2));
    sim.settle();
    sim.record(answered("plan:2", &[], true));
    // A plan that does not compile goes back to the designer with its errors.
    let p3 = only(&sim.settle(), "proposing").clone();
    sim.finish(
        &p3.agent_id,
        proposes(
            &p3,
            "## Task T1: Count\n\n- category: logic\n- depends_on: T9\n\nCount.\n",
        ),
    );
    let p4 = only(&sim.settle(), "proposing again").clone();
    assert_eq!(phase(&p4), PlanningPhase::Proposing);
    assert!(
        p4.notes
            .iter()
            .any(|n| n.contains("proposed plan:") && n.contains("T9")),
        "{:?}",
        p4.notes
    );
    // Three refusals in a row: the session waits for the user instead.
    sim.finish(&p4.agent_id, proposes(&p4, "no tasks here"));
    let p5 = only(&sim.settle(), "a third try").clone();
    sim.finish(&p5.agent_id, proposes(&p5, "no tasks here"));
    assert!(
        sim.settle().is_empty(),
        "the user is asked, not the designer"
    );
    say(&mut sim, 2, "keep it to one task");
    let p6 = only(&sim.settle(), "the user's words").clone();
    assert!(p6.notes.iter().any(|n| n.contains("keep it to one task")));
}

#[test]
fn in_default_mode_a_confirmed_plan_waits_for_one_more_word_and_no_stops_it_all() {
    let mut sim = conversation(true);
    say(&mut sim, 1, "/plan a word counter");
    let p1 = only(&sim.settle(), "discussing").clone();
    sim.finish(&p1.agent_id, settles(&p1));
    sim.settle();
    sim.record(answered("plan:1", &[], true));
    let p2 = only(&sim.settle(), "proposing").clone();
    sim.finish(&p2.agent_id, proposes(&p2, PLAN));
    sim.settle();
    sim.record(decided("plan:2", PlanDecision::Confirm, None));
    assert!(sim.settle().is_empty(), "nothing starts before the word");
    assert!(sim.decisions.iter().any(|d| matches!(
        d,
        Decision::AskConfirmation { task_id, title } if task_id == "plan:2" && title.contains("2 task")
    )));
    sim.record(Fact::Confirmed {
        task_id: "plan:2".into(),
        allow: false,
        reason: Some("not today".into()),
    });
    sim.run(&mut agent, 50);
    for id in ["T1", "T2"] {
        assert_eq!(sim.core.status(id), Some(TaskStatus::Cancelled), "{id}");
        let (_, why) = finish_reason(&sim, id);
        assert!(why.unwrap().contains("not today"));
    }
    assert!(sim.core.is_finished());
    assert!(
        sim.core.unfinished().is_empty(),
        "declined work stays ended"
    );
}

fn change(tasks: &[&str]) -> air_proto::planning::ChangeDescription {
    air_proto::planning::ChangeDescription {
        scope: air_proto::planning::ChangeScope::Implementation,
        affected_modules: vec!["b".into()],
        tasks: tasks.iter().map(|t| t.to_string()).collect(),
        summary: "B changes, C goes, D comes".into(),
    }
}

/// The designer's first re-planning turn: what the change is.
fn classify(d: &Dispatch, tasks: &[&str]) -> Play {
    turn(
        d,
        PlanningTurn {
            classified: Some(change(tasks)),
            ..PlanningTurn::default()
        },
    )
}

fn replan(d: &Dispatch, plan: &str) -> Play {
    let mut p = proposal(plan);
    p.change = Some(change(&[]));
    turn(
        d,
        PlanningTurn {
            proposal: Some(p),
            ..PlanningTurn::default()
        },
    )
}

/// A requirement change in the middle of a run: dispatch freezes, the designer says
/// what the change is (it names B and C), the tasks it does not touch go on (A, which
/// runs, finishes its attempt), the designer re-plans the impacted part (a plan that
/// drops A is refused), the user confirms, and the new graph is applied — a task
/// changed, one removed, one added — and run to its end, the same from any point of
/// a recovery.
#[test]
fn a_requirement_change_mid_run_freezes_replans_and_replaces_the_unfinished_work() {
    let tasks = plan(
        "## Task A: a\n\n- category: logic\n\n## Task B: b\n\n- category: logic\n- depends_on: A\n\n## Task C: c\n\n- category: logic\n- depends_on: B\n",
    );
    let start = Fact::RunStarted {
        concurrency: 1,
        on_ask: air_proto::plan::OnAsk::Deny,
        budgets: Default::default(),
        confirm: false,
        isolated: false,
    };
    let mut sim = Sim::with_start(config(1), start, &tasks);
    let a = only(&sim.settle(), "A").clone();
    sim.record(Fact::RequirementChanged {
        change: "B must count bytes, and C is not needed".into(),
    });
    let p0 = only(&sim.settle(), "the re-planning turn, beside A").clone();
    assert!(air_proto::planning::is_replan(&p0.spec), "{:?}", p0.spec);
    assert_eq!(phase(&p0), PlanningPhase::Classifying);
    assert_eq!(p0.spec.context_refs.plan_ref.as_deref(), Some("t.md"));
    sim.finish(&a.agent_id, ok(&a));
    let r = only(&sim.settle(), "A's reviewer").clone();
    sim.finish(&r.agent_id, ok(&r));
    assert!(sim.settle().is_empty(), "B waits: dispatch is frozen");
    assert_eq!(
        sim.core.status("B"),
        Some(TaskStatus::Ready),
        "ready, not started"
    );
    sim.finish(&p0.agent_id, classify(&p0, &["B", "C"]));
    let p1 = only(&sim.settle(), "the re-plan of the impacted part").clone();
    assert_eq!(phase(&p1), PlanningPhase::Proposing);
    assert!(
        p1.notes
            .iter()
            .any(|n| n.contains("Re-plan only these tasks: B, C")),
        "{:?}",
        p1.notes
    );
    // Dropping A, which the change does not touch, is refused.
    sim.finish(
        &p1.agent_id,
        replan(&p1, "## Task B: b\n\n- category: logic\n\nBytes.\n"),
    );
    let p2 = only(&sim.settle(), "another try").clone();
    assert!(
        p2.notes
            .iter()
            .any(|n| n.contains("A (a) is outside what the change impacts")),
        "{:?}",
        p2.notes
    );
    const NEW: &str = "## Task A: a\n\n- category: logic\n\n## Task B: b\n\n- category: logic\n- depends_on: A\n\nCount bytes.\n\n## Task D: d\n\n- category: logic\n- depends_on: B\n";
    sim.finish(&p2.agent_id, replan(&p2, NEW));
    sim.settle();
    sim.record(decided("plan:3", PlanDecision::Confirm, None));
    sim.run(&mut agent, 100);
    let update = sim.plan_update().unwrap();
    let ids = |v: &[air_proto::task::TaskSpec]| v.iter().map(|t| t.id.clone()).collect::<Vec<_>>();
    assert_eq!(ids(&update.changed), ["B"]);
    assert_eq!(ids(&update.added), ["D"]);
    assert_eq!(update.removed, ["C"]);
    assert_eq!(sim.core.status("C"), Some(TaskStatus::Cancelled));
    let (_, why) = finish_reason(&sim, "C");
    assert!(why.unwrap().contains("replaced by the updated plan"));
    for id in ["A", "B", "D"] {
        assert_eq!(sim.core.status(id), Some(TaskStatus::Completed), "{id}");
    }
    assert!(
        sim.core.unfinished().is_empty(),
        "a replaced task stays ended"
    );

    // Recovered from any point after the change, with the user's answer given when
    // it waits, the run ends the same: the designer classifies and proposes the new
    // graph whenever it is asked.
    let script = |d: &Dispatch| match d.role {
        AgentType::ArchitectureDesigner if phase(d) == PlanningPhase::Classifying => {
            classify(d, &["B", "C"])
        }
        AgentType::ArchitectureDesigner => replan(d, NEW),
        _ => agent(d),
    };
    recovered_alike(
        &sim,
        &script,
        &[
            ("B", TaskStatus::Completed),
            ("C", TaskStatus::Cancelled),
            ("D", TaskStatus::Completed),
        ],
    );
}

/// Recovers `sim`'s run from every point after its requirement change and plays it
/// to its end with `script` (the user confirming whatever proposal waits): each ends
/// with the tasks as `expected`.
pub(super) fn recovered_alike(
    sim: &Sim,
    script: &dyn Fn(&Dispatch) -> Play,
    expected: &[(&str, TaskStatus)],
) {
    let facts = sim.facts.clone();
    let from = facts
        .iter()
        .position(|f| matches!(f, Fact::RequirementChanged { .. }))
        .unwrap();
    let waiting = |r: &Sim| {
        let mut open = None;
        for f in &r.facts {
            if let Fact::Planning(b) = f {
                match &**b {
                    PlanningFact::Proposed(p) => open = Some(p.task_id.clone()),
                    PlanningFact::Decided(_) => open = None,
                    _ => {}
                }
            }
        }
        open
    };
    for cut in from + 1..=facts.len() {
        let mut r = Sim::recover(config(1), &facts[..cut], sim.now_ms);
        for _ in 0..400 {
            r.settle();
            if r.core.is_finished() {
                break;
            }
            if let Some(d) = r.running.first().cloned() {
                r.finish(&d.agent_id, script(&d));
            } else if let Some(turn) = waiting(&r) {
                r.record(decided(&turn, PlanDecision::Confirm, None));
            } else {
                r.now_ms += 60_000;
            }
        }
        assert!(r.core.is_finished(), "cut at {cut}");
        for (id, status) in expected {
            assert_eq!(r.core.status(id), Some(*status), "{id}, cut at {cut}");
        }
    }
}
