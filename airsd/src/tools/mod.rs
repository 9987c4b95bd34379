//! Tools agents call through airsd (`tool.call`). Every effect an agent has on the
//! project is one of these, checked and recorded by airsd.
//!
//! This module holds the tool implementations; the registry, the PermissionEngine and
//! the recording of each call (`tool_runs`, `tool.started`/`completed`/`failed`) are
//! built on them.

pub mod fs;
