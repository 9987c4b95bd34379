//! air's contracts: every type that crosses a process boundary, as serde types whose
//! JSON is exactly the shapes of the design seeds (snake_case fields, enum values as the
//! seeds' strings, optional fields omitted when absent).
//!
//! This crate holds types, the event registry, the projection model with its delta
//! semantics, and the NDJSON codec. It does no I/O of its own except in the `layout`
//! feature (the `.air/` directory tree), and it never reads the environment.

#[macro_use]
mod wire_enum;

pub mod api;
#[cfg(feature = "backup")]
pub mod backup;
#[cfg(feature = "client")]
pub mod client;
pub mod codec;
#[cfg(feature = "config")]
pub mod config;
pub mod context;
pub mod dependency;
pub mod error;
pub mod event;
pub mod events;
pub mod ids;
pub mod ipc;
#[cfg(feature = "layout")]
pub mod layout;
pub mod message;
#[cfg(feature = "config")]
pub mod models;
pub mod payload;
pub mod plan;
pub mod projection;
pub mod registry;
pub mod report;
pub mod result;
pub mod task;
pub mod time;
pub mod tool;

/// Schema version of the contracts as a whole; bumped when a wire shape changes
/// incompatibly.
pub const PROTOCOL_VERSION: u32 = 1;
