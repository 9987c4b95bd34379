//! What workers say and how they end: their events (only the kinds a worker may
//! publish), logs, tool calls and results, and their exit, which the core classifies.

use super::*;
use crate::scheduler::core::ProcessEnd;
use air_proto::events as ev;

impl Shell {
    pub(super) async fn worker_event(&mut self, event: WorkerEvent) -> Result<()> {
        match event {
            WorkerEvent::Message { agent_id, message } => self.message(&agent_id, *message).await,
            WorkerEvent::ProtocolViolation { agent_id, error } => {
                let mut reason = format!("protocol error: {}", error.message);
                if let Some(path) = error
                    .path
                    .as_deref()
                    .filter(|p| !error.message.contains(*p))
                {
                    reason.push_str(&format!(" (at {path})"));
                }
                self.core
                    .apply(&Fact::ProtocolViolation { agent_id, reason }, now_ms());
                Ok(())
            }
            WorkerEvent::Exited { agent_id, exit } => self.exited(&agent_id, exit).await,
        }
    }

    pub(super) async fn message(&mut self, agent_id: &str, message: IpcMessage) -> Result<()> {
        if !self.workers.contains_key(agent_id) {
            return Ok(());
        }
        // Anything a worker says shows it is alive (stalls are silences), and
        // anything but a heartbeat shows it moving (a heartbeat says where it is).
        let beat =
            matches!(&message.body, IpcBody::Event(e) if e.event_type == ev::AgentHeartbeat::TYPE);
        if !beat {
            self.core.apply(
                &Fact::Heartbeat {
                    agent_id: agent_id.to_string(),
                    model: None,
                    beat: None,
                },
                now_ms(),
            );
        }
        let Some(worker) = self.workers.get(agent_id) else {
            return Ok(());
        };
        match message.body {
            IpcBody::Event(mut event) => {
                if !air_proto::registry::worker_may_send(&event.event_type) {
                    tracing::warn!(
                        agent = agent_id,
                        "dropped `{}` from a worker: airsd records it",
                        event.event_type
                    );
                    return Ok(());
                }
                event.session_id = self.session_id().to_string();
                if let Some(role) = self.dispatches.get(agent_id).map(|d| d.role) {
                    event.source = EventSource::agent(agent_id, role);
                }
                // What it says of its model (waiting on a silent provider, or not),
                // and where its loop is.
                if event.event_type == ev::AgentHeartbeat::TYPE {
                    let said = |k: &str| event.payload[k].as_u64().unwrap_or(0);
                    self.core.apply(
                        &Fact::Heartbeat {
                            agent_id: agent_id.to_string(),
                            model: Some(event.payload["model_silent_ms"].as_u64()),
                            beat: Some(crate::scheduler::core::Beat {
                                turn: u32::try_from(said("turn")).unwrap_or(u32::MAX),
                                output_tokens: said("output_tokens"),
                                tools: u32::try_from(said("tools_running")).unwrap_or(u32::MAX),
                            }),
                        },
                        now_ms(),
                    );
                }
                // Its provider asked to slow down: fewer agents start for a while
                // (an agent of a task only).
                if event.event_type == ev::RateLimited::TYPE
                    && self.dispatches.contains_key(agent_id)
                {
                    self.core.apply(&Fact::SlowDown, now_ms());
                }
                // Held as asked: from now its time limits stop counting.
                if event.event_type == ev::AgentHeartbeat::TYPE
                    && event.payload["state"].as_str() == Some("PAUSED")
                {
                    self.core.apply(
                        &Fact::Holding {
                            agent_id: agent_id.to_string(),
                        },
                        now_ms(),
                    );
                }
                if event.event_type == ev::TimeoutExtensionRequested::TYPE {
                    let requested = event.payload["extra_ms"].as_u64().unwrap_or(0);
                    let reason = event.payload["reason"].as_str().map(str::to_string);
                    let grant = self.core.extension_grant(agent_id, requested);
                    if grant > 0 {
                        let e = self.event(&p::TimeoutExtended {
                            agent_id: agent_id.to_string(),
                            extra_ms: grant,
                            reason,
                        })?;
                        self.record(vec![e]).await?;
                    }
                    if let Some(w) = self.workers.get(agent_id) {
                        w.control(ControlMessage::ExtendTimeout {
                            extra_ms: grant,
                            reason: if grant > 0 {
                                "granted".into()
                            } else {
                                "refused: extensions are granted after the soft-timeout warning, up to the hard timeout once more".into()
                            },
                        });
                    }
                    return Ok(());
                }
                match event.event_type.as_str() {
                    ev::TokenDelta::TYPE => {
                        if let Ok(d) =
                            serde_json::from_value::<p::TokenDelta>(event.payload.clone())
                        {
                            let task = self.dispatches.get(agent_id).map(|d| d.task_id.clone());
                            if let Some((message, agent, task, content)) =
                                self.drafts
                                    .delta(&d, agent_id, task.as_deref(), Instant::now())
                            {
                                if let Err(e) = self
                                    .ctx
                                    .session
                                    .store()
                                    .queue_draft(&message, Some(&agent), task.as_deref(), &content)
                                    .await
                                {
                                    tracing::warn!(
                                        agent = agent_id,
                                        "a message draft was not stored: {e}"
                                    );
                                }
                            }
                        }
                    }
                    ev::AssistantMessageCreated::TYPE => {
                        if let Some(m) = event.payload.get("message_id").and_then(Value::as_str) {
                            self.drafts.finished(m);
                        }
                        self.nudge(agent_id, true).await;
                    }
                    _ => {}
                }
                // A requirement change the Main Agent noted, and a loop the patrol of
                // an agent's turns found, are the core's to act on (the loop named by
                // the agent that sent it, on the task it was given).
                let dispatched = self.dispatches.get(agent_id);
                let fact = match event.event_type.as_str() {
                    // Only the Main Agent notes a requirement change.
                    ev::RequirementChanged::TYPE
                        if dispatched.is_some_and(|d| d.role == AgentType::Main) =>
                    {
                        crate::scheduler::core::fact_of(&event.event_type, &event.payload)
                    }
                    ev::RequirementChanged::TYPE => {
                        tracing::warn!(
                            agent = agent_id,
                            "dropped a requirement change not from the Main Agent"
                        );
                        return Ok(());
                    }
                    ev::LoopDetected::TYPE => {
                        let said = serde_json::from_value::<p::LoopDetected>(event.payload.clone());
                        let (Ok(mut l), Some(d)) = (said, dispatched) else {
                            // From an agent of no task (a Compactor, a miner), or not
                            // one: not recorded, so that a replay folds nothing either.
                            return Ok(());
                        };
                        // Recorded as it is folded (a restart folds it again), named
                        // by the agent that sent it, on the task it was given.
                        l.agent_id = agent_id.to_string();
                        l.task_id = d.task_id.clone();
                        l.reason = l.reason.chars().take(300).collect();
                        match serde_json::to_value(&l) {
                            Ok(v) => event.payload = v,
                            Err(_) => return Ok(()),
                        }
                        Some(Fact::LoopDetected {
                            agent_id: l.agent_id,
                            task_id: l.task_id,
                            reason: l.reason,
                            stopped: l.stopped,
                        })
                    }
                    _ => None,
                };
                let compaction = (event.event_type == ev::CompactionRequested::TYPE)
                    .then(|| event.payload.clone());
                let debugged =
                    (event.event_type == ev::DebugRecordCreated::TYPE).then(|| event.clone());
                let (loaded, outdated) = (
                    (event.event_type == ev::SkillLoaded::TYPE).then(|| event.payload.clone()),
                    (event.event_type == ev::OutdatedReported::TYPE)
                        .then(|| {
                            serde_json::from_value::<p::OutdatedReported>(event.payload.clone())
                                .ok()
                        })
                        .flatten(),
                );
                match self.ctx.session.store().append(event).await {
                    Ok(_) => {
                        if let Some(fact) = fact {
                            self.core.apply(&fact, now_ms());
                        }
                        if let Some(record) = debugged {
                            self.keep_debug_record(&record);
                            if let Ok(r) = serde_json::from_value::<p::DebugRecordCreated>(
                                record.payload.clone(),
                            ) {
                                self.learn_from(mine::Trigger::Debug(Box::new(r), record.id))
                                    .await;
                            }
                        }
                        if let Some(payload) = loaded {
                            self.skill_loaded(&payload);
                        }
                        if let Some(report) = outdated {
                            self.learn_from(mine::Trigger::Outdated(Box::new(report)))
                                .await;
                        }
                        // Recorded first: then a Compactor starts on the messages.
                        if let Some(payload) = compaction {
                            self.compaction_requested(agent_id, &payload).await;
                        }
                    }
                    Err(e) => tracing::warn!(agent = agent_id, "a worker's event was refused: {e}"),
                }
                Ok(())
            }
            IpcBody::Log(record) => {
                use air_proto::ipc::LogLevel;
                if matches!(record.level, LogLevel::Error) {
                    tracing::warn!(agent = agent_id, "worker error: {}", record.message);
                    self.last_error.insert(
                        agent_id.to_string(),
                        record.message.chars().take(500).collect(),
                    );
                } else {
                    tracing::debug!(agent = agent_id, level = ?record.level, "{}", record.message);
                }
                Ok(())
            }
            IpcBody::ToolCall(call) if call.tool == crate::evidence::CHECK => {
                // The worker asks what the evidence gate says of a result before it
                // hands it back: a read of airsd's records, answered beside the loop
                // and recorded nowhere (the agent's conversation keeps what it was
                // told).
                let subject = self.core.gate_subject(agent_id);
                let task_root = self
                    .dispatches
                    .get(agent_id)
                    .map(|d| self.task_root(&d.task_id))
                    .unwrap_or_else(|| self.ctx.paths.root().to_path_buf());
                let (session, root, worker, header) = (
                    self.ctx.session.clone(),
                    task_root,
                    worker.clone(),
                    message.header.clone(),
                );
                tokio::spawn(async move {
                    let answer = crate::evidence::answer_check(session, root, subject, call).await;
                    worker.reply(&header, IpcBody::ToolResult(answer));
                });
                Ok(())
            }
            IpcBody::ToolCall(call) if call.tool == air_proto::gate::BEFORE_TOOL => {
                self.check_before(agent_id, &message.header, call);
                Ok(())
            }
            IpcBody::ToolCall(call) if self.is_side(agent_id) => {
                self.refuse_side_tool(agent_id, &message.header, &call);
                Ok(())
            }
            IpcBody::ToolCall(call) => {
                // Tools run beside the scheduler, never blocking it; each call is
                // recorded (`tool.started` first: the write-ahead record) and answered.
                self.nudge(agent_id, false).await;
                let Some(worker) = self.workers.get(agent_id) else {
                    return Ok(());
                };
                let Some(d) = self.dispatches.get(agent_id) else {
                    return Ok(());
                };
                let job = crate::scheduler::tooljob::ToolJob {
                    env: self.env_of(&d.task_id),
                    worker: worker.clone().into(),
                    header: message.header.clone(),
                    call,
                    agent_id: agent_id.to_string(),
                    role: d.role,
                    task_id: d.task_id.clone(),
                    scope: d.spec.scope.clone(),
                    planning: air_proto::planning::phase_of(&d.spec),
                    replan: air_proto::planning::is_replan(&d.spec),
                    fixed: if air_proto::planning::is_replan(&d.spec) {
                        self.core.replan_fixed()
                    } else {
                        Vec::new()
                    },
                    requirement: d.spec.description.clone(),
                    yields: super::before::declared(&d.spec),
                    checks: d.spec.verification.commands.clone().unwrap_or_default(),
                    failure: (d.role == AgentType::Debugger).then(|| {
                        air_proto::gate::Failure::of(&d.spec, d.previous.as_ref(), &d.notes)
                    }),
                    time_limit_ms: d.spec.constraints.hard_timeout_ms,
                };
                tokio::spawn(job.run());
                Ok(())
            }
            IpcBody::WorkerResult(result) if self.is_compactor(agent_id) => {
                self.compactor_result(agent_id, &result);
                Ok(())
            }
            IpcBody::WorkerResult(result) if self.is_miner(agent_id) => {
                self.miner_result(agent_id, &result);
                Ok(())
            }
            IpcBody::WorkerResult(mut result) => {
                // A plan's `mine_experience` task: what it proposes is kept too.
                if result.agent_type == AgentType::ExperienceMiner {
                    if let Ok(output) = serde_json::from_value::<air_proto::memory::MinerOutput>(
                        result.result.clone(),
                    ) {
                        let events = self
                            .keep_proposals(agent_id, "task", &output, None, false)
                            .await?;
                        self.push(events);
                    }
                }
                // The files it changed are those airsd changed for it.
                self.own_changes(agent_id, &mut result).await;
                // It counts once the worker has exited; one that names another task,
                // role or agent has the worker killed.
                self.core.apply(
                    &Fact::ResultReceived {
                        agent_id: agent_id.to_string(),
                        result: Box::new(result),
                    },
                    now_ms(),
                );
                Ok(())
            }
            IpcBody::WorkerCheckpoint(checkpoint) => {
                tracing::debug!(agent = agent_id, turn = checkpoint.turn, state = %checkpoint.state, "checkpoint");
                Ok(())
            }
            IpcBody::ProtocolError(error) => {
                tracing::warn!(
                    agent = agent_id,
                    "the worker reports a protocol error: {}",
                    error.message
                );
                Ok(())
            }
            IpcBody::Control(_) | IpcBody::ToolResult(_) | IpcBody::ToolStream(_) => Ok(()),
        }
    }

    /// Puts airsd's record of the files the task's agents changed in an executor's or
    /// a debugger's result (the other roles change nothing); a list from the worker
    /// that says otherwise is kept as a risk, not trusted.
    async fn own_changes(&mut self, agent_id: &str, result: &mut air_proto::result::WorkerResult) {
        let writes = matches!(result.agent_type, AgentType::Executor | AgentType::Debugger);
        // In its worktree: the task's change is its branch against its base.
        let in_space = if writes {
            self.attempt_change(agent_id, result).await
        } else {
            None
        };
        result.diff_ref = self.diff_refs.remove(agent_id).or(result.diff_ref.take());
        let recorded = match (result.agent_type, in_space) {
            (_, Some(Ok(files))) => files,
            (_, Some(Err(e))) => {
                // An attempt whose work is not on the task's branch did not do it: it
                // is never reviewed (nor merged) as if it had.
                tracing::warn!(
                    agent = agent_id,
                    "cannot read the task's change in its worktree: {e}"
                );
                if result.status == air_proto::result::WorkerStatus::Completed {
                    result.status = air_proto::result::WorkerStatus::Failed;
                }
                result.summary = format!(
                    "airsd could not commit the attempt's work on the task's branch: {e}. {}",
                    result.summary
                );
                Vec::new()
            }
            (AgentType::Executor | AgentType::Debugger, None) => {
                match self.changed_in_task(&result.task_id).await {
                    Ok(r) => r,
                    Err(e) => {
                        tracing::warn!(agent = agent_id, "cannot read the task's changes: {e}");
                        return;
                    }
                }
            }
            (_, None) => Vec::new(),
        };
        let mut recorded = recorded;
        recorded.sort();
        recorded.dedup();
        let claimed = std::mem::take(&mut result.changed_files);
        let unrecorded: Vec<&str> = claimed
            .iter()
            .filter(|c| !recorded.contains(c))
            .map(String::as_str)
            .collect();
        if !unrecorded.is_empty() {
            result.risks.push(air_proto::result::Risk {
                severity: air_proto::result::Severity::Low,
                summary: format!(
                    "the result lists changed files that airsd has no record of the task's calls changing: {}",
                    unrecorded.join(", ")
                ),
            });
        }
        result.changed_files = recorded;
    }

    pub(super) async fn exited(&mut self, agent_id: &str, exit: Exit) -> Result<()> {
        if self.is_compactor(agent_id) {
            return self.compactor_exited(agent_id, exit).await;
        }
        if self.is_miner(agent_id) {
            return self.miner_exited(agent_id, exit).await;
        }
        self.forget_compaction_of(agent_id);
        self.keep_stderr(agent_id)?;
        self.tools.ledger.forget(agent_id);
        self.drafts.agent_ended(agent_id);
        self.workers.remove(agent_id);
        self.agents.store(self.workers.len(), Ordering::Relaxed);
        if let Some(d) = self.dispatches.remove(agent_id) {
            // An agent of a task of the graph ended (not the conversation's own).
            if !air_proto::conversation::in_conversation(&d.task_id) {
                self.tell_hooks(
                    air_proto::hooks::HookEvent::SubagentStop,
                    serde_json::json!({"agent_id": agent_id, "agent_type": d.role.as_str(), "task_id": d.task_id, "exit_code": exit.code}),
                    Some(&d.task_id),
                );
            }
        }
        let end = ProcessEnd {
            code: exit.code,
            text: exit.to_string(),
            logged: self.last_error.remove(agent_id),
            stderr_tail: self.stderr_tail(agent_id),
        };
        self.core.apply(
            &Fact::WorkerExited {
                agent_id: agent_id.to_string(),
                end,
            },
            now_ms(),
        );
        Ok(())
    }

    /// Where a worker's stderr goes: `workers/<agent>.stderr.log` in the session's
    /// artifacts (the path relative to them is [`stderr_artifact`]).
    pub(super) fn stderr_path(&self, agent_id: &str) -> PathBuf {
        self.ctx
            .paths
            .artifacts(self.session_id())
            .join(stderr_artifact(agent_id))
    }

    /// A worker's stderr becomes an artifact of the session when it wrote anything;
    /// an empty file is removed.
    pub(super) fn keep_stderr(&mut self, agent_id: &str) -> Result<()> {
        let path = self.stderr_path(agent_id);
        let size = match std::fs::metadata(&path) {
            Ok(m) => m.len(),
            Err(_) => return Ok(()),
        };
        if size == 0 {
            let _ = std::fs::remove_file(&path);
            return Ok(());
        }
        let rel = stderr_artifact(agent_id);
        let stored = match self
            .tools
            .artifacts
            .describe(&rel, air_proto::result::ArtifactType::Other)
        {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(agent = agent_id, "cannot keep the worker's stderr: {e}");
                return Ok(());
            }
        };
        let task_id = self.dispatches.get(agent_id).map(|d| d.task_id.clone());
        let e = self.event(&p::ArtifactCreated {
            artifact: stored.artifact,
            path: Some(rel),
            original_name: Some("stderr".into()),
            task_id,
            agent_id: Some(agent_id.to_string()),
            tool_run_id: None,
            command_run_id: None,
            entity_type: Some("worker_stderr".into()),
            entity_id: None,
        })?;
        self.push(vec![e]);
        Ok(())
    }

    /// The last non-empty line a worker wrote to stderr.
    pub(super) fn stderr_tail(&self, agent_id: &str) -> Option<String> {
        let text = std::fs::read(self.stderr_path(agent_id)).ok()?;
        let from = text.len().saturating_sub(4096);
        let tail = String::from_utf8_lossy(&text[from..]).into_owned();
        tail.lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .map(|l| l.chars().take(300).collect())
    }
}

/// A worker's stderr log, relative to the session's artifacts.
fn stderr_artifact(agent_id: &str) -> String {
    format!("workers/{agent_id}.stderr.log")
}
