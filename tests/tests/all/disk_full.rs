//! A full disk during a run, on a small tmpfs of the test's own: airsd stops the run
//! with the disk named (and keeps serving reads), nothing acknowledged is lost, the
//! session stays whole, and the run goes on to its end once there is space again.
//! Needs the right to mount (root, as in CI); elsewhere it says it was skipped.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use air_proto::layout::ProjectPaths;
use air_proto::plan::OnAsk;
use air_proto::projection::{Projection, RunState};

/// A tmpfs mounted for the test (on a temporary directory, kept until the end),
/// unmounted when dropped.
struct Mount(PathBuf, #[allow(dead_code)] tempfile::TempDir);

impl Mount {
    fn new(size: &str) -> Option<Mount> {
        let dir = tempfile::tempdir().ok()?;
        let path = dir.path().to_path_buf();
        let ok = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&path)
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        ok.then_some(Mount(path, dir))
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(&self.0)
            .status();
    }
}

/// Writes zeros into `path` until the file system says it is full.
fn fill(path: &Path) {
    use std::io::Write as _;
    let mut f = std::fs::File::create(path).unwrap();
    let block = vec![0u8; 64 * 1024];
    while f.write_all(&block).is_ok() {}
    let _ = f.sync_all();
}

async fn until(
    state: &airsd::daemon::DaemonState,
    session: &str,
    secs: u64,
    f: impl Fn(&Projection) -> bool,
) -> Projection {
    let end = Instant::now() + Duration::from_secs(secs);
    loop {
        let p = state.session(session).await.unwrap().snapshot();
        if f(&p) || Instant::now() > end {
            return p;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn integrity(db: &Path) -> String {
    let conn =
        rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .unwrap();
    conn.query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap()
}

#[test]
fn a_full_disk_stops_the_run_naming_it_and_the_run_resumes_once_there_is_room() {
    scenario(
        |m| fill(&m.join("filler")),
        |m| std::fs::remove_file(m.join("filler")).unwrap(),
        "is full",
    );
}

fn scenario(break_it: impl Fn(&Path), fix_it: impl Fn(&Path), word: &str) {
    let Some(mount) = Mount::new("4m") else {
        println!("skipped: cannot mount a tmpfs here (needs root)");
        return;
    };
    let root = mount.0.join("proj");
    std::fs::create_dir_all(&root).unwrap();
    let paths = ProjectPaths::new(&root);
    let plan = "## Task A: first\n\nair-test-sleep: 1200\n\n## Task B: second\n\n- depends_on: A\n\nair-test-sleep: 300\n";
    crate::rt().block_on(async {
        let state = crate::asks::state(&root, Duration::from_secs(600));
        let session = crate::asks::start_plan(&state, plan, OnAsk::Deny, None).await;
        // An agent is at work: now the disk fills.
        let p = until(&state, &session, 20, |p| {
            p.agents.iter().any(|a| a.status == air_proto::projection::RunStatus::Running)
        })
        .await;
        assert!(p.agents.iter().any(|a| a.status == air_proto::projection::RunStatus::Running));
        let db = paths.session_db(&session);
        let seq_before = p.seq;
        break_it(&mount.0);
        let p = until(&state, &session, 30, |p| {
            p.run.as_ref().is_some_and(|r| r.halted.is_some())
        })
        .await;
        let run = p.run.clone().unwrap();
        let why = run.halted.clone().expect("the run halted");
        assert!(why.contains(word) && why.contains(&paths.sessions().display().to_string()), "{why}");
        assert!(why.contains(&format!("air run --resume {session}")), "{why}");
        assert_eq!(run.status, RunState::Running, "the run was not ended");
        // Reads are still served, and say the same.
        let briefs = state.run_briefs().await;
        assert!(briefs.iter().any(|b| b.session_id == session && b.halted.is_some()), "{briefs:?}");
        let listed = state
            .events(serde_json::from_value(serde_json::json!({ "session_id": session, "limit": 1000 })).unwrap())
            .await
            .unwrap();
        assert!(listed.events.len() as u64 >= seq_before.min(1_000), "{}", listed.events.len());
        assert_eq!(integrity(&db), "ok");
        let seq_halted = p.seq;
        // A session asked for meanwhile is refused, naming where, and leaves no
        // half-written file.
        let err = state.create_session(Default::default()).await.expect_err("refused");
        assert!(err.to_string().contains(&paths.sessions().display().to_string()), "{err}");
        let halves: Vec<_> = std::fs::read_dir(paths.sessions())
            .unwrap()
            .flatten()
            .filter(|d| d.path().join("session.db.creating").exists())
            .collect();
        assert!(halves.is_empty(), "{halves:?}");

        // Room again: the run goes on from its record to its end.
        fix_it(&mount.0);
        state
            .continue_run(&session, None, Default::default(), None)
            .await
            .unwrap();
        let p = until(&state, &session, 40, |p| {
            p.run.as_ref().is_some_and(|r| r.status == RunState::Ended)
        })
        .await;
        let run = p.run.clone().unwrap();
        assert_eq!(run.status, RunState::Ended, "{run:?}");
        assert_eq!(run.halted, None);
        assert!(p.seq > seq_halted);
        assert!(
            p.tasks.iter().all(|t| t.status == air_proto::projection::TaskStatus::Completed),
            "{:?}",
            p.tasks.iter().map(|t| (&t.id, t.status)).collect::<Vec<_>>()
        );
        assert_eq!(integrity(&db), "ok");
        // Nothing acknowledged went missing: the log is dense from 1.
        let conn = rusqlite::Connection::open(&db).unwrap();
        let (n, max): (i64, i64) = conn
            .query_row("SELECT count(*), max(seq) FROM events", [], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap();
        assert_eq!(n, max);
        let twice: i64 = conn
            .query_row(
                "SELECT count(*) FROM (SELECT json_extract(payload_json, '$.task_id') t, count(*) n FROM events WHERE type = 'task.completed' GROUP BY t HAVING n > 1)",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(twice, 0);
        state.stop_runs().await;
    });
}
