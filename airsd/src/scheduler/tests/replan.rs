//! A change of plan mid-run as seed 001 §14 designs it, in the core: six tasks, a
//! change that touches the `auth` interfaces two of them provide, each phase in its
//! events, and the same outcome from any point of a recovery.

use air_proto::impact::{Action, Zone};
use air_proto::planning::{
    ChangeDescription, ChangeScope, PlanDecision, PlanningPhase, PlanningTurn,
};

use super::planning::{agent, decided, phase, proposal, turn};
use super::*;
use crate::scheduler::core::PlanningFact;

const SIX: &str = "## Task S1: screens\n\n- category: logic\n\nDraw the screens.\n\nProvides:\n\n- api ui: the screens (stable)\n\n\
## Task P1: login api\n\n- category: logic\n\nThe login call.\n\nProvides:\n\n- api auth: POST /login (volatile)\n\n\
## Task B1: billing\n\n- category: logic\n\nBill the sessions.\n\nRequires:\n\n- schema auth: the session table (stable)\n\n\
## Task P2: session store\n\n- category: logic\n\nStore the sessions.\n\nProvides:\n\n- schema auth: the session table (stable)\n\n\
## Task N: logout\n\n- category: logic\n- depends_on: P1\n\nThe logout call.\n\nRequires:\n\n- api auth: POST /login (volatile)\n\n\
## Task S2: docs\n\n- category: logic\n\nWrite the docs.\n";

/// The re-plan: the impacted part changed, everything else exactly as it was.
const NEW: &str = "## Task S1: screens\n\n- category: logic\n\nDraw the screens.\n\nProvides:\n\n- api ui: the screens (stable)\n\n\
## Task P1: login api\n\n- category: logic\n\nThe login call, with a one-time code.\n\nProvides:\n\n- api auth: POST /login with a code (volatile)\n\n\
## Task B1: billing\n\n- category: logic\n\nBill the sessions.\n\nRequires:\n\n- schema auth: the session table (stable)\n\n\
## Task P2: session store\n\n- category: logic\n\nStore the sessions and their codes.\n\nProvides:\n\n- schema auth: the session table (stable)\n\n\
## Task N: logout\n\n- category: logic\n- depends_on: P1\n\nThe logout call.\n\nRequires:\n\n- api auth: POST /login with a code (volatile)\n\n\
## Task S2: docs\n\n- category: logic\n\nWrite the docs.\n";

fn classify(d: &Dispatch) -> Play {
    turn(
        d,
        PlanningTurn {
            classified: Some(ChangeDescription {
                scope: ChangeScope::ExternalInterface,
                affected_modules: vec!["auth".into()],
                tasks: Vec::new(),
                summary: "logins take a one-time code".into(),
            }),
            ..PlanningTurn::default()
        },
    )
}

fn replan(d: &Dispatch, plan: &str) -> Play {
    let mut p = proposal(plan);
    p.change = Some(ChangeDescription {
        scope: ChangeScope::ExternalInterface,
        affected_modules: vec!["auth".into()],
        tasks: Vec::new(),
        summary: "logins take a one-time code".into(),
    });
    turn(
        d,
        PlanningTurn {
            proposal: Some(p),
            ..PlanningTurn::default()
        },
    )
}

/// Plays every agent of the run until `id` has completed.
fn complete(sim: &mut Sim, id: &str) {
    for _ in 0..20 {
        if sim.core.status(id) == Some(TaskStatus::Completed) {
            return;
        }
        for d in sim.running.clone() {
            sim.finish(&d.agent_id, agent(&d));
        }
        sim.settle();
    }
    panic!("{id} did not complete");
}

fn script(d: &Dispatch) -> Play {
    match d.role {
        AgentType::ArchitectureDesigner if phase(d) == PlanningPhase::Classifying => classify(d),
        AgentType::ArchitectureDesigner => replan(d, NEW),
        _ => agent(d),
    }
}

fn impact(sim: &Sim) -> Option<air_proto::payload::ImpactCompleted> {
    sim.facts.iter().find_map(|f| match f {
        Fact::Planning(b) => match &**b {
            PlanningFact::Impact(i) => Some((**i).clone()),
            _ => None,
        },
        _ => None,
    })
}

#[test]
fn a_change_that_touches_two_tasks_interfaces_is_handled_zone_by_zone() {
    let start = Fact::RunStarted {
        concurrency: 1,
        on_ask: air_proto::plan::OnAsk::Deny,
        budgets: Default::default(),
        confirm: false,
        isolated: true,
    };
    let mut sim = Sim::with_start(config(1), start, &plan(SIX));
    sim.settle();
    for id in ["S1", "P1", "B1"] {
        complete(&mut sim, id);
    }
    let p2 = sim.running.first().cloned().unwrap();
    assert_eq!((p2.task_id.as_str(), p2.role), ("P2", AgentType::Executor));
    sim.record(Fact::RequirementChanged {
        change: "logins take a one-time code".into(),
    });
    // Phase 1: frozen; the designer says what the change is, while P2 runs on.
    let p0 = only(&sim.settle(), "the classifying turn").clone();
    assert_eq!(phase(&p0), PlanningPhase::Classifying);
    sim.finish(&p0.agent_id, classify(&p0));
    let started = sim.settle();
    // Phase 2: every task classified.
    let found = impact(&sim).expect("architecture.impact.completed");
    let zones: Vec<(&str, Zone, Action)> = found
        .tasks
        .iter()
        .map(|t| (t.task_id.as_str(), t.zone, t.action))
        .collect();
    assert_eq!(
        zones,
        [
            ("S1", Zone::Safe, Action::Keep),
            ("P1", Zone::Impacted, Action::Revert),
            ("B1", Zone::Boundary, Action::Verify),
            ("P2", Zone::Impacted, Action::Cancel),
            ("N", Zone::Impacted, Action::Freeze),
            ("S2", Zone::Safe, Action::Keep),
        ]
    );
    // Phase 3: P2's agent stopped at once (P1's merge is taken back out once the
    // re-plan is confirmed); SAFE S2 starts while the designer re-plans; N waits.
    assert!(sim
        .decisions
        .iter()
        .any(|d| matches!(d, Decision::Cancel { agent_id, .. } if *agent_id == p2.agent_id)));
    let reverted = |sim: &Sim| {
        sim.facts
            .iter()
            .any(|f| matches!(f, Fact::Reverted { task_id, error: None } if task_id == "P1"))
    };
    assert!(
        !reverted(&sim),
        "nothing merged is taken out before the person confirms"
    );
    let roles: Vec<(&str, AgentType)> = started
        .iter()
        .map(|d| (d.task_id.as_str(), d.role))
        .collect();
    assert!(roles.contains(&("S2", AgentType::Executor)), "{roles:?}");
    let p1 = started
        .iter()
        .find(|d| d.role == AgentType::ArchitectureDesigner)
        .cloned()
        .expect("the re-planning turn");
    assert_eq!(phase(&p1), PlanningPhase::Proposing);
    // Phase 4: asked only for the impacted part.
    assert!(
        p1.notes
            .iter()
            .any(|n| n.contains("Re-plan only these tasks: P1, P2, N")),
        "{:?}",
        p1.notes
    );
    // A re-plan that rewrites SAFE S2 is refused, never dropped silently.
    sim.finish(
        &p1.agent_id,
        replan(
            &p1,
            &NEW.replace("Write the docs.", "Write the docs twice."),
        ),
    );
    let again = sim
        .settle()
        .into_iter()
        .find(|d| d.role == AgentType::ArchitectureDesigner)
        .expect("asked again");
    assert!(
        again
            .notes
            .iter()
            .any(|n| n.contains("S2 is outside what the change impacts: keep it exactly as it is (its description changed)")),
        "{:?}",
        again.notes
    );
    sim.finish(&again.agent_id, replan(&again, NEW));
    sim.settle();
    sim.record(decided(&again.task_id, PlanDecision::Confirm, None));
    sim.settle();
    assert!(reverted(&sim));
    sim.run(&mut script, 200);
    assert!(sim.core.is_finished());
    let update = sim.plan_update().unwrap();
    let ids = |v: &[TaskSpec]| v.iter().map(|t| t.id.clone()).collect::<Vec<_>>();
    assert_eq!(ids(&update.changed), ["P1", "P2", "N"]);
    assert_eq!(ids(&update.added), ["B1:verify"]);
    assert!(update.removed.is_empty());
    let verify = &update.added[0];
    let after: Vec<&str> = verify
        .dependencies
        .iter()
        .map(|d| d.depends_on_task_id.as_str())
        .collect();
    assert_eq!(after, ["B1", "P1", "P2", "N"]);
    for id in ["S1", "P1", "B1", "P2", "N", "S2", "B1:verify"] {
        assert_eq!(sim.core.status(id), Some(TaskStatus::Completed), "{id}");
    }
    // SAFE S1 ran once; the reverted P1 ran again.
    let executors = |id: &str| {
        sim.facts
            .iter()
            .filter(|f| matches!(f, Fact::Dispatched { task_id, role: AgentType::Executor, .. } if task_id == id))
            .count()
    };
    assert_eq!((executors("S1"), executors("P1")), (1, 2));
    // Each phase in order.
    let order: Vec<&str> = sim
        .facts
        .iter()
        .filter_map(|f| match f {
            Fact::RequirementChanged { .. } => Some("changed"),
            Fact::Planning(b) => match &**b {
                PlanningFact::Classified(_) => Some("classified"),
                PlanningFact::Impact(_) => Some("impact"),
                PlanningFact::Updated(_) => Some("updated"),
                _ => None,
            },
            Fact::Reverted { .. } => Some("reverted"),
            _ => None,
        })
        .collect();
    assert_eq!(
        order,
        ["changed", "classified", "impact", "reverted", "updated"]
    );

    // A crash at any point of the re-plan changes nothing in the outcome.
    let all: Vec<(&str, TaskStatus)> = ["S1", "P1", "B1", "P2", "N", "S2", "B1:verify"]
        .into_iter()
        .map(|id| (id, TaskStatus::Completed))
        .collect();
    super::planning::recovered_alike(&sim, &script, &all);
}

/// A milestone review that finds the architecture drifted from the plan goes the
/// same way as a requirement change: dispatch freezes (the next phase does not
/// start) and the designer is asked what the change is.
#[test]
fn a_milestone_review_that_finds_a_deviation_replans() {
    let tasks =
        plan("## Phase one: first\n\n### Task A: a\n\n## Phase two: second\n\n### Task C: c\n");
    let mut sim = Sim::new(config(2), &tasks);
    let mut seen = Vec::new();
    for _ in 0..30 {
        for d in sim.settle() {
            seen.push((d.task_id.clone(), d.role));
        }
        let Some(d) = sim.running.first().cloned() else {
            break;
        };
        if d.task_id == "one:milestone-1" {
            let mut r =
                crate::scheduler::sim::review(&d, air_proto::result::ReviewDecision::Approved);
            r.result["deviation"] =
                "the auth module split in two; phase two's tasks assume one".into();
            sim.finish(&d.agent_id, res(r));
        } else if air_proto::planning::is_planning(&d.task_id) {
            break;
        } else {
            sim.finish(&d.agent_id, agent(&d));
        }
    }
    let (status, why) = finish_reason(&sim, "one:milestone-1");
    assert_eq!(status, TaskStatus::Completed);
    assert!(why.unwrap().contains("drifted from the plan"));
    let turn = sim.running.first().expect("the re-planning turn");
    assert_eq!(phase(turn), PlanningPhase::Classifying);
    assert!(turn
        .spec
        .description
        .contains("the auth module split in two"));
    assert!(
        !seen.iter().any(|(t, _)| t == "C"),
        "phase two waits for the re-plan: {seen:?}"
    );
}
