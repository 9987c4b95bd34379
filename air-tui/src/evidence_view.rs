//! The evidence airsd recorded of a task, as the detail pane shows it: what each
//! piece shows and what shows it (a command run, an artifact), the latest first.

use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use crate::theme::Theme;

/// Pieces shown, at most.
const SHOWN: usize = 8;

/// The lines of the task's evidence (none when airsd recorded none).
pub fn lines(t: &air_proto::projection::TaskView, theme: &Theme) -> Vec<Line<'static>> {
    if t.evidence.is_empty() {
        return Vec::new();
    }
    let mut out = vec![
        Line::from(""),
        Line::from(Span::styled(
            "evidence airsd recorded",
            theme.muted_style().add_modifier(Modifier::ITALIC),
        )),
    ];
    for e in t.evidence.iter().rev().take(SHOWN) {
        out.push(Line::from(Span::styled(
            format!("✓ {}", e.line()),
            Style::default().fg(theme.success),
        )));
    }
    out
}
