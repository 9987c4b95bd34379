//! `air migrate` (D-055) through the real binaries, on a project whose sessions are at
//! the previous schema (v1: written by this air, then taken back to v1 as an older air
//! left them): a no changes nothing; a failure injected in the second database leaves
//! every file exactly as it was; then the migration itself, with the data intact and
//! read through the new table; and a database newer than this air is refused.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

use air_proto::layout::ProjectPaths;
use air_proto::payload as p;
use air_tests::{bin, event, output_with_input, work_unit};
use airsd::{Session, SessionConfig};
use rusqlite::Connection;
use serde_json::json;

/// A session with an agent's loop messages, written now and taken back to v1.
fn v1_session(paths: &ProjectPaths, id: &str) {
    let session = Session::create(
        paths,
        crate::PROJECT_ID,
        id,
        &p::SessionCreated {
            title: Some(id.into()),
            plan_ref: None,
        },
        SessionConfig::default(),
    )
    .unwrap();
    crate::rt().block_on(async {
        for e in work_unit(id, 1) {
            session.store().append(e).await.unwrap();
        }
        for (i, ty) in [
            "context.message.created",
            "assistant.message.created",
            "context.message.created",
        ]
        .into_iter()
        .enumerate()
        {
            let msg = p::MessageCreated {
                message_id: format!("{id}-m{i}"),
                content: json!([{"type": "text", "text": format!("message {i} of {id}")}]),
                agent_id: Some("A1".into()),
                task_id: Some("T1".into()),
                client: None,
                model: None,
                usage: None,
            };
            session.store().append(event(id, ty, &msg)).await.unwrap();
        }
    });
    let db = session.db_path().to_path_buf();
    session.close();
    let conn = Connection::open(&db).unwrap();
    conn.execute_batch(
        "DROP TABLE context_messages;
         DELETE FROM schema_version WHERE version > 1;
         PRAGMA user_version = 1;
         PRAGMA wal_checkpoint(TRUNCATE);",
    )
    .unwrap();
}

/// Every file of `.air/shared` and `.air/local/sessions`, with its bytes. SQLite's
/// shared-memory index (`-shm`) and an empty write-ahead log are no data: a reader
/// leaves them behind.
fn files(root: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.join(".air")];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = e.path();
            let rel = path.strip_prefix(root).unwrap().display().to_string();
            // What a migration may touch: the shared files and the sessions.
            if rel.starts_with(".air/local") && !rel.starts_with(".air/local/sessions") {
                continue;
            }
            if path.is_dir() {
                stack.push(path);
            } else if rel.ends_with("-shm")
                || (rel.ends_with("-wal") && e.metadata().unwrap().len() == 0)
            {
                continue;
            } else {
                out.insert(rel, std::fs::read(&path).unwrap());
            }
        }
    }
    out
}

fn air(root: &Path, args: &[&str], stdin: &str) -> Output {
    output_with_input(
        Command::new(bin("air"))
            .args(args)
            .current_dir(root)
            .env("AIR_HOME", root.join("air-home")),
        stdin,
    )
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn a_previous_schema_is_migrated_intact_and_a_failure_puts_everything_back() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    air_proto::layout::init(root, "2026-11-30T00:00:00Z").unwrap();
    let paths = ProjectPaths::new(root);
    v1_session(&paths, "s-1");
    v1_session(&paths, "s-2");
    // An older air never made two loop messages with one id; a damaged file could.
    // The second database's migration fails on it, after the first's succeeded.
    let s2 = Connection::open(paths.session_db("s-2")).unwrap();
    s2.execute_batch(
        "INSERT INTO events (id, type, version, timestamp, source_kind, route_json, route_text, payload_json, agent_id)
         SELECT id || '-copy', type, version, timestamp, source_kind, route_json, route_text, payload_json, agent_id
         FROM events WHERE type = 'context.message.created' LIMIT 1;
         PRAGMA wal_checkpoint(TRUNCATE);",
    )
    .unwrap();
    drop(s2);

    // The daemon refuses it and names the command.
    let err = Session::open(&paths, "s-1", SessionConfig::default())
        .err()
        .unwrap();
    assert!(err.to_string().contains("run `air migrate`"), "{err}");
    // A client is told in the daemon's words (at a terminal, the plan would follow).
    let out = air(root, &["events", "--session", "s-1"], "");
    assert_eq!(out.status.code(), Some(1));
    let said = text(&out.stderr);
    assert!(
        said.contains("database schema version 1 is older than this airsd (2); run `air migrate`"),
        "{said}"
    );
    assert!(!said.contains("ErrorObject"), "{said}");
    // That daemon rescans the project at its start and may write the detected profile:
    // stopped (waiting for its scan) before the files are compared.
    let out = air(root, &["daemon", "stop"], "");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let before = files(root);

    // The plan, then a no: nothing changes.
    let out = air(root, &["migrate"], "n\n");
    let said = text(&out.stdout);
    assert!(out.status.success(), "{said}{}", text(&out.stderr));
    assert!(
        said.contains(".air/local/sessions/s-1/session.db: v1 → v2 (v2: adds context_messages"),
        "{said}"
    );
    assert!(said.contains("nothing was changed"), "{said}");
    assert!(
        text(&out.stderr).contains("migrate? [y/N]"),
        "{}",
        text(&out.stderr)
    );
    same(&files(root), &before);

    // The failure: s-1 was migrated, s-2 failed; both are back as they were.
    let out = air(root, &["migrate", "--yes"], "");
    let said = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains("migrating .air/local/sessions/s-2/session.db failed: sqlite: UNIQUE constraint failed: context_messages.id"),
        "{said}"
    );
    assert!(said.contains("every file was put back as it was"), "{said}");
    let after = files(root);
    assert_eq!(
        after.keys().collect::<Vec<_>>(),
        before.keys().collect::<Vec<_>>()
    );
    same(&after, &before);

    // Repaired, it migrates: the data intact, the new table filled from the events.
    let s2 = Connection::open(paths.session_db("s-2")).unwrap();
    s2.execute_batch("DELETE FROM events WHERE id LIKE '%-copy'; PRAGMA wal_checkpoint(TRUNCATE);")
        .unwrap();
    drop(s2);
    let counts = |db: &Path| -> (i64, i64, i64) {
        let c = Connection::open(db).unwrap();
        let n = |sql: &str| c.query_row(sql, [], |r| r.get::<_, i64>(0)).unwrap();
        (
            n("SELECT COUNT(*) FROM events"),
            n("SELECT COUNT(*) FROM messages"),
            n("SELECT COUNT(*) FROM tasks"),
        )
    };
    let v1_counts = counts(&paths.session_db("s-1"));
    let out = air(root, &["migrate"], "y\n");
    let said = text(&out.stdout);
    assert!(out.status.success(), "{said}{}", text(&out.stderr));
    assert!(
        said.contains("migrated 2 file(s) and verified them"),
        "{said}"
    );
    assert_eq!(counts(&paths.session_db("s-1")), v1_counts);
    let backups: Vec<_> = std::fs::read_dir(paths.backups().join("migrations"))
        .unwrap()
        .flatten()
        .collect();
    assert_eq!(backups.len(), 2, "one copy per attempt");
    for b in &backups {
        assert!(b.path().join("manifest.json").is_file());
    }
    for id in ["s-1", "s-2"] {
        let session = Session::open(&paths, id, SessionConfig::default()).unwrap();
        let conn = session.readers().get().unwrap();
        let got = airsd::event_store::query::agent_messages(&conn, "A1").unwrap();
        let shown: Vec<(bool, String)> = got
            .iter()
            .map(|m| (m.user, m.content[0]["text"].as_str().unwrap().to_string()))
            .collect();
        assert_eq!(
            shown,
            vec![
                (true, format!("message 0 of {id}")),
                (false, format!("message 1 of {id}")),
                (true, format!("message 2 of {id}")),
            ]
        );
        drop(conn);
        session.close();
    }
    let out = air(root, &["migrate"], "");
    assert!(
        text(&out.stdout).contains("up to date"),
        "{}",
        text(&out.stdout)
    );

    // A session that cannot be read is named and left as it is; the rest goes on.
    let broken = paths.sessions().join("s-3");
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::write(broken.join("session.db"), vec![b'x'; 4096]).unwrap();
    let out = air(root, &["migrate"], "");
    let said = text(&out.stdout);
    assert!(out.status.success(), "{said}{}", text(&out.stderr));
    assert!(
        said.contains("cannot read .air/local/sessions/s-3/session.db (")
            && said.contains("): left as it is"),
        "{said}"
    );
    assert!(
        said.contains("up to date except the 1 unreadable above"),
        "{said}"
    );
    assert_eq!(said.matches("s-3/session.db").count(), 1, "{said}");
    assert_eq!(
        std::fs::read(broken.join("session.db")).unwrap(),
        vec![b'x'; 4096]
    );
    std::fs::remove_dir_all(&broken).unwrap();

    // A newer database than this air is refused with its version, and left alone.
    let s1 = Connection::open(paths.session_db("s-1")).unwrap();
    s1.execute_batch(
        "INSERT INTO schema_version VALUES (9, 'later', '9.9.9'); PRAGMA wal_checkpoint(TRUNCATE);",
    )
    .unwrap();
    drop(s1);
    let before = files(root);
    let out = air(root, &["migrate", "--yes"], "");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains(
            ".air/local/sessions/s-1/session.db: schema version 9 is newer than this air knows (2); upgrade air"
        ),
        "{}",
        text(&out.stderr)
    );
    same(&files(root), &before);
}

fn same(now: &BTreeMap<String, Vec<u8>>, before: &BTreeMap<String, Vec<u8>>) {
    let differ: Vec<&String> = now
        .keys()
        .chain(before.keys())
        .filter(|k| now.get(*k) != before.get(*k))
        .collect();
    assert!(differ.is_empty(), "changed: {differ:?}");
}
