//! The conversation pane: the messages as Markdown (who sent each, the agents' tool
//! calls in brief), the text streaming in, the Main Agent's state, and the input
//! box. A pure function of the state, like the rest of `view`.

use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};
use ratatui::Frame;

use crate::app::{App, Pane};
use crate::theme::Theme;

/// Most lines of the input box shown at once (it scrolls to its end).
const INPUT_ROWS: usize = 5;

/// The screen rows `lines` take at `width` once wrapped.
fn rows(lines: &[Line<'_>], width: u16) -> usize {
    let width = usize::from(width.max(1));
    lines.iter().map(|l| l.width().div_ceil(width).max(1)).sum()
}

/// The conversation's lines, oldest first, the streaming text last.
pub fn lines(app: &App, theme: &Theme) -> Vec<Line<'static>> {
    let mut out: Vec<Line<'static>> = Vec::new();
    let header = |user: bool, who: &str| {
        let (name, style) = if user {
            (
                "you",
                Style::default()
                    .fg(theme.accent)
                    .add_modifier(Modifier::BOLD),
            )
        } else {
            (
                "air",
                Style::default()
                    .fg(theme.success)
                    .add_modifier(Modifier::BOLD),
            )
        };
        Line::from(vec![
            Span::styled(format!("▌{name} "), style),
            Span::styled(format!("· {who}"), theme.muted_style()),
        ])
    };
    let mut last: Option<(bool, &str)> = None;
    for said in &app.chat.said {
        // An agent's messages in a row go under one header.
        let same = last == Some((said.user, said.who.as_str())) && !said.user;
        if same {
            out.pop();
        } else {
            out.push(header(said.user, &said.who));
        }
        last = Some((said.user, said.who.as_str()));
        if !said.text.trim().is_empty() {
            if said.user {
                out.extend(
                    said.text
                        .lines()
                        .map(|l| Line::from(Span::styled(l.to_string(), theme.text_style()))),
                );
            } else {
                out.extend(crate::markdown::lines(&said.text, theme));
            }
        }
        let calls = if app.chat.expanded {
            &said.calls
        } else {
            &said.tools
        };
        for t in calls {
            for (i, l) in t.lines().enumerate() {
                let mark = if i == 0 { "  · " } else { "    " };
                out.push(Line::from(Span::styled(
                    format!("{mark}{l}"),
                    theme.muted_style(),
                )));
            }
        }
        out.push(Line::from(""));
    }
    if let Some((task, text)) = app.chat_stream() {
        if last == Some((false, task)) {
            out.pop();
        } else {
            out.push(header(false, task));
        }
        out.extend(crate::markdown::lines(text, theme));
        out.push(Line::from(Span::styled(
            "▍",
            Style::default().fg(theme.accent),
        )));
    }
    out
}

/// Draws the pane in `area`.
pub fn draw(f: &mut Frame<'_>, area: Rect, app: &App, theme: &Theme) {
    let focused = app.ui.focus == Pane::Chat;
    let typed: Vec<&str> = app.chat.input.split('\n').collect();
    let input_rows = typed.len().clamp(1, INPUT_ROWS) as u16;
    let parts = Layout::default()
        .direction(Direction::Vertical)
        .constraints([Constraint::Min(3), Constraint::Length(input_rows + 2)])
        .split(area);
    let state = app.projection.main_state();
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.border_style(focused))
        .title(format!("Conversation — {}", state.as_str()));
    let inner = block.inner(parts[0]);
    let mut all = lines(app, theme);
    if all.is_empty() {
        all.push(Line::from(Span::styled(
            "Ask air anything about the project, or ask for a change.",
            theme.muted_style(),
        )));
    }
    // Scrolled up from the end by what the user asked.
    let total = rows(&all, inner.width);
    let height = usize::from(inner.height);
    let top = total.saturating_sub(height + app.chat.scroll);
    f.render_widget(
        Paragraph::new(all)
            .block(block)
            .wrap(Wrap { trim: false })
            .scroll((u16::try_from(top).unwrap_or(u16::MAX), 0)),
        parts[0],
    );
    // The input box: its last lines, the cursor at the end.
    let shown = &typed[typed.len().saturating_sub(INPUT_ROWS)..];
    let mut input: Vec<Line> = shown
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let prompt = if i == 0 && typed.len() <= INPUT_ROWS {
                "> "
            } else {
                "  "
            };
            Line::from(vec![
                Span::styled(prompt, Style::default().fg(theme.accent)),
                Span::styled(l.to_string(), theme.text_style()),
            ])
        })
        .collect();
    if focused {
        if let Some(last) = input.last_mut() {
            last.spans
                .push(Span::styled("▏", Style::default().fg(theme.accent)));
        }
    }
    let hint = if focused {
        "Enter sends · Ctrl-J new line · Ctrl-O tool calls · Tab completes /… · Esc leaves"
            .to_string()
    } else {
        format!(
            "{} to type a message",
            app.key_for(crate::keymap::Action::Chat)
        )
    };
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.border_style(focused))
        .title(Span::styled(hint, theme.muted_style()));
    f.render_widget(
        Paragraph::new(input)
            .block(block)
            .wrap(Wrap { trim: false }),
        parts[1],
    );
}
