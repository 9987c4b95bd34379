//! Reads of a session's database that the scheduler needs, in one place: the events
//! recovery folds, the runs found running at a restart, a permission request's answer,
//! an agent's evidence.

use rusqlite::{Connection, OptionalExtension as _};
use serde_json::Value;

use crate::error::{Error, Result};

/// A stored event: its type, canonical timestamp and payload.
pub struct StoredEvent {
    pub event_type: String,
    pub timestamp: String,
    pub payload: Value,
}

/// Calls `each` with every stored event of one of `types`, in the order recorded.
pub fn events_of_types(
    conn: &Connection,
    types: &[&str],
    mut each: impl FnMut(StoredEvent) -> Result<()>,
) -> Result<()> {
    let placeholders = vec!["?"; types.len()].join(", ");
    let mut stmt = conn.prepare(&format!(
        "SELECT type, timestamp, payload_json FROM events WHERE type IN ({placeholders}) ORDER BY seq"
    ))?;
    let mut rows = stmt.query(rusqlite::params_from_iter(types.iter()))?;
    while let Some(row) = rows.next()? {
        let event_type: String = row.get(0)?;
        let payload_json: String = row.get(2)?;
        let payload = serde_json::from_str(&payload_json)
            .map_err(|e| Error::Internal(format!("stored {event_type} payload: {e}")))?;
        each(StoredEvent {
            event_type,
            timestamp: row.get(1)?,
            payload,
        })?;
    }
    Ok(())
}

/// The ids of the tool runs and of the command runs still marked running.
pub fn running_runs(conn: &Connection) -> Result<(Vec<String>, Vec<String>)> {
    let ids = |sql: &str| -> Result<Vec<String>> {
        let mut stmt = conn.prepare(sql)?;
        let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
        Ok(rows.collect::<std::result::Result<Vec<_>, _>>()?)
    };
    Ok((
        ids("SELECT id FROM tool_runs WHERE status = 'running' ORDER BY seq")?,
        ids("SELECT id FROM command_runs WHERE status = 'running' ORDER BY seq")?,
    ))
}

/// The tool runs of tasks that failed with `error`, as (task, tool, input JSON).
pub fn failed_tool_runs(conn: &Connection, error: &str) -> Result<Vec<(String, String, String)>> {
    let mut stmt = conn.prepare(
        "SELECT task_id, tool, input_json FROM tool_runs
         WHERE status = 'failed' AND error = ?1 AND task_id IS NOT NULL ORDER BY seq",
    )?;
    let rows = stmt.query_map([error], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
    Ok(rows.collect::<std::result::Result<Vec<_>, _>>()?)
}

/// A decided permission request's (decision, decided by, reason).
pub fn permission_answer(
    conn: &Connection,
    request_id: &str,
) -> Result<Option<(String, String, Option<String>)>> {
    Ok(conn
        .query_row(
            "SELECT decision, decided_by, decision_reason FROM permission_requests
             WHERE id = ?1 AND status = 'decided'",
            [request_id],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .optional()?)
}

/// Whether this agent has run a command to its end.
pub fn has_completed_command(conn: &Connection, agent_id: &str) -> Result<bool> {
    Ok(conn
        .query_row(
            "SELECT 1 FROM command_runs WHERE agent_id = ?1 AND status = 'completed' LIMIT 1",
            [agent_id],
            |_| Ok(()),
        )
        .optional()?
        .is_some())
}

/// The commands an agent ran to their end, each with where it ran.
pub fn completed_commands(conn: &Connection, agent_id: &str) -> Result<Vec<(String, String)>> {
    let mut stmt = conn.prepare(
        "SELECT command, COALESCE(cwd, '') FROM command_runs WHERE agent_id = ?1 AND status = 'completed' ORDER BY seq",
    )?;
    let rows = stmt.query_map([agent_id], |r| Ok((r.get(0)?, r.get(1)?)))?;
    Ok(rows.collect::<std::result::Result<_, _>>()?)
}

/// The inputs of an agent's completed calls of `tool`, in order.
pub fn completed_inputs(conn: &Connection, agent_id: &str, tool: &str) -> Result<Vec<Value>> {
    let mut stmt = conn.prepare(
        "SELECT input_json FROM tool_runs WHERE agent_id = ?1 AND tool = ?2 AND status = 'completed' ORDER BY seq",
    )?;
    let rows = stmt.query_map([agent_id, tool], |r| r.get::<_, String>(0))?;
    Ok(rows
        .filter_map(|r| r.ok())
        .filter_map(|j| serde_json::from_str(&j).ok())
        .collect())
}

/// Whether an agent completed a call of one of `tools`.
pub fn has_completed_tool(conn: &Connection, agent_id: &str, tools: &[&str]) -> Result<bool> {
    let placeholders = vec!["?"; tools.len()].join(", ");
    let params = std::iter::once(agent_id).chain(tools.iter().copied());
    Ok(conn
        .query_row(
            &format!("SELECT 1 FROM tool_runs WHERE agent_id = ? AND status = 'completed' AND tool IN ({placeholders}) LIMIT 1"),
            rusqlite::params_from_iter(params),
            |_| Ok(()),
        )
        .optional()?
        .is_some())
}

/// The files the tool calls of a task's agents changed, in the order first changed:
/// the path of each completed write or edit, and the files each command changed.
pub fn changed_in_task(conn: &Connection, task_id: &str, writes: &[&str]) -> Result<Vec<String>> {
    let placeholders = vec!["?"; writes.len()].join(", ");
    let mut stmt = conn.prepare(&format!(
        "SELECT tool, output_json FROM tool_runs WHERE task_id = ? AND status = 'completed' AND output_json IS NOT NULL AND (tool IN ({placeholders}) OR output_json LIKE '%\"changed_files\"%') ORDER BY seq"
    ))?;
    let params = std::iter::once(task_id).chain(writes.iter().copied());
    let mut rows = stmt.query(rusqlite::params_from_iter(params))?;
    let mut out: Vec<String> = Vec::new();
    while let Some(row) = rows.next()? {
        let tool: String = row.get(0)?;
        let json: String = row.get(1)?;
        let Ok(output) = serde_json::from_str::<Value>(&json) else {
            continue;
        };
        for p in changed_by(&tool, &output, writes) {
            if !out.iter().any(|o| o == p) {
                out.push(p.to_string());
            }
        }
    }
    Ok(out)
}

/// The files a completed tool call changed, from its output: the path of a write or
/// an edit (`writes` names those tools), the files a command changed.
pub fn changed_by<'a>(tool: &str, output: &'a Value, writes: &[&str]) -> Vec<&'a str> {
    let mut paths: Vec<&str> = Vec::new();
    if writes.contains(&tool) {
        paths.extend(output.get("path").and_then(Value::as_str));
    }
    paths.extend(
        output
            .get("changed_files")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str),
    );
    paths
}

/// What airsd recorded of the agents of one attempt (in record order): the evidence
/// it derived, the commands they ran and how each ended, and the files their calls
/// changed. Read by the agents' own index, so its cost does not grow with the rest of
/// the session.
pub fn attempt_ledger(
    conn: &Connection,
    agents: &[String],
    writes: &[&str],
    roots: &[&std::path::Path],
) -> Result<air_proto::gate::Ledger> {
    use air_proto::events as ev;
    use air_proto::gate::{Change, CommandRecord, Finding, Ledger, Piece};
    use std::collections::HashMap;
    let mut ledger = Ledger::default();
    let mut stmt = conn.prepare_cached(
        "SELECT seq, type, payload_json FROM events WHERE agent_id = ?1 AND type IN
         ('tool.started', 'tool.completed', 'command.started', 'command.completed',
          'command.failed', 'evidence.created', 'diagnostic.created') ORDER BY seq",
    )?;
    for agent in agents {
        let mut tools: HashMap<String, (u64, String)> = HashMap::new();
        let mut commands: HashMap<String, (String, Option<String>, bool)> = HashMap::new();
        let mut rows = stmt.query([agent])?;
        while let Some(row) = rows.next()? {
            let seq: u64 = row.get(0)?;
            let kind: String = row.get(1)?;
            let json: String = row.get(2)?;
            let Ok(v) = serde_json::from_str::<Value>(&json) else {
                continue;
            };
            let text = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
            match kind.as_str() {
                ev::ToolStarted::TYPE => {
                    if let (Some(id), Some(tool)) = (text("tool_run_id"), text("tool")) {
                        tools.insert(id, (seq, tool));
                    }
                }
                ev::ToolCompleted::TYPE => {
                    let Some((started, tool)) =
                        text("tool_run_id").and_then(|id| tools.remove(&id))
                    else {
                        continue;
                    };
                    let Some(output) = v.get("output") else {
                        continue;
                    };
                    let files: Vec<String> = changed_by(&tool, output, writes)
                        .into_iter()
                        .map(str::to_string)
                        .collect();
                    if !files.is_empty() {
                        ledger.changes.push(Change {
                            seq: started,
                            files,
                            command_run_id: output
                                .get("command_run_id")
                                .and_then(Value::as_str)
                                .map(str::to_string),
                        });
                    }
                }
                ev::CommandStarted::TYPE => {
                    if let (Some(id), Some(command)) = (text("command_run_id"), text("command")) {
                        // Where it started, from the project root (a record without
                        // its directory started at the root).
                        let start = match text("cwd") {
                            None => Some(String::new()),
                            Some(cwd) => roots.iter().find_map(|r| {
                                std::path::Path::new(&cwd)
                                    .strip_prefix(r)
                                    .ok()
                                    .map(|p| p.to_string_lossy().into_owned())
                            }),
                        };
                        // airsd's own run of the task's check before the agent began.
                        let before = text("tool_run_id")
                            .and_then(|t| tools.get(&t))
                            .is_some_and(|(_, tool)| tool == air_proto::gate::BEFORE_TOOL);
                        commands.insert(id, (command, start, before));
                    }
                }
                ev::CommandCompleted::TYPE | ev::CommandFailed::TYPE => {
                    let Some(id) = text("command_run_id") else {
                        continue;
                    };
                    let Some((command, start_dir, before)) = commands.remove(&id) else {
                        continue;
                    };
                    let exit_code = (kind == ev::CommandCompleted::TYPE)
                        .then(|| v.get("exit_code").and_then(Value::as_i64))
                        .flatten()
                        .and_then(|c| i32::try_from(c).ok());
                    ledger.commands.push(CommandRecord {
                        command_run_id: id,
                        command,
                        exit_code,
                        seq,
                        start_dir,
                        before,
                    });
                }
                ev::DiagnosticCreated::TYPE => {
                    let Ok(d) = serde_json::from_value::<air_proto::payload::DiagnosticCreated>(v)
                    else {
                        continue;
                    };
                    if let (air_proto::payload::DiagnosticSeverity::Error, Some(c), Some(s)) =
                        (d.severity, d.command_run_id, d.signature)
                    {
                        ledger.findings.push(Finding {
                            command_run_id: c,
                            signature: s,
                        });
                    }
                }
                _ => {
                    let Ok(e) = serde_json::from_value::<air_proto::payload::EvidenceCreated>(v)
                    else {
                        continue;
                    };
                    let Some(evidence_type) = e.evidence.evidence_type else {
                        continue;
                    };
                    ledger.pieces.push(Piece {
                        id: e.evidence.id,
                        evidence_type,
                        reference: e.evidence.reference,
                        claim: e.evidence.claim,
                        seq,
                        command_run_id: e.command_run_id,
                        covers: e.covers,
                    });
                }
            }
        }
    }
    ledger.pieces.sort_by_key(|p| p.seq);
    ledger.commands.sort_by_key(|c| c.seq);
    ledger.changes.sort_by_key(|c| c.seq);
    Ok(ledger)
}

/// The agents of a task, other than `current`, for which airsd ran the task's check
/// before they began ([`air_proto::gate::BEFORE_TOOL`]).
pub fn checked_before(conn: &Connection, task_id: &str, current: &[String]) -> Result<Vec<String>> {
    let mut stmt = conn.prepare_cached(
        "SELECT DISTINCT agent_id FROM events WHERE task_id = ?1 AND type = 'tool.started'
         AND agent_id IS NOT NULL AND json_extract(payload_json, '$.tool') = ?2",
    )?;
    let rows = stmt.query_map(
        rusqlite::params![task_id, air_proto::gate::BEFORE_TOOL],
        |r| r.get::<_, String>(0),
    )?;
    let mut out = Vec::new();
    for agent in rows {
        let agent = agent?;
        if !current.contains(&agent) {
            out.push(agent);
        }
    }
    Ok(out)
}

/// The compiler and linker findings of these agents' commands, errors first, as lines
/// (`file:line:column: severity [signature]: message`), at most `limit`.
pub fn findings_of(conn: &Connection, agents: &[String], limit: usize) -> Result<Vec<String>> {
    let placeholders = vec!["?"; agents.len()].join(", ");
    let mut stmt = conn.prepare(&format!(
        "SELECT file, line, column_number, severity, signature, message FROM diagnostics
         WHERE agent_id IN ({placeholders})
         ORDER BY severity <> 'error', seq LIMIT {limit}"
    ))?;
    let rows = stmt.query_map(rusqlite::params_from_iter(agents.iter()), |r| {
        let file: Option<String> = r.get(0)?;
        let line: Option<u32> = r.get(1)?;
        let column: Option<u32> = r.get(2)?;
        let severity: String = r.get(3)?;
        let signature: Option<String> = r.get(4)?;
        let message: String = r.get(5)?;
        let place = match (file, line, column) {
            (Some(f), Some(l), Some(c)) => format!("{f}:{l}:{c}"),
            (Some(f), Some(l), None) => format!("{f}:{l}"),
            (Some(f), None, _) => f,
            _ => "(no place)".into(),
        };
        Ok(format!(
            "{place}: {severity} [{}]: {message}",
            signature.unwrap_or_default()
        ))
    })?;
    Ok(rows.collect::<std::result::Result<Vec<_>, _>>()?)
}

/// One message of the conversation, as stored.
pub struct StoredMessage {
    pub id: String,
    pub user: bool,
    pub content: Value,
}

/// The conversation with the Main Agent, oldest first, at most `limit` of the latest
/// messages: the user's messages and what the turns' and the direct lane's agents
/// wrote.
pub fn conversation(conn: &Connection, limit: u32) -> Result<Vec<StoredMessage>> {
    let mut stmt = conn.prepare(&format!(
        "SELECT m.id, m.role, m.content_json FROM messages m
             WHERE {CONVERSATION} ORDER BY m.seq DESC LIMIT ?1"
    ))?;
    let mut rows = stmt.query([limit])?;
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        let role: String = row.get(1)?;
        let json: String = row.get(2)?;
        out.push(StoredMessage {
            id: row.get(0)?,
            user: role == "user",
            content: serde_json::from_str(&json).unwrap_or(Value::Null),
        });
    }
    out.reverse();
    Ok(out)
}

/// The summary of each task's latest executor result, by task.
pub fn result_summaries(conn: &Connection) -> Result<Vec<(String, String)>> {
    let mut stmt = conn.prepare(
        "SELECT task_id, json_extract(result_json, '$.summary') FROM agents
         WHERE agent_type = 'executor' AND task_id IS NOT NULL AND result_json IS NOT NULL
         ORDER BY seq",
    )?;
    let mut rows = stmt.query([])?;
    let mut out: Vec<(String, String)> = Vec::new();
    while let Some(row) = rows.next()? {
        let task: String = row.get(0)?;
        let Some(summary): Option<String> = row.get(1)? else {
            continue;
        };
        out.retain(|(t, _)| *t != task);
        out.push((task, summary));
    }
    Ok(out)
}

/// What became of a task, as its latest agents reported and airsd judged: what a
/// summary turn or a milestone review is asked to judge.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Outcome {
    /// The latest executor's summary.
    pub summary: Option<String>,
    /// The files its result changed, as airsd recorded them.
    pub changed: Vec<String>,
    /// The evidence the gate counted for it (`kind: claim`).
    pub evidence: Vec<String>,
    /// What the gate refused of it.
    pub refused: Vec<String>,
    /// The latest review's decision and summary.
    pub review: Option<String>,
}

/// Each task's [`Outcome`], by task id, in the order their agents ended.
pub fn task_outcomes(conn: &Connection) -> Result<Vec<(String, Outcome)>> {
    let mut stmt = conn.prepare(
        "SELECT a.task_id, a.agent_type, a.result_json,
                (SELECT e.payload_json FROM events e WHERE e.type = 'agent.completed'
                 AND e.agent_id = a.id ORDER BY e.seq DESC LIMIT 1)
         FROM agents a
         WHERE a.task_id IS NOT NULL AND a.result_json IS NOT NULL
           AND a.agent_type IN ('executor', 'reviewer')
         ORDER BY a.seq",
    )?;
    let mut rows = stmt.query([])?;
    let mut out: Vec<(String, Outcome)> = Vec::new();
    while let Some(row) = rows.next()? {
        let task: String = row.get(0)?;
        let kind: String = row.get(1)?;
        let result: Option<Value> = row
            .get::<_, String>(2)
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok());
        let Some(result) = result else { continue };
        let completed: Option<Value> = row
            .get::<_, Option<String>>(3)?
            .and_then(|t| serde_json::from_str(&t).ok());
        let i = match out.iter().position(|(t, _)| *t == task) {
            Some(i) => i,
            None => {
                out.push((task, Outcome::default()));
                out.len() - 1
            }
        };
        let o = &mut out[i].1;
        let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
        if kind == "reviewer" {
            let decision = result
                .get("result")
                .and_then(|r| text(r, "decision"))
                .unwrap_or_else(|| text(&result, "status").unwrap_or_default());
            o.review = Some(
                match text(&result, "summary").filter(|s| !s.trim().is_empty()) {
                    Some(s) => format!("{decision}: {s}"),
                    None => decision,
                },
            );
            continue;
        }
        // A new attempt: what the earlier one showed no longer stands.
        *o = Outcome {
            summary: text(&result, "summary"),
            changed: result
                .get("changed_files")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
            ..Outcome::default()
        };
        if let Some(gate) = completed.as_ref().and_then(|c| c.get("gate")) {
            if let Ok(v) = serde_json::from_value::<air_proto::gate::Verdict>(gate.clone()) {
                o.evidence = v
                    .counted
                    .iter()
                    .map(|c| format!("{}: {}", c.evidence_type.as_str(), c.claim))
                    .collect();
                o.refused = v.refused;
            }
        }
    }
    Ok(out)
}

/// The messages of the conversation: the user's and the turns' and the direct lane's
/// (a turn is `main:` and a number; a plan's phase may be called `main`, whose
/// milestone review `main:milestone-1` is not the conversation).
const CONVERSATION: &str =
    "(m.role = 'user' OR m.task_id GLOB 'main:[0-9]*' OR m.task_id GLOB 'direct:[0-9]*' OR m.task_id GLOB 'plan:[0-9]*')";

/// A page of the conversation, oldest first: after `after` (forward), or the latest
/// before `before` (reading back), at most `limit`.
pub fn conversation_page(
    conn: &Connection,
    after: Option<u64>,
    before: Option<u64>,
    limit: u32,
) -> Result<air_proto::api::ConversationPage> {
    use air_proto::projection::MessageRole;
    let (cond, order, bound) = match (after, before) {
        (_, Some(b)) => ("m.seq < ?1", "DESC", b),
        (a, None) => ("m.seq > ?1", "ASC", a.unwrap_or(0)),
    };
    let sql = format!(
        "SELECT m.seq, m.id, m.role, json_extract(e.payload_json, '$.client'), m.task_id, m.agent_id,
                m.content_json, m.created_at
         FROM messages m JOIN events e ON e.seq = m.seq
         WHERE {cond} AND {CONVERSATION} ORDER BY m.seq {order} LIMIT ?2"
    );
    let mut stmt = conn.prepare(&sql)?;
    // A seq past SQLite's integers is past every message.
    let bound = i64::try_from(bound).unwrap_or(i64::MAX);
    let mut rows = stmt.query(rusqlite::params![bound, limit + 1])?;
    let mut messages = Vec::new();
    while let Some(row) = rows.next()? {
        let role: String = row.get(2)?;
        let content: String = row.get(6)?;
        messages.push(air_proto::api::ConversationMessage {
            seq: row.get(0)?,
            message_id: row.get(1)?,
            role: if role == "user" {
                MessageRole::User
            } else {
                MessageRole::Assistant
            },
            client: row.get(3)?,
            task_id: row.get(4)?,
            agent_id: row.get(5)?,
            content: serde_json::from_str(&content).unwrap_or(Value::Null),
            created_at: row.get(7)?,
        });
    }
    let more = messages.len() > limit as usize;
    messages.truncate(limit as usize);
    if before.is_some() {
        messages.reverse();
    }
    let next_after_seq = (more && before.is_none())
        .then(|| messages.last().map(|m| m.seq))
        .flatten();
    Ok(air_proto::api::ConversationPage {
        messages,
        next_after_seq,
    })
}

/// An agent's own conversation as its loop recorded it: each message's id, whether
/// the user's side spoke it, and its content blocks, in order (the starting context
/// is not among them).
pub fn agent_messages(conn: &Connection, agent_id: &str) -> Result<Vec<StoredMessage>> {
    let mut stmt = conn.prepare(
        "SELECT seq, 0, json_extract(payload_json, '$.message_id'), json_extract(payload_json, '$.content')
         FROM events WHERE agent_id = ?1 AND type = 'assistant.message.created'
         UNION ALL
         SELECT seq, 1, id, content_json FROM context_messages WHERE agent_id = ?1
         ORDER BY 1",
    )?;
    let mut rows = stmt.query([agent_id])?;
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        let user: bool = row.get(1)?;
        let id: Option<String> = row.get(2)?;
        let content: Option<String> = row.get(3)?;
        out.push(StoredMessage {
            id: id.unwrap_or_default(),
            user,
            content: content
                .and_then(|c| serde_json::from_str(&c).ok())
                .unwrap_or(Value::Null),
        });
    }
    Ok(out)
}

/// The latest summary of an agent's messages, if a compaction completed.
pub fn latest_summary(
    conn: &Connection,
    agent_id: &str,
) -> Result<Option<air_proto::payload::SummaryCreated>> {
    let json: Option<String> = conn
        .query_row(
            "SELECT payload_json FROM events WHERE agent_id = ?1 AND type = 'summary.created'
             ORDER BY seq DESC LIMIT 1",
            [agent_id],
            |r| r.get(0),
        )
        .optional()?;
    Ok(json.and_then(|j| serde_json::from_str(&j).ok()))
}

/// Side agents of a kind (Compactors, ExperienceMiners): how many were started for
/// `task_id` (none given: 0), and those still recorded as running.
pub fn side_agents(
    conn: &Connection,
    kind: air_proto::event::AgentType,
    task_id: Option<&str>,
) -> Result<(u32, Vec<String>)> {
    let started: u32 = match task_id {
        Some(t) => conn.query_row(
            "SELECT COUNT(*) FROM agents WHERE agent_type = ?1 AND task_id = ?2",
            [kind.as_str(), t],
            |r| r.get(0),
        )?,
        None => conn.query_row(
            "SELECT COUNT(*) FROM agents WHERE agent_type = ?1",
            [kind.as_str()],
            |r| r.get(0),
        )?,
    };
    let mut stmt = conn.prepare(
        "SELECT id FROM agents WHERE agent_type = ?1 AND status = 'running' ORDER BY seq",
    )?;
    let running = stmt
        .query_map([kind.as_str()], |r| r.get::<_, String>(0))?
        .collect::<std::result::Result<Vec<_>, _>>()?;
    Ok((started, running))
}

/// The evidence types airsd recorded of an agent's commands (`build_pass`,
/// `test_pass` …), each once.
pub fn evidence_types_of(conn: &Connection, agent_id: &str) -> Result<Vec<String>> {
    let mut stmt = conn.prepare(
        "SELECT DISTINCT evidence_type FROM evidence_refs
         WHERE agent_id = ?1 AND evidence_type IS NOT NULL ORDER BY evidence_type",
    )?;
    let rows = stmt.query_map([agent_id], |r| r.get::<_, String>(0))?;
    Ok(rows.collect::<std::result::Result<Vec<_>, _>>()?)
}
