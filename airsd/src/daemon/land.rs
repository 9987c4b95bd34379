//! `run.land`: a session's integration branch brought into the checkout later, as the
//! end of its run would have (`air land`), with the same checks: only over files the
//! person did not change, never what air keeps from agents' writes.

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
        .map_err(|e| Error::Refused(format!("cannot land: permissions: {e}")))?
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
        let integration = crate::workspace::integration_branch(session_id);
        let engine = Arc::new(engine);
        let session = session_id.to_string();
        tokio::task::spawn_blocking(move || {
            match crate::workspace::branch_exists(&launcher, &integration) {
                Ok(true) => {}
                Ok(false) => {
                    return Err(Error::Refused(format!(
                        "session {session} has no integration branch ({integration}): its tasks did not work in worktrees"
                    )))
                }
                Err(e) => return Err(Error::Refused(format!("cannot land: {e}"))),
            }
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
}
