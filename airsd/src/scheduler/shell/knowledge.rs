//! The shell's side of the debug knowledge (`crate::learning::knowledge`): each
//! `debug.record.created` is kept in the project's `debug-records.db` with the error
//! signatures of the failed attempt and the evidence the debugger's commands left,
//! and a debugger is told the best matches for the failure it is handed. Neither ever
//! holds the run up: a database that cannot be written or read is logged and passed.

use super::*;
use crate::learning::knowledge::DebugRecords;

/// Matches a debugger is told.
const MATCHES_TOLD: u32 = 3;

impl Shell {
    /// Keeps a debugger's record in the project's debug knowledge.
    pub(super) fn keep_debug_record(&self, event: &RuntimeEvent) {
        let Ok(record) = serde_json::from_value::<p::DebugRecordCreated>(event.payload.clone())
        else {
            return;
        };
        let agents = self.core.attempt_agents(&record.task_id);
        let session = self.ctx.session.clone();
        let path = self.ctx.paths.debug_records();
        let (id, at) = (event.id.clone(), event.timestamp.clone());
        tokio::task::spawn_blocking(move || {
            let kept = (|| -> Result<()> {
                let conn = session.readers().get()?;
                let findings =
                    crate::event_store::query::findings_of(&conn, &agents, FINDINGS_KEPT)?;
                let evidence =
                    crate::event_store::query::evidence_types_of(&conn, &record.agent_id)?;
                DebugRecords::open(&path)?.insert(&air_proto::api::DebugRecord {
                    id,
                    created_at: at,
                    session_id: session.id().to_string(),
                    task_id: record.task_id,
                    agent_id: record.agent_id,
                    symptom: record.symptom,
                    signature: findings.join("\n"),
                    analysis: record.analysis,
                    root_cause: record.root_cause,
                    fix: record.changed_files.join(", "),
                    fixed: record.fixed,
                    evidence,
                    score: 0.0,
                })
            })();
            if let Err(e) = kept {
                tracing::warn!("a debugging record was not kept in the debug knowledge: {e}");
            }
        });
    }

    /// The best matches in the debug knowledge for the failure a debugger is handed:
    /// its failed checks, the attempt's summary and what the compilers said.
    pub(super) async fn knowledge_note(&self, d: &Dispatch, findings: &[String]) -> Option<String> {
        if d.role != AgentType::Debugger {
            return None;
        }
        let path = self.ctx.paths.debug_records();
        if !path.exists() {
            return None;
        }
        let mut text = String::new();
        if let Some(prev) = &d.previous {
            text.push_str(&prev.summary);
            for v in &prev.verification {
                text.push(' ');
                text.push_str(&v.name);
            }
        }
        for f in findings {
            text.push(' ');
            text.push_str(f);
        }
        let found = tokio::task::spawn_blocking(move || {
            DebugRecords::open(&path)?.search(&text, MATCHES_TOLD)
        })
        .await;
        match found {
            Ok(Ok(hits)) => crate::learning::knowledge::note_for(&hits),
            Ok(Err(e)) => {
                tracing::warn!(task = %d.task_id, "cannot search the debug knowledge: {e}");
                None
            }
            Err(e) => {
                tracing::warn!(task = %d.task_id, "cannot search the debug knowledge: {e}");
                None
            }
        }
    }
}

/// Findings kept with a record as its error signature.
const FINDINGS_KEPT: usize = 20;
