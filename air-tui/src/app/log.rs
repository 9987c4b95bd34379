//! The event log's lines and its filter.

use super::*;

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

    /// One event as a line: its time, its task (or agent) and what it says, in
    /// words (`air events` has the JSON). `run_task` is the task of the tool or
    /// command run the event names, for events that name no task; `reader` has read
    /// the events before it.
    pub fn of(
        seq: u64,
        durable: bool,
        e: &RuntimeEvent,
        run_task: Option<&str>,
        reader: &mut air_proto::event_text::Reader,
    ) -> LogLine {
        let said = reader.read(e);
        let agent = e
            .payload
            .get("agent_id")
            .and_then(|v| v.as_str())
            .unwrap_or("");
        let task = said.task.as_deref().or(run_task).unwrap_or("");
        let time = e.timestamp.get(11..19).unwrap_or("");
        let who = if task.is_empty() { agent } else { task };
        let who = crate::fit::cut(who, 16);
        let text = format!("{time} {who:<6} {}", said.text);
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
                // The words it shows, and its type (`tool.started`).
                let text = format!("{} {}", line.text, line.event_type).to_lowercase();
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
