//! The Architecture Designer's planning session, the rules both sides share: its
//! phases (`discussing` → `proposing` → `confirmed`, back to `discussing` when the
//! user asks for changes), which tools each phase allows (the designer never writes:
//! airsd writes the confirmed plan), the questions it asks the user, and the check a
//! proposal passes before the user sees it — the plan compiler of `air plan check`.

use serde::{Deserialize, Serialize};

wire_enum! {
    /// Where a planning session is.
    pub enum PlanningPhase {
        /// Settling the requirements with the user: questions, no proposal yet.
        Discussing = "discussing",
        /// The architecture and the task graph proposed, the user's answer awaited.
        Proposing = "proposing",
        /// The user confirmed: airsd writes the plan and the run starts.
        Confirmed = "confirmed",
        /// The requirement changed mid-run: the designer says what the change is
        /// (seed 001 §14, phase 1), before airsd works out what it impacts.
        Classifying = "classifying",
    }
}

/// What moves a planning session.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlanningMove {
    /// The designer stated the requirements it settled and the user agreed, or the
    /// user said to go ahead.
    Settled,
    /// The user asked for changes to the proposal.
    ChangesAsked,
    /// The user rejected the proposal: the discussion starts again.
    Rejected,
    /// The user confirmed the proposal.
    Confirmed,
}

impl PlanningPhase {
    /// The phase after `m`, or why `m` cannot happen here (naming both).
    pub fn after(self, m: PlanningMove) -> Result<PlanningPhase, String> {
        use PlanningMove as M;
        use PlanningPhase as P;
        Ok(match (self, m) {
            (P::Discussing, M::Settled) => P::Proposing,
            (P::Proposing, M::ChangesAsked | M::Rejected) => P::Discussing,
            (P::Proposing, M::Confirmed) => P::Confirmed,
            (phase, m) => {
                return Err(format!(
                    "a planning session cannot take {m:?} while {}",
                    phase.as_str()
                ))
            }
        })
    }
}

/// The project tools the designer reads with, in every phase.
pub const READ_TOOLS: &[&str] = &["fs.read", "fs.glob", "fs.grep", "git.status", "git.diff"];

/// The questions tool (discussing).
pub const ASK_USER: &str = "ask_user";
/// Stating the settled requirements (discussing).
pub const SETTLE: &str = "settle_requirements";
/// The proposal tool (proposing).
pub const PROPOSE: &str = "propose_plan";
/// Saying what a requirement change is (classifying).
pub const CLASSIFY: &str = "classify_change";

/// The designer's own tools in `phase`, beside [`READ_TOOLS`].
pub fn phase_tools(phase: PlanningPhase) -> &'static [&'static str] {
    match phase {
        PlanningPhase::Discussing => &[ASK_USER, SETTLE],
        PlanningPhase::Proposing => &[PROPOSE],
        PlanningPhase::Confirmed => &[],
        PlanningPhase::Classifying => &[CLASSIFY],
    }
}

/// Why `tool` is refused to the designer in `phase`, or `None` when it may call it.
/// It never gets a write or a command: the confirmed plan is airsd's to write.
pub fn refusal(phase: PlanningPhase, tool: &str) -> Option<String> {
    if READ_TOOLS.contains(&tool) || phase_tools(phase).contains(&tool) {
        return None;
    }
    Some(match tool {
        PROPOSE if phase == PlanningPhase::Discussing => format!(
            "`{PROPOSE}` is refused while discussing: settle the requirements with the user first ({ASK_USER}, then {SETTLE})"
        ),
        ASK_USER | SETTLE if phase == PlanningPhase::Proposing => format!(
            "`{tool}` is refused while a proposal waits for the user's answer"
        ),
        _ if phase == PlanningPhase::Classifying => format!(
            "`{tool}` is refused: say what the change is first ({CLASSIFY}); airsd then works out what it impacts and asks you to re-plan that part"
        ),
        _ if phase == PlanningPhase::Confirmed => {
            format!("`{tool}` is refused: the plan is confirmed, and airsd writes it")
        }
        _ => format!(
            "`{tool}` is not allowed for the Architecture Designer: it reads and proposes; airsd writes the confirmed plan"
        ),
    })
}

pub use crate::conversation::{is_planning, planning_turn_id, PLAN_PREFIX};

/// How long one planning turn may take, and how many model turns: it reads the
/// project and then asks, states or proposes.
pub const PLANNING_MAX_TURNS: u32 = 40;

/// The task of the `n`th planning turn, in `phase`, about `requirement` (the user's
/// words). What was said since is the turn's notes.
pub fn planning_spec(
    n: usize,
    phase: PlanningPhase,
    requirement: &str,
    message_id: Option<&str>,
) -> crate::task::TaskSpec {
    let title = match phase {
        PlanningPhase::Discussing => "Discuss the requirement",
        PlanningPhase::Proposing => "Propose the architecture and the plan",
        PlanningPhase::Confirmed => "Plan confirmed",
        PlanningPhase::Classifying => "Classify the requirement change",
    };
    let mut spec = crate::conversation::turn_spec(n, title, requirement, message_id, &[]);
    spec.id = planning_turn_id(n);
    spec.context_refs
        .artifacts
        .get_or_insert_with(Vec::new)
        .push(format!("{PHASE_REF}{}", phase.as_str()));
    spec.constraints.max_turns = PLANNING_MAX_TURNS;
    spec.constraints.soft_timeout_ms = crate::plan::DEFAULT_SOFT_TIMEOUT_MS;
    spec.constraints.hard_timeout_ms = crate::plan::DEFAULT_HARD_TIMEOUT_MS;
    spec
}

/// How a planning turn names its phase among its context refs.
pub const PHASE_REF: &str = "planning-phase:";

/// The phase a planning turn works in, as its task says; `None` for any other task.
pub fn phase_of(spec: &crate::task::TaskSpec) -> Option<PlanningPhase> {
    if !is_planning(&spec.id) {
        return None;
    }
    spec.context_refs
        .artifacts
        .iter()
        .flatten()
        .find_map(|a| a.strip_prefix(PHASE_REF))
        .and_then(|p| PlanningPhase::ALL.iter().copied().find(|x| x.as_str() == p))
        .or(Some(PlanningPhase::Discussing))
}

/// What `settle_requirements` takes: the requirements the discussion settled, for the
/// user to agree to (kept in `.air/shared/plan/requirements.md` once confirmed).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Settle {
    /// Each requirement in one sentence the user can check, the user's own decisions
    /// among them.
    pub requirements: Vec<String>,
    /// True only when the user's last words agreed to the requirements you stated
    /// last (the same ones, restated here): the plan is proposed next.
    #[serde(default)]
    pub user_agreed: bool,
}

/// The most requirements stated at once.
pub const MAX_REQUIREMENTS: usize = 40;

impl Settle {
    /// The problems of a statement, each naming its field; empty when it can be shown.
    pub fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.requirements.is_empty() || self.requirements.len() > MAX_REQUIREMENTS {
            out.push(format!(
                "requirements: between 1 and {MAX_REQUIREMENTS}, not {}",
                self.requirements.len()
            ));
        }
        for (i, r) in self.requirements.iter().enumerate() {
            if r.trim().is_empty() {
                out.push(format!("requirements[{i}]: must not be empty"));
            }
        }
        out
    }
}

/// How a planning turn ended (its WorkerResult's `result`): what it asked, stated or
/// proposed (each accepted by airsd when it was called), and what it said.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PlanningTurn {
    pub asked: Option<AskUser>,
    pub settled: Option<Settle>,
    pub proposal: Option<Proposal>,
    /// What a requirement change is (a re-plan's first turn).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub classified: Option<ChangeDescription>,
    /// The designer's words to the user.
    #[serde(default)]
    pub answer: String,
}

wire_enum! {
    /// The user's answer to a proposal.
    pub enum PlanDecision {
        /// Write the plan (and run it, unless asked not to).
        Confirm = "confirm",
        /// Change what the note says: the discussion goes on.
        Change = "change",
        /// Not this: the discussion starts again.
        Reject = "reject",
    }
}

impl PlanDecision {
    /// The move it makes.
    pub fn planning_move(self) -> PlanningMove {
        match self {
            PlanDecision::Confirm => PlanningMove::Confirmed,
            PlanDecision::Change => PlanningMove::ChangesAsked,
            PlanDecision::Reject => PlanningMove::Rejected,
        }
    }
}

/// Whether a tool is one of the designer's own (airsd answers it itself).
pub fn is_designer_tool(tool: &str) -> bool {
    matches!(tool, ASK_USER | SETTLE | PROPOSE | CLASSIFY)
}

fn definition(
    name: &str,
    description: &str,
    input_schema: serde_json::Value,
) -> crate::tool::ToolDefinition {
    crate::tool::ToolDefinition {
        name: name.to_string(),
        version: 1,
        description: description.to_string(),
        input_schema,
        output_schema: serde_json::json!({"type": "object"}),
        category: crate::tool::ToolCategory::Project,
        permissions: crate::tool::ToolPermissions::default(),
        streaming: false,
    }
}

/// The designer's own tools in `phase`, as offered to it (the read tools come from
/// airsd's table).
pub fn designer_tools(phase: PlanningPhase) -> Vec<crate::tool::ToolDefinition> {
    let schema = |v: schemars::Schema| v.to_value();
    phase_tools(phase)
        .iter()
        .map(|&name| match name {
            ASK_USER => definition(
                ASK_USER,
                "Ask the user what the requirement leaves open: 1 to 8 questions at once, each with an `id` and one sentence, with `options` when there are few answers. Your turn ends with the call; the answers start your next turn. Ask only what the code and the requirement cannot tell you.",
                schema(schemars::schema_for!(AskUser)),
            ),
            SETTLE => definition(
                SETTLE,
                "State the requirements the discussion settled, one sentence each, for the user to agree to. Your turn ends with the call. When the user agrees you may propose the plan; `propose_plan` is refused until then. When the user's last words agreed to the requirements you stated, call it again with them and `user_agreed: true`.",
                schema(schemars::schema_for!(Settle)),
            ),
            CLASSIFY => definition(
                CLASSIFY,
                "Say what the requirement change is: its `scope` (implementation: only how something is done; internal_interface: an interface inside a module; external_interface: an interface other modules use; module_replacement: a module replaced; global_constraint: a rule every task must follow), the `affected_modules` (as the plan's contracts and paths name them), the `tasks` it touches directly (by id) and a `summary`. Your turn ends with the call: airsd works out from the contracts and the files which tasks the change impacts, stops and takes back the impacted work, and asks you to re-plan only that part.",
                schema(schemars::schema_for!(ChangeDescription)),
            ),
            _ => definition(
                PROPOSE,
                "Propose the architecture (summary, modules, decisions worth an ADR) and the task graph in air's plan format. airsd compiles the plan as `air plan check` does: a plan with errors is refused with each error as `proposed plan:LINE: field: message`, for you to fix and call again; the user sees only a plan that compiles. Markers the user wrote (`[no-screenshot]`) are kept on every task they apply to, at the end of its title. Your turn ends when the proposal is accepted.",
                schema(schemars::schema_for!(Proposal)),
            ),
        })
        .collect()
}

/// One question to the user.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Question {
    /// A short id the answer is given by (`storage`, `q1`).
    pub id: String,
    /// The question, one sentence the user can answer without the code.
    pub text: String,
    /// Answers to choose from, when there are few; the user may still write another.
    #[serde(default)]
    pub options: Vec<String>,
}

/// What `ask_user` takes: several questions at once.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AskUser {
    pub questions: Vec<Question>,
}

/// The most questions asked at once.
pub const MAX_QUESTIONS: usize = 8;

impl AskUser {
    /// The problems of a set of questions, each naming its field; empty when they
    /// can be asked.
    pub fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.questions.is_empty() || self.questions.len() > MAX_QUESTIONS {
            out.push(format!(
                "questions: between 1 and {MAX_QUESTIONS}, not {}",
                self.questions.len()
            ));
        }
        for (i, q) in self.questions.iter().enumerate() {
            if q.id.trim().is_empty() {
                out.push(format!("questions[{i}].id: must not be empty"));
            } else if self.questions[..i].iter().any(|p| p.id == q.id) {
                out.push(format!("questions[{i}].id: `{}` is asked twice", q.id));
            }
            if q.text.trim().is_empty() {
                out.push(format!("questions[{i}].text: must not be empty"));
            }
        }
        out
    }

    /// The questions `answers` leaves unanswered (an empty answer is none).
    pub fn unanswered<'a>(
        &'a self,
        answers: &std::collections::BTreeMap<String, String>,
    ) -> Vec<&'a Question> {
        self.questions
            .iter()
            .filter(|q| answers.get(&q.id).is_none_or(|a| a.trim().is_empty()))
            .collect()
    }
}

/// A module of the proposed architecture.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Module {
    pub name: String,
    /// What it is responsible for, in a sentence.
    pub responsibility: String,
}

/// A decision worth an ADR (`docs/ADR-<n>.md` once confirmed).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ArchitectureDecision {
    pub title: String,
    /// What forces the decision.
    pub context: String,
    /// What was decided, and what it costs.
    pub decision: String,
}

// How far a requirement change reaches, each wider than the one before (the scopes
// of seed 001 §12.2). Not a doc comment: it would reach the model in the schema.
wire_enum! {
    /// How far the change reaches, each wider than the one before.
    pub enum ChangeScope {
        Implementation = "implementation",
        InternalInterface = "internal_interface",
        ExternalInterface = "external_interface",
        ModuleReplacement = "module_replacement",
        GlobalConstraint = "global_constraint",
    }
}

/// What a requirement change is, as the designer classifies it when it re-plans.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ChangeDescription {
    pub scope: ChangeScope,
    /// The modules it touches.
    #[serde(default)]
    pub affected_modules: Vec<String>,
    /// The tasks it touches directly, by id, when you can tell.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tasks: Vec<String>,
    /// The change in a sentence or two.
    pub summary: String,
}

/// What is wrong with a classified change, each naming its field; `known`: the
/// graph's task ids.
pub fn change_problems(change: &ChangeDescription, known: &[String]) -> Vec<String> {
    let mut problems = Vec::new();
    if change.summary.trim().is_empty() {
        problems.push("summary: say what the change is in a sentence or two".to_string());
    }
    for t in &change.tasks {
        if !known.iter().any(|k| k == t) {
            problems.push(format!("tasks: no task `{t}` in the graph"));
        }
    }
    if change.affected_modules.iter().all(|m| m.trim().is_empty())
        && change.tasks.is_empty()
        && change.scope != ChangeScope::GlobalConstraint
    {
        problems.push(
            "affected_modules: name the modules the change touches (or the tasks, in `tasks`)"
                .to_string(),
        );
    }
    problems
}

/// What `propose_plan` takes: the architecture and the task graph.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Proposal {
    /// The architecture in a few sentences, for the user.
    pub summary: String,
    #[serde(default)]
    pub modules: Vec<Module>,
    #[serde(default)]
    pub decisions: Vec<ArchitectureDecision>,
    /// The plan in air's plan format (Markdown: phases, `Task <id>: <title>`
    /// headings, their fields and sections), with each task's interfaces.
    pub plan: String,
    /// When re-planning after a requirement change: what the change is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change: Option<ChangeDescription>,
}

/// How a re-planning turn names itself among its context refs.
pub const REPLAN_REF: &str = "planning-replan";

/// Whether a planning turn re-plans after a requirement change.
pub fn is_replan(spec: &crate::task::TaskSpec) -> bool {
    is_planning(&spec.id)
        && spec
            .context_refs
            .artifacts
            .iter()
            .flatten()
            .any(|a| a == REPLAN_REF)
}

/// The name a proposal's plan is compiled under (its errors name it).
pub const PROPOSED_PLAN: &str = "proposed plan";

/// Compiles a proposal's plan with the compiler of `air plan check`: the compiled
/// graph, or every error as `proposed plan:LINE: field: message`, which goes back to
/// the designer, never to the user.
#[cfg(feature = "plan")]
pub fn check_proposal(p: &Proposal) -> Result<crate::plan::Compiled, Vec<String>> {
    let mut problems = Vec::new();
    if p.summary.trim().is_empty() {
        problems.push("summary: say what the architecture is, for the user".to_string());
    }
    for (i, d) in p.decisions.iter().enumerate() {
        if d.title.trim().is_empty() || d.decision.trim().is_empty() {
            problems.push(format!(
                "decisions[{i}]: an ADR needs its title and its decision"
            ));
        }
    }
    match crate::plan::compile(PROPOSED_PLAN, &p.plan) {
        Ok(compiled) if problems.is_empty() => Ok(compiled),
        Ok(_) => Err(problems),
        Err(e) => {
            problems.extend(
                e.errors
                    .iter()
                    .map(|d| d.display(PROPOSED_PLAN).to_string()),
            );
            Err(problems)
        }
    }
}

/// The evidence the user opted out of in the requirement's words: each `[no-<type>]`
/// marker (`[no-screenshot]`, `[no-build-pass]`).
pub fn opted_out(requirement: &str) -> Vec<crate::task::EvidenceType> {
    let mut out = Vec::new();
    let mut rest = requirement;
    while let Some(at) = rest.find("[no-") {
        let tail = &rest[at + 4..];
        let Some(end) = tail.find(']') else { break };
        let name = tail[..end].trim().to_ascii_lowercase().replace('-', "_");
        if let Some(t) = crate::task::EvidenceType::parse(&name) {
            if !out.contains(&t) {
                out.push(t);
            }
        }
        rest = &tail[end..];
    }
    out
}

/// Every task of a compiled proposal that still requires evidence the user opted
/// out of (`[no-…]` in the requirement): the designer must keep the markers.
#[cfg(feature = "plan")]
pub fn markers_dropped(requirement: &str, compiled: &crate::plan::Compiled) -> Vec<String> {
    let opted = opted_out(requirement);
    let mut out = Vec::new();
    for t in &compiled.graph.tasks {
        for e in t.verification.evidence_types.iter().flatten() {
            if opted.contains(e) {
                out.push(format!(
                    "{}: the user asked for [no-{}]: end its title with that marker (or leave the evidence out with `evidence:`)",
                    t.id,
                    e.as_str().replace('_', "-")
                ));
            }
        }
    }
    out
}

/// The answers of `air plan new --answers FILE`: a YAML map from question id to
/// answer. A bad file is named by its line.
#[cfg(feature = "plan")]
pub fn answers_from_yaml(
    file: &str,
    text: &str,
) -> Result<std::collections::BTreeMap<String, String>, String> {
    let value: yaml_serde::Value = yaml_serde::from_str(text).map_err(|e| match e.location() {
        Some(at) => format!("{file}:{}: {e}", at.line()),
        None => format!("{file}: {e}"),
    })?;
    let Some(map) = value.as_mapping() else {
        return Err(format!(
            "{file}: answers are a map from question id to answer (`storage: sqlite`)"
        ));
    };
    let mut out = std::collections::BTreeMap::new();
    for (k, v) in map {
        let Some(id) = k.as_str() else {
            return Err(format!("{file}: a question id must be text, not {k:?}"));
        };
        let answer = match v {
            yaml_serde::Value::String(s) => s.clone(),
            yaml_serde::Value::Number(n) => n.to_string(),
            yaml_serde::Value::Bool(b) => b.to_string(),
            other => return Err(format!("{file}: `{id}`: an answer is text, not {other:?}")),
        };
        out.insert(id.to_string(), answer);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_phases_move_as_the_design_says_and_name_what_they_refuse() {
        use PlanningMove as M;
        use PlanningPhase as P;
        assert_eq!(P::Discussing.after(M::Settled), Ok(P::Proposing));
        assert_eq!(P::Proposing.after(M::ChangesAsked), Ok(P::Discussing));
        assert_eq!(P::Proposing.after(M::Rejected), Ok(P::Discussing));
        assert_eq!(P::Proposing.after(M::Confirmed), Ok(P::Confirmed));
        let e = P::Discussing.after(M::Confirmed).unwrap_err();
        assert!(e.contains("Confirmed") && e.contains("discussing"), "{e}");
        assert!(P::Confirmed.after(M::Settled).is_err());
    }

    #[test]
    fn each_phase_allows_its_tools_and_never_a_write() {
        use PlanningPhase as P;
        let e = refusal(P::Discussing, PROPOSE).unwrap();
        assert!(e.contains("settle the requirements"), "{e}");
        assert_eq!(refusal(P::Discussing, ASK_USER), None);
        assert_eq!(refusal(P::Proposing, PROPOSE), None);
        assert!(refusal(P::Proposing, ASK_USER).is_some());
        for &phase in P::ALL {
            assert_eq!(refusal(phase, "fs.read"), None);
            for write in ["fs.write", "fs.edit", "shell.run"] {
                assert!(refusal(phase, write).is_some(), "{write} while {phase:?}");
            }
        }
    }

    #[cfg(feature = "plan")]
    #[test]
    fn questions_are_checked_and_their_answers_counted() {
        let q = |id: &str, text: &str| Question {
            id: id.into(),
            text: text.into(),
            options: Vec::new(),
        };
        let ask = AskUser {
            questions: vec![
                q("storage", "Where are counts kept?"),
                q("storage", ""),
                q(" ", "?"),
            ],
        };
        let p = ask.problems().join("; ");
        assert!(
            p.contains("questions[1].id: `storage` is asked twice"),
            "{p}"
        );
        assert!(p.contains("questions[1].text"), "{p}");
        assert!(p.contains("questions[2].id"), "{p}");
        assert!(AskUser { questions: vec![] }.problems()[0].contains("between 1 and 8"));
        let ask = AskUser {
            questions: vec![q("a", "A?"), q("b", "B?")],
        };
        let answers = answers_from_yaml("answers.yaml", "a: sqlite\nb: ''\n").unwrap();
        let left: Vec<&str> = ask
            .unanswered(&answers)
            .iter()
            .map(|q| q.id.as_str())
            .collect();
        assert_eq!(left, ["b"]);
        let e = answers_from_yaml("answers.yaml", "a: [1, 2]\n").unwrap_err();
        assert!(e.contains("`a`: an answer is text"), "{e}");
        let e = answers_from_yaml("answers.yaml", "a: b: c\n").unwrap_err();
        assert!(e.starts_with("answers.yaml:1:"), "{e}");
    }

    #[cfg(feature = "plan")]
    #[test]
    fn the_users_no_markers_are_kept_on_every_task_they_apply_to() {
        use crate::task::EvidenceType as E;
        assert_eq!(
            opted_out("a login dialog [no-screenshot], fast [no-build-pass] [no-nonsense]"),
            [E::Screenshot, E::BuildPass]
        );
        let compiled = |plan: &str| crate::plan::compile("p.md", plan).unwrap();
        let build = "## Task T1: Login dialog\n\n- category: build\n\nDraw it.\n";
        let dropped = markers_dropped("a login dialog [no-build-pass]", &compiled(build));
        assert_eq!(dropped.len(), 1, "{dropped:?}");
        assert!(
            dropped[0].starts_with("T1: the user asked for [no-build-pass]"),
            "{dropped:?}"
        );
        let kept = "## Task T1: Login dialog [no-build-pass]\n\n- category: build\n\nDraw it.\n";
        assert!(markers_dropped("a login dialog [no-build-pass]", &compiled(kept)).is_empty());
        // A gui task without its marker does not compile at all: it could never
        // complete.
        let gui = "## Task T1: Login dialog\n\n- category: gui\n\nDraw it.\n";
        assert!(crate::plan::compile("p.md", gui).is_err());
    }

    #[cfg(feature = "plan")]
    #[test]
    fn a_proposal_with_plan_errors_goes_back_with_each_by_line() {
        let proposal = |plan: &str| Proposal {
            summary: "A library and a CLI.".into(),
            modules: vec![],
            decisions: vec![],
            plan: plan.into(),
            change: None,
        };
        let good = "## Task T1: Count words\n\nCount them.\n\n## Task T2: CLI\n\n- depends_on: T1\n\nPrint them.\n";
        assert_eq!(
            check_proposal(&proposal(good)).unwrap().graph.tasks.len(),
            2
        );
        let bad = "## Task T1: Count words\n\n- depends_on: T9\n\nCount them.\n";
        let errors = check_proposal(&proposal(bad)).unwrap_err();
        assert!(
            errors
                .iter()
                .any(|e| e.starts_with("proposed plan:3:") && e.contains("T9")),
            "{errors:?}"
        );
    }
}
