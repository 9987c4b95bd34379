//! The JSON-RPC API of airsd, declared once: the types of every method's params and
//! result, and (with the `rpc` feature) the jsonrpsee trait from which the server and the
//! Rust client are generated.
//!
//! Transport: JSON-RPC 2.0 on the project's Unix socket, as plain HTTP POST (for `curl
//! --unix-socket`) and as WebSocket (needed for subscriptions). Params may be given by
//! position or by name.

use serde::{Deserialize, Serialize};

use crate::event::RuntimeEvent;
use crate::projection::{Projection, SessionStatus};
use crate::time::IsoTime;

/// Every method, with a one-line description (for `docs/protocol.md` and the schema).
pub const METHODS: &[(&str, &str)] = &[
    (
        "daemon.hello",
        "Handshake: names the client, checks protocol versions",
    ),
    (
        "daemon.status",
        "pid, version, uptime, socket, sessions, clients, workers, memory",
    ),
    (
        "daemon.shutdown",
        "Graceful stop: in-flight writes commit, clients are told, socket removed",
    ),
    ("session.create", "Create a session; returns it"),
    ("session.list", "Every session of the project, newest first"),
    ("session.get", "One session"),
    (
        "session.archive",
        "Mark a session archived; its artifacts are kept",
    ),
    (
        "session.delete",
        "Mark a session deleted and purge its artifacts",
    ),
    (
        "session.snapshot",
        "The session's projection and the seq it reflects",
    ),
    (
        "session.subscribe",
        "Deltas after a seq (notifications: session.update)",
    ),
    (
        "message.send",
        "Post a user message to a session (durable: user.message.created)",
    ),
    ("events.list", "Stored events, filtered and paginated"),
    (
        "ui_state.get",
        "A client's UI recovery state stored under a key (D-053); null when none",
    ),
    (
        "ui_state.put",
        "Store a client's UI recovery state under a key (selection, panes, filters)",
    ),
    (
        "clients.list",
        "Who is attached, to which session, since when",
    ),
    (
        "run.start",
        "Compile a plan and run it in a new session; plan errors come back all at once",
    ),
    (
        "run.continue",
        "Continue a session's run: resume it if it ended unfinished, or just report it",
    ),
    (
        "run.cancel",
        "Cancel one task, or the whole run when no task is given",
    ),
    (
        "run.pause",
        "Stop dispatching new agents; running ones go on",
    ),
    ("run.resume", "Dispatch again after a pause"),
    (
        "permission.respond",
        "Answer a pending permission request; the first answer wins",
    ),
    (
        "artifact.list",
        "A session's artifacts (command logs, reports …), newest first, filtered",
    ),
    (
        "artifact.read",
        "A byte range of an artifact, gunzipped when stored compressed",
    ),
];

/// One stored artifact.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ArtifactInfo {
    pub id: String,
    #[serde(rename = "type")]
    pub artifact_type: String,
    pub uri: String,
    /// Relative to the session's `artifacts/` directory.
    pub path: Option<String>,
    pub original_name: Option<String>,
    /// Stored size (compressed when the path ends in `.gz`).
    pub size_bytes: Option<u64>,
    pub sha256: Option<String>,
    pub task_id: Option<String>,
    pub agent_id: Option<String>,
    pub tool_run_id: Option<String>,
    pub command_run_id: Option<String>,
    pub created_at: String,
}

/// A piece of an artifact's content.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ArtifactChunk {
    pub artifact_id: String,
    /// Byte offset of `data` in the (uncompressed) content.
    pub offset: u64,
    /// Bytes in this chunk.
    pub bytes: u64,
    /// `utf8` (text) or `base64` (binary content).
    pub encoding: String,
    pub data: String,
    /// True when the content ends within this chunk.
    pub eof: bool,
}

/// A run started or continued.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunInfo {
    pub session_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    pub plan: String,
    pub tasks: u32,
    pub waves: Vec<Vec<String>>,
    /// Warnings the plan compiler found (errors refuse the plan).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<crate::plan::PlanDiagnostic>,
    /// Tasks reopened by `run.continue` (empty for a new run or one still going).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reopened: Vec<String>,
}

/// What a client says about itself at connect.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ClientHello {
    /// Program name, e.g. `air`, `air-tui`, `vscode-air`.
    pub client: String,
    pub version: String,
    pub protocol_version: u32,
    /// The session the client is about to watch, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    #[serde(default)]
    pub mode: ClientMode,
}

#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ClientMode {
    /// Reads only.
    #[default]
    Watching,
    /// May answer prompts, cancel, send messages.
    Steering,
}

/// The daemon's answer to `daemon.hello`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Hello {
    pub daemon_version: String,
    pub protocol_version: u32,
    pub pid: u32,
    pub project_id: String,
    pub project_root: String,
    /// The id the daemon gave this connection (see `clients.list`).
    pub client_id: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DaemonStatus {
    pub pid: u32,
    pub version: String,
    pub protocol_version: u32,
    pub started_at: IsoTime,
    pub uptime_ms: u64,
    pub socket: String,
    pub project_root: String,
    pub project_id: String,
    /// Sessions stored in the project.
    pub sessions: usize,
    /// Sessions open in the daemon (with a live writer and projection).
    pub open_sessions: usize,
    pub clients: usize,
    pub running_workers: usize,
    /// Resident memory of the daemon, when the platform reports it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rss_bytes: Option<u64>,
    /// Seconds without clients and work after which the daemon exits (0: never).
    pub idle_timeout_secs: u64,
    /// Plan runs in progress.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runs: Vec<RunBrief>,
}

/// A plan run in progress, at a glance.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RunBrief {
    pub session_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    pub plan: String,
    pub tasks: u32,
    /// Tasks that ended (completed, failed, blocked or cancelled).
    pub ended: u32,
    pub running_agents: u32,
    pub paused: bool,
    /// Its scheduler stopped without ending it (the session could not be written):
    /// why, and how to go on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub halted: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SessionCreate {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_ref: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SessionInfo {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_ref: Option<String>,
    pub status: SessionStatus,
    pub created_at: IsoTime,
    pub updated_at: IsoTime,
    /// Sequence number of its last durable event.
    pub seq: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Snapshot {
    pub session_id: String,
    pub seq: u64,
    pub projection: Projection,
}

/// One notification of a `session.subscribe` subscription.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum SessionUpdate {
    /// An event. `seq` is its sequence number if durable, else the seq it follows.
    Delta {
        seq: u64,
        durable: bool,
        event: RuntimeEvent,
    },
    /// Several consecutive deltas in one notification, in order (sent when many are
    /// ready at once: while catching up, or under load). Each item has the fields of a
    /// `delta` (and may carry its `"type":"delta"` too).
    Deltas { deltas: Vec<DeltaItem> },
    /// Start over from this snapshot: the client fell behind, or asked for a seq the
    /// daemon cannot continue from. Deltas that follow apply to it.
    Resync {
        reason: String,
        snapshot: Box<Snapshot>,
    },
    /// Durable events after the requested seq were replayed from the database up to
    /// `seq`; live events follow. Ephemeral events of the gap are not replayed.
    CaughtUp { seq: u64 },
}

/// One item of a `deltas` notification.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DeltaItem {
    pub seq: u64,
    pub durable: bool,
    pub event: RuntimeEvent,
}

impl SessionUpdate {
    /// The deltas this update carries, in order (none for `resync` and `caught_up`).
    pub fn into_deltas(self) -> Vec<DeltaItem> {
        match self {
            SessionUpdate::Delta {
                seq,
                durable,
                event,
            } => vec![DeltaItem {
                seq,
                durable,
                event,
            }],
            SessionUpdate::Deltas { deltas } => deltas,
            _ => Vec::new(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ClientInfo {
    pub client_id: String,
    pub client: String,
    pub version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pid: Option<u32>,
    pub connected_at: IsoTime,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    pub mode: ClientMode,
}

/// The answer to `message.send`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MessageSent {
    pub message_id: String,
    /// Sequence number of its `user.message.created` event.
    pub seq: u64,
}

/// Filter and page of `events.list`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EventsQuery {
    pub session_id: String,
    /// Event types (exact) or families (`task.*`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub types: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// Events at or after this time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<IsoTime>,
    /// Events before this time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<IsoTime>,
    /// Events with a seq above this (the cursor of the previous page).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_seq: Option<u64>,
    /// At most this many (default 100, at most 1,000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StoredEvent {
    pub seq: u64,
    pub event: RuntimeEvent,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EventsPage {
    pub events: Vec<StoredEvent>,
    /// Pass as `after_seq` for the next page; absent on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_after_seq: Option<u64>,
}

/// Stable JSON-RPC error codes of the API (the standard ones are used where they fit).
pub mod codes {
    /// Bad params: the message names the field.
    pub const INVALID_PARAMS: i32 = -32602;
    pub const NOT_FOUND: i32 = -32004;
    pub const CONFLICT: i32 = -32009;
    pub const PERMISSION_DENIED: i32 = -32003;
    pub const UNAVAILABLE: i32 = -32010;
    pub const SCHEMA_MISMATCH: i32 = -32011;
    pub const SHUTTING_DOWN: i32 = -32012;
    pub const INTERNAL: i32 = -32603;
}

#[cfg(feature = "rpc")]
pub use rpc::*;

#[cfg(feature = "rpc")]
#[allow(clippy::too_many_arguments)] // events.list takes its filters as named params
mod rpc {
    use jsonrpsee::core::{RpcResult, SubscriptionResult};
    use jsonrpsee::proc_macros::rpc;

    use super::*;

    /// The API. `AirApiServer` is implemented by airsd; `AirApiClient` is the Rust client.
    #[rpc(server, client)]
    pub trait AirApi {
        #[method(name = "daemon.hello", with_extensions, param_kind = map)]
        async fn hello(&self, hello: ClientHello) -> RpcResult<Hello>;

        #[method(name = "daemon.status")]
        async fn status(&self) -> RpcResult<DaemonStatus>;

        #[method(name = "daemon.shutdown")]
        async fn shutdown(&self) -> RpcResult<bool>;

        #[method(name = "session.create", param_kind = map)]
        async fn session_create(
            &self,
            title: Option<String>,
            plan_ref: Option<String>,
        ) -> RpcResult<SessionInfo>;

        #[method(name = "session.list")]
        async fn session_list(&self) -> RpcResult<Vec<SessionInfo>>;

        #[method(name = "session.get", param_kind = map)]
        async fn session_get(&self, session_id: String) -> RpcResult<SessionInfo>;

        #[method(name = "session.archive", param_kind = map)]
        async fn session_archive(
            &self,
            session_id: String,
            reason: Option<String>,
        ) -> RpcResult<u64>;

        #[method(name = "session.delete", param_kind = map)]
        async fn session_delete(
            &self,
            session_id: String,
            reason: Option<String>,
        ) -> RpcResult<u64>;

        #[method(name = "session.snapshot", param_kind = map)]
        async fn session_snapshot(&self, session_id: String) -> RpcResult<Snapshot>;

        #[subscription(name = "session.subscribe" => "session.update", unsubscribe = "session.unsubscribe", item = SessionUpdate, param_kind = map)]
        async fn session_subscribe(
            &self,
            session_id: String,
            from_seq: Option<u64>,
        ) -> SubscriptionResult;

        #[method(name = "message.send", param_kind = map)]
        async fn message_send(&self, session_id: String, text: String) -> RpcResult<MessageSent>;

        #[method(name = "ui_state.get", param_kind = map)]
        async fn ui_state_get(
            &self,
            session_id: String,
            key: String,
        ) -> RpcResult<Option<serde_json::Value>>;

        #[method(name = "ui_state.put", param_kind = map)]
        async fn ui_state_put(
            &self,
            session_id: String,
            key: String,
            value: serde_json::Value,
        ) -> RpcResult<bool>;

        #[method(name = "events.list", param_kind = map)]
        async fn events_list(
            &self,
            session_id: String,
            types: Option<Vec<String>>,
            task_id: Option<String>,
            agent_id: Option<String>,
            since: Option<String>,
            until: Option<String>,
            after_seq: Option<u64>,
            limit: Option<u32>,
        ) -> RpcResult<EventsPage>;

        #[method(name = "clients.list")]
        async fn clients_list(&self) -> RpcResult<Vec<ClientInfo>>;

        #[method(name = "run.start", with_extensions, param_kind = map)]
        async fn run_start(
            &self,
            plan: String,
            plan_text: String,
            title: Option<String>,
            concurrency: Option<u32>,
            on_ask: Option<crate::plan::OnAsk>,
            permission_mode: Option<crate::plan::PermissionMode>,
            max_cost: Option<f64>,
            max_tokens: Option<u64>,
            max_time_ms: Option<u64>,
            model: Option<String>,
            record: Option<String>,
            replay: Option<String>,
        ) -> RpcResult<RunInfo>;

        #[method(name = "run.continue", with_extensions, param_kind = map)]
        async fn run_continue(
            &self,
            session_id: String,
            max_cost: Option<f64>,
            max_tokens: Option<u64>,
            max_time_ms: Option<u64>,
            task_ids: Option<Vec<String>>,
        ) -> RpcResult<RunInfo>;

        #[method(name = "run.cancel", with_extensions, param_kind = map)]
        async fn run_cancel(
            &self,
            session_id: String,
            task_id: Option<String>,
            reason: Option<String>,
        ) -> RpcResult<bool>;

        #[method(name = "run.pause", with_extensions, param_kind = map)]
        async fn run_pause(&self, session_id: String, task_id: Option<String>) -> RpcResult<bool>;

        #[method(name = "run.resume", with_extensions, param_kind = map)]
        async fn run_resume(&self, session_id: String, task_id: Option<String>) -> RpcResult<bool>;

        #[method(name = "permission.respond", with_extensions, param_kind = map)]
        async fn permission_respond(
            &self,
            session_id: String,
            request_id: String,
            decision: crate::payload::PermissionDecision,
            reason: Option<String>,
        ) -> RpcResult<u64>;

        #[method(name = "artifact.list", param_kind = map)]
        async fn artifact_list(
            &self,
            session_id: String,
            task_id: Option<String>,
            command_run_id: Option<String>,
        ) -> RpcResult<Vec<ArtifactInfo>>;

        #[method(name = "artifact.read", param_kind = map)]
        async fn artifact_read(
            &self,
            session_id: String,
            artifact_id: String,
            offset: Option<u64>,
            limit: Option<u64>,
        ) -> RpcResult<ArtifactChunk>;
    }
}

/// The params of every method as structs: what a by-name call may contain, in the order
/// a positional call gives them. airsd checks each request against these before it runs,
/// so that a bad param is refused with its name and JSON path.
pub mod params {
    use serde::de::DeserializeOwned;
    use serde::Deserialize;
    use serde_json::Value;

    use super::ClientHello;

    #[derive(Deserialize, schemars::JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub struct Hello {
        pub hello: ClientHello,
    }

    #[derive(Deserialize, schemars::JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub struct NoParams {}

    #[derive(Deserialize, schemars::JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub struct SessionCreate {
        pub title: Option<String>,
        pub plan_ref: Option<String>,
    }

    #[derive(Deserialize, schemars::JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub struct Session {
        pub session_id: String,
    }

    #[derive(Deserialize, schemars::JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub struct Subscribe {
        pub session_id: String,
        pub from_seq: Option<u64>,
    }

    #[derive(Deserialize, schemars::JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub struct MessageSend {
        pub session_id: String,
        pub text: String,
    }

    #[derive(Deserialize, schemars::JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub struct UiStateGet {
        pub session_id: String,
        /// The client's key, e.g. `attach`.
        pub key: String,
    }

    #[derive(Deserialize, schemars::JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub struct UiStatePut {
        pub session_id: String,
        pub key: String,
        /// Any JSON, up to 64 KiB.
        pub value: serde_json::Value,
    }

    #[derive(Deserialize, schemars::JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub struct EventsList {
        pub session_id: String,
        pub types: Option<Vec<String>>,
        pub task_id: Option<String>,
        pub agent_id: Option<String>,
        pub since: Option<String>,
        pub until: Option<String>,
        pub after_seq: Option<u64>,
        pub limit: Option<u32>,
    }

    #[derive(Deserialize, schemars::JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub struct RunStart {
        /// The plan file's name, as the user gave it (for messages and references).
        pub plan: String,
        /// The plan's Markdown.
        pub plan_text: String,
        pub title: Option<String>,
        pub concurrency: Option<u32>,
        pub on_ask: Option<crate::plan::OnAsk>,
        pub permission_mode: Option<crate::plan::PermissionMode>,
        pub max_cost: Option<f64>,
        pub max_tokens: Option<u64>,
        pub max_time_ms: Option<u64>,
        /// The model every agent uses: `provider/model`, `model` or `provider/` (the
        /// provider's default model). Before `AIR_MODEL` and the plan's task models.
        pub model: Option<String>,
        /// An absolute directory to record every provider exchange of the run into.
        pub record: Option<String>,
        /// An absolute directory holding a recording to replay instead of a live
        /// provider.
        pub replay: Option<String>,
    }

    #[derive(Deserialize, schemars::JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub struct RunContinue {
        pub session_id: String,
        /// New budgets for the rest of the run.
        pub max_cost: Option<f64>,
        pub max_tokens: Option<u64>,
        pub max_time_ms: Option<u64>,
        /// Only these ended tasks (and those waiting on them) run again; the run may
        /// still be going.
        pub task_ids: Option<Vec<String>>,
    }

    #[derive(Deserialize, schemars::JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub struct PermissionRespond {
        pub session_id: String,
        pub request_id: String,
        pub decision: crate::payload::PermissionDecision,
        pub reason: Option<String>,
    }

    #[derive(Deserialize, schemars::JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub struct SessionRetire {
        pub session_id: String,
        pub reason: Option<String>,
    }

    #[derive(Deserialize, schemars::JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub struct ArtifactList {
        pub session_id: String,
        pub task_id: Option<String>,
        pub command_run_id: Option<String>,
    }

    #[derive(Deserialize, schemars::JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub struct ArtifactRead {
        pub session_id: String,
        pub artifact_id: String,
        /// Byte offset in the uncompressed content (default 0).
        pub offset: Option<u64>,
        /// Most bytes to return (default and maximum 1 MiB).
        pub limit: Option<u64>,
    }

    #[derive(Deserialize, schemars::JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub struct RunCancel {
        pub session_id: String,
        pub task_id: Option<String>,
        pub reason: Option<String>,
    }

    /// `run.pause`, `run.resume`: the run's dispatching, or with `task_id` the task's
    /// running agent.
    #[derive(Deserialize, schemars::JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub struct RunPause {
        pub session_id: String,
        pub task_id: Option<String>,
    }

    type Check = fn(Value) -> Result<(), String>;

    fn check<T: DeserializeOwned>(value: Value) -> Result<(), String> {
        serde_path_to_error::deserialize::<_, T>(value)
            .map(drop)
            .map_err(|e| {
                let message = e.inner().to_string();
                format!(
                    "{}: {message}",
                    crate::codec::full_path(&e.path().to_string(), &message)
                )
            })
    }

    /// Each method: its param names in positional order, and its check.
    const TABLE: &[(&str, &[&str], Check)] = &[
        ("daemon.hello", &["hello"], check::<Hello>),
        ("daemon.status", &[], check::<NoParams>),
        ("daemon.shutdown", &[], check::<NoParams>),
        (
            "session.create",
            &["title", "plan_ref"],
            check::<SessionCreate>,
        ),
        ("session.list", &[], check::<NoParams>),
        ("session.get", &["session_id"], check::<Session>),
        (
            "session.archive",
            &["session_id", "reason"],
            check::<SessionRetire>,
        ),
        (
            "session.delete",
            &["session_id", "reason"],
            check::<SessionRetire>,
        ),
        ("session.snapshot", &["session_id"], check::<Session>),
        (
            "session.subscribe",
            &["session_id", "from_seq"],
            check::<Subscribe>,
        ),
        ("session.unsubscribe", &[], |_| Ok(())),
        (
            "message.send",
            &["session_id", "text"],
            check::<MessageSend>,
        ),
        ("ui_state.get", &["session_id", "key"], check::<UiStateGet>),
        (
            "ui_state.put",
            &["session_id", "key", "value"],
            check::<UiStatePut>,
        ),
        (
            "events.list",
            &[
                "session_id",
                "types",
                "task_id",
                "agent_id",
                "since",
                "until",
                "after_seq",
                "limit",
            ],
            check::<EventsList>,
        ),
        ("clients.list", &[], check::<NoParams>),
        (
            "run.start",
            &[
                "plan",
                "plan_text",
                "title",
                "concurrency",
                "on_ask",
                "permission_mode",
                "max_cost",
                "max_tokens",
                "max_time_ms",
                "model",
                "record",
                "replay",
            ],
            check::<RunStart>,
        ),
        (
            "run.continue",
            &[
                "session_id",
                "max_cost",
                "max_tokens",
                "max_time_ms",
                "task_ids",
            ],
            check::<RunContinue>,
        ),
        (
            "run.cancel",
            &["session_id", "task_id", "reason"],
            check::<RunCancel>,
        ),
        ("run.pause", &["session_id", "task_id"], check::<RunPause>),
        ("run.resume", &["session_id", "task_id"], check::<RunPause>),
        (
            "permission.respond",
            &["session_id", "request_id", "decision", "reason"],
            check::<PermissionRespond>,
        ),
        (
            "artifact.list",
            &["session_id", "task_id", "command_run_id"],
            check::<ArtifactList>,
        ),
        (
            "artifact.read",
            &["session_id", "artifact_id", "offset", "limit"],
            check::<ArtifactRead>,
        ),
    ];

    /// The names of a method's params, in positional order.
    pub fn names(method: &str) -> Option<&'static [&'static str]> {
        TABLE
            .iter()
            .find(|(m, _, _)| *m == method)
            .map(|(_, names, _)| *names)
    }

    /// Checks the params (raw JSON, absent for none) of a call to `method`. `None` for a
    /// method this table does not know (the server answers "method not found").
    pub fn validate(method: &str, raw: Option<&str>) -> Option<Result<(), String>> {
        let (_, names, check) = TABLE.iter().find(|(m, _, _)| *m == method)?;
        if *method == *"session.unsubscribe" {
            return Some(Ok(()));
        }
        let value: Value = match raw {
            None => Value::Object(Default::default()),
            Some(text) => match serde_json::from_str(text) {
                Ok(v) => v,
                Err(e) => return Some(Err(format!("params are not JSON: {e}"))),
            },
        };
        let object = match value {
            Value::Object(map) => map,
            Value::Null => Default::default(),
            Value::Array(items) => {
                if items.len() > names.len() {
                    return Some(Err(format!(
                        "`{method}` takes at most {} params ({}), got {}",
                        names.len(),
                        names.join(", "),
                        items.len()
                    )));
                }
                names
                    .iter()
                    .map(|n| n.to_string())
                    .zip(items)
                    .filter(|(_, v)| !v.is_null())
                    .collect()
            }
            other => {
                return Some(Err(format!(
                    "params must be an object or an array, not {other}"
                )))
            }
        };
        Some(check(Value::Object(object)))
    }

    /// Every method in the table (a test checks it against [`super::METHODS`]).
    pub fn methods() -> impl Iterator<Item = &'static str> {
        TABLE.iter().map(|(m, _, _)| *m)
    }
}

/// The API as an OpenRPC document, generated from the Rust types (committed as
/// `docs/api.openrpc.json`; a test fails when it is stale). `session.subscribe`'s
/// notifications are described under `x-notification`.
pub fn openrpc() -> serde_json::Value {
    use schemars::generate::{SchemaGenerator, SchemaSettings};
    use schemars::JsonSchema;
    use serde_json::{json, Value};

    let mut generator = SchemaSettings::draft2020_12()
        .with(|s| s.definitions_path = "#/components/schemas/".into())
        .into_generator();
    let mut param_types = Vec::new();

    fn params<P: JsonSchema>(
        generator: &mut SchemaGenerator,
        kept: &mut Vec<String>,
        method: &str,
    ) -> Value {
        generator.subschema_for::<P>();
        let name = P::schema_name().to_string();
        let def = generator
            .definitions()
            .get(&name)
            .cloned()
            .unwrap_or(Value::Null);
        kept.push(name);
        let required: Vec<&str> = def["required"]
            .as_array()
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let names = params::names(method).unwrap_or(&[]);
        Value::Array(
            names
                .iter()
                .map(|n| json!({ "name": n, "required": required.contains(n), "schema": def["properties"][*n] }))
                .collect(),
        )
    }
    fn result<R: JsonSchema>(generator: &mut SchemaGenerator, name: &str) -> Value {
        json!({ "name": name, "schema": generator.subschema_for::<R>().to_value() })
    }

    let mut methods = Vec::new();
    let summary = |m: &str| METHODS.iter().find(|(n, _)| *n == m).map_or("", |(_, s)| s);
    macro_rules! method {
        ($name:literal, $params:ty, $result:ty, $result_name:literal) => {{
            let p = params::<$params>(&mut generator, &mut param_types, $name);
            let r = result::<$result>(&mut generator, $result_name);
            methods.push(json!({ "name": $name, "summary": summary($name), "paramStructure": "either", "params": p, "result": r }));
        }};
    }
    method!("daemon.hello", params::Hello, Hello, "hello");
    method!("daemon.status", params::NoParams, DaemonStatus, "status");
    method!("daemon.shutdown", params::NoParams, bool, "stopping");
    method!(
        "session.create",
        params::SessionCreate,
        SessionInfo,
        "session"
    );
    method!(
        "session.list",
        params::NoParams,
        Vec<SessionInfo>,
        "sessions"
    );
    method!("session.get", params::Session, SessionInfo, "session");
    method!("session.archive", params::SessionRetire, u64, "seq");
    method!("session.delete", params::SessionRetire, u64, "seq");
    method!("session.snapshot", params::Session, Snapshot, "snapshot");
    method!(
        "session.subscribe",
        params::Subscribe,
        String,
        "subscription_id"
    );
    method!("message.send", params::MessageSend, MessageSent, "sent");
    method!("events.list", params::EventsList, EventsPage, "page");
    method!(
        "ui_state.get",
        params::UiStateGet,
        Option<serde_json::Value>,
        "value"
    );
    method!("ui_state.put", params::UiStatePut, bool, "stored");
    method!("clients.list", params::NoParams, Vec<ClientInfo>, "clients");
    method!("run.start", params::RunStart, RunInfo, "run");
    method!("run.continue", params::RunContinue, RunInfo, "run");
    method!("run.cancel", params::RunCancel, bool, "accepted");
    method!("run.pause", params::RunPause, bool, "accepted");
    method!("run.resume", params::RunPause, bool, "accepted");
    method!("permission.respond", params::PermissionRespond, u64, "seq");
    method!(
        "artifact.list",
        params::ArtifactList,
        Vec<ArtifactInfo>,
        "artifacts"
    );
    method!(
        "artifact.read",
        params::ArtifactRead,
        ArtifactChunk,
        "chunk"
    );
    let update = generator.subschema_for::<SessionUpdate>().to_value();
    if let Some(subscribe) = methods
        .iter_mut()
        .find(|m| m["name"] == "session.subscribe")
    {
        subscribe["x-notification"] = json!({ "method": "session.update", "unsubscribe": "session.unsubscribe", "params": { "subscription": "string", "result": update } });
    }
    let mut schemas = generator.take_definitions(true);
    for name in param_types {
        schemas.remove(&name);
    }
    json!({
        "openrpc": "1.3.2",
        "info": { "title": "airsd", "version": crate::PROTOCOL_VERSION.to_string(), "description": "The JSON-RPC API of the air daemon (see docs/protocol.md)" },
        "methods": methods,
        "components": { "schemas": schemas }
    })
}
