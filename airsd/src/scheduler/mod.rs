//! The Scheduler: a deterministic core ([`core`]) that turns recorded facts into
//! decisions, the evidence gates it applies ([`gate`]), and (in later modules) the
//! async shell that records decisions as events and drives worker processes.

pub mod core;
pub mod drafts;
pub mod gate;
pub mod shell;
pub mod sim;
#[cfg(test)]
mod tests;
pub mod tooljob;

pub use self::core::{Config, Core, Decision, Dispatch, Fact};
