//! The Anthropic Messages API, natively: the canonical format is its own, so requests
//! and the streamed answer need no conversion beyond the wire envelope. Streaming
//! SSE: `message_start`, `content_block_start` / `_delta` (text, thinking, signature,
//! input JSON) / `_stop`, `message_delta` (stop reason, usage), `message_stop`,
//! `ping`, `error`. The stable system prefix carries a prompt-cache marker.

use std::time::Duration;

use air_proto::message::{ContentBlock, StopReason};
use eventsource_stream::Eventsource as _;
use futures_util::StreamExt as _;
use serde_json::{json, Value};

use super::{Delta, ProviderError, RetryPolicy, Timeouts, Turn, TurnRequest, TurnUsage};

const NAME: &str = "anthropic";
/// The API version this adapter speaks.
pub const VERSION: &str = "2023-06-01";
/// Where the API is when `ANTHROPIC_BASE_URL` does not say otherwise.
pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";

pub struct Anthropic {
    client: reqwest::Client,
    base_url: String,
    api_key: String,
    timeouts: Timeouts,
    retry: RetryPolicy,
}

fn transport(message: impl Into<String>) -> ProviderError {
    ProviderError::Transport {
        provider: NAME,
        message: message.into(),
    }
}

fn protocol(message: impl Into<String>) -> ProviderError {
    ProviderError::Protocol {
        provider: NAME,
        message: message.into(),
    }
}

fn timeout(message: impl Into<String>) -> ProviderError {
    ProviderError::Timeout {
        provider: NAME,
        message: message.into(),
    }
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
        super::install_crypto();
        let client = reqwest::Client::builder()
            .connect_timeout(timeouts.connect)
            .build()
            .map_err(|e| ProviderError::Config(format!("anthropic: cannot make a client: {e}")))?;
        Ok(Anthropic {
            client,
            base_url: base_url.trim_end_matches('/').to_string(),
            api_key: api_key.to_string(),
            timeouts,
            retry,
        })
    }

    /// The request body, as the API takes it.
    pub fn body(request: &TurnRequest) -> Value {
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
        let mut body = json!({
            "model": request.model,
            "max_tokens": request.max_tokens,
            "messages": request.messages,
            "stream": true,
        });
        if !system.is_empty() {
            body["system"] = Value::Array(system);
        }
        if !tools.is_empty() {
            body["tools"] = Value::Array(tools);
        }
        body
    }

    /// Runs one turn, retrying transient failures; `on_delta` sees the stream.
    pub async fn turn(
        &self,
        request: &TurnRequest,
        on_delta: &mut (dyn FnMut(Delta<'_>) + Send),
    ) -> Result<Turn, ProviderError> {
        let body = Self::body(request);
        let mut attempt = 1;
        loop {
            match self.attempt(&body, on_delta).await {
                Ok(mut turn) => {
                    turn.attempts = attempt;
                    return Ok(turn);
                }
                Err(e) if e.retryable() && attempt < self.retry.max_attempts => {
                    let wait = self.retry.delay(attempt, &e);
                    if wait > self.retry.max_retry_after {
                        return Err(e);
                    }
                    tokio::time::sleep(wait).await;
                    attempt += 1;
                    on_delta(Delta::Restart { attempt });
                }
                Err(e) if e.retryable() => {
                    return Err(ProviderError::Exhausted {
                        attempts: attempt,
                        last: Box::new(e),
                    })
                }
                Err(e) => return Err(e),
            }
        }
    }

    async fn attempt(
        &self,
        body: &Value,
        on_delta: &mut (dyn FnMut(Delta<'_>) + Send),
    ) -> Result<Turn, ProviderError> {
        let send = self
            .client
            .post(format!("{}/v1/messages", self.base_url))
            .header("x-api-key", &self.api_key)
            .header("anthropic-version", VERSION)
            .header("content-type", "application/json")
            .header("accept", "text/event-stream")
            .body(body.to_string())
            .send();
        let response = tokio::time::timeout(self.timeouts.first_byte, send)
            .await
            .map_err(|_| {
                timeout(format!(
                    "no response within {} s",
                    self.timeouts.first_byte.as_secs()
                ))
            })?
            .map_err(|e| transport(format!("request failed: {e}")))?;
        let status = response.status().as_u16();
        if status != 200 {
            let retry_after = response
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<f64>().ok())
                .map(Duration::from_secs_f64);
            let text = response.text().await.unwrap_or_default();
            let message = serde_json::from_str::<Value>(&text)
                .ok()
                .and_then(|v| {
                    v.pointer("/error/message")
                        .and_then(Value::as_str)
                        .map(str::to_string)
                })
                .unwrap_or_else(|| text.chars().take(300).collect());
            return Err(ProviderError::Status {
                provider: NAME,
                status,
                message,
                retry_after,
            });
        }
        let mut events = response.bytes_stream().eventsource();
        let mut fold = Fold::default();
        loop {
            let next = tokio::time::timeout(self.timeouts.idle, events.next())
                .await
                .map_err(|_| {
                    timeout(format!(
                        "the stream was silent for {} s",
                        self.timeouts.idle.as_secs()
                    ))
                })?;
            let Some(event) = next else {
                return Err(transport("the stream ended before message_stop"));
            };
            let event = event.map_err(|e| match e {
                eventsource_stream::EventStreamError::Transport(e) => {
                    transport(format!("the stream broke: {e}"))
                }
                other => protocol(other.to_string()),
            })?;
            if fold.event(&event.event, &event.data, on_delta)? {
                return fold.finish();
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
        .ok_or_else(|| protocol(format!("`{path}` is missing")))
}

fn index(v: &Value) -> Result<usize, ProviderError> {
    v.get("index")
        .and_then(Value::as_u64)
        .and_then(|i| usize::try_from(i).ok())
        .filter(|&i| i < 4096)
        .ok_or_else(|| protocol("a content block event has no valid `index`"))
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
        let v: Value = serde_json::from_str(data)
            .map_err(|e| protocol(format!("event `{name}`: data is not JSON ({e})")))?;
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
                let block = v
                    .get("content_block")
                    .ok_or_else(|| protocol("content_block_start without a content_block"))?;
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
                    other => return Err(protocol(format!("unknown content block type `{other}`"))),
                };
                if self.blocks.len() <= i {
                    self.blocks.resize_with(i + 1, || None);
                }
                self.blocks[i] = Some(building);
            }
            "content_block_delta" => {
                let i = index(&v)?;
                let delta = v
                    .get("delta")
                    .ok_or_else(|| protocol("content_block_delta without a delta"))?;
                let Some(Some(building)) = self.blocks.get_mut(i) else {
                    return Err(protocol(format!(
                        "a delta for block {i}, which was not started"
                    )));
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
                        return Err(protocol(format!(
                            "a `{other}` delta does not fit content block {i}"
                        )))
                    }
                }
            }
            "content_block_stop" => {
                let i = index(&v)?;
                let Some(building) = self.blocks.get_mut(i).and_then(Option::take) else {
                    return Err(protocol(format!("block {i} stopped without being started")));
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
                                protocol(format!("tool_use {id}: its input is not JSON ({e})"))
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
                    self.stop_reason = Some(
                        serde_json::from_value(reason.clone())
                            .map_err(|_| protocol(format!("unknown stop_reason {reason}")))?,
                    );
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
                    provider: NAME,
                    status,
                    message: format!("{etype}: {message} (in the stream)"),
                    retry_after: None,
                });
            }
            other => return Err(protocol(format!("unknown event `{other}`"))),
        }
        Ok(false)
    }

    fn finish(self) -> Result<Turn, ProviderError> {
        if !self.started {
            return Err(protocol("message_stop before message_start"));
        }
        if self.blocks.iter().any(Option::is_some) {
            return Err(protocol("message_stop with a content block still open"));
        }
        Ok(Turn {
            content: self.done.into_iter().flatten().collect(),
            stop_reason: self.stop_reason,
            usage: self.usage,
            attempts: 1,
        })
    }
}
