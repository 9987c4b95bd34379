//! airsd, the daemon of one project, as a library: the binary in `main.rs` is a thin
//! shell, so tests drive the same engine in-process and through the socket.
//!
//! Owns: the session databases ([`db`]) and each open [`session`], the [`event_store`]
//! that decides durability and commits events with their domain-table changes, the
//! [`bus`] that fans events out, the projections clients read ([`projection`]), the
//! [`daemon`] (socket, JSON-RPC API, clients, runs), the [`scheduler`] (its pure core
//! and the shell that drives workers), the worker processes ([`agents::supervisor`]), the
//! [`tools`] agents act through and the OS [`sandbox`] their commands run in, the
//! agents' starting [`context`], their [`agents::models`], the session [`artifacts`], the
//! [`evidence`] airsd derives from the commands it runs and the language
//! [`profiles`] that say what a build, a test or an analysis is, the project's debug
//! [`learning::knowledge`], the daemon's
//! rotating [`ops::logfile`], and the crate's [`error`]s.
//!
//! Must not: print (it logs through `tracing`; only the hidden subcommands, each its
//! own process — the sandbox launcher, `__dependencies`, `__migrate`, `__scan`,
//! `__propose` — write to their stdio, from their `main`), or trust any input it did
//! not check.
//! The environment it reads is named where it is read: the home directory and the
//! variables a command may see (`tools::exec::command_env`).

pub mod agents;
pub mod artifacts;
pub mod bus;
pub mod context;
pub mod daemon;
pub mod db;
pub mod error;
pub mod event_store;
pub mod evidence;
pub mod launcher;
pub mod learning;
pub mod mcp;
pub mod memory;
pub mod opened;
pub mod ops;
pub mod planning;
pub mod profiles;
pub mod project;
pub mod projection;
pub mod proxy;
pub mod sandbox;
pub mod scheduler;
pub mod session;
pub mod tools;
pub mod workspace;

pub use error::{Error, Result};
pub use session::{Session, SessionConfig};

/// The answer of one of airsd's hidden subcommands (`__dependencies`, `__migrate`,
/// `__scan`): the value as JSON on stdout and exit 0, or the error on stderr and exit 1.
pub fn answer_json<T: serde::Serialize, E: std::fmt::Display>(result: Result<T, E>) -> i32 {
    match result
        .map_err(|e| e.to_string())
        .and_then(|v| serde_json::to_string(&v).map_err(|e| e.to_string()))
    {
        // A reader that went away (its command interrupted) is no reason to panic.
        Ok(json) => {
            use std::io::Write;
            let _ = writeln!(std::io::stdout().lock(), "{json}");
            0
        }
        Err(e) => {
            use std::io::Write;
            let _ = writeln!(std::io::stderr().lock(), "{e}");
            1
        }
    }
}

/// The person's air folder: `$AIR_HOME`, else `~/.air`.
pub fn air_home() -> Option<std::path::PathBuf> {
    std::env::var_os("AIR_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| std::path::PathBuf::from(h).join(".air")))
}

/// Installs the TLS provider airsd's own HTTPS clients use (ring), once.
pub fn tls() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}
