//! `submit_result`: the tool every agent loop ends with. Each role fills its own small
//! form — the executor its status, checks and evidence; the reviewer its decision and
//! findings; the debugger its analysis; the Architecture Designer consulted its advice
//! — and the worker turns it into the WorkerResult airsd expects (D-042). What the
//! worker and airsd know better than the model is not asked of it: the files changed
//! come from the agent's own tool calls, and the evidence a structured answer is (a
//! review's explanation, a debugger's analysis) is derived from that answer. A form
//! that does not fit is answered with what is wrong and where (a JSON path), for the
//! model to correct within its turns.

use air_proto::event::AgentType;
use air_proto::result::{
    ConsultDecision, ConsultOutput, DebuggerOutput, EvidenceKind, EvidenceRef, FollowUpTask,
    ReviewDecision, ReviewFinding, ReviewerOutput, Risk, VerificationResult, VerificationStatus,
    WorkerResult, WorkerStatus,
};
use air_proto::task::EvidenceType;
use serde::Deserialize;
use serde_json::Value;

use crate::provider::ToolSpec;

/// The tool's name, as offered to every provider.
pub const SUBMIT: &str = "submit_result";

// How an executor's or a debugger's work ended. There is no `cancelled`: only a
// person or the scheduler cancels a task.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
// What each means is the role's prompt's table; here it would cost every request.
enum Outcome {
    Completed,
    Failed,
    Blocked,
}

impl Outcome {
    fn status(self) -> WorkerStatus {
        match self {
            Outcome::Completed => WorkerStatus::Completed,
            Outcome::Failed => WorkerStatus::Failed,
            Outcome::Blocked => WorkerStatus::Blocked,
        }
    }
}

/// A piece of evidence, as the agent points at it.
#[derive(Clone, Debug, Deserialize, schemars::JsonSchema)]
struct Claimed {
    /// The kind of evidence it is for the task (e.g. `build_pass`, `test_pass`).
    #[serde(default)]
    evidence_type: Option<EvidenceType>,
    /// A run's `command_run_id` (or its exact command), a file path, or an artifact
    /// URI.
    #[serde(rename = "ref")]
    reference: String,
    /// What it shows, in one sentence.
    claim: String,
}

/// The executor's form.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct TaskForm {
    /// How the work ended.
    status: Outcome,
    /// What was done and what the checks showed, in a few sentences.
    summary: String,
    /// Each check you ran with `shell_run`, named by its exact command, with its
    /// outcome. Never one you did not run.
    #[serde(default)]
    verification: Vec<VerificationResult>,
    /// May stay empty: airsd finds its own records. Cite a run by its `command_run_id`;
    /// a run of the program that exited 0 may be a `smoke_test`.
    #[serde(default)]
    evidence: Vec<Claimed>,
    /// When you complete without changing any file: why no change was needed.
    #[serde(default)]
    explanation: Option<String>,
    /// What could still go wrong with the change.
    #[serde(default)]
    risks: Vec<Risk>,
}

/// The reviewer's form.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct ReviewForm {
    /// `approved`: the task is done as asked; `changes_requested`: the executor must
    /// change what the findings say; `blocked`: it cannot be done as planned.
    decision: ReviewDecision,
    /// Why, in a few sentences.
    summary: String,
    /// What to change: each with the file (and line) and what must be different.
    #[serde(default)]
    findings: Vec<ReviewFinding>,
    /// What you looked at: files, diffs, command outputs.
    #[serde(default)]
    looked_at: Vec<String>,
}

/// The milestone review's form: a review, with the tasks its findings need.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct MilestoneForm {
    /// `approved`: the phase holds together; `changes_requested`: the follow-up
    /// tasks must be done; `blocked`: the plan cannot go on as it is.
    decision: ReviewDecision,
    /// Why, in a few sentences.
    summary: String,
    /// What is wrong: each with the file (and line) and what must be different.
    #[serde(default)]
    findings: Vec<ReviewFinding>,
    /// The tasks that would resolve the findings.
    #[serde(default)]
    follow_up_tasks: Vec<FollowUpTask>,
    /// Only when the architecture has drifted from the plan so that the later phases
    /// no longer fit it (not something a follow-up task in this phase fixes): what
    /// drifted. The rest of the plan is then re-planned.
    #[serde(default)]
    deviation: Option<String>,
    /// What you looked at: files, diffs, command outputs.
    #[serde(default)]
    looked_at: Vec<String>,
}

/// The debugger's form.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct DebugForm {
    /// `completed` when you found the cause (fixed or not), `failed` when you could
    /// not find it, `blocked` when a decision outside the task is needed.
    status: Outcome,
    /// What you found, in a few sentences.
    summary: String,
    /// What is wrong and why, with what shows it (commands, lines).
    analysis: String,
    /// The root cause, when you found it.
    #[serde(default)]
    root_cause: Option<String>,
    /// Whether you changed the code to fix it.
    #[serde(default)]
    fixed: bool,
    /// Each check you ran after a fix, named by its exact command.
    #[serde(default)]
    verification: Vec<VerificationResult>,
}

/// The Architecture Designer's form when consulted about a task.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct ConsultForm {
    /// `retry`: one more executor attempt, guided by the advice; `stop`: the task
    /// ends, and the advice says what a person must decide or change.
    decision: ConsultDecision,
    /// Concretely what to do differently (retry) or to decide (stop).
    advice: String,
}

/// A Compactor's form.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
struct CompactForm {
    /// The summary that replaces the messages in the agent's context (Markdown).
    summary: String,
}

/// What an agent's form is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    /// An executor's.
    Task,
    /// A reviewer's.
    Review,
    /// The Architecture Designer's review of a phase.
    Milestone,
    /// A debugger's.
    Debugging,
    /// The Architecture Designer consulted about a task.
    Consult,
    /// A Compactor's summary.
    Compaction,
    /// The ExperienceMiner's proposals.
    Mining,
    /// The Main Agent's proposal of the project's profile.
    Profile,
}

impl Output {
    /// The output of `agent`; `consulted` when it is the Architecture Designer asked
    /// about a task rather than reviewing a milestone.
    pub fn of(agent: AgentType, consulted: bool) -> Output {
        match agent {
            AgentType::ArchitectureDesigner if consulted => Output::Consult,
            AgentType::ArchitectureDesigner => Output::Milestone,
            AgentType::Reviewer => Output::Review,
            AgentType::Debugger => Output::Debugging,
            AgentType::Compactor => Output::Compaction,
            AgentType::ExperienceMiner => Output::Mining,
            _ => Output::Task,
        }
    }
}

fn description(output: Output) -> &'static str {
    match output {
        Output::Review => "Hand back your review: the decision, why, and for changes_requested the findings (file, line, what to change). Call it once, as your last action.",
        Output::Milestone => "Hand back the phase's review: the decision, why, the findings and the follow-up tasks they need. Call it once, as your last action.",
        Output::Debugging => "Hand back what you found: the analysis, the root cause, whether you fixed it, and the checks you ran after the fix. Call it once, as your last action.",
        Output::Consult => "Hand back your advice: retry (with what the executor must do differently) or stop (with what a person must decide). Call it once, as your last action.",
        Output::Compaction => "Hand back the summary of the messages, written for the agent to carry on from it. Call it once, as your last action.",
        Output::Mining => "Hand back what is worth remembering: memories (user, project, feedback, reference), skill drafts (kind skill, target skill:<name>) and corrections (kind patch, target skill:<name> or rules:<path>, the whole corrected text as body). An empty list when nothing is. Call it once, as your last action.",
        Output::Profile => "Hand back the project's profile: each field you can tell from the scan and the files you were shown. Leave out a field you cannot tell rather than guess. Call it once, as your last action.",
        Output::Task => "Hand back the task's result: its status, what you did and the checks you ran. The files you changed are known from your tool calls.",
    }
}

/// The `submit_result` tool for an agent type (not consulted).
pub fn tool(agent: AgentType) -> ToolSpec {
    tool_for(Output::of(agent, false))
}

/// The `submit_result` tool for an output.
pub fn tool_for(output: Output) -> ToolSpec {
    let mut schema = match output {
        Output::Task => schemars::schema_for!(TaskForm),
        Output::Review => schemars::schema_for!(ReviewForm),
        Output::Milestone => schemars::schema_for!(MilestoneForm),
        Output::Debugging => schemars::schema_for!(DebugForm),
        Output::Consult => schemars::schema_for!(ConsultForm),
        Output::Compaction => schemars::schema_for!(CompactForm),
        Output::Mining => schemars::schema_for!(air_proto::memory::MinerOutput),
        Output::Profile => schemars::schema_for!(air_proto::project_profile::ProposalForm),
    }
    .to_value();
    air_proto::tool::compact_schema(&mut schema);
    if let Some(o) = schema.as_object_mut() {
        o.remove("description");
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

/// What the agent did through its tools, as airsd answered: the commands it ran and
/// the files its calls changed.
#[derive(Clone, Debug, Default)]
pub struct Seen {
    pub ran: Vec<Ran>,
    /// The task's changed files: the earlier agents' and this one's.
    pub changed: Vec<String>,
    /// The files this agent's own calls changed.
    pub own: Vec<String>,
}

impl Seen {
    /// Notes a file the task's earlier agents changed (once).
    pub fn earlier(&mut self, path: &str) {
        if !path.is_empty() && !self.changed.iter().any(|p| p == path) {
            self.changed.push(path.to_string());
        }
    }

    /// Notes a file this agent's call changed (once).
    pub fn changed(&mut self, path: &str) {
        self.earlier(path);
        if !path.is_empty() && !self.own.iter().any(|p| p == path) {
            self.own.push(path.to_string());
        }
    }
}

/// Checks that each verification reported as passed is backed by a command this
/// agent ran that exited 0 — named by its command text or cited by its
/// `command_run_id` — and ties the two together (D-041: report the commands actually
/// run, never a check that did not run).
fn check_verification(verification: &mut [VerificationResult], ran: &[Ran]) -> Result<(), String> {
    use air_proto::gate::{compare, Match, Reading};
    for (i, v) in verification.iter_mut().enumerate() {
        if v.status != VerificationStatus::Passed {
            continue;
        }
        let cited = v.evidence_refs.iter().flatten().collect::<Vec<_>>();
        let is_cited = |r: &Ran| {
            cited
                .iter()
                .any(|c| !r.command_run_id.is_empty() && c.ends_with(&r.command_run_id))
        };
        let how = |r: &Ran| {
            if is_cited(r) || r.command.trim() == v.name.trim() {
                Match::Runs
            } else {
                compare(&r.command, Some(""), &v.name, &Reading::default())
            }
        };
        let runs: Vec<(&Ran, Match)> = ran
            .iter()
            .map(|r| (r, how(r)))
            .filter(|(_, m)| *m != Match::Unrelated)
            .collect();
        // The latest run of the check itself, and whether a run of its program that
        // passed came after it.
        let at = runs.iter().rposition(|(_, m)| *m == Match::Runs);
        let passed_after = |from: usize| {
            runs[from..]
                .iter()
                .any(|(r, m)| *m != Match::Runs && r.exit_code == Some(0))
        };
        let r = match at {
            Some(k) if runs[k].0.exit_code == Some(0) => runs[k].0,
            Some(k) if !passed_after(k + 1) => {
                let r = runs[k].0;
                return Err(match r.exit_code {
                    Some(code) => format!(
                        "submit_result at `verification[{i}]`: `{}` is reported passed, but it exited {code} when you last ran it; report it failed, or fix the cause and run it again",
                        v.name
                    ),
                    None => format!(
                        "submit_result at `verification[{i}]`: `{}` is reported passed, but it did not run to its end when you last ran it; run it again",
                        v.name
                    ),
                });
            }
            // A wrapped run (`| tail`, `-v`) is airsd's gate to judge, which reads it
            // as the language profiles do.
            _ if !runs.is_empty() => continue,
            _ => {
                return Err(format!(
                    "submit_result at `verification[{i}]`: `{}` is reported passed, but no command you ran shows it; run it with shell_run (wrapped as you like) or cite its command_run_id",
                    v.name
                ))
            }
        };
        let reference = format!("command-run:{}", r.command_run_id);
        let refs = v.evidence_refs.get_or_insert_with(Vec::new);
        if !refs.iter().any(|c| c.ends_with(r.command_run_id.as_str())) {
            refs.push(reference);
        }
    }
    Ok(())
}

/// An evidence reference airsd's records support, or one the worker derives from the
/// structured answer.
fn evidence(
    n: usize,
    kind: EvidenceKind,
    reference: String,
    claim: String,
    evidence_type: Option<EvidenceType>,
) -> EvidenceRef {
    EvidenceRef {
        id: format!("ev-{}", n + 1),
        kind,
        reference,
        location: None,
        claim,
        evidence_type,
    }
}

/// Evidence that a check passed: a command that failed cannot be it.
fn of_a_pass(kind: Option<EvidenceType>) -> bool {
    use EvidenceType::*;
    matches!(kind, Some(BuildPass | TestPass | SmokeTest | DeployVerify))
}

/// The agent's evidence, each pointed at what it names: a command it ran becomes
/// `command-run:<id>`. Evidence of a pass that cites a command that failed is
/// refused, naming it.
/// The commands airsd ran for one tool call, from its answer: a `shell_run`'s (its
/// command from the call), and each of the `steps` of a `cpp_*` call.
pub fn runs_in(input: &Value, output: &Value) -> Vec<Ran> {
    let ran = |command: Option<&str>, v: &Value| {
        let id = v.get("command_run_id").and_then(Value::as_str)?;
        Some(Ran {
            command: command
                .or_else(|| v.get("command").and_then(Value::as_str))?
                .to_string(),
            exit_code: v
                .get("exit_code")
                .and_then(Value::as_i64)
                .and_then(|c| i32::try_from(c).ok()),
            command_run_id: id.to_string(),
        })
    };
    match output.get("steps").and_then(Value::as_array) {
        Some(steps) => steps.iter().filter_map(|s| ran(None, s)).collect(),
        None => ran(input.get("command").and_then(Value::as_str), output)
            .into_iter()
            .collect(),
    }
}

fn claimed(items: Vec<Claimed>, ran: &[Ran], completed: bool) -> Result<Vec<EvidenceRef>, String> {
    items
        .into_iter()
        .enumerate()
        .map(|(n, c)| {
            let r = c.reference.trim();
            let id = r.strip_prefix("command-run:").unwrap_or(r);
            let command = ran.iter().rev().find(|x| {
                (!x.command_run_id.is_empty() && x.command_run_id == id) || x.command.trim() == r
            });
            let (kind, reference) = match command {
                Some(x) if completed && of_a_pass(c.evidence_type) && x.exit_code != Some(0) => {
                    return Err(format!(
                        "submit_result at `evidence[{n}]`: `{}` {}, so it is not evidence of {}; fix the cause and run it again, or report the task failed",
                        x.command,
                        match x.exit_code {
                            Some(code) => format!("exited {code}"),
                            None => "did not finish".to_string(),
                        },
                        c.evidence_type.map(EvidenceType::as_str).unwrap_or_default()
                    ))
                }
                Some(x) => (
                    EvidenceKind::CommandRun,
                    format!("command-run:{}", x.command_run_id),
                ),
                None if r.starts_with("artifact") => {
                    (EvidenceKind::ArtifactExcerpt, r.to_string())
                }
                None => (EvidenceKind::Message, r.to_string()),
            };
            Ok(evidence(n, kind, reference, c.claim, c.evidence_type))
        })
        .collect()
}

fn form<T: serde::de::DeserializeOwned>(input: &Value) -> Result<T, String> {
    serde_path_to_error::deserialize(input).map_err(|e| {
        let path = e.path().to_string();
        format!("submit_result at `{path}`: {}", e.inner())
    })
}

fn said(what: &str, text: &str) -> Result<(), String> {
    if text.trim().is_empty() {
        Err(format!("submit_result at `{what}`: it is empty"))
    } else {
        Ok(())
    }
}

/// The JSON object a plain answer holds: the whole text, or the first `{` to the last
/// `}` (inside a fenced block or after a sentence).
pub fn json_in(text: &str) -> Option<Value> {
    let (start, end) = (text.find('{')?, text.rfind('}')?);
    let v: Value = serde_json::from_str(text.get(start..=end)?).ok()?;
    v.is_object().then_some(v)
}

/// Reads a submission into the WorkerResult airsd expects, or says what is wrong.
/// `seen` is what this agent did through its tools.
pub fn accept(
    agent: AgentType,
    task_id: &str,
    agent_id: &str,
    input: &Value,
    seen: &Seen,
) -> Result<WorkerResult, String> {
    accept_as(
        Output::of(agent, false),
        agent,
        task_id,
        agent_id,
        input,
        seen,
    )
}

/// [`accept`] for an agent whose output is `output`.
pub fn accept_as(
    output: Output,
    agent: AgentType,
    task_id: &str,
    agent_id: &str,
    input: &Value,
    seen: &Seen,
) -> Result<WorkerResult, String> {
    let new = |status, summary: String| {
        let mut r = WorkerResult::new(task_id, agent_id, agent, status, summary);
        r.changed_files = seen.changed.clone();
        r
    };
    let result = match output {
        Output::Task => {
            let mut f: TaskForm = form(input)?;
            said("summary", &f.summary)?;
            check_verification(&mut f.verification, &seen.ran)?;
            let mut r = new(f.status.status(), f.summary);
            r.verification = f.verification;
            r.risks = f.risks;
            r.evidence_refs = claimed(f.evidence, &seen.ran, f.status == Outcome::Completed)?;
            if let Some(why) = f.explanation.filter(|w| !w.trim().is_empty()) {
                let n = r.evidence_refs.len();
                r.evidence_refs.push(evidence(
                    n,
                    EvidenceKind::StructuredResult,
                    "result:explanation".into(),
                    why,
                    Some(EvidenceType::Explanation),
                ));
            }
            r
        }
        Output::Review | Output::Milestone => {
            let (decision, summary, findings, follow_ups, looked_at, deviation) =
                if output == Output::Review {
                    let f: ReviewForm = form(input)?;
                    (
                        f.decision,
                        f.summary,
                        f.findings,
                        Vec::new(),
                        f.looked_at,
                        None,
                    )
                } else {
                    let f: MilestoneForm = form(input)?;
                    (
                        f.decision,
                        f.summary,
                        f.findings,
                        f.follow_up_tasks,
                        f.looked_at,
                        f.deviation.filter(|d| !d.trim().is_empty()),
                    )
                };
            said("summary", &summary)?;
            if decision == ReviewDecision::ChangesRequested
                && findings.is_empty()
                && follow_ups.is_empty()
            {
                return Err("submit_result at `findings`: changes_requested needs at least one finding saying what to change and where".into());
            }
            let mut r = new(WorkerStatus::Completed, summary.clone());
            r.evidence_refs.push(evidence(
                0,
                EvidenceKind::StructuredResult,
                "result:decision".into(),
                summary,
                Some(EvidenceType::Explanation),
            ));
            for item in looked_at.into_iter().filter(|l| !l.trim().is_empty()) {
                let n = r.evidence_refs.len();
                r.evidence_refs.push(evidence(
                    n,
                    EvidenceKind::Message,
                    item,
                    "looked at in the review".into(),
                    None,
                ));
            }
            r.follow_up_tasks = follow_ups;
            r.result = serde_json::to_value(ReviewerOutput {
                decision,
                findings,
                deviation,
            })
            .map_err(|e| format!("submit_result: {e}"))?;
            r
        }
        Output::Debugging => {
            let mut f: DebugForm = form(input)?;
            said("summary", &f.summary)?;
            said("analysis", &f.analysis)?;
            check_verification(&mut f.verification, &seen.ran)?;
            let mut r = new(f.status.status(), f.summary);
            r.verification = f.verification;
            r.evidence_refs.push(evidence(
                0,
                EvidenceKind::StructuredResult,
                "result:analysis".into(),
                f.analysis.clone(),
                Some(EvidenceType::DebuggerAnalysis),
            ));
            r.result = serde_json::to_value(DebuggerOutput {
                analysis: f.analysis,
                root_cause: f.root_cause.filter(|c| !c.trim().is_empty()),
                fixed: f.fixed,
            })
            .map_err(|e| format!("submit_result: {e}"))?;
            r
        }
        Output::Consult => {
            let f: ConsultForm = form(input)?;
            said("advice", &f.advice)?;
            let mut r = new(WorkerStatus::Completed, f.advice.clone());
            r.evidence_refs.push(evidence(
                0,
                EvidenceKind::StructuredResult,
                "result:advice".into(),
                f.advice.clone(),
                Some(EvidenceType::Explanation),
            ));
            r.result = serde_json::to_value(ConsultOutput {
                decision: f.decision,
                advice: f.advice,
            })
            .map_err(|e| format!("submit_result: {e}"))?;
            r
        }
        Output::Compaction => {
            let f: CompactForm = form(input)?;
            said("summary", &f.summary)?;
            let mut r = new(WorkerStatus::Completed, "compacted".into());
            r.changed_files.clear();
            r.result =
                serde_json::to_value(air_proto::result::CompactorOutput { summary: f.summary })
                    .map_err(|e| format!("submit_result: {e}"))?;
            r
        }
        Output::Mining => {
            let f: air_proto::memory::MinerOutput = form(input)?;
            for (i, m) in f.memories.iter().enumerate() {
                said(&format!("memories[{i}].title"), &m.title)?;
                said(&format!("memories[{i}].body"), &m.body)?;
                if !m.kind.is_memory() && m.target.as_deref().is_none_or(|t| t.trim().is_empty()) {
                    return Err(format!(
                        "submit_result: memories[{i}].target is needed for a {}: `skill:<name>`{}",
                        m.kind.as_str(),
                        if m.kind == air_proto::memory::MemoryKind::Patch {
                            " or `rules:<path>`"
                        } else {
                            ""
                        }
                    ));
                }
            }
            let mut r = new(
                WorkerStatus::Completed,
                format!("proposed {} memories", f.memories.len()),
            );
            r.changed_files.clear();
            r.result = serde_json::to_value(f).map_err(|e| format!("submit_result: {e}"))?;
            r
        }
        // Loose acceptance: whatever came is read, field by field, and never refused.
        Output::Profile => {
            let read = air_proto::project_profile::read_proposal(input);
            let mut r = new(
                WorkerStatus::Completed,
                "proposed the project's profile".into(),
            );
            r.changed_files.clear();
            r.result = serde_json::to_value(read).map_err(|e| format!("submit_result: {e}"))?;
            r
        }
    };
    Ok(result)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    const ALL: [Output; 6] = [
        Output::Task,
        Output::Review,
        Output::Milestone,
        Output::Debugging,
        Output::Consult,
        Output::Profile,
    ];

    #[test]
    fn each_role_has_its_own_form_and_none_offers_cancelled() {
        for output in ALL {
            let schema = tool_for(output).input_schema;
            assert_eq!(schema["type"], "object", "{output:?}");
            assert_eq!(schema["additionalProperties"], false, "{output:?}");
            let text = schema.to_string();
            assert!(!text.contains("cancelled"), "{output:?} offers cancelled");
            assert!(
                !text.contains("changed_files"),
                "{output:?} asks for changed files"
            );
            assert!(
                !text.contains('§') && !text.contains("seed ") && !text.contains("D-0"),
                "{output:?} names an internal reference: {text}"
            );
            let missing = air_proto::tool::undescribed(&schema);
            assert!(missing.is_empty(), "{output:?}: undescribed {missing:?}");
            // Every reference resolves in the document the provider sees.
            for r in text.split("\"$ref\":\"#/$defs/").skip(1) {
                let name = r.split('"').next().unwrap();
                assert!(
                    schema["$defs"].get(name).is_some(),
                    "{output:?}: {name} missing from $defs"
                );
            }
        }
        let review = tool_for(Output::Review).input_schema;
        assert!(review["required"]
            .as_array()
            .unwrap()
            .contains(&json!("decision")));
        assert!(review["properties"].get("verification").is_none());
        assert!(review["properties"].get("status").is_none());
    }

    #[test]
    fn submissions_are_checked_and_errors_name_the_path() {
        let seen = Seen {
            changed: vec!["README.md".into()],
            ..Seen::default()
        };
        let ok = accept(
            AgentType::Executor,
            "T1",
            "a1",
            &json!({"status": "completed", "summary": "Added README.md"}),
            &seen,
        )
        .unwrap();
        assert_eq!(
            (ok.task_id.as_str(), ok.agent_type, ok.status),
            ("T1", AgentType::Executor, WorkerStatus::Completed)
        );
        assert_eq!(ok.changed_files, ["README.md"], "from the tool calls");
        for (input, error) in [
            (
                json!({"status": "done", "summary": "x"}),
                "submit_result at `status`",
            ),
            (
                json!({"status": "cancelled", "summary": "x"}),
                "submit_result at `status`",
            ),
            (
                json!({"status": "completed", "summary": "x", "colour": 1}),
                "unknown field `colour`",
            ),
            (
                json!({"status": "completed", "summary": "x", "changed_files": ["a"]}),
                "unknown field `changed_files`",
            ),
            (
                json!({"status": "completed", "summary": " "}),
                "`summary`: it is empty",
            ),
        ] {
            let e = accept(AgentType::Executor, "T1", "a1", &input, &seen).unwrap_err();
            assert!(e.contains(error), "{input}: {e}");
        }
        let e = accept(
            AgentType::Reviewer,
            "T1",
            "r1",
            &json!({"decision": "maybe", "summary": "x"}),
            &seen,
        )
        .unwrap_err();
        assert!(e.starts_with("submit_result at `decision`"), "{e}");
        let e = accept(
            AgentType::Reviewer,
            "T1",
            "r1",
            &json!({"decision": "changes_requested", "summary": "x"}),
            &seen,
        )
        .unwrap_err();
        assert!(e.contains("needs at least one finding"), "{e}");
    }

    #[test]
    fn a_review_carries_its_decision_findings_and_derived_explanation() {
        let r = accept(
            AgentType::Reviewer,
            "T1",
            "r1",
            &json!({"decision": "changes_requested", "summary": "The empty case is wrong.",
                "findings": [{"file": "a.py", "line": 3, "summary": "return {} for an empty string"}],
                "looked_at": ["a.py"]}),
            &Seen::default(),
        )
        .unwrap();
        assert_eq!(r.status, WorkerStatus::Completed);
        let output: ReviewerOutput = serde_json::from_value(r.result.clone()).unwrap();
        assert_eq!(output.decision, ReviewDecision::ChangesRequested);
        assert_eq!(output.findings[0].file.as_deref(), Some("a.py"));
        assert_eq!(
            r.evidence_refs[0].evidence_type,
            Some(EvidenceType::Explanation)
        );
        assert_eq!(r.evidence_refs[1].reference, "a.py");
        let d = accept(
            AgentType::Debugger,
            "T1",
            "d1",
            &json!({"status": "completed", "summary": "A typo.", "analysis": "helo, not hello", "fixed": false}),
            &Seen::default(),
        )
        .unwrap();
        assert_eq!(
            d.evidence_refs[0].evidence_type,
            Some(EvidenceType::DebuggerAnalysis)
        );
        let c = accept_as(
            Output::Consult,
            AgentType::ArchitectureDesigner,
            "T1",
            "ad1",
            &json!({"decision": "stop", "advice": "The interface is frozen; a person must decide."}),
            &Seen::default(),
        )
        .unwrap();
        assert_eq!(c.result["decision"], "stop");
    }

    #[test]
    fn a_passed_check_must_be_a_command_that_ran_and_exited_0() {
        let seen = Seen {
            ran: vec![
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
            ],
            changed: vec!["a.rs".into()],
            own: vec!["a.rs".into()],
        };
        let submit = |v: serde_json::Value| {
            accept(
                AgentType::Executor,
                "T1",
                "a1",
                &json!({"status": "completed", "summary": "done", "verification": v,
                    "evidence": [{"evidence_type": "test_pass", "ref": "c1", "claim": "the tests pass"}]}),
                &seen,
            )
        };
        let r = submit(json!([{"name": "cargo test", "status": "passed"}])).unwrap();
        assert_eq!(
            r.verification[0].evidence_refs,
            Some(vec!["command-run:c1".to_string()])
        );
        assert_eq!(r.evidence_refs[0].reference, "command-run:c1");
        assert_eq!(r.evidence_refs[0].kind, EvidenceKind::CommandRun);
        let r = submit(json!([{"name": "unit tests", "status": "passed", "evidence_refs": ["command-run:c1"]}])).unwrap();
        assert_eq!(
            r.verification[0].evidence_refs,
            Some(vec!["command-run:c1".to_string()])
        );
        let e = submit(json!([{"name": "cargo clippy", "status": "passed"}])).unwrap_err();
        assert!(e.contains("it exited 1 when you last ran it"), "{e}");
        // Failed as written, then passed wrapped as models run it: airsd's gate
        // judges the wrapped run.
        let mut wrapped = seen.clone();
        wrapped.ran.push(Ran {
            command: "cargo clippy -q 2>&1 | tail -20".into(),
            exit_code: Some(0),
            command_run_id: "c3".into(),
        });
        let ok = |v: serde_json::Value, seen: &Seen| {
            accept(
                AgentType::Executor,
                "T1",
                "a1",
                &json!({"status": "completed", "summary": "done", "verification": v}),
                seen,
            )
        };
        assert!(ok(
            json!([{"name": "cargo clippy", "status": "passed"}]),
            &wrapped
        )
        .is_ok());
        let e = submit(json!([{"name": "ctest", "status": "passed"}])).unwrap_err();
        assert!(e.contains("no command you ran shows it"), "{e}");
        // A failed check needs no backing: it is honest as it is.
        assert!(submit(json!([{"name": "ctest", "status": "failed"}])).is_ok());
        // A pass's evidence cannot cite a run that failed.
        let e = accept(
            AgentType::Executor,
            "T1",
            "a1",
            &json!({"status": "completed", "summary": "done",
                "evidence": [{"evidence_type": "build_pass", "ref": "c2", "claim": "it builds"}]}),
            &seen,
        )
        .unwrap_err();
        assert!(
            e.contains("`cargo clippy` exited 1, so it is not evidence of build_pass"),
            "{e}"
        );
    }

    #[test]
    fn a_profile_is_never_refused_and_a_plain_json_answer_is_found() {
        let seen = Seen::default();
        let r = accept_as(
            Output::Profile,
            AgentType::Main,
            "project-profile",
            "main-profile",
            &json!({"languages": "Go", "build": [1, {"x": 2}], "extra": true}),
            &seen,
        )
        .unwrap();
        let read: air_proto::project_profile::ProposalResult =
            serde_json::from_value(r.result).unwrap();
        assert_eq!(read.profile.languages, Some(vec!["Go".into()]));
        assert_eq!(read.profile.build, Some(vec!["1".into()]));
        assert_eq!(read.notes.len(), 2, "{:?}", read.notes);
        assert_eq!(
            json_in("Here:\n```json\n{\"test\": [\"go test ./...\"]}\n```\nDone."),
            Some(json!({"test": ["go test ./..."]}))
        );
        assert_eq!(json_in("no json here"), None);
        assert_eq!(json_in("{not json}"), None);
        assert_eq!(json_in("[1, 2]"), None);
    }
}
