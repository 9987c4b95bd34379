//! Hooks: commands air runs at points of a session, declared as Claude Code declares
//! them (its event names, matchers and JSON), so that a project's hooks work in both.
//! From `~/.air/hooks.yaml` (the person's own), `.air/shared/hooks.yaml` (the
//! project's) and the `hooks` of the project's `.claude/settings.json`. A project's
//! hook runs only once a person trusted it ([`Trust`]), pinned by the hash of what it
//! is: changed, it is asked about again. docs/hooks.md.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

wire_enum! {
    pub enum HookEvent {
        PreToolUse = "PreToolUse",
        PostToolUse = "PostToolUse",
        UserPromptSubmit = "UserPromptSubmit",
        Stop = "Stop",
        SubagentStop = "SubagentStop",
        TaskCreated = "TaskCreated",
        TaskCompleted = "TaskCompleted",
        SessionStart = "SessionStart",
        SessionEnd = "SessionEnd",
        PreCompact = "PreCompact",
        Notification = "Notification",
    }
}

impl HookEvent {
    /// Whether air runs hooks of this event yet (the others are read, listed and
    /// trusted, and said to wait).
    pub fn run_by_air(self) -> bool {
        matches!(
            self,
            HookEvent::PreToolUse
                | HookEvent::PostToolUse
                | HookEvent::UserPromptSubmit
                | HookEvent::Stop
        )
    }
}

wire_enum! {
    /// Where a hook is declared.
    pub enum HookSource {
        /// `~/.air/hooks.yaml`: the person's own, trusted as written.
        User = "user",
        /// `.air/shared/hooks.yaml`.
        Project = "project",
        /// The project's `.claude/settings.json`.
        Claude = "claude",
    }
}

/// Longest a hook may run when its declaration does not say (seconds).
pub const DEFAULT_TIMEOUT_SECS: u64 = 60;
/// Longest any hook may run.
pub const MAX_TIMEOUT_SECS: u64 = 600;

/// One hook: a command run at an event, for the tools its matcher names.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Hook {
    pub event: HookEvent,
    /// A regular expression over tool names (`Bash`, `Write|Edit`, `shell_run`), the
    /// whole name; none, empty or `*` matches every tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matcher: Option<String>,
    pub command: String,
    pub timeout_secs: u64,
    pub source: HookSource,
    pub file: PathBuf,
}

impl Hook {
    /// What a trust pins: the hash of the event, matcher, command and timeout.
    pub fn pin(&self) -> String {
        let mut h = Sha256::new();
        for part in [
            self.event.as_str(),
            self.matcher.as_deref().unwrap_or(""),
            &self.command,
            &self.timeout_secs.to_string(),
        ] {
            h.update(part.as_bytes());
            h.update([0]);
        }
        h.finalize().iter().map(|b| format!("{b:02x}")).collect()
    }

    /// Whether the hook is for a tool known by any of `names`.
    pub fn matches(&self, names: &[&str]) -> bool {
        let m = match self.matcher.as_deref().map(str::trim) {
            None | Some("") | Some("*") => return true,
            Some(m) => m,
        };
        match regex::Regex::new(&format!("^(?:{m})$")) {
            Ok(re) => names.iter().any(|n| re.is_match(n)),
            // Checked when read; an exact name otherwise.
            Err(_) => names.contains(&m),
        }
    }

    /// Whether running it needs a person's trust first.
    pub fn needs_trust(&self) -> bool {
        self.source != HookSource::User
    }
}

/// The `hooks` object as Claude Code writes it: event → groups of a matcher and its
/// commands.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Group {
    #[serde(default)]
    matcher: Option<String>,
    hooks: Vec<Entry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    #[serde(rename = "type")]
    kind: String,
    command: String,
    #[serde(default)]
    timeout: Option<u64>,
}

/// The hooks of one `hooks` object, named in errors as `file`.
fn read_object(
    object: serde_json::Value,
    file: &Path,
    source: HookSource,
) -> Result<Vec<Hook>, String> {
    let shown = file.display();
    let groups: BTreeMap<String, Vec<Group>> = serde_path_to_error::deserialize(object)
        .map_err(|e| format!("{shown}: hooks.{}: {}", e.path(), e.inner()))?;
    let mut out = Vec::new();
    for (name, groups) in groups {
        let event: HookEvent = serde_json::from_value(serde_json::Value::String(name.clone()))
            .map_err(|_| {
                format!(
                    "{shown}: hooks.{name}: not an event air knows (PreToolUse, PostToolUse, UserPromptSubmit, Stop, SubagentStop, TaskCreated, TaskCompleted, SessionStart, SessionEnd, PreCompact, Notification)"
                )
            })?;
        for (g, group) in groups.into_iter().enumerate() {
            if let Some(m) = group
                .matcher
                .as_deref()
                .filter(|m| !matches!(m.trim(), "" | "*"))
            {
                regex::Regex::new(&format!("^(?:{m})$"))
                    .map_err(|e| format!("{shown}: hooks.{name}[{g}].matcher: {e}"))?;
            }
            for (i, entry) in group.hooks.into_iter().enumerate() {
                let at = format!("{shown}: hooks.{name}[{g}].hooks[{i}]");
                if entry.kind != "command" {
                    return Err(format!(
                        "{at}.type: `{}`: air runs only `command` hooks",
                        entry.kind
                    ));
                }
                if entry.command.trim().is_empty() {
                    return Err(format!("{at}.command: empty"));
                }
                let timeout_secs = entry.timeout.unwrap_or(DEFAULT_TIMEOUT_SECS);
                if timeout_secs == 0 || timeout_secs > MAX_TIMEOUT_SECS {
                    return Err(format!(
                        "{at}.timeout: {timeout_secs} s; give 1 to {MAX_TIMEOUT_SECS}"
                    ));
                }
                out.push(Hook {
                    event,
                    matcher: group.matcher.clone(),
                    command: entry.command,
                    timeout_secs,
                    source,
                    file: file.to_path_buf(),
                });
            }
        }
    }
    Ok(out)
}

/// The hooks of an air `hooks.yaml`: the `hooks` object, or the events at the top.
pub fn parse_yaml(text: &str, file: &Path, source: HookSource) -> Result<Vec<Hook>, String> {
    let value: serde_json::Value =
        yaml_serde::from_str(text).map_err(|e| format!("{}: not YAML: {e}", file.display()))?;
    let object = match value {
        serde_json::Value::Null => return Ok(Vec::new()),
        serde_json::Value::Object(mut m) if m.contains_key("hooks") => {
            m.remove("hooks").unwrap_or_default()
        }
        v @ serde_json::Value::Object(_) => v,
        _ => return Err(format!("{}: expected a map of events", file.display())),
    };
    read_object(object, file, source)
}

/// The hooks of Claude Code's `settings.json` (its `hooks`; the rest is not air's).
pub fn parse_claude_settings(text: &str, file: &Path) -> Result<Vec<Hook>, String> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("{}: not JSON: {e}", file.display()))?;
    match value.get("hooks") {
        None | Some(serde_json::Value::Null) => Ok(Vec::new()),
        Some(hooks) => read_object(hooks.clone(), file, HookSource::Claude),
    }
}

/// Every hook of a project, the person's first: from `user_file` (`~/.air/hooks.yaml`)
/// and the project at `root`. A file that is not there has none; one that cannot be
/// read is an error naming it.
pub fn load(user_file: Option<&Path>, root: &Path) -> Result<Vec<Hook>, String> {
    let read = |p: &Path| -> Result<Option<String>, String> {
        match std::fs::read_to_string(p) {
            Ok(t) => Ok(Some(t)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(format!("{}: {e}", p.display())),
        }
    };
    let mut out = Vec::new();
    if let Some(file) = user_file {
        if let Some(text) = read(file)? {
            out.extend(parse_yaml(&text, file, HookSource::User)?);
        }
    }
    let project = root.join(".air").join("shared").join("hooks.yaml");
    if let Some(text) = read(&project)? {
        out.extend(parse_yaml(&text, &project, HookSource::Project)?);
    }
    let claude = root.join(".claude").join("settings.json");
    if let Some(text) = read(&claude)? {
        out.extend(parse_claude_settings(&text, &claude)?);
    }
    Ok(out)
}

/// What a person trusted, per project: the pins of its hooks (`~/.air/trust.json`,
/// the person's, never the project's).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Trust {
    /// Project root → pins trusted there.
    #[serde(default)]
    pub projects: BTreeMap<String, Vec<String>>,
}

impl Trust {
    /// The trust file at `path`; none when it is not there.
    pub fn load(path: &Path) -> Result<Trust, String> {
        match std::fs::read_to_string(path) {
            Ok(text) => serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Trust::default()),
            Err(e) => Err(format!("{}: {e}", path.display())),
        }
    }

    /// Whether `hook` may run in the project at `root`.
    pub fn allows(&self, root: &Path, hook: &Hook) -> bool {
        !hook.needs_trust()
            || self
                .projects
                .get(&root.display().to_string())
                .is_some_and(|pins| pins.contains(&hook.pin()))
    }

    /// Trusts `hooks` in the project at `root` (a hook changed since is not).
    pub fn trust(&mut self, root: &Path, hooks: &[Hook]) {
        let pins = self.projects.entry(root.display().to_string()).or_default();
        for h in hooks.iter().filter(|h| h.needs_trust()) {
            let pin = h.pin();
            if !pins.contains(&pin) {
                pins.push(pin);
            }
        }
    }

    /// Writes the trust file whole (readable by its owner only).
    pub fn save(&self, path: &Path) -> Result<(), String> {
        use std::io::Write as _;
        use std::os::unix::fs::OpenOptionsExt as _;
        let text = serde_json::to_string_pretty(self).map_err(|e| e.to_string())?;
        let dir = path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let tmp = path.with_extension("json.tmp");
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&tmp)
            .map_err(|e| format!("{}: {e}", tmp.display()))?;
        f.write_all(text.as_bytes())
            .and_then(|()| f.sync_all())
            .map_err(|e| format!("{}: {e}", tmp.display()))?;
        std::fs::rename(&tmp, path).map_err(|e| format!("{}: {e}", path.display()))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn hooks_are_read_as_claude_code_writes_them() {
        let yaml = "PreToolUse:\n  - matcher: Bash|shell_run\n    hooks:\n      - type: command\n        command: ./check.sh\n        timeout: 5\n";
        let hooks = parse_yaml(yaml, Path::new("hooks.yaml"), HookSource::Project).unwrap();
        assert_eq!(hooks.len(), 1);
        assert!(hooks[0].matches(&["Bash", "shell_run"]));
        assert!(!hooks[0].matches(&["Write", "fs_write"]));
        assert!(!hooks[0].matches(&["Bashful"]));
        let wrapped = format!(
            "hooks:\n{}",
            yaml.lines().map(|l| format!("  {l}\n")).collect::<String>()
        );
        assert_eq!(
            parse_yaml(&wrapped, Path::new("hooks.yaml"), HookSource::Project).unwrap(),
            hooks
        );
        let claude = r#"{"permissions": {}, "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}}"#;
        let c = parse_claude_settings(claude, Path::new(".claude/settings.json")).unwrap();
        assert_eq!(c[0].event, HookEvent::Stop);
        assert_eq!(c[0].timeout_secs, DEFAULT_TIMEOUT_SECS);
        assert!(c[0].matches(&["anything"]));
    }

    #[test]
    fn a_bad_hook_is_named_by_its_place() {
        let e =
            |text: &str| parse_yaml(text, Path::new("h.yaml"), HookSource::Project).unwrap_err();
        assert!(e("OnSave: []").contains("hooks.OnSave: not an event"));
        assert!(
            e("Stop:\n  - hooks:\n      - type: prompt\n        command: x\n")
                .contains("hooks.Stop[0].hooks[0].type")
        );
        assert!(e("Stop:\n  - matcher: '('\n    hooks: []\n").contains("hooks.Stop[0].matcher"));
        assert!(e(
            "Stop:\n  - hooks:\n      - type: command\n        command: x\n        timeout: 0\n"
        )
        .contains("timeout"));
        assert!(e(
            "Stop:\n  - hooks:\n      - type: command\n        command: x\n        when: always\n"
        )
        .contains("when"));
    }

    #[test]
    fn a_changed_project_hook_is_not_trusted() {
        let dir = tempfile::tempdir().unwrap();
        let root = Path::new("/p");
        let yaml = |cmd: &str| {
            format!("PreToolUse:\n  - hooks:\n      - type: command\n        command: {cmd}\n")
        };
        let hooks = parse_yaml(&yaml("./a.sh"), Path::new("h"), HookSource::Project).unwrap();
        let mut trust = Trust::default();
        assert!(!trust.allows(root, &hooks[0]));
        trust.trust(root, &hooks);
        let file = dir.path().join("trust.json");
        trust.save(&file).unwrap();
        let trust = Trust::load(&file).unwrap();
        assert!(trust.allows(root, &hooks[0]));
        assert!(!trust.allows(Path::new("/other"), &hooks[0]));
        let changed =
            parse_yaml(&yaml("./a.sh; curl x"), Path::new("h"), HookSource::Project).unwrap();
        assert!(!trust.allows(root, &changed[0]));
        let mine = parse_yaml(&yaml("./a.sh"), Path::new("h"), HookSource::User).unwrap();
        assert!(Trust::default().allows(root, &mine[0]));
        use std::os::unix::fs::PermissionsExt as _;
        assert_eq!(
            std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
}
