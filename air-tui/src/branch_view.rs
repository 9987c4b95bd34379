//! A task's git branch in the detail pane: where its change is (in its worktree,
//! merged into the session's integration branch, or kept unmerged).

use ratatui::style::Style;
use ratatui::text::{Line, Span};

use crate::theme::Theme;

/// `branch air/…/T1 · merged`, coloured by where the change is; none for a task
/// that works in the checkout.
pub fn line(t: &air_proto::projection::TaskView, theme: &Theme) -> Option<Line<'static>> {
    use air_proto::workspace_view::WorkspaceState;
    let w = t.workspace.as_ref()?;
    let said = w.describe(t.status.is_terminal());
    let style = match w.state {
        WorkspaceState::Merged => Style::default().fg(theme.success),
        WorkspaceState::Working if t.status.is_terminal() => Style::default().fg(theme.warning),
        WorkspaceState::Conflict | WorkspaceState::CheckFailed => {
            Style::default().fg(theme.warning)
        }
        _ => theme.muted_style(),
    };
    Some(Line::from(vec![
        Span::styled(format!("branch {} · ", w.branch), theme.muted_style()),
        Span::styled(said.to_string(), style),
    ]))
}

/// What the task list says in place of a task's status while its change is in the
/// merge queue or was refused there: `queued`, `merging`, `conflict`, `chk fail`.
pub fn queue_state(
    t: &air_proto::projection::TaskView,
    theme: &Theme,
) -> Option<(&'static str, ratatui::style::Color)> {
    use air_proto::workspace_view::WorkspaceState;
    if t.status.is_terminal() {
        return None;
    }
    match t.workspace.as_ref()?.state {
        WorkspaceState::Queued => Some(("queued", theme.accent)),
        WorkspaceState::Merging => Some(("merging", theme.accent)),
        WorkspaceState::Conflict => Some(("conflict", theme.warning)),
        WorkspaceState::CheckFailed => Some(("chk fail", theme.warning)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use air_proto::projection::{TaskStatus, TaskView};
    use air_proto::workspace_view::{WorkspaceState, WorkspaceView};

    /// A task of `status` whose worktree is in `state`, if any.
    fn task(status: TaskStatus, state: Option<WorkspaceState>) -> TaskView {
        TaskView {
            id: "T1".into(),
            title: "t".into(),
            task_type: "execute".into(),
            category: None,
            phase: None,
            write_area: None,
            status,
            attempts: 1,
            agent_id: None,
            reason: None,
            created_at: "2026-11-30T00:00:00Z".into(),
            updated_at: "2026-11-30T00:00:00Z".into(),
            progress: None,
            evidence: Vec::new(),
            usage: Default::default(),
            todos: Vec::new(),
            workspace: state.map(|state| WorkspaceView {
                id: "w".into(),
                branch: "air/abcd1234/T1".into(),
                state,
                files: Vec::new(),
            }),
        }
    }

    fn shown(status: TaskStatus, state: Option<WorkspaceState>) -> Option<String> {
        line(
            &task(status, state),
            &Theme::dark(crate::theme::Palette::TrueColor),
        )
        .map(|l| l.to_string())
    }

    #[test]
    fn the_task_list_says_where_a_change_is_in_the_queue() {
        let theme = Theme::dark(crate::theme::Palette::TrueColor);
        let said = |status, state| queue_state(&task(status, Some(state)), &theme).map(|(w, _)| w);
        assert_eq!(
            said(TaskStatus::Reviewing, WorkspaceState::Queued),
            Some("queued")
        );
        assert_eq!(
            said(TaskStatus::Reviewing, WorkspaceState::Merging),
            Some("merging")
        );
        assert_eq!(
            said(TaskStatus::Debugging, WorkspaceState::Conflict),
            Some("conflict")
        );
        assert_eq!(
            said(TaskStatus::Running, WorkspaceState::CheckFailed),
            Some("chk fail")
        );
        // An ended task says its status; a working one too.
        assert_eq!(said(TaskStatus::Blocked, WorkspaceState::Conflict), None);
        assert_eq!(said(TaskStatus::Running, WorkspaceState::Working), None);
    }

    #[test]
    fn the_branch_says_where_the_change_is() {
        assert_eq!(shown(TaskStatus::Running, None), None);
        assert_eq!(
            shown(TaskStatus::Running, Some(WorkspaceState::Working)).as_deref(),
            Some("branch air/abcd1234/T1 · working")
        );
        assert_eq!(
            shown(TaskStatus::Completed, Some(WorkspaceState::Merged)).as_deref(),
            Some("branch air/abcd1234/T1 · merged")
        );
        assert_eq!(
            shown(TaskStatus::Blocked, Some(WorkspaceState::Working)).as_deref(),
            Some("branch air/abcd1234/T1 · not merged: branch kept")
        );
        assert_eq!(
            shown(TaskStatus::Reviewing, Some(WorkspaceState::Queued)).as_deref(),
            Some("branch air/abcd1234/T1 · reviewed: queued to merge")
        );
        assert_eq!(
            shown(TaskStatus::Reviewing, Some(WorkspaceState::Merging)).as_deref(),
            Some("branch air/abcd1234/T1 · merging, behind its check")
        );
        assert_eq!(
            shown(TaskStatus::Debugging, Some(WorkspaceState::Conflict)).as_deref(),
            Some("branch air/abcd1234/T1 · conflict: being resolved")
        );
        assert_eq!(
            shown(TaskStatus::Blocked, Some(WorkspaceState::CheckFailed)).as_deref(),
            Some("branch air/abcd1234/T1 · not merged: check failed, branch kept")
        );
    }
}
