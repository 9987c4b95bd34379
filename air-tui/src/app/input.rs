//! How keys, actions and the mouse change the UI state or become commands for
//! airsd.

use super::*;

impl App {
    /// Handles a key: changes the UI state, or returns a command for airsd.
    pub fn key(&mut self, key: Key) -> Option<Command> {
        self.ui.toast = None;
        // Ctrl-D / Ctrl-C detach from anywhere: a dialog, the palette, a filter.
        if matches!(key, Key::Ctrl(_)) && self.keymap.action(key) == Some(Action::Detach) {
            return Some(Command::Detach);
        }
        // A permission question comes first: a filter being typed gives way to it.
        if self.open_request().is_some() {
            self.ui.filter_input = None;
        }
        // Modal input first: the viewer, the palette's query, the filter being
        // typed, a confirmation, the help screen.
        // (A permission question drawn over the viewer has the keys first.)
        if let Some(mut viewer) = self
            .ui
            .viewer
            .take_if(|_| self.projection.permission_requests.is_empty())
        {
            let command = viewer.key(key)?;
            self.ui.viewer = Some(viewer);
            return command;
        }
        if let Some(mut palette) = self.ui.palette.take() {
            match key {
                Key::Esc => return None,
                Key::Enter => {
                    return palette
                        .matches()
                        .get(palette.selected)
                        .and_then(|a| self.act(*a));
                }
                Key::Up => palette.selected = palette.selected.saturating_sub(1),
                Key::Down => {
                    palette.selected =
                        (palette.selected + 1).min(palette.matches().len().saturating_sub(1))
                }
                Key::Backspace => {
                    palette.query.pop();
                    palette.selected = 0;
                }
                Key::Char(c) => {
                    palette.query.push(c);
                    palette.selected = 0;
                }
                _ if self.keymap.action(key) == Some(Action::Palette) => return None,
                _ => {}
            }
            self.ui.palette = Some(palette);
            return None;
        }
        if let Some(mut text) = self.ui.filter_input.take() {
            match key {
                Key::Esc => {}
                Key::Enter => {
                    let filter = (!text.trim().is_empty()).then(|| text.trim().to_string());
                    if self.ui.focus == Pane::Tasks {
                        self.ui.task_filter = filter;
                        if !self.task_shown(self.ui.selected) {
                            self.step(1);
                        }
                    } else {
                        self.ui.filter = filter;
                        self.ui.log_scroll = 0;
                    }
                }
                Key::Backspace => {
                    text.pop();
                    self.ui.filter_input = Some(text);
                }
                Key::Char(c) => {
                    text.push(c);
                    self.ui.filter_input = Some(text);
                }
                _ => self.ui.filter_input = Some(text),
            }
            return None;
        }
        if let Some(task) = self.ui.confirm_cancel.take() {
            return matches!(key, Key::Char('y') | Key::Char('Y'))
                .then_some(Command::CancelTask { task_id: task });
        }
        if std::mem::take(&mut self.ui.confirm_cancel_run) {
            return matches!(key, Key::Char('y') | Key::Char('Y')).then_some(Command::CancelRun);
        }
        if self.ui.help {
            // The help scrolls when it is longer than the screen; any other key
            // closes it.
            let last = u16::try_from(Action::ALL.len()).unwrap_or(u16::MAX);
            match self.keymap.action(key) {
                Some(Action::Down) => self.ui.help_scroll = (self.ui.help_scroll + 1).min(last),
                Some(Action::Up) => self.ui.help_scroll = self.ui.help_scroll.saturating_sub(1),
                Some(Action::PageDown) => {
                    self.ui.help_scroll = (self.ui.help_scroll + 10).min(last)
                }
                Some(Action::PageUp) => {
                    self.ui.help_scroll = self.ui.help_scroll.saturating_sub(10)
                }
                _ => {
                    self.ui.help = false;
                    self.ui.help_scroll = 0;
                }
            }
            return None;
        }
        // The input box has the keys it types with, even with a question open (a
        // letter typed there is not an answer: Esc first); the others go to the keymap.
        if self.ui.focus == Pane::Chat {
            if let Some(command) = self.chat_key(key) {
                return command;
            }
        }
        // Out of the input box, Esc puts the task's detail back in the
        // conversation's place (the footer says so).
        if key == Key::Esc && self.chat.shown && self.ui.focus != Pane::Chat {
            self.chat.shown = false;
            return None;
        }
        let action = self.keymap.action(key)?;
        self.act(action)
    }

    /// Does what an action does.
    pub fn act(&mut self, action: Action) -> Option<Command> {
        if let Some(req) = self.open_request() {
            // A permission question is open: answer it, or detach, or search the
            // actions; nothing else until it is answered.
            let request_id = req.request.request_id.clone();
            return match action {
                Action::Approve => Some(Command::Approve { request_id }),
                Action::Deny => Some(Command::Deny { request_id }),
                Action::Detach => Some(Command::Detach),
                Action::Palette => {
                    self.ui.palette = Some(CommandPalette::default());
                    None
                }
                _ => None,
            };
        }
        // A planning turn waits for the user: approve and deny answer it; everything
        // else works as usual (its questions are answered in the conversation).
        if let Some((v, turn)) = self.open_planning() {
            use air_proto::planning::PlanDecision;
            let task_id = turn.to_string();
            let proposal = v.proposed_by.as_deref() == Some(turn);
            match action {
                Action::Approve if proposal => {
                    return Some(Command::DecidePlan {
                        task_id,
                        decision: PlanDecision::Confirm,
                    })
                }
                Action::Deny if proposal => {
                    return Some(Command::DecidePlan {
                        task_id,
                        decision: PlanDecision::Reject,
                    })
                }
                Action::Approve => return Some(Command::GoAhead { task_id }),
                Action::Deny => {
                    self.open_chat();
                    return None;
                }
                _ => {}
            }
        }
        let n = self.projection.tasks.len();
        match action {
            Action::Detach => return Some(Command::Detach),
            Action::Help => self.ui.help = true,
            Action::Palette => self.ui.palette = Some(CommandPalette::default()),
            Action::View => {
                self.ui.layout = match self.ui.layout {
                    Layout::List => Layout::Waves,
                    Layout::Waves => Layout::Graph,
                    Layout::Graph => Layout::List,
                }
            }
            Action::Filter => {
                let current = if self.ui.focus == Pane::Tasks {
                    &self.ui.task_filter
                } else {
                    &self.ui.filter
                };
                self.ui.filter_input = Some(current.clone().unwrap_or_default());
            }
            Action::NextPane => {
                // The conversation, when shown, stands where the detail is.
                self.ui.focus = match self.ui.focus {
                    Pane::Tasks if self.chat.shown => Pane::Chat,
                    Pane::Tasks => Pane::Detail,
                    Pane::Detail | Pane::Chat => Pane::Log,
                    // No list is shown: back to the conversation.
                    Pane::Log if self.conversation_only() == (true, false) => Pane::Chat,
                    Pane::Log => Pane::Tasks,
                }
            }
            Action::Chat => {
                if self.ui.focus == Pane::Chat {
                    self.chat.shown = false;
                    self.ui.focus = Pane::Tasks;
                } else {
                    self.open_chat();
                }
            }
            Action::Down => match self.ui.focus {
                Pane::Chat => self.chat.scroll = self.chat.scroll.saturating_sub(1),
                Pane::Log => self.ui.log_scroll = self.ui.log_scroll.saturating_sub(1),
                Pane::Detail => self.ui.detail_scroll = self.ui.detail_scroll.saturating_add(1),
                Pane::Tasks => self.step(1),
            },
            Action::Up => match self.ui.focus {
                Pane::Chat => self.chat.scroll = self.chat.scroll.saturating_add(1),
                Pane::Log => self.scroll_log(1),
                Pane::Detail => self.ui.detail_scroll = self.ui.detail_scroll.saturating_sub(1),
                Pane::Tasks => self.step(-1),
            },
            Action::PageUp => match self.ui.focus {
                Pane::Detail => self.ui.detail_scroll = self.ui.detail_scroll.saturating_sub(10),
                _ => self.scroll_log(10),
            },
            Action::PageDown => match self.ui.focus {
                Pane::Detail => self.ui.detail_scroll = self.ui.detail_scroll.saturating_add(10),
                _ => self.ui.log_scroll = self.ui.log_scroll.saturating_sub(10),
            },
            Action::First => self.step(-(n as isize)),
            Action::Last => self.step(n as isize),
            Action::Cancel => {
                if let Some(t) = self.selected_task().filter(|t| !t.status.is_terminal()) {
                    self.ui.confirm_cancel = Some(t.id.clone());
                }
            }
            Action::Pause => {
                let paused = self.projection.run.as_ref().is_some_and(|r| r.paused);
                return Some(if paused {
                    Command::Resume
                } else {
                    Command::Pause
                });
            }
            Action::PauseTask => {
                let t = self.selected_task()?;
                let task_id = t.id.clone();
                match self.task_agent_paused(t) {
                    Some(true) => return Some(Command::ResumeTask { task_id }),
                    Some(false) => return Some(Command::PauseTask { task_id }),
                    None => {
                        self.ui.toast = Some(format!(
                            "no agent is running {task_id} (it is {}); {} pauses the whole run",
                            t.status.as_str(),
                            self.key_for(Action::Pause)
                        ))
                    }
                }
            }
            Action::Approve | Action::Deny => {
                self.ui.toast = Some("no permission request is waiting".into());
            }
            Action::CancelRun => {
                if self
                    .projection
                    .run
                    .as_ref()
                    .is_some_and(|r| r.ended_at.is_none())
                {
                    self.ui.confirm_cancel_run = true;
                } else {
                    self.ui.toast = Some("the run has ended".into());
                }
            }
            Action::Retry => {
                let t = self.selected_task()?;
                if matches!(
                    t.status,
                    TaskStatus::Failed | TaskStatus::Blocked | TaskStatus::Cancelled
                ) {
                    return Some(Command::Retry {
                        task_ids: vec![t.id.clone()],
                    });
                }
                self.ui.toast = Some(format!(
                    "{} is {}: {} retries a failed, blocked or cancelled task ({}: all of them, once the run has ended)",
                    t.id,
                    t.status.as_str(),
                    self.key_for(Action::Retry),
                    self.key_for(Action::RetryAll)
                ));
            }
            Action::RetryAll => {
                let ended = self
                    .projection
                    .run
                    .as_ref()
                    .is_some_and(|r| r.ended_at.is_some());
                // Anything not completed (a run stopped by a budget leaves some
                // pending).
                let unfinished = self
                    .projection
                    .tasks
                    .iter()
                    .any(|t| t.status != TaskStatus::Completed);
                match (ended, unfinished) {
                    (true, true) => return Some(Command::Retry { task_ids: vec![] }),
                    (true, false) => {
                        self.ui.toast = Some("nothing to retry: every task completed".into())
                    }
                    (false, _) => {
                        self.ui.toast = Some(
                            "the run is still going; retry its failed tasks once it has ended"
                                .into(),
                        )
                    }
                }
            }
            Action::Edit => {
                let path = self
                    .selected_task()
                    .and_then(|t| self.diffs.get(&t.id))
                    .map(|(p, _)| p.clone());
                match path {
                    Some(path) => return Some(Command::Edit { path }),
                    None => {
                        self.ui.toast = Some("no changed file to open for this task yet".into())
                    }
                }
            }
            Action::Copy => {
                if let Some(t) = self.selected_task() {
                    return Some(Command::Copy { text: t.id.clone() });
                }
            }
            Action::CopySession => {
                return Some(Command::Copy {
                    text: self.projection.session_id.clone(),
                });
            }
            Action::Raw => match self.log_in_view() {
                Some((from, to)) => return Some(Command::ShowEvents { from, to }),
                None => self.ui.toast = Some("no stored event is in view".into()),
            },
            Action::Output => {
                let task = self.selected_task().map(|t| t.id.as_str());
                let run = self
                    .projection
                    .command_runs
                    .iter()
                    .rev()
                    .find(|c| task.is_some() && c.task_id.as_deref() == task);
                match run {
                    Some(c) => {
                        return Some(Command::ShowOutput {
                            command_run_id: c.id.clone(),
                            command: c.command.clone(),
                        })
                    }
                    None => self.ui.toast = Some("no command has run for this task yet".into()),
                }
            }
            Action::Diff => {
                let found = self
                    .selected_task()
                    .and_then(|t| Some((t.id.clone(), self.diffs.get(&t.id)?)));
                match found {
                    Some((task, (path, diff))) => {
                        self.ui.viewer = Some(Viewer::new(
                            format!("{task}: the latest change, {path}"),
                            format!("{task}.diff"),
                            diff,
                            true,
                        ))
                    }
                    None => self.ui.toast = Some("no change for this task yet".into()),
                }
            }
        }
        None
    }

    /// Shows what the selected task's running command has printed so far (its
    /// whole output is stored, and read, once it ends).
    pub fn show_streamed_output(&mut self) {
        let found = self
            .selected_task()
            .and_then(|t| Some((t.id.clone(), self.output.get(&t.id)?)));
        self.ui.viewer = match found {
            Some((task, (command, lines))) => {
                let text: Vec<&str> = lines.iter().map(String::as_str).collect();
                Some(Viewer::new(
                    format!("$ {command} (running: its last {} lines)", lines.len()),
                    format!("{task}-output.log"),
                    &text.join("\n"),
                    false,
                ))
            }
            None => {
                self.ui.toast = Some("the command has printed nothing yet".into());
                None
            }
        };
    }

    /// Scrolls the event log `by` lines back; at its top, older events are wanted.
    pub fn scroll_log(&mut self, by: usize) {
        // As far as the first line shown is the first line held.
        let top = self
            .visible_log()
            .len()
            .saturating_sub(self.ui.log_rows.max(1));
        self.ui.log_scroll = (self.ui.log_scroll + by).min(top);
        self.ui.want_older = self.ui.log_scroll >= top;
        if self.ui.want_older && self.log.len() + PAGE as usize > LOG_LINES * 4 {
            self.ui.toast = Some(format!(
                "the log holds its most ({} lines); `air events -s {}` reads further back",
                self.log.len(),
                self.projection.session_id
            ));
        }
    }
}
