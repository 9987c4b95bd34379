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
    /// Open text in `$EDITOR` (written to a file of this name in the temp directory).
    EditText {
        name: String,
        text: String,
    },
}

/// A full-screen view of a long text: a command's whole output, a whole diff.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Viewer {
    pub title: String,
    pub lines: Vec<String>,
    /// The first line shown.
    pub top: usize,
    /// Colour `+`/`-`/`@@` lines.
    pub diff: bool,
    /// The name it gets when opened in `$EDITOR`.
    pub name: String,
}

impl Viewer {
    pub fn new(title: String, name: String, text: &str, diff: bool) -> Viewer {
        Viewer {
            title,
            lines: text.lines().map(str::to_string).collect(),
            top: 0,
            diff,
            name,
        }
    }

    fn key(&mut self, key: Key) -> Option<Option<Command>> {
        let last = self.lines.len().saturating_sub(1);
        match key {
            Key::Esc | Key::Char('q') => return None,
            Key::Char('e') => {
                return Some(Some(Command::EditText {
                    name: self.name.clone(),
                    text: self.lines.join("\n"),
                }))
            }
            Key::Down | Key::Char('j') => self.top = (self.top + 1).min(last),
            Key::Up | Key::Char('k') => self.top = self.top.saturating_sub(1),
            Key::PageDown | Key::Char(' ') => self.top = (self.top + 20).min(last),
            Key::PageUp => self.top = self.top.saturating_sub(20),
            Key::Home | Key::Char('g') => self.top = 0,
            Key::End | Key::Char('G') => self.top = last,
            _ => {}
        }
        Some(None)
    }
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

/// What the mouse did, and where (cells from the screen's top-left corner).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mouse {
    Click { x: u16, y: u16 },
    ScrollUp { x: u16, y: u16 },
    ScrollDown { x: u16, y: u16 },
}

/// Lines a wheel notch scrolls.
const WHEEL_LINES: usize = 3;

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

/// One line of the event log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogLine {
    /// The seq of the event (for an ephemeral event, of the last durable one before
    /// it); 0 for the TUI's own notes.
    pub seq: u64,
    /// A stored event (as `events.list` returns it again).
    pub durable: bool,
    pub event_type: String,
    pub task: String,
    pub agent: String,
    /// What is shown: time, type, task or agent, and what matters in it.
    pub text: String,
}

impl LogLine {
    /// A line the TUI writes itself (a reconnect, a resync).
    pub fn note(text: impl Into<String>) -> LogLine {
        LogLine {
            seq: 0,
            durable: false,
            event_type: String::new(),
            task: String::new(),
            agent: String::new(),
            text: text.into(),
        }
    }

    /// One event as a line: time, type, and what matters in it. `run_task` is the
    /// task of the tool or command run the event names, for events that name no task.
    pub fn of(seq: u64, durable: bool, e: &RuntimeEvent, run_task: Option<&str>) -> LogLine {
        let field = |k: &str| e.payload.get(k).and_then(|v| v.as_str()).unwrap_or("");
        let task = Some(field("task_id"))
            .filter(|t| !t.is_empty())
            .or(run_task)
            .unwrap_or("");
        let agent = field("agent_id");
        let time = e.timestamp.get(11..19).unwrap_or("");
        let who = if task.is_empty() { agent } else { task };
        let detail = ["reason", "tool", "command", "action", "summary"]
            .iter()
            .map(|k| field(k))
            .find(|d| !d.is_empty())
            .unwrap_or("");
        let mut text = format!("{time} {:<24} {who}", e.event_type);
        if !detail.is_empty() {
            text.push_str("  ");
            text.extend(
                detail
                    .chars()
                    .take(160)
                    .map(|c| if c == '\n' { ' ' } else { c }),
            );
        }
        LogLine {
            seq,
            durable,
            event_type: e.event_type.clone(),
            task: task.to_string(),
            agent: agent.to_string(),
            text,
        }
    }
}

/// A filter of the event log: `type:`, `task:` and `agent:` terms (a trailing `*`
/// matches any rest: `type:tool.*`) and words the line must contain, all of them
/// (case-insensitive).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LogFilter {
    types: Vec<String>,
    tasks: Vec<String>,
    agents: Vec<String>,
    words: Vec<String>,
}

impl LogFilter {
    pub fn parse(text: &str) -> LogFilter {
        let mut f = LogFilter::default();
        for term in text.split_whitespace().map(str::to_lowercase) {
            match term.split_once(':') {
                Some(("type", v)) if !v.is_empty() => f.types.push(v.to_string()),
                Some(("task", v)) if !v.is_empty() => f.tasks.push(v.to_string()),
                Some(("agent", v)) if !v.is_empty() => f.agents.push(v.to_string()),
                _ => f.words.push(term),
            }
        }
        f
    }

    pub fn matches(&self, line: &LogLine) -> bool {
        // Several values of one field: any of them; different fields: all.
        let field = |pats: &[String], value: &str| {
            pats.is_empty() || pats.iter().any(|p| pattern(p, &value.to_lowercase()))
        };
        field(&self.types, &line.event_type)
            && field(&self.tasks, &line.task)
            && field(&self.agents, &line.agent)
            && (self.words.is_empty() || {
                let text = line.text.to_lowercase();
                self.words.iter().all(|w| text.contains(w.as_str()))
            })
    }
}

/// `p` matches `value` exactly, or as a prefix when it ends with `*`.
fn pattern(p: &str, value: &str) -> bool {
    match p.strip_suffix('*') {
        Some(prefix) => value.starts_with(prefix),
        None => p == value,
    }
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
        for (_, e) in events {
            if e.event_type == "tool.completed" {
                self.note_diff(e);
            }
        }
        for (seq, e) in events.iter().rev() {
            if !matches!(e.event_type.as_str(), "token.delta" | "agent.heartbeat") {
                let line = LogLine::of(*seq, true, e, self.run_task(e));
                self.log.push_front(line);
            }
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
            if e.event_type == "tool.completed" {
                self.note_diff(e);
            }
            if !matches!(e.event_type.as_str(), "token.delta" | "agent.heartbeat") {
                lines.push(LogLine::of(*seq, true, e, self.run_task(e)));
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
            "assistant.message.created" | "agent.completed" | "agent.failed" => {
                // Its text is recorded, or it ended mid-message: no longer live.
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
        let line = LogLine::of(seq, durable, event, self.run_task(event));
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
        // Ctrl-D / Ctrl-C detach from anywhere: a dialog, the palette, a filter.
        if matches!(key, Key::Ctrl(_)) && self.keymap.action(key) == Some(Action::Detach) {
            return Some(Command::Detach);
        }
        // A permission question comes first: a filter being typed gives way to it.
        if self.open_request().is_some() {
            self.ui.filter_input = None;
        }
        // Modal input first: the viewer, the palette's query, the filter being
        // typed, a confirmation, the help screen.
        // (A permission question drawn over the viewer has the keys first.)
        if let Some(mut viewer) = self
            .ui
            .viewer
            .take_if(|_| self.projection.permission_requests.is_empty())
        {
            let command = viewer.key(key)?;
            self.ui.viewer = Some(viewer);
            return command;
        }
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
                    let filter = (!text.trim().is_empty()).then(|| text.trim().to_string());
                    if self.ui.focus == Pane::Tasks {
                        self.ui.task_filter = filter;
                        if !self.task_shown(self.ui.selected) {
                            self.step(1);
                        }
                    } else {
                        self.ui.filter = filter;
                        self.ui.log_scroll = 0;
                    }
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
            // The help scrolls when it is longer than the screen; any other key
            // closes it.
            let last = u16::try_from(Action::ALL.len()).unwrap_or(u16::MAX);
            match self.keymap.action(key) {
                Some(Action::Down) => self.ui.help_scroll = (self.ui.help_scroll + 1).min(last),
                Some(Action::Up) => self.ui.help_scroll = self.ui.help_scroll.saturating_sub(1),
                Some(Action::PageDown) => {
                    self.ui.help_scroll = (self.ui.help_scroll + 10).min(last)
                }
                Some(Action::PageUp) => {
                    self.ui.help_scroll = self.ui.help_scroll.saturating_sub(10)
                }
                _ => {
                    self.ui.help = false;
                    self.ui.help_scroll = 0;
                }
            }
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
                let current = if self.ui.focus == Pane::Tasks {
                    &self.ui.task_filter
                } else {
                    &self.ui.filter
                };
                self.ui.filter_input = Some(current.clone().unwrap_or_default());
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
                Pane::Detail => self.ui.detail_scroll = self.ui.detail_scroll.saturating_add(1),
                Pane::Tasks => self.step(1),
            },
            Action::Up => match self.ui.focus {
                Pane::Log => self.scroll_log(1),
                Pane::Detail => self.ui.detail_scroll = self.ui.detail_scroll.saturating_sub(1),
                Pane::Tasks => self.step(-1),
            },
            Action::PageUp => match self.ui.focus {
                Pane::Detail => self.ui.detail_scroll = self.ui.detail_scroll.saturating_sub(10),
                _ => self.scroll_log(10),
            },
            Action::PageDown => match self.ui.focus {
                Pane::Detail => self.ui.detail_scroll = self.ui.detail_scroll.saturating_add(10),
                _ => self.ui.log_scroll = self.ui.log_scroll.saturating_sub(10),
            },
            Action::First => self.step(-(n as isize)),
            Action::Last => self.step(n as isize),
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
            Action::PauseTask => {
                let t = self.selected_task()?;
                let task_id = t.id.clone();
                match self.task_agent_paused(t) {
                    Some(true) => return Some(Command::ResumeTask { task_id }),
                    Some(false) => return Some(Command::PauseTask { task_id }),
                    None => {
                        self.ui.toast = Some(format!(
                            "no agent is running {task_id} (it is {}); {} pauses the whole run",
                            t.status.as_str(),
                            self.key_for(Action::Pause)
                        ))
                    }
                }
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
                let t = self.selected_task()?;
                if matches!(
                    t.status,
                    TaskStatus::Failed | TaskStatus::Blocked | TaskStatus::Cancelled
                ) {
                    return Some(Command::Retry {
                        task_ids: vec![t.id.clone()],
                    });
                }
                self.ui.toast = Some(format!(
                    "{} is {}: {} retries a failed, blocked or cancelled task ({}: all of them, once the run has ended)",
                    t.id,
                    t.status.as_str(),
                    self.key_for(Action::Retry),
                    self.key_for(Action::RetryAll)
                ));
            }
            Action::RetryAll => {
                let ended = self
                    .projection
                    .run
                    .as_ref()
                    .is_some_and(|r| r.ended_at.is_some());
                // Anything not completed (a run stopped by a budget leaves some
                // pending).
                let unfinished = self
                    .projection
                    .tasks
                    .iter()
                    .any(|t| t.status != TaskStatus::Completed);
                match (ended, unfinished) {
                    (true, true) => return Some(Command::Retry { task_ids: vec![] }),
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
            Action::CopySession => {
                return Some(Command::Copy {
                    text: self.projection.session_id.clone(),
                });
            }
            Action::Output => {
                let task = self.selected_task().map(|t| t.id.as_str());
                let run = self
                    .projection
                    .command_runs
                    .iter()
                    .rev()
                    .find(|c| task.is_some() && c.task_id.as_deref() == task);
                match run {
                    Some(c) => {
                        return Some(Command::ShowOutput {
                            command_run_id: c.id.clone(),
                            command: c.command.clone(),
                        })
                    }
                    None => self.ui.toast = Some("no command has run for this task yet".into()),
                }
            }
            Action::Diff => {
                let found = self
                    .selected_task()
                    .and_then(|t| Some((t.id.clone(), self.diffs.get(&t.id)?)));
                match found {
                    Some((task, (path, diff))) => {
                        self.ui.viewer = Some(Viewer::new(
                            format!("{task}: the latest change, {path}"),
                            format!("{task}.diff"),
                            diff,
                            true,
                        ))
                    }
                    None => self.ui.toast = Some("no change for this task yet".into()),
                }
            }
        }
        None
    }

    /// Shows what the selected task's running command has printed so far (its
    /// whole output is stored, and read, once it ends).
    pub fn show_streamed_output(&mut self) {
        let found = self
            .selected_task()
            .and_then(|t| Some((t.id.clone(), self.output.get(&t.id)?)));
        self.ui.viewer = match found {
            Some((task, (command, lines))) => {
                let text: Vec<&str> = lines.iter().map(String::as_str).collect();
                Some(Viewer::new(
                    format!("$ {command} (running: its last {} lines)", lines.len()),
                    format!("{task}-output.log"),
                    &text.join("\n"),
                    false,
                ))
            }
            None => {
                self.ui.toast = Some("the command has printed nothing yet".into());
                None
            }
        };
    }

    /// Handles the mouse on a `screen` of this size: a click focuses the pane under
    /// it (and selects the task clicked in the list); the wheel scrolls the pane
    /// under the pointer (the tasks: the selection). While a dialog, the palette or a
    /// filter is open, only the viewer's wheel counts.
    pub fn mouse(&mut self, m: Mouse, screen: ratatui::layout::Rect) {
        use ratatui::layout::Position;
        let (x, y) = match m {
            Mouse::Click { x, y } | Mouse::ScrollUp { x, y } | Mouse::ScrollDown { x, y } => (x, y),
        };
        if let Some(viewer) = &mut self.ui.viewer {
            let last = viewer.lines.len().saturating_sub(1);
            match m {
                Mouse::ScrollUp { .. } => viewer.top = viewer.top.saturating_sub(WHEEL_LINES),
                Mouse::ScrollDown { .. } => viewer.top = (viewer.top + WHEEL_LINES).min(last),
                Mouse::Click { .. } => {}
            }
            return;
        }
        if self.open_request().is_some()
            || self.ui.palette.is_some()
            || self.ui.filter_input.is_some()
            || self.ui.confirm_cancel.is_some()
            || self.ui.confirm_cancel_run
            || self.ui.help
        {
            return;
        }
        let at = Position { x, y };
        let areas = crate::view::areas(screen, self);
        if areas.tasks.contains(at) {
            match m {
                Mouse::ScrollUp { .. } => self.step(-1),
                Mouse::ScrollDown { .. } => self.step(1),
                Mouse::Click { .. } => {
                    self.ui.focus = Pane::Tasks;
                    // Inside the list's border: the row clicked.
                    let inner = y.checked_sub(areas.tasks.y + 1);
                    let height = areas.tasks.height.saturating_sub(2);
                    if areas.graph {
                        // Inside the border: the box clicked.
                        let inner = ratatui::layout::Rect {
                            x: areas.tasks.x + 1,
                            y: areas.tasks.y + 1,
                            width: areas.tasks.width.saturating_sub(2),
                            height,
                        };
                        if let Some(i) = crate::graph::hit(inner, self, x, y) {
                            if i != self.ui.selected {
                                self.ui.selected = i;
                                self.ui.detail_scroll = 0;
                            }
                        }
                    } else if let Some(row) = inner.filter(|r| *r < height) {
                        let rows = crate::view::task_rows(self);
                        let first = crate::view::first_row(&rows, self.ui.selected, height);
                        if let Some(crate::view::Row::Task(i)) = rows.get(first + usize::from(row))
                        {
                            if *i != self.ui.selected {
                                self.ui.selected = *i;
                                self.ui.detail_scroll = 0;
                            }
                        }
                    }
                }
            }
        } else if areas.detail.contains(at) {
            match m {
                Mouse::ScrollUp { .. } => {
                    self.ui.detail_scroll = self.ui.detail_scroll.saturating_sub(3)
                }
                Mouse::ScrollDown { .. } => {
                    self.ui.detail_scroll = self.ui.detail_scroll.saturating_add(3)
                }
                Mouse::Click { .. } => self.ui.focus = Pane::Detail,
            }
        } else if areas.log.contains(at) {
            match m {
                Mouse::ScrollUp { .. } => self.scroll_log(WHEEL_LINES),
                Mouse::ScrollDown { .. } => {
                    self.ui.log_scroll = self.ui.log_scroll.saturating_sub(WHEEL_LINES)
                }
                Mouse::Click { .. } => self.ui.focus = Pane::Log,
            }
        }
    }

    /// Scrolls the event log `by` lines back; at its top, older events are wanted.
    pub fn scroll_log(&mut self, by: usize) {
        // As far as the first line shown is the first line held.
        let top = self
            .visible_log()
            .len()
            .saturating_sub(self.ui.log_rows.max(1));
        self.ui.log_scroll = (self.ui.log_scroll + by).min(top);
        self.ui.want_older = self.ui.log_scroll >= top;
        if self.ui.want_older && self.log.len() + PAGE as usize > LOG_LINES * 4 {
            self.ui.toast = Some(format!(
                "the log holds its most ({} lines); `air events -s {}` reads further back",
                self.log.len(),
                self.projection.session_id
            ));
        }
    }

    /// What of the UI is kept for next time (`ui_state` under `attach`, D-053): the
    /// selected task, the layout, the focused pane, the event filter.
    pub fn saved_ui(&self) -> serde_json::Value {
        serde_json::json!({
            "selected_task": self.selected_task().map(|t| t.id.clone()),
            "layout": match self.ui.layout { Layout::List => "list", Layout::Waves => "waves", Layout::Graph => "graph" },
            "focus": match self.ui.focus { Pane::Tasks => "tasks", Pane::Detail => "detail", Pane::Log => "log" },
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
        self.ui.focus = match v.get("focus").and_then(|s| s.as_str()) {
            Some("detail") => Pane::Detail,
            Some("log") => Pane::Log,
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
    fn step(&mut self, by: isize) {
        // In the order they are shown (in waves: wave by wave).
        let shown: Vec<usize> = crate::view::task_rows(self)
            .into_iter()
            .filter_map(|r| match r {
                crate::view::Row::Task(i) => Some(i),
                crate::view::Row::Wave(_) => None,
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
                        .filter(|t| t.status == *s)
                        .count(),
                )
            })
            .filter(|(_, n)| *n > 0)
            .collect()
    }
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
