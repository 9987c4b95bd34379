//! The TUI's state: the session's projection (a snapshot advanced by the live
//! deltas, exactly as airsd folds them) and the UI's own state (selection, focus,
//! scroll, dialogs). Rendering is a pure function of it (`view`), and keys turn into
//! changes of the UI state or into commands for airsd.

use std::collections::{HashMap, VecDeque};

use air_proto::api::{SessionUpdate, Snapshot};
use air_proto::event::RuntimeEvent;
use air_proto::payload as p;
use air_proto::projection::{Projection, TaskStatus};

use crate::keymap::{Action, Keymap};

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
}

/// The daemon connection as the user sees it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Link {
    #[default]
    Connected,
    /// Lost; trying again (attempt n), with why it was lost.
    Reconnecting { attempt: u32, reason: String },
}

/// What a key asks airsd to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    Detach,
    Approve {
        request_id: String,
    },
    Deny {
        request_id: String,
    },
    CancelTask {
        task_id: String,
    },
    CancelRun,
    /// Continue an ended run: its failed and blocked tasks run again.
    Retry,
    Pause,
    Resume,
    /// Open a file in `$EDITOR` (the TUI steps aside until it exits).
    Edit {
        path: String,
    },
    /// Put text on the clipboard (OSC 52, which terminals and tmux pass on).
    Copy {
        text: String,
    },
}

/// A key, as the TUI reads it (independent of the terminal library).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Key {
    Char(char),
    Ctrl(char),
    Up,
    Down,
    PageUp,
    PageDown,
    Home,
    End,
    Tab,
    Enter,
    Esc,
    Backspace,
}

/// How well `query` matches `name` as a subsequence, case-insensitive (higher is
/// better; `None`: no match). Consecutive letters and word starts count more.
pub fn fuzzy(query: &str, name: &str) -> Option<u32> {
    let name: Vec<char> = name.to_lowercase().chars().collect();
    let mut score = 0;
    let mut at = 0;
    let mut last: Option<usize> = None;
    for q in query.to_lowercase().chars().filter(|c| !c.is_whitespace()) {
        let i = (at..name.len()).find(|&i| name[i] == q)?;
        score += 1;
        if last.is_some_and(|l| l + 1 == i) {
            score += 3;
        }
        if i == 0 || name[i - 1] == ' ' {
            score += 2;
        }
        last = Some(i);
        at = i + 1;
    }
    Some(score)
}

/// The command palette (Ctrl-P): a query and the actions that match it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CommandPalette {
    pub query: String,
    pub selected: usize,
}

impl CommandPalette {
    /// The matching actions, best first (all of them for an empty query).
    pub fn matches(&self) -> Vec<Action> {
        let mut m: Vec<(u32, usize)> = Action::ALL
            .iter()
            .enumerate()
            .filter(|(_, a)| a.0 != Action::Palette)
            .filter_map(|(i, a)| fuzzy(&self.query, a.2).map(|s| (s, i)))
            .collect();
        m.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        m.into_iter().map(|(_, i)| Action::ALL[i].0).collect()
    }
}

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
    pub help: bool,
    /// A task cancel waiting for `y`.
    pub confirm_cancel: Option<String>,
    /// A whole-run cancel waiting for `y`.
    pub confirm_cancel_run: bool,
    /// The last message for the user (an answer, an error).
    pub toast: Option<String>,
    /// The command palette, when open.
    pub palette: Option<CommandPalette>,
    /// The event filter being typed (`/`).
    pub filter_input: Option<String>,
    /// The event log shows only lines containing this (case-insensitive).
    pub filter: Option<String>,
    /// The user scrolled to the top of the log: fetch older events.
    pub want_older: bool,
}

pub struct App {
    pub projection: Projection,
    pub ui: Ui,
    pub link: Link,
    /// The event log, one line per event (durable and ephemeral), newest last.
    pub log: VecDeque<String>,
    /// The live text of each agent's current message, by agent id.
    pub streams: HashMap<String, String>,
    /// The latest file change of each task: the path and its unified diff.
    pub diffs: HashMap<String, (String, String)>,
    /// The latest command output of each task (its last lines), with the command.
    pub output: HashMap<String, (String, VecDeque<String>)>,
    /// The seq of the oldest stored event the log holds (older ones are fetched on
    /// demand).
    pub oldest_seq: Option<u64>,
    /// Frames drawn (drives the spinner).
    pub frame: u64,
    pub keymap: Keymap,
}

impl App {
    pub fn new(snapshot: Snapshot) -> App {
        App {
            projection: snapshot.projection,
            ui: Ui::default(),
            link: Link::Connected,
            log: VecDeque::new(),
            streams: HashMap::new(),
            diffs: HashMap::new(),
            output: HashMap::new(),
            oldest_seq: None,
            frame: 0,
            keymap: Keymap::default(),
        }
    }

    /// Puts stored events (older than the snapshot) at the top of the log, so an
    /// attach shows what happened before it.
    /// `events` are stored events (`(seq, event)`, oldest first), all older than what
    /// the log holds.
    pub fn history(&mut self, events: &[(u64, RuntimeEvent)]) {
        for (_, e) in events {
            if e.event_type == "tool.completed" {
                self.note_diff(e);
            }
        }
        for (_, e) in events.iter().rev() {
            if !matches!(e.event_type.as_str(), "token.delta" | "agent.heartbeat") {
                self.log.push_front(log_line(e));
            }
        }
        if let Some((seq, _)) = events.first() {
            self.oldest_seq = Some(*seq);
        }
        self.ui.want_older = false;
        self.trim_log();
    }

    /// The page of older events the log wants next (`after_seq`, `limit`), when the
    /// user has scrolled to its top and there are older events.
    pub fn older_page(&self) -> Option<(u64, u32)> {
        let oldest = self.oldest_seq?;
        (self.ui.want_older && oldest > 1).then(|| {
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
        self.projection = snapshot.projection;
        self.streams.clear();
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
                self.log.push_back(format!("— resynchronized: {reason}"));
                self.reset(*snapshot);
            }
            SessionUpdate::CaughtUp { .. } => {}
            other => {
                for d in other.into_deltas() {
                    self.event(d.seq, &d.event, d.durable);
                }
            }
        }
        self.trim_log();
    }

    fn event(&mut self, seq: u64, event: &RuntimeEvent, durable: bool) {
        if durable && seq <= self.projection.seq {
            return;
        }
        self.projection.apply(seq, event, durable);
        match event.event_type.as_str() {
            "token.delta" => {
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
            "assistant.message.created" => {
                if let Some(agent) = event.payload.get("agent_id").and_then(|a| a.as_str()) {
                    self.streams.remove(agent);
                }
            }
            "stdout.delta" | "stderr.delta" => {
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
            "tool.completed" => self.note_diff(event),
            "agent.heartbeat" | "tool.stream" => return,
            "permission.decision.recorded" => {
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
        self.log.push_back(log_line(event));
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
            // What was dropped must be fetched again to be seen.
            self.oldest_seq = Some(self.projection.seq.saturating_sub(self.log.len() as u64));
        }
    }

    /// The tasks in display order (plan order).
    pub fn tasks(&self) -> &[air_proto::projection::TaskView] {
        &self.projection.tasks
    }

    pub fn selected_task(&self) -> Option<&air_proto::projection::TaskView> {
        self.projection.tasks.get(self.ui.selected)
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
    }

    /// Handles a key: changes the UI state, or returns a command for airsd.
    pub fn key(&mut self, key: Key) -> Option<Command> {
        self.ui.toast = None;
        // Modal input first: the palette's query, the filter being typed, a
        // confirmation, the help screen.
        if let Some(mut palette) = self.ui.palette.take() {
            match key {
                Key::Esc => return None,
                Key::Enter => {
                    return palette
                        .matches()
                        .get(palette.selected)
                        .and_then(|a| self.act(*a));
                }
                Key::Up => palette.selected = palette.selected.saturating_sub(1),
                Key::Down => {
                    palette.selected =
                        (palette.selected + 1).min(palette.matches().len().saturating_sub(1))
                }
                Key::Backspace => {
                    palette.query.pop();
                    palette.selected = 0;
                }
                Key::Char(c) => {
                    palette.query.push(c);
                    palette.selected = 0;
                }
                _ if self.keymap.action(key) == Some(Action::Palette) => return None,
                _ => {}
            }
            self.ui.palette = Some(palette);
            return None;
        }
        if let Some(mut text) = self.ui.filter_input.take() {
            match key {
                Key::Esc => {}
                Key::Enter => {
                    self.ui.filter = (!text.trim().is_empty()).then(|| text.trim().to_string());
                    self.ui.log_scroll = 0;
                }
                Key::Backspace => {
                    text.pop();
                    self.ui.filter_input = Some(text);
                }
                Key::Char(c) => {
                    text.push(c);
                    self.ui.filter_input = Some(text);
                }
                _ => self.ui.filter_input = Some(text),
            }
            return None;
        }
        if let Some(task) = self.ui.confirm_cancel.take() {
            return matches!(key, Key::Char('y') | Key::Char('Y'))
                .then_some(Command::CancelTask { task_id: task });
        }
        if std::mem::take(&mut self.ui.confirm_cancel_run) {
            return matches!(key, Key::Char('y') | Key::Char('Y')).then_some(Command::CancelRun);
        }
        if self.ui.help {
            self.ui.help = false;
            return None;
        }
        let action = self.keymap.action(key)?;
        self.act(action)
    }

    /// Does what an action does.
    pub fn act(&mut self, action: Action) -> Option<Command> {
        if let Some(req) = self.open_request() {
            // A permission question is open: answer it, or detach, or search the
            // actions; nothing else until it is answered.
            let request_id = req.request.request_id.clone();
            return match action {
                Action::Approve => Some(Command::Approve { request_id }),
                Action::Deny => Some(Command::Deny { request_id }),
                Action::Detach => Some(Command::Detach),
                Action::Palette => {
                    self.ui.palette = Some(CommandPalette::default());
                    None
                }
                _ => None,
            };
        }
        let n = self.projection.tasks.len();
        let log_end = self.log.len().saturating_sub(1);
        match action {
            Action::Detach => return Some(Command::Detach),
            Action::Help => self.ui.help = true,
            Action::Palette => self.ui.palette = Some(CommandPalette::default()),
            Action::View => {
                self.ui.layout = match self.ui.layout {
                    Layout::List => Layout::Waves,
                    Layout::Waves => Layout::Graph,
                    Layout::Graph => Layout::List,
                }
            }
            Action::Filter => {
                self.ui.filter_input = Some(self.ui.filter.clone().unwrap_or_default());
            }
            Action::NextPane => {
                self.ui.focus = match self.ui.focus {
                    Pane::Tasks => Pane::Detail,
                    Pane::Detail => Pane::Log,
                    Pane::Log => Pane::Tasks,
                }
            }
            Action::Down => match self.ui.focus {
                Pane::Log => self.ui.log_scroll = self.ui.log_scroll.saturating_sub(1),
                _ => self.ui.selected = (self.ui.selected + 1).min(n.saturating_sub(1)),
            },
            Action::Up => match self.ui.focus {
                Pane::Log => {
                    self.ui.log_scroll = (self.ui.log_scroll + 1).min(log_end);
                    self.ui.want_older = self.ui.log_scroll >= log_end;
                }
                _ => self.ui.selected = self.ui.selected.saturating_sub(1),
            },
            Action::PageUp => {
                self.ui.log_scroll = (self.ui.log_scroll + 10).min(log_end);
                self.ui.want_older = self.ui.log_scroll >= log_end;
            }
            Action::PageDown => self.ui.log_scroll = self.ui.log_scroll.saturating_sub(10),
            Action::First => self.ui.selected = 0,
            Action::Last => self.ui.selected = n.saturating_sub(1),
            Action::Cancel => {
                if let Some(t) = self.selected_task().filter(|t| !t.status.is_terminal()) {
                    self.ui.confirm_cancel = Some(t.id.clone());
                }
            }
            Action::Pause => {
                let paused = self.projection.run.as_ref().is_some_and(|r| r.paused);
                return Some(if paused {
                    Command::Resume
                } else {
                    Command::Pause
                });
            }
            Action::Approve | Action::Deny => {
                self.ui.toast = Some("no permission request is waiting".into());
            }
            Action::CancelRun => {
                if self
                    .projection
                    .run
                    .as_ref()
                    .is_some_and(|r| r.ended_at.is_none())
                {
                    self.ui.confirm_cancel_run = true;
                } else {
                    self.ui.toast = Some("the run has ended".into());
                }
            }
            Action::Retry => {
                let ended = self
                    .projection
                    .run
                    .as_ref()
                    .is_some_and(|r| r.ended_at.is_some());
                let unfinished = self.projection.tasks.iter().any(|t| {
                    matches!(
                        t.status,
                        TaskStatus::Failed | TaskStatus::Blocked | TaskStatus::Cancelled
                    )
                });
                match (ended, unfinished) {
                    (true, true) => return Some(Command::Retry),
                    (true, false) => {
                        self.ui.toast = Some("nothing to retry: every task completed".into())
                    }
                    (false, _) => {
                        self.ui.toast = Some(
                            "the run is still going; retry its failed tasks once it has ended"
                                .into(),
                        )
                    }
                }
            }
            Action::Edit => {
                let path = self
                    .selected_task()
                    .and_then(|t| self.diffs.get(&t.id))
                    .map(|(p, _)| p.clone());
                match path {
                    Some(path) => return Some(Command::Edit { path }),
                    None => {
                        self.ui.toast = Some("no changed file to open for this task yet".into())
                    }
                }
            }
            Action::Copy => {
                if let Some(t) = self.selected_task() {
                    return Some(Command::Copy { text: t.id.clone() });
                }
            }
        }
        None
    }

    /// What of the UI is kept for next time (`ui_state` under `attach`, D-053): the
    /// selected task, the layout, the focused pane, the event filter.
    pub fn saved_ui(&self) -> serde_json::Value {
        serde_json::json!({
            "selected_task": self.selected_task().map(|t| t.id.clone()),
            "layout": match self.ui.layout { Layout::List => "list", Layout::Waves => "waves", Layout::Graph => "graph" },
            "focus": match self.ui.focus { Pane::Tasks => "tasks", Pane::Detail => "detail", Pane::Log => "log" },
            "filter": self.ui.filter,
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
        self.ui.focus = match v.get("focus").and_then(|s| s.as_str()) {
            Some("detail") => Pane::Detail,
            Some("log") => Pane::Log,
            _ => Pane::Tasks,
        };
        self.ui.filter = v
            .get("filter")
            .and_then(|s| s.as_str())
            .filter(|s| !s.is_empty())
            .map(str::to_string);
    }

    /// The event-log lines shown: all, or those matching the filter.
    pub fn visible_log(&self) -> Vec<&str> {
        match &self.ui.filter {
            Some(f) => {
                let f = f.to_lowercase();
                self.log
                    .iter()
                    .filter(|l| l.to_lowercase().contains(&f))
                    .map(String::as_str)
                    .collect()
            }
            None => self.log.iter().map(String::as_str).collect(),
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
                        .filter(|t| t.status == *s)
                        .count(),
                )
            })
            .filter(|(_, n)| *n > 0)
            .collect()
    }
}

/// One event as a line of the log: time, type, and what matters in it.
fn log_line(e: &RuntimeEvent) -> String {
    let time = e.timestamp.get(11..19).unwrap_or("");
    let who = e
        .payload
        .get("task_id")
        .and_then(|v| v.as_str())
        .or_else(|| e.payload.get("agent_id").and_then(|v| v.as_str()))
        .unwrap_or("");
    let detail = ["reason", "tool", "command", "action", "summary"]
        .iter()
        .find_map(|k| e.payload.get(*k).and_then(|v| v.as_str()))
        .unwrap_or("");
    let mut line = format!("{time} {:<24} {who}", e.event_type);
    if !detail.is_empty() {
        line.push_str("  ");
        line.extend(
            detail
                .chars()
                .take(160)
                .map(|c| if c == '\n' { ' ' } else { c }),
        );
    }
    line
}

/// One session of the picker.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PickerRow {
    pub id: String,
    pub title: String,
    /// What its run is doing: `running`, `completed`, … or `no run`.
    pub state: String,
    pub created_at: String,
}

/// The session picker `air attach` shows when there are several sessions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Picker {
    pub rows: Vec<PickerRow>,
    pub selected: usize,
}

/// What the picker ends with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Picked {
    Session(String),
    Quit,
}

impl Picker {
    /// The rows newest first; the newest with a run going is preselected.
    pub fn new(rows: Vec<PickerRow>) -> Picker {
        let selected = rows.iter().position(|r| r.state == "running").unwrap_or(0);
        Picker { rows, selected }
    }

    pub fn key(&mut self, key: Key) -> Option<Picked> {
        let n = self.rows.len();
        match key {
            Key::Char('q') | Key::Esc | Key::Ctrl('c') | Key::Ctrl('d') => {
                return Some(Picked::Quit)
            }
            Key::Enter => {
                return self
                    .rows
                    .get(self.selected)
                    .map(|r| Picked::Session(r.id.clone()))
            }
            Key::Char('j') | Key::Down => {
                self.selected = (self.selected + 1).min(n.saturating_sub(1))
            }
            Key::Char('k') | Key::Up => self.selected = self.selected.saturating_sub(1),
            Key::Home | Key::Char('g') => self.selected = 0,
            Key::End | Key::Char('G') => self.selected = n.saturating_sub(1),
            _ => {}
        }
        None
    }
}
