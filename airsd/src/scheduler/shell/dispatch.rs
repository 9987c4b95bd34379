//! Starting an agent: its status event, its assembled context (D-046), its model and
//! its `agent.start` message.

use super::*;

/// What a dispatch read of the project and the session for the agent's context.
pub(super) struct Gathered<'a> {
    diff: Option<&'a crate::context::ReviewDiff>,
    task_changes: &'a [String],
    environment: &'a crate::context::Environment,
    conversation: Option<&'a crate::context::Conversation>,
    skills: &'a [air_proto::skills::SkillRef],
    memory: Option<&'a crate::memory::Selection>,
}

/// Most compiler and linker findings told to a debugger.
const FINDINGS_TOLD: usize = 40;

use air_proto::task::milestone_phase as milestone;

/// The phase whose milestone this dispatch reviews, if it is one.
fn milestone_phase(d: &Dispatch) -> Option<&str> {
    (d.role == AgentType::ArchitectureDesigner)
        .then(|| milestone(&d.task_id))
        .flatten()
}

impl Shell {
    pub(super) async fn dispatch(&mut self, mut d: Dispatch) -> Result<()> {
        // The task's own worktree first: an agent whose worktree cannot be made does
        // not start (never in the checkout instead).
        let no_space = self.space_for(&d).await.err();
        // The debugger is given what the compilers and linkers of the failed attempt
        // said, as airsd parsed it.
        let (findings, note) = self.findings_note(&d).await;
        d.notes.extend(note);
        // And what earlier debuggers of this project found of failures like it.
        if let Some(note) = self.knowledge_note(&d, &findings).await {
            d.notes.push(note);
        }
        let mut status = status_payload(&d.task_id, Some(d.attempt));
        status.agent_id = Some(d.agent_id.clone());
        status.agent_type = Some(d.role);
        let planning = air_proto::planning::phase_of(&d.spec);
        let status_now = match d.role {
            _ if planning.is_some() => TaskStatus::Running,
            AgentType::Reviewer | AgentType::ArchitectureDesigner => TaskStatus::Reviewing,
            AgentType::Debugger => TaskStatus::Debugging,
            _ => TaskStatus::Running,
        };
        let profiles = self.profiles_called_for(&d);
        let mut tools = crate::tools::offered_for(d.role, &profiles);
        // A planning turn: the read tools and its phase's own, nothing else (P0-5).
        if let Some(phase) = planning {
            tools.retain(|t| air_proto::planning::refusal(phase, &t.name).is_none());
            tools.extend(air_proto::planning::designer_tools(phase));
        } else {
            // The MCP servers' tools it may call (or the search that loads them).
            tools.extend(self.tools.mcp.offered(d.role).await);
        }
        let conversation = self.conversation(&d).await;
        // A milestone review judges what its phase's tasks changed.
        let phase_files = milestone_phase(&d).map(|_| {
            let mut files: Vec<String> = conversation
                .iter()
                .flat_map(|c| c.tasks.iter())
                .flat_map(|t| t.outcome.changed.iter().cloned())
                .collect();
            files.sort();
            files.dedup();
            files
        });
        // Only a reviewer (or a milestone review) is shown a diff: nobody else pays
        // for one.
        let reviews = d.role == AgentType::Reviewer || phase_files.is_some();
        let diff = match reviews {
            true => match self.space_diff(&d, phase_files.as_deref()).await {
                Some(diff) => Some(diff),
                None => self.diff_under_review(&d, phase_files).await,
            },
            false => None,
        };
        let changes = self.task_changes(&d).await;
        let environment = self.environment(&d.task_id).await;
        // From here the agent may write its worktree.
        if let Some(space) = self.spaces.by_task.get_mut(&d.task_id) {
            space.clean = false;
        }
        let skills = self.skills().await;
        let memory = self.memory_for(&d, &changes).await;
        let (mut context, model) = self.assemble(
            &d,
            &tools,
            &Gathered {
                diff: diff.as_ref(),
                task_changes: &changes,
                environment: &environment,
                conversation: conversation.as_ref(),
                skills: &skills,
                memory: memory.as_ref(),
            },
        );
        self.memory_used(&context.summary.included_refs.memories);
        let mut compaction = None;
        if context.summary.compaction.needed {
            let e = self.event(&p::CompactionRequested {
                agent_id: Some(d.agent_id.clone()),
                task_id: Some(d.task_id.clone()),
                reason: context
                    .summary
                    .compaction
                    .reason
                    .clone()
                    .unwrap_or_default(),
                estimated_tokens: context.summary.token_estimate.total,
                threshold_tokens: context.summary.budget.threshold(),
                context_window_tokens: context.summary.budget.context_window_tokens,
                // The starting context alone: nothing of a loop to compact yet.
                upto_message_id: None,
            })?;
            context.summary.compaction.requested_event_id = Some(e.id.clone());
            compaction = Some(e);
        }
        let summary = context.summary.clone();
        let start = self.start_message(&d, context, tools, changes, skills);
        let stderr = self.stderr_path(&d.agent_id);
        let (pid, failure) = match no_space {
            Some(why) => (None, Some(why)),
            None => match Worker::spawn(
                &self.config.worker,
                &self.task_root(&d.task_id),
                &stderr,
                &start,
                self.worker_tx.clone(),
            ) {
                Ok(worker) => {
                    let pid = worker.pid;
                    self.workers.insert(d.agent_id.clone(), worker);
                    (Some(pid), None)
                }
                Err(e) => (None, Some(e.to_string())),
            },
        };
        let mut events = vec![
            self.status_event(status_now, status)?,
            self.event(&p::AgentStarted {
                agent_id: d.agent_id.clone(),
                agent_type: d.role,
                task_id: Some(d.task_id.clone()),
                pid,
                model,
                context: Some(summary),
            })?,
        ];
        events.extend(compaction);
        if let Some(reason) = &failure {
            events.push(self.event(&p::AgentFailed {
                agent_id: d.agent_id.clone(),
                reason: reason.clone(),
                exit_code: None,
                failure: Some(AgentFailure::Spawn),
            })?);
        }
        if failure.is_none() {
            self.dispatches.insert(d.agent_id.clone(), d);
        }
        self.agents.store(self.workers.len(), Ordering::Relaxed);
        self.push(events);
        Ok(())
    }

    /// The skills installed (the user's, the project's over them); one that cannot be
    /// read is logged by file and line and left out.
    pub(super) async fn skills(&self) -> Vec<air_proto::skills::SkillRef> {
        let home = self.config.air_home.clone();
        let shared = self.ctx.paths.shared();
        let found = tokio::task::spawn_blocking(move || {
            air_proto::skills::discover(home.as_deref(), &shared)
        })
        .await;
        match found {
            Ok((skills, problems)) => {
                for p in problems {
                    tracing::warn!("a skill was left out: {p}");
                }
                skills
            }
            Err(e) => {
                tracing::warn!("cannot look for skills: {e}");
                Vec::new()
            }
        }
    }

    /// The project root, the platform, today's date and the working tree's state.
    async fn environment(&self, task_id: &str) -> crate::context::Environment {
        use crate::context::Worktree;
        let root = self.task_root(task_id);
        let shown = root.display().to_string();
        let launcher = self.env_of(task_id).launcher;
        let own = self.spaces.get(task_id).is_some();
        // A worktree nothing but airsd touched since its checkout or its last commit
        // holds its branch as it is.
        let clean = self.spaces.get(task_id).is_some_and(|s| s.clean);
        let tree = if clean {
            Worktree::Task { dirty: Vec::new() }
        } else {
            tokio::task::spawn_blocking(move || {
                if !crate::tools::git::in_repository(&root) {
                    return Worktree::NotGit;
                }
                match crate::tools::git::Dirty::read(&launcher) {
                    // Its branch names the session: not for the model to act on.
                    Some(d) if own => Worktree::Task { dirty: d.files() },
                    Some(d) => Worktree::Git {
                        branch: d.branch.clone(),
                        dirty: d.files(),
                    },
                    None => Worktree::Unknown,
                }
            })
            .await
            .unwrap_or(Worktree::Unknown)
        };
        crate::context::Environment {
            root: shown,
            os: format!("{} ({})", std::env::consts::OS, std::env::consts::ARCH),
            date: air_proto::time::now_iso().chars().take(10).collect(),
            tree,
            mode: self.ctx.engine.mode(),
        }
    }

    /// For the Main Agent and the direct lane, the conversation before this request and
    /// the session's tasks with what became of them (read off the scheduler's thread);
    /// for a milestone review, its phase's tasks.
    async fn conversation(&self, d: &Dispatch) -> Option<crate::context::Conversation> {
        use crate::context::{Conversation, Said, TaskLine};
        let phase = milestone_phase(d).map(str::to_string);
        if !air_proto::conversation::in_conversation(&d.task_id) && phase.is_none() {
            return None;
        }
        let session = self.ctx.session.clone();
        let answering = air_proto::conversation::answered_message(&d.spec).map(str::to_string);
        // The agent's own task is not news to it (and its creation may commit with its
        // start).
        let own = d.task_id.clone();
        let read = tokio::task::spawn_blocking(move || -> crate::error::Result<Conversation> {
            let conn = session.readers().get()?;
            let messages = crate::event_store::query::conversation(&conn, 200)?;
            let outcomes = crate::event_store::query::task_outcomes(&conn)?;
            let tasks = session.bus().read(|p, _| {
                p.tasks
                    .iter()
                    .filter(|t| !air_proto::conversation::is_any_turn(&t.id) && t.id != own)
                    .filter(|t| match phase.as_deref() {
                        Some(ph) => t.phase.as_deref() == Some(ph) && milestone(&t.id).is_none(),
                        None => true,
                    })
                    .map(|t| TaskLine {
                        id: t.id.clone(),
                        title: t.title.clone(),
                        status: t.status.as_str().to_string(),
                        reason: t.reason.clone(),
                        outcome: outcomes
                            .iter()
                            .find(|(id, _)| *id == t.id)
                            .map(|(_, o)| o.clone())
                            .unwrap_or_default(),
                    })
                    .collect::<Vec<_>>()
            });
            let said = messages
                .into_iter()
                .filter(|_| phase.is_none())
                .filter(|m| answering.as_deref() != Some(m.id.as_str()))
                .filter_map(|m| {
                    let text = air_proto::message::text_of(&m.content);
                    (!text.trim().is_empty()).then_some(Said {
                        id: m.id,
                        user: m.user,
                        text,
                    })
                })
                .collect();
            Ok(Conversation { said, tasks })
        })
        .await;
        match read {
            Ok(Ok(c)) => Some(c),
            Ok(Err(e)) => {
                tracing::warn!(task = %d.task_id, "cannot read the conversation: {e}");
                Some(Conversation::default())
            }
            Err(e) => {
                tracing::warn!(task = %d.task_id, "cannot read the conversation: {e}");
                Some(Conversation::default())
            }
        }
    }

    /// The language profiles whose tools this agent is offered: those the project's
    /// top-level files call for, and C and C++ when the task's files are.
    fn profiles_called_for(&self, d: &Dispatch) -> Vec<&'static str> {
        let mut out: Vec<&'static str> = crate::profiles::detected(self.ctx.paths.root())
            .into_iter()
            .map(|(p, _)| p.name())
            .collect();
        let c_files = d
            .spec
            .scope
            .expected_files
            .iter()
            .flatten()
            .any(|f| air_proto::gate::is_c_family(f));
        if c_files && !out.contains(&"cpp") {
            out.push("cpp");
        }
        out
    }

    /// For a debugger, the compiler and linker findings of the attempt it is given,
    /// errors first, one line each with its signature.
    async fn findings_note(&self, d: &Dispatch) -> (Vec<String>, Option<String>) {
        if d.role != AgentType::Debugger {
            return (Vec::new(), None);
        }
        let agents = self.core.attempt_agents(&d.task_id);
        if agents.is_empty() {
            return (Vec::new(), None);
        }
        let session = self.ctx.session.clone();
        let read = tokio::task::spawn_blocking(move || {
            let conn = session.readers().get()?;
            crate::event_store::query::findings_of(&conn, &agents, FINDINGS_TOLD)
        })
        .await;
        let rows = match read {
            Ok(Ok(rows)) => rows,
            Ok(Err(e)) => {
                tracing::warn!(task = %d.task_id, "cannot read the attempt's diagnostics: {e}");
                return (Vec::new(), None);
            }
            Err(e) => {
                tracing::warn!(task = %d.task_id, "cannot read the attempt's diagnostics: {e}");
                return (Vec::new(), None);
            }
        };
        if rows.is_empty() {
            return (rows, None);
        }
        let mut note = String::from(
            "What the compilers and linkers said in the failed attempt, as airsd parsed it (file:line:column, severity, signature, message):",
        );
        for r in &rows {
            note.push_str(&format!("\n- {r}"));
        }
        (rows, Some(note))
    }

    /// For an executor or a debugger, the files the task's agents changed so far (from
    /// airsd's record of their calls).
    async fn task_changes(&self, d: &Dispatch) -> Vec<String> {
        if !matches!(d.role, AgentType::Executor | AgentType::Debugger) {
            return Vec::new();
        }
        self.changed_in_task(&d.task_id).await.unwrap_or_else(|e| {
            tracing::warn!(task = %d.task_id, "cannot read the task's changes: {e}");
            Vec::new()
        })
    }

    /// The files the tool calls of a task's agents changed, from the session's record
    /// (read off the scheduler's thread).
    pub(super) async fn changed_in_task(&self, task_id: &str) -> crate::error::Result<Vec<String>> {
        let (session, task_id) = (self.ctx.session.clone(), task_id.to_string());
        tokio::task::spawn_blocking(move || {
            let conn = session.readers().get()?;
            crate::event_store::query::changed_in_task(&conn, &task_id, &crate::tools::WRITE_TOOLS)
        })
        .await
        .map_err(|e| crate::error::Error::Internal(format!("reading the task's changes: {e}")))?
    }

    /// For a reviewer, the diff of the result's changed files against the last
    /// commit, new files included (seed 001 §9); `None` for other roles and outside
    /// a git repository.
    async fn diff_under_review(
        &self,
        d: &Dispatch,
        phase_files: Option<Vec<String>>,
    ) -> Option<crate::context::ReviewDiff> {
        use crate::context::ReviewDiff;
        use crate::tools::permission::{Access, Verdict};
        let files = match phase_files {
            Some(files) => files,
            None if d.role == AgentType::Reviewer => d.previous.as_ref()?.changed_files.clone(),
            None => return None,
        };
        let root = self.ctx.paths.root().to_path_buf();
        let engine = self.ctx.engine.clone();
        let launcher = self.tools.launcher.clone();
        let scope = crate::tools::scope::Scope::new(&d.spec.scope).ok();
        let made = tokio::task::spawn_blocking(move || {
            if !crate::tools::git::in_repository(&root) {
                return ReviewDiff::NoGit;
            }
            // Only what the reviewer could read itself goes into its context: inside
            // the project, not denied to the task, allowed by the engine.
            let readable: Vec<String> = files
                .iter()
                .filter(|f| !std::path::Path::new(f.as_str()).is_absolute() && !f.starts_with(".."))
                .filter(|f| scope.as_ref().is_none_or(|s| s.check_read(f).is_ok()))
                .filter(|f| {
                    matches!(
                        engine.check(&root.join(f.as_str()), Access::Read),
                        Verdict::Allow | Verdict::Backup
                    )
                })
                .cloned()
                .collect();
            let left_out = files.len() - readable.len();
            if readable.is_empty() {
                return if left_out == 0 {
                    ReviewDiff::NoChanges
                } else {
                    ReviewDiff::Diff(String::new(), left_out)
                };
            }
            match crate::tools::git::task_diff(&launcher, &readable) {
                Ok(Some(d)) => ReviewDiff::Diff(d.diff, left_out),
                Ok(None) => ReviewDiff::NoGit,
                Err(e) => ReviewDiff::Unavailable(e.0),
            }
        })
        .await;
        Some(made.unwrap_or_else(|e| ReviewDiff::Unavailable(e.to_string())))
    }

    /// The agent's starting context (D-046) and its model (`provider/model`), as far
    /// as the run knows it.
    pub(super) fn assemble(
        &self,
        d: &Dispatch,
        tools: &[air_proto::tool::ToolDefinition],
        g: &Gathered<'_>,
    ) -> (air_proto::context::AssembledContext, Option<String>) {
        let task_model = d.spec.constraints.model_id.as_deref();
        let choice = self.ctx.models.choice(d.role, task_model);
        let (model_id, budget) = match choice {
            Some(c) => (
                format!("{}/{}", c.provider, c.model),
                crate::context::budget(c.context_window, c.max_output, c.thinking_budget),
            ),
            None => (
                self.ctx
                    .models
                    .flag
                    .clone()
                    .or_else(|| task_model.map(str::to_string))
                    .unwrap_or_else(|| "unknown".into()),
                crate::context::budget(
                    air_proto::models::UNKNOWN_MODEL.context_window,
                    air_proto::models::UNKNOWN_MODEL.max_output,
                    None,
                ),
            ),
        };
        let neighbours = self.core.neighbours(&d.task_id);
        let notes = self.notes(d);
        let context = crate::context::assemble(
            &self.ctx.sources,
            &crate::context::Request {
                role: d.role,
                spec: &d.spec,
                notes: &notes,
                previous: d.previous.as_ref(),
                neighbours: &neighbours,
                tools,
                model_id: &model_id,
                budget,
                diff: g.diff,
                task_changes: g.task_changes,
                environment: Some(g.environment),
                conversation: g.conversation,
                skills: g.skills,
                memory: g.memory,
            },
        );
        let model = choice
            .map(|_| model_id)
            .or_else(|| task_model.map(str::to_string));
        (context, model)
    }

    /// The notes for the agent: the core's, and each call of the task that was
    /// running when airsd stopped (never offered again unsaid).
    pub(super) fn notes(&self, d: &Dispatch) -> Vec<String> {
        let mut notes = d.notes.clone();
        for (tool, input) in self.tools.interrupted.of_task(&d.task_id) {
            let input: String = input.chars().take(300).collect();
            notes.push(format!(
                "An earlier attempt's call `{}` {input} was running when airsd stopped, and was not run again. If it may be what stopped airsd, do not repeat it as it was (a second such stop makes airsd refuse it).",
                crate::tools::provider_name(&tool)
            ));
        }
        notes
    }

    pub(super) fn start_message(
        &self,
        d: &Dispatch,
        context: air_proto::context::AssembledContext,
        tools: Vec<air_proto::tool::ToolDefinition>,
        task_changes: Vec<String>,
        skills: Vec<air_proto::skills::SkillRef>,
    ) -> IpcMessage {
        let template = match d.role {
            _ if air_proto::conversation::is_direct(&d.task_id) => PermissionTemplate::MainDirect,
            AgentType::Executor => PermissionTemplate::Executor,
            AgentType::Reviewer | AgentType::ArchitectureDesigner => PermissionTemplate::Reviewer,
            AgentType::Debugger => PermissionTemplate::Debugger,
            _ => PermissionTemplate::System,
        };
        let start = AgentStart {
            version: 1,
            task_spec: d.spec.clone(),
            context_pack: ContextPack {
                refs: ContextPackRefs {
                    plan_ref: d.spec.context_refs.plan_ref.clone(),
                    ..ContextPackRefs::default()
                },
                assembled_context_ref: None,
                notes: Some(self.notes(d)).filter(|n| !n.is_empty()),
                previous_result: d.previous.clone().map(Box::new),
                task_changes: Some(task_changes).filter(|c| !c.is_empty()),
                assembled: Some(Box::new(context)),
                skills: Some(skills).filter(|s| !s.is_empty()),
            },
            runtime: AgentRuntimeContext {
                session_id: self.session_id().to_string(),
                project_id: self.ctx.project_id.clone(),
                agent_id: d.agent_id.clone(),
                worktree_path: self
                    .spaces
                    .get(&d.task_id)
                    .map(|s| s.ws.path.display().to_string()),
                permission_template: template,
                agent_type: Some(d.role),
                attempt: Some(d.attempt),
                heartbeat_interval_ms: Some(self.config.heartbeat_interval_ms),
                model: self.ctx.models.flag.clone(),
                resolved: self
                    .ctx
                    .models
                    .choice(d.role, d.spec.constraints.model_id.as_deref())
                    .cloned(),
                record: self.ctx.run.record.clone(),
                replay: self.ctx.run.replay.clone(),
            },
            tools,
        };
        IpcMessage {
            header: air_proto::ipc::IpcHeader::new(
                air_proto::ipc::Direction::ParentToWorker,
                self.session_id(),
                &d.agent_id,
            ),
            body: IpcBody::Control(ControlMessage::Start(Box::new(start))),
        }
    }
}
