//! The live projection (advanced by the bus) and the one hydrated from the database
//! must be the same, whatever durable events arrive, including refused ones.

use air_proto::event::{AgentType, RuntimeEvent};
use air_proto::payload as p;
use air_proto::projection::Projection;
use air_proto::result::{ArtifactRef, ArtifactType, EvidenceKind, EvidenceRef};
use air_tests::{event, task_spec};
use airsd::SessionConfig;
use proptest::prelude::*;
use serde_json::json;

#[derive(Clone, Debug)]
enum Op {
    Task {
        deps: Vec<usize>,
    },
    Status {
        task: usize,
        kind: usize,
        attempt: Option<u32>,
        agent: bool,
        reason: bool,
    },
    StartAgent {
        task: Option<usize>,
    },
    EndAgent {
        agent: usize,
        ok: bool,
    },
    StartTool {
        agent: Option<usize>,
    },
    EndTool {
        tool: usize,
        ok: bool,
    },
    StartCommand {
        tool: Option<usize>,
    },
    EndCommand {
        command: usize,
        ok: bool,
        exit: i32,
    },
    Message {
        user: bool,
        text: String,
        tokens: Option<(u64, u64)>,
        task: Option<usize>,
    },
    Artifact {
        task: Option<usize>,
    },
    Diagnostic,
    Evidence,
    Ask,
    Answer {
        request: usize,
    },
    Archive,
    Run {
        kind: usize,
        task: usize,
    },
    /// A reviewer's approval (or request for changes) of a task.
    Review {
        agent: usize,
        task: usize,
        approved: bool,
    },
    /// A `workspace.*` event: made for a task, merged, removed, refused by the
    /// merge queue (a conflict or a failed check).
    Space {
        kind: usize,
        workspace: usize,
        task: usize,
    },
    Other,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => proptest::collection::vec(0usize..25, 0..3).prop_map(|deps| Op::Task { deps }),
        6 => (0usize..25, 0usize..8, proptest::option::of(0u32..4), any::<bool>(), any::<bool>())
            .prop_map(|(task, kind, attempt, agent, reason)| Op::Status { task, kind, attempt, agent, reason }),
        2 => proptest::option::of(0usize..25).prop_map(|task| Op::StartAgent { task }),
        2 => (0usize..25, any::<bool>()).prop_map(|(agent, ok)| Op::EndAgent { agent, ok }),
        4 => proptest::option::of(0usize..25).prop_map(|agent| Op::StartTool { agent }),
        3 => (0usize..60, any::<bool>()).prop_map(|(tool, ok)| Op::EndTool { tool, ok }),
        2 => proptest::option::of(0usize..60).prop_map(|tool| Op::StartCommand { tool }),
        2 => (0usize..30, any::<bool>(), -2i32..3).prop_map(|(command, ok, exit)| Op::EndCommand { command, ok, exit }),
        2 => (any::<bool>(), "[a-z \u{e9}]{0,300}", proptest::option::of((0u64..1000, 0u64..1000)), proptest::option::of(0usize..25))
            .prop_map(|(user, text, tokens, task)| Op::Message { user, text, tokens, task }),
        1 => proptest::option::of(0usize..25).prop_map(|task| Op::Artifact { task }),
        1 => Just(Op::Diagnostic),
        1 => Just(Op::Evidence),
        1 => Just(Op::Ask),
        1 => (0usize..8).prop_map(|request| Op::Answer { request }),
        1 => Just(Op::Archive),
        2 => (0usize..6, 0usize..25).prop_map(|(kind, task)| Op::Run { kind, task }),
        2 => (0usize..25, 0usize..25, any::<bool>())
            .prop_map(|(agent, task, approved)| Op::Review { agent, task, approved }),
        4 => (0usize..5, 0usize..12, 0usize..25)
            .prop_map(|(kind, workspace, task)| Op::Space { kind, workspace, task }),
        1 => Just(Op::Other),
    ]
}

const STATUS: [&str; 8] = [
    "task.ready",
    "task.started",
    "task.reviewing",
    "task.debugging",
    "task.completed",
    "task.failed",
    "task.blocked",
    "task.cancelled",
];

/// Turns ops into events. Indexes may point past what exists, giving events the store
/// must refuse.
struct Gen {
    sid: String,
    next: std::collections::HashMap<&'static str, usize>,
}

impl Gen {
    /// Ids per kind are dense (T1, T2, …) so that ops often hit existing things.
    fn id(&mut self, prefix: &'static str) -> String {
        let n = self.next.entry(prefix).or_insert(0);
        *n += 1;
        format!("{prefix}{n}")
    }

    fn event(&mut self, op: &Op) -> RuntimeEvent {
        let s = self.sid.clone();
        let tid = |i: usize| format!("T{i}");
        match op {
            Op::Task { deps } => {
                let id = self.id("T");
                let deps: Vec<String> = deps.iter().map(|d| tid(*d)).collect();
                let deps: Vec<&str> = deps.iter().map(String::as_str).collect();
                event(
                    &s,
                    "task.created",
                    &p::TaskCreated {
                        task: task_spec(&id, &deps),
                    },
                )
            }
            Op::Status {
                task,
                kind,
                attempt,
                agent,
                reason,
            } => event(
                &s,
                STATUS[*kind],
                &p::TaskStatusChanged {
                    task_id: tid(*task),
                    attempt: *attempt,
                    agent_id: agent.then(|| format!("A{task}")),
                    agent_type: agent.then_some(AgentType::Executor),
                    reason: reason.then(|| "why".to_string()),
                },
            ),
            Op::StartAgent { task } => {
                let id = self.id("A");
                event(
                    &s,
                    "agent.started",
                    &p::AgentStarted {
                        agent_id: id,
                        agent_type: AgentType::Reviewer,
                        task_id: task.map(tid),
                        pid: Some(7),
                        model: None,
                        context: None,
                    },
                )
            }
            Op::EndAgent { agent, ok: true } => event(
                &s,
                "agent.completed",
                &p::AgentCompleted {
                    agent_id: format!("A{agent}"),
                    exit_code: Some(0),
                    result: None,
                    gate: None,
                },
            ),
            Op::EndAgent { agent, ok: false } => event(
                &s,
                "agent.failed",
                &p::AgentFailed {
                    agent_id: format!("A{agent}"),
                    reason: "crash".into(),
                    exit_code: Some(1),
                    failure: Some(p::AgentFailure::Crash),
                },
            ),
            Op::StartTool { agent } => {
                let id = self.id("R");
                event(
                    &s,
                    "tool.started",
                    &p::ToolStarted {
                        tool_run_id: id,
                        tool: "fs.read".into(),
                        input: json!({"path": "a"}),
                        agent_id: agent.map(|a| format!("A{a}")),
                        task_id: None,
                        origin_message_id: None,
                    },
                )
            }
            Op::EndTool { tool, ok: true } => event(
                &s,
                "tool.completed",
                &p::ToolCompleted {
                    tool_run_id: format!("R{tool}"),
                    output: Some(json!({"ok": 1})),
                    duration_ms: Some(3),
                },
            ),
            Op::EndTool { tool, ok: false } => event(
                &s,
                "tool.failed",
                &p::ToolFailed {
                    tool_run_id: format!("R{tool}"),
                    error: "denied".into(),
                    duration_ms: None,
                },
            ),
            Op::StartCommand { tool } => {
                let id = self.id("C");
                event(
                    &s,
                    "command.started",
                    &p::CommandStarted {
                        command_run_id: id,
                        command: "make".into(),
                        cwd: Some(".".into()),
                        tool_run_id: tool.map(|t| format!("R{t}")),
                        agent_id: None,
                        task_id: None,
                        origin_message_id: None,
                    },
                )
            }
            Op::EndCommand {
                command,
                ok: true,
                exit,
            } => event(
                &s,
                "command.completed",
                &p::CommandCompleted {
                    command_run_id: format!("C{command}"),
                    exit_code: *exit,
                    duration_ms: Some(9),
                },
            ),
            Op::EndCommand {
                command,
                ok: false,
                exit,
            } => event(
                &s,
                "command.failed",
                &p::CommandFailed {
                    command_run_id: format!("C{command}"),
                    error: "timeout".into(),
                    exit_code: (*exit > 0).then_some(*exit),
                    duration_ms: None,
                },
            ),
            Op::Message {
                user,
                text,
                tokens,
                task,
            } => {
                let id = self.id("M");
                let ty = if *user {
                    "user.message.created"
                } else {
                    "assistant.message.created"
                };
                let usage = tokens.map(|(i, o)| p::Usage {
                    input_tokens: i,
                    output_tokens: o,
                    cost_micro_usd: (i % 2 == 0).then_some(i + o),
                    ..Default::default()
                });
                event(
                    &s,
                    ty,
                    &p::MessageCreated {
                        message_id: id,
                        content: json!([{"type": "text", "text": text}, {"type": "tool_use", "id": "x", "name": "fs_read", "input": {}}]),
                        agent_id: None,
                        task_id: task.map(tid),
                        client: (ty == "user.message.created").then(|| "air (pid 9)".to_string()),
                        model: None,
                        usage,
                    },
                )
            }
            Op::Artifact { task } => {
                let id = self.id("F");
                let artifact = ArtifactRef {
                    id,
                    artifact_type: ArtifactType::BuildLog,
                    uri: "artifact://x".into(),
                    size_bytes: Some(3),
                    sha256: None,
                    created_at: "2026-11-30T00:00:00Z".into(),
                };
                event(
                    &s,
                    "artifact.created",
                    &p::ArtifactCreated {
                        artifact,
                        path: None,
                        original_name: None,
                        task_id: task.map(tid),
                        agent_id: None,
                        tool_run_id: None,
                        command_run_id: None,
                        entity_type: None,
                        entity_id: None,
                    },
                )
            }
            Op::Diagnostic => {
                let id = self.id("D");
                event(
                    &s,
                    "diagnostic.created",
                    &p::DiagnosticCreated {
                        diagnostic_id: id,
                        severity: p::DiagnosticSeverity::Error,
                        message: "x".into(),
                        file: Some("a.cpp".into()),
                        line: Some(3),
                        column: None,
                        code: None,
                        signature: Some("undeclared".into()),
                        source_tool: None,
                        command_run_id: None,
                        task_id: None,
                        agent_id: None,
                    },
                )
            }
            Op::Evidence => {
                let id = self.id("E");
                let evidence = EvidenceRef {
                    id,
                    kind: EvidenceKind::CommandRun,
                    reference: "C1".into(),
                    location: None,
                    claim: "built".into(),
                    evidence_type: None,
                };
                event(
                    &s,
                    "evidence.created",
                    &p::EvidenceCreated {
                        evidence,
                        task_id: None,
                        agent_id: None,
                        command_run_id: None,
                        covers: None,
                    },
                )
            }
            Op::Ask => {
                let id = self.id("P");
                event(
                    &s,
                    "permission.requested",
                    &p::PermissionRequested {
                        request_id: id,
                        action: "rm -rf build".into(),
                        tool: None,
                        tool_run_id: None,
                        agent_id: None,
                        task_id: None,
                        risk: None,
                        reason: None,
                    },
                )
            }
            Op::Answer { request } => event(
                &s,
                "permission.decision.recorded",
                &p::PermissionDecisionRecorded {
                    request_id: Some(format!("P{request}")),
                    decision: p::PermissionDecision::Deny,
                    decided_by: "policy".into(),
                    scope: None,
                    reason: None,
                },
            ),
            Op::Archive => event(
                &s,
                "session.archived",
                &p::SessionStatusChanged { reason: None },
            ),
            Op::Run { kind, task } => match kind {
                0 => event(
                    &s,
                    "run.started",
                    &p::RunStarted {
                        plan: "plan.md".into(),
                        title: Some("a plan".into()),
                        concurrency: 2,
                        permission_mode: air_proto::plan::PermissionMode::Default,
                        on_ask: air_proto::plan::OnAsk::Deny,
                        budgets: Default::default(),
                        phases: Vec::new(),
                        model: None,
                        overview: None,
                        record: None,
                        replay: None,
                        learn: false,
                        worktrees: None,
                        land: None,
                    },
                ),
                1 => event(&s, "scheduler.paused", &p::SchedulerControl::default()),
                2 => event(&s, "scheduler.resumed", &p::SchedulerControl::default()),
                3 => event(
                    &s,
                    "scheduler.stopped",
                    &p::SchedulerControl {
                        reason: Some("the time budget ran out".into()),
                        budget: Some("max_time".into()),
                        by: None,
                    },
                ),
                4 => event(
                    &s,
                    "run.completed",
                    &p::RunCompleted {
                        outcome: p::RunOutcome::Failed,
                        reason: Some("T1 failed".into()),
                        completed: 1,
                        failed: 1,
                        blocked: 0,
                        cancelled: 0,
                        unfinished: 0,
                        landing: None,
                    },
                ),
                _ => event(
                    &s,
                    "run.continued",
                    &p::RunContinued {
                        task_ids: vec![tid(*task)],
                        by: None,
                        budgets: Default::default(),
                    },
                ),
            },
            Op::Review {
                agent,
                task,
                approved,
            } => {
                let mut result = air_proto::result::WorkerResult::new(
                    &tid(*task),
                    &format!("A{agent}"),
                    AgentType::Reviewer,
                    air_proto::result::WorkerStatus::Completed,
                    "looked".into(),
                );
                result.result = json!({
                    "decision": if *approved { "approved" } else { "changes_requested" }
                });
                event(
                    &s,
                    "agent.completed",
                    &p::AgentCompleted {
                        agent_id: format!("A{agent}"),
                        exit_code: Some(0),
                        result: Some(result),
                        gate: None,
                    },
                )
            }
            Op::Space {
                kind: 0,
                workspace: _,
                task,
            } => {
                let id = self.id("W");
                event(
                    &s,
                    "workspace.created",
                    &p::WorkspaceCreated {
                        workspace_id: id.clone(),
                        path: format!("/w/{id}"),
                        task_id: Some(tid(*task)),
                        branch: Some(format!("air/s/{}", tid(*task))),
                        base_ref: Some("abc".into()),
                    },
                )
            }
            Op::Space {
                kind: k @ (1 | 2),
                workspace,
                task,
            } => event(
                &s,
                "workspace.merge_failed",
                &p::WorkspaceMergeFailed {
                    workspace_id: format!("W{workspace}"),
                    task_id: tid(*task),
                    conflict: *k == 1,
                    files: vec!["a.c".into()],
                    reason: "refused".into(),
                    command_run_id: None,
                },
            ),
            Op::Space {
                kind, workspace, ..
            } => event(
                &s,
                if *kind == 3 {
                    "workspace.merged"
                } else {
                    "workspace.removed"
                },
                &p::WorkspaceChanged {
                    workspace_id: format!("W{workspace}"),
                    reason: None,
                    files: if *kind == 3 {
                        vec![format!("src/w{workspace}.rs")]
                    } else {
                        Vec::new()
                    },
                },
            ),
            Op::Other => event(&s, "requirement.changed", &json!({"summary": "faster"})),
        }
    }
}

fn json_of(p: &Projection) -> String {
    serde_json::to_string(p).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn live_projection_equals_the_rebuilt_one(ops in proptest::collection::vec((op(), 0usize..4), 1..220)) {
        let (dir, session) = crate::new_session(SessionConfig::default());
        let mut gen = Gen { sid: session.id().to_string(), next: Default::default() };
        let mut accepted = 0;
        crate::rt().block_on(async {
            let mut i = 0;
            while i < ops.len() {
                // Sometimes several ops as one atomic batch.
                let take = ops[i].1.max(1).min(ops.len() - i);
                let events: Vec<RuntimeEvent> = ops[i..i + take].iter().map(|(o, _)| gen.event(o)).collect();
                let result = if take == 1 {
                    session.store().append(events.into_iter().next().unwrap()).await.map(|a| vec![a.seq])
                } else {
                    session.store().append_batch(events).await
                };
                if let Ok(seqs) = result {
                    accepted += seqs.len();
                }
                i += take;
            }
        });
        let live = session.snapshot();
        prop_assert_eq!(live.seq as usize, accepted + 1);
        let rebuilt = session.rehydrate().unwrap();
        prop_assert_eq!(json_of(&live), json_of(&rebuilt));
        prop_assert_eq!(&live, &rebuilt);

        // Replaying the stored event log gives the same projection too.
        let conn = session.readers().get().unwrap();
        let mut replayed = Projection::new(session.id());
        let mut stmt = conn.prepare("SELECT seq, type, id, timestamp, payload_json FROM events ORDER BY seq").unwrap();
        let rows = stmt.query_map([], |r| Ok((r.get::<_, u64>(0)?, r.get::<_, String>(1)?, r.get::<_, String>(2)?, r.get::<_, String>(3)?, r.get::<_, String>(4)?))).unwrap();
        for row in rows {
            let (seq, ty, id, ts, payload) = row.unwrap();
            let mut e = RuntimeEvent::new(ty, session.id(), air_proto::event::EventSource::system(), serde_json::from_str(&payload).unwrap());
            e.id = id;
            e.timestamp = ts;
            replayed.apply(seq, &e, true);
        }
        prop_assert_eq!(json_of(&replayed), json_of(&live));
        drop(stmt);
        drop(conn);

        // And so does a cold start.
        let db = session.db_path().to_path_buf();
        session.close();
        let reopened = airsd::Session::open_path(&db, "s-test", SessionConfig::default()).unwrap();
        prop_assert_eq!(json_of(&reopened.snapshot()), json_of(&live));
        drop(dir);
    }
}
