//! Compaction beside the scheduler (D-025): an agent's `context.compaction.requested`
//! starts a Compactor — its own worker, prompt and summary contract, no project
//! tools — on a snapshot of the agent's messages 1…N read from the session, while
//! the agent goes on. Its summary is recorded (`summary.created`,
//! `context.compaction.completed`) and sent to the agent (`agent.compacted`), whose
//! next request holds it in place of those messages; nothing is deleted. The core is
//! not involved: a Compactor holds no task slot and makes no attempt, and one that a
//! restart of airsd cut off is recorded as interrupted (its agent starts again with
//! a fresh context anyway).

use super::*;
use crate::context::compaction::{self, Prepared, Rules, Stored};

/// Turns a Compactor may take.
const COMPACTOR_TURNS: u32 = 6;
/// The share of the Compactor's usable window (less its answer's room and the
/// margin) its input may take; the rest is its prompt's.
const INPUT_SHARE: f64 = 0.85;

/// A Compactor at work.
pub(super) struct Compaction {
    /// The agent whose messages it summarises.
    agent_id: String,
    task_id: String,
    upto: String,
    /// The number of the agent's message `upto`.
    upto_ordinal: usize,
    from: Option<String>,
    prepared: Prepared,
    rules_warnings: Vec<String>,
    summary: Option<String>,
}

impl Shell {
    /// Whether `agent_id` is a Compactor.
    pub(super) fn is_compactor(&self, agent_id: &str) -> bool {
        self.compactions.contains_key(agent_id)
    }

    /// An agent asked for compaction: a Compactor starts on its messages up to the
    /// one named, unless one is at work for it already.
    pub(super) async fn compaction_requested(&mut self, agent_id: &str, payload: &Value) {
        let Ok(request) = serde_json::from_value::<p::CompactionRequested>(payload.clone()) else {
            return;
        };
        let Some(upto) = request.upto_message_id else {
            return;
        };
        if self.is_compactor(agent_id) || self.compactions.values().any(|c| c.agent_id == agent_id)
        {
            return;
        }
        let Some(d) = self.dispatches.get(agent_id) else {
            return;
        };
        let (task_id, role, spec) = (d.task_id.clone(), d.role, d.spec.clone());
        self.tell_hooks(
            air_proto::hooks::HookEvent::PreCompact,
            serde_json::json!({"trigger": "auto", "agent_id": agent_id, "task_id": task_id}),
            Some(&task_id),
        );
        if let Err(why) = self
            .start_compactor(agent_id, &task_id, role, &spec, &upto)
            .await
        {
            tracing::warn!(agent = agent_id, "no compaction: {why}");
            self.tell_compacted(agent_id, &upto, Err(why));
        }
    }

    async fn start_compactor(
        &mut self,
        agent_id: &str,
        task_id: &str,
        role: AgentType,
        spec: &air_proto::task::TaskSpec,
        upto: &str,
    ) -> std::result::Result<(), String> {
        let session = self.ctx.session.clone();
        let (agent, task) = (agent_id.to_string(), task_id.to_string());
        let read = tokio::task::spawn_blocking(move || {
            let conn = session.readers().get()?;
            let messages = crate::event_store::query::agent_messages(&conn, &agent)?;
            let previous = crate::event_store::query::latest_summary(&conn, &agent)?;
            let (started, _) =
                crate::event_store::query::side_agents(&conn, AgentType::Compactor, Some(&task))?;
            crate::error::Result::Ok((messages, previous, started))
        })
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e: Error| e.to_string())?;
        let (messages, previous, started) = read;
        let n = messages
            .iter()
            .position(|m| m.id == upto)
            .ok_or_else(|| format!("message {upto} is not among the agent's"))?
            + 1;
        // What an earlier summary stands for is not summarised again: the summary is.
        let done = previous
            .as_ref()
            .and_then(|s| messages.iter().position(|m| m.id == s.upto_message_id))
            .map_or(0, |i| i + 1);
        if n <= done {
            return Err(format!("messages up to {upto} are summarised already"));
        }
        let snapshot: Vec<Stored> = messages[done..n].iter().map(Stored::from).collect();
        let rules = Rules::load(&compaction::tier_files(
            self.config.air_home.as_deref(),
            &self.ctx.paths.shared(),
        ));
        let choice = self
            .ctx
            .models
            .choice(role, spec.constraints.model_id.as_deref())
            .cloned();
        let (budget, model_id) = side::budget_on(choice.as_ref());
        let usable = budget
            .context_window_tokens
            .saturating_sub(budget.reserved_output_tokens)
            .saturating_sub(budget.safety_margin_tokens);
        let input_budget = (usable as f64 * INPUT_SHARE) as u64;
        let prepared = compaction::prepare(
            &rules,
            previous.as_ref().map(|s| s.text.as_str()),
            &snapshot,
            done + 1,
            input_budget,
        );
        let context = compaction::compactor_context(&prepared, &rules, spec, n, budget, &model_id);
        let compactor_id = format!("{task_id}-compactor-{}", started + 1);
        let mut spec = spec.clone();
        spec.constraints.max_turns = COMPACTOR_TURNS;
        spec.output_contract = air_proto::task::OutputContract::CompactorResult;
        self.start_side(side::SideStart {
            agent_id: compactor_id.clone(),
            agent_type: AgentType::Compactor,
            task_id: Some(task_id.to_string()),
            spec,
            context,
            choice,
        })
        .await?;
        self.compactions.insert(
            compactor_id,
            Compaction {
                agent_id: agent_id.to_string(),
                task_id: task_id.to_string(),
                upto: upto.to_string(),
                upto_ordinal: n,
                from: messages.get(done).map(|m| m.id.clone()),
                prepared,
                rules_warnings: rules.warnings,
                summary: None,
            },
        );
        Ok(())
    }

    /// A Compactor's result: its summary, kept until it exits.
    pub(super) fn compactor_result(
        &mut self,
        compactor_id: &str,
        result: &air_proto::result::WorkerResult,
    ) {
        let summary =
            serde_json::from_value::<air_proto::result::CompactorOutput>(result.result.clone())
                .ok()
                .map(|o| o.summary)
                .filter(|s| !s.trim().is_empty());
        if let Some(c) = self.compactions.get_mut(compactor_id) {
            c.summary = summary;
        }
    }

    /// A Compactor exited: with a summary, it is recorded and told to its agent;
    /// without one, the agent is told the compaction failed and goes on as it was.
    pub(super) async fn compactor_exited(&mut self, compactor_id: &str, exit: Exit) -> Result<()> {
        self.keep_stderr(compactor_id)?;
        self.workers.remove(compactor_id);
        self.agents.store(self.workers.len(), Ordering::Relaxed);
        self.last_error.remove(compactor_id);
        let Some(c) = self.compactions.remove(compactor_id) else {
            return Ok(());
        };
        let Some(summary) = c.summary.clone() else {
            let reason = format!("the Compactor ended without a summary ({exit})");
            self.record(vec![self.event(&p::AgentFailed {
                agent_id: compactor_id.to_string(),
                reason: reason.clone(),
                exit_code: exit.code,
                failure: Some(AgentFailure::Crash),
            })?])
            .await?;
            self.tell_compacted(&c.agent_id, &c.upto, Err(reason));
            return Ok(());
        };
        let text = compaction::replacement(c.upto_ordinal, &summary, &c.prepared.kept);
        let summary_id = air_proto::ids::new_id();
        let mut result = air_proto::result::WorkerResult::new(
            &c.task_id,
            compactor_id,
            AgentType::Compactor,
            air_proto::result::WorkerStatus::Completed,
            format!("summarised messages 1–{} of {}", c.upto_ordinal, c.agent_id),
        );
        result.result = serde_json::json!({ "summary": summary });
        let events = vec![
            self.event(&p::AgentCompleted {
                agent_id: compactor_id.to_string(),
                exit_code: exit.code,
                result: Some(result),
                gate: None,
            })?,
            self.event(&p::SummaryCreated {
                summary_id: summary_id.clone(),
                agent_id: c.agent_id.clone(),
                task_id: Some(c.task_id.clone()),
                from_message_id: c.from.clone(),
                upto_message_id: c.upto.clone(),
                text: text.clone(),
                classes: c.prepared.classes.clone(),
                warnings: Some(c.rules_warnings.clone()).filter(|w| !w.is_empty()),
            })?,
            self.event(&p::CompactionCompleted {
                agent_id: c.agent_id.clone(),
                task_id: Some(c.task_id.clone()),
                compactor_id: compactor_id.to_string(),
                summary_id: summary_id.clone(),
                upto_message_id: c.upto.clone(),
                messages: u32::try_from(c.upto_ordinal).unwrap_or(u32::MAX),
                tokens_before: c.prepared.tokens_before,
                tokens_after: crate::context::estimate(&text),
            })?,
        ];
        // Recorded before the agent is told: its next request stands on them.
        self.record(events).await?;
        self.tell_compacted(&c.agent_id, &c.upto, Ok((summary_id, text)));
        Ok(())
    }

    /// Tells an agent, if it still runs, how its compaction ended.
    fn tell_compacted(
        &self,
        agent_id: &str,
        upto: &str,
        outcome: std::result::Result<(String, String), String>,
    ) {
        let Some(w) = self.workers.get(agent_id) else {
            return;
        };
        let control = match outcome {
            Ok((summary_id, text)) => ControlMessage::Compacted {
                upto_message_id: upto.to_string(),
                summary_id: Some(summary_id),
                text: Some(text),
                reason: None,
            },
            Err(reason) => ControlMessage::Compacted {
                upto_message_id: upto.to_string(),
                summary_id: None,
                text: None,
                reason: Some(reason),
            },
        };
        w.control(control);
    }

    /// An agent ended: its Compactor's work has no one to go to.
    pub(super) fn forget_compaction_of(&mut self, agent_id: &str) {
        let ids: Vec<String> = self
            .compactions
            .iter()
            .filter(|(_, c)| c.agent_id == agent_id)
            .map(|(id, _)| id.clone())
            .collect();
        for id in ids {
            if let Some(w) = self.workers.get(&id) {
                w.cancel("the agent it compacted for has ended");
            }
        }
    }
}
