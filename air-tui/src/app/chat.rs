//! The conversation pane's state: the conversation as the session's events tell it
//! (the user's messages, each with the client that sent it, and what the Main Agent's
//! turns and the direct lane wrote, their tool calls in brief), and the input box
//! (multi-line, history, pastes kept whole, `/` commands completed).

use air_proto::conversation::{in_conversation, PREFIXES};
use air_proto::event::RuntimeEvent;
use air_proto::events as ev;

use super::{App, Command, Key, Pane};

/// Messages typed in this TUI that Up/Down recall.
pub const HISTORY: usize = 100;

/// One message of the conversation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Said {
    pub seq: u64,
    pub user: bool,
    /// Who: the client that sent a user message, or the task whose agent wrote.
    pub who: String,
    pub text: String,
    /// The tool calls of an agent's message, in brief (`fs_read README.md`).
    pub tools: Vec<String>,
    /// The same calls with their whole input, shown when the pane is expanded.
    pub calls: Vec<String>,
}

/// The conversation and the input box.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Chat {
    /// The pane is shown (in place of the task detail).
    pub shown: bool,
    /// Oldest first.
    pub said: Vec<Said>,
    /// What is being typed.
    pub input: String,
    /// What was sent from here, oldest first.
    pub history: Vec<String>,
    /// The history entry Up/Down is on.
    pub recall: Option<usize>,
    /// Lines scrolled up from the end of the conversation.
    pub scroll: usize,
    /// Tool calls are shown with their whole input (Ctrl-O).
    pub expanded: bool,
}

/// A tool call in brief: its name and its main argument.
fn brief(name: &str, input: &serde_json::Value) -> String {
    match air_proto::projection::main_argument(input).map(|(_, a)| a) {
        Some(a) => {
            let a: String = a.chars().take(60).collect();
            format!("{name} {a}")
        }
        None => name.to_string(),
    }
}

/// The `/` command the input's first word completes to, if exactly one does.
fn completed(input: &str) -> Option<&'static str> {
    if !input.starts_with('/') || input.contains(char::is_whitespace) {
        return None;
    }
    let mut fits = PREFIXES
        .iter()
        .map(|(p, _)| *p)
        .chain(["/review"])
        .filter(|p| p.starts_with(input));
    match (fits.next(), fits.next()) {
        (Some(p), None) => Some(p),
        _ => None,
    }
}

impl App {
    /// Folds a durable event into the conversation.
    pub(super) fn chat_event(&mut self, seq: u64, event: &RuntimeEvent) {
        let p = &event.payload;
        let text = |k: &str| p.get(k).and_then(|v| v.as_str());
        // A turn (or the direct lane) that ended unanswered says so in the
        // conversation.
        if let Some(status) = air_proto::projection::TaskStatus::from_event_type(&event.event_type)
            .filter(|s| s.is_terminal() && *s != air_proto::projection::TaskStatus::Completed)
        {
            if let Some(task) = text("task_id").filter(|t| in_conversation(t)) {
                let why = text("reason").unwrap_or("no reason given");
                let note = serde_json::json!(format!("⚠ {}: {why}", status.as_str()));
                self.chat_said(seq, false, None, Some(task), &note);
            }
            return;
        }
        let user = match event.event_type.as_str() {
            ev::UserMessageCreated::TYPE => true,
            ev::AssistantMessageCreated::TYPE => false,
            _ => return,
        };
        self.chat_said(
            seq,
            user,
            text("client"),
            text("task_id"),
            p.get("content").unwrap_or(&serde_json::Value::Null),
        );
    }

    /// Puts one message in the conversation, in seq order (once).
    fn chat_said(
        &mut self,
        seq: u64,
        user: bool,
        client: Option<&str>,
        task: Option<&str>,
        content: &serde_json::Value,
    ) {
        if self.chat.said.iter().any(|s| s.seq == seq) {
            return;
        }
        let text = air_proto::message::text_of(content);
        let said = if user {
            Said {
                seq,
                user,
                who: client.unwrap_or("you").to_string(),
                text,
                tools: Vec::new(),
                calls: Vec::new(),
            }
        } else {
            let Some(task) = task.filter(|t| in_conversation(t)) else {
                return;
            };
            let uses: Vec<(&str, &serde_json::Value)> = content
                .as_array()
                .into_iter()
                .flatten()
                .filter(|b| b.get("type").and_then(|t| t.as_str()) == Some("tool_use"))
                .map(|b| {
                    (
                        b.get("name").and_then(|n| n.as_str()).unwrap_or("?"),
                        b.get("input").unwrap_or(&serde_json::Value::Null),
                    )
                })
                .collect();
            let tools: Vec<String> = uses.iter().map(|(n, i)| brief(n, i)).collect();
            let calls = uses
                .iter()
                .map(|(n, i)| {
                    format!(
                        "{n} {}",
                        serde_json::to_string_pretty(i).unwrap_or_default()
                    )
                })
                .collect();
            if text.trim().is_empty() && tools.is_empty() {
                return;
            }
            Said {
                seq,
                user,
                who: task.to_string(),
                text,
                tools,
                calls,
            }
        };
        // In seq order, whether it came live or from the store.
        let at = self.chat.said.partition_point(|s| s.seq < seq);
        self.chat.said.insert(at, said);
    }

    /// Puts stored messages (`conversation.list`) into the conversation.
    pub fn history_of_chat(&mut self, messages: &[air_proto::api::ConversationMessage]) {
        use air_proto::projection::MessageRole;
        for m in messages {
            self.chat_said(
                m.seq,
                m.role == MessageRole::User,
                m.client.as_deref(),
                m.task_id.as_deref(),
                &m.content,
            );
        }
    }

    /// The live text of the conversation's agent at work, if one streams.
    pub fn chat_stream(&self) -> Option<(&str, &str)> {
        self.projection
            .agents
            .iter()
            .filter(|a| a.status == air_proto::projection::RunStatus::Running)
            .filter_map(|a| Some((a.task_id.as_deref()?, a.id.as_str())))
            .filter(|(task, _)| in_conversation(task))
            .find_map(|(task, agent)| {
                let s = self.streams.get(agent)?;
                (!s.trim().is_empty()).then_some((task, s.as_str()))
            })
    }

    /// Shows the conversation and gives it the keys.
    pub fn open_chat(&mut self) {
        self.chat.shown = true;
        self.ui.focus = Pane::Chat;
    }

    /// A key while the input box has it; `None` lets the keymap have it.
    pub(super) fn chat_key(&mut self, key: Key) -> Option<Option<Command>> {
        let chat = &mut self.chat;
        match key {
            Key::Esc => self.ui.focus = Pane::Tasks,
            Key::Enter => {
                let text = chat.input.trim().to_string();
                if text.is_empty() {
                    return Some(None);
                }
                chat.input.clear();
                chat.recall = None;
                chat.scroll = 0;
                if chat.history.last() != Some(&text) {
                    chat.history.push(text.clone());
                    if chat.history.len() > HISTORY {
                        chat.history.remove(0);
                    }
                }
                return Some(Some(Command::Send { text }));
            }
            // A new line in the message (Enter sends it).
            Key::Ctrl('j') => chat.input.push('\n'),
            // The tool calls in brief, or with their whole input.
            Key::Ctrl('o') => chat.expanded = !chat.expanded,
            Key::Backspace => {
                chat.input.pop();
            }
            Key::Char(c) => chat.input.push(c),
            Key::Tab => match completed(&chat.input) {
                Some(command) => chat.input = format!("{command} "),
                None => return None,
            },
            Key::Up if chat.input.is_empty() || chat.recall.is_some() => {
                let n = chat.history.len();
                if n > 0 {
                    let i = chat.recall.map_or(n - 1, |i| i.saturating_sub(1));
                    chat.recall = Some(i);
                    chat.input = chat.history[i].clone();
                }
            }
            Key::Down if chat.recall.is_some() => {
                let next = chat
                    .recall
                    .map(|i| i + 1)
                    .filter(|&i| i < chat.history.len());
                chat.recall = next;
                chat.input = next.map(|i| chat.history[i].clone()).unwrap_or_default();
            }
            Key::PageUp => chat.scroll = chat.scroll.saturating_add(10),
            Key::PageDown => chat.scroll = chat.scroll.saturating_sub(10),
            _ => return None,
        }
        Some(None)
    }

    /// Pasted text: into the input box, whole, when it has the keys.
    pub fn paste(&mut self, text: &str) {
        if self.ui.focus == Pane::Chat {
            self.chat
                .input
                .push_str(&text.replace("\r\n", "\n").replace('\r', "\n"));
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_slash_command_completes_when_one_fits() {
        assert_eq!(super::completed("/ta"), Some("/task"));
        assert_eq!(super::completed("/d"), Some("/direct"));
        assert_eq!(super::completed("/r"), Some("/review"));
        assert_eq!(super::completed("/"), None);
        assert_eq!(super::completed("/task x"), None);
        assert_eq!(super::completed("hello"), None);
    }
}
