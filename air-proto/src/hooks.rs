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

use crate::trust::{hash_parts, hex, pin_of, read_config, MAX_FILE_BYTES};
pub use crate::trust::{write_private, Pinned, Trust, Trusted};

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

wire_enum! {
    /// Where a hook is declared.
    pub enum HookSource {
        /// `~/.air/hooks.yaml`: the person's own, trusted as written.
        User = "user",
        /// `.air/shared/hooks.yaml`.
        Project = "project",
        /// The project's `.claude/settings.json`.
        Claude = "claude",
        /// A capability the person installed for themselves and trusted (its folder
        /// is pinned whole): as the person's own.
        Capability = "capability",
        /// A capability of the project's, trusted: run as the project's are
        /// (confined, given no secret), without a trust of its own.
        ProjectCapability = "project_capability",
    }
}

impl HookSource {
    /// Whether it is the person's own (theirs, or a capability they installed for
    /// themselves): run as written, given what they give it.
    pub fn is_persons(self) -> bool {
        matches!(self, HookSource::User | HookSource::Capability)
    }
}

/// Where what a capability adds comes from: the person's own, or the project's
/// (confined and given no secret, as the project's own are).
pub fn capability_source(c: &crate::capability::Capability) -> HookSource {
    match c.scope {
        crate::capability::Scope::User => HookSource::Capability,
        crate::capability::Scope::Project => HookSource::ProjectCapability,
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
    /// The project's files its command names (`./scripts/guard.sh`,
    /// `$CLAUDE_PROJECT_DIR/.claude/hooks/check.py`), with the hash of each as it is
    /// now: what the hook runs is in its pin too.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scripts: Vec<(PathBuf, String)>,
}

impl Hook {
    /// What the hook is, as declared: the hash of its event, matcher, command and
    /// timeout (each field length-prefixed, so that no two declarations share it).
    pub fn identity(&self) -> String {
        hash_parts([
            self.event.as_str(),
            self.matcher.as_deref().unwrap_or(""),
            &self.command,
            &self.timeout_secs.to_string(),
        ])
    }

    /// What a trust pins: its [`Hook::identity`] and the files its command runs, as
    /// they are now.
    pub fn pin(&self) -> String {
        pin_of(&self.identity(), &self.scripts)
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
        !matches!(
            self.source,
            HookSource::User | HookSource::Capability | HookSource::ProjectCapability
        )
    }
}

/// The project's files a hook's command names: each word that is a path (a `/` in
/// it, `$CLAUDE_PROJECT_DIR` or `$AIR_PROJECT_DIR` standing for the project) to a
/// regular file inside the project, with the hash of its contents.
pub fn scripts_of(command: &str, root: &Path) -> Vec<(PathBuf, String)> {
    let Ok(real_root) = std::fs::canonicalize(root) else {
        return Vec::new();
    };
    let mut out: Vec<(PathBuf, String)> = Vec::new();
    let words = command.split(|c: char| c.is_whitespace() || ";|&()<>`".contains(c));
    for word in words {
        let word = word.trim_matches(|c| c == '"' || c == '\'');
        let mut word = word.to_string();
        for var in [
            "${CLAUDE_PROJECT_DIR}",
            "$CLAUDE_PROJECT_DIR",
            "${AIR_PROJECT_DIR}",
            "$AIR_PROJECT_DIR",
        ] {
            word = word.replace(var, &root.display().to_string());
        }
        let word = word.replace(['"', '\''], "");
        if !word.contains('/') {
            continue;
        }
        let path = root.join(&word);
        let Ok(real) = std::fs::canonicalize(&path) else {
            continue;
        };
        let regular =
            std::fs::metadata(&real).is_ok_and(|m| m.is_file() && m.len() <= MAX_FILE_BYTES);
        if !real.starts_with(&real_root) || !regular || out.iter().any(|(p, _)| *p == real) {
            continue;
        }
        if let Ok(bytes) = std::fs::read(&real) {
            out.push((real, hex(&Sha256::digest(&bytes))));
        }
    }
    out
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
    #[serde(default)]
    command: Option<String>,
    /// A `prompt` hook's (Claude Code's), which air passes over.
    #[serde(default, rename = "prompt")]
    _prompt: Option<serde_json::Value>,
    #[serde(default)]
    timeout: Option<u64>,
}

/// The hooks of one `hooks` object, named in errors as `file`, and what was passed
/// over in it (an event air does not know, a hook that is not a command: Claude Code
/// has more of both).
fn read_object(
    object: serde_json::Value,
    file: &Path,
    source: HookSource,
) -> Result<(Vec<Hook>, Vec<String>), String> {
    let shown = file.display();
    let groups: BTreeMap<String, Vec<Group>> = serde_path_to_error::deserialize(object)
        .map_err(|e| format!("{shown}: hooks.{}: {}", e.path(), e.inner()))?;
    let mut out = Vec::new();
    let mut passed = Vec::new();
    for (name, groups) in groups {
        let Ok(event) =
            serde_json::from_value::<HookEvent>(serde_json::Value::String(name.clone()))
        else {
            passed.push(format!(
                "{shown}: hooks.{name}: not an event air knows (PreToolUse, PostToolUse, UserPromptSubmit, Stop, SubagentStop, TaskCreated, TaskCompleted, SessionStart, SessionEnd, PreCompact, Notification): passed over"
            ));
            continue;
        };
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
                    passed.push(format!(
                        "{at}.type: `{}`: air runs only `command` hooks: passed over",
                        entry.kind
                    ));
                    continue;
                }
                let command = entry.command.unwrap_or_default();
                if command.trim().is_empty() {
                    return Err(format!("{at}.command: empty"));
                }
                if command
                    .chars()
                    .any(|c| c.is_control() && c != '\n' && c != '\t')
                    || group
                        .matcher
                        .as_deref()
                        .is_some_and(|m| m.chars().any(char::is_control))
                {
                    return Err(format!(
                        "{at}: a control character in its command or matcher (what it shows would not be what runs)"
                    ));
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
                    command,
                    timeout_secs,
                    source,
                    file: file.to_path_buf(),
                    scripts: Vec::new(),
                });
            }
        }
    }
    Ok((out, passed))
}

/// The hooks of an air `hooks.yaml`: the `hooks` object, or the events at the top.
pub fn parse_yaml(
    text: &str,
    file: &Path,
    source: HookSource,
) -> Result<(Vec<Hook>, Vec<String>), String> {
    let value: serde_json::Value =
        yaml_serde::from_str(text).map_err(|e| format!("{}: not YAML: {e}", file.display()))?;
    let object = match value {
        serde_json::Value::Null => return Ok((Vec::new(), Vec::new())),
        serde_json::Value::Object(mut m) if m.contains_key("hooks") => {
            m.remove("hooks").unwrap_or_default()
        }
        v @ serde_json::Value::Object(_) => v,
        _ => return Err(format!("{}: expected a map of events", file.display())),
    };
    read_object(object, file, source)
}

/// The hooks of Claude Code's `settings.json` (its `hooks`; the rest is not air's).
pub fn parse_claude_settings(text: &str, file: &Path) -> Result<(Vec<Hook>, Vec<String>), String> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("{}: not JSON: {e}", file.display()))?;
    match value.get("hooks") {
        None | Some(serde_json::Value::Null) => Ok((Vec::new(), Vec::new())),
        Some(hooks) => read_object(hooks.clone(), file, HookSource::Claude),
    }
}

/// Whether any file that may declare hooks is there: a look that reads nothing, for
/// the paths where most projects have none.
pub fn any_file(user_file: Option<&Path>, root: &Path) -> bool {
    user_file
        .map(Path::to_path_buf)
        .into_iter()
        .chain([
            root.join(".air").join("shared").join("hooks.yaml"),
            root.join(".claude").join("settings.json"),
        ])
        .any(|p| std::fs::symlink_metadata(p).is_ok())
        || crate::capability::project_dir(root).is_dir()
        || user_file
            .and_then(Path::parent)
            .is_some_and(|h| crate::capability::user_dir(h).is_dir())
}

/// `s` as one word for a shell.
fn shell_quoted(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}

/// The hooks of a project, and what was passed over.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Loaded {
    pub hooks: Vec<Hook>,
    /// Hooks and files passed over, and why: an event air does not know, a hook that
    /// is not a command, a project's file that cannot be read (its hooks do not run).
    pub warnings: Vec<String>,
}

/// Every hook of a project, the person's first: from `user_file` (`~/.air/hooks.yaml`)
/// and the project at `root`. A file that is not there has none. The person's own
/// file that cannot be read is an error naming it (they fix it); a project's is
/// passed over with a warning, so that a repository cannot stop the person's work.
pub fn load(user_file: Option<&Path>, root: &Path) -> Result<Loaded, String> {
    let mut out = Loaded::default();
    if let Some(file) = user_file {
        if let Some(text) = read_config(file, true)? {
            let (hooks, passed) = parse_yaml(&text, file, HookSource::User)?;
            out.hooks.extend(hooks);
            out.warnings.extend(passed);
        }
    }
    // The trusted capabilities' hooks, as the person's (`${CAPABILITY_DIR}` in a
    // command is the capability's folder).
    let (capabilities, _) = crate::capability::trusted(user_file.and_then(Path::parent), root);
    for c in &capabilities {
        let Some(rel) = &c.manifest.adds.hooks else {
            continue;
        };
        let file = c.within(rel);
        let parsed = read_config(&file, false).and_then(|t| match t {
            None => Ok((Vec::new(), Vec::new())),
            Some(t) => parse_yaml(&t, &file, capability_source(c)),
        });
        match parsed {
            Ok((hooks, passed)) => {
                let dir = shell_quoted(&c.dir.display().to_string());
                out.hooks.extend(hooks.into_iter().map(|mut h| {
                    h.command = h.command.replace("${CAPABILITY_DIR}", &dir);
                    h
                }));
                out.warnings.extend(passed);
            }
            Err(e) => out.warnings.push(format!("{e}: its hooks do not run")),
        }
    }
    let project = root.join(".air").join("shared").join("hooks.yaml");
    let claude = root.join(".claude").join("settings.json");
    for (file, source) in [(project, HookSource::Project), (claude, HookSource::Claude)] {
        let parsed = read_config(&file, false).and_then(|text| match text {
            None => Ok((Vec::new(), Vec::new())),
            Some(t) if source == HookSource::Claude => parse_claude_settings(&t, &file),
            Some(t) => parse_yaml(&t, &file, source),
        });
        match parsed {
            Ok((hooks, passed)) => {
                out.hooks.extend(hooks.into_iter().map(|mut h| {
                    h.scripts = scripts_of(&h.command, root);
                    h
                }));
                out.warnings.extend(passed);
            }
            Err(e) => out.warnings.push(format!("{e}: its hooks do not run")),
        }
    }
    Ok(out)
}

impl Pinned for Hook {
    fn identity(&self) -> String {
        Hook::identity(self)
    }
    fn pin(&self) -> String {
        Hook::pin(self)
    }
    fn needs_trust(&self) -> bool {
        Hook::needs_trust(self)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn hooks_are_read_as_claude_code_writes_them() {
        let yaml = "PreToolUse:\n  - matcher: Bash|shell_run\n    hooks:\n      - type: command\n        command: ./check.sh\n        timeout: 5\n";
        let (hooks, _) = parse_yaml(yaml, Path::new("hooks.yaml"), HookSource::Project).unwrap();
        assert_eq!(hooks.len(), 1);
        assert!(hooks[0].matches(&["Bash", "shell_run"]));
        assert!(!hooks[0].matches(&["Write", "fs_write"]));
        assert!(!hooks[0].matches(&["Bashful"]));
        let wrapped = format!(
            "hooks:\n{}",
            yaml.lines().map(|l| format!("  {l}\n")).collect::<String>()
        );
        assert_eq!(
            parse_yaml(&wrapped, Path::new("hooks.yaml"), HookSource::Project)
                .unwrap()
                .0,
            hooks
        );
        let claude = r#"{"permissions": {}, "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]}}"#;
        let (c, _) = parse_claude_settings(claude, Path::new(".claude/settings.json")).unwrap();
        assert_eq!(c[0].event, HookEvent::Stop);
        assert_eq!(c[0].timeout_secs, DEFAULT_TIMEOUT_SECS);
        assert!(c[0].matches(&["anything"]));
    }

    #[test]
    fn a_bad_hook_is_named_by_its_place() {
        let e =
            |text: &str| parse_yaml(text, Path::new("h.yaml"), HookSource::Project).unwrap_err();
        // What Claude Code has and air does not run is passed over, said.
        let passed = |text: &str| {
            let (hooks, passed) =
                parse_yaml(text, Path::new("h.yaml"), HookSource::Project).unwrap();
            assert!(hooks.is_empty());
            passed.join("\n")
        };
        assert!(passed("OnSave: []").contains("hooks.OnSave: not an event"));
        assert!(
            passed("Stop:\n  - hooks:\n      - type: prompt\n        prompt: x\n")
                .contains("hooks.Stop[0].hooks[0].type")
        );
        assert!(
            e("Stop:\n  - hooks:\n      - type: command\n        command: \"a\\u001b[2Kb\"\n")
                .contains("control character")
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
    fn the_files_a_hook_runs_are_found_in_its_command() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(root.join("scripts")).unwrap();
        std::fs::write(root.join("scripts/guard.sh"), "exit 0\n").unwrap();
        std::fs::write(root.join("check.py"), "pass\n").unwrap();
        let found = scripts_of(
            "bash ./scripts/guard.sh && python3 \"$CLAUDE_PROJECT_DIR\"/check.py; echo /etc/passwd",
            &root,
        );
        let paths: Vec<&Path> = found.iter().map(|(p, _)| p.as_path()).collect();
        assert_eq!(
            paths,
            [root.join("scripts/guard.sh"), root.join("check.py")]
        );
        std::fs::write(root.join("scripts/guard.sh"), "exit 0 # changed\n").unwrap();
        assert_ne!(scripts_of("./scripts/guard.sh", &root)[0].1, found[0].1);
    }

    #[test]
    fn a_changed_project_hook_is_not_trusted() {
        let dir = tempfile::tempdir().unwrap();
        let root = Path::new("/p");
        let yaml = |cmd: &str| {
            format!("PreToolUse:\n  - hooks:\n      - type: command\n        command: {cmd}\n")
        };
        let (hooks, _) = parse_yaml(&yaml("./a.sh"), Path::new("h"), HookSource::Project).unwrap();
        let mut trust = Trust::default();
        assert!(!trust.allows(root, &hooks[0]));
        trust.trust(root, &hooks);
        let file = dir.path().join("trust.json");
        trust.save(&file).unwrap();
        let trust = Trust::load(&file).unwrap();
        assert!(trust.allows(root, &hooks[0]));
        assert!(!trust.allows(Path::new("/other"), &hooks[0]));
        let (changed, _) =
            parse_yaml(&yaml("./a.sh; curl x"), Path::new("h"), HookSource::Project).unwrap();
        assert_eq!(trust.of(root, &changed[0]), Trusted::No);
        // The same hook whose script changed: changed, not new.
        let mut edited = hooks[0].clone();
        edited.scripts = vec![(PathBuf::from("/p/a.sh"), "beef".into())];
        assert_eq!(trust.of(root, &edited), Trusted::Changed);
        let (mine, _) = parse_yaml(&yaml("./a.sh"), Path::new("h"), HookSource::User).unwrap();
        assert!(Trust::default().allows(root, &mine[0]));
        use std::os::unix::fs::PermissionsExt as _;
        assert_eq!(
            std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
}
