//! The session database: opening it with the pragmas durability needs, the numbered
//! migrations, the schema version check, and the pool of read-only connections.
//!
//! One writer connection per session lives on the session's writer thread
//! ([`crate::event_store`]); everyone else reads through the pool. WAL lets readers run
//! beside the writer; `synchronous=FULL` makes every commit survive power loss (D-053).

use std::path::Path;
use std::sync::OnceLock;
use std::time::Duration;

use r2d2_sqlite::SqliteConnectionManager;
use rusqlite::{Connection, OpenFlags, OptionalExtension, MAIN_DB};

use crate::error::{Error, Result};

/// The schema version this build writes.
pub const SCHEMA_VERSION: u32 = 2;

/// Numbered migrations; entry `n` takes the schema from version `n` to `n + 1`.
const MIGRATIONS: &[&str] = &[
    include_str!("0001_init.sql"),
    include_str!("0002_context_messages.sql"),
];

/// The SQL of every migration, in order (for documentation checks).
pub fn migrations() -> &'static [&'static str] {
    MIGRATIONS
}

const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

pub type ReaderPool = r2d2::Pool<SqliteConnectionManager>;

/// Whether opening may create the database.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpenMode {
    /// A new session: create the file and the schema.
    Create,
    /// An existing session: the file must exist and have this build's schema.
    Existing,
    /// A file this process just made from [`template`]: it exists and has this
    /// build's schema, so its schema is not checked as it opens (SQLite then reads
    /// the schema at the first statement that needs it, its first commit).
    Made,
}

/// Opens the writer connection, creating and migrating a new database or checking the
/// version of an existing one (never altering an older one: that is `air migrate`'s job).
pub fn open_writer(path: &Path, mode: OpenMode) -> Result<Connection> {
    if mode != OpenMode::Create && !path.is_file() {
        return Err(Error::NoSuchSession {
            path: path.to_path_buf(),
        });
    }
    let flags = match mode {
        OpenMode::Create => OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE,
        OpenMode::Existing | OpenMode::Made => OpenFlags::SQLITE_OPEN_READ_WRITE,
    } | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let mut conn = Connection::open_with_flags(path, flags)?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    let journal: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
    if !journal.eq_ignore_ascii_case("wal") {
        return Err(Error::Internal(format!(
            "{}: could not switch to WAL mode (journal_mode is {journal})",
            path.display()
        )));
    }
    conn.execute_batch(
        "PRAGMA synchronous = FULL;
         PRAGMA foreign_keys = ON;
         PRAGMA temp_store = MEMORY;
         PRAGMA cache_size = -32768;
         PRAGMA wal_autocheckpoint = 0;",
    )?;
    conn.set_prepared_statement_cache_capacity(64);
    if mode != OpenMode::Made {
        migrate(&mut conn, path)?;
    }
    Ok(conn)
}

/// An empty database at this build's schema, as the bytes of its file: made once per
/// process in memory, so a new session starts from a copy of it rather than running
/// the migrations again on disk (a dozen synced writes). In memory it has no WAL:
/// [`as_wal_file`] makes the bytes a file that opens in WAL mode.
pub fn template() -> Result<&'static [u8]> {
    static TEMPLATE: OnceLock<std::result::Result<Vec<u8>, String>> = OnceLock::new();
    let made = TEMPLATE.get_or_init(|| {
        let make = || -> Result<Vec<u8>> {
            let mut conn = Connection::open_in_memory()?;
            conn.execute_batch("PRAGMA foreign_keys = ON;")?;
            apply_migrations(&mut conn, 0)?;
            Ok(conn.serialize(MAIN_DB)?.to_vec())
        };
        make().map_err(|e| e.to_string())
    });
    made.as_deref()
        .map_err(|e| Error::Internal(format!("the empty session database: {e}")))
}

/// A database's bytes as a file that opens in WAL mode: the header's read and write
/// format versions (offsets 18 and 19) are 2, as `PRAGMA journal_mode = WAL` sets them.
pub fn as_wal_file(mut bytes: Vec<u8>) -> Vec<u8> {
    if let Some(versions) = bytes.get_mut(18..20) {
        versions.copy_from_slice(&[2, 2]);
    }
    bytes
}

/// The schema version recorded in `conn`, `None` for an empty database.
pub fn schema_version(conn: &Connection, path: &Path) -> Result<Option<u32>> {
    let tables: i64 = conn.query_row(
        "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'",
        [],
        |r| r.get(0),
    )?;
    if tables == 0 {
        return Ok(None);
    }
    let has_record: bool = conn.query_row(
        "SELECT COUNT(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'",
        [],
        |r| r.get(0),
    )?;
    if !has_record {
        return Err(Error::SchemaUnknown {
            path: path.to_path_buf(),
        });
    }
    let version: Option<u32> = conn
        .query_row("SELECT MAX(version) FROM schema_version", [], |r| r.get(0))
        .optional()?
        .flatten();
    match version {
        Some(v) => Ok(Some(v)),
        None => Err(Error::SchemaUnknown {
            path: path.to_path_buf(),
        }),
    }
}

fn migrate(conn: &mut Connection, path: &Path) -> Result<()> {
    match schema_version(conn, path)? {
        Some(v) if v == SCHEMA_VERSION => Ok(()),
        Some(v) if v > SCHEMA_VERSION => Err(Error::SchemaTooNew {
            path: path.to_path_buf(),
            found: v,
            supported: SCHEMA_VERSION,
        }),
        Some(v) => Err(Error::SchemaTooOld {
            path: path.to_path_buf(),
            found: v,
            supported: SCHEMA_VERSION,
        }),
        None => apply_migrations(conn, 0),
    }
}

/// Applies the migrations after `from`, all in one transaction: a failure leaves the
/// database as it was.
pub fn apply_migrations(conn: &mut Connection, from: u32) -> Result<()> {
    let tx = conn.transaction()?;
    tx.execute_batch(
        "CREATE TABLE IF NOT EXISTS schema_version (
             version      INTEGER PRIMARY KEY,
             applied_at   TEXT NOT NULL,
             air_version  TEXT NOT NULL
         );",
    )?;
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(from as usize) {
        tx.execute_batch(sql)?;
        tx.execute(
            "INSERT INTO schema_version (version, applied_at, air_version) VALUES (?1, ?2, ?3)",
            rusqlite::params![
                i as u32 + 1,
                air_proto::time::now_iso(),
                env!("CARGO_PKG_VERSION")
            ],
        )?;
    }
    tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
    tx.commit()?;
    Ok(())
}

/// Opens the connection that checkpoints the WAL beside the writer (the writer's own
/// automatic checkpoints are off, so commits never wait for one).
pub fn open_checkpointer(path: &Path) -> Result<Connection> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    // Short: a checkpoint that must wait gives up and tries again after the next commits,
    // while the writer (5 s) waits out a checkpoint rather than fail its batch.
    conn.busy_timeout(Duration::from_millis(200))?;
    Ok(conn)
}

/// A pool of read-only connections to the database at `path`.
pub fn reader_pool(path: &Path, size: u32) -> Result<ReaderPool> {
    let manager = SqliteConnectionManager::file(path)
        .with_flags(OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX)
        .with_init(|c| {
            c.busy_timeout(BUSY_TIMEOUT)?;
            c.execute_batch("PRAGMA foreign_keys = ON; PRAGMA query_only = ON;")
        });
    // Connections are opened as reads ask for them (one opened ahead, in the pool's
    // background thread, made a new session's first read wait longer, not less).
    Ok(r2d2::Pool::builder()
        .max_size(size)
        .min_idle(Some(0))
        .build(manager)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The copy a session starts from is this build's schema, opens in WAL mode as
    /// it is, and is the same bytes each time.
    #[test]
    fn the_template_opens_in_wal_mode_at_this_schema() -> Result<()> {
        let dir = tempfile::tempdir().map_err(|e| Error::Internal(e.to_string()))?;
        let path = dir.path().join("session.db");
        let bytes = as_wal_file(template()?.to_vec());
        std::fs::write(&path, &bytes).map_err(|e| Error::Internal(e.to_string()))?;
        let conn = open_writer(&path, OpenMode::Existing)?;
        assert_eq!(schema_version(&conn, &path)?, Some(SCHEMA_VERSION));
        let journal: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0))?;
        assert_eq!(journal, "wal");
        assert_eq!(template()?, template()?);
        // A template in memory keeps the legacy format: only the file is WAL.
        assert_eq!(template()?.get(18..20), Some(&[1u8, 1][..]));
        Ok(())
    }
}
