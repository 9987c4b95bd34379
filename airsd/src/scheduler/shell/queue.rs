//! The merge queue's shell side ([`Decision::Merge`]): a reviewed task's change merged
//! with the session's integration branch in the task's own worktree, its check run
//! there on the merged tree as a command airsd runs (sandboxed and recorded like an
//! agent's, under the task's last executor), and the integration branch moved only
//! once that passed. The work runs beside the scheduler's loop; its end comes back as
//! a [`MergeEnd`] and is recorded with the task's end in one transaction.
//!
//! Must not: move the integration branch to a tree whose check failed, or to a
//! conflict; block the scheduler's loop while a check runs.

use super::*;
use crate::workspace::{self, Prepared, Workspace};

/// Bytes of the failing check's output given to the debugger.
const OUTPUT_TAIL: usize = 3 * 1024;

/// What the merge queue's jobs tell the scheduler's loop.
pub(super) enum QueueNews {
    Ended(MergeEnd),
    /// A merged task's worktree was removed (or could not be), after its end was
    /// told: its removal does not hold up the next merge.
    Removed {
        task_id: String,
        workspace_id: String,
        merged: bool,
        result: std::result::Result<(), String>,
    },
    /// A re-plan's revert ended.
    Reverted {
        task_id: String,
        outcome: Reverted,
    },
}

/// How a re-plan's revert ended: the integration branch, its new head and the files
/// undone; or why not.
pub(super) type Reverted = std::result::Result<(String, String, Vec<String>), String>;

/// How a merge ended, sent back to the scheduler's loop.
pub(super) struct MergeEnd {
    task_id: String,
    /// What the task ended with before its merge (the reviewer's words, if any).
    reason: Option<String>,
    /// The worktree as the merge left it (its base moves to what it merged with).
    ws: Workspace,
    outcome: std::result::Result<Gated, String>,
}

enum Gated {
    /// Merged (`Some((what, the files it brought in))`), or nothing to merge.
    Merged(Option<(String, Vec<String>)>),
    Refused {
        conflict: bool,
        files: Vec<String>,
        reason: String,
        command_run_id: Option<String>,
    },
}

/// What a merge job needs, taken from the shell before it runs on its own.
struct Job {
    main: std::sync::Arc<crate::launcher::Launcher>,
    worktrees: std::path::PathBuf,
    ws: Workspace,
    integration: String,
    message: String,
    /// The task's check, as a command airsd runs in the worktree; `None` when the
    /// task names none and the profile has none either.
    check: Option<crate::scheduler::tooljob::ToolJob>,
    check_command: String,
}

impl Job {
    async fn run(mut self) -> (Workspace, std::result::Result<Gated, String>) {
        // The integration branch moved between the merge and its move (an `air undo`
        // meanwhile): merged and checked again.
        for _ in 0..3 {
            match self.once().await {
                Ok(Some(gated)) => return (self.ws, Ok(gated)),
                Ok(None) => continue,
                Err(e) => return (self.ws, Err(e)),
            }
        }
        let why = format!("{} kept moving while the task was merged", self.integration);
        (self.ws, Err(why))
    }

    /// One merge: `None` when the integration branch moved before it could be moved.
    async fn once(&mut self) -> std::result::Result<Option<Gated>, String> {
        let prepared = {
            let (main, worktrees, mut ws, integration) = (
                self.main.clone(),
                self.worktrees.clone(),
                self.ws.clone(),
                self.integration.clone(),
            );
            let checked = self.check.is_some();
            tokio::task::spawn_blocking(move || {
                let p = workspace::prepare(&main, &worktrees, &mut ws, &integration, checked);
                (ws, p)
            })
            .await
        };
        let prepared = match prepared {
            Ok((ws, p)) => {
                self.ws = ws;
                p
            }
            Err(e) => Err(e.to_string()),
        };
        let outcome = match prepared {
            Ok(Prepared::Ready {
                old,
                commit,
                check,
                tree,
            }) => return self.gate(old, commit, check, tree).await,
            Err(e) => Err(e),
            Ok(Prepared::Nothing) => Ok(Gated::Merged(None)),
            Ok(Prepared::Already) => Ok(Gated::Merged(Some((
                format!("into {} before airsd was restarted", self.integration),
                Vec::new(),
            )))),
            Ok(Prepared::Conflict { files, hunks }) => Ok(Gated::Refused {
                conflict: true,
                reason: format!(
                    "its change conflicts with what was merged into {} before it, in {}. The merge is committed on its branch with git's conflict markers, and checked out in its worktree: resolve each conflict there (keep both sides' intent), then run its check again. The conflicting hunks (ours = the integration branch, theirs = this task):\n{hunks}",
                    self.integration,
                    files.join(", ")
                ),
                files,
                command_run_id: None,
            }),
            Ok(Prepared::Markers { files }) => Ok(Gated::Refused {
                conflict: true,
                reason: format!(
                    "git's conflict markers (`<<<<<<<`, `>>>>>>>`) are still in {} on its branch: resolve each conflict in its worktree, then run its check again",
                    files.join(", ")
                ),
                files,
                command_run_id: None,
            }),
        };
        outcome.map(Some)
    }

    /// Runs the check on the merged tree when it needs one, then moves the
    /// integration branch.
    async fn gate(
        &mut self,
        old: String,
        commit: String,
        check: bool,
        tree: Option<String>,
    ) -> std::result::Result<Option<Gated>, String> {
        if let (true, Some(job)) = (check, self.check.clone()) {
            let (caller, answer) = crate::scheduler::tooljob::Caller::airsd();
            let mut job = crate::scheduler::tooljob::ToolJob {
                worker: caller,
                ..job
            };
            job.call.tool_call_id = air_proto::ids::new_id();
            tokio::spawn(job.run());
            let result = answer
                .await
                .map_err(|_| "the check on the merged tree ended with no answer".to_string())?;
            let output = result.output.clone().unwrap_or_default();
            let code = output.get("exit_code").and_then(serde_json::Value::as_i64);
            if code != Some(0) {
                let run = output
                    .get("command_run_id")
                    .and_then(serde_json::Value::as_str)
                    .map(str::to_string);
                let text = result
                    .content
                    .clone()
                    .or_else(|| result.error.as_ref().map(|e| e.message.clone()))
                    .unwrap_or_default();
                let mut from = text.len().saturating_sub(OUTPUT_TAIL);
                while !text.is_char_boundary(from) {
                    from += 1;
                }
                let files = {
                    let (main, old, commit) = (self.main.clone(), old.clone(), commit.clone());
                    tokio::task::spawn_blocking(move || workspace::between(&main, &old, &commit))
                        .await
                        .ok()
                        .and_then(std::result::Result::ok)
                        .unwrap_or_default()
                };
                return Ok(Some(Gated::Refused {
                    conflict: false,
                    reason: format!(
                        "its check `{}` failed on its change merged with {} ({}{}); the integration branch did not move. Its worktree holds the merge: find what the merged change breaks, fix it there and run the check again. The end of the run's output:\n{}",
                        self.check_command,
                        self.integration,
                        code.map_or("no exit code".to_string(), |c| format!("exit code {c}")),
                        run.as_deref().map_or(String::new(), |r| format!(", command_run_id {r}")),
                        &text[from..]
                    ),
                    files,
                    command_run_id: run,
                }));
            }
        }
        let (main, worktrees, integration, message) = (
            self.main.clone(),
            self.worktrees.clone(),
            self.integration.clone(),
            self.message.clone(),
        );
        let (o, c) = (old.clone(), commit.clone());
        let advanced = tokio::task::spawn_blocking(move || {
            let moved = (o.as_str(), c.as_str(), tree.as_deref());
            workspace::advance(&main, &worktrees, &integration, moved, &message).map_err(|e| {
                // Moved meanwhile: merged again; otherwise the failure is the merge's.
                match workspace::branch_head(&main, &integration) {
                    Ok(Some(now)) if now != o => None,
                    _ => Some(e),
                }
            })
        })
        .await
        .map_err(|e| e.to_string())?;
        match advanced {
            Ok((merge, files)) => Ok(Some(Gated::Merged(Some((
                format!("{merge} into {}: {}", self.integration, files.join(", ")),
                files,
            ))))),
            Err(None) => Ok(None),
            Err(Some(e)) => Err(e),
        }
    }
}

impl Shell {
    /// Carries out [`Decision::Merge`]: a task with no worktree (the run shares the
    /// checkout, or it made none) completes at once; otherwise its merge runs beside
    /// the loop and [`Shell::merge_ended`] records its end.
    pub(super) async fn merge(&mut self, task_id: String, reason: Option<String>) -> Result<()> {
        // The person's TaskCompleted hooks judge it before it merges.
        if self.completed_hooks(&task_id).await? {
            return Ok(());
        }
        // After a restart the task's worktree is found again where it was left.
        if !self.spaces.by_task.contains_key(&task_id) {
            if let Err(e) = self.open_space(&task_id, true).await {
                return self.merge_blocked(
                    &task_id,
                    format!("its worktree could not be opened to merge it: {e}"),
                );
            }
        }
        let integration = self.spaces.integration.clone().flatten();
        let (Some(space), Some(integration)) = (self.spaces.by_task.get(&task_id), integration)
        else {
            // A task whose recorded worktree is gone is not complete without it.
            if self.spaces.integration.clone().flatten().is_some()
                && self.recorded_workspace(Some(&task_id)).await.is_some()
            {
                return self.merge_blocked(
                    &task_id,
                    "its worktree is recorded but no longer there: its change cannot be merged"
                        .to_string(),
                );
            }
            let mut pl = status_payload(&task_id, None);
            pl.reason = reason;
            let e = self.status_event(TaskStatus::Completed, pl)?;
            self.push(vec![e]);
            return Ok(());
        };
        let title = self
            .core
            .task_title(&task_id)
            .unwrap_or_default()
            .chars()
            .take(72)
            .collect::<String>();
        let spec = self.core.specs().into_iter().find(|s| s.id == task_id);
        let check = spec
            .as_ref()
            .and_then(|s| super::before::the_check(s, self.ctx.sources.project.as_ref()).ok());
        // The check runs as the task's last executor's command (its records are
        // the task's), in the task's worktree.
        let executor = self
            .core
            .attempt_agents(&task_id)
            .into_iter()
            .rev()
            .find(|a| a.contains("-executor-"))
            .unwrap_or_else(|| format!("{task_id}-executor-1"));
        let (caller, _) = crate::scheduler::tooljob::Caller::airsd();
        let job = match (&check, &spec) {
            (Some(command), Some(spec)) => Some(crate::scheduler::tooljob::ToolJob {
                env: space.env.clone(),
                worker: caller,
                header: air_proto::ipc::IpcHeader::new(
                    air_proto::ipc::Direction::WorkerToParent,
                    self.session_id(),
                    &executor,
                ),
                call: air_proto::ipc::ToolCall {
                    tool_call_id: air_proto::ids::new_id(),
                    tool: "shell.run".into(),
                    input: serde_json::json!({
                        "command": command,
                        "description": "the task's check, on its change merged with the integration branch (the merge queue's gate)",
                        // As long as a step of the task may take, up to a command's most.
                        "timeout_ms": spec
                            .constraints
                            .hard_timeout_ms
                            .clamp(1, crate::tools::exec::MAX_TIMEOUT_MS),
                    }),
                    origin_message_id: None,
                },
                agent_id: executor.clone(),
                role: AgentType::Executor,
                task_id: task_id.clone(),
                scope: spec.scope.clone(),
                planning: None,
                replan: false,
                fixed: Vec::new(),
                failure: None,
                requirement: spec.description.clone(),
                yields: super::before::declared(spec),
                checks: spec.verification.commands.clone().unwrap_or_default(),
                time_limit_ms: spec.constraints.hard_timeout_ms,
            }),
            _ => None,
        };
        let job = Job {
            main: self.tools.launcher.clone(),
            worktrees: self.worktrees_dir(),
            ws: space.ws.clone(),
            integration,
            message: format!("air: merge {task_id} {title}"),
            check: job,
            check_command: check.unwrap_or_default(),
        };
        let tx = self.merges.0.clone();
        let (main, worktrees) = (self.tools.launcher.clone(), self.worktrees_dir());
        let workspace_id = space.id.clone();
        // Clients see which task the queue is merging now (the others are queued).
        if let Ok(e) = self.event(&ev::WorkspaceMerging(p::WorkspaceChanged {
            workspace_id: workspace_id.clone(),
            reason: None,
            files: Vec::new(),
        })) {
            let _ = self.ctx.session.store().append(e).await;
        }
        self.spaces.jobs.retain(|(_, j)| !j.is_finished());
        let removing = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = removing.clone();
        let job = tokio::spawn(async move {
            let (ws, outcome) = job.run().await;
            // Merged: the worktree goes, once its end is told (a stop before the
            // removal leaves it for `air gc`; one before the end is recorded finds
            // its branch merged, from a worktree made again).
            let merged = match &outcome {
                Ok(Gated::Merged(what)) => Some(what.is_some()),
                _ => None,
            };
            let w = ws.clone();
            let t = task_id.clone();
            // Said before its end is: the run's end then waits for the removal.
            flag.store(merged.is_some(), std::sync::atomic::Ordering::SeqCst);
            let _ = tx.send(QueueNews::Ended(MergeEnd {
                task_id,
                reason,
                ws,
                outcome,
            }));
            if let Some(merged) = merged {
                let result =
                    tokio::task::spawn_blocking(move || workspace::remove(&main, &w, &worktrees))
                        .await
                        .map_err(|e| e.to_string())
                        .and_then(|r| r);
                let _ = tx.send(QueueNews::Removed {
                    task_id: t,
                    workspace_id,
                    merged,
                    result,
                });
            }
        });
        self.spaces.jobs.push((removing, job));
        Ok(())
    }

    fn merge_blocked(&mut self, task_id: &str, reason: String) -> Result<()> {
        let mut pl = status_payload(task_id, None);
        pl.reason = Some(reason);
        let e = self.status_event(TaskStatus::Blocked, pl)?;
        self.push(vec![e]);
        Ok(())
    }

    /// Records how a merge ended: the task completed with `workspace.merged` (and its
    /// worktree removed), or `workspace.merge_failed` for its debugger, or blocked.
    pub(super) async fn queue_news(&mut self, news: QueueNews) -> Result<()> {
        match news {
            QueueNews::Ended(end) => self.merge_ended(end).await,
            QueueNews::Removed {
                task_id,
                workspace_id,
                merged,
                result,
            } => {
                self.removed(workspace_id, merged, result, &task_id);
                Ok(())
            }
            QueueNews::Reverted { task_id, outcome } => self.reverted(task_id, outcome).await,
        }
    }

    async fn merge_ended(&mut self, end: MergeEnd) -> Result<()> {
        let MergeEnd {
            task_id,
            reason,
            ws,
            outcome,
        } = end;
        // The worktree's id; a task whose space went meanwhile (it was cancelled)
        // still has its end recorded.
        let id = match self.spaces.by_task.get_mut(&task_id) {
            Some(space) => {
                space.ws = ws.clone();
                // The merge (and its check) ran there.
                space.clean = false;
                space.id.clone()
            }
            None => self
                .recorded_workspace(Some(&task_id))
                .await
                .unwrap_or_default(),
        };
        match outcome {
            Err(e) => self.merge_blocked(
                &task_id,
                format!(
                    "its change could not be merged: {e}; its branch {} and worktree {} are kept",
                    ws.branch,
                    ws.path.display()
                ),
            ),
            Ok(Gated::Refused {
                conflict,
                files,
                reason,
                command_run_id,
            }) => {
                let e = self.event(&p::WorkspaceMergeFailed {
                    workspace_id: id,
                    task_id,
                    conflict,
                    files,
                    reason,
                    command_run_id,
                })?;
                self.push(vec![e]);
                Ok(())
            }
            Ok(Gated::Merged(merged)) => {
                let mut events = Vec::new();
                if let Some((what, files)) = merged {
                    events.push(self.event(&ev::WorkspaceMerged(p::WorkspaceChanged {
                        workspace_id: id.clone(),
                        reason: Some(what),
                        files,
                    }))?);
                }
                self.spaces.by_task.remove(&task_id);
                let mut pl = status_payload(&task_id, None);
                pl.reason = reason;
                events.push(self.status_event(TaskStatus::Completed, pl)?);
                self.push(events);
                Ok(())
            }
        }
    }
}
