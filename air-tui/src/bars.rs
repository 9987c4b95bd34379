//! The status bar over the panes and the footer under them.

use air_proto::projection::RunStatus;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use crate::app::{App, Link, Pane};
use crate::fit::short;
use crate::theme::Theme;

pub(crate) fn status_bar(f: &mut Frame<'_>, area: Rect, app: &App, theme: &Theme) {
    let p = &app.projection;
    let title = p
        .run
        .as_ref()
        .and_then(|r| r.title.clone())
        .or_else(|| p.session.as_ref().and_then(|s| s.title.clone()))
        .unwrap_or_else(|| p.session_id.chars().take(8).collect());
    let link = match &app.link {
        Link::Connected => Span::styled("● ", Style::default().fg(theme.success)),
        Link::Reconnecting { .. } | Link::Stopped => {
            Span::styled("○ ", Style::default().fg(theme.error))
        }
    };
    let mut spans = vec![
        Span::styled(" air ", theme.text_style().add_modifier(Modifier::BOLD)),
        link,
        Span::styled(title, theme.text_style()),
    ];
    // The tasks' states, when there are tasks.
    let counts = app.counts();
    if !counts.is_empty() {
        spans.push(Span::styled(" ·", theme.muted_style()));
    }
    for (status, n) in counts {
        spans.push(Span::styled(
            format!(" {n} {}", status.as_str()),
            Style::default().fg(theme.status(status)),
        ));
    }
    let running = p
        .agents
        .iter()
        .filter(|a| a.status == RunStatus::Running)
        .count();
    spans.push(Span::styled(
        format!(
            " · agents {running} · tokens {}/{}",
            short(p.counters.input_tokens),
            short(p.counters.output_tokens)
        ),
        theme.muted_style(),
    ));
    if p.counters.cost_micro_usd > 0 {
        spans.push(Span::styled(
            format!(" · ${:.2}", p.counters.cost_micro_usd as f64 / 1e6),
            theme.muted_style(),
        ));
    }
    // Who is here: every attached terminal sees the same conversation.
    if app.clients.len() > 1 {
        let mut names: Vec<(&str, usize)> = Vec::new();
        for c in &app.clients {
            match names.iter_mut().find(|(n, _)| *n == c.client) {
                Some((_, k)) => *k += 1,
                None => names.push((&c.client, 1)),
            }
        }
        let names: Vec<String> = names
            .iter()
            .map(|(n, k)| {
                if *k > 1 {
                    format!("{n} ×{k}")
                } else {
                    n.to_string()
                }
            })
            .collect();
        spans.push(Span::styled(
            format!(" · attached: {}", names.join(", ")),
            theme.muted_style(),
        ));
    }
    if let Some(r) = &p.run {
        if r.paused {
            spans.push(Span::styled(
                " · paused",
                Style::default().fg(theme.warning),
            ));
        }
        if let Some(why) = &r.halted {
            spans.push(Span::styled(
                format!(" · halted: {why}"),
                Style::default().fg(theme.error),
            ));
        }
        if let Some(o) = r.outcome {
            spans.push(Span::styled(
                format!(" · run {}", o.as_str()),
                Style::default().fg(theme.accent),
            ));
        }
    }
    f.render_widget(Paragraph::new(Line::from(spans)), area);
}

pub(crate) fn footer(f: &mut Frame<'_>, area: Rect, app: &App, theme: &Theme) {
    if app.ui.viewer.is_some() && app.ui.toast.is_none() && app.link == Link::Connected {
        f.render_widget(
            Paragraph::new(Span::styled(
                " ↑↓ pgup pgdn g G scroll · e open in $EDITOR · esc close",
                theme.muted_style(),
            )),
            area,
        );
        return;
    }
    let line = match (&app.link, &app.ui.toast) {
        (Link::Stopped, _) => Span::styled(
            " the daemon was stopped; this view comes back when it starts again (`air daemon start`) · q detach",
            Style::default().fg(theme.warning),
        ),
        (Link::Reconnecting { attempt, reason }, _) => Span::styled(
            format!(" lost the daemon ({reason}); reconnecting, attempt {attempt} · q detach"),
            Style::default().fg(theme.error),
        ),
        (_, Some(t)) => Span::styled(format!(" {t}"), Style::default().fg(theme.accent)),
        // The input box has the letters: the keys that still work.
        _ if app.ui.focus == Pane::Chat => Span::styled(
            " Enter send · Esc leave the input · PgUp PgDn scroll · Ctrl-P actions · Ctrl-C detach",
            theme.muted_style(),
        ),
        _ => {
            // The keys as bound (the config may have changed them).
            use crate::keymap::Action as A;
            let key = |a: A| {
                let keys = app.keymap.keys_of(a);
                keys.split(' ').next().unwrap_or("").to_string()
            };
            // The way to the other view of the right pane comes first.
            let (other_key, other) = if app.chat.shown {
                ("Esc".to_string(), "task detail")
            } else {
                (key(A::Chat), "talk")
            };
            let hints = [
                (key(A::Detach), "detach"),
                (other_key, other),
                (format!("{} {}", key(A::Down), key(A::Up)), "select"),
                (key(A::NextPane), "pane"),
                (key(A::Cancel), "cancel"),
                (key(A::Palette), "actions"),
                (key(A::Help), "keys"),
            ];
            let text: Vec<String> = hints
                .iter()
                .filter(|(k, _)| !k.trim().is_empty())
                .map(|(k, what)| format!("{k} {what}"))
                .collect();
            Span::styled(format!(" {}", text.join(" · ")), theme.muted_style())
        }
    };
    f.render_widget(Paragraph::new(line), area);
}
