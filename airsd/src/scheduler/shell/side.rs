//! Agents airsd runs beside the scheduler — the Compactor and the ExperienceMiner:
//! their own worker, prompt and contract, no project tools, no task slot and no
//! attempt (the core never sees them). Started here, recorded as `agent.started`;
//! one that a restart of airsd cut off is recorded as interrupted.

use super::*;

/// What a side agent is started with.
pub(super) struct SideStart {
    pub agent_id: String,
    pub agent_type: AgentType,
    pub task_id: Option<String>,
    pub spec: air_proto::task::TaskSpec,
    pub context: air_proto::context::AssembledContext,
    pub choice: Option<air_proto::ipc::ModelChoice>,
}

/// A side agent's budget on `choice` (the unknown model's when none), and the
/// model's name.
pub(super) fn budget_on(
    choice: Option<&air_proto::ipc::ModelChoice>,
) -> (air_proto::context::BudgetPolicy, String) {
    let (window, max_output, thinking) = choice.map_or(
        (
            air_proto::models::UNKNOWN_MODEL.context_window,
            air_proto::models::UNKNOWN_MODEL.max_output,
            None,
        ),
        |c| (c.context_window, c.max_output, c.thinking_budget),
    );
    let model_id = choice.map_or_else(
        || "unknown".to_string(),
        |c| format!("{}/{}", c.provider, c.model),
    );
    (
        crate::context::budget(window, max_output, thinking),
        model_id,
    )
}

impl Shell {
    /// Whether `agent_id` is a side agent (a Compactor or an ExperienceMiner).
    pub(super) fn is_side(&self, agent_id: &str) -> bool {
        self.is_compactor(agent_id) || self.is_miner(agent_id)
    }

    /// Starts a side agent's worker and records `agent.started`.
    pub(super) async fn start_side(&mut self, s: SideStart) -> std::result::Result<(), String> {
        let model_id = s
            .choice
            .as_ref()
            .map(|c| format!("{}/{}", c.provider, c.model));
        let summary = s.context.summary.clone();
        let start = AgentStart {
            version: 1,
            task_spec: s.spec,
            context_pack: ContextPack {
                assembled: Some(Box::new(s.context)),
                ..ContextPack::default()
            },
            runtime: AgentRuntimeContext {
                session_id: self.session_id().to_string(),
                project_id: self.ctx.project_id.clone(),
                agent_id: s.agent_id.clone(),
                worktree_path: None,
                permission_template: PermissionTemplate::System,
                agent_type: Some(s.agent_type),
                attempt: None,
                heartbeat_interval_ms: Some(self.config.heartbeat_interval_ms),
                model: self.ctx.models.flag.clone(),
                resolved: s.choice,
                record: self.ctx.run.record.clone(),
                replay: self.ctx.run.replay.clone(),
            },
            tools: Vec::new(),
        };
        let message = IpcMessage {
            header: air_proto::ipc::IpcHeader::new(
                air_proto::ipc::Direction::ParentToWorker,
                self.session_id(),
                &s.agent_id,
            ),
            body: IpcBody::Control(ControlMessage::Start(Box::new(start))),
        };
        let stderr = self.stderr_path(&s.agent_id);
        let worker = Worker::spawn(
            &self.config.worker,
            self.ctx.paths.root(),
            &stderr,
            &message,
            self.worker_tx.clone(),
        )
        .map_err(|e| format!("the {} could not start: {e}", s.agent_type.as_str()))?;
        let started = self
            .event(&p::AgentStarted {
                agent_id: s.agent_id.clone(),
                agent_type: s.agent_type,
                task_id: s.task_id,
                pid: Some(worker.pid),
                model: Some(model_id.unwrap_or_else(|| "unknown".into())),
                context: Some(summary),
            })
            .map_err(|e| e.to_string())?;
        self.workers.insert(s.agent_id, worker);
        self.agents.store(self.workers.len(), Ordering::Relaxed);
        self.record(vec![started]).await.map_err(|e| e.to_string())
    }

    /// Refuses a side agent's tool call: it has no project tools.
    pub(super) fn refuse_side_tool(
        &self,
        agent_id: &str,
        header: &air_proto::ipc::IpcHeader,
        call: &air_proto::ipc::ToolCall,
    ) {
        let Some(worker) = self.workers.get(agent_id) else {
            return;
        };
        let answer = crate::agents::supervisor::not_its_tool(call);
        worker.reply(header, IpcBody::ToolResult(answer));
    }

    /// Side agents recorded as running when airsd (re)starts have no process: each is
    /// recorded as interrupted.
    pub(super) async fn interrupted_side_agents(&mut self) -> Result<()> {
        let session = self.ctx.session.clone();
        let running = tokio::task::spawn_blocking(move || -> Result<_> {
            let conn = session.readers().get()?;
            let mut running = Vec::new();
            for kind in [AgentType::Compactor, AgentType::ExperienceMiner] {
                let (_, r) = crate::event_store::query::side_agents(&conn, kind, None)?;
                running.extend(r.into_iter().map(|id| (id, kind)));
            }
            Ok(running)
        })
        .await
        .map_err(|e| Error::Internal(e.to_string()))??;
        let mut events = Vec::new();
        for (id, kind) in running {
            let reason = match kind {
                AgentType::Compactor => {
                    "airsd stopped while the Compactor ran; the messages it was given are kept"
                }
                _ => "airsd stopped while the ExperienceMiner ran; nothing it found was kept",
            };
            events.push(self.event(&p::AgentFailed {
                agent_id: id,
                reason: reason.into(),
                exit_code: None,
                failure: Some(AgentFailure::Interrupted),
            })?);
        }
        if !events.is_empty() {
            self.record(events).await?;
        }
        Ok(())
    }
}
