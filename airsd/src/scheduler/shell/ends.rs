//! The hooks at the ends of things: `Stop` when a turn of the Main Agent completes
//! (one that refuses the stop keeps the Main Agent going, its reason said in the
//! conversation as the message the next turn answers), and `TaskCompleted` when a
//! task of the graph is about to complete (one that refuses keeps the task open: its
//! debugger follows with the reason, or it is blocked once its retries are spent);
//! and the hooks of events that only tell (`SessionStart`, `SessionEnd`,
//! `Notification`, `TaskCreated`, `SubagentStop`, `PreCompact`), run beside the
//! scheduler, which does not wait for them.

use super::*;

/// Most turns in a row Stop hooks may add before they are no longer run.
pub(super) const MAX_STOP_CHAIN: u32 = 3;

impl Shell {
    /// Runs the Stop hooks of a turn that completed: their records, and a message that
    /// starts the next turn when one refused the stop.
    pub(super) async fn stop_hooks(&mut self, task_id: &str) -> Result<Vec<RuntimeEvent>> {
        use air_proto::hooks::HookEvent;
        let hooks = self.ctx.hooks.clone();
        if !hooks.has(HookEvent::Stop) {
            return Ok(Vec::new());
        }
        let mut out = Vec::new();
        let launching = crate::scheduler::hooks::Launching {
            quarantine: self.ctx.paths.quarantine().join(task_id.replace(':', "-")),
            engine: &self.ctx.engine,
            sandbox_exe: self.tools.sandbox_exe.as_ref(),
        };
        if self.stop_chain >= MAX_STOP_CHAIN {
            self.stop_chain = 0;
            let e = self.event(&p::HookCompleted {
                event: HookEvent::Stop.as_str().to_string(),
                command: String::new(),
                source: "air".into(),
                tool: None,
                tool_run_id: None,
                task_id: Some(task_id.to_string()),
                exit_code: None,
                timed_out: false,
                blocked: false,
                reason: None,
                skipped: Some(format!(
                    "Stop hooks kept the Main Agent going {MAX_STOP_CHAIN} turns in a row: it stops here"
                )),
                duration_ms: None,
            })?;
            return Ok(vec![e]);
        }
        let outcome = crate::scheduler::hooks::run(
            &hooks,
            HookEvent::Stop,
            None,
            serde_json::json!({ "stop_hook_active": self.stop_chain > 0, "task_id": task_id }),
            self.session_id(),
            &launching,
        )
        .await;
        for mut run in outcome.runs {
            run.task_id = Some(task_id.to_string());
            out.push(self.event(&run)?);
        }
        match outcome.blocked {
            Some(why) => {
                self.stop_chain += 1;
                let said = ev::UserMessageCreated(p::MessageCreated {
                    message_id: air_proto::ids::new_id(),
                    content: serde_json::json!([{ "type": "text", "text": format!("(A Stop hook did not let the conversation stop here; go on.) {why}") }]),
                    agent_id: None,
                    task_id: None,
                    client: Some("hook:Stop".into()),
                    model: None,
                    usage: None,
                });
                out.push(self.event(&said)?);
            }
            None => self.stop_chain = 0,
        }
        Ok(out)
    }

    /// Runs the TaskCompleted hooks of a task about to complete, their records pushed;
    /// whether one refused (its record then tells the core, which keeps the task open).
    pub(super) async fn completed_hooks(&mut self, task_id: &str) -> Result<bool> {
        use air_proto::hooks::HookEvent;
        let hooks = self.ctx.hooks.clone();
        if !hooks.has(HookEvent::TaskCompleted) || air_proto::conversation::in_conversation(task_id)
        {
            return Ok(false);
        }
        // In the task's worktree, where its work is.
        let env = if self.spaces.by_task.contains_key(task_id) {
            self.env_of(task_id)
        } else {
            self.tools.clone()
        };
        let spec = self.core.specs().into_iter().find(|s| s.id == task_id);
        let launching = crate::scheduler::hooks::Launching {
            quarantine: self
                .ctx
                .paths
                .quarantine()
                .join(format!("{task_id}-completed")),
            engine: &env.engine,
            sandbox_exe: env.sandbox_exe.as_ref(),
        };
        let outcome = crate::scheduler::hooks::run(
            &hooks,
            HookEvent::TaskCompleted,
            None,
            serde_json::json!({
                "task_id": task_id,
                "task_title": spec.as_ref().map(|s| s.title.clone()),
                "task_description": spec.as_ref().map(|s| s.description.clone()),
            }),
            self.session_id(),
            &launching,
        )
        .await;
        let refused = outcome.blocked.is_some();
        let mut records = Vec::new();
        for mut run in outcome.runs {
            run.task_id = Some(task_id.to_string());
            records.push(self.event(&run)?);
        }
        self.push(records);
        Ok(refused)
    }

    /// Runs the hooks of an event that only tells, beside the scheduler: nothing
    /// waits for them, and a refusal changes nothing (it is recorded as the hook's
    /// words). Their records are appended as they end.
    pub(super) fn tell_hooks(
        &self,
        event: air_proto::hooks::HookEvent,
        input: serde_json::Value,
        task_id: Option<&str>,
    ) {
        if !self.ctx.hooks.has(event) {
            return;
        }
        let hooks = self.ctx.hooks.clone();
        let engine = self.ctx.engine.clone();
        let sandbox = self.tools.sandbox_exe.clone();
        let session = self.ctx.session.clone();
        let quarantine = self.ctx.paths.quarantine().join(format!(
            "{}-{}",
            event.as_str(),
            air_proto::ids::new_id()
        ));
        let task = task_id.map(str::to_string);
        tokio::spawn(async move {
            let launching = crate::scheduler::hooks::Launching {
                quarantine,
                engine: &engine,
                sandbox_exe: sandbox.as_ref(),
            };
            let outcome =
                crate::scheduler::hooks::run(&hooks, event, None, input, session.id(), &launching)
                    .await;
            let events: Vec<RuntimeEvent> = outcome
                .runs
                .into_iter()
                .filter_map(|mut r| {
                    r.task_id.clone_from(&task);
                    r.blocked = false;
                    RuntimeEvent::of(session.id(), EventSource::scheduler(), &r).ok()
                })
                .collect();
            if !events.is_empty() {
                if let Err(e) = session.store().append_batch(events).await {
                    tracing::warn!("cannot record a hook's run: {e}");
                }
            }
        });
    }

    /// A run's scheduler starts: `SessionStart` (a session's first start, or one
    /// picked up again), and at the first, `TaskCreated` for the tasks it starts with.
    pub(super) fn tell_start(&self) {
        use air_proto::hooks::HookEvent;
        if !self.ctx.hooks.has(HookEvent::SessionStart)
            && !self.ctx.hooks.has(HookEvent::TaskCreated)
        {
            return;
        }
        let fresh = self.ctx.session.bus().read(|p, _| p.agents.is_empty());
        self.tell_hooks(
            HookEvent::SessionStart,
            serde_json::json!({"source": if fresh { "startup" } else { "resume" }}),
            None,
        );
        if fresh {
            for spec in self.core.specs() {
                if air_proto::conversation::in_conversation(&spec.id) {
                    continue;
                }
                self.tell_hooks(
                    HookEvent::TaskCreated,
                    serde_json::json!({"task_id": spec.id, "task_title": spec.title, "task_description": spec.description}),
                    Some(&spec.id),
                );
            }
        }
    }
}
