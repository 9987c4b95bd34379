//! The todo list an agent keeps for its task (`todo.write`), as the detail pane shows
//! it: how many steps are done, then each step, done ✓, in hand ▸, left ·.

use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};

use crate::theme::Theme;

/// Steps shown at most.
const TODOS_SHOWN: usize = 10;

/// The task's todo list, as its agent keeps it: what is done, the step in hand, what
/// is left.
pub fn lines(todos: &[air_proto::todo::TodoItem], theme: &Theme) -> Vec<Line<'static>> {
    let mut lines = Vec::new();
    use air_proto::todo::TodoStatus;
    if todos.is_empty() {
        return lines;
    }
    let done = todos
        .iter()
        .filter(|t| t.status == TodoStatus::Completed)
        .count();
    lines.push(Line::from(""));
    lines.push(Line::from(Span::styled(
        format!("todo {done}/{}", todos.len()),
        theme.muted_style().add_modifier(Modifier::ITALIC),
    )));
    for t in todos.iter().take(TODOS_SHOWN) {
        let (mark, mark_style, text_style) = match t.status {
            TodoStatus::Completed => ("✓", Style::default().fg(theme.success), theme.muted_style()),
            TodoStatus::InProgress => (
                "▸",
                Style::default().fg(theme.accent),
                theme.text_style().add_modifier(Modifier::BOLD),
            ),
            TodoStatus::Pending => ("·", theme.muted_style(), theme.text_style()),
        };
        lines.push(Line::from(vec![
            Span::styled(format!("{mark} "), mark_style),
            Span::styled(t.content.clone(), text_style),
        ]));
    }
    if todos.len() > TODOS_SHOWN {
        lines.push(Line::from(Span::styled(
            format!("… {} more", todos.len() - TODOS_SHOWN),
            theme.muted_style(),
        )));
    }
    lines
}
