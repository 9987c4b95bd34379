//! The provider settings a client passes with a run (`run.start`, `run.continue`,
//! `conversation.start`): the variables that say which provider an agent calls, with
//! which key, at which address — the same a worker takes from its environment — and
//! `AIR_MODEL`. A run uses the settings of the client that started it, not those
//! the daemon happened to start with; they travel over the owner-only socket, are
//! held in memory for the run, and are never logged or stored (this type's `Debug`
//! shows names only).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Prefixes of the variables that configure a provider.
pub const PROVIDER_PREFIXES: &[&str] = &[
    "ANTHROPIC_",
    "OPENAI_",
    "OPENROUTER_",
    "OLLAMA_",
    "AZURE_OPENAI_",
    "GEMINI_",
    "GOOGLE_API_KEY",
    "MISTRAL_",
    "GROQ_",
    "DEEPSEEK_",
];

/// Whether `name` is a provider setting a client passes (`AIR_MODEL` among them).
pub fn is_provider_var(name: &str) -> bool {
    name == "AIR_MODEL" || PROVIDER_PREFIXES.iter().any(|p| name.starts_with(p))
}

/// Whether a provider setting's value is a secret (a key, a token): shown by name only.
pub fn is_secret(name: &str) -> bool {
    ["KEY", "TOKEN", "SECRET", "PASSWORD"]
        .iter()
        .any(|w| name.contains(w))
}

/// A client's provider settings, by name.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(transparent)]
pub struct ClientEnv(pub BTreeMap<String, String>);

impl ClientEnv {
    /// The provider settings among `vars` (a process's environment); others are left.
    pub fn from_vars(vars: impl Iterator<Item = (String, String)>) -> ClientEnv {
        ClientEnv(vars.filter(|(k, _)| is_provider_var(k)).collect())
    }

    /// This process's provider settings.
    pub fn current() -> ClientEnv {
        ClientEnv::from_vars(std::env::vars())
    }

    /// Each setting as it may be shown: its value, or `set` for a secret.
    pub fn shown(&self) -> Vec<String> {
        self.0
            .iter()
            .map(|(k, v)| {
                if is_secret(k) {
                    format!("{k} set")
                } else {
                    format!("{k}={v}")
                }
            })
            .collect()
    }
}

impl std::fmt::Debug for ClientEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.0.keys()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_provider_settings_are_taken_and_secrets_never_shown() {
        let env = ClientEnv::from_vars(
            [
                ("ANTHROPIC_API_KEY", "sk-secret"),
                ("ANTHROPIC_BASE_URL", "http://127.0.0.1:9"),
                ("AIR_MODEL", "anthropic/claude-haiku-4-5"),
                ("AIR_HOME", "/h"),
                ("PATH", "/bin"),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string())),
        );
        assert_eq!(env.0.len(), 3);
        assert!(!format!("{env:?}").contains("sk-secret"));
        let shown = env.shown().join(" ");
        assert!(
            shown.contains("ANTHROPIC_API_KEY set")
                && shown.contains("ANTHROPIC_BASE_URL=http://127.0.0.1:9")
        );
        assert!(!shown.contains("sk-secret"));
    }
}
