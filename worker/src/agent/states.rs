//! Each agent type's own loop (D-006): its states, typed, and the steps that move
//! them. The loop that talks to the model, runs tools and hands back the result is
//! shared plumbing; where it is, and what it may do there, is the agent type's:
//!
//! - executor: LOADING → THINKING → ACTING → OBSERVING, again and again, →
//!   FINALIZING;
//! - reviewer (and the designer's milestone reviews and consultations): LOADING →
//!   REVIEWING → DECIDING;
//! - debugger: GATHERING → ANALYZING → FIXING → RECORDING, or ESCALATING when it
//!   did not fix. GATHERING is left only by evidence that bears on the failure (a
//!   run of the failing check, a read of a file the failure names), and a write
//!   before that is refused (seed 001 §4: P1-17, a fix before any evidence);
//! - Main Agent: LOADING → THINKING → DELEGATING (writing what it hands on) →
//!   FINALIZING;
//! - the designer's planning turn: LOADING → READING → PROPOSING (asking, stating or
//!   proposing, which ends the turn) → FINALIZING (airsd refuses it any write or
//!   command, and records the call);
//! - Compactor: LOADING → READING (what it summarises) → SUMMARIZING;
//! - ExperienceMiner: LOADING → READING → PROPOSING.

use air_proto::event::AgentType;
pub use air_proto::gate::Failure;
use air_proto::ipc::{AgentStart, ToolResult, ToolResultStatus};
use serde_json::Value;

use super::LoopState;

/// Tools that change files (the debugger's FIXING starts with the first).
pub fn writes(tool: &str) -> bool {
    matches!(tool, "fs.write" | "fs.edit" | "fs.multi_edit")
}

/// What moves a loop.
#[derive(Clone, Copy, Debug)]
pub enum Step<'a> {
    /// A model turn begins.
    Turn,
    /// The model called `tool`, which its loop allows: it runs now.
    Calling { tool: &'a str },
    /// A tool the model called was answered.
    Called {
        tool: &'a str,
        input: &'a Value,
        answer: &'a ToolResult,
    },
    /// Every call of the turn was answered.
    Answered,
    /// The Main Agent began writing the work it hands on.
    Delegating,
    /// A result was accepted: the loop ends (for a debugger: `fixed` or not).
    Submitted { fixed: bool },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Work {
    Loading,
    Thinking,
    Acting,
    Observing,
    Finalizing,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Review {
    Loading,
    Reviewing,
    Deciding,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Debug {
    Gathering,
    Analyzing,
    Fixing,
    Recording,
    Escalating,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Plan {
    Loading,
    Reading,
    Proposing,
    Finalizing,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compact {
    Loading,
    Reading,
    Summarizing,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mine {
    Loading,
    Reading,
    Proposing,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Talk {
    Loading,
    Thinking,
    Delegating,
    Finalizing,
}

/// An agent's loop: its type's states.
#[derive(Clone, Debug)]
pub enum Machine {
    Work(Work),
    Review(Review),
    Debug(Debug, Failure),
    Talk(Talk),
    Plan(Plan),
    Compact(Compact),
    Mine(Mine),
}

impl Machine {
    /// The loop of an agent of `role`; `reviews` for the designer's reviews and
    /// consultations (its planning turns do work).
    pub fn of(role: AgentType, reviews: bool, start: &AgentStart) -> Machine {
        match role {
            AgentType::Reviewer => Machine::Review(Review::Loading),
            AgentType::ArchitectureDesigner if reviews => Machine::Review(Review::Loading),
            AgentType::ArchitectureDesigner => Machine::Plan(Plan::Loading),
            AgentType::Debugger => Machine::Debug(Debug::Gathering, failure_of(start)),
            AgentType::Main => Machine::Talk(Talk::Loading),
            AgentType::Compactor => Machine::Compact(Compact::Loading),
            AgentType::ExperienceMiner => Machine::Mine(Mine::Loading),
            AgentType::Executor => Machine::Work(Work::Loading),
        }
    }

    pub fn state(&self) -> LoopState {
        match self {
            Machine::Work(s) => match s {
                Work::Loading => LoopState::Loading,
                Work::Thinking => LoopState::Thinking,
                Work::Acting => LoopState::Acting,
                Work::Observing => LoopState::Observing,
                Work::Finalizing => LoopState::Finalizing,
            },
            Machine::Review(s) => match s {
                Review::Loading => LoopState::Loading,
                Review::Reviewing => LoopState::Reviewing,
                Review::Deciding => LoopState::Deciding,
            },
            Machine::Debug(s, _) => match s {
                Debug::Gathering => LoopState::Gathering,
                Debug::Analyzing => LoopState::Analyzing,
                Debug::Fixing => LoopState::Fixing,
                Debug::Recording => LoopState::Recording,
                Debug::Escalating => LoopState::Escalating,
            },
            Machine::Talk(s) => match s {
                Talk::Loading => LoopState::Loading,
                Talk::Thinking => LoopState::Thinking,
                Talk::Delegating => LoopState::Delegating,
                Talk::Finalizing => LoopState::Finalizing,
            },
            Machine::Plan(s) => match s {
                Plan::Loading => LoopState::Loading,
                Plan::Reading => LoopState::Reading,
                Plan::Proposing => LoopState::Proposing,
                Plan::Finalizing => LoopState::Finalizing,
            },
            Machine::Compact(s) => match s {
                Compact::Loading => LoopState::Loading,
                Compact::Reading => LoopState::Reading,
                Compact::Summarizing => LoopState::Summarizing,
            },
            Machine::Mine(s) => match s {
                Mine::Loading => LoopState::Loading,
                Mine::Reading => LoopState::Reading,
                Mine::Proposing => LoopState::Proposing,
            },
        }
    }

    /// Whether the loop has ended.
    pub fn ended(&self) -> bool {
        matches!(
            self,
            Machine::Work(Work::Finalizing)
                | Machine::Review(Review::Deciding)
                | Machine::Debug(Debug::Recording | Debug::Escalating, _)
                | Machine::Talk(Talk::Finalizing)
                | Machine::Plan(Plan::Finalizing)
                | Machine::Compact(Compact::Summarizing)
                | Machine::Mine(Mine::Proposing)
        )
    }

    /// Whether the agent may call `tool` where its loop is; the refusal told to the
    /// model otherwise.
    pub fn allows(&self, tool: &str) -> Result<(), String> {
        match self {
            Machine::Debug(Debug::Gathering, failure) if writes(tool) => {
                Err(Bears::refusal(failure))
            }
            _ => Ok(()),
        }
    }

    /// Moves the loop on by `step`; an ended loop stays where it ended.
    pub fn step(&mut self, step: Step<'_>) {
        if self.ended() {
            return;
        }
        match self {
            Machine::Work(s) => {
                *s = match (step, *s) {
                    (Step::Turn, _) => Work::Thinking,
                    (Step::Calling { .. }, _) => Work::Acting,
                    (Step::Answered, Work::Acting) => Work::Observing,
                    (Step::Submitted { .. }, _) => Work::Finalizing,
                    (_, s) => s,
                }
            }
            Machine::Review(s) => {
                *s = match step {
                    Step::Submitted { .. } => Review::Deciding,
                    Step::Turn | Step::Calling { .. } => Review::Reviewing,
                    _ => *s,
                }
            }
            Machine::Debug(s, failure) => {
                *s = match (step, *s) {
                    (Step::Submitted { fixed: true }, _) => Debug::Recording,
                    (Step::Submitted { fixed: false }, _) => Debug::Escalating,
                    (
                        Step::Called {
                            tool,
                            input,
                            answer,
                        },
                        Debug::Gathering,
                    ) if failure.bears(tool, input, answer) => Debug::Analyzing,
                    (Step::Calling { tool }, Debug::Analyzing) if writes(tool) => Debug::Fixing,
                    (_, s) => s,
                }
            }
            Machine::Talk(s) => {
                *s = match (step, *s) {
                    (Step::Submitted { .. }, _) => Talk::Finalizing,
                    (Step::Delegating, _) => Talk::Delegating,
                    (Step::Turn, Talk::Loading) => Talk::Thinking,
                    (_, s) => s,
                }
            }
            Machine::Plan(s) => {
                *s = match (step, *s) {
                    (Step::Submitted { .. }, _) => Plan::Finalizing,
                    (Step::Calling { tool }, _) if air_proto::planning::is_designer_tool(tool) => {
                        Plan::Proposing
                    }
                    (Step::Turn | Step::Calling { .. }, Plan::Loading) => Plan::Reading,
                    (_, s) => s,
                }
            }
            Machine::Compact(s) => {
                *s = match (step, *s) {
                    (Step::Submitted { .. }, _) => Compact::Summarizing,
                    (Step::Turn | Step::Calling { .. }, Compact::Loading) => Compact::Reading,
                    (_, s) => s,
                }
            }
            Machine::Mine(s) => {
                *s = match (step, *s) {
                    (Step::Submitted { .. }, _) => Mine::Proposing,
                    (Step::Turn | Step::Calling { .. }, Mine::Loading) => Mine::Reading,
                    (_, s) => s,
                }
            }
        }
    }
}

/// What the debugger of `start` investigates.
pub fn failure_of(start: &AgentStart) -> Failure {
    Failure::of(
        &start.task_spec,
        start.context_pack.previous_result.as_deref(),
        start.context_pack.notes.as_deref().unwrap_or_default(),
    )
}

/// How a debugger's loop reads a call against its failure.
pub trait Bears {
    fn bears(&self, tool: &str, input: &Value, answer: &ToolResult) -> bool;
    fn refusal(&self) -> String;
}

impl Bears for Failure {
    /// Whether a call's answer bears on the failure: a run of a check that failed
    /// (however it was wrapped) that ran to its end, or a read of a file the failure
    /// names. A failure that names neither is borne on by any read, and by any
    /// command that ran something.
    fn bears(&self, tool: &str, input: &Value, answer: &ToolResult) -> bool {
        if answer.status != ToolResultStatus::Ok {
            return false;
        }
        let output = answer.output.as_ref();
        let exited = output
            .and_then(|o| o.get("exit_code"))
            .is_some_and(Value::is_i64);
        match tool {
            "shell.run" => {
                let command = input.get("command").and_then(Value::as_str).unwrap_or("");
                let cwd = input
                    .get("cwd")
                    .and_then(Value::as_str)
                    .map(|d| d.trim_start_matches("./").trim_end_matches('/'))
                    .filter(|d| !d.is_empty() && *d != ".")
                    .unwrap_or("");
                // airsd names the task's checks a command ran, read as the evidence
                // gate reads commands (`-v` and the like taken out).
                let named = output
                    .and_then(|o| o.get("checks"))
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .any(|c| self.checks.iter().any(|f| f == c));
                let reading = air_proto::gate::Reading::default();
                exited
                    && if self.checks.is_empty() {
                        !air_proto::gate::idle(command)
                    } else {
                        named
                            || self.checks.iter().any(|c| {
                                air_proto::gate::compare(command, Some(cwd), c, &reading)
                                    == air_proto::gate::Match::Runs
                            })
                    }
            }
            // The C/C++ toolchain's runs build and test the project itself.
            "cpp.build" | "cpp.test" => true,
            "fs.read" => self.reads(input.get("path").and_then(Value::as_str).unwrap_or("")),
            _ => false,
        }
    }

    /// Why a write is refused before the evidence.
    fn refusal(&self) -> String {
        let mut ways = Vec::new();
        if !self.checks.is_empty() {
            ways.push(format!(
                "run the failing check ({}; wrap it as you like, e.g. `2>&1 | tail -40`)",
                self.checks
                    .iter()
                    .map(|c| format!("`{c}`"))
                    .collect::<Vec<_>>()
                    .join(" or ")
            ));
        }
        if !self.files.is_empty() {
            let shown: Vec<String> = self
                .files
                .iter()
                .take(8)
                .map(|f| format!("`{f}`"))
                .collect();
            ways.push(format!(
                "read a file the failure names ({})",
                shown.join(", ")
            ));
        }
        if ways.is_empty() {
            ways.push("read the code involved or run a command that shows the failure".into());
        }
        format!(
            "refused: a debugger changes files only once it has evidence that bears on the failure, and it has none yet (it is GATHERING). First {}; then fix.",
            ways.join(", or ")
        )
    }
}

#[cfg(test)]
mod tests;
