//! The worker's library: what `air-worker` is made of, and what tests drive directly.

pub mod agent;
pub mod converse;
pub mod history;
pub mod model;
pub mod own;
pub mod provider;
pub mod replay;
pub mod submit;
