//! How a worker's end is classified: its result, why airsd stopped it, and its exit
//! code (D-039's codes, [`air_proto::ipc::WorkerExit`]) together say whether the agent
//! completed or failed, and how.

use air_proto::ipc::WorkerExit;

use super::*;

/// How a worker's process ended, as the supervisor saw it.
#[derive(Clone, Debug, PartialEq)]
pub struct ProcessEnd {
    /// The exit code; `None` when a signal ended it.
    pub code: Option<i32>,
    /// The end in words (`exit code 3`, `killed by SIGKILL`).
    pub text: String,
    /// The last error the worker logged over the protocol.
    pub logged: Option<String>,
    /// The last line the worker wrote to stderr.
    pub stderr_tail: Option<String>,
}

/// What an agent's end is recorded as.
#[derive(Clone, Debug, PartialEq)]
pub enum AgentEnd {
    /// `agent.completed`: its result counts.
    Completed {
        result: Box<WorkerResult>,
        exit_code: Option<i32>,
    },
    /// `agent.failed`.
    Failed {
        failure: AgentFailure,
        reason: String,
        exit_code: Option<i32>,
    },
}

/// Classifies a worker's end. A cancelled agent failed as cancelled whatever it sent;
/// one killed at its timeout or as stalled that had sent a result completed (the
/// result came first); otherwise a result counts only with exit code 0, and an exit
/// without one is classified by its code.
pub fn classify_exit(
    result: Option<WorkerResult>,
    stop: Option<(AgentFailure, String)>,
    end: &ProcessEnd,
) -> AgentEnd {
    let exit_code = end.code;
    let completed = |result: WorkerResult| AgentEnd::Completed {
        result: Box::new(result),
        exit_code,
    };
    let failed = |failure, reason| AgentEnd::Failed {
        failure,
        reason,
        exit_code,
    };
    let code = end.code.map(WorkerExit::from_code);
    match (result, stop) {
        (_, Some((AgentFailure::Cancelled, reason))) => failed(AgentFailure::Cancelled, reason),
        (
            Some(result),
            Some((AgentFailure::Timeout | AgentFailure::Stalled | AgentFailure::Stuck, _)),
        ) => completed(result),
        (Some(result), None) if code == Some(WorkerExit::Completed) => completed(result),
        (_, Some((failure, reason))) => failed(
            failure,
            match &end.logged {
                Some(said) => format!("{reason} ({}); it said: {said}", end.text),
                None => format!("{reason} ({})", end.text),
            },
        ),
        (_, None) => {
            let (failure, what) = match code {
                Some(WorkerExit::Completed) => (
                    AgentFailure::Protocol,
                    "exited without sending a result".to_string(),
                ),
                Some(WorkerExit::Protocol) => (
                    AgentFailure::Protocol,
                    format!("startup or protocol error ({})", end.text),
                ),
                Some(WorkerExit::Permission) => (
                    AgentFailure::Permission,
                    format!("permission error ({})", end.text),
                ),
                Some(WorkerExit::Cancelled) => (
                    AgentFailure::Crash,
                    format!("exited as cancelled ({}) unasked", end.text),
                ),
                Some(WorkerExit::Timeout) => (
                    AgentFailure::Timeout,
                    format!("gave up at its hard timeout ({})", end.text),
                ),
                Some(WorkerExit::Uncaught | WorkerExit::Other(_)) | None => {
                    (AgentFailure::Crash, format!("crashed ({})", end.text))
                }
            };
            let reason = match end.logged.as_ref().or(end.stderr_tail.as_ref()) {
                Some(line) => format!("{what}: {line}"),
                None => what,
            };
            failed(failure, reason)
        }
    }
}

impl Core {
    /// A worker's result is kept until it exits; one that names another task, role or
    /// agent is a protocol violation, and the worker is killed.
    pub(super) fn result_received(&mut self, agent_id: &str, result: &WorkerResult) {
        let expected = self
            .agents
            .get(agent_id)
            .map(|a| (self.tasks[a.task].spec.id.as_str(), a.role));
        let mismatch = match expected {
            Some((task_id, _)) if result.task_id != task_id => Some(format!(
                "the result names task `{}`, but this agent works on `{task_id}`",
                result.task_id
            )),
            Some((_, role)) if result.agent_type != role => Some(format!(
                "the result is an {} result, but this agent is a {}",
                result.agent_type.as_str(),
                role.as_str()
            )),
            _ if result.agent_id != agent_id => {
                Some(format!("the result names agent `{}`", result.agent_id))
            }
            _ => None,
        };
        match mismatch {
            Some(reason) => {
                self.stops
                    .insert(agent_id.to_string(), (AgentFailure::Protocol, reason));
                self.to_kill.insert(agent_id.to_string());
            }
            None => {
                self.results.insert(agent_id.to_string(), result.clone());
            }
        }
    }

    /// The ends of the workers that exited, and the kills the protocol calls for.
    pub(super) fn exits(&mut self, out: &mut Vec<Decision>) {
        for agent_id in std::mem::take(&mut self.to_kill) {
            if self.exits.contains_key(&agent_id) {
                continue;
            }
            let Some(a) = self.agents.get_mut(&agent_id) else {
                continue;
            };
            a.stopping = true;
            if let Some((failure, reason)) = self.stops.get(&agent_id) {
                out.push(Decision::Kill {
                    agent_id: agent_id.clone(),
                    failure: *failure,
                    reason: reason.clone(),
                });
            }
        }
        for (agent_id, end) in std::mem::take(&mut self.exits) {
            if let Some(a) = self.agents.get_mut(&agent_id) {
                a.stopping = true;
            }
            let result = self.results.remove(&agent_id);
            let stop = self.stops.remove(&agent_id);
            out.push(Decision::EndAgent {
                end: classify_exit(result, stop, &end),
                agent_id,
            });
        }
    }
}
