//! One tool call, run beside the scheduler loop (never on it). The call is recorded
//! before it runs (`tool.started`, the write-ahead record), checked and run off the
//! async threads, and answered with `tool.result` after its end is recorded
//! (`tool.completed` / `tool.failed`). When the PermissionEngine wants a person, the
//! question is recorded as `permission.requested` and the call waits for
//! `permission.decision.recorded`: from a client (`air approve`), or from the run's
//! `on_ask` policy, or the ask timeout. Nothing waits forever and nothing a person
//! did not allow runs.

use air_proto::events::{self as ev, Event};
use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;

use air_proto::backup::{BackupTag, Backups};
use air_proto::event::{AgentType, EventSource, RuntimeEvent};
use air_proto::ipc::{IpcBody, ToolResult, ToolResultStatus};
use air_proto::payload as p;
use serde_json::Value;

use crate::agents::supervisor::Worker;
use crate::bus::Recv;
use crate::session::Session;
use crate::tools::permission::{Ask, Engine, Permits};
use crate::tools::ToolError;

pub mod background;
mod cpp;
mod editor;
mod mcp;
mod shell;

/// Rounds of questions one call may raise (each round asks everything it found).
const MAX_ASK_ROUNDS: usize = 4;

/// A tool's work (or its checks) as it runs off the async threads.
type Checked<T> = dyn Fn(&crate::tools::FsContext<'_>) -> Result<T, ToolError> + Send + Sync;

/// What a tool call needs from the run.
#[derive(Clone)]
pub struct ToolEnv {
    pub session: Arc<Session>,
    /// The run's MCP servers.
    pub mcp: Arc<crate::mcp::Hub>,
    /// The run's hooks (`PreToolUse`, `PostToolUse` run around each call).
    pub hooks: Arc<crate::scheduler::hooks::Hooks>,
    pub ledger: Arc<crate::tools::ReadLedger>,
    pub engine: Arc<Engine>,
    pub backups: Arc<Backups>,
    pub artifacts: Arc<crate::artifacts::ArtifactStore>,
    /// `airsd`, to launch commands under the OS sandbox, with what the sandbox can
    /// do here; `None` when the kernel has neither part, the permissions turn it
    /// off, or airsd runs in-process without its binary.
    pub sandbox_exe: Option<(PathBuf, crate::sandbox::Protections)>,
    /// The calls that were running when airsd stopped.
    pub interrupted: Interrupted,
    /// How airsd runs its own programs (git) on the project.
    pub launcher: Arc<crate::launcher::Launcher>,
    /// The network proxy commands reach the world through (where they have their
    /// own network namespace), and the run's decisions about hosts.
    pub proxy: Option<Arc<crate::proxy::Proxy>>,
    pub net: Arc<crate::proxy::NetPolicy>,
    /// The C or C++ build system the project's profile builds it with (`cmake`,
    /// `make`): `cpp.build`'s choice where the project has both.
    pub build_system: Option<&'static str>,
    /// The project's own C or C++ test command, as its profile names it: what
    /// `cpp.test` runs.
    pub test_command: Option<String>,
    /// The commands agents started in the background, by command_run_id.
    pub background: Arc<background::Background>,
}

/// Who asked for a tool call and gets its answer: an agent's worker, or airsd itself
/// (the merge queue's run of a task's check), which awaits the result.
#[derive(Clone)]
pub enum Caller {
    Worker(Worker),
    Airsd(Arc<std::sync::Mutex<Option<tokio::sync::oneshot::Sender<ToolResult>>>>),
}

impl From<Worker> for Caller {
    fn from(w: Worker) -> Self {
        Caller::Worker(w)
    }
}

impl Caller {
    /// A caller in airsd, and where its result arrives.
    pub fn airsd() -> (Caller, tokio::sync::oneshot::Receiver<ToolResult>) {
        let (tx, rx) = tokio::sync::oneshot::channel();
        (Caller::Airsd(Arc::new(std::sync::Mutex::new(Some(tx)))), rx)
    }

    /// Sends `body` in answer to `request`: a worker gets every message, airsd only
    /// the result.
    pub fn reply(&self, request: &air_proto::ipc::IpcHeader, body: IpcBody) -> bool {
        match self {
            Caller::Worker(w) => w.reply(request, body),
            Caller::Airsd(slot) => match body {
                IpcBody::ToolResult(r) => slot
                    .lock()
                    .ok()
                    .and_then(|mut s| s.take())
                    .is_some_and(|tx| tx.send(r).is_ok()),
                _ => true,
            },
        }
    }

    /// Whether the caller is gone (its command is then stopped).
    pub fn exited(&self) -> bool {
        match self {
            Caller::Worker(w) => w.exited(),
            Caller::Airsd(slot) => slot
                .lock()
                .map(|s| s.as_ref().is_none_or(|tx| tx.is_closed()))
                .unwrap_or(true),
        }
    }
}

#[derive(Clone)]
pub struct ToolJob {
    pub env: ToolEnv,
    pub worker: Caller,
    pub header: air_proto::ipc::IpcHeader,
    pub call: air_proto::ipc::ToolCall,
    pub agent_id: String,
    pub role: AgentType,
    pub task_id: String,
    pub scope: air_proto::task::TaskScope,
    /// A planning turn's phase: what its designer may call (P0-5, P1-16).
    pub planning: Option<air_proto::planning::PlanningPhase>,
    /// A re-planning turn: its proposal keeps these tasks as they are (those the
    /// change does not impact).
    pub replan: bool,
    pub fixed: Vec<air_proto::task::TaskSpec>,
    /// A planning turn's requirement, in the user's words (its `[no-…]` markers are
    /// kept).
    pub requirement: String,
    /// The task's checks the plan declares evidence of (a command, what it yields
    /// when it passes).
    pub yields: Vec<(String, air_proto::task::EvidenceType)>,
    /// The task's checks (its verification commands): a command's answer names those
    /// it ran, as airsd reads commands (a debugger's gate opens on the failing one).
    pub checks: Vec<String>,
    /// A debugger's failure: what its writes wait for evidence on.
    pub failure: Option<air_proto::gate::Failure>,
    /// The task's hard timeout: how long one step of a build or a test run of the
    /// C and C++ tools may take (at least their own limit).
    pub time_limit_ms: u64,
}

/// Makes `.air/base/` of the project at `root` (with a `.gitignore` that keeps its
/// copies out of git's view) when it is missing, and answers where it is. Made
/// before any command of a run starts, so that every command's view has it
/// read-only.
pub fn make_base_dir(root: &std::path::Path) -> Result<std::path::PathBuf, String> {
    let base = air_proto::layout::ProjectPaths::new(root).base_copies();
    std::fs::create_dir_all(&base).map_err(|e| format!("{}: {e}", base.display()))?;
    let base = std::fs::canonicalize(&base).map_err(|e| format!("{}: {e}", base.display()))?;
    let ignore = base.join(".gitignore");
    if std::fs::symlink_metadata(&ignore).is_err() {
        let _ = crate::opened::write_new(&ignore, &base, b"*\n");
    }
    Ok(base)
}

fn millis(t0: std::time::Instant) -> Option<u64> {
    Some(u64::try_from(t0.elapsed().as_millis()).unwrap_or(u64::MAX))
}

/// The error airsd records for a tool run it found running when it started again.
pub const INTERRUPTED: &str = "interrupted: airsd stopped while it ran; not re-run";

/// The calls that were running when airsd stopped, as (task, tool, input JSON), read
/// once when a run's scheduler starts (interruptions happen only at a restart).
#[derive(Clone, Debug, Default)]
pub struct Interrupted(Arc<Vec<(String, String, String)>>);

impl Interrupted {
    /// Reads them from the session's tool runs.
    pub fn load(session: &Session) -> Interrupted {
        let rows = session
            .readers()
            .get()
            .map_err(crate::error::Error::from)
            .and_then(|conn| crate::event_store::query::failed_tool_runs(&conn, INTERRUPTED));
        let rows = match rows {
            Ok(rows) => Some(rows),
            Err(e) => {
                tracing::warn!("cannot read the interrupted tool runs: {e}");
                None
            }
        };
        Interrupted(Arc::new(rows.unwrap_or_default()))
    }

    /// How many times this exact call (tool and input) of the task was running when
    /// airsd stopped.
    pub fn count(&self, task_id: &str, tool: &str, input: &Value) -> usize {
        if self.0.is_empty() {
            return 0;
        }
        // Compared as JSON values: the same call whatever order its keys were
        // written in.
        self.0
            .iter()
            .filter(|(t, n, i)| {
                t == task_id
                    && n == tool
                    && serde_json::from_str::<Value>(i).is_ok_and(|i| i == *input)
            })
            .count()
    }

    /// The task's interrupted calls, as (tool, input JSON).
    pub fn of_task(&self, task_id: &str) -> Vec<(String, String)> {
        self.0
            .iter()
            .filter(|(t, _, _)| t == task_id)
            .map(|(_, n, i)| (n.clone(), i.clone()))
            .collect()
    }
}

impl ToolJob {
    /// The tool whose output this call's is: airsd's run of a task's check before its
    /// executor begins answers as `shell.run` does.
    fn shown_as(&self) -> &str {
        match self.call.tool.as_str() {
            air_proto::gate::BEFORE_TOOL => "shell.run",
            tool => tool,
        }
    }

    fn source(&self) -> EventSource {
        EventSource::agent(self.agent_id.as_str(), self.role)
    }

    fn answer(
        &self,
        status: ToolResultStatus,
        output: Option<Value>,
        error: Option<String>,
    ) -> IpcBody {
        let truncated = output
            .as_ref()
            .and_then(|o| o.get("truncated"))
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let content = output
            .as_ref()
            .and_then(|o| crate::tools::render::text(self.shown_as(), o));
        // The texts the rendering holds do not travel twice: the worker gets the
        // output's small fields (ids, exit codes, paths), the record keeps it whole.
        let output = match (&content, output) {
            (Some(_), Some(Value::Object(mut o))) => {
                for k in crate::tools::render::RENDERED {
                    o.remove(*k);
                }
                Some(Value::Object(o))
            }
            (_, output) => output,
        };
        IpcBody::ToolResult(ToolResult {
            tool_call_id: self.call.tool_call_id.clone(),
            status,
            content,
            output,
            error: error.map(|message| air_proto::error::WireError {
                kind: air_proto::error::ErrorKind::InvalidInput,
                message,
                details: None,
            }),
            truncated,
            artifact_ref: None,
        })
    }

    /// Hands an event to the writer without waiting for its commit.
    async fn queue<E: Event>(&self, event: &E) -> Result<crate::event_store::Queued, String> {
        let e = RuntimeEvent::of(self.env.session.id(), self.source(), event)
            .map_err(|e| e.to_string())?;
        self.env
            .session
            .store()
            .enqueue(e)
            .await
            .map_err(|e| e.to_string())
    }

    async fn record<E: Event>(&self, event: &E) -> Result<(), String> {
        let e = RuntimeEvent::of(self.env.session.id(), self.source(), event)
            .map_err(|e| e.to_string());
        self.record_all(vec![e]).await
    }

    /// Records events in one transaction.
    async fn record_all(&self, events: Vec<Result<RuntimeEvent, String>>) -> Result<(), String> {
        let events = events.into_iter().collect::<Result<Vec<_>, _>>()?;
        self.env
            .session
            .store()
            .append_batch(events)
            .await
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    pub async fn run(self) {
        let tool_run_id = air_proto::ids::new_id();
        let started = p::ToolStarted {
            tool_run_id: tool_run_id.clone(),
            tool: self.call.tool.clone(),
            input: self.call.input.clone(),
            agent_id: Some(self.agent_id.clone()),
            task_id: Some(self.task_id.clone()),
            origin_message_id: self.call.origin_message_id.clone(),
        };
        // The write-ahead record: a tool with effects runs only once `tool.started`
        // is committed. A read has nothing to recover, so it does not wait for its
        // records, which commit in order behind it.
        let reads_only = crate::tools::reads_only(&self.call.tool);
        let queued = match self.queue(&started).await {
            Ok(q) if reads_only => Ok(q),
            Ok(q) => q
                .committed()
                .await
                .map(|()| crate::event_store::Queued::done())
                .map_err(|e| e.to_string()),
            Err(e) => Err(e),
        };
        let started_queued = match queued {
            Ok(q) => q,
            Err(e) => {
                self.worker.reply(
                    &self.header,
                    self.answer(
                        ToolResultStatus::Error,
                        None,
                        Some(format!(
                            "the call could not be recorded, so it did not run: {e}"
                        )),
                    ),
                );
                return;
            }
        };
        let t0 = std::time::Instant::now();
        let crashed = self
            .env
            .interrupted
            .count(&self.task_id, &self.call.tool, &self.call.input);
        let designer =
            self.planning.is_some() && air_proto::planning::is_designer_tool(&self.call.tool);
        // The person's hooks judge the call before it runs.
        let hooked = self
            .hooks(air_proto::hooks::HookEvent::PreToolUse, &tool_run_id, None)
            .await;
        let result = if let Some(why) = hooked {
            Err(ToolError(why))
        } else if crashed >= 2 {
            Err(ToolError(format!(
                "this exact call was running when airsd stopped, {crashed} times in this task; it is refused, as it may be what stops airsd: change it (a smaller part, another tool)"
            )))
        } else if let Some(why) = self
            .planning
            .and_then(|phase| air_proto::planning::refusal(phase, &self.call.tool))
        {
            Err(ToolError(why))
        } else if designer {
            self.designer_call()
        } else if air_proto::mcp::is_tool_name(&self.call.tool) {
            self.mcp_call(&tool_run_id).await
        } else if self.call.tool == air_proto::mcp::SEARCH_TOOL {
            self.env
                .mcp
                .search(self.role, &self.call.input)
                .await
                .map_err(ToolError)
        } else if self.call.tool.starts_with("cpp.") {
            self.cpp(&tool_run_id).await
        } else if self.call.tool == air_proto::gate::BEFORE_TOOL {
            self.before_check(&tool_run_id).await
        } else if self.call.tool == "shell.run" {
            self.shell_run(&tool_run_id).await
        } else if self.call.tool == "shell.output" {
            self.shell_output().await
        } else if self.call.tool == "shell.stop" {
            self.shell_stop().await
        } else {
            let (role, tool, input) = (self.role, self.call.tool.clone(), self.call.input.clone());
            let served = self.editor_file().await;
            self.permitted(&tool_run_id, served.as_ref(), move |ctx| {
                crate::tools::call(ctx, role, &tool, input.clone())
            })
            .await
        };
        if let Ok(output) = &result {
            self.hooks(
                air_proto::hooks::HookEvent::PostToolUse,
                &tool_run_id,
                Some(output),
            )
            .await;
        }
        let result = result.and_then(|output| {
            if designer
                || self.call.tool == air_proto::mcp::SEARCH_TOOL
                || air_proto::mcp::is_tool_name(&self.call.tool)
            {
                return Ok(output);
            }
            crate::tools::validate_output(self.shown_as(), &output).map(|()| output)
        });
        let (ended, reply) = match result {
            Ok(output) => (
                self.queue(&p::ToolCompleted {
                    tool_run_id,
                    output: Some(output.clone()),
                    duration_ms: millis(t0),
                })
                .await,
                self.answer(ToolResultStatus::Ok, Some(output), None),
            ),
            Err(e) => (
                self.queue(&p::ToolFailed {
                    tool_run_id,
                    error: e.0.clone(),
                    duration_ms: millis(t0),
                })
                .await,
                self.answer(ToolResultStatus::Error, None, Some(e.0)),
            ),
        };
        let settle = async move {
            if let Err(e) = started_queued.committed().await {
                tracing::warn!("cannot record the start of a tool call: {e}");
            }
            match ended {
                Ok(q) => {
                    if let Err(e) = q.committed().await {
                        tracing::warn!("cannot record the end of a tool call: {e}");
                    }
                }
                Err(e) => tracing::warn!("cannot record the end of a tool call: {e}"),
            }
        };
        if reads_only {
            self.worker.reply(&self.header, reply);
            tokio::spawn(settle);
        } else {
            // An effect is answered once its end is on record.
            settle.await;
            self.worker.reply(&self.header, reply);
        }
    }

    /// Runs the hooks of `event` for this call (`output`: the tool's, after it ran),
    /// each recorded as `hook.completed`; why the call is refused when one refused it.
    async fn hooks(
        &self,
        event: air_proto::hooks::HookEvent,
        tool_run_id: &str,
        output: Option<&Value>,
    ) -> Option<String> {
        if self.env.hooks.is_empty() {
            return None;
        }
        let root = self.env.engine.root();
        let mut input = serde_json::json!({
            "tool_input": crate::scheduler::hooks::tool_input(root, &self.call.input),
        });
        if let Some(out) = output {
            input["tool_response"] = out.clone();
        }
        let launching = crate::scheduler::hooks::Launching {
            quarantine: air_proto::layout::ProjectPaths::new(self.env.engine.root())
                .quarantine()
                .join(tool_run_id),
            engine: &self.env.engine,
            sandbox_exe: self.env.sandbox_exe.as_ref(),
        };
        let outcome = crate::scheduler::hooks::run(
            &self.env.hooks,
            event,
            Some(&self.call.tool),
            input,
            self.env.session.id(),
            &launching,
        )
        .await;
        for mut run in outcome.runs {
            run.tool_run_id = Some(tool_run_id.to_string());
            run.task_id = Some(self.task_id.clone());
            if let Err(e) = self.record(&run).await {
                tracing::warn!("cannot record a hook's run: {e}");
            }
        }
        outcome.blocked
    }

    /// One of the designer's own tools: its input checked field by field (a proposal
    /// compiled as `air plan check` does, its task ids apart from the session's), the
    /// answer saying that the turn ends here. What it asked or proposed is recorded
    /// when the turn ends, from its result, checked again.
    fn designer_call(&self) -> Result<Value, ToolError> {
        use air_proto::planning::{
            AskUser, ChangeDescription, Proposal, Settle, ASK_USER, CLASSIFY, SETTLE,
        };
        let tool = self.call.tool.as_str();
        let input = self.call.input.clone();
        let problems = |p: Vec<String>| -> Result<(), ToolError> {
            if p.is_empty() {
                Ok(())
            } else {
                Err(ToolError(format!(
                    "`{}` refused: {}",
                    crate::tools::provider_name(tool),
                    p.join("; ")
                )))
            }
        };
        match tool {
            ASK_USER => {
                let ask: AskUser = crate::tools::input(tool, input)?;
                problems(ask.problems())?;
                Ok(serde_json::json!({
                    "asked": ask.questions.len(),
                    "next": "your turn ends here: the user's answers start your next turn",
                }))
            }
            CLASSIFY => {
                let change: ChangeDescription = crate::tools::input(tool, input)?;
                let known: Vec<String> = self
                    .env
                    .session
                    .bus()
                    .read(|p, _| p.tasks.iter().map(|t| t.id.clone()).collect());
                problems(air_proto::planning::change_problems(&change, &known))?;
                Ok(serde_json::json!({
                    "scope": change.scope.as_str(),
                    "next": "your turn ends here: airsd works out what the change impacts, then asks you to re-plan that part",
                }))
            }
            SETTLE => {
                let settle: Settle = crate::tools::input(tool, input)?;
                problems(settle.problems())?;
                Ok(serde_json::json!({
                    "stated": settle.requirements.len(),
                    "next": "your turn ends here: the user agrees or says what is wrong",
                }))
            }
            _ => {
                let proposal: Proposal = crate::tools::input(tool, input)?;
                let taken: Vec<String> = self
                    .env
                    .session
                    .bus()
                    .read(|p, _| p.tasks.iter().map(|t| t.id.clone()).collect());
                let frozen = self.replan.then_some(self.fixed.as_slice());
                let pl = crate::scheduler::core::proposed(
                    &self.task_id,
                    &self.requirement,
                    proposal,
                    &taken,
                    frozen,
                )
                .map_err(|e| {
                    ToolError(format!(
                        "the plan was not accepted; fix each error and call {} again:\n{}",
                        crate::tools::provider_name(tool),
                        e.join("\n")
                    ))
                })?;
                Ok(serde_json::json!({
                    "tasks": pl.tasks,
                    "waves": pl.waves,
                    "next": "your turn ends here: the user confirms, asks for changes or rejects it",
                }))
            }
        }
    }

    /// Runs `f` (a tool's checks, or all of it) off the async threads with what a
    /// person granted so far; when it raises questions, asks them and runs it again
    /// with the answers. A refusal ends it.
    async fn with_permission<T: Send + 'static>(
        &self,
        tool_run_id: &str,
        f: impl Fn(&crate::tools::FsContext<'_>) -> Result<T, ToolError> + Send + Sync + 'static,
    ) -> Result<T, ToolError> {
        self.permitted(tool_run_id, None, f).await
    }

    /// [`ToolJob::with_permission`], for a file the person's editor may serve: each
    /// attempt reads the editor's text of it afresh (after a person's answer too), and
    /// a write holds the session's editor writes from that read until the editor has
    /// the result, never across a question to the person.
    pub(super) async fn permitted<T: Send + 'static>(
        &self,
        tool_run_id: &str,
        served: Option<&editor::Served>,
        f: impl Fn(&crate::tools::FsContext<'_>) -> Result<T, ToolError> + Send + Sync + 'static,
    ) -> Result<T, ToolError> {
        let f = Arc::new(f);
        let editors = self.env.session.editors();
        let mut granted = HashSet::new();
        for _ in 0..=MAX_ASK_ROUNDS {
            let writing = match served {
                Some(s) if s.write => Some(editors.writing().await),
                _ => None,
            };
            // The editor is asked only while no command of the session runs, which
            // could swap the file for a link between the checks and the editor's read
            // or save.
            let quiet = match served {
                Some(_) if !self.env.background.any_running() => editors.quiet(),
                _ => None,
            };
            let overlay = match served {
                Some(s) if s.read && quiet.is_some() => self.editor_text(&s.path).await,
                _ => None,
            };
            let g = f.clone();
            let each: Arc<Checked<T>> = Arc::new(move |ctx| {
                let ctx = crate::tools::FsContext {
                    overlay: overlay.as_ref(),
                    ..*ctx
                };
                g(&ctx)
            });
            let (result, asks) = self.attempt(&granted, each).await;
            if asks.is_empty() {
                if let (Ok(_), Some(s)) = (&result, served) {
                    if s.write && quiet.is_some() {
                        self.put_in_editor(&s.path).await;
                    }
                }
                return result;
            }
            drop(quiet);
            drop(writing);
            self.ask_person(tool_run_id, &asks)
                .await
                .map_err(ToolError)?;
            granted.extend(asks.into_iter().map(|a| a.key));
        }
        Err(ToolError(
            "the call kept needing new permissions; stopped".into(),
        ))
    }

    /// One run of `f`: its result and the questions it raised (a call that raised
    /// one did nothing).
    async fn attempt<T: Send + 'static>(
        &self,
        granted: &HashSet<String>,
        f: Arc<Checked<T>>,
    ) -> (Result<T, ToolError>, Vec<Ask>) {
        let env = self.env.clone();
        let (agent, role, scope, granted, failure) = (
            self.agent_id.clone(),
            self.role,
            self.scope.clone(),
            granted.clone(),
            self.failure.clone().unwrap_or_default(),
        );
        let tag = BackupTag {
            session_id: env.session.id().to_string(),
            agent_type: role.as_str().to_string(),
            agent_id: agent.clone(),
            reason: format!("{} for task {}", self.call.tool, self.task_id),
        };
        tokio::task::spawn_blocking(move || {
            let scope = match crate::tools::scope::Scope::new(&scope) {
                Ok(s) => s,
                Err(e) => return (Err(e), Vec::new()),
            };
            // Off the async threads too: the debugger's evidence is a database read.
            let evidence = role == AgentType::Debugger
                && has_evidence(&env.session, &agent, &failure, env.engine.root());
            let permits =
                Permits::new(&env.engine, Some(&env.backups), tag, granted).with_evidence(evidence);
            let ctx = crate::tools::FsContext {
                root: env.engine.root(),
                agent_id: &agent,
                ledger: &env.ledger,
                scope: &scope,
                perm: &permits,
                launcher: &env.launcher,
                overlay: None,
            };
            let result = f(&ctx);
            (result, permits.take_asks())
        })
        .await
        .unwrap_or_else(|e| (Err(ToolError(format!("the tool crashed: {e}"))), Vec::new()))
    }

    /// Records the questions as one `permission.requested` and waits for its answer.
    async fn ask_person(&self, tool_run_id: &str, asks: &[Ask]) -> Result<(), String> {
        self.asker(tool_run_id).ask(asks).await
    }

    /// What asks a person about this call, for a part of airsd that works while it
    /// runs (the network proxy).
    fn asker(&self, tool_run_id: &str) -> Asker {
        Asker {
            session: self.env.session.clone(),
            source: self.source(),
            tool: self.call.tool.clone(),
            tool_run_id: tool_run_id.to_string(),
            agent_id: self.agent_id.clone(),
            task_id: self.task_id.clone(),
        }
    }
}

/// Asks a person about one tool call: the question recorded as `permission.requested`
/// (the run's `on_ask` policy or a client answers it), the answer awaited. Owned, so
/// that what works while the call runs (the network proxy) can ask too.
#[derive(Clone)]
pub struct Asker {
    session: Arc<Session>,
    source: EventSource,
    tool: String,
    tool_run_id: String,
    agent_id: String,
    task_id: String,
}

impl crate::proxy::Asks for Asker {
    fn ask<'a>(
        &'a self,
        ask: Ask,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), String>> + Send + 'a>> {
        Box::pin(async move { Asker::ask(self, &[ask]).await })
    }
}

impl Asker {
    async fn record<E: Event>(&self, event: &E) -> Result<(), String> {
        let e = RuntimeEvent::of(self.session.id(), self.source.clone(), event)
            .map_err(|e| e.to_string())?;
        self.session
            .store()
            .append_batch(vec![e])
            .await
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    /// Records the questions as one `permission.requested` and waits for its answer.
    pub async fn ask(&self, asks: &[Ask]) -> Result<(), String> {
        let request_id = air_proto::ids::new_id();
        let action = asks
            .iter()
            .map(|a| a.action.as_str())
            .collect::<Vec<_>>()
            .join("; ");
        let mut risks: Vec<&str> = asks.iter().map(|a| a.risk.as_str()).collect();
        risks.dedup();
        let reasons: Vec<String> = asks
            .iter()
            .map(|a| format!("{}: {}", a.action, a.reason))
            .collect();
        // Subscribed first, so the answer cannot slip between the request and the wait.
        let mut sub = self.session.bus().subscribe();
        self.record(&p::PermissionRequested {
            request_id: request_id.clone(),
            action: action.clone(),
            tool: Some(self.tool.clone()),
            tool_run_id: Some(self.tool_run_id.clone()),
            agent_id: Some(self.agent_id.clone()),
            task_id: Some(self.task_id.clone()),
            risk: Some(risks.join(",")),
            reason: Some(reasons.join("; ")),
        })
        .await
        .map_err(|e| {
            format!("permission to {action} is needed, and the question could not be recorded: {e}")
        })?;
        // Watchers see why the call is still going (ephemeral).
        let _ = self
            .record(&p::ToolProgress {
                tool_run_id: self.tool_run_id.clone(),
                message: Some(format!("waiting for permission to {action}")),
                fraction: None,
            })
            .await;
        let risk = risks.join(",");
        let verdict = |d: p::PermissionDecision, by: &str, reason: Option<&str>| match d {
            p::PermissionDecision::Allow => Ok(()),
            p::PermissionDecision::Deny => Err(format!(
                "permission to {action} [{risk}] was not given ({}{})",
                if by == p::EXPIRED {
                    "the question expired".to_string()
                } else {
                    format!("denied by {by}")
                },
                reason.map(|r| format!(": {r}")).unwrap_or_default()
            )),
        };
        loop {
            match sub.recv().await {
                Recv::Delta(d) => {
                    if d.event.event_type != ev::PermissionDecisionRecorded::TYPE
                        || d.event.payload.get("request_id").and_then(Value::as_str)
                            != Some(request_id.as_str())
                    {
                        continue;
                    }
                    let decision: p::PermissionDecisionRecorded =
                        serde_json::from_value(d.event.payload.clone())
                            .map_err(|e| format!("the answer could not be read: {e}"))?;
                    return verdict(
                        decision.decision,
                        &decision.decided_by,
                        decision.reason.as_deref(),
                    );
                }
                Recv::Resync => {
                    sub = self.session.bus().subscribe();
                    if let Some((decision, by, reason)) = self.decided(&request_id)? {
                        let decision = if decision == "allow" {
                            p::PermissionDecision::Allow
                        } else {
                            p::PermissionDecision::Deny
                        };
                        return verdict(decision, &by, reason.as_deref());
                    }
                }
                Recv::Closed => {
                    return Err(format!(
                        "permission to {action} was not given: the session closed"
                    ))
                }
            }
        }
    }

    /// The recorded answer to a request, if there is one yet.
    fn decided(
        &self,
        request_id: &str,
    ) -> Result<Option<(String, String, Option<String>)>, String> {
        let conn = self
            .session
            .readers()
            .get()
            .map_err(|e| format!("cannot read the answer: {e}"))?;
        crate::event_store::query::permission_answer(&conn, request_id)
            .map_err(|e| format!("cannot read the answer: {e}"))
    }
}

/// The project root as the tools see it (resolved).
pub fn resolved_root(root: &std::path::Path) -> PathBuf {
    std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf())
}

/// Whether this debugger has evidence that bears on its failure on record: a run of
/// one of the failing checks to its end (read as the evidence gate reads commands;
/// with no checks, any command that ran something), a read of a file the failure
/// names (any read when it names none), or a build or test run of the C and C++
/// tools. The same rule as its worker's loop, decided here from airsd's records.
fn has_evidence(
    session: &Session,
    agent_id: &str,
    failure: &air_proto::gate::Failure,
    root: &std::path::Path,
) -> bool {
    use crate::event_store::query;
    let Ok(conn) = session.readers().get() else {
        return false;
    };
    if query::has_completed_tool(&conn, agent_id, &["cpp.build", "cpp.test"]).unwrap_or(false) {
        return true;
    }
    let read = query::completed_inputs(&conn, agent_id, "fs.read").unwrap_or_default();
    if read.iter().any(|input| {
        input
            .get("path")
            .and_then(serde_json::Value::as_str)
            .is_some_and(|p| failure.reads(p))
    }) {
        return true;
    }
    let checks = &failure.checks;
    let ran = query::completed_commands(&conn, agent_id).unwrap_or_default();
    if checks.is_empty() {
        return ran.iter().any(|(c, _)| !air_proto::gate::idle(c));
    }
    let resolved = resolved_root(root);
    let reading = crate::evidence::reading(&resolved);
    ran.iter().any(|(command, cwd)| {
        // Where it ran, from the project root, as the command's own record reads it
        // (the root as resolved, or as given: a linked root is either).
        let cwd_path = std::path::Path::new(cwd);
        let dir = cwd_path
            .strip_prefix(&resolved)
            .or_else(|_| cwd_path.strip_prefix(root))
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_else(|_| {
                if cwd.is_empty() {
                    String::new()
                } else {
                    "..".into()
                }
            });
        checks.iter().any(|c| {
            air_proto::gate::compare(command, Some(&dir), c, &reading)
                == air_proto::gate::Match::Runs
        })
    })
}
