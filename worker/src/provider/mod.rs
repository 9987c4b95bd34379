//! LLM providers. The conversation is kept in the canonical format (Anthropic content
//! blocks, `air_proto::message`); each adapter converts at its boundary (D-046).
//! A turn streams: deltas reach the caller as they arrive, and the finished turn is
//! returned whole. Transient failures (429 with `retry-after`, 5xx and 529/overloaded,
//! connection resets, a stream cut off mid-way) are retried with exponential backoff
//! and jitter, within a budget; a retried turn starts over, and since tools run only
//! after a turn is complete, no tool call is ever made twice.

pub mod anthropic;
pub mod openai;
pub mod responses;

use std::time::Duration;

use air_proto::message::{ContentBlock, Message, StopReason};
use serde_json::Value;

/// Makes ring the TLS crypto of this process (one crypto stack, no C build step);
/// harmless when it is already installed.
pub fn install_crypto() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// The HTTP client of an adapter for `base_url` (rustls with ring, the connect
/// timeout). A plain `http://` endpoint (a local model, a loopback server) gets a
/// client without trusted roots: the system's certificates are read only for a
/// provider that speaks TLS (reading them takes several milliseconds), and a redirect
/// from plain HTTP to TLS fails instead of trusting anything.
pub(crate) fn http_client(
    provider: &str,
    base_url: &str,
    timeouts: &Timeouts,
) -> Result<reqwest::Client, ProviderError> {
    install_crypto();
    let builder = reqwest::Client::builder().connect_timeout(timeouts.connect);
    let plain = base_url
        .get(..7)
        .is_some_and(|s| s.eq_ignore_ascii_case("http://"));
    if plain {
        builder.tls_certs_only(Vec::new())
    } else {
        builder
    }
    .build()
    .map_err(|e| ProviderError::Config(format!("{provider}: cannot make a client: {e}")))
}

/// A tool offered to the model (its provider-side name).
#[derive(Clone, Debug, PartialEq)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
}

/// One request for a turn.
#[derive(Clone, Debug, PartialEq)]
pub struct TurnRequest {
    pub model: String,
    /// System prompt layers, most stable first: the last stable layer gets the
    /// prompt-cache marker.
    pub system: Vec<String>,
    pub messages: Vec<Message>,
    pub tools: Vec<ToolSpec>,
    pub max_tokens: u32,
    /// How much the model thinks first (each protocol sends the part it has).
    pub thinking: air_proto::models::Thinking,
    /// Whether the model reasons (an OpenAI reasoning model): its reasoning is asked
    /// back, encrypted, to be sent with the next request.
    pub reasoning: bool,
}

/// The start of the signature of a thinking block that is an OpenAI Responses
/// reasoning item (its JSON follows): sent back only to that protocol.
pub const RESPONSES_REASONING: &str = "openai-responses:";

/// Tokens a turn used, as Anthropic counts them whatever the provider: the input read
/// fresh, apart from what was read from or written to the prompt cache (OpenAI's
/// input count includes its cached part; the adapters take it out).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TurnUsage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_read_input_tokens: u64,
    pub cache_creation_input_tokens: u64,
}

impl TurnUsage {
    /// The whole input the model read this turn (fresh, cached and cache-written).
    pub fn context_tokens(&self) -> u64 {
        self.input_tokens
            .saturating_add(self.cache_read_input_tokens)
            .saturating_add(self.cache_creation_input_tokens)
    }

    /// The tokens by how they are priced.
    pub fn counts(&self) -> air_proto::models::TokenCounts {
        air_proto::models::TokenCounts {
            input: self.input_tokens,
            output: self.output_tokens,
            cache_read: self.cache_read_input_tokens,
            cache_write: self.cache_creation_input_tokens,
        }
    }
}

/// A finished turn.
#[derive(Clone, Debug, PartialEq)]
pub struct Turn {
    pub content: Vec<ContentBlock>,
    pub stop_reason: Option<StopReason>,
    pub usage: TurnUsage,
    /// Attempts it took (1 when nothing was retried).
    pub attempts: u32,
    /// The stream's events as they came, when they are being kept
    /// ([`keep_wire`], for recordings); empty otherwise.
    pub wire: Vec<RawEvent>,
}

/// One server-sent event as it came over the wire.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawEvent {
    pub event: String,
    pub data: String,
}

static KEEP_WIRE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Keep every turn's raw events in [`Turn::wire`] (for recording a run).
pub fn keep_wire(on: bool) {
    KEEP_WIRE.store(on, std::sync::atomic::Ordering::Relaxed);
}

/// A piece of a turn as it streams.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delta<'a> {
    Text {
        index: usize,
        text: &'a str,
    },
    Thinking {
        index: usize,
        text: &'a str,
    },
    InputJson {
        index: usize,
        json: &'a str,
    },
    /// The turn is being tried again from the start (after a transient failure);
    /// `slow_down`: the provider said it is rate-limited or overloaded (429, 529).
    Restart {
        attempt: u32,
        slow_down: bool,
    },
}

/// Why a turn failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ProviderError {
    /// The provider answered with an error status (or an error event).
    #[error("{provider} answered {status}: {message}")]
    Status {
        provider: Name,
        status: u16,
        message: String,
        retry_after: Option<Duration>,
    },
    /// The connection failed or the stream was cut off.
    #[error("{provider}: {message}")]
    Transport { provider: Name, message: String },
    /// The provider sent something that is not its protocol.
    #[error("{provider} sent a malformed stream: {message}")]
    Protocol { provider: Name, message: String },
    /// No answer in time.
    #[error("{provider}: {message}")]
    Timeout { provider: Name, message: String },
    /// Nothing listens where a provider on this machine (or its local network)
    /// should be: the connection was refused, which waiting does not change.
    #[error(
        "{provider}: nothing answers at {url} (connection refused); is {provider} running there?"
    )]
    Refused { provider: Name, url: String },
    /// The configuration cannot work (no key, a bad base URL).
    #[error("{0}")]
    Config(String),
    /// Retries ran out; the last failure is kept.
    #[error("gave up after {attempts} attempts: {last}")]
    Exhausted {
        attempts: u32,
        last: Box<ProviderError>,
    },
}

/// The provider an error names: the protocol's adapter at first, the configured
/// provider (`ollama`, `openrouter`, …) once the model's client has seen it.
pub type Name = std::borrow::Cow<'static, str>;

impl ProviderError {
    pub(crate) fn transport(provider: &'static str, message: impl Into<String>) -> Self {
        ProviderError::Transport {
            provider: provider.into(),
            message: message.into(),
        }
    }

    pub(crate) fn protocol(provider: &'static str, message: impl Into<String>) -> Self {
        ProviderError::Protocol {
            provider: provider.into(),
            message: message.into(),
        }
    }

    pub(crate) fn timeout(provider: &'static str, message: impl Into<String>) -> Self {
        ProviderError::Timeout {
            provider: provider.into(),
            message: message.into(),
        }
    }

    /// Whether trying the turn again may succeed.
    pub fn retryable(&self) -> bool {
        match self {
            ProviderError::Status { status, .. } => {
                matches!(status, 408 | 409 | 429 | 500 | 502 | 503 | 504 | 529)
            }
            ProviderError::Transport { .. } | ProviderError::Timeout { .. } => true,
            ProviderError::Protocol { .. }
            | ProviderError::Refused { .. }
            | ProviderError::Config(_)
            | ProviderError::Exhausted { .. } => false,
        }
    }

    /// The same error naming the configured provider `name` instead of the
    /// protocol's adapter (a local model speaks `openai`, but is `ollama`).
    pub fn named(self, name: &str) -> Self {
        let n = || Name::Owned(name.to_string());
        match self {
            ProviderError::Status {
                status,
                message,
                retry_after,
                ..
            } => ProviderError::Status {
                provider: n(),
                status,
                message,
                retry_after,
            },
            ProviderError::Transport { message, .. } => ProviderError::Transport {
                provider: n(),
                message,
            },
            ProviderError::Protocol { message, .. } => ProviderError::Protocol {
                provider: n(),
                message,
            },
            ProviderError::Timeout { message, .. } => ProviderError::Timeout {
                provider: n(),
                message,
            },
            ProviderError::Refused { url, .. } => ProviderError::Refused { provider: n(), url },
            ProviderError::Config(m) => ProviderError::Config(m),
            ProviderError::Exhausted { attempts, last } => ProviderError::Exhausted {
                attempts,
                last: Box::new(last.named(name)),
            },
        }
    }

    fn retry_after(&self) -> Option<Duration> {
        match self {
            ProviderError::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}

/// How long to wait for what.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timeouts {
    pub connect: Duration,
    /// From the request sent to the response's headers.
    pub first_byte: Duration,
    /// Longest silence inside a stream: no byte at all, not even a keep-alive.
    pub idle: Duration,
    /// Longest a stream may send nothing of the answer (only keep-alives, or the
    /// bytes of an event that never ends): a stream that stalls after its start while
    /// pinging, or dribbles, is cut here instead of running to the agent's hard
    /// timeout.
    pub stall: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts::of(&air_proto::models::StreamLimits::default())
    }
}

impl Timeouts {
    /// The stream limits of `models.yaml` (`stream:`), with the fixed connect and
    /// first-byte limits.
    pub fn of(limits: &air_proto::models::StreamLimits) -> Timeouts {
        Timeouts {
            connect: Duration::from_secs(air_proto::models::StreamLimits::CONNECT_SECS),
            first_byte: Duration::from_secs(air_proto::models::StreamLimits::FIRST_BYTE_SECS),
            idle: limits.idle(),
            stall: limits.stall(),
        }
    }
}

/// The retry budget of a turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    pub max_attempts: u32,
    pub base_delay: Duration,
    pub max_delay: Duration,
    /// A `retry-after` longer than this is not waited for: the turn fails.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 6,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
            max_retry_after: Duration::from_secs(120),
        }
    }
}

impl RetryPolicy {
    /// The wait before attempt `attempt + 1` (exponential, with up to 50 % jitter,
    /// or what the provider asked for).
    pub fn delay(&self, attempt: u32, error: &ProviderError) -> Duration {
        if let Some(after) = error.retry_after() {
            return after;
        }
        let exp = self
            .base_delay
            .saturating_mul(1u32 << attempt.saturating_sub(1).min(16))
            .min(self.max_delay);
        let jitter = jitter_fraction();
        exp + exp.mul_f64(jitter * 0.5)
    }
}

/// A provider's wire protocol: how a request body is made, and one attempt at a turn.
/// [`Adapter::turn`] adds the retries.
pub trait Adapter: Sync {
    /// The request body of a turn, as the provider's API takes it.
    fn body(&self, request: &TurnRequest) -> Value;

    fn retry(&self) -> &RetryPolicy;

    /// One attempt: the request sent, the stream folded into a turn.
    fn attempt<'a>(
        &'a self,
        body: &'a Value,
        on_delta: &'a mut (dyn FnMut(Delta<'_>) + Send),
    ) -> impl std::future::Future<Output = Result<Turn, ProviderError>> + Send + 'a;

    /// Runs one turn, retrying transient failures; `on_delta` sees the stream.
    fn turn<'a>(
        &'a self,
        request: &'a TurnRequest,
        on_delta: &'a mut (dyn FnMut(Delta<'_>) + Send),
    ) -> impl std::future::Future<Output = Result<Turn, ProviderError>> + Send + 'a
    where
        Self: Sized,
    {
        async move { turn_with_retries(self, self.retry(), &self.body(request), on_delta).await }
    }
}

/// Runs a turn, trying again after transient failures within the retry budget; a
/// retry starts the turn over (the caller sees `Delta::Restart`).
async fn turn_with_retries(
    adapter: &impl Adapter,
    retry: &RetryPolicy,
    body: &Value,
    on_delta: &mut (dyn FnMut(Delta<'_>) + Send),
) -> Result<Turn, ProviderError> {
    let mut attempt = 1;
    loop {
        match adapter.attempt(body, on_delta).await {
            Ok(mut turn) => {
                turn.attempts = attempt;
                return Ok(turn);
            }
            Err(e) if e.retryable() && attempt < retry.max_attempts => {
                let wait = retry.delay(attempt, &e);
                if wait > retry.max_retry_after {
                    return Err(e);
                }
                let slow_down = matches!(
                    e,
                    ProviderError::Status {
                        status: 429 | 529,
                        ..
                    }
                );
                tokio::time::sleep(wait).await;
                attempt += 1;
                on_delta(Delta::Restart { attempt, slow_down });
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

/// Reads an error response: its status, `retry-after`, and the message in its body.
pub(crate) async fn status_error(
    provider: &'static str,
    response: reqwest::Response,
) -> ProviderError {
    let status = response.status().as_u16();
    let retry_after = response
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 0.0)
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
    ProviderError::Status {
        provider: provider.into(),
        status,
        message,
        retry_after,
    }
}

/// A request that got no answer: refused by an address on this machine or its
/// local network (a local model server that is not running, which retrying does
/// not change), else a transport failure that may pass.
fn send_error(provider: &'static str, e: &reqwest::Error) -> ProviderError {
    let refused = e.is_connect() && {
        let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
        let mut found = false;
        while let Some(s) = source {
            if s.downcast_ref::<std::io::Error>()
                .is_some_and(|io| io.kind() == std::io::ErrorKind::ConnectionRefused)
            {
                found = true;
                break;
            }
            source = s.source();
        }
        found
    };
    match e.url() {
        Some(url) if refused && local_host(url) => ProviderError::Refused {
            provider: provider.into(),
            url: format!(
                "{}://{}",
                url.scheme(),
                url.host_str()
                    .map_or_else(String::new, |h| match url.port() {
                        Some(p) => format!("{h}:{p}"),
                        None => h.to_string(),
                    })
            ),
        },
        _ => ProviderError::transport(provider, format!("request failed: {e}")),
    }
}

/// Whether `url` names this machine or an address of a private network.
fn local_host(url: &reqwest::Url) -> bool {
    let Some(host) = url.host_str() else {
        return false;
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    match host.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V4(ip)) => ip.is_loopback() || ip.is_private() || ip.is_link_local(),
        // Loopback, or a unique local address (fc00::/7).
        Ok(std::net::IpAddr::V6(ip)) => ip.is_loopback() || (ip.segments()[0] & 0xfe00) == 0xfc00,
        Err(_) => {
            let d = host.trim_end_matches('.').to_ascii_lowercase();
            d == "localhost" || d.ends_with(".localhost") || d.ends_with(".local")
        }
    }
}

type EventStream = std::pin::Pin<
    Box<
        dyn futures_util::Stream<
                Item = Result<
                    eventsource_stream::Event,
                    eventsource_stream::EventStreamError<reqwest::Error>,
                >,
            > + Send,
    >,
>;

/// The most bytes one turn's answer may stream. A model's longest answer (128k
/// tokens, each in an event of a few hundred bytes) fits many times over; a
/// provider or proxy that streams without end is stopped here, long before the
/// worker's or airsd's memory suffers.
pub const MAX_TURN_BYTES: u64 = 64 * 1024 * 1024;
/// The longest line of a stream (an event's data is one line; the largest, a whole
/// response repeated in its last event, is far smaller).
pub const MAX_LINE_BYTES: u64 = 4 * 1024 * 1024;

/// A provider's server-sent event stream, read under the timeouts and
/// [`MAX_TURN_BYTES`].
pub(crate) struct Sse {
    provider: &'static str,
    idle: Duration,
    stall: Duration,
    /// When the last event that was not a keep-alive came.
    progress: tokio::time::Instant,
    /// When bytes last came, and how many had come then.
    last_byte: tokio::time::Instant,
    seen_bytes: u64,
    events: EventStream,
    wire: Option<Vec<RawEvent>>,
    /// Bytes received so far; past the bound the stream is ended where it is.
    received: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl Sse {
    /// Sends the request; an answer other than 200 is the provider's error.
    pub(crate) async fn open(
        provider: &'static str,
        timeouts: &Timeouts,
        request: reqwest::RequestBuilder,
    ) -> Result<Sse, ProviderError> {
        use eventsource_stream::Eventsource as _;
        let response = tokio::time::timeout(timeouts.first_byte, request.send())
            .await
            .map_err(|_| {
                ProviderError::timeout(
                    provider,
                    format!("no response within {} s", timeouts.first_byte.as_secs()),
                )
            })?
            .map_err(|e| send_error(provider, &e))?;
        if response.status().as_u16() != 200 {
            return Err(status_error(provider, response).await);
        }
        use futures_util::StreamExt as _;
        let received = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let counted = received.clone();
        // Counted before the event parser, which would otherwise hold one endless
        // line whole.
        let mut line = 0u64;
        let bytes = response.bytes_stream().take_while(move |chunk| {
            let (n, last_newline) = chunk.as_ref().map_or((0, None), |b| {
                (b.len() as u64, b.iter().rposition(|&c| c == b'\n'))
            });
            line = match last_newline {
                Some(i) => n - i as u64 - 1,
                None => line + n,
            };
            let total = counted.fetch_add(n, std::sync::atomic::Ordering::Relaxed) + n;
            if line > MAX_LINE_BYTES {
                // One line without end: counted as past the bound, so it is named.
                counted.store(MAX_TURN_BYTES + 1, std::sync::atomic::Ordering::Relaxed);
                return std::future::ready(false);
            }
            std::future::ready(total <= MAX_TURN_BYTES)
        });
        Ok(Sse {
            provider,
            idle: timeouts.idle,
            stall: timeouts.stall,
            progress: tokio::time::Instant::now(),
            last_byte: tokio::time::Instant::now(),
            seen_bytes: 0,
            received,
            events: Box::pin(bytes.eventsource()),
            wire: KEEP_WIRE
                .load(std::sync::atomic::Ordering::Relaxed)
                .then(Vec::new),
        })
    }

    /// Opens an OpenAI-style stream: the body POSTed as JSON with the key (if any)
    /// as a bearer token.
    pub(crate) async fn post_bearer(
        provider: &'static str,
        client: &reqwest::Client,
        url: &str,
        key: Option<&str>,
        body: &Value,
        timeouts: &Timeouts,
    ) -> Result<Sse, ProviderError> {
        let mut post = client
            .post(url)
            .header("content-type", "application/json")
            .header("accept", "text/event-stream")
            .body(body.to_string());
        if let Some(key) = key {
            post = post.bearer_auth(key);
        }
        Sse::open(provider, timeouts, post).await
    }

    /// The events kept so far (see [`keep_wire`]).
    pub(crate) fn take_wire(&mut self) -> Vec<RawEvent> {
        self.wire.take().unwrap_or_default()
    }

    /// The next event; `None` when the stream ended.
    pub(crate) async fn next(
        &mut self,
    ) -> Result<Option<eventsource_stream::Event>, ProviderError> {
        use futures_util::StreamExt as _;
        let provider = self.provider;
        let bound = || {
            ProviderError::protocol(
                provider,
                format!(
                    "the answer streamed past {} MiB (or a line of it past {} MiB), more than any model's longest answer; the turn was stopped",
                    MAX_TURN_BYTES / (1024 * 1024),
                    MAX_LINE_BYTES / (1024 * 1024)
                ),
            )
        };
        // The nearer of the two limits: no byte at all for `idle`, or nothing of the
        // answer (only keep-alives, or bytes of an event that never ends) for `stall`
        // since its last part.
        let stall_at = self.progress + self.stall;
        let next = loop {
            let idle_at = self.last_byte + self.idle;
            let waited = tokio::time::timeout_at(idle_at.min(stall_at), self.events.next()).await;
            let received = self.received.load(std::sync::atomic::Ordering::Relaxed);
            if received > MAX_TURN_BYTES {
                return Err(bound());
            }
            if received != self.seen_bytes {
                self.seen_bytes = received;
                self.last_byte = tokio::time::Instant::now();
            }
            match waited {
                Ok(next) => break next,
                // Bytes came meanwhile: not silent; wait on while the answer may
                // still progress.
                Err(_) if tokio::time::Instant::now() < stall_at
                    && self.last_byte + self.idle > tokio::time::Instant::now() =>
                {
                    continue
                }
                Err(_) if stall_at <= tokio::time::Instant::now() => {
                    return Err(ProviderError::timeout(
                        provider,
                        format!(
                            "the stream sent nothing of the answer (only keep-alives, or an event that never ended) for {} s",
                            self.stall.as_secs_f64()
                        ),
                    ))
                }
                Err(_) => {
                    return Err(ProviderError::timeout(
                        provider,
                        format!("the stream was silent for {} s", self.idle.as_secs_f64()),
                    ))
                }
            }
        };
        match next {
            None => Ok(None),
            Some(Ok(event)) => {
                if !keep_alive(&event) {
                    self.progress = tokio::time::Instant::now();
                }
                if let Some(w) = &mut self.wire {
                    w.push(RawEvent {
                        event: event.event.clone(),
                        data: event.data.clone(),
                    });
                }
                Ok(Some(event))
            }
            Some(Err(eventsource_stream::EventStreamError::Transport(e))) => Err(
                ProviderError::transport(provider, format!("the stream broke: {e}")),
            ),
            Some(Err(other)) => Err(ProviderError::protocol(provider, other.to_string())),
        }
    }
}

/// Whether an event only keeps the connection open (Anthropic's `ping`, or an event
/// with no data), saying nothing of the answer.
fn keep_alive(event: &eventsource_stream::Event) -> bool {
    let data = event.data.trim();
    event.event == "ping"
        || data.is_empty()
        // A ping is a few bytes; an event of the answer is not parsed twice.
        || (data.len() < 64
            && serde_json::from_str::<Value>(data)
                .is_ok_and(|v| v.get("type").and_then(Value::as_str) == Some("ping")))
}

/// A number in [0, 1) from the clock and the process id: enough to keep retrying
/// workers from moving in lockstep, with no random-number dependency.
fn jitter_fraction() -> f64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    let mut x = u64::from(nanos) ^ (u64::from(std::process::id()) << 32) ^ 0x9E37_79B9_7F4A_7C15;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    (x % 1_000_000) as f64 / 1_000_000.0
}
