//! How a tool call is refused or fails: one message that says what and where, shared
//! by every tool and check (so none of them imports another for it).

/// A tool refused or failed; the message says what and where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ToolError(pub String);
