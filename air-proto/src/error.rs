//! Error kinds shared by every layer and the wire shape of an error.
//!
//! Each library crate has its own error enum; each maps to one [`ErrorKind`] at the edge,
//! so clients can branch on a stable string.

use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// Malformed or invalid input: a bad field, a bad value.
    InvalidInput,
    /// A peer broke the wire protocol (bad frame, wrong message for the state).
    Protocol,
    /// The referenced thing does not exist.
    NotFound,
    /// The thing already exists or is in a state that forbids the request.
    Conflict,
    /// The PermissionEngine or the agent's whitelist refused.
    PermissionDenied,
    /// A deadline passed.
    Timeout,
    /// The caller or the user cancelled.
    Cancelled,
    /// A dependency (daemon, provider, disk) is not reachable right now.
    Unavailable,
    /// Too many requests; retry later.
    RateLimited,
    /// A budget (retries, tokens, cost, time) ran out.
    BudgetExhausted,
    /// Stored data was written by a newer (or unknown) schema.
    SchemaMismatch,
    /// A tool ran and failed.
    ToolFailed,
    /// An LLM provider answered with an error.
    Provider,
    /// A bug: an invariant did not hold.
    Internal,
}

impl ErrorKind {
    /// Whether retrying the same request later may succeed.
    pub fn retryable(self) -> bool {
        matches!(
            self,
            ErrorKind::Timeout | ErrorKind::Unavailable | ErrorKind::RateLimited
        )
    }
}

/// An error as it crosses a process boundary.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WireError {
    pub kind: ErrorKind,
    pub message: String,
    pub details: Option<Value>,
}
