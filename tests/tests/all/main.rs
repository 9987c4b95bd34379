//! Cross-crate tests: the session store, schema checks, the bus, projection equivalence,
//! crash safety, `air init`, the daemon and its socket, all against real SQLite files,
//! real threads, real processes and the real binaries.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod acp;
mod agents;
mod asks;
mod bus;
mod capability;
mod client_env;
mod compaction;
mod contract;
mod conversation;
mod cpp;
mod crash;
mod daemon;
mod deltas;
mod disk_full;
mod editors;
mod escapes;
mod evidence;
mod first_hour;
mod hooks;
mod init_cli;
mod install;
mod knowledge;
mod limits;
mod long_tasks;
mod mcp;
mod memory;
mod merge_queue;
mod migrate;
mod network;
mod patrol;
mod permissions;
mod plan_cli;
mod planning;
mod polyglot;
mod profile;
mod projection;
mod provider;
mod replan;
mod reproduction;
mod retry;
mod robustness;
mod run;
mod schema;
mod setup;
mod store;
mod tidy;
mod tui;
mod tui_chat;
mod tui_planning;
mod worker_pipe;
mod worktrees;

use air_proto::layout::ProjectPaths;
use air_proto::payload::SessionCreated;
use airsd::{Session, SessionConfig};

pub const PROJECT_ID: &str = "6f1c1e0a-3b2d-4c5e-8f9a-0b1c2d3e4f50";

/// A fresh session in a temporary project directory.
pub fn new_session(config: SessionConfig) -> (tempfile::TempDir, Session) {
    let dir = tempfile::tempdir().unwrap();
    air_proto::layout::init(dir.path(), "2026-11-30T00:00:00Z").unwrap();
    let session = Session::create(
        &ProjectPaths::new(dir.path()),
        PROJECT_ID,
        "s-test",
        &SessionCreated {
            title: Some("test".into()),
            plan_ref: None,
        },
        config,
    )
    .unwrap();
    (dir, session)
}

/// A runtime whose thread serves the loopback provider for a whole test, while the
/// test's own thread waits on processes and terminals.
pub fn provider_rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap()
}

pub fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}
