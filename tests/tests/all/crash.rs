//! A process killed with SIGKILL in the middle of a stream of transactions leaves a
//! consistent database: every acknowledged event is there, no batch is half applied,
//! and the projection rebuilt from the state tables equals the event log replayed.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use air_proto::event::RuntimeEvent;
use air_proto::layout::ProjectPaths;
use air_proto::projection::Projection;
use airsd::{Session, SessionConfig};

fn kill_after(acks: usize) {
    let dir = tempfile::tempdir().unwrap();
    air_proto::layout::init(dir.path(), "t").unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_air-test-event-writer"))
        .arg(dir.path())
        .arg("s-crash")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut acked_units = Vec::new();
    let mut max_seq = 0u64;
    while acked_units.len() < acks {
        let line = lines.next().expect("writer ended early").unwrap();
        let mut parts = line.split_whitespace().skip(1);
        let unit: u64 = parts.next().unwrap().parse().unwrap();
        let seq: u64 = parts.next().unwrap().parse().unwrap();
        acked_units.push(unit);
        max_seq = max_seq.max(seq);
    }
    child.kill().unwrap(); // SIGKILL, mid-stream: producers never stop
    child.wait().unwrap();

    let paths = ProjectPaths::new(dir.path());
    let session = Session::open(&paths, "s-crash", SessionConfig::default()).unwrap();
    let conn = session.readers().get().unwrap();
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    let fk_violations: i64 = conn
        .query_row("SELECT COUNT(*) FROM pragma_foreign_key_check", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(fk_violations, 0);

    // Every acknowledged unit is whole and complete.
    for unit in &acked_units {
        let status: String = conn
            .query_row(
                "SELECT status FROM tasks WHERE id = ?1",
                [format!("T{unit}")],
                |r| r.get(0),
            )
            .unwrap_or_else(|e| panic!("acknowledged task T{unit} lost: {e}"));
        assert_eq!(status, "completed");
    }
    let stored_max: u64 = conn
        .query_row("SELECT MAX(seq) FROM events", [], |r| r.get(0))
        .unwrap();
    assert!(
        stored_max >= max_seq,
        "acknowledged seq {max_seq} > stored {stored_max}"
    );
    // No batch is half applied: each unit is 9 events, and every stored unit is complete.
    let events: u64 = conn
        .query_row("SELECT COUNT(*) FROM events", [], |r| r.get(0))
        .unwrap();
    assert_eq!(events, stored_max, "seqs are dense");
    assert_eq!(
        (events - 1) % 9,
        0,
        "{events} events is not 1 + whole units"
    );
    let units = (events - 1) / 9;
    let completed: u64 = conn
        .query_row(
            "SELECT COUNT(*) FROM tasks WHERE status = 'completed'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let tools: u64 = conn
        .query_row(
            "SELECT COUNT(*) FROM tool_runs WHERE status = 'completed'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let agents: u64 = conn
        .query_row(
            "SELECT COUNT(*) FROM agents WHERE status = 'completed'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!((completed, tools, agents), (units, units, units));

    // Domain tables and the event log tell the same story.
    let mut replayed = Projection::new("s-crash");
    let mut stmt = conn
        .prepare("SELECT seq, type, id, timestamp, payload_json FROM events ORDER BY seq")
        .unwrap();
    let rows = stmt
        .query_map([], |r| {
            Ok((
                r.get::<_, u64>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, String>(3)?,
                r.get::<_, String>(4)?,
            ))
        })
        .unwrap();
    for row in rows {
        let (seq, ty, id, ts, payload) = row.unwrap();
        let mut e = RuntimeEvent::new(
            ty,
            "s-crash",
            air_proto::event::EventSource::system(),
            serde_json::from_str(&payload).unwrap(),
        );
        e.id = id;
        e.timestamp = ts;
        replayed.apply(seq, &e, true);
    }
    assert_eq!(
        serde_json::to_string(&replayed).unwrap(),
        serde_json::to_string(&session.snapshot()).unwrap()
    );
}

#[test]
fn sigkill_mid_write_leaves_a_consistent_database() {
    for acks in [40, 300] {
        kill_after(acks);
    }
}
