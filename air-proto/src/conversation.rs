//! The conversation's rules that both sides share (D-005, D-016): the Main Agent's
//! states and the moves between them, the kinds of request a user message can be, and
//! how a message names its kind itself (`/ask`, `/direct`, `/task`, `/plan`). Pure:
//! the daemon runs the machine, clients show it.

use serde::{Deserialize, Serialize};

use crate::plan::{DEFAULT_MAX_TURNS, DEFAULT_RETRY_BUDGET};
use crate::task::{
    Constraints, ContextRefs, Contracts, ModelPolicy, TaskCategory, TaskScope, TaskSpec, TaskType,
    Verification,
};

/// What a conversation's run is called where a plan's file name would be.
pub const CONVERSATION_PLAN: &str = "(conversation)";

/// The id namespace of the Main Agent's turns, `main:<n>`: one turn a user message
/// (or a summary of delegated work). Plan ids cannot contain `:`, so a turn never
/// collides with a plan's task.
pub const TURN_PREFIX: &str = "main:";

/// The id of the `n`th turn (1-based).
pub fn turn_id(n: usize) -> String {
    format!("{TURN_PREFIX}{n}")
}

/// Whether `task_id` is `prefix` followed by a number: the conversation's ids, never
/// a plan's (a phase may be called `main`: its milestone review is
/// `main:milestone-1`, not a turn).
fn numbered(task_id: &str, prefix: &str) -> bool {
    task_id
        .strip_prefix(prefix)
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// Whether a task id is a turn of the Main Agent rather than work of the task graph.
pub fn is_turn(task_id: &str) -> bool {
    numbered(task_id, TURN_PREFIX)
}

/// The id namespace of the direct lane, `direct:<n>`: work done at once, in the
/// foreground, by an executor that answers in plain text (D-005's direct mode).
pub const DIRECT_PREFIX: &str = "direct:";

/// Whether a task id is work of the direct lane.
pub fn is_direct(task_id: &str) -> bool {
    numbered(task_id, DIRECT_PREFIX)
}

/// The id namespace of the Architecture Designer's planning turns, `plan:<n>`: one
/// turn each time the designer is to speak (a requirement to discuss, the user's
/// answers, a change asked for).
pub const PLAN_PREFIX: &str = "plan:";

/// The id of the `n`th planning turn (1-based).
pub fn planning_turn_id(n: usize) -> String {
    format!("{PLAN_PREFIX}{n}")
}

/// Whether a task id is a planning turn of the Architecture Designer.
pub fn is_planning(task_id: &str) -> bool {
    numbered(task_id, PLAN_PREFIX)
}

/// Whether what a task's agents write is part of the conversation: a turn of the
/// Main Agent, or work of the direct lane.
pub fn in_conversation(task_id: &str) -> bool {
    is_turn(task_id) || is_direct(task_id) || is_planning(task_id)
}

/// Whether a task id is a turn of an agent the user talks with (the Main Agent, or
/// the Architecture Designer planning), not work of the task graph.
pub fn is_any_turn(task_id: &str) -> bool {
    is_turn(task_id) || is_planning(task_id)
}

/// The id namespace of reviews the user asks for (`/review`): `review:<n>`, a
/// reviewer's look at the direct lane's latest work.
pub const REVIEW_PREFIX: &str = "review:";

/// Whether a message asks for a review of the direct lane's latest work (`/review`,
/// as a whole word at the start).
pub fn asks_review(message: &str) -> bool {
    let text = message.trim_start();
    text.strip_prefix("/review")
        .is_some_and(|rest| rest.chars().next().is_none_or(char::is_whitespace))
}

/// Whether a task id is a review the user asked for.
pub fn is_review(task_id: &str) -> bool {
    numbered(task_id, REVIEW_PREFIX)
}

/// The `n`th review the user asked for (`message`), of the direct lane's task `of`.
pub fn review_spec(n: usize, of: &str, message: &str, message_id: Option<&str>) -> TaskSpec {
    let mut spec = turn_spec(n, &format!("Review {of}"), message, message_id, &[]);
    spec.id = format!("{REVIEW_PREFIX}{n}");
    spec.task_type = TaskType::Review;
    spec.output_contract = TaskType::Review.output_contract();
    spec.context_refs.parent_task_results = Some(vec![of.to_string()]);
    spec
}

/// The task of the direct lane's `n`th request (1-based): the user's words as they
/// were sent, the plan's default limits, no retry, no required verification.
pub fn direct_spec(n: usize, message: &str, message_id: Option<&str>) -> TaskSpec {
    let mut spec = turn_spec(n, "Do what the user asked", message, message_id, &[]);
    spec.id = format!("{DIRECT_PREFIX}{n}");
    spec.constraints.max_turns = DEFAULT_MAX_TURNS;
    spec.constraints.soft_timeout_ms = crate::plan::DEFAULT_SOFT_TIMEOUT_MS;
    spec.constraints.hard_timeout_ms = crate::plan::DEFAULT_HARD_TIMEOUT_MS;
    spec
}

/// How long one turn of the Main Agent may take, and how many model turns: a turn
/// answers or hands work on, it does not do the work.
pub const TURN_MAX_TURNS: u32 = 24;
pub const TURN_SOFT_TIMEOUT_MS: u64 = 5 * 60 * 1000;
pub const TURN_HARD_TIMEOUT_MS: u64 = 15 * 60 * 1000;

/// The task of one turn: `message` is the user's words as sent (a prefix such as
/// `/task` included: the worker reads the kind from it), or what to summarise; a
/// summary names the tasks it is about in `summarises`.
pub fn turn_spec(
    n: usize,
    title: &str,
    message: &str,
    message_id: Option<&str>,
    summarises: &[String],
) -> TaskSpec {
    TaskSpec {
        id: turn_id(n),
        task_type: TaskType::Execute,
        title: title.to_string(),
        description: message.to_string(),
        acceptance_criteria: Vec::new(),
        category: None,
        phase: None,
        scope: TaskScope::default(),
        contracts: Contracts::default(),
        dependencies: Vec::new(),
        verification: Verification::none(),
        constraints: Constraints {
            max_turns: TURN_MAX_TURNS,
            soft_timeout_ms: TURN_SOFT_TIMEOUT_MS,
            hard_timeout_ms: TURN_HARD_TIMEOUT_MS,
            retry_budget: 0,
            model_policy: ModelPolicy::SchedulerForced,
            model_id: None,
        },
        context_refs: ContextRefs {
            parent_task_results: (!summarises.is_empty()).then(|| summarises.to_vec()),
            artifacts: message_id.map(|m| vec![format!("{MESSAGE_REF}{m}")]),
            ..ContextRefs::default()
        },
        output_contract: TaskType::Execute.output_contract(),
    }
}

/// The tool a request for the user's confirmation of work handed on names, and the
/// prefix of its request id (`confirm:T1`).
pub const TASK_START: &str = "task.start";
pub const CONFIRM_PREFIX: &str = "confirm:";

/// How a summary turn's title begins (the rest names the tasks).
pub const SUMMARY_TITLE: &str = "Summarise ";

/// How the title of a turn that tells the user of an escalation begins (the rest
/// names the task); its description says what happened.
pub const ESCALATION_TITLE: &str = "Tell the user about ";

/// How a turn names the user message it answers among its context refs.
pub const MESSAGE_REF: &str = "message:";

/// The id of the user message a turn answers.
pub fn answered_message(spec: &TaskSpec) -> Option<&str> {
    spec.context_refs
        .artifacts
        .iter()
        .flatten()
        .find_map(|a| a.strip_prefix(MESSAGE_REF))
}

/// The tasks a summary turn is about; empty for a turn that answers a user message.
pub fn summarised(spec: &TaskSpec) -> &[String] {
    spec.context_refs
        .parent_task_results
        .as_deref()
        .unwrap_or_default()
}

/// One task the Main Agent hands to the scheduler (`simple_task`): written for an
/// executor that never saw the conversation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DelegatedTask {
    /// A short imperative title, e.g. "Add a --json flag to wc".
    pub title: String,
    /// What to change and why, with everything the user asked for: the executor sees
    /// only this, not the conversation.
    pub description: String,
    /// Checks that show the task done, each one sentence that can be verified.
    pub acceptance_criteria: Vec<String>,
    /// Project-relative files the change will likely touch.
    #[serde(default)]
    pub expected_files: Vec<String>,
    /// Commands that prove the change (build, tests), run from the project root.
    #[serde(default)]
    pub verify: Vec<String>,
    /// The kind of change, which sets the evidence its result must carry: logic
    /// (build and tests), build, config, docs (none), test, refactor, bugfix (a check
    /// failing before the fix); left out, what the change touches decides.
    #[serde(default)]
    pub category: Option<TaskCategory>,
}

impl DelegatedTask {
    /// The problems of a delegated task, each naming its field; empty when it can run.
    pub fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.title.trim().is_empty() {
            out.push("title: must not be empty".to_string());
        }
        if self.description.trim().is_empty() {
            out.push("description: must say what to change".to_string());
        }
        if self.acceptance_criteria.iter().all(|c| c.trim().is_empty()) {
            out.push("acceptance_criteria: at least one check that shows it done".to_string());
        }
        for (i, f) in self.expected_files.iter().enumerate() {
            if f.starts_with('/') || f.split('/').any(|part| part == "..") {
                out.push(format!(
                    "expected_files[{i}]: `{f}` must be a path inside the project, relative to its root"
                ));
            }
        }
        out
    }

    /// The task's spec under `id`, with the plan's default budgets.
    pub fn spec(&self, id: String) -> TaskSpec {
        let verify: Vec<String> = self
            .verify
            .iter()
            .map(|c| c.trim().to_string())
            .filter(|c| !c.is_empty())
            .collect();
        TaskSpec {
            id,
            task_type: TaskType::Execute,
            title: self.title.trim().to_string(),
            description: self.description.clone(),
            acceptance_criteria: self
                .acceptance_criteria
                .iter()
                .filter(|c| !c.trim().is_empty())
                .cloned()
                .collect(),
            category: self.category,
            phase: None,
            scope: TaskScope {
                expected_files: (!self.expected_files.is_empty())
                    .then(|| self.expected_files.clone()),
                ..TaskScope::default()
            },
            contracts: Contracts::default(),
            dependencies: Vec::new(),
            verification: Verification {
                required: !verify.is_empty(),
                commands: (!verify.is_empty()).then_some(verify),
                fallback_allowed: false,
                evidence_types: None,
                declared: None,
            },
            constraints: Constraints {
                max_turns: DEFAULT_MAX_TURNS,
                soft_timeout_ms: crate::plan::DEFAULT_SOFT_TIMEOUT_MS,
                hard_timeout_ms: crate::plan::DEFAULT_HARD_TIMEOUT_MS,
                retry_budget: DEFAULT_RETRY_BUDGET,
                model_policy: ModelPolicy::SchedulerForced,
                model_id: None,
            },
            context_refs: ContextRefs::default(),
            output_contract: TaskType::Execute.output_contract(),
        }
    }
}

/// A task the user wants stopped, as the Main Agent understood it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CancelTask {
    /// The task's id, as the session's task list shows it (e.g. T1).
    pub task_id: String,
    /// Why, in the user's words.
    pub reason: String,
}

/// A change of what the user asked for, as the Main Agent understood it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RequirementChange {
    /// What is now wanted instead, in one or two sentences.
    pub change: String,
    /// The tasks it touches, if any.
    #[serde(default)]
    pub task_ids: Vec<String>,
}

/// What a turn of the Main Agent ends with (its WorkerResult's `result`).
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MainResult {
    /// The kind of the message, named by its prefix or by the model.
    pub intent: Intent,
    /// The answer given in the conversation.
    pub answer: String,
    /// The task handed to the scheduler, for `simple_task`.
    pub task: Option<DelegatedTask>,
    /// Tasks the user asked to stop.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cancel: Vec<CancelTask>,
}

wire_enum! {
    /// Where the Main Agent is. It stays ready for the user: a message is taken in
    /// any state, and while delegated work runs it is `interrupting` until the
    /// message is dealt with.
    pub enum MainState {
        Idle = "IDLE",
        Classifying = "CLASSIFYING",
        Delegating = "DELEGATING",
        Confirming = "CONFIRMING",
        Executing = "EXECUTING",
        Summarizing = "SUMMARIZING",
        Interrupting = "INTERRUPTING",
    }
}

wire_enum! {
    /// What a user message asks for.
    pub enum Intent {
        /// A question or talk: answered in the conversation, with read-only tools.
        Chat = "chat",
        /// Work done at once in the foreground, streaming into the conversation.
        Direct = "direct",
        /// One task: a TaskSpec run by the scheduler (executor, reviewer, gates).
        SimpleTask = "simple_task",
        /// Work that needs a plan from the Architecture Designer.
        NeedsPlanning = "needs_planning",
    }
}

/// The prefixes that set a message's kind without asking the model.
pub const PREFIXES: &[(&str, Intent)] = &[
    ("/ask", Intent::Chat),
    ("/direct", Intent::Direct),
    ("/task", Intent::SimpleTask),
    ("/plan", Intent::NeedsPlanning),
];

/// The kind a message names itself by its prefix, and the message without it; `None`
/// when it names none (the model classifies it). A prefix counts only as a whole
/// word at the start (`/tasks` is not `/task`).
pub fn named_intent(message: &str) -> Option<(Intent, &str)> {
    let text = message.trim_start();
    PREFIXES.iter().find_map(|(prefix, intent)| {
        let rest = text.strip_prefix(prefix)?;
        match rest.chars().next() {
            None => Some((*intent, "")),
            Some(c) if c.is_whitespace() => Some((*intent, rest.trim_start())),
            Some(_) => None,
        }
    })
}

/// What the classifier tool takes from the model.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Classification {
    /// `chat`: a question or talk, answered here; `direct`: small work to do now,
    /// in the foreground; `simple_task`: one well-defined change, run as a checked
    /// task; `needs_planning`: work of several parts that needs a plan first.
    pub intent: Intent,
    /// Why, in one sentence.
    pub reason: String,
}

/// The kind of a message from the model's answer to the classifier: its
/// classification, or `chat` when it answered in plain text instead (never an error).
pub fn classified(answer: Option<&serde_json::Value>) -> (Intent, Option<String>) {
    match answer.and_then(|a| serde_json::from_value::<Classification>(a.clone()).ok()) {
        Some(c) => (c.intent, Some(c.reason)),
        None => (Intent::Chat, None),
    }
}

/// What moves the Main Agent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Move {
    /// The user sent a message.
    Message,
    /// Its kind is known.
    Classified(Intent),
    /// The answer (chat) or the delegated work's plan is ready; `confirm` when the
    /// permission mode wants the user to confirm before work starts.
    Ready { confirm: bool },
    /// The user confirmed (or the mode did).
    Confirmed,
    /// The user declined the work.
    Declined,
    /// The delegated work ended.
    WorkEnded,
    /// The answer or the summary is given.
    Answered,
}

impl MainState {
    /// The state after `m`, or why `m` cannot happen here (naming both).
    pub fn after(self, m: Move) -> Result<MainState, String> {
        use MainState::*;
        let next = match (self, m) {
            (Idle, Move::Message) => Classifying,
            // A message while work runs: dealt with beside it.
            (Executing, Move::Message) => Interrupting,
            (Interrupting, Move::Answered) => Executing,
            (Interrupting, Move::WorkEnded) => Summarizing,
            // A message while the agent answers or asks is taken next.
            (Classifying | Delegating | Confirming | Summarizing | Interrupting, Move::Message) => {
                self
            }
            (Classifying, Move::Classified(Intent::Chat)) => Idle,
            (Classifying, Move::Classified(_)) => Delegating,
            (Delegating, Move::Ready { confirm: true }) => Confirming,
            (Delegating, Move::Ready { confirm: false }) => Executing,
            (Confirming, Move::Confirmed) => Executing,
            (Confirming, Move::Declined) => Idle,
            (Executing, Move::WorkEnded) => Summarizing,
            (Summarizing, Move::Answered) => Idle,
            (Idle, Move::Answered) => Idle,
            (state, m) => {
                return Err(format!(
                    "the Main Agent cannot take {m:?} in state {}",
                    state.as_str()
                ))
            }
        };
        Ok(next)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn the_conversations_ids_are_never_a_plans() {
        assert!(is_turn("main:12") && is_direct("direct:3") && is_review("review:1"));
        for plan in [
            "main:milestone-1",
            "direct:fix-1-2",
            "review:",
            "main:1a",
            "T1",
        ] {
            assert!(
                !is_turn(plan) && !is_direct(plan) && !is_review(plan),
                "{plan}"
            );
        }
    }

    #[test]
    fn a_prefix_names_the_kind_only_as_a_whole_word() {
        assert_eq!(
            named_intent("/task add a --json flag"),
            Some((Intent::SimpleTask, "add a --json flag"))
        );
        assert_eq!(
            named_intent("  /direct\nfix it"),
            Some((Intent::Direct, "fix it"))
        );
        assert_eq!(named_intent("/plan"), Some((Intent::NeedsPlanning, "")));
        assert_eq!(named_intent("/ask why?"), Some((Intent::Chat, "why?")));
        assert_eq!(named_intent("/tasks please"), None);
        assert_eq!(named_intent("what does /task do?"), None);
    }

    #[test]
    fn plain_text_instead_of_a_classification_is_chat() {
        assert_eq!(classified(None), (Intent::Chat, None));
        assert_eq!(classified(Some(&json!("just words"))).0, Intent::Chat);
        assert_eq!(
            classified(Some(&json!({"intent": "maybe", "reason": "?"}))).0,
            Intent::Chat
        );
        assert_eq!(
            classified(Some(
                &json!({"intent": "simple_task", "reason": "one change"})
            )),
            (Intent::SimpleTask, Some("one change".into()))
        );
    }

    #[test]
    fn the_state_machine_moves_as_the_design_says_and_names_what_it_refuses() {
        use MainState::*;
        let run = |moves: &[Move]| moves.iter().try_fold(Idle, |s, m| s.after(*m)).unwrap();
        // A question: classified as chat, answered.
        assert_eq!(
            run(&[
                Move::Message,
                Move::Classified(Intent::Chat),
                Move::Answered
            ]),
            Idle
        );
        // A task in default mode: confirmed, run, interrupted by a question,
        // answered, ended, summarised.
        let task = [
            Move::Message,
            Move::Classified(Intent::SimpleTask),
            Move::Ready { confirm: true },
            Move::Confirmed,
            Move::Message,
            Move::Answered,
            Move::WorkEnded,
            Move::Answered,
        ];
        let mut s = Idle;
        let mut seen = vec![s];
        for m in task {
            s = s.after(m).unwrap();
            seen.push(s);
        }
        assert_eq!(
            seen,
            [
                Idle,
                Classifying,
                Delegating,
                Confirming,
                Executing,
                Interrupting,
                Executing,
                Summarizing,
                Idle
            ]
        );
        // Declined work goes back to idle; accept_edits skips the confirmation.
        assert_eq!(
            run(&[
                Move::Message,
                Move::Classified(Intent::Direct),
                Move::Ready { confirm: true },
                Move::Declined
            ]),
            Idle
        );
        assert_eq!(
            run(&[
                Move::Message,
                Move::Classified(Intent::Direct),
                Move::Ready { confirm: false }
            ]),
            Executing
        );
        let e = Idle.after(Move::Confirmed).unwrap_err();
        assert!(e.contains("Confirmed") && e.contains("IDLE"), "{e}");
        // Every state takes a message.
        for s in MainState::ALL {
            assert!(s.after(Move::Message).is_ok(), "{s:?}");
        }
    }
}
