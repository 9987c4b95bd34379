//! A task's git worktree as clients see it: its branch and whether its change was
//! merged, folded from the `workspace.*` events and reviewers' approvals (live, and
//! from the stored events when hydrated).

use serde::{Deserialize, Serialize};

use crate::events as ev;
use crate::payload as p;

/// A task's worktree: its branch and what became of it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct WorkspaceView {
    pub id: String,
    pub branch: String,
    pub state: WorkspaceState,
    /// Merged: the files its merge brought into the integration branch.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
}

wire_enum! {
    /// Where a task's change is.
    pub enum WorkspaceState {
        /// On its branch, in its worktree.
        Working = "working",
        /// Reviewed and approved: in the merge queue, waiting its turn.
        Queued = "queued",
        /// Being merged now, behind its check (one task at a time).
        Merging = "merging",
        /// Merged into the session's integration branch.
        Merged = "merged",
        /// Not merged: it changes the same lines as the integration branch; its
        /// debugger resolves it.
        Conflict = "conflict",
        /// Not merged: its check failed on the merged tree; its debugger follows.
        CheckFailed = "check_failed",
        /// Its worktree removed without a merge (it changed nothing).
        Removed = "removed",
        /// A state this build does not know (said by a newer airsd): read as such,
        /// so that the rest of a snapshot is still read.
        #[serde(other)]
        Other = "other",
    }
}

impl WorkspaceView {
    /// How a person reads it, knowing whether its task ended: a task that ended
    /// unmerged keeps its branch (a conflict, a failure).
    pub fn describe(&self, ended: bool) -> &'static str {
        match self.state {
            WorkspaceState::Merged => "merged",
            WorkspaceState::Queued | WorkspaceState::Merging if ended => "not merged: branch kept",
            WorkspaceState::Queued => "reviewed: queued to merge",
            WorkspaceState::Merging => "merging, behind its check",
            WorkspaceState::Conflict if ended => "not merged: conflict, branch kept",
            WorkspaceState::Conflict => "conflict: being resolved",
            WorkspaceState::CheckFailed if ended => "not merged: check failed, branch kept",
            WorkspaceState::CheckFailed => "check failed after merging: being debugged",
            WorkspaceState::Removed => "nothing to merge",
            WorkspaceState::Working if ended => "not merged: branch kept",
            WorkspaceState::Working => "working",
            WorkspaceState::Other => "in a state this air does not know (update air)",
        }
    }
}

/// A reviewer's approval of the task whose worktree `slot` is: its change joins the
/// merge queue.
pub fn reviewed(slot: &mut Option<WorkspaceView>, result: &crate::result::WorkerResult) {
    let approved = result.agent_type == crate::event::AgentType::Reviewer
        && result
            .result
            .get("decision")
            .and_then(serde_json::Value::as_str)
            == Some("approved");
    if let Some(w) = slot.as_mut().filter(|_| approved) {
        if matches!(
            w.state,
            WorkspaceState::Working | WorkspaceState::Conflict | WorkspaceState::CheckFailed
        ) {
            w.state = WorkspaceState::Queued;
        }
    }
}

/// Applies a `workspace.*` event to the tasks it names, given as (task id, its
/// worktree).
pub fn apply<'a>(
    tasks: impl Iterator<Item = (&'a str, &'a mut Option<WorkspaceView>)>,
    ty: &str,
    payload: &serde_json::Value,
) {
    if ty == ev::WorkspaceCreated::TYPE {
        let Ok(pl) = p::WorkspaceCreated::deserialize(payload) else {
            return;
        };
        for (id, slot) in tasks {
            if pl.task_id.as_deref() == Some(id) {
                *slot = Some(WorkspaceView {
                    id: pl.workspace_id.clone(),
                    branch: pl.branch.clone().unwrap_or_default(),
                    state: WorkspaceState::Working,
                    files: Vec::new(),
                });
            }
        }
        return;
    }
    if ty == ev::WorkspaceMergeFailed::TYPE {
        let Ok(pl) = p::WorkspaceMergeFailed::deserialize(payload) else {
            return;
        };
        for (_, slot) in tasks {
            if let Some(w) = slot.as_mut().filter(|w| w.id == pl.workspace_id) {
                w.state = if pl.conflict {
                    WorkspaceState::Conflict
                } else {
                    WorkspaceState::CheckFailed
                };
            }
        }
        return;
    }
    let Ok(pl) = p::WorkspaceChanged::deserialize(payload) else {
        return;
    };
    if ty == ev::WorkspaceMerging::TYPE {
        for (_, slot) in tasks {
            if let Some(w) = slot
                .as_mut()
                .filter(|w| w.id == pl.workspace_id && w.state == WorkspaceState::Queued)
            {
                w.state = WorkspaceState::Merging;
            }
        }
        return;
    }
    let merged = ty == ev::WorkspaceMerged::TYPE;
    for (_, slot) in tasks {
        if let Some(w) = slot.as_mut().filter(|w| w.id == pl.workspace_id) {
            if merged {
                w.state = WorkspaceState::Merged;
                w.files.clone_from(&pl.files);
            } else if w.state == WorkspaceState::Working {
                w.state = WorkspaceState::Removed;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    /// Approved, a task's change is queued; the queue taking it makes it merging,
    /// and only a queued one; merged ends it.
    #[test]
    fn approved_is_queued_then_merging_then_merged() {
        let mut slot = Some(WorkspaceView {
            id: "w1".into(),
            branch: "air/x/T1".into(),
            state: WorkspaceState::Working,
            files: Vec::new(),
        });
        let taken = serde_json::json!({"workspace_id": "w1"});
        // Not queued yet: the queue's word changes nothing.
        apply(
            std::iter::once(("T1", &mut slot)),
            ev::WorkspaceMerging::TYPE,
            &taken,
        );
        assert_eq!(slot.as_ref().unwrap().state, WorkspaceState::Working);
        let mut review = crate::result::WorkerResult::new(
            "T1",
            "T1-reviewer-1",
            crate::event::AgentType::Reviewer,
            crate::result::WorkerStatus::Completed,
            "fine".into(),
        );
        review.result = serde_json::json!({"decision": "approved"});
        reviewed(&mut slot, &review);
        assert_eq!(slot.as_ref().unwrap().state, WorkspaceState::Queued);
        apply(
            std::iter::once(("T1", &mut slot)),
            ev::WorkspaceMerging::TYPE,
            &taken,
        );
        assert_eq!(slot.as_ref().unwrap().state, WorkspaceState::Merging);
        apply(
            std::iter::once(("T1", &mut slot)),
            ev::WorkspaceMerged::TYPE,
            &taken,
        );
        assert_eq!(slot.as_ref().unwrap().state, WorkspaceState::Merged);
    }

    /// A state a newer airsd says is read as one this build does not know, not as an
    /// error that loses the whole snapshot.
    #[test]
    fn an_unknown_state_is_read_as_such() {
        let v: WorkspaceView =
            serde_json::from_str(r#"{"id":"w","branch":"air/x/T1","state":"rebasing"}"#).unwrap();
        assert_eq!(v.state, WorkspaceState::Other);
        let v: WorkspaceView =
            serde_json::from_str(r#"{"id":"w","branch":"air/x/T1","state":"merged"}"#).unwrap();
        assert_eq!(v.state, WorkspaceState::Merged);
    }
}
