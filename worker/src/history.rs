//! An agent's conversation as its loop keeps it (D-025): the starting context airsd
//! assembled, then the loop's messages, each with the id it is recorded under in the
//! session (`assistant.message.created`, `context.message.created`), numbered 1, 2, …
//! as airsd numbers them. A compaction replaces messages 1…N of the request with the
//! summary — added to the starting context's last message, marker first — and keeps
//! the messages after N; the originals stay here for `context_recall` (and in the
//! session).

use air_proto::message::{ContentBlock, Message, Role};
use serde_json::Value;

/// The tool that reads summarised messages back.
pub const RECALL: &str = "context_recall";

/// The most characters one `context_recall` answer holds.
const RECALL_CHARS: usize = 24_000;

#[derive(Debug, Default)]
pub struct History {
    /// The starting context, as airsd assembled it.
    base: Vec<Message>,
    /// Every message of the loop, in order, with its id (never dropped).
    originals: Vec<(String, Message)>,
    /// How many of the loop's messages are recorded in the session.
    recorded: usize,
    /// Loop messages 1…`summarised` stand for a summary in the request.
    summarised: usize,
}

impl History {
    pub fn new(base: Vec<Message>) -> History {
        History {
            base,
            ..History::default()
        }
    }

    /// Before any compaction, the starting context as the request now has it (what
    /// the user said before the first turn is added to its last message).
    pub fn sync_base(&mut self, request: &[Message]) {
        if self.summarised == 0 && request.len() >= self.base.len() {
            self.base = request[..self.base.len()].to_vec();
        }
    }

    /// A message of the loop, added to the request as it is: an assistant turn
    /// (recorded by its `assistant.message.created`, under `id`).
    pub fn assistant(&mut self, id: &str, message: &Message) {
        self.originals.push((id.to_string(), message.clone()));
        self.recorded = self.originals.len();
    }

    /// The request's loop messages not yet recorded (the user's side: tool results
    /// and notes, as they stand before the turn that reads them), each given an id;
    /// the caller records them as `context.message.created`.
    pub fn unrecorded(&mut self, request: &[Message]) -> Vec<(String, Message)> {
        let from = self.base.len() + self.recorded - self.summarised;
        let mut out = Vec::new();
        for m in request.iter().skip(from) {
            let id = air_proto::ids::new_id();
            self.originals.push((id.clone(), m.clone()));
            out.push((id, m.clone()));
        }
        self.recorded = self.originals.len();
        out
    }

    /// The last recorded user message of the loop before its latest assistant turn:
    /// what a compaction asked for now covers (`None`: nothing to compact yet).
    pub fn snapshot_end(&self) -> Option<&str> {
        self.originals
            .iter()
            .enumerate()
            .rev()
            .skip_while(|(_, (_, m))| m.role == Role::Assistant)
            .find(|(i, (_, m))| m.role == Role::User && *i + 1 > self.summarised)
            .map(|(_, (id, _))| id.as_str())
    }

    /// The request with loop messages 1…(the one recorded as `upto`) replaced by
    /// `text`; `false` (and nothing changed) when `upto` is not one of them or is
    /// already summarised.
    pub fn compact(&mut self, request: &mut Vec<Message>, upto: &str, text: &str) -> bool {
        let Some(at) = self.originals.iter().position(|(id, _)| id == upto) else {
            return false;
        };
        let n = at + 1;
        if n <= self.summarised || self.originals[at].1.role != Role::User {
            return false;
        }
        // The request's loop part starts after the base; what follows message n
        // stays as it is.
        let keep_from = self.base.len() + (n - self.summarised);
        if keep_from > request.len() {
            return false;
        }
        let after: Vec<Message> = request.split_off(keep_from);
        let mut rebuilt = self.base.clone();
        let marker = ContentBlock::text(text);
        match rebuilt.last_mut() {
            Some(last) if last.role == Role::User => last.content.push(marker),
            _ => rebuilt.push(Message::user(vec![marker])),
        }
        rebuilt.extend(after);
        *request = rebuilt;
        self.summarised = n;
        true
    }

    /// Whether a compaction has been applied.
    pub fn compacted(&self) -> bool {
        self.summarised > 0
    }

    /// `context_recall`'s answer: loop messages `from`…`to` (1-based, as the marker
    /// numbers them), rendered, within a bound.
    pub fn recall(&self, input: &Value) -> Result<String, String> {
        let n = |k: &str| input.get(k).and_then(Value::as_u64);
        let from = n("from").ok_or("`from` must be a message number (1 or more)")?;
        let to = n("to").unwrap_or(from);
        let total = self.originals.len() as u64;
        if from == 0 || from > total || to < from {
            return Err(format!(
                "messages are numbered 1–{total}; `from` {from} and `to` {to} do not name a range of them"
            ));
        }
        let mut out = String::new();
        for (i, (_, m)) in self
            .originals
            .iter()
            .enumerate()
            .take(usize::try_from(to.min(total)).unwrap_or(usize::MAX))
            .skip(usize::try_from(from - 1).unwrap_or(usize::MAX))
        {
            let role = match m.role {
                Role::User => "user",
                Role::Assistant => "assistant",
            };
            out.push_str(&format!("## Message {} ({role})\n\n", i + 1));
            for b in &m.content {
                let text = match b {
                    ContentBlock::Text { text } => text.clone(),
                    ContentBlock::Thinking { thinking, .. } => format!("(thinking) {thinking}"),
                    ContentBlock::RedactedThinking { .. } => "(redacted thinking)".into(),
                    ContentBlock::ToolUse { name, input, .. } => format!("(call) {name} {input}"),
                    ContentBlock::ToolResult {
                        content, is_error, ..
                    } => format!(
                        "(tool answer{}) {content}",
                        if *is_error { ", an error" } else { "" }
                    ),
                };
                out.push_str(&text);
                out.push_str("\n\n");
            }
            if out.len() > RECALL_CHARS {
                out.truncate(air_proto::text::floor_boundary(&out, RECALL_CHARS));
                out.push_str(&format!(
                    "\n… [cut at {RECALL_CHARS} characters: ask for fewer messages]"
                ));
                break;
            }
        }
        Ok(out)
    }
}

/// [`RECALL`] as the model sees it.
pub fn recall_tool() -> crate::provider::ToolSpec {
    crate::provider::ToolSpec {
        name: RECALL.into(),
        description: "Read back messages of your own work that a compaction summarised, by their numbers (the compaction marker says which). Use it when the summary leaves out a detail you need.".into(),
        input_schema: serde_json::json!({
            "type": "object",
            "properties": {
                "from": {"type": "integer", "minimum": 1, "description": "The first message number."},
                "to": {"type": "integer", "minimum": 1, "description": "The last message number (from, when not given)."}
            },
            "required": ["from"],
            "additionalProperties": false
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(n: usize) -> (Message, Message) {
        (
            Message::assistant(vec![ContentBlock::ToolUse {
                id: format!("t{n}"),
                name: "fs_read".into(),
                input: serde_json::json!({"path": format!("f{n}")}),
            }]),
            Message::user(vec![ContentBlock::ToolResult {
                tool_use_id: format!("t{n}"),
                content: format!("content {n}"),
                is_error: false,
            }]),
        )
    }

    #[test]
    fn a_compaction_keeps_the_base_and_what_came_after_and_recall_reads_the_originals() {
        let base = vec![Message::user(vec![ContentBlock::text("the task")])];
        let mut h = History::new(base.clone());
        let mut request = base;
        assert_eq!(h.snapshot_end(), None, "nothing of a loop yet");
        for n in 1..=3 {
            let (a, u) = turn(n);
            h.assistant(&format!("a{n}"), &a);
            request.push(a);
            request.push(u);
            assert_eq!(h.unrecorded(&request).len(), 1);
        }
        // Turn 4 crossed the threshold: the snapshot ends with turn 3's answers.
        let (a4, _) = turn(4);
        h.assistant("a4", &a4);
        request.push(a4);
        let upto = h.snapshot_end().unwrap().to_string();
        assert_eq!(h.originals[5].0, upto);
        let (_, u4) = turn(4);
        request.push(u4);
        assert_eq!(h.unrecorded(&request).len(), 1);
        assert!(h.compact(&mut request, &upto, "[marker] summary of 1–6"));
        assert_eq!(
            request.len(),
            3,
            "base + summary, then turn 4's two messages"
        );
        assert_eq!(
            request[0].content.last(),
            Some(&ContentBlock::text("[marker] summary of 1–6"))
        );
        assert_eq!(request[1].role, Role::Assistant);
        assert!(
            !h.compact(&mut request, &upto, "again"),
            "already summarised"
        );
        // The next turn is recorded after the compacted part.
        let (a5, u5) = turn(5);
        h.assistant("a5", &a5);
        request.push(a5);
        request.push(u5);
        assert_eq!(h.unrecorded(&request).len(), 1);
        assert_eq!(h.originals.len(), 10);
        let back = h.recall(&serde_json::json!({"from": 2, "to": 3})).unwrap();
        assert!(
            back.contains("## Message 2 (user)") && back.contains("content 1"),
            "{back}"
        );
        assert!(back.contains("(call) fs_read {\"path\":\"f2\"}"), "{back}");
        assert!(h.recall(&serde_json::json!({"from": 11})).is_err());
        // A second compaction covers turn 4 and 5 too, the first summary replaced.
        let upto = h.originals[9].0.clone();
        let (a6, _) = turn(6);
        request.push(a6);
        assert!(h.compact(&mut request, &upto, "summary of 1–10"));
        assert_eq!(request.len(), 2);
        assert_eq!(request[0].content.len(), 2, "the first summary gave way");
    }
}
