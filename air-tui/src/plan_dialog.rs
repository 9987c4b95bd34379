//! The planning dialog: what the Architecture Designer's turn waits for — its
//! questions (answered in the conversation), the requirements it stated (agreed with
//! the approve key), or its proposal (the architecture, the decisions, the graph in
//! waves; confirmed or rejected with the approve and deny keys, a change asked for
//! in the conversation).

use air_proto::planning_view::PlanningView;
use ratatui::style::Modifier;
use ratatui::text::{Line, Span};

use crate::app::App;
use crate::keymap::Action;
use crate::theme::Theme;

/// The dialog's title and lines for `turn`'s open question, statement or proposal.
pub fn lines(
    app: &App,
    v: &PlanningView,
    turn: &str,
    theme: &Theme,
) -> (String, Vec<Line<'static>>) {
    let bold = theme.text_style().add_modifier(Modifier::BOLD);
    let muted = theme.muted_style();
    let (approve, deny, chat) = (
        app.key_for(Action::Approve),
        app.key_for(Action::Deny),
        app.key_for(Action::Chat),
    );
    let mut out = vec![
        Line::from(Span::styled(v.requirement.clone(), bold)),
        Line::from(""),
    ];
    let title;
    let hint;
    if v.proposed_by.as_deref() == Some(turn) {
        title = format!("Proposed plan ({turn})");
        if let Some(p) = &v.proposal {
            out.push(Line::from(p.summary.trim().to_string()));
            for m in &p.modules {
                out.push(Line::from(vec![
                    Span::styled("  module ", muted),
                    Span::raw(format!("{}: {}", m.name, m.responsibility)),
                ]));
            }
            for d in &p.decisions {
                out.push(Line::from(vec![
                    Span::styled("  ADR    ", muted),
                    Span::raw(format!("{}: {}", d.title, d.decision)),
                ]));
            }
        }
        out.push(Line::from(""));
        for (n, wave) in v.waves.iter().enumerate() {
            out.push(Line::from(vec![
                Span::styled(format!("  wave {}  ", n + 1), muted),
                Span::raw(wave.join(", ")),
            ]));
        }
        hint = format!("{approve} confirm · {deny} reject · {chat} say what to change");
    } else if v.stated_by.as_deref() == Some(turn) {
        title = format!("Requirements ({turn})");
        for r in &v.requirements {
            out.push(Line::from(format!("  - {r}")));
        }
        hint = format!("{approve} agree · {chat} say what is wrong");
    } else {
        title = format!("Questions ({turn})");
        for q in &v.questions {
            let options = if q.options.is_empty() {
                String::new()
            } else {
                format!("  ({})", q.options.join(" / "))
            };
            out.push(Line::from(vec![
                Span::styled(format!("  [{}] ", q.id), muted),
                Span::raw(format!("{}{options}", q.text)),
            ]));
        }
        hint = format!("{chat} answer in the conversation · {approve} go ahead without answering");
    }
    out.push(Line::from(""));
    // Typing in the conversation answers nothing: it takes Esc first.
    let then = if app.ui.focus == crate::app::Pane::Chat {
        "Esc, then "
    } else {
        ""
    };
    out.push(Line::from(Span::styled(format!("{then}{hint}"), muted)));
    (title, out)
}
