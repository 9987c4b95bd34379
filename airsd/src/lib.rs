//! airsd, the daemon of one project, as a library: the binary in `main.rs` is a thin
//! shell, so tests drive the same engine in-process and through the socket.
//!
//! Owns: the session databases ([`db`]), the [`event_store`] that decides durability
//! and commits events with their domain-table changes, the [`bus`] that fans events out,
//! and the projections clients read ([`projection`]).
//!
//! Must not: print, read the environment, or trust any input it did not check.

pub mod artifacts;
pub mod bus;
pub mod context;
pub mod daemon;
pub mod db;
pub mod error;
pub mod event_store;
pub mod logfile;
pub mod models;
pub mod projection;
pub mod sandbox;
pub mod scheduler;
pub mod session;
pub mod supervisor;
pub mod tools;

pub use error::{Error, Result};
pub use session::{Session, SessionConfig};
