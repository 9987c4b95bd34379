//! What should happen next: timers, cancellations, readiness, milestones, dispatches,
//! the patrol and the end of the run.

use super::*;

impl Core {
    /// Says what should happen now. Call after applying facts and on a timer; apply the
    /// facts of the returned decisions before calling again.
    pub fn decide(&mut self, now_ms: u64) -> Vec<Decision> {
        let mut out = Vec::new();
        // The ends of exited workers are decided whatever the run's state.
        self.exits(&mut out);
        for (agent_id, text) in std::mem::take(&mut self.to_deliver) {
            out.push(Decision::Deliver { agent_id, text });
        }
        for task_id in std::mem::take(&mut self.to_close) {
            out.push(Decision::Refuse(Box::new(Refusal {
                request_id: confirmation_id(&task_id),
                reason: format!("{task_id} ended before it was confirmed"),
                block: None,
            })));
        }
        if !(self.finished || self.completing || !self.started) {
            self.rules(now_ms, &mut out);
        }
        // A stop decided here is what the worker's end is judged by.
        for d in &out {
            match d {
                Decision::Cancel { agent_id, reason } => {
                    self.stops
                        .insert(agent_id.clone(), (AgentFailure::Cancelled, reason.clone()));
                }
                Decision::Kill {
                    agent_id,
                    failure,
                    reason,
                } => {
                    self.stops
                        .insert(agent_id.clone(), (*failure, reason.clone()));
                }
                _ => {}
            }
        }
        out
    }

    fn rules(&mut self, now_ms: u64, out: &mut Vec<Decision>) {
        // A spent budget stops dispatching before anything else is decided.
        if self.budget_spent(now_ms, out) {
            return;
        }
        self.asks(now_ms, out);
        self.timers(now_ms, out);
        self.cancellations(out);
        self.unreachable(out);
        self.confirmations(out);
        self.planning_decisions(out);
        self.impact_decisions(out);
        self.throttle_decisions(now_ms, out);
        self.readiness(out);
        self.finishes(out);
        self.milestones(out);
        self.dispatches(out);
        self.patrol(now_ms, out);
        if out.is_empty() && self.agents.is_empty() {
            self.completion(out);
        }
    }

    fn timers(&mut self, now: u64, out: &mut Vec<Decision>) {
        for (id, a) in self.agents.iter_mut() {
            if a.stopping {
                continue;
            }
            let task_id = self.tasks[a.task].spec.id.clone();
            // While held, its limits do not count (its heartbeats still do).
            let held = a.held_since.is_some();
            if !held && now >= a.hard_deadline_ms {
                a.stopping = true;
                // Out of time while its model's provider kept silent: the provider's
                // fault, not the task's.
                let ran = now.saturating_sub(a.started_ms + a.held_ms);
                let long = super::PROVIDER_SILENCE_MS.min(ran / 2);
                if let Some(since) = a
                    .model_silent_since
                    .filter(|s| now.saturating_sub(*s) >= long)
                {
                    out.push(Decision::Kill {
                        agent_id: id.clone(),
                        failure: AgentFailure::Provider,
                        reason: format!(
                            "hard timeout ({} s) while its model's provider had said nothing of the answer for {} s",
                            a.hard_deadline_ms.saturating_sub(a.started_ms + a.held_ms) / 1000,
                            now.saturating_sub(since) / 1000
                        ),
                    });
                    continue;
                }
                out.push(Decision::Kill {
                    agent_id: id.clone(),
                    failure: AgentFailure::Timeout,
                    reason: format!(
                        "hard timeout: ran {} s (limit {} s)",
                        now.saturating_sub(a.started_ms + a.held_ms) / 1000,
                        a.hard_deadline_ms.saturating_sub(a.started_ms + a.held_ms) / 1000
                    ),
                });
            } else if now.saturating_sub(a.last_seen_ms) >= self.config.stall_ms {
                a.stopping = true;
                out.push(Decision::Kill {
                    agent_id: id.clone(),
                    failure: AgentFailure::Stalled,
                    reason: format!(
                        "no heartbeat for {} s",
                        now.saturating_sub(a.last_seen_ms) / 1000
                    ),
                });
            } else if !held
                && a.model_silent_since.is_none()
                && !a.tools_waiting
                && now.saturating_sub(a.moved_ms) >= self.config.stuck_ms
            {
                // Alive but going nowhere: its heartbeats came, its turn and output
                // stood still, and it waited on no tool and no model answer.
                a.stopping = true;
                out.push(Decision::Kill {
                    agent_id: id.clone(),
                    failure: AgentFailure::Stuck,
                    reason: format!(
                        "stuck: its heartbeats came, but for {} s it moved no further (turn {}, waiting on no tool and no model answer)",
                        now.saturating_sub(a.moved_ms) / 1000,
                        a.progress.map_or(0, |p| p.0)
                    ),
                });
            } else if !held && !a.warned && now >= a.soft_deadline_ms {
                // Marked here so it is asked once; the recorded fact marks it for good.
                a.warned = true;
                out.push(Decision::WarnSoftTimeout {
                    agent_id: id.clone(),
                    task_id,
                    elapsed_ms: now.saturating_sub(a.started_ms + a.held_ms),
                    hard_timeout_ms: a.hard_deadline_ms.saturating_sub(a.started_ms + a.held_ms),
                });
            }
        }
    }

    fn cancellations(&mut self, out: &mut Vec<Decision>) {
        for t in &mut self.tasks {
            let Some((reason, end)) = t.cancel.clone() else {
                continue;
            };
            if is_terminal(t.status) {
                continue;
            }
            if let Some(agent_id) = &t.agent {
                if let Some(a) = self.agents.get_mut(agent_id) {
                    if !a.stopping {
                        a.stopping = true;
                        out.push(Decision::Cancel {
                            agent_id: agent_id.clone(),
                            reason: reason.clone(),
                        });
                    }
                }
                continue;
            }
            if !t.in_flight {
                t.in_flight = true;
                out.push(Decision::Finish {
                    task_id: t.spec.id.clone(),
                    status: end,
                    reason: Some(reason),
                });
            }
        }
    }

    /// Tasks that can never run (a hard dependency or an earlier phase ended without
    /// completing) are blocked with the reason, so nothing waits forever.
    fn unreachable(&mut self, out: &mut Vec<Decision>) {
        let phase_order = self.phase_order();
        let mut blocked = Vec::new();
        for (i, t) in self.tasks.iter().enumerate() {
            if is_terminal(t.status) || t.in_flight || in_progress(t.status) || t.agent.is_some() {
                continue;
            }
            let mut reason = None;
            for dep in &t.spec.dependencies {
                if dep.dependency_type != DependencyType::Hard {
                    continue;
                }
                if let Some(&j) = self.index.get(&dep.depends_on_task_id) {
                    let s = self.tasks[j].status;
                    if is_terminal(s) && s != TaskStatus::Completed {
                        reason = Some(format!(
                            "waits for {}, which is {}",
                            dep.depends_on_task_id,
                            s.as_str()
                        ));
                        break;
                    }
                }
            }
            if reason.is_none() {
                if let Some(p) = self.failed_earlier_phase(t, &phase_order) {
                    reason = Some(format!("phase {p} did not complete"));
                }
            }
            if let Some(reason) = reason {
                blocked.push((i, reason));
            }
        }
        for (i, reason) in blocked {
            let t = &mut self.tasks[i];
            t.in_flight = true;
            out.push(Decision::Finish {
                task_id: t.spec.id.clone(),
                status: TaskStatus::Blocked,
                reason: Some(reason),
            });
        }
    }

    /// Asks the user to confirm each task handed on that waits for it, once.
    fn confirmations(&mut self, out: &mut Vec<Decision>) {
        for (task_id, asked) in &self.awaiting {
            if *asked || self.asking.contains(task_id) {
                continue;
            }
            let Some(&i) = self.index.get(task_id) else {
                continue;
            };
            let held = self.held.values().filter(|g| *g == task_id).count();
            let title = if held > 0 {
                format!("run the confirmed plan ({held} task(s))")
            } else {
                self.tasks[i].spec.title.clone()
            };
            self.asking.insert(task_id.clone());
            out.push(Decision::AskConfirmation {
                task_id: task_id.clone(),
                title,
            });
        }
    }

    fn readiness(&mut self, out: &mut Vec<Decision>) {
        let mut ready = Vec::new();
        for (i, t) in self.tasks.iter().enumerate() {
            if t.status != TaskStatus::Pending || t.in_flight || t.cancel.is_some() {
                continue;
            }
            // Work handed on in `default` mode starts once the user confirms it.
            if self.awaiting.contains_key(&t.spec.id) || self.held.contains_key(&t.spec.id) {
                continue;
            }
            let deps_done = t.spec.dependencies.iter().all(|d| {
                d.dependency_type != DependencyType::Hard
                    || self
                        .index
                        .get(&d.depends_on_task_id)
                        .is_some_and(|&j| self.tasks[j].status == TaskStatus::Completed)
            });
            if deps_done {
                ready.push(i);
            }
        }
        for i in ready {
            let t = &mut self.tasks[i];
            t.in_flight = true;
            out.push(Decision::Ready {
                task_id: t.spec.id.clone(),
            });
        }
    }

    fn finishes(&mut self, out: &mut Vec<Decision>) {
        // In its own worktree a reviewed task completes through the merge queue: one
        // merge at a time, the first in plan order (its dependencies merged before it
        // began).
        let isolated = self.isolated;
        let mut merging = self.tasks.iter().any(|t| t.merging);
        for t in &mut self.tasks {
            if t.in_flight || is_terminal(t.status) {
                continue;
            }
            if let Next::Finish(TaskStatus::Completed, reason) = &t.next {
                if isolated && merges(t) {
                    if merging {
                        continue;
                    }
                    merging = true;
                    t.merging = true;
                    t.in_flight = true;
                    out.push(Decision::Merge {
                        task_id: t.spec.id.clone(),
                        reason: reason.clone(),
                    });
                    continue;
                }
            }
            if let Next::Finish(status, reason) = &t.next {
                t.in_flight = true;
                out.push(Decision::Finish {
                    task_id: t.spec.id.clone(),
                    status: *status,
                    reason: reason.clone(),
                });
            }
        }
    }

    /// Phases in the order their first task appears.
    fn phase_order(&self) -> Vec<String> {
        let mut order: Vec<String> = Vec::new();
        for t in &self.tasks {
            if let Some(p) = &t.spec.phase {
                if !order.contains(p) {
                    order.push(p.clone());
                }
            }
        }
        order
    }

    fn phase_tasks<'a>(&'a self, phase: &'a str) -> impl Iterator<Item = &'a TaskState> + 'a {
        self.tasks
            .iter()
            .filter(move |t| t.spec.phase.as_deref() == Some(phase))
    }

    /// Whether a phase passed its milestone review.
    fn phase_done(&self, phase: &str) -> bool {
        self.phase_tasks(phase).any(|t| {
            t.milestone_of.is_some() && t.milestone_approved && t.status == TaskStatus::Completed
        })
    }

    /// The first earlier phase that ended without completing, if any.
    fn failed_earlier_phase(&self, t: &TaskState, order: &[String]) -> Option<String> {
        let phase = t.spec.phase.as_deref()?;
        for p in order.iter().take_while(|p| p.as_str() != phase) {
            let failed = self
                .phase_tasks(p)
                .any(|u| is_terminal(u.status) && u.status != TaskStatus::Completed);
            if failed {
                return Some(p.clone());
            }
        }
        None
    }

    /// Whether every earlier phase passed its milestone review.
    fn phase_gate_open(&self, t: &TaskState, order: &[String]) -> bool {
        let Some(phase) = t.spec.phase.as_deref() else {
            return true;
        };
        order
            .iter()
            .take_while(|p| p.as_str() != phase)
            .all(|p| self.phase_done(p))
    }

    fn milestones(&mut self, out: &mut Vec<Decision>) {
        for spec in &self.to_create {
            if !self.index.contains_key(&spec.id)
                && !out
                    .iter()
                    .any(|d| matches!(d, Decision::CreateTask(s) if s.id == spec.id))
            {
                out.push(Decision::CreateTask(Box::new(spec.clone())));
            }
        }
        if !self.to_create.is_empty() {
            return;
        }
        for phase in self.phase_order() {
            let mut work = self
                .phase_tasks(&phase)
                .filter(|t| t.milestone_of.is_none());
            let all_done = work.all(|t| t.status == TaskStatus::Completed);
            if !all_done || self.phase_done(&phase) {
                continue;
            }
            let reviews: Vec<&TaskState> = self
                .phase_tasks(&phase)
                .filter(|t| t.milestone_of.is_some())
                .collect();
            if reviews.iter().any(|t| !is_terminal(t.status)) {
                continue;
            }
            // The last review (if any) requested changes and its follow-ups are done,
            // or there was none yet: review (again).
            if reviews.iter().any(|t| t.status != TaskStatus::Completed) {
                continue;
            }
            let round = reviews.len() + 1;
            let Some(template) = self.phase_tasks(&phase).next().map(|t| t.spec.clone()) else {
                continue;
            };
            let id = format!("{phase}{MILESTONE}{round}");
            if out
                .iter()
                .any(|d| matches!(d, Decision::CreateTask(s) if s.id == id))
            {
                continue;
            }
            let mut spec = phase_task(
                &phase,
                id,
                TaskType::Review,
                format!("Milestone review of phase {phase}"),
                template.constraints,
            );
            spec.description = format!(
                "Every task of phase {phase} is done. Review the phase as a whole against the plan: dependency directions between modules, consistency of public interfaces, module boundaries. Approve, or request changes with one follow-up task per problem."
            );
            spec.acceptance_criteria = vec![
                "Cross-module dependencies point the way the plan says".into(),
                "Public interfaces match the contracts tasks provide and require".into(),
            ];
            spec.context_refs.plan_ref = template
                .context_refs
                .plan_ref
                .map(|r| r.split_once('#').map(|(f, _)| f.to_string()).unwrap_or(r));
            out.push(Decision::CreateTask(Box::new(spec)));
        }
    }

    fn dispatches(&mut self, out: &mut Vec<Decision>) {
        if self.paused || self.stopped.is_some() || self.cancelled.is_some() {
            return;
        }
        // The Main Agent's turns and the direct lane take no slot: the user is answered
        // (and served) while the task graph's work runs.
        let running = self
            .agents
            .values()
            .filter(|a| !in_conversation(&self.tasks[a.task].spec.id))
            .count() as u32;
        let mut slots = self.concurrency_now().saturating_sub(running);
        // Each task started and not finished keeps a worktree, and reviewed ones wait
        // for the merge queue's one-at-a-time merges: no new task starts while as many
        // are started as agents may run plus as many again (at least a few) waiting,
        // so that the worktrees alive stay bounded by the concurrency, not the plan.
        let mut open = self
            .tasks
            .iter()
            .filter(|t| self.isolated && merges(t) && t.attempt > 0 && !is_terminal(t.status))
            .count() as u32;
        let most_open = self.config.concurrency + self.config.concurrency.max(MERGE_QUEUE_LEAST);
        let order = self.phase_order();
        let mut candidates: Vec<(bool, bool, usize, AgentType)> = Vec::new();
        for (i, t) in self.tasks.iter().enumerate() {
            let Next::Dispatch(role) = t.next else {
                continue;
            };
            if t.in_flight || t.agent.is_some() || is_terminal(t.status) || t.cancel.is_some() {
                continue;
            }
            if !self.phase_gate_open(t, &order) {
                continue;
            }
            // While a re-plan is under way nothing new starts: work under way goes on
            // to the end of its attempt (its review, its debugging).
            if self.frozen && !in_conversation(&t.spec.id) && t.attempt == 0 {
                continue;
            }
            // What the change impacts waits for the re-plan; SAFE work goes on.
            if self.held_for_replan(&t.spec.id) {
                continue;
            }
            let fresh = t.attempt == 0;
            let soft_waiting = t.spec.dependencies.iter().any(|d| {
                d.dependency_type == DependencyType::Soft
                    && self
                        .index
                        .get(&d.depends_on_task_id)
                        .is_some_and(|&j| !is_terminal(self.tasks[j].status))
            });
            candidates.push((fresh, soft_waiting, i, role));
        }
        candidates.sort();
        // Tasks in progress, for conflicts: started and not ended.
        let mut busy: BTreeSet<usize> = self
            .tasks
            .iter()
            .enumerate()
            .filter(|(_, t)| in_progress(t.status) && !is_terminal(t.status))
            .map(|(i, _)| i)
            .collect();
        for (_, _, i, role) in candidates {
            let turn = in_conversation(&self.tasks[i].spec.id);
            if slots == 0 && !turn {
                continue;
            }
            if busy.iter().any(|&j| j != i && self.conflict(i, j)) {
                continue;
            }
            if self.tasks[i].attempt == 0 && self.isolated && merges(&self.tasks[i]) {
                if open >= most_open {
                    continue;
                }
                open += 1;
            }
            busy.insert(i);
            if !turn {
                slots -= 1;
            }
            let planning_notes = air_proto::planning::is_planning(&self.tasks[i].spec.id)
                .then(|| self.planning_notes());
            let t = &mut self.tasks[i];
            t.in_flight = true;
            let n = t.started_by_role.get(&role).copied().unwrap_or(0) + 1;
            let attempt = if role == AgentType::Executor || t.attempt == 0 {
                t.attempt + 1
            } else {
                t.attempt
            };
            out.push(Decision::Dispatch(Box::new(Dispatch {
                task_id: t.spec.id.clone(),
                agent_id: format!("{}-{}-{n}", t.spec.id, role.as_str()),
                role,
                attempt,
                spec: t.spec.clone(),
                notes: planning_notes.unwrap_or_else(|| t.notes.clone()),
                previous: match role {
                    // A review the user asked for looks at the direct lane's result.
                    AgentType::Reviewer if is_review(&t.spec.id) => {
                        air_proto::conversation::summarised(&t.spec)
                            .first()
                            .and_then(|of| self.index.get(of))
                            .and_then(|&j| self.tasks[j].under_review.clone())
                    }
                    AgentType::Reviewer | AgentType::Debugger => t.under_review.clone(),
                    AgentType::ArchitectureDesigner if t.milestone_of.is_none() => {
                        t.under_review.clone()
                    }
                    _ => None,
                },
            })));
        }
    }

    /// Whether tasks `i` and `j` must not run at the same time.
    fn conflict(&self, i: usize, j: usize) -> bool {
        let (a, b) = (&self.tasks[i].spec, &self.tasks[j].spec);
        // The conversation's turns go one at a time, in order; so does the direct lane.
        let planning = air_proto::planning::is_planning;
        if (is_turn(&a.id) && is_turn(&b.id))
            || (is_direct(&a.id) && is_direct(&b.id))
            || (planning(&a.id) && planning(&b.id))
        {
            return true;
        }
        // In one tree, one writer per area at a time; each in its own worktree, the
        // area is a hint (the merge finds a real conflict).
        if let (Some(x), Some(y)) = (&a.scope.write_area, &b.scope.write_area) {
            if x == y && !self.isolated {
                return true;
            }
        }
        let excludes = |from: &TaskSpec, to: &TaskSpec| {
            from.dependencies.iter().any(|d| {
                d.depends_on_task_id == to.id
                    && matches!(
                        d.dependency_type,
                        DependencyType::Conflict | DependencyType::Serialization
                    )
            })
        };
        excludes(a, b) || excludes(b, a)
    }

    fn patrol(&mut self, now: u64, out: &mut Vec<Decision>) {
        if self.agents.is_empty() {
            return;
        }
        let idle = now.saturating_sub(self.last_activity_ms);
        if idle < self.config.patrol_ms {
            return;
        }
        // Transient: the recorded patrol event moves last_activity for good.
        self.last_activity_ms = now;
        out.push(Decision::Patrol {
            idle_ms: idle,
            agents: self
                .agents
                .iter()
                .map(|(id, a)| PatrolEntry {
                    agent_id: id.clone(),
                    task_id: Some(self.tasks[a.task].spec.id.clone()),
                    silent_ms: now.saturating_sub(a.last_seen_ms),
                })
                .collect(),
        });
    }

    fn completion(&mut self, out: &mut Vec<Decision>) {
        if self.tasks.iter().any(|t| t.in_flight) {
            return;
        }
        // A confirmation asked for is answered by the user or, in time, by the ask
        // policy: the run waits for it.
        if !self.awaiting.is_empty() {
            return;
        }
        // So is a planning session: the user's answer is awaited (unless the run was
        // cancelled or stopped).
        if self.planning_open() && self.cancelled.is_none() && self.stopped.is_none() {
            return;
        }
        let open: Vec<usize> = self
            .tasks
            .iter()
            .enumerate()
            .filter(|(_, t)| !is_terminal(t.status))
            .map(|(i, _)| i)
            .collect();
        // A paused run with work left waits for `resume`; one with nothing left ends.
        if self.paused && self.cancelled.is_none() && !open.is_empty() {
            return;
        }
        // A stopped run (a spent budget) answers no more messages: each turn waiting
        // ends blocked, saying why, before the run ends.
        if let Some(why) = &self.stopped {
            let waiting: Vec<usize> = open
                .iter()
                .copied()
                .filter(|&i| in_conversation(&self.tasks[i].spec.id) && self.tasks[i].attempt == 0)
                .collect();
            if !waiting.is_empty() {
                for i in waiting {
                    let t = &mut self.tasks[i];
                    t.in_flight = true;
                    out.push(Decision::Finish {
                        task_id: t.spec.id.clone(),
                        status: TaskStatus::Blocked,
                        reason: Some(format!("not answered: {why}")),
                    });
                }
                return;
            }
        }
        if !open.is_empty() && self.stopped.is_none() {
            // Nothing can move, nothing runs, and the run is not stopped: a transition
            // the rules do not cover. Escalate instead of waiting forever.
            for i in open {
                let t = &mut self.tasks[i];
                t.in_flight = true;
                out.push(Decision::Finish {
                    task_id: t.spec.id.clone(),
                    status: TaskStatus::Blocked,
                    reason: Some(format!(
                        "the scheduler found no way forward from status {} (escalated)",
                        t.status.as_str()
                    )),
                });
            }
            return;
        }
        // The outcome is the task graph's: a turn of the conversation is not its work.
        let work = || {
            self.tasks
                .iter()
                .filter(|t| !is_turn(&t.spec.id) && !air_proto::planning::is_planning(&t.spec.id))
        };
        let count = |s: TaskStatus| work().filter(|t| t.status == s).count() as u32;
        let (completed, failed, blocked, cancelled) = (
            count(TaskStatus::Completed),
            count(TaskStatus::Failed),
            count(TaskStatus::Blocked),
            count(TaskStatus::Cancelled),
        );
        let unfinished = work().filter(|t| !is_terminal(t.status)).count() as u32;
        let (outcome, reason) = if let Some(r) = &self.cancelled {
            (RunOutcome::Interrupted, Some(r.clone()))
        } else if failed > 0 {
            (RunOutcome::Failed, self.stopped.clone())
        } else if blocked > 0 || unfinished > 0 || cancelled > 0 {
            (RunOutcome::Blocked, self.stopped.clone())
        } else {
            (RunOutcome::Completed, None)
        };
        self.completing = true;
        out.push(Decision::RunComplete(RunCompleted {
            outcome,
            reason,
            completed,
            failed,
            blocked,
            cancelled,
            unfinished,
            landing: None,
        }));
    }
}

/// Tasks the merge queue may hold before new tasks wait, whatever the concurrency.
const MERGE_QUEUE_LEAST: u32 = 4;

/// Whether a task's change goes through the merge queue: every task of the plan
/// whose agents may change files (an executor's, a debug task's), not a milestone
/// review, a turn of the conversation (the Main Agent's, the direct lane, a planning
/// turn) or a review the user asked for. One with no worktree completes at once.
fn merges(t: &TaskState) -> bool {
    let id = &t.spec.id;
    t.milestone_of.is_none() && !in_conversation(id) && !is_review(id)
}
