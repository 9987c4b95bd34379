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

/// A shipped example whose recorded run can be watched with no model: it replays
/// in a copy of its project.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExampleRow {
    pub name: String,
    /// Its plan's title.
    pub title: String,
    pub dir: std::path::PathBuf,
}

/// The session picker `air attach` shows when there are several sessions, and the
/// first-run screen bare `air` shows when no model answers: how to set one, the
/// sessions there are and the examples shipped with air.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Picker {
    pub rows: Vec<PickerRow>,
    /// Listed after the sessions.
    pub examples: Vec<ExampleRow>,
    /// Why no model answers (the first-run screen), `None` for the plain picker.
    pub no_model: Option<String>,
    /// Over the sessions, then the examples.
    pub selected: usize,
}

/// What the picker ends with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Picked {
    Session(String),
    /// Replay this example in a copy of it.
    Example(std::path::PathBuf),
    Quit,
}

impl Picker {
    /// The rows newest first; the newest with a run going is preselected.
    pub fn new(rows: Vec<PickerRow>) -> Picker {
        let selected = rows.iter().position(|r| r.state == "running").unwrap_or(0);
        Picker {
            rows,
            examples: Vec::new(),
            no_model: None,
            selected,
        }
    }

    /// The first-run screen: no model answers (`why`).
    pub fn first_run(rows: Vec<PickerRow>, examples: Vec<ExampleRow>, why: String) -> Picker {
        Picker {
            examples,
            no_model: Some(why),
            ..Picker::new(rows)
        }
    }

    pub fn key(&mut self, key: Key) -> Option<Picked> {
        let n = self.rows.len() + self.examples.len();
        match key {
            Key::Char('q') | Key::Esc | Key::Ctrl('c') | Key::Ctrl('d') => {
                return Some(Picked::Quit)
            }
            Key::Enter => {
                return match self.rows.get(self.selected) {
                    Some(r) => Some(Picked::Session(r.id.clone())),
                    None => self
                        .examples
                        .get(self.selected - self.rows.len())
                        .map(|e| Picked::Example(e.dir.clone())),
                }
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
