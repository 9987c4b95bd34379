//! Rendering: a pure function of the state ([`App`]) and the theme, so every screen
//! can be snapshot-tested with ratatui's `TestBackend`.
//!
//! ```text
//!  air · title · 2 running 1 ready 3 completed · tokens 12.3k/1.2k · connected
//! ┌Tasks─────────────────┐┌T2 Top words──────────────────────────────┐
//! │⠋ T2  running    1 Top││running · attempt 1 · T2-executor-1      │
//! │✓ T1  completed  1 Cou││live: I will add the function …           │
//! └──────────────────────┘└──────────────────────────────────────────┘
//! ┌Events─────────────────────────────────────────────────────────────┐
//! │12:00:01 task.started   T2                                         │
//! └───────────────────────────────────────────────────────────────────┘
//!  q detach · ↑↓ select · tab pane · c cancel · p pause · ? keys
//! ```

use std::collections::HashMap;

use air_proto::projection::{RunStatus, TaskStatus};
use air_proto::time;
use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, List, ListItem, ListState, Paragraph, Wrap};
use ratatui::Frame;

pub use crate::app::{first_row, task_rows, Row};
use crate::app::{App, Pane};
use crate::fit::{cut, short};
use crate::theme::{icon, Theme, SPINNER};

/// A duration as people read it: `42s`, `3m05s`, `1h02m`.
fn span(d: std::time::Duration) -> String {
    let s = d.as_secs();
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, (s / 60) % 60),
    }
}

/// When each task's first agent started (timestamps are stored in one UTC form, so
/// they compare as text; only those shown are parsed).
fn task_starts(app: &App) -> HashMap<&str, &str> {
    let mut starts: HashMap<&str, &str> = HashMap::new();
    for a in &app.projection.agents {
        if let Some(task) = a.task_id.as_deref() {
            let e = starts.entry(task).or_insert(&a.started_at);
            *e = (*e).min(a.started_at.as_str());
        }
    }
    starts
}

/// How long a task has been worked on: from its first agent's start to its end
/// (or to now while it runs).
fn elapsed(
    app: &App,
    t: &air_proto::projection::TaskView,
    starts: &HashMap<&str, &str>,
) -> Option<String> {
    let start = time::parse(starts.get(t.id.as_str())?)?;
    let end = if t.status.is_terminal() {
        time::parse(&t.updated_at)?
    } else {
        app.now?
    };
    end.duration_since(start).ok().map(span)
}

/// Where each part of the screen goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Areas {
    pub status: Rect,
    pub tasks: Rect,
    pub detail: Rect,
    pub log: Rect,
    pub footer: Rect,
    /// The tasks are drawn as a graph.
    pub graph: bool,
}

/// The screen's layout for this state (the same for drawing and for the mouse).
pub fn areas(area: Rect, app: &App) -> Areas {
    // A conversation with no plan: the conversation has the room (a direct lane's
    // task keeps a narrow list; with none, there is no list).
    let (conversation, lanes) = app.conversation_only();
    let rows = Layout::default()
        .direction(Direction::Vertical)
        .constraints([
            Constraint::Length(1),
            Constraint::Min(6),
            Constraint::Length(match (area.height >= 40, conversation) {
                (true, false) => 12,
                (true, true) => 8,
                (false, false) => 7,
                (false, true) => 4,
            }),
            Constraint::Length(1),
        ])
        .split(area);
    let wide = area.width >= 120;
    let graph = app.ui.layout == crate::app::Layout::Graph && area.width >= 100;
    let left = if conversation {
        if lanes {
            24
        } else {
            0
        }
    } else if graph {
        rows[1].width.saturating_sub(if wide { 48 } else { 40 })
    } else if wide {
        56
    } else {
        34
    };
    let cols = Layout::default()
        .direction(Direction::Horizontal)
        .constraints([Constraint::Length(left), Constraint::Min(0)])
        .split(rows[1]);
    Areas {
        status: rows[0],
        tasks: cols[0],
        detail: cols[1],
        log: rows[2],
        footer: rows[3],
        graph,
    }
}

/// The area the viewer covers: the panes, below the status bar and above the footer.
pub fn viewer_area(area: Rect) -> Rect {
    Rect {
        height: area.height.saturating_sub(2),
        y: area.y + 1,
        ..area
    }
}

/// Draws the whole screen.
pub fn render(f: &mut Frame<'_>, app: &App, theme: &Theme) {
    let area = f.area();
    let Areas {
        status,
        tasks,
        detail: detail_area,
        log,
        footer: footer_area,
        graph,
    } = areas(area, app);
    crate::bars::status_bar(f, status, app, theme);
    if graph {
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(theme.border_style(app.ui.focus == Pane::Tasks))
            .title(format!(
                "Task graph ({} tasks, {}: next view)",
                app.tasks().len(),
                app.key_for(crate::keymap::Action::View)
            ));
        let inner = block.inner(tasks);
        f.render_widget(block, tasks);
        crate::graph::draw(f.buffer_mut(), inner, app, theme);
    } else {
        task_list(f, tasks, app, theme);
    }
    if detail_area.width > 0 {
        if app.chat.shown {
            crate::chat_view::draw(f, detail_area, app, theme);
        } else {
            detail(f, detail_area, app, theme);
        }
    }
    event_log(f, log, app, theme);
    crate::bars::footer(f, footer_area, app, theme);
    if let Some(v) = &app.ui.viewer {
        viewer(f, viewer_area(area), v, theme);
    }
    if app.ui.confirm_cancel_run {
        dialog(
            f,
            area,
            theme,
            "Cancel the run",
            vec![
                Line::from("Cancel the whole run? Every running agent is stopped."),
                Line::from(""),
                Line::from(Span::styled(
                    "y cancel it · any other key keeps it",
                    theme.muted_style(),
                )),
            ],
        );
    } else if let Some(task) = &app.ui.confirm_cancel {
        dialog(
            f,
            area,
            theme,
            "Cancel task",
            vec![
                Line::from(format!("Cancel {task}? Its agent is stopped.")),
                Line::from(""),
                Line::from(Span::styled(
                    "y cancel it · any other key keeps it",
                    theme.muted_style(),
                )),
            ],
        );
    } else if let Some(req) = app.open_request() {
        let r = &req.request;
        let mut lines = vec![
            Line::from(Span::styled(
                r.action.clone(),
                theme.text_style().add_modifier(Modifier::BOLD),
            )),
            Line::from(""),
        ];
        for (label, value) in [
            ("task", r.task_id.as_deref()),
            ("agent", r.agent_id.as_deref()),
            ("risk", r.risk.as_deref()),
            ("why", r.reason.as_deref()),
        ] {
            if let Some(v) = value {
                lines.push(Line::from(vec![
                    Span::styled(format!("{label:>5}  "), theme.muted_style()),
                    Span::raw(v.to_string()),
                ]));
            }
        }
        lines.push(Line::from(""));
        // Typing in the conversation answers nothing: it takes Esc first.
        let then = if app.ui.focus == Pane::Chat {
            "Esc, then "
        } else {
            ""
        };
        lines.push(Line::from(Span::styled(
            format!(
                "{then}{} approve · {} deny   ({})",
                app.key_for(crate::keymap::Action::Approve),
                app.key_for(crate::keymap::Action::Deny),
                r.request_id
            ),
            theme.muted_style(),
        )));
        let open = app.projection.permission_requests.len();
        let title = if open > 1 {
            format!("Permission ({open} waiting)")
        } else {
            "Permission".into()
        };
        dialog(f, area, theme, &title, lines);
    } else if let Some((v, turn)) = app
        .open_planning()
        // Questions are answered in the conversation: not covered while typing.
        .filter(|(v, t)| {
            app.ui.focus != Pane::Chat
                || v.questions.is_empty()
                || v.proposed_by.as_deref() == Some(t)
        })
    {
        let (title, lines) = crate::plan_dialog::lines(app, v, turn, theme);
        dialog(f, area, theme, &title, lines);
    } else if app.ui.help {
        // Scrolled as far as the user asked, but never past the last key.
        let lines = help_lines(app, theme);
        let room = usize::from(area.height.saturating_sub(4)).max(1);
        let top = usize::from(app.ui.help_scroll).min(lines.len().saturating_sub(room));
        let title = if lines.len() > room {
            format!(
                "Keys {}–{} of {} (↑↓ scroll, other keys close)",
                top + 1,
                (top + room).min(lines.len()),
                lines.len()
            )
        } else {
            "Keys".into()
        };
        dialog(
            f,
            area,
            theme,
            &title,
            lines.into_iter().skip(top).collect(),
        );
    }
    if let Some(palette) = &app.ui.palette {
        let mut lines = vec![
            Line::from(vec![
                Span::styled("> ", Style::default().fg(theme.accent)),
                Span::styled(palette.query.clone(), theme.text_style()),
                Span::styled("▏", Style::default().fg(theme.accent)),
            ]),
            Line::from(""),
        ];
        let matches = palette.matches();
        if matches.is_empty() {
            lines.push(Line::from(Span::styled(
                "no action matches",
                theme.muted_style(),
            )));
        }
        // The matches that fit, the selected one among them.
        let room = usize::from(area.height.saturating_sub(6)).max(1);
        let first = palette.selected.saturating_sub(room - 1);
        for (i, action) in matches.iter().enumerate().skip(first).take(room) {
            let style = if i == palette.selected {
                theme.selected_style()
            } else {
                theme.text_style()
            };
            // The title cut to leave its keys room, the keys at the right edge.
            let inner = usize::from(area.width.saturating_sub(4).min(72).saturating_sub(2));
            let keys = app.keymap.keys_of(*action);
            let keys_w = Span::raw(keys.as_str()).width();
            let title = cut(action.title(), inner.saturating_sub(keys_w + 2));
            let gap = inner.saturating_sub(Span::raw(title.as_str()).width() + keys_w);
            lines.push(Line::from(vec![
                Span::styled(format!("{title}{}", " ".repeat(gap)), style),
                Span::styled(keys, theme.muted_style()),
            ]));
        }
        dialog(f, area, theme, "Actions (Ctrl-P)", lines);
    }
}

fn task_list(f: &mut Frame<'_>, area: Rect, app: &App, theme: &Theme) {
    let focused = app.ui.focus == Pane::Tasks;
    let inner = usize::from(area.width.saturating_sub(2));
    // Narrow: the mark tells the state, and ids give way to titles.
    let narrow = inner < 48;
    let id_width = app
        .tasks()
        .iter()
        // The Main Agent's turns are not listed.
        .filter(|t| !air_proto::conversation::is_any_turn(&t.id))
        .map(|t| t.id.chars().count())
        .max()
        .unwrap_or(2)
        .min(if narrow { 8 } else { 18 });
    // Wide enough: attempts and elapsed time too.
    let wide = area.width >= 50;
    let starts = if wide {
        task_starts(app)
    } else {
        HashMap::new()
    };
    let row = |t: &air_proto::projection::TaskView| {
        // A held agent's task says so, and its spinner stops.
        let paused = app.task_agent_paused(t) == Some(true);
        // `telling`: a state the mark alone does not tell (held, in the merge queue).
        let (mark, state, color, telling) = if paused {
            ('‖', "paused", theme.warning, true)
        } else if let Some((word, color)) = crate::branch_view::queue_state(t, theme) {
            (icon(t.status, app.frame), word, color, true)
        } else {
            (
                icon(t.status, app.frame),
                t.status.as_str(),
                theme.status(t.status),
                false,
            )
        };
        let mut spans = vec![
            Span::styled(format!("{mark} "), Style::default().fg(color)),
            Span::styled(
                format!("{:<id_width$} ", cut(&t.id, id_width)),
                theme.text_style(),
            ),
        ];
        if !narrow || telling {
            spans.push(Span::styled(
                format!("{state:<9} "),
                Style::default().fg(color),
            ));
        }
        if wide {
            let attempts = if t.attempts > 1 {
                format!("×{}", t.attempts)
            } else {
                String::new()
            };
            spans.push(Span::styled(
                format!(
                    "{attempts:<3}{:>6} ",
                    elapsed(app, t, &starts).unwrap_or_default()
                ),
                theme.muted_style(),
            ));
        }
        let used: usize = spans.iter().map(Span::width).sum();
        spans.push(Span::styled(
            cut(&t.title, inner.saturating_sub(used)),
            theme.muted_style(),
        ));
        ListItem::new(Line::from(spans))
    };
    let rows = task_rows(app);
    let shown = rows.iter().filter(|r| matches!(r, Row::Task(_))).count();
    // Only the rows in view become list items (the list may hold thousands).
    let height = area.height.saturating_sub(2);
    let start = first_row(&rows, app.ui.selected, height);
    let selected = rows
        .iter()
        .position(|r| *r == Row::Task(app.ui.selected))
        .map(|s| s - start);
    let items: Vec<ListItem> = rows
        .iter()
        .skip(start)
        .take(usize::from(height))
        .map(|r| match r {
            Row::Task(i) => row(&app.tasks()[*i]),
            Row::Wave(w) => ListItem::new(Line::from(Span::styled(
                format!("wave {}", w + 1),
                theme.muted_style().add_modifier(Modifier::ITALIC),
            ))),
        })
        .collect();
    let view = match app.ui.layout {
        crate::app::Layout::List => "",
        _ => ", in waves",
    };
    // The Main Agent's turns are not in the list (they are the conversation).
    let total = app
        .tasks()
        .iter()
        .filter(|t| !air_proto::conversation::is_any_turn(&t.id))
        .count();
    let mut title = format!("Tasks ({total}{view})");
    match (&app.ui.filter_input, &app.ui.task_filter) {
        (Some(typing), _) if focused => title = format!("Tasks — filter: {typing}▏"),
        (_, Some(f)) => title = format!("Tasks — \"{f}\" ({shown} of {total})"),
        _ => {}
    }
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.border_style(focused))
        .title(title);
    if items.is_empty() && app.ui.task_filter.is_some() {
        f.render_widget(
            Paragraph::new(Span::styled(
                "No task matches the filter.",
                theme.muted_style(),
            ))
            .block(block),
            area,
        );
        return;
    }
    let mut state = ListState::default().with_selected(selected);

    f.render_stateful_widget(
        List::new(items)
            .block(block)
            .highlight_style(theme.selected_style()),
        area,
        &mut state,
    );
}

fn detail(f: &mut Frame<'_>, area: Rect, app: &App, theme: &Theme) {
    let focused = app.ui.focus == Pane::Detail;
    let Some(t) = app.selected_task() else {
        let block = Block::default()
            .borders(Borders::ALL)
            .border_style(theme.border_style(focused))
            .title("Detail");
        f.render_widget(
            Paragraph::new(Span::styled(
                "No tasks in this session.",
                theme.muted_style(),
            ))
            .block(block),
            area,
        );
        return;
    };
    let p = &app.projection;
    let mut lines = vec![Line::from(vec![
        Span::styled(
            t.status.as_str().to_string(),
            Style::default().fg(theme.status(t.status)),
        ),
        Span::styled(
            if app.task_agent_paused(t) == Some(true) {
                format!(
                    " · paused ({} resumes)",
                    app.key_for(crate::keymap::Action::PauseTask)
                )
            } else {
                String::new()
            },
            Style::default().fg(theme.warning),
        ),
        Span::styled(format!(" · attempt {}", t.attempts), theme.muted_style()),
        Span::styled(
            t.agent_id
                .as_ref()
                .map(|a| format!(" · {a}"))
                .unwrap_or_default(),
            theme.muted_style(),
        ),
        Span::styled(
            elapsed(app, t, &task_starts(app))
                .map(|e| format!(" · {e}"))
                .unwrap_or_default(),
            theme.muted_style(),
        ),
    ])];
    // What it waits for (hard dependencies; soft ones marked ~).
    let needs: Vec<String> = p
        .edges
        .iter()
        .filter(|e| e.task_id == t.id)
        .map(|e| {
            let done = p
                .task(&e.depends_on_task_id)
                .is_some_and(|d| d.status == TaskStatus::Completed);
            let soft = if e.dependency_type == air_proto::task::DependencyType::Soft {
                "~"
            } else {
                ""
            };
            format!(
                "{soft}{}{}",
                e.depends_on_task_id,
                if done { " ✓" } else { "" }
            )
        })
        .collect();
    if !needs.is_empty() {
        lines.push(Line::from(Span::styled(
            format!("needs {}", needs.join(", ")),
            theme.muted_style(),
        )));
    }
    if let Some(agent) = t
        .agent_id
        .as_ref()
        .and_then(|a| p.agents.iter().find(|x| &x.id == a))
    {
        if let Some(h) = &agent.last_heartbeat {
            lines.push(Line::from(Span::styled(
                format!(
                    "{}turn {} · {} tokens in, {} out{}",
                    // What it is doing, while it does it.
                    match (agent.status, h.state.as_deref()) {
                        (RunStatus::Running, Some(state)) => format!("{state} · "),
                        (RunStatus::Running, None) => "working · ".to_string(),
                        _ => String::new(),
                    },
                    h.turn.unwrap_or(0),
                    short(h.input_tokens.unwrap_or(0)),
                    short(h.output_tokens.unwrap_or(0)),
                    agent
                        .model
                        .as_ref()
                        .map(|m| format!(" · {m}"))
                        .unwrap_or_default()
                ),
                theme.muted_style(),
            )));
        }
    }
    if let Some(reason) = &t.reason {
        lines.push(Line::from(Span::styled(
            reason.clone(),
            Style::default().fg(theme.warning),
        )));
    }
    lines.extend(crate::branch_view::line(t, theme));
    lines.extend(crate::todo_view::lines(&t.todos, theme));
    if let Some(text) = t
        .agent_id
        .as_ref()
        .and_then(|a| app.streams.get(a))
        .filter(|s| !s.is_empty())
    {
        lines.push(Line::from(""));
        lines.push(Line::from(Span::styled(
            "live",
            theme.muted_style().add_modifier(Modifier::ITALIC),
        )));
        // The end of the text, as Markdown.
        let md = crate::markdown::lines(text, theme);
        let skip = md.len().saturating_sub(8);
        lines.extend(md.into_iter().skip(skip));
    }
    let tools: Vec<_> = p
        .tool_runs
        .iter()
        // A todo list is shown as the list, above.
        .filter(|r| r.task_id.as_deref() == Some(t.id.as_str()) && r.tool != "todo.write")
        .rev()
        .take(6)
        .collect();
    if !tools.is_empty() {
        lines.push(Line::from(""));
        lines.push(Line::from(Span::styled(
            "tools",
            theme.muted_style().add_modifier(Modifier::ITALIC),
        )));
        for r in tools.into_iter().rev() {
            let (mark, color) = match r.status {
                RunStatus::Running => (SPINNER[(app.frame % 10) as usize], theme.accent),
                RunStatus::Completed => ('✓', theme.success),
                RunStatus::Failed => ('✗', theme.error),
            };
            let mut spans = vec![
                Span::styled(format!("{mark} "), Style::default().fg(color)),
                Span::raw(r.tool.clone()),
            ];
            if let Some(input) = &r.input {
                spans.push(Span::styled(format!(" {input}"), theme.text_style()));
            }
            if let Some(ms) = r.duration_ms {
                spans.push(Span::styled(format!(" {ms} ms"), theme.muted_style()));
            }
            lines.push(Line::from(spans));
            match (&r.error, &r.output) {
                (Some(e), _) => lines.push(Line::from(Span::styled(
                    format!("  → {}", e.lines().next().unwrap_or("")),
                    Style::default().fg(theme.error),
                ))),
                (None, Some(out)) => lines.push(Line::from(Span::styled(
                    format!("  → {out}"),
                    theme.muted_style(),
                ))),
                _ => {}
            }
        }
    }
    if let Some((path, diff)) = app.diffs.get(&t.id) {
        lines.push(Line::from(""));
        lines.push(Line::from(Span::styled(
            format!("diff {path}"),
            theme.muted_style().add_modifier(Modifier::ITALIC),
        )));
        let shown: Vec<&str> = diff
            .lines()
            .filter(|l| !l.starts_with("---") && !l.starts_with("+++"))
            .take(14)
            .collect();
        for l in shown {
            let style = match l.chars().next() {
                Some('+') => Style::default().fg(theme.success),
                Some('-') => Style::default().fg(theme.error),
                Some('@') => Style::default().fg(theme.accent),
                _ => theme.muted_style(),
            };
            lines.push(Line::from(Span::styled(l.to_string(), style)));
        }
    }
    if let Some((command, out)) = app.output.get(&t.id) {
        lines.push(Line::from(""));
        lines.push(Line::from(Span::styled(
            format!("$ {command}"),
            theme.muted_style().add_modifier(Modifier::ITALIC),
        )));
        let skip = out.len().saturating_sub(8);
        for l in out.iter().skip(skip) {
            lines.push(Line::from(Span::styled(l.clone(), theme.text_style())));
        }
    }
    // The latest result of the work (executor, debugger) and the latest review of
    // it, in the order they came.
    let done: Vec<_> = p
        .agents
        .iter()
        .filter(|a| a.task_id.as_deref() == Some(t.id.as_str()) && a.summary.is_some())
        .collect();
    let reviewing = |a: &&air_proto::projection::AgentView| {
        a.agent_type == air_proto::event::AgentType::Reviewer
    };
    lines.extend(crate::evidence_view::lines(t, theme));
    let work = done.iter().rev().find(|a| !reviewing(a));
    let review = done.iter().rev().find(|a| reviewing(a));
    let mut shown: Vec<_> = work.into_iter().chain(review).collect();
    shown.sort_by(|a, b| a.started_at.cmp(&b.started_at));
    for last in shown {
        lines.push(Line::from(""));
        lines.push(Line::from(Span::styled(
            format!("{} said", last.id),
            theme.muted_style().add_modifier(Modifier::ITALIC),
        )));
        lines.extend(crate::markdown::lines(
            last.summary.as_deref().unwrap_or_default(),
            theme,
        ));
        for (heading, items) in [
            ("evidence it cited", &last.evidence),
            ("verification", &last.verification),
            ("risks", &last.risks),
            ("follow-ups", &last.follow_ups),
        ] {
            if items.is_empty() {
                continue;
            }
            lines.push(Line::from(Span::styled(
                heading,
                theme.muted_style().add_modifier(Modifier::ITALIC),
            )));
            for item in items {
                let color = match item.split_once(':').map(|(k, _)| k) {
                    Some("passed") => theme.success,
                    Some("failed" | "high") => theme.error,
                    Some("medium") => theme.warning,
                    _ => theme.text,
                };
                lines.push(Line::from(Span::styled(
                    format!("• {item}"),
                    Style::default().fg(color),
                )));
            }
        }
    }
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.border_style(focused))
        .title(format!("{} {}", t.id, t.title));
    f.render_widget(
        Paragraph::new(lines)
            .block(block)
            .wrap(Wrap { trim: false })
            .scroll((app.ui.detail_scroll, 0)),
        area,
    );
}

fn event_log(f: &mut Frame<'_>, area: Rect, app: &App, theme: &Theme) {
    let focused = app.ui.focus == Pane::Log;
    let height = area.height.saturating_sub(2) as usize;
    let shown = app.visible_log();
    let scroll = app.ui.log_scroll.min(shown.len().saturating_sub(height));
    let end = shown.len().saturating_sub(scroll);
    let start = end.saturating_sub(height);
    let lines: Vec<Line> = shown[start..end]
        .iter()
        .map(|l| Line::from(Span::styled(l.to_string(), theme.text_style())))
        .collect();
    let mut title = String::from("Events");
    match (&app.ui.filter_input, &app.ui.filter) {
        (Some(typing), _) if app.ui.focus != Pane::Tasks => title.push_str(&format!(
            " — filter: {typing}▏ (type: task: agent: words; Enter apply, Esc keep)"
        )),
        (None, Some(f)) => title.push_str(&format!(
            " — matching \"{f}\" ({} of {})",
            shown.len(),
            app.log.len()
        )),
        _ => {}
    }
    if scroll > 0 {
        title.push_str(&format!(" ({scroll} more below)"));
    }
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.border_style(focused))
        .title(title);
    f.render_widget(Paragraph::new(lines).block(block), area);
}

/// A long text over the panes, showing only the lines that fit (it may hold
/// millions).
fn viewer(f: &mut Frame<'_>, area: Rect, v: &crate::app::Viewer, theme: &Theme) {
    let height = usize::from(area.height.saturating_sub(2));
    let end = (v.top + height).min(v.lines.len());
    let lines: Vec<Line> = v.lines[v.top.min(end)..end]
        .iter()
        .map(|l| {
            let style = match l.chars().next() {
                Some('+') if v.diff => Style::default().fg(theme.success),
                Some('-') if v.diff => Style::default().fg(theme.error),
                Some('@') if v.diff => Style::default().fg(theme.accent),
                _ => theme.text_style(),
            };
            Line::from(Span::styled(l.clone(), style))
        })
        .collect();
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.border_style(true))
        .title(format!(
            "{} — lines {}–{} of {}",
            v.title,
            (v.top + 1).min(end),
            end,
            v.lines.len()
        ));
    f.render_widget(Clear, area);
    f.render_widget(Paragraph::new(lines).block(block), area);
}

fn help_lines(app: &App, theme: &Theme) -> Vec<Line<'static>> {
    let width = crate::keymap::Action::ALL
        .iter()
        .map(|(action, ..)| app.keymap.keys_of(*action).chars().count())
        .max()
        .unwrap_or(0);
    crate::keymap::Action::ALL
        .iter()
        .map(|(action, _, title, _)| {
            Line::from(vec![
                Span::styled(
                    format!("{:>width$}  ", app.keymap.keys_of(*action)),
                    theme.text_style().add_modifier(Modifier::BOLD),
                ),
                Span::styled(*title, theme.muted_style()),
            ])
        })
        .collect()
}

/// A centred box over the screen.
fn dialog(f: &mut Frame<'_>, area: Rect, theme: &Theme, title: &str, lines: Vec<Line<'_>>) {
    let width = area.width.saturating_sub(4).min(72);
    let height = (lines.len() as u16 + 2).min(area.height.saturating_sub(2));
    let rect = Rect {
        x: area.x + (area.width.saturating_sub(width)) / 2,
        y: area.y + (area.height.saturating_sub(height)) / 2,
        width,
        height,
    };
    f.render_widget(Clear, rect);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(theme.border_style(true))
        .title(title.to_string());
    f.render_widget(
        Paragraph::new(lines)
            .block(block)
            .wrap(Wrap { trim: false }),
        rect,
    );
}
