//! A loopback LLM provider for tests: an HTTP/1.1 server on 127.0.0.1 that speaks the
//! Anthropic Messages streaming protocol, OpenAI Chat Completions streaming and the
//! OpenAI Responses API's semantic events (all SSE) and replays recorded exchanges in order, checking what each request must contain. Faults are exchanges too: an
//! error status with `retry-after`, a stream cut off mid-way, malformed SSE, a slow
//! stream. A request that does not match is answered 400 with what differed, and
//! kept for the test to report.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// What a request must contain.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// Texts the request body must contain.
    #[serde(default)]
    pub contains: Vec<String>,
    /// Tool names the request must offer.
    #[serde(default)]
    pub tools: Vec<String>,
}

/// How the provider answers.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Reply {
    /// A complete stream of these events (`event:` lines named by their type: the
    /// Anthropic and Responses API streams).
    Events(Vec<Value>),
    /// A complete stream of these chunks, then `[DONE]` (OpenAI: `data:` lines only).
    Chunks(Vec<Value>),
    /// An error status, with an Anthropic error body.
    Status {
        status: u16,
        #[serde(default)]
        retry_after: Option<u64>,
        #[serde(default)]
        error_type: Option<String>,
    },
    /// These events, then the connection closes mid-stream.
    Dropped(Vec<Value>),
    /// This text as the stream's body.
    Malformed(String),
    /// The events with a pause before each.
    Slow { events: Vec<Value>, gap_ms: u64 },
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Exchange {
    #[serde(default)]
    pub expect: Expect,
    pub reply: Reply,
}

/// A recording: the exchanges of one conversation, in order.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Recording {
    pub provider: String,
    pub exchanges: Vec<Exchange>,
}

/// A request the provider received.
#[derive(Clone, Debug)]
pub struct Received {
    /// When the request's body had arrived.
    pub at: std::time::SystemTime,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

impl Received {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// The paths the mock answers.
const ENDPOINTS: &[&str] = &["/v1/messages", "/v1/chat/completions", "/v1/responses"];

#[derive(Default)]
struct State {
    next: usize,
    received: Vec<Received>,
    mismatches: Vec<String>,
}

pub struct MockProvider {
    pub url: String,
    state: Arc<Mutex<State>>,
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

fn sse(events: &[Value]) -> Vec<u8> {
    let mut out = Vec::new();
    for e in events {
        let name = e.get("type").and_then(Value::as_str).unwrap_or("message");
        out.extend_from_slice(format!("event: {name}\ndata: {e}\n\n").as_bytes());
    }
    out
}

fn check(expect: &Expect, body: &Value, raw: &str) -> Result<(), String> {
    for text in &expect.contains {
        if !raw.contains(text.as_str()) {
            return Err(format!("the request does not contain {text:?}"));
        }
    }
    let offered: Vec<&str> = body
        .get("tools")
        .and_then(Value::as_array)
        .map(|t| {
            t.iter()
                // Anthropic: tools[].name; OpenAI: tools[].function.name.
                .filter_map(|t| t.get("name").or(t.pointer("/function/name"))?.as_str())
                .collect()
        })
        .unwrap_or_default();
    for tool in &expect.tools {
        if !offered.contains(&tool.as_str()) {
            return Err(format!(
                "the request does not offer the tool {tool:?} (it offers {offered:?})"
            ));
        }
    }
    Ok(())
}

async fn read_request(
    stream: &mut tokio::net::TcpStream,
) -> std::io::Result<(String, Vec<(String, String)>, Vec<u8>)> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            return Err(std::io::Error::other("closed before the headers ended"));
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let path = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .unwrap_or("/")
        .to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = buf[head_end..].to_vec();
    while body.len() < length {
        let n = stream.read(&mut chunk).await?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    Ok((path, headers, body))
}

async fn respond(stream: &mut tokio::net::TcpStream, reply: &Reply) -> std::io::Result<()> {
    const SSE_HEAD: &str = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n";
    match reply {
        Reply::Events(events) => {
            stream.write_all(SSE_HEAD.as_bytes()).await?;
            stream.write_all(&sse(events)).await?;
        }
        Reply::Chunks(chunks) => {
            stream.write_all(SSE_HEAD.as_bytes()).await?;
            for c in chunks {
                stream
                    .write_all(format!("data: {c}\n\n").as_bytes())
                    .await?;
            }
            stream.write_all(b"data: [DONE]\n\n").await?;
        }
        Reply::Slow { events, gap_ms } => {
            stream.write_all(SSE_HEAD.as_bytes()).await?;
            for e in events {
                tokio::time::sleep(Duration::from_millis(*gap_ms)).await;
                stream.write_all(&sse(std::slice::from_ref(e))).await?;
                stream.flush().await?;
            }
        }
        Reply::Dropped(events) => {
            stream.write_all(SSE_HEAD.as_bytes()).await?;
            stream.write_all(&sse(events)).await?;
            stream.flush().await?;
            // Cut off: no message_stop, the connection just ends.
        }
        Reply::Malformed(text) => {
            stream.write_all(SSE_HEAD.as_bytes()).await?;
            stream.write_all(text.as_bytes()).await?;
        }
        Reply::Status {
            status,
            retry_after,
            error_type,
        } => {
            let etype = error_type.clone().unwrap_or_else(|| {
                match status {
                    429 => "rate_limit_error",
                    529 => "overloaded_error",
                    400 => "invalid_request_error",
                    401 => "authentication_error",
                    _ => "api_error",
                }
                .to_string()
            });
            let body = serde_json::json!({"type": "error", "error": {"type": etype, "message": format!("mock {status}")}}).to_string();
            let mut head = format!(
                "HTTP/1.1 {status} Mock\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
                body.len()
            );
            if let Some(s) = retry_after {
                head.push_str(&format!("retry-after: {s}\r\n"));
            }
            head.push_str("\r\n");
            stream.write_all(head.as_bytes()).await?;
            stream.write_all(body.as_bytes()).await?;
        }
    }
    stream.flush().await?;
    stream.shutdown().await
}

impl MockProvider {
    /// Starts serving `exchanges` on a free loopback port (on the current runtime).
    pub async fn start(exchanges: Vec<Exchange>) -> MockProvider {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .unwrap_or_else(|e| panic!("mock provider: cannot bind: {e}"));
        let port = listener.local_addr().map(|a| a.port()).unwrap_or_default();
        let state = Arc::new(Mutex::new(State::default()));
        let exchanges = Arc::new(exchanges);
        let shared = state.clone();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let (state, exchanges) = (shared.clone(), exchanges.clone());
                tokio::spawn(async move {
                    let Ok((path, headers, body)) = read_request(&mut stream).await else {
                        return;
                    };
                    let raw = String::from_utf8_lossy(&body).into_owned();
                    let json: Value = serde_json::from_str(&raw).unwrap_or(Value::Null);
                    let reply = {
                        let mut st = state.lock().unwrap_or_else(|p| p.into_inner());
                        st.received.push(Received {
                            at: std::time::SystemTime::now(),
                            path: path.clone(),
                            headers,
                            body: json.clone(),
                        });
                        let i = st.next;
                        st.next += 1;
                        match exchanges.get(i) {
                            None => {
                                st.mismatches.push(format!(
                                    "request {} came after the recording ended",
                                    i + 1
                                ));
                                Reply::Status {
                                    status: 500,
                                    retry_after: None,
                                    error_type: Some("api_error".into()),
                                }
                            }
                            Some(x) if !ENDPOINTS.contains(&path.as_str()) => {
                                st.mismatches.push(format!(
                                    "request {}: path {path} is not a provider endpoint ({ENDPOINTS:?})",
                                    i + 1
                                ));
                                let _ = x;
                                Reply::Status {
                                    status: 404,
                                    retry_after: None,
                                    error_type: Some("not_found_error".into()),
                                }
                            }
                            Some(x) => match check(&x.expect, &json, &raw) {
                                Ok(()) => x.reply.clone(),
                                Err(why) => {
                                    st.mismatches.push(format!("request {}: {why}", i + 1));
                                    Reply::Status {
                                        status: 400,
                                        retry_after: None,
                                        error_type: Some("invalid_request_error".into()),
                                    }
                                }
                            },
                        }
                    };
                    let _ = respond(&mut stream, &reply).await;
                });
            }
        });
        MockProvider {
            url: format!("http://127.0.0.1:{port}"),
            state,
        }
    }

    /// Starts serving a recording file's exchanges.
    pub async fn from_file(path: &std::path::Path) -> MockProvider {
        let text =
            std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let recording: Recording = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("{}: not a recording: {e}", path.display()));
        MockProvider::start(recording.exchanges).await
    }

    pub fn received(&self) -> Vec<Received> {
        self.state
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .received
            .clone()
    }

    /// Requests that did not match the recording, each with why.
    pub fn mismatches(&self) -> Vec<String> {
        self.state
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .mismatches
            .clone()
    }
}
