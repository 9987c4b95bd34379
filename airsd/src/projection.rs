//! ProjectionStore hydration: building a session's [`Projection`] from its state tables.
//!
//! At start the projection is read from the domain tables (never by replaying the event
//! log, which would cost seconds for a large session); from then on the bus advances it
//! with [`Projection::apply`]. The two paths must agree, which a property test checks.

use air_proto::events as ev;
use std::collections::VecDeque;

use air_proto::event::{AgentType, EventSource, RuntimeEvent};
use air_proto::payload::PermissionRequested;
use air_proto::projection::{
    message_preview, AgentView, CommandRunView, Counters, EdgeView, MessageRole, MessageView,
    PermissionRequestView, Projection, RunStatus, SessionStatus, SessionView, TaskStatus, TaskView,
    ToolRunView, RECENT_LIMIT,
};
use air_proto::task::DependencyType;
use rusqlite::types::Type;
use rusqlite::{Connection, OptionalExtension, Row};

use crate::error::Result;

fn bad_value(col: usize, what: &str, value: &str) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(
        col,
        Type::Text,
        format!("unknown {what} `{value}`").into(),
    )
}

fn run_status(row: &Row<'_>, col: usize) -> rusqlite::Result<RunStatus> {
    let s: String = row.get(col)?;
    RunStatus::parse(&s).ok_or_else(|| bad_value(col, "status", &s))
}

/// Reads the projection of the session stored in `conn`.
pub fn hydrate(conn: &Connection, session_id: &str) -> Result<Projection> {
    let mut p = Projection::new(session_id);
    p.seq = conn.query_row("SELECT COALESCE(MAX(seq), 0) FROM events", [], |r| r.get(0))?;
    p.session = conn
        .query_row(
            "SELECT id, title, plan_ref, status, created_at, updated_at FROM session_meta",
            [],
            |r| {
                let status: String = r.get(3)?;
                Ok(SessionView {
                    id: r.get(0)?,
                    title: r.get(1)?,
                    plan_ref: r.get(2)?,
                    status: match status.as_str() {
                        "active" => SessionStatus::Active,
                        "archived" => SessionStatus::Archived,
                        "deleted" => SessionStatus::Deleted,
                        other => return Err(bad_value(3, "session status", other)),
                    },
                    created_at: r.get(4)?,
                    updated_at: r.get(5)?,
                })
            },
        )
        .optional()?;

    p.tasks = conn
        .prepare(
            "SELECT id, title, type, category, phase, write_area, status, attempts, agent_id,
                 reason, created_at, updated_at
             FROM tasks ORDER BY seq",
        )?
        .query_map([], |r| {
            let status: String = r.get(6)?;
            Ok(TaskView {
                id: r.get(0)?,
                title: r.get(1)?,
                task_type: r.get(2)?,
                category: r.get(3)?,
                phase: r.get(4)?,
                write_area: r.get(5)?,
                status: TaskStatus::parse(&status)
                    .ok_or_else(|| bad_value(6, "task status", &status))?,
                attempts: r.get(7)?,
                agent_id: r.get(8)?,
                reason: r.get(9)?,
                created_at: r.get(10)?,
                updated_at: r.get(11)?,
                progress: None,
                evidence: Vec::new(),
                usage: Default::default(),
                todos: Vec::new(),
                workspace: None,
            })
        })?
        .collect::<rusqlite::Result<_>>()?;
    // Each task's worktree and where its change is: the stored `workspace.*` events
    // and reviewers' results folded as the live view folds them, each applied to the
    // tasks that existed when it was recorded.
    {
        let created: std::collections::HashMap<String, i64> = conn
            .prepare("SELECT id, seq FROM tasks")?
            .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))?
            .collect::<rusqlite::Result<_>>()?;
        let mut stmt = conn.prepare(
            "SELECT seq, type, payload_json FROM events
             WHERE type IN ('workspace.created', 'workspace.merged', 'workspace.removed',
                            'workspace.merge_failed')
                OR (type = 'agent.completed'
                    AND json_extract(payload_json, '$.result.agent_type') = 'reviewer')
             ORDER BY seq",
        )?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            let (seq, ty, payload): (i64, String, String) = (r.get(0)?, r.get(1)?, r.get(2)?);
            let Ok(payload) = serde_json::from_str::<serde_json::Value>(&payload) else {
                continue;
            };
            let existed = |id: &str| created.get(id).is_some_and(|&c| c < seq);
            if ty == ev::AgentCompleted::TYPE {
                let Ok(pl) = serde_json::from_value::<air_proto::payload::AgentCompleted>(payload)
                else {
                    continue;
                };
                if let Some(result) = &pl.result {
                    if let Some(t) = p
                        .tasks
                        .iter_mut()
                        .find(|t| t.id == result.task_id && existed(&t.id))
                    {
                        air_proto::workspace_view::reviewed(&mut t.workspace, result);
                    }
                }
                continue;
            }
            let slots = p
                .tasks
                .iter_mut()
                .filter(|t| existed(&t.id))
                .map(|t| (t.id.as_str(), &mut t.workspace));
            air_proto::workspace_view::apply(slots, &ty, &payload);
        }
    }
    // Each task's latest todo list (`todo.write`'s answers, the last one standing).
    {
        let mut stmt = conn.prepare(
            "SELECT task_id, output_json FROM tool_runs
             WHERE tool = 'todo.write' AND task_id IS NOT NULL AND output_json IS NOT NULL
             ORDER BY seq",
        )?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            let (task, output): (String, String) = (r.get(0)?, r.get(1)?);
            let todos = serde_json::from_str::<serde_json::Value>(&output)
                .ok()
                .and_then(|o| air_proto::todo::from_output(&o));
            if let (Some(t), Some(todos)) = (p.tasks.iter_mut().find(|t| t.id == task), todos) {
                t.todos = todos;
            }
        }
    }
    // Each task's evidence, the latest of it, as the live view keeps it.
    {
        let mut stmt = conn.prepare(
            "SELECT id, evidence_type, claim, ref, task_id, agent_id FROM evidence_refs
             WHERE task_id IS NOT NULL AND evidence_type IS NOT NULL ORDER BY seq",
        )?;
        let mut rows = stmt.query([])?;
        let index: std::collections::HashMap<String, usize> = p
            .tasks
            .iter()
            .enumerate()
            .map(|(i, t)| (t.id.clone(), i))
            .collect();
        while let Some(r) = rows.next()? {
            let task: String = r.get(4)?;
            let Some(&i) = index.get(&task) else {
                continue;
            };
            let list = &mut p.tasks[i].evidence;
            list.push(air_proto::projection::EvidenceView {
                id: r.get(0)?,
                evidence_type: r.get(1)?,
                claim: r.get(2)?,
                reference: r.get(3)?,
                agent_id: r.get(5)?,
            });
            if list.len() > air_proto::projection::TASK_EVIDENCE_LIMIT {
                list.remove(0);
            }
        }
    }

    // What each task's model turns used, counted from its creation on, as the live
    // view counts them.
    {
        let mut stmt = conn.prepare(
            "SELECT m.task_id, SUM(m.input_tokens), SUM(m.output_tokens),
                    SUM(COALESCE(json_extract(m.usage_json, '$.cost_micro_usd'), 0))
             FROM messages m JOIN tasks t ON t.id = m.task_id
             WHERE m.usage_json IS NOT NULL AND m.seq > t.seq
             GROUP BY m.task_id",
        )?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            let task: String = r.get(0)?;
            if let Some(t) = p.tasks.iter_mut().find(|t| t.id == task) {
                t.usage = air_proto::projection::TaskUsage {
                    input_tokens: r.get(1)?,
                    output_tokens: r.get(2)?,
                    cost_micro_usd: r.get(3)?,
                };
            }
        }
    }

    p.edges = conn
        .prepare(
            "SELECT task_id, depends_on_task_id, dependency_type FROM task_dependencies
             ORDER BY rowid",
        )?
        .query_map([], |r| {
            let ty: String = r.get(2)?;
            Ok(EdgeView {
                task_id: r.get(0)?,
                depends_on_task_id: r.get(1)?,
                dependency_type: DependencyType::parse(&ty)
                    .ok_or_else(|| bad_value(2, "dependency type", &ty))?,
            })
        })?
        .collect::<rusqlite::Result<_>>()?;

    p.agents = conn
        .prepare(
            "SELECT id, agent_type, task_id, status, model, pid, exit_code, reason, started_at,
                 ended_at, result_json
             FROM agents ORDER BY seq",
        )?
        .query_map([], |r| {
            let ty: String = r.get(1)?;
            let result: Option<air_proto::result::WorkerResult> = r
                .get::<_, Option<String>>(10)?
                .and_then(|json| serde_json::from_str(&json).ok());
            let mut agent = AgentView {
                id: r.get(0)?,
                agent_type: AgentType::parse(&ty).ok_or_else(|| bad_value(1, "agent type", &ty))?,
                task_id: r.get(2)?,
                status: run_status(r, 3)?,
                model: r.get(4)?,
                pid: r.get(5)?,
                exit_code: r.get(6)?,
                reason: r.get(7)?,
                started_at: r.get(8)?,
                ended_at: r.get(9)?,
                last_heartbeat: None,
                paused: false,
                summary: None,
                evidence: Vec::new(),
                verification: Vec::new(),
                risks: Vec::new(),
                follow_ups: Vec::new(),
            };
            if let Some(result) = &result {
                agent.set_result(result);
            }
            Ok(agent)
        })?
        .collect::<rusqlite::Result<_>>()?;

    p.tool_runs = recent(
        conn,
        "SELECT id, tool, agent_id, task_id, status, error, started_at, ended_at, duration_ms,
             input_json, output_json
         FROM tool_runs ORDER BY seq DESC LIMIT ?1",
        |r| {
            let json = |i: usize| -> rusqlite::Result<Option<serde_json::Value>> {
                Ok(r.get::<_, Option<String>>(i)?
                    .and_then(|j| serde_json::from_str(&j).ok()))
            };
            Ok(ToolRunView {
                id: r.get(0)?,
                tool: r.get(1)?,
                agent_id: r.get(2)?,
                task_id: r.get(3)?,
                status: run_status(r, 4)?,
                input: json(9)?
                    .as_ref()
                    .and_then(air_proto::projection::brief_input),
                output: json(10)?
                    .as_ref()
                    .and_then(air_proto::projection::brief_output),
                error: r.get(5)?,
                started_at: r.get(6)?,
                ended_at: r.get(7)?,
                duration_ms: r.get(8)?,
            })
        },
    )?;

    p.command_runs = recent(
        conn,
        "SELECT id, command, tool_run_id, agent_id, task_id, status, exit_code, error, started_at,
             ended_at, duration_ms
         FROM command_runs ORDER BY seq DESC LIMIT ?1",
        |r| {
            Ok(CommandRunView {
                id: r.get(0)?,
                command: r.get(1)?,
                tool_run_id: r.get(2)?,
                agent_id: r.get(3)?,
                task_id: r.get(4)?,
                status: run_status(r, 5)?,
                exit_code: r.get(6)?,
                error: r.get(7)?,
                started_at: r.get(8)?,
                ended_at: r.get(9)?,
                duration_ms: r.get(10)?,
            })
        },
    )?;

    p.messages = recent(
        conn,
        "SELECT m.id, m.role, m.agent_id, m.task_id, m.content_json, m.created_at,
                json_extract(e.payload_json, '$.client')
         FROM messages m JOIN events e ON e.seq = m.seq ORDER BY m.seq DESC LIMIT ?1",
        |r| {
            let role: String = r.get(1)?;
            let content: String = r.get(4)?;
            let content: serde_json::Value = serde_json::from_str(&content)
                .map_err(|e| rusqlite::Error::FromSqlConversionFailure(4, Type::Text, e.into()))?;
            Ok(MessageView {
                id: r.get(0)?,
                role: match role.as_str() {
                    "user" => MessageRole::User,
                    "assistant" => MessageRole::Assistant,
                    other => return Err(bad_value(1, "message role", other)),
                },
                agent_id: r.get(2)?,
                task_id: r.get(3)?,
                client: r.get(6)?,
                preview: message_preview(&content),
                created_at: r.get(5)?,
            })
        },
    )?;

    p.permission_requests = conn
        .prepare(
            "SELECT id, action, tool, tool_run_id, agent_id, task_id, risk, reason, requested_at
             FROM permission_requests WHERE status = 'pending' ORDER BY seq",
        )?
        .query_map([], |r| {
            Ok(PermissionRequestView {
                request: PermissionRequested {
                    request_id: r.get(0)?,
                    action: r.get(1)?,
                    tool: r.get(2)?,
                    tool_run_id: r.get(3)?,
                    agent_id: r.get(4)?,
                    task_id: r.get(5)?,
                    risk: r.get(6)?,
                    reason: r.get(7)?,
                },
                requested_at: r.get(8)?,
            })
        })?
        .collect::<rusqlite::Result<_>>()?;

    p.counters = conn.query_row(
        "SELECT (SELECT COUNT(*) FROM tool_runs), (SELECT COUNT(*) FROM command_runs),
             (SELECT COUNT(*) FROM messages), (SELECT COUNT(*) FROM artifacts),
             (SELECT COUNT(*) FROM diagnostics), (SELECT COUNT(*) FROM evidence_refs),
             (SELECT COALESCE(SUM(input_tokens), 0) FROM messages),
             (SELECT COALESCE(SUM(output_tokens), 0) FROM messages),
             (SELECT COALESCE(SUM(json_extract(usage_json, '$.cost_micro_usd')), 0)
                  FROM messages WHERE usage_json IS NOT NULL),
             (SELECT COUNT(*) FROM events WHERE type = ?1
                  AND json_extract(payload_json, '$.decision') = 'deny'
                  AND json_extract(payload_json, '$.decided_by') != 'expired')",
        [ev::PermissionDecisionRecorded::TYPE],
        |r| {
            Ok(Counters {
                tool_runs: r.get(0)?,
                command_runs: r.get(1)?,
                messages: r.get(2)?,
                artifacts: r.get(3)?,
                diagnostics: r.get(4)?,
                evidence: r.get(5)?,
                input_tokens: r.get(6)?,
                output_tokens: r.get(7)?,
                cost_micro_usd: r.get(8)?,
                permission_denials: r.get(9)?,
            })
        },
    )?;
    // The run has no table: its view is the fold of its few events.
    let mut stmt = conn.prepare(
        "SELECT id, type, version, timestamp, source_kind, payload_json FROM events
         WHERE type IN (?1, ?2, ?3, ?4, ?5, ?6, ?7)
         ORDER BY seq",
    )?;
    let mut rows = stmt.query([
        ev::RunStarted::TYPE,
        ev::RunCompleted::TYPE,
        ev::RunContinued::TYPE,
        ev::RunModeChanged::TYPE,
        ev::SchedulerPaused::TYPE,
        ev::SchedulerResumed::TYPE,
        ev::SchedulerStopped::TYPE,
    ])?;
    while let Some(r) = rows.next()? {
        let ty: String = r.get(1)?;
        let payload: String = r.get(5)?;
        let mut event = RuntimeEvent::new(
            ty.clone(),
            session_id,
            EventSource::system(),
            serde_json::from_str(&payload).unwrap_or(serde_json::Value::Null),
        );
        event.timestamp = r.get(3)?;
        p.apply_run(&ty, &event);
    }
    // Nor has the planning session: its view is the fold of its events.
    let mut stmt = conn.prepare(
        "SELECT type, payload_json FROM events
         WHERE type LIKE 'architecture.%'
            OR (type = ?1 AND json_extract(payload_json, '$.task.id') GLOB 'plan:[0-9]*')
         ORDER BY seq",
    )?;
    let mut rows = stmt.query([ev::TaskCreated::TYPE])?;
    while let Some(r) = rows.next()? {
        let (ty, payload): (String, String) = (r.get(0)?, r.get(1)?);
        let payload = serde_json::from_str(&payload).unwrap_or(serde_json::Value::Null);
        air_proto::planning_view::PlanningView::apply(&mut p.planning, &ty, &payload);
    }
    // Whether a running agent is held is the last of its pause events.
    let mut stmt = conn.prepare(
        "SELECT type, json_extract(payload_json, '$.agent_id') FROM events
         WHERE type IN (?1, ?2) ORDER BY seq",
    )?;
    let mut rows = stmt.query([ev::AgentPaused::TYPE, ev::AgentResumed::TYPE])?;
    while let Some(r) = rows.next()? {
        let (ty, agent): (String, Option<String>) = (r.get(0)?, r.get(1)?);
        if let Some(a) = p.agents.iter_mut().find(|a| Some(&a.id) == agent.as_ref()) {
            a.paused = ty == ev::AgentPaused::TYPE && a.status == RunStatus::Running;
        }
    }
    Ok(p)
}

fn recent<T>(
    conn: &Connection,
    sql: &str,
    map: impl FnMut(&Row<'_>) -> rusqlite::Result<T>,
) -> Result<VecDeque<T>> {
    let mut rows: Vec<T> = conn
        .prepare(sql)?
        .query_map([RECENT_LIMIT], map)?
        .collect::<rusqlite::Result<_>>()?;
    rows.reverse();
    Ok(rows.into())
}
