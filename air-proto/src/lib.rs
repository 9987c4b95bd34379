//! air's contracts: every type that crosses a process boundary, as serde types whose
//! JSON is exactly the shapes of the design seeds (snake_case fields, enum values as the
//! seeds' strings, optional fields omitted when absent).
//!
//! This crate holds the contracts (types, the event registry, the API's method table,
//! the NDJSON codec) and the pure logic both sides must share (the projection reducer,
//! the plan compiler, the run report). It never reads the environment, and does no I/O
//! except behind the features named for it: `layout` (the `.air/` tree, and the programs
//! air runs itself: `program`), `config` (the
//! user's configuration files), `hooks` (hooks and the trust in them), `backup` (the
//! backup repository) and `client` (the daemon's socket).

#[macro_use]
mod wire_enum;

pub mod api;
#[cfg(feature = "backup")]
pub mod backup;
#[cfg(feature = "hooks")]
pub mod capability;
pub mod chain;
#[cfg(feature = "client")]
pub mod client;
pub mod codec;
#[cfg(feature = "config")]
pub mod config;
pub mod context;
pub mod conversation;
pub mod dependency;
pub mod env;
pub mod error;
pub mod event;
pub mod event_text;
pub mod events;
pub mod gate;
#[cfg(feature = "hooks")]
pub mod hooks;
pub mod ids;
pub mod impact;
pub mod ipc;
#[cfg(feature = "layout")]
pub mod layout;
#[cfg(feature = "hooks")]
pub mod mcp;
pub mod memory;
pub mod message;
#[cfg(feature = "config")]
pub mod models;
pub mod payload;
pub mod plan;
pub mod planning;
pub mod planning_view;
#[cfg(feature = "layout")]
pub mod program;
#[cfg(feature = "layout")]
pub mod project_profile;
pub mod projection;
pub mod registry;
pub mod report;
pub mod result;
pub mod role;
pub mod skills;
pub mod task;
pub mod text;
pub mod time;
pub mod todo;
pub mod tool;
#[cfg(feature = "hooks")]
pub mod trust;
pub mod workspace_view;

/// Schema version of the contracts as a whole; bumped when a wire shape changes
/// incompatibly.
pub const PROTOCOL_VERSION: u32 = 1;
