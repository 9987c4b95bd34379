//! `air`: the command-line client. It never opens SQLite and never spawns workers; what
//! it cannot do from the project's files it asks airsd for, starting airsd when none
//! runs.

#[macro_use]
mod stdout;

mod acp;
mod args;
mod branch_cmd;
mod bundle;
mod capability_cmd;
mod chat_cmd;
mod daemon_cmd;
mod doctor;
mod example;
mod help;
mod hidden;
mod hooks_cmd;
mod knowledge_cmd;
mod mcp_cmd;
mod memory_cmd;
mod migrate_cmd;
mod output;
mod plan_cmd;
mod plan_new;
mod profile_cmd;
mod restore_cmd;
mod run_cmd;
mod service;
mod setup;

use std::path::PathBuf;
use std::process::ExitCode;

use air_proto::client::{ClientError, ConnectOptions, Connection};
use air_proto::layout::{self, ProjectPaths};
use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

/// Exit codes of `air`.
pub mod exit {
    pub const OK: u8 = 0;
    pub const FAILED: u8 = 1;
    pub const USAGE: u8 = 2;
    /// The daemon could not be reached or started.
    pub const UNREACHABLE: u8 = 4;
}

/// The help of every command's `-s/--session`.
const SESSION_HELP: &str =
    "The session: its id or the start of it, as `air sessions` lists them (default: the newest)";

/// The help of every command's `--json`.
pub(crate) const JSON_HELP: &str = "Print JSON for programs instead of text";

const EXIT_CODES: &str = "Exit codes:\n  0  success\n  1  the command failed\n  2  usage or plan error\n  4  the daemon could not be reached or started";

#[derive(Parser)]
#[command(name = "air", version, about = "air: a multi-agent coding runtime", after_help = EXIT_CODES)]
pub(crate) struct Cli {
    /// With none, `air` opens the conversation of the newest session in `air attach`
    /// (starting one when the project has none); with no model configured, a
    /// first-run screen that says how to set one and plays the shipped examples.
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Make this directory an air project (safe to run again).
    ///
    /// Creates .air/shared and .air/local and gitignores .air/local/, scans the tree,
    /// has the Main Agent propose the project's profile from the scan when a model is
    /// configured, shows it to confirm (at a terminal), and says what air needs that
    /// is missing.
    Init {
        /// The project root (default: the current directory).
        #[arg(long, value_name = "DIR")]
        path: Option<PathBuf>,
        #[command(flatten)]
        ask: profile_cmd::Ask,
    },
    /// Print the root of the project containing the current directory.
    Root,
    /// The terminal UI on a session: tasks, agents, conversation, live.
    ///
    /// Answer permission requests, talk, cancel, pause. Several terminals may attach
    /// to one session; detaching (q) stops nothing.
    Attach {
        /// The session: its id or the start of it (default: the newest with a run
        /// going, else the newest).
        #[arg(short, long, value_name = "ID")]
        session: Option<String>,
        /// dark, light, or a theme of ~/.air/themes/NAME.json (default: `attach.theme`
        /// in ~/.air/config.yaml, else dark).
        #[arg(long, value_name = "NAME")]
        theme: Option<String>,
    },
    /// What air finds here and what is missing.
    ///
    /// The project, the daemon, the configuration files, what air and the project's
    /// languages need installed, the providers and the model each agent would use
    /// (exit 1 when a run could not start).
    Doctor {
        #[arg(long, help = JSON_HELP)]
        json: bool,
        /// Offer to install what is missing: each command is shown and asked about
        /// before it runs (also `air setup`).
        #[arg(long)]
        fix: bool,
        /// With --fix: run the package manager's commands after showing them, without
        /// asking. Credentials and system security settings are still asked about.
        #[arg(long, requires = "fix")]
        yes: bool,
        /// Also write a diagnostic bundle (versions, platform, this report, the
        /// configuration and the daemon's log, secrets taken out) to FILE, to read and
        /// send yourself; nothing is sent anywhere.
        #[arg(long, value_name = "FILE")]
        bundle: Option<std::path::PathBuf>,
    },
    /// The project's profile: languages, build and test commands, conventions.
    ///
    /// Layout and conventions too, as agents are told them.
    Profile {
        #[command(subcommand)]
        command: profile_cmd::ProfileCommand,
    },
    /// Bring this project's .air to this air's schema.
    ///
    /// project.json and each session's database: shows the plan and asks; backs up,
    /// migrates, verifies, and puts everything back on any failure.
    Migrate {
        /// Migrate without asking (the answer given ahead).
        #[arg(long)]
        yes: bool,
    },
    /// Install what air and the project need, asking first.
    ///
    /// The same as `air doctor --fix`: each command is shown and asked about before it
    /// runs.
    Setup {
        /// Run the package manager's commands after showing them, without asking.
        /// Credentials and system security settings are still asked about.
        #[arg(long)]
        yes: bool,
    },
    /// Start, stop or inspect the project's daemon (airsd).
    Daemon {
        #[command(subcommand)]
        command: daemon_cmd::DaemonCommand,
    },
    /// The daemon and the newest run at a glance.
    ///
    /// Starts the daemon if needed.
    Status {
        #[arg(long, help = JSON_HELP)]
        json: bool,
    },
    /// The skills agents are shown and may load.
    ///
    /// `air skills list` lists them.
    Skills {
        #[command(subcommand)]
        command: knowledge_cmd::SkillsCommand,
    },
    /// The commands air runs at points of a session (hooks), and trusting the project's.
    ///
    /// Yours from ~/.air/hooks.yaml, the project's from .air/shared/hooks.yaml and
    /// .claude/settings.json, with Claude Code's events and JSON (docs/hooks.md). A
    /// project's hook runs once you trusted it as it is (`air hooks trust`).
    Hooks {
        #[command(subcommand)]
        command: Option<hooks_cmd::HooksCommand>,
    },
    /// The MCP servers whose tools agents call.
    ///
    /// Yours from ~/.air/mcp.yaml, the project's from .air/shared/mcp.yaml and
    /// .mcp.json (docs/mcp.md). A project's server starts once you trusted it as it
    /// is (`air mcp trust`); `air mcp list` shows each and whether it starts.
    Mcp {
        #[command(subcommand)]
        command: Option<mcp_cmd::McpCommand>,
    },
    /// Capabilities: folders that add MCP servers, skills, hooks and rules.
    ///
    /// Installed for you (~/.air/capabilities/) or the project
    /// (.air/shared/capabilities/) with `air capability add PATH|GIT`, trusted as
    /// they are; one that changed adds nothing until trusted again (docs/capabilities.md).
    Capability {
        #[command(subcommand)]
        command: Option<capability_cmd::CapabilityCommand>,
    },
    /// What air learned about you and the project.
    ///
    /// List, show, promote, forget, curate, export (`air memory export
    /// --project-rules AIR.md`).
    Memory {
        #[command(subcommand)]
        command: memory_cmd::MemoryCommand,
    },
    /// What the project's debuggers found.
    ///
    /// The project's debug knowledge (`air debug search`).
    Debug {
        #[command(subcommand)]
        command: knowledge_cmd::DebugCommand,
    },
    /// List the project's sessions, newest first; or archive or delete one.
    Sessions {
        #[command(subcommand)]
        action: Option<SessionsAction>,
        #[arg(long, help = JSON_HELP)]
        json: bool,
    },
    /// A session's events as JSON lines or text; -f follows.
    ///
    /// Text for people, `--json` one object per line for programs; `--follow` keeps
    /// printing new ones.
    Events {
        #[arg(long, short = 's', value_name = "ID", help = SESSION_HELP)]
        session: Option<String>,
        /// Only these types (repeatable; `task.*` for a family).
        #[arg(long = "type", short = 't', value_name = "TYPE")]
        types: Vec<String>,
        /// Keep printing events as they happen.
        #[arg(long, short = 'f')]
        follow: bool,
        /// One JSON object per line.
        #[arg(long, help = JSON_HELP)]
        json: bool,
    },
    /// A session's events in words, one line each; -f follows.
    ///
    /// What happened, as a person reads it: tasks starting and ending, each tool
    /// call and command with its result, evidence, merges, permissions.
    /// `air events` has the same events as JSON.
    Log {
        #[arg(long, short = 's', value_name = "ID", help = SESSION_HELP)]
        session: Option<String>,
        /// Keep printing events as they happen.
        #[arg(long, short = 'f')]
        follow: bool,
    },
    /// What a session's model turns used and cost, by task.
    Cost {
        #[arg(long, short = 's', value_name = "ID", help = SESSION_HELP)]
        session: Option<String>,
        #[arg(long, help = JSON_HELP)]
        json: bool,
    },
    /// Talk to air's Main Agent.
    ///
    /// At a terminal, the conversation in the terminal UI; `-p PROMPT` (or `-p` with
    /// the message on stdin) prints one answer on stdout;
    /// otherwise each line of stdin is a message. The daemon keeps the conversation
    /// (`--session` continues it; `air attach` shows it).
    #[command(after_help = chat_cmd::CHAT_EXIT_CODES)]
    Chat(Box<chat_cmd::ChatArgs>),
    /// Serve an editor over the Agent Client Protocol on stdin and stdout.
    ///
    /// Editors (Zed, JetBrains, Neovim, Emacs) start it as their agent: each of their
    /// sessions is an air conversation in this project's daemon, which `air attach`
    /// shows too (docs/editors.md).
    Acp,
    /// Run a plan and follow it to the end.
    ///
    /// Starts (or continues) the run in the daemon and follows it to its end; the run
    /// goes on if this command is stopped.
    #[command(after_help = run_cmd::RUN_EXIT_CODES)]
    Run(Box<run_cmd::RunArgs>),
    /// Follow a session's run to its end and report it.
    ///
    /// A run started with --detach or by someone else, with `air run`'s output and exit
    /// codes.
    #[command(after_help = run_cmd::RUN_EXIT_CODES)]
    Wait {
        /// The session, as with -s.
        #[arg(value_name = "SESSION", conflicts_with = "session_flag")]
        session: Option<String>,
        #[arg(long = "session", short = 's', value_name = "ID", help = SESSION_HELP)]
        session_flag: Option<String>,
        #[command(flatten)]
        follow: run_cmd::FollowArgs,
    },
    /// Say that a requirement changed while the run goes on.
    ///
    /// Dispatch freezes, the Architecture Designer re-plans the unfinished work, and
    /// you confirm the new graph (in `air attach`, or `planning.decide` over the API).
    Change {
        /// What is now wanted instead.
        change: String,
        #[arg(long, short = 's', value_name = "ID", help = SESSION_HELP)]
        session: Option<String>,
    },
    /// Cancel a task, or the whole run.
    ///
    /// With no task, the whole run.
    Cancel {
        /// The task to cancel (default: the whole run).
        task: Option<String>,
        #[arg(long, short = 's', value_name = "ID", help = SESSION_HELP)]
        session: Option<String>,
    },
    /// Stop dispatching new agents, or hold one task.
    ///
    /// Running agents go on; with a task, its running agent holds between its steps
    /// (its time limits stop counting).
    Pause {
        /// The task whose agent to hold (default: the whole run's dispatching).
        task: Option<String>,
        #[arg(long, short = 's', value_name = "ID", help = SESSION_HELP)]
        session: Option<String>,
    },
    /// Dispatch again after `air pause`.
    ///
    /// With a task, its agent goes on.
    Resume {
        /// The task whose agent goes on (default: the whole run's dispatching).
        task: Option<String>,
        #[arg(long, short = 's', value_name = "ID", help = SESSION_HELP)]
        session: Option<String>,
    },
    /// Run failed, blocked or cancelled tasks again.
    ///
    /// With the tasks waiting on them, at once if the run is still going; with no
    /// task, every unfinished task of the ended run.
    Retry {
        /// The tasks to retry (default: all unfinished ones, once the run has ended).
        tasks: Vec<String>,
        #[arg(long, short = 's', value_name = "ID", help = SESSION_HELP)]
        session: Option<String>,
    },
    /// Bring a session's work into the checkout's branch.
    ///
    /// Its tasks' merged branches, only over files you did not change.
    Land {
        /// The session, as with -s.
        #[arg(value_name = "SESSION", conflicts_with = "session_flag")]
        session: Option<String>,
        #[arg(long = "session", short = 's', value_name = "ID", help = SESSION_HELP)]
        session_flag: Option<String>,
        /// Also when the checkout's branch moved on since the run began (as a merge
        /// commit); never over a conflict.
        #[arg(long)]
        always: bool,
    },
    /// Prune the worktrees kept for failed or blocked tasks.
    ///
    /// Those past the age limit, then the oldest over the disk budget (`worktrees:` in
    /// ~/.air/config.yaml); their uncommitted work is committed on their branches
    /// first, which stay.
    Gc {
        /// Every kept worktree not in use, whatever its age.
        #[arg(long)]
        all: bool,
        /// Only say what would go.
        #[arg(long)]
        dry_run: bool,
    },
    /// Take one task's merged change back out.
    ///
    /// Out of its session's work (a new commit; what later tasks changed stays), and
    /// out of the checkout where it had landed.
    Undo {
        /// The task whose change to take back (T3).
        task: String,
        #[arg(long, short = 's', value_name = "ID", help = SESSION_HELP)]
        session: Option<String>,
    },
    /// A task's change, as a diff.
    ///
    /// A task's change: the diff of its branch, as its latest attempt left it.
    Diff {
        /// The task (T3).
        task: String,
        #[arg(long, short = 's', value_name = "ID", help = SESSION_HELP)]
        session: Option<String>,
    },
    /// Allow a pending permission request.
    ///
    /// The first answer wins, from whichever terminal or client gives it.
    Approve {
        /// The request's id (`air events -t permission.requested` lists them).
        request: String,
        #[arg(long, short = 's', value_name = "ID", help = SESSION_HELP)]
        session: Option<String>,
        /// Why, recorded with the answer and shown to the agent.
        #[arg(long)]
        reason: Option<String>,
    },
    /// Deny a pending permission request.
    ///
    /// The first answer wins, from whichever terminal or client gives it.
    Deny {
        /// The request's id (`air events -t permission.requested` lists them).
        request: String,
        #[arg(long, short = 's', value_name = "ID", help = SESSION_HELP)]
        session: Option<String>,
        /// Why, recorded with the answer and shown to the agent.
        #[arg(long)]
        reason: Option<String>,
    },
    /// Plan from a requirement, check a plan, or draw its graph.
    ///
    /// `new` plans from a requirement with the Architecture Designer; `check` and
    /// `graph` need no daemon.
    Plan {
        #[command(subcommand)]
        command: plan_cmd::PlanCommand,
    },
    /// Bring back files outside the project that agents changed.
    ///
    /// They are backed up before every such change; no daemon needed.
    Restore(restore_cmd::RestoreArgs),
    /// Print air's version.
    Version,
    /// Print a shell completion script.
    Completions {
        /// The shell the script is for.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

#[derive(Subcommand, Debug)]
pub enum SessionsAction {
    /// Mark a session archived; its artifacts are kept.
    Archive {
        /// The session: its id or the start of it.
        session: String,
        /// Why, recorded with it.
        #[arg(long)]
        reason: Option<String>,
    },
    /// Mark a session deleted and purge its artifacts (logs, reports); its event
    /// history stays.
    Delete {
        /// The session: its id or the start of it.
        session: String,
        /// Why, recorded with it.
        #[arg(long)]
        reason: Option<String>,
    },
}

/// An error with the exit code it maps to.
pub struct Failure {
    pub code: u8,
    pub message: String,
}

impl<E: std::fmt::Display + 'static> From<E> for Failure {
    fn from(e: E) -> Self {
        // The daemon's errors say what is wrong in their message, and their kind gives
        // the exit code.
        if let Some(rpc) =
            (&e as &dyn std::any::Any).downcast_ref::<jsonrpsee::core::client::Error>()
        {
            return rpc_failure_of(rpc);
        }
        Failure {
            code: exit::FAILED,
            message: e.to_string(),
        }
    }
}

/// Set when the daemon refused a session written by an older air: `air` then shows the
/// migration plan and asks (at a terminal).
static MIGRATION_NEEDED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

pub type CmdResult = Result<(), Failure>;

fn main() -> ExitCode {
    let cli = match Cli::from_arg_matches(&help::command().get_matches()) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    let result = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt.block_on(async {
            match cli.command {
                Some(command) => run(command).await,
                None => talk().await,
            }
        }),
        Err(e) => Err(Failure::from(format!("cannot start the runtime: {e}"))),
    };
    stdout::flush();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            eprintln!("air: {}", f.message);
            if MIGRATION_NEEDED.load(std::sync::atomic::Ordering::Relaxed)
                && std::io::IsTerminal::is_terminal(&std::io::stdin())
            {
                eprintln!();
                let offered = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| Failure::from(e.to_string()))
                    .and_then(|rt| rt.block_on(migrate_cmd::run(false)));
                if let Err(m) = offered {
                    eprintln!("air: {}", m.message);
                }
            }
            ExitCode::from(f.code)
        }
    }
}

pub fn current_dir() -> Result<PathBuf, Failure> {
    std::env::current_dir()
        .map_err(|e| Failure::from(format!("cannot read the current directory: {e}")))
}

/// The project containing the current directory.
pub fn project() -> Result<ProjectPaths, Failure> {
    Ok(layout::find_root(&current_dir()?)?)
}

/// How this `air` reaches the daemon: `AIR_AIRSD` overrides the `airsd` found beside it.
pub fn connect_options(paths: ProjectPaths) -> ConnectOptions {
    let mut options = ConnectOptions::new(paths, "air", env!("CARGO_PKG_VERSION"));
    let airsd = doctor::airsd_path();
    setup::first_start(&options.paths, &airsd);
    options.airsd = Some(airsd);
    options
}

/// The error of a failed connection, with its exit code.
pub fn unreachable(e: ClientError) -> Failure {
    let code = if e.is_unreachable() {
        exit::UNREACHABLE
    } else {
        exit::FAILED
    };
    Failure {
        code,
        message: e.to_string(),
    }
}

/// A daemon's answer as a failure: bad input (plan errors, unknown session or task, a
/// refused request) exits 2; a lost connection 4; anything else 1.
pub fn rpc_failure(e: jsonrpsee::core::client::Error) -> Failure {
    rpc_failure_of(&e)
}

fn rpc_failure_of(e: &jsonrpsee::core::client::Error) -> Failure {
    use jsonrpsee::core::client::Error;
    match e {
        Error::Call(obj) => {
            let data: Option<serde_json::Value> =
                obj.data().and_then(|d| serde_json::from_str(d.get()).ok());
            let kind = data
                .as_ref()
                .and_then(|d| d["kind"].as_str().map(str::to_string));
            let code = match kind.as_deref() {
                Some("invalid_input" | "not_found" | "conflict") => exit::USAGE,
                _ => exit::FAILED,
            };
            if kind.as_deref() == Some("schema_mismatch") && obj.message().contains("air migrate") {
                MIGRATION_NEEDED.store(true, std::sync::atomic::Ordering::Relaxed);
            }
            Failure {
                code,
                message: obj.message().to_string(),
            }
        }
        Error::Transport(_) | Error::RestartNeeded(_) | Error::RequestTimeout => Failure {
            code: exit::UNREACHABLE,
            message: format!("lost the daemon: {e}"),
        },
        _ => Failure {
            code: exit::FAILED,
            message: e.to_string(),
        },
    }
}

/// Connects to the project's daemon, starting it if needed.
pub async fn connect() -> Result<Connection, Failure> {
    air_proto::client::connect(&connect_options(project()?))
        .await
        .map_err(unreachable)
}

/// The session a command names (its id or a prefix only it has), or the newest.
pub(crate) async fn session_of(
    conn: &Connection,
    wanted: Option<String>,
) -> Result<String, Failure> {
    use air_proto::api::AirApiClient as _;
    let sessions = conn
        .client
        .session_list(air_proto::api::params::NoParams {})
        .await
        .map_err(rpc_failure)?;
    match wanted {
        Some(w) => air_proto::api::find_session(&sessions, &w)
            .map(|s| s.id.clone())
            .map_err(|message| Failure {
                code: exit::USAGE,
                message,
            }),
        None => sessions.first().map(|s| s.id.clone()).ok_or_else(|| {
            Failure::from("no sessions yet (`air run --plan FILE` or `air chat` starts one)")
        }),
    }
}

/// `air attach`; with `chat`, on the conversation with its input box focused.
pub(crate) async fn attach(
    session: Option<String>,
    theme: Option<String>,
    chat: bool,
) -> CmdResult {
    let session = match attach_tui(session, theme, chat, None).await {
        Ok(s) => s,
        Err(Watch::Failed(f)) => return Err(f),
        Err(Watch::Example(_)) => return Err("no session chosen".into()),
    };
    eprintln!("air: detached from session {session}; the run goes on (`air attach -s {session}` to come back)");
    Ok(())
}

/// `air attach`, or with `no_model` the first-run screen first. The session it
/// detached from, or the example chosen there.
async fn attach_tui(
    session: Option<String>,
    theme: Option<String>,
    chat: bool,
    no_model: Option<(String, Vec<air_tui::app::ExampleRow>)>,
) -> Result<String, Watch> {
    // A session named by the start of its id, or unknown, is settled before the
    // terminal is taken over.
    let session = match session {
        Some(s) => Some(session_of(&connect().await?, Some(s)).await?),
        None => None,
    };
    let options = air_tui::run::Options {
        connect: connect_options(project()?),
        session,
        theme,
        air_home: doctor::air_home(),
        chat,
        no_model,
    };
    match air_tui::run::attach(options).await? {
        air_tui::run::Attached::Session(s) => Ok(s),
        air_tui::run::Attached::Example(dir) => Err(Watch::Example(dir)),
    }
}

/// Why the TUI was left without a session: a failure, or an example to watch.
enum Watch {
    Failed(Failure),
    Example(PathBuf),
}

impl<E: Into<Failure>> From<E> for Watch {
    fn from(e: E) -> Watch {
        Watch::Failed(e.into())
    }
}

/// Why no model would answer the Main Agent here (`None`: one would), as a run
/// started from this shell resolves it.
fn no_model() -> Option<String> {
    let models = match air_proto::models::ModelsConfig::load(doctor::air_home().as_deref()) {
        Ok(m) => m,
        Err(e) => return Some(e.to_string()),
    };
    let wanted = std::env::var("AIR_MODEL").ok().filter(|m| !m.is_empty());
    models
        .resolve("main", wanted.as_deref(), &|k| std::env::var(k).ok())
        .err()
        .map(|e| {
            e.strip_suffix(air_proto::models::NO_PROVIDER_HINT)
                .map_or(e.clone(), |short| format!("{short}."))
        })
}

/// `air` alone: the conversation of the newest session, or of a new one; with no
/// model, the first-run screen.
async fn talk() -> CmdResult {
    use air_proto::api::AirApiClient as _;
    if let Some(why) = no_model() {
        return match attach_tui(None, None, false, Some((why, example::shipped()))).await {
            Ok(session) => {
                eprintln!("air: detached from session {session}");
                Ok(())
            }
            Err(Watch::Example(dir)) => example::watch(&dir).await,
            Err(Watch::Failed(f)) => Err(f),
        };
    }
    let conn = connect().await?;
    let sessions = conn
        .client
        .session_list(air_proto::api::params::NoParams {})
        .await
        .map_err(rpc_failure)?;
    let session = match sessions.first() {
        Some(s) => s.id.clone(),
        None => {
            conn.client
                .conversation_start(air_proto::api::params::ConversationStart::default())
                .await
                .map_err(rpc_failure)?
                .id
        }
    };
    drop(conn);
    attach(Some(session), None, true).await
}

async fn run(command: Command) -> CmdResult {
    match command {
        Command::Init { path, ask } => {
            let root = match path {
                Some(p) => p,
                None => current_dir()?,
            };
            let report = layout::init(&root, &air_proto::time::now_iso())?;
            let project = &report.project;
            if report.created {
                outln!(
                    "initialized air project `{}` ({}) in {}",
                    project.name,
                    project.project_id,
                    root.display()
                );
            } else {
                outln!(
                    "air project `{}` ({}) already initialized in {}",
                    project.name,
                    project.project_id,
                    root.display()
                );
            }
            if report.gitignore_updated {
                outln!("added {} to .gitignore", layout::GITIGNORE_LINE);
            }
            let paths = layout::ProjectPaths::new(&root);
            // The project is made: a scan that fails is said, not a failure of init.
            if let Err(e) = profile_cmd::after_init(&paths, &ask).await {
                eprintln!(
                    "air: the project scan failed ({}); `air profile scan` tries again",
                    e.message
                );
            }
            setup::first_start(&paths, &doctor::airsd_path());
            Ok(())
        }
        Command::Restore(args) => restore_cmd::run(args),
        Command::Doctor {
            json,
            fix,
            yes,
            bundle,
        } => doctor::run(json, fix.then_some(yes), bundle.as_deref()).await,
        Command::Profile { command } => profile_cmd::run(command).await,
        Command::Migrate { yes } => migrate_cmd::run(yes).await,
        Command::Setup { yes } => doctor::run(false, Some(yes), None).await,
        Command::Attach { session, theme } => attach(session, theme, false).await,
        Command::Root => {
            outln!("{}", project()?.root().display());
            Ok(())
        }
        Command::Daemon { command } => daemon_cmd::run(command).await,
        Command::Status { json } => output::status(json).await,
        Command::Debug { command } => knowledge_cmd::run(command).await,
        Command::Memory { command } => memory_cmd::run(command).await,
        Command::Hooks { command } => hooks_cmd::run(command),
        Command::Mcp { command } => mcp_cmd::run(command),
        Command::Capability { command } => capability_cmd::run(command),
        Command::Skills { command } => knowledge_cmd::skills(command),
        Command::Sessions { action: None, json } => output::sessions(json).await,
        Command::Sessions {
            action: Some(action),
            ..
        } => output::retire(action).await,
        Command::Events {
            session,
            types,
            follow,
            json,
        } => {
            let format = if json {
                output::Format::Json
            } else {
                output::Format::Raw
            };
            output::events(session, types, follow, format).await
        }
        Command::Log { session, follow } => {
            let words = output::Format::Words(Box::default());
            output::events(session, Vec::new(), follow, words).await
        }
        Command::Cost { session, json } => output::cost(session, json).await,
        Command::Plan {
            command: plan_cmd::PlanCommand::New(args),
        } => plan_new::run(*args).await,
        Command::Plan { command } => plan_cmd::run(command),
        Command::Run(args) => run_cmd::run(*args).await,
        Command::Chat(args) => chat_cmd::run(*args).await,
        Command::Acp => acp::run().await,
        Command::Wait {
            session,
            session_flag,
            follow,
        } => run_cmd::wait(session.or(session_flag), follow).await,
        Command::Cancel { task, session } => run_cmd::control("cancel", session, task).await,
        Command::Change { change, session } => run_cmd::change(change, session).await,
        Command::Retry { tasks, session } => run_cmd::retry(tasks, session).await,
        Command::Land {
            session,
            session_flag,
            always,
        } => branch_cmd::land(session.or(session_flag), always).await,
        Command::Diff { task, session } => branch_cmd::diff(task, session).await,
        Command::Undo { task, session } => branch_cmd::undo(task, session).await,
        Command::Gc { all, dry_run } => branch_cmd::gc(all, dry_run).await,
        Command::Pause { task, session } => run_cmd::control("pause", session, task).await,
        Command::Approve {
            request,
            session,
            reason,
        } => run_cmd::respond(true, request, session, reason).await,
        Command::Deny {
            request,
            session,
            reason,
        } => run_cmd::respond(false, request, session, reason).await,
        Command::Resume { task, session } => run_cmd::control("resume", session, task).await,
        Command::Version => {
            outln!(
                "air {} (protocol {})",
                env!("CARGO_PKG_VERSION"),
                air_proto::PROTOCOL_VERSION
            );
            Ok(())
        }
        Command::Completions { shell } => {
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "air", &mut script);
            stdout::write_bytes(&script);
            Ok(())
        }
    }
}
