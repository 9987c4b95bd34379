//! A loopback LLM provider: an HTTP/1.1 server on 127.0.0.1 that speaks the
//! Anthropic Messages streaming protocol, OpenAI Chat Completions streaming and the
//! OpenAI Responses API's semantic events (all SSE) and replays recorded exchanges in order, checking what each request must contain. Faults are exchanges too: an
//! error status with `retry-after`, a stream cut off mid-way, malformed SSE, a slow
//! stream. A request that does not match is answered 400 with what differed (so the
//! adapter's error names it), and kept for the caller to report. `air run --replay`
//! serves a recording with it; the tests use it as their mock provider.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// What a request must contain.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// Texts the request body must contain.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub contains: Vec<String>,
    /// Tool names the request must offer.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<String>,
}

impl Expect {
    pub fn is_empty(&self) -> bool {
        self.contains.is_empty() && self.tools.is_empty()
    }
}

/// How the provider answers.
#[derive(Clone, Debug, Serialize, Deserialize)]
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
    /// The events at a steady rate (written a millisecond's worth at a time): a
    /// fast token stream.
    Paced { events: Vec<Value>, per_second: u32 },
    /// The events, then only pings (one every `every_ms`) for `for_ms`: a stream
    /// that stalls after its start while keeping the connection alive.
    Pinging {
        events: Vec<Value>,
        every_ms: u64,
        for_ms: u64,
    },
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Exchange {
    #[serde(default, skip_serializing_if = "Expect::is_empty")]
    pub expect: Expect,
    /// The request as it was recorded ([`super::normalize`]d): a request now must
    /// normalize to the same, or it is refused with the difference.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<Value>,
    pub reply: Reply,
}

/// A recording: the exchanges of one conversation, in order.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Recording {
    /// The wire protocol: `anthropic`, `openai_chat` or `openai_responses`.
    pub provider: String,
    pub exchanges: Vec<Exchange>,
    /// Each exchange's request as it went out, in bytes (before normalizing): for
    /// the record of what air sends, never compared.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub request_bytes: Vec<u64>,
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

pub struct Server {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    state: Arc<Mutex<State>>,
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

/// Writes `reply`; `message` is the error message of a status reply.
async fn respond(
    stream: &mut tokio::net::TcpStream,
    reply: &Reply,
    message: Option<&str>,
) -> std::io::Result<()> {
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
        Reply::Pinging {
            events,
            every_ms,
            for_ms,
        } => {
            stream.write_all(SSE_HEAD.as_bytes()).await?;
            stream.write_all(&sse(events)).await?;
            stream.flush().await?;
            let until = tokio::time::Instant::now() + Duration::from_millis(*for_ms);
            while tokio::time::Instant::now() < until {
                tokio::time::sleep(Duration::from_millis((*every_ms).max(1))).await;
                stream
                    .write_all(b"event: ping\ndata: {\"type\": \"ping\"}\n\n")
                    .await?;
                stream.flush().await?;
            }
        }
        Reply::Paced { events, per_second } => {
            stream.write_all(SSE_HEAD.as_bytes()).await?;
            let per_ms = usize::try_from(per_second.div_ceil(1000).max(1)).unwrap_or(1);
            let mut tick = tokio::time::interval(Duration::from_millis(1));
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
            for batch in events.chunks(per_ms) {
                tick.tick().await;
                stream.write_all(&sse(batch)).await?;
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
            let message = message
                .map(str::to_string)
                .unwrap_or_else(|| format!("mock {status}"));
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
            let body =
                serde_json::json!({"type": "error", "error": {"type": etype, "message": message}})
                    .to_string();
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

impl Server {
    /// Starts serving `exchanges` on a free loopback port (on the current runtime).
    /// `root` is the project directory, which recorded requests name as `${PROJECT}`.
    pub async fn start(exchanges: Vec<Exchange>, root: Option<String>) -> std::io::Result<Server> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let port = listener.local_addr()?.port();
        let state = Arc::new(Mutex::new(State::default()));
        let exchanges = Arc::new(exchanges);
        let shared = state.clone();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let (state, exchanges, root) = (shared.clone(), exchanges.clone(), root.clone());
                tokio::spawn(async move {
                    let Ok((path, headers, body)) = read_request(&mut stream).await else {
                        return;
                    };
                    let raw = String::from_utf8_lossy(&body).into_owned();
                    let json: Value = serde_json::from_str(&raw).unwrap_or(Value::Null);
                    let (reply, why) = {
                        let mut st = state.lock().unwrap_or_else(|p| p.into_inner());
                        st.received.push(Received {
                            at: std::time::SystemTime::now(),
                            path: path.clone(),
                            headers,
                            body: json.clone(),
                        });
                        let i = st.next;
                        st.next += 1;
                        let verdict = match exchanges.get(i) {
                            None => Err((
                                400,
                                format!(
                                    "request {} came after the recording ended (it has {})",
                                    i + 1,
                                    exchanges.len()
                                ),
                            )),
                            Some(_) if !ENDPOINTS.contains(&path.as_str()) => Err((
                                404,
                                format!(
                                    "request {}: path {path} is not a provider endpoint ({ENDPOINTS:?})",
                                    i + 1
                                ),
                            )),
                            Some(x) => check(&x.expect, &json, &raw)
                                .and_then(|()| match &x.request {
                                    Some(recorded) => {
                                        let now = super::normalize(&json, root.as_deref());
                                        let first = exchanges.first().and_then(|f| f.request.as_ref());
                                        let recorded = super::expanded(recorded, first);
                                        match super::diff(&recorded, &now) {
                                            None => Ok(()),
                                            Some(d) => Err(format!(
                                                "the request no longer matches the recording:\n{d}"
                                            )),
                                        }
                                    }
                                    None => Ok(()),
                                })
                                .map(|()| x.reply.clone())
                                .map_err(|why| (400, format!("request {}: {why}", i + 1))),
                        };
                        match verdict {
                            Ok(reply) => (reply, None),
                            Err((status, why)) => {
                                st.mismatches.push(why.clone());
                                let error_type = match status {
                                    404 => "not_found_error",
                                    _ => "invalid_request_error",
                                };
                                (
                                    Reply::Status {
                                        status,
                                        retry_after: None,
                                        error_type: Some(error_type.into()),
                                    },
                                    Some(why),
                                )
                            }
                        }
                    };
                    let _ = respond(&mut stream, &reply, why.as_deref()).await;
                });
            }
        });
        Ok(Server {
            url: format!("http://127.0.0.1:{port}"),
            state,
        })
    }

    /// The requests received so far.
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

impl Recording {
    /// Reads a recording file, naming the file and the JSON path of what is wrong.
    pub fn load(path: &std::path::Path) -> Result<Recording, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        serde_path_to_error::deserialize(&mut serde_json::Deserializer::from_str(&text))
            .map_err(|e| format!("{}: {}: {}", path.display(), e.path(), e.inner()))
    }
}
