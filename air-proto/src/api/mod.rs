//! The JSON-RPC API of airsd, declared once: the types of every method's result here,
//! and in [`methods`] the one table of the methods with their params structs, from
//! which the method list, the params checks, the server trait with its dispatch (with
//! the `rpc` feature), the Rust client and the OpenRPC document ([`openrpc`]) come.
//!
//! Transport: JSON-RPC 2.0 on the project's Unix socket, as plain HTTP POST (for `curl
//! --unix-socket`) and as WebSocket (needed for subscriptions). Params may be given by
//! position or by name.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::event::RuntimeEvent;
use crate::projection::{Projection, SessionStatus};
use crate::time::IsoTime;

mod methods;
mod openrpc;

#[cfg(feature = "rpc")]
pub use methods::{invalid_params, AirApi, AirApiClient};
pub use methods::{params, Params, METHODS};
pub use openrpc::openrpc;
/// The filter and page of `events.list`.
pub type EventsQuery = params::EventsList;
pub use params::SessionCreate;

/// A debugging record of the project, as kept and as `debug.search` finds it.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DebugRecord {
    pub id: String,
    pub created_at: String,
    pub session_id: String,
    pub task_id: String,
    pub agent_id: String,
    /// What failed (the checks, or the summary of the attempt).
    pub symptom: String,
    /// The error signatures of the failed attempt (the compilers' and linkers'
    /// findings as airsd parsed them), one per line.
    pub signature: String,
    pub analysis: String,
    pub root_cause: Option<String>,
    /// What the fix changed.
    pub fix: String,
    pub fixed: bool,
    /// The evidence airsd recorded of the debugger's commands (`build_pass`,
    /// `test_pass` …): a fix that shows a build or tests passing is verified.
    pub evidence: Vec<String>,
    /// How well it matched a search (higher is better; 0 when kept).
    pub score: f64,
}

impl DebugRecord {
    /// Whether airsd recorded a build or tests passing among the debugger's
    /// commands: the fix is verified by evidence, not by the debugger's word.
    pub fn verified(&self) -> bool {
        self.evidence
            .iter()
            .any(|e| e == "build_pass" || e == "test_pass")
    }
}

/// An entry of the learned memory as `memory.show` gives it.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MemoryView {
    pub entry: crate::memory::MemoryEntry,
    /// For a skill draft or patch: the file promoting it writes.
    pub path: Option<String>,
    /// For a patch: the unified diff from the file as it is to the corrected text.
    pub diff: Option<String>,
    /// Why promoting it cannot be done as things stand (the file it corrects is gone,
    /// a skill of that name exists …).
    pub problem: Option<String>,
}

/// What a Curator pass found and did. It archives memories (they stay, and the user
/// may promote them again) and never deletes or moves a file: the skills it names are
/// for the user to merge or remove.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CuratorReport {
    pub at: String,
    /// Skills whose names and descriptions overlap, with the share of words they
    /// have in common: candidates for one merged skill.
    #[serde(default)]
    pub overlapping_skills: Vec<SkillOverlap>,
    /// Promoted memories archived as stale: every file they concern is gone.
    #[serde(default)]
    pub stale: Vec<String>,
    /// Promoted memories archived as unused: in no context for `unused_days`.
    #[serde(default)]
    pub unused: Vec<String>,
    /// Skills not loaded for `unused_days` (counted since air first saw them).
    #[serde(default)]
    pub unused_skills: Vec<String>,
    pub unused_days: u32,
}

/// Two skills that say much the same.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SkillOverlap {
    pub a: String,
    pub b: String,
    /// Words in common over words in either (0–1).
    pub overlap: f64,
}

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

/// What airsd asks of an editor that serves a session's files (`editor.serve`): the
/// text of a file as the editor has it (unsaved changes included), or a file's new
/// text put into the editor (which saves it). The client answers with
/// `editor.answer`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EditorRequest {
    pub request_id: String,
    pub kind: EditorRequestKind,
    /// The file, absolute.
    pub path: String,
    /// A write's new text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// When airsd stops waiting for the answer (Unix time, ms): a request not yet
    /// carried out by then is dropped, not done late.
    pub deadline_ms: u64,
}

wire_enum! {
    pub enum EditorRequestKind {
        Read = "read",
        Write = "write",
    }
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
    /// Whether each task works in its own git worktree (false: they share the
    /// checkout), as recorded when the run started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worktrees: Option<bool>,
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
    /// The daemon's own provider settings (`NAME=value`, a secret as `NAME set`): what
    /// a run it picks up by itself after a restart uses; a run a client starts uses
    /// the client's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub provider_settings: Vec<String>,
    /// How the project's previous daemon ended, when it did not stop as it should (a
    /// crash, a kill, a power loss): found at this daemon's start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_abnormal_exit: Option<String>,
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
    /// Its run, when one started: how it ended, how long it took, what it cost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<SessionRun>,
    /// The first message, when `conversation.start` was given one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<MessageSent>,
}

impl SessionInfo {
    /// How the session went, in a word or two for lists: its run's outcome
    /// (`running`, `completed`, …, `unfinished`), `chat` for a conversation, `empty`
    /// with no run; `(archived)` after it when it is.
    pub fn outcome(&self) -> String {
        let mut word = match &self.run {
            // A conversation: its run ends with each exchange.
            Some(r) if r.conversation => match r.outcome.as_str() {
                "completed" | "unfinished" | "interrupted" => "chat".to_string(),
                other => format!("chat, {other}"),
            },
            Some(r) => r.outcome.clone(),
            None => "empty".to_string(),
        };
        if self.status != SessionStatus::Active {
            word = format!("{word} ({})", self.status.as_str());
        }
        word
    }
}

/// A session's run in brief, for lists.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SessionRun {
    /// `running`; how it ended (`completed`, `failed`, `blocked`, `interrupted`);
    /// or `unfinished` (a daemon stopped during it: it resumes when one starts).
    pub outcome: String,
    /// A conversation (its run has no plan).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub conversation: bool,
    pub started_at: IsoTime,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<IsoTime>,
    /// Its tasks (not the Main Agent's turns).
    pub tasks: u32,
    /// What its model turns cost, in millionths of a US dollar.
    pub cost_micro_usd: u64,
}

/// The shortest start of `id`, 8 characters at least, that no other of `sessions`
/// has: how lists show a session so that what they show can name it.
pub fn short_id<'a>(id: &'a str, sessions: &[SessionInfo]) -> &'a str {
    let mut n = 8.min(id.len());
    while n < id.len()
        && sessions
            .iter()
            .any(|s| s.id != id && s.id.starts_with(&id[..n]))
    {
        n += 1;
    }
    // Ids are ASCII; anything else is shown whole.
    id.get(..n).unwrap_or(id)
}

/// The session `wanted` names among `sessions`: its whole id, or as git takes a
/// commit, a prefix no other session's id starts with (`01a23aea`, as lists show it).
/// The error says what was wrong in words for a person.
pub fn find_session<'a>(
    sessions: &'a [SessionInfo],
    wanted: &str,
) -> Result<&'a SessionInfo, String> {
    let wanted = wanted.trim();
    if wanted.is_empty() {
        return Err("no session named: give its id, or the start of it".into());
    }
    if let Some(exact) = sessions.iter().find(|s| s.id == wanted) {
        return Ok(exact);
    }
    let lower = wanted.to_ascii_lowercase();
    let matching: Vec<&SessionInfo> = sessions
        .iter()
        .filter(|s| s.id.to_ascii_lowercase().starts_with(&lower))
        .collect();
    match matching.as_slice() {
        [one] => Ok(one),
        [] => Err(format!(
            "no session `{wanted}` in this project (`air sessions` lists them)"
        )),
        many => {
            let named: Vec<String> = many
                .iter()
                .take(5)
                .map(|s| match &s.title {
                    Some(t) => format!("{} ({t})", s.id),
                    None => s.id.clone(),
                })
                .collect();
            Err(format!(
                "`{wanted}` starts the ids of {} sessions: {}{}; give more of the id",
                many.len(),
                named.join(", "),
                if many.len() > 5 { ", …" } else { "" }
            ))
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Snapshot {
    pub session_id: String,
    pub seq: u64,
    pub projection: Projection,
}

/// One notification of a `session.subscribe` subscription.
// Each is decoded, handled and dropped one at a time: the size of its largest variant
// is never multiplied by a collection of them.
#[allow(clippy::large_enum_variant)]
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

/// One message of the conversation (`conversation.list`): canonical content.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ConversationMessage {
    pub seq: u64,
    pub message_id: String,
    pub role: crate::projection::MessageRole,
    /// Who sent a user message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
    /// The task whose agent wrote it, or that a user message was addressed to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// Anthropic content: a string or an array of content blocks.
    pub content: Value,
    pub created_at: crate::time::IsoTime,
}

/// A page of the conversation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ConversationPage {
    pub messages: Vec<ConversationMessage>,
    /// Pass as `after_seq` for the next page; absent on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_after_seq: Option<u64>,
}

/// The answer to `message.send`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MessageSent {
    pub message_id: String,
    /// Sequence number of its `user.message.created` event.
    pub seq: u64,
    /// Why no turn of the Main Agent answers it (the session has no conversation or
    /// run); absent when one does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unanswered: Option<String>,
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

/// The largest JSON-RPC message either side sends or takes (a larger HTTP body gets
/// status 413; a larger WebSocket frame closes the connection).
pub const MAX_MESSAGE_BYTES: u32 = 16 * 1024 * 1024;

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

#[cfg(test)]
mod tests {
    use super::*;

    fn session(id: &str, title: Option<&str>) -> SessionInfo {
        SessionInfo {
            id: id.into(),
            title: title.map(str::to_string),
            plan_ref: None,
            status: SessionStatus::Active,
            created_at: String::new(),
            updated_at: String::new(),
            seq: 0,
            run: None,
            message: None,
        }
    }

    #[test]
    fn lists_show_the_shortest_start_only_one_session_has() {
        let list = [
            session("01a244dc-ab0c-76f3", None),
            session("01a244dc-b9f1-7000", None),
            session("01b00000-0000-7000", None),
        ];
        assert_eq!(short_id(&list[0].id, &list), "01a244dc-a");
        assert_eq!(short_id(&list[1].id, &list), "01a244dc-b");
        assert_eq!(short_id(&list[2].id, &list), "01b00000");
        for s in &list {
            assert_eq!(
                find_session(&list, short_id(&s.id, &list)).unwrap().id,
                s.id
            );
        }
    }

    #[test]
    fn a_session_is_named_by_its_id_or_a_prefix_only_it_has() {
        let list = [
            session(
                "01a23aea-0000-7000-8000-000000000001",
                Some("fix the parser"),
            ),
            session("01a23aeb-0000-7000-8000-000000000002", None),
            session("01b00000-0000-7000-8000-000000000003", None),
        ];
        let id = |w: &str| find_session(&list, w).map(|s| s.id.as_str());
        assert_eq!(id("01a23aea"), Ok(list[0].id.as_str()));
        assert_eq!(id("01A23AEB"), Ok(list[1].id.as_str()));
        assert_eq!(id("01b"), Ok(list[2].id.as_str()));
        assert_eq!(id(&list[1].id), Ok(list[1].id.as_str()));
        let many = id("01a23ae").unwrap_err();
        assert!(
            many.contains("2 sessions") && many.contains("(fix the parser)"),
            "{many}"
        );
        let none = id("ffff").unwrap_err();
        assert!(none.contains("no session `ffff`"), "{none}");
        assert!(id(" ").is_err());
    }
}
