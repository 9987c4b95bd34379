//! The person's hooks the daemon runs itself: `UserPromptSubmit` on a message about
//! to be said in a conversation (scheduler::hooks runs the rest).

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::scheduler::shell;
use crate::session::Session;
use crate::tools::permission::Engine;

use super::DaemonState;

impl DaemonState {
    /// Whether the person's hooks judge the messages of the conversation
    /// (`UserPromptSubmit`).
    pub(super) fn prompt_hooked(&self, config: &shell::ShellConfig) -> bool {
        let user = config.air_home.as_ref().map(|h| h.join("hooks.yaml"));
        if !air_proto::hooks::any_file(user.as_deref(), self.paths.root()) {
            return false;
        }
        let root = crate::scheduler::tooljob::resolved_root(self.paths.root());
        // Hooks that cannot be read say so when the message is said.
        crate::scheduler::hooks::Hooks::load(config.air_home.as_deref(), &root).map_or(true, |h| {
            h.has(air_proto::hooks::HookEvent::UserPromptSubmit)
        })
    }

    /// The `UserPromptSubmit` hooks on a message about to be said in a session's
    /// conversation: refused, with the hook's reason, when one refuses it. Each run is
    /// recorded in the session. Nothing is read beyond the hooks' files when none is
    /// for this event.
    pub(super) async fn prompt_hooks(&self, session: &Arc<Session>, text: &str) -> Result<()> {
        use air_proto::hooks::HookEvent;
        let config = self.shell_config_for(Some(session.id()), None)?;
        let user = config.air_home.as_ref().map(|h| h.join("hooks.yaml"));
        if !air_proto::hooks::any_file(user.as_deref(), self.paths.root()) {
            return Ok(());
        }
        let paths = self.paths.clone();
        let mode = session
            .bus()
            .read(|p, _| p.run.as_ref().and_then(|r| r.permission_mode))
            .unwrap_or(air_proto::plan::PermissionMode::Default);
        let cfg = config.clone();
        let loaded = tokio::task::spawn_blocking(
            move || -> Result<Option<(crate::scheduler::hooks::Hooks, Engine)>> {
                let root = crate::scheduler::tooljob::resolved_root(paths.root());
                let hooks = crate::scheduler::hooks::Hooks::load(cfg.air_home.as_deref(), &root)
                    .map_err(|e| Error::Refused(format!("the hooks cannot be read: {e}")))?;
                if !hooks.has(HookEvent::UserPromptSubmit) {
                    return Ok(None);
                }
                let permissions = super::runs::permissions(&paths, &cfg)?;
                let engine = Engine::new(
                    &root,
                    cfg.home.as_deref(),
                    cfg.air_home.as_deref(),
                    mode,
                    &permissions,
                )
                .map_err(|e| Error::Refused(format!("permissions: {e}")))?
                .with_path_dirs(cfg.path.as_deref());
                Ok(Some((hooks, engine)))
            },
        )
        .await
        .map_err(|e| Error::Internal(format!("hooks: {e}")))??;
        let Some((hooks, engine)) = loaded else {
            return Ok(());
        };
        let sandbox = config
            .sandbox_exe
            .clone()
            .map(|exe| {
                let found = crate::sandbox::protections(&exe);
                (exe, found)
            })
            .filter(|(_, p)| p.landlock || p.isolation.is_ok());
        let launching = crate::scheduler::hooks::Launching {
            quarantine: self.paths.quarantine().join(session.id()),
            engine: &engine,
            sandbox_exe: sandbox.as_ref(),
        };
        let outcome = crate::scheduler::hooks::run(
            &hooks,
            HookEvent::UserPromptSubmit,
            None,
            serde_json::json!({ "prompt": text }),
            session.id(),
            &launching,
        )
        .await;
        let events = outcome
            .runs
            .iter()
            .map(|r| super::runs::event(session.id(), r))
            .collect::<Result<Vec<_>>>()?;
        if !events.is_empty() {
            session.store().append_batch(events).await?;
        }
        match outcome.blocked {
            Some(why) => Err(Error::Refused(format!("the message was not sent: {why}"))),
            None => Ok(()),
        }
    }
}
