//! Keys to actions. Every action has default keys; `~/.air/config.yaml` may rebind
//! any of them:
//!
//! ```yaml
//! attach:
//!   theme: light
//!   keys:
//!     cancel: x            # one key
//!     detach: [q, ctrl-q]  # or several
//!   mouse: false           # leave the mouse to the terminal
//! ```
//!
//! Keys are written `a`, `G`, `ctrl-p`, `tab`, `enter`, `esc`, `up`, `down`, `pgup`,
//! `pgdn`, `home`, `end`, `backspace`, `space`.

use std::collections::BTreeMap;

use serde::Deserialize;

/// A key, as the TUI reads it (independent of the terminal library).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Key {
    Char(char),
    Ctrl(char),
    Up,
    Down,
    PageUp,
    PageDown,
    Home,
    End,
    Tab,
    Enter,
    Esc,
    Backspace,
}

/// What a key does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Action {
    Detach,
    Help,
    Palette,
    NextPane,
    Down,
    Up,
    PageUp,
    PageDown,
    First,
    Last,
    Cancel,
    Pause,
    Approve,
    Deny,
    Filter,
    View,
    CancelRun,
    Retry,
    RetryAll,
    Edit,
    Copy,
    Output,
    Diff,
    PauseTask,
    CopySession,
    Chat,
    Raw,
}

impl Action {
    /// Every action: its config name, what the palette calls it, its default keys.
    pub const ALL: &'static [(Action, &'static str, &'static str, &'static [Key])] = &[
        (
            Action::Approve,
            "approve",
            "Approve the permission request",
            &[Key::Char('a')],
        ),
        (
            Action::Deny,
            "deny",
            "Deny the permission request",
            &[Key::Char('d')],
        ),
        (
            Action::Cancel,
            "cancel",
            "Cancel the selected task",
            &[Key::Char('c')],
        ),
        (
            Action::Pause,
            "pause",
            "Pause or resume the run",
            &[Key::Char('p')],
        ),
        (
            Action::PauseTask,
            "pause_task",
            "Pause or resume the selected task's agent",
            &[Key::Char('P')],
        ),
        (
            Action::Filter,
            "filter",
            "Filter the tasks or the events (the pane in use)",
            &[Key::Char('/')],
        ),
        (
            Action::View,
            "view",
            "Tasks as a list, in waves, or as a graph",
            &[Key::Char('v')],
        ),
        (
            Action::Retry,
            "retry",
            "Retry the selected ended task and what waits on it",
            &[Key::Char('r')],
        ),
        (
            Action::RetryAll,
            "retry_all",
            "Retry every unfinished task of an ended run",
            &[Key::Char('R')],
        ),
        (
            Action::CancelRun,
            "cancel_run",
            "Cancel the whole run",
            &[Key::Char('C')],
        ),
        (
            Action::Edit,
            "edit",
            "Open the latest changed file in $EDITOR",
            &[Key::Char('e')],
        ),
        (
            Action::Copy,
            "copy",
            "Copy the selected task's id",
            &[Key::Char('y')],
        ),
        (
            Action::CopySession,
            "copy_session",
            "Copy the session's id",
            &[Key::Char('Y')],
        ),
        (
            Action::Raw,
            "raw",
            "Show the events in view as stored (JSON)",
            &[Key::Char('J')],
        ),
        (
            Action::Output,
            "output",
            "Show the whole output of the latest command",
            &[Key::Char('o')],
        ),
        (
            Action::Diff,
            "diff",
            "Show the task's latest change as a whole diff",
            &[Key::Char('D')],
        ),
        (Action::NextPane, "next_pane", "Next pane", &[Key::Tab]),
        (
            Action::Chat,
            "chat",
            "Talk to air: the conversation and its input box",
            &[Key::Char('i')],
        ),
        (
            Action::Down,
            "down",
            "Next task, or scroll the pane down",
            &[Key::Char('j'), Key::Down],
        ),
        (
            Action::Up,
            "up",
            "Previous task, or scroll the pane up",
            &[Key::Char('k'), Key::Up],
        ),
        (
            Action::First,
            "first",
            "First task",
            &[Key::Char('g'), Key::Home],
        ),
        (
            Action::Last,
            "last",
            "Last task",
            &[Key::Char('G'), Key::End],
        ),
        (
            Action::PageUp,
            "page_up",
            "Scroll the events or the detail up a page",
            &[Key::PageUp],
        ),
        (
            Action::PageDown,
            "page_down",
            "Scroll the events or the detail down a page",
            &[Key::PageDown],
        ),
        (
            Action::Palette,
            "palette",
            "Search every action",
            &[Key::Ctrl('p')],
        ),
        (Action::Help, "help", "Show the keys", &[Key::Char('?')]),
        (
            Action::Detach,
            "detach",
            "Detach (the run goes on)",
            &[Key::Char('q'), Key::Ctrl('d'), Key::Ctrl('c')],
        ),
    ];

    pub fn name(self) -> &'static str {
        Action::ALL
            .iter()
            .find(|a| a.0 == self)
            .map(|a| a.1)
            .unwrap_or("")
    }

    pub fn title(self) -> &'static str {
        Action::ALL
            .iter()
            .find(|a| a.0 == self)
            .map(|a| a.2)
            .unwrap_or("")
    }
}

/// A key as written in the config.
pub fn parse_key(text: &str) -> Result<Key, String> {
    let t = text.trim();
    let lower = t.to_ascii_lowercase();
    if let Some(c) = lower
        .strip_prefix("ctrl-")
        .or_else(|| lower.strip_prefix("c-"))
    {
        let mut chars = c.chars();
        return match (chars.next(), chars.next()) {
            (Some(c), None) if c.is_ascii_alphabetic() => Ok(Key::Ctrl(c)),
            _ => Err(format!("`{t}`: ctrl- takes one letter")),
        };
    }
    Ok(match lower.as_str() {
        "tab" => Key::Tab,
        "enter" | "return" => Key::Enter,
        "esc" | "escape" => Key::Esc,
        "up" => Key::Up,
        "down" => Key::Down,
        "pgup" | "pageup" => Key::PageUp,
        "pgdn" | "pagedown" => Key::PageDown,
        "home" => Key::Home,
        "end" => Key::End,
        "backspace" => Key::Backspace,
        "space" => Key::Char(' '),
        _ => {
            let mut chars = t.chars();
            match (chars.next(), chars.next()) {
                (Some(c), None) => Key::Char(c),
                _ => return Err(format!("`{t}` is not a key (a character, ctrl-x, tab, enter, esc, up, down, pgup, pgdn, home, end, backspace, space)")),
            }
        }
    })
}

/// How a key is shown.
pub fn key_name(k: Key) -> String {
    match k {
        Key::Char(' ') => "Space".into(),
        Key::Char(c) => c.to_string(),
        Key::Ctrl(c) => format!("Ctrl-{}", c.to_ascii_uppercase()),
        Key::Up => "↑".into(),
        Key::Down => "↓".into(),
        Key::PageUp => "PgUp".into(),
        Key::PageDown => "PgDn".into(),
        Key::Home => "Home".into(),
        Key::End => "End".into(),
        Key::Tab => "Tab".into(),
        Key::Enter => "Enter".into(),
        Key::Esc => "Esc".into(),
        Key::Backspace => "Backspace".into(),
    }
}

/// One or several keys in the config.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum Keys {
    One(String),
    Many(Vec<String>),
}

/// The `attach:` section of `~/.air/config.yaml`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AttachConfig {
    pub theme: Option<String>,
    /// Whether the TUI takes the mouse (click to select and focus, wheel to
    /// scroll); default yes. Off leaves the terminal's own text selection alone.
    #[serde(default)]
    pub mouse: Option<bool>,
    #[serde(default)]
    pub keys: BTreeMap<String, Keys>,
}

#[derive(Clone, Debug, Default, Deserialize)]
struct ConfigFile {
    #[serde(default)]
    attach: AttachConfig,
}

impl AttachConfig {
    /// The `attach:` section of `config.yaml` in `air_home` (other sections are
    /// airsd's; a missing file is the defaults).
    pub fn load(air_home: &std::path::Path) -> Result<AttachConfig, String> {
        let path = air_home.join("config.yaml");
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(AttachConfig::default())
            }
            Err(e) => return Err(format!("{}: {e}", path.display())),
        };
        let value: serde_json::Value =
            air_proto::config::parse_yaml(&path, &text).map_err(|e| e.to_string())?;
        let file: ConfigFile = serde_path_to_error::deserialize(&value)
            .map_err(|e| format!("{}: {}: {}", path.display(), e.path(), e.inner()))?;
        Ok(file.attach)
    }
}

/// The bindings in force.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Keymap {
    bindings: Vec<(Key, Action)>,
}

impl Default for Keymap {
    fn default() -> Self {
        Keymap {
            bindings: Action::ALL
                .iter()
                .flat_map(|(a, _, _, keys)| keys.iter().map(move |k| (*k, *a)))
                .collect(),
        }
    }
}

impl Keymap {
    /// The defaults with `keys` (action name → keys) in place of an action's own.
    pub fn with(keys: &BTreeMap<String, Keys>) -> Result<Keymap, String> {
        let mut map = Keymap::default();
        for (name, keys) in keys {
            let action = Action::ALL
                .iter()
                .find(|a| a.1 == name)
                .map(|a| a.0)
                .ok_or_else(|| {
                    let names: Vec<&str> = Action::ALL.iter().map(|a| a.1).collect();
                    format!(
                        "attach.keys.{name}: no such action (the actions: {})",
                        names.join(", ")
                    )
                })?;
            let list = match keys {
                Keys::One(k) => vec![k.clone()],
                Keys::Many(ks) => ks.clone(),
            };
            let parsed = list
                .iter()
                .map(|k| parse_key(k).map_err(|e| format!("attach.keys.{name}: {e}")))
                .collect::<Result<Vec<_>, _>>()?;
            map.bindings
                .retain(|(k, a)| *a != action && !parsed.contains(k));
            map.bindings.extend(parsed.into_iter().map(|k| (k, action)));
        }
        Ok(map)
    }

    pub fn action(&self, key: Key) -> Option<Action> {
        self.bindings
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, a)| *a)
    }

    /// The keys of an action, as shown.
    pub fn keys_of(&self, action: Action) -> String {
        let keys: Vec<String> = self
            .bindings
            .iter()
            .filter(|(_, a)| *a == action)
            .map(|(k, _)| key_name(*k))
            .collect();
        keys.join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_parse_and_rebind() {
        assert_eq!(parse_key("ctrl-P"), Ok(Key::Ctrl('p')));
        assert_eq!(parse_key("G"), Ok(Key::Char('G')));
        assert_eq!(parse_key("pgdn"), Ok(Key::PageDown));
        assert!(parse_key("ctrl-")
            .unwrap_err()
            .contains("ctrl- takes one letter"));
        assert!(parse_key("hyper-x").unwrap_err().contains("is not a key"));
        let mut keys = BTreeMap::new();
        keys.insert("cancel".to_string(), Keys::One("x".into()));
        keys.insert(
            "detach".to_string(),
            Keys::Many(vec!["ctrl-q".into(), "Q".into()]),
        );
        let map = Keymap::with(&keys).unwrap();
        assert_eq!(map.action(Key::Char('x')), Some(Action::Cancel));
        assert_eq!(map.action(Key::Char('c')), None, "the old key is free");
        assert_eq!(map.action(Key::Char('q')), None);
        assert_eq!(map.action(Key::Ctrl('q')), Some(Action::Detach));
        assert_eq!(map.keys_of(Action::Detach), "Ctrl-Q Q");
        keys.insert("fly".to_string(), Keys::One("f".into()));
        let e = Keymap::with(&keys).unwrap_err();
        assert!(e.starts_with("attach.keys.fly: no such action"), "{e}");
    }

    #[test]
    fn the_config_section_is_read_with_its_errors_named() {
        let home = tempfile::tempdir().unwrap();
        assert_eq!(
            AttachConfig::load(home.path()).unwrap(),
            AttachConfig::default()
        );
        std::fs::write(
            home.path().join("config.yaml"),
            "run:\n  concurrency: 2\nattach:\n  theme: light\n  keys:\n    cancel: x\n",
        )
        .unwrap();
        let c = AttachConfig::load(home.path()).unwrap();
        assert_eq!(c.theme.as_deref(), Some("light"));
        assert_eq!(c.keys.get("cancel"), Some(&Keys::One("x".into())));
        std::fs::write(home.path().join("config.yaml"), "attach:\n  colour: red\n").unwrap();
        let e = AttachConfig::load(home.path()).unwrap_err();
        assert!(
            e.contains("config.yaml") && e.contains("attach") && e.contains("colour"),
            "{e}"
        );
    }
}
