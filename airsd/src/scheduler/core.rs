//! The scheduler's deterministic core: facts in, decisions out, no I/O.
//!
//! State changes only by [`Core::apply`] of a [`Fact`], and every fact is a durable
//! event of the session (the shell records a decision's event first, then applies it).
//! So the state after a crash is the fold of the recorded facts, and recovery is a
//! replay. [`Core::decide`] reads the state and the clock and says what should happen
//! next; it changes only transient bookkeeping (what it has already asked for), never
//! the recorded state.
//!
//! The rules are seed 001 §5.2 (flow), §8.2 (evidence gates), §4.3 (anti-stall) and
//! D-008 (heartbeats, repeated failures), written out in `docs/scheduler.md`.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use air_proto::event::AgentType;
use air_proto::payload::{AgentFailure, PatrolEntry, RunCompleted, RunOutcome};
use air_proto::projection::TaskStatus;
use air_proto::result::{
    ConsultDecision, ConsultOutput, DebuggerOutput, FollowUpType, ReviewDecision, ReviewerOutput,
    WorkerResult, WorkerStatus,
};
use air_proto::task::{
    Constraints, ContextRefs, Contracts, DependencyType, TaskScope, TaskSpec, TaskType,
    Verification,
};

use super::gate;

/// Tunables of the rules. The defaults are the seeds' numbers.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// Most agents running at once.
    pub concurrency: u32,
    /// A running agent silent this long is killed as stalled.
    pub stall_ms: u64,
    /// With nothing happening for this long, every running agent is checked.
    pub patrol_ms: u64,
    /// Consecutive rejections (by the reviewer or the evidence gate) that are
    /// re-dispatched automatically; one more escalates.
    pub auto_rejections: u32,
    /// The same failure this many times for one task escalates (D-008).
    pub same_failure_limit: u32,
    /// Milestone reviews of one phase that may request changes before escalating.
    pub milestone_rounds: u32,
    /// Most extra time granted to one agent, as a share of its hard timeout (1 = 100 %).
    pub max_extension_ratio: u32,
    /// Before a task ends blocked or failed because its attempts ran out (rejections,
    /// the same failure again, the retry budget), consult the Architecture Designer
    /// once: it may grant one more attempt with its advice.
    pub consult: bool,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            concurrency: 4,
            stall_ms: 120_000,
            patrol_ms: 600_000,
            auto_rejections: 2,
            same_failure_limit: 3,
            milestone_rounds: 2,
            max_extension_ratio: 1,
            consult: true,
        }
    }
}

/// A recorded fact: each is one durable event (or, for heartbeats, an ephemeral one the
/// core needs only while the agent lives).
#[derive(Clone, Debug, PartialEq)]
pub enum Fact {
    RunStarted {
        concurrency: u32,
    },
    TaskCreated(Box<TaskSpec>),
    TaskReady {
        task_id: String,
    },
    Dispatched {
        task_id: String,
        agent_id: String,
        role: AgentType,
        attempt: u32,
    },
    AgentResult {
        agent_id: String,
        result: Box<WorkerResult>,
    },
    AgentFailed {
        agent_id: String,
        failure: AgentFailure,
        reason: String,
    },
    TaskFinished {
        task_id: String,
        status: TaskStatus,
        reason: Option<String>,
    },
    Heartbeat {
        agent_id: String,
    },
    SoftTimeoutWarned {
        agent_id: String,
    },
    TimeoutExtended {
        agent_id: String,
        extra_ms: u64,
    },
    Paused,
    Resumed,
    /// A person held a running agent between its steps (`agent.paused`): its time
    /// limits stop counting.
    AgentHeld {
        agent_id: String,
    },
    /// It goes on (`agent.resumed`): its limits move by the time it was held.
    AgentReleased {
        agent_id: String,
    },
    /// The worker says it is holding (a `PAUSED` heartbeat, after the step under way
    /// when the hold was asked): from here its limits stop counting.
    Holding {
        agent_id: String,
    },
    Stopped {
        reason: String,
    },
    CancelRequested {
        task_id: Option<String>,
        reason: String,
        /// End the task as blocked rather than cancelled (a permission request the
        /// run's policy turned into a failure).
        block: bool,
    },
    RunCompleted(RunCompleted),
    /// An ended run goes on: these tasks start over as pending, with fresh budgets.
    Continued {
        task_ids: Vec<String>,
    },
    /// While the run goes on, these ended tasks start over as pending (a person asked).
    Retried {
        task_ids: Vec<String>,
    },
}

/// What the core wants done. The shell records the matching event (which comes back as
/// a [`Fact`]) and performs the side effect.
#[derive(Clone, Debug, PartialEq)]
pub enum Decision {
    Ready {
        task_id: String,
    },
    Dispatch(Box<Dispatch>),
    Finish {
        task_id: String,
        status: TaskStatus,
        reason: Option<String>,
    },
    CreateTask(Box<TaskSpec>),
    WarnSoftTimeout {
        agent_id: String,
        task_id: String,
        elapsed_ms: u64,
        hard_timeout_ms: u64,
    },
    /// Ask the worker to stop (`agent.cancel`), killing it after a grace period.
    Cancel {
        agent_id: String,
        reason: String,
    },
    /// Kill the worker's process group now.
    Kill {
        agent_id: String,
        failure: AgentFailure,
        reason: String,
    },
    Patrol {
        idle_ms: u64,
        agents: Vec<PatrolEntry>,
    },
    RunComplete(RunCompleted),
}

/// An agent to start.
#[derive(Clone, Debug, PartialEq)]
pub struct Dispatch {
    pub task_id: String,
    pub agent_id: String,
    pub role: AgentType,
    /// The executor attempt this belongs to (1-based).
    pub attempt: u32,
    pub spec: TaskSpec,
    /// What the agent must know from before: review findings, the debugger's analysis,
    /// why the previous attempt ended.
    pub notes: Vec<String>,
    /// The executor result under review or being debugged.
    pub previous: Option<WorkerResult>,
}

/// What is to happen next to a task.
#[derive(Clone, Debug, PartialEq)]
enum Next {
    Nothing,
    Dispatch(AgentType),
    Finish(TaskStatus, Option<String>),
}

#[derive(Clone, Debug)]
struct TaskState {
    spec: TaskSpec,
    status: TaskStatus,
    attempt: u32,
    retries_used: u32,
    rejections: u32,
    reviewer_failures: u32,
    /// The phase a milestone-review task reviews.
    milestone_of: Option<String>,
    milestone_approved: bool,
    next: Next,
    agent: Option<String>,
    under_review: Option<WorkerResult>,
    notes: Vec<String>,
    failures: HashMap<String, u32>,
    /// Why and how the task is to end early (cancelled, or blocked by the ask policy).
    cancel: Option<(String, TaskStatus)>,
    started_by_role: HashMap<AgentType, u32>,
    /// Transient: a decision for this task is out and its fact has not come back.
    in_flight: bool,
    /// The Architecture Designer was consulted about this task (once at most).
    consulted: bool,
    /// How the task ends unless the consulted Architecture Designer grants a retry.
    escalation: Option<(TaskStatus, String)>,
}

#[derive(Clone, Debug)]
struct AgentRun {
    task: usize,
    role: AgentType,
    started_ms: u64,
    last_seen_ms: u64,
    soft_deadline_ms: u64,
    hard_deadline_ms: u64,
    hard_timeout_ms: u64,
    extended_ms: u64,
    warned: bool,
    /// A person asked for it to be held (`agent.paused`).
    hold_asked: bool,
    /// Holding since then (its worker said so), its limits stopped.
    held_since: Option<u64>,
    /// Time held in all, which its limits do not count.
    held_ms: u64,
    /// Transient: a cancel or kill was asked for.
    stopping: bool,
}

/// The scheduler state.
#[derive(Clone, Debug)]
pub struct Core {
    config: Config,
    tasks: Vec<TaskState>,
    index: HashMap<String, usize>,
    agents: BTreeMap<String, AgentRun>,
    /// Follow-up tasks a milestone review asked for, until their `task.created` comes.
    to_create: Vec<TaskSpec>,
    started: bool,
    paused: bool,
    stopped: Option<String>,
    cancelled: Option<String>,
    finished: bool,
    last_activity_ms: u64,
    /// Transient: the run-complete decision is out.
    completing: bool,
}

/// Suffix of the id of a phase's milestone-review tasks: `<phase>:milestone-<n>`.
/// Plan ids cannot contain `:`, so these never collide with a plan's tasks.
const MILESTONE: &str = ":milestone-";

fn is_terminal(status: TaskStatus) -> bool {
    matches!(
        status,
        TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Blocked | TaskStatus::Cancelled
    )
}

fn in_progress(status: TaskStatus) -> bool {
    matches!(
        status,
        TaskStatus::Running | TaskStatus::Reviewing | TaskStatus::Debugging
    )
}

/// A short, stable signature of a failure, so that repeats can be counted (D-008):
/// digits vary between runs (pids, durations, line numbers), so they are dropped.
fn signature(kind: &str, reason: &str) -> String {
    let text: String = reason
        .chars()
        .filter(|c| !c.is_ascii_digit())
        .take(160)
        .collect();
    format!("{kind}: {}", text.trim())
}

impl Core {
    pub fn new(config: Config) -> Self {
        Self {
            config,
            tasks: Vec::new(),
            index: HashMap::new(),
            agents: BTreeMap::new(),
            to_create: Vec::new(),
            started: false,
            paused: false,
            stopped: None,
            cancelled: None,
            finished: false,
            last_activity_ms: 0,
            completing: false,
        }
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Whether the run has ended (`run.completed` recorded).
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// Whether a task can be tried again: it ended unfinished and no agent is on it.
    pub fn reopenable(&self, task_id: &str) -> bool {
        self.index.get(task_id).is_some_and(|&i| {
            let t = &self.tasks[i];
            t.agent.is_none()
                && matches!(
                    t.status,
                    TaskStatus::Failed | TaskStatus::Blocked | TaskStatus::Cancelled
                )
        })
    }

    pub fn is_paused(&self) -> bool {
        self.paused
    }

    /// Agents the core believes are running, with their task ids.
    pub fn running_agents(&self) -> Vec<(String, String)> {
        self.agents
            .iter()
            .map(|(id, a)| (id.clone(), self.tasks[a.task].spec.id.clone()))
            .collect()
    }

    /// A task's status, if the task exists.
    pub fn status(&self, task_id: &str) -> Option<TaskStatus> {
        self.index.get(task_id).map(|&i| self.tasks[i].status)
    }

    /// Tasks that did not complete (what continuing an ended run would reopen).
    pub fn unfinished(&self) -> Vec<String> {
        self.tasks
            .iter()
            .filter(|t| t.status != TaskStatus::Completed && t.agent.is_none())
            .map(|t| t.spec.id.clone())
            .collect()
    }

    /// Every task with its status, in creation order.
    /// The tasks next to `task_id` in the graph: those it depends on (with their
    /// accepted results when the run holds them) and those that depend on it.
    pub fn neighbours(&self, task_id: &str) -> Vec<crate::context::Neighbour> {
        use crate::context::{Neighbour, Relation};
        let Some(t) = self.index.get(task_id).map(|&i| &self.tasks[i]) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for d in &t.spec.dependencies {
            if let Some(n) = self
                .index
                .get(&d.depends_on_task_id)
                .map(|&i| &self.tasks[i])
            {
                out.push(Neighbour {
                    spec: n.spec.clone(),
                    status: n.status,
                    relation: Relation::Dependency(d.dependency_type),
                    result: n
                        .under_review
                        .clone()
                        .filter(|_| n.status == TaskStatus::Completed),
                });
            }
        }
        for n in &self.tasks {
            if n.spec
                .dependencies
                .iter()
                .any(|d| d.depends_on_task_id == task_id)
            {
                out.push(Neighbour {
                    spec: n.spec.clone(),
                    status: n.status,
                    relation: Relation::Dependent,
                    result: None,
                });
            }
        }
        out
    }

    /// Every task's spec, in plan order.
    pub fn specs(&self) -> Vec<TaskSpec> {
        self.tasks.iter().map(|t| t.spec.clone()).collect()
    }

    pub fn statuses(&self) -> Vec<(String, TaskStatus)> {
        self.tasks
            .iter()
            .map(|t| (t.spec.id.clone(), t.status))
            .collect()
    }

    /// How much of `requested_ms` extra time an agent may have (0: none). Extensions
    /// are granted only after the soft-timeout warning and, in total, up to
    /// `max_extension_ratio` times the hard timeout.
    pub fn extension_grant(&self, agent_id: &str, requested_ms: u64) -> u64 {
        let Some(a) = self.agents.get(agent_id) else {
            return 0;
        };
        if !a.warned || a.stopping {
            return 0;
        }
        let cap = a
            .hard_timeout_ms
            .saturating_mul(u64::from(self.config.max_extension_ratio));
        requested_ms.min(cap.saturating_sub(a.extended_ms))
    }

    /// Folds one recorded fact into the state.
    pub fn apply(&mut self, fact: &Fact, now_ms: u64) {
        // Heartbeats say an agent lives, not that the work moves (seed 001 §4.3).
        if !matches!(fact, Fact::Heartbeat { .. }) {
            self.last_activity_ms = self.last_activity_ms.max(now_ms);
        }
        match fact {
            Fact::RunStarted { concurrency } => {
                self.started = true;
                self.config.concurrency = (*concurrency).max(1);
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
                    },
                );
            }
            Fact::Heartbeat { agent_id } => {
                if let Some(a) = self.agents.get_mut(agent_id) {
                    a.last_seen_ms = a.last_seen_ms.max(now_ms);
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
                    }
                }
            }
            Fact::AgentResult { agent_id, result } => {
                if let Some((i, role)) = self.agent_ended(agent_id) {
                    self.on_result(i, role, result);
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
            Fact::TaskFinished {
                task_id, status, ..
            } => {
                let Some(t) = self.task_mut(task_id) else {
                    return;
                };
                t.in_flight = false;
                if is_terminal(t.status) {
                    return;
                }
                t.status = *status;
                t.next = Next::Nothing;
                t.notes.clear();
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
            Fact::Continued { task_ids } => {
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

    fn task_mut(&mut self, task_id: &str) -> Option<&mut TaskState> {
        let i = *self.index.get(task_id)?;
        self.tasks.get_mut(i)
    }

    /// Removes a finished agent; `None` when the agent is unknown or no longer the one
    /// working on its task (a result that arrives after a cancel is ignored).
    fn agent_ended(&mut self, agent_id: &str) -> Option<(usize, AgentType)> {
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

    fn on_result(&mut self, i: usize, role: AgentType, result: &WorkerResult) {
        let config = self.config.clone();
        let t = &mut self.tasks[i];
        match role {
            AgentType::Executor if t.spec.task_type == TaskType::Execute => match result.status {
                WorkerStatus::Completed => match gate::check_completion(&t.spec, result) {
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
                WorkerStatus::Failed | WorkerStatus::Blocked => {
                    let failed = gate::failed_verification(result);
                    let (kind, what) = if failed.is_empty() {
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
                    Some(o)
                        if o.decision == ConsultDecision::Retry
                            && result.status == WorkerStatus::Completed =>
                    {
                        t.rejections = 0;
                        t.failures.clear();
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
                let decision = match (&output, result.status) {
                    (_, WorkerStatus::Blocked) => Some(ReviewDecision::Blocked),
                    (Some(o), WorkerStatus::Completed) => Some(o.decision),
                    _ => None,
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
                    t.next = Next::Finish(
                        TaskStatus::Blocked,
                        Some(format!(
                            "the debugger returned no analysis (required before a task fails): {}",
                            result.summary
                        )),
                    );
                    return;
                };
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
                    WorkerStatus::Completed => match gate::check_completion(&t.spec, result) {
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

    fn on_failure(&mut self, i: usize, role: AgentType, failure: AgentFailure, reason: &str) {
        let limit = self.config.same_failure_limit;
        let t = &mut self.tasks[i];
        match failure {
            AgentFailure::Cancelled => {
                t.next = Next::Finish(TaskStatus::Cancelled, Some(reason.to_string()));
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

    /// Says what should happen now. Call after applying facts and on a timer; apply the
    /// facts of the returned decisions before calling again.
    pub fn decide(&mut self, now_ms: u64) -> Vec<Decision> {
        let mut out = Vec::new();
        if self.finished || self.completing || !self.started {
            return out;
        }
        self.timers(now_ms, &mut out);
        self.cancellations(&mut out);
        self.unreachable(&mut out);
        self.readiness(&mut out);
        self.finishes(&mut out);
        self.milestones(&mut out);
        self.dispatches(&mut out);
        self.patrol(now_ms, &mut out);
        if out.is_empty() && self.agents.is_empty() {
            self.completion(&mut out);
        }
        out
    }

    fn timers(&mut self, now: u64, out: &mut Vec<Decision>) {
        for (id, a) in self.agents.iter_mut() {
            if a.stopping {
                continue;
            }
            let task_id = self.tasks[a.task].spec.id.clone();
            // While held, its limits do not count (its heartbeats still do).
            let held = a.held_since.is_some();
            if !held && now >= a.hard_deadline_ms {
                a.stopping = true;
                out.push(Decision::Kill {
                    agent_id: id.clone(),
                    failure: AgentFailure::Timeout,
                    reason: format!(
                        "hard timeout: ran {} s (limit {} s)",
                        now.saturating_sub(a.started_ms + a.held_ms) / 1000,
                        a.hard_deadline_ms.saturating_sub(a.started_ms + a.held_ms) / 1000
                    ),
                });
            } else if now.saturating_sub(a.last_seen_ms) >= self.config.stall_ms {
                a.stopping = true;
                out.push(Decision::Kill {
                    agent_id: id.clone(),
                    failure: AgentFailure::Stalled,
                    reason: format!(
                        "no heartbeat for {} s",
                        now.saturating_sub(a.last_seen_ms) / 1000
                    ),
                });
            } else if !held && !a.warned && now >= a.soft_deadline_ms {
                // Marked here so it is asked once; the recorded fact marks it for good.
                a.warned = true;
                out.push(Decision::WarnSoftTimeout {
                    agent_id: id.clone(),
                    task_id,
                    elapsed_ms: now.saturating_sub(a.started_ms + a.held_ms),
                    hard_timeout_ms: a.hard_deadline_ms.saturating_sub(a.started_ms + a.held_ms),
                });
            }
        }
    }

    fn cancellations(&mut self, out: &mut Vec<Decision>) {
        for t in &mut self.tasks {
            let Some((reason, end)) = t.cancel.clone() else {
                continue;
            };
            if is_terminal(t.status) {
                continue;
            }
            if let Some(agent_id) = &t.agent {
                if let Some(a) = self.agents.get_mut(agent_id) {
                    if !a.stopping {
                        a.stopping = true;
                        out.push(Decision::Cancel {
                            agent_id: agent_id.clone(),
                            reason: reason.clone(),
                        });
                    }
                }
                continue;
            }
            if !t.in_flight {
                t.in_flight = true;
                out.push(Decision::Finish {
                    task_id: t.spec.id.clone(),
                    status: end,
                    reason: Some(reason),
                });
            }
        }
    }

    /// Tasks that can never run (a hard dependency or an earlier phase ended without
    /// completing) are blocked with the reason, so nothing waits forever.
    fn unreachable(&mut self, out: &mut Vec<Decision>) {
        let phase_order = self.phase_order();
        let mut blocked = Vec::new();
        for (i, t) in self.tasks.iter().enumerate() {
            if is_terminal(t.status) || t.in_flight || in_progress(t.status) || t.agent.is_some() {
                continue;
            }
            let mut reason = None;
            for dep in &t.spec.dependencies {
                if dep.dependency_type != DependencyType::Hard {
                    continue;
                }
                if let Some(&j) = self.index.get(&dep.depends_on_task_id) {
                    let s = self.tasks[j].status;
                    if is_terminal(s) && s != TaskStatus::Completed {
                        reason = Some(format!(
                            "waits for {}, which is {}",
                            dep.depends_on_task_id,
                            s.as_str()
                        ));
                        break;
                    }
                }
            }
            if reason.is_none() {
                if let Some(p) = self.failed_earlier_phase(t, &phase_order) {
                    reason = Some(format!("phase {p} did not complete"));
                }
            }
            if let Some(reason) = reason {
                blocked.push((i, reason));
            }
        }
        for (i, reason) in blocked {
            let t = &mut self.tasks[i];
            t.in_flight = true;
            out.push(Decision::Finish {
                task_id: t.spec.id.clone(),
                status: TaskStatus::Blocked,
                reason: Some(reason),
            });
        }
    }

    fn readiness(&mut self, out: &mut Vec<Decision>) {
        let mut ready = Vec::new();
        for (i, t) in self.tasks.iter().enumerate() {
            if t.status != TaskStatus::Pending || t.in_flight || t.cancel.is_some() {
                continue;
            }
            let deps_done = t.spec.dependencies.iter().all(|d| {
                d.dependency_type != DependencyType::Hard
                    || self
                        .index
                        .get(&d.depends_on_task_id)
                        .is_some_and(|&j| self.tasks[j].status == TaskStatus::Completed)
            });
            if deps_done {
                ready.push(i);
            }
        }
        for i in ready {
            let t = &mut self.tasks[i];
            t.in_flight = true;
            out.push(Decision::Ready {
                task_id: t.spec.id.clone(),
            });
        }
    }

    fn finishes(&mut self, out: &mut Vec<Decision>) {
        for t in &mut self.tasks {
            if t.in_flight || is_terminal(t.status) {
                continue;
            }
            if let Next::Finish(status, reason) = &t.next {
                t.in_flight = true;
                out.push(Decision::Finish {
                    task_id: t.spec.id.clone(),
                    status: *status,
                    reason: reason.clone(),
                });
            }
        }
    }

    /// Phases in the order their first task appears.
    fn phase_order(&self) -> Vec<String> {
        let mut order: Vec<String> = Vec::new();
        for t in &self.tasks {
            if let Some(p) = &t.spec.phase {
                if !order.contains(p) {
                    order.push(p.clone());
                }
            }
        }
        order
    }

    fn phase_tasks<'a>(&'a self, phase: &'a str) -> impl Iterator<Item = &'a TaskState> + 'a {
        self.tasks
            .iter()
            .filter(move |t| t.spec.phase.as_deref() == Some(phase))
    }

    /// Whether a phase passed its milestone review.
    fn phase_done(&self, phase: &str) -> bool {
        self.phase_tasks(phase).any(|t| {
            t.milestone_of.is_some() && t.milestone_approved && t.status == TaskStatus::Completed
        })
    }

    /// The first earlier phase that ended without completing, if any.
    fn failed_earlier_phase(&self, t: &TaskState, order: &[String]) -> Option<String> {
        let phase = t.spec.phase.as_deref()?;
        for p in order.iter().take_while(|p| p.as_str() != phase) {
            let failed = self
                .phase_tasks(p)
                .any(|u| is_terminal(u.status) && u.status != TaskStatus::Completed);
            if failed {
                return Some(p.clone());
            }
        }
        None
    }

    /// Whether every earlier phase passed its milestone review.
    fn phase_gate_open(&self, t: &TaskState, order: &[String]) -> bool {
        let Some(phase) = t.spec.phase.as_deref() else {
            return true;
        };
        order
            .iter()
            .take_while(|p| p.as_str() != phase)
            .all(|p| self.phase_done(p))
    }

    fn milestones(&mut self, out: &mut Vec<Decision>) {
        for spec in &self.to_create {
            if !self.index.contains_key(&spec.id)
                && !out
                    .iter()
                    .any(|d| matches!(d, Decision::CreateTask(s) if s.id == spec.id))
            {
                out.push(Decision::CreateTask(Box::new(spec.clone())));
            }
        }
        if !self.to_create.is_empty() {
            return;
        }
        for phase in self.phase_order() {
            let mut work = self
                .phase_tasks(&phase)
                .filter(|t| t.milestone_of.is_none());
            let all_done = work.all(|t| t.status == TaskStatus::Completed);
            if !all_done || self.phase_done(&phase) {
                continue;
            }
            let reviews: Vec<&TaskState> = self
                .phase_tasks(&phase)
                .filter(|t| t.milestone_of.is_some())
                .collect();
            if reviews.iter().any(|t| !is_terminal(t.status)) {
                continue;
            }
            // The last review (if any) requested changes and its follow-ups are done,
            // or there was none yet: review (again).
            if reviews.iter().any(|t| t.status != TaskStatus::Completed) {
                continue;
            }
            let round = reviews.len() + 1;
            let Some(template) = self.phase_tasks(&phase).next().map(|t| t.spec.clone()) else {
                continue;
            };
            let id = format!("{phase}{MILESTONE}{round}");
            if out
                .iter()
                .any(|d| matches!(d, Decision::CreateTask(s) if s.id == id))
            {
                continue;
            }
            let mut spec = phase_task(
                &phase,
                id,
                TaskType::Review,
                format!("Milestone review of phase {phase}"),
                template.constraints,
            );
            spec.description = format!(
                "Every task of phase {phase} is done. Review the phase as a whole against the plan: dependency directions between modules, consistency of public interfaces, module boundaries. Approve, or request changes with one follow-up task per problem."
            );
            spec.acceptance_criteria = vec![
                "Cross-module dependencies point the way the plan says".into(),
                "Public interfaces match the contracts tasks provide and require".into(),
            ];
            spec.context_refs.plan_ref = template
                .context_refs
                .plan_ref
                .map(|r| r.split_once('#').map(|(f, _)| f.to_string()).unwrap_or(r));
            out.push(Decision::CreateTask(Box::new(spec)));
        }
    }

    fn dispatches(&mut self, out: &mut Vec<Decision>) {
        if self.paused || self.stopped.is_some() || self.cancelled.is_some() {
            return;
        }
        let running = self.agents.len() as u32;
        let mut slots = self.config.concurrency.saturating_sub(running);
        if slots == 0 {
            return;
        }
        let order = self.phase_order();
        let mut candidates: Vec<(bool, bool, usize, AgentType)> = Vec::new();
        for (i, t) in self.tasks.iter().enumerate() {
            let Next::Dispatch(role) = t.next else {
                continue;
            };
            if t.in_flight || t.agent.is_some() || is_terminal(t.status) || t.cancel.is_some() {
                continue;
            }
            if !self.phase_gate_open(t, &order) {
                continue;
            }
            let fresh = t.attempt == 0;
            let soft_waiting = t.spec.dependencies.iter().any(|d| {
                d.dependency_type == DependencyType::Soft
                    && self
                        .index
                        .get(&d.depends_on_task_id)
                        .is_some_and(|&j| !is_terminal(self.tasks[j].status))
            });
            candidates.push((fresh, soft_waiting, i, role));
        }
        candidates.sort();
        // Tasks in progress, for conflicts: started and not ended.
        let mut busy: BTreeSet<usize> = self
            .tasks
            .iter()
            .enumerate()
            .filter(|(_, t)| in_progress(t.status) && !is_terminal(t.status))
            .map(|(i, _)| i)
            .collect();
        for (_, _, i, role) in candidates {
            if slots == 0 {
                break;
            }
            if busy.iter().any(|&j| j != i && self.conflict(i, j)) {
                continue;
            }
            busy.insert(i);
            slots -= 1;
            let t = &mut self.tasks[i];
            t.in_flight = true;
            let n = t.started_by_role.get(&role).copied().unwrap_or(0) + 1;
            let attempt = if role == AgentType::Executor || t.attempt == 0 {
                t.attempt + 1
            } else {
                t.attempt
            };
            out.push(Decision::Dispatch(Box::new(Dispatch {
                task_id: t.spec.id.clone(),
                agent_id: format!("{}-{}-{n}", t.spec.id, role.as_str()),
                role,
                attempt,
                spec: t.spec.clone(),
                notes: t.notes.clone(),
                previous: match role {
                    AgentType::Reviewer | AgentType::Debugger => t.under_review.clone(),
                    AgentType::ArchitectureDesigner if t.milestone_of.is_none() => {
                        t.under_review.clone()
                    }
                    _ => None,
                },
            })));
        }
    }

    /// Whether tasks `i` and `j` must not run at the same time.
    fn conflict(&self, i: usize, j: usize) -> bool {
        let (a, b) = (&self.tasks[i].spec, &self.tasks[j].spec);
        if let (Some(x), Some(y)) = (&a.scope.write_area, &b.scope.write_area) {
            if x == y {
                return true;
            }
        }
        let excludes = |from: &TaskSpec, to: &TaskSpec| {
            from.dependencies.iter().any(|d| {
                d.depends_on_task_id == to.id
                    && matches!(
                        d.dependency_type,
                        DependencyType::Conflict | DependencyType::Serialization
                    )
            })
        };
        excludes(a, b) || excludes(b, a)
    }

    fn patrol(&mut self, now: u64, out: &mut Vec<Decision>) {
        if self.agents.is_empty() {
            return;
        }
        let idle = now.saturating_sub(self.last_activity_ms);
        if idle < self.config.patrol_ms {
            return;
        }
        // Transient: the recorded patrol event moves last_activity for good.
        self.last_activity_ms = now;
        out.push(Decision::Patrol {
            idle_ms: idle,
            agents: self
                .agents
                .iter()
                .map(|(id, a)| PatrolEntry {
                    agent_id: id.clone(),
                    task_id: Some(self.tasks[a.task].spec.id.clone()),
                    silent_ms: now.saturating_sub(a.last_seen_ms),
                })
                .collect(),
        });
    }

    fn completion(&mut self, out: &mut Vec<Decision>) {
        if self.tasks.iter().any(|t| t.in_flight) {
            return;
        }
        let open: Vec<usize> = self
            .tasks
            .iter()
            .enumerate()
            .filter(|(_, t)| !is_terminal(t.status))
            .map(|(i, _)| i)
            .collect();
        // A paused run with work left waits for `resume`; one with nothing left ends.
        if self.paused && self.cancelled.is_none() && !open.is_empty() {
            return;
        }
        if !open.is_empty() && self.stopped.is_none() {
            // Nothing can move, nothing runs, and the run is not stopped: a transition
            // the rules do not cover. Escalate instead of waiting forever.
            for i in open {
                let t = &mut self.tasks[i];
                t.in_flight = true;
                out.push(Decision::Finish {
                    task_id: t.spec.id.clone(),
                    status: TaskStatus::Blocked,
                    reason: Some(format!(
                        "the scheduler found no way forward from status {} (escalated)",
                        t.status.as_str()
                    )),
                });
            }
            return;
        }
        let count = |s: TaskStatus| self.tasks.iter().filter(|t| t.status == s).count() as u32;
        let (completed, failed, blocked, cancelled) = (
            count(TaskStatus::Completed),
            count(TaskStatus::Failed),
            count(TaskStatus::Blocked),
            count(TaskStatus::Cancelled),
        );
        let unfinished = self.tasks.iter().filter(|t| !is_terminal(t.status)).count() as u32;
        let (outcome, reason) = if let Some(r) = &self.cancelled {
            (RunOutcome::Interrupted, Some(r.clone()))
        } else if failed > 0 {
            (RunOutcome::Failed, self.stopped.clone())
        } else if blocked > 0 || unfinished > 0 || cancelled > 0 {
            (RunOutcome::Blocked, self.stopped.clone())
        } else {
            (RunOutcome::Completed, None)
        };
        self.completing = true;
        out.push(Decision::RunComplete(RunCompleted {
            outcome,
            reason,
            completed,
            failed,
            blocked,
            cancelled,
            unfinished,
        }));
    }
}

/// Counts a consecutive rejection of an executor's result (by the evidence gate or the
/// reviewer): within the automatic allowance the executor goes again with `note`;
/// beyond it the task is blocked with `blocked(n)`.
/// The task has run out of attempts: it ends as `end`, unless the Architecture
/// Designer is to be consulted first (once, when `consult`).
fn escalate(t: &mut TaskState, consult: bool, end: TaskStatus, reason: String) {
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

/// A task the scheduler adds to a phase (a milestone review, or a follow-up of one):
/// no scope, no dependencies, no required verification, the phase's constraints.
fn phase_task(
    phase: &str,
    id: String,
    task_type: TaskType,
    title: String,
    constraints: Constraints,
) -> TaskSpec {
    TaskSpec {
        id,
        task_type,
        title,
        description: String::new(),
        acceptance_criteria: Vec::new(),
        category: None,
        phase: Some(phase.to_string()),
        scope: TaskScope::default(),
        contracts: Contracts::default(),
        dependencies: Vec::new(),
        verification: Verification {
            commands: None,
            required: false,
            fallback_allowed: false,
            evidence_types: None,
        },
        constraints,
        context_refs: ContextRefs::default(),
        output_contract: task_type.output_contract(),
    }
}

/// The agent that works on a task of this type first.
fn role_for(t: &TaskState) -> AgentType {
    match t.spec.task_type {
        TaskType::Execute => AgentType::Executor,
        TaskType::Review if t.milestone_of.is_some() => AgentType::ArchitectureDesigner,
        TaskType::Review => AgentType::Reviewer,
        TaskType::Debug => AgentType::Debugger,
        TaskType::Compact => AgentType::Compactor,
        TaskType::MineExperience => AgentType::ExperienceMiner,
    }
}
