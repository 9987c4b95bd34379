//! `airsd`: the daemon binary. A thin shell over the `airsd` library: arguments, the
//! environment, logging, and the process's exit code.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use airsd::daemon::{self, DaemonConfig};
use clap::Parser;

/// The per-project air daemon. Clients start it on demand; service managers run it with
/// --foreground.
#[derive(Parser)]
#[command(name = "airsd", version, after_help = EXIT_CODES)]
struct Args {
    /// The project root (default: the project containing the current directory).
    #[arg(long, value_name = "DIR")]
    project: Option<PathBuf>,
    /// Stay attached to the terminal and log to stderr (for systemd, launchd, debugging).
    #[arg(long)]
    foreground: bool,
    /// Start a new session (setsid), detached from the caller's terminal; log to
    /// .air/local/logs/airsd.log. Used when a client starts the daemon.
    #[arg(long, conflicts_with = "foreground")]
    detached: bool,
    /// Exit after this many seconds without clients and running work (0: never).
    #[arg(long, value_name = "SECS", default_value_t = 1800)]
    idle_timeout: u64,
    /// The worker program agents run in (default: `air-worker` beside airsd; env
    /// AIR_WORKER).
    #[arg(long, value_name = "PATH", env = "AIR_WORKER")]
    worker: Option<PathBuf>,
    /// How often workers send heartbeats, in milliseconds.
    #[arg(
        long,
        value_name = "MS",
        env = "AIR_HEARTBEAT_MS",
        default_value_t = 5_000
    )]
    heartbeat_ms: u64,
    /// A worker silent this long (milliseconds) is killed as stalled.
    #[arg(
        long,
        value_name = "MS",
        env = "AIR_STALL_MS",
        default_value_t = 120_000
    )]
    stall_ms: u64,
    /// How long a permission request may wait for a person before it is denied
    /// (milliseconds).
    #[arg(
        long,
        value_name = "MS",
        env = "AIR_ASK_TIMEOUT_MS",
        default_value_t = 600_000
    )]
    ask_timeout_ms: u64,
    /// How long a cancelled worker has to exit before it is killed (milliseconds).
    #[arg(
        long,
        value_name = "MS",
        env = "AIR_CANCEL_GRACE_MS",
        default_value_t = 5_000
    )]
    cancel_grace_ms: u64,
}

const EXIT_CODES: &str = "Exit codes:\n  0  stopped normally\n  1  failed (see the log)\n  2  not in a project, or bad arguments\n  3  another airsd already serves this project";

/// Size at which the log is rotated, and how many old logs are kept.
const LOG_ROTATE_BYTES: u64 = 10 * 1024 * 1024;
const LOG_KEEP: usize = 3;

fn main() -> ExitCode {
    // `airsd __sandbox …`: the launcher of sandboxed commands, not the daemon.
    let raw: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if raw.get(1).is_some_and(|a| a == airsd::sandbox::ARG) {
        let code = airsd::sandbox::launch(&raw[2..]);
        return ExitCode::from(u8::try_from(code).unwrap_or(1));
    }
    // `airsd __dependencies …`: what this machine has of what air needs, for `air doctor`.
    if raw
        .get(1)
        .is_some_and(|a| a == airsd::project::dependencies::ARG)
    {
        let code = airsd::project::dependencies::main(&raw[2..]);
        return ExitCode::from(u8::try_from(code).unwrap_or(1));
    }
    // `airsd __mcp …`: the MCP servers' state and OAuth sign-in, for `air mcp`.
    if raw.get(1).is_some_and(|a| a == airsd::mcp::probe::ARG) {
        let code = airsd::mcp::probe::main(&raw[2..]);
        return ExitCode::from(u8::try_from(code).unwrap_or(1));
    }
    // `airsd __migrate …`: `air migrate`'s plan and its work, with no daemon running.
    if raw
        .get(1)
        .is_some_and(|a| a == airsd::project::migrate::ARG)
    {
        let code = airsd::project::migrate::main(&raw[2..]);
        return ExitCode::from(u8::try_from(code).unwrap_or(1));
    }
    // `airsd __scan …`: the project scan and its detected profile, for `air init`.
    if raw
        .get(1)
        .is_some_and(|a| a == airsd::project::project_profile::ARG)
    {
        let code = airsd::project::project_profile::main(&raw[2..]);
        return ExitCode::from(u8::try_from(code).unwrap_or(1));
    }
    // `airsd __propose …`: the Main Agent's proposal of the profile, for `air init`.
    if raw
        .get(1)
        .is_some_and(|a| a == airsd::project::profile_proposal::ARG)
    {
        let worker = airsd::agents::supervisor::WorkerCommand {
            program: worker_program(std::env::var_os("AIR_WORKER").map(PathBuf::from)),
            args: Vec::new(),
            env: airsd::agents::supervisor::worker_env(std::env::vars_os()),
            cancel_grace: Duration::from_secs(2),
            queue: 256,
        };
        let code = airsd::project::profile_proposal::main(&raw[2..], &worker);
        return ExitCode::from(u8::try_from(code).unwrap_or(1));
    }
    let args = Args::parse();
    if args.detached {
        // A new session: no controlling terminal, our own process group.
        let _ = nix::unistd::setsid();
    }
    let cwd = match std::env::current_dir() {
        Ok(d) => d,
        Err(e) => {
            eprintln!("airsd: cannot read the current directory: {e}");
            return ExitCode::from(2);
        }
    };
    let root = match &args.project {
        Some(p) => p.clone(),
        None => match air_proto::layout::find_root(&cwd) {
            Ok(paths) => paths.root().to_path_buf(),
            Err(e) => {
                eprintln!("airsd: {e}");
                return ExitCode::from(2);
            }
        },
    };
    let paths = air_proto::layout::ProjectPaths::new(&root);
    // The user's files: $AIR_HOME, else ~/.air.
    let air_home = airsd::air_home();
    // Writes the developer log's last lines when main returns.
    let _developer_log = match init_logging(&paths.logs(), !args.foreground, air_home.as_deref()) {
        Ok(guard) => guard,
        Err(e) => {
            eprintln!("airsd: cannot open the log: {e}");
            return ExitCode::from(1);
        }
    };
    let runtime_dir = std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .filter(|d| d.is_dir())
        .unwrap_or_else(std::env::temp_dir);
    let worker = worker_program(args.worker.clone());
    let mut shell =
        airsd::scheduler::shell::ShellConfig::new(airsd::agents::supervisor::WorkerCommand {
            program: worker,
            args: Vec::new(),
            env: airsd::agents::supervisor::worker_env(std::env::vars_os()),
            cancel_grace: Duration::from_millis(args.cancel_grace_ms),
            queue: 1024,
        });
    shell.heartbeat_interval_ms = args.heartbeat_ms.max(10);
    shell.core.ask_timeout_ms = args.ask_timeout_ms;
    // The user's defaults: $AIR_HOME/config.yaml, else ~/.air/config.yaml.
    shell.air_home = air_home.clone();
    shell.sandbox_exe = std::env::current_exe().ok();
    if let Some(home) = air_home {
        match air_proto::config::UserConfig::load(&home) {
            Ok(config) => {
                shell.defaults = config.run;
                shell.worktree_limits = config.worktrees;
            }
            Err(e) => {
                tracing::error!("{e}");
                airsd::ops::userlog::note(
                    &home,
                    &root,
                    &format!("the configuration cannot be read, so runs are refused until it is fixed: {e}"),
                );
                shell.config_error = Some(e.to_string());
            }
        }
    }
    shell.core.stall_ms = args.stall_ms.max(shell.heartbeat_interval_ms * 2);
    let air_home_for_log = shell.air_home.clone();
    let project_for_log = root.clone();
    let config = DaemonConfig {
        project_root: root,
        idle_timeout: Duration::from_secs(args.idle_timeout),
        runtime_dir,
        inherited: inherited_listener(),
        shell: Some(shell),
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            tracing::error!(error = %e, "cannot start the runtime");
            eprintln!("airsd: cannot start the runtime: {e}");
            return ExitCode::from(1);
        }
    };
    match runtime.block_on(daemon::run(config)) {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = %e, "airsd failed");
            eprintln!("airsd: {e}");
            // Another daemon serving the project is no failure of the user's.
            if let Some(home) = &air_home_for_log {
                if e.exit_code() != 3 {
                    airsd::ops::userlog::note(
                        home,
                        &project_for_log,
                        &format!("the daemon could not start: {e}"),
                    );
                }
            }
            ExitCode::from(e.exit_code())
        }
    }
}

/// The worker program: `given` (`--worker`, `AIR_WORKER`), else `air-worker` beside
/// airsd.
fn worker_program(given: Option<PathBuf>) -> PathBuf {
    given
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or_else(|| {
            std::env::current_exe()
                .ok()
                .and_then(|exe| exe.parent().map(|d| d.join("air-worker")))
                .unwrap_or_else(|| PathBuf::from("air-worker"))
        })
}

/// Logs to stderr, or (detached) to `logs/airsd.log`, rotated by size. The level comes
/// from `AIR_LOG` (EnvFilter syntax, default `info`).
fn init_logging(
    dir: &Path,
    to_file: bool,
    air_home: Option<&Path>,
) -> std::io::Result<Option<airsd::ops::devlog::FlushGuard>> {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    use tracing_subscriber::Layer;
    // The RPC layer logs whole requests at its finer levels, and `run.start` carries
    // the client's provider keys: never below info, in either log, whatever AIR_LOG says.
    let rpc_at_info = |mut filter: tracing_subscriber::EnvFilter| {
        for target in ["jsonrpsee", "jsonrpsee_server", "jsonrpsee_core"] {
            if let Ok(d) = format!("{target}=info").parse() {
                filter = filter.add_directive(d);
            }
        }
        filter
    };
    let filter = rpc_at_info(
        tracing_subscriber::EnvFilter::try_from_env("AIR_LOG")
            .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
    );
    let own: Box<dyn Layer<_> + Send + Sync> = if to_file {
        let log = airsd::ops::logfile::RotatingLog::open(
            &dir.join("airsd.log"),
            LOG_ROTATE_BYTES,
            LOG_KEEP,
        )?;
        tracing_subscriber::fmt::layer()
            .with_ansi(false)
            .with_writer(std::sync::Mutex::new(log))
            .with_filter(filter)
            .boxed()
    } else {
        tracing_subscriber::fmt::layer()
            .with_ansi(false)
            .with_writer(std::io::stderr)
            .with_filter(filter)
            .boxed()
    };
    // The developer log: air's own code at debug, encrypted (D-035).
    let developer = match air_home.map(airsd::ops::devlog::DeveloperLog::open) {
        Some(Ok(log)) => log,
        Some(Err(e)) => {
            eprintln!("airsd: the developer log is off: {e}");
            None
        }
        None => None,
    };
    let (developer_layer, guard) = match developer {
        Some((log, guard)) => (
            Some(
                tracing_subscriber::fmt::layer()
                    .with_ansi(false)
                    .with_writer(log)
                    .with_filter(rpc_at_info(tracing_subscriber::EnvFilter::new(
                        "info,airsd=debug,air_proto=debug",
                    ))),
            ),
            Some(guard),
        ),
        None => (None, None),
    };
    tracing_subscriber::registry()
        .with(own)
        .with(developer_layer)
        .init();
    Ok(guard)
}

/// The listening socket a service manager passed (systemd's `LISTEN_FDS` protocol: the
/// first passed descriptor is 3), if any and if meant for this process.
fn inherited_listener() -> Option<std::os::unix::net::UnixListener> {
    let pid: u32 = std::env::var("LISTEN_PID").ok()?.parse().ok()?;
    let fds: u32 = std::env::var("LISTEN_FDS").ok()?.parse().ok()?;
    if pid != std::process::id() || fds < 1 {
        return None;
    }
    take_fd_3()
}

#[allow(unsafe_code)]
fn take_fd_3() -> Option<std::os::unix::net::UnixListener> {
    use std::os::fd::{FromRawFd, OwnedFd};
    // SAFETY: under the LISTEN_FDS protocol, checked above to be addressed to this
    // process, descriptor 3 is an open socket handed to us; nothing else in this process
    // owns it, and it is taken exactly once, here.
    let fd = unsafe { OwnedFd::from_raw_fd(3) };
    Some(std::os::unix::net::UnixListener::from(fd))
}
