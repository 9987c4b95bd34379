//! The shell tools of a tool call: `shell.run` (judged, recorded, run under the
//! sandbox with its output streamed and kept, its evidence derived and recorded in
//! the same transaction as its end) and `shell.output` (a page of a command's kept
//! output).

use std::sync::Arc;

use air_proto::event::{EventSource, RuntimeEvent};
use air_proto::events::{self as ev, Event};
use air_proto::ipc::IpcBody;
use air_proto::payload as p;
use serde_json::Value;

use super::{resolved_root, ToolJob};

/// How long a background command's call waits for its first output (or its end)
/// before it answers.
const BACKGROUND_FIRST_WORDS: std::time::Duration = std::time::Duration::from_secs(3);
use crate::profiles::cpp::diagnose::Diagnostic;
use crate::tools::ToolError;

/// A command_run_id the model named, checked to be one (it names a directory of the
/// session's artifacts).
pub(super) fn command_run_id(id: &str) -> Result<String, ToolError> {
    // Both forms a result cites: `<id>` and `command-run:<id>`.
    let id = id.trim();
    let id = id
        .strip_prefix(air_proto::gate::COMMAND_RUN)
        .unwrap_or(id)
        .to_string();
    if id.is_empty()
        || !id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(ToolError(format!(
            "command_run_id: `{id}` is not a command_run_id (a shell_run answer names it)"
        )));
    }
    Ok(id)
}

/// One command's run as a tool's step: its answer, the compiler's, linker's or
/// analyzer's findings, and the tests its output showed.
pub(super) struct Ran {
    pub out: crate::tools::exec::RunOutput,
    pub found: Vec<Diagnostic>,
    pub count: Option<crate::evidence::Count>,
}

/// What a command's logs are kept as (D-054).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Logs {
    /// A command of `shell.run` (or of a tool that is neither a build nor tests).
    Command,
    /// A build: `builds/<command_run_id>/`, build logs.
    Build,
    /// A test run: `tests/<command_run_id>/`, test logs.
    Test,
}

impl Logs {
    fn dir(self) -> &'static str {
        match self {
            Logs::Command => crate::artifacts::COMMAND_LOG_DIRS[0],
            Logs::Build => crate::artifacts::COMMAND_LOG_DIRS[1],
            Logs::Test => crate::artifacts::COMMAND_LOG_DIRS[2],
        }
    }

    fn artifact_type(self) -> air_proto::result::ArtifactType {
        match self {
            Logs::Command => air_proto::result::ArtifactType::Other,
            Logs::Build => air_proto::result::ArtifactType::BuildLog,
            Logs::Test => air_proto::result::ArtifactType::TestLog,
        }
    }
}

/// An event payload as the event of this session and source.
trait IntoEvent {
    fn into_event(self, session: &str, source: EventSource) -> Result<RuntimeEvent, String>;
}

impl<E: Event> IntoEvent for E {
    fn into_event(self, session: &str, source: EventSource) -> Result<RuntimeEvent, String> {
        RuntimeEvent::of(session, source, &self).map_err(|e| e.to_string())
    }
}

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

impl ToolJob {
    /// `shell.output`: a page of a command's kept output, from the ArtifactStore.
    pub(super) async fn shell_output(&self) -> Result<Value, ToolError> {
        use crate::tools::exec::{OutputInput, OutputOutput, Stream, OUTPUT_PAGE};
        crate::tools::allowed(self.role, "shell.output")?;
        let input: OutputInput = crate::tools::input("shell.output", self.call.input.clone())?;
        let id = command_run_id(&input.command_run_id)?;
        let name = match input.stream {
            Stream::Stdout => "stdout.log",
            Stream::Stderr => "stderr.log",
        };
        let store = self.env.artifacts.clone();
        let (offset, limit) = (
            input.offset.unwrap_or(0),
            input.limit.unwrap_or(OUTPUT_PAGE).clamp(1, OUTPUT_PAGE),
        );
        // A command still running in the background: what it printed so far.
        if let Some(live) = self.env.background.get(&id).filter(|l| l.ended().is_none()) {
            let i = usize::from(input.stream == Stream::Stderr);
            if offset >= super::background::LIVE_CAP as u64 {
                return Err(ToolError(format!(
                    "offset: a running command's output is read here up to its first {} bytes; the rest is in its logs once it ends (shell_stop ends it)",
                    super::background::LIVE_CAP
                )));
            }
            let (bytes, more, total) = live.read(i, offset, limit);
            let next = offset + bytes.len() as u64;
            let out = OutputOutput {
                command_run_id: id,
                stream: input.stream,
                offset,
                text: String::from_utf8_lossy(&bytes).into_owned(),
                next_offset: (more || total > next).then_some(next),
                running: true,
            };
            return serde_json::to_value(out)
                .map_err(|e| ToolError(format!("cannot encode the output: {e}")));
        }
        let read = tokio::task::spawn_blocking(move || {
            let rel = store.command_log(&id, name);
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
            running: false,
        };
        serde_json::to_value(out).map_err(|e| ToolError(format!("cannot encode the output: {e}")))
    }

    /// `shell.run`: judged (with questions when needed), recorded, run with its
    /// output streamed and stored, and recorded again at its end.
    pub(super) async fn shell_run(&self, tool_run_id: &str) -> Result<Value, ToolError> {
        crate::tools::allowed(self.role, "shell.run")?;
        let input: crate::tools::exec::RunInput =
            crate::tools::input("shell.run", self.call.input.clone())?;
        if input.background {
            return self.shell_run_background(tool_run_id, input).await;
        }
        let out = self
            .run_step(tool_run_id, input, &self.yields, Logs::Command, None, None)
            .await?
            .out;
        serde_json::to_value(out).map_err(|e| ToolError(format!("cannot encode the output: {e}")))
    }

    /// `shell.run` with `background: true`: started as any command is, answered once
    /// it runs (with what it printed in its first moments), and left running until
    /// `shell.stop`, its timeout (by default the task's) or the end of this agent.
    async fn shell_run_background(
        &self,
        tool_run_id: &str,
        input: crate::tools::exec::RunInput,
    ) -> Result<Value, ToolError> {
        let running = self.env.background.running_of(&self.agent_id);
        if running >= super::background::PER_AGENT {
            return Err(ToolError(format!(
                "background: {running} commands of yours run in the background already, the most at once; stop one with shell_stop first"
            )));
        }
        let (tx, rx) = tokio::sync::oneshot::channel();
        let live = super::background::Live::new(&self.agent_id, tx);
        // By default it may run as long as the task.
        let limit = input.timeout_ms.is_none().then_some(self.time_limit_ms);
        let job = self.clone();
        let (run_id, l) = (tool_run_id.to_string(), live.clone());
        tokio::spawn(async move {
            // Whatever way this ends (an error after the start, a panic), the command
            // is never shown running for ever.
            let _ended = super::background::EndGuard(l.clone());
            let yields = job.yields.clone();
            if let Err(e) = job
                .run_step(
                    &run_id,
                    input,
                    &yields,
                    Logs::Command,
                    limit,
                    Some(l.clone()),
                )
                .await
            {
                l.started(Err(e.clone()));
                l.fail(&e.0);
            }
        });
        let id = rx
            .await
            .map_err(|_| ToolError("the command did not start".into()))??;
        // Its first words (a server says where it listens), or its end.
        let t0 = std::time::Instant::now();
        while live.ended().is_none() && t0.elapsed() < BACKGROUND_FIRST_WORDS {
            live.settle(BACKGROUND_FIRST_WORDS.saturating_sub(t0.elapsed()))
                .await;
            let (_, _, printed) = live.read(0, 0, 0);
            if printed > 0 {
                break;
            }
        }
        let out = match live.ended() {
            Some(out) => out,
            None => {
                let text = |i: usize| {
                    let (bytes, _, total) = live.read(i, 0, crate::tools::exec::OUTPUT_PAGE);
                    (String::from_utf8_lossy(&bytes).into_owned(), total)
                };
                let ((stdout, stdout_bytes), (stderr, stderr_bytes)) = (text(0), text(1));
                crate::tools::exec::RunOutput {
                    command_run_id: id,
                    duration_ms: u64::try_from(t0.elapsed().as_millis()).unwrap_or(u64::MAX),
                    stdout,
                    stderr,
                    stdout_bytes,
                    stderr_bytes,
                    running: true,
                    sandbox: String::new(),
                    notes: vec![format!(
                        "running in the background ({} of yours now): shell_output reads what it prints, shell_stop ends it; it ends with you at the latest",
                        self.env.background.running_of(&self.agent_id)
                    )],
                    ..Default::default()
                }
            }
        };
        serde_json::to_value(out).map_err(|e| ToolError(format!("cannot encode the output: {e}")))
    }

    /// `shell.stop`: ends a command this agent started in the background, and answers
    /// with how it ended.
    pub(super) async fn shell_stop(&self) -> Result<Value, ToolError> {
        crate::tools::allowed(self.role, "shell.stop")?;
        let input: crate::tools::exec::StopInput =
            crate::tools::input("shell.stop", self.call.input.clone())?;
        let id = command_run_id(&input.command_run_id)?;
        let Some(live) = self.env.background.get(&id) else {
            return Err(ToolError(format!(
                "command_run_id: `{id}` is no command started with `background: true` in this run"
            )));
        };
        if live.agent_id != self.agent_id {
            return Err(ToolError(format!(
                "command_run_id: `{id}` was started by {}, not by you: only the agent that started a command stops it",
                live.agent_id
            )));
        }
        live.stop();
        let t0 = std::time::Instant::now();
        while live.ended().is_none() {
            if t0.elapsed() > std::time::Duration::from_secs(30) {
                return Err(ToolError(format!(
                    "`{id}` did not end within 30 s of being stopped"
                )));
            }
            live.settle(std::time::Duration::from_millis(200)).await;
        }
        let out = live
            .ended()
            .ok_or_else(|| ToolError(format!("`{id}` did not end")))?;
        serde_json::to_value(out).map_err(|e| ToolError(format!("cannot encode the output: {e}")))
    }

    /// airsd's run of a bugfix task's check before its executor's model begins (the
    /// command chosen by airsd, in the call's input): judged and recorded as
    /// `shell.run` is, under the executor's own record.
    pub(super) async fn before_check(&self, tool_run_id: &str) -> Result<Value, ToolError> {
        let input: crate::tools::exec::RunInput =
            crate::tools::input("shell.run", self.call.input.clone())?;
        let command = input.command.clone();
        let out = self
            .run_step(tool_run_id, input, &self.yields, Logs::Command, None, None)
            .await?
            .out;
        let mut out = serde_json::to_value(out)
            .map_err(|e| ToolError(format!("cannot encode the output: {e}")))?;
        // The agent is told which command airsd chose.
        if let Value::Object(o) = &mut out {
            o.insert("command".into(), Value::String(command));
        }
        Ok(out)
    }

    /// One command of a tool call, as `shell.run` runs it: judged (with questions when
    /// needed), recorded, run under the sandbox with its output streamed and kept, its
    /// evidence and findings recorded with its end. `yields`: evidence the calling
    /// tool knows the command shows when it passes (a GoogleTest binary is tests).
    /// Answers with the compiler's, linker's or analyzer's findings too.
    pub(super) async fn run_step(
        &self,
        tool_run_id: &str,
        input: crate::tools::exec::RunInput,
        yields: &[(String, air_proto::task::EvidenceType)],
        kept_as: Logs,
        limit_ms: Option<u64>,
        live: Option<Arc<super::background::Live>>,
    ) -> Result<Ran, ToolError> {
        use crate::tools::exec::{self, Channel};
        let role = self.role;
        let background = live.is_some();
        let sandbox = self
            .env
            .sandbox_exe
            .clone()
            .filter(|_| self.env.engine.sandbox());
        let confined = exec::Confinement {
            writes: sandbox.as_ref().is_some_and(|(_, p)| p.landlock),
            views: sandbox.as_ref().is_some_and(|(_, p)| p.isolation.is_ok()),
        };
        let mut prepared = self
            .with_permission(tool_run_id, move |ctx| {
                exec::prepare(ctx, &input, role, confined)
            })
            .await?;
        // airsd's own steps (a large project's first build) may run as long as the
        // task may.
        if let Some(ms) = limit_ms {
            prepared.timeout = prepared.timeout.max(std::time::Duration::from_millis(ms));
        }
        let command_run_id = air_proto::ids::new_id();
        // What the working tree looks like before, to tell the files the command
        // changes: read while its start is being committed.
        let launcher = self.env.launcher.clone();
        let since = std::time::Instant::now();
        // A background command (a server) runs beside the agent's other commands: the
        // agent's own writes through the file tools while it runs are not its.
        let running = Running::new(&self.env.ledger, &self.agent_id);
        let owner = if background {
            format!("{} (background)", self.agent_id)
        } else {
            self.agent_id.clone()
        };
        let guard_engine = self.env.engine.clone();
        let before = tokio::task::spawn_blocking(move || {
            let guard = crate::tools::guard::Guard::take(&guard_engine, confined.views);
            (crate::tools::git::Dirty::read(&launcher), guard)
        });
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
        if let Some(l) = &live {
            self.env.background.insert(&command_run_id, l.clone());
            l.started(Ok(command_run_id.clone()));
        }

        let store = self.env.artifacts.clone();
        let dir = format!("{}/{command_run_id}", kept_as.dir());
        let mut logs = [
            store.create(&format!("{dir}/stdout.log")).ok(),
            store.create(&format!("{dir}/stderr.log")).ok(),
        ];
        let mut captures = [exec::Capture::default(), exec::Capture::default()];
        // How many tests its output says ran, read as it streams.
        let mut tally = crate::evidence::Tally::default();
        // What a C or C++ build says, read as it streams (each stream by itself: a
        // line may come in pieces).
        let mut findings = crate::evidence::compiles(&prepared.command).then(|| {
            [
                crate::profiles::cpp::diagnose::Parser::default(),
                crate::profiles::cpp::diagnose::Parser::default(),
            ]
        });
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
                // A background command's call was answered: its output goes to the
                // clients and to shell_output, not into the agent's call.
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
                    if background {
                        continue;
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
        crate::sandbox::make_tool_caches(engine.home(), &prepared.command);
        let writable = crate::sandbox::writable(
            engine.root(),
            engine.home(),
            &[engine.writable_roots(), &prepared.extra_writable[..]].concat(),
        );
        let isolate = confined
            .views
            .then(|| engine.views(&writable, &prepared.visible, &prepared.unlocked));
        // The world only through airsd's proxy, which judges each host (and asks
        // through this call).
        let registered = match (&self.env.proxy, confined.views) {
            (Some(proxy), true) => {
                let r = proxy.register(crate::proxy::CommandNet::new(
                    self.env.net.clone(),
                    Arc::new(self.asker(tool_run_id)),
                ));
                Some((proxy.address(&r), r))
            }
            _ => None,
        };
        let mut env = exec::command_env(std::env::vars_os(), engine.shell_env(), engine.home());
        if registered.is_some() {
            exec::through_proxy(&mut env);
        }
        let launch = exec::Launch {
            launcher: sandbox.as_ref().map(|(exe, _)| exe.as_path()),
            policy: crate::sandbox::Policy {
                writable,
                home: engine.home().map(std::path::Path::to_path_buf),
                // What a person allowed this command to read, it reads.
                home_read: [engine.home_read(), prepared.visible.clone()].concat(),
                isolate,
                net: registered.as_ref().map(|(a, _)| a.clone()),
            },
            env,
            stdin: None,
        };
        let worker = self.worker.clone();
        let (before, guard) = match before.await {
            Ok((dirty, guard)) => (dirty, Some(guard)),
            Err(_) => (None, None),
        };
        // A JVM build's test reports as they were, to count only those it writes.
        let reports_before = if crate::evidence::reports::runs_jvm_tests(&prepared.command) {
            let root = resolved_root(self.env.engine.root());
            tokio::task::spawn_blocking(move || crate::evidence::reports::Before::take(&root))
                .await
                .ok()
        } else {
            None
        };
        // While it runs, the editor serving the session's files is not asked about
        // one (a background command is waited for by nobody: the editor is then not
        // asked at all while it lives).
        let editors = self.env.session.editors();
        let _running = match &live {
            None => Some(editors.command().await),
            Some(_) => None,
        };
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
                tally.push(i, data);
                if let Some(l) = &live {
                    l.push(i, data);
                }
                if let Some(p) = findings.as_mut() {
                    p[i].push(data);
                }
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
            || worker.exited() || live.as_ref().is_some_and(|l| l.stopping()),
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
            let launcher = self.env.launcher.clone();
            let ledger = self.env.ledger.clone();
            let agent = owner.clone();
            let scope = crate::tools::scope::Scope::new(&self.scope).ok();
            let unlocked = prepared.unlocked.clone();
            let quarantine = air_proto::layout::ProjectPaths::new(&root)
                .quarantine()
                .join(&command_run_id);
            tokio::task::spawn_blocking(move || {
                // What runs later, put back first (another agent's allowed write, and
                // what a person allowed this command, stay).
                let theirs = ledger.written_by_others_since(&agent, since);
                let put_back = guard
                    .map(|g| {
                        g.settle(&root, &quarantine, |p| {
                            unlocked.iter().any(|u| p.starts_with(u))
                                || theirs.iter().any(|t| p.starts_with(t))
                        })
                    })
                    .unwrap_or_default();
                // What a person allowed this command to write is its agent's, as a
                // write through the file tools is: a server of the agent's running
                // meanwhile does not put it back when it ends.
                for u in &unlocked {
                    ledger.writing(&agent, u);
                }
                let now = crate::tools::git::Dirty::read(&launcher);
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
                    return (changed, Shared::No, put_back);
                }
                match scope.as_ref() {
                    Some(s) if changed.iter().any(|f| s.declares(f).is_some()) => {
                        let (mine, unsure): (Vec<String>, Vec<String>) = changed
                            .into_iter()
                            .partition(|f| s.declares(f) == Some(true));
                        (mine, Shared::LeftOut(unsure.len()), put_back)
                    }
                    _ => {
                        let n = changed.len();
                        (changed, Shared::Kept(n), put_back)
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
        let mut kept: Vec<Result<RuntimeEvent, String>> = Vec::new();
        for (i, log) in logs.into_iter().enumerate() {
            let Some(log) = log else { continue };
            if log.is_empty() {
                log.discard();
                continue;
            }
            let store = store.clone();
            let stored = tokio::task::spawn_blocking(move || {
                store.finish(log, kept_as.artifact_type(), true)
            })
            .await;
            match stored {
                Ok(Ok(stored)) => {
                    let name = if i == 0 { "stdout.log" } else { "stderr.log" };
                    // Recorded with the command's end, in its transaction.
                    kept.push(
                        p::ArtifactCreated {
                            artifact: stored.artifact.clone(),
                            path: Some(stored.rel.clone()),
                            original_name: Some(name.into()),
                            task_id: Some(self.task_id.clone()),
                            agent_id: Some(self.agent_id.clone()),
                            tool_run_id: Some(tool_run_id.to_string()),
                            command_run_id: Some(command_run_id.clone()),
                            entity_type: None,
                            entity_id: None,
                        }
                        .into_event(self.env.session.id(), self.source()),
                    );
                    uris[i] = Some(stored.artifact.uri);
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
        } else if ended.cancelled && live.as_ref().is_some_and(|l| l.stopping()) {
            Some("stopped by shell_stop: the process group was killed".to_string())
        } else if ended.cancelled {
            Some("cancelled: the agent ended; the process group was killed".to_string())
        } else {
            ended.signal.map(|s| format!("killed by signal {s}"))
        };
        let mut found: Vec<Diagnostic> = Vec::new();
        let mut counted = None;
        let mut checks = Vec::new();
        let recorded = match &failure {
            None => {
                // Its evidence commits with its end, in one transaction.
                let exit_code = ended.exit_code.unwrap_or_default();
                let root = resolved_root(self.env.engine.root());
                let start_dir = prepared
                    .cwd
                    .strip_prefix(&root)
                    .or_else(|_| prepared.cwd.strip_prefix(self.env.engine.root()))
                    .map(|p| p.to_string_lossy().into_owned())
                    .unwrap_or_else(|_| "..".into());
                let logs: Vec<String> = uris.iter().flatten().cloned().collect();
                let reading = crate::evidence::reading(&root);
                checks = self
                    .checks
                    .iter()
                    .filter(|c| {
                        air_proto::gate::compare(&prepared.command, Some(&start_dir), c, &reading)
                            == air_proto::gate::Match::Runs
                    })
                    .cloned()
                    .collect();
                counted = std::mem::take(&mut tally).finish();
                // A JVM build that showed no count (`mvn -q test`, a Gradle run whose
                // tests all passed): the reports it wrote.
                if let (None, Some(before)) = (&counted, reports_before) {
                    let root = root.clone();
                    counted = tokio::task::spawn_blocking(move || {
                        crate::evidence::reports::written_since(&root, &before)
                    })
                    .await
                    .ok()
                    .flatten();
                }
                // A server's end vouches for nothing: a check runs in front, after the
                // last change.
                let derived = if background {
                    Vec::new()
                } else {
                    crate::evidence::derive(&crate::evidence::Run {
                        command_run_id: &command_run_id,
                        command: &prepared.command,
                        exit_code: Some(exit_code),
                        reading: &reading,
                        start_dir: &start_dir,
                        logs: &logs,
                        count: counted,
                        yields,
                    })
                };
                let mut events = std::mem::take(&mut kept);
                events.push(
                    p::CommandCompleted {
                        command_run_id: command_run_id.clone(),
                        exit_code,
                        duration_ms: Some(duration_ms),
                    }
                    .into_event(self.env.session.id(), self.source()),
                );
                for d in derived {
                    events.push(
                        p::EvidenceCreated {
                            evidence: air_proto::result::EvidenceRef {
                                id: air_proto::ids::new_id(),
                                kind: d.kind,
                                reference: d.reference,
                                location: None,
                                claim: d.claim,
                                evidence_type: Some(d.evidence_type),
                            },
                            task_id: Some(self.task_id.clone()),
                            agent_id: Some(self.agent_id.clone()),
                            command_run_id: Some(command_run_id.clone()),
                            covers: d.covers,
                        }
                        .into_event(self.env.session.id(), self.source()),
                    );
                }
                let diagnostics = findings
                    .take()
                    .map(|[out, err]| [out.finish(), err.finish()].concat())
                    .unwrap_or_default();
                found = crate::evidence::recorded(diagnostics);
                for d in found.clone() {
                    events.push(
                        p::DiagnosticCreated {
                            diagnostic_id: air_proto::ids::new_id(),
                            severity: d.severity,
                            message: d.message,
                            file: d.file,
                            line: d.line,
                            column: d.column,
                            code: d.code,
                            signature: Some(d.signature),
                            source_tool: Some(d.tool.as_str().to_string()),
                            command_run_id: Some(command_run_id.clone()),
                            task_id: Some(self.task_id.clone()),
                            agent_id: Some(self.agent_id.clone()),
                        }
                        .into_event(self.env.session.id(), self.source()),
                    );
                }
                self.record_all(events).await
            }
            Some(error) => {
                let mut events = std::mem::take(&mut kept);
                events.push(
                    p::CommandFailed {
                        command_run_id: command_run_id.clone(),
                        error: error.clone(),
                        exit_code: ended.exit_code,
                        duration_ms: Some(duration_ms),
                    }
                    .into_event(self.env.session.id(), self.source()),
                );
                self.record_all(events).await
            }
        };
        if let Err(e) = recorded {
            tracing::warn!("cannot record the end of command {command_run_id}: {e}");
        }
        let mut notes: Vec<String> = failure.into_iter().collect();
        let (changed_files, shared, put_back) =
            after.await.unwrap_or((Vec::new(), Shared::No, Vec::new()));
        notes.extend(put_back);
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
            running: false,
            checks,
        };
        if let Some(l) = &live {
            l.end(out.clone());
        }
        Ok(Ran {
            out,
            found,
            count: counted,
        })
    }
}
