//! Themes are data (`resources/themes/*.json`; the user's in `~/.air/themes/`): colours
//! for text, borders, the selection and each task state. `NO_COLOR` turns colour off
//! (the selection is then shown reversed), and a terminal without true colour gets the
//! nearest of the 16 ANSI colours.

use std::collections::BTreeMap;
use std::path::Path;

use air_proto::projection::TaskStatus;
use ratatui::style::{Color, Modifier, Style};
use serde::Deserialize;

const DARK: &str = include_str!("../../resources/themes/dark.json");
const LIGHT: &str = include_str!("../../resources/themes/light.json");

/// The themes shipped with air.
pub const BUILT_IN: &[&str] = &["dark", "light"];

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ThemeFile {
    name: String,
    text: String,
    muted: String,
    accent: String,
    border: String,
    border_focused: String,
    selection: String,
    error: String,
    warning: String,
    success: String,
    status: BTreeMap<String, String>,
}

/// How many colours the terminal shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Palette {
    /// 24-bit colour.
    TrueColor,
    /// The 16 ANSI colours.
    Ansi16,
    /// None (`NO_COLOR`).
    Mono,
}

impl Palette {
    /// From the environment: `NO_COLOR` (any value) turns colour off; `COLORTERM` of
    /// `truecolor` or `24bit` allows 24-bit colour; otherwise 16 colours.
    pub fn detect(env: &dyn Fn(&str) -> Option<String>) -> Palette {
        if env("NO_COLOR").is_some_and(|v| !v.is_empty()) {
            return Palette::Mono;
        }
        match env("COLORTERM").as_deref() {
            Some("truecolor" | "24bit") => Palette::TrueColor,
            _ => Palette::Ansi16,
        }
    }
}

/// A theme, resolved for a palette.
#[derive(Clone, Debug, PartialEq)]
pub struct Theme {
    pub name: String,
    pub palette: Palette,
    pub text: Color,
    pub muted: Color,
    pub accent: Color,
    pub border: Color,
    pub border_focused: Color,
    pub selection: Color,
    pub error: Color,
    pub warning: Color,
    pub success: Color,
    status: BTreeMap<String, Color>,
}

fn parse_color(field: &str, value: &str) -> Result<(u8, u8, u8), String> {
    let hex = value
        .strip_prefix('#')
        .filter(|h| h.len() == 6 && h.chars().all(|c| c.is_ascii_hexdigit()))
        .ok_or_else(|| format!("`{field}`: `{value}` is not a colour (#rrggbb)"))?;
    let byte = |i: usize| u8::from_str_radix(&hex[i..i + 2], 16).unwrap_or(0);
    Ok((byte(0), byte(2), byte(4)))
}

/// The ANSI colour closest in kind: greys by lightness; other colours by their hue
/// (six sectors), bright when light.
fn ansi16(rgb: (u8, u8, u8)) -> Color {
    let (r, g, b) = (f64::from(rgb.0), f64::from(rgb.1), f64::from(rgb.2));
    let max = r.max(g).max(b);
    let min = r.min(g).min(b);
    let value = max / 255.0;
    let saturation = if max > 0.0 { (max - min) / max } else { 0.0 };
    if saturation < 0.25 {
        return match value {
            v if v < 0.25 => Color::Black,
            v if v < 0.6 => Color::DarkGray,
            v if v < 0.85 => Color::Gray,
            _ => Color::White,
        };
    }
    let d = max - min;
    let hue = if max == r {
        60.0 * ((g - b) / d).rem_euclid(6.0)
    } else if max == g {
        60.0 * ((b - r) / d) + 120.0
    } else {
        60.0 * ((r - g) / d) + 240.0
    };
    let bright = value > 0.7;
    let pick = |dark: Color, light: Color| if bright { light } else { dark };
    match hue {
        h if !(30.0..330.0).contains(&h) => pick(Color::Red, Color::LightRed),
        h if h < 90.0 => pick(Color::Yellow, Color::LightYellow),
        h if h < 150.0 => pick(Color::Green, Color::LightGreen),
        h if h < 210.0 => pick(Color::Cyan, Color::LightCyan),
        h if h < 270.0 => pick(Color::Blue, Color::LightBlue),
        _ => pick(Color::Magenta, Color::LightMagenta),
    }
}

impl Theme {
    /// Parses a theme file's text; `source` names it in errors.
    pub fn parse(source: &str, text: &str, palette: Palette) -> Result<Theme, String> {
        let f: ThemeFile =
            serde_path_to_error::deserialize(&mut serde_json::Deserializer::from_str(text))
                .map_err(|e| format!("{source}: {}: {}", e.path(), e.inner()))?;
        let color = |field: &str, value: &str| -> Result<Color, String> {
            let rgb = parse_color(field, value).map_err(|e| format!("{source}: {e}"))?;
            Ok(match palette {
                Palette::TrueColor => Color::Rgb(rgb.0, rgb.1, rgb.2),
                Palette::Ansi16 => ansi16(rgb),
                Palette::Mono => Color::Reset,
            })
        };
        let mut status = BTreeMap::new();
        for s in [
            TaskStatus::Pending,
            TaskStatus::Ready,
            TaskStatus::Running,
            TaskStatus::Reviewing,
            TaskStatus::Debugging,
            TaskStatus::Completed,
            TaskStatus::Failed,
            TaskStatus::Blocked,
            TaskStatus::Cancelled,
        ] {
            let value = f
                .status
                .get(s.as_str())
                .ok_or_else(|| format!("{source}: `status.{}` is missing", s.as_str()))?;
            status.insert(
                s.as_str().to_string(),
                color(&format!("status.{}", s.as_str()), value)?,
            );
        }
        Ok(Theme {
            name: f.name.clone(),
            palette,
            text: color("text", &f.text)?,
            muted: color("muted", &f.muted)?,
            accent: color("accent", &f.accent)?,
            border: color("border", &f.border)?,
            border_focused: color("border_focused", &f.border_focused)?,
            selection: color("selection", &f.selection)?,
            error: color("error", &f.error)?,
            warning: color("warning", &f.warning)?,
            success: color("success", &f.success)?,
            status,
        })
    }

    /// A built-in theme by name, or `~/.air/themes/NAME.json` (in `air_home`).
    pub fn load(name: &str, air_home: Option<&Path>, palette: Palette) -> Result<Theme, String> {
        match name {
            "dark" => Theme::parse("resources/themes/dark.json", DARK, palette),
            "light" => Theme::parse("resources/themes/light.json", LIGHT, palette),
            other => {
                let path = air_home
                    .map(|h| h.join("themes").join(format!("{other}.json")))
                    .ok_or_else(|| format!("no theme `{other}` (built in: dark, light)"))?;
                let text = std::fs::read_to_string(&path).map_err(|e| {
                    format!(
                        "theme `{other}`: {}: {e} (built in: dark, light)",
                        path.display()
                    )
                })?;
                Theme::parse(&path.display().to_string(), &text, palette)
            }
        }
    }

    /// The built-in dark theme.
    pub fn dark(palette: Palette) -> Theme {
        Theme::parse("dark", DARK, palette).unwrap_or_else(|_| Theme::fallback(palette))
    }

    fn fallback(palette: Palette) -> Theme {
        Theme {
            name: "fallback".into(),
            palette,
            text: Color::Reset,
            muted: Color::Reset,
            accent: Color::Reset,
            border: Color::Reset,
            border_focused: Color::Reset,
            selection: Color::Reset,
            error: Color::Reset,
            warning: Color::Reset,
            success: Color::Reset,
            status: BTreeMap::new(),
        }
    }

    /// The colour of a task state.
    pub fn status(&self, s: TaskStatus) -> Color {
        self.status.get(s.as_str()).copied().unwrap_or(self.text)
    }

    pub fn text_style(&self) -> Style {
        Style::default().fg(self.text)
    }

    pub fn muted_style(&self) -> Style {
        Style::default().fg(self.muted)
    }

    pub fn accent_style(&self) -> Style {
        Style::default().fg(self.accent)
    }

    /// The selected row: its background, or reversed without colour.
    pub fn selected_style(&self) -> Style {
        match self.palette {
            Palette::Mono => Style::default().add_modifier(Modifier::REVERSED),
            _ => Style::default()
                .bg(self.selection)
                .add_modifier(Modifier::BOLD),
        }
    }

    pub fn border_style(&self, focused: bool) -> Style {
        let s = Style::default().fg(if focused {
            self.border_focused
        } else {
            self.border
        });
        if focused && self.palette == Palette::Mono {
            s.add_modifier(Modifier::BOLD)
        } else {
            s
        }
    }
}

pub(crate) const SPINNER: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/// A task status as one character (running ones spin with `frame`).
pub(crate) fn icon(status: TaskStatus, frame: u64) -> char {
    match status {
        TaskStatus::Running | TaskStatus::Reviewing | TaskStatus::Debugging => {
            SPINNER[(frame % SPINNER.len() as u64) as usize]
        }
        TaskStatus::Completed => '✓',
        TaskStatus::Failed => '✗',
        TaskStatus::Blocked => '!',
        TaskStatus::Cancelled => '-',
        TaskStatus::Ready => '•',
        TaskStatus::Pending => '·',
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_themes_parse_and_degrade() {
        for name in BUILT_IN {
            let t = Theme::load(name, None, Palette::TrueColor).unwrap();
            assert!(matches!(t.status(TaskStatus::Failed), Color::Rgb(..)));
        }
        let t16 = Theme::load("dark", None, Palette::Ansi16).unwrap();
        assert_eq!(t16.status(TaskStatus::Failed), Color::LightRed);
        assert_eq!(t16.status(TaskStatus::Completed), Color::LightGreen);
        let mono = Theme::load("dark", None, Palette::Mono).unwrap();
        assert_eq!(mono.status(TaskStatus::Failed), Color::Reset);
        assert!(mono
            .selected_style()
            .add_modifier
            .contains(Modifier::REVERSED));
    }

    #[test]
    fn user_themes_and_their_errors() {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(home.path().join("themes")).unwrap();
        let mine = DARK.replace("\"dark\"", "\"mine\"");
        std::fs::write(home.path().join("themes/mine.json"), mine).unwrap();
        assert_eq!(
            Theme::load("mine", Some(home.path()), Palette::TrueColor)
                .unwrap()
                .name,
            "mine"
        );
        let e = Theme::load("nope", Some(home.path()), Palette::TrueColor).unwrap_err();
        assert!(
            e.contains("nope.json") && e.contains("built in: dark, light"),
            "{e}"
        );
        std::fs::write(
            home.path().join("themes/bad.json"),
            DARK.replace("\"error\": \"#ff5f5f\"", "\"error\": \"red\""),
        )
        .unwrap();
        let e = Theme::load("bad", Some(home.path()), Palette::TrueColor).unwrap_err();
        assert!(
            e.contains("bad.json") && e.contains("`error`: `red` is not a colour"),
            "{e}"
        );
        assert_eq!(
            Palette::detect(&|k| (k == "NO_COLOR").then(|| "1".into())),
            Palette::Mono
        );
        assert_eq!(
            Palette::detect(&|k| (k == "COLORTERM").then(|| "truecolor".into())),
            Palette::TrueColor
        );
        assert_eq!(Palette::detect(&|_| None), Palette::Ansi16);
    }
}
