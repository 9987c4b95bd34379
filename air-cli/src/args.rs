//! The command-line arguments `air run` and `air chat` share: the ask policy, the
//! permission mode, durations, recording directories and the model spec.

use air_proto::plan::{OnAsk, PermissionMode};
use std::time::Duration;

use crate::{exit, Failure};

pub(crate) fn usage(message: String) -> Failure {
    Failure {
        code: exit::USAGE,
        message,
    }
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum OnAskArg {
    Deny,
    Fail,
    Queue,
}

/// Spelled as plans and the API spell them (`accept_edits`); the kebab-case spelling
/// is taken too.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
#[value(rename_all = "snake_case")]
pub enum ModeArg {
    Default,
    #[value(alias = "accept-edits")]
    AcceptEdits,
    Plan,
    #[value(alias = "bypass-permissions")]
    BypassPermissions,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum LandArg {
    Never,
    Clean,
    Always,
}

impl LandArg {
    pub fn land(self) -> air_proto::plan::Land {
        match self {
            LandArg::Never => air_proto::plan::Land::Never,
            LandArg::Clean => air_proto::plan::Land::Clean,
            LandArg::Always => air_proto::plan::Land::Always,
        }
    }
}

impl OnAskArg {
    pub fn policy(self) -> OnAsk {
        match self {
            OnAskArg::Deny => OnAsk::Deny,
            OnAskArg::Fail => OnAsk::Fail,
            OnAskArg::Queue => OnAsk::Queue,
        }
    }
}

impl ModeArg {
    pub fn mode(self) -> PermissionMode {
        match self {
            ModeArg::Default => PermissionMode::Default,
            ModeArg::AcceptEdits => PermissionMode::AcceptEdits,
            ModeArg::Plan => PermissionMode::Plan,
            ModeArg::BypassPermissions => PermissionMode::BypassPermissions,
        }
    }
}

pub fn parse_duration(s: &str) -> Result<Duration, String> {
    humantime::parse_duration(s).map_err(|e| format!("`{s}`: {e} (e.g. 90s, 30m, 2h)"))
}

/// A directory as an absolute path (made from the current directory).
pub fn absolute(dir: &std::path::Path) -> Result<String, Failure> {
    let cwd = std::env::current_dir()
        .map_err(|e| usage(format!("cannot read the current directory: {e}")))?;
    Ok(cwd.join(dir).display().to_string())
}

/// A recording directory, which must exist.
pub fn existing_dir(dir: &std::path::Path) -> Result<String, Failure> {
    std::fs::canonicalize(dir)
        .ok()
        .filter(|d| d.is_dir())
        .map(|d| d.display().to_string())
        .ok_or_else(|| usage(format!("--replay {}: no such directory", dir.display())))
}

/// The settings of a conversation's run as `air chat` and `air plan new` take them.
pub struct Conversation<'a> {
    pub title: Option<String>,
    pub on_ask: Option<OnAskArg>,
    pub permission_mode: Option<ModeArg>,
    pub provider: Option<&'a str>,
    pub model: Option<&'a str>,
    pub record: Option<&'a std::path::Path>,
    pub replay: Option<&'a std::path::Path>,
}

impl Conversation<'_> {
    /// `conversation.start`'s params (paths made absolute, the replay checked).
    pub fn params(&self) -> Result<air_proto::api::params::ConversationStart, Failure> {
        Ok(air_proto::api::params::ConversationStart {
            title: self.title.clone(),
            concurrency: None,
            on_ask: self.on_ask.map(OnAskArg::policy),
            permission_mode: self.permission_mode.map(ModeArg::mode),
            max_cost: None,
            max_tokens: None,
            max_time_ms: None,
            model: model_spec(self.provider, self.model)?,
            record: self.record.map(absolute).transpose()?,
            replay: self.replay.map(existing_dir).transpose()?,
            // As ~/.air/config.yaml says.
            learn: None,
            env: Some(air_proto::env::ClientEnv::current()),
            message: None,
            steer: None,
        })
    }
}

/// `--provider` and `--model` as one model spec (`provider/model`, `model` or
/// `provider/`).
pub fn model_spec(provider: Option<&str>, model: Option<&str>) -> Result<Option<String>, Failure> {
    let provider = provider.map(str::trim).filter(|p| !p.is_empty());
    let model = model.map(str::trim).filter(|m| !m.is_empty());
    Ok(match (provider, model) {
        (None, m) => m.map(str::to_string),
        (Some(p), _) if p.contains('/') => {
            return Err(usage(format!(
                "--provider `{p}`: a provider name has no `/` (give the model with --model)"
            )))
        }
        (Some(p), None) => Some(format!("{p}/")),
        (Some(p), Some(m)) => match m.split_once('/') {
            Some((mp, _)) if mp == p => Some(m.to_string()),
            _ => Some(format!("{p}/{m}")),
        },
    })
}
