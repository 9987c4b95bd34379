//! The Anthropic Messages API, natively: the canonical format is its own, so requests
//! and the streamed answer need no conversion beyond the wire envelope. Streaming
//! SSE: `message_start`, `content_block_start` / `_delta` (text, thinking, signature,
//! input JSON) / `_stop`, `message_delta` (stop reason, usage), `message_stop`,
//! `ping`, `error`. The stable system prefix carries a prompt-cache marker.

use air_proto::message::{ContentBlock, Message, StopReason};
use serde_json::{json, Value};

use super::{Delta, ProviderError, RetryPolicy, Timeouts, Turn, TurnRequest, TurnUsage};

const NAME: &str = "anthropic";
/// The API version this adapter speaks.
pub const VERSION: &str = "2023-06-01";
/// The beta that lets a model think between its tool calls.
pub const INTERLEAVED_THINKING: &str = "interleaved-thinking-2025-05-14";
/// Where the API is when `ANTHROPIC_BASE_URL` does not say otherwise.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";

pub struct Anthropic {
    client: reqwest::Client,
    base_url: String,
    api_key: String,
    timeouts: Timeouts,
    retry: RetryPolicy,
}

impl Anthropic {
    pub fn new(
        base_url: &str,
        api_key: &str,
        timeouts: Timeouts,
        retry: RetryPolicy,
    ) -> Result<Anthropic, ProviderError> {
        if api_key.is_empty() {
            return Err(ProviderError::Config(
                "anthropic: no API key (set ANTHROPIC_API_KEY)".into(),
            ));
        }
        let client = super::http_client("anthropic", base_url, &timeouts)?;
        Ok(Anthropic {
            client,
            base_url: base_url.trim_end_matches('/').to_string(),
            api_key: api_key.to_string(),
            timeouts,
            retry,
        })
    }
}

impl super::Adapter for Anthropic {
    fn body(&self, request: &TurnRequest) -> Value {
        let n = request.system.len();
        let system: Vec<Value> = request
            .system
            .iter()
            .enumerate()
            .map(|(i, text)| {
                if i + 1 == n {
                    // The end of the stable prefix: cached across turns and agents.
                    json!({ "type": "text", "text": text, "cache_control": { "type": "ephemeral" } })
                } else {
                    json!({ "type": "text", "text": text })
                }
            })
            .collect();
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| json!({ "name": t.name, "description": t.description, "input_schema": t.input_schema }))
            .collect();
        // Another protocol's reasoning is not Anthropic's to read.
        let messages: Vec<Message> = request
            .messages
            .iter()
            .map(|m| Message {
                role: m.role,
                content: m
                    .content
                    .iter()
                    .filter(|b| {
                        !matches!(b, ContentBlock::Thinking { signature, .. }
                            if signature.starts_with(super::RESPONSES_REASONING))
                    })
                    .cloned()
                    .collect(),
            })
            .collect();
        let mut body = json!({
            "model": request.model,
            "max_tokens": request.max_tokens,
            "messages": messages,
            "stream": true,
        });
        if !system.is_empty() {
            body["system"] = Value::Array(system);
        }
        if !tools.is_empty() {
            body["tools"] = Value::Array(tools);
        }
        if let Some(budget) = request.thinking.budget_tokens {
            // Extended thinking, interleaved with the tool calls (the beta header
            // goes with it).
            body["thinking"] = json!({ "type": "enabled", "budget_tokens": budget });
        }
        body
    }

    fn retry(&self) -> &RetryPolicy {
        &self.retry
    }

    async fn attempt(
        &self,
        body: &Value,
        on_delta: &mut (dyn FnMut(Delta<'_>) + Send),
    ) -> Result<Turn, ProviderError> {
        let mut post = self
            .client
            .post(format!("{}/v1/messages", self.base_url))
            .header("x-api-key", &self.api_key)
            .header("anthropic-version", VERSION)
            .header("content-type", "application/json")
            .header("accept", "text/event-stream");
        if body.get("thinking").is_some() {
            // Thinking between tool calls, not only before the first.
            post = post.header("anthropic-beta", INTERLEAVED_THINKING);
        }
        let post = post.body(body.to_string());
        let mut sse = super::Sse::open(NAME, &self.timeouts, post).await?;
        let mut fold = Fold::default();
        loop {
            let Some(event) = sse.next().await? else {
                return Err(ProviderError::transport(
                    NAME,
                    "the stream ended before message_stop",
                ));
            };
            if fold.event(&event.event, &event.data, on_delta)? {
                let mut turn = fold.finish()?;
                turn.wire = sse.take_wire();
                return Ok(turn);
            }
        }
    }
}

/// A content block being streamed.
enum Building {
    Text(String),
    Thinking {
        text: String,
        signature: String,
    },
    Redacted(String),
    ToolUse {
        id: String,
        name: String,
        json: String,
    },
}

/// The turn as its events arrive.
#[derive(Default)]
struct Fold {
    blocks: Vec<Option<Building>>,
    done: Vec<Option<ContentBlock>>,
    stop_reason: Option<StopReason>,
    usage: TurnUsage,
    started: bool,
}

fn field<'a>(v: &'a Value, path: &str) -> Result<&'a str, ProviderError> {
    v.pointer(path)
        .and_then(Value::as_str)
        .ok_or_else(|| ProviderError::protocol(NAME, format!("`{path}` is missing")))
}

fn index(v: &Value) -> Result<usize, ProviderError> {
    v.get("index")
        .and_then(Value::as_u64)
        .and_then(|i| usize::try_from(i).ok())
        .filter(|&i| i < 4096)
        .ok_or_else(|| ProviderError::protocol(NAME, "a content block event has no valid `index`"))
}

fn tokens(v: &Value, key: &str) -> Option<u64> {
    v.get(key).and_then(Value::as_u64)
}

impl Fold {
    /// Takes one SSE event; true when the message is complete.
    fn event(
        &mut self,
        name: &str,
        data: &str,
        on_delta: &mut (dyn FnMut(Delta<'_>) + Send),
    ) -> Result<bool, ProviderError> {
        let v: Value = serde_json::from_str(data).map_err(|e| {
            ProviderError::protocol(NAME, format!("event `{name}`: data is not JSON ({e})"))
        })?;
        let kind = v.get("type").and_then(Value::as_str).unwrap_or(name);
        match kind {
            "ping" => {}
            "message_start" => {
                self.started = true;
                if let Some(u) = v.pointer("/message/usage") {
                    self.usage.input_tokens = tokens(u, "input_tokens").unwrap_or(0);
                    self.usage.output_tokens = tokens(u, "output_tokens").unwrap_or(0);
                    self.usage.cache_read_input_tokens =
                        tokens(u, "cache_read_input_tokens").unwrap_or(0);
                    self.usage.cache_creation_input_tokens =
                        tokens(u, "cache_creation_input_tokens").unwrap_or(0);
                }
            }
            "content_block_start" => {
                let i = index(&v)?;
                let block = v.get("content_block").ok_or_else(|| {
                    ProviderError::protocol(NAME, "content_block_start without a content_block")
                })?;
                let building = match field(block, "/type")? {
                    "text" => Building::Text(
                        block
                            .get("text")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_string(),
                    ),
                    "thinking" => Building::Thinking {
                        text: block
                            .get("thinking")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_string(),
                        signature: String::new(),
                    },
                    "redacted_thinking" => Building::Redacted(field(block, "/data")?.to_string()),
                    "tool_use" => Building::ToolUse {
                        id: field(block, "/id")?.to_string(),
                        name: field(block, "/name")?.to_string(),
                        json: String::new(),
                    },
                    other => {
                        return Err(ProviderError::protocol(
                            NAME,
                            format!("unknown content block type `{other}`"),
                        ))
                    }
                };
                if self.blocks.len() <= i {
                    self.blocks.resize_with(i + 1, || None);
                }
                self.blocks[i] = Some(building);
            }
            "content_block_delta" => {
                let i = index(&v)?;
                let delta = v.get("delta").ok_or_else(|| {
                    ProviderError::protocol(NAME, "content_block_delta without a delta")
                })?;
                let Some(Some(building)) = self.blocks.get_mut(i) else {
                    return Err(ProviderError::protocol(
                        NAME,
                        format!("a delta for block {i}, which was not started"),
                    ));
                };
                match (field(delta, "/type")?, building) {
                    ("text_delta", Building::Text(text)) => {
                        let t = field(delta, "/text")?;
                        text.push_str(t);
                        on_delta(Delta::Text { index: i, text: t });
                    }
                    ("thinking_delta", Building::Thinking { text, .. }) => {
                        let t = field(delta, "/thinking")?;
                        text.push_str(t);
                        on_delta(Delta::Thinking { index: i, text: t });
                    }
                    ("signature_delta", Building::Thinking { signature, .. }) => {
                        signature.push_str(field(delta, "/signature")?);
                    }
                    ("input_json_delta", Building::ToolUse { json, .. }) => {
                        let t = field(delta, "/partial_json")?;
                        json.push_str(t);
                        on_delta(Delta::InputJson { index: i, json: t });
                    }
                    (other, _) => {
                        return Err(ProviderError::protocol(
                            NAME,
                            format!("a `{other}` delta does not fit content block {i}"),
                        ))
                    }
                }
            }
            "content_block_stop" => {
                let i = index(&v)?;
                let Some(building) = self.blocks.get_mut(i).and_then(Option::take) else {
                    return Err(ProviderError::protocol(
                        NAME,
                        format!("block {i} stopped without being started"),
                    ));
                };
                let block = match building {
                    Building::Text(text) => ContentBlock::Text { text },
                    Building::Thinking { text, signature } => ContentBlock::Thinking {
                        thinking: text,
                        signature,
                    },
                    Building::Redacted(data) => ContentBlock::RedactedThinking { data },
                    Building::ToolUse { id, name, json } => {
                        let input = if json.trim().is_empty() {
                            json!({})
                        } else {
                            serde_json::from_str(&json).map_err(|e| {
                                ProviderError::protocol(
                                    NAME,
                                    format!("tool_use {id}: its input is not JSON ({e})"),
                                )
                            })?
                        };
                        ContentBlock::ToolUse { id, name, input }
                    }
                };
                if self.done.len() <= i {
                    self.done.resize_with(i + 1, || None);
                }
                self.done[i] = Some(block);
            }
            "message_delta" => {
                if let Some(reason) = v.pointer("/delta/stop_reason").filter(|r| !r.is_null()) {
                    self.stop_reason =
                        Some(serde_json::from_value(reason.clone()).map_err(|_| {
                            ProviderError::protocol(NAME, format!("unknown stop_reason {reason}"))
                        })?);
                }
                if let Some(out) = v.pointer("/usage/output_tokens").and_then(Value::as_u64) {
                    self.usage.output_tokens = out;
                }
            }
            "message_stop" => return Ok(true),
            "error" => {
                let etype = v
                    .pointer("/error/type")
                    .and_then(Value::as_str)
                    .unwrap_or("error");
                let message = v
                    .pointer("/error/message")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                let status = match etype {
                    "overloaded_error" => 529,
                    "rate_limit_error" => 429,
                    "api_error" => 500,
                    "timeout_error" => 504,
                    "invalid_request_error" => 400,
                    "authentication_error" => 401,
                    "permission_error" => 403,
                    "not_found_error" => 404,
                    "request_too_large" => 413,
                    _ => 500,
                };
                return Err(ProviderError::Status {
                    provider: NAME.into(),
                    status,
                    message: format!("{etype}: {message} (in the stream)"),
                    retry_after: None,
                });
            }
            other => {
                return Err(ProviderError::protocol(
                    NAME,
                    format!("unknown event `{other}`"),
                ))
            }
        }
        Ok(false)
    }

    fn finish(self) -> Result<Turn, ProviderError> {
        if !self.started {
            return Err(ProviderError::protocol(
                NAME,
                "message_stop before message_start",
            ));
        }
        if self.blocks.iter().any(Option::is_some) {
            return Err(ProviderError::protocol(
                NAME,
                "message_stop with a content block still open",
            ));
        }
        Ok(Turn {
            content: self.done.into_iter().flatten().collect(),
            stop_reason: self.stop_reason,
            usage: self.usage,
            attempts: 1,
            wire: Vec::new(),
        })
    }
}
