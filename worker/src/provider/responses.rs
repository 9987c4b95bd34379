//! The OpenAI Responses API (`POST /responses`), OpenAI's own endpoint for agents.
//! The canonical conversation is converted here and nowhere else (D-046): the system
//! layers become `instructions`; user text becomes `input_text` parts, assistant
//! text `output_text` parts; `tool_use` blocks become `function_call` items and
//! `tool_result` blocks `function_call_output` items. Nothing is stored at the
//! provider (`store: false`), so a reasoning model's reasoning is asked back
//! encrypted (`include: ["reasoning.encrypted_content"]`), kept as a thinking block
//! whose signature holds the item, and sent back as that item before the calls it
//! led to; other protocols' thinking is left out. The stream's semantic events (output items, text and argument
//! deltas, `response.completed` with the usage, `response.incomplete`,
//! `response.failed`, `error`) fold back into canonical blocks; it has no `[DONE]`.

use air_proto::message::{ContentBlock, Message, Role, StopReason};
use serde_json::{json, Value};

use super::{
    Delta, ProviderError, RetryPolicy, Timeouts, Turn, TurnRequest, TurnUsage, RESPONSES_REASONING,
};

const NAME: &str = "openai-responses";

pub struct OpenAiResponses {
    client: reqwest::Client,
    base_url: String,
    api_key: Option<String>,
    timeouts: Timeouts,
    retry: RetryPolicy,
}

/// Canonical messages as Responses API input items.
pub fn input(conversation: &[Message]) -> Vec<Value> {
    let mut out = Vec::new();
    for m in conversation {
        let mut text = Vec::new();
        for b in &m.content {
            match (m.role, b) {
                (_, ContentBlock::Text { text: t }) => text.push(t.as_str()),
                // This protocol's own reasoning item, sent back as it came.
                (Role::Assistant, ContentBlock::Thinking { signature, .. }) => {
                    let item = signature
                        .strip_prefix(RESPONSES_REASONING)
                        .and_then(|j| serde_json::from_str::<Value>(j).ok())
                        .filter(|v| v.get("type").and_then(Value::as_str) == Some("reasoning"));
                    if let Some(item) = item {
                        if !text.is_empty() {
                            out.push(message(m.role, &text.join("")));
                            text.clear();
                        }
                        out.push(item);
                    }
                }
                (
                    Role::User,
                    ContentBlock::ToolResult {
                        tool_use_id,
                        content,
                        is_error,
                    },
                ) => {
                    out.push(json!({
                        "type": "function_call_output",
                        "call_id": tool_use_id,
                        "output": if *is_error { format!("error: {content}") } else { content.clone() },
                    }));
                }
                (Role::Assistant, ContentBlock::ToolUse { id, name, input }) => {
                    // Text said before the call comes before it.
                    if !text.is_empty() {
                        out.push(message(m.role, &text.join("")));
                        text.clear();
                    }
                    out.push(json!({
                        "type": "function_call",
                        "call_id": id,
                        "name": name,
                        "arguments": input.to_string(),
                    }));
                }
                _ => {}
            }
        }
        if !text.is_empty() {
            let joined = match m.role {
                Role::User => text.join("\n\n"),
                Role::Assistant => text.join(""),
            };
            out.push(message(m.role, &joined));
        }
    }
    out
}

fn message(role: Role, text: &str) -> Value {
    match role {
        Role::User => json!({
            "type": "message", "role": "user",
            "content": [{ "type": "input_text", "text": text }],
        }),
        Role::Assistant => json!({
            "type": "message", "role": "assistant",
            "content": [{ "type": "output_text", "text": text }],
        }),
    }
}

impl OpenAiResponses {
    pub fn new(
        base_url: &str,
        api_key: Option<&str>,
        timeouts: Timeouts,
        retry: RetryPolicy,
    ) -> Result<OpenAiResponses, ProviderError> {
        Ok(OpenAiResponses {
            client: super::http_client(NAME, base_url, &timeouts)?,
            base_url: base_url.trim_end_matches('/').to_string(),
            api_key: api_key.filter(|k| !k.is_empty()).map(str::to_string),
            timeouts,
            retry,
        })
    }
}

impl super::Adapter for OpenAiResponses {
    fn body(&self, request: &TurnRequest) -> Value {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| json!({ "type": "function", "name": t.name, "description": t.description, "parameters": t.input_schema }))
            .collect();
        let mut body = json!({
            "model": request.model,
            "input": input(&request.messages),
            "max_output_tokens": request.max_tokens,
            "stream": true,
            "store": false,
        });
        if !request.system.is_empty() {
            body["instructions"] = Value::String(request.system.join("\n\n"));
        }
        if !tools.is_empty() {
            body["tools"] = Value::Array(tools);
        }
        if let Some(effort) = request.thinking.effort {
            body["reasoning"] = json!({ "effort": effort.as_str() });
        }
        if request.reasoning {
            body["include"] = json!(["reasoning.encrypted_content"]);
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
        let url = format!("{}/responses", self.base_url);
        let mut sse = super::Sse::post_bearer(
            NAME,
            &self.client,
            &url,
            self.api_key.as_deref(),
            body,
            &self.timeouts,
        )
        .await?;
        let mut fold = Fold::default();
        loop {
            let Some(event) = sse.next().await? else {
                return Err(ProviderError::transport(
                    NAME,
                    "the stream ended before response.completed",
                ));
            };
            if let Some(mut turn) = fold.event(&event.data, on_delta)? {
                turn.wire = sse.take_wire();
                return Ok(turn);
            }
        }
    }
}

/// An output item being streamed.
enum Item {
    Text(String),
    Call {
        call_id: String,
        name: String,
        arguments: String,
    },
    /// A reasoning item: its summary, then (once done) the whole item to send back.
    Reasoning {
        summary: String,
        item: Option<Value>,
    },
    /// Refusals and anything else not carried back.
    Other,
}

#[derive(Default)]
struct Fold {
    /// By `output_index`.
    items: Vec<Option<Item>>,
}

fn index(v: &Value) -> Result<usize, ProviderError> {
    v.get("output_index")
        .and_then(Value::as_u64)
        .and_then(|i| usize::try_from(i).ok())
        .filter(|&i| i < 1024)
        .ok_or_else(|| ProviderError::protocol(NAME, "an event has no valid `output_index`"))
}

fn text_of(v: &Value, key: &str) -> String {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

impl Fold {
    fn slot(&mut self, i: usize) -> &mut Option<Item> {
        if self.items.len() <= i {
            self.items.resize_with(i + 1, || None);
        }
        &mut self.items[i]
    }

    /// Folds one event; the finished turn when the stream is done.
    fn event(
        &mut self,
        data: &str,
        on_delta: &mut (dyn FnMut(Delta<'_>) + Send),
    ) -> Result<Option<Turn>, ProviderError> {
        let v: Value = serde_json::from_str(data)
            .map_err(|e| ProviderError::protocol(NAME, format!("an event is not JSON ({e})")))?;
        let kind = v.get("type").and_then(Value::as_str).unwrap_or_default();
        match kind {
            "response.output_item.added" => {
                let i = index(&v)?;
                let item = v.get("item").cloned().unwrap_or_default();
                *self.slot(i) = Some(match item.get("type").and_then(Value::as_str) {
                    Some("message") => Item::Text(String::new()),
                    Some("function_call") => Item::Call {
                        call_id: text_of(&item, "call_id"),
                        name: text_of(&item, "name"),
                        arguments: text_of(&item, "arguments"),
                    },
                    Some("reasoning") => Item::Reasoning {
                        summary: String::new(),
                        item: None,
                    },
                    _ => Item::Other,
                });
            }
            "response.output_text.delta" => {
                let i = index(&v)?;
                let delta = text_of(&v, "delta");
                if let Some(Item::Text(t)) = self.slot(i) {
                    t.push_str(&delta);
                    on_delta(Delta::Text {
                        index: i,
                        text: &delta,
                    });
                } else {
                    return Err(ProviderError::protocol(
                        NAME,
                        format!("text for output {i}, which is not a message"),
                    ));
                }
            }
            "response.function_call_arguments.delta" => {
                let i = index(&v)?;
                let delta = text_of(&v, "delta");
                if let Some(Item::Call { arguments, .. }) = self.slot(i) {
                    arguments.push_str(&delta);
                    on_delta(Delta::InputJson {
                        index: i,
                        json: &delta,
                    });
                } else {
                    return Err(ProviderError::protocol(
                        NAME,
                        format!("arguments for output {i}, which is not a function call"),
                    ));
                }
            }
            "response.reasoning_summary_text.delta" => {
                let i = index(&v)?;
                let delta = text_of(&v, "delta");
                if let Some(Item::Reasoning { summary, .. }) = self.slot(i) {
                    summary.push_str(&delta);
                }
                on_delta(Delta::Thinking {
                    index: i,
                    text: &delta,
                });
            }
            "response.output_item.done" => {
                // The finished item is authoritative (arguments in full).
                let i = index(&v)?;
                let item = v.get("item").cloned().unwrap_or_default();
                match item.get("type").and_then(Value::as_str) {
                    Some("function_call") => {
                        *self.slot(i) = Some(Item::Call {
                            call_id: text_of(&item, "call_id"),
                            name: text_of(&item, "name"),
                            arguments: text_of(&item, "arguments"),
                        });
                    }
                    // Only an item with its encrypted content can be sent back.
                    Some("reasoning") if item.get("encrypted_content").is_some() => {
                        let mut kept = item.clone();
                        if let Some(o) = kept.as_object_mut() {
                            o.remove("status");
                        }
                        match self.slot(i) {
                            Some(Item::Reasoning { item, .. }) => *item = Some(kept),
                            slot => {
                                *slot = Some(Item::Reasoning {
                                    summary: String::new(),
                                    item: Some(kept),
                                })
                            }
                        }
                    }
                    _ => {}
                }
            }
            "response.completed" | "response.incomplete" => {
                return self.finish(&v).map(Some);
            }
            "response.failed" => {
                let err = v.pointer("/response/error").cloned().unwrap_or_default();
                return Err(stream_error(&err));
            }
            "error" => return Err(stream_error(&v)),
            _ => {}
        }
        Ok(None)
    }

    fn finish(&mut self, v: &Value) -> Result<Turn, ProviderError> {
        let response = v.get("response").cloned().unwrap_or_default();
        let mut usage = TurnUsage::default();
        if let Some(u) = response.get("usage").filter(|u| !u.is_null()) {
            let n = |p: &str| u.pointer(p).and_then(Value::as_u64).unwrap_or(0);
            // The input's count includes its cached part: kept apart, as canonical.
            let cached = n("/input_tokens_details/cached_tokens");
            usage.input_tokens = n("/input_tokens").saturating_sub(cached);
            usage.output_tokens = n("/output_tokens");
            usage.cache_read_input_tokens = cached;
        }
        let mut content = Vec::new();
        let mut calls = 0;
        for (i, item) in std::mem::take(&mut self.items).into_iter().enumerate() {
            match item {
                Some(Item::Text(t)) if !t.is_empty() => {
                    content.push(ContentBlock::Text { text: t })
                }
                Some(Item::Reasoning {
                    summary,
                    item: Some(item),
                }) => content.push(ContentBlock::Thinking {
                    thinking: summary,
                    signature: format!("{RESPONSES_REASONING}{item}"),
                }),
                Some(Item::Call {
                    call_id,
                    name,
                    arguments,
                }) => {
                    if call_id.is_empty() || name.is_empty() {
                        return Err(ProviderError::protocol(
                            NAME,
                            format!("function call {i} has no call_id or name"),
                        ));
                    }
                    let input = if arguments.trim().is_empty() {
                        json!({})
                    } else {
                        serde_json::from_str(&arguments).map_err(|e| {
                            ProviderError::protocol(
                                NAME,
                                format!(
                                    "function call {call_id}: its arguments are not JSON ({e})"
                                ),
                            )
                        })?
                    };
                    calls += 1;
                    content.push(ContentBlock::ToolUse {
                        id: call_id,
                        name,
                        input,
                    });
                }
                _ => {}
            }
        }
        let status = response
            .get("status")
            .and_then(Value::as_str)
            .unwrap_or("completed");
        let stop_reason = match status {
            "incomplete" => match response
                .pointer("/incomplete_details/reason")
                .and_then(Value::as_str)
            {
                Some("content_filter") => StopReason::Refusal,
                _ => StopReason::MaxTokens,
            },
            _ if calls > 0 => StopReason::ToolUse,
            _ => StopReason::EndTurn,
        };
        Ok(Turn {
            content,
            stop_reason: Some(stop_reason),
            usage,
            attempts: 1,
            wire: Vec::new(),
        })
    }
}

/// An error the stream reported (`error` events and `response.failed`).
fn stream_error(err: &Value) -> ProviderError {
    let message = err
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("error")
        .to_string();
    let code = err.get("code").and_then(Value::as_str).unwrap_or_default();
    // Rate limits and overload are worth another try; the rest is not.
    let status = match code {
        "rate_limit_exceeded" => 429,
        "server_error" | "" => 500,
        "server_is_overloaded" | "slow_down" => 503,
        _ => 400,
    };
    ProviderError::Status {
        provider: NAME.into(),
        status,
        message: format!(
            "{message} (in the stream{})",
            if code.is_empty() {
                String::new()
            } else {
                format!(", {code}")
            }
        ),
        retry_after: None,
    }
}
