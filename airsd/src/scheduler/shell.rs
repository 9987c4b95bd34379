//! The scheduler's async shell: it records the core's decisions as events (durable
//! first), feeds the recorded facts back to the core, and does the side effects:
//! starting, cancelling and killing workers, handling their messages, enforcing the
//! run's budgets, mirroring the state to `.air/local/state/scheduler-state.json`, and
//! writing the run report when the run ends.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use air_proto::context::{AgentRuntimeContext, ContextPack, ContextPackRefs, PermissionTemplate};
use air_proto::event::{AgentType, EventSource, RuntimeEvent};
use air_proto::ipc::{AgentStart, ControlMessage, IpcBody, IpcMessage};
use air_proto::layout::ProjectPaths;
use air_proto::payload::{self as p, AgentFailure, RunCompleted, RunStarted};
use air_proto::projection::TaskStatus;
use air_proto::result::WorkerResult;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot, watch};

use super::core::{Config, Core, Decision, Dispatch, Fact};
use crate::error::{Error, Result};
use crate::session::Session;
use crate::supervisor::{Exit, Worker, WorkerCommand, WorkerEvent};

/// How the shell runs a session's plan.
#[derive(Clone, Debug)]
pub struct ShellConfig {
    pub worker: WorkerCommand,
    /// How often workers are asked to send heartbeats.
    pub heartbeat_interval_ms: u64,
    /// How often timers are checked.
    pub tick: Duration,
    /// The rules' tunables (the run's concurrency replaces `concurrency`).
    pub core: Config,
    /// How long a permission request may wait for a person before it is denied.
    pub ask_timeout: Duration,
    /// The user's defaults for runs (`~/.air/config.yaml`).
    pub defaults: air_proto::config::RunDefaults,
    /// Why the user's configuration could not be read; runs are refused with it.
    pub config_error: Option<String>,
    /// The user's home directory (where credential stores are looked for).
    pub home: Option<PathBuf>,
    /// `~/.air` (or `$AIR_HOME`): the user's permissions.yaml, and air's own files.
    pub air_home: Option<PathBuf>,
    /// The airsd executable, which launches commands under the OS sandbox
    /// (`airsd __sandbox`); without it commands run unsandboxed.
    pub sandbox_exe: Option<PathBuf>,
}

impl ShellConfig {
    pub fn new(worker: WorkerCommand) -> Self {
        Self {
            worker,
            heartbeat_interval_ms: 5_000,
            tick: Duration::from_millis(200),
            core: Config::default(),
            ask_timeout: Duration::from_secs(600),
            defaults: Default::default(),
            config_error: None,
            home: std::env::var_os("HOME").map(PathBuf::from),
            air_home: None,
            sandbox_exe: None,
        }
    }
}

/// Requests to a running scheduler.
#[derive(Debug)]
pub enum Control {
    Cancel {
        task_id: Option<String>,
        reason: String,
        by: Option<String>,
    },
    Pause {
        by: Option<String>,
    },
    Resume {
        by: Option<String>,
    },
    /// Run these ended tasks again while the run goes on (`task.retried`).
    Retry {
        task_ids: Vec<String>,
        by: Option<String>,
    },
    /// Hold a running agent between its steps (`agent.pause` to the worker).
    Hold {
        agent_id: String,
        task_id: Option<String>,
        by: Option<String>,
    },
    /// Let a held agent go on (`agent.resume`).
    Release {
        agent_id: String,
        task_id: Option<String>,
        by: Option<String>,
    },
    /// airsd is stopping: kill the workers and end the loop without recording
    /// anything (the next start recovers the run).
    Shutdown,
}

/// A running scheduler of one session.
#[derive(Clone)]
pub struct RunHandle {
    tx: mpsc::Sender<(Control, oneshot::Sender<()>)>,
    done: watch::Receiver<bool>,
    agents: Arc<AtomicUsize>,
}

impl RunHandle {
    /// Sends a request; true once it is recorded (false: the scheduler has ended).
    pub async fn send(&self, control: Control) -> bool {
        let (ack, acked) = oneshot::channel();
        if self.tx.send((control, ack)).await.is_err() {
            return false;
        }
        acked.await.is_ok()
    }

    /// Whether the loop has ended (run complete, or shut down).
    pub fn is_done(&self) -> bool {
        *self.done.borrow()
    }

    /// Waits for the loop to end.
    pub async fn wait(&self) {
        let mut done = self.done.clone();
        let _ = done.wait_for(|d| *d).await;
    }

    /// Workers running now.
    pub fn running_agents(&self) -> usize {
        self.agents.load(Ordering::Relaxed)
    }
}

/// Event types the core folds, in the order they were recorded, for recovery.
pub const FACT_TYPES: &[&str] = &[
    "run.started",
    "run.completed",
    "run.continued",
    "task.created",
    "task.ready",
    "task.started",
    "task.reviewing",
    "task.debugging",
    "task.completed",
    "task.failed",
    "task.blocked",
    "task.cancelled",
    "agent.completed",
    "agent.failed",
    "agent.soft_timeout",
    "agent.timeout_extended",
    "scheduler.paused",
    "scheduler.resumed",
    "scheduler.stopped",
    "scheduler.cancel_requested",
    "agent.paused",
    "agent.resumed",
    "task.retried",
];

/// The fact a recorded event is, if the core cares about it.
pub fn fact_of(event_type: &str, payload: &Value) -> Option<Fact> {
    fn de<T: serde::de::DeserializeOwned>(v: &Value) -> Option<T> {
        serde_json::from_value(v.clone()).ok()
    }
    Some(match event_type {
        "run.started" => Fact::RunStarted {
            concurrency: de::<RunStarted>(payload)?.concurrency,
        },
        "run.completed" => Fact::RunCompleted(de(payload)?),
        "run.continued" => Fact::Continued {
            task_ids: de::<p::RunContinued>(payload)?.task_ids,
        },
        "task.retried" => Fact::Retried {
            task_ids: de::<p::TasksRetried>(payload)?.task_ids,
        },
        "task.created" => Fact::TaskCreated(Box::new(de::<p::TaskCreated>(payload)?.task)),
        "task.ready" => Fact::TaskReady {
            task_id: de::<p::TaskStatusChanged>(payload)?.task_id,
        },
        "task.started" | "task.reviewing" | "task.debugging" => {
            let pl: p::TaskStatusChanged = de(payload)?;
            Fact::Dispatched {
                task_id: pl.task_id,
                agent_id: pl.agent_id?,
                role: pl.agent_type?,
                attempt: pl.attempt.unwrap_or(1),
            }
        }
        "task.completed" | "task.failed" | "task.blocked" | "task.cancelled" => {
            let pl: p::TaskStatusChanged = de(payload)?;
            Fact::TaskFinished {
                task_id: pl.task_id,
                status: TaskStatus::from_event_type(event_type)?,
                reason: pl.reason,
            }
        }
        "agent.completed" => {
            let pl: p::AgentCompleted = de(payload)?;
            match pl.result {
                Some(result) => Fact::AgentResult {
                    agent_id: pl.agent_id,
                    result: Box::new(result),
                },
                None => Fact::AgentFailed {
                    agent_id: pl.agent_id,
                    failure: AgentFailure::Protocol,
                    reason: "completed without a result".into(),
                },
            }
        }
        "agent.failed" => {
            let pl: p::AgentFailed = de(payload)?;
            Fact::AgentFailed {
                agent_id: pl.agent_id,
                failure: pl.failure.unwrap_or(AgentFailure::Crash),
                reason: pl.reason,
            }
        }
        "agent.heartbeat" => Fact::Heartbeat {
            agent_id: de::<p::AgentHeartbeat>(payload)?.agent_id,
        },
        "agent.soft_timeout" => Fact::SoftTimeoutWarned {
            agent_id: de::<p::AgentSoftTimeout>(payload)?.agent_id,
        },
        "agent.timeout_extended" => {
            let pl: p::TimeoutExtended = de(payload)?;
            Fact::TimeoutExtended {
                agent_id: pl.agent_id,
                extra_ms: pl.extra_ms,
            }
        }
        "scheduler.paused" => Fact::Paused,
        "scheduler.resumed" => Fact::Resumed,
        "agent.paused" => Fact::AgentHeld {
            agent_id: de::<p::AgentPauseChange>(payload)?.agent_id,
        },
        "agent.resumed" => Fact::AgentReleased {
            agent_id: de::<p::AgentPauseChange>(payload)?.agent_id,
        },
        "scheduler.stopped" => Fact::Stopped {
            reason: de::<p::SchedulerControl>(payload)?
                .reason
                .unwrap_or_else(|| "stopped".into()),
        },
        "scheduler.cancel_requested" => {
            let pl: p::CancelRequested = de(payload)?;
            Fact::CancelRequested {
                task_id: pl.task_id,
                reason: pl.reason.unwrap_or_else(|| "cancelled".into()),
                block: pl.block,
            }
        }
        _ => return None,
    })
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

fn event_ms(timestamp: &str) -> u64 {
    air_proto::time::parse(timestamp)
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or_else(now_ms)
}

/// What recovery found in a session's database.
pub struct Recovered {
    pub core: Core,
    pub started: RunStarted,
    pub started_ms: u64,
}

/// Rebuilds the core of a session's run from its recorded events. `None` when the
/// session never started a run.
pub fn recover(session: &Session, config: Config) -> Result<Option<Recovered>> {
    let conn = session.readers().get()?;
    let placeholders = vec!["?"; FACT_TYPES.len()].join(", ");
    let mut stmt = conn.prepare(&format!(
        "SELECT type, timestamp, payload_json FROM events WHERE type IN ({placeholders}) ORDER BY seq"
    ))?;
    let mut rows = stmt.query(rusqlite::params_from_iter(FACT_TYPES.iter()))?;
    let mut core = Core::new(config);
    let mut started: Option<(RunStarted, u64)> = None;
    while let Some(row) = rows.next()? {
        let event_type: String = row.get(0)?;
        let timestamp: String = row.get(1)?;
        let payload_json: String = row.get(2)?;
        let payload: Value = serde_json::from_str(&payload_json)
            .map_err(|e| Error::Internal(format!("stored {event_type} payload: {e}")))?;
        if event_type == "run.started" && started.is_none() {
            if let Ok(run) = serde_json::from_value::<RunStarted>(payload.clone()) {
                started = Some((run, event_ms(&timestamp)));
            }
        }
        // A continuation may replace the budgets; its time budget counts from it.
        if event_type == "run.continued" {
            if let (Some((run, at)), Ok(more)) = (
                started.as_mut(),
                serde_json::from_value::<p::RunContinued>(payload.clone()),
            ) {
                run.budgets = run.budgets.overridden_by(&more.budgets);
                *at = event_ms(&timestamp);
            }
        }
        if let Some(fact) = fact_of(&event_type, &payload) {
            core.apply(&fact, event_ms(&timestamp));
        }
    }
    Ok(started.map(|(started, started_ms)| Recovered {
        core,
        started,
        started_ms,
    }))
}

/// Everything the loop needs about the session it runs.
pub struct RunContext {
    pub session: Arc<Session>,
    pub paths: ProjectPaths,
    pub project_id: String,
    pub run: RunStarted,
    pub started_ms: u64,
    /// Whether a person who may answer permission requests is attached now.
    pub humans: Arc<dyn Fn() -> bool + Send + Sync>,
    /// The run's PermissionEngine (its mode and the permissions files).
    pub engine: Arc<crate::tools::permission::Engine>,
    /// Where files outside the project are backed up before they change.
    pub backups: Arc<air_proto::backup::Backups>,
    /// What agents' contexts are assembled from besides the task graph.
    pub sources: Arc<crate::context::Sources>,
    /// Each agent's model, resolved before the run started.
    pub models: Arc<crate::models::Models>,
}

/// Starts the loop of a session's run. The core must already hold the recorded facts
/// (a fresh run's or a recovered one's); agents it believes are running are recorded
/// as interrupted first.
pub fn start(ctx: RunContext, config: ShellConfig, core: Core) -> RunHandle {
    let tools = super::tooljob::ToolEnv {
        session: ctx.session.clone(),
        ledger: Arc::new(crate::tools::ReadLedger::default()),
        engine: ctx.engine.clone(),
        backups: ctx.backups.clone(),
        artifacts: Arc::new(crate::artifacts::ArtifactStore::new(
            ctx.paths.artifacts(ctx.session.id()),
            &ctx.project_id,
            ctx.session.id(),
        )),
        sandbox_exe: config.sandbox_exe.clone().and_then(|exe| {
            let found = crate::sandbox::protections(&exe);
            (found.landlock || found.isolation.is_ok()).then_some((exe, found))
        }),
        interrupted: Default::default(),
    };
    let (tx, rx) = mpsc::channel(64);
    let (done_tx, done_rx) = watch::channel(false);
    let agents = Arc::new(AtomicUsize::new(0));
    let (worker_tx, worker_rx) = mpsc::channel(config.worker.queue.max(16));
    let mut shell = Shell {
        ctx,
        config,
        core,
        workers: HashMap::new(),
        dispatches: HashMap::new(),
        results: HashMap::new(),
        stops: HashMap::new(),
        worker_tx,
        agents: agents.clone(),
        stopped_budget: false,
        buffer: Vec::new(),
        last_error: HashMap::new(),
        asked: std::collections::HashSet::new(),
        tools,
        drafts: Default::default(),
    };
    tokio::spawn(async move {
        shell.unhalt().await;
        if let Err(e) = shell.run(rx, worker_rx).await {
            tracing::error!(session = %shell.ctx.session.id(), "scheduler stopped: {e}");
            shell.halt(&e).await;
        }
        shell.kill_all();
        done_tx.send_replace(true);
    });
    RunHandle {
        tx,
        done: done_rx,
        agents,
    }
}

struct Shell {
    ctx: RunContext,
    config: ShellConfig,
    core: Core,
    workers: HashMap<String, Worker>,
    dispatches: HashMap<String, Dispatch>,
    /// Results received from workers that have not exited yet.
    results: HashMap<String, WorkerResult>,
    /// Why we stopped a worker (kill, cancel, protocol violation).
    stops: HashMap<String, (AgentFailure, String)>,
    worker_tx: mpsc::Sender<WorkerEvent>,
    agents: Arc<AtomicUsize>,
    stopped_budget: bool,
    /// Events of the current round, committed together by [`Shell::flush`].
    buffer: Vec<RuntimeEvent>,
    /// The last error a worker logged, to explain its failure.
    last_error: HashMap<String, String>,
    /// Permission requests the policy has answered.
    asked: std::collections::HashSet<String>,
    /// What tool calls need: the read ledger, the PermissionEngine, the backups.
    tools: super::tooljob::ToolEnv,
    /// The messages streaming now, stored as drafts as they go.
    drafts: super::drafts::Drafts,
}

impl Shell {
    fn session_id(&self) -> &str {
        self.ctx.session.id()
    }

    async fn run(
        &mut self,
        mut controls: mpsc::Receiver<(Control, oneshot::Sender<()>)>,
        mut worker_rx: mpsc::Receiver<WorkerEvent>,
    ) -> Result<()> {
        // Agents recorded as running have no process any more: airsd restarted.
        let orphans = self.core.running_agents();
        self.interrupt_tool_runs().await?;
        self.tools.interrupted = super::tooljob::Interrupted::load(&self.ctx.session);
        for (agent_id, _) in orphans {
            self.record(vec![self.event(
                "agent.failed",
                &p::AgentFailed {
                    agent_id: agent_id.clone(),
                    reason: "airsd stopped while the agent ran".into(),
                    exit_code: None,
                    failure: Some(AgentFailure::Interrupted),
                },
            )?])
            .await?;
            self.expire_requests(Some(&agent_id)).await;
        }
        // A budget spent before a restart or continuation stops dispatching at once.
        self.budgets().await?;
        let mut tick = tokio::time::interval(self.config.tick);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut mirrored = None;
        loop {
            self.settle().await?;
            // The mirror is rewritten only when the state moved, not on every tick.
            let now_state = (
                self.core.statuses(),
                self.core.running_agents(),
                self.core.is_paused(),
                self.core.is_finished(),
            );
            if mirrored.as_ref() != Some(&now_state) {
                self.mirror();
                mirrored = Some(now_state);
            }
            if self.core.is_finished() && self.workers.is_empty() {
                return Ok(());
            }
            tokio::select! {
                control = controls.recv() => match control {
                    None | Some((Control::Shutdown, _)) => return Ok(()),
                    Some((control, ack)) => {
                        // Not recorded (nothing left to do it to): no answer, and the
                        // caller says so.
                        let recorded = self.control(control).await?;
                        self.settle().await?;
                        if recorded {
                            let _ = ack.send(());
                        }
                    }
                },
                Some(event) = worker_rx.recv() => {
                    // Everything the workers have said so far, then one commit.
                    self.worker_event(event).await?;
                    while let Ok(event) = worker_rx.try_recv() {
                        self.worker_event(event).await?;
                    }
                    self.flush().await?;
                }
                _ = tick.tick() => {
                    self.budgets().await?;
                    self.asks().await?;
                }
            }
        }
    }

    fn event<P: serde::Serialize>(&self, event_type: &str, payload: &P) -> Result<RuntimeEvent> {
        RuntimeEvent::typed(
            event_type,
            self.session_id(),
            EventSource::scheduler(),
            payload,
        )
        .map_err(|e| Error::Internal(format!("{event_type} payload: {e}")))
    }

    /// Records events (durably, atomically, with whatever the round has buffered) and
    /// folds them into the core.
    async fn record(&mut self, events: Vec<RuntimeEvent>) -> Result<()> {
        self.buffer.extend(events);
        self.flush().await
    }

    /// Queues events of this round; [`Shell::flush`] commits them.
    fn push(&mut self, events: Vec<RuntimeEvent>) {
        self.buffer.extend(events);
    }

    /// Commits the buffered events in one transaction (one fsync for a whole round of
    /// decisions), then folds them into the core.
    async fn flush(&mut self) -> Result<()> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        let events = std::mem::take(&mut self.buffer);
        let facts: Vec<Fact> = events
            .iter()
            .filter_map(|e| fact_of(&e.event_type, &e.payload))
            .collect();
        // A failed commit (a busy or full disk) is retried with backoff before the
        // scheduler gives up; the run is then picked up by `air run --resume` or the
        // next start of airsd.
        let mut delay = Duration::from_millis(50);
        let mut attempt = 1;
        loop {
            match self.ctx.session.store().append_batch(events.clone()).await {
                Ok(_) => break,
                Err(e)
                    if attempt < 6
                        && matches!(e, Error::Sqlite(_) | Error::Io { .. } | Error::Pool(_)) =>
                {
                    tracing::warn!(
                        attempt,
                        "cannot record the scheduler's events, retrying: {e}"
                    );
                }
                Err(e) => return Err(e),
            }
            tokio::time::sleep(delay).await;
            delay *= 2;
            attempt += 1;
        }
        let now = now_ms();
        for fact in &facts {
            self.core.apply(fact, now);
        }
        Ok(())
    }

    /// Decides and acts until the core has nothing more to say. The decisions of one
    /// round were all made from the same state, so their events commit together.
    async fn settle(&mut self) -> Result<()> {
        loop {
            let decisions = self.core.decide(now_ms());
            if decisions.is_empty() {
                return self.flush().await;
            }
            for decision in decisions {
                self.act(decision).await?;
            }
            self.flush().await?;
        }
    }

    async fn act(&mut self, decision: Decision) -> Result<()> {
        match decision {
            Decision::Ready { task_id } => {
                let e = self.event("task.ready", &status_payload(&task_id, None))?;
                self.push(vec![e]);
                Ok(())
            }
            Decision::Finish {
                task_id,
                status,
                reason,
            } => {
                let mut pl = status_payload(&task_id, None);
                pl.reason = reason;
                let e = self.event(&format!("task.{}", status.as_str()), &pl)?;
                self.push(vec![e]);
                Ok(())
            }
            Decision::CreateTask(spec) => {
                let e = self.event("task.created", &p::TaskCreated { task: *spec })?;
                self.push(vec![e]);
                Ok(())
            }
            Decision::Dispatch(d) => self.dispatch(*d).await,
            Decision::WarnSoftTimeout {
                agent_id,
                task_id,
                elapsed_ms,
                hard_timeout_ms,
            } => {
                let e = self.event(
                    "agent.soft_timeout",
                    &p::AgentSoftTimeout {
                        agent_id,
                        task_id: Some(task_id),
                        elapsed_ms,
                        hard_timeout_ms,
                    },
                )?;
                self.push(vec![e]);
                Ok(())
            }
            Decision::Cancel { agent_id, reason } => {
                if let Some(w) = self.workers.get(&agent_id) {
                    w.cancel(&reason);
                    self.stops
                        .insert(agent_id, (AgentFailure::Cancelled, reason));
                }
                Ok(())
            }
            Decision::Kill {
                agent_id,
                failure,
                reason,
            } => {
                if let Some(w) = self.workers.get(&agent_id) {
                    w.kill();
                    self.stops.insert(agent_id, (failure, reason));
                }
                Ok(())
            }
            Decision::Patrol { idle_ms, agents } => {
                // Silent agents are killed as stalled by the timers; the patrol records
                // where every agent stands, for people and for the log.
                for a in &agents {
                    tracing::info!(agent = %a.agent_id, silent_ms = a.silent_ms, "patrol");
                }
                let e = self.event("scheduler.patrol", &p::Patrol { idle_ms, agents })?;
                if let Err(e) = self.ctx.session.store().append(e).await {
                    tracing::warn!("cannot record the patrol: {e}");
                }
                Ok(())
            }
            Decision::RunComplete(outcome) => {
                let e = self.event("run.completed", &outcome)?;
                self.record(vec![e]).await?;
                self.expire_requests(None).await;
                self.write_report(&outcome);
                Ok(())
            }
        }
    }

    async fn dispatch(&mut self, d: Dispatch) -> Result<()> {
        let mut status = status_payload(&d.task_id, Some(d.attempt));
        status.agent_id = Some(d.agent_id.clone());
        status.agent_type = Some(d.role);
        let status_type = match d.role {
            AgentType::Reviewer | AgentType::ArchitectureDesigner => "task.reviewing",
            AgentType::Debugger => "task.debugging",
            _ => "task.started",
        };
        let tools = crate::tools::offered(d.role);
        let (mut context, model) = self.assemble(&d, &tools);
        let mut compaction = None;
        if context.summary.compaction.needed {
            let e = self.event(
                "context.compaction.requested",
                &p::CompactionRequested {
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
                },
            )?;
            context.summary.compaction.requested_event_id = Some(e.id.clone());
            compaction = Some(e);
        }
        let summary = context.summary.clone();
        let start = self.start_message(&d, context, tools);
        let stderr = self
            .ctx
            .paths
            .artifacts(self.session_id())
            .join("workers")
            .join(format!("{}.stderr.log", d.agent_id));
        let spawned = Worker::spawn(
            &self.config.worker,
            self.ctx.paths.root(),
            &stderr,
            &start,
            self.worker_tx.clone(),
        );
        let (pid, failure) = match spawned {
            Ok(worker) => {
                let pid = worker.pid;
                self.workers.insert(d.agent_id.clone(), worker);
                (Some(pid), None)
            }
            Err(e) => (None, Some(e.to_string())),
        };
        let mut events = vec![
            self.event(status_type, &status)?,
            self.event(
                "agent.started",
                &p::AgentStarted {
                    agent_id: d.agent_id.clone(),
                    agent_type: d.role,
                    task_id: Some(d.task_id.clone()),
                    pid,
                    model,
                    context: Some(summary),
                },
            )?,
        ];
        events.extend(compaction);
        if let Some(reason) = &failure {
            events.push(self.event(
                "agent.failed",
                &p::AgentFailed {
                    agent_id: d.agent_id.clone(),
                    reason: reason.clone(),
                    exit_code: None,
                    failure: Some(AgentFailure::Spawn),
                },
            )?);
        }
        if failure.is_none() {
            self.dispatches.insert(d.agent_id.clone(), d);
        }
        self.agents.store(self.workers.len(), Ordering::Relaxed);
        self.push(events);
        Ok(())
    }

    /// The agent's starting context (D-046) and its model (`provider/model`), as far
    /// as the run knows it.
    fn assemble(
        &self,
        d: &Dispatch,
        tools: &[air_proto::tool::ToolDefinition],
    ) -> (air_proto::context::AssembledContext, Option<String>) {
        let task_model = d.spec.constraints.model_id.as_deref();
        let choice = self.ctx.models.choice(d.role, task_model);
        let (model_id, budget) = match choice {
            Some(c) => (
                format!("{}/{}", c.provider, c.model),
                crate::context::budget(c.context_window, c.max_output),
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
            },
        );
        let model = choice
            .map(|_| model_id)
            .or_else(|| task_model.map(str::to_string));
        (context, model)
    }

    /// The notes for the agent: the core's, and each call of the task that was
    /// running when airsd stopped (never offered again unsaid).
    fn notes(&self, d: &Dispatch) -> Vec<String> {
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

    fn start_message(
        &self,
        d: &Dispatch,
        context: air_proto::context::AssembledContext,
        tools: Vec<air_proto::tool::ToolDefinition>,
    ) -> IpcMessage {
        let template = match d.role {
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
                assembled: Some(Box::new(context)),
            },
            runtime: AgentRuntimeContext {
                session_id: self.session_id().to_string(),
                project_id: self.ctx.project_id.clone(),
                agent_id: d.agent_id.clone(),
                worktree_path: None,
                permission_template: template,
                agent_type: Some(d.role),
                attempt: Some(d.attempt),
                heartbeat_interval_ms: Some(self.config.heartbeat_interval_ms),
                model: self.ctx.models.flag.clone(),
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

    /// Records a person's request; false when there was nothing to do it to (the run
    /// finished, the agent ended, no task still qualifies).
    async fn control(&mut self, control: Control) -> Result<bool> {
        let held = matches!(control, Control::Hold { .. });
        let e = match control {
            Control::Cancel {
                task_id,
                reason,
                by,
            } => self.event(
                "scheduler.cancel_requested",
                &p::CancelRequested {
                    task_id,
                    reason: Some(reason),
                    by,
                    block: false,
                },
            )?,
            Control::Pause { by } => self.event(
                "scheduler.paused",
                &p::SchedulerControl {
                    by,
                    ..Default::default()
                },
            )?,
            Control::Resume { by } => self.event(
                "scheduler.resumed",
                &p::SchedulerControl {
                    by,
                    ..Default::default()
                },
            )?,
            Control::Hold {
                agent_id,
                task_id,
                by,
            }
            | Control::Release {
                agent_id,
                task_id,
                by,
            } => {
                if !self.workers.contains_key(&agent_id) {
                    // It ended meanwhile: nothing to hold.
                    return Ok(false);
                }
                let e = self.event(
                    if held {
                        "agent.paused"
                    } else {
                        "agent.resumed"
                    },
                    &p::AgentPauseChange {
                        agent_id: agent_id.clone(),
                        task_id,
                        by: by.clone(),
                    },
                )?;
                // Recorded first: every client sees it before the worker acts on it.
                self.record(vec![e]).await?;
                if let Some(worker) = self.workers.get(&agent_id) {
                    if held {
                        worker.pause(&format!(
                            "paused by {}",
                            by.as_deref().unwrap_or("a person")
                        ));
                    } else {
                        worker.resume();
                    }
                }
                return Ok(true);
            }
            Control::Retry { task_ids, by } => {
                // Checked again here: the run may have finished, or a task moved on,
                // since the request was made.
                let task_ids: Vec<String> = task_ids
                    .into_iter()
                    .filter(|t| self.core.reopenable(t))
                    .collect();
                if self.core.is_finished() || task_ids.is_empty() {
                    return Ok(false);
                }
                self.event("task.retried", &p::TasksRetried { task_ids, by })?
            }
            Control::Shutdown => return Ok(true),
        };
        self.record(vec![e]).await?;
        Ok(true)
    }

    /// Event types a worker may publish itself; the rest belong to airsd.
    fn worker_may_send(event_type: &str) -> bool {
        matches!(
            event_type,
            "agent.heartbeat"
                | "agent.timeout_extension.requested"
                | "task.progress"
                | "token.delta"
                | "assistant.message.created"
                | "context.compaction.requested"
                | "context.compaction.completed"
                | "summary.created"
                | "debug.record.created"
                | "memory.candidate.created"
        )
    }

    async fn worker_event(&mut self, event: WorkerEvent) -> Result<()> {
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
                self.stops
                    .entry(agent_id)
                    .or_insert((AgentFailure::Protocol, reason));
                Ok(())
            }
            WorkerEvent::Exited { agent_id, exit } => self.exited(&agent_id, exit).await,
        }
    }

    async fn message(&mut self, agent_id: &str, message: IpcMessage) -> Result<()> {
        if !self.workers.contains_key(agent_id) {
            return Ok(());
        }
        // Anything a worker says shows it is alive; stalls are silences.
        self.core.apply(
            &Fact::Heartbeat {
                agent_id: agent_id.to_string(),
            },
            now_ms(),
        );
        let Some(worker) = self.workers.get(agent_id) else {
            return Ok(());
        };
        match message.body {
            IpcBody::Event(mut event) => {
                if !Self::worker_may_send(&event.event_type) {
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
                // Held as asked: from now its time limits stop counting.
                if event.event_type == "agent.heartbeat"
                    && event.payload["state"].as_str() == Some("PAUSED")
                {
                    self.core.apply(
                        &Fact::Holding {
                            agent_id: agent_id.to_string(),
                        },
                        now_ms(),
                    );
                }
                if event.event_type == "agent.timeout_extension.requested" {
                    let requested = event.payload["extra_ms"].as_u64().unwrap_or(0);
                    let reason = event.payload["reason"].as_str().map(str::to_string);
                    let grant = self.core.extension_grant(agent_id, requested);
                    if grant > 0 {
                        let e = self.event(
                            "agent.timeout_extended",
                            &p::TimeoutExtended {
                                agent_id: agent_id.to_string(),
                                extra_ms: grant,
                                reason,
                            },
                        )?;
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
                    "token.delta" => {
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
                    "assistant.message.created" => {
                        if let Some(m) = event.payload.get("message_id").and_then(Value::as_str) {
                            self.drafts.finished(m);
                        }
                    }
                    _ => {}
                }
                if let Err(e) = self.ctx.session.store().append(event).await {
                    tracing::warn!(agent = agent_id, "a worker's event was refused: {e}");
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
            IpcBody::ToolCall(call) => {
                // Tools run beside the scheduler, never blocking it; each call is
                // recorded (`tool.started` first: the write-ahead record) and answered.
                let Some(d) = self.dispatches.get(agent_id) else {
                    return Ok(());
                };
                let job = super::tooljob::ToolJob {
                    env: self.tools.clone(),
                    worker: worker.clone(),
                    header: message.header.clone(),
                    call,
                    agent_id: agent_id.to_string(),
                    role: d.role,
                    task_id: d.task_id.clone(),
                    scope: d.spec.scope.clone(),
                };
                tokio::spawn(job.run());
                Ok(())
            }
            IpcBody::WorkerResult(result) => {
                let expected = self.dispatches.get(agent_id);
                let mismatch = match expected {
                    Some(d) if result.task_id != d.task_id => Some(format!(
                        "the result names task `{}`, but this agent works on `{}`",
                        result.task_id, d.task_id
                    )),
                    Some(d) if result.agent_type != d.role => Some(format!(
                        "the result is an {} result, but this agent is a {}",
                        result.agent_type.as_str(),
                        d.role.as_str()
                    )),
                    _ if result.agent_id != agent_id => {
                        Some(format!("the result names agent `{}`", result.agent_id))
                    }
                    _ => None,
                };
                if let Some(reason) = mismatch {
                    self.stops
                        .insert(agent_id.to_string(), (AgentFailure::Protocol, reason));
                    worker.kill();
                    return Ok(());
                }
                self.results.insert(agent_id.to_string(), result);
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

    async fn exited(&mut self, agent_id: &str, exit: Exit) -> Result<()> {
        self.keep_stderr(agent_id)?;
        self.tools.ledger.forget(agent_id);
        self.drafts.agent_ended(agent_id);
        self.workers.remove(agent_id);
        self.agents.store(self.workers.len(), Ordering::Relaxed);
        let result = self.results.remove(agent_id);
        let stop = self.stops.remove(agent_id);

        self.dispatches.remove(agent_id);
        let logged = self.last_error.get(agent_id).cloned();
        let event = match (result, stop) {
            (_, Some((AgentFailure::Cancelled, reason))) => self.event(
                "agent.failed",
                &p::AgentFailed {
                    agent_id: agent_id.to_string(),
                    reason,
                    exit_code: exit.code,
                    failure: Some(AgentFailure::Cancelled),
                },
            )?,
            (Some(result), Some((AgentFailure::Timeout | AgentFailure::Stalled, _))) => self
                .event(
                    "agent.completed",
                    &p::AgentCompleted {
                        agent_id: agent_id.to_string(),
                        exit_code: exit.code,
                        result: Some(result),
                    },
                )?,
            (Some(result), None) if exit.code == Some(0) => self.event(
                "agent.completed",
                &p::AgentCompleted {
                    agent_id: agent_id.to_string(),
                    exit_code: exit.code,
                    result: Some(result),
                },
            )?,
            (_, Some((failure, reason))) => self.event(
                "agent.failed",
                &p::AgentFailed {
                    agent_id: agent_id.to_string(),
                    reason: match &logged {
                        Some(said) => format!("{reason} ({exit}); it said: {said}"),
                        None => format!("{reason} ({exit})"),
                    },
                    exit_code: exit.code,
                    failure: Some(failure),
                },
            )?,
            (_, None) => {
                let (failure, what) = match exit.code {
                    Some(0) => (
                        AgentFailure::Protocol,
                        "exited without sending a result".to_string(),
                    ),
                    Some(2) => (
                        AgentFailure::Protocol,
                        "startup or protocol error (exit code 2)".into(),
                    ),
                    Some(3) => (
                        AgentFailure::Permission,
                        "permission error (exit code 3)".into(),
                    ),
                    Some(4) => (
                        AgentFailure::Crash,
                        "exited as cancelled (exit code 4) unasked".into(),
                    ),
                    Some(5) => (
                        AgentFailure::Timeout,
                        "gave up at its hard timeout (exit code 5)".into(),
                    ),
                    _ => (AgentFailure::Crash, format!("crashed ({exit})")),
                };
                let tail = self
                    .last_error
                    .remove(agent_id)
                    .or_else(|| self.stderr_tail(agent_id));
                let reason = match tail {
                    Some(line) => format!("{what}: {line}"),
                    None => what,
                };
                self.event(
                    "agent.failed",
                    &p::AgentFailed {
                        agent_id: agent_id.to_string(),
                        reason,
                        exit_code: exit.code,
                        failure: Some(failure),
                    },
                )?
            }
        };
        self.last_error.remove(agent_id);
        self.push(vec![event]);
        self.expire_requests(Some(agent_id)).await;
        Ok(())
    }

    fn stderr_path(&self, agent_id: &str) -> PathBuf {
        self.ctx
            .paths
            .artifacts(self.session_id())
            .join("workers")
            .join(format!("{agent_id}.stderr.log"))
    }

    /// A worker's stderr becomes an artifact of the session when it wrote anything;
    /// an empty file is removed.
    fn keep_stderr(&mut self, agent_id: &str) -> Result<()> {
        let path = self.stderr_path(agent_id);
        let size = match std::fs::metadata(&path) {
            Ok(m) => m.len(),
            Err(_) => return Ok(()),
        };
        if size == 0 {
            let _ = std::fs::remove_file(&path);
            return Ok(());
        }
        let rel = format!("workers/{agent_id}.stderr.log");
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
        let e = self.event(
            "artifact.created",
            &p::ArtifactCreated {
                artifact: stored.artifact,
                path: Some(format!("workers/{agent_id}.stderr.log")),
                original_name: Some("stderr".into()),
                task_id,
                agent_id: Some(agent_id.to_string()),
                tool_run_id: None,
                command_run_id: None,
                entity_type: Some("worker_stderr".into()),
                entity_id: None,
            },
        )?;
        self.push(vec![e]);
        Ok(())
    }

    /// The last non-empty line a worker wrote to stderr.
    fn stderr_tail(&self, agent_id: &str) -> Option<String> {
        let text = std::fs::read(self.stderr_path(agent_id)).ok()?;
        let from = text.len().saturating_sub(4096);
        let tail = String::from_utf8_lossy(&text[from..]).into_owned();
        tail.lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .map(|l| l.chars().take(300).collect())
    }

    /// The scheduler stops without ending the run (the session cannot be written, or
    /// an error it cannot go past): clients are told why at once, by an ephemeral
    /// `run.halted` that needs no write. Nothing recorded is lost; `air run --resume`
    /// goes on from the record.
    async fn halt(&self, e: &Error) {
        let session = &self.ctx.session;
        let db = self.ctx.paths.session_db(session.id());
        let reason = match e.storage(&db) {
            Some(place) => format!(
                "{place}: the scheduler stopped and its agents were ended; nothing recorded was lost. Free the space (or make it writable), then `air run --resume {}`",
                session.id()
            ),
            None => format!(
                "the scheduler stopped: {e}; `air run --resume {}` starts it again",
                session.id()
            ),
        };
        if let Ok(ev) = self.event(
            "run.halted",
            &p::RunHalted {
                reason: Some(reason),
            },
        ) {
            let _ = session.store().append(ev).await;
        }
    }

    /// A run that had halted is going again.
    async fn unhalt(&self) {
        let halted = self
            .ctx
            .session
            .bus()
            .read(|p, _| p.run.as_ref().is_some_and(|r| r.halted.is_some()));
        if halted {
            if let Ok(ev) = self.event("run.halted", &p::RunHalted { reason: None }) {
                let _ = self.ctx.session.store().append(ev).await;
            }
        }
    }

    /// Tool and command runs that were running when airsd stopped are marked
    /// interrupted; nothing re-runs them.
    async fn interrupt_tool_runs(&mut self) -> Result<()> {
        let (tools, commands) = {
            let conn = self.ctx.session.readers().get()?;
            let ids = |sql: &str| -> Result<Vec<String>> {
                let mut stmt = conn.prepare(sql)?;
                let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
                Ok(rows.collect::<std::result::Result<Vec<_>, _>>()?)
            };
            (
                ids("SELECT id FROM tool_runs WHERE status = 'running' ORDER BY seq")?,
                ids("SELECT id FROM command_runs WHERE status = 'running' ORDER BY seq")?,
            )
        };
        let mut events = Vec::new();
        for id in commands {
            events.push(self.event(
                "command.failed",
                &serde_json::json!({ "command_run_id": id, "error": "interrupted: airsd stopped while it ran" }),
            )?);
        }
        for id in tools {
            events.push(self.event(
                "tool.failed",
                &serde_json::json!({ "tool_run_id": id, "error": super::tooljob::INTERRUPTED }),
            )?);
        }
        if !events.is_empty() {
            self.record(events).await?;
        }
        Ok(())
    }

    /// Answers permission requests nobody is there to answer, by the run's `on_ask`
    /// policy: `deny` refuses (the agent is told and adapts), `fail` refuses and ends the
    /// task as blocked, `queue` waits for a person (`air approve`, the TUI). Whatever the
    /// policy, a request older than the ask timeout is denied: a run never waits
    /// forever, and never allows what nobody allowed.
    async fn asks(&mut self) -> Result<()> {
        let pending = self
            .ctx
            .session
            .bus()
            .read(|p, _| p.permission_requests.clone());
        if pending.is_empty() {
            return Ok(());
        }
        let humans = (self.ctx.humans)();
        let timeout = self.config.ask_timeout;
        let policy = self.ctx.run.on_ask;
        for request in pending {
            let id = request.request.request_id.clone();
            if self.asked.contains(&id) {
                continue;
            }
            let age = air_proto::time::parse(&request.requested_at)
                .and_then(|t| t.elapsed().ok())
                .unwrap_or_default();
            let reason = if age >= timeout {
                format!(
                    "nobody answered within {}; denied",
                    humantime::format_duration(timeout)
                )
            } else if humans {
                continue;
            } else {
                match policy {
                    air_proto::plan::OnAsk::Queue => continue,
                    air_proto::plan::OnAsk::Deny => {
                        "nobody is attached to answer, and the run's policy is on_ask=deny".into()
                    }
                    air_proto::plan::OnAsk::Fail => "nobody is attached to answer, and the run's policy is on_ask=fail: the task is blocked".into(),
                }
            };
            let mut events = vec![self.event(
                "permission.decision.recorded",
                &p::PermissionDecisionRecorded {
                    request_id: Some(id.clone()),
                    decision: p::PermissionDecision::Deny,
                    decided_by: "policy".into(),
                    scope: Some(p::DecisionScope::Once),
                    reason: Some(reason),
                },
            )?];
            // Under `fail` the task ends blocked, whether the request was refused at
            // once or at the timeout.
            let task_id = request.request.task_id.clone().or_else(|| {
                let agent = request.request.agent_id.as_deref()?;
                self.dispatches.get(agent).map(|d| d.task_id.clone())
            });
            if let (air_proto::plan::OnAsk::Fail, Some(task_id)) = (policy, task_id) {
                events.push(self.event(
                    "scheduler.cancel_requested",
                    &p::CancelRequested {
                        task_id: Some(task_id),
                        reason: Some(format!(
                            "permission to {} was needed and nobody gave it (on_ask=fail)",
                            request.request.action
                        )),
                        by: Some("policy".into()),
                        block: true,
                    },
                )?);
            }
            let facts: Vec<Fact> = events
                .iter()
                .filter_map(|e| fact_of(&e.event_type, &e.payload))
                .collect();
            // One transaction: a person who answered first makes it fail as a
            // conflict (the first answer wins), and then nothing is blocked either.
            match self.ctx.session.store().append_batch(events).await {
                Ok(_) => {
                    self.asked.insert(id);
                    let now = now_ms();
                    for fact in &facts {
                        self.core.apply(fact, now);
                    }
                }
                Err(e) if e.kind() == air_proto::error::ErrorKind::Conflict => {
                    self.asked.insert(id);
                }
                Err(e) => tracing::warn!(request = %id, "cannot answer by the policy yet: {e}"),
            }
        }
        Ok(())
    }

    /// Closes the pending permission requests of agents that ended (or of every agent,
    /// when the run ends): nobody can use the answer any more. These closures are not
    /// denials and do not count as such.
    async fn expire_requests(&mut self, agent: Option<&str>) {
        let pending = self.ctx.session.bus().read(|p, _| {
            p.permission_requests
                .iter()
                .filter(|r| agent.is_none() || r.request.agent_id.as_deref() == agent)
                .map(|r| r.request.request_id.clone())
                .collect::<Vec<_>>()
        });
        for id in pending {
            let Ok(e) = self.event(
                "permission.decision.recorded",
                &p::PermissionDecisionRecorded {
                    request_id: Some(id.clone()),
                    decision: p::PermissionDecision::Deny,
                    decided_by: p::EXPIRED.into(),
                    scope: Some(p::DecisionScope::Once),
                    reason: Some("the agent that asked has ended".into()),
                },
            ) else {
                continue;
            };
            self.asked.insert(id.clone());
            if let Err(e) = self.ctx.session.store().append(e).await {
                tracing::info!(request = %id, "not expired: {e}");
            }
        }
    }

    /// Stops dispatching when a budget of the run is spent.
    async fn budgets(&mut self) -> Result<()> {
        if self.stopped_budget || self.core.is_finished() {
            return Ok(());
        }
        let budgets = &self.ctx.run.budgets;
        let mut spent: Option<(String, String)> = None;
        if let Some(max) = budgets.max_time_ms {
            let elapsed = now_ms().saturating_sub(self.ctx.started_ms);
            if elapsed >= max {
                spent = Some((
                    "max_time".into(),
                    format!(
                        "the time budget ({}) ran out",
                        humantime::format_duration(Duration::from_millis(max))
                    ),
                ));
            }
        }
        if spent.is_none() && (budgets.max_tokens.is_some() || budgets.max_cost.is_some()) {
            let counters = self.ctx.session.bus().read(|p, _| p.counters.clone());
            let tokens = counters.input_tokens.saturating_add(counters.output_tokens);
            if let Some(max) = budgets.max_tokens {
                if tokens >= max {
                    spent = Some((
                        "max_tokens".into(),
                        format!("the token budget ({max}) ran out"),
                    ));
                }
            }
            if let Some(max) = budgets.max_cost {
                let cost = counters.cost_micro_usd as f64 / 1e6;
                if cost >= max {
                    spent = Some((
                        "max_cost".into(),
                        format!("the cost budget (${max:.2}) ran out"),
                    ));
                }
            }
        }
        if let Some((budget, reason)) = spent {
            self.stopped_budget = true;
            let e = self.event(
                "scheduler.stopped",
                &p::SchedulerControl {
                    reason: Some(reason),
                    by: None,
                    budget: Some(budget),
                },
            )?;
            self.record(vec![e]).await?;
        }
        Ok(())
    }

    /// Mirrors the scheduler's state to `.air/local/state/scheduler-state.json` (seed
    /// 001 §4.3), for people and tools; recovery reads the database, not this file.
    fn mirror(&self) {
        let state = serde_json::json!({
            "session_id": self.session_id(),
            "updated_at": air_proto::time::now_iso(),
            "finished": self.core.is_finished(),
            "paused": self.core.is_paused(),
            "tasks": self.core.statuses().into_iter().map(|(id, s)| serde_json::json!({ "id": id, "status": s })).collect::<Vec<_>>(),
            "agents": self.core.running_agents().into_iter().map(|(a, t)| serde_json::json!({ "agent_id": a, "task_id": t })).collect::<Vec<_>>(),
        });
        let path = self.ctx.paths.state().join("scheduler-state.json");
        if let Ok(bytes) = serde_json::to_vec_pretty(&state) {
            if let Err(e) = air_proto::layout::write_atomic(&path, &bytes) {
                tracing::warn!("cannot write {}: {e}", path.display());
            }
        }
    }

    /// Writes `reports/run-report.json` in the session's artifacts.
    fn write_report(&self, outcome: &RunCompleted) {
        let snapshot = self.ctx.session.snapshot();
        let Some(report) = air_proto::report::RunReport::from_projection(&snapshot) else {
            return;
        };
        let _ = outcome;
        let path = self
            .ctx
            .paths
            .artifacts(self.session_id())
            .join("reports")
            .join("run-report.json");
        let written = path
            .parent()
            .map(std::fs::create_dir_all)
            .transpose()
            .map_err(|e| e.to_string())
            .and_then(|_| serde_json::to_vec_pretty(&report).map_err(|e| e.to_string()))
            .and_then(|bytes| {
                air_proto::layout::write_atomic(&path, &bytes).map_err(|e| e.to_string())
            });
        if let Err(e) = written {
            tracing::warn!("cannot write {}: {e}", path.display());
        }
    }

    fn kill_all(&mut self) {
        for w in self.workers.values() {
            w.kill();
        }
        self.agents.store(0, Ordering::Relaxed);
    }
}

fn status_payload(task_id: &str, attempt: Option<u32>) -> p::TaskStatusChanged {
    p::TaskStatusChanged {
        task_id: task_id.to_string(),
        attempt,
        ..Default::default()
    }
}

/// Where a session's run report is.
pub fn report_path(paths: &ProjectPaths, session_id: &str) -> PathBuf {
    paths
        .artifacts(session_id)
        .join("reports")
        .join("run-report.json")
}
