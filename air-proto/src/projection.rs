//! The per-session view model that clients read (D-056), and how a delta changes it.
//!
//! airsd keeps one [`Projection`] per session: hydrated from the session database's
//! state tables at start, then advanced by every event the bus publishes. A client takes
//! a snapshot (the projection with the sequence number it reflects) and applies the
//! deltas after that number with the same [`Projection::apply`]. The reducer lives here,
//! with the types, because it *is* the delta contract: a client that applies the deltas
//! to a snapshot must arrive at the daemon's next snapshot.
//!
//! Only durable events advance `seq`; ephemeral events (heartbeats, progress) update
//! the live-only fields (`last_heartbeat`, `progress`) and carry the seq of the durable
//! state they apply on top of.

use std::collections::{HashMap, VecDeque};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::conversation::MainState;
use crate::event::{AgentType, RuntimeEvent};
use crate::events as ev;
use crate::payload as p;
use crate::time::IsoTime;
use crate::workspace_view;

mod lines;
mod usage;
pub use lines::{
    brief, brief_input, brief_output, evidence_lines, main_argument, EvidenceView, BRIEF_CHARS,
    TASK_EVIDENCE_LIMIT,
};
pub use usage::TaskUsage;

/// How many recent tool runs, command runs and messages a projection keeps.
pub const RECENT_LIMIT: usize = 50;
/// Characters of a message kept as its preview.
pub const PREVIEW_CHARS: usize = 200;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Projection {
    pub session_id: String,
    /// Sequence number of the last durable event reflected (0: none).
    pub seq: u64,
    pub session: Option<SessionView>,
    /// In creation order.
    pub tasks: Vec<TaskView>,
    /// Dependency edges, in creation order.
    pub edges: Vec<EdgeView>,
    /// In start order.
    pub agents: Vec<AgentView>,
    /// The most recent [`RECENT_LIMIT`] tool runs, oldest first.
    pub tool_runs: VecDeque<ToolRunView>,
    pub command_runs: VecDeque<CommandRunView>,
    pub messages: VecDeque<MessageView>,
    /// Requests without a decision yet, oldest first.
    pub permission_requests: Vec<PermissionRequestView>,
    pub counters: Counters,
    /// The plan run of this session, once one started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<RunView>,
    /// The Architecture Designer's planning session, once one began.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planning: Option<crate::planning_view::PlanningView>,
    #[serde(skip)]
    index: Index,
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SessionView {
    pub id: String,
    pub title: Option<String>,
    pub plan_ref: Option<String>,
    pub status: SessionStatus,
    pub created_at: IsoTime,
    pub updated_at: IsoTime,
}

wire_enum! {
    pub enum SessionStatus {
        Active = "active",
        Archived = "archived",
        Deleted = "deleted",
    }
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TaskView {
    pub id: String,
    pub title: String,
    pub task_type: String,
    pub category: Option<String>,
    pub phase: Option<String>,
    pub write_area: Option<String>,
    pub status: TaskStatus,
    /// The highest attempt number started (0: never started).
    pub attempts: u32,
    pub agent_id: Option<String>,
    pub reason: Option<String>,
    pub created_at: IsoTime,
    pub updated_at: IsoTime,
    /// Live only (from `task.progress`).
    pub progress: Option<p::TaskProgress>,
    /// The evidence airsd recorded of the task's work (from the commands its agents
    /// ran), oldest first, the latest [`TASK_EVIDENCE_LIMIT`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<EvidenceView>,
    /// The latest todo list one of its agents kept (`todo.write`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub todos: Vec<crate::todo::TodoItem>,
    /// Its latest git worktree (in a run whose tasks work in worktrees).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<workspace_view::WorkspaceView>,
    /// What its agents' model turns used and cost, all attempts together.
    #[serde(default, skip_serializing_if = "TaskUsage::is_zero")]
    pub usage: TaskUsage,
}

wire_enum! {
    pub enum TaskStatus {
        Pending = "pending",
        Ready = "ready",
        Running = "running",
        Reviewing = "reviewing",
        Debugging = "debugging",
        Completed = "completed",
        Failed = "failed",
        Blocked = "blocked",
        Cancelled = "cancelled",
    }
}

impl TaskStatus {
    /// The status a task status event sets, by event type.
    pub fn from_event_type(event_type: &str) -> Option<Self> {
        Some(match event_type {
            ev::TaskReady::TYPE => TaskStatus::Ready,
            ev::TaskStarted::TYPE => TaskStatus::Running,
            ev::TaskReviewing::TYPE => TaskStatus::Reviewing,
            ev::TaskDebugging::TYPE => TaskStatus::Debugging,
            ev::TaskCompleted::TYPE => TaskStatus::Completed,
            ev::TaskFailed::TYPE => TaskStatus::Failed,
            ev::TaskBlocked::TYPE => TaskStatus::Blocked,
            ev::TaskCancelled::TYPE => TaskStatus::Cancelled,
            _ => return None,
        })
    }

    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskStatus::Completed
                | TaskStatus::Failed
                | TaskStatus::Blocked
                | TaskStatus::Cancelled
        )
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EdgeView {
    pub task_id: String,
    pub depends_on_task_id: String,
    pub dependency_type: crate::task::DependencyType,
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AgentView {
    pub id: String,
    pub agent_type: AgentType,
    pub task_id: Option<String>,
    pub status: RunStatus,
    pub model: Option<String>,
    pub pid: Option<u32>,
    pub exit_code: Option<i32>,
    pub reason: Option<String>,
    pub started_at: IsoTime,
    pub ended_at: Option<IsoTime>,
    /// Live only (from `agent.heartbeat`).
    pub last_heartbeat: Option<HeartbeatView>,
    /// Held between its steps by a person (`agent.paused`), until `agent.resumed`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub paused: bool,
    /// The summary of its result, once it handed one back.
    pub summary: Option<String>,
    /// Its result's evidence, one line each (`type: claim (kind ref)`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<String>,
    /// Its result's verification results, one line each (`passed: name — notes`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub verification: Vec<String>,
    /// The risks its result names (`high: summary`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub risks: Vec<String>,
    /// The follow-up tasks its result proposes (`title`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub follow_ups: Vec<String>,
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct HeartbeatView {
    pub at: IsoTime,
    pub state: Option<String>,
    pub turn: Option<u32>,
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
}

wire_enum! {
    /// Status of an agent, a tool run or a command run.
    pub enum RunStatus {
        Running = "running",
        Completed = "completed",
        Failed = "failed",
    }
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ToolRunView {
    pub id: String,
    pub tool: String,
    pub agent_id: Option<String>,
    pub task_id: Option<String>,
    pub status: RunStatus,
    /// Its input in brief ([`brief_input`]).
    pub input: Option<String>,
    /// Its output in brief ([`brief_output`]), once it completed.
    pub output: Option<String>,
    pub error: Option<String>,
    pub started_at: IsoTime,
    pub ended_at: Option<IsoTime>,
    pub duration_ms: Option<u64>,
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CommandRunView {
    pub id: String,
    pub command: String,
    pub tool_run_id: Option<String>,
    pub agent_id: Option<String>,
    pub task_id: Option<String>,
    pub status: RunStatus,
    pub exit_code: Option<i32>,
    pub error: Option<String>,
    pub started_at: IsoTime,
    pub ended_at: Option<IsoTime>,
    pub duration_ms: Option<u64>,
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MessageView {
    pub id: String,
    pub role: MessageRole,
    pub agent_id: Option<String>,
    pub task_id: Option<String>,
    /// For a user message, the client that sent it.
    pub client: Option<String>,
    /// The first [`PREVIEW_CHARS`] characters of the message's text.
    pub preview: String,
    pub created_at: IsoTime,
}

wire_enum! {
    pub enum MessageRole {
        User = "user",
        Assistant = "assistant",
    }
}

/// A pending permission request: the request as asked, and when.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PermissionRequestView {
    #[serde(flatten)]
    pub request: p::PermissionRequested,
    pub requested_at: IsoTime,
}

/// Totals over the whole session (not only the recent lists).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Counters {
    pub tool_runs: u64,
    pub command_runs: u64,
    pub messages: u64,
    pub artifacts: u64,
    pub diagnostics: u64,
    pub evidence: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Millionths of a US dollar, over the turns whose cost is known.
    #[serde(default)]
    pub cost_micro_usd: u64,
    /// Permission requests denied (by a person or by the run's policy).
    #[serde(default)]
    pub permission_denials: u64,
}

/// A session's plan run.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunView {
    pub plan: String,
    pub title: Option<String>,
    pub concurrency: u32,
    pub status: RunState,
    /// Dispatching is paused.
    #[serde(default)]
    pub paused: bool,
    /// Why dispatching stopped for good (a budget), if it did.
    pub stopped: Option<String>,
    /// Why the scheduler stopped without ending the run (the session could not be
    /// written), while it has not run again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub halted: Option<String>,
    pub outcome: Option<p::RunOutcome>,
    pub reason: Option<String>,
    pub started_at: IsoTime,
    pub ended_at: Option<IsoTime>,
    /// Where the tasks' merged work went when the run ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub landing: Option<p::Landing>,
    /// The permission mode the run's calls are judged by now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission_mode: Option<crate::plan::PermissionMode>,
}

wire_enum! {
    pub enum RunState {
        Running = "running",
        Ended = "ended",
    }
}

/// Lookup tables from id to position; rebuilt on demand, never compared or serialized.
#[derive(Clone, Debug, Default)]
struct Index {
    tasks: HashMap<String, usize>,
    agents: HashMap<String, usize>,
}

impl PartialEq for Index {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

/// The preview of a canonical message: its text blocks joined, cut to
/// [`PREVIEW_CHARS`] characters.
pub fn message_preview(content: &Value) -> String {
    let text = crate::message::text_of(content);
    match text.char_indices().nth(PREVIEW_CHARS) {
        Some((cut, _)) => text[..cut].to_string(),
        None => text,
    }
}

fn payload<T: DeserializeOwned>(event: &RuntimeEvent) -> Option<T> {
    T::deserialize(&event.payload).ok()
}

fn push_recent<T>(list: &mut VecDeque<T>, item: T) {
    list.push_back(item);
    while list.len() > RECENT_LIMIT {
        list.pop_front();
    }
}

impl Projection {
    /// Where the Main Agent is (D-005), read from the session's turns and tasks: a
    /// turn under way is `CLASSIFYING`, `DELEGATING` once its agent writes what to
    /// hand on (or `SUMMARIZING` for a summary, or
    /// `INTERRUPTING` while delegated work runs); with no turn under way, work handed
    /// on waiting for the user's confirmation is `CONFIRMING`, other open work of the
    /// task graph `EXECUTING`; otherwise `IDLE`.
    pub fn main_state(&self) -> MainState {
        use crate::conversation::{is_turn, SUMMARY_TITLE};
        let turn = self
            .tasks
            .iter()
            .find(|t| is_turn(&t.id) && !t.status.is_terminal());
        let work = self
            .tasks
            .iter()
            .any(|t| !crate::conversation::is_any_turn(&t.id) && !t.status.is_terminal());
        let confirming = self
            .permission_requests
            .iter()
            .any(|r| r.request.tool.as_deref() == Some(crate::conversation::TASK_START));
        // The turn's agent says when it is writing what to hand on (its heartbeat).
        let delegating = |task: &str| {
            self.agents.iter().any(|a| {
                a.task_id.as_deref() == Some(task)
                    && a.status == RunStatus::Running
                    && a.last_heartbeat.as_ref().and_then(|h| h.state.as_deref())
                        == Some("DELEGATING")
            })
        };
        match turn {
            Some(t) if t.title.starts_with(SUMMARY_TITLE) => MainState::Summarizing,
            Some(_) if work => MainState::Interrupting,
            Some(t) if delegating(&t.id) => MainState::Delegating,
            Some(_) => MainState::Classifying,
            None if confirming => MainState::Confirming,
            None if work => MainState::Executing,
            None => MainState::Idle,
        }
    }
}

impl Projection {
    pub fn new(session_id: impl Into<String>) -> Self {
        Self {
            session_id: session_id.into(),
            ..Self::default()
        }
    }

    pub fn task(&self, id: &str) -> Option<&TaskView> {
        match self.index.tasks.get(id).and_then(|&i| self.tasks.get(i)) {
            Some(t) if t.id == id => Some(t),
            _ => self.tasks.iter().find(|t| t.id == id),
        }
    }

    pub fn agent(&self, id: &str) -> Option<&AgentView> {
        match self.index.agents.get(id).and_then(|&i| self.agents.get(i)) {
            Some(a) if a.id == id => Some(a),
            _ => self.agents.iter().find(|a| a.id == id),
        }
    }

    /// The position of `id` in `list`, through `index` (rebuilt when it does not match,
    /// e.g. after a client re-sorted the list).
    fn position<T>(
        index: &mut HashMap<String, usize>,
        list: &[T],
        key: impl Fn(&T) -> &str,
        id: &str,
    ) -> Option<usize> {
        let hit = index
            .get(id)
            .copied()
            .filter(|&i| list.get(i).is_some_and(|t| key(t) == id));
        if hit.is_some() {
            return hit;
        }
        if index.len() != list.len() || index.contains_key(id) {
            *index = list
                .iter()
                .enumerate()
                .map(|(i, t)| (key(t).to_string(), i))
                .collect();
        }
        index.get(id).copied()
    }

    fn task_mut(&mut self, id: &str) -> Option<&mut TaskView> {
        let i = Self::position(&mut self.index.tasks, &self.tasks, |t| &t.id, id)?;
        self.tasks.get_mut(i)
    }

    fn agent_mut(&mut self, id: &str) -> Option<&mut AgentView> {
        let i = Self::position(&mut self.index.agents, &self.agents, |a| &a.id, id)?;
        self.agents.get_mut(i)
    }

    /// Applies a `run.*` or `scheduler.*` event to the run view (hydration reads these
    /// events too: the run has no table of its own).
    pub fn apply_run(&mut self, ty: &str, event: &RuntimeEvent) {
        let ts = &event.timestamp;
        if ty == ev::RunStarted::TYPE {
            if let Some(pl) = payload::<p::RunStarted>(event) {
                self.run = Some(RunView {
                    plan: pl.plan,
                    title: pl.title,
                    concurrency: pl.concurrency,
                    status: RunState::Running,
                    paused: false,
                    stopped: None,
                    halted: None,
                    outcome: None,
                    reason: None,
                    started_at: ts.clone(),
                    ended_at: None,
                    landing: None,
                    permission_mode: Some(pl.permission_mode),
                });
            }
            return;
        }
        let Some(run) = self.run.as_mut() else { return };
        match ty {
            ev::RunCompleted::TYPE => {
                if let Some(pl) = payload::<p::RunCompleted>(event) {
                    run.status = RunState::Ended;
                    run.outcome = Some(pl.outcome);
                    run.reason = pl.reason;
                    run.ended_at = Some(ts.clone());
                    run.landing = pl.landing;
                }
            }
            ev::RunModeChanged::TYPE => {
                if let Some(pl) = payload::<p::RunModeChanged>(event) {
                    run.permission_mode = Some(pl.permission_mode);
                }
            }
            ev::RunContinued::TYPE => {
                run.halted = None;
                run.status = RunState::Running;
                run.outcome = None;
                run.reason = None;
                run.ended_at = None;
                run.landing = None;
                run.stopped = None;
                run.paused = false;
            }
            ev::RunHalted::TYPE => {
                if let Some(pl) = payload::<p::RunHalted>(event) {
                    run.halted = pl.reason;
                }
            }
            ev::SchedulerPaused::TYPE => run.paused = true,
            ev::SchedulerResumed::TYPE => run.paused = false,
            ev::SchedulerStopped::TYPE => {
                if let Some(pl) = payload::<p::SchedulerControl>(event) {
                    run.stopped = Some(pl.reason.unwrap_or_else(|| "stopped".into()));
                }
            }
            _ => {}
        }
    }

    /// These tasks are pending again (a continued run, a retry).
    fn reopen(&mut self, task_ids: &[String], ts: &IsoTime) {
        for id in task_ids {
            if let Some(task) = self.task_mut(id) {
                task.status = TaskStatus::Pending;
                task.reason = None;
                task.updated_at = ts.clone();
            }
        }
    }

    /// Number of tasks in each status.
    pub fn tasks_by_status(&self) -> Vec<(TaskStatus, usize)> {
        TaskStatus::ALL
            .iter()
            .copied()
            .map(|s| (s, self.tasks.iter().filter(|t| t.status == s).count()))
            .collect()
    }

    /// Applies one event. `durable` events must come with their sequence number, in
    /// order; ephemeral ones leave `seq` unchanged. Unknown types and payloads that do not
    /// parse change nothing but the sequence number.
    pub fn apply(&mut self, seq: u64, event: &RuntimeEvent, durable: bool) {
        if durable {
            self.seq = seq;
        }
        let ts = &event.timestamp;
        let ty = event.event_type.as_str();
        if let Some(status) = TaskStatus::from_event_type(ty) {
            if let Some(pl) = payload::<p::TaskStatusChanged>(event) {
                self.apply_task_status(status, pl, ts);
            }
            return;
        }
        if ty == ev::TasksRetried::TYPE {
            if let Some(pl) = payload::<p::TasksRetried>(event) {
                self.reopen(&pl.task_ids, ts);
            }
            return;
        }
        if let Some(pl) = payload::<p::PlanUpdated>(event).filter(|_| ty == ev::PlanUpdated::TYPE) {
            let ids: Vec<String> = pl.changed.iter().map(|t| t.id.clone()).collect();
            self.reopen(&ids, ts);
            for spec in pl.changed {
                if let Some(t) = self.task_mut(&spec.id) {
                    t.title = spec.title;
                }
            }
        }
        if ty.starts_with("architecture.") || ty == ev::TaskCreated::TYPE {
            crate::planning_view::PlanningView::apply(&mut self.planning, ty, &event.payload);
        }
        if ty.starts_with("run.") || ty.starts_with("scheduler.") {
            self.apply_run(ty, event);
            if ty == ev::RunContinued::TYPE {
                if let Some(pl) = payload::<p::RunContinued>(event) {
                    self.reopen(&pl.task_ids, ts);
                }
            }
            return;
        }
        match ty {
            ev::SessionCreated::TYPE => {
                if let Some(pl) = payload::<p::SessionCreated>(event) {
                    self.session = Some(SessionView {
                        id: event.session_id.clone(),
                        title: pl.title,
                        plan_ref: pl.plan_ref,
                        status: SessionStatus::Active,
                        created_at: ts.clone(),
                        updated_at: ts.clone(),
                    });
                }
            }
            ev::SessionArchived::TYPE | ev::SessionDeleted::TYPE => {
                if let Some(session) = &mut self.session {
                    session.status = if ty == ev::SessionArchived::TYPE {
                        SessionStatus::Archived
                    } else {
                        SessionStatus::Deleted
                    };
                    session.updated_at = ts.clone();
                }
            }
            ev::UserMessageCreated::TYPE | ev::AssistantMessageCreated::TYPE => {
                if let Some(pl) = payload::<p::MessageCreated>(event) {
                    self.counters.messages += 1;
                    if let Some(usage) = pl.usage {
                        self.counters.input_tokens = self
                            .counters
                            .input_tokens
                            .saturating_add(usage.input_tokens);
                        self.counters.output_tokens = self
                            .counters
                            .output_tokens
                            .saturating_add(usage.output_tokens);
                        self.counters.cost_micro_usd = self
                            .counters
                            .cost_micro_usd
                            .saturating_add(usage.cost_micro_usd.unwrap_or(0));
                        if let Some(t) = pl
                            .task_id
                            .as_deref()
                            .and_then(|id| self.tasks.iter_mut().find(|t| t.id == id))
                        {
                            t.usage.add(&usage);
                        }
                    }
                    let role = if ty == ev::UserMessageCreated::TYPE {
                        MessageRole::User
                    } else {
                        MessageRole::Assistant
                    };
                    push_recent(
                        &mut self.messages,
                        MessageView {
                            id: pl.message_id,
                            role,
                            agent_id: pl.agent_id,
                            task_id: pl.task_id,
                            client: pl.client,
                            preview: message_preview(&pl.content),
                            created_at: ts.clone(),
                        },
                    );
                }
            }
            ev::TaskCreated::TYPE => {
                if let Some(pl) = payload::<p::TaskCreated>(event) {
                    let spec = pl.task;
                    for dep in &spec.dependencies {
                        self.edges.push(EdgeView {
                            task_id: spec.id.clone(),
                            depends_on_task_id: dep.depends_on_task_id.clone(),
                            dependency_type: dep.dependency_type,
                        });
                    }
                    self.tasks.push(TaskView {
                        title: spec.title,
                        task_type: spec.task_type.as_str().to_string(),
                        category: spec.category.and_then(|c| enum_str(&c)),
                        phase: spec.phase,
                        write_area: spec.scope.write_area,
                        status: TaskStatus::Pending,
                        attempts: 0,
                        agent_id: None,
                        reason: None,
                        created_at: ts.clone(),
                        updated_at: ts.clone(),
                        progress: None,
                        evidence: Vec::new(),
                        usage: Default::default(),
                        todos: Vec::new(),
                        workspace: None,
                        id: spec.id,
                    });
                }
            }
            ev::AgentStarted::TYPE => {
                if let Some(pl) = payload::<p::AgentStarted>(event) {
                    self.agents.push(AgentView {
                        id: pl.agent_id,
                        agent_type: pl.agent_type,
                        task_id: pl.task_id,
                        status: RunStatus::Running,
                        model: pl.model,
                        pid: pl.pid,
                        exit_code: None,
                        reason: None,
                        started_at: ts.clone(),
                        ended_at: None,
                        last_heartbeat: None,
                        paused: false,
                        summary: None,
                        evidence: Vec::new(),
                        verification: Vec::new(),
                        risks: Vec::new(),
                        follow_ups: Vec::new(),
                    });
                }
            }
            ev::AgentCompleted::TYPE => {
                if let Some(pl) = payload::<p::AgentCompleted>(event) {
                    if let Some(agent) = self.agent_mut(&pl.agent_id) {
                        agent.paused = false;
                        agent.status = RunStatus::Completed;
                        agent.exit_code = pl.exit_code;
                        agent.ended_at = Some(ts.clone());
                        if let Some(result) = &pl.result {
                            agent.set_result(result);
                        }
                    }
                    if let Some(result) = &pl.result {
                        if let Some(t) = self.tasks.iter_mut().find(|t| t.id == result.task_id) {
                            workspace_view::reviewed(&mut t.workspace, result);
                        }
                    }
                }
            }
            ev::AgentPaused::TYPE | ev::AgentResumed::TYPE => {
                if let Some(pl) = payload::<p::AgentPauseChange>(event) {
                    if let Some(agent) = self.agent_mut(&pl.agent_id) {
                        agent.paused =
                            ty == ev::AgentPaused::TYPE && agent.status == RunStatus::Running;
                    }
                }
            }
            ev::AgentFailed::TYPE => {
                if let Some(pl) = payload::<p::AgentFailed>(event) {
                    if let Some(agent) = self.agent_mut(&pl.agent_id) {
                        agent.paused = false;
                        agent.status = RunStatus::Failed;
                        agent.exit_code = pl.exit_code;
                        agent.reason = Some(pl.reason);
                        agent.ended_at = Some(ts.clone());
                    }
                }
            }
            ev::ToolStarted::TYPE => {
                if let Some(pl) = payload::<p::ToolStarted>(event) {
                    self.counters.tool_runs += 1;
                    push_recent(
                        &mut self.tool_runs,
                        ToolRunView {
                            id: pl.tool_run_id,
                            tool: pl.tool,
                            agent_id: pl.agent_id,
                            task_id: pl.task_id,
                            status: RunStatus::Running,
                            input: brief_input(&pl.input),
                            output: None,
                            error: None,
                            started_at: ts.clone(),
                            ended_at: None,
                            duration_ms: None,
                        },
                    );
                }
            }
            ev::ToolCompleted::TYPE | ev::ToolFailed::TYPE => {
                let (id, output, error, duration_ms, todos) = if ty == ev::ToolCompleted::TYPE {
                    match payload::<p::ToolCompleted>(event) {
                        Some(pl) => (
                            pl.tool_run_id,
                            pl.output.as_ref().and_then(brief_output),
                            None,
                            pl.duration_ms,
                            pl.output.as_ref().and_then(crate::todo::from_output),
                        ),
                        None => return,
                    }
                } else {
                    match payload::<p::ToolFailed>(event) {
                        Some(pl) => (pl.tool_run_id, None, Some(pl.error), pl.duration_ms, None),
                        None => return,
                    }
                };
                // A todo list kept: the task's latest.
                let kept = self
                    .tool_runs
                    .iter()
                    .find(|r| r.id == id && r.tool == "todo.write")
                    .and_then(|r| r.task_id.clone())
                    .zip(todos);
                if let Some((task, todos)) = kept {
                    if let Some(t) = self.tasks.iter_mut().find(|t| t.id == task) {
                        t.todos = todos;
                    }
                }
                if let Some(run) = self.tool_runs.iter_mut().find(|r| r.id == id) {
                    run.status = if error.is_some() {
                        RunStatus::Failed
                    } else {
                        RunStatus::Completed
                    };
                    run.output = output;
                    run.error = error;
                    run.ended_at = Some(ts.clone());
                    run.duration_ms = duration_ms;
                }
            }
            ev::CommandStarted::TYPE => {
                if let Some(pl) = payload::<p::CommandStarted>(event) {
                    self.counters.command_runs += 1;
                    push_recent(
                        &mut self.command_runs,
                        CommandRunView {
                            id: pl.command_run_id,
                            command: pl.command,
                            tool_run_id: pl.tool_run_id,
                            agent_id: pl.agent_id,
                            task_id: pl.task_id,
                            status: RunStatus::Running,
                            exit_code: None,
                            error: None,
                            started_at: ts.clone(),
                            ended_at: None,
                            duration_ms: None,
                        },
                    );
                }
            }
            ev::CommandCompleted::TYPE | ev::CommandFailed::TYPE => {
                let (id, status, exit_code, error, duration_ms) =
                    if ty == ev::CommandCompleted::TYPE {
                        match payload::<p::CommandCompleted>(event) {
                            Some(pl) => (
                                pl.command_run_id,
                                RunStatus::Completed,
                                Some(pl.exit_code),
                                None,
                                pl.duration_ms,
                            ),
                            None => return,
                        }
                    } else {
                        match payload::<p::CommandFailed>(event) {
                            Some(pl) => (
                                pl.command_run_id,
                                RunStatus::Failed,
                                pl.exit_code,
                                Some(pl.error),
                                pl.duration_ms,
                            ),
                            None => return,
                        }
                    };
                if let Some(run) = self.command_runs.iter_mut().find(|r| r.id == id) {
                    run.status = status;
                    run.exit_code = exit_code;
                    run.error = error;
                    run.ended_at = Some(ts.clone());
                    run.duration_ms = duration_ms;
                }
            }
            ev::ArtifactCreated::TYPE => self.counters.artifacts += 1,
            t if t.starts_with("workspace.") => {
                let slots = self
                    .tasks
                    .iter_mut()
                    .map(|t| (t.id.as_str(), &mut t.workspace));
                workspace_view::apply(slots, t, &event.payload)
            }
            ev::DiagnosticCreated::TYPE => self.counters.diagnostics += 1,
            ev::EvidenceCreated::TYPE => {
                self.counters.evidence += 1;
                if let Some(pl) = payload::<p::EvidenceCreated>(event) {
                    let Some(kind) = pl.evidence.evidence_type else {
                        return;
                    };
                    if let Some(task) = pl.task_id.as_deref().and_then(|id| self.task_mut(id)) {
                        task.evidence.push(EvidenceView {
                            id: pl.evidence.id,
                            evidence_type: kind.as_str().to_string(),
                            claim: pl.evidence.claim,
                            reference: pl.evidence.reference,
                            agent_id: pl.agent_id,
                        });
                        if task.evidence.len() > TASK_EVIDENCE_LIMIT {
                            task.evidence.remove(0);
                        }
                    }
                }
            }
            ev::PermissionRequested::TYPE => {
                if let Some(request) = payload::<p::PermissionRequested>(event) {
                    self.permission_requests.push(PermissionRequestView {
                        request,
                        requested_at: ts.clone(),
                    });
                }
            }
            ev::PermissionDecisionRecorded::TYPE => {
                if let Some(pl) = payload::<p::PermissionDecisionRecorded>(event) {
                    if pl.decision == p::PermissionDecision::Deny && pl.decided_by != p::EXPIRED {
                        self.counters.permission_denials += 1;
                    }
                    if let Some(id) = pl.request_id {
                        self.permission_requests
                            .retain(|r| r.request.request_id != id);
                    }
                }
            }
            ev::AgentHeartbeat::TYPE => {
                if let Some(pl) = payload::<p::AgentHeartbeat>(event) {
                    if let Some(agent) = self.agent_mut(&pl.agent_id) {
                        agent.last_heartbeat = Some(HeartbeatView {
                            at: ts.clone(),
                            state: pl.state,
                            turn: pl.turn,
                            input_tokens: pl.input_tokens,
                            output_tokens: pl.output_tokens,
                        });
                    }
                }
            }
            ev::TaskProgress::TYPE => {
                if let Some(pl) = payload::<p::TaskProgress>(event) {
                    let id = pl.task_id.clone();
                    if let Some(task) = self.task_mut(&id) {
                        task.progress = Some(pl);
                    }
                }
            }
            _ => {}
        }
    }

    fn apply_task_status(&mut self, status: TaskStatus, pl: p::TaskStatusChanged, ts: &IsoTime) {
        let Some(task) = self.task_mut(&pl.task_id) else {
            return;
        };
        task.status = status;
        if status == TaskStatus::Running {
            let attempt = pl
                .attempt
                .unwrap_or_else(|| task.attempts.saturating_add(1));
            task.attempts = task.attempts.max(attempt);
        }
        if pl.agent_id.is_some() {
            task.agent_id = pl.agent_id;
        }
        task.reason = pl.reason;
        task.updated_at = ts.clone();
        if status.is_terminal() {
            task.progress = None;
        }
    }
}

/// The JSON string form of a unit enum value (`TaskCategory::CppLogic` → `cpp_logic`).
pub fn enum_str<T: Serialize>(value: &T) -> Option<String> {
    match serde_json::to_value(value) {
        Ok(Value::String(s)) => Some(s),
        _ => None,
    }
}

impl Projection {
    /// The task graph as it stands, for drawing.
    pub fn drawing(&self) -> crate::plan::graph::Drawing {
        crate::plan::graph::Drawing::new(
            self.tasks
                .iter()
                .map(|t| (t.id.clone(), t.title.clone(), t.phase.clone()))
                .collect(),
            self.edges
                .iter()
                .map(|e| {
                    (
                        e.depends_on_task_id.clone(),
                        e.task_id.clone(),
                        e.dependency_type,
                    )
                })
                .collect(),
        )
    }
}
