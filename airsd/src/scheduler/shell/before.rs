//! A bugfix task's check, run by airsd before its executor's model begins
//! ([`air_proto::gate::BEFORE_TOOL`]): its failure is on record before anything
//! changes, so the reproduction holds whether the agent tests first or fixes first.

use super::*;

impl Shell {
    /// Answers the executor's `check.before`: runs the task's check as the agent's own
    /// command (judged, sandboxed and recorded as `shell.run` is), or says why there is
    /// none. Once per agent, and only for an executor whose task needs a reproduction.
    pub(super) fn check_before(
        &mut self,
        agent_id: &str,
        header: &air_proto::ipc::IpcHeader,
        mut call: air_proto::ipc::ToolCall,
    ) {
        let Some(worker) = self.workers.get(agent_id).cloned() else {
            return;
        };
        let Some(d) = self.dispatches.get(agent_id) else {
            return;
        };
        let needs = d.role == AgentType::Executor
            && air_proto::gate::task_evidence(&d.spec)
                .contains(&air_proto::task::EvidenceType::Reproduction);
        let check = if !needs {
            Err("this task needs no reproduction".to_string())
        } else if !self.checked_before.insert(agent_id.to_string()) {
            Err("airsd ran the task's check for this agent already".to_string())
        } else {
            the_check(&d.spec, self.ctx.sources.project.as_ref())
        };
        let command = match check {
            Ok(c) => c,
            Err(why) => {
                let answer = air_proto::ipc::ToolResult {
                    tool_call_id: call.tool_call_id.clone(),
                    status: air_proto::ipc::ToolResultStatus::Error,
                    content: Some(why.clone()),
                    output: None,
                    error: Some(air_proto::error::WireError {
                        kind: air_proto::error::ErrorKind::InvalidInput,
                        message: why,
                        details: None,
                    }),
                    truncated: false,
                    artifact_ref: None,
                };
                worker.reply(header, IpcBody::ToolResult(answer));
                return;
            }
        };
        // What runs is airsd's choice, never the worker's.
        call.input = serde_json::json!({
            "command": command,
            "description": "the task's check, before any change (the reproduction)",
        });
        let job = crate::scheduler::tooljob::ToolJob {
            env: self.env_of(&d.task_id),
            worker: worker.into(),
            header: header.clone(),
            call,
            agent_id: agent_id.to_string(),
            role: d.role,
            task_id: d.task_id.clone(),
            scope: d.spec.scope.clone(),
            planning: None,
            replan: false,
            fixed: Vec::new(),
            failure: None,
            requirement: d.spec.description.clone(),
            yields: declared(&d.spec),
            checks: d.spec.verification.commands.clone().unwrap_or_default(),
            time_limit_ms: d.spec.constraints.hard_timeout_ms,
        };
        tokio::spawn(job.run());
    }
}

/// The checks a task's plan declares evidence of, as (command, what it yields).
pub(super) fn declared(
    spec: &air_proto::task::TaskSpec,
) -> Vec<(String, air_proto::task::EvidenceType)> {
    spec.verification
        .declared
        .iter()
        .flatten()
        .map(|c| (c.command.clone(), c.evidence_type))
        .collect()
}

/// The task's check: the first of its verification commands that runs tests (or the
/// first of them), else the project's test commands from its profile, one after the
/// other.
pub(super) fn the_check(
    spec: &air_proto::task::TaskSpec,
    profile: Option<&air_proto::project_profile::ProjectProfile>,
) -> Result<String, String> {
    let commands: Vec<&String> = spec
        .verification
        .commands
        .iter()
        .flatten()
        .filter(|c| !c.trim().is_empty())
        .collect();
    let tests = |c: &str| {
        air_proto::chain::read(c, true).steps.iter().any(|s| {
            crate::profiles::classify(&s.argv).iter().any(|a| {
                matches!(
                    a,
                    crate::profiles::Activity::Test | crate::profiles::Activity::Load
                )
            })
        })
    };
    if let Some(c) = commands.iter().find(|c| tests(c)).or(commands.first()) {
        return Ok((*c).clone());
    }
    let from_profile: Vec<&String> = profile
        .and_then(|p| p.test.as_ref())
        .into_iter()
        .flatten()
        .filter(|c| !c.trim().is_empty())
        .collect();
    if from_profile.is_empty() {
        return Err("the task names no verification command and the project's profile no test command, so airsd has no check to run before the change: run the check that shows the bug yourself, before you change anything".into());
    }
    Ok(from_profile
        .iter()
        .map(|c| c.trim())
        .collect::<Vec<_>>()
        .join(" && "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec_with(verify: &[&str]) -> air_proto::task::TaskSpec {
        let mut plan = String::from("# P\n\n### Task T1: fix it\n\n- category: bugfix\n");
        if !verify.is_empty() {
            let list: Vec<String> = verify.iter().map(|c| format!("`{c}`")).collect();
            plan.push_str(&format!("- verify: {}\n", list.join(", ")));
        }
        plan.push_str("\nIt is broken.\n");
        let compiled =
            air_proto::plan::compile("plan.md", &plan).unwrap_or_else(|e| panic!("{e:?}"));
        compiled
            .graph
            .tasks
            .into_iter()
            .next()
            .unwrap_or_else(|| panic!("no task"))
    }

    #[test]
    fn the_check_is_the_tests_the_task_names_else_the_profiles() {
        let s = spec_with(&["python3 -m compileall -q .", "python3 -m pytest -q"]);
        assert_eq!(the_check(&s, None).as_deref(), Ok("python3 -m pytest -q"));
        let s = spec_with(&["./check.sh"]);
        assert_eq!(the_check(&s, None).as_deref(), Ok("./check.sh"));
        let mut profile = air_proto::project_profile::ProjectProfile::unknown(
            air_proto::project_profile::ProfileOrigin::Confirmed,
        );
        profile.test = Some(vec!["make".into(), "make test".into()]);
        let s = spec_with(&[]);
        assert_eq!(
            the_check(&s, Some(&profile)).as_deref(),
            Ok("make && make test")
        );
        assert!(the_check(&s, None).is_err());
    }
}
