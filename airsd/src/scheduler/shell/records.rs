//! What the shell records besides the core's decisions: recovery from the database,
//! interrupted tool runs, policy answers and expiries of permission requests, halts,
//! the state mirror and the run report.

use super::*;
use crate::event_store::query;
use crate::scheduler::core::{recovered_types, Ask};
use air_proto::events as ev;

/// What recovery found in a session's database.
pub struct Recovered {
    pub core: Core,
    pub started: RunStarted,
}

/// Rebuilds the core of a session's run from its recorded events. `None` when the
/// session never started a run.
pub fn recover(session: &Session, config: Config) -> Result<Option<Recovered>> {
    let conn = session.readers().get()?;
    let types: Vec<&str> = recovered_types().collect();
    let mut core = Core::new(config);
    let mut started: Option<RunStarted> = None;
    query::events_of_types(&conn, &types, |e| {
        if e.event_type == ev::RunStarted::TYPE && started.is_none() {
            started = serde_json::from_value::<RunStarted>(e.payload.clone()).ok();
        }
        // The mode may have changed since the start.
        if e.event_type == ev::RunModeChanged::TYPE {
            if let (Some(run), Ok(changed)) = (
                started.as_mut(),
                serde_json::from_value::<p::RunModeChanged>(e.payload.clone()),
            ) {
                run.permission_mode = changed.permission_mode;
            }
        }
        // A continuation may replace the budgets.
        if e.event_type == ev::RunContinued::TYPE {
            if let (Some(run), Ok(more)) = (
                started.as_mut(),
                serde_json::from_value::<p::RunContinued>(e.payload.clone()),
            ) {
                run.budgets = run.budgets.overridden_by(&more.budgets);
            }
        }
        if let Some(fact) = fact_of(&e.event_type, &e.payload) {
            core.apply(&fact, event_ms(&e.timestamp));
        }
        Ok(())
    })?;
    Ok(started.map(|started| Recovered { core, started }))
}

impl Shell {
    /// The scheduler stops without ending the run (the session cannot be written, or
    /// an error it cannot go past): clients are told why at once, by an ephemeral
    /// `run.halted` that needs no write. Nothing recorded is lost; `air run --resume`
    /// goes on from the record.
    pub(super) async fn halt(&self, e: &Error) {
        let session = &self.ctx.session;
        let db = self.ctx.paths.session_db(session.id());
        let reason = match e.storage(&db) {
            Some(place) => format!(
                "{place}: the scheduler stopped and its agents were ended; nothing recorded was lost. Free the space (or make it writable), then `air run --resume {}`",
                session.id()
            ),
            None => format!(
                "the scheduler stopped: {e}; `air run --resume {}` starts it again",
                session.id()
            ),
        };
        if let Ok(ev) = self.event(&p::RunHalted {
            reason: Some(reason),
        }) {
            let _ = session.store().append(ev).await;
        }
    }

    /// A run that had halted is going again.
    pub(super) async fn unhalt(&self) {
        let halted = self
            .ctx
            .session
            .bus()
            .read(|p, _| p.run.as_ref().is_some_and(|r| r.halted.is_some()));
        if halted {
            if let Ok(ev) = self.event(&p::RunHalted { reason: None }) {
                let _ = self.ctx.session.store().append(ev).await;
            }
        }
    }

    /// Tool and command runs that were running when airsd stopped are marked
    /// interrupted; nothing re-runs them.
    pub(super) async fn interrupt_tool_runs(&mut self) -> Result<()> {
        let (tools, commands) = {
            let conn = self.ctx.session.readers().get()?;
            query::running_runs(&conn)?
        };
        let mut events = Vec::new();
        for id in commands {
            events.push(self.event(&p::CommandFailed {
                command_run_id: id,
                error: "interrupted: airsd stopped while it ran".into(),
                exit_code: None,
                duration_ms: None,
            })?);
        }
        for id in tools {
            events.push(self.event(&p::ToolFailed {
                tool_run_id: id,
                error: crate::scheduler::tooljob::INTERRUPTED.into(),
                duration_ms: None,
            })?);
        }
        if !events.is_empty() {
            self.record(events).await?;
        }
        Ok(())
    }

    /// Observes what the core's rules read from the session: what the run has spent,
    /// the permission requests waiting, and whether a person is there to answer them.
    pub(super) fn observe(&mut self) {
        let (counters, pending) = self
            .ctx
            .session
            .bus()
            .read(|p, _| (p.counters.clone(), p.permission_requests.clone()));
        let now = now_ms();
        self.core.apply(
            &Fact::Usage {
                tokens: counters.input_tokens.saturating_add(counters.output_tokens),
                cost_micro_usd: counters.cost_micro_usd,
            },
            now,
        );
        let pending = pending
            .into_iter()
            .map(|r| Ask {
                requested_ms: event_ms(&r.requested_at),
                request_id: r.request.request_id,
                task_id: r.request.task_id,
                agent_id: r.request.agent_id,
                action: r.request.action,
            })
            .collect();
        let humans = (self.ctx.humans)();
        self.core.apply(&Fact::Asks { pending, humans }, now);
    }

    /// Reads the machine's load (every 10 seconds at most, where `/proc/loadavg` tells
    /// it) for the core to run fewer agents on a loaded machine.
    pub(super) fn watch_load(&mut self) {
        let now = std::time::Instant::now();
        if self
            .load_read
            .is_some_and(|t| now.duration_since(t) < std::time::Duration::from_secs(10))
        {
            return;
        }
        self.load_read = Some(now);
        let Some(per_core) = load_per_core() else {
            return;
        };
        self.core.apply(&Fact::Load { per_core }, now_ms());
    }

    /// A person edited the requirement files while a plan's work is unfinished: the
    /// requirement changed (`requirement.changed`, for the core to re-plan).
    pub(super) fn watch_requirements(&mut self) {
        if !self.core.has_plan_work() {
            return;
        }
        let edited = self
            .watched
            .edited(self.ctx.paths.root(), std::time::Instant::now());
        if edited.is_empty() {
            return;
        }
        let change = format!(
            "The user edited {} while the run went on: read it for what is now wanted.",
            edited.join(", ")
        );
        let body = serde_json::json!({ "change": change, "files": edited });
        let Some(body) = body.as_object().cloned() else {
            return;
        };
        match self.event(&ev::RequirementChanged(body)) {
            Ok(e) => self.push(vec![e]),
            Err(e) => tracing::warn!("cannot record a requirement change: {e}"),
        }
    }

    /// Denies a request by the run's policy (and under `fail` blocks its task), in one
    /// transaction: a person who answered first makes it fail as a conflict (the first
    /// answer wins), and then nothing is blocked either.
    pub(super) async fn refuse(&mut self, refusal: Refusal) -> Result<()> {
        let id = refusal.request_id;
        let mut events = vec![self.event(&p::PermissionDecisionRecorded {
            request_id: Some(id.clone()),
            decision: p::PermissionDecision::Deny,
            decided_by: "policy".into(),
            scope: Some(p::DecisionScope::Once),
            reason: Some(refusal.reason),
        })?];
        if let Some((task_id, reason)) = refusal.block {
            events.push(self.event(&p::CancelRequested {
                task_id: Some(task_id),
                reason: Some(reason),
                by: Some("policy".into()),
                block: true,
            })?);
        }
        let facts: Vec<Fact> = events
            .iter()
            .filter_map(|e| fact_of(&e.event_type, &e.payload))
            .collect();
        match self.ctx.session.store().append_batch(events).await {
            Ok(_) => {
                let now = now_ms();
                for fact in &facts {
                    self.core.apply(fact, now);
                }
            }
            Err(e) if e.kind() == air_proto::error::ErrorKind::Conflict => {}
            // Still pending at the next observation: answered again then.
            Err(e) => tracing::warn!(request = %id, "cannot answer by the policy yet: {e}"),
        }
        Ok(())
    }

    /// Closes the pending permission requests of agents that ended (or of every agent,
    /// when the run ends): nobody can use the answer any more. These closures are not
    /// denials and do not count as such.
    pub(super) async fn expire_requests(&mut self, agent: Option<&str>) {
        let pending = self.ctx.session.bus().read(|p, _| {
            p.permission_requests
                .iter()
                .filter(|r| agent.is_none() || r.request.agent_id.as_deref() == agent)
                .map(|r| r.request.request_id.clone())
                .collect::<Vec<_>>()
        });
        for id in pending {
            let Ok(e) = self.event(&p::PermissionDecisionRecorded {
                request_id: Some(id.clone()),
                decision: p::PermissionDecision::Deny,
                decided_by: p::EXPIRED.into(),
                scope: Some(p::DecisionScope::Once),
                reason: Some("the agent that asked has ended".into()),
            }) else {
                continue;
            };
            if let Err(e) = self.ctx.session.store().append(e).await {
                tracing::info!(request = %id, "not expired: {e}");
            }
        }
        // What was expired is no longer pending for the policy either.
        self.observe();
    }

    /// Mirrors the scheduler's state to `.air/local/state/scheduler-state.json` (seed
    /// 001 §4.3), for people and tools; recovery reads the database, not this file.
    pub(super) fn mirror(&self) {
        let state = serde_json::json!({
            "session_id": self.session_id(),
            "updated_at": air_proto::time::now_iso(),
            "finished": self.core.is_finished(),
            "paused": self.core.is_paused(),
            "tasks": self.core.statuses().into_iter().map(|(id, s)| serde_json::json!({ "id": id, "status": s })).collect::<Vec<_>>(),
            "agents": self.core.running_agents().into_iter().map(|(a, t)| serde_json::json!({ "agent_id": a, "task_id": t })).collect::<Vec<_>>(),
        });
        let path = self.ctx.paths.state().join("scheduler-state.json");
        if let Ok(bytes) = serde_json::to_vec_pretty(&state) {
            if let Err(e) = air_proto::layout::write_atomic(&path, &bytes) {
                tracing::warn!("cannot write {}: {e}", path.display());
            }
        }
    }

    /// Writes `reports/run-report.json` in the session's artifacts: the session as
    /// it is, with `end` (its `run.completed`, about to be recorded) applied.
    pub(super) fn write_report(&self, end: &RuntimeEvent) {
        let mut snapshot = self.ctx.session.snapshot();
        snapshot.apply(snapshot.seq + 1, end, true);
        let Some(report) = air_proto::report::RunReport::from_projection(&snapshot) else {
            return;
        };
        let path = self
            .ctx
            .paths
            .artifacts(self.session_id())
            .join("reports")
            .join("run-report.json");
        let written = path
            .parent()
            .map(std::fs::create_dir_all)
            .transpose()
            .map_err(|e| e.to_string())
            .and_then(|_| serde_json::to_vec_pretty(&report).map_err(|e| e.to_string()))
            .and_then(|bytes| {
                air_proto::layout::write_atomic(&path, &bytes).map_err(|e| e.to_string())
            });
        if let Err(e) = written {
            tracing::warn!("cannot write {}: {e}", path.display());
        }
    }
}

/// The machine's one-minute load average per core, in thousandths (`None` where
/// `/proc/loadavg` does not tell it).
fn load_per_core() -> Option<u32> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    let load: f64 = text.split_whitespace().next()?.parse().ok()?;
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    let per_core = load / cores as f64 * 1000.0;
    (per_core.is_finite() && per_core >= 0.0).then(|| per_core.min(f64::from(u32::MAX)) as u32)
}
