//! WAL checkpoints beside the writer. The writer connection has automatic checkpoints
//! off, so a commit never stops to copy the WAL into the database; this thread does it
//! after commits, passively (never blocking the writer), and forces a restart of the
//! WAL only when it has grown past a bound.

use std::sync::mpsc::{Receiver, TryRecvError};
use std::time::Duration;

use rusqlite::Connection;

/// WAL size (pages) past which a checkpoint waits for the writer so the WAL can restart.
const FORCE_RESTART_PAGES: i64 = 16_384;
/// Commits arriving within this window share one checkpoint.
const COALESCE: Duration = Duration::from_millis(50);

pub(crate) fn run(conn: Connection, commits: Receiver<()>) {
    while commits.recv().is_ok() {
        std::thread::sleep(COALESCE);
        let closed = loop {
            match commits.try_recv() {
                Ok(()) => continue,
                Err(TryRecvError::Empty) => break false,
                Err(TryRecvError::Disconnected) => break true,
            }
        };
        checkpoint(&conn, "PASSIVE");
        if closed {
            break;
        }
    }
    // The session is closing: fold the WAL into the database and truncate it.
    checkpoint(&conn, "TRUNCATE");
}

fn checkpoint(conn: &Connection, mode: &str) {
    let sql = format!("PRAGMA wal_checkpoint({mode})");
    match conn.query_row(&sql, [], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?))) {
        Ok((_, log)) if log > FORCE_RESTART_PAGES && mode == "PASSIVE" => {
            checkpoint(conn, "RESTART")
        }
        Ok(_) => {}
        Err(e) => tracing::warn!(error = %e, mode, "WAL checkpoint failed"),
    }
}
