//! The dialogs over the panes: the full-screen viewer, the command palette (with
//! its fuzzy match) and the session picker.

use super::*;

/// A full-screen view of a long text: a command's whole output, a whole diff.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Viewer {
    pub title: String,
    pub lines: Vec<String>,
    /// The first line shown.
    pub top: usize,
    /// Colour `+`/`-`/`@@` lines.
    pub diff: bool,
    /// The name it gets when opened in `$EDITOR`.
    pub name: String,
}

impl Viewer {
    pub fn new(title: String, name: String, text: &str, diff: bool) -> Viewer {
        Viewer {
            title,
            lines: text.lines().map(str::to_string).collect(),
            top: 0,
            diff,
            name,
        }
    }

    pub(super) fn key(&mut self, key: Key) -> Option<Option<Command>> {
        let last = self.lines.len().saturating_sub(1);
        match key {
            Key::Esc | Key::Char('q') => return None,
            Key::Char('e') => {
                return Some(Some(Command::EditText {
                    name: self.name.clone(),
                    text: self.lines.join("\n"),
                }))
            }
            Key::Down | Key::Char('j') => self.top = (self.top + 1).min(last),
            Key::Up | Key::Char('k') => self.top = self.top.saturating_sub(1),
            Key::PageDown | Key::Char(' ') => self.top = (self.top + 20).min(last),
            Key::PageUp => self.top = self.top.saturating_sub(20),
            Key::Home | Key::Char('g') => self.top = 0,
            Key::End | Key::Char('G') => self.top = last,
            _ => {}
        }
        Some(None)
    }
}

/// How well `query` matches `name` as a subsequence, case-insensitive (higher is
/// better; `None`: no match). Consecutive letters and word starts count more.
pub fn fuzzy(query: &str, name: &str) -> Option<u32> {
    let name: Vec<char> = name.to_lowercase().chars().collect();
    let mut score = 0;
    let mut at = 0;
    let mut last: Option<usize> = None;
    for q in query.to_lowercase().chars().filter(|c| !c.is_whitespace()) {
        let i = (at..name.len()).find(|&i| name[i] == q)?;
        score += 1;
        if last.is_some_and(|l| l + 1 == i) {
            score += 3;
        }
        if i == 0 || name[i - 1] == ' ' {
            score += 2;
        }
        last = Some(i);
        at = i + 1;
    }
    Some(score)
}

/// The command palette (Ctrl-P): a query and the actions that match it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CommandPalette {
    pub query: String,
    pub selected: usize,
}

impl CommandPalette {
    /// The matching actions, best first (all of them for an empty query).
    pub fn matches(&self) -> Vec<Action> {
        let mut m: Vec<(u32, usize)> = Action::ALL
            .iter()
            .enumerate()
            .filter(|(_, a)| a.0 != Action::Palette)
            .filter_map(|(i, a)| fuzzy(&self.query, a.2).map(|s| (s, i)))
            .collect();
        m.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        m.into_iter().map(|(_, i)| Action::ALL[i].0).collect()
    }
}

/// One session of the picker.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PickerRow {
    pub id: String,
    pub title: String,
    /// What its run is doing: `running`, `completed`, … or `no run`.
    pub state: String,
    pub created_at: String,
}

/// The session picker `air attach` shows when there are several sessions.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Picker {
    pub rows: Vec<PickerRow>,
    pub selected: usize,
}

/// What the picker ends with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Picked {
    Session(String),
    Quit,
}

impl Picker {
    /// The rows newest first; the newest with a run going is preselected.
    pub fn new(rows: Vec<PickerRow>) -> Picker {
        let selected = rows.iter().position(|r| r.state == "running").unwrap_or(0);
        Picker { rows, selected }
    }

    pub fn key(&mut self, key: Key) -> Option<Picked> {
        let n = self.rows.len();
        match key {
            Key::Char('q') | Key::Esc | Key::Ctrl('c') | Key::Ctrl('d') => {
                return Some(Picked::Quit)
            }
            Key::Enter => {
                return self
                    .rows
                    .get(self.selected)
                    .map(|r| Picked::Session(r.id.clone()))
            }
            Key::Char('j') | Key::Down => {
                self.selected = (self.selected + 1).min(n.saturating_sub(1))
            }
            Key::Char('k') | Key::Up => self.selected = self.selected.saturating_sub(1),
            Key::Home | Key::Char('g') => self.selected = 0,
            Key::End | Key::Char('G') => self.selected = n.saturating_sub(1),
            _ => {}
        }
        None
    }
}
