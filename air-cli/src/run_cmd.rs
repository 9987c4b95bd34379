//! `air run`, `air wait`, `air cancel`, `air pause`, `air resume`: running a plan
//! through the daemon and following it to the end.
//!
//! Exit codes of `air run` and `air wait`: 0 every task completed, 1 a task failed, 2
//! usage or plan error, 3 blocked (a task needs a human, or a budget ran out), 4 the
//! daemon could not be reached, 130 the run was interrupted (cancelled).

use air_proto::events as ev;
use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use air_proto::api::{params, AirApiClient};
use air_proto::client::Connection;
use air_proto::event::RuntimeEvent;
use air_proto::payload::RunOutcome;
use air_proto::report::RunReport;
use clap::Args;

use crate::args::{
    absolute, existing_dir, model_spec, parse_duration, usage, LandArg, ModeArg, OnAskArg,
};
use crate::output::{elapsed, follow_events, print_summary};
use crate::{connect, exit, rpc_failure, CmdResult, Failure};

/// Exit code of an interrupted run (as for SIGINT).
pub const INTERRUPTED: u8 = 130;
/// Exit code of a blocked run.
pub const BLOCKED: u8 = 3;

pub const RUN_EXIT_CODES: &str = "Exit codes:\n  0    every task completed\n  1    a task failed\n  2    usage or plan error\n  3    blocked: a task needs a human, a budget ran out, or a permission was denied\n  4    the daemon could not be reached or started\n  130  interrupted: the run was cancelled";

/// How a followed run is shown.
#[derive(Args, Clone, Debug, Default)]
pub struct FollowArgs {
    /// One JSON object per event (NDJSON) instead of progress lines.
    #[arg(long)]
    pub json: bool,
    /// Write a JUnit XML report here at the end (one testcase per task).
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Write a Markdown summary with the task graph (Mermaid) here at the end; it is
    /// also appended to $GITHUB_STEP_SUMMARY when that is set.
    #[arg(long, value_name = "FILE")]
    pub summary: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct RunArgs {
    /// The plan to run (Markdown, see docs/plan-format.md; default:
    /// .air/shared/plan/plan.md, where `air plan new` writes it).
    #[arg(long, value_name = "FILE")]
    pub plan: Option<PathBuf>,
    /// Continue the run of this session (its id or the start of it; default: the
    /// newest) after an interruption or a crash.
    #[arg(
        long,
        value_name = "SESSION",
        conflicts_with = "plan",
        num_args = 0..=1,
        default_missing_value = ""
    )]
    pub resume: Option<String>,
    /// Return at once with the session id; `air wait SESSION` follows it later.
    #[arg(long)]
    pub detach: bool,
    /// Most agents at once (overrides the plan).
    #[arg(long, value_name = "N")]
    pub concurrency: Option<u32>,
    /// A permission request with nobody to ask: deny it, fail the task, or queue it for
    /// `air approve` (overrides the plan; default deny).
    #[arg(long, value_enum, value_name = "POLICY")]
    pub on_ask: Option<OnAskArg>,
    /// When the tasks' merged work lands in the checkout: never (it stays on the
    /// session's integration branch), clean (when the checkout's branch has not
    /// moved on and it touches none of your uncommitted files; the default) or
    /// always (also as a merge commit when the branch moved on). Overrides `land:`.
    #[arg(long, value_enum, value_name = "WHEN")]
    pub land: Option<LandArg>,
    /// Let the tasks work in the checkout itself, one writer per area at a time,
    /// instead of each in its own git worktree. Overrides `worktrees:`.
    #[arg(long)]
    pub no_worktrees: bool,
    /// What asks first: default (risky commands, and work the Main Agent hands on),
    /// accept_edits (risky commands only), plan (read-only: every write and command
    /// refused) or bypass_permissions (only what always asks; docs/tools.md).
    #[arg(long, value_enum, value_name = "MODE")]
    pub permission_mode: Option<ModeArg>,
    /// Stop dispatching once the run has cost this many US dollars.
    #[arg(long, value_name = "USD")]
    pub max_cost: Option<f64>,
    /// Stop dispatching once the run has used this many tokens.
    #[arg(long, value_name = "N")]
    pub max_tokens: Option<u64>,
    /// Stop dispatching after this much wall time (`30m`, `2h`).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub max_time: Option<Duration>,
    /// The session's title (default: the plan's).
    #[arg(long)]
    pub title: Option<String>,
    /// Let the ExperienceMiner learn from this run in the background (memories, skill
    /// drafts; it calls the model): before `learn:` in ~/.air/config.yaml.
    #[arg(long, overrides_with = "no_learn")]
    pub learn: bool,
    /// Do not learn from this run, whatever ~/.air/config.yaml says.
    #[arg(long)]
    pub no_learn: bool,
    /// The model every agent uses: `provider/model` or a model name (before
    /// AIR_MODEL, the plan's task models and ~/.air/models.yaml).
    #[arg(long, value_name = "MODEL", conflicts_with = "resume")]
    pub model: Option<String>,
    /// The provider every agent uses (anthropic, openai, openrouter, ollama or one
    /// of models.yaml), with its default model unless --model names one.
    #[arg(long, value_name = "NAME", conflicts_with = "resume")]
    pub provider: Option<String>,
    /// Save every provider exchange of the run into DIR, one file per agent (env
    /// AIR_RECORD), to replay it later with --replay.
    #[arg(
        long,
        value_name = "DIR",
        env = "AIR_RECORD",
        conflicts_with = "resume"
    )]
    pub record: Option<PathBuf>,
    /// Run the plan against the recording in DIR instead of a live provider (no key
    /// needed); a request that no longer matches the recording fails with what
    /// changed.
    #[arg(
        long,
        value_name = "DIR",
        conflicts_with_all = ["resume", "model", "provider"]
    )]
    pub replay: Option<PathBuf>,
    #[command(flatten)]
    pub follow: FollowArgs,
}

/// A refused `run.start`: the daemon's plan errors with how many there are, as
/// `air plan check` shows them.
fn plan_failure(plan: &str, e: jsonrpsee::core::client::Error) -> Failure {
    let errors = match &e {
        jsonrpsee::core::client::Error::Call(obj) => obj
            .data()
            .and_then(|d| serde_json::from_str::<serde_json::Value>(d.get()).ok())
            .and_then(|d| d["plan_errors"]["errors"].as_array().map(Vec::len)),
        _ => None,
    };
    let mut failure = rpc_failure(e);
    if let Some(n) = errors {
        failure.message = format!(
            "{}\n{plan}: {n} error{} in the plan",
            failure.message,
            if n == 1 { "" } else { "s" }
        );
    }
    failure
}

/// The plan `air run` runs without --plan: the one `air plan new` wrote.
fn default_plan() -> Result<PathBuf, Failure> {
    let plan = crate::project()?.root().join(".air/shared/plan/plan.md");
    if plan.is_file() {
        Ok(plan)
    } else {
        Err(usage(format!(
            "give the plan with --plan FILE (there is no {} here: `air plan new \"REQUIREMENT\"` writes one), or --resume [SESSION]",
            plan.display()
        )))
    }
}

pub async fn run(args: RunArgs) -> CmdResult {
    let plan = match (&args.plan, &args.resume) {
        (None, None) => Some(default_plan()?),
        (plan, _) => plan.clone(),
    };
    let conn = connect().await?;
    let resume = match &args.resume {
        Some(s) => Some(crate::session_of(&conn, Some(s.clone()).filter(|s| !s.is_empty())).await?),
        None => None,
    };
    let info = match (&plan, &resume) {
        (Some(plan), _) => {
            // Compiled once, by the daemon: its plan errors, named by file:line, are what
            // the user sees.
            let text = std::fs::read_to_string(plan)
                .map_err(|e| usage(format!("cannot read the plan {}: {e}", plan.display())))?;
            let request = params::RunStart {
                plan: plan.display().to_string(),
                plan_text: text,
                title: args.title.clone(),
                concurrency: args.concurrency,
                on_ask: args.on_ask.map(OnAskArg::policy),
                permission_mode: args.permission_mode.map(ModeArg::mode),
                max_cost: args.max_cost,
                max_tokens: args.max_tokens,
                max_time_ms: args
                    .max_time
                    .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
                model: model_spec(args.provider.as_deref(), args.model.as_deref())?,
                record: args.record.as_deref().map(absolute).transpose()?,
                replay: args.replay.as_deref().map(existing_dir).transpose()?,
                learn: match (args.learn, args.no_learn) {
                    (true, _) => Some(true),
                    (_, true) => Some(false),
                    _ => None,
                },
                worktrees: args.no_worktrees.then_some(false),
                land: args.land.map(LandArg::land),
                // The run's agents call the provider this shell names, with its key.
                env: Some(air_proto::env::ClientEnv::current()),
            };
            let size = serde_json::to_vec(&request).map_or(0, |b| b.len());
            // The request's envelope (method, id) takes a few bytes more.
            if size + 256 > air_proto::api::MAX_MESSAGE_BYTES as usize {
                return Err(usage(format!(
                    "{}: the plan is too large to send to the daemon: {:.1} MiB, where one message may be at most {} MiB",
                    plan.display(),
                    size as f64 / (1024.0 * 1024.0),
                    air_proto::api::MAX_MESSAGE_BYTES / (1024 * 1024)
                )));
            }
            let info = conn
                .client
                .run_start(request)
                .await
                .map_err(|e| plan_failure(&plan.display().to_string(), e))?;
            for w in &info.warnings {
                eprintln!("warning: {}", w.display(&plan.display().to_string()));
            }
            info
        }
        (None, Some(session)) => conn
            .client
            .run_continue(params::RunContinue {
                session_id: session.clone(),
                max_cost: args.max_cost,
                max_tokens: args.max_tokens,
                max_time_ms: args
                    .max_time
                    .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
                // This shell's provider settings: the run picked up again uses them.
                env: Some(air_proto::env::ClientEnv::current()),
                ..Default::default()
            })
            .await
            .map_err(rpc_failure)?,
        (None, None) => return Err(usage("give --plan FILE or --resume [SESSION]".into())),
    };
    if args.detach {
        if args.follow.json {
            outln!("{}", serde_json::to_string(&info)?);
        } else {
            outln!("{}", info.session_id);
            eprintln!(
                "air: running in the background; `air wait {0}` follows it, `air attach -s {0}` shows it",
                info.session_id
            );
        }
        return Ok(());
    }
    if !args.follow.json {
        let what = if info.reopened.is_empty() {
            format!("{} task(s)", info.tasks)
        } else {
            format!("{} task(s) reopened", info.reopened.len())
        };
        eprintln!(
            "air: session {} — {}{}",
            info.session_id,
            info.title
                .as_deref()
                .map(|t| format!("{t}: "))
                .unwrap_or_default(),
            what
        );
        if info.reopened.is_empty() {
            match info.worktrees {
                Some(true) => eprintln!(
                    "air: each task works in its own git worktree; the work lands in your checkout at the end (docs/worktrees.md)"
                ),
                Some(false) => eprintln!(
                    "air: the tasks work in your checkout itself (not a git repository with a commit, or worktrees: false)"
                ),
                None => {}
            }
        }
    }
    follow(conn, &info.session_id, &args.follow, true).await
}

/// `air wait SESSION`: follows a run (started with --detach, or by someone else) to its
/// end, with `air run`'s output and exit codes.
pub async fn wait(session: Option<String>, args: FollowArgs) -> CmdResult {
    let conn = connect().await?;
    let session = crate::session_of(&conn, session).await?;
    follow(conn, &session, &args, false).await
}

/// `air cancel`, `air pause`, `air resume`.
/// `air change "TEXT"`: the requirement changed, in the newest session by default.
pub async fn change(change: String, session: Option<String>) -> CmdResult {
    let conn = connect().await?;
    let session = crate::session_of(&conn, session).await?;
    let seq = conn
        .client
        .requirement_change(params::RequirementChange {
            session_id: session.clone(),
            change,
        })
        .await
        .map_err(rpc_failure)?;
    eprintln!("air: recorded (seq {seq}); the Architecture Designer re-plans what is unfinished: `air attach -s {session}` shows its proposal to confirm");
    Ok(())
}

pub async fn control(what: &str, session: Option<String>, task: Option<String>) -> CmdResult {
    let conn = connect().await?;
    let session = crate::session_of(&conn, session).await?;
    let result = match what {
        "cancel" => {
            conn.client
                .run_cancel(params::RunCancel {
                    session_id: session.clone(),
                    task_id: task.clone(),
                    reason: None,
                })
                .await
        }
        "pause" => {
            conn.client
                .run_pause(params::RunPause {
                    session_id: session.clone(),
                    task_id: task.clone(),
                })
                .await
        }
        _ => {
            conn.client
                .run_resume(params::RunPause {
                    session_id: session.clone(),
                    task_id: task.clone(),
                })
                .await
        }
    };
    if let (Err(_), Some(t)) = (&result, &task) {
        // A session's id where a task's goes: say what does what was meant.
        let sessions = conn
            .client
            .session_list(params::NoParams {})
            .await
            .unwrap_or_default();
        if let Ok(named) = air_proto::api::find_session(&sessions, t) {
            let id = &named.id;
            let verb = match what {
                "resume" => "resumes",
                "pause" => "pauses",
                _ => "cancels",
            };
            return Err(Failure {
                code: crate::exit::USAGE,
                message: format!(
                    "`{t}` is a session, not a task: `air {what} -s {t}` {verb} its run{}",
                    if what == "resume" {
                        format!("; `air run --resume {id}` continues a run that ended or was interrupted")
                    } else {
                        String::new()
                    }
                ),
            });
        }
    }
    result.map_err(rpc_failure)?;
    match (what, task) {
        ("cancel", Some(t)) => outln!("cancelling task {t} of session {session}"),
        ("cancel", None) => outln!(
            "cancelling the run of session {session}; `air run --resume {session}` continues it"
        ),
        ("pause", Some(t)) => outln!(
            "pausing {t} of session {session}: its agent holds after its current step; `air resume {t}` lets it go on"
        ),
        ("pause", None) => {
            outln!("paused session {session}: running agents finish, nothing new starts")
        }
        (_, Some(t)) => outln!("resumed {t} of session {session}"),
        _ => outln!("resumed session {session}"),
    }
    Ok(())
}

/// `air retry`: these ended tasks (and what waits on them) run again, at once if the
/// run is still going; with none, every unfinished task of the ended run.
pub async fn retry(tasks: Vec<String>, session: Option<String>) -> CmdResult {
    let conn = connect().await?;
    let session = crate::session_of(&conn, session).await?;
    let info = conn
        .client
        .run_continue(params::RunContinue {
            session_id: session.clone(),
            task_ids: (!tasks.is_empty()).then_some(tasks),
            env: Some(air_proto::env::ClientEnv::current()),
            ..Default::default()
        })
        .await
        .map_err(rpc_failure)?;
    if info.reopened.is_empty() {
        outln!("nothing to retry in session {session}");
    } else {
        outln!(
            "retrying {} in session {session}; `air wait {session}` waits for the run",
            info.reopened.join(", ")
        );
    }
    Ok(())
}

/// `air approve` / `air deny`.
pub async fn respond(
    allow: bool,
    request: String,
    session: Option<String>,
    reason: Option<String>,
) -> CmdResult {
    let conn = connect().await?;
    let session = crate::session_of(&conn, session).await?;
    let decision = if allow {
        air_proto::payload::PermissionDecision::Allow
    } else {
        air_proto::payload::PermissionDecision::Deny
    };
    conn.client
        .permission_respond(params::PermissionRespond {
            session_id: session.clone(),
            request_id: request.clone(),
            decision,
            reason,
        })
        .await
        .map_err(rpc_failure)?;
    outln!(
        "{} permission request {request} of session {session}",
        if allow { "allowed" } else { "denied" }
    );
    Ok(())
}

/// Live view state.
struct Progress {
    tty: bool,
    json: bool,
    started: Instant,
    total: usize,
    titles: BTreeMap<String, String>,
    status: BTreeMap<String, String>,
    /// agent id → (task, role, since)
    running: BTreeMap<String, (String, String, Instant)>,
    drawn: usize,
    frame: usize,
    /// The last run event seen is `run.completed`.
    ended: bool,
    /// The seq of the last event seen.
    cursor: u64,
    /// When the event being read happened (its lines say so, also when it is read
    /// back long after).
    at: String,
}

const SPINNER: &[&str] = &["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

impl Progress {
    fn done(&self) -> usize {
        self.status
            .values()
            .filter(|s| matches!(s.as_str(), "completed" | "failed" | "blocked" | "cancelled"))
            .count()
    }

    fn clear(&mut self) {
        if self.tty && self.drawn > 0 {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\x1b[{}A\x1b[J", self.drawn);
            self.drawn = 0;
        }
    }

    /// A line of this command's own, stamped with the time it is said.
    fn note(&mut self, text: &str) {
        self.at = air_proto::time::now_iso();
        self.line(text);
    }

    fn line(&mut self, text: &str) {
        if self.json {
            return;
        }
        self.clear();
        if self.tty {
            eprintln!("{text}");
        } else {
            let clock = self.at.get(11..19).unwrap_or(&self.at);
            outln!("{clock} {text}");
        }
    }

    fn draw(&mut self) {
        if !self.tty || self.json {
            return;
        }
        self.clear();
        self.frame = (self.frame + 1) % SPINNER.len();
        let mut lines = vec![format!(
            "{} {}/{} tasks done · {} running · {}",
            SPINNER[self.frame],
            self.done(),
            self.total,
            self.running.len(),
            elapsed(self.started.elapsed())
        )];
        for (agent, (task, role, since)) in self.running.iter().take(12) {
            let title = self.titles.get(task).map(String::as_str).unwrap_or("");
            lines.push(format!(
                "  {} {task} {title} — {role} ({}) {}",
                SPINNER[self.frame],
                elapsed(since.elapsed()),
                agent
            ));
        }
        let mut err = std::io::stderr().lock();
        for l in &lines {
            let _ = writeln!(err, "{l}");
        }
        self.drawn = lines.len();
    }

    fn event(&mut self, event: &RuntimeEvent) {
        self.at.clone_from(&event.timestamp);
        let p = &event.payload;
        let s = |k: &str| p[k].as_str().unwrap_or("").to_string();
        let ty = event.event_type.as_str();
        match ty {
            ev::TaskCreated::TYPE => {
                let id = p["task"]["id"].as_str().unwrap_or("").to_string();
                let title = p["task"]["title"].as_str().unwrap_or("").to_string();
                self.titles.insert(id.clone(), title);
                self.status.insert(id, "pending".into());
                self.total = self.status.len();
            }
            ev::TaskStarted::TYPE | ev::TaskReviewing::TYPE | ev::TaskDebugging::TYPE => {
                let task = s("task_id");
                let role = s("agent_type");
                let agent = s("agent_id");
                self.status.insert(task.clone(), ty[5..].to_string());
                let attempt = p["attempt"].as_u64().unwrap_or(1);
                self.line(&format!("{task} {} ({role}, attempt {attempt})", &ty[5..]));
                self.running.insert(agent, (task, role, Instant::now()));
            }
            ev::TaskCompleted::TYPE
            | ev::TaskFailed::TYPE
            | ev::TaskBlocked::TYPE
            | ev::TaskCancelled::TYPE => {
                let task = s("task_id");
                self.status.insert(task.clone(), ty[5..].to_string());
                let reason = p["reason"]
                    .as_str()
                    .map(|r| format!(": {r}"))
                    .unwrap_or_default();
                self.line(&format!("{task} {}{reason}", &ty[5..]));
            }
            ev::AgentCompleted::TYPE | ev::AgentFailed::TYPE => {
                let agent = s("agent_id");
                self.running.remove(&agent);
                if ty == ev::AgentFailed::TYPE {
                    self.line(&format!("agent {agent} failed: {}", s("reason")));
                }
            }
            ev::AgentSoftTimeout::TYPE => {
                self.line(&format!("agent {} passed its soft timeout", s("agent_id")))
            }
            ev::PermissionRequested::TYPE => {
                let id = s("request_id");
                let task = p["task_id"]
                    .as_str()
                    .map(|t| format!(" for task {t}"))
                    .unwrap_or_default();
                let risk = p["risk"]
                    .as_str()
                    .map(|r| format!(" [{r}]"))
                    .unwrap_or_default();
                self.line(&format!(
                    "permission needed{task}: {}{risk}; answer with `air approve {id}` or `air deny {id}`",
                    s("action")
                ));
            }
            ev::PermissionDecisionRecorded::TYPE => {
                let by = s("decided_by");
                if by != air_proto::payload::EXPIRED {
                    let reason = p["reason"]
                        .as_str()
                        .map(|r| format!(": {r}"))
                        .unwrap_or_default();
                    self.line(&format!(
                        "permission {} {} by {by}{reason}",
                        s("request_id"),
                        if s("decision") == "allow" {
                            "allowed"
                        } else {
                            "denied"
                        }
                    ));
                }
            }
            ev::SchedulerStopped::TYPE => self.line(&format!("stopping: {}", s("reason"))),
            ev::RunHalted::TYPE if !s("reason").is_empty() => {
                self.line(&format!("halted: {}", s("reason")));
                // Ask the daemon at once.
                self.ended = true;
            }
            ev::SchedulerPaused::TYPE => self.line("paused"),
            ev::SchedulerResumed::TYPE => self.line("resumed"),
            ev::RunContinued::TYPE => {
                self.ended = false;
                self.line("the run continues");
            }
            ev::RunCompleted::TYPE => self.ended = true,
            _ => {}
        }
    }
}

/// Follows a session's run to its end, then reports. `cancel_on_signal`: SIGINT/SIGTERM
/// cancel the run (foreground `air run`); otherwise they only stop following.
async fn follow(
    mut conn: Connection,
    session_id: &str,
    args: &FollowArgs,
    cancel_on_signal: bool,
) -> CmdResult {
    let tty = std::io::stderr().is_terminal() && !args.json;
    let progress = std::sync::Arc::new(std::sync::Mutex::new(Progress {
        tty,
        json: args.json,
        started: Instant::now(),
        total: 0,
        titles: BTreeMap::new(),
        status: BTreeMap::new(),
        running: BTreeMap::new(),
        drawn: 0,
        frame: 0,
        ended: false,
        cursor: 0,
        at: air_proto::time::now_iso(),
    }));
    let json = args.json;
    // Told the moment the stream shows the run's end, so the end is checked at once
    // rather than at the next tick.
    let ended_seen = std::sync::Arc::new(tokio::sync::Notify::new());
    // The stream says when the run ended (`run.completed` not followed by a
    // `run.continued`); the snapshot then gives the final state to report.
    let mut ticker = tokio::time::interval(Duration::from_millis(100));
    let mut sigint = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
        .map_err(|e| Failure::from(format!("cannot handle signals: {e}")))?;
    let mut sigterm = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| Failure::from(format!("cannot handle signals: {e}")))?;
    let mut cancelled = false;
    let mut ticks = 0u64;
    let mut orphaned = 0u32;
    // A session without a plan run has nothing to follow.
    let snapshot = conn
        .client
        .session_snapshot(params::Session {
            session_id: session_id.to_string(),
        })
        .await
        .map_err(rpc_failure)?;
    if snapshot.projection.run.is_none() {
        return Err(usage(format!("session {session_id} has no plan run")));
    }
    let report = 'connection: loop {
        let after = progress.lock().unwrap_or_else(|e| e.into_inner()).cursor;
        let mut watcher = {
            let progress = progress.clone();
            let ended_seen = ended_seen.clone();
            Box::pin(follow_events(
                &conn,
                session_id,
                after,
                move |seq, event| {
                    if json {
                        outln!("{}", serde_json::to_string(event)?);
                    }
                    let mut p = progress.lock().unwrap_or_else(|e| e.into_inner());
                    p.cursor = seq;
                    p.event(event);
                    if p.ended {
                        ended_seen.notify_one();
                    }
                    Ok(ControlFlow::Continue(()))
                },
            ))
        };
        let lost = loop {
            tokio::select! {
                result = &mut watcher => {
                    match result {
                        Err(f) if f.code == exit::UNREACHABLE => break f,
                        Err(f) => return Err(f),
                        Ok(_) => break Failure { code: exit::UNREACHABLE, message: "the event stream ended".into() },
                    }
                }
                _ = async {
                    tokio::select! {
                        _ = ticker.tick() => {}
                        _ = ended_seen.notified() => {}
                    }
                } => {
                    let ended = {
                        let mut p = progress.lock().unwrap_or_else(|e| e.into_inner());
                        p.draw();
                        p.ended
                    };
                    ticks += 1;
                    if !ended && !ticks.is_multiple_of(30) {
                        continue;
                    }
                    // Every few seconds, and once the stream says the run ended: ask
                    // the daemon (a lost connection reconnects below).
                    let checked = check_run(&conn, session_id, ended).await;
                    match checked {
                        Ok(RunCheck::Ended(report)) => break 'connection report.map(|b| *b),
                        Ok(RunCheck::Going) => orphaned = 0,
                        Ok(RunCheck::Halted(why)) => {
                            progress.lock().unwrap_or_else(|e| e.into_inner()).clear();
                            return Err(Failure {
                                code: exit::FAILED,
                                message: format!("the run of session {session_id} stopped: {why}"),
                            });
                        }
                        Ok(RunCheck::Orphaned) => {
                            // Twice in a row, to step over a continuation being set up.
                            orphaned += 1;
                            if orphaned >= 2 {
                                progress.lock().unwrap_or_else(|e| e.into_inner()).clear();
                                return Err(Failure {
                                    code: exit::UNREACHABLE,
                                    message: format!(
                                        "no scheduler is working on the run of session {session_id} (see .air/local/logs/airsd.log); `air run --resume {session_id}` starts it again"
                                    ),
                                });
                            }
                        }
                        Err(f) if f.code == exit::UNREACHABLE => break f,
                        Err(f) => return Err(f),
                    }
                }
                _ = sigint.recv() => {
                    if cancelled || !cancel_on_signal {
                        progress.lock().unwrap_or_else(|e| e.into_inner()).clear();
                        eprintln!("air: stopped following; the run goes on in airsd (`air wait {session_id}`)");
                        return Err(Failure { code: INTERRUPTED, message: "interrupted".into() });
                    }
                    cancelled = true;
                    progress.lock().unwrap_or_else(|e| e.into_inner()).note(&format!("cancelling the run… (again to stop waiting; `air run --resume {session_id}` continues it)"));
                    if let Err(e) = conn.client.run_cancel(params::RunCancel { session_id: session_id.to_string(), task_id: None, reason: Some("cancelled by SIGINT on air run".into()) }).await {
                        progress.lock().unwrap_or_else(|e| e.into_inner()).note(&format!("could not cancel: {}", rpc_failure(e).message));
                    }
                }
                _ = sigterm.recv() => {
                    if cancel_on_signal && !cancelled {
                        cancelled = true;
                        let _ = conn.client.run_cancel(params::RunCancel { session_id: session_id.to_string(), task_id: None, reason: Some("cancelled by SIGTERM on air run".into()) }).await;
                    } else {
                        return Err(Failure { code: INTERRUPTED, message: "terminated".into() });
                    }
                }
            }
        };
        // The daemon went away (a restart, a crash): start it again if needed (it picks
        // the run up) and follow on from the last event seen.
        drop(watcher);
        progress
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .note(&format!(
                "lost the daemon ({}); reconnecting…",
                lost.message
            ));
        let mut delay = Duration::from_millis(200);
        let mut tries = 0;
        // Ctrl-C while reconnecting stops following (the run goes on in airsd).
        let interrupted = || Failure {
            code: INTERRUPTED,
            message: format!(
                "interrupted while reconnecting; `air wait {session_id}` follows the run"
            ),
        };
        conn = loop {
            let attempt = tokio::select! {
                c = connect() => c,
                _ = sigint.recv() => return Err(interrupted()),
            };
            match attempt {
                Ok(c) => break c,
                Err(_) if tries < 8 => {
                    tries += 1;
                    tokio::select! {
                        _ = tokio::time::sleep(delay) => {}
                        _ = sigint.recv() => return Err(interrupted()),
                    }
                    delay = (delay * 2).min(Duration::from_secs(5));
                }
                Err(e) => return Err(e),
            }
        };
        progress
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .note("reconnected");
        continue 'connection;
    };
    progress.lock().unwrap_or_else(|e| e.into_inner()).clear();
    let Some(report) = report else {
        return Err(Failure::from(format!(
            "session {session_id} has no plan run"
        )));
    };
    finish(&conn, session_id, &report, args).await
}

/// What the daemon says about a followed run.
enum RunCheck {
    /// It ended; its report.
    Ended(Option<Box<RunReport>>),
    /// A scheduler is working on it.
    Going,
    /// It has not ended, and no scheduler is working on it.
    Orphaned,
    /// Its scheduler stopped without ending it (the session could not be written);
    /// why.
    Halted(String),
}

async fn check_run(conn: &Connection, session_id: &str, ended: bool) -> Result<RunCheck, Failure> {
    let snapshot = conn
        .client
        .session_snapshot(params::Session {
            session_id: session_id.to_string(),
        })
        .await
        .map_err(rpc_failure)?;
    let over = snapshot
        .projection
        .run
        .as_ref()
        .is_some_and(|r| r.status == air_proto::projection::RunState::Ended);
    if over {
        return Ok(RunCheck::Ended(
            RunReport::from_projection(&snapshot.projection).map(Box::new),
        ));
    }
    if let Some(why) = snapshot
        .projection
        .run
        .as_ref()
        .and_then(|r| r.halted.clone())
    {
        return Ok(RunCheck::Halted(why));
    }
    if ended {
        // The stream saw run.completed but the snapshot lags or a continuation
        // followed: keep going.
        return Ok(RunCheck::Going);
    }
    let status = conn
        .client
        .status(params::NoParams {})
        .await
        .map_err(rpc_failure)?;
    Ok(
        if status
            .runs
            .iter()
            .any(|r| r.session_id == session_id && r.halted.is_none())
        {
            RunCheck::Going
        } else {
            RunCheck::Orphaned
        },
    )
}

/// Prints the summary, writes the JUnit and Markdown reports, and maps the outcome to
/// the exit code.
async fn finish(
    conn: &Connection,
    session_id: &str,
    report: &RunReport,
    args: &FollowArgs,
) -> CmdResult {
    let snapshot = conn
        .client
        .session_snapshot(params::Session {
            session_id: session_id.to_string(),
        })
        .await
        .map_err(rpc_failure)?;
    let drawing = snapshot.projection.drawing();
    if let Some(path) = &args.junit {
        std::fs::write(path, report.junit_xml())
            .map_err(|e| usage(format!("cannot write {}: {e}", path.display())))?;
    }
    let markdown = report.markdown(&drawing);
    if let Some(path) = &args.summary {
        std::fs::write(path, &markdown)
            .map_err(|e| usage(format!("cannot write {}: {e}", path.display())))?;
    }
    if let Some(step) = std::env::var_os("GITHUB_STEP_SUMMARY") {
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(&step)
        {
            let _ = f.write_all(markdown.as_bytes());
        }
    }
    if args.json {
        outln!("{}", serde_json::to_string(report)?);
    } else {
        print_summary(report);
        // What the ExperienceMiner proposed and the user has yet to answer (it may
        // still be mining this run: `air memory list` shows what it adds).
        let waiting = conn
            .client
            .memory_list(params::MemoryList {
                status: Some(air_proto::memory::MemoryStatus::Candidate),
                kind: None,
                limit: Some(10_000),
            })
            .await
            .map(|l| l.iter().filter(|e| e.awaits_user()).count())
            .unwrap_or(0);
        if waiting > 0 {
            outln!("{waiting} learned memories await your word: air memory list");
        }
    }
    let outcome = report.outcome.unwrap_or(RunOutcome::Blocked);
    match outcome {
        RunOutcome::Completed if report.permission_denials > 0 => Err(Failure {
            code: BLOCKED,
            message: format!(
                "every task completed, but {} permission request(s) were denied; review them with `air events -t permission.*`",
                report.permission_denials
            ),
        }),
        RunOutcome::Completed => Ok(()),
        RunOutcome::Failed => Err(Failure {
            code: exit::FAILED,
            message: format!("{} task(s) failed", report.counts.failed),
        }),
        RunOutcome::Blocked => Err(Failure {
            code: BLOCKED,
            message: match &report.reason {
                Some(r) => format!("blocked: {r}"),
                None => format!("{} task(s) need a human", report.counts.blocked),
            },
        }),
        RunOutcome::Interrupted => Err(Failure {
            code: INTERRUPTED,
            message: format!("interrupted; `air run --resume {session_id}` continues the run"),
        }),
    }
}
