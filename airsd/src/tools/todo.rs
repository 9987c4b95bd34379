//! `todo.write`: an executor's or a debugger's list of the steps of its task, kept in
//! the tool's record (the projection shows the latest to people watching). It changes
//! nothing on the machine.

use air_proto::todo::{TodoItem, TodoStatus, MAX_TODOS, MAX_TODO_CHARS};
use serde::{Deserialize, Serialize};

use super::ToolError;

#[derive(Clone, Debug, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TodoInput {
    /// One step at most `in_progress`.
    pub todos: Vec<TodoItem>,
}

#[derive(Clone, Debug, Deserialize, Serialize, schemars::JsonSchema)]
pub struct TodoOutput {
    pub todos: Vec<TodoItem>,
    pub pending: usize,
    pub in_progress: usize,
    pub completed: usize,
}

/// Unicode's invisible formatting characters (category Cf as text uses them:
/// direction marks and overrides, zero-width characters, the soft hyphen, the BOM).
fn invisible(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'
            | '\u{061C}'
            | '\u{180E}'
            | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{206F}'
            | '\u{FEFF}'
            | '\u{FFF9}'..='\u{FFFB}'
    )
}

/// Checks the list and answers with it and its counts.
pub fn write(input: &TodoInput) -> Result<TodoOutput, ToolError> {
    if input.todos.len() > MAX_TODOS {
        return Err(ToolError(format!(
            "todos: {} steps, at most {MAX_TODOS}: merge the small ones",
            input.todos.len()
        )));
    }
    let mut todos = Vec::with_capacity(input.todos.len());
    for (i, t) in input.todos.iter().enumerate() {
        // Shown to people: no control character (a terminal's escapes) and no
        // invisible formatting (a right-to-left override that reorders what they read).
        let shown: String = t
            .content
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .filter(|c| !invisible(*c))
            .collect();
        let content = shown.split_whitespace().collect::<Vec<_>>().join(" ");
        if content.is_empty() {
            return Err(ToolError(format!("todos[{i}].content: empty")));
        }
        if content.chars().count() > MAX_TODO_CHARS {
            return Err(ToolError(format!(
                "todos[{i}].content: longer than {MAX_TODO_CHARS} characters; a step is a few words"
            )));
        }
        todos.push(TodoItem {
            content,
            status: t.status,
        });
    }
    let count = |s: TodoStatus| todos.iter().filter(|t| t.status == s).count();
    let in_progress = count(TodoStatus::InProgress);
    if in_progress > 1 {
        return Err(ToolError(format!(
            "todos: {in_progress} steps are in_progress; one at a time (finish one, mark it completed, then start the next)"
        )));
    }
    Ok(TodoOutput {
        pending: count(TodoStatus::Pending),
        completed: count(TodoStatus::Completed),
        in_progress,
        todos,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn item(content: &str, status: TodoStatus) -> TodoItem {
        TodoItem {
            content: content.into(),
            status,
        }
    }

    #[test]
    fn a_list_is_kept_tidy_and_one_step_runs_at_a_time() {
        let out = write(&TodoInput {
            todos: vec![
                item("  read the\nparser ", TodoStatus::Completed),
                item("add the error type", TodoStatus::InProgress),
                item("run the tests", TodoStatus::Pending),
            ],
        })
        .unwrap();
        assert_eq!(out.todos[0].content, "read the parser");
        let sly = write(&TodoInput {
            todos: vec![item(
                "run\u{1b}[2J the \u{202e}stset\u{0} now",
                TodoStatus::Pending,
            )],
        })
        .unwrap();
        assert_eq!(sly.todos[0].content, "run [2J the stset now");
        assert_eq!((out.pending, out.in_progress, out.completed), (1, 1, 1));
        let two = write(&TodoInput {
            todos: vec![
                item("a", TodoStatus::InProgress),
                item("b", TodoStatus::InProgress),
            ],
        })
        .unwrap_err();
        assert!(two.0.contains("one at a time"), "{two:?}");
        let empty = write(&TodoInput {
            todos: vec![item(" ", TodoStatus::Pending)],
        })
        .unwrap_err();
        assert!(empty.0.starts_with("todos[0].content"), "{empty:?}");
        let many = write(&TodoInput {
            todos: (0..=MAX_TODOS)
                .map(|i| item(&i.to_string(), TodoStatus::Pending))
                .collect(),
        })
        .unwrap_err();
        assert!(many.0.contains("at most"), "{many:?}");
        // The empty list clears it.
        assert!(write(&TodoInput { todos: vec![] })
            .unwrap()
            .todos
            .is_empty());
    }
}
