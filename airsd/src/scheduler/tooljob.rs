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

use crate::bus::Recv;
use crate::session::Session;
use crate::supervisor::Worker;
use crate::tools::permission::{Ask, Engine, Permits};
use crate::tools::ToolError;

/// Whether another agent's command ran beside this one, and what that did to its
/// changed files.
enum Shared {
    No,
    /// The files outside the task's declared places, left out.
    LeftOut(usize),
    /// The task declares no places: every file kept, though some may be the other's.
    Kept(usize),
}

/// A command of the run while it runs: its span in the ledger ends when this goes,
/// whichever way the call ends.
struct Running {
    ledger: Arc<crate::tools::ReadLedger>,
    id: u64,
}

impl Running {
    fn new(ledger: &Arc<crate::tools::ReadLedger>, agent: &str) -> Running {
        Running {
            ledger: ledger.clone(),
            id: ledger.command_started(agent),
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.ledger.command_ended(self.id);
    }
}

/// Rounds of questions one call may raise (each round asks everything it found).
const MAX_ASK_ROUNDS: usize = 4;

/// A tool's work (or its checks) as it runs off the async threads.
type Checked<T> = dyn Fn(&crate::tools::FsContext<'_>) -> Result<T, ToolError> + Send + Sync;

/// What a tool call needs from the run.
#[derive(Clone)]
pub struct ToolEnv {
    pub session: Arc<Session>,
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
}

pub struct ToolJob {
    pub env: ToolEnv,
    pub worker: Worker,
    pub header: air_proto::ipc::IpcHeader,
    pub call: air_proto::ipc::ToolCall,
    pub agent_id: String,
    pub role: AgentType,
    pub task_id: String,
    pub scope: air_proto::task::TaskScope,
    /// A planning turn's phase: what its designer may call (P0-5, P1-16).
    pub planning: Option<air_proto::planning::PlanningPhase>,
    /// A re-planning turn: its proposal keeps the completed tasks.
    pub replan: bool,
    /// A planning turn's requirement, in the user's words (its `[no-…]` markers are
    /// kept).
    pub requirement: String,
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
        let input = input.to_string();
        self.0
            .iter()
            .filter(|(t, n, i)| t == task_id && n == tool && *i == input)
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
            .and_then(|o| crate::tools::render::text(&self.call.tool, o));
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
            .map_err(|e| e.to_string())?;
        self.env
            .session
            .store()
            .append(e)
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
        let result = if crashed >= 2 {
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
        } else if self.call.tool == "shell.run" {
            self.shell_run(&tool_run_id).await
        } else if self.call.tool == "shell.output" {
            self.shell_output().await
        } else {
            let (role, tool, input) = (self.role, self.call.tool.clone(), self.call.input.clone());
            self.with_permission(&tool_run_id, move |ctx| {
                crate::tools::call(ctx, role, &tool, input.clone())
            })
            .await
        };
        let result = result.and_then(|output| {
            if designer {
                return Ok(output);
            }
            crate::tools::validate_output(&self.call.tool, &output).map(|()| output)
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

    /// One of the designer's own tools: its input checked field by field (a proposal
    /// compiled as `air plan check` does, its task ids apart from the session's), the
    /// answer saying that the turn ends here. What it asked or proposed is recorded
    /// when the turn ends, from its result, checked again.
    fn designer_call(&self) -> Result<Value, ToolError> {
        use air_proto::planning::{AskUser, Proposal, Settle, ASK_USER, SETTLE};
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
                let (taken, done): (Vec<String>, Vec<(String, String)>) =
                    self.env.session.bus().read(|p, _| {
                        let done = p
                            .tasks
                            .iter()
                            .filter(|t| t.status == air_proto::projection::TaskStatus::Completed)
                            .filter(|t| !air_proto::conversation::in_conversation(&t.id))
                            .filter(|t| !t.id.contains(':'))
                            .map(|t| (t.id.clone(), t.title.clone()))
                            .collect();
                        (p.tasks.iter().map(|t| t.id.clone()).collect(), done)
                    });
                let frozen = self.replan.then_some(done.as_slice());
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

    /// `shell.output`: a page of a command's kept output, from the ArtifactStore.
    async fn shell_output(&self) -> Result<Value, ToolError> {
        use crate::tools::exec::{OutputInput, OutputOutput, Stream, OUTPUT_PAGE};
        crate::tools::allowed(self.role, "shell.output")?;
        let input: OutputInput = crate::tools::input("shell.output", self.call.input.clone())?;
        let id = input.command_run_id.trim().to_string();
        if id.is_empty()
            || !id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(ToolError(format!(
                "command_run_id: `{id}` is not a command_run_id (a shell_run answer names it)"
            )));
        }
        let name = match input.stream {
            Stream::Stdout => "stdout.log",
            Stream::Stderr => "stderr.log",
        };
        let store = self.env.artifacts.clone();
        let (offset, limit) = (
            input.offset.unwrap_or(0),
            input.limit.unwrap_or(OUTPUT_PAGE).clamp(1, OUTPUT_PAGE),
        );
        let read = tokio::task::spawn_blocking(move || {
            let rel = format!("command-runs/{id}/{name}");
            let gz = format!("{rel}.gz");
            let rel = if store.dir().join(&gz).exists() {
                gz
            } else {
                rel
            };
            store.read(&rel, offset, limit).map(|r| (r, id))
        })
        .await
        .map_err(|e| ToolError(format!("cannot read the output: {e}")))?;
        let ((bytes, more), id) = read.map_err(|e| {
            ToolError(if e.kind() == std::io::ErrorKind::NotFound {
                format!(
                    "no kept {name} for command_run_id `{}` in this session (a command with no output on that stream keeps none)",
                    input.command_run_id
                )
            } else {
                format!("cannot read the output: {e}")
            })
        })?;
        let out = OutputOutput {
            command_run_id: id,
            stream: input.stream,
            offset,
            text: String::from_utf8_lossy(&bytes).into_owned(),
            next_offset: more.then(|| offset + bytes.len() as u64),
        };
        serde_json::to_value(out).map_err(|e| ToolError(format!("cannot encode the output: {e}")))
    }

    /// `shell.run`: judged (with questions when needed), recorded, run with its
    /// output streamed and stored, and recorded again at its end.
    async fn shell_run(&self, tool_run_id: &str) -> Result<Value, ToolError> {
        use crate::tools::exec::{self, Channel};
        crate::tools::allowed(self.role, "shell.run")?;
        let input: exec::RunInput = crate::tools::input("shell.run", self.call.input.clone())?;
        let role = self.role;
        let sandbox = self
            .env
            .sandbox_exe
            .clone()
            .filter(|_| self.env.engine.sandbox());
        let confined = exec::Confinement {
            writes: sandbox.as_ref().is_some_and(|(_, p)| p.landlock),
            views: sandbox.as_ref().is_some_and(|(_, p)| p.isolation.is_ok()),
        };
        let prepared = self
            .with_permission(tool_run_id, move |ctx| {
                exec::prepare(ctx, &input, role, confined)
            })
            .await?;
        let command_run_id = air_proto::ids::new_id();
        // What the working tree looks like before, to tell the files the command
        // changes: read while its start is being committed.
        let root = self.env.engine.root().to_path_buf();
        let since = std::time::Instant::now();
        let running = Running::new(&self.env.ledger, &self.agent_id);
        let before = tokio::task::spawn_blocking(move || crate::tools::git::Dirty::read(&root));
        self.record(&p::CommandStarted {
            command_run_id: command_run_id.clone(),
            command: prepared.command.clone(),
            cwd: Some(prepared.cwd.display().to_string()),
            tool_run_id: Some(tool_run_id.to_string()),
            agent_id: Some(self.agent_id.clone()),
            task_id: Some(self.task_id.clone()),
            origin_message_id: self.call.origin_message_id.clone(),
        })
        .await
        .map_err(|e| {
            ToolError(format!(
                "the command could not be recorded, so it did not run: {e}"
            ))
        })?;

        let store = self.env.artifacts.clone();
        let dir = format!("command-runs/{command_run_id}");
        let mut logs = [
            store.create(&format!("{dir}/stdout.log")).ok(),
            store.create(&format!("{dir}/stderr.log")).ok(),
        ];
        let mut captures = [exec::Capture::default(), exec::Capture::default()];
        let mut carry: [Vec<u8>; 2] = [Vec::new(), Vec::new()];
        let mut streamed = 0u64;
        let mut log_error: Option<String> = None;
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(Channel, String)>();
        // Live output: ephemeral deltas for clients and tool.stream for the agent.
        let forward = {
            let (session, worker, header) = (
                self.env.session.clone(),
                self.worker.clone(),
                self.header.clone(),
            );
            let (source, call_id, run_id) = (
                self.source(),
                self.call.tool_call_id.clone(),
                command_run_id.clone(),
            );
            tokio::spawn(async move {
                while let Some((channel, text)) = rx.recv().await {
                    let delta = p::OutputDelta {
                        command_run_id: run_id.clone(),
                        data: text.clone(),
                    };
                    let (event, stream) = match channel {
                        Channel::Stdout => (
                            RuntimeEvent::of(session.id(), source.clone(), &ev::StdoutDelta(delta)),
                            air_proto::ipc::StreamChannel::Stdout,
                        ),
                        Channel::Stderr => (
                            RuntimeEvent::of(session.id(), source.clone(), &ev::StderrDelta(delta)),
                            air_proto::ipc::StreamChannel::Stderr,
                        ),
                    };
                    if let Ok(e) = event {
                        let _ = session.store().append(e).await;
                    }
                    worker.reply(
                        &header,
                        IpcBody::ToolStream(air_proto::ipc::ToolStream {
                            tool_call_id: call_id.clone(),
                            channel: stream,
                            text,
                        }),
                    );
                }
            })
        };
        let engine = &self.env.engine;
        let writable = crate::sandbox::writable(
            engine.root(),
            engine.home(),
            &[engine.writable_roots(), &prepared.extra_writable[..]].concat(),
        );
        let isolate = confined
            .views
            .then(|| engine.views(&writable, &prepared.visible, &prepared.unlocked));
        let launch = exec::Launch {
            launcher: sandbox.as_ref().map(|(exe, _)| exe.as_path()),
            policy: crate::sandbox::Policy { writable, isolate },
            env: exec::command_env(std::env::vars_os(), engine.shell_env(), engine.home()),
        };
        let worker = self.worker.clone();
        let before = before.await.ok().flatten();
        let ended = exec::execute(
            &prepared,
            &launch,
            |channel, data| {
                let i = usize::from(channel == Channel::Stderr);
                if let Some(log) = logs[i].as_mut() {
                    if let Err(e) = log.write(data) {
                        log_error.get_or_insert(e.to_string());
                    }
                }
                captures[i].push(data);
                if streamed >= exec::STREAM_CAP {
                    return;
                }
                streamed += data.len() as u64;
                carry[i].extend_from_slice(data);
                let valid = match std::str::from_utf8(&carry[i]) {
                    Ok(_) => carry[i].len(),
                    Err(e) if e.error_len().is_none() => e.valid_up_to(),
                    Err(_) => carry[i].len(),
                };
                let text = String::from_utf8_lossy(&carry[i][..valid]).into_owned();
                carry[i].drain(..valid);
                let mut text = text;
                if streamed >= exec::STREAM_CAP {
                    text.push_str(
                        "\n[live output stops here; the rest is kept in the command's artifacts]\n",
                    );
                }
                let _ = tx.send((channel, text));
            },
            || worker.exited(),
        )
        .await;
        drop(tx);
        // And after: read while its output is stored and recorded.
        // Another agent's write through the file tools while it ran is that agent's.
        // When another agent's command ran at the same time (up to the moment the
        // after-state is read), only the task's declared places count: which command
        // changed the rest cannot be told. A task that declares none keeps them all,
        // and the answer says they may be another's.
        let after = {
            let root = engine.root().to_path_buf();
            let ledger = self.env.ledger.clone();
            let agent = self.agent_id.clone();
            let scope = crate::tools::scope::Scope::new(&self.scope).ok();
            tokio::task::spawn_blocking(move || {
                let now = crate::tools::git::Dirty::read(&root);
                let shared = ledger.overlapped(running.id);
                drop(running);
                let theirs = ledger.written_by_others_since(&agent, since);
                let physical = std::fs::canonicalize(&root).unwrap_or_else(|_| root.clone());
                let changed: Vec<String> = before
                    .zip(now)
                    .map(|(b, a)| b.changed(&a))
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|f| !theirs.contains(&physical.join(f)))
                    .collect();
                if !shared {
                    return (changed, Shared::No);
                }
                match scope.as_ref() {
                    Some(s) if changed.iter().any(|f| s.declares(f).is_some()) => {
                        let (mine, unsure): (Vec<String>, Vec<String>) = changed
                            .into_iter()
                            .partition(|f| s.declares(f) == Some(true));
                        (mine, Shared::LeftOut(unsure.len()))
                    }
                    _ => {
                        let n = changed.len();
                        (changed, Shared::Kept(n))
                    }
                }
            })
        };
        let _ = forward.await;
        let ended = match ended {
            Ok(e) => e,
            Err(e) => {
                for log in logs.into_iter().flatten() {
                    log.discard();
                }
                let _ = self
                    .record(&p::CommandFailed {
                        command_run_id: command_run_id.clone(),
                        error: e.0.clone(),
                        exit_code: None,
                        duration_ms: Some(0),
                    })
                    .await;
                return Err(e);
            }
        };
        // The logs become artifacts (compressed when large; off the async threads).
        let mut uris = [None, None];
        for (i, log) in logs.into_iter().enumerate() {
            let Some(log) = log else { continue };
            if log.is_empty() {
                log.discard();
                continue;
            }
            let store = store.clone();
            let stored = tokio::task::spawn_blocking(move || {
                store.finish(log, air_proto::result::ArtifactType::Other, true)
            })
            .await;
            match stored {
                Ok(Ok(stored)) => {
                    let name = if i == 0 { "stdout.log" } else { "stderr.log" };
                    let recorded = self
                        .record(&p::ArtifactCreated {
                            artifact: stored.artifact.clone(),
                            path: Some(stored.rel.clone()),
                            original_name: Some(name.into()),
                            task_id: Some(self.task_id.clone()),
                            agent_id: Some(self.agent_id.clone()),
                            tool_run_id: Some(tool_run_id.to_string()),
                            command_run_id: Some(command_run_id.clone()),
                            entity_type: None,
                            entity_id: None,
                        })
                        .await;
                    match recorded {
                        Ok(()) => uris[i] = Some(stored.artifact.uri),
                        Err(e) => {
                            log_error.get_or_insert(e);
                        }
                    }
                }
                Ok(Err(e)) => {
                    log_error.get_or_insert(e.to_string());
                }
                Err(e) => {
                    log_error.get_or_insert(e.to_string());
                }
            }
        }
        let duration_ms = u64::try_from(ended.duration.as_millis()).unwrap_or(u64::MAX);
        let failure = if ended.timed_out {
            Some(format!(
                "timed out after {}; the process group was killed",
                humantime::format_duration(prepared.timeout)
            ))
        } else if ended.cancelled {
            Some("cancelled: the agent ended; the process group was killed".to_string())
        } else {
            ended.signal.map(|s| format!("killed by signal {s}"))
        };
        let recorded = match &failure {
            None => {
                self.record(&p::CommandCompleted {
                    command_run_id: command_run_id.clone(),
                    exit_code: ended.exit_code.unwrap_or_default(),
                    duration_ms: Some(duration_ms),
                })
                .await
            }
            Some(error) => {
                self.record(&p::CommandFailed {
                    command_run_id: command_run_id.clone(),
                    error: error.clone(),
                    exit_code: ended.exit_code,
                    duration_ms: Some(duration_ms),
                })
                .await
            }
        };
        if let Err(e) = recorded {
            tracing::warn!("cannot record the end of command {command_run_id}: {e}");
        }
        let mut notes: Vec<String> = failure.into_iter().collect();
        let (changed_files, shared) = after.await.unwrap_or((Vec::new(), Shared::No));
        match shared {
            Shared::LeftOut(n) if n > 0 => notes.push(format!(
                "{n} file(s) outside this task's paths changed while another agent's command ran too; they are not counted as this task's changes"
            )),
            Shared::Kept(n) if n > 0 => notes.push(format!(
                "another agent's command ran at the same time: some of the {n} changed file(s) may be its"
            )),
            _ => {}
        }
        if let Some(e) = log_error {
            notes.push(format!("the full output could not be kept: {e}"));
        }
        if exec::without_pipefail() {
            notes.push(
                "ran by sh, as this machine has no bash: a pipeline's status is its last command's"
                    .into(),
            );
        }
        match (&sandbox, confined.views) {
            (None, _) => notes.push("ran without an OS sandbox".into()),
            (Some((_, p)), false) => {
                notes.push(format!(
                "ran without the namespaces that hide air's state and the credential stores: {}",
                p.isolation.as_ref().err().map_or("turned off", String::as_str)
            ))
            }
            _ => {}
        }
        let out = exec::RunOutput {
            command_run_id,
            exit_code: ended.exit_code,
            signal: ended.signal,
            timed_out: ended.timed_out,
            cancelled: ended.cancelled,
            duration_ms,
            stdout: captures[0].text(uris[0].as_deref()),
            stderr: captures[1].text(uris[1].as_deref()),
            stdout_bytes: captures[0].total,
            stderr_bytes: captures[1].total,
            truncated: captures.iter().any(exec::Capture::truncated),
            artifacts: uris.into_iter().flatten().collect(),
            sandbox: sandbox
                .as_ref()
                .map_or("none", |(_, p)| p.label(confined.views))
                .into(),
            changed_files,
            notes,
        };
        serde_json::to_value(out).map_err(|e| ToolError(format!("cannot encode the output: {e}")))
    }

    /// Runs `f` (a tool's checks, or all of it) off the async threads with what a
    /// person granted so far; when it raises questions, asks them and runs it again
    /// with the answers. A refusal ends it.
    async fn with_permission<T: Send + 'static>(
        &self,
        tool_run_id: &str,
        f: impl Fn(&crate::tools::FsContext<'_>) -> Result<T, ToolError> + Send + Sync + 'static,
    ) -> Result<T, ToolError> {
        let f = Arc::new(f);
        let mut granted = HashSet::new();
        for _ in 0..=MAX_ASK_ROUNDS {
            let (result, asks) = self.attempt(&granted, f.clone()).await;
            if asks.is_empty() {
                return result;
            }
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
        let (agent, role, scope, granted) = (
            self.agent_id.clone(),
            self.role,
            self.scope.clone(),
            granted.clone(),
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
            let evidence = role == AgentType::Debugger && has_evidence(&env.session, &agent);
            let permits =
                Permits::new(&env.engine, Some(&env.backups), tag, granted).with_evidence(evidence);
            let ctx = crate::tools::FsContext {
                root: env.engine.root(),
                agent_id: &agent,
                ledger: &env.ledger,
                scope: &scope,
                perm: &permits,
            };
            let result = f(&ctx);
            (result, permits.take_asks())
        })
        .await
        .unwrap_or_else(|e| (Err(ToolError(format!("the tool crashed: {e}"))), Vec::new()))
    }

    /// Records the questions as one `permission.requested` and waits for its answer.
    async fn ask_person(&self, tool_run_id: &str, asks: &[Ask]) -> Result<(), String> {
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
        let mut sub = self.env.session.bus().subscribe();
        self.record(&p::PermissionRequested {
            request_id: request_id.clone(),
            action: action.clone(),
            tool: Some(self.call.tool.clone()),
            tool_run_id: Some(tool_run_id.to_string()),
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
                tool_run_id: tool_run_id.to_string(),
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
                    sub = self.env.session.bus().subscribe();
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
            .env
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

/// Whether this agent has run a command to its end (its recorded evidence).
fn has_evidence(session: &Session, agent_id: &str) -> bool {
    session.readers().get().is_ok_and(|conn| {
        crate::event_store::query::has_completed_command(&conn, agent_id).unwrap_or(false)
    })
}
