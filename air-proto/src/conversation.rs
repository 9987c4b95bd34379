//! The conversation's rules that both sides share (D-005, D-016): the Main Agent's
//! states and the moves between them, the kinds of request a user message can be, and
//! how a message names its kind itself (`/ask`, `/direct`, `/task`, `/plan`). Pure:
//! the daemon runs the machine, clients show it.

use serde::{Deserialize, Serialize};

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
