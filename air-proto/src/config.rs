//! The user's configuration, `~/.air/config.yaml` (`$AIR_HOME/config.yaml`).
//!
//! ```yaml
//! run:
//!   concurrency: 4          # most agents at once, unless the plan or a flag says
//!   on_ask: deny            # deny | fail | queue
//!   permission_mode: default
//! ```
//!
//! Every key is optional; an unknown key is an error naming the file, the key and the
//! line, so a typo never silently changes nothing.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::plan::{OnAsk, PermissionMode};

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UserConfig {
    #[serde(default)]
    pub run: RunDefaults,
}

/// Defaults for plan runs; the plan's front matter and `air run` flags override them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunDefaults {
    pub concurrency: Option<u32>,
    pub on_ask: Option<OnAsk>,
    pub permission_mode: Option<PermissionMode>,
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}{line}: {message}")]
    Invalid {
        path: PathBuf,
        /// `:LINE` when known.
        line: String,
        message: String,
    },
}

impl UserConfig {
    /// Reads `config.yaml` in `air_home`; a missing file is the default configuration.
    pub fn load(air_home: &Path) -> Result<UserConfig, ConfigError> {
        let path = air_home.join("config.yaml");
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(source) => return Err(ConfigError::Read { path, source }),
        };
        Self::parse(&path, &text)
    }

    pub fn parse(path: &Path, text: &str) -> Result<UserConfig, ConfigError> {
        if text.trim().is_empty() {
            return Ok(Self::default());
        }
        let config: UserConfig = yaml_serde::from_str(text).map_err(|e| ConfigError::Invalid {
            path: path.to_path_buf(),
            line: e
                .location()
                .map(|l| format!(":{}", l.line()))
                .unwrap_or_default(),
            message: e.to_string(),
        })?;
        if config.run.concurrency == Some(0) {
            return Err(ConfigError::Invalid {
                path: path.to_path_buf(),
                line: String::new(),
                message: "run.concurrency must be at least 1".into(),
            });
        }
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_names_bad_keys() {
        let p = Path::new("/home/u/.air/config.yaml");
        let c = UserConfig::parse(p, "run:\n  concurrency: 3\n  on_ask: queue\n").unwrap();
        assert_eq!(c.run.concurrency, Some(3));
        assert_eq!(c.run.on_ask, Some(OnAsk::Queue));
        let e = UserConfig::parse(p, "run:\n  concurency: 3\n")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("/home/u/.air/config.yaml:2"), "{e}");
        assert!(e.contains("unknown field `concurency`"), "{e}");
        let e = UserConfig::parse(p, "run:\n  on_ask: maybe\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("maybe"), "{e}");
        assert_eq!(UserConfig::parse(p, "").unwrap(), UserConfig::default());
    }
}
