//! `air attach`: the terminal UI. It is a client of airsd's JSON-RPC API only (D-056):
//! it renders a [`Projection`](air_proto::projection::Projection) snapshot advanced by
//! live deltas, and never opens SQLite or spawns workers.
//!
//! - [`app`]: the state — the projection and the UI's own (selection, focus, dialogs)
//!   — and what keys do to it;
//! - [`view`]: rendering, a pure function of the state and the [`theme`] ([`graph`]
//!   draws the task graph, [`waves`] orders its tasks, [`markdown`] the agents' text,
//!   [`evidence_view`] the evidence airsd recorded of a task);
//! - [`keymap`]: keys and the actions they are bound to; [`pointer`]: the mouse,
//!   through the renderer's layout;
//! - [`run`]: the attached terminal — connection, subscription, keys, reconnects.

pub mod app;
mod bars;
pub mod branch_view;
pub mod chat_view;
pub mod evidence_view;
mod fit;
pub mod graph;
pub mod keymap;
pub mod markdown;
pub mod picker_view;
pub mod plan_dialog;
pub mod pointer;
pub mod run;
pub mod theme;
pub mod todo_view;
pub mod view;
pub mod waves;

#[cfg(test)]
mod chat_tests;
#[cfg(test)]
mod tests;
