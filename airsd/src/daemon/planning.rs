//! The user's side of a planning session (`planning.answer`, `planning.decide`): an
//! answer is checked against what the session waits for (the turn, the question ids,
//! a proposal to decide), then recorded for the run's scheduler to fold, like a
//! conversation's message.

use std::collections::BTreeMap;

use air_proto::api::params::{PlanningAnswer, PlanningDecide};
use air_proto::event::{EventSource, RuntimeEvent, SourceKind};
use air_proto::events::Event;
use air_proto::payload::{PlanDecided, QuestionsAnswered};
use air_proto::planning_view::PlanningView;

use super::state::DaemonState;
use crate::error::{Error, Result};

impl DaemonState {
    /// The session's planning view and the turn an answer is for, or why there is
    /// nothing to answer.
    async fn waiting_planning(
        &self,
        method: &str,
        session_id: &str,
        task_id: Option<&str>,
    ) -> Result<(PlanningView, String)> {
        let session = self.session(session_id).await?;
        let view = session.bus().read(|p, _| p.planning.clone());
        let Some(view) = view else {
            return Err(Error::NotFound(format!(
                "session {session_id} has no planning session (`/plan REQUIREMENT` starts one)"
            )));
        };
        let Some(waiting) = view.waiting_on.clone() else {
            return Err(Error::Refused(format!(
                "the planning of session {session_id} waits for nothing from the user now (phase {}): the designer is at work, or the plan is confirmed",
                view.phase.as_str()
            )));
        };
        if let Some(t) = task_id.filter(|t| *t != waiting) {
            return Err(Error::invalid(
                method,
                "task_id",
                format!("`{t}` is not what waits for an answer: {waiting} does"),
            ));
        }
        Ok((view, waiting))
    }

    /// `planning.answer`.
    pub async fn answer_planning(&self, q: PlanningAnswer, client: Option<String>) -> Result<u64> {
        const M: &str = "planning.answer";
        let gate = self.run_gate(&q.session_id);
        let _one_at_a_time = gate.lock().await;
        let (view, task_id) = self
            .waiting_planning(M, &q.session_id, q.task_id.as_deref())
            .await?;
        if view.proposed_by.as_deref() == Some(task_id.as_str()) && q.note.is_none() {
            return Err(Error::Refused(format!(
                "{task_id} proposed a plan: answer it with planning.decide (confirm, change or reject), or say what to change in a note"
            )));
        }
        let answers: BTreeMap<String, String> = q.answers.unwrap_or_default();
        for id in answers.keys() {
            if !view.questions.iter().any(|x| x.id == *id) {
                let asked: Vec<&str> = view.questions.iter().map(|x| x.id.as_str()).collect();
                return Err(Error::invalid(
                    M,
                    &format!("answers.{id}"),
                    if asked.is_empty() {
                        format!("{task_id} asked no questions")
                    } else {
                        format!(
                            "{task_id} asked no question `{id}`; it asked {}",
                            asked.join(", ")
                        )
                    },
                ));
            }
        }
        let note = q.note.filter(|n| !n.trim().is_empty());
        let go_ahead = q.go_ahead.unwrap_or(false);
        if answers.values().all(|a| a.trim().is_empty()) && note.is_none() && !go_ahead {
            return Err(Error::invalid(
                M,
                "answers",
                "give answers, a note, or go_ahead: true",
            ));
        }
        let pl = QuestionsAnswered {
            task_id,
            answers,
            note,
            go_ahead,
            client: client.clone(),
        };
        self.record_planning(&q.session_id, &pl, client).await
    }

    /// `planning.decide`.
    pub async fn decide_plan(&self, q: PlanningDecide, client: Option<String>) -> Result<u64> {
        const M: &str = "planning.decide";
        let gate = self.run_gate(&q.session_id);
        let _one_at_a_time = gate.lock().await;
        let (view, task_id) = self
            .waiting_planning(M, &q.session_id, q.task_id.as_deref())
            .await?;
        if view.proposed_by.as_deref() != Some(task_id.as_str()) {
            return Err(Error::Refused(format!(
                "{task_id} proposed no plan (phase {}): answer it with planning.answer",
                view.phase.as_str()
            )));
        }
        let pl = PlanDecided {
            task_id,
            decision: q.decision,
            note: q.note.filter(|n| !n.trim().is_empty()),
            run: q.run.unwrap_or(true),
            client: client.clone(),
        };
        self.record_planning(&q.session_id, &pl, client).await
    }

    /// `requirement.change`.
    pub async fn change_requirement(
        &self,
        q: air_proto::api::params::RequirementChange,
        client: Option<String>,
    ) -> Result<u64> {
        if q.change.trim().is_empty() {
            return Err(Error::invalid(
                "requirement.change",
                "change",
                "must not be empty: say what is now wanted",
            ));
        }
        let gate = self.run_gate(&q.session_id);
        let _one_at_a_time = gate.lock().await;
        let session = self.session(&q.session_id).await?;
        if session.bus().read(|p, _| p.run.is_none()) {
            return Err(Error::NotFound(format!(
                "session {} has no run whose plan could change",
                q.session_id
            )));
        }
        let pl = air_proto::events::RequirementChanged(
            serde_json::json!({ "change": q.change.trim(), "by": client })
                .as_object()
                .cloned()
                .unwrap_or_default(),
        );
        self.record_planning(&q.session_id, &pl, client).await
    }

    async fn record_planning<E: Event>(
        &self,
        session_id: &str,
        pl: &E,
        client: Option<String>,
    ) -> Result<u64> {
        let session = self.session(session_id).await?;
        let e = RuntimeEvent::of(session_id, EventSource::new(SourceKind::Main), pl)
            .map_err(|e| Error::Internal(e.to_string()))?
            .via("client");
        let id = e.id.clone();
        match self.record_in_run(&session, session_id, e, client).await? {
            Some(seq) => Ok(seq),
            None => {
                let session = session.clone();
                tokio::task::spawn_blocking(move || -> Result<u64> {
                    let conn = session.readers().get()?;
                    Ok(conn
                        .query_row("SELECT seq FROM events WHERE id = ?1", [&id], |r| r.get(0))?)
                })
                .await
                .map_err(|e| Error::Internal(format!("reading the answer: {e}")))?
            }
        }
    }
}
