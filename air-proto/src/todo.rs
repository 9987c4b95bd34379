//! An agent's todo list for its task (`todo.write`): the steps it means to take, each
//! pending, in progress or done, replaced whole by each call. airsd keeps it in the
//! tool's record; the projection gives each task its latest list, which `air attach`
//! shows beside the task.

use serde::{Deserialize, Serialize};

wire_enum! {
    pub enum TodoStatus {
        Pending = "pending",
        InProgress = "in_progress",
        Completed = "completed",
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TodoItem {
    /// A few words.
    pub content: String,
    /// Where it stands.
    pub status: TodoStatus,
}

/// Most steps a list holds.
pub const MAX_TODOS: usize = 30;
/// Longest step, in characters.
pub const MAX_TODO_CHARS: usize = 200;

/// The list read from a `todo.write` output (`{"todos": [...]}`); `None` when it is
/// not one.
pub fn from_output(output: &serde_json::Value) -> Option<Vec<TodoItem>> {
    serde_json::from_value(output.get("todos")?.clone()).ok()
}
