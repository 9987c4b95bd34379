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
