//! The run's `on_ask` policy: what happens to a permission request nobody is there to
//! answer. `deny` refuses (the agent is told and adapts), `fail` refuses and ends the
//! task as blocked, `queue` waits for a person (`air approve`, the TUI). Whatever the
//! policy, a request older than the ask timeout is denied: a run never waits forever,
//! and never allows what nobody allowed.

use super::*;

/// A permission request waiting for an answer.
#[derive(Clone, Debug, PartialEq)]
pub struct Ask {
    pub request_id: String,
    pub task_id: Option<String>,
    pub agent_id: Option<String>,
    /// What was asked for, in words (`write src/a.rs`).
    pub action: String,
    /// When it was asked (ms since the epoch).
    pub requested_ms: u64,
}

/// A request the policy denies.
#[derive(Clone, Debug, PartialEq)]
pub struct Refusal {
    pub request_id: String,
    pub reason: String,
    /// Under `fail`: the task that ends blocked, and why.
    pub block: Option<(String, String)>,
}

impl Core {
    pub(super) fn asks(&mut self, now_ms: u64, out: &mut Vec<Decision>) {
        let timeout = self.config.ask_timeout_ms;
        for ask in &self.asks {
            if self.answered.contains(&ask.request_id) {
                continue;
            }
            let age = now_ms.saturating_sub(ask.requested_ms);
            let reason = if age >= timeout {
                format!(
                    "nobody answered within {}; denied",
                    humantime::format_duration(std::time::Duration::from_millis(timeout))
                )
            } else if self.humans {
                continue;
            } else {
                match self.on_ask {
                    OnAsk::Queue => continue,
                    OnAsk::Deny => {
                        "nobody is attached to answer, and the run's policy is on_ask=deny".into()
                    }
                    OnAsk::Fail => "nobody is attached to answer, and the run's policy is on_ask=fail: the task is blocked".into(),
                }
            };
            // Under `fail` the task ends blocked, whether the request was refused at
            // once or at the timeout.
            let task_id = ask.task_id.clone().or_else(|| {
                let run = self.agents.get(ask.agent_id.as_deref()?)?;
                Some(self.tasks[run.task].spec.id.clone())
            });
            let block = match (self.on_ask, task_id) {
                (OnAsk::Fail, Some(task_id)) => Some((
                    task_id,
                    format!(
                        "permission to {} was needed and nobody gave it (on_ask=fail)",
                        ask.action
                    ),
                )),
                _ => None,
            };
            self.answered.insert(ask.request_id.clone());
            out.push(Decision::Refuse(Box::new(Refusal {
                request_id: ask.request_id.clone(),
                reason,
                block,
            })));
        }
    }
}
