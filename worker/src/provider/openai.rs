//! OpenAI Chat Completions, and every endpoint that speaks it by base URL (OpenRouter,
//! ollama, vLLM, llama.cpp server). The canonical conversation (Anthropic blocks) is
//! converted here and nowhere else (D-046): system layers become one system message,
//! `tool_use` blocks become `tool_calls`, `tool_result` blocks become `tool` messages,
//! and thinking (which this protocol cannot carry back) is left out. The stream's
//! `choices[0].delta` chunks (content, streamed tool call arguments by index,
//! `finish_reason`) and the final usage chunk fold back into canonical blocks.

use air_proto::message::{ContentBlock, Message, Role, StopReason};
use serde_json::{json, Value};

use super::{Delta, ProviderError, RetryPolicy, Timeouts, Turn, TurnRequest, TurnUsage};

const NAME: &str = "openai";

pub struct OpenAiChat {
    client: reqwest::Client,
    base_url: String,
    api_key: Option<String>,
    timeouts: Timeouts,
    retry: RetryPolicy,
}

/// Canonical messages as Chat Completions messages.
pub fn messages(system: &[String], conversation: &[Message]) -> Vec<Value> {
    let mut out = Vec::new();
    if !system.is_empty() {
        out.push(json!({ "role": "system", "content": system.join("\n\n") }));
    }
    for m in conversation {
        match m.role {
            Role::User => {
                // Tool results answer the previous assistant message, first.
                let mut text = Vec::new();
                for b in &m.content {
                    match b {
                        ContentBlock::ToolResult {
                            tool_use_id,
                            content,
                            is_error,
                        } => out.push(json!({
                            "role": "tool",
                            "tool_call_id": tool_use_id,
                            "content": if *is_error { format!("error: {content}") } else { content.clone() },
                        })),
                        ContentBlock::Text { text: t } => text.push(t.as_str()),
                        _ => {}
                    }
                }
                if !text.is_empty() {
                    out.push(json!({ "role": "user", "content": text.join("\n\n") }));
                }
            }
            Role::Assistant => {
                let text = m.texts();
                let calls: Vec<Value> = m
                    .tool_uses()
                    .map(|(id, name, input)| {
                        json!({ "id": id, "type": "function", "function": { "name": name, "arguments": input.to_string() } })
                    })
                    .collect();
                let mut msg = json!({ "role": "assistant", "content": if text.is_empty() { Value::Null } else { Value::String(text.join("")) } });
                if !calls.is_empty() {
                    msg["tool_calls"] = Value::Array(calls);
                }
                out.push(msg);
            }
        }
    }
    out
}

impl OpenAiChat {
    /// `api_key` is `None` for endpoints that take none (a local server).
    pub fn new(
        base_url: &str,
        api_key: Option<&str>,
        timeouts: Timeouts,
        retry: RetryPolicy,
    ) -> Result<OpenAiChat, ProviderError> {
        let client = super::http_client("openai", base_url, &timeouts)?;
        Ok(OpenAiChat {
            client,
            base_url: base_url.trim_end_matches('/').to_string(),
            api_key: api_key.filter(|k| !k.is_empty()).map(str::to_string),
            timeouts,
            retry,
        })
    }
}

impl super::Adapter for OpenAiChat {
    fn body(&self, request: &TurnRequest) -> Value {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| json!({ "type": "function", "function": { "name": t.name, "description": t.description, "parameters": t.input_schema } }))
            .collect();
        let mut body = json!({
            "model": request.model,
            "messages": messages(&request.system, &request.messages),
            "max_completion_tokens": request.max_tokens,
            "stream": true,
            "stream_options": { "include_usage": true },
        });
        if !tools.is_empty() {
            body["tools"] = Value::Array(tools);
        }
        if let Some(effort) = request.thinking.effort {
            body["reasoning_effort"] = json!(effort.as_str());
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
        let url = format!("{}/chat/completions", self.base_url);
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
                    "the stream ended before [DONE]",
                ));
            };
            if event.data.trim() == "[DONE]" {
                let mut turn = fold.finish()?;
                turn.wire = sse.take_wire();
                return Ok(turn);
            }
            fold.chunk(&event.data, on_delta)?;
        }
    }
}

/// A tool call being streamed.
#[derive(Default)]
struct Call {
    id: String,
    name: String,
    arguments: String,
}

#[derive(Default)]
struct Fold {
    text: String,
    calls: Vec<Call>,
    finish: Option<StopReason>,
    usage: TurnUsage,
    chunks: usize,
}

impl Fold {
    fn chunk(
        &mut self,
        data: &str,
        on_delta: &mut (dyn FnMut(Delta<'_>) + Send),
    ) -> Result<(), ProviderError> {
        let v: Value = serde_json::from_str(data)
            .map_err(|e| ProviderError::protocol(NAME, format!("a chunk is not JSON ({e})")))?;
        if let Some(err) = v.get("error") {
            let message = err
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("error");
            let code = err.get("code").and_then(Value::as_u64).unwrap_or(500);
            return Err(ProviderError::Status {
                provider: NAME.into(),
                status: u16::try_from(code).unwrap_or(500),
                message: format!("{message} (in the stream)"),
                retry_after: None,
            });
        }
        self.chunks += 1;
        if let Some(u) = v.get("usage").filter(|u| !u.is_null()) {
            let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
            // The prompt's count includes its cached part: kept apart, as canonical.
            let cached = u
                .pointer("/prompt_tokens_details/cached_tokens")
                .and_then(Value::as_u64)
                .unwrap_or(0);
            self.usage.input_tokens = n("prompt_tokens").saturating_sub(cached);
            self.usage.output_tokens = n("completion_tokens");
            self.usage.cache_read_input_tokens = cached;
        }
        let Some(choice) = v.pointer("/choices/0") else {
            return Ok(());
        };
        if let Some(delta) = choice.get("delta") {
            if let Some(t) = delta.get("content").and_then(Value::as_str) {
                self.text.push_str(t);
                on_delta(Delta::Text { index: 0, text: t });
            }
            for c in delta
                .get("tool_calls")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let i = c
                    .get("index")
                    .and_then(Value::as_u64)
                    .and_then(|i| usize::try_from(i).ok())
                    .filter(|&i| i < 256)
                    .ok_or_else(|| {
                        ProviderError::protocol(NAME, "a tool call delta has no valid `index`")
                    })?;
                if self.calls.len() <= i {
                    self.calls.resize_with(i + 1, Call::default);
                }
                let call = &mut self.calls[i];
                if let Some(id) = c.get("id").and_then(Value::as_str) {
                    call.id = id.to_string();
                }
                if let Some(name) = c.pointer("/function/name").and_then(Value::as_str) {
                    call.name.push_str(name);
                }
                if let Some(args) = c.pointer("/function/arguments").and_then(Value::as_str) {
                    call.arguments.push_str(args);
                    on_delta(Delta::InputJson {
                        index: i + 1,
                        json: args,
                    });
                }
            }
        }
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish = Some(match reason {
                "stop" => StopReason::EndTurn,
                "tool_calls" | "function_call" => StopReason::ToolUse,
                "length" => StopReason::MaxTokens,
                "content_filter" => StopReason::Refusal,
                other => {
                    return Err(ProviderError::protocol(
                        NAME,
                        format!("unknown finish_reason `{other}`"),
                    ))
                }
            });
        }
        Ok(())
    }

    fn finish(self) -> Result<Turn, ProviderError> {
        if self.chunks == 0 {
            return Err(ProviderError::protocol(NAME, "[DONE] before any chunk"));
        }
        let mut content = Vec::new();
        if !self.text.is_empty() {
            content.push(ContentBlock::Text { text: self.text });
        }
        for (i, call) in self.calls.into_iter().enumerate() {
            if call.id.is_empty() || call.name.is_empty() {
                return Err(ProviderError::protocol(
                    NAME,
                    format!("tool call {i} has no id or name"),
                ));
            }
            let input = if call.arguments.trim().is_empty() {
                json!({})
            } else {
                serde_json::from_str(&call.arguments).map_err(|e| {
                    ProviderError::protocol(
                        NAME,
                        format!("tool call {}: its arguments are not JSON ({e})", call.id),
                    )
                })?
            };
            content.push(ContentBlock::ToolUse {
                id: call.id,
                name: call.name,
                input,
            });
        }
        Ok(Turn {
            content,
            stop_reason: self.finish,
            usage: self.usage,
            attempts: 1,
            wire: Vec::new(),
        })
    }
}
