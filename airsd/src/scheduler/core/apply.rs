//! How each recorded fact changes the scheduler state.

use super::*;

impl Core {
    /// The task a decision's fact answers (it is no longer out, nor merging), unless it
    /// has ended.
    fn answered(&mut self, task_id: &str) -> Option<&mut TaskState> {
        let t = self.task_mut(task_id)?;
        t.in_flight = false;
        t.merging = false;
        (!is_terminal(t.status)).then_some(t)
    }

    /// Folds the facts of these events (those the core cares about) into the state.
    pub fn apply_events<'a>(
        &mut self,
        events: impl IntoIterator<Item = &'a air_proto::event::RuntimeEvent>,
        now_ms: u64,
    ) {
        for e in events {
            if let Some(fact) = fact_of(&e.event_type, &e.payload) {
                self.apply(&fact, now_ms);
            }
        }
    }

    /// Folds one recorded fact into the state.
    pub fn apply(&mut self, fact: &Fact, now_ms: u64) {
        // Heartbeats say an agent lives, not that the work moves (seed 001 §4.3); the
        // other observations are not work either.
        if fact.is_activity() {
            self.last_activity_ms = self.last_activity_ms.max(now_ms);
        }
        match fact {
            Fact::ModeChanged { confirm } => self.confirm = *confirm,
            Fact::RunStarted {
                concurrency,
                on_ask,
                budgets,
                confirm,
                isolated,
            } => {
                self.started = true;
                self.confirm = *confirm;
                self.isolated = *isolated;
                self.config.concurrency = (*concurrency).max(1);
                self.on_ask = *on_ask;
                self.budgets = budgets.clone();
                self.budgets_from_ms = now_ms;
            }
            Fact::TaskCreated(spec) => {
                if self.index.contains_key(&spec.id) {
                    return;
                }
                let milestone_of = spec
                    .id
                    .split_once(MILESTONE)
                    .map(|(phase, _)| phase.to_string());
                self.to_create.retain(|t| t.id != spec.id);
                self.index.insert(spec.id.clone(), self.tasks.len());
                self.tasks.push(TaskState {
                    spec: (**spec).clone(),
                    status: TaskStatus::Pending,
                    attempt: 0,
                    retries_used: 0,
                    rejections: 0,
                    reviewer_failures: 0,
                    milestone_of,
                    milestone_approved: false,
                    next: Next::Nothing,
                    agent: None,
                    under_review: None,
                    notes: Vec::new(),
                    failures: HashMap::new(),
                    cancel: None,
                    started_by_role: HashMap::new(),
                    in_flight: false,
                    consulted: false,
                    escalation: None,
                    escalated: false,
                    attempt_agents: Vec::new(),
                    after_analysis: None,
                    crash: None,
                    provider_faults: 0,
                    merging: false,
                });
                if let Some(reason) = &self.cancelled {
                    let i = self.tasks.len() - 1;
                    self.tasks[i].cancel = Some((reason.clone(), TaskStatus::Cancelled));
                }
            }
            Fact::TaskReady { task_id } => {
                if let Some(t) = self.task_mut(task_id) {
                    t.in_flight = false;
                    if t.status == TaskStatus::Pending {
                        t.status = TaskStatus::Ready;
                        t.next = Next::Dispatch(role_for(t));
                    }
                }
            }
            Fact::Dispatched {
                task_id,
                agent_id,
                role,
                attempt,
            } => {
                let Some(&i) = self.index.get(task_id) else {
                    return;
                };
                let t = &mut self.tasks[i];
                t.in_flight = false;
                t.status = match role {
                    AgentType::Debugger => TaskStatus::Debugging,
                    AgentType::Reviewer | AgentType::ArchitectureDesigner => TaskStatus::Reviewing,
                    _ => TaskStatus::Running,
                };
                if *attempt > t.attempt {
                    t.attempt_agents.clear();
                }
                // A crash is the debugger's to analyse; once an executor goes again it
                // is behind (and a session recorded before that rule never had one).
                if *role == AgentType::Executor {
                    t.crash = None;
                    t.after_analysis = None;
                }
                t.attempt_agents.push(agent_id.clone());
                t.attempt = (*attempt).max(t.attempt);
                t.next = Next::Nothing;
                t.agent = Some(agent_id.clone());
                t.notes.clear();
                *t.started_by_role.entry(*role).or_insert(0) += 1;
                let c = &t.spec.constraints;
                self.agents.insert(
                    agent_id.clone(),
                    AgentRun {
                        task: i,
                        role: *role,
                        started_ms: now_ms,
                        last_seen_ms: now_ms,
                        soft_deadline_ms: now_ms.saturating_add(c.soft_timeout_ms),
                        hard_deadline_ms: now_ms.saturating_add(c.hard_timeout_ms),
                        hard_timeout_ms: c.hard_timeout_ms,
                        extended_ms: 0,
                        hold_asked: false,
                        held_since: None,
                        held_ms: 0,
                        warned: false,
                        stopping: false,
                        model_silent_since: None,
                        progress: None,
                        moved_ms: now_ms,
                        tools_waiting: false,
                    },
                );
            }
            Fact::Heartbeat {
                agent_id,
                model,
                beat,
            } => {
                if let Some(a) = self.agents.get_mut(agent_id) {
                    a.last_seen_ms = a.last_seen_ms.max(now_ms);
                    if let Some(said) = model {
                        a.model_silent_since = said.map(|ms| now_ms.saturating_sub(ms));
                    }
                    match beat {
                        None => a.moved_ms = a.moved_ms.max(now_ms),
                        Some(b) => {
                            // Waiting on a tool or on its model is not standing
                            // still: the clock of a stuck agent starts once it waits
                            // on nothing.
                            let at = Some((b.turn, b.output_tokens));
                            let waits = b.tools > 0 || a.model_silent_since.is_some();
                            if a.progress != at || waits {
                                a.moved_ms = a.moved_ms.max(now_ms);
                            }
                            a.progress = at;
                            a.tools_waiting = b.tools > 0;
                        }
                    }
                }
            }
            Fact::Reverted { task_id, error } => self.reverted(task_id, error.as_deref()),
            Fact::SlowDown => self.slowed_down(now_ms),
            Fact::Load { per_core } => self.machine_load(*per_core, now_ms),
            Fact::LoopDetected {
                agent_id,
                task_id,
                reason,
                stopped,
            } => {
                // Told once per agent, and only of one that runs on that task.
                let runs_it = self
                    .agents
                    .get(agent_id)
                    .is_some_and(|a| self.tasks[a.task].spec.id == *task_id);
                if *stopped && runs_it && self.looped.insert(agent_id.clone()) {
                    self.tell_person(
                        task_id,
                        &format!("its agent was stopped in a loop ({reason}) after being told once; the task goes on without it"),
                    );
                }
            }
            Fact::SoftTimeoutWarned { agent_id } => {
                if let Some(a) = self.agents.get_mut(agent_id) {
                    a.warned = true;
                }
            }
            Fact::TimeoutExtended { agent_id, extra_ms } => {
                if let Some(a) = self.agents.get_mut(agent_id) {
                    a.hard_deadline_ms = a.hard_deadline_ms.saturating_add(*extra_ms);
                    a.extended_ms = a.extended_ms.saturating_add(*extra_ms);
                    a.last_seen_ms = a.last_seen_ms.max(now_ms);
                }
            }
            Fact::AgentHeld { agent_id } => {
                if let Some(a) = self.agents.get_mut(agent_id) {
                    a.hold_asked = true;
                }
            }
            Fact::Holding { agent_id } => {
                if let Some(a) = self.agents.get_mut(agent_id) {
                    if a.hold_asked {
                        a.held_since.get_or_insert(now_ms);
                    }
                }
            }
            Fact::AgentReleased { agent_id } => {
                if let Some(a) = self.agents.get_mut(agent_id) {
                    a.hold_asked = false;
                    if let Some(since) = a.held_since.take() {
                        let held = now_ms.saturating_sub(since);
                        a.soft_deadline_ms = a.soft_deadline_ms.saturating_add(held);
                        a.hard_deadline_ms = a.hard_deadline_ms.saturating_add(held);
                        a.held_ms = a.held_ms.saturating_add(held);
                        a.last_seen_ms = a.last_seen_ms.max(now_ms);
                        a.moved_ms = a.moved_ms.max(now_ms);
                    }
                }
            }
            Fact::AgentResult {
                agent_id,
                result,
                gate,
            } => {
                if let Some((i, role)) = self.agent_ended(agent_id) {
                    self.on_result(i, role, result, gate.as_deref());
                }
            }
            Fact::AgentFailed {
                agent_id,
                failure,
                reason,
            } => {
                if let Some((i, role)) = self.agent_ended(agent_id) {
                    self.on_failure(i, role, *failure, reason);
                }
            }
            Fact::MergeFailed { task_id, reason } | Fact::CompletionRefused { task_id, reason } => {
                let Some(t) = self.answered(task_id) else {
                    return;
                };
                // The debugger analyses it and the next attempt resolves it in the
                // task's worktree (which holds the merge); the debugger's end spends
                // the retry.
                let (note, why) = match fact {
                    Fact::CompletionRefused { .. } => {
                        let said =
                            format!("a TaskCompleted hook did not let the task complete: {reason}");
                        (format!("A{}", &said[1..]), said)
                    }
                    _ => (
                        format!("The merge queue did not merge the task's change: {reason}"),
                        reason.clone(),
                    ),
                };
                if t.retries_used < t.spec.constraints.retry_budget {
                    t.notes.push(note);
                    t.next = Next::Dispatch(AgentType::Debugger);
                } else {
                    t.next = Next::Finish(
                        TaskStatus::Blocked,
                        Some(format!(
                            "{why}; its retry budget ({}) is spent",
                            t.spec.constraints.retry_budget
                        )),
                    );
                }
            }
            Fact::TaskFinished {
                task_id,
                status,
                reason,
            } => {
                let Some(t) = self.answered(task_id) else {
                    return;
                };
                t.status = *status;
                t.next = Next::Nothing;
                t.notes.clear();
                // Ended before it was confirmed (cancelled, the run stopped): its
                // question is closed, and the run no longer waits for it.
                if let Some(asked) = self.awaiting.remove(task_id) {
                    self.asking.remove(task_id);
                    if asked {
                        self.to_close.push(task_id.clone());
                    }
                }
                self.planning_turn_ended(task_id, *status, reason.as_deref());
                self.plan_ended(task_id);
                // Work the Main Agent handed on is summarised in the conversation;
                // other work that ran out of attempts is told as it ends.
                let escalated = self.task_mut(task_id).is_some_and(|t| t.escalated);
                if self.delegated.contains(task_id) {
                    let about = [task_id.clone()];
                    let title = format!("{SUMMARY_TITLE}{task_id}");
                    let what = format!("{task_id} ended {}", status.as_str());
                    self.ask_turn(&title, &what, None, &about);
                } else if escalated && *status != TaskStatus::Completed {
                    let what = format!(
                        "it ran out of attempts and ended {}: {}",
                        status.as_str(),
                        reason.as_deref().unwrap_or("no reason recorded")
                    );
                    self.tell_person(task_id, &what);
                }
            }
            Fact::Paused => self.paused = true,
            Fact::Resumed => self.paused = false,
            Fact::Stopped { reason } => {
                if self.stopped.is_none() {
                    self.stopped = Some(reason.clone());
                }
            }
            Fact::CancelRequested {
                task_id,
                reason,
                block,
            } => match task_id {
                Some(id) => {
                    let end = if *block {
                        TaskStatus::Blocked
                    } else {
                        TaskStatus::Cancelled
                    };
                    if let Some(t) = self.task_mut(id) {
                        t.cancel.get_or_insert_with(|| (reason.clone(), end));
                    }
                }
                None => {
                    self.cancelled.get_or_insert_with(|| reason.clone());
                    for t in &mut self.tasks {
                        t.cancel
                            .get_or_insert_with(|| (reason.clone(), TaskStatus::Cancelled));
                    }
                }
            },
            Fact::RunCompleted(_) => {
                self.finished = true;
                self.completing = false;
            }
            Fact::Continued { task_ids, budgets } => {
                // The time budget counts from the continuation.
                self.budgets = self.budgets.overridden_by(budgets);
                self.budgets_from_ms = now_ms;
                self.stopping_for_budget = false;
                self.finished = false;
                self.completing = false;
                self.paused = false;
                self.stopped = None;
                self.cancelled = None;
                self.reopen(
                    task_ids,
                    "This task did not finish in an earlier run of the plan; it starts again. Check what is already in place before you change anything.",
                );
            }
            Fact::Retried { task_ids } => self.reopen(
                task_ids,
                "A person asked for this task to be tried again after it ended unfinished. Check what is already in place before you change anything.",
            ),
            Fact::Usage {
                tokens,
                cost_micro_usd,
            } => {
                self.usage = budget::Usage {
                    tokens: *tokens,
                    cost_micro_usd: *cost_micro_usd,
                };
            }
            Fact::Asks { pending, humans } => {
                self.asks.clone_from(pending);
                self.humans = *humans;
                // What was answered is no longer pending; a request still pending
                // after an answer failed to be written is answered again.
                self.answered.clear();
            }
            Fact::ConfirmationAsked { task_id } => {
                self.asking.remove(task_id);
                if let Some(asked) = self.awaiting.get_mut(task_id) {
                    *asked = true;
                }
            }
            Fact::Confirmed {
                task_id,
                allow,
                reason,
            } => {
                if self.awaiting.remove(task_id).is_none() {
                    return;
                }
                // A confirmed plan's tasks wait for one answer, the proposing turn's.
                let mut ids: Vec<String> = self
                    .held
                    .iter()
                    .filter(|(_, gate)| *gate == task_id)
                    .map(|(id, _)| id.clone())
                    .collect();
                self.held.retain(|_, gate| gate != task_id);
                if ids.is_empty() {
                    ids.push(task_id.clone());
                }
                if !allow {
                    let why = reason.as_deref().unwrap_or("the user declined it");
                    for id in ids {
                        self.declined.insert(id.clone());
                        if let Some(t) = self.task_mut(&id) {
                            t.cancel.get_or_insert_with(|| {
                                (format!("not started: {why}"), TaskStatus::Cancelled)
                            });
                        }
                    }
                }
            }
            Fact::UserMessage {
                message_id,
                text,
                to,
            } => {
                // A message outside a run (none yet, or ended and not continued for
                // it) is a record only.
                if !self.started || self.finished {
                    return;
                }
                // Said to a task still going (`@T2 …`): its agent hears it before its
                // next turn, and the task's next agent is told.
                let open = to
                    .as_deref()
                    .filter(|t| !is_turn(t))
                    .and_then(|t| self.index.get(t).copied())
                    .filter(|&i| !is_terminal(self.tasks[i].status));
                if let Some(i) = open {
                    let t = &mut self.tasks[i];
                    t.notes.push(format!("The user said, for this task: {}", text.trim()));
                    if let Some(agent) = t.agent.clone() {
                        self.to_deliver.push((agent, text.clone()));
                    }
                    return;
                }
                // `/review`: a reviewer looks at the direct lane's latest work, and the
                // Main Agent summarises what it found.
                if air_proto::conversation::asks_review(text) {
                    let latest = self
                        .tasks
                        .iter()
                        .rev()
                        .find(|t| is_direct(&t.spec.id) && t.under_review.is_some())
                        .map(|t| t.spec.id.clone());
                    if let Some(of) = latest {
                        self.reviews += 1;
                        let spec = review_spec(self.reviews, &of, text, Some(message_id));
                        self.delegated.insert(spec.id.clone());
                        self.to_create.push(spec);
                        return;
                    }
                }
                let named = air_proto::conversation::named_intent(text);
                // `/direct …` goes to the direct lane at once, with no turn before it.
                if let Some((Intent::Direct, _)) = named {
                    self.ask_direct(text, Some(message_id));
                    return;
                }
                // `/plan …` goes to the Architecture Designer.
                if let Some((Intent::NeedsPlanning, requirement)) = named {
                    if !requirement.trim().is_empty() {
                        self.start_planning(requirement, Some(message_id));
                        return;
                    }
                }
                // While a planning session is open the user talks with the designer
                // (`/ask …` still reaches the Main Agent).
                if named.is_none() && self.planning_words(text) {
                    return;
                }
                self.ask_turn("Reply to the user", text, Some(message_id), &[]);
            }
            Fact::Planning(f) => self.apply_planning(f),
            Fact::RequirementChanged { change } => self.requirement_changed(change),
            Fact::ResultReceived { agent_id, result } => self.result_received(agent_id, result),
            Fact::ProtocolViolation { agent_id, reason } => {
                self.stops
                    .entry(agent_id.clone())
                    .or_insert((AgentFailure::Protocol, reason.clone()));
            }
            Fact::WorkerExited { agent_id, end } => {
                self.exits.insert(agent_id.clone(), end.clone());
            }
        }
    }

    /// Ended, unfinished tasks start over as pending with fresh budgets, told why.
    fn reopen(&mut self, task_ids: &[String], note: &str) {
        for id in task_ids {
            let Some(t) = self.task_mut(id) else { continue };
            if t.status == TaskStatus::Completed || t.agent.is_some() {
                continue;
            }
            t.status = TaskStatus::Pending;
            t.next = Next::Nothing;
            t.retries_used = 0;
            t.rejections = 0;
            t.reviewer_failures = 0;
            t.failures.clear();
            t.cancel = None;
            t.in_flight = false;
            t.under_review = None;
            t.notes.push(note.into());
        }
    }

    pub(super) fn task_mut(&mut self, task_id: &str) -> Option<&mut TaskState> {
        let i = *self.index.get(task_id)?;
        self.tasks.get_mut(i)
    }

    /// Removes a finished agent; `None` when the agent is unknown or no longer the one
    /// working on its task (a result that arrives after a cancel is ignored).
    fn agent_ended(&mut self, agent_id: &str) -> Option<(usize, AgentType)> {
        self.to_deliver.retain(|(a, _)| a != agent_id);
        let run = self.agents.remove(agent_id)?;
        let t = &mut self.tasks[run.task];
        if t.agent.as_deref() != Some(agent_id) {
            return None;
        }
        t.agent = None;
        if is_terminal(t.status) {
            return None;
        }
        if let Some((reason, end)) = &t.cancel {
            t.next = Next::Finish(*end, Some(reason.clone()));
            return None;
        }
        Some((run.task, run.role))
    }
}
