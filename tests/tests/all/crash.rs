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

/// A reboot mid-run with a real provider: the machine goes down while the executor
/// waits for its model; the daemon comes back by its unit's command line with the
/// provider settings `air daemon install-service --keep-keys` kept (the only ones it
/// has), and the run resumes against the loopback provider and completes.
#[test]
#[cfg(target_os = "linux")]
fn a_run_on_a_provider_resumes_after_a_reboot_from_the_kept_settings() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use air_tests::mock_provider::{tool_use_events, MockProvider, Reply};
    use serde_json::json;

    use crate::agents::{call, plain, review};
    use crate::run::{db, until};

    // The provider on a thread of its own: the test waits on processes.
    let asked = Arc::new(AtomicUsize::new(0));
    let (url_tx, url_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
    let provider = {
        let asked = asked.clone();
        std::thread::spawn(move || {
            crate::rt().block_on(async move {
                let first = tool_use_events(
                    "t0",
                    "fs_write",
                    &json!({"path": "hello.txt", "content": "hello\n"}),
                );
                let mock = MockProvider::start(vec![
                    // The turn the machine goes down in: its answer never comes.
                    plain(Reply::Slow {
                        events: first,
                        gap_ms: 120_000,
                    }),
                    plain(call(
                        "t1",
                        "fs_write",
                        json!({"path": "hello.txt", "content": "hello\n"}),
                    )),
                    plain(call(
                        "t2",
                        "submit_result",
                        json!({"status": "completed", "summary": "Wrote hello.txt"}),
                    )),
                    plain(review("approved", json!([]))),
                ])
                .await;
                url_tx.send(mock.url.clone()).unwrap();
                while stop_rx.try_recv().is_err() {
                    asked.store(mock.received().len(), Ordering::SeqCst);
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                }
            })
        })
    };
    let url = url_rx.recv().unwrap();
    let p = crate::run::project();
    std::fs::write(
        p.root.join("greet.md"),
        "## Task A: write a greeting\n\nCreate hello.txt saying hello.\n\nAcceptance criteria:\n- hello.txt says hello\n",
    )
    .unwrap();
    let provider_env = [
        ("ANTHROPIC_API_KEY", "sk-kept"),
        ("ANTHROPIC_BASE_URL", url.as_str()),
    ];
    let mut run = crate::run::real_worker(&p, &["run", "--plan", "greet.md", "--detach"]);
    run.envs(provider_env);
    let out = run.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let session = String::from_utf8_lossy(&out.stdout).trim().to_string();
    // The executor's first request reached the provider, which holds its answer.
    assert!(until(20, || asked.load(Ordering::SeqCst) >= 1));

    // The machine goes down: the daemon and its workers are gone.
    let workers: Vec<i64> = {
        let conn = db(&p, &session);
        let mut stmt = conn
            .prepare("SELECT pid FROM agents WHERE status = 'running' AND pid IS NOT NULL")
            .unwrap();
        let pids = stmt.query_map([], |r| r.get(0)).unwrap();
        pids.map(|p| p.unwrap()).collect()
    };
    let daemon = nix::unistd::Pid::from_raw(p.daemon_pid().unwrap() as i32);
    nix::sys::signal::kill(daemon, nix::sys::signal::Signal::SIGKILL).unwrap();
    for w in workers {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(w as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    assert!(until(5, || nix::sys::signal::kill(daemon, None).is_err()));

    // The service, installed from a shell with the provider's settings, kept.
    let home = p.dir.path().join("home");
    let installed = Command::new(air_tests::bin("air"))
        .args(["daemon", "install-service", "--keep-keys"])
        .current_dir(&p.root)
        .env("HOME", &home)
        .envs(provider_env)
        .output()
        .unwrap();
    assert!(
        installed.status.success(),
        "{}",
        String::from_utf8_lossy(&installed.stderr)
    );
    let root = p.root.canonicalize().unwrap();
    let instance = String::from_utf8_lossy(
        &Command::new("systemd-escape")
            .arg("--path")
            .arg(&root)
            .output()
            .unwrap()
            .stdout,
    )
    .trim()
    .to_string();
    let drop_in = std::fs::read_to_string(home.join(format!(
        ".config/systemd/user/airsd@{instance}.service.d/air.conf"
    )))
    .unwrap();
    let exec = drop_in
        .lines()
        .filter_map(|l| l.strip_prefix("ExecStart="))
        .rfind(|e| !e.is_empty())
        .unwrap()
        .replace("/%I", &root.display().to_string());
    // What systemd gives the service: its unit's environment and the kept file.
    let kept = std::fs::read_to_string(home.join(".air/service.env")).unwrap();
    let kept: Vec<(String, String)> = kept
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.trim_matches('"').to_string()))
        .collect();
    assert!(
        kept.iter().any(|(k, _)| k == "ANTHROPIC_API_KEY"),
        "{kept:?}"
    );
    let mut words = exec.split_whitespace();
    let mut daemon = Command::new(words.next().unwrap())
        .args(words)
        .current_dir("/")
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &home)
        .env("AIR_LOG", "info")
        .env("AIR_HOME", p.dir.path().join("air-home"))
        .env("AIR_WORKER", air_tests::bin("air-worker"))
        .envs(kept)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Nobody connects: the run resumes on the kept settings and completes.
    let completed = until(60, || {
        db(&p, &session)
            .query_row(
                "SELECT COUNT(*) FROM tasks WHERE id = 'A' AND status = 'completed'",
                [],
                |r| r.get::<_, i64>(0),
            )
            .unwrap_or(0)
            == 1
    });
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(daemon.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    );
    let _ = daemon.wait();
    let _ = stop_tx.send(());
    let _ = provider.join();
    assert!(
        completed,
        "the run did not resume and complete on the kept settings"
    );
    assert_eq!(
        std::fs::read_to_string(p.root.join("hello.txt")).unwrap(),
        "hello\n"
    );
    let log =
        std::fs::read_to_string(p.dir.path().join("air-home/logs/air.log")).unwrap_or_default();
    assert!(
        log.contains(&format!("the unfinished run of session {session} resumed")),
        "{log}"
    );
}
