//! The planning session as clients see it: the projection's `planning`, the fold of
//! the planning turns' `task.created` and the `architecture.*` events (the TUI's
//! proposal dialog and `air plan new` read it).

use serde::{Deserialize, Serialize};

use crate::planning::{PlanDecision, PlanningPhase, Proposal, Question};

/// The planning session as clients see it (the projection's `planning`): the fold
/// of the planning turns' `task.created` and the `architecture.*` events.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PlanningView {
    /// The requirement, as the user gave it.
    pub requirement: String,
    pub phase: PlanningPhase,
    /// The planning turn whose questions, statement or proposal waits for the user;
    /// none while the designer works (or once confirmed).
    pub waiting_on: Option<String>,
    /// Open questions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub questions: Vec<Question>,
    /// The requirements stated (settled once the user agrees).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub requirements: Vec<String>,
    /// The latest proposal, with its tasks and waves.
    pub proposal: Option<Proposal>,
    /// The turn whose proposal waits for the user's decision.
    pub proposed_by: Option<String>,
    /// The turn whose stated requirements wait for the user to agree.
    pub stated_by: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tasks: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub waves: Vec<Vec<String>>,
    /// What airsd wrote on confirmation.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
    /// Why the confirmed plan could not be written.
    pub error: Option<String>,
}

impl PlanningView {
    /// The event types that change the view (with a planning turn's `task.created`).
    pub const TYPES: &'static [&'static str] = &[
        crate::events::QuestionsAsked::TYPE,
        crate::events::QuestionsAnswered::TYPE,
        crate::events::RequirementsSettled::TYPE,
        crate::events::PlanProposed::TYPE,
        crate::events::PlanDecided::TYPE,
        crate::events::PlanConfirmed::TYPE,
    ];

    /// Applies one event to the view; others (and payloads that do not parse) change
    /// nothing.
    pub fn apply(view: &mut Option<PlanningView>, ty: &str, payload: &serde_json::Value) {
        use crate::events as ev;
        use crate::payload as p;
        fn de<T: serde::de::DeserializeOwned>(v: &serde_json::Value) -> Option<T> {
            serde_json::from_value(v.clone()).ok()
        }
        if ty == ev::TaskCreated::TYPE {
            let Some(task) = de::<p::TaskCreated>(payload).map(|t| t.task) else {
                return;
            };
            let Some(phase) = crate::planning::phase_of(&task) else {
                return;
            };
            match view {
                // A new requirement (the first, or after a confirmed plan).
                Some(v) if v.phase != PlanningPhase::Confirmed => {
                    v.phase = phase;
                    v.waiting_on = None;
                    v.questions.clear();
                    v.proposed_by = None;
                    v.stated_by = None;
                }
                _ => {
                    *view = Some(PlanningView {
                        requirement: task.description,
                        phase,
                        waiting_on: None,
                        questions: Vec::new(),
                        requirements: Vec::new(),
                        proposal: None,
                        proposed_by: None,
                        stated_by: None,
                        tasks: Vec::new(),
                        waves: Vec::new(),
                        files: Vec::new(),
                        error: None,
                    })
                }
            }
            return;
        }
        let Some(v) = view.as_mut() else { return };
        match ty {
            ev::QuestionsAsked::TYPE => {
                if let Some(pl) = de::<p::QuestionsAsked>(payload) {
                    v.waiting_on = Some(pl.task_id);
                    v.questions = pl.questions;
                    v.proposed_by = None;
                    v.stated_by = None;
                }
            }
            ev::RequirementsSettled::TYPE => {
                if let Some(pl) = de::<p::RequirementsSettled>(payload).filter(|p| p.user_agreed) {
                    // Agreed in the user's words: nothing waits; the plan comes next.
                    v.requirements = pl.requirements;
                    v.waiting_on = None;
                } else if let Some(pl) = de::<p::RequirementsSettled>(payload) {
                    v.waiting_on = Some(pl.task_id);
                    v.questions.clear();
                    v.requirements = pl.requirements;
                    v.proposed_by = None;
                    v.stated_by = Some(v.waiting_on.clone().unwrap_or_default());
                }
            }
            ev::PlanProposed::TYPE => {
                if let Some(pl) = de::<p::PlanProposed>(payload) {
                    v.proposed_by = Some(pl.task_id.clone());
                    v.stated_by = None;
                    v.waiting_on = Some(pl.task_id);
                    v.questions.clear();
                    v.proposal = Some(pl.proposal);
                    v.tasks = pl.tasks;
                    v.waves = pl.waves;
                    v.error = None;
                }
            }
            ev::QuestionsAnswered::TYPE if de::<p::QuestionsAnswered>(payload).is_some() => {
                v.waiting_on = None;
                v.questions.clear();
                v.proposed_by = None;
                v.stated_by = None;
            }
            ev::PlanDecided::TYPE => {
                if let Some(pl) = de::<p::PlanDecided>(payload) {
                    v.waiting_on = None;
                    v.proposed_by = None;
                    v.stated_by = None;
                    if pl.decision == PlanDecision::Confirm {
                        v.phase = PlanningPhase::Confirmed;
                    }
                }
            }
            ev::PlanConfirmed::TYPE => {
                if let Some(pl) = de::<p::PlanConfirmed>(payload) {
                    v.files = pl.files;
                    if pl.error.is_some() {
                        v.phase = PlanningPhase::Discussing;
                    }
                    v.error = pl.error;
                }
            }
            _ => {}
        }
    }
}
