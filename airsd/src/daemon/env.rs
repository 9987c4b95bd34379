//! A run uses the provider settings of the client that started it, not the daemon's
//! (issue: a daemon started with `ANTHROPIC_BASE_URL=X` kept calling X for a client
//! that said Y). The client passes its settings with `run.start`,
//! `conversation.start` or `run.continue` (`air_proto::env::ClientEnv`); its
//! workers' environment takes them in place of the daemon's provider variables — a
//! variable the client does not have is not taken from the daemon either. They are
//! held in memory for the session's run, never logged or stored; a run airsd picks
//! up by itself after a restart has only the daemon's own.

use std::ffi::OsString;

use air_proto::env::{is_provider_var, ClientEnv};

use super::state::{lock, DaemonState};
use crate::error::Result;
use crate::scheduler::shell::ShellConfig;

/// `base` (a worker's environment) with its provider settings replaced by `env`'s.
pub fn with_client_env(
    base: &[(OsString, OsString)],
    env: &ClientEnv,
) -> Vec<(OsString, OsString)> {
    let mut out: Vec<(OsString, OsString)> = base
        .iter()
        .filter(|(k, _)| !k.to_str().is_some_and(is_provider_var))
        .cloned()
        .collect();
    out.extend(
        env.0
            .iter()
            .filter(|(k, _)| is_provider_var(k))
            .map(|(k, v)| (OsString::from(k), OsString::from(v))),
    );
    out
}

impl DaemonState {
    /// The configuration a run of `session` starts with: its workers take `env`, or
    /// the settings given earlier for this session, or the daemon's own.
    pub(super) fn shell_config_for(
        &self,
        session: Option<&str>,
        env: Option<&ClientEnv>,
    ) -> Result<ShellConfig> {
        let mut config = self.shell_config()?;
        let env = env
            .cloned()
            .or_else(|| session.and_then(|s| lock(&self.run_envs).get(s).cloned()));
        if let Some(env) = env {
            config.worker.env = with_client_env(&config.worker.env, &env);
        }
        Ok(config)
    }

    /// Holds a client's provider settings for the runs of `session`.
    pub(super) fn remember_env(&self, session: &str, env: Option<ClientEnv>) {
        if let Some(env) = env {
            lock(&self.run_envs).insert(session.to_string(), env);
        }
    }

    /// The daemon's own provider settings (a secret by name only), for `air doctor`.
    pub fn own_provider_settings(&self) -> Vec<String> {
        let vars = self
            .shell
            .as_ref()
            .map(|s| {
                s.worker
                    .env
                    .iter()
                    .filter_map(|(k, v)| Some((k.to_str()?.to_string(), v.to_str()?.to_string())))
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default();
        ClientEnv::from_vars(vars.into_iter()).shown()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clients_provider_settings_replace_the_daemons_and_nothing_else() {
        let base: Vec<(OsString, OsString)> = [
            ("PATH", "/bin"),
            ("ANTHROPIC_BASE_URL", "http://x"),
            ("OPENAI_API_KEY", "daemon-key"),
            ("AIR_HOME", "/h"),
        ]
        .into_iter()
        .map(|(k, v)| (k.into(), v.into()))
        .collect();
        let env = ClientEnv::from_vars(
            [
                ("ANTHROPIC_BASE_URL", "http://y"),
                ("AIR_MODEL", "anthropic/m"),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string())),
        );
        let out = with_client_env(&base, &env);
        let get = |k: &str| {
            out.iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.to_string_lossy().into_owned())
        };
        assert_eq!(get("ANTHROPIC_BASE_URL").as_deref(), Some("http://y"));
        assert_eq!(get("AIR_MODEL").as_deref(), Some("anthropic/m"));
        assert_eq!(
            get("OPENAI_API_KEY"),
            None,
            "a key the client does not have is not taken"
        );
        assert_eq!(get("PATH").as_deref(), Some("/bin"));
        assert_eq!(get("AIR_HOME").as_deref(), Some("/h"));
    }
}
