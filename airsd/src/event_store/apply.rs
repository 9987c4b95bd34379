//! The domain-table change of each durable event, run on the writer connection inside
//! the transaction that also inserts the event. Referential checks are explicit so that
//! a bad event is refused with a message naming the payload field, and nothing of it is
//! written.

use air_proto::event::RuntimeEvent;
use air_proto::projection::{enum_str, TaskStatus};
use rusqlite::{params, Connection, ErrorCode, OptionalExtension};

use super::prepare::{DomainChange, Prepared};
use crate::error::{Error, Result};

/// Inserts the event row and applies its domain change.
pub(crate) fn apply(conn: &Connection, seq: u64, p: &Prepared) -> Result<()> {
    insert_event(conn, seq, p)?;
    apply_change(conn, seq, &p.event, &p.change)
}

/// Checks what can only be checked once every event of a request is in: dependency
/// targets may be created later in the same request than the task that names them.
pub(crate) fn check_request(conn: &Connection, prepared: &[Prepared]) -> Result<()> {
    for p in prepared {
        if let DomainChange::TaskCreated { task, .. } = &p.change {
            for (i, dep) in task.dependencies.iter().enumerate() {
                if !exists(conn, "tasks", &dep.depends_on_task_id)? {
                    return Err(Error::invalid(
                        &p.event.event_type,
                        &format!("payload.task.dependencies[{i}].depends_on_task_id"),
                        format!(
                            "task `{}` depends on `{}`, which does not exist",
                            task.id, dep.depends_on_task_id
                        ),
                    ));
                }
            }
        }
    }
    Ok(())
}

fn is_constraint(e: &rusqlite::Error) -> bool {
    matches!(e, rusqlite::Error::SqliteFailure(f, _) if f.code == ErrorCode::ConstraintViolation)
}

/// Runs an insert, turning a uniqueness violation into a conflict that names `what`.
fn insert(
    conn: &Connection,
    sql: &str,
    params: impl rusqlite::Params,
    event: &RuntimeEvent,
    field: &str,
    what: impl FnOnce() -> String,
) -> Result<()> {
    match conn.prepare_cached(sql)?.execute(params) {
        Ok(_) => Ok(()),
        Err(e) if is_constraint(&e) => Err(Error::conflict(
            &event.event_type,
            field,
            format!("{} already exists", what()),
        )),
        Err(e) => Err(e.into()),
    }
}

/// Runs an update of one row by id; zero rows means the id does not exist.
fn update(conn: &Connection, sql: &str, params: impl rusqlite::Params) -> Result<bool> {
    Ok(conn.prepare_cached(sql)?.execute(params)? > 0)
}

fn exists(conn: &Connection, table: &'static str, id: &str) -> Result<bool> {
    let sql = format!("SELECT 1 FROM {table} WHERE id = ?1");
    Ok(conn
        .prepare_cached(&sql)?
        .query_row([id], |_| Ok(()))
        .optional()?
        .is_some())
}

fn require(
    conn: &Connection,
    event: &RuntimeEvent,
    table: &'static str,
    noun: &str,
    field: &str,
    id: Option<&str>,
) -> Result<()> {
    match id {
        Some(id) if !exists(conn, table, id)? => Err(Error::invalid(
            &event.event_type,
            field,
            format!("{noun} `{id}` does not exist"),
        )),
        _ => Ok(()),
    }
}

fn missing(event: &RuntimeEvent, field: &str, noun: &str, id: &str) -> Error {
    Error::invalid(
        &event.event_type,
        field,
        format!("{noun} `{id}` does not exist"),
    )
}

fn insert_event(conn: &Connection, seq: u64, p: &Prepared) -> Result<()> {
    let e = &p.event;
    insert(
        conn,
        "INSERT INTO events (seq, id, type, version, timestamp, source_kind, source_id,
             source_agent_type, task_id, agent_id, tool_run_id, command_run_id, route_json,
             route_text, payload_json)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
        params![
            seq,
            e.id,
            e.event_type,
            e.version,
            e.timestamp,
            e.source.kind.as_str(),
            e.source.id,
            e.source.agent_type.map(|t| t.as_str()),
            p.ids.task_id,
            p.ids.agent_id,
            p.ids.tool_run_id,
            p.ids.command_run_id,
            p.route_json,
            p.route_text,
            p.payload_json,
        ],
        e,
        "id",
        || format!("event `{}`", e.id),
    )
}

fn apply_change(
    conn: &Connection,
    seq: u64,
    e: &RuntimeEvent,
    change: &DomainChange,
) -> Result<()> {
    let ts = &e.timestamp;
    match change {
        DomainChange::None => {}
        DomainChange::SessionCreated(pl) => {
            let n: i64 = conn.query_row("SELECT COUNT(*) FROM session_meta", [], |r| r.get(0))?;
            if n > 0 {
                return Err(Error::conflict(&e.event_type, "type", "the session was already created"));
            }
            conn.prepare_cached(
                "INSERT INTO session_meta (id, project_id, title, plan_ref, status, created_at,
                     updated_at)
                 VALUES (?1, ?2, ?3, ?4, 'active', ?5, ?5)",
            )?
            .execute(params![e.session_id, e.project_id, pl.title, pl.plan_ref, ts])?;
        }
        DomainChange::SessionStatus(status) => {
            if !update(
                conn,
                "UPDATE session_meta SET status = ?1, updated_at = ?2",
                params![status, ts],
            )? {
                return Err(Error::invalid(&e.event_type, "type", "no session.created was recorded"));
            }
        }
        DomainChange::Message { role, payload: pl, content_json, usage_json } => {
            let usage = pl.usage.unwrap_or_default();
            insert(
                conn,
                "INSERT INTO messages (id, seq, role, agent_id, task_id, model, content_json,
                     input_tokens, output_tokens, usage_json, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                params![
                    pl.message_id,
                    seq,
                    role,
                    pl.agent_id,
                    pl.task_id,
                    pl.model,
                    content_json,
                    usage.input_tokens,
                    usage.output_tokens,
                    usage_json,
                    ts
                ],
                e,
                "payload.message_id",
                || format!("message `{}`", pl.message_id),
            )?;
            conn.prepare_cached("DELETE FROM message_drafts WHERE message_id = ?1")?
                .execute([&pl.message_id])?;
        }
        DomainChange::ContextMessage { agent_id, payload: pl, content_json } => {
            insert(
                conn,
                "INSERT INTO context_messages (id, seq, agent_id, task_id, content_json, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![pl.message_id, seq, agent_id, pl.task_id, content_json, ts],
                e,
                "payload.message_id",
                || format!("message `{}`", pl.message_id),
            )?;
        }
        DomainChange::TaskCreated { task, spec_json } => {
            insert(
                conn,
                "INSERT INTO tasks (id, seq, title, type, category, phase, write_area, status,
                     attempts, spec_json, created_at, updated_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'pending', 0, ?8, ?9, ?9)",
                params![
                    task.id,
                    seq,
                    task.title,
                    task.task_type.as_str(),
                    task.category.and_then(|c| enum_str(&c)),
                    task.phase,
                    task.scope.write_area,
                    spec_json,
                    ts
                ],
                e,
                "payload.task.id",
                || format!("task `{}`", task.id),
            )?;
            for (i, dep) in task.dependencies.iter().enumerate() {
                let field = format!("payload.task.dependencies[{i}]");
                if dep.depends_on_task_id == task.id {
                    return Err(Error::invalid(
                        &e.event_type,
                        &field,
                        format!("task `{}` depends on itself", task.id),
                    ));
                }
                insert(
                    conn,
                    "INSERT INTO task_dependencies (task_id, depends_on_task_id, dependency_type,
                         reason, source)
                     VALUES (?1, ?2, ?3, ?4, ?5)",
                    params![
                        task.id,
                        dep.depends_on_task_id,
                        dep.dependency_type.as_str(),
                        dep.reason,
                        dep.source.and_then(|s| enum_str(&s))
                    ],
                    e,
                    &field,
                    || {
                        format!(
                            "a {} dependency of `{}` on `{}`",
                            dep.dependency_type.as_str(),
                            task.id,
                            dep.depends_on_task_id
                        )
                    },
                )?;
            }
        }
        DomainChange::TaskStatus(status, pl) => apply_task_status(conn, e, *status, pl)?,
        DomainChange::TasksReopened(task_ids) => {
            for (i, id) in task_ids.iter().enumerate() {
                if !update(
                    conn,
                    "UPDATE tasks SET status = 'pending', reason = NULL, updated_at = ?2
                     WHERE id = ?1",
                    params![id, ts],
                )? {
                    return Err(missing(e, &format!("payload.task_ids[{i}]"), "task", id));
                }
            }
        }
        DomainChange::AgentStarted(pl) => {
            require(conn, e, "tasks", "task", "payload.task_id", pl.task_id.as_deref())?;
            insert(
                conn,
                "INSERT INTO agents (id, seq, agent_type, task_id, status, model, pid, started_at)
                 VALUES (?1, ?2, ?3, ?4, 'running', ?5, ?6, ?7)",
                params![pl.agent_id, seq, pl.agent_type.as_str(), pl.task_id, pl.model, pl.pid, ts],
                e,
                "payload.agent_id",
                || format!("agent `{}`", pl.agent_id),
            )?;
        }
        DomainChange::AgentCompleted { payload: pl, result_json } => {
            if !update(
                conn,
                "UPDATE agents SET status = 'completed', exit_code = ?2, result_json = COALESCE(?3, result_json),
                     ended_at = ?4 WHERE id = ?1",
                params![pl.agent_id, pl.exit_code, result_json, ts],
            )? {
                return Err(missing(e, "payload.agent_id", "agent", &pl.agent_id));
            }
        }
        DomainChange::AgentFailed(pl) => {
            if !update(
                conn,
                "UPDATE agents SET status = 'failed', exit_code = ?2, reason = ?3, ended_at = ?4
                 WHERE id = ?1",
                params![pl.agent_id, pl.exit_code, pl.reason, ts],
            )? {
                return Err(missing(e, "payload.agent_id", "agent", &pl.agent_id));
            }
        }
        DomainChange::ToolStarted { payload: pl, input_json } => insert(
            conn,
            "INSERT INTO tool_runs (id, seq, tool, agent_id, task_id, origin_message_id, status,
                 input_json, started_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'running', ?7, ?8)",
            params![
                pl.tool_run_id,
                seq,
                pl.tool,
                pl.agent_id,
                pl.task_id,
                pl.origin_message_id,
                input_json,
                ts
            ],
            e,
            "payload.tool_run_id",
            || format!("tool run `{}`", pl.tool_run_id),
        )?,
        DomainChange::ToolCompleted { payload: pl, output_json } => {
            if !update(
                conn,
                "UPDATE tool_runs SET status = 'completed', output_json = ?2, error = NULL,
                     ended_at = ?3, duration_ms = ?4 WHERE id = ?1",
                params![pl.tool_run_id, output_json, ts, pl.duration_ms],
            )? {
                return Err(missing(e, "payload.tool_run_id", "tool run", &pl.tool_run_id));
            }
        }
        DomainChange::ToolFailed(pl) => {
            if !update(
                conn,
                "UPDATE tool_runs SET status = 'failed', output_json = NULL, error = ?2,
                     ended_at = ?3, duration_ms = ?4 WHERE id = ?1",
                params![pl.tool_run_id, pl.error, ts, pl.duration_ms],
            )? {
                return Err(missing(e, "payload.tool_run_id", "tool run", &pl.tool_run_id));
            }
        }
        DomainChange::CommandStarted(pl) => {
            require(conn, e, "tool_runs", "tool run", "payload.tool_run_id", pl.tool_run_id.as_deref())?;
            insert(
                conn,
                "INSERT INTO command_runs (id, seq, tool_run_id, agent_id, task_id,
                     origin_message_id, command, cwd, status, started_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 'running', ?9)",
                params![
                    pl.command_run_id,
                    seq,
                    pl.tool_run_id,
                    pl.agent_id,
                    pl.task_id,
                    pl.origin_message_id,
                    pl.command,
                    pl.cwd,
                    ts
                ],
                e,
                "payload.command_run_id",
                || format!("command run `{}`", pl.command_run_id),
            )?;
        }
        DomainChange::CommandCompleted(pl) => {
            if !update(
                conn,
                "UPDATE command_runs SET status = 'completed', exit_code = ?2, error = NULL,
                     ended_at = ?3, duration_ms = ?4 WHERE id = ?1",
                params![pl.command_run_id, pl.exit_code, ts, pl.duration_ms],
            )? {
                return Err(missing(e, "payload.command_run_id", "command run", &pl.command_run_id));
            }
        }
        DomainChange::CommandFailed(pl) => {
            if !update(
                conn,
                "UPDATE command_runs SET status = 'failed', exit_code = ?2, error = ?3,
                     ended_at = ?4, duration_ms = ?5 WHERE id = ?1",
                params![pl.command_run_id, pl.exit_code, pl.error, ts, pl.duration_ms],
            )? {
                return Err(missing(e, "payload.command_run_id", "command run", &pl.command_run_id));
            }
        }
        DomainChange::Artifact(pl) => {
            require(conn, e, "tasks", "task", "payload.task_id", pl.task_id.as_deref())?;
            require(conn, e, "agents", "agent", "payload.agent_id", pl.agent_id.as_deref())?;
            require(conn, e, "tool_runs", "tool run", "payload.tool_run_id", pl.tool_run_id.as_deref())?;
            require(
                conn,
                e,
                "command_runs",
                "command run",
                "payload.command_run_id",
                pl.command_run_id.as_deref(),
            )?;
            let a = &pl.artifact;
            insert(
                conn,
                "INSERT INTO artifacts (id, seq, type, uri, path, original_name, size_bytes, sha256,
                     task_id, agent_id, tool_run_id, command_run_id, entity_type, entity_id,
                     created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
                params![
                    a.id,
                    seq,
                    a.artifact_type.as_str(),
                    a.uri,
                    pl.path,
                    pl.original_name,
                    a.size_bytes,
                    a.sha256,
                    pl.task_id,
                    pl.agent_id,
                    pl.tool_run_id,
                    pl.command_run_id,
                    pl.entity_type,
                    pl.entity_id,
                    a.created_at
                ],
                e,
                "payload.artifact.id",
                || format!("artifact `{}`", a.id),
            )?;
        }
        DomainChange::Diagnostic(pl) => insert(
            conn,
            "INSERT INTO diagnostics (id, seq, severity, message, file, line, column_number, code,
                 signature, source_tool, command_run_id, task_id, agent_id, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)",
            params![
                pl.diagnostic_id,
                seq,
                pl.severity.as_str(),
                pl.message,
                pl.file,
                pl.line,
                pl.column,
                pl.code,
                pl.signature,
                pl.source_tool,
                pl.command_run_id,
                pl.task_id,
                pl.agent_id,
                ts
            ],
            e,
            "payload.diagnostic_id",
            || format!("diagnostic `{}`", pl.diagnostic_id),
        )?,
        DomainChange::Evidence { payload: pl, location_json } => {
            let ev = &pl.evidence;
            insert(
                conn,
                "INSERT INTO evidence_refs (id, seq, kind, ref, evidence_type, claim, location_json,
                     task_id, agent_id, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                params![
                    ev.id,
                    seq,
                    ev.kind.as_str(),
                    ev.reference,
                    ev.evidence_type.and_then(|t| enum_str(&t)),
                    ev.claim,
                    location_json,
                    pl.task_id,
                    pl.agent_id,
                    ts
                ],
                e,
                "payload.evidence.id",
                || format!("evidence `{}`", ev.id),
            )?;
        }
        DomainChange::WorkspaceCreated(pl) => insert(
            conn,
            "INSERT INTO workspaces (id, seq, path, task_id, branch, base_ref, status, created_at,
                 updated_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'active', ?7, ?7)",
            params![pl.workspace_id, seq, pl.path, pl.task_id, pl.branch, pl.base_ref, ts],
            e,
            "payload.workspace_id",
            || format!("workspace `{}`", pl.workspace_id),
        )?,
        DomainChange::WorkspaceChanged { status, payload: pl } => {
            if !update(
                conn,
                "UPDATE workspaces SET status = ?2, reason = ?3, updated_at = ?4 WHERE id = ?1",
                params![pl.workspace_id, status, pl.reason, ts],
            )? {
                return Err(missing(e, "payload.workspace_id", "workspace", &pl.workspace_id));
            }
        }
        DomainChange::PermissionRequested(pl) => insert(
            conn,
            "INSERT INTO permission_requests (id, seq, action, tool, tool_run_id, agent_id, task_id,
                 risk, reason, status, requested_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, 'pending', ?10)",
            params![
                pl.request_id,
                seq,
                pl.action,
                pl.tool,
                pl.tool_run_id,
                pl.agent_id,
                pl.task_id,
                pl.risk,
                pl.reason,
                ts
            ],
            e,
            "payload.request_id",
            || format!("permission request `{}`", pl.request_id),
        )?,
        DomainChange::PermissionDecision(pl) => {
            if let Some(id) = &pl.request_id {
                let status: Option<String> = conn
                    .prepare_cached("SELECT status FROM permission_requests WHERE id = ?1")?
                    .query_row([id], |r| r.get(0))
                    .optional()?;
                match status.as_deref() {
                    None => return Err(missing(e, "payload.request_id", "permission request", id)),
                    Some("decided") => {
                        return Err(Error::conflict(
                            &e.event_type,
                            "payload.request_id",
                            format!("permission request `{id}` was already answered"),
                        ))
                    }
                    Some(_) => {}
                }
                conn.prepare_cached(
                    "UPDATE permission_requests SET status = 'decided', decision = ?2,
                         decided_by = ?3, decision_reason = ?4, decided_at = ?5 WHERE id = ?1",
                )?
                .execute(params![id, pl.decision.as_str(), pl.decided_by, pl.reason, ts])?;
            }
        }
    }
    Ok(())
}

fn apply_task_status(
    conn: &Connection,
    e: &RuntimeEvent,
    status: TaskStatus,
    pl: &air_proto::payload::TaskStatusChanged,
) -> Result<()> {
    let attempts: Option<u32> = conn
        .prepare_cached("SELECT attempts FROM tasks WHERE id = ?1")?
        .query_row([&pl.task_id], |r| r.get(0))
        .optional()?;
    let Some(attempts) = attempts else {
        return Err(missing(e, "payload.task_id", "task", &pl.task_id));
    };
    let ts = &e.timestamp;
    let attempts =
        if status == TaskStatus::Running {
            let attempt = pl.attempt.unwrap_or_else(|| attempts.saturating_add(1));
            if attempt == 0 || attempt > super::prepare::MAX_ATTEMPT {
                return Err(Error::invalid(
                    &e.event_type,
                    "payload.attempt",
                    format!(
                        "attempts are numbered from 1 to {}",
                        super::prepare::MAX_ATTEMPT
                    ),
                ));
            }
            insert(
            conn,
            "INSERT INTO task_attempts (task_id, attempt, agent_id, agent_type, status, started_at)
             VALUES (?1, ?2, ?3, ?4, 'running', ?5)",
            params![pl.task_id, attempt, pl.agent_id, pl.agent_type.map(|t| t.as_str()), ts],
            e,
            "payload.attempt",
            || format!("attempt {attempt} of task `{}`", pl.task_id),
        )?;
            attempts.max(attempt)
        } else {
            attempts
        };
    conn.prepare_cached(
        "UPDATE tasks SET status = ?2, attempts = ?3, agent_id = COALESCE(?4, agent_id),
             reason = ?5, updated_at = ?6 WHERE id = ?1",
    )?
    .execute(params![
        pl.task_id,
        status.as_str(),
        attempts,
        pl.agent_id,
        pl.reason,
        ts
    ])?;
    if status.is_terminal() {
        conn.prepare_cached(
            "UPDATE task_attempts SET status = ?2, reason = ?3, ended_at = ?4
             WHERE task_id = ?1 AND ended_at IS NULL",
        )?
        .execute(params![pl.task_id, status.as_str(), pl.reason, ts])?;
    }
    Ok(())
}
