//! An in-memory driver of the core: decisions become facts at once and agents are
//! played by a function. The unit and property tests of the rules and the scheduler
//! benchmark use it; the daemon uses the real shell.

use air_proto::event::AgentType;
use air_proto::payload::{AgentFailure, RunCompleted};
use air_proto::result::{
    ConsultDecision, ConsultOutput, DebuggerOutput, EvidenceKind, EvidenceRef, ReviewDecision,
    ReviewerOutput, VerificationResult, VerificationStatus, WorkerResult, WorkerStatus,
};
use air_proto::task::{EvidenceType, TaskSpec, TaskType};

use super::core::{AgentEnd, Ask, ProcessEnd, Refusal};
use super::gate;
use super::{Config, Core, Decision, Dispatch, Fact};

/// What a played agent does.
#[derive(Clone, Debug, PartialEq)]
pub enum Play {
    Result(Box<WorkerResult>),
    Fail(AgentFailure, String),
    /// Keep running (a hang); only timers end it.
    Hang,
}

/// The driver: the core, a clock, and the record of everything that happened.
pub struct Sim {
    pub core: Core,
    pub now_ms: u64,
    /// Every fact applied, in order (what the session database would hold).
    pub facts: Vec<Fact>,
    pub decisions: Vec<Decision>,
    /// Agents started and not yet ended, in start order.
    pub running: Vec<Dispatch>,
    pub outcome: Option<RunCompleted>,
    /// The permission requests waiting, and whether a person is attached.
    pub asks: Vec<Ask>,
    pub humans: bool,
    /// What the run has spent: tokens, millionths of a dollar.
    pub usage: (u64, u64),
    /// The requests the policy denied, in order.
    pub refusals: Vec<Refusal>,
    /// Merges are answered by the test ([`Sim::end_merge`]) rather than at once.
    pub hold_merges: bool,
    /// The merges asked for and not answered yet (when held), in order.
    pub merging: Vec<String>,
    /// How many times each task's merge is refused before one succeeds (when not
    /// held), counted from the recorded refusals (so a recovered run refuses the same).
    pub refuse_merges: std::collections::HashMap<String, u32>,
}

impl Sim {
    pub fn new(config: Config, tasks: &[TaskSpec]) -> Self {
        let start = Fact::run_started(config.concurrency);
        Self::with_start(config, start, tasks)
    }

    /// A driver whose run starts with `start` (its policy and budgets).
    pub fn with_start(config: Config, start: Fact, tasks: &[TaskSpec]) -> Self {
        let mut sim = Self::empty(config, 1_000);
        sim.record(start);
        for t in tasks {
            sim.record(Fact::TaskCreated(Box::new(t.clone())));
        }
        sim
    }

    /// Rebuilds a driver from recorded facts, as airsd does after a restart: replay,
    /// then every agent that was running is recorded as interrupted.
    pub fn recover(config: Config, facts: &[Fact], now_ms: u64) -> Self {
        let mut sim = Self::empty(config, now_ms);
        for fact in facts {
            sim.record(fact.clone());
        }
        sim.running.clear();
        for (agent_id, _) in sim.core.running_agents() {
            sim.record(Fact::AgentFailed {
                agent_id,
                failure: AgentFailure::Interrupted,
                reason: "airsd restarted".into(),
            });
        }
        sim
    }

    fn empty(config: Config, now_ms: u64) -> Self {
        Self {
            core: Core::new(config),
            now_ms,
            facts: Vec::new(),
            decisions: Vec::new(),
            running: Vec::new(),
            outcome: None,
            asks: Vec::new(),
            humans: false,
            usage: (0, 0),
            refusals: Vec::new(),
            hold_merges: false,
            merging: Vec::new(),
            refuse_merges: std::collections::HashMap::new(),
        }
    }

    /// Answers a held merge: merged (the task completes) or refused with `Err(why)`.
    pub fn end_merge(&mut self, task_id: &str, outcome: Result<(), String>) {
        self.merging.retain(|t| t != task_id);
        match outcome {
            Ok(()) => self.record(Fact::TaskFinished {
                task_id: task_id.to_string(),
                status: air_proto::projection::TaskStatus::Completed,
                reason: Some("merged".into()),
            }),
            Err(reason) => self.record(Fact::MergeFailed {
                task_id: task_id.to_string(),
                reason,
            }),
        }
    }

    /// Shows the core what the shell observes of the session: the spending, the
    /// requests waiting, whether a person is there. Observations are not recorded.
    pub fn observe(&mut self) {
        let (tokens, cost_micro_usd) = self.usage;
        self.core.apply(
            &Fact::Usage {
                tokens,
                cost_micro_usd,
            },
            self.now_ms,
        );
        self.core.apply(
            &Fact::Asks {
                pending: self.asks.clone(),
                humans: self.humans,
            },
            self.now_ms,
        );
    }

    /// A worker process ends: it sent `result` (if any), then exited with `code`
    /// (`None`: killed by a signal).
    pub fn exit(&mut self, agent_id: &str, result: Option<WorkerResult>, code: Option<i32>) {
        if let Some(result) = result {
            self.core.apply(
                &Fact::ResultReceived {
                    agent_id: agent_id.to_string(),
                    result: Box::new(result),
                },
                self.now_ms,
            );
        }
        let text = match code {
            Some(c) => format!("exit code {c}"),
            None => "killed by SIGKILL".into(),
        };
        self.core.apply(
            &Fact::WorkerExited {
                agent_id: agent_id.to_string(),
                end: ProcessEnd {
                    code,
                    text,
                    logged: None,
                    stderr_tail: None,
                },
            },
            self.now_ms,
        );
    }

    /// The re-plan applied in the run (`architecture.plan.updated`), if one was.
    pub fn plan_update(&self) -> Option<air_proto::payload::PlanUpdated> {
        self.facts.iter().find_map(|f| match f {
            Fact::Planning(b) => match &**b {
                crate::scheduler::core::PlanningFact::Updated(u) => Some((**u).clone()),
                _ => None,
            },
            _ => None,
        })
    }

    pub fn record(&mut self, fact: Fact) {
        self.core.apply(&fact, self.now_ms);
        if let Fact::RunCompleted(outcome) = &fact {
            self.outcome = Some(outcome.clone());
        }
        if let Fact::AgentResult { agent_id, .. } | Fact::AgentFailed { agent_id, .. } = &fact {
            self.running.retain(|d| &d.agent_id != agent_id);
            // Its requests expire with it.
            self.asks
                .retain(|a| a.agent_id.as_deref() != Some(agent_id.as_str()));
        }
        self.facts.push(fact);
    }

    /// Decides and records until the core has nothing more to say. Returns the agents
    /// started in this round.
    pub fn settle(&mut self) -> Vec<Dispatch> {
        let mut started = Vec::new();
        loop {
            self.observe();
            let decisions = self.core.decide(self.now_ms);
            if decisions.is_empty() {
                return started;
            }
            for d in decisions {
                self.decisions.push(d.clone());
                match d {
                    Decision::Ready { task_id } => self.record(Fact::TaskReady { task_id }),
                    Decision::Dispatch(dispatch) => {
                        self.record(Fact::Dispatched {
                            task_id: dispatch.task_id.clone(),
                            agent_id: dispatch.agent_id.clone(),
                            role: dispatch.role,
                            attempt: dispatch.attempt,
                        });
                        self.running.push((*dispatch).clone());
                        started.push(*dispatch);
                    }
                    Decision::Finish {
                        task_id,
                        status,
                        reason,
                    } => self.record(Fact::TaskFinished {
                        task_id,
                        status,
                        reason,
                    }),
                    Decision::Merge { task_id, .. } if self.hold_merges => {
                        self.merging.push(task_id)
                    }
                    Decision::Merge { task_id, .. } => {
                        let before = self
                            .facts
                            .iter()
                            .filter(|f| matches!(f, Fact::MergeFailed { task_id: t, .. } if *t == task_id))
                            .count();
                        let refuse = self.refuse_merges.get(&task_id).copied().unwrap_or(0);
                        let outcome = if (before as u32) < refuse {
                            Err("its check failed on the merged tree".to_string())
                        } else {
                            Ok(())
                        };
                        self.end_merge(&task_id, outcome);
                    }
                    Decision::CreateTask(spec) => self.record(Fact::TaskCreated(spec)),
                    Decision::Deliver { .. } => {}
                    Decision::Planning(f) => self.record(Fact::Planning(f)),
                    // The merged change taken back out, as the shell does.
                    Decision::Revert { task_id } => self.record(Fact::Reverted {
                        task_id,
                        error: None,
                    }),
                    Decision::WritePlan { task_id, run, .. } => self.record(Fact::Planning(
                        Box::new(crate::scheduler::core::PlanningFact::Written(
                            air_proto::payload::PlanConfirmed {
                                task_id,
                                files: vec![".air/shared/plan/plan.md".into()],
                                error: None,
                                run,
                            },
                        )),
                    )),
                    Decision::AskConfirmation { task_id, .. } => {
                        self.record(Fact::ConfirmationAsked { task_id })
                    }
                    Decision::WarnSoftTimeout { agent_id, .. } => {
                        self.record(Fact::SoftTimeoutWarned { agent_id })
                    }
                    Decision::Cancel { agent_id, reason } => self.record(Fact::AgentFailed {
                        agent_id,
                        failure: AgentFailure::Cancelled,
                        reason,
                    }),
                    Decision::Kill {
                        agent_id,
                        failure,
                        reason,
                    } => self.record(Fact::AgentFailed {
                        agent_id,
                        failure,
                        reason,
                    }),
                    Decision::Patrol { .. } | Decision::Concurrency { .. } => {}
                    Decision::RunComplete(outcome) => self.record(Fact::RunCompleted(outcome)),
                    Decision::StopForBudget { reason, .. } => self.record(Fact::Stopped { reason }),
                    Decision::Refuse(refusal) => {
                        self.asks.retain(|a| a.request_id != refusal.request_id);
                        if let Some((task_id, reason)) = &refusal.block {
                            self.record(Fact::CancelRequested {
                                task_id: Some(task_id.clone()),
                                reason: reason.clone(),
                                block: true,
                            });
                        }
                        self.refusals.push(*refusal);
                    }
                    Decision::EndAgent { agent_id, end } => match end {
                        AgentEnd::Completed { result, .. } => {
                            // No records here: results are judged by their claims.
                            self.record(Fact::AgentResult {
                                agent_id,
                                result,
                                gate: None,
                            })
                        }
                        AgentEnd::Failed {
                            failure, reason, ..
                        } => self.record(Fact::AgentFailed {
                            agent_id,
                            failure,
                            reason,
                        }),
                    },
                }
            }
        }
    }

    /// Ends a running agent as `play` says.
    pub fn finish(&mut self, agent_id: &str, play: Play) {
        match play {
            Play::Result(result) => self.record(Fact::AgentResult {
                agent_id: agent_id.to_string(),
                result,
                gate: None,
            }),
            Play::Fail(failure, reason) => self.record(Fact::AgentFailed {
                agent_id: agent_id.to_string(),
                failure,
                reason,
            }),
            Play::Hang => {}
        }
    }

    /// Runs to the end: each round, every running agent (oldest first) is played by
    /// `agent`; hung agents are left to the timers, with the clock moved forward when
    /// nothing else can happen. Stops after `max_rounds`.
    pub fn run(&mut self, agent: &mut dyn FnMut(&Dispatch) -> Play, max_rounds: usize) {
        self.settle();
        for _ in 0..max_rounds {
            if self.core.is_finished() {
                return;
            }
            let batch: Vec<Dispatch> = self.running.clone();
            let mut progressed = false;
            for d in batch {
                let play = agent(&d);
                if play != Play::Hang {
                    progressed = true;
                }
                self.finish(&d.agent_id, play);
                self.now_ms += 10;
                self.settle();
            }
            if !progressed {
                self.now_ms += 60_000;
                self.settle();
            }
        }
    }
}

/// A result of `d`'s agent with `status`, passing its evidence gate when `honest`.
pub fn result_for(d: &Dispatch, status: WorkerStatus, honest: bool) -> WorkerResult {
    let mut r = WorkerResult::new(
        &d.task_id,
        &d.agent_id,
        d.role,
        status,
        format!(
            "{} {} of {}",
            d.role.as_str(),
            status_word(status),
            d.task_id
        ),
    );
    r.changed_files = vec![format!("src/{}.rs", d.task_id)];
    if honest {
        for kind in gate::required_evidence(&d.spec, &r) {
            r.evidence_refs.push(evidence(kind));
        }
        if d.spec.verification.required {
            r.verification.push(VerificationResult {
                name: "tests".into(),
                status: VerificationStatus::Passed,
                evidence_refs: None,
                notes: None,
            });
        }
    }
    r
}

fn status_word(s: WorkerStatus) -> &'static str {
    match s {
        WorkerStatus::Completed => "completed",
        WorkerStatus::Failed => "failed",
        WorkerStatus::Blocked => "blocked",
        WorkerStatus::Cancelled => "cancelled",
    }
}

pub fn evidence(kind: EvidenceType) -> EvidenceRef {
    EvidenceRef {
        id: format!("ev-{}", kind.as_str()),
        kind: EvidenceKind::CommandRun,
        reference: "command-run:1".into(),
        location: None,
        claim: format!("{} holds", kind.as_str()),
        evidence_type: Some(kind),
    }
}

/// A reviewer's (or milestone reviewer's) result with `decision`.
pub fn review(d: &Dispatch, decision: ReviewDecision) -> WorkerResult {
    let mut r = result_for(d, WorkerStatus::Completed, false);
    r.changed_files.clear();
    r.evidence_refs.push(evidence(EvidenceType::Explanation));
    r.result = serde_json::to_value(ReviewerOutput {
        decision,
        findings: Vec::new(),
        deviation: None,
    })
    .unwrap_or_default();
    r
}

/// The consulted Architecture Designer's result with `decision`.
pub fn consult(d: &Dispatch, decision: ConsultDecision) -> WorkerResult {
    let mut r = result_for(d, WorkerStatus::Completed, false);
    r.changed_files.clear();
    r.result = serde_json::to_value(ConsultOutput {
        decision,
        advice: format!("advice on {}", d.task_id),
    })
    .unwrap_or_default();
    r
}

/// Whether `d` is the Architecture Designer consulted about a task (not a milestone
/// review).
pub fn is_consult(d: &Dispatch) -> bool {
    d.role == AgentType::ArchitectureDesigner && d.spec.task_type == TaskType::Execute
}

/// A debugger's result: `fixed` completes (retry follows), otherwise it fails.
pub fn debug(d: &Dispatch, status: WorkerStatus) -> WorkerResult {
    let mut r = result_for(d, status, false);
    r.evidence_refs
        .push(evidence(EvidenceType::DebuggerAnalysis));
    r.result = serde_json::to_value(DebuggerOutput {
        analysis: format!("the cause of {}'s failure", d.task_id),
        root_cause: None,
        fixed: status == WorkerStatus::Completed,
    })
    .unwrap_or_default();
    r
}

/// An agent that does everything right: executors complete with their evidence,
/// reviewers approve, debuggers fix.
pub fn diligent(d: &Dispatch) -> Play {
    Play::Result(Box::new(match d.role {
        _ if is_consult(d) => consult(d, ConsultDecision::Stop),
        AgentType::Reviewer | AgentType::ArchitectureDesigner => {
            review(d, ReviewDecision::Approved)
        }
        AgentType::Debugger => debug(d, WorkerStatus::Completed),
        _ => result_for(d, WorkerStatus::Completed, true),
    }))
}
