//! The Architecture Designer's planning session (seed 001 §4.2, P1-16): a requirement
//! discussed with the user (`discussing`), an architecture and a task graph proposed
//! (`proposing`), and, once the user confirms, the plan airsd writes and runs
//! (`confirmed`). Each time the designer is to speak it gets a turn, task `plan:<n>`,
//! in the phase the session is in; what the user answered between turns is the next
//! turn's notes. Like everything in the core, the session is the fold of recorded
//! facts: the designer's accepted questions, statements and proposals, and the user's
//! answers.

use air_proto::payload as p;
use air_proto::planning::{
    check_proposal, planning_spec, PlanDecision, PlanningMove, PlanningPhase, PlanningTurn,
    Proposal, Question,
};

use super::*;

/// A planning fact: one `architecture.*` event.
#[derive(Clone, Debug, PartialEq)]
pub enum PlanningFact {
    Asked(p::QuestionsAsked),
    Settled(p::RequirementsSettled),
    Proposed(Box<p::PlanProposed>),
    Answered(p::QuestionsAnswered),
    Decided(p::PlanDecided),
    Written(p::PlanConfirmed),
    Updated(Box<p::PlanUpdated>),
    /// A re-plan's change, as the designer classified it.
    Classified(p::ChangeClassified),
    /// What it impacts.
    Impact(Box<p::ImpactCompleted>),
}

/// What the session waits for the user to answer.
#[derive(Clone, Debug, PartialEq)]
enum Waiting {
    /// The designer said something (or its turn ended without an answer): the user's
    /// next words go to it.
    Words,
    Questions(Vec<Question>),
    Requirements(Vec<String>),
    Proposal(Box<Proposal>),
}

#[derive(Clone, Debug)]
pub(super) struct Planning {
    requirement: String,
    message_id: Option<String>,
    pub(super) phase: PlanningPhase,
    /// The turn whose words wait for the user, and what they are; none while the
    /// designer works.
    waiting: Option<(String, Waiting)>,
    /// What the next turn must know: the discussion so far.
    pub(super) log: Vec<String>,
    /// The requirements the user agreed to.
    agreed: Vec<String>,
    /// Confirmed: the proposal airsd is to write, the turn that proposed it, and
    /// whether its tasks run.
    confirmed: Option<(String, Box<Proposal>, bool)>,
    /// Transient: the write is asked for.
    writing: bool,
    /// Written: the session is over.
    pub(super) done: bool,
    /// Turns in a row that ended with something airsd could not accept.
    refused: u32,
    /// The user's last words answered stated requirements (so the designer may say
    /// they agreed).
    words_on_requirements: bool,
    /// A re-plan of the run's graph after a requirement change (dispatch frozen).
    pub(super) replan: bool,
    /// A re-plan's change and what it impacts, once classified.
    pub(super) impact: Option<Impact>,
}

/// What a classified change's impact holds while the designer re-plans.
#[derive(Clone, Debug, Default)]
pub(super) struct Impact {
    /// Tasks the re-plan may change (IMPACTED ones, and BOUNDARY ones not started):
    /// held from dispatch, and whatever their agents end with is set aside.
    pub(super) open: BTreeSet<String>,
    /// IMPACTED tasks whose agents are to be stopped.
    pub(super) stop: BTreeSet<String>,
    /// IMPACTED completed tasks whose merged change is taken back out: `None` until
    /// it is done (or could not be: why).
    pub(super) revert: BTreeMap<String, Option<Result<(), String>>>,
    /// Transient: reverts asked for.
    pub(super) reverting: BTreeSet<String>,
    /// BOUNDARY tasks verified once the change is in, with why they are on the
    /// boundary.
    pub(super) verify: Vec<(String, String)>,
}

/// Turns in a row with a refused answer before the session waits for the user.
const REFUSED_LIMIT: u32 = 3;

impl Planning {
    fn new(
        requirement: &str,
        message_id: Option<&str>,
        phase: PlanningPhase,
        replan: bool,
    ) -> Planning {
        Planning {
            requirement: requirement.trim().to_string(),
            message_id: message_id.map(str::to_string),
            phase,
            waiting: None,
            log: Vec::new(),
            agreed: Vec::new(),
            confirmed: None,
            writing: false,
            done: false,
            refused: 0,
            words_on_requirements: false,
            replan,
            impact: None,
        }
    }

    pub(super) fn open(&self) -> bool {
        !self.done
    }

    /// The person confirmed the proposal (airsd has yet to write it).
    pub(super) fn is_confirmed(&self) -> bool {
        self.confirmed.is_some()
    }
}

impl Core {
    /// Whether a planning session is open (not yet written): the run waits for it.
    pub(super) fn planning_open(&self) -> bool {
        self.planning.as_ref().is_some_and(Planning::open)
    }

    /// The user asked for a plan (`/plan …`, or a message the Main Agent classified
    /// `needs_planning`): a session starts with the designer's first turn, unless one
    /// is open, which hears it as more words of the user.
    pub(super) fn start_planning(&mut self, requirement: &str, message_id: Option<&str>) {
        if self.planning_open() {
            self.planning_words(requirement);
            return;
        }
        self.planning = Some(Planning::new(
            requirement,
            message_id,
            PlanningPhase::Discussing,
            false,
        ));
        self.ask_planning();
    }

    /// The requirement changed mid-run (`requirement.changed`): an open planning
    /// session hears it; otherwise, with work of the graph unfinished, dispatch
    /// freezes and the designer re-plans the unfinished part (seed 001 §12.2's MVP).
    pub(super) fn requirement_changed(&mut self, change: &str) {
        if !self.started || self.finished || change.trim().is_empty() {
            return;
        }
        if self.planning_open() {
            self.planning_words(change);
            return;
        }
        // The work of a plan (a task handed on in the conversation is not re-planned:
        // the Main Agent offers to stop it or to hand on the change).
        if !self.plan_work_left() {
            return;
        }
        self.frozen = true;
        self.planning = Some(Planning::new(
            change,
            None,
            PlanningPhase::Classifying,
            true,
        ));
        self.ask_planning();
    }

    /// Whether the run has unfinished work of a plan, and no planning session open (a
    /// requirement change would re-plan it).
    pub fn has_plan_work(&self) -> bool {
        self.started && !self.finished && !self.planning_open() && self.plan_work_left()
    }

    /// Whether a task of a plan has not ended.
    fn plan_work_left(&self) -> bool {
        self.tasks.iter().any(|t| {
            !in_conversation(&t.spec.id)
                && t.spec.context_refs.plan_ref.is_some()
                && !is_terminal(t.status)
        })
    }

    /// The plan file the run's graph came from (what a re-plan edits).
    pub(super) fn plan_file(&self) -> String {
        self.tasks
            .iter()
            .filter(|t| !in_conversation(&t.spec.id))
            .find_map(|t| t.spec.context_refs.plan_ref.as_deref())
            .map(|r| r.split('#').next().unwrap_or(r).to_string())
            .filter(|f| !f.is_empty())
            .unwrap_or_else(|| PLAN_FILE.to_string())
    }

    /// The designer's next turn, in the session's phase.
    pub(super) fn ask_planning(&mut self) {
        let Some(s) = self.planning.as_mut() else {
            return;
        };
        s.waiting = None;
        self.plan_turns += 1;
        let replan = s.replan;
        let mut spec = planning_spec(
            self.plan_turns,
            s.phase,
            &s.requirement,
            s.message_id.as_deref(),
        );
        if replan {
            spec.title = "Re-plan after the requirement changed".into();
            spec.context_refs
                .artifacts
                .get_or_insert_with(Vec::new)
                .push(air_proto::planning::REPLAN_REF.into());
            spec.context_refs.plan_ref = Some(self.plan_file());
        }
        self.to_create.push(spec);
    }

    /// What the designer's turn must know: the discussion so far.
    pub(super) fn planning_notes(&self) -> Vec<String> {
        self.planning
            .as_ref()
            .map(|s| s.log.clone())
            .unwrap_or_default()
    }

    /// The user said something while a session is open (a message in the
    /// conversation): the answer to what waits, or words for the designer at work.
    /// Whether the session took it.
    pub(super) fn planning_words(&mut self, text: &str) -> bool {
        let Some(s) = self.planning.as_mut().filter(|s| s.open()) else {
            return false;
        };
        if s.confirmed.is_some() {
            return false;
        }
        s.log.push(format!("The user said: {}", text.trim()));
        match s.waiting.take() {
            Some((_, waiting)) => {
                s.words_on_requirements = matches!(waiting, Waiting::Requirements(_));
                if matches!(waiting, Waiting::Proposal(_)) {
                    s.log.push(
                        "(That is the user's answer to your proposal: the discussion goes on.)"
                            .into(),
                    );
                    s.phase = PlanningPhase::Discussing;
                }
                self.ask_planning();
            }
            None => {
                // The designer is at work: it hears it before its next step.
                let turn = air_proto::planning::planning_turn_id(self.plan_turns);
                let agent = self
                    .index
                    .get(&turn)
                    .and_then(|&i| self.tasks[i].agent.clone());
                if let Some(agent) = agent {
                    self.to_deliver.push((agent, text.to_string()));
                }
            }
        }
        true
    }

    /// A planning turn ended with its result: what it asked, stated or proposed is
    /// recorded (checked again here: a result is not taken at its word), or its words
    /// wait for the user.
    pub(super) fn on_planning_turn(&mut self, i: usize, result: &WorkerResult) {
        let turn_id = self.tasks[i].spec.id.clone();
        let phase =
            air_proto::planning::phase_of(&self.tasks[i].spec).unwrap_or(PlanningPhase::Discussing);
        let output: PlanningTurn =
            serde_json::from_value(result.result.clone()).unwrap_or_default();
        let taken: Vec<String> = self.tasks.iter().map(|t| t.spec.id.clone()).collect();
        let requirement = self.tasks[i].spec.description.clone();
        let frozen =
            air_proto::planning::is_replan(&self.tasks[i].spec).then(|| self.replan_fixed());
        let mut refused = None;
        let mut refuse = |why: String| {
            refused = Some(why);
            None
        };
        // What the turn ended with, in the phase it worked in (a call the phase does
        // not allow is refused, whatever the result says).
        let wrong = |tool: &str| air_proto::planning::refusal(phase, tool);
        let fact = if let Some(ask) = output.asked {
            match (wrong(air_proto::planning::ASK_USER), ask.problems()) {
                (Some(why), _) => refuse(why),
                (None, p) if !p.is_empty() => refuse(p.join("; ")),
                _ => Some(PlanningFact::Asked(p::QuestionsAsked {
                    task_id: turn_id.clone(),
                    questions: ask.questions,
                })),
            }
        } else if let Some(settle) = output.settled {
            match (wrong(air_proto::planning::SETTLE), settle.problems()) {
                (Some(why), _) => refuse(why),
                (None, p) if !p.is_empty() => refuse(p.join("; ")),
                _ => Some(PlanningFact::Settled(p::RequirementsSettled {
                    task_id: turn_id.clone(),
                    requirements: settle.requirements,
                    // Said only when the user's last words were about stated
                    // requirements; otherwise it is a statement like any other.
                    user_agreed: settle.user_agreed
                        && self
                            .planning
                            .as_ref()
                            .is_some_and(|s| s.words_on_requirements),
                })),
            }
        } else if let Some(change) = output.classified {
            let known: Vec<String> = self.tasks.iter().map(|t| t.spec.id.clone()).collect();
            match (
                wrong(air_proto::planning::CLASSIFY),
                air_proto::planning::change_problems(&change, &known),
            ) {
                (Some(why), _) => refuse(why),
                (None, p) if !p.is_empty() => refuse(p.join("; ")),
                _ => Some(PlanningFact::Classified(p::ChangeClassified {
                    task_id: turn_id.clone(),
                    change,
                })),
            }
        } else if let Some(proposal) = output.proposal {
            match wrong(air_proto::planning::PROPOSE) {
                Some(why) => refuse(why),
                None => match proposed(&turn_id, &requirement, proposal, &taken, frozen.as_deref())
                {
                    Ok(pl) => Some(PlanningFact::Proposed(Box::new(pl))),
                    Err(e) => refuse(e.join("; ")),
                },
            }
        } else {
            None
        };
        let t = &mut self.tasks[i];
        t.next = match result.status {
            WorkerStatus::Completed => Next::Finish(TaskStatus::Completed, None),
            WorkerStatus::Blocked => {
                Next::Finish(TaskStatus::Blocked, Some(result.summary.clone()))
            }
            _ => Next::Finish(TaskStatus::Failed, Some(result.summary.clone())),
        };
        let Some(s) = self.planning.as_mut().filter(|s| s.open()) else {
            return;
        };
        if let Some(fact) = fact {
            s.refused = 0;
            self.planning_out.push(fact);
            return;
        }
        let said = output.answer.trim();
        if !said.is_empty() {
            s.log.push(format!("You said to the user: {said}"));
        }
        if let Some(why) = refused {
            s.refused += 1;
            s.log
                .push(format!("airsd did not accept your last call: {why}"));
            if s.refused < REFUSED_LIMIT {
                return self.ask_planning();
            }
        }
        if result.status != WorkerStatus::Completed {
            s.log.push(format!(
                "Your previous turn ended {} without an answer: {}",
                worker_status(result.status),
                result.summary
            ));
        }
        self.wait_for_words(&turn_id);
    }

    /// The session waits for the user's words after `turn_id` (recorded as questions
    /// asked, none of them).
    fn wait_for_words(&mut self, turn_id: &str) {
        let pending = self.planning_out.iter().any(|f| match f {
            PlanningFact::Asked(a) => a.task_id == turn_id,
            PlanningFact::Settled(a) => a.task_id == turn_id,
            PlanningFact::Proposed(a) => a.task_id == turn_id,
            PlanningFact::Classified(a) => a.task_id == turn_id,
            _ => false,
        });
        if pending || self.planning.as_ref().is_some_and(|s| s.waiting.is_some()) {
            return;
        }
        self.planning_out
            .push(PlanningFact::Asked(p::QuestionsAsked {
                task_id: turn_id.to_string(),
                questions: Vec::new(),
            }));
    }

    /// A planning turn ended without a result (its worker crashed, stalled, was
    /// stopped): its session waits for the user rather than for nothing.
    pub(super) fn planning_turn_ended(
        &mut self,
        task_id: &str,
        status: TaskStatus,
        reason: Option<&str>,
    ) {
        let current = air_proto::planning::planning_turn_id(self.plan_turns);
        let Some(s) = self.planning.as_mut().filter(|s| s.open()) else {
            return;
        };
        if task_id != current || s.waiting.is_some() || status == TaskStatus::Completed {
            return;
        }
        s.log.push(format!(
            "Your previous turn ended {} without an answer: {}",
            status.as_str(),
            reason.unwrap_or("no reason given")
        ));
        self.wait_for_words(task_id);
    }

    /// Folds a planning fact.
    pub(super) fn apply_planning(&mut self, fact: &PlanningFact) {
        self.planning_out.retain(|f| f != fact);
        if let PlanningFact::Written(pl) = fact {
            return self.plan_written(pl);
        }
        if let PlanningFact::Updated(pl) = fact {
            return self.plan_updated(pl);
        }
        if let PlanningFact::Classified(pl) = fact {
            return self.change_classified(pl);
        }
        if let PlanningFact::Impact(pl) = fact {
            return self.impact_completed(pl);
        }
        let Some(s) = self.planning.as_mut().filter(|s| s.open()) else {
            return;
        };
        let mut next_turn = false;
        match fact {
            PlanningFact::Asked(pl) if pl.questions.is_empty() => {
                s.waiting = Some((pl.task_id.clone(), Waiting::Words));
            }
            PlanningFact::Asked(pl) => {
                let asked: Vec<String> = pl
                    .questions
                    .iter()
                    .map(|q| format!("[{}] {}", q.id, q.text))
                    .collect();
                s.log.push(format!("You asked: {}", asked.join(" ")));
                s.waiting = Some((pl.task_id.clone(), Waiting::Questions(pl.questions.clone())));
            }
            PlanningFact::Settled(pl) if pl.user_agreed && s.words_on_requirements => {
                s.words_on_requirements = false;
                s.agreed.clone_from(&pl.requirements);
                s.log.push(format!(
                    "The user agreed to the requirements: {}",
                    pl.requirements.join("; ")
                ));
                s.phase = s.phase.after(PlanningMove::Settled).unwrap_or(s.phase);
                next_turn = true;
            }
            PlanningFact::Settled(pl) => {
                s.words_on_requirements = false;
                s.log.push(format!(
                    "You stated the requirements: {}",
                    pl.requirements.join("; ")
                ));
                s.waiting = Some((
                    pl.task_id.clone(),
                    Waiting::Requirements(pl.requirements.clone()),
                ));
            }
            PlanningFact::Proposed(pl) => {
                s.log.push(format!(
                    "You proposed: {} ({} task(s): {})",
                    pl.proposal.summary.trim(),
                    pl.tasks.len(),
                    pl.tasks.join(", ")
                ));
                s.waiting = Some((
                    pl.task_id.clone(),
                    Waiting::Proposal(Box::new(pl.proposal.clone())),
                ));
            }
            PlanningFact::Answered(pl) => {
                let Some((_, waiting)) = s.waiting.take_if(|(t, _)| *t == pl.task_id) else {
                    return;
                };
                match &waiting {
                    Waiting::Questions(qs) => {
                        for q in qs {
                            let answer = pl
                                .answers
                                .get(&q.id)
                                .map(|a| a.trim())
                                .filter(|a| !a.is_empty())
                                .unwrap_or("(not answered)");
                            s.log
                                .push(format!("[{}] {} The user answered: {answer}", q.id, q.text));
                        }
                    }
                    Waiting::Requirements(r) if pl.go_ahead => {
                        s.agreed.clone_from(r);
                        s.log
                            .push("The user agreed to the requirements you stated.".into());
                    }
                    _ => {}
                }
                if let Some(note) = pl.note.as_deref().filter(|n| !n.trim().is_empty()) {
                    s.log.push(format!("The user said: {}", note.trim()));
                }
                if matches!(waiting, Waiting::Proposal(_)) {
                    s.phase = PlanningPhase::Discussing;
                } else if pl.go_ahead {
                    if !matches!(waiting, Waiting::Requirements(_)) {
                        s.log.push("The user said to go ahead: propose the plan now, choosing sensibly where something is still open, and say what you chose.".into());
                    }
                    s.phase = s.phase.after(PlanningMove::Settled).unwrap_or(s.phase);
                }
                next_turn = true;
            }
            PlanningFact::Decided(pl) => {
                let proposal = match &s.waiting {
                    Some((t, Waiting::Proposal(p))) if *t == pl.task_id => p.clone(),
                    _ => return,
                };
                let Ok(next) = s.phase.after(pl.decision.planning_move()) else {
                    return;
                };
                s.waiting = None;
                s.phase = next;
                let note = pl.note.as_deref().map(str::trim).filter(|n| !n.is_empty());
                match pl.decision {
                    PlanDecision::Confirm => {
                        s.confirmed = Some((pl.task_id.clone(), proposal, pl.run));
                    }
                    PlanDecision::Change => {
                        s.log.push(format!(
                            "The user asked for changes to your proposal: {}",
                            note.unwrap_or("(no details: ask what to change)")
                        ));
                        next_turn = true;
                    }
                    PlanDecision::Reject if s.replan => {
                        // The graph stays as it was, and goes on.
                        s.done = true;
                        self.frozen = false;
                        self.replan_rejected();
                    }
                    PlanDecision::Reject => {
                        s.log.push(format!(
                            "The user rejected your proposal{}. Discuss again what is wanted.",
                            note.map(|n| format!(": {n}")).unwrap_or_default()
                        ));
                        next_turn = true;
                    }
                }
            }
            PlanningFact::Written(_)
            | PlanningFact::Updated(_)
            | PlanningFact::Classified(_)
            | PlanningFact::Impact(_) => {}
        }
        if next_turn {
            self.ask_planning();
        }
    }

    /// airsd wrote the confirmed plan (its tasks are created, held for the user's
    /// word to start in `default` mode), or could not (the designer proposes again).
    fn plan_written(&mut self, pl: &p::PlanConfirmed) {
        let Some(s) = self.planning.as_mut().filter(|s| s.open()) else {
            return;
        };
        s.writing = false;
        let Some((_, proposal, run)) = s.confirmed.take() else {
            return;
        };
        if let Some(e) = &pl.error {
            // Nothing reached the disk: the designer proposes again.
            s.phase = PlanningPhase::Proposing;
            s.log.push(format!(
                "The user confirmed your proposal, but airsd could not write it: {e}. Propose it again with that fixed."
            ));
            return self.ask_planning();
        }
        let replan = s.replan;
        if !replan {
            s.done = true;
        }
        let Ok(compiled) = check_proposal(&proposal) else {
            return;
        };
        if replan {
            let summary = proposal
                .change
                .as_ref()
                .map_or_else(|| proposal.summary.clone(), |c| c.summary.clone());
            let update = self.replan_diff(&pl.task_id, summary, compiled.graph.tasks);
            self.planning_out
                .push(PlanningFact::Updated(Box::new(update)));
            return;
        }
        if !(run && pl.run) {
            return;
        }
        let gate = pl.task_id.clone();
        for spec in compiled.graph.tasks {
            if self.index.contains_key(&spec.id) {
                continue;
            }
            let mut spec = spec;
            spec.context_refs.plan_ref = Some(format!("{PLAN_FILE}#{}", spec.id));
            self.planned.insert(spec.id.clone());
            if self.confirm {
                self.held.insert(spec.id.clone(), gate.clone());
            }
            self.to_create.push(spec);
        }
        if self.confirm && !self.planned.is_empty() {
            self.awaiting.insert(gate, false);
        }
    }

    /// The planning decisions due: the accepted answers of turns to record, and the
    /// confirmed plan to write.
    pub(super) fn planning_decisions(&mut self, out: &mut Vec<Decision>) {
        for f in &self.planning_out {
            out.push(Decision::Planning(Box::new(f.clone())));
        }
        // A re-plan is applied once the impacted work has stopped and its reverts are
        // done (SAFE work goes on).
        let busy = self.replan_busy();
        if let Some(s) = self.planning.as_mut().filter(|s| !(s.replan && busy)) {
            if let (Some((task_id, proposal, run)), false) = (&s.confirmed, s.writing) {
                s.writing = true;
                out.push(Decision::WritePlan {
                    task_id: task_id.clone(),
                    requirement: s.requirement.clone(),
                    proposal: proposal.clone(),
                    requirements: s.agreed.clone(),
                    run: *run,
                });
            }
        }
    }

    /// The plan's tasks all ended: the Main Agent tells the user how it went.
    pub(super) fn plan_ended(&mut self, task_id: &str) {
        if !self.planned.contains(task_id) {
            return;
        }
        let all_ended = self
            .planned
            .iter()
            .all(|id| self.status(id).is_some_and(is_terminal));
        if !all_ended {
            return;
        }
        let about: Vec<String> = std::mem::take(&mut self.planned).into_iter().collect();
        let title = format!("{SUMMARY_TITLE}the plan");
        let what = format!("the plan's {} task(s) ended", about.len());
        self.ask_turn(&title, &what, None, &about);
    }
}

/// Where airsd writes a confirmed plan, relative to the project.
const PLAN_FILE: &str = ".air/shared/plan/plan.md";

/// What differs between two specs of a task, for a refusal.
fn differs(a: &TaskSpec, b: &TaskSpec) -> &'static str {
    if a.title != b.title {
        "title"
    } else if a.description != b.description {
        "description"
    } else if a.acceptance_criteria != b.acceptance_criteria {
        "acceptance criteria"
    } else if a.scope != b.scope {
        "scope"
    } else if a.dependencies != b.dependencies {
        "dependencies"
    } else if a.verification != b.verification {
        "verification"
    } else {
        "contracts"
    }
}

/// Whether two specs ask for the same work (what a re-plan may leave alone).
pub(super) fn same_work(a: &TaskSpec, b: &TaskSpec) -> bool {
    a.title == b.title
        && a.description == b.description
        && a.acceptance_criteria == b.acceptance_criteria
        && a.scope == b.scope
        && a.dependencies == b.dependencies
        && a.verification == b.verification
        && a.contracts == b.contracts
}

/// The `architecture.plan.proposed` of a proposal that compiles and names no task the
/// session already has; otherwise every problem.
pub fn proposed(
    turn_id: &str,
    requirement: &str,
    proposal: Proposal,
    taken: &[String],
    frozen: Option<&[TaskSpec]>,
) -> Result<p::PlanProposed, Vec<String>> {
    let compiled = check_proposal(&proposal)?;
    // What the plan says of a task's evidence is the designer's to settle before the
    // user sees it (seed 001 §8.2: the designer gives each task its category).
    let unsettled: Vec<String> = compiled
        .warnings
        .iter()
        .filter(|d| matches!(d.field.as_deref(), Some("category" | "evidence")))
        .map(|d| d.display(air_proto::planning::PROPOSED_PLAN).to_string())
        .collect();
    if !unsettled.is_empty() {
        return Err(unsettled);
    }
    // The user's `[no-…]` markers are kept.
    let dropped = air_proto::planning::markers_dropped(requirement, &compiled);
    if !dropped.is_empty() {
        return Err(dropped);
    }
    match frozen {
        // A re-plan: the whole graph again, every completed task kept as it is.
        Some(done) => {
            let mut problems = Vec::new();
            if proposal.change.is_none() {
                problems.push(
                    "change: say what the requirement change is (scope, affected_modules, summary)"
                        .to_string(),
                );
            }
            // What the change does not touch stays as it is: a task left out, or
            // rewritten under the same id, is refused (never dropped silently).
            for keep in done {
                let id = &keep.id;
                match compiled.graph.tasks.iter().find(|t| t.id == *id) {
                    None => problems.push(format!(
                        "plan: {id} ({}) is outside what the change impacts: keep it in the plan as it is",
                        keep.title
                    )),
                    Some(t) if !same_work(t, keep) => problems.push(format!(
                        "plan: {id} is outside what the change impacts: keep it exactly as it is (its {} changed); to change it, say so in `change` (its `tasks`) and re-classify",
                        differs(t, keep)
                    )),
                    Some(_) => {}
                }
            }
            if !problems.is_empty() {
                return Err(problems);
            }
        }
        None => {
            let clash: Vec<&str> = compiled
                .graph
                .tasks
                .iter()
                .map(|t| t.id.as_str())
                .filter(|id| taken.iter().any(|t| t == id))
                .collect();
            if !clash.is_empty() {
                return Err(vec![format!(
                    "plan: the session already has task(s) {}: number the plan's tasks after them",
                    clash.join(", ")
                )]);
            }
        }
    }
    Ok(p::PlanProposed {
        task_id: turn_id.to_string(),
        tasks: compiled.graph.tasks.iter().map(|t| t.id.clone()).collect(),
        waves: compiled.graph.waves,
        proposal,
    })
}

fn worker_status(s: WorkerStatus) -> &'static str {
    match s {
        WorkerStatus::Completed => "completed",
        WorkerStatus::Failed => "failed",
        WorkerStatus::Blocked => "blocked",
        WorkerStatus::Cancelled => "cancelled",
    }
}
