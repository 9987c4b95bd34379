//! The Main Agent's turn: the tools only it has (`classify`, `delegate_task`), what
//! each answers, and the turn's end — the model's plain answer, with the kind of the
//! message and the task it handed on (D-005, D-016).

use air_proto::conversation::{
    named_intent, summarised, CancelTask, Classification, DelegatedTask, Intent, MainResult,
    RequirementChange,
};
use air_proto::event::AgentType;
use air_proto::ipc::AgentStart;
use air_proto::result::{WorkerResult, WorkerStatus};
use serde_json::Value;

use crate::provider::ToolSpec;

/// The classifier's name as the model sees it.
pub const CLASSIFY: &str = "classify";
/// The hand-over's name as the model sees it.
pub const DELEGATE: &str = "delegate_task";
/// Stopping a task the user wants stopped.
pub const CANCEL: &str = "cancel_task";
/// Recording a change of what the user asked for.
pub const CHANGE: &str = "note_requirement_change";

/// What one turn knows as it goes.
#[derive(Clone, Debug, Default)]
pub struct Turn {
    /// The kind the message named by its prefix (no classifier then).
    named: Option<Intent>,
    /// The turn summarises delegated work rather than answering a message.
    summary: bool,
    intent: Option<Intent>,
    task: Option<DelegatedTask>,
    cancel: Vec<CancelTask>,
    /// Changes noted this turn, for `requirement.changed`, until taken.
    changes: Vec<RequirementChange>,
}

fn schema<T: schemars::JsonSchema>() -> Value {
    let mut schema = schemars::schema_for!(T).to_value();
    air_proto::tool::compact_schema(&mut schema);
    if let Some(o) = schema.as_object_mut() {
        o.remove("description");
    }
    schema
}

impl Turn {
    /// The turn of this `agent.start`.
    pub fn of(start: &AgentStart) -> Turn {
        let spec = &start.task_spec;
        let named = named_intent(&spec.description).map(|(i, _)| i);
        let summary = !summarised(spec).is_empty();
        Turn {
            named,
            summary,
            intent: named.or(summary.then_some(Intent::Chat)),
            ..Turn::default()
        }
    }

    /// The tools of this turn beside airsd's read-only ones.
    pub fn tools(&self) -> Vec<ToolSpec> {
        let mut out = Vec::new();
        if self.summary {
            return out;
        }
        if self.named.is_none() {
            out.push(ToolSpec {
                name: CLASSIFY.into(),
                description:
                    "Say what the user's message asks for, first, before you answer or act.".into(),
                input_schema: schema::<Classification>(),
            });
        }
        if self.named.is_none_or(|i| i != Intent::Chat) {
            out.push(ToolSpec {
                name: DELEGATE.into(),
                description: "Hand one task to air's scheduler: an executor does it, a reviewer checks it, and airsd requires its evidence. Once per turn; then tell the user in a sentence or two what will be done.".into(),
                input_schema: schema::<DelegatedTask>(),
            });
        }
        out.push(ToolSpec {
            name: CANCEL.into(),
            description: "Stop a running task of the session because the user asked (\"stop\", \"cancel that\"); it is cancelled when this turn ends.".into(),
            input_schema: schema::<CancelTask>(),
        });
        out.push(ToolSpec {
            name: CHANGE.into(),
            description: "Record that the user changed what they asked for while work runs. The running work is not changed by it: say so to the user.".into(),
            input_schema: schema::<RequirementChange>(),
        });
        out
    }

    /// Whether the message is work to hand on (DELEGATING, D-005).
    pub fn delegating(&self) -> bool {
        !self.summary
            && self.intent.is_some_and(|i| {
                matches!(
                    i,
                    Intent::SimpleTask | Intent::Direct | Intent::NeedsPlanning
                )
            })
    }

    /// The requirement changes noted since the last call, to record.
    pub fn take_changes(&mut self) -> Vec<RequirementChange> {
        std::mem::take(&mut self.changes)
    }

    /// Whether `name` is one of this turn's own tools.
    pub fn handles(name: &str) -> bool {
        [CLASSIFY, DELEGATE, CANCEL, CHANGE].contains(&name)
    }

    /// The answer to a call of one of this turn's tools: `Ok` with what the model is
    /// told, or `Err` with why the call was refused (naming the field).
    pub fn call(&mut self, name: &str, input: &Value) -> Result<String, String> {
        match name {
            CLASSIFY => {
                let c: Classification = serde_json::from_value(input.clone())
                    .map_err(|e| format!("not a classification: {e}"))?;
                self.intent = Some(c.intent);
                Ok(match c.intent {
                    Intent::Chat => "Noted: chat. Answer the user; read what you need first.".into(),
                    Intent::SimpleTask => format!(
                        "Noted: simple_task. Write the task with {DELEGATE} (what to change, checks that show it done, the files, the command that proves it), then tell the user in a sentence or two what will be done."
                    ),
                    Intent::Direct => "Noted: direct. End your turn now with one short sentence: an executor starts on the user's words at once, in the foreground, and answers them itself.".into(),
                    Intent::NeedsPlanning => "Noted: needs_planning. The Architecture Designer takes it from here: it discusses the requirement with the user, then proposes a plan for them to confirm. End your turn now with one short sentence saying so; do not start work yourself.".into(),
                })
            }
            DELEGATE => {
                if self.task.is_some() {
                    return Err(format!(
                        "{DELEGATE} was already called this turn: one task per turn"
                    ));
                }
                let task: DelegatedTask = serde_json::from_value(input.clone())
                    .map_err(|e| format!("not a task: {e}"))?;
                let problems = task.problems();
                if !problems.is_empty() {
                    return Err(format!("the task cannot run: {}", problems.join("; ")));
                }
                let title = task.title.clone();
                self.task = Some(task);
                if self.intent.is_none_or(|i| i == Intent::Chat) {
                    self.intent = Some(Intent::SimpleTask);
                }
                Ok(format!(
                    "Accepted: \"{title}\" becomes a task when this turn ends (in the default permission mode it starts once the user confirms it). Now tell the user in a sentence or two what will be done; you will summarise it when it ends."
                ))
            }
            CANCEL => {
                let c: CancelTask = serde_json::from_value(input.clone())
                    .map_err(|e| format!("not a cancellation: {e}"))?;
                if c.task_id.trim().is_empty() {
                    return Err("task_id: name the task to stop (e.g. T1)".into());
                }
                let told = format!(
                    "Asked: {} is cancelled when this turn ends, if it is still going. Tell the user.",
                    c.task_id
                );
                self.cancel.push(c);
                Ok(told)
            }
            CHANGE => {
                let c: RequirementChange = serde_json::from_value(input.clone())
                    .map_err(|e| format!("not a requirement change: {e}"))?;
                if c.change.trim().is_empty() {
                    return Err("change: say what is now wanted".into());
                }
                self.changes.push(c);
                Ok("Recorded. A task you handed on is not changed by it: tell the user so, and offer to stop it (cancel_task) or to hand on the change as a task. The unfinished work of a plan is re-planned by the Architecture Designer, who shows the user the new graph to confirm.".into())
            }
            other => Err(format!("there is no tool `{other}` for this agent")),
        }
    }

    /// The turn's result: the model's answer, the message's kind (`chat` when the
    /// model never classified it) and the task handed on.
    pub fn end(self, start: &AgentStart, answer: String) -> WorkerResult {
        let result = MainResult {
            intent: self.intent.unwrap_or(Intent::Chat),
            answer: answer.clone(),
            task: self.task,
            cancel: self.cancel,
        };
        let mut r = WorkerResult::new(
            &start.task_spec.id,
            &start.runtime.agent_id,
            AgentType::Main,
            WorkerStatus::Completed,
            answer,
        );
        r.result = serde_json::to_value(&result).unwrap_or_default();
        r
    }
}

/// The direct lane's result: the executor's plain answer, and the files its calls
/// changed (airsd's record decides, as for any task).
pub fn direct_end(start: &AgentStart, answer: String, changed: &[String]) -> WorkerResult {
    let mut r = WorkerResult::new(
        &start.task_spec.id,
        &start.runtime.agent_id,
        AgentType::Executor,
        WorkerStatus::Completed,
        answer.clone(),
    );
    r.changed_files = changed.to_vec();
    r.result = serde_json::json!({ "answer": answer });
    r
}

/// A planning turn's result: what the designer asked, stated or proposed (the input
/// of the call airsd accepted, `tool`), or only its words.
pub fn planning_end(
    start: &AgentStart,
    tool: Option<(&str, &Value)>,
    answer: String,
) -> WorkerResult {
    use air_proto::planning::{PlanningTurn, ASK_USER, CLASSIFY, PROPOSE, SETTLE};
    let mut turn = PlanningTurn {
        answer: answer.clone(),
        ..PlanningTurn::default()
    };
    let summary = match tool {
        Some((ASK_USER, input)) => {
            turn.asked = serde_json::from_value(input.clone()).ok();
            let n = turn.asked.as_ref().map_or(0, |a| a.questions.len());
            format!("asked the user {n} question(s)")
        }
        Some((SETTLE, input)) => {
            turn.settled = serde_json::from_value(input.clone()).ok();
            "stated the settled requirements".to_string()
        }
        Some((CLASSIFY, input)) => {
            turn.classified = serde_json::from_value(input.clone()).ok();
            "said what the requirement change is".to_string()
        }
        Some((PROPOSE, input)) => {
            turn.proposal = serde_json::from_value(input.clone()).ok();
            "proposed the architecture and the plan".to_string()
        }
        _ => answer.clone(),
    };
    let mut r = WorkerResult::new(
        &start.task_spec.id,
        &start.runtime.agent_id,
        AgentType::ArchitectureDesigner,
        WorkerStatus::Completed,
        if summary.trim().is_empty() {
            "answered the user".to_string()
        } else {
            summary
        },
    );
    r.result = serde_json::to_value(&turn).unwrap_or_default();
    r
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn a_refused_hand_over_names_its_field_and_a_second_is_refused() {
        let mut t = Turn::default();
        let e = t
            .call(
                DELEGATE,
                &json!({"title": "x", "description": "", "acceptance_criteria": []}),
            )
            .unwrap_err();
        assert!(
            e.contains("description") && e.contains("acceptance_criteria"),
            "{e}"
        );
        let e = t.call(DELEGATE, &json!({"title": 3})).unwrap_err();
        assert!(e.contains("not a task"), "{e}");
        let ok = json!({"title": "Add --json", "description": "Add a flag", "acceptance_criteria": ["wc --json prints JSON"], "expected_files": ["../x"]});
        let e = t.call(DELEGATE, &ok).unwrap_err();
        assert!(e.contains("expected_files[0]"), "{e}");
        let ok = json!({"title": "Add --json", "description": "Add a flag", "acceptance_criteria": ["wc --json prints JSON"]});
        assert!(t.call(DELEGATE, &ok).unwrap().starts_with("Accepted"));
        assert!(t.call(DELEGATE, &ok).unwrap_err().contains("already"));
        assert_eq!(t.intent, Some(Intent::SimpleTask));
    }

    #[test]
    fn classification_sets_the_kind_and_bad_input_is_refused() {
        let mut t = Turn::default();
        assert!(t
            .call(CLASSIFY, &json!({"intent": "perhaps", "reason": "?"}))
            .is_err());
        assert_eq!(t.intent, None);
        t.call(
            CLASSIFY,
            &json!({"intent": "needs_planning", "reason": "big"}),
        )
        .unwrap();
        assert_eq!(t.intent, Some(Intent::NeedsPlanning));
    }
}
