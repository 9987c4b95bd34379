//! The mock provider of the tests: the loopback server `air run --replay` uses
//! (`worker::replay::Server`), started on the test's runtime, with helpers that write
//! the events of common answers.

use serde_json::Value;
pub use worker::replay::{Exchange, Expect, Received, Recording, Reply};

/// A running mock provider (dereferences to the server: `url`, `received()`,
/// `mismatches()`).
pub struct MockProvider(worker::replay::Server);

impl std::ops::Deref for MockProvider {
    type Target = worker::replay::Server;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl MockProvider {
    /// Starts serving `exchanges` on a free loopback port (on the current runtime).
    pub async fn start(exchanges: Vec<Exchange>) -> MockProvider {
        MockProvider(
            worker::replay::Server::start(exchanges, None)
                .await
                .unwrap_or_else(|e| panic!("mock provider: cannot start: {e}")),
        )
    }

    /// Starts serving a recording file's exchanges.
    pub async fn from_file(path: &std::path::Path) -> MockProvider {
        let recording = Recording::load(path).unwrap_or_else(|e| panic!("{e}"));
        MockProvider::start(recording.exchanges).await
    }
}

/// The events of a simple text answer (for tests that need one).
pub fn text_events(text: &str) -> Vec<Value> {
    serde_json::from_value(serde_json::json!([
        {"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [], "model": "mock", "stop_reason": null, "usage": {"input_tokens": 10, "output_tokens": 1}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 5}},
        {"type": "message_stop"}
    ]))
    .unwrap_or_default()
}

/// The events of a text answer streamed in these pieces.
pub fn text_pieces(pieces: impl IntoIterator<Item = String>) -> Vec<Value> {
    let mut events = vec![
        serde_json::json!({"type": "message_start", "message": {"id": "msg_p", "type": "message", "role": "assistant", "content": [], "model": "mock", "stop_reason": null, "usage": {"input_tokens": 10, "output_tokens": 1}}}),
        serde_json::json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
    ];
    for text in pieces {
        events.push(serde_json::json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}));
    }
    events.push(serde_json::json!({"type": "content_block_stop", "index": 0}));
    events.push(serde_json::json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 40}}));
    events.push(serde_json::json!({"type": "message_stop"}));
    events
}

/// The events of an answer that calls one tool (its input streamed in two pieces).
pub fn tool_use_events(id: &str, name: &str, input: &Value) -> Vec<Value> {
    let json = input.to_string();
    let (a, b) = json.split_at(json.len() / 2);
    serde_json::from_value(serde_json::json!([
        {"type": "message_start", "message": {"id": "msg_t", "type": "message", "role": "assistant", "content": [], "model": "mock", "stop_reason": null, "usage": {"input_tokens": 50, "output_tokens": 1}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": a}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": b}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 20}},
        {"type": "message_stop"}
    ]))
    .unwrap_or_default()
}
