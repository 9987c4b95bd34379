//! The session picker of `air attach`, and the first-run screen of bare `air` with
//! no model: why, how to give air one, the sessions and the shipped examples.

use air_proto::projection::TaskStatus;
use ratatui::layout::{Constraint, Direction, Layout};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, List, ListItem, ListState, Paragraph, Wrap};
use ratatui::Frame;

use crate::fit::cut;
use crate::theme::Theme;

/// The session picker.
pub fn render_picker(f: &mut Frame<'_>, picker: &crate::app::Picker, theme: &Theme) {
    let area = f.area();
    let setup = picker
        .no_model
        .as_deref()
        .map(|why| first_run_text(why, theme));
    // Its lines as wrapped in the box.
    let inner = usize::from(area.width.saturating_sub(2)).max(1);
    let setup_rows = setup.as_ref().map_or(0, |t| {
        t.iter()
            .map(|l| l.width().div_ceil(inner).max(1))
            .sum::<usize>()
            + 2
    });
    let rows = Layout::default()
        .direction(Direction::Vertical)
        .constraints([
            Constraint::Length(u16::try_from(setup_rows).unwrap_or(u16::MAX)),
            Constraint::Min(3),
            Constraint::Length(1),
        ])
        .split(area);
    if let Some(text) = setup {
        f.render_widget(
            Paragraph::new(text).wrap(Wrap { trim: false }).block(
                Block::default()
                    .borders(Borders::ALL)
                    .border_style(theme.border_style(false))
                    .title(" Welcome to air: no model answers yet "),
            ),
            rows[0],
        );
    }
    let width = usize::from(rows[1].width.saturating_sub(2));
    let mut items: Vec<ListItem> = picker
        .rows
        .iter()
        .map(|r| {
            let color = match r.state.as_str() {
                "running" => theme.status(TaskStatus::Running),
                "completed" => theme.status(TaskStatus::Completed),
                "failed" => theme.status(TaskStatus::Failed),
                "blocked" => theme.status(TaskStatus::Blocked),
                _ => theme.muted,
            };
            let when = format!(
                "{} ",
                r.created_at
                    .get(..16)
                    .unwrap_or(&r.created_at)
                    .replace('T', " ")
            );
            let id = format!("  {}", r.id.get(..8).unwrap_or(&r.id));
            let room = width.saturating_sub(11 + when.chars().count() + id.chars().count());
            ListItem::new(Line::from(vec![
                Span::styled(format!("{:<10} ", r.state), Style::default().fg(color)),
                Span::styled(when, theme.muted_style()),
                Span::styled(cut(&r.title, room), theme.text_style()),
                Span::styled(id, theme.muted_style()),
            ]))
        })
        .collect();
    items.extend(picker.examples.iter().map(|e| {
        let what = format!("{}: {}", e.name, e.title);
        let room = width.saturating_sub(11 + 26);
        ListItem::new(Line::from(vec![
            Span::styled(format!("{:<10} ", "example"), theme.accent_style()),
            Span::styled(cut(&what, room), theme.text_style()),
            Span::styled("  replays its recorded run", theme.muted_style()),
        ]))
    }));
    let title = match (picker.no_model.is_some(), picker.examples.is_empty()) {
        (true, false) => format!(
            "Sessions ({}) and shipped examples ({})",
            picker.rows.len(),
            picker.examples.len()
        ),
        _ => format!("Sessions ({})", picker.rows.len()),
    };
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.border_style(true))
        .title(title);
    let mut state =
        ListState::default().with_selected((!items.is_empty()).then_some(picker.selected));
    if items.is_empty() {
        f.render_widget(
            Paragraph::new(Span::styled(
                " no sessions yet in this project",
                theme.muted_style(),
            ))
            .block(block),
            rows[1],
        );
    } else {
        f.render_stateful_widget(
            List::new(items)
                .block(block)
                .highlight_style(theme.selected_style()),
            rows[1],
            &mut state,
        );
    }
    f.render_widget(
        Paragraph::new(Span::styled(
            " ↑↓ choose · Enter open · q quit",
            theme.muted_style(),
        )),
        rows[2],
    );
}

/// What the first-run screen says: why no model answers and the three ways to give
/// air one.
fn first_run_text(why: &str, theme: &Theme) -> Vec<Line<'static>> {
    let cmd = |c: &str, what: &str| {
        Line::from(vec![
            Span::raw("  "),
            Span::styled(c.to_string(), theme.accent_style()),
            Span::styled(format!("  {what}"), theme.muted_style()),
        ])
    };
    vec![
        Line::from(Span::styled(format!(" {why}"), theme.text_style())),
        Line::from(Span::styled(
            " Give air a model in the shell that starts it, then run `air` again:",
            theme.text_style(),
        )),
        cmd(
            "export ANTHROPIC_API_KEY=…",
            "or OPENAI_API_KEY, OPENROUTER_API_KEY",
        ),
        cmd(
            "~/.air/models.yaml",
            "any provider, its base URL and key variable",
        ),
        cmd(
            "air chat --model ollama/NAME",
            "a local model (or OLLAMA_BASE_URL)",
        ),
        Line::from(Span::styled(
            " `air doctor` shows what air finds. Meanwhile: a session, or an example.",
            theme.muted_style(),
        )),
    ]
}
