//! `air-test-worker`: a scripted stand-in for `air-worker`, speaking the real NDJSON
//! protocol over real pipes, so the scheduler and the supervisor are tested through
//! every path a worker can take.
//!
//! What it does is written in the task's description, one directive per line:
//!
//! ```text
//! air-test: executor=crash,complete reviewer=changes,approve
//! air-test-sleep: 200
//! air-test-call: fs.write {"path": "/tmp/x", "content": "hi"}
//! ```
//!
//! `air-test-call:` lines (any number) are tool calls the executor makes, in order
//! (`air-test-debug-call:` lines, the debugger's),
//! (`air-test-call-N:` only on its N-th run; `claim` makes the N-th run's result from
//! its `air-test-claim-N: {"evidence_refs": […], "verification": […]}` line, where
//! `$RUN_K` is the K-th command this run ran; `$ROOT` in a call is the project root
//! the agent works in),
//! before its action; their answers go to stderr (the calls are recorded by airsd).
//! `air-test-bench: TOOL N OUTFILE {json}` makes the call N times and writes each
//! round trip's microseconds to OUTFILE, one per line (for the benchmarks).
//!
//! The n-th run of a role on the task (the number at the end of its agent id) takes the
//! n-th action of that role, or the last one. Actions: `complete` (honest: runs the
//! task's verify commands through airsd and reports them as they came out, claiming
//! no evidence of its own), `lie` (claims completion with evidence it does not have), `fail` (a
//! failed verification), `block`, `crash` (exit 1, no result), `model-silent` (hangs,
//! its heartbeats saying its model's provider has said nothing since it started),
//! `hang` (heartbeats but
//! never finishes), `silent` (no heartbeats, never finishes), `garbage` (a line that is
//! not JSON), `flood` (10,000 log lines, then completes), `approve`, `changes`, `fix`,
//! `giveup`, `extend` (past the soft timeout, asks for more time and works past the
//! hard one), `tools` (writes, edits and reads a file through airsd's tools),
//! `trywrite` (a reviewer that tries to write, then approves). Defaults: executor `complete`, reviewers `approve`, debugger `fix`.

use std::io::{Read, Write};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use air_proto::codec::{self, NdjsonDecoder, DEFAULT_MAX_LINE};
use air_proto::event::{AgentType, EventSource, RuntimeEvent};
use air_proto::ipc::{
    AgentStart, ControlMessage, Direction, IpcBody, IpcHeader, IpcMessage, LogLevel, LogRecord,
};
use air_proto::payload::AgentHeartbeat;
use air_proto::result::{ReviewDecision, WorkerResult, WorkerStatus};
use airsd::scheduler::sim::{debug, result_for, review};
use airsd::scheduler::Dispatch;

type Out = Arc<Mutex<std::io::Stdout>>;

fn send(out: &Out, session: &str, agent: &str, body: IpcBody) {
    let header = IpcHeader::new(Direction::WorkerToParent, session, agent);
    if let Ok(line) = codec::encode(&IpcMessage { header, body }, DEFAULT_MAX_LINE) {
        let mut o = out.lock().unwrap_or_else(|p| p.into_inner());
        let _ = o.write_all(&line);
        let _ = o.flush();
    }
}

fn raw(out: &Out, text: &str) {
    let mut o = out.lock().unwrap_or_else(|p| p.into_inner());
    let _ = o.write_all(text.as_bytes());
    let _ = o.flush();
}

/// Reads the first message, which must be `agent.start`.
fn read_start(decoder: &mut NdjsonDecoder) -> Option<Box<AgentStart>> {
    let mut stdin = std::io::stdin();
    let mut buf = [0u8; 8192];
    loop {
        if let Some(next) = decoder.next_message::<IpcMessage>() {
            return match next.ok()?.body {
                IpcBody::Control(ControlMessage::Start(start)) => Some(start),
                _ => None,
            };
        }
        let n = stdin.read(&mut buf).ok()?;
        if n == 0 {
            return None;
        }
        decoder.push(&buf[..n]);
    }
}

fn action(description: &str, role: AgentType, run: usize, consulted: bool) -> String {
    let default = match role {
        AgentType::ArchitectureDesigner if consulted => "stop",
        AgentType::Executor => "complete",
        AgentType::Reviewer | AgentType::ArchitectureDesigner => "approve",
        AgentType::Debugger => "fix",
        _ => "complete",
    };
    for line in description.lines() {
        let Some(rest) = line.trim().strip_prefix("air-test:") else {
            continue;
        };
        for part in rest.split_whitespace() {
            let Some((r, actions)) = part.split_once('=') else {
                continue;
            };
            if r == role.as_str() {
                let list: Vec<&str> = actions.split(',').collect();
                let i = run.saturating_sub(1).min(list.len().saturating_sub(1));
                return list[i].to_string();
            }
        }
    }
    default.to_string()
}

fn sleep_ms(description: &str) -> u64 {
    description
        .lines()
        .find_map(|l| l.trim().strip_prefix("air-test-sleep:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

/// `--resolve JSON`: every agent gets the scripted "model" (the real worker's
/// answer shape, so airsd's preflight runs as in production).
fn resolve(json: &str) {
    let queries: Vec<air_proto::ipc::ModelQuery> = match serde_json::from_str(json) {
        Ok(q) => q,
        Err(e) => {
            eprintln!("air-test-worker --resolve: {e}");
            std::process::exit(2);
        }
    };
    let replies: Vec<air_proto::ipc::ModelReply> = queries
        .iter()
        .map(|q| air_proto::ipc::ModelReply {
            resolved: Some(air_proto::ipc::ModelChoice {
                unpriced: false,
                provider: "test".into(),
                model: q
                    .flag
                    .clone()
                    .or(q.task.clone())
                    .unwrap_or_else(|| "scripted".into()),
                context_window: 200_000,
                max_output: 16_384,
                thinking_budget: None,
            }),
            error: None,
        })
        .collect();
    println!("{}", serde_json::to_string(&replies).unwrap_or_default());
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [flag, json] = args.as_slice() {
        if flag == "--resolve" {
            resolve(json);
            return;
        }
    }
    let out: Out = Arc::new(Mutex::new(std::io::stdout()));
    let mut decoder = NdjsonDecoder::new(DEFAULT_MAX_LINE);
    let Some(start) = read_start(&mut decoder) else {
        eprintln!("air-test-worker: no agent.start on stdin");
        std::process::exit(2);
    };
    // For the cold-start benchmark: when agent.start arrived, in ns since the epoch.
    if let Some(path) = std::env::var_os("AIR_TEST_WORKER_STAMP") {
        let ns = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            let _ = writeln!(f, "{ns}");
        }
    }
    let rt = &start.runtime;
    let (session, agent) = (rt.session_id.clone(), rt.agent_id.clone());
    let role = rt.agent_type.unwrap_or(AgentType::Executor);
    let run: usize = agent
        .rsplit('-')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1);
    let spec = start.task_spec.clone();
    let consulted = role == AgentType::ArchitectureDesigner
        && spec.task_type == air_proto::task::TaskType::Execute;
    // A re-planning turn of the designer: `classify` says what the change is from its
    // `air-test-classify: {json}` line, `propose` proposes the plan in the file its
    // `air-test-propose: FILE` line names (relative to where it runs).
    let act = match air_proto::planning::phase_of(&spec) {
        Some(air_proto::planning::PlanningPhase::Classifying) => "classify".to_string(),
        Some(air_proto::planning::PlanningPhase::Proposing) => "propose".to_string(),
        _ => action(&spec.description, role, run, consulted),
    };

    // Stdin: a cancel or EOF ends the process with code 4.
    let (granted_tx, granted_rx) = std::sync::mpsc::channel::<u64>();
    let (results_tx, results_rx) = std::sync::mpsc::channel::<air_proto::ipc::ToolResult>();
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin();
        let mut buf = [0u8; 8192];
        loop {
            while let Some(next) = decoder.next_message::<IpcMessage>() {
                match next {
                    Ok(IpcMessage {
                        body: IpcBody::Control(ControlMessage::Cancel { .. }),
                        ..
                    }) => std::process::exit(4),
                    Ok(IpcMessage {
                        body: IpcBody::Control(ControlMessage::ExtendTimeout { extra_ms, .. }),
                        ..
                    }) => {
                        let _ = granted_tx.send(extra_ms);
                    }
                    Ok(IpcMessage {
                        body: IpcBody::ToolResult(result),
                        ..
                    }) => {
                        let _ = results_tx.send(result);
                    }
                    _ => {}
                }
            }
            match stdin.read(&mut buf) {
                Ok(0) | Err(_) => std::process::exit(4),
                Ok(n) => decoder.push(&buf[..n]),
            }
        }
    });
    if act != "silent" {
        let (out, session, agent) = (out.clone(), session.clone(), agent.clone());
        let every = rt.heartbeat_interval_ms.unwrap_or(1_000).max(10);
        // `model-silent`: it waits on a model whose provider says nothing, and says so.
        let silent_model = act == "model-silent";
        let since = std::time::Instant::now();
        std::thread::spawn(move || loop {
            let beat = AgentHeartbeat {
                agent_id: agent.clone(),
                state: Some("SCRIPTED".into()),
                turn: None,
                input_tokens: None,
                output_tokens: None,
                model_silent_ms: silent_model
                    .then(|| u64::try_from(since.elapsed().as_millis()).unwrap_or(u64::MAX)),
                tools_running: None,
            };
            if let Ok(event) = RuntimeEvent::typed(
                "agent.heartbeat",
                session.as_str(),
                EventSource::agent(agent.as_str(), role),
                &beat,
            ) {
                send(&out, &session, &agent, IpcBody::Event(event));
            }
            std::thread::sleep(Duration::from_millis(every));
        });
    }
    let pause = sleep_ms(&spec.description);
    if pause > 0 {
        std::thread::sleep(Duration::from_millis(pause));
    }
    for note in start.context_pack.notes.iter().flatten() {
        eprintln!("air-test-worker: note: {note}");
    }
    let d = Dispatch {
        task_id: spec.id.clone(),
        agent_id: agent.clone(),
        role,
        attempt: rt.attempt.unwrap_or(1),
        spec,
        notes: start.context_pack.notes.clone().unwrap_or_default(),
        previous: start.context_pack.previous_result.clone().map(|b| *b),
    };
    // Calls a tool through airsd and waits for its answer.
    let call = |tool: &str, input: serde_json::Value| -> Result<serde_json::Value, String> {
        let id = air_proto::ids::new_id();
        send(
            &out,
            &session,
            &agent,
            IpcBody::ToolCall(air_proto::ipc::ToolCall {
                tool_call_id: id.clone(),
                tool: tool.to_string(),
                input,
                origin_message_id: None,
            }),
        );
        loop {
            let r = results_rx
                .recv_timeout(Duration::from_secs(60))
                .map_err(|e| format!("no answer to {tool}: {e}"))?;
            if r.tool_call_id != id {
                continue;
            }
            return match r.status {
                air_proto::ipc::ToolResultStatus::Ok => Ok(r.output.unwrap_or_default()),
                air_proto::ipc::ToolResultStatus::Error => {
                    Err(r.error.map(|e| e.message).unwrap_or_default())
                }
            };
        }
    };
    let last_run_seen: std::cell::RefCell<Option<String>> = Default::default();
    // Every command run of this run, in order (`$RUN_1`, `$RUN_2` … in a claim).
    let runs_seen: std::cell::RefCell<Vec<String>> = Default::default();
    if matches!(role, AgentType::Executor | AgentType::Debugger) {
        for line in d
            .spec
            .description
            .lines()
            .filter(|_| role == AgentType::Executor)
        {
            let Some(rest) = line.trim().strip_prefix("air-test-bench:") else {
                continue;
            };
            let mut parts = rest.trim().splitn(4, ' ');
            let (Some(tool), Some(n), Some(outfile), Some(input)) =
                (parts.next(), parts.next(), parts.next(), parts.next())
            else {
                eprintln!("air-test-worker: air-test-bench needs TOOL N OUTFILE JSON");
                std::process::exit(2);
            };
            let input: serde_json::Value = serde_json::from_str(input).unwrap_or_default();
            let mut micros = Vec::new();
            for _ in 0..n.parse::<usize>().unwrap_or(0) {
                let t = std::time::Instant::now();
                if let Err(e) = call(tool, input.clone()) {
                    eprintln!("air-test-worker: {tool} failed: {e}");
                    std::process::exit(1);
                }
                micros.push(t.elapsed().as_micros().to_string());
            }
            let _ = std::fs::write(outfile, micros.join("\n"));
        }
        // `$LAST_COMMAND_RUN` in a call's input stands for the command_run_id of the
        // last shell.run answered.
        let mut last_run = String::new();
        let last_run_seen = &last_run_seen;
        let this_run = format!("air-test-call-{run}:");
        for line in d.spec.description.lines() {
            let line = line.trim();
            let Some(rest) = line
                .strip_prefix("air-test-call:")
                .or_else(|| line.strip_prefix(this_run.as_str()))
                .filter(|_| role == AgentType::Executor)
                .or_else(|| {
                    line.strip_prefix("air-test-debug-call:")
                        .filter(|_| role == AgentType::Debugger)
                })
            else {
                continue;
            };
            let (tool, input) = rest.trim().split_once(' ').unwrap_or((rest.trim(), "{}"));
            let input = input.replace("$LAST_COMMAND_RUN", &last_run);
            // `$ROOT`: the project root as the agent is told it (its working
            // directory: the task's worktree, or the checkout).
            let here = std::env::current_dir()
                .map(|d| d.display().to_string())
                .unwrap_or_default();
            let input = input.replace("$ROOT", &here);
            let input = serde_json::from_str(&input).unwrap_or(serde_json::Value::Null);
            match call(tool, input) {
                Ok(out) => {
                    if let Some(id) = out.get("command_run_id").and_then(|v| v.as_str()) {
                        last_run = id.to_string();
                        last_run_seen.replace(Some(id.to_string()));
                        runs_seen.borrow_mut().push(id.to_string());
                    }
                    eprintln!("air-test-worker: {tool} answered: {out}")
                }
                Err(e) => eprintln!("air-test-worker: {tool} failed: {e}"),
            }
        }
    }
    let last_run = last_run_seen.take();
    let result: WorkerResult = match act.as_str() {
        "claim" => {
            // Claims completion with what the run's `air-test-claim-N:` line says
            // (`$LAST_COMMAND_RUN`: the last command this run ran; `$NOTED_COMMAND_RUN`:
            // the first command run its notes name, another attempt's).
            let noted = start
                .context_pack
                .notes
                .iter()
                .flatten()
                .find_map(|n| {
                    n.split("command-run:").nth(1).map(|r| {
                        r.chars()
                            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                            .collect::<String>()
                    })
                })
                .unwrap_or_default();
            let key = format!("air-test-claim-{run}:");
            let mut claim = d
                .spec
                .description
                .lines()
                .find_map(|l| l.trim().strip_prefix(key.as_str()))
                .unwrap_or("{}")
                .replace("$LAST_COMMAND_RUN", last_run.as_deref().unwrap_or(""))
                .replace("$NOTED_COMMAND_RUN", &noted);
            for (i, id) in runs_seen.borrow().iter().enumerate().rev() {
                claim = claim.replace(&format!("$RUN_{}", i + 1), id);
            }
            let claim: serde_json::Value = serde_json::from_str(&claim).unwrap_or_default();
            let mut r = result_for(&d, WorkerStatus::Completed, false);
            if let Some(refs) = claim.get("evidence_refs") {
                r.evidence_refs = serde_json::from_value(refs.clone()).unwrap_or_default();
            }
            if let Some(v) = claim.get("verification") {
                r.verification = serde_json::from_value(v.clone()).unwrap_or_default();
            }
            r
        }
        "tools" => {
            let path = format!("out/{}.txt", d.task_id);
            let steps = [
                (
                    "fs.write",
                    serde_json::json!({ "path": path, "content": format!("hello from {}\n", d.task_id) }),
                ),
                (
                    "fs.edit",
                    serde_json::json!({ "path": path, "old_string": "hello", "new_string": "goodbye" }),
                ),
                ("fs.read", serde_json::json!({ "path": path })),
            ];
            for (tool, input) in steps {
                if let Err(e) = call(tool, input) {
                    eprintln!("air-test-worker: {tool} failed: {e}");
                    std::process::exit(1);
                }
            }
            let mut r = result_for(&d, WorkerStatus::Completed, true);
            r.changed_files = vec![path];
            r
        }
        "overclaim" => {
            // Writes one file and claims two.
            let path = format!("out/{}.txt", d.task_id);
            if let Err(e) = call(
                "fs.write",
                serde_json::json!({ "path": path, "content": "written\n" }),
            ) {
                eprintln!("air-test-worker: fs.write failed: {e}");
                std::process::exit(1);
            }
            let mut r = result_for(&d, WorkerStatus::Completed, true);
            r.changed_files = vec![path, "src/never-written.rs".into()];
            r
        }
        "trywrite" => {
            // A reviewer tries to write; it must be refused, then it approves.
            match call(
                "fs.write",
                serde_json::json!({ "path": "reviewer.txt", "content": "no" }),
            ) {
                Ok(_) => {
                    eprintln!("air-test-worker: a reviewer could write");
                    std::process::exit(1);
                }
                Err(e) => eprintln!("air-test-worker: refused as expected: {e}"),
            }
            review(&d, ReviewDecision::Approved)
        }
        "complete" => result_for(&d, WorkerStatus::Completed, true),
        "lie" => result_for(&d, WorkerStatus::Completed, false),
        "fail" => {
            let mut r = result_for(&d, WorkerStatus::Failed, false);
            r.verification.push(air_proto::result::VerificationResult {
                name: "scripted tests".into(),
                status: air_proto::result::VerificationStatus::Failed,
                evidence_refs: None,
                notes: Some("scripted failure".into()),
            });
            r
        }
        "block" => result_for(&d, WorkerStatus::Blocked, false),
        "extend" => {
            // Past the soft timeout, ask for more time, then work past the original
            // hard timeout on the extension.
            let soft = d.spec.constraints.soft_timeout_ms;
            let hard = d.spec.constraints.hard_timeout_ms;
            std::thread::sleep(Duration::from_millis(soft + 300));
            let ask =
                serde_json::json!({ "agent_id": agent, "extra_ms": hard, "reason": "almost done" });
            let event = RuntimeEvent::new(
                "agent.timeout_extension.requested",
                session.as_str(),
                EventSource::agent(agent.as_str(), role),
                ask,
            );
            send(&out, &session, &agent, IpcBody::Event(event));
            match granted_rx.recv_timeout(Duration::from_secs(5)) {
                Ok(extra) if extra > 0 => {}
                other => {
                    eprintln!("air-test-worker: no extension granted ({other:?})");
                    std::process::exit(1);
                }
            }
            std::thread::sleep(Duration::from_millis(
                (hard + 500).saturating_sub(soft + 300),
            ));
            result_for(&d, WorkerStatus::Completed, true)
        }
        "classify" | "propose" => {
            let line = |key: &str| {
                d.spec
                    .description
                    .lines()
                    .find_map(|l| l.trim().strip_prefix(key).map(|v| v.trim().to_string()))
                    .unwrap_or_default()
            };
            let change: Option<air_proto::planning::ChangeDescription> =
                serde_json::from_str(&line("air-test-classify:")).ok();
            let mut turn = air_proto::planning::PlanningTurn::default();
            if act == "classify" {
                turn.classified = change;
            } else {
                turn.proposal = Some(air_proto::planning::Proposal {
                    summary: "re-planned by the script".into(),
                    modules: Vec::new(),
                    decisions: Vec::new(),
                    plan: std::fs::read_to_string(line("air-test-propose:")).unwrap_or_default(),
                    change,
                });
            }
            let mut r = result_for(&d, WorkerStatus::Completed, false);
            r.changed_files.clear();
            r.result = serde_json::to_value(turn).unwrap_or_default();
            r
        }
        "approve" => review(&d, ReviewDecision::Approved),
        "retry" => airsd::scheduler::sim::consult(&d, air_proto::result::ConsultDecision::Retry),
        "stop" => airsd::scheduler::sim::consult(&d, air_proto::result::ConsultDecision::Stop),
        "changes" => review(&d, ReviewDecision::ChangesRequested),
        "fix" => debug(&d, WorkerStatus::Completed),
        "giveup" => debug(&d, WorkerStatus::Failed),
        "crash" => {
            eprintln!("air-test-worker: scripted crash of {agent}");
            std::process::exit(1);
        }
        "hang" | "silent" | "model-silent" => loop {
            std::thread::sleep(Duration::from_secs(3600));
        },
        "garbage" => {
            raw(&out, "this is not a protocol message\n");
            loop {
                std::thread::sleep(Duration::from_secs(3600));
            }
        }
        "flood" => {
            for i in 0..10_000 {
                send(
                    &out,
                    &session,
                    &agent,
                    IpcBody::Log(LogRecord {
                        level: LogLevel::Debug,
                        message: format!("flood line {i} {}", "x".repeat(100)),
                        data: None,
                    }),
                );
            }
            result_for(&d, WorkerStatus::Completed, true)
        }
        other => {
            eprintln!("air-test-worker: unknown scripted action `{other}`");
            std::process::exit(2);
        }
    };
    // airsd takes the changed files from its records of the calls, so a scripted
    // result that changed nothing through airsd says so; an honest one explains.
    let mut result = result;
    // Evidence is airsd's record of what ran, never a claim: an honest executor runs
    // the task's checks through airsd and reports each as it came out, and claims no
    // build or test it did not run. A liar keeps its claims.
    let honest = matches!(
        act.as_str(),
        "complete" | "extend" | "flood" | "tools" | "overclaim"
    );
    if role == AgentType::Executor && honest {
        result.evidence_refs.retain(|e| {
            e.evidence_type
                .is_none_or(|k| air_proto::gate::source(k) != air_proto::gate::Source::Records)
        });
        result.verification.clear();
        for command in d.spec.verification.commands.iter().flatten() {
            let out = call("shell.run", serde_json::json!({ "command": command }));
            let exit = out
                .as_ref()
                .ok()
                .and_then(|o| o.get("exit_code").and_then(|c| c.as_i64()));
            result
                .verification
                .push(air_proto::result::VerificationResult {
                    name: command.clone(),
                    status: if exit == Some(0) {
                        air_proto::result::VerificationStatus::Passed
                    } else {
                        air_proto::result::VerificationStatus::Failed
                    },
                    evidence_refs: None,
                    notes: out.err(),
                });
        }
    }
    if !matches!(act.as_str(), "tools" | "overclaim") && !result.changed_files.is_empty() {
        result.changed_files.clear();
        let explained = result
            .evidence_refs
            .iter()
            .any(|e| e.evidence_type == Some(air_proto::task::EvidenceType::Explanation));
        if result.status == WorkerStatus::Completed && act != "lie" && !explained {
            result.evidence_refs.push(airsd::scheduler::sim::evidence(
                air_proto::task::EvidenceType::Explanation,
            ));
        }
    }
    send(&out, &session, &agent, IpcBody::WorkerResult(result));
    std::process::exit(0);
}
