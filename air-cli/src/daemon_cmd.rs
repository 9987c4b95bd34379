//! `air daemon start|stop|restart|status`.

use std::time::{Duration, Instant};

use air_proto::api::AirApiClient;
use air_proto::client::{connect_running, ClientError};
use clap::Subcommand;

use crate::{connect_options, exit, project, unreachable, CmdResult, Failure};

#[derive(Subcommand)]
pub enum DaemonCommand {
    /// Start the daemon (nothing to do if it runs).
    Start,
    /// Stop the daemon gracefully: in-flight writes commit, clients are told.
    Stop,
    /// Stop, then start.
    Restart,
    /// pid, version, uptime, socket, sessions, clients, workers, memory.
    Status {
        #[arg(long, help = crate::JSON_HELP)]
        json: bool,
    },
    /// Write a service-manager unit that runs this project's daemon (systemd user units
    /// on Linux, a launchd agent on macOS) and print how to enable it.
    InstallService {
        /// Keep this shell's provider settings (keys, base URLs, AIR_MODEL) in
        /// ~/.air/service.env, readable by you alone, so that a run resumed after a
        /// reboot reaches its model (asked at a terminal; never otherwise).
        #[arg(long)]
        keep_keys: bool,
    },
}

pub async fn run(command: DaemonCommand) -> CmdResult {
    match command {
        DaemonCommand::Start => start().await,
        DaemonCommand::Stop => stop().await,
        DaemonCommand::Restart => {
            stop().await?;
            start().await
        }
        DaemonCommand::InstallService { keep_keys } => {
            crate::service::install(&project()?, keep_keys)
        }
        DaemonCommand::Status { json } => {
            let options = connect_options(project()?);
            let conn = connect_running(&options).await.map_err(|e| match e {
                ClientError::Unreachable { socket, .. } => Failure {
                    code: exit::UNREACHABLE,
                    message: format!(
                        "no daemon running (nothing answers on {}); `air daemon start` starts one",
                        socket.display()
                    ),
                },
                e => unreachable(e),
            })?;
            let status = conn
                .client
                .status(air_proto::api::params::NoParams {})
                .await?;
            crate::output::print_daemon_status(&status, json)
        }
    }
}

async fn start() -> CmdResult {
    let conn = air_proto::client::connect(&connect_options(project()?))
        .await
        .map_err(unreachable)?;
    let verb = if conn.started_daemon {
        "started"
    } else {
        "already running:"
    };
    outln!(
        "airsd {verb} pid {} on {}",
        conn.hello.pid,
        conn.socket.display()
    );
    Ok(())
}

/// Stops the daemon with SIGTERM (the same graceful stop as `daemon.shutdown`), found
/// through its lock rather than the socket: this works with a daemon of another
/// protocol version too, which is what `air daemon restart` is for.
pub(crate) async fn stop() -> CmdResult {
    let paths = project()?;
    let lock = paths.locks().join("airsd.lock");
    if !lock_held(&lock) {
        outln!("no daemon running");
        return Ok(());
    }
    let pid: i32 = std::fs::read_to_string(&lock)
        .ok()
        .and_then(|t| t.trim().parse().ok())
        .ok_or_else(|| {
            Failure::from(format!(
                "{}: no pid in the daemon's lock file",
                lock.display()
            ))
        })?;
    match nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGTERM,
    ) {
        Ok(()) | Err(nix::errno::Errno::ESRCH) => {}
        Err(e) => {
            return Err(Failure::from(format!(
                "cannot signal airsd (pid {pid}): {e}"
            )))
        }
    }
    // Stopped when its lock is free, its process gone, or the lock names another
    // daemon: a client that was attached (`air run`) may start the next one at once.
    let deadline = Instant::now() + Duration::from_secs(15);
    let alive = || {
        matches!(
            nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None),
            Ok(()) | Err(nix::errno::Errno::EPERM)
        )
    };
    while lock_held(&lock) && alive() && lock_pid(&lock) == Some(pid) {
        if Instant::now() > deadline {
            return Err(Failure::from(format!(
                "airsd (pid {pid}) is still stopping after 15 s; see {}",
                paths.daemon_log().display()
            )));
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    outln!("airsd (pid {pid}) stopped");
    Ok(())
}

/// The pid the daemon's lock file names.
fn lock_pid(path: &std::path::Path) -> Option<i32> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// Whether a live process holds the daemon's lock (a non-blocking shared lock fails
/// while the daemon holds its exclusive one; the kernel drops it when the daemon ends).
pub(crate) fn lock_held(path: &std::path::Path) -> bool {
    let Ok(file) = std::fs::File::open(path) else {
        return false;
    };
    nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockSharedNonblock).is_err()
}
