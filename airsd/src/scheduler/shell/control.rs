//! A person's requests to a running scheduler, recorded as events.

use super::*;

impl Shell {
    /// Records a person's request; false when there was nothing to do it to (the run
    /// finished, the agent ended, no task still qualifies).
    pub(super) async fn control(&mut self, control: Control) -> Result<bool> {
        let held = matches!(control, Control::Hold { .. });
        let e = match control {
            Control::Cancel {
                task_id,
                reason,
                by,
            } => self.event(&p::CancelRequested {
                task_id,
                reason: Some(reason),
                by,
                block: false,
            })?,
            Control::SetMode { mode, by } => {
                if self.core.is_finished() {
                    return Ok(false);
                }
                let e = self.event(&p::RunModeChanged {
                    permission_mode: mode,
                    by,
                })?;
                self.record(vec![e]).await?;
                // Once on record, later calls are judged by it: the run's engines
                // share their mode.
                self.ctx.engine.set_mode(mode);
                return Ok(true);
            }
            Control::Pause { by } => self.event(&ev::SchedulerPaused(p::SchedulerControl {
                by,
                ..Default::default()
            }))?,
            Control::Resume { by } => self.event(&ev::SchedulerResumed(p::SchedulerControl {
                by,
                ..Default::default()
            }))?,
            Control::Hold {
                agent_id,
                task_id,
                by,
            }
            | Control::Release {
                agent_id,
                task_id,
                by,
            } => {
                if !self.workers.contains_key(&agent_id) {
                    // It ended meanwhile: nothing to hold.
                    return Ok(false);
                }
                let change = p::AgentPauseChange {
                    agent_id: agent_id.clone(),
                    task_id,
                    by: by.clone(),
                };
                let e = if held {
                    self.event(&ev::AgentPaused(change))?
                } else {
                    self.event(&ev::AgentResumed(change))?
                };
                // Recorded first: every client sees it before the worker acts on it.
                self.record(vec![e]).await?;
                if let Some(worker) = self.workers.get(&agent_id) {
                    if held {
                        worker.pause(&format!(
                            "paused by {}",
                            by.as_deref().unwrap_or("a person")
                        ));
                    } else {
                        worker.resume();
                    }
                }
                return Ok(true);
            }
            Control::Retry { task_ids, by } => {
                // Checked again here: the run may have finished, or a task moved on,
                // since the request was made.
                let task_ids: Vec<String> = task_ids
                    .into_iter()
                    .filter(|t| self.core.reopenable(t))
                    .collect();
                if self.core.is_finished() || task_ids.is_empty() {
                    return Ok(false);
                }
                self.event(&p::TasksRetried { task_ids, by })?
            }
            Control::Record(e) => {
                if self.core.is_finished() {
                    return Ok(false);
                }
                // Appended alone: an event the store refuses (an answer that came
                // second) is refused to its caller, and the run goes on.
                self.flush().await?;
                let fact = fact_of(&e.event_type, &e.payload);
                if let Err(why) = self.ctx.session.store().append(*e).await {
                    tracing::info!("a client's event was not recorded: {why}");
                    return Ok(false);
                }
                if let Some(fact) = fact {
                    self.core.apply(&fact, now_ms());
                }
                return Ok(true);
            }
            Control::Shutdown => return Ok(true),
        };
        self.record(vec![e]).await?;
        Ok(true)
    }
}
