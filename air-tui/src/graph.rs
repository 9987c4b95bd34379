//! The task graph as the TUI draws it: tasks placed in waves (a task's wave is one
//! after the latest of its hard dependencies), drawn as boxes coloured by state in
//! one column per wave, with an edge from each dependency to its dependent routed
//! through the gaps between the columns.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};

use crate::theme::Theme;
pub use crate::waves::waves;

/// A box's width, and the gap between columns (where the edges run).
pub const BOX_WIDTH: u16 = 20;
pub const GAP: u16 = 5;
/// A box's height, and the space between boxes in a column.
pub const BOX_HEIGHT: u16 = 3;
pub const ROW: u16 = BOX_HEIGHT + 1;

/// Where each task's box is, in graph coordinates (column, row) → (x, y).
fn positions(waves: &[Vec<usize>], n: usize) -> Vec<(u16, u16)> {
    let mut pos = vec![(0, 0); n];
    for (c, wave) in waves.iter().enumerate() {
        for (r, &i) in wave.iter().enumerate() {
            let x = u16::try_from(c)
                .unwrap_or(u16::MAX)
                .saturating_mul(BOX_WIDTH + GAP);
            let y = u16::try_from(r).unwrap_or(u16::MAX).saturating_mul(ROW);
            pos[i] = (x, y);
        }
    }
    pos
}

/// The graph's size in cells.
pub fn size(waves: &[Vec<usize>]) -> (u16, u16) {
    let cols = u16::try_from(waves.len()).unwrap_or(u16::MAX);
    let rows = u16::try_from(waves.iter().map(Vec::len).max().unwrap_or(0)).unwrap_or(u16::MAX);
    (
        cols.saturating_mul(BOX_WIDTH + GAP).saturating_sub(GAP),
        rows.saturating_mul(ROW).saturating_sub(1),
    )
}

/// Each task's box in graph coordinates, and the scroll that keeps the selected one
/// in an `area` of this size (the same for drawing and for the mouse).
fn placed(area: Rect, app: &crate::app::App) -> (Vec<(u16, u16)>, u16, u16) {
    let tasks = app.tasks();
    let pos = positions(&waves(tasks, &app.projection.edges), tasks.len());
    let (sx, sy) = pos.get(app.ui.selected).copied().unwrap_or((0, 0));
    let ox = (sx + BOX_WIDTH).saturating_sub(area.width);
    let oy = (sy + BOX_HEIGHT).saturating_sub(area.height);
    (pos, ox, oy)
}

/// The task whose box is at the screen cell `(x, y)` of a graph drawn in `area`.
pub fn hit(area: Rect, app: &crate::app::App, x: u16, y: u16) -> Option<usize> {
    let (pos, ox, oy) = placed(area, app);
    let (x, y) = (x.checked_sub(area.x)? + ox, y.checked_sub(area.y)? + oy);
    pos.iter().position(|&(bx, by)| {
        (bx..bx + BOX_WIDTH).contains(&x) && (by..by + BOX_HEIGHT).contains(&y)
    })
}

/// Draws the app's tasks into `area`, scrolled so the selected task is in view.
/// Tasks the filter hides are drawn muted, so the graph keeps its shape.
pub fn draw(buf: &mut Buffer, area: Rect, app: &crate::app::App, theme: &Theme) {
    let (tasks, edges) = (app.tasks(), &app.projection.edges);
    let (selected, frame) = (app.ui.selected, app.frame);
    let (pos, ox, oy) = placed(area, app);
    let put = |buf: &mut Buffer, x: u16, y: u16, s: &str, style: Style, over: bool| {
        let (Some(x), Some(y)) = (x.checked_sub(ox), y.checked_sub(oy)) else {
            return;
        };
        if x >= area.width || y >= area.height {
            return;
        }
        let (x, y) = (area.x + x, area.y + y);
        if !over && buf[(x, y)].symbol() != " " {
            return;
        }
        buf.set_string(x, y, s, style);
    };
    // A turn at column `x` from row `from` (entered from the left) to row `to` (left
    // to the right).
    let vertical = |buf: &mut Buffer, x: u16, from: u16, to: u16, style: Style| {
        let (top, bottom) = (from.min(to), from.max(to));
        for y in top..=bottom {
            let s = match (y == from, y == to) {
                (true, true) => "─",
                (true, false) if to > from => "┐",
                (true, false) => "┘",
                (false, true) if to > from => "└",
                (false, true) => "┌",
                _ => "│",
            };
            put(buf, x, y, s, style, false);
        }
    };
    // Boxes first; edges go only where nothing is drawn.
    for (i, t) in tasks.iter().enumerate() {
        let (x, y) = pos[i];
        let color = if app.task_shown(i) {
            theme.status(t.status)
        } else {
            theme.muted
        };
        let mut border = Style::default().fg(color);
        if i == selected {
            border = border.add_modifier(Modifier::BOLD | Modifier::REVERSED);
        }
        let w = usize::from(BOX_WIDTH) - 2;
        let id: String = t.id.chars().take(w - 1).collect();
        put(
            buf,
            x,
            y,
            &format!("┌{id}{}┐", "─".repeat(w.saturating_sub(id.chars().count()))),
            border,
            true,
        );
        // Where its change is, while it is in the merge queue or was refused there.
        let queued = crate::branch_view::queue_state(t, theme);
        let line: String = format!(
            "{} {}",
            crate::theme::icon(t.status, frame),
            queued.map_or(t.status.as_str(), |(word, _)| word)
        );
        let color = match queued {
            Some((_, c)) if app.task_shown(i) => c,
            _ => color,
        };
        let attempts = if t.attempts > 1 {
            format!(" ×{}", t.attempts)
        } else {
            String::new()
        };
        let body: String = format!("{line}{attempts}").chars().take(w).collect();
        put(buf, x, y + 1, "│", border, true);
        put(
            buf,
            x + 1,
            y + 1,
            &format!("{body:<w$}"),
            Style::default().fg(color),
            true,
        );
        put(buf, x + BOX_WIDTH - 1, y + 1, "│", border, true);
        put(buf, x, y + 2, &format!("└{}┘", "─".repeat(w)), border, true);
    }
    let edge = theme.muted_style();
    let index: std::collections::HashMap<&str, usize> = tasks
        .iter()
        .enumerate()
        .map(|(i, t)| (t.id.as_str(), i))
        .collect();
    for e in edges {
        let (Some(&c), Some(&p)) = (
            index.get(e.task_id.as_str()),
            index.get(e.depends_on_task_id.as_str()),
        ) else {
            continue;
        };
        let ((px, py), (cx, cy)) = (pos[p], pos[c]);
        if cx <= px {
            continue;
        }
        // Out of the parent's right side, down or up in the gap before the child's
        // column, into the child's left side. An edge that passes columns between
        // them first turns in the gap after the parent to the blank row beside the
        // child's box, runs along it (rows between boxes are blank in every
        // column), and turns again before the child: it never crosses a box.
        let (from_y, to_y) = (py + 1, cy + 1);
        let turn = cx - 2;
        let mut at = (px + BOX_WIDTH, from_y);
        if cx > px + BOX_WIDTH + GAP {
            let lane = if cy > 0 { cy - 1 } else { cy + BOX_HEIGHT };
            let first = px + BOX_WIDTH + GAP / 2;
            for x in px + BOX_WIDTH..first {
                put(buf, x, from_y, "─", edge, false);
            }
            vertical(buf, first, from_y, lane, edge);
            at = (first + 1, lane);
        }
        let (x0, y0) = at;
        for x in x0..turn {
            put(buf, x, y0, "─", edge, false);
        }
        vertical(buf, turn, y0, to_y, edge);
        put(buf, turn + 1, to_y, "▶", edge, false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use air_proto::projection::{EdgeView, TaskView};
    use air_proto::task::DependencyType;

    #[test]
    fn waves_follow_the_longest_hard_path() {
        let task = |id: &str| TaskView {
            id: id.into(),
            title: id.into(),
            task_type: "execute".into(),
            category: None,
            phase: None,
            write_area: None,
            status: air_proto::projection::TaskStatus::Pending,
            attempts: 0,
            agent_id: None,
            reason: None,
            created_at: "2026-11-30T00:00:00Z".into(),
            updated_at: "2026-11-30T00:00:00Z".into(),
            progress: None,
            evidence: Vec::new(),
            usage: Default::default(),
            todos: Vec::new(),
            workspace: None,
        };
        let edge = |a: &str, b: &str, t: DependencyType| EdgeView {
            task_id: a.into(),
            depends_on_task_id: b.into(),
            dependency_type: t,
        };
        let tasks = ["A", "B", "C", "D"].map(task).to_vec();
        let edges = vec![
            edge("B", "A", DependencyType::Hard),
            edge("C", "B", DependencyType::Hard),
            edge("C", "A", DependencyType::Hard),
            edge("D", "C", DependencyType::Soft),
        ];
        assert_eq!(waves(&tasks, &edges), vec![vec![0, 3], vec![1], vec![2]]);
        assert_eq!(size(&waves(&tasks, &edges)), (3 * 25 - 5, 2 * 4 - 1));
    }
}
