//! `air attach`: the terminal UI. It is a client of airsd's JSON-RPC API only (D-056):
//! it renders a [`Projection`](air_proto::projection::Projection) snapshot advanced by
//! live deltas, and never opens SQLite or spawns workers.
//!
//! The views land with the attach issue; this crate exists now so the workspace has its
//! final shape and the dependency direction (tui → proto only) is fixed from the start.
