//! One tool call, run beside the scheduler loop (never on it). The call is recorded
//! before it runs (`tool.started`, the write-ahead record), checked and run off the
//! async threads, and answered with `tool.result` after its end is recorded
//! (`tool.completed` / `tool.failed`). When the PermissionEngine wants a person, the
//! question is recorded as `permission.requested` and the call waits for
//! `permission.decision.recorded`: from a client (`air approve`), or from the run's
//! `on_ask` policy, or the ask timeout. Nothing waits forever and nothing a person
//! did not allow runs.

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

/// Rounds of questions one call may raise (each round asks everything it found).
const MAX_ASK_ROUNDS: usize = 4;

/// What a tool call needs from the run.
#[derive(Clone)]
pub struct ToolEnv {
    pub session: Arc<Session>,
    pub ledger: Arc<crate::tools::ReadLedger>,
    pub engine: Arc<Engine>,
    pub backups: Arc<Backups>,
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
}

fn millis(t0: std::time::Instant) -> Option<u64> {
    Some(u64::try_from(t0.elapsed().as_millis()).unwrap_or(u64::MAX))
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
        IpcBody::ToolResult(ToolResult {
            tool_call_id: self.call.tool_call_id.clone(),
            status,
            output,
            error: error.map(|message| air_proto::error::WireError {
                kind: air_proto::error::ErrorKind::InvalidInput,
                message,
                details: None,
            }),
            truncated: false,
            artifact_ref: None,
        })
    }

    async fn record<T: serde::Serialize>(
        &self,
        event_type: &str,
        payload: &T,
    ) -> Result<(), String> {
        let e = RuntimeEvent::typed(event_type, self.env.session.id(), self.source(), payload)
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
        if let Err(e) = self.record("tool.started", &started).await {
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
        let t0 = std::time::Instant::now();
        let mut granted = HashSet::new();
        let mut rounds = 0;
        let result = loop {
            let (result, asks) = self.attempt(&granted).await;
            if asks.is_empty() {
                break result;
            }
            if rounds == MAX_ASK_ROUNDS {
                break Err(ToolError(format!(
                    "the call kept needing new permissions ({}); stopped",
                    asks.iter()
                        .map(|a| a.action.as_str())
                        .collect::<Vec<_>>()
                        .join("; ")
                )));
            }
            rounds += 1;
            match self.ask_person(&tool_run_id, &asks).await {
                Ok(()) => granted.extend(asks.into_iter().map(|a| a.key)),
                Err(refused) => break Err(ToolError(refused)),
            }
        };
        let (recorded, reply) = match result {
            Ok(output) => (
                self.record(
                    "tool.completed",
                    &p::ToolCompleted {
                        tool_run_id,
                        output: Some(output.clone()),
                        duration_ms: millis(t0),
                    },
                )
                .await,
                self.answer(ToolResultStatus::Ok, Some(output), None),
            ),
            Err(e) => (
                self.record(
                    "tool.failed",
                    &p::ToolFailed {
                        tool_run_id,
                        error: e.0.clone(),
                        duration_ms: millis(t0),
                    },
                )
                .await,
                self.answer(ToolResultStatus::Error, None, Some(e.0)),
            ),
        };
        if let Err(e) = recorded {
            tracing::warn!("cannot record the end of a tool call: {e}");
        }
        self.worker.reply(&self.header, reply);
    }

    /// Runs the tool once with what a person granted so far; returns its result and
    /// the questions it raised (a call that raised one did nothing).
    async fn attempt(&self, granted: &HashSet<String>) -> (Result<Value, ToolError>, Vec<Ask>) {
        let env = self.env.clone();
        let (agent, role, tool, input, scope, granted) = (
            self.agent_id.clone(),
            self.role,
            self.call.tool.clone(),
            self.call.input.clone(),
            self.scope.clone(),
            granted.clone(),
        );
        let tag = BackupTag {
            session_id: env.session.id().to_string(),
            agent_type: role.as_str().to_string(),
            agent_id: agent.clone(),
            reason: format!("{tool} for task {}", self.task_id),
        };
        tokio::task::spawn_blocking(move || {
            let scope = match crate::tools::scope::Scope::new(&scope) {
                Ok(s) => s,
                Err(e) => return (Err(e), Vec::new()),
            };
            let permits = Permits::new(&env.engine, Some(&env.backups), tag, granted);
            let ctx = crate::tools::FsContext {
                root: env.engine.root(),
                agent_id: &agent,
                ledger: &env.ledger,
                scope: &scope,
                perm: &permits,
            };
            let result = crate::tools::call(&ctx, role, &tool, input);
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
        self.record(
            "permission.requested",
            &p::PermissionRequested {
                request_id: request_id.clone(),
                action: action.clone(),
                tool: Some(self.call.tool.clone()),
                tool_run_id: Some(tool_run_id.to_string()),
                agent_id: Some(self.agent_id.clone()),
                task_id: Some(self.task_id.clone()),
                risk: Some(risks.join(",")),
                reason: Some(reasons.join("; ")),
            },
        )
        .await
        .map_err(|e| {
            format!("permission to {action} is needed, and the question could not be recorded: {e}")
        })?;
        let verdict = |d: p::PermissionDecision, by: &str, reason: Option<&str>| match d {
            p::PermissionDecision::Allow => Ok(()),
            p::PermissionDecision::Deny => Err(format!(
                "permission to {action} was not given ({}{})",
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
                    if d.event.event_type != "permission.decision.recorded"
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
        use rusqlite::OptionalExtension as _;
        let conn = self
            .env
            .session
            .readers()
            .get()
            .map_err(|e| format!("cannot read the answer: {e}"))?;
        conn.query_row(
            "SELECT decision, decided_by, decision_reason FROM permission_requests
             WHERE id = ?1 AND status = 'decided'",
            [request_id],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .optional()
        .map_err(|e| format!("cannot read the answer: {e}"))
    }
}

/// The project root as the tools see it (resolved).
pub fn resolved_root(root: &std::path::Path) -> PathBuf {
    std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf())
}
