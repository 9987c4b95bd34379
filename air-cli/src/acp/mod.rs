//! `air acp`: air as an Agent Client Protocol agent, for editors (Zed, JetBrains,
//! Neovim, Emacs) that start it over stdio. It is a relay that owns no state: one ACP
//! session is one air conversation session in the project's airsd (started when
//! needed), so `air attach` shows what the editor drives, and the editor can load any
//! past session. docs/editors.md has the editors' settings.
//!
//! Each session has its own connection to airsd, which steers it (the run's questions
//! wait for the editor's answers) and follows its events from the first, turned into
//! `session/update`s by [`updates::Translator`]. A prompt is a `message.send`; it
//! ends when the session's run is idle again (the work it started included) or waits
//! for the person's answer. A permission request of the run is put to the editor as
//! `session/request_permission`; the first answer from any client wins.

mod updates;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use agent_client_protocol::v1::schema::{
    AgentCapabilities, AuthMethod, AuthMethodAgent, AuthenticateRequest, AuthenticateResponse,
    CancelNotification, Content, ContentBlock, CreateTerminalRequest, EmbeddedResourceResource,
    Implementation, InitializeRequest, InitializeResponse, ListSessionsRequest,
    ListSessionsResponse, LoadSessionRequest, LoadSessionResponse, NewSessionRequest,
    NewSessionResponse, PermissionOption, PermissionOptionKind, PromptCapabilities, PromptRequest,
    PromptResponse, ReadTextFileRequest, ReleaseTerminalRequest, RequestPermissionOutcome,
    RequestPermissionRequest, SessionCapabilities, SessionInfo, SessionListCapabilities,
    SessionMode, SessionModeState, SessionNotification, SetSessionModeRequest,
    SetSessionModeResponse, StopReason, Terminal, TextContent, ToolCallContent, ToolCallUpdate,
    ToolCallUpdateFields, WaitForTerminalExitRequest, WriteTextFileRequest,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Agent, Client, Error, Stdio};
use air_proto::api::{params, AirApiClient, SessionUpdate as AirUpdate};
use air_proto::client::Connection;
use air_proto::payload as p;
use air_proto::plan::PermissionMode;
use tokio::sync::watch;

use crate::{CmdResult, Failure};

use updates::{Out, Translator};

mod terminal;

/// The client name airsd is told, before the editor's own.
const CLIENT: &str = "acp";

/// The one way to authenticate: a provider's key where air reads it.
const AUTH_METHOD: &str = "provider-key";

/// What airsd's answer to a prompt waits on: the seq at which the session last went
/// idle, or why it cannot be followed any more.
#[derive(Clone, Debug)]
enum Idle {
    At(u64),
    /// The run's scheduler stopped at this seq, and why.
    Halted(u64, String),
    Lost(String),
}

/// One ACP session: an air session, its own connection, its follower's state.
struct Live {
    id: String,
    root: PathBuf,
    conn: Connection,
    translator: Mutex<Translator>,
    idle: watch::Sender<Idle>,
    cancelled: AtomicBool,
    /// One prompt at a time.
    prompting: tokio::sync::Mutex<()>,
    /// Set when the session is followed anew (loaded again): this one stops.
    stop: watch::Sender<bool>,
    /// The editor's terminals showing the agents' commands, when it offers them.
    terminals: Option<terminal::Terminals>,
}

/// The relay's state: what the editor said of itself, and its sessions.
#[derive(Default)]
struct Relay {
    client: Mutex<Option<String>>,
    /// Whether the editor reads and writes files for its agent (its buffers).
    fs: Mutex<(bool, bool)>,
    /// Whether the editor runs terminals for its agent (`terminal/*`).
    terminal: AtomicBool,
    sessions: Mutex<HashMap<String, Arc<Live>>>,
}

type Cx = ConnectionTo<Client>;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// An ACP error with air's words.
fn refused(message: impl Into<String>) -> Error {
    Error::new(-32603, message.into())
}

fn invalid(message: impl Into<String>) -> Error {
    Error::invalid_params().data(serde_json::Value::String(message.into()))
}

fn failure(f: Failure) -> Error {
    refused(f.message)
}

impl Relay {
    fn client_name(&self) -> String {
        match lock(&self.client).as_deref() {
            Some(name) => format!("{CLIENT}:{name}"),
            None => CLIENT.to_string(),
        }
    }

    fn session(&self, id: &str) -> Result<Arc<Live>, Error> {
        lock(&self.sessions).get(id).cloned().ok_or_else(|| {
            invalid(format!(
                "no session `{id}` on this connection (session/new or session/load it first)"
            ))
        })
    }

    async fn initialize(&self, req: InitializeRequest) -> Result<InitializeResponse, Error> {
        if let Some(info) = &req.client_info {
            *lock(&self.client) = Some(info.name.clone());
        }
        let fs = &req.client_capabilities.fs;
        *lock(&self.fs) = (fs.read_text_file, fs.write_text_file);
        self.terminal
            .store(req.client_capabilities.terminal, Ordering::SeqCst);
        let caps = AgentCapabilities::new()
            .load_session(true)
            .prompt_capabilities(PromptCapabilities::new().embedded_context(true))
            .session_capabilities(SessionCapabilities::new().list(SessionListCapabilities::new()));
        Ok(InitializeResponse::new(req.protocol_version)
            .agent_capabilities(caps)
            .agent_info(Implementation::new("air", env!("CARGO_PKG_VERSION")).title("air"))
            .auth_methods(vec![AuthMethod::Agent(
                AuthMethodAgent::new(AUTH_METHOD, "A model provider's key")
                    .description(crate::doctor::KEY_HELP.to_string()),
            )]))
    }

    /// Whether the Main Agent has a model to use; the error says how to give it one.
    async fn authenticated(&self) -> Result<(), Error> {
        let resolved = tokio::task::spawn_blocking(|| {
            crate::doctor::resolve_roles(&[air_proto::event::AgentType::Main])
        })
        .await
        .map_err(|e| refused(e.to_string()))?
        .map_err(refused)?;
        match resolved.first().map(|r| (&r.resolved, &r.error)) {
            Some((Some(_), _)) => Ok(()),
            Some((None, e)) => Err(Error::auth_required().data(serde_json::Value::String(
                match e {
                    Some(why) => format!("no model for the Main Agent: {why}"),
                    None => format!("no model for the Main Agent: {}", crate::doctor::KEY_HELP),
                },
            ))),
            None => Err(refused("the worker resolved no model")),
        }
    }

    /// Connects to the project of `cwd` and follows `session` there, from its first
    /// event; returns once the stored events were shown.
    async fn follow(
        self: &Arc<Self>,
        cx: &Cx,
        root: PathBuf,
        session: String,
    ) -> Result<Arc<Live>, Error> {
        let conn = connect(&root).await.map_err(failure)?;
        crate::output::steer(&conn, &session, &self.client_name())
            .await
            .map_err(failure)?;
        let (idle, _) = watch::channel(Idle::At(0));
        let live = Arc::new(Live {
            id: session.clone(),
            translator: Mutex::new(Translator::new(&root, &self.client_name())),
            root,
            conn,
            idle,
            cancelled: AtomicBool::new(false),
            prompting: tokio::sync::Mutex::new(()),
            stop: watch::channel(false).0,
            terminals: self
                .terminal
                .load(Ordering::SeqCst)
                .then(terminal::Terminals::new),
        });
        let (caught_up, shown) = tokio::sync::oneshot::channel();
        let follower = {
            let (live, cx) = (live.clone(), cx.clone());
            async move {
                let why = follow_session(&live, &cx, caught_up).await;
                live.idle.send_replace(Idle::Lost(why));
                Ok(())
            }
        };
        cx.spawn(follower)?;
        shown
            .await
            .map_err(|_| refused("the daemon closed the session's stream"))?;
        // Loaded again: the earlier follower of the session stops, so that nothing
        // is shown or asked twice.
        if let Some(old) = lock(&self.sessions).get(&session) {
            old.stop.send_replace(true);
        }
        let (read, write) = *lock(&self.fs);
        if read || write {
            let files = live
                .conn
                .client
                .editor_serve(params::EditorServe {
                    session_id: session.clone(),
                    read: Some(read),
                    write: Some(write),
                })
                .await
                .map_err(|e| failure(crate::rpc_failure(e)))?;
            let (live, cx) = (live.clone(), cx.clone());
            cx.clone().spawn(async move {
                serve_files(&live, &cx, files).await;
                Ok(())
            })?;
        }
        lock(&self.sessions).insert(session, live.clone());
        Ok(live)
    }

    async fn new_session(
        self: &Arc<Self>,
        cx: &Cx,
        req: NewSessionRequest,
    ) -> Result<NewSessionResponse, Error> {
        let root = project_of(&req.cwd)?;
        self.authenticated().await?;
        let conn = connect(&root).await.map_err(failure)?;
        let info = conn
            .client
            .conversation_start(params::ConversationStart {
                env: Some(air_proto::env::ClientEnv::current()),
                ..params::ConversationStart::default()
            })
            .await
            .map_err(|e| failure(crate::rpc_failure(e)))?;
        let live = self.follow(cx, root, info.id.clone()).await?;
        let mode = mode_of(&live.conn, &live.id).await?;
        Ok(NewSessionResponse::new(info.id).modes(modes(mode)))
    }

    async fn load_session(
        self: &Arc<Self>,
        cx: &Cx,
        req: LoadSessionRequest,
    ) -> Result<LoadSessionResponse, Error> {
        let root = project_of(&req.cwd)?;
        let conn = connect(&root).await.map_err(failure)?;
        let id = crate::session_of(&conn, Some(req.session_id.to_string()))
            .await
            .map_err(failure)?;
        let live = self.follow(cx, root, id).await?;
        let mode = mode_of(&live.conn, &live.id).await?;
        Ok(LoadSessionResponse::new().modes(modes(mode)))
    }

    async fn list(&self, req: ListSessionsRequest) -> Result<ListSessionsResponse, Error> {
        let cwd = match req.cwd {
            Some(c) => c,
            None => std::env::current_dir().map_err(|e| refused(e.to_string()))?,
        };
        let root = project_of(&cwd)?;
        let conn = connect(&root).await.map_err(failure)?;
        let sessions = conn
            .client
            .session_list(params::NoParams {})
            .await
            .map_err(|e| failure(crate::rpc_failure(e)))?;
        Ok(ListSessionsResponse::new(
            sessions
                .into_iter()
                .filter(|s| s.status != air_proto::projection::SessionStatus::Deleted)
                .map(|s| {
                    SessionInfo::new(s.id, root.clone())
                        .title(s.title)
                        .updated_at(s.updated_at.to_string())
                })
                .collect(),
        ))
    }

    async fn prompt(&self, req: PromptRequest) -> Result<PromptResponse, Error> {
        let live = self.session(&req.session_id.to_string())?;
        let _one = live.prompting.lock().await;
        let text = prompt_text(&req.prompt, &live.root)?;
        live.cancelled.store(false, Ordering::SeqCst);
        let mut idle = live.idle.subscribe();
        lock(&live.translator).sending(&text);
        let sent = live
            .conn
            .client
            .message_send(params::MessageSend {
                session_id: live.id.clone(),
                text: text.clone(),
                to: None,
                env: Some(air_proto::env::ClientEnv::current()),
            })
            .await;
        lock(&live.translator).sent(&text, sent.as_ref().ok().map(|s| s.message_id.as_str()));
        let sent = sent.map_err(|e| failure(crate::rpc_failure(e)))?;
        if let Some(why) = sent.unanswered {
            return Err(refused(why));
        }
        let ended = idle
            .wait_for(|i| match i {
                Idle::At(seq) => *seq > sent.seq,
                Idle::Halted(seq, _) => *seq >= sent.seq,
                Idle::Lost(_) => true,
            })
            .await
            .map_err(|_| refused("the session's follower stopped"))?
            .clone();
        match ended {
            Idle::Lost(why) | Idle::Halted(_, why) => return Err(refused(why)),
            Idle::At(_) => {}
        }
        Ok(PromptResponse::new(
            if live.cancelled.swap(false, Ordering::SeqCst) {
                StopReason::Cancelled
            } else {
                StopReason::EndTurn
            },
        ))
    }

    async fn set_mode(&self, req: SetSessionModeRequest) -> Result<SetSessionModeResponse, Error> {
        let live = self.session(&req.session_id.to_string())?;
        let mode: PermissionMode = serde_json::from_value(serde_json::Value::String(
            req.mode_id.0.to_string(),
        ))
        .map_err(|_| {
            invalid(format!(
                "no mode `{}`: air's modes are default, accept_edits, plan and bypass_permissions",
                req.mode_id.0
            ))
        })?;
        live.conn
            .client
            .run_set_mode(params::RunSetMode {
                session_id: live.id.clone(),
                permission_mode: mode,
            })
            .await
            .map_err(|e| failure(crate::rpc_failure(e)))?;
        Ok(SetSessionModeResponse::new())
    }

    async fn cancel(&self, n: CancelNotification) {
        let Ok(live) = self.session(&n.session_id.to_string()) else {
            return;
        };
        live.cancelled.store(true, Ordering::SeqCst);
        let said = live
            .conn
            .client
            .run_cancel(params::RunCancel {
                session_id: live.id.clone(),
                task_id: None,
                reason: Some("cancelled in the editor".into()),
            })
            .await;
        if let Err(e) = said {
            eprintln!("air acp: cannot cancel session {}: {e}", live.id);
        }
    }
}

/// air's permission modes as the session's ACP modes, `current` the one in force.
fn modes(current: PermissionMode) -> SessionModeState {
    let mode = |m: PermissionMode, name: &str, what: &str| {
        SessionMode::new(m.as_str(), name).description(what.to_string())
    };
    SessionModeState::new(
        current.as_str(),
        vec![
            mode(
                PermissionMode::Default,
                "Default",
                "Reads and project writes go ahead; risky commands, and work handed on to tasks, ask first",
            ),
            mode(
                PermissionMode::AcceptEdits,
                "Accept edits",
                "As default, and work handed on starts without asking; risky commands still ask",
            ),
            mode(
                PermissionMode::Plan,
                "Plan",
                "Read-only: every write and command is refused",
            ),
            mode(
                PermissionMode::BypassPermissions,
                "Bypass permissions",
                "Nothing asks, except what air always confirms (credentials, code that runs by itself, system paths)",
            ),
        ],
    )
}

/// The permission mode a session's run is in now.
async fn mode_of(conn: &Connection, session: &str) -> Result<PermissionMode, Error> {
    let snapshot = conn
        .client
        .session_snapshot(params::Session {
            session_id: session.to_string(),
        })
        .await
        .map_err(|e| failure(crate::rpc_failure(e)))?;
    Ok(snapshot
        .projection
        .run
        .and_then(|r| r.permission_mode)
        .unwrap_or(PermissionMode::Default))
}

/// The project a session's `cwd` is in.
fn project_of(cwd: &Path) -> Result<PathBuf, Error> {
    if !cwd.is_absolute() {
        return Err(invalid(format!(
            "cwd must be an absolute path, not `{}`",
            cwd.display()
        )));
    }
    let paths = air_proto::layout::find_root(cwd).map_err(|e| invalid(e.to_string()))?;
    Ok(paths.root().to_path_buf())
}

async fn connect(root: &Path) -> Result<Connection, Failure> {
    let paths = air_proto::layout::find_root(root).map_err(Failure::from)?;
    air_proto::client::connect(&crate::connect_options(paths))
        .await
        .map_err(crate::unreachable)
}

/// A prompt's content as the message air is told: text as it is, a file the editor
/// points at as `@path`, a file it embeds with its text.
fn prompt_text(blocks: &[ContentBlock], root: &Path) -> Result<String, Error> {
    let mut out = String::new();
    for block in blocks {
        match block {
            ContentBlock::Text(t) => out.push_str(&t.text),
            ContentBlock::ResourceLink(link) => {
                out.push_str(&format!(" @{} ", shown_uri(&link.uri, root)));
            }
            ContentBlock::Resource(r) => match &r.resource {
                EmbeddedResourceResource::TextResourceContents(t) => out.push_str(&format!(
                    "\n\n{}:\n```\n{}\n```\n",
                    shown_uri(&t.uri, root),
                    t.text
                )),
                _ => return Err(invalid("a binary resource cannot be read by air's agents")),
            },
            _ => {
                return Err(invalid(
                    "air takes text, files and links; images and audio are not supported",
                ))
            }
        }
    }
    if out.trim().is_empty() {
        return Err(invalid("the prompt holds no text"));
    }
    Ok(out)
}

/// A `file://` URI as a path from the project's root where it is inside it.
fn shown_uri(uri: &str, root: &Path) -> String {
    let Some(path) = uri.strip_prefix("file://") else {
        return uri.to_string();
    };
    Path::new(path)
        .strip_prefix(root)
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| path.to_string())
}

/// Follows a session's events from the first, as updates to the editor, until the
/// stream ends; says why it ended. `caught_up` is told once the stored events were
/// shown; the permission requests still open then are asked from that point on.
async fn follow_session(
    live: &Arc<Live>,
    cx: &Cx,
    caught_up: tokio::sync::oneshot::Sender<()>,
) -> String {
    let mut caught_up = Some(caught_up);
    let mut open: Vec<p::PermissionRequested> = Vec::new();
    let mut cursor = 0u64;
    loop {
        let sub = live
            .conn
            .client
            .session_subscribe(params::Subscribe {
                session_id: live.id.clone(),
                from_seq: Some(cursor),
            })
            .await;
        let mut sub = match sub {
            Ok(s) => s,
            Err(e) => return format!("cannot follow session {}: {e}", live.id),
        };
        let mut stop = live.stop.subscribe();
        loop {
            let update = tokio::select! {
                _ = stop.wait_for(|s| *s) => return "the session was loaded again".into(),
                update = sub.next() => update,
            };
            let Some(update) = update else { break };
            let update = match update {
                Ok(u) => u,
                Err(e) => return format!("a bad notification from the daemon: {e}"),
            };
            match update {
                AirUpdate::CaughtUp { seq } => {
                    cursor = cursor.max(seq);
                    if let Some(tell) = caught_up.take() {
                        let _ = tell.send(());
                        for req in open.drain(..) {
                            ask(live, cx, req);
                        }
                    }
                }
                AirUpdate::Resync { snapshot, .. } => {
                    // Fell behind: the events in between are read back from the store.
                    if let Err(e) = replay(
                        live,
                        cx,
                        &mut cursor,
                        snapshot.seq,
                        &mut open,
                        caught_up.is_none(),
                    )
                    .await
                    {
                        return e;
                    }
                }
                update => {
                    for d in update.into_deltas() {
                        if d.durable && d.seq <= cursor {
                            continue;
                        }
                        if d.durable {
                            cursor = d.seq;
                        } else if caught_up.is_some() {
                            continue;
                        }
                        show(live, cx, d.seq, &d.event, &mut open, caught_up.is_none());
                    }
                }
            }
        }
        if !live.conn.client.is_connected() {
            return "the daemon closed the connection (it stopped or restarted)".into();
        }
    }
}

/// Reads back the stored events after `cursor` up to `until` and shows them.
async fn replay(
    live: &Arc<Live>,
    cx: &Cx,
    cursor: &mut u64,
    until: u64,
    open: &mut Vec<p::PermissionRequested>,
    live_now: bool,
) -> Result<(), String> {
    while *cursor < until {
        let page = live
            .conn
            .client
            .events_list(params::EventsList {
                session_id: live.id.clone(),
                after_seq: Some(*cursor),
                limit: Some(1000),
                ..params::EventsList::default()
            })
            .await
            .map_err(|e| format!("cannot read session {}: {e}", live.id))?;
        if page.events.is_empty() {
            break;
        }
        for stored in page.events {
            *cursor = stored.seq;
            show(live, cx, stored.seq, &stored.event, open, live_now);
        }
    }
    Ok(())
}

/// Shows one event: its updates sent, a permission request asked (or kept until the
/// stored events were shown), an idle session told.
fn show(
    live: &Arc<Live>,
    cx: &Cx,
    seq: u64,
    event: &air_proto::event::RuntimeEvent,
    open: &mut Vec<p::PermissionRequested>,
    live_now: bool,
) {
    if live_now {
        mirror(live, cx, event);
    }
    let outs = lock(&live.translator).event(event);
    for out in outs {
        match out {
            Out::Update(update) => {
                let update = *update;
                if let Err(e) =
                    cx.send_notification(SessionNotification::new(live.id.clone(), update))
                {
                    eprintln!("air acp: cannot send an update: {e}");
                }
            }
            Out::Ask(req) if live_now => ask(live, cx, req),
            Out::Ask(req) => open.push(req),
            Out::Answered(id) => open.retain(|r| r.request_id != id),
            Out::Idle => {
                live.idle.send_replace(Idle::At(seq));
            }
            Out::Halted(why) => {
                live.idle.send_replace(Idle::Halted(seq, why));
            }
        }
    }
}

/// Shows an agent's command in a terminal of the editor as it runs (the command runs
/// in airsd's sandbox; the terminal shows its output and ends with its status), the
/// tool call embedding it.
fn mirror(live: &Arc<Live>, cx: &Cx, event: &air_proto::event::RuntimeEvent) {
    use air_proto::events as ev;
    let Some(terminals) = &live.terminals else {
        return;
    };
    let run = || event.payload["command_run_id"].as_str().unwrap_or_default();
    match event.event_type.as_str() {
        ev::CommandStarted::TYPE => {
            let Some(started) = updates::de::<p::CommandStarted>(&event.payload) else {
                return;
            };
            let Some(call) = started.tool_run_id else {
                return;
            };
            let Some((program, args)) = terminals.open(&started.command_run_id) else {
                return;
            };
            let (live, cx2) = (live.clone(), cx.clone());
            let task = async move {
                let made = cx2
                    .send_request(
                        CreateTerminalRequest::new(live.id.clone(), program)
                            .args(args)
                            .cwd(live.root.clone()),
                    )
                    .block_task()
                    .await;
                let id = match made {
                    Ok(made) => made.terminal_id,
                    Err(e) => {
                        eprintln!("air acp: the editor did not make a terminal: {e}");
                        return Ok(());
                    }
                };
                let fields = ToolCallUpdateFields::new()
                    .content(vec![ToolCallContent::Terminal(Terminal::new(id.clone()))]);
                let _ = cx2.send_notification(SessionNotification::new(
                    live.id.clone(),
                    agent_client_protocol::v1::schema::SessionUpdate::ToolCallUpdate(
                        ToolCallUpdate::new(call, fields),
                    ),
                ));
                // Released once its command ended (its output stays shown).
                let _ = cx2
                    .send_request(WaitForTerminalExitRequest::new(live.id.clone(), id.clone()))
                    .block_task()
                    .await;
                let _ = cx2
                    .send_request(ReleaseTerminalRequest::new(live.id.clone(), id))
                    .block_task()
                    .await;
                Ok(())
            };
            if let Err(e) = cx.spawn(task) {
                eprintln!("air acp: cannot show a command: {e}");
            }
        }
        ev::StdoutDelta::TYPE | ev::StderrDelta::TYPE => {
            if let Some(data) = event.payload["data"].as_str() {
                terminals.output(run(), data);
            }
        }
        ev::CommandCompleted::TYPE => {
            let code = event.payload["exit_code"].as_i64().unwrap_or(1);
            terminals.ended(run(), i32::try_from(code).unwrap_or(1));
        }
        ev::CommandFailed::TYPE => {
            let code = event.payload["exit_code"].as_i64().unwrap_or(1);
            terminals.ended(run(), i32::try_from(code).unwrap_or(1));
        }
        _ => {}
    }
}

/// Puts a permission request of the run to the person in the editor, and answers it
/// with their choice (when nobody answered first).
fn ask(live: &Arc<Live>, cx: &Cx, req: p::PermissionRequested) {
    let (live, cx2) = (live.clone(), cx.clone());
    let task = async move {
        let call = req
            .tool_run_id
            .clone()
            .unwrap_or_else(|| format!("permission:{}", req.request_id));
        let mut fields = ToolCallUpdateFields::new().title(req.action.clone());
        if let Some(why) = &req.reason {
            fields = fields.content(vec![ToolCallContent::Content(Content::new(
                ContentBlock::Text(TextContent::new(why.clone())),
            ))]);
        }
        let options = vec![
            PermissionOption::new("allow", "Allow", PermissionOptionKind::AllowOnce),
            PermissionOption::new("deny", "Deny", PermissionOptionKind::RejectOnce),
        ];
        let asked = cx2
            .send_request(RequestPermissionRequest::new(
                live.id.clone(),
                ToolCallUpdate::new(call, fields),
                options,
            ))
            .block_task()
            .await;
        let (decision, reason) = match asked.map(|r| r.outcome) {
            Ok(RequestPermissionOutcome::Selected(s)) if &*s.option_id.0 == "allow" => {
                (p::PermissionDecision::Allow, None)
            }
            Ok(RequestPermissionOutcome::Selected(_)) => (
                p::PermissionDecision::Deny,
                Some("denied in the editor".to_string()),
            ),
            Ok(_) => (
                p::PermissionDecision::Deny,
                Some("the editor cancelled the prompt".to_string()),
            ),
            Err(e) => {
                eprintln!("air acp: the editor did not answer a permission request: {e}");
                return Ok(());
            }
        };
        // Answered first by another client: that answer stands.
        let _ = live
            .conn
            .client
            .permission_respond(params::PermissionRespond {
                session_id: live.id.clone(),
                request_id: req.request_id,
                decision,
                reason,
            })
            .await;
        Ok(())
    };
    if let Err(e) = cx.spawn(task) {
        eprintln!("air acp: cannot ask for a permission: {e}");
    }
}

/// Serves airsd's file requests of a session from the editor: a file's text as the
/// editor has it (`fs/read_text_file`), an agent's write put into it
/// (`fs/write_text_file`).
async fn serve_files(
    live: &Arc<Live>,
    cx: &Cx,
    mut files: jsonrpsee::core::client::Subscription<air_proto::api::EditorRequest>,
) {
    use air_proto::api::EditorRequestKind;
    // airsd names files under the project's resolved root; the editor knows them
    // under the root it opened.
    let resolved = std::fs::canonicalize(&live.root).unwrap_or_else(|_| live.root.clone());
    let mut stop = live.stop.subscribe();
    loop {
        let req = tokio::select! {
            _ = stop.wait_for(|s| *s) => return,
            req = files.next() => req,
        };
        let Some(Ok(req)) = req else { return };
        let path = match Path::new(&req.path).strip_prefix(&resolved) {
            Ok(rest) => live.root.join(rest),
            Err(_) => PathBuf::from(&req.path),
        };
        // A request airsd no longer waits for is not carried out late.
        let left = std::time::Duration::from_millis(req.deadline_ms.saturating_sub(now_ms()));
        if left.is_zero() {
            continue;
        }
        let asked = async {
            match req.kind {
                EditorRequestKind::Read => cx
                    .send_request(ReadTextFileRequest::new(live.id.clone(), path))
                    .block_task()
                    .await
                    .map(|r| Some(r.content)),
                EditorRequestKind::Write => cx
                    .send_request(WriteTextFileRequest::new(
                        live.id.clone(),
                        path,
                        req.content.clone().unwrap_or_default(),
                    ))
                    .block_task()
                    .await
                    .map(|_| None),
            }
        };
        let answer: Result<Option<String>, String> = match tokio::time::timeout(left, asked).await {
            Ok(a) => a.map_err(|e| e.to_string()),
            Err(_) => Err("the editor did not answer in time".into()),
        };
        let (content, error) = match answer {
            Ok(c) => (c, None),
            Err(e) => (None, Some(e)),
        };
        let answered = live
            .conn
            .client
            .editor_answer(params::EditorAnswer {
                session_id: live.id.clone(),
                request_id: req.request_id,
                content,
                error,
            })
            .await;
        if let Err(e) = answered {
            eprintln!("air acp: cannot answer a file request: {e}");
        }
    }
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Answers a request on its own task, so that the handler never waits on the editor.
fn answer<T, F>(cx: &Cx, responder: Responder<T>, work: F) -> Result<(), Error>
where
    T: agent_client_protocol::JsonRpcResponse + Send + 'static,
    F: std::future::Future<Output = Result<T, Error>> + Send + 'static,
{
    cx.spawn(async move {
        let _ = responder.respond_with_result(work.await);
        Ok(())
    })
}

/// `air acp`: serves ACP on stdin and stdout until the editor closes them.
pub async fn run() -> CmdResult {
    use agent_client_protocol::{on_receive_notification, on_receive_request};
    let relay = Arc::new(Relay::default());
    let (r1, r2, r3, r4, r5, r6, r7, r8) = (
        relay.clone(),
        relay.clone(),
        relay.clone(),
        relay.clone(),
        relay.clone(),
        relay.clone(),
        relay.clone(),
        relay.clone(),
    );
    let served = Agent
        .v1()
        .name("air")
        .on_receive_request(
            async move |req: InitializeRequest,
                        responder: Responder<InitializeResponse>,
                        _cx: Cx| {
                responder.respond_with_result(r1.initialize(req).await)
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |_req: AuthenticateRequest,
                        responder: Responder<AuthenticateResponse>,
                        cx: Cx| {
                let r = r2.clone();
                answer(&cx, responder, async move {
                    r.authenticated()
                        .await
                        .map(|()| AuthenticateResponse::new())
                })
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |req: NewSessionRequest,
                        responder: Responder<NewSessionResponse>,
                        cx: Cx| {
                let (r, c) = (r3.clone(), cx.clone());
                answer(&cx, responder, async move { r.new_session(&c, req).await })
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |req: LoadSessionRequest,
                        responder: Responder<LoadSessionResponse>,
                        cx: Cx| {
                let (r, c) = (r4.clone(), cx.clone());
                answer(&cx, responder, async move { r.load_session(&c, req).await })
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |req: ListSessionsRequest,
                        responder: Responder<ListSessionsResponse>,
                        cx: Cx| {
                let r = r5.clone();
                answer(&cx, responder, async move { r.list(req).await })
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |req: PromptRequest, responder: Responder<PromptResponse>, cx: Cx| {
                let r = r6.clone();
                answer(&cx, responder, async move { r.prompt(req).await })
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |req: SetSessionModeRequest,
                        responder: Responder<SetSessionModeResponse>,
                        cx: Cx| {
                let r = r8.clone();
                answer(&cx, responder, async move { r.set_mode(req).await })
            },
            on_receive_request!(),
        )
        .on_receive_notification(
            async move |n: CancelNotification, cx: Cx| {
                let r = r7.clone();
                cx.spawn(async move {
                    r.cancel(n).await;
                    Ok(())
                })
            },
            on_receive_notification!(),
        )
        .connect_to(Stdio::new())
        .await;
    terminal::clean_up();
    served.map_err(|e| Failure::from(format!("the editor's connection failed: {e}")))
}
