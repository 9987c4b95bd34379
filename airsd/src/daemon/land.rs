//! `run.land`: a session's integration branch brought into the checkout later, as the
//! end of its run would have (`air land`), with the same checks: only over files the
//! person did not change, never what air keeps from agents' writes. `run.undo`: one
//! task's merged change taken back out of it (`air undo`), and out of the checkout
//! too when the branch had landed there.

use std::sync::Arc;

use super::state::DaemonState;
use crate::error::{Error, Result};

impl DaemonState {
    /// Lands the session's integration branch (`always`: also as a merge commit when
    /// the checkout's branch moved on), answering what landed or why not.
    pub async fn land(
        &self,
        session_id: &str,
        always: bool,
    ) -> Result<air_proto::payload::Landing> {
        let (engine, launcher) = self.checkout_git(session_id).await?;
        let integration = crate::workspace::integration_branch(session_id);
        let session = session_id.to_string();
        tokio::task::spawn_blocking(move || {
            has_integration(&launcher, &session, &integration)?;
            Ok(crate::workspace::land_checkout(
                &engine,
                &launcher,
                &integration,
                always,
            ))
        })
        .await
        .map_err(|e| Error::Internal(format!("landing: {e}")))?
    }

    /// Undoes `task_id`'s merge on the session's integration branch; when the branch
    /// had landed in the checkout, lands the undo there too (as `run.land` would).
    pub async fn undo(
        &self,
        session_id: &str,
        task_id: &str,
    ) -> Result<air_proto::payload::UndoResult> {
        if self.run_in_progress(session_id) {
            return Err(Error::Refused(format!(
                "session {session_id}'s run is going: undo a task once it has ended (`air cancel` stops it)"
            )));
        }
        let (engine, launcher) = self.checkout_git(session_id).await?;
        let integration = crate::workspace::integration_branch(session_id);
        let worktrees = self.paths.workspaces();
        let (session, task) = (session_id.to_string(), task_id.to_string());
        let out = tokio::task::spawn_blocking(move || {
            has_integration(&launcher, &session, &integration)?;
            let landed = crate::workspace::landed(&launcher, &integration)
                .map_err(|e| Error::Refused(format!("cannot undo: {e}")))?;
            let message = format!("{}{task}", crate::workspace::UNDO_SUBJECT);
            let undone = crate::workspace::undo(
                &launcher,
                &worktrees,
                &integration,
                &session,
                &task,
                &message,
            )
            .map_err(|e| Error::Refused(format!("cannot undo {task}: {e}")))?;
            let mut out = air_proto::payload::UndoResult {
                integration_branch: integration.clone(),
                undone: false,
                commit: None,
                files: Vec::new(),
                reason: None,
                landing: None,
            };
            match undone {
                crate::workspace::Undone::Undone { commit, files } => {
                    out.undone = true;
                    out.commit = Some(commit);
                    out.files = files;
                    if landed {
                        out.landing = Some(crate::workspace::land_checkout(
                            &engine,
                            &launcher,
                            &integration,
                            false,
                        ));
                    }
                }
                crate::workspace::Undone::NotMerged => {
                    out.reason = Some(format!("{task}'s change is not merged into {integration}"))
                }
                crate::workspace::Undone::Already => {
                    out.reason = Some(format!("{task}'s change was undone already"))
                }
                crate::workspace::Undone::Conflict { files } => {
                    out.reason = Some(format!(
                        "what later tasks changed touches the same lines of {}: nothing was undone; revert it by hand",
                        files.join(", ")
                    ))
                }
            }
            Ok::<_, Error>(out)
        })
        .await
        .map_err(|e| Error::Internal(format!("undo: {e}")))??;
        // Recorded in the session, as what its run did is.
        if let (true, Some(commit)) = (out.undone, out.commit.clone()) {
            let session = self.session(session_id).await?;
            let e = air_proto::event::RuntimeEvent::of(
                session_id,
                air_proto::event::EventSource::system(),
                &air_proto::payload::WorkspaceUndone {
                    task_id: task_id.to_string(),
                    integration_branch: out.integration_branch.clone(),
                    commit,
                    files: out.files.clone(),
                    landing: out.landing.clone(),
                },
            )
            .map_err(|e| Error::Internal(format!("workspace.undone payload: {e}")))?;
            session.store().append(e).await?;
        }
        Ok(out)
    }

    /// Prunes the kept worktrees of sessions whose run is not going: those older than
    /// the configured age, then the oldest while they take more than the budget
    /// (`all`: every one). `dry`: says what it would do.
    pub async fn prune_worktrees(
        &self,
        all: bool,
        dry: bool,
    ) -> Result<air_proto::payload::PruneResult> {
        let config = self.shell_config_for(None, None)?;
        let limits = crate::workspace::Limits {
            keep: std::time::Duration::from_secs(config.worktree_limits.keep_secs()),
            budget: config.worktree_limits.budget_bytes(),
            all,
        };
        let live: Vec<String> = {
            let mut runs = self.runs_lock();
            runs.retain(|_, h| !h.is_done());
            runs.keys()
                .map(|s| crate::workspace::branch_part(s))
                .collect()
        };
        let root = crate::scheduler::tooljob::resolved_root(self.paths.root());
        let launcher = crate::launcher::Launcher::plain(&root);
        let worktrees = self.paths.workspaces();
        let pruned = tokio::task::spawn_blocking(move || {
            if !crate::tools::git::in_repository(&root) {
                return Ok(crate::workspace::Pruned::default());
            }
            crate::workspace::prune(&launcher, &worktrees, &live, limits, dry)
        })
        .await
        .map_err(|e| Error::Internal(format!("pruning worktrees: {e}")))?
        .map_err(|e| Error::Refused(format!("cannot prune the worktrees: {e}")))?;
        let entry = |e: crate::workspace::PrunedEntry| air_proto::payload::PrunedWorktree {
            path: e.path.display().to_string(),
            branch: e.branch,
            bytes: e.bytes,
            age_secs: e.age.as_secs(),
            why: e.why,
        };
        Ok(air_proto::payload::PruneResult {
            dry,
            removed: pruned.removed.into_iter().map(entry).collect(),
            kept: pruned.kept.into_iter().map(entry).collect(),
        })
    }

    /// The hourly pruning of kept worktrees (and at start), by the configured age and
    /// budget; what went is logged.
    pub async fn prune_if_due(&self) {
        if !self.paths.workspaces().is_dir() {
            return;
        }
        match self.prune_worktrees(false, false).await {
            Ok(p) => {
                for r in &p.removed {
                    tracing::info!(path = %r.path, branch = %r.branch, "pruned a kept worktree: {}", r.why);
                }
            }
            Err(e) => tracing::warn!("cannot prune the kept worktrees: {e}"),
        }
    }

    /// The project's checkout as airsd's git sees it for a session's branches: the
    /// engine that says what may be written there, and git confined to it.
    async fn checkout_git(
        &self,
        session_id: &str,
    ) -> Result<(
        Arc<crate::tools::permission::Engine>,
        crate::launcher::Launcher,
    )> {
        // The session must be this project's.
        self.session(session_id).await?;
        let config = self.shell_config_for(Some(session_id), None)?;
        let permissions = self.permissions(&config)?;
        let root = crate::scheduler::tooljob::resolved_root(self.paths.root());
        let engine = crate::tools::permission::Engine::new(
            &root,
            config.home.as_deref(),
            config.air_home.as_deref(),
            air_proto::plan::PermissionMode::Default,
            &permissions,
        )
        .map_err(|e| Error::Refused(format!("cannot read the checkout's permissions: {e}")))?
        .with_path_dirs(config.path.as_deref());
        let sandbox = config.sandbox_exe.clone().and_then(|exe| {
            let found = crate::sandbox::protections(&exe);
            (engine.sandbox() && (found.landlock || found.isolation.is_ok()))
                .then_some((exe, found))
        });
        let launcher = crate::launcher::Launcher::new(
            &root,
            config.path.as_deref(),
            sandbox,
            engine.views(&[], &[], &[]),
        );
        Ok((Arc::new(engine), launcher))
    }
}

/// Refuses a session with no integration branch.
fn has_integration(
    launcher: &crate::launcher::Launcher,
    session: &str,
    integration: &str,
) -> Result<()> {
    match crate::workspace::branch_exists(launcher, integration) {
        Ok(true) => Ok(()),
        Ok(false) => Err(Error::Refused(format!(
            "session {session} has no integration branch ({integration}): its tasks did not work in worktrees"
        ))),
        Err(e) => Err(Error::Refused(format!("cannot read {integration}: {e}"))),
    }
}
