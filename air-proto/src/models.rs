//! Which LLM each agent talks to: `~/.air/models.yaml` over the providers air knows
//! and the capability table shipped in `resources/models.yaml`.
//!
//! ```yaml
//! providers:                      # more providers, or other settings for known ones
//!   local:
//!     kind: openai_chat           # anthropic | openai_chat | openai_responses
//!     base_url: http://localhost:8080/v1
//!     api_key_env: LOCAL_KEY      # the variable holding the key (none: no key)
//! models:                         # "provider/model", or a model of the table
//!   default: anthropic/claude-sonnet-4-5
//!   reviewer: openai/gpt-5
//! capabilities:
//!   my-model: { context_window: 32768, max_output: 8192 }
//! thinking:                       # per agent type, where the model offers it
//!   default: { budget_tokens: 4096, effort: medium }
//!   debugger: { budget_tokens: 16384, effort: high }
//! prices:                         # US dollars per million tokens
//!   my-model: { input: 1.0, output: 4.0, cache_read: 0.1, cache_write: 1.25 }
//! fallbacks:                      # tried in order when a provider keeps failing
//!   default: [openai/gpt-5]
//!   executor: [anthropic/claude-haiku-4-5, openai/gpt-5-mini]
//! stream:
//!   idle_secs: 90                 # no byte at all for this long: cut and retried
//!   stall_secs: 300               # nothing of the answer for this long: the same
//! ```
//!
//! Thinking is sent only to a model whose capability says it thinks: an Anthropic
//! model with `thinking: true` gets extended, interleaved thinking with
//! `budget_tokens` (at least 1,024; 0 turns it off), an OpenAI model with
//! `reasoning: true` gets the reasoning `effort` (`minimal`, `low`, `medium`,
//! `high`).
//!
//! Keys are never in a file: a provider names the environment variable that holds
//! its key (`ANTHROPIC_API_KEY`, `OPENAI_API_KEY`, `OPENROUTER_API_KEY` for the known
//! ones), and base URLs follow the SDKs' variables (`ANTHROPIC_BASE_URL`,
//! `OPENAI_BASE_URL`) unless the file sets one.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::config::ConfigError;

wire_enum! {
    /// The wire protocol of a provider.
    pub enum ProviderKind {
        Anthropic = "anthropic",
        OpenaiChat = "openai_chat",
        OpenaiResponses = "openai_responses",
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    pub kind: Option<ProviderKind>,
    pub base_url: Option<String>,
    pub api_key_env: Option<String>,
}

/// A setting per agent type, with a default for the types not named.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PerAgent<T> {
    pub default: Option<T>,
    pub executor: Option<T>,
    pub reviewer: Option<T>,
    pub debugger: Option<T>,
    pub architecture_designer: Option<T>,
    /// The Main Agent, which talks with the user.
    pub main: Option<T>,
}

impl<T> Default for PerAgent<T> {
    fn default() -> Self {
        PerAgent {
            default: None,
            executor: None,
            reviewer: None,
            debugger: None,
            architecture_designer: None,
            main: None,
        }
    }
}

impl<T> PerAgent<T> {
    /// The agent type's own setting (`None` for a type without one).
    pub fn own(&self, agent_type: &str) -> Option<&T> {
        match agent_type {
            "executor" => self.executor.as_ref(),
            "reviewer" => self.reviewer.as_ref(),
            "debugger" => self.debugger.as_ref(),
            "architecture_designer" => self.architecture_designer.as_ref(),
            "main" => self.main.as_ref(),
            _ => None,
        }
    }

    /// The agent type's own setting, else the default.
    pub fn for_type(&self, agent_type: &str) -> Option<&T> {
        self.own(agent_type).or(self.default.as_ref())
    }

    /// Each setting of `other` over this one's.
    pub fn overridden_by(self, other: PerAgent<T>) -> PerAgent<T> {
        PerAgent {
            default: other.default.or(self.default),
            executor: other.executor.or(self.executor),
            reviewer: other.reviewer.or(self.reviewer),
            debugger: other.debugger.or(self.debugger),
            architecture_designer: other.architecture_designer.or(self.architecture_designer),
            main: other.main.or(self.main),
        }
    }
}

/// The model of each agent type (`provider/model`).
pub type ModelAssignment = PerAgent<String>;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Capability {
    pub context_window: u64,
    pub max_output: u32,
    /// Extended thinking with a token budget (Anthropic's models).
    #[serde(default)]
    pub thinking: bool,
    /// A reasoning effort (OpenAI's reasoning models).
    #[serde(default)]
    pub reasoning: bool,
}

wire_enum! {
    /// How hard an OpenAI reasoning model thinks.
    pub enum Effort {
        Minimal = "minimal",
        Low = "low",
        Medium = "medium",
        High = "high",
    }
}

/// How much a model thinks before it answers, where its provider offers it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Thinking {
    /// Anthropic: the extended thinking budget in tokens (0: off).
    pub budget_tokens: Option<u32>,
    /// OpenAI: the reasoning effort.
    pub effort: Option<Effort>,
}

/// The thinking of each agent type.
pub type ThinkingAssignment = PerAgent<Thinking>;

/// US dollars per million tokens, 0 or more.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "f64", into = "f64")]
pub struct PerMillion(f64);

impl TryFrom<f64> for PerMillion {
    type Error = String;

    fn try_from(v: f64) -> Result<Self, Self::Error> {
        if v.is_finite() && v >= 0.0 {
            Ok(PerMillion(v))
        } else {
            Err(format!(
                "a price is US dollars per million tokens, 0 or more (not {v})"
            ))
        }
    }
}

impl From<PerMillion> for f64 {
    fn from(p: PerMillion) -> f64 {
        p.0
    }
}

/// What a model's tokens cost, as its provider prices them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// Input tokens read fresh (not from the prompt cache).
    pub input: PerMillion,
    pub output: PerMillion,
    /// Input tokens read from the prompt cache (the input price when not set).
    pub cache_read: Option<PerMillion>,
    /// Input tokens written to the prompt cache (the input price when not set:
    /// providers that cache by themselves charge nothing more).
    pub cache_write: Option<PerMillion>,
}

/// Tokens of one turn, by how they are priced.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TokenCounts {
    /// Input read fresh (neither from nor into the cache).
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
}

impl Price {
    /// What `tokens` cost, in millionths of a US dollar (rounded to the nearest).
    pub fn micro_usd(&self, tokens: TokenCounts) -> u64 {
        let input = self.input.0;
        // Dollars per million tokens are millionths of a dollar per token.
        let cost = tokens.input as f64 * input
            + tokens.output as f64 * self.output.0
            + tokens.cache_read as f64 * self.cache_read.map_or(input, |p| p.0)
            + tokens.cache_write as f64 * self.cache_write.map_or(input, |p| p.0);
        if cost.is_finite() && cost > 0.0 {
            // Saturates at u64::MAX, far past any budget.
            cost.round() as u64
        } else {
            0
        }
    }
}

/// Models to fall back on, per agent type (`provider/model`, in order).
pub type FallbackAssignment = PerAgent<Vec<String>>;

/// How long a provider's stream may go without an event, or without progress.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StreamLimits {
    /// No byte at all (not even a keep-alive) for this long: the stream is cut and
    /// the turn tried again (90 s when not set).
    pub idle_secs: Option<u64>,
    /// Nothing of the answer (only keep-alives, or bytes of an event that never ends)
    /// for this long: the stream is cut and the turn tried again (300 s when not set).
    pub stall_secs: Option<u64>,
}

impl StreamLimits {
    /// Connecting to the provider, at most.
    pub const CONNECT_SECS: u64 = 10;
    /// From the request sent to the response's headers, at most.
    pub const FIRST_BYTE_SECS: u64 = 120;
    pub const DEFAULT_IDLE_SECS: u64 = 90;
    pub const DEFAULT_STALL_SECS: u64 = 300;

    /// The idle limit (at least a second).
    pub fn idle(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.idle_secs.unwrap_or(Self::DEFAULT_IDLE_SECS).max(1))
    }

    /// The stall limit (never shorter than the idle limit).
    pub fn stall(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.stall_secs.unwrap_or(Self::DEFAULT_STALL_SECS).max(1))
            .max(self.idle())
    }
}

/// The smallest extended-thinking budget Anthropic takes.
pub const MIN_THINKING_BUDGET: u32 = 1_024;

/// `models.yaml` (the user's), or the shipped table.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelsConfig {
    #[serde(default)]
    pub providers: BTreeMap<String, ProviderConfig>,
    #[serde(default)]
    pub models: ModelAssignment,
    /// The model each provider uses when nothing names one.
    #[serde(default)]
    pub defaults: BTreeMap<String, String>,
    #[serde(default)]
    pub capabilities: BTreeMap<String, Capability>,
    #[serde(default)]
    pub thinking: ThinkingAssignment,
    /// Prices per model (`resources/models.yaml` ships the known ones').
    #[serde(default)]
    pub prices: BTreeMap<String, Price>,
    #[serde(default)]
    pub fallbacks: FallbackAssignment,
    #[serde(default)]
    pub stream: StreamLimits,
}

/// What an agent talks to, resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct ResolvedModel {
    pub provider: String,
    pub kind: ProviderKind,
    pub base_url: String,
    /// The variable holding the key (`None`: the provider takes none).
    pub api_key_env: Option<String>,
    pub model: String,
    pub capability: Capability,
    /// How much it thinks: the agent type's setting, as far as the model offers it.
    pub thinking: Thinking,
    /// What its tokens cost (`None`: no price is known; its turns cost nothing
    /// counted).
    pub price: Option<Price>,
}

/// A provider as `air doctor` shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ProviderStatus {
    pub name: String,
    pub kind: ProviderKind,
    pub base_url: String,
    /// The variable that holds its key (`None`: it takes none).
    pub key_env: Option<String>,
    pub key_set: bool,
    pub default_model: Option<String>,
}

/// The shipped capability table.
pub const SHIPPED: &str = include_str!("../../resources/models.yaml");

/// Used for a model the table does not know.
pub const UNKNOWN_MODEL: Capability = Capability {
    context_window: 128_000,
    max_output: 8_192,
    thinking: false,
    reasoning: false,
};

/// A provider air knows: name, protocol, base URL, the variable that may replace
/// the URL, the variable holding the key.
type Known = (
    &'static str,
    ProviderKind,
    &'static str,
    Option<&'static str>,
    Option<&'static str>,
);

/// The providers air knows, in the order it looks for a key.
const KNOWN: &[Known] = &[
    (
        "anthropic",
        ProviderKind::Anthropic,
        "https://api.anthropic.com",
        Some("ANTHROPIC_BASE_URL"),
        Some("ANTHROPIC_API_KEY"),
    ),
    (
        "openai",
        ProviderKind::OpenaiResponses,
        "https://api.openai.com/v1",
        Some("OPENAI_BASE_URL"),
        Some("OPENAI_API_KEY"),
    ),
    (
        "openrouter",
        ProviderKind::OpenaiChat,
        "https://openrouter.ai/api/v1",
        None,
        Some("OPENROUTER_API_KEY"),
    ),
    (
        "ollama",
        ProviderKind::OpenaiChat,
        "http://localhost:11434/v1",
        Some("OLLAMA_BASE_URL"),
        None,
    ),
];

fn parse(path: &Path, text: &str) -> Result<ModelsConfig, ConfigError> {
    crate::config::parse_yaml(path, text)
}

impl ModelsConfig {
    /// The shipped table with `~/.air/models.yaml` (in `air_home`) over it.
    pub fn load(air_home: Option<&Path>) -> Result<ModelsConfig, ConfigError> {
        let shipped = parse(Path::new("resources/models.yaml"), SHIPPED)?;
        let Some(home) = air_home else {
            return Ok(shipped);
        };
        let user = crate::config::load_yaml(&home.join("models.yaml"))?;
        Ok(shipped.overridden_by(user))
    }

    pub fn parse(path: &Path, text: &str) -> Result<ModelsConfig, ConfigError> {
        parse(path, text)
    }

    pub fn overridden_by(mut self, other: ModelsConfig) -> ModelsConfig {
        self.providers.extend(other.providers);
        self.defaults.extend(other.defaults);
        self.capabilities.extend(other.capabilities);
        self.models = self.models.overridden_by(other.models);
        self.thinking = self.thinking.overridden_by(other.thinking);
        self.prices.extend(other.prices);
        self.fallbacks = self.fallbacks.overridden_by(other.fallbacks);
        let (s, o) = (&mut self.stream, other.stream);
        s.idle_secs = o.idle_secs.or(s.idle_secs);
        s.stall_secs = o.stall_secs.or(s.stall_secs);
        self
    }

    /// The models an agent type falls back on, in order: its own list, else the
    /// default list.
    pub fn fallbacks_for(&self, agent_type: &str) -> &[String] {
        self.fallbacks
            .for_type(agent_type)
            .map_or(&[], Vec::as_slice)
    }

    /// An agent type's thinking for a model of `capability`: its own setting (else the
    /// default), kept only where the model offers it.
    pub fn thinking_for(&self, agent_type: &str, capability: &Capability) -> Thinking {
        let set = self
            .thinking
            .for_type(agent_type)
            .copied()
            .unwrap_or_default();
        Thinking {
            budget_tokens: set
                .budget_tokens
                .filter(|b| capability.thinking && *b >= MIN_THINKING_BUDGET),
            effort: set.effort.filter(|_| capability.reasoning),
        }
    }

    /// A provider's settings: the file's over the known ones', with the SDKs'
    /// base-URL variables in between.
    fn provider(
        &self,
        name: &str,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Option<(ProviderKind, String, Option<String>)> {
        let known = KNOWN.iter().find(|k| k.0 == name);
        let file = self.providers.get(name);
        if known.is_none() && file.is_none() {
            return None;
        }
        let kind = file
            .and_then(|f| f.kind)
            .or(known.map(|k| k.1))
            .unwrap_or(ProviderKind::OpenaiChat);
        let base_url = file
            .and_then(|f| f.base_url.clone())
            .or_else(|| {
                known
                    .and_then(|k| k.3)
                    .and_then(env)
                    .filter(|v| !v.is_empty())
            })
            .or(known.map(|k| k.2.to_string()))?;
        let key_env = file
            .and_then(|f| f.api_key_env.clone())
            .or(known.and_then(|k| k.4).map(str::to_string));
        Some((kind, base_url, key_env))
    }

    fn capability(&self, model: &str) -> Capability {
        self.capabilities
            .get(model)
            .copied()
            .unwrap_or(UNKNOWN_MODEL)
    }

    /// The model for an agent type (`executor`, `reviewer`, …): `wanted` (a flag or
    /// the plan) first, then the assignment in the file, then the first provider with
    /// a key in the environment and its default model. `env` reads variables (so keys
    /// are only checked for, never kept).
    pub fn resolve(
        &self,
        agent_type: &str,
        wanted: Option<&str>,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<ResolvedModel, String> {
        let m = &self.models;
        let assigned = m.own(agent_type).map(String::as_str);
        let has_key = |key_env: &Option<String>| {
            key_env
                .as_deref()
                .is_none_or(|v| env(v).is_some_and(|k| !k.is_empty()))
        };
        let spec = wanted.or(assigned).or(m.default.as_deref());
        let (provider, model) = match spec {
            Some(spec) => match spec.split_once('/') {
                // `provider/`: the provider's default model.
                Some((p, "")) => {
                    if self.provider(p, env).is_none() {
                        return Err(format!(
                            "no provider `{p}` (known: {})",
                            self.provider_names().join(", ")
                        ));
                    }
                    let model = self.defaults.get(p).cloned().ok_or_else(|| {
                        format!("provider `{p}` has no default model; name one (`--model {p}/MODEL`, or `defaults:` in models.yaml)")
                    })?;
                    (p.to_string(), model)
                }
                Some((p, model)) if self.provider(p, env).is_some() => {
                    (p.to_string(), model.to_string())
                }
                // A bare model: the first provider with a key whose default it is, or
                // the first provider with a key.
                _ => {
                    let provider = KNOWN
                        .iter()
                        .map(|k| k.0.to_string())
                        .chain(self.providers.keys().cloned())
                        .filter(|p| {
                            self.provider(p, env)
                                .is_some_and(|(_, _, k)| k.is_some() && has_key(&k))
                        })
                        .min_by_key(|p| self.defaults.get(p).map(String::as_str) != Some(spec))
                        .ok_or_else(|| no_provider(Some(spec)))?;
                    (provider, spec.to_string())
                }
            },
            None => {
                let provider = KNOWN
                    .iter()
                    .map(|k| k.0.to_string())
                    .chain(self.providers.keys().cloned())
                    .find(|p| {
                        self.provider(p, env)
                            .is_some_and(|(_, _, k)| k.is_some() && has_key(&k))
                    })
                    .ok_or_else(|| no_provider(None))?;
                let model = self.defaults.get(&provider).cloned().ok_or_else(|| {
                    format!("provider `{provider}` has no default model; name one in models.yaml (`models.default: {provider}/MODEL`)")
                })?;
                (provider, model)
            }
        };
        let Some((kind, base_url, api_key_env)) = self.provider(&provider, env) else {
            return Err(format!(
                "no provider `{provider}` (known: {})",
                self.provider_names().join(", ")
            ));
        };
        if !has_key(&api_key_env) {
            return Err(format!(
                "provider `{provider}` needs its key in {}, which is not set",
                api_key_env.as_deref().unwrap_or_default()
            ));
        }
        let capability = self.capability(&model);
        Ok(ResolvedModel {
            thinking: self.thinking_for(agent_type, &capability),
            price: self.prices.get(&model).copied(),
            capability,
            provider,
            kind,
            base_url,
            api_key_env,
            model,
        })
    }

    /// Every provider air knows or the file adds, as it stands in this environment
    /// (whether its key variable is set; never the key).
    pub fn provider_statuses(&self, env: &dyn Fn(&str) -> Option<String>) -> Vec<ProviderStatus> {
        self.provider_names()
            .into_iter()
            .filter_map(|name| {
                let (kind, base_url, key_env) = self.provider(&name, env)?;
                let key_set = key_env
                    .as_deref()
                    .is_some_and(|v| env(v).is_some_and(|k| !k.is_empty()));
                Some(ProviderStatus {
                    default_model: self.defaults.get(&name).cloned(),
                    name,
                    kind,
                    base_url,
                    key_env,
                    key_set,
                })
            })
            .collect()
    }

    fn provider_names(&self) -> Vec<String> {
        let mut names: Vec<String> = KNOWN.iter().map(|k| k.0.to_string()).collect();
        names.extend(
            self.providers
                .keys()
                .filter(|k| !names.contains(k))
                .cloned()
                .collect::<Vec<_>>(),
        );
        names
    }
}

/// How the answer starts when no provider at all is configured.
pub const NO_PROVIDER: &str = "no LLM provider is configured";

/// How it ends: what to do. A caller that says the same in its own words (once for
/// many agents) takes it off.
pub const NO_PROVIDER_HINT: &str = ": set ANTHROPIC_API_KEY, OPENAI_API_KEY or OPENROUTER_API_KEY, add a provider to ~/.air/models.yaml, or use a local model with --model ollama/NAME (`air doctor` shows what air finds)";

fn no_provider(model: Option<&str>) -> String {
    format!(
        "{NO_PROVIDER}{}{NO_PROVIDER_HINT}",
        model.map(|m| format!(" for `{m}`")).unwrap_or_default()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
    }

    fn shipped() -> ModelsConfig {
        ModelsConfig::load(None).unwrap_or_default()
    }

    #[test]
    fn the_shipped_table_parses_and_names_defaults() {
        let c = shipped();
        assert_eq!(
            c.defaults.get("anthropic").map(String::as_str),
            Some("claude-sonnet-4-5")
        );
        assert!(c.capabilities.contains_key("claude-sonnet-4-5"));
    }

    #[test]
    fn each_agent_type_thinks_as_set_where_its_model_offers_it() {
        let c = shipped();
        let key = env(&[("ANTHROPIC_API_KEY", "k"), ("OPENAI_API_KEY", "k")]);
        let r = c
            .resolve("executor", Some("anthropic/claude-sonnet-4-5"), &key)
            .unwrap();
        assert_eq!(r.thinking.budget_tokens, Some(4096));
        assert_eq!(
            r.thinking.effort, None,
            "an Anthropic model takes no effort"
        );
        let r = c.resolve("debugger", Some("openai/gpt-5"), &key).unwrap();
        assert_eq!(
            (r.thinking.budget_tokens, r.thinking.effort),
            (None, Some(Effort::High))
        );
        // A model the table does not know thinks not at all.
        let r = c
            .resolve("executor", Some("anthropic/claude-next"), &key)
            .unwrap();
        assert_eq!(r.thinking, Thinking::default());
        // The user's file sets an agent type's own, and 0 turns a budget off.
        let user = ModelsConfig::parse(
            Path::new("models.yaml"),
            "thinking:\n  reviewer: { budget_tokens: 0, effort: low }\n  executor: { budget_tokens: 20000 }\n",
        )
        .unwrap();
        let c = c.overridden_by(user);
        let r = c
            .resolve("reviewer", Some("anthropic/claude-haiku-4-5"), &key)
            .unwrap();
        assert_eq!(r.thinking.budget_tokens, None);
        let r = c
            .resolve("executor", Some("anthropic/claude-haiku-4-5"), &key)
            .unwrap();
        assert_eq!(r.thinking.budget_tokens, Some(20_000));
        let e = ModelsConfig::parse(
            Path::new("models.yaml"),
            "thinking:\n  executor: { effort: max }\n",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("models.yaml") && e.contains("effort"), "{e}");
    }

    #[test]
    fn the_first_provider_with_a_key_is_used_and_base_urls_follow_the_sdks() {
        let c = shipped();
        let r = c
            .resolve(
                "executor",
                None,
                &env(&[
                    ("OPENAI_API_KEY", "k"),
                    ("OPENAI_BASE_URL", "http://127.0.0.1:9/v1"),
                ]),
            )
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            (r.provider.as_str(), r.kind),
            ("openai", ProviderKind::OpenaiResponses)
        );
        assert_eq!(r.base_url, "http://127.0.0.1:9/v1");
        assert_eq!(r.model, "gpt-5");
        assert_eq!(r.api_key_env.as_deref(), Some("OPENAI_API_KEY"));
        let r = c
            .resolve(
                "reviewer",
                None,
                &env(&[("ANTHROPIC_API_KEY", "k"), ("OPENAI_API_KEY", "k")]),
            )
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.provider, "anthropic");
        assert_eq!(r.capability.context_window, 200_000);
    }

    #[test]
    fn assignments_flags_and_missing_keys() {
        let user = ModelsConfig::parse(
            Path::new("models.yaml"),
            "providers:\n  local:\n    kind: openai_chat\n    base_url: http://localhost:8080/v1\nmodels:\n  default: anthropic/claude-haiku-4-5\n  reviewer: local/qwen3\n",
        )
        .unwrap_or_default();
        let c = shipped().overridden_by(user);
        let e = env(&[("ANTHROPIC_API_KEY", "k")]);
        let r = c
            .resolve("executor", None, &e)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.model, "claude-haiku-4-5");
        let r = c
            .resolve("reviewer", None, &e)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            (r.provider.as_str(), r.model.as_str(), r.api_key_env),
            ("local", "qwen3", None)
        );
        assert_eq!(r.capability, UNKNOWN_MODEL);
        let r = c
            .resolve("executor", Some("anthropic/claude-opus-4-5"), &e)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.model, "claude-opus-4-5");
        let missing = c.resolve("executor", Some("openai/gpt-5"), &e).unwrap_err();
        assert!(
            missing.contains("needs its key in OPENAI_API_KEY"),
            "{missing}"
        );
        let none = shipped().resolve("executor", None, &env(&[])).unwrap_err();
        assert!(
            none.starts_with("no LLM provider is configured: set ANTHROPIC_API_KEY"),
            "{none}"
        );
        // `provider/`: that provider's default model.
        let r = c
            .resolve(
                "executor",
                Some("openai/"),
                &env(&[("OPENAI_API_KEY", "k")]),
            )
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((r.provider.as_str(), r.model.as_str()), ("openai", "gpt-5"));
        let e2 = c.resolve("executor", Some("local/"), &e).unwrap_err();
        assert!(e2.contains("`local` has no default model"), "{e2}");
        let e3 = c.resolve("executor", Some("nope/"), &e).unwrap_err();
        assert!(e3.starts_with("no provider `nope`"), "{e3}");
        let bad = ModelsConfig::parse(Path::new("m.yaml"), "models:\n  executer: x\n").unwrap_err();
        assert!(bad.to_string().starts_with("m.yaml:2"), "{bad}");
    }

    #[test]
    fn prices_turn_usage_into_cost_and_the_user_file_overrides_them() {
        let c = shipped();
        let sonnet = c
            .prices
            .get("claude-sonnet-4-5")
            .copied()
            .unwrap_or_default();
        let turn = TokenCounts {
            input: 1_000,
            output: 500,
            cache_read: 2_000,
            cache_write: 100,
        };
        // 1,000 × $3 + 500 × $15 + 2,000 × $0.30 + 100 × $3.75, per million.
        assert_eq!(sonnet.micro_usd(turn), 11_475);
        // OpenAI charges no more for writing its cache: the input price.
        let gpt = c.prices.get("gpt-5").copied().unwrap_or_default();
        assert_eq!(gpt.micro_usd(turn), 1_250 + 5_000 + 250 + 125);
        let key = env(&[("ANTHROPIC_API_KEY", "k")]);
        let r = c
            .resolve("executor", Some("anthropic/claude-haiku-4-5"), &key)
            .unwrap();
        assert_eq!(
            r.price.map(|p| p.micro_usd(turn)),
            Some(1_000 + 2_500 + 200 + 125)
        );
        assert_eq!(
            c.resolve("executor", Some("anthropic/claude-next"), &key)
                .unwrap()
                .price,
            None
        );
        let user = ModelsConfig::parse(
            Path::new("models.yaml"),
            "prices:\n  claude-next: { input: 2, output: 8 }\nfallbacks:\n  default: [openai/gpt-5]\n  executor: [anthropic/claude-haiku-4-5, openai/gpt-5-mini]\nstream: { stall_secs: 30 }\n",
        )
        .unwrap();
        let c = c.overridden_by(user);
        let r = c
            .resolve("executor", Some("anthropic/claude-next"), &key)
            .unwrap();
        assert_eq!(
            r.price.map(|p| p.micro_usd(turn)),
            Some(2_000 + 4_000 + 4_000 + 200)
        );
        assert_eq!(
            c.fallbacks_for("executor"),
            ["anthropic/claude-haiku-4-5", "openai/gpt-5-mini"]
        );
        assert_eq!(c.fallbacks_for("reviewer"), ["openai/gpt-5"]);
        assert!(shipped().fallbacks_for("executor").is_empty());
        assert_eq!(c.stream.idle(), std::time::Duration::from_secs(90));
        assert_eq!(
            c.stream.stall(),
            std::time::Duration::from_secs(90),
            "never under idle"
        );
        let bad = ModelsConfig::parse(
            Path::new("m.yaml"),
            "prices:\n  x: { input: -1, output: 2 }\n",
        )
        .unwrap_err()
        .to_string();
        assert!(
            bad.starts_with("m.yaml:2") && bad.contains("0 or more"),
            "{bad}"
        );
    }
}
