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

use air_proto::conversation::{
    direct_spec, in_conversation, is_direct, is_review, is_turn, review_spec, turn_spec, Intent,
    MainResult, ESCALATION_TITLE, SUMMARY_TITLE,
};
use air_proto::event::AgentType;
use air_proto::payload::{AgentFailure, PatrolEntry, RunCompleted, RunOutcome};
use air_proto::plan::{Budgets, OnAsk};
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

mod apply;
mod asks;
mod budget;
mod decide;
mod exit;
mod facts;
mod outcome;
mod planning;
mod replan;
mod throttle;

pub use crate::evidence::GateSubject;
pub use asks::{Ask, Refusal};
pub use exit::{classify_exit, AgentEnd, ProcessEnd};
pub use facts::{fact_of, recovered_types};
pub use planning::{proposed, PlanningFact};
pub use replan::verify_id;

/// Tunables of the rules. The defaults are the seeds' numbers.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// Most agents running at once.
    pub concurrency: u32,
    /// A running agent silent this long is killed as stalled.
    pub stall_ms: u64,
    /// A running agent whose heartbeats come while it moves no further (its turn and
    /// output stand still, no tool or model answer awaited) this long is stuck.
    pub stuck_ms: u64,
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
    /// How long a permission request may wait for a person before it is denied,
    /// whatever the run's `on_ask` policy.
    pub ask_timeout_ms: u64,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            concurrency: air_proto::plan::DEFAULT_CONCURRENCY,
            stall_ms: 120_000,
            stuck_ms: 600_000,
            patrol_ms: 600_000,
            auto_rejections: 2,
            same_failure_limit: 3,
            milestone_rounds: 2,
            max_extension_ratio: 1,
            consult: true,
            ask_timeout_ms: 600_000,
        }
    }
}

/// A recorded fact: each is one durable event (or, for heartbeats, an ephemeral one the
/// core needs only while the agent lives).
#[derive(Clone, Debug, PartialEq)]
pub enum Fact {
    /// The run's permission mode changed: handed-on work waits for a confirmation
    /// (`confirm`) in `default` only.
    ModeChanged {
        confirm: bool,
    },
    RunStarted {
        concurrency: u32,
        on_ask: OnAsk,
        budgets: Budgets,
        /// Work the Main Agent hands on waits for the user's confirmation (the
        /// `default` permission mode, D-017).
        confirm: bool,
        /// Each task works in its own git worktree: tasks of one write area may run
        /// together (their conflicts are found when they merge).
        isolated: bool,
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
        /// The evidence gate's verdict recorded with it (see
        /// `air_proto::payload::AgentCompleted::gate`).
        gate: Option<Box<air_proto::gate::Verdict>>,
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
    /// The merge queue did not merge a reviewed task (`workspace.merge_failed`): a
    /// conflict, or its check failing on the merged tree.
    /// A TaskCompleted hook did not let the task complete.
    CompletionRefused {
        task_id: String,
        reason: String,
    },
    MergeFailed {
        task_id: String,
        reason: String,
    },
    Heartbeat {
        agent_id: String,
        /// What the heartbeat said of the agent's model: `None` when it said nothing
        /// (any message of the worker is a sign of life), `Some(None)` when it is not
        /// waiting on its model, `Some(Some(ms))` when it has waited `ms` with nothing
        /// of the answer yet.
        model: Option<Option<u64>>,
        /// Where a heartbeat says the agent is; `None` for any other message of the
        /// worker, which shows it moving.
        beat: Option<Beat>,
    },
    /// A provider asked an agent to slow down (`agent.rate_limited`, observed).
    SlowDown,
    /// The machine's load per core, in thousandths (observed).
    Load {
        per_core: u32,
    },
    /// A re-plan's revert of a task's merged change ended (`workspace.undone`,
    /// `workspace.revert_failed`: why not).
    Reverted {
        task_id: String,
        error: Option<String>,
    },
    /// The patrol of an agent's own turns found it in a loop (`agent.loop_detected`).
    LoopDetected {
        agent_id: String,
        task_id: String,
        reason: String,
        stopped: bool,
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
        /// Budgets that replace the run's from here on.
        budgets: Budgets,
    },
    /// While the run goes on, these ended tasks start over as pending (a person asked).
    Retried {
        task_ids: Vec<String>,
    },
    /// The user was asked to confirm a task the Main Agent handed on
    /// (`permission.requested` for `task.start`).
    ConfirmationAsked {
        task_id: String,
    },
    /// The user (or the run's policy) answered it (`permission.decision.recorded`).
    Confirmed {
        task_id: String,
        allow: bool,
        reason: Option<String>,
    },
    /// The user said something (`user.message.created`): a turn of the Main Agent
    /// answers it.
    UserMessage {
        message_id: String,
        text: String,
        /// The task it is addressed to, if any.
        to: Option<String>,
    },
    /// A planning session moved (an `architecture.*` event).
    Planning(Box<PlanningFact>),
    /// The user changed a requirement (`requirement.changed`).
    RequirementChanged {
        change: String,
    },
    /// Observed (not recorded): what the run has spent so far, from the session's
    /// counters (themselves the fold of its recorded usage).
    Usage {
        tokens: u64,
        cost_micro_usd: u64,
    },
    /// Observed (not recorded): the permission requests waiting for an answer, and
    /// whether a person who may answer them is attached.
    Asks {
        pending: Vec<Ask>,
        humans: bool,
    },
    /// A worker sent its result; it counts once the worker has exited.
    ResultReceived {
        agent_id: String,
        result: Box<WorkerResult>,
    },
    /// A worker broke the protocol; it is ended as a protocol failure.
    ProtocolViolation {
        agent_id: String,
        reason: String,
    },
    /// A worker's process ended; the core says what its end means.
    WorkerExited {
        agent_id: String,
        end: ProcessEnd,
    },
}

impl Fact {
    /// The start of a run with no budgets, whose requests nobody answers for it.
    pub fn run_started(concurrency: u32) -> Self {
        Self::RunStarted {
            concurrency,
            on_ask: OnAsk::Queue,
            budgets: Budgets::default(),
            confirm: false,
            isolated: false,
        }
    }
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
    /// Merge a reviewed task's change into the session's integration branch behind its
    /// check (a run in its own worktree): the task completes once merged
    /// (`task.completed`), or `workspace.merge_failed` says why not. One at a time,
    /// in plan order.
    Merge {
        task_id: String,
        reason: Option<String>,
    },
    CreateTask(Box<TaskSpec>),
    WarnSoftTimeout {
        agent_id: String,
        task_id: String,
        elapsed_ms: u64,
        hard_timeout_ms: u64,
    },
    /// How many agents run at once changed (recorded as
    /// `scheduler.concurrency_changed`).
    Concurrency {
        concurrency: u32,
        configured: u32,
        reason: String,
    },
    /// Take a completed task's merged change back out of the integration branch
    /// (its branch kept; the task starts over on a fresh one): a re-plan's revert.
    Revert {
        task_id: String,
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
    /// Stop dispatching: a budget of the run is spent (`scheduler.stopped`).
    StopForBudget {
        budget: String,
        reason: String,
    },
    /// Deny a permission request by the run's policy or its timeout.
    Refuse(Box<Refusal>),
    /// Ask the user to confirm a task the Main Agent handed on before it starts.
    AskConfirmation {
        task_id: String,
        title: String,
    },
    /// Give a running agent what the user said to its task (`agent.message`).
    Deliver {
        agent_id: String,
        text: String,
    },
    /// Record what a planning turn asked, stated or proposed (its `architecture.*`
    /// event).
    Planning(Box<PlanningFact>),
    /// Write the confirmed plan under `.air/shared/plan/` (and its ADRs), then record
    /// `architecture.plan.confirmed` with the files or why nothing was written.
    WritePlan {
        task_id: String,
        /// The user's words the session began with.
        requirement: String,
        proposal: Box<air_proto::planning::Proposal>,
        requirements: Vec<String>,
        run: bool,
    },
    /// Record how an agent ended (`agent.completed` or `agent.failed`).
    EndAgent {
        agent_id: String,
        end: AgentEnd,
    },
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
    /// It ran out of attempts (D-008): the person hears of its end.
    escalated: bool,
    /// The agents of its latest attempt (whose records its evidence gate reads).
    attempt_agents: Vec<String>,
    /// How the task ends once the debugger has analysed its executor's failure (the
    /// same failure too often).
    after_analysis: Option<(TaskStatus, String)>,
    /// How its executor ended without a result, until the debugger has analysed it.
    crash: Option<String>,
    /// Times its agents ended on their model provider's silence.
    provider_faults: u32,
    /// Its merge is under way (a [`Decision::Merge`] is out).
    merging: bool,
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
    /// Since when its model's provider has said nothing of the answer it waits for.
    model_silent_since: Option<u64>,
    /// Where its last heartbeat said it was (turn, output tokens), and since when it
    /// has not moved.
    progress: Option<(u32, u64)>,
    moved_ms: u64,
    /// Its last heartbeat said it waits on a tool.
    tools_waiting: bool,
}

/// Where a heartbeat says its agent is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Beat {
    pub turn: u32,
    pub output_tokens: u64,
    /// Tool calls it waits on.
    pub tools: u32,
}

/// How long a model's provider must have said nothing of its answer when an agent is
/// stopped for its time for the stop to be the provider's fault rather than the
/// task's: this, or half the agent's run when that is shorter.
pub const PROVIDER_SILENCE_MS: u64 = 10_000;
/// Times a task's agent may end on its provider's silence before the task is blocked
/// on it (the provider's own retries and fallbacks have been tried by then).
pub const PROVIDER_FAULTS: u32 = 2;

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
    /// The run's budgets, counted from `budgets_from_ms` (its start or its last
    /// continuation), and what it has spent.
    budgets: Budgets,
    budgets_from_ms: u64,
    usage: budget::Usage,
    /// Transient: the budget stop is out.
    stopping_for_budget: bool,
    /// What happens to a request nobody is there to answer.
    on_ask: OnAsk,
    /// The requests waiting, and whether a person is there, as last observed.
    asks: Vec<Ask>,
    humans: bool,
    /// Transient: requests answered since that observation.
    answered: BTreeSet<String>,
    /// Results sent by workers that have not exited yet.
    results: HashMap<String, WorkerResult>,
    /// Why a worker is being ended (a cancel, a kill, a protocol violation).
    stops: HashMap<String, (AgentFailure, String)>,
    /// Workers whose process ended, until their end is decided.
    exits: BTreeMap<String, ProcessEnd>,
    /// Transient: workers to kill for breaking the protocol.
    to_kill: BTreeSet<String>,
    /// Turns of the Main Agent asked for so far (by user messages and by delegated
    /// work that ended); turn `n` is task `main:<n>`.
    turns: usize,
    /// Requests of the direct lane so far; the `n`th is task `direct:<n>`.
    directs: usize,
    /// Reviews the user asked for so far (`/review`); the `n`th is `review:<n>`.
    reviews: usize,
    /// Tasks the Main Agent handed to the scheduler; each is summarised when it ends.
    delegated: BTreeSet<String>,
    /// Transient: what the user said to running agents, to give them.
    to_deliver: Vec<(String, String)>,
    /// Whether work handed on waits for the user's confirmation.
    confirm: bool,
    /// Whether each task works in its own worktree (write areas are hints then).
    isolated: bool,
    /// Tasks handed on that wait for it, and whether the user was asked.
    awaiting: BTreeMap<String, bool>,
    /// Transient: confirmations asked for whose fact has not come back.
    asking: BTreeSet<String>,
    /// Work the user declined to start.
    declined: BTreeSet<String>,
    /// Transient: confirmations to close because their task ended without them.
    to_close: Vec<String>,
    /// The Architecture Designer's planning session, once one began.
    planning: Option<planning::Planning>,
    /// Planning turns asked for so far; the `n`th is task `plan:<n>`.
    plan_turns: usize,
    /// Transient: what planning turns asked, stated or proposed, to record.
    planning_out: Vec<PlanningFact>,
    /// The confirmed plan's tasks, summarised in the conversation when all end.
    planned: BTreeSet<String>,
    /// Tasks of a confirmed plan held until the user says to start them, by the
    /// confirmation they wait for (the proposing turn's id).
    held: BTreeMap<String, String>,
    /// Dispatch of the graph's work is frozen while a re-plan is under way.
    frozen: bool,
    /// How many agents run at once now (D-019).
    throttle: throttle::Throttle,
    /// Agents stopped in a loop, whose stop the person was told of.
    looped: BTreeSet<String>,
}

// Suffix of the id of a phase's milestone-review tasks: `<phase>:milestone-<n>`.
// Plan ids cannot contain `:`, so these never collide with a plan's tasks.
use air_proto::task::MILESTONE;

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
            budgets: Budgets::default(),
            budgets_from_ms: 0,
            usage: budget::Usage::default(),
            stopping_for_budget: false,
            on_ask: OnAsk::Queue,
            asks: Vec::new(),
            humans: false,
            answered: BTreeSet::new(),
            results: HashMap::new(),
            stops: HashMap::new(),
            exits: BTreeMap::new(),
            to_kill: BTreeSet::new(),
            turns: 0,
            directs: 0,
            reviews: 0,
            delegated: BTreeSet::new(),
            isolated: false,
            to_deliver: Vec::new(),
            confirm: false,
            awaiting: BTreeMap::new(),
            asking: BTreeSet::new(),
            declined: BTreeSet::new(),
            to_close: Vec::new(),
            planning: None,
            plan_turns: 0,
            planning_out: Vec::new(),
            planned: BTreeSet::new(),
            held: BTreeMap::new(),
            frozen: false,
            throttle: Default::default(),
            looped: BTreeSet::new(),
        }
    }

    /// The next free id `T<n>` for a task the Main Agent hands on.
    fn next_task_id(&self) -> String {
        (1..)
            .map(|n| format!("T{n}"))
            .find(|id| !self.index.contains_key(id) && !self.to_create.iter().any(|t| t.id == *id))
            .unwrap_or_default()
    }

    /// Asks for the direct lane's next request: an executor does it at once.
    fn ask_direct(&mut self, message: &str, message_id: Option<&str>) {
        self.directs += 1;
        self.to_create
            .push(direct_spec(self.directs, message, message_id));
    }

    /// Asks for the next turn of the Main Agent.
    fn ask_turn(&mut self, title: &str, message: &str, message_id: Option<&str>, about: &[String]) {
        self.turns += 1;
        self.to_create
            .push(turn_spec(self.turns, title, message, message_id, about));
    }

    /// What the person must hear about a task now (D-008's escalation: an agent
    /// stopped in a loop or stuck, a task out of attempts): the Main Agent tells it in
    /// the conversation, when the session has one (a run with no conversation shows it
    /// in its events and report).
    pub(super) fn tell_person(&mut self, task_id: &str, what: &str) {
        if self.turns == 0 || in_conversation(task_id) {
            return;
        }
        let title = format!("{ESCALATION_TITLE}{task_id}");
        self.ask_turn(
            &title,
            &format!("{task_id}: {what}"),
            None,
            &[task_id.to_string()],
        );
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

    /// What the evidence gate of a running agent's result reads. `None` for an agent
    /// whose result claims no evidence (a turn of the conversation, a planning turn,
    /// the direct lane, a reviewer of an executor's work).
    pub fn gate_subject(&self, agent_id: &str) -> Option<GateSubject> {
        let a = self.agents.get(agent_id)?;
        let t = &self.tasks[a.task];
        let id = &t.spec.id;
        if in_conversation(id) || is_review(id) {
            return None;
        }
        let one_agent = t.spec.task_type != TaskType::Execute;
        let completes = one_agent || a.role == AgentType::Executor;
        if !completes && a.role != AgentType::Debugger {
            return None;
        }
        Some(GateSubject {
            spec: t.spec.clone(),
            agents: t.attempt_agents.clone(),
            completes,
        })
    }

    /// The agents of a task's latest attempt.
    pub fn attempt_agents(&self, task_id: &str) -> Vec<String> {
        self.index
            .get(task_id)
            .map(|&i| self.tasks[i].attempt_agents.clone())
            .unwrap_or_default()
    }

    /// A task's status, if the task exists.
    pub fn status(&self, task_id: &str) -> Option<TaskStatus> {
        self.index.get(task_id).map(|&i| self.tasks[i].status)
    }

    /// Tasks that did not complete (what continuing an ended run would reopen).
    pub fn unfinished(&self) -> Vec<String> {
        // The conversation's own tasks (turns answer messages once; the direct lane
        // and reviews were asked for then) and work the user declined stay ended.
        self.tasks
            .iter()
            .filter(|t| t.status != TaskStatus::Completed && t.agent.is_none())
            .filter(|t| !in_conversation(&t.spec.id) && !is_review(&t.spec.id))
            .filter(|t| !self.declined.contains(&t.spec.id))
            .map(|t| t.spec.id.clone())
            .collect()
    }

    /// A task's title, if the run has the task.
    pub fn task_title(&self, task_id: &str) -> Option<String> {
        self.index
            .get(task_id)
            .map(|&i| self.tasks[i].spec.title.clone())
    }

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
}

/// The id of the request that asks the user to confirm a task handed on.
pub fn confirmation_id(task_id: &str) -> String {
    format!("{CONFIRM}{task_id}")
}

pub use air_proto::conversation::{CONFIRM_PREFIX as CONFIRM, TASK_START};

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
        verification: Verification::none(),
        constraints,
        context_refs: ContextRefs::default(),
        output_contract: task_type.output_contract(),
    }
}

/// The agent that works on a task of this type first; a turn of the conversation is
/// the Main Agent's.
fn role_for(t: &TaskState) -> AgentType {
    if is_turn(&t.spec.id) {
        return AgentType::Main;
    }
    if air_proto::planning::is_planning(&t.spec.id) {
        return AgentType::ArchitectureDesigner;
    }
    match t.spec.task_type {
        TaskType::Execute => AgentType::Executor,
        TaskType::Review if t.milestone_of.is_some() => AgentType::ArchitectureDesigner,
        TaskType::Review => AgentType::Reviewer,
        TaskType::Debug => AgentType::Debugger,
        TaskType::Compact => AgentType::Compactor,
        TaskType::MineExperience => AgentType::ExperienceMiner,
    }
}
