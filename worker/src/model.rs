//! The model an agent talks to: resolved from `models.yaml` and the environment (or
//! the recording a run replays), the client of its protocol, what its tokens cost, and
//! the models it falls back on when its provider keeps failing.

use air_proto::event::AgentType;
use air_proto::ipc::{ModelChoice, ModelQuery, ModelReply};
use air_proto::models::{ModelsConfig, ProviderKind, ResolvedModel, Thinking};
use serde_json::Value;

use crate::provider::anthropic::Anthropic;
use crate::provider::openai::OpenAiChat;
use crate::provider::responses::OpenAiResponses;
use crate::provider::{Adapter, Delta, RetryPolicy, Timeouts, TurnRequest};
use crate::replay::{self, Recording, Server};

/// A provider client of any protocol.
enum Client {
    Anthropic(Anthropic),
    Chat(OpenAiChat),
    Responses(OpenAiResponses),
}

impl Client {
    fn new(m: &ResolvedModel, key: Option<String>, timeouts: Timeouts) -> Result<Client, String> {
        let retry = RetryPolicy::default();
        match m.kind {
            ProviderKind::Anthropic => {
                Anthropic::new(&m.base_url, key.as_deref().unwrap_or(""), timeouts, retry)
                    .map(Client::Anthropic)
            }
            ProviderKind::OpenaiChat => {
                OpenAiChat::new(&m.base_url, key.as_deref(), timeouts, retry).map(Client::Chat)
            }
            ProviderKind::OpenaiResponses => {
                OpenAiResponses::new(&m.base_url, key.as_deref(), timeouts, retry)
                    .map(Client::Responses)
            }
        }
        .map_err(|e| e.to_string())
    }

    /// The request body of a turn, as this client sends it.
    fn body(&self, request: &TurnRequest) -> Value {
        match self {
            Client::Anthropic(c) => c.body(request),
            Client::Chat(c) => c.body(request),
            Client::Responses(c) => c.body(request),
        }
    }

    async fn turn(
        &self,
        request: &TurnRequest,
        on_delta: &mut (dyn FnMut(Delta<'_>) + Send),
    ) -> Result<crate::provider::Turn, crate::provider::ProviderError> {
        match self {
            Client::Anthropic(c) => c.turn(request, on_delta).await,
            Client::Chat(c) => c.turn(request, on_delta).await,
            Client::Responses(c) => c.turn(request, on_delta).await,
        }
    }
}

/// The model an agent talks to: the run's override (`--model`/`--provider`), else
/// `AIR_MODEL`, else the task's `model` from the plan, else `~/.air/models.yaml` and
/// the environment.
pub fn resolve_model(
    role: AgentType,
    flag: Option<&str>,
    task_model: Option<&str>,
) -> Result<ResolvedModel, String> {
    resolve_in(&models_config()?, role, flag, task_model)
}

fn resolve_in(
    models: &ModelsConfig,
    role: AgentType,
    flag: Option<&str>,
    task_model: Option<&str>,
) -> Result<ResolvedModel, String> {
    let nonempty = |m: Option<&str>| m.filter(|m| !m.is_empty()).map(str::to_string);
    let wanted = nonempty(flag)
        .or_else(|| nonempty(std::env::var("AIR_MODEL").ok().as_deref()))
        .or_else(|| nonempty(task_model));
    models.resolve(role.as_str(), wanted.as_deref(), &|k| std::env::var(k).ok())
}

/// The shipped capability table with `~/.air/models.yaml` (or `$AIR_HOME`'s) over it.
fn models_config() -> Result<ModelsConfig, String> {
    let air_home = std::env::var_os("AIR_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join(".air")));
    ModelsConfig::load(air_home.as_deref()).map_err(|e| e.to_string())
}

/// A recorded model as a live run has it: its capability from the shipped table and
/// the agent type's thinking, so a replay sends what the recorded run sent.
fn as_recorded(model: &str, role: AgentType) -> (air_proto::models::Capability, Thinking) {
    // The shipped table, not this user's: a recording replays the same anywhere. A
    // model the shipped table does not know (a local one) has the window the user
    // gave it, else the unknown model's.
    let models = ModelsConfig::load(None).unwrap_or_default();
    let capability = models
        .capabilities
        .get(model)
        .copied()
        .or_else(|| {
            models_config()
                .ok()
                .and_then(|user| user.capabilities.get(model).copied())
        })
        .unwrap_or(air_proto::models::UNKNOWN_MODEL);
    let thinking = models.thinking_for(role.as_str(), &capability);
    (capability, thinking)
}

/// The model a replayed run uses: the one its recordings name.
fn replayed_model(dir: &str, role: AgentType) -> Result<ModelChoice, String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("the recording {dir}: {e}"))?;
    let mut files: Vec<_> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .filter(|p| {
            p.file_name()
                .is_none_or(|n| n != air_proto::ipc::RECORDING_MANIFEST)
        })
        .collect();
    files.sort();
    let first = files
        .first()
        .ok_or_else(|| format!("the recording {dir} holds no conversations (*.json)"))?;
    let recording = Recording::load(first)?;
    let (_, model) =
        replay::recorded_model(&recording).map_err(|e| format!("{}: {e}", first.display()))?;
    let (capability, thinking) = as_recorded(&model, role);
    Ok(ModelChoice {
        provider: "replay".into(),
        model,
        context_window: capability.context_window,
        max_output: capability.max_output,
        thinking_budget: thinking.budget_tokens,
        unpriced: false,
    })
}

/// Whether a provider at `base_url` runs on this machine (a local model costs
/// nothing).
fn local(base_url: &str) -> bool {
    let rest = base_url.split_once("://").map_or(base_url, |(_, r)| r);
    let host = rest.split(['/', '?']).next().unwrap_or("");
    let host = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(h, _)| h),
    };
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The answer to `air-worker --resolve`.
pub fn answer(q: &ModelQuery) -> ModelReply {
    if let Some(dir) = q.replay.as_deref() {
        return match replayed_model(dir, q.agent_type) {
            Ok(c) => ModelReply {
                resolved: Some(c),
                error: None,
            },
            Err(e) => ModelReply {
                resolved: None,
                error: Some(e),
            },
        };
    }
    match resolve_model(q.agent_type, q.flag.as_deref(), q.task.as_deref()) {
        Ok(m) => ModelReply {
            resolved: Some(ModelChoice {
                provider: m.provider,
                model: m.model,
                context_window: m.capability.context_window,
                max_output: m.capability.max_output,
                thinking_budget: m.thinking.budget_tokens,
                unpriced: m.price.is_none() && !local(&m.base_url),
            }),
            error: None,
        },
        Err(e) => ModelReply {
            resolved: None,
            error: Some(e),
        },
    }
}

/// The model an agent replays: a loopback server answering from its recording.
async fn replaying(
    dir: &str,
    agent_id: &str,
    role: AgentType,
    root: Option<String>,
    unchecked: bool,
) -> Result<(ResolvedModel, Server), String> {
    let file = replay::file_for(std::path::Path::new(dir), agent_id);
    if !file.exists() {
        return Err(format!(
            "the recording has no conversation for agent {agent_id} ({} is missing): the run took a path the recorded one did not",
            file.display()
        ));
    }
    let mut recording = Recording::load(&file)?;
    let (kind, model) =
        replay::recorded_model(&recording).map_err(|e| format!("{}: {e}", file.display()))?;
    if unchecked {
        for x in &mut recording.exchanges {
            x.request = None;
        }
    }
    let (capability, thinking) = as_recorded(&model, role);
    let price = ModelsConfig::load(None)
        .ok()
        .and_then(|m| m.prices.get(&model).copied());
    let server = Server::start(recording.exchanges, root)
        .await
        .map_err(|e| format!("cannot serve the recording: {e}"))?;
    let base_url = match kind {
        ProviderKind::Anthropic => server.url.clone(),
        _ => format!("{}/v1", server.url),
    };
    Ok((
        ResolvedModel {
            provider: "replay".into(),
            kind,
            base_url,
            api_key_env: None,
            capability,
            thinking,
            price,
            model,
        },
        server,
    ))
}

/// Output tokens asked for per turn, at most.
pub const MAX_OUTPUT: u32 = 16_384;

/// Output tokens a turn asks for: the answer's room, plus the thinking budget or room
/// for the reasoning an effort asks for, within what the model gives (a model that
/// gives less than the answer's room still gets the answer's room: its own limit
/// decides).
pub fn max_tokens(m: &ResolvedModel) -> u32 {
    let thinking = match (m.thinking.budget_tokens, m.thinking.effort) {
        (Some(budget), _) => budget,
        (None, Some(air_proto::models::Effort::High)) => 2 * MAX_OUTPUT,
        (None, Some(air_proto::models::Effort::Medium)) => MAX_OUTPUT,
        (None, Some(_)) => MAX_OUTPUT / 2,
        (None, None) => 0,
    };
    if thinking == 0 {
        return MAX_OUTPUT;
    }
    MAX_OUTPUT
        .saturating_add(thinking)
        .min(m.capability.max_output.max(MAX_OUTPUT))
}

/// The model an agent talks to, its client, and the models it may fall back on.
pub struct Talker {
    pub resolved: ResolvedModel,
    client: Client,
    /// The models still to try when this one's provider keeps failing
    /// (`provider/model`, in order; none when replaying).
    fallbacks: std::collections::VecDeque<String>,
    config: ModelsConfig,
    role: AgentType,
    timeouts: Timeouts,
    /// The loopback server a replay talks to, kept while the agent runs.
    _replay: Option<Server>,
}

/// A change of model after the provider kept failing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fallback {
    pub from: String,
    pub to: String,
    /// Why: the last failure, and the configured models passed over on the way.
    pub reason: String,
}

impl Talker {
    /// The model for `start`: the recording a replay names, else the one airsd
    /// resolved (or the same resolution here, for a worker started by hand).
    pub async fn open(
        start: &air_proto::ipc::AgentStart,
        role: AgentType,
        root: Option<String>,
    ) -> Result<Talker, String> {
        // A configuration that cannot be read still lets a replay run (it needs
        // nothing of it); a live model needs it.
        let config = models_config();
        let limits = config.as_ref().map(|c| c.stream).unwrap_or_default();
        let timeouts = Timeouts::of(&limits);
        // Replaying while recording re-records: today's requests are taken as they are.
        let rerecord = start.runtime.record.is_some();
        if let Some(dir) = start.runtime.replay.as_deref() {
            let (resolved, server) =
                replaying(dir, &start.runtime.agent_id, role, root, rerecord).await?;
            let client = Client::new(&resolved, Some("replay".into()), timeouts)?;
            return Ok(Talker {
                resolved,
                client,
                fallbacks: Default::default(),
                config: config.unwrap_or_default(),
                role,
                timeouts,
                _replay: Some(server),
            });
        }
        let config = config?;
        // The model airsd resolved for this agent, when it did.
        let chosen = start
            .runtime
            .resolved
            .as_ref()
            .map(|c| format!("{}/{}", c.provider, c.model));
        let resolved = match chosen.as_deref() {
            Some(spec) => resolve_in(&config, role, Some(spec), None),
            None => resolve_in(
                &config,
                role,
                start.runtime.model.as_deref(),
                start.task_spec.constraints.model_id.as_deref(),
            ),
        }?;
        let key = key_of(&resolved);
        let client = Client::new(&resolved, key, timeouts)?;
        let current = format!("{}/{}", resolved.provider, resolved.model);
        let fallbacks = config
            .fallbacks_for(role.as_str())
            .iter()
            .filter(|f| **f != current)
            .cloned()
            .collect();
        Ok(Talker {
            resolved,
            client,
            fallbacks,
            config,
            role,
            timeouts,
            _replay: None,
        })
    }

    /// The request body of a turn, as the client sends it.
    pub fn body(&self, request: &TurnRequest) -> Value {
        self.client.body(request)
    }

    pub async fn turn(
        &self,
        request: &TurnRequest,
        on_delta: &mut (dyn FnMut(Delta<'_>) + Send),
    ) -> Result<crate::provider::Turn, crate::provider::ProviderError> {
        self.client
            .turn(request, on_delta)
            .await
            .map_err(|e| e.named(&self.resolved.provider))
    }

    /// What a turn's tokens cost, in millionths of a US dollar (`None`: the model
    /// has no price).
    pub fn cost(&self, usage: &crate::provider::TurnUsage) -> Option<u64> {
        self.resolved.price.map(|p| p.micro_usd(usage.counts()))
    }

    /// The models this agent could choose (`model_policy: agent_select`): those of the
    /// capability table, and the configured fallbacks, that resolve here (their
    /// provider's key is set) and have a price or run on this machine (a choice never
    /// slips past a cost budget); the current one first. None when replaying.
    pub fn selectable(&self) -> Vec<String> {
        if self._replay.is_some() {
            return Vec::new();
        }
        let current = format!("{}/{}", self.resolved.provider, self.resolved.model);
        let mut out = vec![current];
        let named = self
            .config
            .capabilities
            .keys()
            .cloned()
            .chain(self.fallbacks.iter().cloned());
        for spec in named {
            let Ok(m) = resolve_in(&self.config, self.role, Some(&spec), None) else {
                continue;
            };
            let name = format!("{}/{}", m.provider, m.model);
            // Never a smaller window than the conversation was sized for.
            let room = m.capability.context_window >= self.resolved.capability.context_window;
            if room && (m.price.is_some() || local(&m.base_url)) && !out.contains(&name) {
                out.push(name);
            }
        }
        out
    }

    /// The agent chose `spec` (one of [`Talker::selectable`]): it talks to it from
    /// now on. Answers the model it talked to before.
    pub fn select(&mut self, spec: &str) -> Result<String, String> {
        let from = format!("{}/{}", self.resolved.provider, self.resolved.model);
        let choices = self.selectable();
        let Some(name) = choices
            .iter()
            .find(|c| *c == spec || c.rsplit_once('/').is_some_and(|(_, m)| m == spec))
        else {
            return Err(format!(
                "`{spec}` is not one of the models you may choose: {}",
                choices.join(", ")
            ));
        };
        if *name == from {
            return Err(format!("you already talk to {from}"));
        }
        let mut m = resolve_in(&self.config, self.role, Some(name), None)?;
        // Its history's thinking was another model's (see `fall_back`).
        m.thinking = Thinking::default();
        self.client = Client::new(&m, key_of(&m), self.timeouts)?;
        self.resolved = m;
        Ok(from)
    }

    /// After the provider kept failing with `why`: the next configured model that
    /// can be reached becomes this agent's (`None`: none is left). `kind`, when
    /// set, is the only protocol allowed (a recording holds one).
    pub fn fall_back(&mut self, why: &str, kind: Option<ProviderKind>) -> Option<Fallback> {
        let from = format!("{}/{}", self.resolved.provider, self.resolved.model);
        let mut passed = Vec::new();
        while let Some(spec) = self.fallbacks.pop_front() {
            let next = resolve_in(&self.config, self.role, Some(&spec), None).and_then(|mut m| {
                if kind.is_some_and(|k| k != m.kind) {
                    return Err("a recording holds one protocol".to_string());
                }
                // Its history's thinking was another model's: the fallback answers
                // without thinking (Anthropic refuses a tool loop whose thinking
                // it cannot verify).
                m.thinking = Thinking::default();
                let client = Client::new(&m, key_of(&m), self.timeouts)?;
                Ok((m, client))
            });
            match next {
                Ok((m, client)) => {
                    self.resolved = m;
                    self.client = client;
                    let mut reason = why.to_string();
                    if !passed.is_empty() {
                        reason.push_str(&format!("; passed over: {}", passed.join("; ")));
                    }
                    return Some(Fallback {
                        from,
                        to: spec,
                        reason,
                    });
                }
                Err(e) => passed.push(format!("{spec} ({e})")),
            }
        }
        None
    }
}

/// The key of a resolved model, from the variable it names.
fn key_of(m: &ResolvedModel) -> Option<String> {
    m.api_key_env.as_deref().and_then(|v| std::env::var(v).ok())
}

#[cfg(test)]
mod tests {
    use super::local;

    #[test]
    fn a_model_on_this_machine_is_local() {
        for url in [
            "http://localhost:11434/v1",
            "http://127.0.0.1:8080",
            "http://[::1]:9/v1",
            "http://LOCALHOST/v1",
        ] {
            assert!(local(url), "{url}");
        }
        for url in [
            "https://openrouter.ai/api/v1",
            "https://localhost.example.com/v1",
            "http://10.0.0.5:8080/v1",
        ] {
            assert!(!local(url), "{url}");
        }
    }
}
