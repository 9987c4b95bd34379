//! The canonical conversation format (D-046): Anthropic content blocks. Every provider
//! adapter converts to and from this shape at its boundary, and nowhere else; the
//! session database stores messages in it (`messages.content_json`).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// How the agent loop begins what the user said to a running agent (`agent.message`),
/// so its model, and the compaction classifier, tell it from the loop's own notes.
pub const USER_SAYS: &str = "The user says, while you work:";

/// Who speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    User,
    Assistant,
}

/// One block of a message's content.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ContentBlock {
    Text {
        text: String,
    },
    /// The model's reasoning; the signature lets it be sent back unchanged.
    Thinking {
        thinking: String,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        signature: String,
    },
    /// Reasoning the provider returns encrypted.
    RedactedThinking {
        data: String,
    },
    /// A tool call the model asks for.
    ToolUse {
        id: String,
        name: String,
        input: Value,
    },
    /// The answer to a tool call, in the next user message.
    ToolResult {
        tool_use_id: String,
        content: String,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        is_error: bool,
    },
}

impl ContentBlock {
    pub fn text(text: impl Into<String>) -> ContentBlock {
        ContentBlock::Text { text: text.into() }
    }
}

/// One message of a conversation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Message {
    pub role: Role,
    pub content: Vec<ContentBlock>,
}

impl Message {
    pub fn user(content: Vec<ContentBlock>) -> Message {
        Message {
            role: Role::User,
            content,
        }
    }

    pub fn assistant(content: Vec<ContentBlock>) -> Message {
        Message {
            role: Role::Assistant,
            content,
        }
    }

    /// The message's text blocks, in order.
    pub fn texts(&self) -> Vec<&str> {
        self.content
            .iter()
            .filter_map(|b| match b {
                ContentBlock::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    /// The tool calls this (assistant) message asks for.
    pub fn tool_uses(&self) -> impl Iterator<Item = (&str, &str, &Value)> {
        self.content.iter().filter_map(|b| match b {
            ContentBlock::ToolUse { id, name, input } => Some((id.as_str(), name.as_str(), input)),
            _ => None,
        })
    }
}

/// Why the model stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    EndTurn,
    ToolUse,
    MaxTokens,
    StopSequence,
    PauseTurn,
    Refusal,
}

/// The text of a canonical message's content (a string, or its text blocks joined by
/// newlines); tool calls, their answers and thinking are not text.
pub fn text_of(content: &Value) -> String {
    let mut text = String::new();
    match content {
        Value::String(s) => text.push_str(s),
        Value::Array(blocks) => {
            for block in blocks {
                if block.get("type").and_then(Value::as_str) == Some("text") {
                    if let Some(t) = block.get("text").and_then(Value::as_str) {
                        if !text.is_empty() {
                            text.push('\n');
                        }
                        text.push_str(t);
                    }
                }
            }
        }
        _ => {}
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_have_the_anthropic_shape() {
        let m = Message::assistant(vec![
            ContentBlock::text("hi"),
            ContentBlock::ToolUse {
                id: "toolu_1".into(),
                name: "fs_read".into(),
                input: serde_json::json!({"path": "a"}),
            },
        ]);
        let v = serde_json::to_value(&m).unwrap_or_default();
        assert_eq!(
            v,
            serde_json::json!({"role": "assistant", "content": [
                {"type": "text", "text": "hi"},
                {"type": "tool_use", "id": "toolu_1", "name": "fs_read", "input": {"path": "a"}}
            ]})
        );
        let r: ContentBlock = serde_json::from_value(serde_json::json!(
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "ok"}
        ))
        .unwrap_or_else(|_| ContentBlock::text(""));
        assert_eq!(
            r,
            ContentBlock::ToolResult {
                tool_use_id: "toolu_1".into(),
                content: "ok".into(),
                is_error: false
            }
        );
        assert_eq!(m.tool_uses().count(), 1);
    }
}
