//! `submit_result`: the tool every agent loop ends with. Its input schema is the
//! WorkerResult the agent type must hand back (D-042) — the reviewer's `result` is a
//! ReviewerOutput, the debugger's a DebuggerOutput — so the model fills exactly the
//! contract. A submission that does not fit is answered with what is wrong and where
//! (a JSON path), for the model to correct within its turns.

use air_proto::event::AgentType;
use air_proto::result::{
    ConsultOutput, DebuggerOutput, EvidenceRef, FollowUpTask, ReviewerOutput, Risk,
    VerificationResult, WorkerResult, WorkerStatus,
};
use serde::Deserialize;
use serde_json::Value;

use crate::provider::ToolSpec;

/// The tool's name, as offered to every provider.
pub const SUBMIT: &str = "submit_result";

/// What the model fills; airsd's ids are added by the worker.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct Submission {
    /// `completed` only when the work is done and its checks ran; otherwise say
    /// `failed` or `blocked` and why.
    status: WorkerStatus,
    /// What was done, in a few sentences.
    summary: String,
    /// Files changed, relative to the project root.
    #[serde(default)]
    changed_files: Vec<String>,
    /// Each check that ran, with its outcome (never one that did not run).
    #[serde(default)]
    verification: Vec<VerificationResult>,
    #[serde(default)]
    risks: Vec<Risk>,
    #[serde(default)]
    follow_up_tasks: Vec<FollowUpTask>,
    /// What supports the claims: command runs, artifacts, diffs.
    #[serde(default)]
    evidence_refs: Vec<EvidenceRef>,
    /// The agent type's own result.
    #[serde(default)]
    result: Value,
}

/// What an agent's `result` is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    /// An executor's: free.
    Task,
    /// A reviewer's, or the Architecture Designer's milestone review: ReviewerOutput.
    Review,
    /// A debugger's: DebuggerOutput.
    Debugging,
    /// The Architecture Designer consulted about a task: ConsultOutput.
    Consult,
}

impl Output {
    /// The output of `agent`; `consulted` when it is the Architecture Designer asked
    /// about a task rather than reviewing a milestone.
    pub fn of(agent: AgentType, consulted: bool) -> Output {
        match agent {
            AgentType::ArchitectureDesigner if consulted => Output::Consult,
            AgentType::Reviewer | AgentType::ArchitectureDesigner => Output::Review,
            AgentType::Debugger => Output::Debugging,
            _ => Output::Task,
        }
    }
}

fn description(output: Output) -> &'static str {
    match output {
        Output::Review => "Hand back the review: `result` is {decision: approved | changes_requested | blocked, findings}. Call it once, last.",
        Output::Debugging => "Hand back the debugging: `result` is {analysis, root_cause?, fixed}. Call it once, last.",
        Output::Consult => "Hand back your advice: `result` is {decision: retry | stop, advice}. Call it once, last.",
        Output::Task => "Hand back the task's result with the checks you ran and their evidence. Call it once, last.",
    }
}

/// The `submit_result` tool for an agent type (not consulted).
pub fn tool(agent: AgentType) -> ToolSpec {
    tool_for(Output::of(agent, false))
}

/// The `submit_result` tool for an output.
pub fn tool_for(output: Output) -> ToolSpec {
    let mut schema = schemars::schema_for!(Submission).to_value();
    let result = match output {
        Output::Review => Some(schemars::schema_for!(ReviewerOutput).to_value()),
        Output::Debugging => Some(schemars::schema_for!(DebuggerOutput).to_value()),
        Output::Consult => Some(schemars::schema_for!(ConsultOutput).to_value()),
        Output::Task => None,
    };
    if let Some(mut result) = result {
        // The agent's own schema in place of the free `result`, its definitions moved
        // up to the root where its references point.
        if let Some(defs) = result.as_object_mut().and_then(|o| o.remove("$defs")) {
            if let (Some(root), Value::Object(defs)) = (schema.as_object_mut(), defs) {
                let all = root
                    .entry("$defs")
                    .or_insert_with(|| Value::Object(Default::default()));
                if let Some(all) = all.as_object_mut() {
                    all.extend(defs);
                }
            }
        }
        if let Some(o) = result.as_object_mut() {
            o.remove("$schema");
            o.remove("title");
        }
        schema["properties"]["result"] = result;
        if let Some(required) = schema["required"].as_array_mut() {
            required.push(Value::String("result".into()));
        }
    }
    if let Some(o) = schema.as_object_mut() {
        o.remove("$schema");
        o.remove("title");
    }
    ToolSpec {
        name: SUBMIT.to_string(),
        description: description(output).to_string(),
        input_schema: schema,
    }
}

/// A command this agent ran through `shell.run`, as airsd answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ran {
    pub command: String,
    pub exit_code: Option<i32>,
    pub command_run_id: String,
}

/// Checks that each verification reported as passed is backed by a command this
/// agent ran that exited 0 — named by its command text or cited by its
/// `command_run_id` — and ties the two together (D-041: report the commands actually
/// run, never a check that did not run).
fn check_verification(verification: &mut [VerificationResult], ran: &[Ran]) -> Result<(), String> {
    use air_proto::result::VerificationStatus;
    for (i, v) in verification.iter_mut().enumerate() {
        if v.status != VerificationStatus::Passed {
            continue;
        }
        let cited = v.evidence_refs.iter().flatten().collect::<Vec<_>>();
        let backing = ran.iter().find(|r| {
            r.exit_code == Some(0)
                && (r.command.trim() == v.name.trim()
                    || cited.iter().any(|c| c.ends_with(r.command_run_id.as_str())))
        });
        let Some(r) = backing else {
            let failed = ran
                .iter()
                .find(|r| r.command.trim() == v.name.trim())
                .and_then(|r| r.exit_code.filter(|c| *c != 0));
            return Err(match failed {
                Some(code) => format!(
                    "submit_result at `verification[{i}]`: `{}` is reported passed, but it exited {code} when you ran it",
                    v.name
                ),
                None => format!(
                    "submit_result at `verification[{i}]`: `{}` is reported passed, but no command you ran shows it; run it with shell_run and name it by its command (or cite its command_run_id)",
                    v.name
                ),
            });
        };
        let reference = format!("command-run:{}", r.command_run_id);
        let refs = v.evidence_refs.get_or_insert_with(Vec::new);
        if !refs.iter().any(|c| c.ends_with(r.command_run_id.as_str())) {
            refs.push(reference);
        }
    }
    Ok(())
}

/// Reads a submission into the WorkerResult airsd expects, or says what is wrong.
/// `ran` is what this agent ran through `shell.run`.
pub fn accept(
    agent: AgentType,
    task_id: &str,
    agent_id: &str,
    input: &Value,
    ran: &[Ran],
) -> Result<WorkerResult, String> {
    accept_as(
        Output::of(agent, false),
        agent,
        task_id,
        agent_id,
        input,
        ran,
    )
}

/// [`accept`] for an agent whose output is `output`.
pub fn accept_as(
    output: Output,
    agent: AgentType,
    task_id: &str,
    agent_id: &str,
    input: &Value,
    ran: &[Ran],
) -> Result<WorkerResult, String> {
    let mut s: Submission = serde_path_to_error::deserialize(input).map_err(|e| {
        let path = e.path().to_string();
        format!("submit_result at `{path}`: {}", e.inner())
    })?;
    let typed = |path: &str, e: serde_json::Error| format!("submit_result at `result{path}`: {e}");
    match output {
        Output::Review => {
            serde_json::from_value::<ReviewerOutput>(s.result.clone())
                .map_err(|e| typed(" (a review)", e))?;
        }
        Output::Debugging => {
            serde_json::from_value::<DebuggerOutput>(s.result.clone())
                .map_err(|e| typed(" (a debugging result)", e))?;
        }
        Output::Consult => {
            serde_json::from_value::<ConsultOutput>(s.result.clone())
                .map_err(|e| typed(" (advice)", e))?;
        }
        Output::Task => {}
    }
    if s.summary.trim().is_empty() {
        return Err("submit_result at `summary`: say what was done".into());
    }
    check_verification(&mut s.verification, ran)?;
    let mut r = WorkerResult::new(task_id, agent_id, agent, s.status, s.summary);
    r.changed_files = s.changed_files;
    r.verification = s.verification;
    r.risks = s.risks;
    r.follow_up_tasks = s.follow_up_tasks;
    r.evidence_refs = s.evidence_refs;
    r.result = s.result;
    Ok(r)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn the_schema_is_the_contract_of_each_agent_type() {
        let executor = tool(AgentType::Executor).input_schema;
        assert_eq!(executor["type"], "object");
        assert_eq!(executor["additionalProperties"], false);
        let reviewer = tool(AgentType::Reviewer).input_schema;
        let decision = reviewer["properties"]["result"].to_string();
        assert!(decision.contains("decision"), "{decision}");
        assert!(reviewer["required"]
            .as_array()
            .unwrap()
            .contains(&json!("result")));
        // Every reference resolves in the document the provider sees.
        let text = reviewer.to_string();
        for r in text.split("\"$ref\":\"#/$defs/").skip(1) {
            let name = r.split('"').next().unwrap();
            assert!(
                reviewer["$defs"].get(name).is_some(),
                "{name} missing from $defs"
            );
        }
    }

    #[test]
    fn submissions_are_checked_and_errors_name_the_path() {
        let ok = accept(
            AgentType::Executor,
            "T1",
            "a1",
            &json!({"status": "completed", "summary": "Added README.md", "changed_files": ["README.md"]}),
            &[],
        )
        .unwrap();
        assert_eq!(
            (ok.task_id.as_str(), ok.agent_type, ok.status),
            ("T1", AgentType::Executor, WorkerStatus::Completed)
        );
        let e = accept(
            AgentType::Executor,
            "T1",
            "a1",
            &json!({"status": "done", "summary": "x"}),
            &[],
        )
        .unwrap_err();
        assert!(e.starts_with("submit_result at `status`"), "{e}");
        let e = accept(
            AgentType::Executor,
            "T1",
            "a1",
            &json!({"status": "completed", "summary": "x", "colour": 1}),
            &[],
        )
        .unwrap_err();
        assert!(e.contains("unknown field `colour`"), "{e}");
        let e = accept(
            AgentType::Reviewer,
            "T1",
            "r1",
            &json!({"status": "completed", "summary": "x", "result": {"decision": "maybe"}}),
            &[],
        )
        .unwrap_err();
        assert!(e.starts_with("submit_result at `result (a review)`"), "{e}");
        let r = accept(AgentType::Reviewer, "T1", "r1", &json!({"status": "completed", "summary": "Looks right", "result": {"decision": "approved", "findings": []}}), &[]).unwrap();
        assert_eq!(r.result["decision"], "approved");
    }

    #[test]
    fn a_passed_check_must_be_a_command_that_ran_and_exited_0() {
        let ran = vec![
            Ran {
                command: "cargo test".into(),
                exit_code: Some(0),
                command_run_id: "c1".into(),
            },
            Ran {
                command: "cargo clippy".into(),
                exit_code: Some(1),
                command_run_id: "c2".into(),
            },
        ];
        let submit = |v: serde_json::Value| {
            accept(
                AgentType::Executor,
                "T1",
                "a1",
                &json!({"status": "completed", "summary": "done", "changed_files": ["a.rs"], "verification": v}),
                &ran,
            )
        };
        let r = submit(json!([{"name": "cargo test", "status": "passed"}])).unwrap();
        assert_eq!(
            r.verification[0].evidence_refs,
            Some(vec!["command-run:c1".to_string()])
        );
        let r = submit(json!([{"name": "unit tests", "status": "passed", "evidence_refs": ["command-run:c1"]}])).unwrap();
        assert_eq!(
            r.verification[0].evidence_refs,
            Some(vec!["command-run:c1".to_string()])
        );
        let e = submit(json!([{"name": "cargo clippy", "status": "passed"}])).unwrap_err();
        assert!(e.contains("it exited 1 when you ran it"), "{e}");
        let e = submit(json!([{"name": "ctest", "status": "passed"}])).unwrap_err();
        assert!(e.contains("no command you ran shows it"), "{e}");
        // A failed check needs no backing: it is honest as it is.
        assert!(submit(json!([{"name": "ctest", "status": "failed"}])).is_ok());
    }
}
