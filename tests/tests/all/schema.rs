//! The session database's schema: a newer or foreign database refused and left alone,
//! an older one never migrated silently, WAL with full sync, `docs/db-schema.md`
//! naming every table.

use air_proto::layout::ProjectPaths;
use airsd::{Error, Session, SessionConfig};
use rusqlite::Connection;

fn fixture_db(version_sql: &str) -> (tempfile::TempDir, ProjectPaths, Vec<u8>) {
    let (dir, session) = crate::new_session(SessionConfig::default());
    let db = session.db_path().to_path_buf();
    session.close();
    let conn = Connection::open(&db).unwrap();
    conn.execute_batch(version_sql).unwrap();
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
        .unwrap();
    drop(conn);
    let bytes = std::fs::read(&db).unwrap();
    let paths = ProjectPaths::new(dir.path());
    (dir, paths, bytes)
}

#[test]
fn a_newer_database_is_refused_and_left_alone() {
    let (_dir, paths, bytes) =
        fixture_db("INSERT INTO schema_version VALUES (7, 'later', '9.9.9');");
    let err = Session::open(&paths, "s-test", SessionConfig::default())
        .err()
        .unwrap();
    assert!(
        matches!(
            err,
            Error::SchemaTooNew {
                found: 7,
                supported: 2,
                ..
            }
        ),
        "{err}"
    );
    assert!(
        err.to_string()
            .contains("newer than this airsd supports (2); upgrade air"),
        "{err}"
    );
    assert_eq!(
        std::fs::read(paths.session_db("s-test")).unwrap(),
        bytes,
        "not altered"
    );
}

#[test]
fn an_older_database_is_never_silently_migrated() {
    let (_dir, paths, bytes) = fixture_db(
        "DELETE FROM schema_version; INSERT INTO schema_version VALUES (0, 'earlier', '0.0.1');",
    );
    let err = Session::open(&paths, "s-test", SessionConfig::default())
        .err()
        .unwrap();
    assert!(matches!(err, Error::SchemaTooOld { found: 0, .. }), "{err}");
    assert!(err.to_string().contains("run `air migrate`"), "{err}");
    assert_eq!(
        std::fs::read(paths.session_db("s-test")).unwrap(),
        bytes,
        "not altered"
    );
}

#[test]
fn a_foreign_database_is_refused() {
    let (_dir, paths, _) = fixture_db("DROP TABLE schema_version;");
    let err = Session::open(&paths, "s-test", SessionConfig::default())
        .err()
        .unwrap();
    assert!(matches!(err, Error::SchemaUnknown { .. }), "{err}");
    let err = Session::open(&paths, "missing", SessionConfig::default())
        .err()
        .unwrap();
    assert!(err.to_string().contains("no session `"), "{err}");
}

#[test]
fn the_database_runs_wal_with_full_sync_and_foreign_keys() {
    let (_dir, session) = crate::new_session(SessionConfig::default());
    let conn = session.readers().get().unwrap();
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    let fk: i64 = conn
        .query_row("PRAGMA foreign_keys", [], |r| r.get(0))
        .unwrap();
    assert_eq!(fk, 1);
    let version: i64 = conn
        .query_row("SELECT MAX(version) FROM schema_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, airsd::db::SCHEMA_VERSION as i64);
    // Every domain table of schema v1 exists.
    for table in [
        "session_meta",
        "messages",
        "message_drafts",
        "tasks",
        "task_dependencies",
        "task_attempts",
        "agents",
        "tool_runs",
        "command_runs",
        "artifacts",
        "diagnostics",
        "evidence_refs",
        "workspaces",
        "events",
        "ui_state",
        "permission_requests",
        "schema_version",
    ] {
        let n: i64 = conn
            .query_row(
                "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = ?1",
                [table],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(n, 1, "table {table}");
    }
    // Readers cannot write.
    assert!(conn.execute("DELETE FROM events", []).is_err());
}

#[test]
fn docs_db_schema_names_every_table() {
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/db-schema.md"))
        .unwrap();
    for sql in airsd::db::migrations() {
        for line in sql.lines() {
            if let Some(rest) = line.strip_prefix("CREATE TABLE ") {
                let table = rest.split_whitespace().next().unwrap();
                assert!(
                    doc.contains(&format!("`{table}`")),
                    "docs/db-schema.md does not describe `{table}`"
                );
            }
        }
    }
}
