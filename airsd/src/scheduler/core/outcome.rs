//! What an agent's result or failure means for its task: the flow of seed 001 §5.2,
//! the evidence gates (§8.2) and the repeated-failure rule (D-008).

use super::*;

impl Core {
    pub(super) fn on_result(
        &mut self,
        i: usize,
        role: AgentType,
        result: &WorkerResult,
        verdict: Option<&gate::Verdict>,
    ) {
        let config = self.config.clone();
        if role == AgentType::Main {
            return self.on_turn(i, result);
        }
        // Impacted by a requirement change: the re-plan decides what comes next.
        if self.set_aside(i) {
            return;
        }
        if air_proto::planning::is_planning(&self.tasks[i].spec.id) {
            return self.on_planning_turn(i, result);
        }
        // A review the user asked for ends with its decision; the Main Agent tells it.
        if is_review(&self.tasks[i].spec.id) {
            let output: Option<ReviewerOutput> = serde_json::from_value(result.result.clone()).ok();
            let t = &mut self.tasks[i];
            let mut reason = match &output {
                Some(o) => format!("{}: {}", o.decision.as_str(), result.summary),
                None => result.summary.clone(),
            };
            for f in output.iter().flat_map(|o| &o.findings) {
                let at = match (&f.file, f.line) {
                    (Some(file), Some(line)) => format!("{file}:{line}: "),
                    (Some(file), None) => format!("{file}: "),
                    _ => String::new(),
                };
                reason.push_str(&format!("; {at}{}", f.summary));
            }
            t.next = Next::Finish(TaskStatus::Completed, Some(reason));
            return;
        }
        // The direct lane's answer ends its task: no form, no reviewer (D-005).
        if is_direct(&self.tasks[i].spec.id) {
            let t = &mut self.tasks[i];
            // Kept for a review the user may ask for (`/review`).
            t.under_review = Some(result.clone());
            t.next = match result.status {
                WorkerStatus::Completed => Next::Finish(TaskStatus::Completed, None),
                WorkerStatus::Blocked => {
                    Next::Finish(TaskStatus::Blocked, Some(result.summary.clone()))
                }
                _ => Next::Finish(TaskStatus::Failed, Some(result.summary.clone())),
            };
            return;
        }
        let t = &mut self.tasks[i];
        match role {
            AgentType::Executor if t.spec.task_type == TaskType::Execute => match result.status {
                WorkerStatus::Completed => match judged(&t.spec, result, verdict) {
                    Ok(()) => {
                        t.under_review = Some(result.clone());
                        t.next = Next::Dispatch(AgentType::Reviewer);
                    }
                    Err(reasons) => {
                        let reasons = reasons.join("; ");
                        rejected(
                            t,
                            config.auto_rejections,
                            config.consult,
                            |n| format!("the result failed its evidence gate {n} times in a row: {reasons}"),
                            format!(
                                "Your previous result claimed completion but cannot complete the task: {reasons}. Produce the missing evidence or report the task as failed."
                            ),
                        );
                    }
                },
                WorkerStatus::Failed | WorkerStatus::Blocked
                    if result.model_unreachable().is_some() =>
                {
                    // No model answered: a debugger would ask the same one. The task
                    // waits for a person (`air retry` once the model answers again).
                    t.next = Next::Finish(TaskStatus::Blocked, Some(result.summary.clone()));
                }
                WorkerStatus::Failed | WorkerStatus::Blocked => {
                    // The same failure is told by the compiler's and linker's errors
                    // (their signatures, alike across compilers), else by the checks
                    // that failed, else by what the agent said.
                    let failed = gate::failed_verification(result);
                    let signatures = verdict.map(|v| v.signatures.clone()).unwrap_or_default();
                    let (kind, what) = if !signatures.is_empty() {
                        ("build failed", signatures.join(", "))
                    } else if failed.is_empty() {
                        ("gave up", result.summary.clone())
                    } else {
                        ("verification failed", failed.join(", "))
                    };
                    if repeated(t, kind, &what, config.same_failure_limit, config.consult) {
                        t.under_review = Some(result.clone());
                        return;
                    }
                    t.under_review = Some(result.clone());
                    t.next = Next::Dispatch(AgentType::Debugger);
                }
                WorkerStatus::Cancelled => {
                    t.next = Next::Finish(
                        TaskStatus::Cancelled,
                        Some("the executor reported the task cancelled".into()),
                    );
                }
            },
            AgentType::ArchitectureDesigner
                if t.milestone_of.is_none() && t.spec.task_type == TaskType::Execute =>
            {
                let (end, reason) = t.escalation.take().unwrap_or((
                    TaskStatus::Blocked,
                    "the scheduler consulted the Architecture Designer".into(),
                ));
                let output: Option<ConsultOutput> =
                    serde_json::from_value(result.result.clone()).ok();
                match output {
                    Some(o) if o.decision == ConsultDecision::Retry => {
                        t.rejections = 0;
                        t.failures.clear();
                        t.escalated = false;
                        t.notes.push(format!(
                            "The Architecture Designer, consulted after this task ran out of attempts ({reason}), advises: {}",
                            o.advice
                        ));
                        t.next = Next::Dispatch(AgentType::Executor);
                    }
                    Some(o) => {
                        t.next = Next::Finish(
                            end,
                            Some(format!(
                                "{reason} (the Architecture Designer, consulted, advised stopping: {})",
                                o.advice
                            )),
                        );
                    }
                    None => {
                        t.next = Next::Finish(
                            end,
                            Some(format!(
                                "{reason} (the Architecture Designer, consulted, gave no advice: {})",
                                result.summary
                            )),
                        );
                    }
                }
            }
            AgentType::Reviewer | AgentType::ArchitectureDesigner => {
                let output: Option<ReviewerOutput> =
                    serde_json::from_value(result.result.clone()).ok();
                // The decision is what counts, whatever the status word says: a
                // reviewer that answers `failed` with its findings has rejected.
                let decision = match (&output, result.status) {
                    (Some(o), _) => Some(o.decision),
                    (None, WorkerStatus::Blocked) => Some(ReviewDecision::Blocked),
                    (None, _) => None,
                };
                let findings = output
                    .as_ref()
                    .map(|o| {
                        o.findings
                            .iter()
                            .map(|f| match (&f.file, f.line) {
                                (Some(file), Some(line)) => {
                                    format!("[{:?}] {file}:{line}: {}", f.severity, f.summary)
                                }
                                (Some(file), None) => {
                                    format!("[{:?}] {file}: {}", f.severity, f.summary)
                                }
                                _ => format!("[{:?}] {}", f.severity, f.summary),
                            })
                            .collect::<Vec<_>>()
                    })
                    .unwrap_or_default();
                // A milestone review that found the architecture drifted from the
                // plan: the rest of the plan is re-planned as after a requirement
                // change (seed 001 §14's second trigger).
                let deviation = output
                    .as_ref()
                    .and_then(|o| o.deviation.as_deref())
                    .map(str::trim)
                    .filter(|d| !d.is_empty() && t.milestone_of.is_some())
                    .map(str::to_string);
                if let Some(drift) = deviation {
                    let phase = t.milestone_of.clone().unwrap_or_default();
                    t.next = Next::Finish(
                        TaskStatus::Completed,
                        Some(format!(
                            "the architecture drifted from the plan: {drift}; re-planned"
                        )),
                    );
                    self.requirement_changed(&format!(
                        "The milestone review of phase {phase} found that the architecture drifted from the plan: {drift}"
                    ));
                    return;
                }
                match decision {
                    None => {
                        t.reviewer_failures += 1;
                        if t.reviewer_failures > 1 {
                            t.next = Next::Finish(
                                TaskStatus::Blocked,
                                Some(format!(
                                    "the review produced no decision twice: {}",
                                    result.summary
                                )),
                            );
                        } else {
                            t.next = Next::Dispatch(role);
                        }
                    }
                    Some(ReviewDecision::Approved) => {
                        t.rejections = 0;
                        if role == AgentType::ArchitectureDesigner {
                            t.milestone_approved = true;
                        }
                        t.next = Next::Finish(TaskStatus::Completed, None);
                    }
                    Some(ReviewDecision::Blocked) => {
                        t.next = Next::Finish(
                            TaskStatus::Blocked,
                            Some(format!("the reviewer blocked the task: {}", result.summary)),
                        );
                    }
                    Some(ReviewDecision::ChangesRequested) => {
                        if t.milestone_of.is_some() {
                            self.milestone_changes(i, result, &findings);
                            return;
                        }
                        if t.spec.task_type != TaskType::Execute {
                            // A review task of the plan: the review is its work.
                            t.next = Next::Finish(
                                TaskStatus::Completed,
                                Some(format!("changes requested: {}", findings.join("; "))),
                            );
                            return;
                        }
                        let joined = findings.join("; ");
                        rejected(
                            t,
                            config.auto_rejections,
                            config.consult,
                            |n| {
                                format!(
                                    "the reviewer requested changes {n} times in a row: {joined}"
                                )
                            },
                            format!(
                                "The reviewer requested changes: {}",
                                if findings.is_empty() {
                                    result.summary.clone()
                                } else {
                                    findings.join("\n")
                                }
                            ),
                        );
                    }
                }
            }
            AgentType::Debugger if t.spec.task_type == TaskType::Execute => {
                let analysis = serde_json::from_value::<DebuggerOutput>(result.result.clone())
                    .ok()
                    .map(|o| o.analysis)
                    .filter(|a| !a.trim().is_empty());
                let Some(analysis) = analysis else {
                    // The failure it was sent for comes first: that is the cause.
                    let first = t
                        .under_review
                        .as_ref()
                        .map(|r| r.summary.clone())
                        .or_else(|| t.crash.clone());
                    let reason = match first {
                        Some(f) => format!(
                            "{f} (the debugger returned no analysis: {})",
                            result.summary
                        ),
                        None => format!(
                            "the debugger returned no analysis (required before a task fails): {}",
                            result.summary
                        ),
                    };
                    t.next = Next::Finish(TaskStatus::Blocked, Some(reason));
                    return;
                };
                // What it analysed, when its executor left no result.
                let analysis = match t.crash.take() {
                    Some(crash) => format!("{analysis} (the executor's end: {crash})"),
                    None => analysis,
                };
                // The task was to end once analysed (its executor failed the same way
                // too often).
                if let Some((end, reason)) = t.after_analysis.take() {
                    t.next = Next::Finish(
                        end,
                        Some(format!("{reason}; debugger analysis: {analysis}")),
                    );
                    return;
                }
                match result.status {
                    WorkerStatus::Completed => {
                        if t.retries_used < t.spec.constraints.retry_budget {
                            t.retries_used += 1;
                            t.notes.push(format!("The debugger's analysis: {analysis}"));
                            t.next = Next::Dispatch(AgentType::Executor);
                        } else {
                            let reason = format!(
                                "retry budget ({}) spent; debugger analysis: {analysis}",
                                t.spec.constraints.retry_budget
                            );
                            escalate(t, config.consult, TaskStatus::Failed, reason);
                        }
                    }
                    WorkerStatus::Blocked => {
                        t.next = Next::Finish(
                            TaskStatus::Blocked,
                            Some(format!("debugger analysis: {analysis}")),
                        );
                    }
                    WorkerStatus::Failed | WorkerStatus::Cancelled => {
                        t.next = Next::Finish(
                            TaskStatus::Failed,
                            Some(format!("debugger analysis: {analysis}")),
                        );
                    }
                }
            }
            _ => {
                // One-agent tasks (review/debug/compact/mine_experience tasks of a plan).
                match result.status {
                    WorkerStatus::Completed => match judged(&t.spec, result, verdict) {
                        Ok(()) => t.next = Next::Finish(TaskStatus::Completed, None),
                        Err(reasons) => {
                            t.next = Next::Finish(
                                TaskStatus::Blocked,
                                Some(format!("evidence gate: {}", reasons.join("; "))),
                            )
                        }
                    },
                    WorkerStatus::Failed | WorkerStatus::Cancelled => {
                        if t.retries_used < t.spec.constraints.retry_budget {
                            t.retries_used += 1;
                            t.notes
                                .push(format!("The previous attempt failed: {}", result.summary));
                            t.next = Next::Dispatch(role);
                        } else {
                            t.next = Next::Finish(TaskStatus::Failed, Some(result.summary.clone()));
                        }
                    }
                    WorkerStatus::Blocked => {
                        t.next = Next::Finish(TaskStatus::Blocked, Some(result.summary.clone()))
                    }
                }
            }
        }
    }

    fn milestone_changes(&mut self, i: usize, result: &WorkerResult, findings: &[String]) {
        let t = &mut self.tasks[i];
        let Some(phase) = t.milestone_of.clone() else {
            return;
        };
        let round: u32 = t
            .spec
            .id
            .rsplit_once(MILESTONE)
            .and_then(|(_, n)| n.parse().ok())
            .unwrap_or(1);
        if round > self.config.milestone_rounds {
            t.next = Next::Finish(
                TaskStatus::Blocked,
                Some(format!(
                    "the milestone review of phase {phase} requested changes {round} times: {}",
                    findings.join("; ")
                )),
            );
            return;
        }
        let mut follow_ups: Vec<(String, String, Option<FollowUpType>)> = result
            .follow_up_tasks
            .iter()
            .map(|f| (f.title.clone(), f.description.clone(), f.task_type))
            .collect();
        if follow_ups.is_empty() {
            follow_ups.push((
                format!("Address the milestone review of phase {phase}"),
                findings.join("\n"),
                None,
            ));
        }
        let n = follow_ups.len();
        t.next = Next::Finish(
            TaskStatus::Completed,
            Some(format!("changes requested; {n} follow-up task(s)")),
        );
        let template = t.spec.constraints.clone();
        for (k, (title, description, kind)) in follow_ups.into_iter().enumerate() {
            let task_type = match kind {
                Some(FollowUpType::Review) => TaskType::Review,
                Some(FollowUpType::Debug) => TaskType::Debug,
                _ => TaskType::Execute,
            };
            let mut spec = phase_task(
                &phase,
                format!("{phase}:fix-{round}-{}", k + 1),
                task_type,
                title.clone(),
                template.clone(),
            );
            spec.description = description;
            spec.acceptance_criteria =
                vec![format!("The milestone review finding is resolved: {title}")];
            self.to_create.push(spec);
        }
    }

    /// A turn of the Main Agent ended with its answer: the turn is done, and the task it
    /// handed on, if any, is created (then run like any task of a plan).
    fn on_turn(&mut self, i: usize, result: &WorkerResult) {
        let output: Option<MainResult> = serde_json::from_value(result.result.clone()).ok();
        // What the user asked to stop stops (a turn is never stopped this way).
        for c in output.iter().flat_map(|o| &o.cancel) {
            let Some(&j) = self.index.get(&c.task_id).filter(|_| !is_turn(&c.task_id)) else {
                continue;
            };
            let t = &mut self.tasks[j];
            if !is_terminal(t.status) {
                t.cancel.get_or_insert_with(|| {
                    (
                        format!("the user asked to stop it: {}", c.reason),
                        TaskStatus::Cancelled,
                    )
                });
            }
        }
        let direct = output.as_ref().is_some_and(|o| o.intent == Intent::Direct);
        let planning = output
            .as_ref()
            .is_some_and(|o| o.intent == Intent::NeedsPlanning && o.task.is_none());
        let t = &mut self.tasks[i];
        // Classified `needs_planning`: the Architecture Designer discusses it.
        if planning && result.status == WorkerStatus::Completed {
            let message = t.spec.description.clone();
            let id = air_proto::conversation::answered_message(&t.spec).map(str::to_string);
            t.next = Next::Finish(
                TaskStatus::Completed,
                Some("handed to the Architecture Designer".into()),
            );
            let requirement = air_proto::conversation::named_intent(&message)
                .map_or(message.as_str(), |(_, rest)| rest)
                .to_string();
            self.start_planning(&requirement, id.as_deref());
            return;
        }
        let Some(task) = output.and_then(|o| o.task) else {
            // Classified `direct`: the direct lane does what the user asked.
            if direct && result.status == WorkerStatus::Completed {
                let (message, id) = (
                    t.spec.description.clone(),
                    air_proto::conversation::answered_message(&t.spec).map(str::to_string),
                );
                t.next = Next::Finish(
                    TaskStatus::Completed,
                    Some("handed to the direct lane".into()),
                );
                self.ask_direct(&message, id.as_deref());
                return;
            }
            t.next = match result.status {
                WorkerStatus::Completed => Next::Finish(TaskStatus::Completed, None),
                _ => Next::Finish(TaskStatus::Failed, Some(result.summary.clone())),
            };
            return;
        };
        let id = self.next_task_id();
        self.tasks[i].next = Next::Finish(
            TaskStatus::Completed,
            Some(format!("handed on as task {id}")),
        );
        self.delegated.insert(id.clone());
        if self.confirm {
            self.awaiting.insert(id.clone(), false);
        }
        self.to_create.push(task.spec(id));
    }

    pub(super) fn on_failure(
        &mut self,
        i: usize,
        role: AgentType,
        failure: AgentFailure,
        reason: &str,
    ) {
        if self.set_aside(i) {
            return;
        }
        if failure == AgentFailure::Stuck {
            let id = self.tasks[i].spec.id.clone();
            self.tell_person(&id, &format!("its {} was stopped: {reason}", role.as_str()));
        }
        let limit = self.config.same_failure_limit;
        let t = &mut self.tasks[i];
        match failure {
            AgentFailure::Cancelled => {
                t.next = Next::Finish(TaskStatus::Cancelled, Some(reason.to_string()));
            }
            AgentFailure::Provider => {
                // Not the task's failure: its agent runs again (no retry of the task
                // is spent) until the provider has failed it too often.
                t.provider_faults += 1;
                if t.provider_faults >= super::PROVIDER_FAULTS {
                    t.next = Next::Finish(
                        TaskStatus::Blocked,
                        Some(format!(
                            "the model provider did not answer the {} ({} times; the last: {reason}); try again later or with another model",
                            role.as_str(),
                            t.provider_faults
                        )),
                    );
                } else {
                    t.notes.push(format!(
                        "The previous {} run of this task ended because its model's provider did not answer ({reason}). Go on from what is done; check the files before you continue.",
                        role.as_str()
                    ));
                    t.next = Next::Dispatch(role);
                }
            }
            AgentFailure::Interrupted => {
                t.notes.push(format!(
                    "The previous {} run of this task was interrupted ({reason}). Tool runs it had started without finishing are marked interrupted; check the files before you continue, and do not assume any of its changes are complete.",
                    role.as_str()
                ));
                t.next = Next::Dispatch(role);
            }
            AgentFailure::Spawn => {
                t.next = Next::Finish(
                    TaskStatus::Blocked,
                    Some(format!(
                        "the {} worker could not start: {reason}",
                        role.as_str()
                    )),
                );
            }
            AgentFailure::Permission => {
                t.next = Next::Finish(
                    TaskStatus::Blocked,
                    Some(format!(
                        "the {} stopped on a permission error: {reason}",
                        role.as_str()
                    )),
                );
            }
            AgentFailure::Crash
            | AgentFailure::Timeout
            | AgentFailure::Stalled
            | AgentFailure::Stuck
            | AgentFailure::Protocol
                if role == AgentType::Executor
                    && t.spec.task_type == TaskType::Execute
                    && !in_conversation(&t.spec.id) =>
            {
                // Global rule 1: a task does not end failed or blocked without a
                // debugger's analysis, and an executor that crashed, stalled or was
                // killed left no result to end it: the debugger looks first.
                let n = t
                    .failures
                    .entry(signature(failure.as_str(), reason))
                    .or_insert(0);
                *n += 1;
                if *n >= limit {
                    t.after_analysis = Some((
                        TaskStatus::Blocked,
                        format!(
                            "the same failure {n} times, escalated: {}: {reason}",
                            failure.as_str()
                        ),
                    ));
                }
                t.notes.push(format!(
                    "The executor ended without a result ({}): {reason}. Find out why from what it did (its commands, their output, its changes) before you change anything.",
                    failure.as_str()
                ));
                t.under_review = None;
                t.crash = Some(format!("{}: {reason}", failure.as_str()));
                t.next = Next::Dispatch(AgentType::Debugger);
            }
            AgentFailure::Crash
            | AgentFailure::Timeout
            | AgentFailure::Stalled
            | AgentFailure::Stuck
            | AgentFailure::Protocol => {
                if repeated(t, failure.as_str(), reason, limit, false) {
                    return;
                }
                if t.retries_used < t.spec.constraints.retry_budget {
                    t.retries_used += 1;
                    t.notes.push(format!(
                        "The previous {} run ended without a result ({}): {reason}",
                        role.as_str(),
                        failure.as_str()
                    ));
                    t.next = Next::Dispatch(role);
                } else {
                    t.next = Next::Finish(
                        TaskStatus::Failed,
                        Some(format!(
                            "retry budget ({}) spent; last failure ({}): {reason}",
                            t.spec.constraints.retry_budget,
                            failure.as_str()
                        )),
                    );
                }
            }
        }
    }
}

/// Whether a completed result may complete its task: by the verdict airsd recorded
/// from its records, or (a result recorded before airsd derived evidence) by its own
/// claims, as it was judged then.
fn judged(
    spec: &air_proto::task::TaskSpec,
    result: &WorkerResult,
    verdict: Option<&gate::Verdict>,
) -> Result<(), Vec<String>> {
    match verdict {
        Some(v) if v.passed() => Ok(()),
        Some(v) => Err(v.refused.clone()),
        None => gate::check_recorded_claims(spec, result),
    }
}

/// The task has run out of attempts: it ends as `end`, unless the Architecture
/// Designer is to be consulted first (once, when `consult`).
fn escalate(t: &mut TaskState, consult: bool, end: TaskStatus, reason: String) {
    t.escalated = true;
    if consult && !t.consulted && t.spec.task_type == TaskType::Execute && t.cancel.is_none() {
        t.consulted = true;
        t.notes.push(format!(
            "The scheduler is about to end this task as {}: {reason}. Advise `retry` (one more executor attempt, with your advice as its guidance) or `stop`.",
            end.as_str()
        ));
        t.escalation = Some((end, reason));
        t.next = Next::Dispatch(AgentType::ArchitectureDesigner);
    } else {
        t.next = Next::Finish(end, Some(reason));
    }
}

/// Counts a consecutive rejection of an executor's result (by the evidence gate or the
/// reviewer): within the automatic allowance the executor goes again with `note`;
/// beyond it the task is blocked with `blocked(n)`.
fn rejected(
    t: &mut TaskState,
    allowance: u32,
    consult: bool,
    blocked: impl FnOnce(u32) -> String,
    note: String,
) {
    t.rejections += 1;
    if t.rejections > allowance {
        let reason = blocked(t.rejections);
        escalate(t, consult, TaskStatus::Blocked, reason);
    } else {
        t.notes.push(note);
        t.next = Next::Dispatch(AgentType::Executor);
    }
}

/// Counts a failure by its signature; at the limit the task escalates, with the
/// latest failure's own words (returns true).
fn repeated(t: &mut TaskState, kind: &str, what: &str, limit: u32, consult: bool) -> bool {
    let n = t.failures.entry(signature(kind, what)).or_insert(0);
    *n += 1;
    if *n >= limit {
        let reason = format!("the same failure {n} times, escalated: {kind}: {what}");
        escalate(t, consult, TaskStatus::Blocked, reason);
        return true;
    }
    false
}
