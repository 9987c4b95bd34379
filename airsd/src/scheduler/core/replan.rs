//! A change of plan mid-run, as seed 001 §14 designs it, on top of the per-task
//! worktrees. Phase 1: dispatch freezes and the Architecture Designer says what the
//! change is (`classify_change`: its scope, the modules and the tasks it touches),
//! recorded as `architecture.change.classified`. Phase 2: from that, the contracts
//! tasks provide and require, and the files each task works on or changed, every
//! task is SAFE, BOUNDARY or IMPACTED (`air_proto::impact`), recorded as
//! `architecture.impact.completed`. Phase 3, as that event is folded: IMPACTED
//! running agents are stopped at once, IMPACTED and BOUNDARY tasks not started are
//! held, SAFE work goes on (dispatch unfreezes for it); IMPACTED completed tasks
//! have their merged change taken back out (their branch kept) once the person
//! confirms the re-plan, and BOUNDARY tasks are verified once the change is in. Phase 4: the designer re-plans only the impacted
//! part (every other task must stay as it is, or the proposal is refused with why),
//! and the confirmed re-plan is applied once the stopped agents are gone and the
//! reverts done: the re-planned tasks start over, new ones are created, and each
//! BOUNDARY task gets a task that verifies it after the change.

use air_proto::impact::{Action, Node, Stage, TaskImpact, Zone};
use air_proto::payload as p;

use super::planning::{same_work, Impact};
use super::*;

/// The id of the task that verifies BOUNDARY task `id` after a change (plan ids hold
/// no `:`, so it never collides with one).
pub fn verify_id(id: &str) -> String {
    format!("{id}:verify")
}

impl Core {
    /// The tasks of the graph a change may touch: a plan's, not the conversation's,
    /// reviews or milestone reviews.
    fn graph_tasks(&self) -> impl Iterator<Item = &TaskState> {
        self.tasks.iter().filter(|t| {
            !in_conversation(&t.spec.id) && !is_review(&t.spec.id) && t.milestone_of.is_none()
        })
    }

    /// The tasks a re-plan must leave as they are: every task of the graph outside
    /// what the change's impact opened (before an impact is known: the completed
    /// ones).
    pub fn replan_fixed(&self) -> Vec<TaskSpec> {
        let impact = self.planning.as_ref().and_then(|s| s.impact.as_ref());
        // airsd's own tasks (`X:verify`, a milestone's `phase:fix-…`: ids a plan cannot
        // write) are carried over by airsd, never asked of the designer.
        self.graph_tasks()
            .filter(|t| !airsd_made(&t.spec.id))
            .filter(|t| match impact {
                Some(i) => !i.open.contains(&t.spec.id) && !is_terminal_unfinished(t.status),
                None => t.status == TaskStatus::Completed,
            })
            .map(|t| t.spec.clone())
            .collect()
    }

    /// Phase 2: the designer said what the change is; what it impacts is worked out
    /// and recorded.
    pub(super) fn change_classified(&mut self, pl: &p::ChangeClassified) {
        let Some(s) = self.planning.as_mut().filter(|s| s.open() && s.replan) else {
            return;
        };
        s.log.push(format!(
            "You classified the change: {} ({}; modules {}; tasks {}).",
            pl.change.summary.trim(),
            pl.change.scope.as_str(),
            list(&pl.change.affected_modules),
            list(&pl.change.tasks)
        ));
        let changed: Vec<Vec<String>> = self
            .graph_tasks()
            .map(|t| {
                t.under_review
                    .as_ref()
                    .map(|r| r.changed_files.clone())
                    .unwrap_or_default()
            })
            .collect();
        let nodes: Vec<Node<'_>> = self
            .graph_tasks()
            .zip(&changed)
            .map(|(t, changed)| Node {
                spec: &t.spec,
                // A task with an agent on it is under way, whatever its last status.
                stage: match t.status {
                    TaskStatus::Completed => Stage::Completed,
                    s if is_terminal(s) => Stage::Ended,
                    _ if t.agent.is_some() => Stage::Started,
                    TaskStatus::Running | TaskStatus::Reviewing | TaskStatus::Debugging => {
                        Stage::Started
                    }
                    _ => Stage::Waiting,
                },
                changed,
            })
            .collect();
        let tasks = air_proto::impact::assess(&nodes, &pl.change);
        self.planning_out
            .push(PlanningFact::Impact(Box::new(p::ImpactCompleted {
                task_id: pl.task_id.clone(),
                change: pl.change.clone(),
                tasks,
            })));
    }

    /// Phase 3: what the impact means for each task, done; then the designer is asked
    /// to re-plan the impacted part.
    pub(super) fn impact_completed(&mut self, pl: &p::ImpactCompleted) {
        let isolated = self.isolated;
        let Some(s) = self.planning.as_mut().filter(|s| s.open() && s.replan) else {
            return;
        };
        let mut impact = Impact::default();
        for t in &pl.tasks {
            let id = t.task_id.clone();
            match t.action {
                Action::Cancel => {
                    impact.open.insert(id.clone());
                    impact.stop.insert(id);
                }
                Action::Revert => {
                    impact.open.insert(id.clone());
                    let done = (!isolated).then(|| {
                        Err("the run shares the checkout, so its change stays there; the re-planned task is redone on top of it".to_string())
                    });
                    impact.revert.insert(id, done);
                }
                Action::Freeze => {
                    impact.open.insert(id);
                }
                Action::Verify | Action::WaitAndAssess => {
                    impact.verify.push((id, t.why.clone()));
                }
                Action::Keep | Action::Nothing => {}
            }
        }
        s.log.push(impact_text(pl));
        // A task stopped with no agent on it waits for its merge: one not merging yet
        // merges no more; one merging is taken back out with the reverts.
        for id in impact.stop.clone() {
            let Some(&k) = self.index.get(&id) else {
                continue;
            };
            let t = &mut self.tasks[k];
            if t.agent.is_some() {
                continue;
            }
            if t.merging && isolated {
                impact.revert.insert(id, None);
            } else if matches!(t.next, Next::Finish(..)) {
                t.next = Next::Nothing;
            }
        }
        let Some(s) = self.planning.as_mut() else {
            return;
        };
        s.impact = Some(impact);
        s.phase = air_proto::planning::PlanningPhase::Proposing;
        // SAFE work goes on; what the change touches is held by the impact.
        self.frozen = false;
        self.ask_planning();
    }

    /// A revert asked for ended (`workspace.undone`, or `workspace.revert_failed`).
    pub(super) fn reverted(&mut self, task_id: &str, error: Option<&str>) {
        let Some(i) = self
            .planning
            .as_mut()
            .and_then(|s| s.impact.as_mut())
            .filter(|i| i.revert.contains_key(task_id))
        else {
            return;
        };
        i.reverting.remove(task_id);
        i.revert.insert(
            task_id.to_string(),
            Some(error.map_or(Ok(()), |e| Err(e.to_string()))),
        );
    }

    /// Whether the impact under re-plan holds task `id` (it is not dispatched).
    pub(super) fn held_for_replan(&self, id: &str) -> bool {
        self.planning
            .as_ref()
            .filter(|s| s.open())
            .and_then(|s| s.impact.as_ref())
            .is_some_and(|i| i.open.contains(id))
    }

    /// The user rejected the re-plan: the graph goes on as it was, and what the
    /// impact set aside starts over as it was planned (a completed task whose change
    /// was taken back out is done again).
    pub(super) fn replan_rejected(&mut self) {
        let Some(impact) = self.planning.as_mut().and_then(|s| s.impact.take()) else {
            return;
        };
        for id in &impact.open {
            let reverted = impact
                .revert
                .get(id)
                .is_some_and(|r| matches!(r, Some(Ok(()))));
            if let Some(t) = self.task_mut(id) {
                if (t.status == TaskStatus::Completed && reverted) || !is_terminal(t.status) {
                    t.status = TaskStatus::Pending;
                    t.next = Next::Nothing;
                    t.in_flight = false;
                    t.under_review = None;
                }
            }
        }
    }

    /// Whether the impact set task `i` aside: what its agent ended with waits for the
    /// re-plan, which starts it over (or removes it).
    pub(super) fn set_aside(&mut self, i: usize) -> bool {
        if !self.held_for_replan(&self.tasks[i].spec.id) {
            return false;
        }
        let t = &mut self.tasks[i];
        t.next = Next::Nothing;
        t.under_review = None;
        true
    }

    /// The stops and reverts phase 3 asks for, each once.
    pub(super) fn impact_decisions(&mut self, out: &mut Vec<Decision>) {
        let Some(i) = self.planning.as_mut().and_then(|s| s.impact.as_mut()) else {
            return;
        };
        for id in &i.stop {
            let Some(agent_id) = self
                .index
                .get(id)
                .and_then(|&k| self.tasks[k].agent.clone())
            else {
                continue;
            };
            if let Some(a) = self.agents.get_mut(&agent_id).filter(|a| !a.stopping) {
                a.stopping = true;
                out.push(Decision::Cancel {
                    agent_id,
                    reason:
                        "the requirement changed and this task is impacted: stopped for the re-plan"
                            .into(),
                });
            }
        }
        // Merged work is taken back out only once the person confirmed the re-plan.
        let confirmed = self.planning.as_ref().is_some_and(|s| s.is_confirmed());
        let Some(i) = self.planning.as_mut().and_then(|s| s.impact.as_mut()) else {
            return;
        };
        for (id, done) in &i.revert {
            if confirmed && done.is_none() && i.reverting.insert(id.clone()) {
                out.push(Decision::Revert {
                    task_id: id.clone(),
                });
            }
        }
    }

    /// Whether a confirmed re-plan must wait: agents of the impacted part still run,
    /// or its reverts are not done (before an impact is known: any agent of the
    /// graph).
    pub(super) fn replan_busy(&self) -> bool {
        let impact = self.planning.as_ref().and_then(|s| s.impact.as_ref());
        self.agents.values().any(|a| {
            let id = &self.tasks[a.task].spec.id;
            match impact {
                Some(i) => i.open.contains(id),
                None => !in_conversation(id),
            }
        }) || impact.is_some_and(|i| i.revert.values().any(Option::is_none))
    }

    /// What a confirmed re-plan changes in the graph: tasks added; the re-planned
    /// part (and unfinished tasks whose work changed) started over; tasks no longer
    /// in the plan removed; a verify task for each BOUNDARY task. Fixed tasks were
    /// checked unchanged when the plan was proposed.
    pub(super) fn replan_diff(
        &self,
        turn: &str,
        summary: String,
        new: Vec<TaskSpec>,
    ) -> p::PlanUpdated {
        let impact = self.planning.as_ref().and_then(|s| s.impact.as_ref());
        let open = |id: &str| impact.is_some_and(|i| i.open.contains(id));
        let ids: BTreeSet<String> = new.iter().map(|t| t.id.clone()).collect();
        let mut update = p::PlanUpdated {
            task_id: turn.to_string(),
            summary,
            added: Vec::new(),
            changed: Vec::new(),
            removed: Vec::new(),
        };
        let file = self.plan_file();
        for mut spec in new {
            spec.context_refs.plan_ref = Some(format!("{file}#{}", spec.id));
            match self.index.get(&spec.id).map(|&i| &self.tasks[i]) {
                None => update.added.push(spec),
                Some(t) if open(&t.spec.id) => update.changed.push(spec),
                Some(t) if t.status == TaskStatus::Completed => {}
                Some(t) if same_work(&t.spec, &spec) && !is_terminal(t.status) => {}
                Some(_) => update.changed.push(spec),
            }
        }
        update.removed = self
            .graph_tasks()
            .filter(|t| t.status != TaskStatus::Completed || open(&t.spec.id))
            // airsd's own tasks stay unless the change impacted them.
            .filter(|t| !airsd_made(&t.spec.id) || open(&t.spec.id))
            .filter(|t| !ids.contains(&t.spec.id))
            .map(|t| t.spec.id.clone())
            .collect();
        // Each BOUNDARY task is verified once the re-planned work is in.
        let redone: Vec<String> = update
            .changed
            .iter()
            .chain(&update.added)
            .map(|t| t.id.clone())
            .collect();
        for (id, why) in impact.map(|i| i.verify.as_slice()).unwrap_or_default() {
            let Some(t) = self.index.get(id).map(|&i| &self.tasks[i]) else {
                continue;
            };
            if update.removed.contains(id) || self.index.contains_key(&verify_id(id)) {
                continue;
            }
            update
                .added
                .push(verify_spec(&t.spec, why, &update.summary, &redone));
        }
        update
    }

    /// A confirmed re-plan, applied: the changed tasks start over with their new
    /// spec, the removed ones end as replaced, the added ones are created; dispatch
    /// goes on.
    pub(super) fn plan_updated(&mut self, pl: &p::PlanUpdated) {
        let Some(s) = self.planning.as_mut().filter(|s| s.open() && s.replan) else {
            return;
        };
        s.done = true;
        s.impact = None;
        self.frozen = false;
        let why = format!("replaced by the updated plan ({})", pl.task_id);
        for id in &pl.removed {
            self.declined.insert(id.clone());
            if let Some(t) = self.task_mut(id) {
                // A completed task taken back out ends as replaced too.
                if t.status == TaskStatus::Completed {
                    t.status = TaskStatus::Pending;
                    t.next = Next::Nothing;
                }
                if !is_terminal(t.status) {
                    t.cancel
                        .get_or_insert_with(|| (why.clone(), TaskStatus::Cancelled));
                }
            }
        }
        for spec in &pl.changed {
            if let Some(t) = self.task_mut(&spec.id) {
                t.spec = spec.clone();
                t.status = TaskStatus::Pending;
                t.next = Next::Nothing;
                t.retries_used = 0;
                t.rejections = 0;
                t.failures.clear();
                t.escalated = false;
                t.cancel = None;
                t.in_flight = false;
                t.under_review = None;
                t.notes.push(format!(
                    "The requirement changed and this task was re-planned: {}. Check what is already in place before you change anything.",
                    pl.summary
                ));
            }
            self.declined.remove(&spec.id);
        }
        for spec in &pl.added {
            if !self.index.contains_key(&spec.id) {
                self.planned.insert(spec.id.clone());
                self.to_create.push(spec.clone());
            }
        }
    }
}

/// The verify task of BOUNDARY task `t`: its acceptance and checks again, after the
/// re-planned work (`after`).
fn verify_spec(t: &TaskSpec, why: &str, summary: &str, after: &[String]) -> TaskSpec {
    let mut spec = t.clone();
    spec.id = verify_id(&t.id);
    spec.title = format!("Verify {} after the change: {}", t.id, t.title);
    spec.description = format!(
        "The requirement changed ({}) and {}'s work was kept, but it is on the boundary of the change ({why}). Check that it still does what its acceptance criteria say, by running its checks, now that the re-planned work is in. Change only what the change broke, and say what you found; if nothing broke, say so with the evidence.\n\nWhat {} was for:\n\n{}",
        summary.trim(),
        t.id,
        t.id,
        t.description
    );
    spec.contracts = Contracts::default();
    spec.dependencies = std::iter::once(t.id.as_str())
        .chain(after.iter().map(String::as_str))
        .map(|on| air_proto::task::TaskDependency {
            depends_on_task_id: on.to_string(),
            dependency_type: DependencyType::Hard,
            reason: Some("verified once the change is in".into()),
            source: None,
        })
        .collect();
    spec
}

/// A task airsd made (its id holds a `:`, which a plan's cannot).
fn airsd_made(id: &str) -> bool {
    id.contains(':')
}

/// Unfinished and ended: what a re-plan neither keeps nor redoes by itself.
fn is_terminal_unfinished(status: TaskStatus) -> bool {
    matches!(
        status,
        TaskStatus::Failed | TaskStatus::Blocked | TaskStatus::Cancelled
    )
}

fn list(items: &[String]) -> String {
    if items.is_empty() {
        "none named".into()
    } else {
        items.join(", ")
    }
}

/// What the designer is told of the impact, for its re-plan.
fn impact_text(pl: &p::ImpactCompleted) -> String {
    let of = |z: Zone| -> Vec<&TaskImpact> { pl.tasks.iter().filter(|t| t.zone == z).collect() };
    let line = |t: &&TaskImpact| format!("{} ({}: {})", t.task_id, t.action.as_str(), t.why);
    let impacted: Vec<String> = of(Zone::Impacted).iter().map(line).collect();
    let boundary: Vec<String> = of(Zone::Boundary).iter().map(line).collect();
    let safe: Vec<&str> = of(Zone::Safe).iter().map(|t| t.task_id.as_str()).collect();
    let reopened: Vec<&str> = pl
        .tasks
        .iter()
        .filter(|t| matches!(t.action, Action::Cancel | Action::Revert | Action::Freeze))
        .map(|t| t.task_id.as_str())
        .collect();
    format!(
        "airsd worked out what the change impacts. IMPACTED: {}. BOUNDARY: {}. SAFE: {}. Re-plan only these tasks: {} (change, remove or replace them, add what the change needs). Every other task stays exactly as it is in the plan you propose; the BOUNDARY ones that are done or running are kept and verified by airsd after your re-planned work.",
        if impacted.is_empty() { "none".into() } else { impacted.join("; ") },
        if boundary.is_empty() { "none".into() } else { boundary.join("; ") },
        if safe.is_empty() { "none".into() } else { safe.join(", ") },
        if reopened.is_empty() { "none".into() } else { reopened.join(", ") },
    )
}
