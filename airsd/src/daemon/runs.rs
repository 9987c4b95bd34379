//! Plan runs held by the daemon: starting one, continuing one, controlling one, and
//! picking up every unfinished run when airsd starts.

use air_proto::events as ev;
use air_proto::layout::ProjectPaths;
use std::sync::Arc;
use std::time::Duration;

use air_proto::api::{RunInfo, SessionCreate};
use air_proto::config::PermissionsConfig;
use air_proto::event::{EventSource, RuntimeEvent};
use air_proto::payload::{RunContinued, RunStarted, TaskCreated};
use air_proto::plan::{OnAsk, PermissionMode};
use rusqlite::{OpenFlags, OptionalExtension};

use super::state::DaemonState;
use crate::error::{Error, Result};
use crate::scheduler::shell::{self, Control, RunContext, RunHandle};
use crate::scheduler::{Config, Core};
use crate::tools::permission::Engine;
use crate::Session;

/// Concurrency when neither the plan nor the caller sets one.
pub use air_proto::plan::DEFAULT_CONCURRENCY;

pub(super) fn event<E: air_proto::events::Event>(session: &str, event: &E) -> Result<RuntimeEvent> {
    RuntimeEvent::of(session, EventSource::scheduler(), event)
        .map_err(|e| Error::Internal(format!("{} payload: {e}", E::TYPE)))
}

pub(super) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

impl DaemonState {
    pub(super) fn shell_config(&self) -> Result<shell::ShellConfig> {
        self.shell.clone().ok_or_else(|| {
            Error::Refused(
                "this airsd was started without a worker program; it cannot run plans".into(),
            )
        })
    }

    pub(super) fn scheduler_config(&self, concurrency: u32) -> Config {
        let mut config = self
            .shell
            .as_ref()
            .map(|s| s.core.clone())
            .unwrap_or_default();
        config.concurrency = concurrency;
        config
    }

    /// Compiles a plan, records it in a new session (`run.started` and every
    /// `task.created` in one transaction), writes the task graph to
    /// `.air/shared/plan/task-graph.json` (with the session it belongs to), and starts
    /// scheduling.
    pub async fn start_run(&self, req: air_proto::api::params::RunStart) -> Result<RunInfo> {
        let shell_config = self.shell_config_for(None, req.env.as_ref())?;
        if let Some(e) = &shell_config.config_error {
            return Err(Error::Refused(format!(
                "cannot run plans until the configuration is fixed: {e}"
            )));
        }
        let compiled = air_proto::plan::compile(&req.plan, &req.plan_text).map_err(Error::Plan)?;
        let graph = compiled.graph;
        let title = req.title.clone().or_else(|| graph.title.clone());
        let mut run = self.run_settings(&shell_config, &req, &graph.settings)?;
        run.title.clone_from(&title);
        run.phases = graph.phases.iter().map(|p| p.id.clone()).collect();
        run.overview.clone_from(&graph.overview);
        // Every agent must be able to reach a model before anything is recorded.
        let models = crate::agents::models::for_run(&shell_config.worker, &graph.tasks, &run)
            .await
            .map_err(Error::Refused)?;
        // The run's files (permissions, rules, profile) are read before anything is
        // recorded: a plan its run cannot start is refused.
        let prep = self.prepare_run(&run, &shell_config).await?;
        // The run's start and its tasks are in the session's file from its creation;
        // nothing else starts a run of it before this one.
        let id = air_proto::ids::new_id();
        let gate = self.run_gate(&id);
        let _one_at_a_time = gate.lock().await;
        let mut first = Vec::new();
        let info = self
            .create_session_as(
                id,
                SessionCreate {
                    title: title.clone(),
                    plan_ref: Some(req.plan.clone()),
                },
                |id| {
                    first.push(event(id, &run)?);
                    for task in &graph.tasks {
                        first.push(event(id, &TaskCreated { task: task.clone() })?);
                    }
                    Ok(first.clone())
                },
            )
            .await?;
        let session = self.session(&info.id).await?;
        self.remember_env(&info.id, req.env.clone());
        let mut core = Core::new(self.scheduler_config(run.concurrency));
        core.apply_events(&first, now_ms());
        let graph_path = self.paths.plan().join("task-graph.json");
        // The file says whose graph it is: two runs of the project may write it.
        let mut shown = serde_json::to_value(&graph)
            .map_err(|e| Error::Internal(format!("task graph: {e}")))?;
        if let Some(o) = shown.as_object_mut() {
            o.insert(
                "session_id".into(),
                serde_json::Value::String(info.id.clone()),
            );
        }
        let bytes = serde_json::to_vec_pretty(&shown)
            .map_err(|e| Error::Internal(format!("task graph: {e}")))?;
        if let Err(e) = air_proto::layout::write_atomic(&graph_path, &bytes) {
            tracing::warn!("cannot write {}: {e}", graph_path.display());
        }
        let worktrees = run.worktrees;
        self.launch_run(session, run, core, shell_config, models, prep);
        Ok(RunInfo {
            session_id: info.id,
            title,
            plan: req.plan,
            tasks: u32::try_from(graph.tasks.len()).unwrap_or(u32::MAX),
            waves: graph.waves,
            warnings: compiled.warnings,
            reopened: Vec::new(),
            worktrees,
        })
    }

    /// A run's settings: the caller's, then the plan's (`settings`), then the user's
    /// configuration, then the defaults; checked before anything is recorded.
    pub(super) fn run_settings(
        &self,
        shell_config: &shell::ShellConfig,
        req: &air_proto::api::params::RunStart,
        settings: &air_proto::plan::PlanSettings,
    ) -> Result<RunStarted> {
        let defaults = &shell_config.defaults;
        let permissions = self.permissions(shell_config)?;
        for (name, value) in [
            ("concurrency", req.concurrency.map(f64::from)),
            ("max_cost", req.max_cost),
        ] {
            if value.is_some_and(|v| !(v > 0.0 && v.is_finite())) {
                return Err(Error::Invalid {
                    event_type: "run.start".into(),
                    field: name.into(),
                    message: "must be more than zero".into(),
                });
            }
        }
        let run = RunStarted {
            plan: req.plan.clone(),
            title: req.title.clone(),
            concurrency: req
                .concurrency
                .or(settings.concurrency)
                .or(defaults.concurrency)
                .unwrap_or(DEFAULT_CONCURRENCY)
                .max(1),
            permission_mode: req
                .permission_mode
                .or(settings.permission_mode)
                .or(defaults.permission_mode)
                .or(permissions.profile.map(|p| p.mode()))
                .unwrap_or(PermissionMode::Default),
            on_ask: req
                .on_ask
                .or(settings.on_ask)
                .or(defaults.on_ask)
                .unwrap_or(OnAsk::Deny),
            budgets: air_proto::plan::Budgets {
                max_cost: req.max_cost.or(settings.budgets.max_cost),
                max_tokens: req.max_tokens.or(settings.budgets.max_tokens),
                max_time_ms: req.max_time_ms.or(settings.budgets.max_time_ms),
            },
            phases: Vec::new(),
            model: req.model.clone().filter(|m| !m.is_empty()),
            overview: None,
            record: req.record.clone().filter(|d| !d.is_empty()),
            replay: req.replay.clone().filter(|d| !d.is_empty()),
            learn: req.learn.or(defaults.learn).unwrap_or(false),
            // Decided for the whole run, and recorded: in a git repository with a
            // commit, unless the run says otherwise.
            worktrees: Some(
                req.worktrees.or(settings.worktrees) != Some(false)
                    && crate::workspace::has_commit(&crate::launcher::Launcher::new(
                        self.paths.root(),
                        shell_config.path.as_deref(),
                        None,
                        Default::default(),
                    )),
            ),
            land: req.land.or(settings.land),
        };
        for (name, dir) in [("record", &run.record), ("replay", &run.replay)] {
            if dir
                .as_deref()
                .is_some_and(|d| !std::path::Path::new(d).is_absolute())
            {
                return Err(Error::Invalid {
                    event_type: "run.start".into(),
                    field: name.into(),
                    message: "must be an absolute directory".into(),
                });
            }
        }
        // A replay only in the project it was recorded in; a recording says which.
        if let Some(dir) = run.replay.as_deref() {
            super::recording::check(
                self.paths.root(),
                std::path::Path::new(dir),
                run.record.as_deref().map(std::path::Path::new),
            )?;
        }
        if let Some(dir) = run.record.as_deref() {
            super::recording::write(self.paths.root(), std::path::Path::new(dir))?;
        }
        Ok(run)
    }

    /// The permissions files: the user's, then the project's over it.
    pub(super) fn permissions(&self, config: &shell::ShellConfig) -> Result<PermissionsConfig> {
        permissions(&self.paths, config)
    }

    /// What a run needs from the user's and the project's files (permissions, rules,
    /// the profile), read and checked on a blocking thread.
    pub(super) async fn prepare_run(
        &self,
        run: &RunStarted,
        config: &shell::ShellConfig,
    ) -> Result<RunPrep> {
        let (paths, run, config) = (self.paths.clone(), run.clone(), config.clone());
        tokio::task::spawn_blocking(move || RunPrep::read(&paths, &run, &config))
            .await
            .map_err(|e| Error::Internal(format!("preparing the run: {e}")))?
    }

    /// A new session whose run cannot start after its file was written (its rules
    /// file is broken): its run is ended as blocked, so that no later start of airsd
    /// runs what its requester was told was refused, and the error names the session.
    pub(super) async fn not_started(&self, id: &str, e: Error) -> Error {
        let ended = event(
            id,
            &air_proto::payload::RunCompleted {
                outcome: air_proto::payload::RunOutcome::Blocked,
                reason: Some(e.to_string()),
                completed: 0,
                failed: 0,
                blocked: 0,
                cancelled: 0,
                unfinished: 0,
                landing: None,
            },
        );
        let recorded = match (self.session(id).await, ended) {
            (Ok(session), Ok(ended)) => session.store().append(ended).await.map(|_| ()),
            (Err(why), _) | (_, Err(why)) => Err(why),
        };
        match recorded {
            Ok(()) => Error::Refused(format!(
                "{e} (session {id} keeps what was asked; its run was ended as blocked)"
            )),
            Err(why) => {
                tracing::warn!(session = id, "cannot end the run that did not start: {why}");
                Error::Refused(format!(
                    "{e} (session {id} keeps what was asked, and its run could not be ended: {why})"
                ))
            }
        }
    }

    /// Starts the scheduler of a session's run with what [`Self::prepare_run`] read.
    pub(super) fn launch_run(
        &self,
        session: Arc<Session>,
        run: RunStarted,
        core: Core,
        config: shell::ShellConfig,
        models: crate::agents::models::Models,
        prep: RunPrep,
    ) -> RunHandle {
        let id = session.id().to_string();
        let ctx = RunContext {
            humans: self.humans_watching(&id),
            session,
            paths: self.paths.clone(),
            project_id: self.project.project_id.clone(),
            run,
            engine: Arc::new(prep.engine),
            backups: Arc::new(prep.backups),
            sources: Arc::new(prep.sources),
            models: Arc::new(models),
            hooks: Arc::new(prep.hooks),
            mcp: prep.mcp,
        };
        let handle = shell::start(ctx, config, core);
        self.runs_lock().insert(id, handle.clone());
        handle
    }

    /// Whether a run of this session is going on now.
    pub(super) fn run_in_progress(&self, session_id: &str) -> bool {
        self.run_handle(session_id).is_some()
    }

    pub(super) fn run_handle(&self, session_id: &str) -> Option<RunHandle> {
        let mut runs = self.runs_lock();
        runs.retain(|_, h| !h.is_done());
        runs.get(session_id).cloned()
    }

    /// Continues a session's run: a run still going is only reported; one that ended
    /// with unfinished tasks reopens them; one whose scheduler is not running (airsd
    /// restarted) is recovered. With `tasks`, only those ended tasks and the ones
    /// waiting on them run again — at once, when the run is still going.
    pub async fn continue_run(
        &self,
        session_id: &str,
        by: Option<String>,
        budgets: air_proto::plan::Budgets,
        tasks: Option<Vec<String>>,
    ) -> Result<RunInfo> {
        let gate = self.run_gate(session_id);
        let one_at_a_time = gate.lock().await;
        let session = self.session(session_id).await?;
        let handle = self.run_handle(session_id);
        let running = handle.is_some();
        let config = self.shell_config_for(Some(session_id), None)?;
        let recovered = {
            let session = session.clone();
            let core_config = self.scheduler_config(DEFAULT_CONCURRENCY);
            tokio::task::spawn_blocking(move || shell::recover(&session, core_config))
                .await
                .map_err(|e| Error::Internal(format!("recovery: {e}")))??
        };
        let Some(mut recovered) = recovered else {
            return Err(Error::NotFound(format!(
                "session {session_id} has no plan run to continue"
            )));
        };
        let snapshot = session.snapshot();
        let mut info = RunInfo {
            session_id: session_id.to_string(),
            title: recovered.started.title.clone(),
            plan: recovered.started.plan.clone(),
            tasks: u32::try_from(snapshot.tasks.len()).unwrap_or(u32::MAX),
            waves: Vec::new(),
            warnings: Vec::new(),
            reopened: Vec::new(),
            worktrees: recovered.started.worktrees,
        };
        let retry = match &tasks {
            Some(asked) => Some(session.bus().read(|p, _| retry_set(p, asked))?),
            None => None,
        };
        if running {
            if !budgets.is_empty() {
                return Err(Error::Refused(format!(
                    "the run of session {session_id} is still going; new budgets apply when it continues after it ended (`air wait {session_id}`, then `air run --resume {session_id}` with the budgets)"
                )));
            }
            if let Some(task_ids) = retry {
                let sent = self
                    .control_run(
                        session_id,
                        Control::Retry {
                            task_ids: task_ids.clone(),
                            by: by.clone(),
                        },
                    )
                    .await;
                if let Err(e) = sent {
                    // The run ended meanwhile: once its scheduler is gone, the retry is
                    // one of an ended run. Refused for another reason, it stays refused.
                    let ended = session.bus().read(|p, _| {
                        p.run
                            .as_ref()
                            .is_some_and(|r| r.status == air_proto::projection::RunState::Ended)
                    });
                    if !ended {
                        return Err(e);
                    }
                    if let Some(h) = handle {
                        h.wait().await;
                    }
                    drop(one_at_a_time);
                    return Box::pin(self.continue_run(session_id, by, budgets, tasks)).await;
                }
                info.reopened = task_ids;
            }
            return Ok(info);
        }
        // Before anything is recorded: the agents must be able to reach a model.
        let models = crate::agents::models::for_run(
            &config.worker,
            &recovered.core.specs(),
            &recovered.started,
        )
        .await
        .map_err(Error::Refused)?;
        // And the run's files must be readable: nothing is recorded for a run that
        // cannot start.
        let prep = self.prepare_run(&recovered.started, &config).await?;
        if recovered.core.is_finished() {
            let mut reopen = recovered.core.unfinished();
            if let Some(asked) = &retry {
                reopen.retain(|t| asked.contains(t));
            }
            if reopen.is_empty() {
                return Ok(info);
            }
            let e = event(
                session_id,
                &RunContinued {
                    task_ids: reopen.clone(),
                    by,
                    budgets: budgets.clone(),
                },
            )?;
            recovered.core.apply_events([&e], now_ms());
            session.store().append(e).await?;
            recovered.started.budgets = recovered.started.budgets.overridden_by(&budgets);
            info.reopened = reopen;
        }
        self.launch_run(
            session,
            recovered.started,
            recovered.core,
            config,
            models,
            prep,
        );
        Ok(info)
    }

    /// Sends a request to a session's running scheduler; answers once it is recorded.
    pub async fn control_run(&self, session_id: &str, control: Control) -> Result<bool> {
        let Some(handle) = self.run_handle(session_id) else {
            return Err(Error::NotFound(format!(
                "no run is in progress in session {session_id} (`air run --resume {session_id}` continues an ended one)"
            )));
        };
        if let Control::Cancel {
            task_id: Some(task),
            ..
        } = &control
        {
            let session = self.session(session_id).await?;
            let known = session.bus().read(|p, _| p.task(task).is_some());
            if !known {
                return Err(Error::NotFound(format!(
                    "session {session_id} has no task `{task}`"
                )));
            }
        }
        if handle.send(control).await {
            Ok(true)
        } else {
            Err(Error::Refused(format!(
                "not recorded: the run of session {session_id} ended, or what the request was for moved on (the agent ended, the task is no longer failed, blocked or cancelled)"
            )))
        }
    }

    /// The run's permission mode from now on: told to its scheduler while it runs
    /// (which judges later calls by it), else recorded for its next start (a
    /// conversation between turns). Refused for a session without a run.
    pub async fn set_mode(
        &self,
        session_id: &str,
        mode: air_proto::plan::PermissionMode,
        by: Option<String>,
    ) -> Result<bool> {
        let session = self.session(session_id).await?;
        if !session.bus().read(|p, _| p.run.is_some()) {
            return Err(Error::Refused(format!(
                "session {session_id} has no run whose permission mode could change"
            )));
        }
        // No run starts meanwhile: one that starts after reads the change.
        let gate = self.run_gate(session_id);
        let _gate = gate.lock().await;
        if self.run_handle(session_id).is_some() {
            let told = self
                .control_run(
                    session_id,
                    Control::SetMode {
                        mode,
                        by: by.clone(),
                    },
                )
                .await;
            if let Ok(true) = told {
                return Ok(true);
            }
            // It ended meanwhile: recorded for its next start.
        }
        let changed = event(
            session_id,
            &air_proto::payload::RunModeChanged {
                permission_mode: mode,
                by,
            },
        )?;
        session.store().append(changed).await?;
        Ok(true)
    }

    /// Pauses (`pause`) or resumes the run's dispatching, or with a task its running
    /// agent.
    pub async fn set_paused(
        &self,
        session_id: &str,
        task_id: Option<&str>,
        pause: bool,
        by: Option<String>,
    ) -> Result<bool> {
        match task_id {
            Some(task) => self.hold_task(session_id, task, pause, by).await,
            None if pause => self.control_run(session_id, Control::Pause { by }).await,
            None => self.control_run(session_id, Control::Resume { by }).await,
        }
    }

    /// Holds a task's running agent between its steps (`hold`), or lets it go on.
    /// Refused, saying why, when the task has no running agent or is already so.
    pub async fn hold_task(
        &self,
        session_id: &str,
        task_id: &str,
        hold: bool,
        by: Option<String>,
    ) -> Result<bool> {
        let session = self.session(session_id).await?;
        let agent = session.bus().read(|p, _| {
            let task = p.task(task_id)?;
            let agent = task
                .agent_id
                .as_ref()
                .and_then(|a| p.agents.iter().find(|x| &x.id == a))
                .filter(|a| a.status == air_proto::projection::RunStatus::Running);
            Some((task.status, agent.map(|a| (a.id.clone(), a.paused))))
        });
        let what = if hold { "pause" } else { "resume" };
        let agent_id = match agent {
            None => {
                return Err(Error::NotFound(format!(
                    "session {session_id} has no task `{task_id}`"
                )))
            }
            Some((status, None)) => {
                return Err(Error::Refused(format!(
                    "cannot {what} {task_id}: no agent is running it (it is {}){}",
                    status.as_str(),
                    if hold {
                        "; `air pause` holds off new work for the whole run"
                    } else {
                        ""
                    }
                )))
            }
            Some((_, Some((_, paused)))) if paused == hold => {
                return Err(Error::Refused(format!(
                    "{task_id} is {} paused",
                    if hold { "already" } else { "not" }
                )))
            }
            Some((_, Some((agent, _)))) => agent,
        };
        let task_id = Some(task_id.to_string());
        let control = if hold {
            Control::Hold {
                agent_id,
                task_id,
                by,
            }
        } else {
            Control::Release {
                agent_id,
                task_id,
                by,
            }
        };
        self.control_run(session_id, control).await
    }

    /// The runs in progress, at a glance.
    pub async fn run_briefs(&self) -> Vec<air_proto::api::RunBrief> {
        // The runs a scheduler works on, with their agents; then the ones that halted.
        let mut runs: Vec<(String, usize)> = {
            let mut runs = self.runs_lock();
            runs.retain(|_, h| !h.is_done());
            runs.iter()
                .map(|(id, h)| (id.clone(), h.running_agents()))
                .collect()
        };
        for id in self.halted_runs().await {
            if !runs.iter().any(|(r, _)| *r == id) {
                runs.push((id, 0));
            }
        }
        let mut briefs = Vec::new();
        for (id, agents) in runs {
            let Ok(session) = self.session(&id).await else {
                continue;
            };
            let p = session.snapshot();
            let Some(run) = p.run.as_ref() else { continue };
            let ended = p.tasks.iter().filter(|t| t.status.is_terminal()).count();
            briefs.push(air_proto::api::RunBrief {
                session_id: id,
                title: run.title.clone(),
                plan: run.plan.clone(),
                tasks: u32::try_from(p.tasks.len()).unwrap_or(u32::MAX),
                ended: u32::try_from(ended).unwrap_or(u32::MAX),
                running_agents: u32::try_from(agents).unwrap_or(u32::MAX),
                paused: run.paused,
                halted: run.halted.clone(),
            });
        }
        briefs.sort_by(|a, b| a.session_id.cmp(&b.session_id));
        briefs
    }

    /// A person's answer to a permission request. The first answer wins: a request
    /// already answered (by a person or by the run's policy) is refused with a conflict.
    pub async fn respond_permission(
        &self,
        session_id: &str,
        request_id: &str,
        allow: bool,
        reason: Option<String>,
        by: Option<String>,
    ) -> Result<u64> {
        let session = self.session(session_id).await?;
        let (known, asker_gone) = session.bus().read(|p, _| {
            let request = p
                .permission_requests
                .iter()
                .find(|r| r.request.request_id == request_id);
            let gone = request
                .and_then(|r| r.request.agent_id.as_deref())
                .is_some_and(|a| {
                    p.agents
                        .iter()
                        .find(|v| v.id == a)
                        .is_none_or(|v| v.status != air_proto::projection::RunStatus::Running)
                });
            (request.is_some(), gone)
        });
        if asker_gone {
            return Err(Error::Refused(format!(
                "the agent that asked for permission request {request_id} has ended; the answer would reach nobody"
            )));
        }
        if !known {
            // Either answered already or never asked: the store tells which.
            let conn = session.readers().get()?;
            let decided_by: Option<Option<String>> = conn
                .query_row(
                    "SELECT decided_by FROM permission_requests WHERE id = ?1",
                    [request_id],
                    |r| r.get(0),
                )
                .optional()?;
            return Err(match decided_by {
                Some(by) => Error::Refused(format!(
                    "permission request {request_id} was already answered{}",
                    by.map(|b| format!(" by {b}")).unwrap_or_default()
                )),
                None => Error::NotFound(format!(
                    "session {session_id} has no permission request {request_id}"
                )),
            });
        }
        let e = event(
            session_id,
            &air_proto::payload::PermissionDecisionRecorded {
                request_id: Some(request_id.to_string()),
                decision: if allow {
                    air_proto::payload::PermissionDecision::Allow
                } else {
                    air_proto::payload::PermissionDecision::Deny
                },
                decided_by: by.unwrap_or_else(|| "a client".into()),
                scope: Some(air_proto::payload::DecisionScope::Once),
                reason,
            },
        )?;
        // The answer to a confirmation is the scheduler's to fold: it goes through it.
        if request_id.starts_with(crate::scheduler::core::CONFIRM)
            && self.run_handle(session_id).is_some()
        {
            self.control_run(session_id, Control::Record(Box::new(e)))
                .await
                .map_err(|_| {
                    Error::Refused(format!(
                        "permission request {request_id} was answered first, or its run ended"
                    ))
                })?;
            let (session, id) = (session.clone(), request_id.to_string());
            let seq = tokio::task::spawn_blocking(move || -> Result<Option<u64>> {
                let conn = session.readers().get()?;
                Ok(conn
                    .query_row(
                        "SELECT seq FROM events WHERE type = 'permission.decision.recorded' AND json_extract(payload_json, '$.request_id') = ?1",
                        [&id],
                        |r| r.get(0),
                    )
                    .optional()?)
            })
            .await
            .map_err(|e| Error::Internal(format!("reading the answer: {e}")))??;
            return Ok(seq.unwrap_or_default());
        }
        Ok(session.store().append(e).await?.seq)
    }

    /// Runs whose scheduler is going (for idle checks and status).
    pub fn active_runs(&self) -> usize {
        let mut runs = self.runs_lock();
        runs.retain(|_, h| !h.is_done());
        runs.len()
    }

    /// Worker processes running now, over every run.
    pub fn run_workers(&self) -> usize {
        self.runs_lock()
            .values()
            .map(RunHandle::running_agents)
            .sum()
    }

    /// Stops every scheduler (airsd is stopping): workers are killed; the runs are
    /// recovered at the next start.
    pub async fn stop_runs(&self) {
        let handles: Vec<RunHandle> = self.runs_lock().drain().map(|(_, h)| h).collect();
        for h in &handles {
            h.send(Control::Shutdown).await;
        }
        for h in handles {
            if tokio::time::timeout(Duration::from_secs(5), h.wait())
                .await
                .is_err()
            {
                tracing::warn!("a scheduler did not stop within 5 s");
            }
        }
    }

    /// Starts the scheduler of every session whose run has not ended (after a crash or
    /// restart of airsd).
    pub async fn recover_runs(&self) {
        if self.shell.is_none() {
            return;
        }
        let dir = self.paths.sessions();
        let Ok(entries) = std::fs::read_dir(&dir) else {
            return;
        };
        for entry in entries.flatten() {
            let id = entry.file_name().to_string_lossy().into_owned();
            if air_proto::layout::check_session_id(&id).is_err() {
                continue;
            }
            let db = self.paths.session_db(&id);
            if !db.is_file() || !run_unfinished(&db) {
                continue;
            }
            let said = match self
                .continue_run(&id, Some("airsd restart".into()), Default::default(), None)
                .await
            {
                Ok(_) => {
                    tracing::info!(session = %id, "recovered an unfinished run");
                    format!("the unfinished run of session {id} resumed")
                }
                Err(e) => {
                    tracing::error!(session = %id, "cannot recover the run: {e}");
                    format!(
                        "the unfinished run of session {id} could not resume: {e}; `air run --resume {id}` from a shell with the provider's settings continues it"
                    )
                }
            };
            // What a person reads in ~/.air/logs/air.log: said once it is so.
            if let Some(home) = self.shell.as_ref().and_then(|s| s.air_home.as_deref()) {
                crate::ops::userlog::note(home, self.paths.root(), &said);
            }
        }
    }
}

/// Whether a session's last run event says its run is still going.
fn run_unfinished(db: &std::path::Path) -> bool {
    let Ok(conn) = rusqlite::Connection::open_with_flags(
        db,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    ) else {
        return false;
    };
    let last: Option<String> = conn
        .query_row(
            "SELECT type FROM events WHERE type IN (?1, ?2, ?3) ORDER BY seq DESC LIMIT 1",
            [
                ev::RunStarted::TYPE,
                ev::RunCompleted::TYPE,
                ev::RunContinued::TYPE,
            ],
            |r| r.get(0),
        )
        .optional()
        .ok()
        .flatten();
    matches!(
        last.as_deref(),
        Some(ev::RunStarted::TYPE | ev::RunContinued::TYPE)
    )
}

/// The tasks a retry of `asked` runs again: each must be an ended, unfinished task
/// (failed, blocked or cancelled). The hard dependencies they wait for that ended
/// unfinished come along (else they would be blocked again at once), and so do the
/// tasks waiting on any of them (hard or soft) that ended unfinished. In plan order.
fn retry_set<'a>(
    p: &'a air_proto::projection::Projection,
    asked: &[String],
) -> Result<Vec<String>> {
    use air_proto::projection::TaskStatus;
    let unfinished = |s: TaskStatus| {
        matches!(
            s,
            TaskStatus::Failed | TaskStatus::Blocked | TaskStatus::Cancelled
        )
    };
    if asked.is_empty() {
        return Err(Error::Refused(
            "task_ids: name at least one task to retry (or leave it out to retry them all)".into(),
        ));
    }
    let mut set: std::collections::HashSet<&str> = std::collections::HashSet::new();
    for id in asked {
        let Some(t) = p.task(id) else {
            return Err(Error::NotFound(format!(
                "session {} has no task `{id}`",
                p.session_id
            )));
        };
        if !unfinished(t.status) {
            return Err(Error::Refused(format!(
                "{id} is {}: only a failed, blocked or cancelled task can be retried",
                t.status.as_str()
            )));
        }
        set.insert(t.id.as_str());
    }
    // Follows edges from the set to tasks that ended unfinished too, until none is
    // new: `across` names an edge's (from, to) ends.
    let grow = |set: &mut std::collections::HashSet<&'a str>,
                across: &dyn Fn(
        &'a air_proto::projection::EdgeView,
    ) -> Option<(&'a str, &'a str)>| loop {
        let more: Vec<&'a str> = p
            .edges
            .iter()
            .filter_map(across)
            .filter(|(from, _)| set.contains(from))
            .filter_map(|(_, to)| p.task(to))
            .filter(|t| unfinished(t.status) && !set.contains(t.id.as_str()))
            .map(|t| t.id.as_str())
            .collect();
        if more.is_empty() {
            break;
        }
        set.extend(more);
    };
    // What they need first (hard dependencies), then what waits on any of them.
    grow(&mut set, &|e| {
        (e.dependency_type == air_proto::task::DependencyType::Hard)
            .then_some((e.task_id.as_str(), e.depends_on_task_id.as_str()))
    });
    grow(&mut set, &|e| {
        Some((e.depends_on_task_id.as_str(), e.task_id.as_str()))
    });
    Ok(p.tasks
        .iter()
        .filter(|t| set.contains(t.id.as_str()))
        .map(|t| t.id.clone())
        .collect())
}

/// The permissions files: the user's, then the project's over it.
pub(super) fn permissions(
    paths: &ProjectPaths,
    config: &shell::ShellConfig,
) -> Result<PermissionsConfig> {
    let user = match &config.air_home {
        Some(home) => PermissionsConfig::load_file(&home.join("permissions.yaml")),
        None => Ok(PermissionsConfig::default()),
    };
    let project = PermissionsConfig::load_project(&paths.shared().join("permissions.yaml"));
    match (user, project) {
        (Ok(user), Ok(project)) => Ok(user.overridden_by(project)),
        (Err(e), _) | (_, Err(e)) => Err(Error::Refused(format!(
            "cannot run plans until the permissions file is fixed: {e}"
        ))),
    }
}

/// What a run reads from the user's and the project's files before it starts: its
/// PermissionEngine, the sources of its agents' contexts, its backups.
pub(super) struct RunPrep {
    engine: Engine,
    sources: crate::context::Sources,
    backups: air_proto::backup::Backups,
    hooks: crate::scheduler::hooks::Hooks,
    mcp: crate::mcp::Config,
}

impl RunPrep {
    fn read(
        paths: &ProjectPaths,
        run: &RunStarted,
        config: &shell::ShellConfig,
    ) -> Result<RunPrep> {
        let mut permissions = permissions(paths, config)?;
        let mut rules =
            crate::context::Sources::load_rules(paths.root(), &paths.shared().join("rules"))
                .map_err(|e| {
                    Error::Refused(format!(
                        "cannot run plans until the rules file is fixed: {e}"
                    ))
                })?;
        super::capabilities::apply(
            config.air_home.as_deref(),
            paths.root(),
            &mut permissions,
            &mut rules,
        );
        let sources = crate::context::Sources {
            plan_title: run.title.clone(),
            overview: run.overview.clone(),
            rules,
            // A project.json that cannot be read was refused when the daemon started.
            project: paths.read_project().ok().and_then(|p| p.profile),
        };
        let root = crate::scheduler::tooljob::resolved_root(paths.root());
        let engine = Engine::new(
            &root,
            config.home.as_deref(),
            config.air_home.as_deref(),
            run.permission_mode,
            &permissions,
        )
        .map_err(|e| Error::Refused(format!("cannot run plans: permissions: {e}")))?
        .with_path_dirs(config.path.as_deref());
        let git = air_proto::program::find("git", config.path.as_deref(), &[&root]);
        // What the sandbox can do, known before the run's start asks on an async
        // thread (a daemon just started may still be probing it).
        if let Some(exe) = &config.sandbox_exe {
            crate::sandbox::protections(exe);
        }
        // The hooks, as the run starts: a broken file refuses it, naming the place.
        let hooks = crate::scheduler::hooks::Hooks::load(config.air_home.as_deref(), &root)
            .map_err(|e| Error::Refused(format!("cannot run until the hooks are fixed: {e}")))?;
        // The MCP servers: the person's broken file refuses it too.
        let mcp = crate::mcp::Config::load(config.air_home.as_deref(), &root).map_err(|e| {
            Error::Refused(format!(
                "cannot run until the MCP servers' file is fixed: {e}"
            ))
        })?;
        Ok(RunPrep {
            mcp,
            engine,
            sources,
            backups: air_proto::backup::Backups::new(paths.backups()).with_git(git),
            hooks,
        })
    }
}
