//! What the daemon holds while it runs: the project, its open sessions, its clients.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use air_proto::api::{
    ClientInfo, EventsPage, EventsQuery, SessionCreate, SessionInfo, SessionRun, StoredEvent,
};
use air_proto::event::RuntimeEvent;
use air_proto::layout::{ProjectJson, ProjectPaths};
use air_proto::payload::SessionCreated;
use air_proto::projection::SessionStatus;
use rusqlite::{params_from_iter, OpenFlags, OptionalExtension};
use tokio::sync::watch;

use crate::error::{Error, Result};
use crate::{Session, SessionConfig};

/// Sessions kept open at most (each holds a database, its writer and its bus); the
/// least recently used beyond close, and reopen when asked for.
pub const MOST_OPEN_SESSIONS: usize = 32;

pub struct DaemonState {
    pub paths: ProjectPaths,
    pub project: ProjectJson,
    pub socket: PathBuf,
    pub started: Instant,
    pub started_at: String,
    pub idle_timeout: Duration,
    sessions: tokio::sync::Mutex<HashMap<String, OpenSession>>,
    /// What lists show of a closed session that its meta row does not hold (its run
    /// in brief, at a seq) and a conversation's first words: read once, not at each
    /// `session.list` (every command that names a session lists them).
    briefs: Arc<Mutex<HashMap<String, Brief>>>,
    /// One gate per session being opened.
    opening: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    clients: Arc<Mutex<HashMap<u64, ClientInfo>>>,
    connections: AtomicUsize,
    /// When the last connection closed (or the daemon started).
    idle_since: Mutex<Instant>,
    shutdown: watch::Sender<bool>,
    /// Recently encoded full replay pages, shared by subscribers catching up together.
    replay_cache: Mutex<ReplayCache>,
    /// How plans are run (worker program, heartbeats, rules); none: plans are refused.
    pub(super) shell: Option<crate::scheduler::shell::ShellConfig>,
    /// The scheduler of each session with a run going.
    runs: Mutex<HashMap<String, crate::scheduler::shell::RunHandle>>,
    /// One gate per session whose run is being continued, so that two requests never
    /// start two schedulers.
    pub(super) run_gates: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    /// The provider settings the client of each session's run gave, held in memory
    /// only: a run continued without new ones keeps them.
    pub(super) run_envs: Mutex<HashMap<String, air_proto::env::ClientEnv>>,
    /// How the project's previous daemon ended, when it did not stop as it should.
    pub last_abnormal_exit: Option<String>,
}

/// An encoded replay page: deltas ready to send.
pub type ReplayPage = Arc<Vec<(u64, Box<serde_json::value::RawValue>)>>;

/// Full pages of stored events never change, so clients catching up from the same
/// point share one encoding. Keyed by (session, after, limit); at most `PAGES` kept.
#[derive(Default)]
struct ReplayCache {
    pages: HashMap<(String, u64, u32), ReplayPage>,
    order: std::collections::VecDeque<(String, u64, u32)>,
}

impl ReplayCache {
    const PAGES: usize = 16;

    fn get(&self, key: &(String, u64, u32)) -> Option<ReplayPage> {
        self.pages.get(key).cloned()
    }

    fn put(&mut self, key: (String, u64, u32), page: ReplayPage) {
        if self.pages.insert(key.clone(), page).is_none() {
            self.order.push_back(key);
        }
        while self.order.len() > Self::PAGES {
            if let Some(old) = self.order.pop_front() {
                self.pages.remove(&old);
            }
        }
    }
}

/// An open session and when a request last used it.
struct OpenSession {
    session: Arc<Session>,
    last_used: Instant,
}

impl OpenSession {
    fn new(session: Arc<Session>) -> Self {
        Self {
            session,
            last_used: Instant::now(),
        }
    }
}

pub(super) fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Error::Internal(format!("blocking task: {e}")))?
}

impl DaemonState {
    pub fn new(
        paths: ProjectPaths,
        project: ProjectJson,
        socket: PathBuf,
        idle_timeout: Duration,
    ) -> Self {
        Self {
            paths,
            project,
            socket,
            started: Instant::now(),
            started_at: air_proto::time::now_iso(),
            idle_timeout,
            sessions: tokio::sync::Mutex::new(HashMap::new()),
            opening: Mutex::new(HashMap::new()),
            clients: Arc::new(Mutex::new(HashMap::new())),
            connections: AtomicUsize::new(0),
            idle_since: Mutex::new(Instant::now()),
            replay_cache: Mutex::new(ReplayCache::default()),
            shutdown: watch::channel(false).0,
            shell: None,
            runs: Mutex::new(HashMap::new()),
            run_gates: Mutex::new(HashMap::new()),
            run_envs: Mutex::new(HashMap::new()),
            last_abnormal_exit: None,
            briefs: Arc::default(),
        }
    }

    /// Lets the daemon run plans with these workers and rules.
    pub fn with_shell(mut self, shell: crate::scheduler::shell::ShellConfig) -> Self {
        self.shell = Some(shell);
        self
    }

    pub(super) fn run_gate(&self, session_id: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut gates = lock(&self.run_gates);
        // A gate nobody holds or waits on is dropped (every holder has a clone, and
        // clones are handed out only under this lock).
        gates.retain(|_, g| Arc::strong_count(g) > 1);
        gates.entry(session_id.to_string()).or_default().clone()
    }

    pub(super) fn runs_lock(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<String, crate::scheduler::shell::RunHandle>> {
        lock(&self.runs)
    }

    // ---- lifecycle ------------------------------------------------------------------

    pub fn request_shutdown(&self) {
        self.shutdown.send_replace(true);
    }

    pub fn shutdown_requested(&self) -> watch::Receiver<bool> {
        self.shutdown.subscribe()
    }

    pub fn connection_opened(&self) {
        self.connections.fetch_add(1, Ordering::SeqCst);
    }

    pub fn connection_closed(&self, conn: u64) {
        lock(&self.clients).remove(&conn);
        if self.connections.fetch_sub(1, Ordering::SeqCst) == 1 {
            *lock(&self.idle_since) = Instant::now();
        }
    }

    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }

    /// Worker processes running now, over every run.
    pub fn running_workers(&self) -> usize {
        self.run_workers()
    }

    /// How long the daemon has had no client and no running work.
    pub fn idle_for(&self) -> Option<Duration> {
        if self.connections() > 0 || self.active_runs() > 0 {
            return None;
        }
        Some(lock(&self.idle_since).elapsed())
    }

    // ---- clients --------------------------------------------------------------------

    pub fn register_client(&self, conn: u64, info: ClientInfo) {
        lock(&self.clients).insert(conn, info);
    }

    /// Whether the connection `conn` said hello.
    pub fn is_client(&self, conn: u64) -> bool {
        lock(&self.clients).contains_key(&conn)
    }

    /// Whether the connection `conn` steers `session_id` (said so in its hello).
    pub fn steers(&self, conn: u64, session_id: &str) -> bool {
        lock(&self.clients).get(&conn).is_some_and(|c| {
            c.session_id.as_deref() == Some(session_id)
                && c.mode == air_proto::api::ClientMode::Steering
        })
    }

    /// The connection `conn` steers `session_id` from now on, as a `hello` with that
    /// session and mode would say; a connection gone meanwhile is left gone.
    pub fn steer(&self, conn: u64, session_id: &str) {
        if let Some(c) = lock(&self.clients).get_mut(&conn) {
            c.session_id = Some(session_id.to_string());
            c.mode = air_proto::api::ClientMode::Steering;
        }
    }

    /// A test of whether a person who may answer prompts (a steering client) is attached
    /// to `session_id`, for the run's ask policy.
    pub fn humans_watching(&self, session_id: &str) -> Arc<dyn Fn() -> bool + Send + Sync> {
        let clients = self.clients.clone();
        let session_id = session_id.to_string();
        Arc::new(move || {
            lock(&clients).values().any(|c| {
                c.mode == air_proto::api::ClientMode::Steering
                    && c.session_id.as_deref() == Some(session_id.as_str())
            })
        })
    }

    /// Who a connection is, for records of who asked (`air (pid 42)`).
    pub fn client_name(&self, conn: u64) -> Option<String> {
        lock(&self.clients).get(&conn).map(|c| match c.pid {
            Some(pid) => format!("{} (pid {pid})", c.client),
            None => c.client.clone(),
        })
    }

    pub fn clients(&self) -> Vec<ClientInfo> {
        let mut list: Vec<ClientInfo> = lock(&self.clients).values().cloned().collect();
        list.sort_by(|a, b| a.connected_at.cmp(&b.connected_at));
        list
    }

    // ---- sessions -------------------------------------------------------------------

    /// The session `id` if it is open.
    async fn open_session(&self, id: &str) -> Result<Option<Arc<Session>>> {
        let mut sessions = self.sessions.lock().await;
        if *self.shutdown.borrow() {
            return Err(Error::ShuttingDown);
        }
        Ok(sessions.get_mut(id).map(|open| {
            open.last_used = Instant::now();
            open.session.clone()
        }))
    }

    /// The open session `id`, opening it if needed. Opening one session never holds up
    /// requests for others; two requests for the same one open it once.
    pub async fn session(&self, id: &str) -> Result<Arc<Session>> {
        if let Some(session) = self.open_session(id).await? {
            return Ok(session);
        }
        let gate = lock(&self.opening)
            .entry(id.to_string())
            .or_default()
            .clone();
        let _opening = gate.lock().await;
        let result = async {
            if let Some(session) = self.open_session(id).await? {
                return Ok(session);
            }
            let paths = self.paths.clone();
            let owned = id.to_string();
            let session =
                blocking(move || Session::open(&paths, &owned, SessionConfig::default())).await?;
            let session = Arc::new(session);
            let mut sessions = self.sessions.lock().await;
            if *self.shutdown.borrow() {
                return Err(Error::ShuttingDown);
            }
            sessions.insert(id.to_string(), OpenSession::new(session.clone()));
            drop(sessions);
            self.trim_open_sessions().await;
            Ok(session)
        }
        .await;
        lock(&self.opening).remove(id);
        result
    }

    /// Keeps at most [`MOST_OPEN_SESSIONS`] sessions open: past it, the least recently
    /// used that nobody holds close (they reopen on demand), so a client that opens or
    /// creates sessions without end cannot make the daemon grow without end.
    async fn trim_open_sessions(&self) {
        let closing: Vec<Arc<Session>> = {
            let mut sessions = self.sessions.lock().await;
            let over = sessions.len().saturating_sub(MOST_OPEN_SESSIONS);
            if over == 0 {
                return;
            }
            let mut unheld: Vec<(Instant, String)> = sessions
                .iter()
                .filter(|(_, open)| Arc::strong_count(&open.session) == 1)
                .map(|(id, open)| (open.last_used, id.clone()))
                .collect();
            unheld.sort();
            unheld
                .into_iter()
                .take(over)
                .filter_map(|(_, id)| sessions.remove(&id).map(|open| open.session))
                .collect()
        };
        for session in closing {
            let _ = tokio::task::spawn_blocking(move || session.store().shutdown()).await;
        }
    }

    pub async fn create_session(&self, params: SessionCreate) -> Result<SessionInfo> {
        self.create_session_with(params, |_| Ok(Vec::new())).await
    }

    /// Creates a session whose file holds, after `session.created`, the events `first`
    /// makes for its id (a run's start): one write, no commit after it.
    pub async fn create_session_with(
        &self,
        params: SessionCreate,
        first: impl FnOnce(&str) -> Result<Vec<RuntimeEvent>>,
    ) -> Result<SessionInfo> {
        self.create_session_as(air_proto::ids::new_id(), params, first)
            .await
    }

    /// [`Self::create_session_with`] under an id the caller made (and may hold the
    /// run gate of before the session can be seen).
    pub(super) async fn create_session_as(
        &self,
        id: String,
        params: SessionCreate,
        first: impl FnOnce(&str) -> Result<Vec<RuntimeEvent>>,
    ) -> Result<SessionInfo> {
        if *self.shutdown.borrow() {
            return Err(Error::ShuttingDown);
        }
        let paths = self.paths.clone();
        let project_id = self.project.project_id.clone();
        let owned = id.clone();
        // Stamped before the events that follow it.
        let created = crate::session::created_event(
            &id,
            &SessionCreated {
                title: params.title,
                plan_ref: params.plan_ref,
            },
        )?;
        let first = first(&id)?;
        let session = blocking(move || {
            Session::create_with(
                &paths,
                &project_id,
                &owned,
                created,
                first,
                SessionConfig::default(),
            )
        })
        .await?;
        let info = info_of(&session);
        self.sessions
            .lock()
            .await
            .insert(id, OpenSession::new(Arc::new(session)));
        self.trim_open_sessions().await;
        Ok(info)
    }

    pub async fn open_sessions(&self) -> usize {
        self.sessions.lock().await.len()
    }

    /// The open sessions whose run halted (its scheduler stopped without ending it).
    pub async fn halted_runs(&self) -> Vec<String> {
        let open: Vec<Arc<Session>> = self
            .sessions
            .lock()
            .await
            .values()
            .map(|o| o.session.clone())
            .collect();
        open.iter()
            .filter(|s| {
                s.bus()
                    .read(|p, _| p.run.as_ref().is_some_and(|r| r.halted.is_some()))
            })
            .map(|s| s.id().to_string())
            .collect()
    }

    /// Every stored session, newest first.
    pub async fn list_sessions(&self) -> Result<Vec<SessionInfo>> {
        let open: HashMap<String, SessionInfo> = self
            .sessions
            .lock()
            .await
            .iter()
            .map(|(id, open)| (id.clone(), info_of(&open.session)))
            .collect();
        let dir = self.paths.sessions();
        let paths = self.paths.clone();
        let briefs = self.briefs.clone();
        let mut list = blocking(move || {
            let mut list = Vec::new();
            let entries = match std::fs::read_dir(&dir) {
                Ok(e) => e,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(list),
                Err(source) => return Err(Error::Io { path: dir, source }),
            };
            let mut briefs = briefs.lock().unwrap_or_else(|p| p.into_inner());
            for entry in entries.flatten() {
                let id = entry.file_name().to_string_lossy().into_owned();
                if air_proto::layout::check_session_id(&id).is_err() {
                    continue;
                }
                let db = paths.session_db(&id);
                let cached = briefs.entry(id.clone()).or_default();
                let mut info = match open.get(&id) {
                    Some(info) => info.clone(),
                    None if !db.is_file() => continue,
                    None => match read_info(&db, &id) {
                        Ok(Some(mut info)) => {
                            // A closed session changes only when it is written.
                            if cached.seq != Some(info.seq) {
                                cached.run = read_run(&db).unwrap_or_else(|e| {
                                    tracing::debug!(session = %id, error = %e, "no run brief");
                                    None
                                });
                                cached.seq = Some(info.seq);
                            }
                            info.run = cached.run.clone();
                            info
                        }
                        Ok(None) => continue,
                        Err(e) => {
                            tracing::warn!(session = %id, error = %e, "cannot read session");
                            continue;
                        }
                    },
                };
                // A conversation is named by what it began with (which never changes).
                if info.title.is_none() {
                    if cached.first_words.is_none() {
                        cached.first_words = first_words(&db).unwrap_or_else(|e| {
                            tracing::debug!(session = %id, error = %e, "no first message");
                            None
                        });
                    }
                    info.title = cached.first_words.clone();
                }
                list.push(info);
            }
            Ok(list)
        })
        .await?;
        list.sort_by(|a, b| b.created_at.cmp(&a.created_at));
        Ok(list)
    }

    pub async fn session_info(&self, id: &str) -> Result<SessionInfo> {
        Ok(info_of(&*self.session(id).await?))
    }

    /// Closes every session: queued writes commit, threads stop. No session opens after.
    pub async fn close_sessions(&self) {
        self.request_shutdown();
        let sessions: Vec<Arc<Session>> = self
            .sessions
            .lock()
            .await
            .drain()
            .map(|(_, open)| open.session)
            .collect();
        for session in sessions {
            let _ = tokio::task::spawn_blocking(move || session.store().shutdown()).await;
        }
    }

    /// Closes sessions nobody has used for `idle`: no request, no subscription, no other
    /// holder. They reopen on the next request.
    pub async fn close_idle_sessions(&self, idle: Duration) {
        let closing: Vec<(String, Arc<Session>)> = {
            let mut sessions = self.sessions.lock().await;
            let ids: Vec<String> = sessions
                .iter()
                .filter(|(_, open)| {
                    open.last_used.elapsed() >= idle && Arc::strong_count(&open.session) == 1
                })
                .map(|(id, _)| id.clone())
                .collect();
            ids.into_iter()
                .filter_map(|id| sessions.remove(&id).map(|open| (id, open.session)))
                .collect()
        };
        for (id, session) in closing {
            tracing::debug!(session = %id, "closing an idle session");
            let _ = tokio::task::spawn_blocking(move || session.store().shutdown()).await;
        }
    }

    /// Stored durable events with `after < seq <= upto`, at most `limit`, already encoded
    /// as `session.update` deltas: the stored JSON columns are spliced in, not re-parsed.
    ///
    /// The page may hold events past `upto` when it comes from the cache: callers stop
    /// at `upto`.
    pub async fn replay(
        &self,
        session_id: &str,
        after: u64,
        upto: u64,
        limit: u32,
    ) -> Result<ReplayPage> {
        let key = (session_id.to_string(), after, limit);
        if let Some(page) = lock(&self.replay_cache).get(&key) {
            return Ok(page);
        }
        let session = self.session(session_id).await?;
        let page = Arc::new(blocking(move || replay_encoded(&session, after, upto, limit)).await?);
        if page.len() == limit as usize {
            lock(&self.replay_cache).put(key, page.clone());
        }
        Ok(page)
    }

    pub async fn events(&self, query: EventsQuery) -> Result<EventsPage> {
        let session = self.session(&query.session_id).await?;
        blocking(move || list_events(&session, &query)).await
    }

    /// A client's UI state under `key` (D-053), if stored.
    pub async fn ui_state_get(
        &self,
        session_id: &str,
        key: &str,
    ) -> Result<Option<serde_json::Value>> {
        check_ui_key("ui_state.get", key)?;
        let session = self.session(session_id).await?;
        let key = key.to_string();
        blocking(move || {
            let conn = session.readers().get()?;
            let text: Option<String> = conn
                .query_row(
                    "SELECT value_json FROM ui_state WHERE key = ?1",
                    [&key],
                    |r| r.get(0),
                )
                .optional()?;
            Ok(text.and_then(|t| serde_json::from_str(&t).ok()))
        })
        .await
    }

    /// Stores a client's UI state under `key`.
    pub async fn ui_state_put(
        &self,
        session_id: &str,
        key: &str,
        value: serde_json::Value,
    ) -> Result<()> {
        check_ui_key("ui_state.put", key)?;
        let size = value.to_string().len();
        if size > UI_STATE_MAX {
            return Err(Error::invalid(
                "ui_state.put",
                "value",
                format!("{size} bytes; at most {UI_STATE_MAX}"),
            ));
        }
        let session = self.session(session_id).await?;
        session.store().put_ui_state(key, &value).await
    }
}

fn info_of(session: &Session) -> SessionInfo {
    session.bus().read(|p, seq| {
        let run = p.run.as_ref().map(|r| SessionRun {
            outcome: match (r.status, r.outcome) {
                (air_proto::projection::RunState::Running, _) => "running".to_string(),
                (_, Some(o)) => o.as_str().to_string(),
                (_, None) => "unfinished".to_string(),
            },
            conversation: r.plan == air_proto::conversation::CONVERSATION_PLAN,
            started_at: r.started_at.clone(),
            ended_at: r.ended_at.clone(),
            tasks: u32::try_from(
                p.tasks
                    .iter()
                    .filter(|t| !air_proto::conversation::is_any_turn(&t.id))
                    .count(),
            )
            .unwrap_or(u32::MAX),
            cost_micro_usd: p.counters.cost_micro_usd,
        });
        match &p.session {
            Some(s) => SessionInfo {
                id: s.id.clone(),
                title: s.title.clone(),
                plan_ref: s.plan_ref.clone(),
                status: s.status,
                created_at: s.created_at.clone(),
                updated_at: s.updated_at.clone(),
                seq,
                run,
                message: None,
            },
            None => SessionInfo {
                id: session.id().to_string(),
                title: None,
                plan_ref: None,
                status: SessionStatus::Active,
                created_at: String::new(),
                updated_at: String::new(),
                seq,
                run,
                message: None,
            },
        }
    })
}

/// Reads a closed session's summary without opening it for writing.
fn read_info(db: &std::path::Path, id: &str) -> Result<Option<SessionInfo>> {
    let conn = rusqlite::Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    conn.busy_timeout(Duration::from_secs(2))?;
    let seq: u64 = conn.query_row("SELECT COALESCE(MAX(seq), 0) FROM events", [], |r| r.get(0))?;
    let info = conn
        .query_row(
            "SELECT title, plan_ref, status, created_at, updated_at FROM session_meta",
            [],
            |r| {
                let status: String = r.get(2)?;
                Ok(SessionInfo {
                    id: id.to_string(),
                    title: r.get(0)?,
                    plan_ref: r.get(1)?,
                    status: match status.as_str() {
                        "archived" => SessionStatus::Archived,
                        "deleted" => SessionStatus::Deleted,
                        _ => SessionStatus::Active,
                    },
                    created_at: r.get(3)?,
                    updated_at: r.get(4)?,
                    seq,
                    run: None,
                    message: None,
                })
            },
        )
        .optional()?;
    Ok(info)
}

/// The first words a person sent in a session (its first line, a leading `/command`
/// left out), as its title when it was given none.
fn first_words(db: &std::path::Path) -> Result<Option<String>> {
    let conn = rusqlite::Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    conn.busy_timeout(Duration::from_secs(2))?;
    let content: Option<String> = conn
        .query_row(
            "SELECT content_json FROM messages WHERE role = 'user' ORDER BY seq LIMIT 1",
            [],
            |r| r.get(0),
        )
        .optional()?;
    let Some(content) = content else {
        return Ok(None);
    };
    let value: serde_json::Value = serde_json::from_str(&content).unwrap_or_default();
    let text = match &value {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Array(blocks) => blocks
            .iter()
            .find_map(|b| b.get("text").and_then(|t| t.as_str()))
            .unwrap_or("")
            .to_string(),
        _ => String::new(),
    };
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    let line = match line.strip_prefix('/') {
        Some(rest) => rest.split_once(' ').map_or("", |(_, words)| words.trim()),
        None => line,
    };
    let mut title: String = line.chars().take(60).collect();
    if line.chars().count() > 60 {
        title.push('…');
    }
    Ok((!title.is_empty()).then_some(title))
}

/// What `session.list` keeps of a session between calls.
#[derive(Default)]
struct Brief {
    /// The seq `run` was read at.
    seq: Option<u64>,
    run: Option<SessionRun>,
    first_words: Option<String>,
}

/// A closed session's run in brief: its first start, its last end (none after the
/// last start: the daemon stopped during it), its tasks and its cost.
fn read_run(db: &std::path::Path) -> Result<Option<SessionRun>> {
    let conn = rusqlite::Connection::open_with_flags(db, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    conn.busy_timeout(Duration::from_secs(2))?;
    let conn = &conn;
    let first: Option<(String, Option<String>)> = conn
        .query_row(
            "SELECT timestamp, json_extract(payload_json, '$.plan') FROM events
             WHERE type = 'run.started' ORDER BY seq LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    let Some((started_at, plan)) = first else {
        return Ok(None);
    };
    let last: Option<(String, String, Option<String>)> = conn
        .query_row(
            "SELECT type, timestamp, json_extract(payload_json, '$.outcome') FROM events
             WHERE type IN ('run.started', 'run.continued', 'run.completed')
             ORDER BY seq DESC LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .optional()?;
    let (outcome, ended_at) = match last {
        Some((ty, at, Some(outcome))) if ty == "run.completed" => (outcome, Some(at)),
        _ => ("unfinished".to_string(), None),
    };
    let mut tasks = 0u32;
    let mut stmt = conn.prepare("SELECT id FROM tasks")?;
    for id in stmt.query_map([], |r| r.get::<_, String>(0))? {
        if !air_proto::conversation::is_any_turn(&id?) {
            tasks = tasks.saturating_add(1);
        }
    }
    let cost: i64 = conn.query_row(
        "SELECT COALESCE(SUM(json_extract(usage_json, '$.cost_micro_usd')), 0) FROM messages",
        [],
        |r| r.get(0),
    )?;
    Ok(Some(SessionRun {
        outcome,
        conversation: plan.as_deref() == Some(air_proto::conversation::CONVERSATION_PLAN),
        started_at,
        ended_at,
        tasks,
        cost_micro_usd: u64::try_from(cost).unwrap_or(0),
    }))
}

fn replay_encoded(
    session: &Session,
    after: u64,
    upto: u64,
    limit: u32,
) -> Result<Vec<(u64, Box<serde_json::value::RawValue>)>> {
    use std::fmt::Write;
    let quote = |s: &str| serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_string());
    let conn = session.readers().get()?;
    let mut stmt = conn.prepare_cached(
        "SELECT seq, id, type, version, timestamp, source_kind, source_id, source_agent_type,
             route_json, payload_json
         FROM events WHERE seq > ?1 AND seq <= ?2 ORDER BY seq LIMIT ?3",
    )?;
    let session_json = quote(session.id());
    // As live events carry it: the session's project id, omitted when unknown.
    let project_field = match session.store().project_id() {
        Some(id) => format!(",\"project_id\":{}", quote(id)),
        None => String::new(),
    };
    let mut rows = stmt.query(rusqlite::params![after, upto, limit])?;
    let mut out = Vec::new();
    while let Some(r) = rows.next()? {
        let seq: u64 = r.get(0)?;
        let id: String = r.get(1)?;
        let ty: String = r.get(2)?;
        let version: u32 = r.get(3)?;
        let timestamp: String = r.get(4)?;
        let kind: String = r.get(5)?;
        let source_id: Option<String> = r.get(6)?;
        let agent_type: Option<String> = r.get(7)?;
        let route: String = r.get(8)?;
        let payload: String = r.get(9)?;
        let mut source = format!("{{\"kind\":{}", quote(&kind));
        if let Some(v) = &source_id {
            let _ = write!(source, ",\"id\":{}", quote(v));
        }
        if let Some(v) = &agent_type {
            let _ = write!(source, ",\"agent_type\":{}", quote(v));
        }
        source.push('}');
        let text = format!(
            "{{\"type\":\"delta\",\"seq\":{seq},\"durable\":true,\"event\":{{\"id\":{},\"type\":{},\"version\":{version},\"timestamp\":{},\"session_id\":{session_json}{project_field},\"source\":{source},\"route\":{route},\"payload\":{payload}}}}}",
            quote(&id),
            quote(&ty),
            quote(&timestamp),
        );
        let raw = serde_json::value::RawValue::from_string(text).map_err(|e| {
            Error::Internal(format!("event {seq}: stored JSON does not parse: {e}"))
        })?;
        out.push((seq, raw));
    }
    Ok(out)
}

const DEFAULT_PAGE: u32 = 100;
const MAX_PAGE: u32 = 1_000;

/// The largest UI state a client may store under one key.
const UI_STATE_MAX: usize = 64 * 1024;

fn check_ui_key(method: &str, key: &str) -> Result<()> {
    if key.is_empty() || key.len() > 200 || key.chars().any(char::is_control) {
        return Err(Error::invalid(
            method,
            "key",
            "1 to 200 characters, no control characters".to_string(),
        ));
    }
    Ok(())
}

fn list_events(session: &Session, q: &EventsQuery) -> Result<EventsPage> {
    let limit = q.limit.unwrap_or(DEFAULT_PAGE);
    if limit == 0 || limit > MAX_PAGE {
        return Err(Error::invalid(
            "events.list",
            "limit",
            format!("must be 1 to {MAX_PAGE}"),
        ));
    }
    let mut sql = String::from(
        "SELECT seq, id, type, version, timestamp, source_kind, source_id, source_agent_type,
             route_json, payload_json
         FROM events WHERE seq > ?",
    );
    let after = i64::try_from(q.after_seq.unwrap_or(0)).unwrap_or(i64::MAX);
    let mut args: Vec<rusqlite::types::Value> = vec![after.into()];
    if let Some(types) = &q.types {
        if !types.is_empty() {
            let mut parts = Vec::new();
            for t in types {
                match t.strip_suffix(".*") {
                    Some(family) => {
                        parts.push("type LIKE ? ESCAPE '\\'");
                        let escaped = family
                            .replace('\\', "\\\\")
                            .replace('%', "\\%")
                            .replace('_', "\\_");
                        args.push(format!("{escaped}.%").into());
                    }
                    None => {
                        parts.push("type = ?");
                        args.push(t.clone().into());
                    }
                }
            }
            sql.push_str(&format!(" AND ({})", parts.join(" OR ")));
        }
    }
    for (column, value) in [("task_id", &q.task_id), ("agent_id", &q.agent_id)] {
        if let Some(v) = value {
            sql.push_str(&format!(" AND {column} = ?"));
            args.push(v.clone().into());
        }
    }
    for (field, op, value) in [("since", ">=", &q.since), ("until", "<", &q.until)] {
        if let Some(v) = value {
            // Stored timestamps are canonical (UTC, microseconds): so is the bound.
            let Some(bound) = air_proto::time::canonical(v) else {
                return Err(Error::invalid(
                    "events.list",
                    field,
                    format!("`{v}` is not an RFC 3339 timestamp"),
                ));
            };
            sql.push_str(&format!(" AND timestamp {op} ?"));
            args.push(bound.into());
        }
    }
    sql.push_str(" ORDER BY seq LIMIT ?");
    args.push((i64::from(limit) + 1).into());
    let conn = session.readers().get()?;
    let mut stmt = conn.prepare(&sql)?;
    let rows = stmt.query_map(params_from_iter(args.iter()), |r| {
        let source_kind: String = r.get(5)?;
        let agent_type: Option<String> = r.get(7)?;
        let route: String = r.get(8)?;
        let payload: String = r.get(9)?;
        Ok((
            r.get::<_, u64>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, String>(2)?,
            r.get::<_, u32>(3)?,
            r.get::<_, String>(4)?,
            source_kind,
            r.get::<_, Option<String>>(6)?,
            agent_type,
            route,
            payload,
        ))
    })?;
    let mut events = Vec::new();
    for row in rows {
        let (seq, id, ty, version, timestamp, kind, source_id, agent_type, route, payload) = row?;
        let corrupt = |what: &str, e: String| {
            Error::Internal(format!("event {seq}: stored {what} does not parse: {e}"))
        };
        let source = air_proto::event::EventSource {
            kind: serde_json::from_value(serde_json::Value::String(kind))
                .map_err(|e| corrupt("source kind", e.to_string()))?,
            id: source_id,
            agent_type: agent_type.and_then(|t| air_proto::event::AgentType::parse(&t)),
        };
        events.push(StoredEvent {
            seq,
            event: RuntimeEvent {
                id,
                event_type: ty,
                version,
                timestamp,
                session_id: session.id().to_string(),
                project_id: session.store().project_id().map(str::to_string),
                source,
                route: serde_json::from_str(&route).map_err(|e| corrupt("route", e.to_string()))?,
                payload: serde_json::from_str(&payload)
                    .map_err(|e| corrupt("payload", e.to_string()))?,
            },
        });
    }
    let next_after_seq = if events.len() > limit as usize {
        events.truncate(limit as usize);
        events.last().map(|e| e.seq)
    } else {
        None
    };
    Ok(EventsPage {
        events,
        next_after_seq,
    })
}

#[cfg(test)]
mod tests;
