//! The hooks at the ends of things: `Stop` when a turn of the Main Agent completes
//! (one that refuses the stop keeps the Main Agent going, its reason said in the
//! conversation as the message the next turn answers), and `TaskCompleted` when a
//! task of the graph is about to complete (one that refuses keeps the task open: its
//! debugger follows with the reason, or it is blocked once its retries are spent).

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
}
