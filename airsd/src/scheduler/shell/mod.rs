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
use air_proto::events::{self as ev, Event};
use air_proto::ipc::{AgentStart, ControlMessage, IpcBody, IpcMessage};
use air_proto::layout::ProjectPaths;
use air_proto::payload::{self as p, AgentFailure, RunStarted};
use air_proto::projection::TaskStatus;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot, watch};

use super::core::{fact_of, AgentEnd, Config, Core, Decision, Dispatch, Fact, Refusal};

mod before;
mod compact;
mod control;
mod dispatch;
mod ends;
mod knowledge;
mod memory;
mod mine;
mod queue;
mod records;
mod requirements;
mod revert;
mod side;
mod spaces;
mod worker;

use crate::agents::supervisor::{Exit, Worker, WorkerCommand, WorkerEvent};
use crate::error::{Error, Result};
use crate::session::Session;
pub use records::{recover, Recovered};

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
    /// The user's defaults for runs (`~/.air/config.yaml`).
    pub defaults: air_proto::config::RunDefaults,
    /// How long kept worktrees are kept, and how much disk they may take.
    pub worktree_limits: air_proto::config::WorktreeLimits,
    /// Why the user's configuration could not be read; runs are refused with it.
    pub config_error: Option<String>,
    /// The user's home directory (where credential stores are looked for).
    pub home: Option<PathBuf>,
    /// `~/.air` (or `$AIR_HOME`): the user's permissions.yaml, and air's own files.
    pub air_home: Option<PathBuf>,
    /// The airsd executable, which launches commands under the OS sandbox
    /// (`airsd __sandbox`); without it commands run unsandboxed.
    pub sandbox_exe: Option<PathBuf>,
    /// The `PATH` airsd was started with: where the programs it runs itself (git) are
    /// looked for, in its trusted directories only.
    pub path: Option<std::ffi::OsString>,
}

impl ShellConfig {
    pub fn new(worker: WorkerCommand) -> Self {
        Self {
            worker,
            heartbeat_interval_ms: 5_000,
            tick: Duration::from_millis(200),
            core: Config::default(),
            defaults: Default::default(),
            worktree_limits: Default::default(),
            config_error: None,
            home: std::env::var_os("HOME").map(PathBuf::from),
            air_home: None,
            sandbox_exe: None,
            path: std::env::var_os("PATH"),
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
    /// The run's permission mode from now on (`run.mode_changed`).
    SetMode {
        mode: air_proto::plan::PermissionMode,
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
    /// An event a client asked for that the core folds (a user message, the answer
    /// to a confirmation), recorded by the scheduler so that it is in order with
    /// everything else the run records.
    Record(Box<RuntimeEvent>),
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

/// Everything the loop needs about the session it runs.
pub struct RunContext {
    pub session: Arc<Session>,
    pub paths: ProjectPaths,
    pub project_id: String,
    pub run: RunStarted,
    /// Whether a person who may answer permission requests is attached now.
    pub humans: Arc<dyn Fn() -> bool + Send + Sync>,
    /// The run's PermissionEngine (its mode and the permissions files).
    pub engine: Arc<crate::tools::permission::Engine>,
    /// Where files outside the project are backed up before they change.
    pub backups: Arc<air_proto::backup::Backups>,
    /// What agents' contexts are assembled from besides the task graph.
    pub sources: Arc<crate::context::Sources>,
    /// Each agent's model, resolved before the run started.
    pub models: Arc<crate::agents::models::Models>,
    /// The hooks the run runs at their events.
    pub hooks: Arc<crate::scheduler::hooks::Hooks>,
    /// The MCP servers declared for the project, and the person's trust.
    pub mcp: crate::mcp::Config,
}

/// Starts the loop of a session's run. The core must already hold the recorded facts
/// (a fresh run's or a recovered one's); agents it believes are running are recorded
/// as interrupted first.
pub fn start(ctx: RunContext, config: ShellConfig, core: Core) -> RunHandle {
    let sandbox_exe = config.sandbox_exe.clone().and_then(|exe| {
        let found = crate::sandbox::protections(&exe);
        (found.landlock || found.isolation.is_ok()).then_some((exe, found))
    });
    let launcher = Arc::new(crate::launcher::Launcher::new(
        ctx.engine.root(),
        config.path.as_deref(),
        sandbox_exe.clone().filter(|_| ctx.engine.sandbox()),
        ctx.engine.views(&[], &[], &[]),
    ));
    let proxy = sandbox_exe
        .as_ref()
        .filter(|(_, p)| p.isolation.is_ok() && ctx.engine.sandbox())
        .and_then(|_| match crate::proxy::Proxy::start() {
            Ok(p) => Some(Arc::new(p)),
            Err(e) => {
                tracing::warn!("the network proxy could not start; commands have no network: {e}");
                None
            }
        });
    let net = Arc::new(crate::proxy::NetPolicy::new(
        ctx.engine.allow_domains().to_vec(),
    ));
    // The MCP servers start now, beside the run: the first agent waits for them a
    // while at most.
    let mcp = Arc::new(crate::mcp::Hub::new(
        &ctx.mcp.loaded,
        &ctx.mcp.trust,
        crate::mcp::Launching {
            engine: ctx.engine.clone(),
            sandbox_exe: sandbox_exe.clone(),
            proxy: proxy.clone(),
            net: net.clone(),
            air_home: config.air_home.clone(),
        },
    ));
    mcp.warm();
    let tools = crate::scheduler::tooljob::ToolEnv {
        mcp,
        hooks: ctx.hooks.clone(),
        session: ctx.session.clone(),
        ledger: Arc::new(crate::tools::ReadLedger::default()),
        engine: ctx.engine.clone(),
        backups: ctx.backups.clone(),
        artifacts: Arc::new(crate::artifacts::ArtifactStore::new(
            ctx.paths.artifacts(ctx.session.id()),
            &ctx.project_id,
            ctx.session.id(),
        )),
        proxy,
        net,
        sandbox_exe,
        interrupted: Default::default(),
        launcher,
        build_system: ctx
            .sources
            .project
            .as_ref()
            .and_then(crate::profiles::cpp::tools::profile_build_system),
        test_command: ctx
            .sources
            .project
            .as_ref()
            .and_then(crate::profiles::cpp::tools::profile_test_command),
        background: Default::default(),
    };
    // Where analyses copy the project as it was: made now, so that every command's
    // view has it read-only.
    if let Err(e) = crate::scheduler::tooljob::make_base_dir(ctx.engine.root()) {
        tracing::warn!("cannot make the analyses' copies directory: {e}");
    }
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
        load_read: None,
        worker_tx,
        agents: agents.clone(),
        buffer: Vec::new(),
        folded: 0,
        last_error: HashMap::new(),
        tools,
        drafts: Default::default(),
        watched: Default::default(),
        compactions: HashMap::new(),
        learning: Default::default(),
        checked_before: Default::default(),
        spaces: Default::default(),
        diff_refs: HashMap::new(),
        merges: {
            let (tx, rx) = mpsc::unbounded_channel();
            (tx, Some(rx))
        },
        stop_chain: 0,
    };
    tokio::spawn(async move {
        shell.unhalt().await;
        shell.tell_start();
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
    /// When the machine's load was last read.
    load_read: Option<std::time::Instant>,
    worker_tx: mpsc::Sender<WorkerEvent>,
    agents: Arc<AtomicUsize>,
    /// Events of the current round, committed together by [`Shell::flush`].
    buffer: Vec<RuntimeEvent>,
    /// How many of the buffered events the core has folded already (rounds of pure
    /// decisions, see [`Shell::settle`]).
    folded: usize,
    /// The last error a worker logged, to explain its failure.
    last_error: HashMap<String, String>,
    /// What tool calls need: the read ledger, the PermissionEngine, the backups.
    tools: crate::scheduler::tooljob::ToolEnv,
    /// The messages streaming now, stored as drafts as they go.
    drafts: super::drafts::Drafts,
    /// The requirement files, watched while a plan's work is unfinished.
    watched: requirements::Watched,
    /// The Compactors at work, by their agent id.
    compactions: HashMap<String, compact::Compaction>,
    /// The ExperienceMiner's queue and counters, in a run that learns.
    learning: mine::Learning,
    /// The executors airsd ran their task's check for before they began.
    checked_before: std::collections::HashSet<String>,
    /// The tasks' worktrees, in a git project.
    spaces: spaces::Spaces,
    /// The `diffs/` artifact of each executor's or debugger's attempt, by agent id.
    diff_refs: HashMap<String, String>,
    /// Where the merge queue's jobs send their ends, and (until the loop takes it)
    /// where they arrive.
    merges: (
        mpsc::UnboundedSender<queue::QueueNews>,
        Option<mpsc::UnboundedReceiver<queue::QueueNews>>,
    ),
    /// Turns in a row the person's Stop hooks kept the Main Agent going.
    stop_chain: u32,
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
        // Agents recorded as running have no process any more: airsd restarted. A
        // session where nothing ran yet (a new run's) has nothing of that kind to read.
        let orphans = self.core.running_agents();
        let untouched = self.ctx.session.bus().read(|p, _| {
            p.agents.is_empty() && p.tool_runs.is_empty() && p.command_runs.is_empty()
        });
        if !untouched {
            self.interrupted_side_agents().await?;
            self.interrupt_tool_runs().await?;
            self.tools.interrupted =
                crate::scheduler::tooljob::Interrupted::load(&self.ctx.session);
            self.finish_removals().await;
        }
        for (agent_id, _) in orphans {
            self.record(vec![self.event(&p::AgentFailed {
                agent_id: agent_id.clone(),
                reason: "airsd stopped while the agent ran".into(),
                exit_code: None,
                failure: Some(AgentFailure::Interrupted),
            })?])
            .await?;
            self.expire_requests(Some(&agent_id)).await;
        }
        self.flush().await?;
        // A budget spent before a restart or continuation stops dispatching at once.
        self.observe();
        let mut tick = tokio::time::interval(self.config.tick);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut mirrored = None;
        let (_, mut merge_rx) = mpsc::unbounded_channel();
        if let Some(rx) = self.merges.1.take() {
            merge_rx = rx;
        }
        loop {
            self.settle().await?;
            self.make_ahead();
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
                // What the merge queue told last (its worktrees' removal) is kept.
                while let Ok(news) = merge_rx.try_recv() {
                    self.queue_news(news).await?;
                }
                self.flush().await?;
                return Ok(());
            }
            tokio::select! {
                control = controls.recv() => match control {
                    None | Some((Control::Shutdown, _)) => return Ok(()),
                    Some((control, ack)) => {
                        // Not recorded (nothing left to do it to): no answer, and the
                        // caller says so.
                        let recorded = self.control(control).await?;
                        // Answered once recorded: what follows cannot take it back.
                        if recorded {
                            let _ = ack.send(());
                        }
                        self.settle().await?;
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
                Some(news) = merge_rx.recv() => {
                    self.queue_news(news).await?;
                    self.flush().await?;
                }
                _ = tick.tick() => {
                    self.observe();
                    self.watch_requirements();
                    self.watch_load();
                }
            }
        }
    }

    fn event<E: Event>(&self, event: &E) -> Result<RuntimeEvent> {
        RuntimeEvent::of(self.session_id(), EventSource::scheduler(), event)
            .map_err(|e| Error::Internal(format!("{} payload: {e}", E::TYPE)))
    }

    /// A task status event: the status names the type.
    fn status_event(&self, status: TaskStatus, pl: p::TaskStatusChanged) -> Result<RuntimeEvent> {
        match status {
            TaskStatus::Ready => self.event(&ev::TaskReady(pl)),
            TaskStatus::Running => self.event(&ev::TaskStarted(pl)),
            TaskStatus::Reviewing => self.event(&ev::TaskReviewing(pl)),
            TaskStatus::Debugging => self.event(&ev::TaskDebugging(pl)),
            TaskStatus::Completed => self.event(&ev::TaskCompleted(pl)),
            TaskStatus::Failed => self.event(&ev::TaskFailed(pl)),
            TaskStatus::Blocked => self.event(&ev::TaskBlocked(pl)),
            TaskStatus::Cancelled => self.event(&ev::TaskCancelled(pl)),
            TaskStatus::Pending => Err(Error::Internal(format!(
                "no event sets task {} back to pending",
                pl.task_id
            ))),
        }
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
        let folded = std::mem::take(&mut self.folded);
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
        self.core
            .apply_events(&events[folded.min(events.len())..], now_ms());
        Ok(())
    }

    /// Decides and acts until the core has nothing more to say. The decisions of one
    /// round were all made from the same state, so their events commit together.
    ///
    /// A round of pure decisions (a task created, a task ready: events, nothing done)
    /// is folded into the core without a commit of its own, and its events commit with
    /// the next round's: a conversation's turn is created, made ready and started with
    /// one fsync instead of three. They commit before anything else is done, except the
    /// start of those same tasks (nothing a start reads depends on its own task's
    /// creation being on disk; its worker is started before its events commit, as
    /// always).
    async fn settle(&mut self) -> Result<()> {
        loop {
            let decisions = self.core.decide(now_ms());
            if decisions.is_empty() {
                return self.flush().await;
            }
            let pure = decisions.iter().all(is_pure);
            if !pure && self.folded > 0 && !self.folded_starts_with(&decisions) {
                self.flush().await?;
            }
            for decision in decisions {
                self.act(decision).await?;
            }
            if pure {
                self.fold();
            } else {
                self.flush().await?;
            }
        }
    }

    /// Folds the buffered events the core has not seen into it, without a commit:
    /// [`Shell::flush`] commits them later.
    fn fold(&mut self) {
        self.core
            .apply_events(&self.buffer[self.folded.min(self.buffer.len())..], now_ms());
        self.folded = self.buffer.len();
    }

    /// Whether the folded, uncommitted events may commit with this round's: it only
    /// starts tasks, and those events are all about these tasks.
    fn folded_starts_with(&self, decisions: &[Decision]) -> bool {
        let started: Vec<&str> = decisions
            .iter()
            .filter_map(|d| match d {
                Decision::Dispatch(d) => Some(d.task_id.as_str()),
                _ => None,
            })
            .collect();
        started.len() == decisions.len()
            && self.buffer[..self.folded.min(self.buffer.len())]
                .iter()
                .all(|e| task_of(e).is_some_and(|t| started.contains(&t)))
    }

    async fn act(&mut self, decision: Decision) -> Result<()> {
        match decision {
            Decision::Ready { task_id } => {
                let e = self.event(&ev::TaskReady(status_payload(&task_id, None)))?;
                self.push(vec![e]);
                Ok(())
            }
            Decision::Finish {
                task_id,
                mut status,
                mut reason,
            } => {
                // The person's TaskCompleted hooks may keep it open: their record
                // tells the core.
                if status == TaskStatus::Completed && self.completed_hooks(&task_id).await? {
                    return Ok(());
                }
                // A completed task's change joins the session's integration branch
                // first; one that cannot is not complete.
                if status == TaskStatus::Completed {
                    if let Some((instead, why)) = self.merge_completed(&task_id).await {
                        status = instead;
                        reason = Some(why);
                    }
                }
                let mut pl = status_payload(&task_id, None);
                pl.reason = reason;
                let e = self.status_event(status, pl)?;
                self.push(vec![e]);
                // A turn of the Main Agent that ended: the person's Stop hooks may
                // keep it going.
                if status == TaskStatus::Completed && air_proto::conversation::is_turn(&task_id) {
                    let more = self.stop_hooks(&task_id).await?;
                    self.push(more);
                }
                Ok(())
            }
            Decision::Merge { task_id, reason } => self.merge(task_id, reason).await,
            Decision::CreateTask(spec) => {
                if !air_proto::conversation::in_conversation(&spec.id) {
                    self.tell_hooks(
                        air_proto::hooks::HookEvent::TaskCreated,
                        serde_json::json!({"task_id": spec.id, "task_title": spec.title, "task_description": spec.description}),
                        Some(&spec.id),
                    );
                }
                let e = self.event(&p::TaskCreated { task: *spec })?;
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
                // The worker is told, so its model may finish or ask for more time.
                if let Some(w) = self.workers.get(&agent_id) {
                    w.control(ControlMessage::SoftTimeout {
                        elapsed_ms,
                        hard_timeout_ms,
                    });
                }
                let e = self.event(&p::AgentSoftTimeout {
                    agent_id,
                    task_id: Some(task_id),
                    elapsed_ms,
                    hard_timeout_ms,
                })?;
                self.push(vec![e]);
                Ok(())
            }
            Decision::Cancel { agent_id, reason } => {
                if let Some(w) = self.workers.get(&agent_id) {
                    w.cancel(&reason);
                }
                Ok(())
            }
            Decision::Kill { agent_id, .. } => {
                if let Some(w) = self.workers.get(&agent_id) {
                    w.kill();
                }
                Ok(())
            }
            Decision::AskConfirmation { task_id, title } => {
                self.tell_hooks(
                    air_proto::hooks::HookEvent::Notification,
                    serde_json::json!({"message": format!("air asks whether task {task_id} may start: {title}"), "notification_type": "permission_prompt"}),
                    Some(&task_id),
                );
                let e = self.event(&p::PermissionRequested {
                    request_id: crate::scheduler::core::confirmation_id(&task_id),
                    action: format!("start task {task_id}: {title}"),
                    tool: Some(crate::scheduler::core::TASK_START.into()),
                    tool_run_id: None,
                    agent_id: None,
                    task_id: Some(task_id),
                    risk: None,
                    reason: Some("work the Main Agent hands on starts once you confirm it".into()),
                })?;
                self.push(vec![e]);
                Ok(())
            }
            Decision::Deliver { agent_id, text } => {
                // An agent that ended meanwhile is told nothing; its task's next agent
                // has it among its notes.
                if let Some(w) = self.workers.get(&agent_id) {
                    w.tell(&text);
                }
                Ok(())
            }
            Decision::Patrol { idle_ms, agents } => {
                // Silent agents are killed as stalled by the timers; the patrol records
                // where every agent stands, for people and for the log.
                for a in &agents {
                    tracing::info!(agent = %a.agent_id, silent_ms = a.silent_ms, "patrol");
                }
                let e = self.event(&p::Patrol { idle_ms, agents })?;
                if let Err(e) = self.ctx.session.store().append(e).await {
                    tracing::warn!("cannot record the patrol: {e}");
                }
                Ok(())
            }
            Decision::RunComplete(mut outcome) => {
                self.drop_unused().await;
                outcome.landing = self.land().await;
                let e = self.event(&outcome)?;
                // The report first, from the session with its end applied: a client
                // that sees the run end finds it written.
                self.write_report(&e);
                self.record(vec![e]).await?;
                self.expire_requests(None).await;
                self.tell_hooks(
                    air_proto::hooks::HookEvent::SessionEnd,
                    serde_json::json!({"reason": "run_completed"}),
                    None,
                );
                // What the session taught is mined after it ended: no one waits.
                self.learn_from(mine::Trigger::SessionEnd).await;
                Ok(())
            }
            Decision::StopForBudget { budget, reason } => {
                let e = self.event(&ev::SchedulerStopped(p::SchedulerControl {
                    reason: Some(reason),
                    by: None,
                    budget: Some(budget),
                }))?;
                self.record(vec![e]).await
            }
            Decision::Refuse(refusal) => self.refuse(*refusal).await,
            Decision::Revert { task_id } => self.revert(task_id).await,
            Decision::Concurrency {
                concurrency,
                configured,
                reason,
            } => {
                let e = self.event(&p::ConcurrencyChanged {
                    concurrency,
                    configured,
                    reason,
                })?;
                self.record(vec![e]).await
            }
            Decision::Planning(f) => {
                use crate::scheduler::core::PlanningFact as F;
                let e = match *f {
                    F::Asked(pl) => self.event(&pl)?,
                    F::Settled(pl) => self.event(&pl)?,
                    F::Proposed(pl) => self.event(&*pl)?,
                    F::Answered(pl) => self.event(&pl)?,
                    F::Decided(pl) => self.event(&pl)?,
                    F::Written(pl) => self.event(&pl)?,
                    F::Updated(pl) => self.event(&*pl)?,
                    F::Classified(pl) => self.event(&pl)?,
                    F::Impact(pl) => self.event(&ev::ArchitectureImpactCompleted(*pl))?,
                };
                self.push(vec![e]);
                Ok(())
            }
            Decision::WritePlan {
                task_id,
                requirement,
                proposal,
                requirements,
                run,
            } => {
                let root = self.ctx.paths.root().to_path_buf();
                let written = tokio::task::spawn_blocking(move || {
                    crate::planning::write_plan(&root, &requirement, &proposal, &requirements)
                })
                .await
                .unwrap_or_else(|e| Err(format!("the plan's writer stopped: {e}")));
                let pl = match written {
                    Ok(files) => p::PlanConfirmed {
                        task_id,
                        files,
                        error: None,
                        run,
                    },
                    Err(e) => p::PlanConfirmed {
                        task_id,
                        files: Vec::new(),
                        error: Some(e),
                        run: false,
                    },
                };
                let e = self.event(&pl)?;
                self.push(vec![e]);
                // airsd's own write is not a person's edit.
                self.watched.rebase(self.ctx.paths.root());
                Ok(())
            }
            Decision::EndAgent { agent_id, end } => {
                let event = match end {
                    AgentEnd::Completed { result, exit_code } => {
                        let gate = self.verdict(&agent_id, &result).await;
                        self.event(&p::AgentCompleted {
                            agent_id: agent_id.clone(),
                            exit_code,
                            result: Some(*result),
                            gate,
                        })?
                    }
                    AgentEnd::Failed {
                        failure,
                        reason,
                        exit_code,
                    } => self.event(&p::AgentFailed {
                        agent_id: agent_id.clone(),
                        reason,
                        exit_code,
                        failure: Some(failure),
                    })?,
                };
                self.push(vec![event]);
                self.expire_requests(Some(&agent_id)).await;
                Ok(())
            }
        }
    }

    /// The evidence gate's verdict on an agent's result, from airsd's records of its
    /// attempt (recorded with the result, so that a replay decides as the run did).
    async fn verdict(
        &self,
        agent_id: &str,
        result: &air_proto::result::WorkerResult,
    ) -> Option<air_proto::gate::Verdict> {
        let subject = self.core.gate_subject(agent_id)?;
        let (session, result) = (self.ctx.session.clone(), result.clone());
        let root = self.task_root(&result.task_id);
        let judged = tokio::task::spawn_blocking(move || {
            crate::evidence::judge(&session, &root, &subject, &result)
        })
        .await;
        Some(judged.unwrap_or_else(|e| air_proto::gate::Verdict {
            counted: Vec::new(),
            refused: vec![format!("the evidence gate stopped: {e}")],
            ..Default::default()
        }))
    }

    fn kill_all(&mut self) {
        for w in self.workers.values() {
            w.kill();
        }
        self.agents.store(0, Ordering::Relaxed);
    }
}

/// A decision that only records: nothing is started, written or told.
fn is_pure(d: &Decision) -> bool {
    matches!(d, Decision::Ready { .. } | Decision::CreateTask(_))
}

/// The task an event is about, when it names one.
fn task_of(e: &RuntimeEvent) -> Option<&str> {
    e.payload
        .get("task_id")
        .or_else(|| e.payload.get("task").and_then(|t| t.get("id")))
        .and_then(|t| t.as_str())
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
