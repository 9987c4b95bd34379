//! The daemon: one per project, serving the JSON-RPC API on the project's socket.
//!
//! [`run`] takes the project lock, binds (or adopts) the socket, and accepts
//! connections until it is told to stop — by `daemon.shutdown`, SIGTERM/SIGINT, or an
//! idle period with no clients and no running work. Stopping is graceful: no new
//! connections, the socket file goes, clients are told, in-flight writes commit.

mod artifacts;
mod capabilities;
mod conn;
mod conversation;
mod env;
mod hooks;
mod land;
mod lifecycle;
mod memory;
mod planning;
mod recording;
mod rpc;
mod runs;
pub mod socket;
mod state;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use air_proto::api::AirApi;
use air_proto::layout::ProjectPaths;
use tokio::signal::unix::{signal, SignalKind};

pub use crate::project::lock::{DaemonLock, LockError};
pub use conversation::Caller;
pub use rpc::{rpc_error, DaemonRpc, Peer};
pub use state::{DaemonState, MOST_OPEN_SESSIONS};

/// Largest request or response body, and so the largest frame a client can send.
pub const MAX_BODY: u32 = air_proto::api::MAX_MESSAGE_BYTES;
/// Simultaneous client connections (each is a few KiB; a fd each).
pub const MAX_CONNECTIONS: u32 = 1_000;
/// An open session nobody uses for this long is closed (it reopens on demand).
const SESSION_IDLE: Duration = Duration::from_secs(300);
/// How long a graceful stop waits for connections to finish.
const STOP_GRACE: Duration = Duration::from_secs(5);

pub struct DaemonConfig {
    pub project_root: PathBuf,
    /// Exit after this long with no clients and no running work; zero means never.
    pub idle_timeout: Duration,
    /// Parent of the fallback socket directory for deep projects (the user's runtime
    /// directory, or the system's temporary directory).
    pub runtime_dir: PathBuf,
    /// A listening socket handed over by a service manager (socket activation).
    pub inherited: Option<std::os::unix::net::UnixListener>,
    /// How plans are run; `None` refuses `run.start`.
    pub shell: Option<crate::scheduler::shell::ShellConfig>,
}

#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    #[error(transparent)]
    Project(#[from] air_proto::layout::LayoutError),
    #[error(transparent)]
    Lock(#[from] LockError),
    #[error("cannot listen: {0}")]
    Socket(#[from] socket::SocketError),
    #[error("cannot install signal handlers: {0}")]
    Signals(std::io::Error),
    #[error("cannot register the API's methods: {0}")]
    Methods(#[from] jsonrpsee::core::RegisterMethodError),
}

impl DaemonError {
    /// The process exit code for this failure.
    pub fn exit_code(&self) -> u8 {
        match self {
            DaemonError::Lock(LockError::Held { .. }) => 3,
            DaemonError::Project(_) => 2,
            _ => 1,
        }
    }
}

/// Why the accept loop ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopReason {
    Requested,
    Signal,
    Idle,
}

/// Runs the daemon until it stops.
pub async fn run(config: DaemonConfig) -> Result<StopReason, DaemonError> {
    let paths = ProjectPaths::new(&config.project_root);
    let project = paths.read_project()?;
    paths.ensure_local()?;
    let lock = DaemonLock::acquire(&paths.locks().join("airsd.lock"))?;
    // The previous daemon of the project left its mark: it did not stop as it should.
    let abnormal = running_mark(&paths);
    let inherited = config.inherited.is_some();
    let (listener, socket_path) = match config.inherited {
        Some(l) => socket::adopt(l)?,
        None => socket::bind(&paths, &project.project_id, &config.runtime_dir)?,
    };
    let mut sigterm = signal(SignalKind::terminate()).map_err(DaemonError::Signals)?;
    let mut sigint = signal(SignalKind::interrupt()).map_err(DaemonError::Signals)?;
    tracing::info!(pid = std::process::id(), socket = %socket_path.display(), project = %paths.root().display(), "airsd listening");
    if let Some(previous) = &abnormal {
        tracing::error!("{previous}");
        if let Some(home) = config.shell.as_ref().and_then(|s| s.air_home.as_deref()) {
            crate::ops::userlog::note(home, paths.root(), previous);
        }
    }

    let mut state = DaemonState::new(
        paths.clone(),
        project,
        socket_path.clone(),
        config.idle_timeout,
    );
    state.last_abnormal_exit = abnormal;
    if let Some(shell) = config.shell.clone() {
        state = state.with_shell(shell);
    }
    let state = Arc::new(state);
    // The empty session database new sessions are copied from, made before the first
    // is asked for (a failure is said when a session is created).
    tokio::task::spawn_blocking(|| crate::db::template().map(|_| ()));
    // What the sandbox can do here, probed before the first run needs it.
    if let Some(exe) = config.shell.as_ref().and_then(|s| s.sandbox_exe.clone()) {
        tokio::task::spawn_blocking(move || crate::sandbox::protections(&exe));
    }
    // The models a conversation's agents use, asked of the worker before the first
    // conversation asks.
    tokio::spawn({
        let state = state.clone();
        async move { state.warm_models().await }
    });
    // Runs that did not end before the last stop go on.
    state.recover_runs().await;
    // The project scan, again for what changed since the last (D-022): off the async
    // threads, and no one waits for it; stopped, keeping nothing, when the daemon stops
    // (a late write must not land after the lock is released).
    let scan_stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    // On a thread of its own at a lower CPU priority: the first requests of the
    // people and runs that started the daemon come first.
    let (scan_done, scan_task) = tokio::sync::oneshot::channel::<()>();
    let scanning = {
        let paths = paths.clone();
        let stop = scan_stop.clone();
        std::thread::Builder::new()
            .name("air-scan".into())
            .spawn(move || {
                lower_priority();
                match crate::project::project_profile::scan_and_profile_until(&paths, &stop) {
                    Ok(r) => tracing::info!(
                        files = r.scan.files,
                        dirs_read = r.scan.dirs_read,
                        elapsed_ms = r.scan.elapsed_ms,
                        complete = r.scan.complete,
                        "project scanned"
                    ),
                    Err(e) => tracing::info!(error = %e, "project scan not kept"),
                }
                let _ = scan_done.send(());
            })
    };
    if let Err(e) = scanning {
        tracing::warn!("cannot start the project scan: {e}");
    }
    let methods = DaemonRpc {
        state: state.clone(),
    }
    .into_rpc()?;
    let (stop_handle, server_handle) = jsonrpsee::server::stop_channel();
    let server_config = jsonrpsee::server::ServerConfig::builder()
        .max_request_body_size(MAX_BODY)
        .max_response_body_size(MAX_BODY)
        // Messages queued per connection before a slow reader holds up its sender (and
        // then, past the bus's bound, gets a resync): with batches of up to 64 deltas this
        // bounds a stalled client's backlog in the daemon to a few MiB.
        .set_message_buffer_capacity(128)
        .max_connections(MAX_CONNECTIONS)
        .build();
    let builder = jsonrpsee::server::Server::builder()
        .set_config(server_config)
        .to_service_builder();
    let my_uid = nix::unistd::getuid().as_raw();
    let mut shutdown = state.shutdown_requested();
    let mut idle_check = tokio::time::interval(Duration::from_secs(1));
    let mut session_sweep = tokio::time::interval(SESSION_IDLE / 4);
    // The Curator's weekly pass (D-024) is looked at hourly, first a minute after start.
    let mut curator = tokio::time::interval_at(
        tokio::time::Instant::now() + Duration::from_secs(60),
        Duration::from_secs(3_600),
    );
    let mut connections = tokio::task::JoinSet::new();
    let mut next_conn = 0u64;

    let reason = loop {
        tokio::select! {
            accepted = listener.accept() => {
                let stream = match accepted {
                    Ok((stream, _)) => stream,
                    Err(e) => {
                        tracing::warn!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let cred = match stream.peer_cred() {
                    Ok(c) => c,
                    Err(e) => {
                        tracing::warn!(error = %e, "cannot read the peer's credentials; connection refused");
                        continue;
                    }
                };
                if cred.uid() != my_uid {
                    tracing::warn!(uid = cred.uid(), pid = ?cred.pid(), "connection from another user refused");
                    continue;
                }
                if cred.pid().is_some_and(sandboxed_peer) {
                    tracing::warn!(pid = ?cred.pid(), "connection from a sandboxed command (another PID namespace) refused");
                    continue;
                }
                next_conn += 1;
                let peer = Peer { conn: next_conn, pid: cred.pid().and_then(|p| u32::try_from(p).ok()) };
                state.connection_opened();
                let rpc_service = builder.clone().build(methods.clone(), stop_handle.clone());
                // A WebSocket outlives the HTTP exchange that upgraded it: the connection
                // ends when its session closes, not when `serve` returns.
                let upgraded = Arc::new(AtomicBool::new(false));
                let service = conn::PeerService { inner: rpc_service, peer, state: state.clone(), upgraded: upgraded.clone() };
                let stopped = stop_handle.clone().shutdown();
                let state = state.clone();
                connections.spawn(async move {
                    if let Err(e) = jsonrpsee::server::serve_with_graceful_shutdown(stream, service, stopped).await {
                        tracing::debug!(conn = peer.conn, error = %e, "connection ended");
                    }
                    if !upgraded.load(Ordering::SeqCst) {
                        state.connection_closed(peer.conn);
                    }
                });
            }
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            _ = shutdown.changed() => break StopReason::Requested,
            _ = sigterm.recv() => break StopReason::Signal,
            _ = sigint.recv() => break StopReason::Signal,
            _ = session_sweep.tick() => state.close_idle_sessions(SESSION_IDLE).await,
            _ = curator.tick() => {
                let state = state.clone();
                tokio::spawn(async move {
                    state.curate_if_due().await;
                    state.prune_if_due().await;
                });
            }
            _ = idle_check.tick() => {
                if !config.idle_timeout.is_zero() && state.idle_for().is_some_and(|idle| idle >= config.idle_timeout) {
                    break StopReason::Idle;
                }
            }
        }
    };
    tracing::info!(?reason, "airsd stopping");
    // Asked to stop: clients that lose the connection now leave the daemon stopped
    // (an attached terminal says so instead of starting another).
    if matches!(reason, StopReason::Requested | StopReason::Signal) {
        let said = format!("stopped {} ({reason:?})", air_proto::time::now_iso());
        if let Err(e) = std::fs::write(paths.daemon_stopped(), said) {
            tracing::warn!("cannot write {}: {e}", paths.daemon_stopped().display());
        }
    }

    // No new connections: close the listener and remove its file first.
    drop(listener);
    if !inherited {
        let _ = std::fs::remove_file(&socket_path);
    }
    // Tell every client, let in-flight requests finish.
    let _ = server_handle.stop();
    // WebSocket sessions run outside the connection tasks: wait for the count too.
    let drained = tokio::time::timeout(STOP_GRACE, async {
        while connections.join_next().await.is_some() {}
        while state.connections() > 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    if drained.is_err() {
        tracing::warn!("connections still open after the grace period; closing them");
        connections.abort_all();
    }
    // Schedulers stop (their workers are killed; the runs resume at the next start),
    // then queued writes commit and writer threads end.
    state.stop_runs().await;
    state.close_sessions().await;
    scan_stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let _ = scan_task.await;
    // Stopped as it should: the next start finds no mark.
    let _ = std::fs::remove_file(paths.state().join(RUNNING_MARK));
    tracing::info!("airsd stopped");
    // What the developer log gathered is on disk before anyone sees the lock free.
    crate::ops::devlog::flush_open();
    drop(lock);
    Ok(reason)
}

/// The file a running daemon keeps in `.air/local/state/`: its pid and start time,
/// removed when it stops as it should.
const RUNNING_MARK: &str = "airsd.running";

/// What the mark of a daemon that did not stop as it should says (a crash, a kill,
/// a power loss), read before this daemon puts down its own.
fn running_mark(paths: &ProjectPaths) -> Option<String> {
    // A daemon runs again: clients may reconnect.
    let _ = std::fs::remove_file(paths.daemon_stopped());
    let path = paths.state().join(RUNNING_MARK);
    let previous = std::fs::read_to_string(&path).ok();
    let mine = format!(
        "pid {} started {}",
        std::process::id(),
        air_proto::time::now_iso()
    );
    if let Err(e) =
        std::fs::create_dir_all(paths.state()).and_then(|()| std::fs::write(&path, &mine))
    {
        tracing::warn!("cannot write {}: {e}", path.display());
    }
    previous.map(|p| {
        format!(
            "the project's previous daemon ({}) ended without stopping (a crash, a kill or a power loss); its log is .air/local/logs/airsd.log",
            p.trim()
        )
    })
}

/// Whether a peer runs in another PID namespace than the daemon: a command in the
/// sandbox of an airsd (of this project or another), which may never drive a daemon.
/// A peer whose namespace cannot be read is let through (the uid check holds).
fn sandboxed_peer(pid: i32) -> bool {
    let ns = |p: &str| std::fs::read_link(format!("/proc/{p}/ns/pid")).ok();
    match (ns("self"), ns(&pid.to_string())) {
        (Some(mine), Some(theirs)) => mine != theirs,
        _ => false,
    }
}

/// Lowers the calling thread's CPU priority by 10 nice levels (to 19 at most), for work
/// nobody waits for.
#[allow(unsafe_code)]
fn lower_priority() {
    #[cfg(target_os = "linux")]
    {
        let tid = nix::unistd::gettid().as_raw() as libc::id_t;
        // SAFETY: plain syscalls on this thread's own id, with no pointers; a failure
        // leaves the thread as it was. (A nice of -1 reads as an error too: the
        // thread then goes to 9, still lower.)
        let rc = unsafe {
            let now = libc::getpriority(libc::PRIO_PROCESS, tid);
            libc::setpriority(libc::PRIO_PROCESS, tid, (now + 10).min(19))
        };
        if rc != 0 {
            tracing::debug!(
                "the scan keeps its priority: {}",
                std::io::Error::last_os_error()
            );
        }
    }
}
