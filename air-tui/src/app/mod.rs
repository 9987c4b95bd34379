//! The TUI's state: the session's projection (a snapshot advanced by the live
//! deltas, exactly as airsd folds them) and the UI's own state (selection, focus,
//! scroll, dialogs). Rendering is a pure function of it (`view`), and keys turn into
//! changes of the UI state or into commands for airsd.

use air_proto::events as ev;
use std::collections::{HashMap, VecDeque};

use air_proto::api::{SessionUpdate, Snapshot};
use air_proto::event::RuntimeEvent;
use air_proto::payload as p;
use air_proto::projection::{Projection, TaskStatus};

pub use crate::keymap::Key;
use crate::keymap::{Action, Keymap};

mod chat;
mod dialogs;
mod input;
mod log;
mod rows;

pub use chat::{Chat, Said};
pub use dialogs::{fuzzy, CommandPalette, ExampleRow, Picked, Picker, PickerRow, Viewer};
pub use log::{LogFilter, LogLine};
pub use rows::{first_row, task_rows, Row};

/// Event-log lines kept in memory (older ones are read back with `events.list`).
pub const LOG_LINES: usize = 10_000;
/// Characters of an agent's live token stream kept (its tail).
pub const STREAM_CHARS: usize = 16 * 1024;
/// Stored events fetched per page when the user reads back through the log.
pub const PAGE: u32 = 500;
/// Lines of a task's latest command output kept.
pub const OUTPUT_LINES: usize = 200;
/// Characters of a task's latest diff kept.
pub const DIFF_CHARS: usize = 32 * 1024;

/// Which pane has the keys.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Pane {
    #[default]
    Tasks,
    Detail,
    Log,
    /// The conversation's input box.
    Chat,
}

/// The daemon connection as the user sees it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Link {
    #[default]
    Connected,
    /// Lost; trying again (attempt n), with why it was lost.
    Reconnecting { attempt: u32, reason: String },
    /// The daemon was asked to stop: no other is started from here; the view comes
    /// back when one starts.
    Stopped,
}

/// What a key asks airsd to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    Detach,
    /// Say this in the session's conversation (`message.send`).
    Send {
        text: String,
    },
    Approve {
        request_id: String,
    },
    Deny {
        request_id: String,
    },
    /// Answer a planning turn: agree to its stated requirements, or go ahead without
    /// answering its questions (`planning.answer`).
    GoAhead {
        task_id: String,
    },
    /// Answer the plan a planning turn proposed (`planning.decide`).
    DecidePlan {
        task_id: String,
        decision: air_proto::planning::PlanDecision,
    },
    CancelTask {
        task_id: String,
    },
    CancelRun,
    /// Run ended tasks again: these (failed, blocked or cancelled, with what waits on
    /// them; the run may still be going), or with none every unfinished task of an
    /// ended run.
    Retry {
        task_ids: Vec<String>,
    },
    Pause,
    Resume,
    /// Hold the task's running agent between its steps, or let it go on.
    PauseTask {
        task_id: String,
    },
    ResumeTask {
        task_id: String,
    },
    /// Open a file in `$EDITOR` (the TUI steps aside until it exits).
    Edit {
        path: String,
    },
    /// Put text on the clipboard (OSC 52, which terminals and tmux pass on).
    Copy {
        text: String,
    },
    /// Read a command's whole output (its stored logs, `artifact.read`) into the
    /// viewer.
    ShowOutput {
        command_run_id: String,
        command: String,
    },
    /// Read the stored events `from..=to` (seqs) into the viewer, as JSON.
    ShowEvents {
        from: u64,
        to: u64,
    },
    /// Open text in `$EDITOR` (written to a file of this name in the temp directory).
    EditText {
        name: String,
        text: String,
    },
}

/// What the mouse did, and where (cells from the screen's top-left corner).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mouse {
    Click { x: u16, y: u16 },
    ScrollUp { x: u16, y: u16 },
    ScrollDown { x: u16, y: u16 },
}

/// Lines a wheel notch scrolls.
pub(crate) const WHEEL_LINES: usize = 3;

/// How the tasks are shown.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Layout {
    #[default]
    List,
    /// Grouped by wave (the order their hard dependencies allow).
    Waves,
    /// Boxes and edges (falls back to waves when the terminal is narrow).
    Graph,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ui {
    pub layout: Layout,
    /// Index into the task list.
    pub selected: usize,
    pub focus: Pane,
    /// Lines scrolled up from the end of the event log.
    pub log_scroll: usize,
    /// Lines the event log pane shows (set as the screen is laid out).
    pub log_rows: usize,
    pub help: bool,
    /// Lines the help is scrolled down.
    pub help_scroll: u16,
    /// A task cancel waiting for `y`.
    pub confirm_cancel: Option<String>,
    /// A whole-run cancel waiting for `y`.
    pub confirm_cancel_run: bool,
    /// The last message for the user (an answer, an error).
    pub toast: Option<String>,
    /// The command palette, when open.
    pub palette: Option<CommandPalette>,
    /// A long text shown over everything, when open.
    pub viewer: Option<Viewer>,
    /// A filter being typed (`/`): of the tasks when they have the keys, else of
    /// the events.
    pub filter_input: Option<String>,
    /// The event log shows only the lines this matches ([`LogFilter`]).
    pub filter: Option<String>,
    /// The task list shows only the tasks whose id, title, state, type or agent
    /// contain every word of this (case-insensitive).
    pub task_filter: Option<String>,
    /// Lines the detail pane is scrolled down.
    pub detail_scroll: u16,
    /// The user scrolled to the top of the log: fetch older events.
    pub want_older: bool,
}

pub struct App {
    pub projection: Projection,
    pub ui: Ui,
    pub link: Link,
    /// The event log, one line per event (durable and ephemeral), newest last.
    pub log: VecDeque<LogLine>,
    /// The live text of each agent's current message, by agent id.
    pub streams: HashMap<String, String>,
    /// The latest file change of each task: the path and its unified diff.
    pub diffs: HashMap<String, (String, String)>,
    /// The latest command output of each task (its last lines), with the command.
    pub output: HashMap<String, (String, VecDeque<String>)>,
    /// The seq of the oldest stored event the log holds (older ones are fetched on
    /// demand).
    pub oldest_seq: Option<u64>,
    /// Stored events the log misses after a resync or a reconnect: those after the
    /// first seq up to the second (the new snapshot's), to fetch with `events.list`.
    pub gap: Option<(u64, u64)>,
    /// Frames drawn (drives the spinner).
    pub frame: u64,
    /// The time running tasks' elapsed time is counted to (the clock, set each
    /// frame; `None`: not shown).
    pub now: Option<std::time::SystemTime>,
    pub keymap: Keymap,
    /// The conversation and its input box.
    pub chat: Chat,
    /// Who is attached to the session (`clients.list`, refreshed now and then).
    pub clients: Vec<air_proto::api::ClientInfo>,
    /// Reads the live events into the log's words.
    pub reader: air_proto::event_text::Reader,
}

impl App {
    pub fn new(snapshot: Snapshot) -> App {
        // A conversation's session opens on the conversation.
        let conversation = snapshot
            .projection
            .run
            .as_ref()
            .is_some_and(|r| r.plan == air_proto::conversation::CONVERSATION_PLAN);
        App {
            chat: Chat {
                shown: conversation,
                ..Chat::default()
            },
            ui: Ui {
                focus: if conversation {
                    Pane::Chat
                } else {
                    Pane::Tasks
                },
                ..Ui::default()
            },
            clients: Vec::new(),
            reader: Default::default(),
            projection: snapshot.projection,
            link: Link::Connected,
            log: VecDeque::new(),
            streams: HashMap::new(),
            diffs: HashMap::new(),
            output: HashMap::new(),
            oldest_seq: None,
            gap: None,
            frame: 0,
            now: None,
            keymap: Keymap::default(),
        }
    }

    /// Puts stored events (older than the snapshot) at the top of the log, so an
    /// attach shows what happened before it.
    /// `events` are stored events (`(seq, event)`, oldest first), all older than what
    /// the log holds.
    pub fn history(&mut self, events: &[(u64, RuntimeEvent)]) {
        for (seq, e) in events {
            if e.event_type == ev::ToolCompleted::TYPE {
                self.note_diff(e);
            }
            self.chat_event(*seq, e);
        }
        // Read in order (a run's end names what it was), put before what is there.
        let mut reader = air_proto::event_text::Reader::default();
        let lines: Vec<LogLine> = events
            .iter()
            .filter(|(_, e)| {
                !matches!(
                    e.event_type.as_str(),
                    ev::TokenDelta::TYPE | ev::AgentHeartbeat::TYPE
                )
            })
            .map(|(seq, e)| LogLine::of(*seq, true, e, self.run_task(e), &mut reader))
            .collect();
        for line in lines.into_iter().rev() {
            self.log.push_front(line);
        }
        if let Some((seq, _)) = events.first() {
            self.oldest_seq = Some(*seq);
        }
        self.ui.want_older = false;
        self.trim_log();
    }

    /// Puts a line of the TUI's own in the log (after what the state reflects).
    pub fn note(&mut self, text: impl Into<String>) {
        let mut line = LogLine::note(text);
        line.seq = self.projection.seq;
        self.log.push_back(line);
    }

    /// Fills the log's gap after a resync or a reconnect with the stored events of it
    /// (`(seq, event)`, oldest first; `skipped`: how many more there were, left out),
    /// in their place: before what came live after the new snapshot.
    pub fn catch_up(&mut self, events: &[(u64, RuntimeEvent)], upto: u64, skipped: u64) {
        let at = self
            .log
            .iter()
            .position(|l| l.seq > upto || (l.seq == upto && !l.durable))
            .unwrap_or(self.log.len());
        let mut lines = Vec::new();
        if skipped > 0 {
            let mut line = LogLine::note(format!(
                "— {skipped} events while away not shown (`air events` lists them)"
            ));
            line.seq = upto;
            lines.push(line);
        }
        for (seq, e) in events {
            if e.event_type == ev::ToolCompleted::TYPE {
                self.note_diff(e);
            }
            if !matches!(
                e.event_type.as_str(),
                ev::TokenDelta::TYPE | ev::AgentHeartbeat::TYPE
            ) {
                let task = self.run_task(e).map(str::to_string);
                let line = LogLine::of(*seq, true, e, task.as_deref(), &mut self.reader);
                lines.push(line);
            }
        }
        for (i, line) in lines.into_iter().enumerate() {
            self.log.insert(at + i, line);
        }
        self.trim_log();
    }

    /// The page of older events the log wants next (`after_seq`, `limit`), when the
    /// user has scrolled to its top and there are older events.
    pub fn older_page(&self) -> Option<(u64, u32)> {
        let oldest = self.oldest_seq?;
        // Read back as far as memory allows (`air events` reads further).
        let room = self.log.len() + PAGE as usize <= LOG_LINES * 4;
        (self.ui.want_older && oldest > 1 && room).then(|| {
            let after = oldest.saturating_sub(u64::from(PAGE) + 1);
            (after, u32::try_from(oldest - 1 - after).unwrap_or(PAGE))
        })
    }

    /// The seq the state reflects.
    pub fn seq(&self) -> u64 {
        self.projection.seq
    }

    /// Starts over from a snapshot (after a resync or a reconnect), keeping the
    /// user's place: the selected task stays selected if it still exists.
    pub fn reset(&mut self, snapshot: Snapshot) {
        let selected = self.selected_task().map(|t| t.id.clone());
        let (before, after) = (self.projection.seq, snapshot.projection.seq);
        if after > before {
            let from = self.gap.map_or(before, |(from, _)| from.min(before));
            self.gap = Some((from, after));
        }
        self.projection = snapshot.projection;
        self.streams.clear();
        self.ui.detail_scroll = 0;
        if let Some(id) = selected {
            if let Some(i) = self.projection.tasks.iter().position(|t| t.id == id) {
                self.ui.selected = i;
            }
        }
        self.clamp();
    }

    /// Applies one notification of the subscription.
    pub fn update(&mut self, update: SessionUpdate) {
        match update {
            SessionUpdate::Resync { reason, snapshot } => {
                self.reset(*snapshot);
                self.note(format!("— resynchronized: {reason}"));
            }
            SessionUpdate::CaughtUp { .. } => {}
            other => {
                for d in other.into_deltas() {
                    self.event(d.seq, &d.event, d.durable);
                }
            }
        }
        self.trim_log();
        self.clamp();
    }

    fn event(&mut self, seq: u64, event: &RuntimeEvent, durable: bool) {
        if durable && seq <= self.projection.seq {
            return;
        }
        self.projection.apply(seq, event, durable);
        if durable {
            self.chat_event(seq, event);
            // A conversation that starts while attached opens on its pane.
            if event.event_type == ev::RunStarted::TYPE
                && event.payload.get("plan").and_then(|p| p.as_str())
                    == Some(air_proto::conversation::CONVERSATION_PLAN)
            {
                self.open_chat();
            }
        }
        match event.event_type.as_str() {
            ev::TokenDelta::TYPE => {
                if let Ok(d) = serde_json::from_value::<p::TokenDelta>(event.payload.clone()) {
                    if d.kind == p::DeltaKind::Text {
                        let agent = d.agent_id.unwrap_or_default();
                        let s = self.streams.entry(agent).or_default();
                        s.push_str(&d.text);
                        if s.len() > STREAM_CHARS {
                            let mut cut = s.len() - STREAM_CHARS;
                            while !s.is_char_boundary(cut) {
                                cut += 1;
                            }
                            s.drain(..cut);
                        }
                    }
                }
                return;
            }
            ev::AssistantMessageCreated::TYPE
            | ev::AgentCompleted::TYPE
            | ev::AgentFailed::TYPE => {
                // Its text is recorded, or it ended mid-message: no longer live.
                if let Some(agent) = event.payload.get("agent_id").and_then(|a| a.as_str()) {
                    self.streams.remove(agent);
                }
            }
            ev::StdoutDelta::TYPE | ev::StderrDelta::TYPE => {
                if let Ok(d) = serde_json::from_value::<p::OutputDelta>(event.payload.clone()) {
                    let run = self
                        .projection
                        .command_runs
                        .iter()
                        .rev()
                        .find(|c| c.id == d.command_run_id);
                    if let Some((task, command)) =
                        run.and_then(|c| Some((c.task_id.clone()?, c.command.clone())))
                    {
                        let (cmd, lines) = self
                            .output
                            .entry(task)
                            .or_insert_with(|| (command.clone(), VecDeque::new()));
                        if *cmd != command {
                            *cmd = command;
                            lines.clear();
                        }
                        for l in d.data.lines() {
                            lines.push_back(l.chars().take(300).collect());
                        }
                        while lines.len() > OUTPUT_LINES {
                            lines.pop_front();
                        }
                    }
                }
                return;
            }
            ev::ToolCompleted::TYPE => self.note_diff(event),
            ev::AgentHeartbeat::TYPE | "tool.stream" => return,
            ev::PlanDecided::TYPE | ev::QuestionsAnswered::TYPE => {
                // Every attached terminal says who answered, as its dialog closes.
                let field = |k: &str| event.payload.get(k).and_then(|v| v.as_str()).unwrap_or("");
                let what = match field("decision") {
                    "" => "answered",
                    "confirm" => "confirmed",
                    "change" => "sent back for changes",
                    _ => "rejected",
                };
                let by = match field("client") {
                    "" => "a client",
                    c => c,
                };
                self.ui.toast = Some(format!("{} {what} by {by}", field("task_id")));
            }
            ev::PermissionDecisionRecorded::TYPE => {
                // Every attached terminal says who answered, as its dialog closes.
                let field = |k: &str| event.payload.get(k).and_then(|v| v.as_str()).unwrap_or("");
                self.ui.toast = Some(format!(
                    "{} {} by {}",
                    field("request_id"),
                    match field("decision") {
                        "allow" => "approved",
                        "deny" => "denied",
                        other => other,
                    },
                    field("decided_by")
                ));
            }
            _ => {}
        }
        let task = self.run_task(event).map(str::to_string);
        let line = LogLine::of(seq, durable, event, task.as_deref(), &mut self.reader);
        // Read back, the view stays on the lines the user is reading.
        if self.ui.log_scroll > 0
            && self
                .ui
                .filter
                .as_deref()
                .is_none_or(|f| LogFilter::parse(f).matches(&line))
        {
            self.ui.log_scroll += 1;
        }
        self.log.push_back(line);
    }

    /// Whether the conversation is shown in a session with no plan's tasks (only
    /// the Main Agent's turns and direct lanes), and whether it has direct lanes.
    pub fn conversation_only(&self) -> (bool, bool) {
        use air_proto::conversation::{is_any_turn, is_direct};
        let tasks = self.tasks();
        let only = self.chat.shown && tasks.iter().all(|t| is_any_turn(&t.id) || is_direct(&t.id));
        (only, tasks.iter().any(|t| !is_any_turn(&t.id)))
    }

    /// The task of the tool or command run an event names (the projection keeps the
    /// recent runs).
    fn run_task(&self, event: &RuntimeEvent) -> Option<&str> {
        let field = |k: &str| event.payload.get(k).and_then(|v| v.as_str());
        let p = &self.projection;
        if let Some(id) = field("tool_run_id") {
            p.tool_runs
                .iter()
                .rev()
                .find(|r| r.id == id)?
                .task_id
                .as_deref()
        } else {
            let id = field("command_run_id")?;
            p.command_runs
                .iter()
                .rev()
                .find(|r| r.id == id)?
                .task_id
                .as_deref()
        }
    }

    /// Keeps a completed edit's diff as its task's latest change.
    fn note_diff(&mut self, event: &RuntimeEvent) {
        // An edit's diff; a file the agent created has none, and counts as changed.
        let created =
            event.payload.pointer("/output/created") == Some(&serde_json::Value::Bool(true));
        let diff = event
            .payload
            .pointer("/output/diff")
            .and_then(|d| d.as_str())
            .or(created.then_some("+ (a new file)"));
        let path = event
            .payload
            .pointer("/output/path")
            .and_then(|d| d.as_str());
        let run = event.payload.get("tool_run_id").and_then(|r| r.as_str());
        if let (Some(diff), Some(path), Some(run)) = (diff, path, run) {
            let task = self
                .projection
                .tool_runs
                .iter()
                .rev()
                .find(|t| t.id == run)
                .and_then(|t| t.task_id.clone());
            if let Some(task) = task {
                let kept: String = diff.chars().take(DIFF_CHARS).collect();
                self.diffs.insert(task, (path.to_string(), kept));
            }
        }
    }

    /// Keeps the log bounded: to [`LOG_LINES`] while the user follows its end; while
    /// they read back through older pages, up to four times that.
    fn trim_log(&mut self) {
        let bound = if self.ui.log_scroll == 0 {
            LOG_LINES
        } else {
            LOG_LINES * 4
        };
        let mut dropped = false;
        while self.log.len() > bound {
            self.log.pop_front();
            dropped = true;
        }
        if dropped {
            // What was dropped is fetched again to be seen: every stored event before
            // the oldest stored one still held (or, if none is, after the state's).
            self.oldest_seq = Some(
                self.log
                    .iter()
                    .find(|l| l.durable)
                    .map_or(self.projection.seq + 1, |l| l.seq),
            );
        }
    }

    /// The tasks in display order (plan order).
    pub fn tasks(&self) -> &[air_proto::projection::TaskView] {
        &self.projection.tasks
    }

    pub fn selected_task(&self) -> Option<&air_proto::projection::TaskView> {
        self.projection.tasks.get(self.ui.selected)
    }

    /// The first key bound to an action, as hints name it (the config may change it).
    pub fn key_for(&self, action: Action) -> String {
        let keys = self.keymap.keys_of(action);
        keys.split(' ').next().unwrap_or("").to_string()
    }

    /// Whether the task's running agent is held (`None`: no agent runs it).
    pub fn task_agent_paused(&self, t: &air_proto::projection::TaskView) -> Option<bool> {
        let id = t.agent_id.as_ref()?;
        self.projection
            .agents
            .iter()
            .rev()
            .find(|a| &a.id == id && a.status == air_proto::projection::RunStatus::Running)
            .map(|a| a.paused)
    }

    /// The planning session's turn whose questions, statement or proposal wait for
    /// the user, when no permission request is open (that comes first).
    pub fn open_planning(&self) -> Option<(&air_proto::planning_view::PlanningView, &str)> {
        if self.open_request().is_some() {
            return None;
        }
        let v = self.projection.planning.as_ref()?;
        let turn = v.waiting_on.as_deref()?;
        // Words only (no questions, nothing stated or proposed): the conversation
        // has them.
        let shown = v.proposed_by.as_deref() == Some(turn)
            || v.stated_by.as_deref() == Some(turn)
            || !v.questions.is_empty();
        shown.then_some((v, turn))
    }

    /// The permission request the dialog shows (the oldest open one).
    pub fn open_request(&self) -> Option<&air_proto::projection::PermissionRequestView> {
        self.projection.permission_requests.first()
    }

    fn clamp(&mut self) {
        let n = self.projection.tasks.len();
        if n == 0 {
            self.ui.selected = 0;
        } else if self.ui.selected >= n {
            self.ui.selected = n - 1;
        }
        // The selection stays on a task the list shows, when there is one.
        if !self.task_shown(self.ui.selected) {
            if let Some(i) = (0..n).find(|&i| self.task_shown(i)) {
                self.ui.selected = i;
            }
        }
    }

    /// What of the UI is kept for next time (`ui_state` under `attach`, D-053): the
    /// selected task, the layout, the focused pane, the event filter.
    pub fn saved_ui(&self) -> serde_json::Value {
        serde_json::json!({
            "selected_task": self.selected_task().map(|t| t.id.clone()),
            "layout": match self.ui.layout { Layout::List => "list", Layout::Waves => "waves", Layout::Graph => "graph" },
            "focus": match self.ui.focus { Pane::Tasks => "tasks", Pane::Detail => "detail", Pane::Log => "log", Pane::Chat => "chat" },
            "chat": self.chat.shown,
            "typed": self.chat.input,
            "filter": self.ui.filter,
            "task_filter": self.ui.task_filter,
        })
    }

    /// Takes back what [`App::saved_ui`] kept (unknown values are ignored).
    pub fn restore_ui(&mut self, v: &serde_json::Value) {
        if let Some(id) = v.get("selected_task").and_then(|s| s.as_str()) {
            if let Some(i) = self.projection.tasks.iter().position(|t| t.id == id) {
                self.ui.selected = i;
            }
        }
        self.ui.layout = match v.get("layout").and_then(|s| s.as_str()) {
            Some("waves") => Layout::Waves,
            Some("graph") => Layout::Graph,
            _ => Layout::List,
        };
        if let Some(shown) = v.get("chat").and_then(|s| s.as_bool()) {
            self.chat.shown = shown;
        }
        if let Some(typed) = v.get("typed").and_then(|s| s.as_str()) {
            self.chat.input = typed.to_string();
        }
        self.ui.focus = match v.get("focus").and_then(|s| s.as_str()) {
            Some("detail") => Pane::Detail,
            Some("log") => Pane::Log,
            Some("chat") if self.chat.shown => Pane::Chat,
            _ if self.chat.shown => Pane::Chat,
            _ => Pane::Tasks,
        };
        let text = |key: &str| {
            v.get(key)
                .and_then(|s| s.as_str())
                .filter(|s| !s.is_empty())
                .map(str::to_string)
        };
        self.ui.filter = text("filter");
        self.ui.task_filter = text("task_filter");
    }

    /// The event-log lines shown: all, or those the filter matches.
    /// The seqs of the stored events the log shows now (the first and the last in
    /// view), for the raw view.
    pub fn log_in_view(&self) -> Option<(u64, u64)> {
        let filter = self.ui.filter.as_deref().map(LogFilter::parse);
        let shown: Vec<&LogLine> = self
            .log
            .iter()
            .filter(|l| filter.as_ref().is_none_or(|f| f.matches(l)))
            .collect();
        let height = self.ui.log_rows.max(1);
        let scroll = self.ui.log_scroll.min(shown.len().saturating_sub(height));
        let end = shown.len().saturating_sub(scroll);
        let start = end.saturating_sub(height);
        let durable: Vec<u64> = shown[start..end]
            .iter()
            .filter(|l| l.durable && l.seq > 0)
            .map(|l| l.seq)
            .collect();
        Some((*durable.first()?, *durable.last()?))
    }

    pub fn visible_log(&self) -> Vec<&str> {
        let filter = self.ui.filter.as_deref().map(LogFilter::parse);
        self.log
            .iter()
            .filter(|l| filter.as_ref().is_none_or(|f| f.matches(l)))
            .map(|l| l.text.as_str())
            .collect()
    }

    /// Whether the task filter lets task `i` through.
    pub fn task_shown(&self, i: usize) -> bool {
        let Some(t) = self.projection.tasks.get(i) else {
            return false;
        };
        // The Main Agent's turns are the conversation's, shown in its pane.
        if air_proto::conversation::is_any_turn(&t.id) {
            return false;
        }
        let Some(filter) = &self.ui.task_filter else {
            return true;
        };
        let text = format!(
            "{} {} {} {} {}",
            t.id,
            t.title,
            t.status.as_str(),
            t.task_type,
            t.agent_id.as_deref().unwrap_or("")
        )
        .to_lowercase();
        filter
            .to_lowercase()
            .split_whitespace()
            .all(|w| text.contains(w))
    }

    /// The indexes of the tasks the filter lets through, in plan order.
    pub fn visible_tasks(&self) -> Vec<usize> {
        (0..self.projection.tasks.len())
            .filter(|&i| self.task_shown(i))
            .collect()
    }

    /// Moves the selection `by` shown tasks (negative: up), staying within them.
    pub(crate) fn step(&mut self, by: isize) {
        // In the order they are shown (in waves: wave by wave).
        let shown: Vec<usize> = task_rows(self)
            .into_iter()
            .filter_map(|r| match r {
                Row::Task(i) => Some(i),
                Row::Wave(_) => None,
            })
            .collect();
        let Some(last) = shown.len().checked_sub(1) else {
            return;
        };
        let to = match shown.iter().position(|&i| i == self.ui.selected) {
            Some(at) => at.saturating_add_signed(by).min(last),
            // The selected task is not shown (filtered out): the first or last shown.
            None if by > 0 => 0,
            None => last,
        };
        if shown[to] != self.ui.selected {
            self.ui.selected = shown[to];
            self.ui.detail_scroll = 0;
        }
    }

    /// Counts of tasks by state, in the order the status bar shows them.
    pub fn counts(&self) -> Vec<(TaskStatus, usize)> {
        let order = [
            TaskStatus::Running,
            TaskStatus::Reviewing,
            TaskStatus::Debugging,
            TaskStatus::Ready,
            TaskStatus::Pending,
            TaskStatus::Completed,
            TaskStatus::Failed,
            TaskStatus::Blocked,
            TaskStatus::Cancelled,
        ];
        order
            .iter()
            .map(|s| {
                (
                    *s,
                    self.projection
                        .tasks
                        .iter()
                        .filter(|t| t.status == *s && !air_proto::conversation::is_any_turn(&t.id))
                        .count(),
                )
            })
            .filter(|(_, n)| *n > 0)
            .collect()
    }
}
