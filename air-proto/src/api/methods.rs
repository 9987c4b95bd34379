//! The one table of the API's methods. Each line names a method (its Rust name, its
//! wire name, its params struct, its result, the result's name and a summary); from the
//! table come the method list ([`METHODS`]), the params check airsd runs before a
//! method ([`params::validate`]), the server trait and its dispatch
//! ([`AirApi::into_rpc`]), the Rust client ([`AirApiClient`]) and the OpenRPC document
//! ([`super::openrpc()`]). Adding a method is one line here, its params struct in
//! [`params`] and its handler in airsd.

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use super::*;

/// A method's params: a struct whose fields are the params by name, in the order a
/// positional call gives them.
pub trait Params: Serialize + DeserializeOwned + schemars::JsonSchema + Send + 'static {
    const NAMES: &'static [&'static str];
}

/// Declares params structs and their positional order.
macro_rules! params {
    ($(
        $(#[$meta:meta])*
        pub struct $name:ident { $( $(#[$fmeta:meta])* pub $field:ident : $fty:ty ),* $(,)? }
    )*) => {$(
        $(#[$meta])*
        #[serde_with::skip_serializing_none]
        #[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
        #[serde(deny_unknown_fields)]
        pub struct $name { $( $(#[$fmeta])* pub $field: $fty ),* }

        impl Params for $name {
            const NAMES: &'static [&'static str] = &[$(stringify!($field)),*];
        }
    )*};
}

/// The params of every method as structs: what a by-name call may contain, in the order
/// a positional call gives them. A call is checked against its struct before it runs, so
/// that a bad param is refused with its name and JSON path.
pub mod params {
    use super::{Params, Value};
    use crate::api::ClientHello;

    params! {
        pub struct Hello {
            pub hello: ClientHello,
        }

        pub struct NoParams {}

        #[derive(Default)]
        pub struct SessionCreate {
            pub title: Option<String>,
            pub plan_ref: Option<String>,
        }

        pub struct Session {
            pub session_id: String,
        }

        pub struct Subscribe {
            pub session_id: String,
            pub from_seq: Option<u64>,
        }

        pub struct MessageSend {
            pub session_id: String,
            pub text: String,
            /// A running task the message is for (`@T2 …`): delivered to its agent
            /// before its next model turn instead of starting a turn of the Main Agent.
            pub to: Option<String>,
            /// The client's provider settings, as for `run.start`: the session's run,
            /// when this message starts or continues it, uses them.
            pub env: Option<crate::env::ClientEnv>,
        }

        pub struct UiStateGet {
            pub session_id: String,
            /// The client's key, e.g. `attach`.
            pub key: String,
        }

        pub struct UiStatePut {
            pub session_id: String,
            pub key: String,
            /// Any JSON, up to 64 KiB.
            pub value: Value,
        }

        /// Filter and page of `events.list`.
        #[derive(Default)]
        pub struct EventsList {
            pub session_id: String,
            /// Event types (exact) or families (`task.*`).
            pub types: Option<Vec<String>>,
            pub task_id: Option<String>,
            pub agent_id: Option<String>,
            /// Events at or after this time.
            pub since: Option<String>,
            /// Events before this time.
            pub until: Option<String>,
            /// Events with a seq above this (the cursor of the previous page).
            pub after_seq: Option<u64>,
            /// At most this many (default 100, at most 1,000).
            pub limit: Option<u32>,
        }

        #[derive(Default)]
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
            /// Whether the ExperienceMiner learns from the run (before `learn:` in
            /// `~/.air/config.yaml`; off when neither says).
            pub learn: Option<bool>,
            /// Whether each task works in its own worktree (before `worktrees:` in the
            /// plan; on in a git project when neither says).
            pub worktrees: Option<bool>,
            /// When the merged work lands in the checkout (before `land:` in the
            /// plan; `clean` when neither says).
            pub land: Option<crate::plan::Land>,
            /// The client's provider settings (`ANTHROPIC_*`, `OPENAI_*` …, `AIR_MODEL`):
            /// the run's agents use these instead of the daemon's. Held in memory for
            /// the run, never logged or stored.
            pub env: Option<crate::env::ClientEnv>,
        }

        /// A page of `conversation.list`.
        #[derive(Default)]
        pub struct ConversationList {
            pub session_id: String,
            /// Messages with a seq above this (the cursor of the previous page).
            pub after_seq: Option<u64>,
            /// Instead, the latest messages with a seq below this (for reading back).
            pub before_seq: Option<u64>,
            /// At most this many (default 100, at most 500).
            pub limit: Option<u32>,
        }

        #[derive(Default)]
        pub struct ConversationStart {
            pub title: Option<String>,
            pub concurrency: Option<u32>,
            pub on_ask: Option<crate::plan::OnAsk>,
            pub permission_mode: Option<crate::plan::PermissionMode>,
            pub max_cost: Option<f64>,
            pub max_tokens: Option<u64>,
            pub max_time_ms: Option<u64>,
            /// The model every agent uses, as for `run.start`.
            pub model: Option<String>,
            /// An absolute directory to record every provider exchange into.
            pub record: Option<String>,
            /// An absolute directory holding a recording to replay.
            pub replay: Option<String>,
            /// Whether the ExperienceMiner learns from the conversation, as for
            /// `run.start`.
            pub learn: Option<bool>,
            /// The client's provider settings, as for `run.start`.
            pub env: Option<crate::env::ClientEnv>,
            /// The first message: recorded with the session and answered at once, as
            /// `message.send` would (the result's `message` has its id and seq).
            pub message: Option<String>,
            /// This connection steers the new session, as `hello` with its id and mode
            /// `steering` would: the run's questions wait for its answers.
            pub steer: Option<bool>,
        }

        #[derive(Default)]
        pub struct RunContinue {
            pub session_id: String,
            /// New budgets for the rest of the run.
            pub max_cost: Option<f64>,
            pub max_tokens: Option<u64>,
            pub max_time_ms: Option<u64>,
            /// Only these ended tasks (and those waiting on them) run again; the run may
            /// still be going.
            pub task_ids: Option<Vec<String>>,
            /// The client's provider settings, as for `run.start`: a run the scheduler
            /// picks up again uses them (a run still going keeps its own).
            pub env: Option<crate::env::ClientEnv>,
        }

        pub struct PermissionRespond {
            pub session_id: String,
            pub request_id: String,
            pub decision: crate::payload::PermissionDecision,
            pub reason: Option<String>,
        }

        pub struct PlanningAnswer {
            pub session_id: String,
            /// The planning turn answered (the planning view's `waiting_on`); the one
            /// waiting when omitted.
            pub task_id: Option<String>,
            /// Answers by question id.
            pub answers: Option<std::collections::BTreeMap<String, String>>,
            /// Words of the user's own, for the designer.
            pub note: Option<String>,
            /// Propose now (for stated requirements: they are agreed to).
            pub go_ahead: Option<bool>,
        }

        pub struct PlanningDecide {
            pub session_id: String,
            /// The planning turn that proposed; the one waiting when omitted.
            pub task_id: Option<String>,
            pub decision: crate::planning::PlanDecision,
            /// What to change, or why not.
            pub note: Option<String>,
            /// On confirmation, run the plan now (the default); `false` only writes it.
            pub run: Option<bool>,
        }

        pub struct RequirementChange {
            pub session_id: String,
            /// What is now wanted instead, in the user's words.
            pub change: String,
        }

        pub struct SessionRetire {
            pub session_id: String,
            pub reason: Option<String>,
        }

        pub struct DebugSearch {
            /// Free text: a symptom, an error message, a signature.
            pub query: String,
            /// Most records to return (default 10, at most 100).
            pub limit: Option<u32>,
        }

        pub struct MemoryList {
            /// Only entries in this state (`candidate`, `promoted`, `archived`).
            pub status: Option<crate::memory::MemoryStatus>,
            /// Only entries of this kind (`user`, `project`, `feedback`, `reference`,
            /// `skill`, `patch`).
            pub kind: Option<crate::memory::MemoryKind>,
            /// Most entries to return, newest first (default 100, at most 10,000).
            pub limit: Option<u32>,
        }

        pub struct MemoryId {
            /// The entry's id (`mem-…`).
            pub id: String,
        }

        pub struct ArtifactList {
            pub session_id: String,
            pub task_id: Option<String>,
            pub command_run_id: Option<String>,
        }

        pub struct ArtifactRead {
            pub session_id: String,
            pub artifact_id: String,
            /// Byte offset in the uncompressed content (default 0).
            pub offset: Option<u64>,
            /// Most bytes to return (default and maximum 1 MiB).
            pub limit: Option<u64>,
        }

        pub struct RunCancel {
            pub session_id: String,
            pub task_id: Option<String>,
            pub reason: Option<String>,
        }

        /// `run.land`: a session's integration branch into the checkout.
        pub struct RunLand {
            pub session_id: String,
            /// Also when the checkout's branch moved on (a merge commit); default:
            /// only by a fast-forward.
            pub always: Option<bool>,
        }

        /// `run.undo`: one task's merged change taken back out.
        pub struct RunUndo {
            pub session_id: String,
            pub task_id: String,
        }

        /// `workspace.prune`: the kept worktrees pruned.
        pub struct WorkspacePrune {
            /// Every kept worktree not in use, whatever its age (default: those past
            /// the age limit, then the oldest over the budget).
            pub all: Option<bool>,
            /// Only say what would go.
            pub dry_run: Option<bool>,
        }

        /// `run.set_mode`: the run's permission mode from now on.
        pub struct RunSetMode {
            pub session_id: String,
            pub permission_mode: crate::plan::PermissionMode,
        }

        /// `editor.serve`: this client's editor serves the session's file reads and
        /// writes in its project's checkout.
        pub struct EditorServe {
            pub session_id: String,
            /// Agents read files as the editor has them, unsaved changes included.
            pub read: Option<bool>,
            /// The agents' writes are put into the editor too (it saves them).
            pub write: Option<bool>,
        }

        /// `editor.answer`: the answer to one `editor.request`.
        pub struct EditorAnswer {
            pub session_id: String,
            pub request_id: String,
            /// A read's text.
            pub content: Option<String>,
            /// Why it could not be done.
            pub error: Option<String>,
        }

        /// `run.pause`, `run.resume`: the run's dispatching, or with `task_id` the
        /// task's running agent.
        pub struct RunPause {
            pub session_id: String,
            pub task_id: Option<String>,
        }
    }

    /// Reads the params of a call to `method` (raw JSON, absent for none): an object by
    /// name, or an array by position; an error names the param and its JSON path.
    pub fn decode<P: Params>(method: &str, raw: Option<&str>) -> Result<P, String> {
        let value: Value = match raw {
            None => Value::Object(Default::default()),
            Some(text) => {
                serde_json::from_str(text).map_err(|e| format!("params are not JSON: {e}"))?
            }
        };
        let object = match value {
            Value::Object(map) => map,
            Value::Null => Default::default(),
            Value::Array(items) => {
                if items.len() > P::NAMES.len() {
                    return Err(format!(
                        "`{method}` takes at most {} params ({}), got {}",
                        P::NAMES.len(),
                        P::NAMES.join(", "),
                        items.len()
                    ));
                }
                P::NAMES
                    .iter()
                    .map(|n| n.to_string())
                    .zip(items)
                    .filter(|(_, v)| !v.is_null())
                    .collect()
            }
            other => return Err(format!("params must be an object or an array, not {other}")),
        };
        serde_path_to_error::deserialize::<_, P>(Value::Object(object)).map_err(|e| {
            let message = e.inner().to_string();
            format!(
                "{}: {message}",
                crate::codec::full_path(&e.path().to_string(), &message)
            )
        })
    }

    /// Checks the params of a call to `method`. `None` for a method the API does not
    /// know (the server answers "method not found").
    pub fn validate(method: &str, raw: Option<&str>) -> Option<Result<(), String>> {
        let (_, check) = super::CHECKS.iter().find(|(m, _)| *m == method)?;
        Some(check(method, raw))
    }

    /// Every method that has a check (a test holds it to [`super::METHODS`]).
    pub fn methods() -> impl Iterator<Item = &'static str> {
        super::CHECKS.iter().map(|(m, _)| *m)
    }
}

type Check = fn(&str, Option<&str>) -> Result<(), String>;

fn check<P: Params>(method: &str, raw: Option<&str>) -> Result<(), String> {
    params::decode::<P>(method, raw).map(drop)
}

/// One method of the OpenRPC document: its params by name (with their schemas and
/// whether each is required) and its result.
fn describe<P: Params, R: schemars::JsonSchema>(
    generator: &mut schemars::generate::SchemaGenerator,
    kept: &mut Vec<String>,
    (name, summary, result): (&str, &str, &str),
) -> Value {
    generator.subschema_for::<P>();
    let type_name = <P as schemars::JsonSchema>::schema_name().to_string();
    let def = generator
        .definitions()
        .get(&type_name)
        .cloned()
        .unwrap_or(Value::Null);
    kept.push(type_name);
    let required: Vec<&str> = def["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let params: Vec<Value> = P::NAMES
        .iter()
        .map(|n| serde_json::json!({ "name": n, "required": required.contains(n), "schema": def["properties"][*n] }))
        .collect();
    let result =
        serde_json::json!({ "name": result, "schema": generator.subschema_for::<R>().to_value() });
    serde_json::json!({ "name": name, "summary": summary, "paramStructure": "either", "params": params, "result": result })
}

macro_rules! api {
    (
        methods { $( $fun:ident $wire:literal ($params:ty) -> $result:ty as $rname:literal : $summary:literal; )* }
        subscriptions { $( $sfun:ident $swire:literal => $notif:literal, $unsub:literal ($sparams:ty) -> $item:ty as $sname:literal : $ssummary:literal; )* }
    ) => {
        /// Every method, with a one-line description (for `docs/protocol.md` and the schema).
        pub const METHODS: &[(&str, &str)] = &[ $( ($wire, $summary), )* $( ($swire, $ssummary), )* ];

        /// Each method's params check.
        const CHECKS: &[(&str, Check)] = &[
            $( ($wire, check::<$params>), )*
            $( ($swire, check::<$sparams>), ($unsub, |_, _| Ok(())), )*
        ];

        /// The methods of the OpenRPC document, and the subscriptions' notifications
        /// (method, unsubscribe method, schema of an item).
        pub(super) fn described(
            g: &mut schemars::generate::SchemaGenerator,
            kept: &mut Vec<String>,
        ) -> Vec<Value> {
            let mut out = vec![ $( describe::<$params, $result>(g, kept, ($wire, $summary, $rname)), )* ];
            $(
                let mut m = describe::<$sparams, String>(g, kept, ($swire, $ssummary, $sname));
                let item = g.subschema_for::<$item>().to_value();
                m["x-notification"] = serde_json::json!({
                    "method": $notif,
                    "unsubscribe": $unsub,
                    "params": { "subscription": "string", "result": item },
                });
                out.push(m);
            )*
            out
        }

        #[cfg(feature = "rpc")]
        pub use rpc::*;

        #[cfg(feature = "rpc")]
        mod rpc {
            use std::future::Future;

            use jsonrpsee::core::client::{ClientT, Subscription, SubscriptionClientT};
            use jsonrpsee::core::{RegisterMethodError, RpcResult, SubscriptionResult};
            use jsonrpsee::types::ErrorObjectOwned;
            use jsonrpsee::{Extensions, PendingSubscriptionSink, RpcModule};

            use super::*;

            /// The params of a call by name, as the client sends them.
            struct ByName<P>(P);

            impl<P: Serialize> jsonrpsee::core::traits::ToRpcParams for ByName<P> {
                fn to_rpc_params(self) -> Result<Option<Box<serde_json::value::RawValue>>, serde_json::Error> {
                    serde_json::value::to_raw_value(&self.0).map(Some)
                }
            }

            /// The refusal of a call whose params do not fit its struct.
            pub fn invalid_params(method: &str, message: &str) -> ErrorObjectOwned {
                ErrorObjectOwned::owned(
                    crate::api::codes::INVALID_PARAMS,
                    format!("invalid params of `{method}`: {message}"),
                    Some(serde_json::json!({ "kind": crate::error::ErrorKind::InvalidInput })),
                )
            }

            fn decode<P: Params>(method: &str, raw: &jsonrpsee::types::Params<'_>) -> Result<P, ErrorObjectOwned> {
                params::decode::<P>(method, raw.as_str()).map_err(|m| invalid_params(method, &m))
            }

            /// The API as airsd serves it: one handler a method, each given the
            /// request's extensions (who is calling) and its params struct.
            pub trait AirApi: Send + Sync + Sized + 'static {
                $( fn $fun(&self, ext: &Extensions, params: $params) -> impl Future<Output = RpcResult<$result>> + Send; )*
                $( fn $sfun(&self, ext: &Extensions, pending: PendingSubscriptionSink, params: $sparams) -> impl Future<Output = SubscriptionResult> + Send; )*

                /// The dispatch table: every method registered with its params check.
                fn into_rpc(self) -> Result<RpcModule<Self>, RegisterMethodError> {
                    let mut module = RpcModule::new(self);
                    $(
                        module.register_async_method($wire, |raw, ctx, ext| async move {
                            let params = decode::<$params>($wire, &raw)?;
                            ctx.$fun(&ext, params).await
                        })?;
                    )*
                    $(
                        module.register_subscription($swire, $notif, $unsub, |raw, pending, ctx, ext| async move {
                            match decode::<$sparams>($swire, &raw) {
                                Ok(params) => ctx.$sfun(&ext, pending, params).await,
                                Err(e) => {
                                    pending.reject(e).await;
                                    Ok(())
                                }
                            }
                        })?;
                    )*
                    Ok(module)
                }
            }

            /// The Rust client of the API, for any jsonrpsee client (params go by name).
            pub trait AirApiClient: ClientT + SubscriptionClientT + Sync {
                $(
                    #[doc = $summary]
                    fn $fun(&self, params: $params) -> impl Future<Output = Result<$result, jsonrpsee::core::ClientError>> + Send {
                        async move { self.request($wire, ByName(params)).await }
                    }
                )*
                $(
                    #[doc = $ssummary]
                    fn $sfun(&self, params: $sparams) -> impl Future<Output = Result<Subscription<$item>, jsonrpsee::core::ClientError>> + Send {
                        async move { self.subscribe($swire, ByName(params), $unsub).await }
                    }
                )*
            }

            impl<T: ClientT + SubscriptionClientT + Sync> AirApiClient for T {}
        }
    };
}

api! {
    methods {
        hello "daemon.hello" (params::Hello) -> Hello as "hello":
            "Handshake: names the client, checks protocol versions";
        status "daemon.status" (params::NoParams) -> DaemonStatus as "status":
            "pid, version, uptime, socket, sessions, clients, workers, memory";
        shutdown "daemon.shutdown" (params::NoParams) -> bool as "stopping":
            "Graceful stop: in-flight writes commit, clients are told, socket removed";
        session_create "session.create" (params::SessionCreate) -> SessionInfo as "session":
            "Create a session; returns it";
        session_list "session.list" (params::NoParams) -> Vec<SessionInfo> as "sessions":
            "Every session of the project, newest first";
        session_get "session.get" (params::Session) -> SessionInfo as "session":
            "One session";
        session_archive "session.archive" (params::SessionRetire) -> u64 as "seq":
            "Mark a session archived; its artifacts are kept";
        session_delete "session.delete" (params::SessionRetire) -> u64 as "seq":
            "Mark a session deleted and purge its artifacts";
        session_snapshot "session.snapshot" (params::Session) -> Snapshot as "snapshot":
            "The session's projection and the seq it reflects";
        message_send "message.send" (params::MessageSend) -> MessageSent as "sent":
            "Say something in a session's conversation (user.message.created): a turn of the Main Agent answers it, in the session's run (started or continued for it)";
        conversation_list "conversation.list" (params::ConversationList) -> ConversationPage as "page":
            "The conversation, oldest first: the user's messages (with the client that sent each) and what the Main Agent's turns and the direct lane wrote, paged by seq";
        conversation_start "conversation.start" (params::ConversationStart) -> SessionInfo as "session":
            "Start a conversation in a new session with these run settings; the first message.send starts the agents";
        events_list "events.list" (params::EventsList) -> EventsPage as "page":
            "Stored events, filtered and paginated";
        ui_state_get "ui_state.get" (params::UiStateGet) -> Option<Value> as "value":
            "A client's UI recovery state stored under a key (D-053); null when none";
        ui_state_put "ui_state.put" (params::UiStatePut) -> bool as "stored":
            "Store a client's UI recovery state under a key (selection, panes, filters)";
        clients_list "clients.list" (params::NoParams) -> Vec<ClientInfo> as "clients":
            "Who is attached, to which session, since when";
        run_start "run.start" (params::RunStart) -> RunInfo as "run":
            "Compile a plan and run it in a new session; plan errors come back all at once";
        run_continue "run.continue" (params::RunContinue) -> RunInfo as "run":
            "Continue a session's run: resume it if it ended unfinished, or just report it";
        run_cancel "run.cancel" (params::RunCancel) -> bool as "accepted":
            "Cancel one task, or the whole run when no task is given";
        run_land "run.land" (params::RunLand) -> crate::payload::Landing as "landing":
            "Bring a session's integration branch (its tasks' merged work) into the checkout's branch, only over files the person did not change; says what landed or why not";
        run_undo "run.undo" (params::RunUndo) -> crate::payload::UndoResult as "undo":
            "Take one task's merged change back out of its session's integration branch (a new commit; later tasks' changes stay), and out of the checkout where the branch had landed; says what changed or why nothing did";
        workspace_prune "workspace.prune" (params::WorkspacePrune) -> crate::payload::PruneResult as "pruned":
            "Prune the kept worktrees of tasks that failed or were blocked (never a running session's): their uncommitted work committed on their branches first, which stay; says what went and why";
        run_set_mode "run.set_mode" (params::RunSetMode) -> bool as "accepted":
            "Change a session's permission mode for the rest of its run (recorded as run.mode_changed); a conversation between its turns takes it for the next";
        run_pause "run.pause" (params::RunPause) -> bool as "accepted":
            "Stop dispatching new agents; running ones go on";
        run_resume "run.resume" (params::RunPause) -> bool as "accepted":
            "Dispatch again after a pause";
        permission_respond "permission.respond" (params::PermissionRespond) -> u64 as "seq":
            "Answer a pending permission request; the first answer wins";
        planning_answer "planning.answer" (params::PlanningAnswer) -> u64 as "seq":
            "Answer what the Architecture Designer asked (answers by question id) or stated (go_ahead agrees), or say something to it (note)";
        planning_decide "planning.decide" (params::PlanningDecide) -> u64 as "seq":
            "Answer a proposed plan: confirm (airsd writes it and, unless run is false, runs it), change (with a note) or reject";
        requirement_change "requirement.change" (params::RequirementChange) -> u64 as "seq":
            "Record that a requirement changed (requirement.changed) in a session's run: an open planning session hears it; otherwise dispatch freezes while the Architecture Designer re-plans the unfinished work, and the user confirms the new graph";
        debug_search "debug.search" (params::DebugSearch) -> Vec<DebugRecord> as "records":
            "The project's debugging records that best match the text (full text over symptom, error signature, root cause and fix), best first";
        memory_list "memory.list" (params::MemoryList) -> Vec<crate::memory::MemoryEntry> as "entries":
            "The project's learned memory: entries, candidates and skill drafts or patches the ExperienceMiner proposed, newest first, filtered";
        memory_show "memory.show" (params::MemoryId) -> MemoryView as "memory":
            "One entry of the learned memory; for a skill draft or patch, the file it would write and the diff against what is there";
        memory_promote "memory.promote" (params::MemoryId) -> MemoryView as "memory":
            "Promote an entry: a memory reaches agents' contexts when it concerns their task; a skill draft is written under .air/shared/skills/, a patch replaces the file it corrects";
        memory_forget "memory.forget" (params::MemoryId) -> crate::memory::MemoryEntry as "memory":
            "Remove an entry from the learned memory (the user's word: nothing else deletes one)";
        memory_curate "memory.curate" (params::NoParams) -> CuratorReport as "report":
            "Run the Curator's pass now (airsd runs it weekly): skills that overlap, memories whose files are gone, entries and skills unused for long";
        artifact_list "artifact.list" (params::ArtifactList) -> Vec<ArtifactInfo> as "artifacts":
            "A session's artifacts (command logs, reports …), newest first, filtered";
        artifact_read "artifact.read" (params::ArtifactRead) -> ArtifactChunk as "chunk":
            "A byte range of an artifact, gunzipped when stored compressed";
        editor_answer "editor.answer" (params::EditorAnswer) -> bool as "accepted":
            "Answer an editor.request of this connection's editor.serve: a read's text, or why it could not be done";
    }
    subscriptions {
        session_subscribe "session.subscribe" => "session.update", "session.unsubscribe"
            (params::Subscribe) -> SessionUpdate as "subscription_id":
            "Deltas after a seq (notifications: session.update)";
        editor_serve "editor.serve" => "editor.request", "editor.unserve"
            (params::EditorServe) -> EditorRequest as "subscription_id":
            "Serve a session's file reads and writes from this client's editor (its unsaved buffers) while the subscription lasts: airsd asks in editor.request notifications, the client answers with editor.answer";
    }
}
