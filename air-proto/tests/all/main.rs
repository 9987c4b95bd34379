#![allow(clippy::unwrap_used, clippy::expect_used)]
//! air-proto's integration tests: contracts against fixtures written from the seeds,
//! the NDJSON codec, the registry and the project layout.

mod codec;
mod contracts;
mod layout;
mod plan;
mod registry;
