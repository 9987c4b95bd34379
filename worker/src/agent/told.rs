//! What the loop tells besides the model's turns: airsd's evidence gate asked before
//! a result goes, the bug on record before a bugfix begins, the debugger's record,
//! a loop the patrol found, and answers the loop gives itself.

use air_proto::event::{EventSource, RuntimeEvent};
use air_proto::ipc::{AgentStart, ToolResult, ToolResultStatus};
use air_proto::message::ContentBlock;
use air_proto::payload as p;
use air_proto::result::WorkerResult;
use serde_json::Value;

use super::{watch, Link};
use crate::submit;

/// A call the loop answers itself (`call`: its id, name and input): the answer (an
/// error as `Err`) given to the model, and watched by the patrol.
pub(super) fn here(
    answers: &mut Vec<ContentBlock>,
    watch: &mut watch::Watch,
    (id, name, input): (&str, &str, &Value),
    answer: Result<String, String>,
) {
    let (content, is_error) = match answer {
        Ok(told) => (told, false),
        Err(why) => (why, true),
    };
    watch.call(name, input, watch::fingerprint(!is_error, None, &content));
    answers.push(ContentBlock::ToolResult {
        tool_use_id: id.to_string(),
        content,
        is_error,
    });
}

/// What airsd's evidence gate says is wrong with `result` (empty: nothing). A gate
/// that cannot be asked refuses nothing here: airsd judges the result when it comes.
pub(super) async fn gate_refusals(
    link: &impl Link,
    call_id: &str,
    result: &WorkerResult,
    origin_message_id: &str,
) -> Vec<String> {
    let input = serde_json::json!({ "result": result });
    let answer = link
        .call_tool(
            &format!("{call_id}:check"),
            air_proto::gate::CHECK_TOOL,
            input,
            origin_message_id,
        )
        .await;
    if answer.status != ToolResultStatus::Ok {
        return Vec::new();
    }
    answer
        .output
        .and_then(|o| serde_json::from_value::<air_proto::gate::Verdict>(o).ok())
        .map(|v| v.refused)
        .unwrap_or_default()
}

/// What the executor of a bugfix task is told of airsd's run of its check before it
/// began.
pub(super) fn before_told(answer: &ToolResult) -> String {
    let Some(out) = answer
        .output
        .as_ref()
        .filter(|_| answer.status == ToolResultStatus::Ok)
    else {
        let why = answer
            .error
            .as_ref()
            .map(|e| e.message.as_str())
            .unwrap_or("it did not run");
        return format!(
            "# Before you began\n\nairsd could not run this task's check before any change: {why}. The reproduction is then yours: run the check that shows the bug and see it fail before you change anything, then run it again after the fix."
        );
    };
    let command = out.get("command").and_then(Value::as_str).unwrap_or("");
    let id = out
        .get("command_run_id")
        .and_then(Value::as_str)
        .unwrap_or("");
    let shown = answer.content.clone().unwrap_or_default();
    let verdict = match out.get("exit_code").and_then(Value::as_i64) {
        Some(0) => "It passed, so no test shows the bug yet: write a test that shows it, run it and see it fail before you fix the code, then run it again after the fix (that failure, then that pass, is the reproduction).".to_string(),
        Some(code) => format!("It failed (exit {code}): that is the bug on record before any change. Fix it, then run the same check again after your last edit (wrapped as you like: `2>&1 | tail -30`, `-v`); its pass is the reproduction."),
        None => "It did not run to its end, so it shows nothing: run the check that shows the bug and see it fail before you change anything, then run it again after the fix.".to_string(),
    };
    format!(
        "# Before you began\n\nairsd ran this task's check `{command}` (command_run_id {id}). {verdict}\n\n{shown}"
    )
    .trim_end()
    .to_string()
}

/// The debugger's record of what it found (`debug.record.created`): the symptom (the
/// executor's failed checks or summary), the analysis and cause, the fix, and the
/// commands that show it.
pub(super) fn debug_record(
    start: &AgentStart,
    result: &WorkerResult,
    seen: &submit::Seen,
) -> p::DebugRecordCreated {
    let ran = &seen.ran;
    let output: Option<air_proto::result::DebuggerOutput> =
        serde_json::from_value(result.result.clone()).ok();
    let symptom = match start.context_pack.previous_result.as_deref() {
        Some(prev) => {
            let failed: Vec<String> = prev
                .verification
                .iter()
                .filter(|v| v.status == air_proto::result::VerificationStatus::Failed)
                .map(|v| format!("`{}` failed", v.name))
                .collect();
            if failed.is_empty() {
                prev.summary.clone()
            } else {
                failed.join("; ")
            }
        }
        None => start.task_spec.title.clone(),
    };
    p::DebugRecordCreated {
        task_id: result.task_id.clone(),
        agent_id: result.agent_id.clone(),
        symptom,
        analysis: output
            .as_ref()
            .map(|o| o.analysis.clone())
            .unwrap_or_default(),
        root_cause: output.as_ref().and_then(|o| o.root_cause.clone()),
        fixed: output.as_ref().is_some_and(|o| o.fixed),
        // What the fix changed: the debugger's own calls.
        changed_files: seen.own.clone(),
        command_run_ids: ran
            .iter()
            .filter(|r| !r.command_run_id.is_empty())
            .map(|r| r.command_run_id.clone())
            .collect(),
    }
}

/// The patrol found the agent in a loop (`agent.loop_detected`).
pub(super) fn looped(
    link: &impl Link,
    start: &AgentStart,
    source: &EventSource,
    turn: u32,
    why: &str,
    stopped: bool,
) {
    if let Ok(e) = RuntimeEvent::of(
        start.runtime.session_id.as_str(),
        source.clone(),
        &p::LoopDetected {
            agent_id: start.runtime.agent_id.clone(),
            task_id: start.task_spec.id.clone(),
            turn,
            reason: why.to_string(),
            stopped,
        },
    ) {
        link.event(e);
    }
}
