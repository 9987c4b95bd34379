//! The rows of the task list as they are shown (in waves: a heading before each
//! wave), which the list draws and the keys and the mouse move through.

use super::*;

/// A row of the task list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Row {
    /// The heading of a wave (0-based).
    Wave(usize),
    /// A task, by index.
    Task(usize),
}

/// The task list's rows: the tasks the filter shows, and in waves a heading before
/// each wave.
pub fn task_rows(app: &App) -> Vec<Row> {
    if app.ui.layout == Layout::List {
        return app.visible_tasks().into_iter().map(Row::Task).collect();
    }
    let mut rows = Vec::new();
    for (w, wave) in crate::waves::waves(app.tasks(), &app.projection.edges)
        .iter()
        .enumerate()
    {
        let at = rows.len();
        rows.extend(
            wave.iter()
                .filter(|&&i| app.task_shown(i))
                .map(|&i| Row::Task(i)),
        );
        if rows.len() > at {
            rows.insert(at, Row::Wave(w));
        }
    }
    rows
}

/// The first row in view of a list `height` rows high: the selected row is kept in
/// view, at the bottom when it is further down.
pub fn first_row(rows: &[Row], selected: usize, height: u16) -> usize {
    let height = usize::from(height).max(1);
    rows.iter()
        .position(|r| *r == Row::Task(selected))
        .map_or(0, |s| s.saturating_sub(height - 1))
}
