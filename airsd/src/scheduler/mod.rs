//! The Scheduler: a deterministic core ([`core`]) that turns recorded facts into
//! decisions, the evidence gates it applies ([`gate`], shared with the worker), the
//! async [`shell`] that records decisions as events and drives worker processes, the
//! tool calls it runs beside itself ([`tooljob`]), the hooks it runs at their events
//! ([`hooks`]), message drafts ([`drafts`]) and an
//! in-memory driver of the core for tests and benchmarks ([`sim`]).

pub mod core;
pub mod drafts;
pub use air_proto::gate;
pub mod hooks;
pub mod shell;
pub mod sim;
#[cfg(test)]
mod tests;
pub mod tooljob;

pub use self::core::{Config, Core, Decision, Dispatch, Fact, GateSubject};
