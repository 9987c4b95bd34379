//! Streaming assistant messages kept for crash recovery (`message_drafts`, D-051).
//!
//! Token deltas are ephemeral; while a message streams, the shell folds them into the
//! message's blocks here and stores the draft every [`FLUSH`] (queued behind the
//! events before it, never waited for). When the finished message is recorded
//! (`assistant.message.created`), its draft row is deleted in the same transaction;
//! a draft that remains after a crash or a kill is what the agent was saying.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use air_proto::payload::{DeltaKind, TokenDelta};
use serde_json::{json, Value};

/// How often a streaming message's draft is stored, at most.
pub const FLUSH: Duration = Duration::from_millis(250);
/// The most text a draft keeps of one message (the worker stops a turn long before
/// a real model gets near this); past it the draft says it was cut.
pub const MAX_DRAFT_BYTES: usize = 4 * 1024 * 1024;

struct Draft {
    agent_id: String,
    task_id: Option<String>,
    /// By block index: kind and text so far.
    blocks: Vec<Option<(DeltaKind, String)>>,
    /// Bytes of text kept, over all blocks.
    bytes: usize,
    /// More came than is kept.
    cut: bool,
    stored: Option<Instant>,
}

/// The drafts of the messages streaming now.
#[derive(Default)]
pub struct Drafts {
    open: HashMap<String, Draft>,
}

/// A draft to store: message id, agent, task, content.
pub type Put = (String, String, Option<String>, Value);

impl Drafts {
    /// Folds a delta in; the draft to store when it is time to.
    pub fn delta(
        &mut self,
        d: &TokenDelta,
        agent_id: &str,
        task_id: Option<&str>,
        now: Instant,
    ) -> Option<Put> {
        let draft = self
            .open
            .entry(d.message_id.clone())
            .or_insert_with(|| Draft {
                agent_id: agent_id.to_string(),
                task_id: task_id.map(str::to_string),
                blocks: Vec::new(),
                bytes: 0,
                cut: false,
                stored: None,
            });
        if draft.cut {
            return None;
        }
        let i = usize::try_from(d.block_index).ok().filter(|&i| i < 1024)?;
        if draft.blocks.len() <= i {
            draft.blocks.resize_with(i + 1, || None);
        }
        let mut room = MAX_DRAFT_BYTES
            .saturating_sub(draft.bytes)
            .min(d.text.len());
        while !d.text.is_char_boundary(room) {
            room -= 1;
        }
        let kept = &d.text[..room];
        draft.bytes += kept.len();
        match &mut draft.blocks[i] {
            Some((_, text)) => text.push_str(kept),
            slot => *slot = Some((d.kind, kept.to_string())),
        }
        if room < d.text.len() {
            // Stored once more, with a mark, and then no more.
            draft.cut = true;
            if let Some((_, text)) = &mut draft.blocks[i] {
                text.push_str("\n[the draft stops here: the message grew past 4 MiB]");
            }
            draft.stored = Some(now);
            return Some((
                d.message_id.clone(),
                draft.agent_id.clone(),
                draft.task_id.clone(),
                content(&draft.blocks),
            ));
        }
        let due = draft.stored.is_none_or(|t| now.duration_since(t) >= FLUSH);
        if !due {
            return None;
        }
        draft.stored = Some(now);
        Some((
            d.message_id.clone(),
            draft.agent_id.clone(),
            draft.task_id.clone(),
            content(&draft.blocks),
        ))
    }

    /// The message was recorded whole (its row goes with it).
    pub fn finished(&mut self, message_id: &str) {
        self.open.remove(message_id);
    }

    /// The agent ended: what it was streaming stays stored as it was.
    pub fn agent_ended(&mut self, agent_id: &str) {
        self.open.retain(|_, d| d.agent_id != agent_id);
    }
}

/// A draft's content: canonical blocks as far as they streamed; a tool call's input
/// is the partial JSON text so far.
fn content(blocks: &[Option<(DeltaKind, String)>]) -> Value {
    Value::Array(
        blocks
            .iter()
            .flatten()
            .map(|(kind, text)| match kind {
                DeltaKind::Text => json!({"type": "text", "text": text}),
                DeltaKind::Thinking => json!({"type": "thinking", "thinking": text}),
                DeltaKind::InputJson => json!({"type": "tool_use", "partial_json": text}),
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delta(message: &str, block: u32, kind: DeltaKind, text: &str) -> TokenDelta {
        TokenDelta {
            message_id: message.into(),
            block_index: block,
            kind,
            text: text.into(),
            agent_id: None,
        }
    }

    #[test]
    fn a_draft_keeps_at_most_its_bound() {
        let mut d = Drafts::default();
        let t0 = Instant::now();
        let chunk = "é".repeat(300_000);
        let mut last = None;
        for i in 0..20u32 {
            if let Some(put) = d.delta(
                &delta("m", 0, DeltaKind::Text, &chunk),
                "a",
                None,
                t0 + FLUSH * (i + 1),
            ) {
                last = Some(put);
            }
        }
        let text = last.unwrap().3[0]["text"].as_str().unwrap().to_string();
        assert!(text.len() <= MAX_DRAFT_BYTES + 100, "{}", text.len());
        assert!(text.ends_with("grew past 4 MiB]"));
        // Once cut, nothing more is stored.
        assert!(d
            .delta(
                &delta("m", 0, DeltaKind::Text, "x"),
                "a",
                None,
                t0 + FLUSH * 40
            )
            .is_none());
    }

    #[test]
    fn deltas_fold_into_blocks_stored_at_most_every_flush() {
        let mut d = Drafts::default();
        let t0 = Instant::now();
        let first = d.delta(&delta("m", 0, DeltaKind::Text, "Hel"), "a", Some("T1"), t0);
        assert_eq!(
            first.map(|p| p.3),
            Some(json!([{"type": "text", "text": "Hel"}]))
        );
        assert!(d
            .delta(
                &delta("m", 0, DeltaKind::Text, "lo"),
                "a",
                Some("T1"),
                t0 + FLUSH / 2
            )
            .is_none());
        let put = d
            .delta(
                &delta("m", 1, DeltaKind::InputJson, "{\"pa"),
                "a",
                Some("T1"),
                t0 + FLUSH,
            )
            .unwrap();
        assert_eq!(put.0, "m");
        assert_eq!(put.2.as_deref(), Some("T1"));
        assert_eq!(
            put.3,
            json!([{"type": "text", "text": "Hello"}, {"type": "tool_use", "partial_json": "{\"pa"}])
        );
        d.finished("m");
        assert!(d.open.is_empty());
        d.delta(&delta("n", 0, DeltaKind::Thinking, "hm"), "b", None, t0);
        d.agent_ended("b");
        assert!(d.open.is_empty());
    }
}
