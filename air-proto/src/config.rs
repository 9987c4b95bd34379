//! The user's configuration, `~/.air/config.yaml` (`$AIR_HOME/config.yaml`).
//!
//! ```yaml
//! run:
//!   concurrency: 4          # most agents at once, unless the plan or a flag says
//!   on_ask: deny            # deny | fail | queue
//!   permission_mode: default
//! worktrees:
//!   keep_days: 7            # kept worktrees (failed, blocked tasks) pruned after
//!   max_gb: 10              # and the oldest while all of them take more
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
    #[serde(default)]
    pub worktrees: WorktreeLimits,
    /// The terminal UI's section (theme, keys), read by `air attach`.
    #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
    pub attach: serde_json::Value,
}

/// Defaults for plan runs; the plan's front matter and `air run` flags override them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunDefaults {
    pub concurrency: Option<u32>,
    pub on_ask: Option<OnAsk>,
    pub permission_mode: Option<PermissionMode>,
    /// Whether the ExperienceMiner learns from runs and conversations (D-024): it
    /// calls the model in the background, so it is off unless asked for.
    pub learn: Option<bool>,
}

/// How long a task's worktree kept for inspection (its task failed or was blocked) is
/// kept, and how much disk all of them may take; the oldest go first.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorktreeLimits {
    /// Days since a kept worktree last changed before it is pruned (default 7).
    pub keep_days: Option<u32>,
    /// GiB all kept worktrees may take before the oldest are pruned (default 10).
    pub max_gb: Option<f64>,
}

impl WorktreeLimits {
    /// Seconds a kept worktree is kept.
    pub fn keep_secs(&self) -> u64 {
        u64::from(self.keep_days.unwrap_or(7)) * 86_400
    }

    /// Bytes all kept worktrees may take.
    pub fn budget_bytes(&self) -> u64 {
        let gb = self.max_gb.unwrap_or(10.0);
        if gb.is_finite() && gb > 0.0 {
            (gb * f64::from(1u32 << 30)) as u64
        } else {
            0
        }
    }
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

/// Reads a YAML configuration file's text; an empty file is the default. An error
/// names the file and the line.
pub fn parse_yaml<T: serde::de::DeserializeOwned + Default>(
    path: &Path,
    text: &str,
) -> Result<T, ConfigError> {
    if text.trim().is_empty() {
        return Ok(T::default());
    }
    yaml_serde::from_str(text).map_err(|e| ConfigError::Invalid {
        path: path.to_path_buf(),
        line: e
            .location()
            .map(|l| format!(":{}", l.line()))
            .unwrap_or_default(),
        message: e.to_string(),
    })
}

/// A Markdown file's YAML front matter (`---` lines around it at the top) with the
/// line it starts on, and the body after it; no front matter, the whole text.
pub fn split_front_matter(text: &str) -> (Option<(&str, usize)>, &str) {
    let Some(rest) = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
    else {
        return (None, text);
    };
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            return (Some((&rest[..offset], 2)), &rest[offset + line.len()..]);
        }
        offset += line.len();
    }
    (None, text)
}

/// Reads front matter that starts on line `first_line` of `path`; an error names the
/// file and the file's line (not the front matter's).
pub fn parse_front_matter<T: serde::de::DeserializeOwned + Default>(
    path: &Path,
    yaml: &str,
    first_line: usize,
) -> Result<T, String> {
    parse_yaml(path, yaml).map_err(|e| match e {
        ConfigError::Invalid { line, message, .. } => {
            let line = line
                .trim_start_matches(':')
                .parse::<usize>()
                .map(|l| format!(":{}", l + first_line - 1))
                .unwrap_or_default();
            // The parser's own position is of the front matter alone.
            let message = message
                .split(" at line ")
                .next()
                .unwrap_or(&message)
                .to_string();
            format!("{}{line}: {message}", path.display())
        }
        other => other.to_string(),
    })
}

/// Reads a YAML configuration file; a missing file is the default.
pub fn load_yaml<T: serde::de::DeserializeOwned + Default>(path: &Path) -> Result<T, ConfigError> {
    match std::fs::read_to_string(path) {
        Ok(text) => parse_yaml(path, &text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(T::default()),
        Err(source) => Err(ConfigError::Read {
            path: path.to_path_buf(),
            source,
        }),
    }
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
        let config: UserConfig = parse_yaml(path, text)?;
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

/// `permissions.yaml`: the user's (`~/.air/permissions.yaml`) and the project's
/// (`.air/shared/permissions.yaml`, shareable through git). The project's file wins
/// key by key; lists add up.
///
/// ```yaml
/// profile: low            # low (default) | high: high asks nothing but what the
///                         # security model always confirms (credentials, system paths)
/// git_writes: ask         # ask (default) | allow: writes into .git/
/// credentials: [~/.config/acme/token]   # more paths that always need confirmation
/// system_paths: [/opt/appliance/]       # more system-sensitive paths
/// writable_roots: [~/.m2]               # more places commands may write (sandbox)
/// allow_domains: [pypi.org, "*.example.com"]  # hosts commands reach without asking
///                                       # (through air's proxy; others are asked)
/// readable_roots: [~/data]              # more of the home directory commands may read
///                                       # (only in your own ~/.air/permissions.yaml)
/// sandbox: true           # run commands under the OS sandbox where the kernel has it
/// shell_env: [JAVA_OPTS, MYAPP_*]       # more variables commands see (never keys,
///                                       # tokens, secrets or passwords)
/// config_writes: ask      # ask (default) | allow: agents' changes to the project's
///                         # permissions.yaml (only in your own ~/.air/permissions.yaml)
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PermissionsConfig {
    pub profile: Option<PermissionProfile>,
    pub git_writes: Option<GitWrites>,
    #[serde(default)]
    pub credentials: Vec<String>,
    #[serde(default)]
    pub system_paths: Vec<String>,
    #[serde(default)]
    pub writable_roots: Vec<String>,
    /// Places in the home directory commands may read besides the toolchains and
    /// caches (only the user's own file may name them).
    #[serde(default)]
    pub readable_roots: Vec<String>,
    /// Hosts commands may connect to without a person's yes (`name`, `*.domain`).
    #[serde(default)]
    pub allow_domains: Vec<String>,
    pub sandbox: Option<bool>,
    /// Names (or `PREFIX_*`) of environment variables commands see besides the
    /// ordinary ones.
    #[serde(default)]
    pub shell_env: Vec<String>,
    /// Whether agents' changes to the project's `permissions.yaml` ask (the default)
    /// or are allowed; honoured only in the user's own file.
    pub config_writes: Option<GitWrites>,
}

wire_enum! {
    /// The permission profiles (D-017): how much happens without asking.
    pub enum PermissionProfile {
        /// Risky actions ask (the `default` permission mode).
        Low = "low",
        /// Nothing asks except credentials and system-sensitive paths
        /// (`bypass_permissions`).
        High = "high",
    }
}

wire_enum! {
    /// Whether agents' writes into `.git/` ask first (D-027).
    pub enum GitWrites {
        Ask = "ask",
        Allow = "allow",
    }
}

impl PermissionProfile {
    pub fn mode(self) -> PermissionMode {
        match self {
            PermissionProfile::Low => PermissionMode::Default,
            PermissionProfile::High => PermissionMode::BypassPermissions,
        }
    }
}

impl PermissionsConfig {
    /// Reads one `permissions.yaml`; a missing file is empty.
    pub fn load_file(path: &Path) -> Result<PermissionsConfig, ConfigError> {
        load_yaml(path)
    }

    pub fn parse(path: &Path, text: &str) -> Result<PermissionsConfig, ConfigError> {
        parse_yaml(path, text)
    }

    /// The user's file, then the project's over it.
    pub fn load(air_home: &Path, project_shared: &Path) -> Result<PermissionsConfig, ConfigError> {
        let user = Self::load_file(&air_home.join("permissions.yaml"))?;
        let project = Self::load_project(&project_shared.join("permissions.yaml"))?;
        Ok(user.overridden_by(project))
    }

    /// A project's `permissions.yaml`: as any, except that it may not decide whether
    /// agents may change it.
    pub fn load_project(path: &Path) -> Result<PermissionsConfig, ConfigError> {
        let config = Self::load_file(path)?;
        let refuse = |key: &str, why: &str| {
            let line = std::fs::read_to_string(path)
                .ok()
                .and_then(|t| t.lines().position(|l| l.trim_start().starts_with(key)))
                .map(|i| format!(":{}", i + 1))
                .unwrap_or_default();
            Err(ConfigError::Invalid {
                path: path.to_path_buf(),
                line,
                message: format!("{key}: only your own ~/.air/permissions.yaml may set it ({why})"),
            })
        };
        if config.config_writes.is_some() {
            return refuse(
                "config_writes",
                "a project's file cannot allow changes to itself",
            );
        }
        if let Some((d, why)) = config
            .allow_domains
            .iter()
            .find_map(|d| project_domain_problem(d).map(|why| (d, why)))
        {
            return refuse(
                "allow_domains",
                &format!("a project's file may name hosts by their names, and `{d}` is {why}"),
            );
        }
        if !config.readable_roots.is_empty() {
            return refuse(
                "readable_roots",
                "a project's file cannot open your home directory to its commands",
            );
        }
        Ok(config)
    }

    pub fn overridden_by(mut self, other: PermissionsConfig) -> PermissionsConfig {
        self.profile = other.profile.or(self.profile);
        self.git_writes = other.git_writes.or(self.git_writes);
        self.sandbox = other.sandbox.or(self.sandbox);
        self.credentials.extend(other.credentials);
        self.system_paths.extend(other.system_paths);
        self.writable_roots.extend(other.writable_roots);
        self.readable_roots.extend(other.readable_roots);
        self.allow_domains.extend(other.allow_domains);
        self.shell_env.extend(other.shell_env);
        // Only the user's own file decides this: a project's cannot allow changes to
        // itself (`load` refuses it there).
        self
    }
}

/// What is wrong with `pattern` as an `allow_domains` entry of a project's file, if
/// anything: it must name hosts by their names (`pypi.org`, `*.example.com`), never
/// every host, a whole top-level domain, this machine or an address (in any of the
/// forms the resolver reads: `127.1`, `2130706433`, `0x7f.0.0.1`).
pub fn project_domain_problem(pattern: &str) -> Option<&'static str> {
    let p = pattern.trim().to_ascii_lowercase();
    let p = p.trim_end_matches('.');
    let (wild, name) = match p.strip_prefix("*.").or_else(|| p.strip_prefix('.')) {
        Some(n) => (true, n),
        None => (false, p),
    };
    if name.is_empty() || name.contains('*') {
        return Some("every host");
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.' || c == '_')
        || name.split('.').any(str::is_empty)
    {
        return Some("not a host name");
    }
    if name == "localhost" || name.ends_with(".localhost") {
        return Some("this machine");
    }
    // A top-level domain starts with a letter: what does not is an address.
    let last = name.rsplit('.').next().unwrap_or_default();
    if !last.starts_with(|c: char| c.is_ascii_alphabetic()) {
        return Some("an address");
    }
    if wild && !name.contains('.') {
        return Some("a whole top-level domain");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_projects_file_names_hosts_by_their_names() {
        for bad in [
            "*",
            "*.",
            "*..",
            ".",
            "*.com",
            ".org",
            "*.1",
            "*.254",
            "127.0.0.1",
            "127.1",
            "2130706433",
            "0x7f.0.0.1",
            "169.254.169.254",
            "[::1]",
            "::1",
            "localhost",
            "db.localhost",
            "a b.org",
            "*.ex*ample.com",
            "a..b.org",
        ] {
            assert!(project_domain_problem(bad).is_some(), "{bad}");
        }
        for good in [
            "pypi.org",
            "*.example.com",
            ".example.com",
            "Registry.NPMjs.org.",
            "x--y.co.uk",
        ] {
            assert_eq!(project_domain_problem(good), None, "{good}");
        }
        let dir = std::env::temp_dir().join(format!("air-domains-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
        let p = dir.join("permissions.yaml");
        std::fs::write(&p, "allow_domains: [pypi.org, \"*.\"]\n").unwrap_or_else(|e| panic!("{e}"));
        let e = PermissionsConfig::load_project(&p).unwrap_err().to_string();
        assert!(
            e.contains("permissions.yaml:1: allow_domains: only your own"),
            "{e}"
        );
        assert!(e.contains("`*.` is every host"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn only_the_users_file_may_allow_changes_to_the_rules() {
        let dir = std::env::temp_dir().join(format!("air-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
        let p = dir.join("permissions.yaml");
        std::fs::write(&p, "profile: low\nconfig_writes: allow\n")
            .unwrap_or_else(|e| panic!("{e}"));
        let e = PermissionsConfig::load_project(&p).unwrap_err().to_string();
        assert!(
            e.contains("permissions.yaml:2: config_writes: only your own"),
            "{e}"
        );
        let user = PermissionsConfig::load_file(&p).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(user.config_writes, Some(GitWrites::Allow));
        let _ = std::fs::remove_dir_all(&dir);
    }

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

    #[test]
    fn permissions_merge_the_project_over_the_user() {
        let p = Path::new("permissions.yaml");
        let user = PermissionsConfig::parse(p, "profile: high\ncredentials: [~/.a]\n").unwrap();
        let project =
            PermissionsConfig::parse(p, "git_writes: allow\ncredentials: [~/.b]\n").unwrap();
        let m = user.overridden_by(project);
        assert_eq!(m.profile, Some(PermissionProfile::High));
        assert_eq!(m.git_writes, Some(GitWrites::Allow));
        assert_eq!(m.credentials, vec!["~/.a", "~/.b"]);
        let e = PermissionsConfig::parse(p, "profile: high\ngit_write: allow\n")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("permissions.yaml:2"), "{e}");
    }
}
