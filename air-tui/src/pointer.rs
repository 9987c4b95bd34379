//! The mouse, through the same layout the renderer uses ([`view::areas`], the task
//! rows, [`graph::hit`]), so a click lands on what was drawn there. It lives apart from
//! the state it changes ([`app`]), which knows nothing of the screen's layout.

use crate::app::{App, Mouse, Pane, Row, WHEEL_LINES};
use crate::{app, graph, view};

/// Mouse input for the attached TUI's state.
pub trait Pointer {
    /// Handles the mouse on a `screen` of this size: a click focuses the pane under
    /// it (and selects the task clicked in the list); the wheel scrolls the pane
    /// under the pointer (the tasks: the selection). While a dialog, the palette or a
    /// filter is open, only the viewer's wheel counts.
    fn mouse(&mut self, m: Mouse, screen: ratatui::layout::Rect);
}

impl Pointer for App {
    fn mouse(&mut self, m: Mouse, screen: ratatui::layout::Rect) {
        use ratatui::layout::Position;
        let (x, y) = match m {
            Mouse::Click { x, y } | Mouse::ScrollUp { x, y } | Mouse::ScrollDown { x, y } => (x, y),
        };
        if let Some(viewer) = &mut self.ui.viewer {
            let last = viewer.lines.len().saturating_sub(1);
            match m {
                Mouse::ScrollUp { .. } => viewer.top = viewer.top.saturating_sub(WHEEL_LINES),
                Mouse::ScrollDown { .. } => viewer.top = (viewer.top + WHEEL_LINES).min(last),
                Mouse::Click { .. } => {}
            }
            return;
        }
        if self.open_request().is_some()
            || self.ui.palette.is_some()
            || self.ui.filter_input.is_some()
            || self.ui.confirm_cancel.is_some()
            || self.ui.confirm_cancel_run
            || self.ui.help
        {
            return;
        }
        let at = Position { x, y };
        let areas = view::areas(screen, self);
        if areas.tasks.contains(at) {
            match m {
                Mouse::ScrollUp { .. } => self.step(-1),
                Mouse::ScrollDown { .. } => self.step(1),
                Mouse::Click { .. } => {
                    self.ui.focus = Pane::Tasks;
                    // Inside the list's border: the row clicked.
                    let inner = y.checked_sub(areas.tasks.y + 1);
                    let height = areas.tasks.height.saturating_sub(2);
                    if areas.graph {
                        // Inside the border: the box clicked.
                        let inner = ratatui::layout::Rect {
                            x: areas.tasks.x + 1,
                            y: areas.tasks.y + 1,
                            width: areas.tasks.width.saturating_sub(2),
                            height,
                        };
                        if let Some(i) = graph::hit(inner, self, x, y) {
                            if i != self.ui.selected {
                                self.ui.selected = i;
                                self.ui.detail_scroll = 0;
                            }
                        }
                    } else if let Some(row) = inner.filter(|r| *r < height) {
                        let rows = app::task_rows(self);
                        let first = app::first_row(&rows, self.ui.selected, height);
                        if let Some(Row::Task(i)) = rows.get(first + usize::from(row)) {
                            if *i != self.ui.selected {
                                self.ui.selected = *i;
                                self.ui.detail_scroll = 0;
                            }
                        }
                    }
                }
            }
        } else if areas.detail.contains(at) {
            match m {
                Mouse::ScrollUp { .. } => {
                    self.ui.detail_scroll = self.ui.detail_scroll.saturating_sub(3)
                }
                Mouse::ScrollDown { .. } => {
                    self.ui.detail_scroll = self.ui.detail_scroll.saturating_add(3)
                }
                Mouse::Click { .. } => self.ui.focus = Pane::Detail,
            }
        } else if areas.log.contains(at) {
            match m {
                Mouse::ScrollUp { .. } => self.scroll_log(WHEEL_LINES),
                Mouse::ScrollDown { .. } => {
                    self.ui.log_scroll = self.ui.log_scroll.saturating_sub(WHEEL_LINES)
                }
                Mouse::Click { .. } => self.ui.focus = Pane::Log,
            }
        }
    }
}
