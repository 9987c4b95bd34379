//! The model an agent may choose (D-019: the scheduler decides whether a task's model
//! is forced or the agent's choice). With `model_policy: agent_select` the agent is
//! offered `select_model`: a harder task than its model suits (or a simple one a
//! cheaper model does well) may move to another model of those configured here, for
//! the rest of its turns, recorded as `agent.model_selected`. With
//! `scheduler_forced` (the default) it is not offered, and the model is the one airsd
//! resolved.

use air_proto::event::{AgentType, EventSource, RuntimeEvent};
use air_proto::ipc::AgentStart;
use air_proto::payload as p;
use air_proto::task::ModelPolicy;
use serde_json::Value;

use crate::model::Talker;
use crate::provider::ToolSpec;

/// The tool that chooses another model.
pub const SELECT_MODEL: &str = "select_model";

/// The tool, when the task lets its executor (or debugger) choose and there is a
/// choice.
pub fn tool(start: &AgentStart, role: AgentType, talker: &Talker) -> Option<ToolSpec> {
    if start.task_spec.constraints.model_policy != ModelPolicy::AgentSelect
        || !matches!(role, AgentType::Executor | AgentType::Debugger)
    {
        return None;
    }
    let choices = talker.selectable();
    if choices.len() < 2 {
        return None;
    }
    Some(ToolSpec {
        name: SELECT_MODEL.into(),
        description: format!(
            "Move to another model for the rest of your turns, when this task needs a stronger one than you are (or a cheaper one does it as well), saying why. You talk to {} now; you may choose: {}.",
            choices[0],
            choices[1..].join(", ")
        ),
        input_schema: serde_json::json!({
            "type": "object",
            "properties": {
                "model": {"type": "string", "description": "One of the models listed, as `provider/model`."},
                "reason": {"type": "string", "description": "Why this task needs it."}
            },
            "required": ["model", "reason"],
            "additionalProperties": false
        }),
    })
}

/// The agent's call of [`SELECT_MODEL`]: the answer it is given, and the event to
/// record when it moved.
pub fn select(
    talker: &mut Talker,
    start: &AgentStart,
    source: &EventSource,
    input: &Value,
) -> (Result<String, String>, Option<RuntimeEvent>) {
    let model = input
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("")
        .trim();
    let reason = input
        .get("reason")
        .and_then(Value::as_str)
        .unwrap_or("")
        .trim();
    if reason.is_empty() {
        return (
            Err("select_model at `reason`: say why this task needs another model".into()),
            None,
        );
    }
    match talker.select(model) {
        Ok(from) => {
            let to = format!("{}/{}", talker.resolved.provider, talker.resolved.model);
            let event = RuntimeEvent::of(
                start.runtime.session_id.as_str(),
                source.clone(),
                &p::ModelSelected {
                    agent_id: start.runtime.agent_id.clone(),
                    task_id: start.task_spec.id.clone(),
                    from_model: from.clone(),
                    to_model: to.clone(),
                    reason: reason.to_string(),
                },
            )
            .ok();
            (
                Ok(format!(
                    "From your next turn you talk to {to} (was {from})."
                )),
                event,
            )
        }
        Err(e) => (Err(e), None),
    }
}
