//! A re-plan's revert ([`Decision::Revert`](super::Decision::Revert)): an impacted
//! completed task's merged change taken back out of the session's integration
//! branch, as `air undo` does (a new commit; what later tasks changed stays), and the
//! task's work set aside: its worktree removed, its branch kept as
//! `<branch>-replaced-<n>`, so that the task starts over on a fresh branch. The git
//! work runs beside the scheduler's loop, as the merge queue's does; its end comes
//! back through the queue's channel.

use air_proto::payload as p;

use super::queue::{QueueNews, Reverted};
use super::*;
use crate::workspace;

impl Shell {
    pub(super) async fn revert(&mut self, task_id: String) -> Result<()> {
        let Some(integration) = self.spaces.integration.clone().flatten() else {
            let outcome = Err(
                "the run's tasks share the checkout: there is no merge to take back out".into(),
            );
            return self.reverted(task_id, outcome).await;
        };
        let main = self.tools.launcher.clone();
        let worktrees = self.worktrees_dir();
        let session = self.session_id().to_string();
        let ws = self.spaces.by_task.get(&task_id).map(|s| s.ws.clone());
        let news = self.merges.0.clone();
        tokio::spawn(async move {
            let task = task_id.clone();
            let outcome = tokio::task::spawn_blocking(move || {
                let message = format!(
                    "{}{task} (the requirement changed)",
                    workspace::UNDO_SUBJECT
                );
                let undone =
                    workspace::undo(&main, &worktrees, &integration, &session, &task, &message)?;
                let (commit, files) = match undone {
                    workspace::Undone::Undone { commit, files } => (commit, files),
                    workspace::Undone::NotMerged => {
                        return Err(format!("{task}'s change is not merged into {integration}"))
                    }
                    // Undone before airsd stopped, and not yet recorded: done; its work
                    // is set aside now.
                    workspace::Undone::Already => {
                        let head = workspace::branch_head(&main, &integration)?
                            .ok_or_else(|| format!("no branch {integration}"))?;
                        (head, Vec::new())
                    }
                    workspace::Undone::Conflict { files } => {
                        return Err(format!(
                            "what later tasks changed touches the same lines of {}",
                            files.join(", ")
                        ))
                    }
                };
                // The change is out; setting the task's work aside is tidying (a
                // failure there leaves its old branch, which the redo continues).
                if let Err(e) =
                    workspace::set_aside(&main, ws.as_ref(), &worktrees, &session, &task, &commit)
                {
                    tracing::warn!(task, "its work could not be set aside: {e}");
                }
                Ok((integration, commit, files))
            })
            .await
            .unwrap_or_else(|e| Err(format!("the revert stopped: {e}")));
            let _ = news.send(QueueNews::Reverted { task_id, outcome });
        });
        Ok(())
    }

    /// A revert ended: recorded (`workspace.undone`, or `workspace.revert_failed`).
    pub(super) async fn reverted(&mut self, task_id: String, outcome: Reverted) -> Result<()> {
        if outcome.is_ok() {
            self.spaces.by_task.remove(&task_id);
        }
        let e = match outcome {
            Ok((integration_branch, commit, files)) => self.event(&p::WorkspaceUndone {
                task_id,
                integration_branch,
                commit,
                files,
                landing: None,
            })?,
            Err(reason) => {
                tracing::warn!(task = task_id, "a re-plan's revert failed: {reason}");
                self.event(&p::RevertFailed { task_id, reason })?
            }
        };
        self.push(vec![e]);
        Ok(())
    }
}
