//! `air run` end to end: the real `air`, the real daemon, real worker processes (the
//! scripted `air-test-worker`) on real pipes, and the reports CI reads.

use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use air_tests::bin;
use rusqlite::OpenFlags;

use crate::daemon::Project;

/// A project whose daemon runs the scripted worker with fast heartbeats.
pub(crate) fn project() -> Project {
    let p = Project::new();
    for entry in
        std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/wordcount"))
            .unwrap()
    {
        let entry = entry.unwrap();
        let to = p.root.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            std::fs::create_dir_all(&to).unwrap();
            for f in std::fs::read_dir(entry.path()).unwrap() {
                let f = f.unwrap();
                std::fs::copy(f.path(), to.join(f.file_name())).unwrap();
            }
        } else {
            std::fs::copy(entry.path(), &to).unwrap();
        }
    }
    p
}

/// The example project for the scripted worker, with what its scripted agents do not
/// write but the example's checks run: a command-line tool (`python3 -m wordcount`).
pub(crate) fn scripted_project() -> Project {
    let p = project();
    std::fs::write(
        p.root.join("wordcount/__main__.py"),
        "import sys\n\nprint(\"a 2\")\nsys.exit(0)\n",
    )
    .unwrap();
    p
}

pub(crate) fn command(p: &Project, args: &[&str]) -> Command {
    let mut c = Command::new(bin("air"));
    c.args(args)
        .current_dir(&p.root)
        .env("AIR_WORKER", bin("air-test-worker"))
        .env("AIR_HEARTBEAT_MS", "100")
        .env("AIR_STALL_MS", "3000")
        .env("AIR_CANCEL_GRACE_MS", "500")
        .env("AIR_HOME", p.dir.path().join("air-home"))
        .env_remove("GITHUB_STEP_SUMMARY");
    c
}

/// `air` with the real `air-worker`, and no key or model from this environment.
fn with_the_real_worker(p: &Project, args: &[&str]) -> Output {
    real_worker(p, args).output().unwrap()
}

/// `air ARGS` whose daemon runs the real `air-worker`, with no provider settings of
/// this environment.
pub(crate) fn real_worker(p: &Project, args: &[&str]) -> Command {
    let mut c = command(p, args);
    c.env("AIR_WORKER", bin("air-worker"));
    for k in [
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "OPENROUTER_API_KEY",
        "AIR_MODEL",
        "AIR_RECORD",
    ] {
        c.env_remove(k);
    }
    c
}

pub(crate) fn air(p: &Project, args: &[&str]) -> Output {
    command(p, args).output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Checks the exit code, showing both streams when it is wrong.
pub(crate) fn expect(out: &Output, code: i32) {
    assert_eq!(
        out.status.code(),
        Some(code),
        "stdout:\n{}\nstderr:\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
}

fn write(p: &Project, name: &str, body: &str) {
    std::fs::write(p.root.join(name), body).unwrap();
}

pub(crate) fn db(p: &Project, session: &str) -> rusqlite::Connection {
    rusqlite::Connection::open_with_flags(
        p.paths().session_db(session),
        OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .unwrap()
}

fn count(conn: &rusqlite::Connection, sql: &str) -> i64 {
    conn.query_row(sql, [], |r| r.get(0)).unwrap()
}

/// The newest session's run report.
fn newest_report(p: &Project) -> serde_json::Value {
    let session = newest_session(p);
    serde_json::from_slice(
        &std::fs::read(
            p.paths()
                .artifacts(&session)
                .join("reports/run-report.json"),
        )
        .unwrap(),
    )
    .unwrap()
}

/// A task's evidence as the newest session's run report lists it (JSON text).
pub(crate) fn reported_evidence(p: &Project, task: &str) -> String {
    newest_report(p)["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == task)
        .unwrap()["evidence"]
        .to_string()
}

pub(crate) fn newest_session(p: &Project) -> String {
    let out = air(p, &["sessions", "--json"]);
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    list[0]["id"].as_str().unwrap().to_string()
}

#[test]
fn the_example_plan_runs_to_completion_with_reports() {
    let p = scripted_project();
    let step_summary = p.dir.path().join("step-summary.md");
    std::fs::write(&step_summary, "earlier steps\n").unwrap();
    let out = command(
        &p,
        &[
            "run",
            "--plan",
            "plan.md",
            "--junit",
            "junit.xml",
            "--summary",
            "summary.md",
        ],
    )
    .env("GITHUB_STEP_SUMMARY", &step_summary)
    .output()
    .unwrap();
    expect(&out, 0);
    let step = std::fs::read_to_string(&step_summary).unwrap();
    assert!(
        step.starts_with("earlier steps\n## air run: Word counting library and CLI"),
        "{step}"
    );
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("T1 started (executor, attempt 1)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("T1 reviewing (reviewer, attempt 1)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("Word counting library and CLI: completed in"),
        "{stdout}"
    );
    // The plan's five tasks, as said at the start: milestone reviews apart.
    assert!(stdout.contains(" · 5 tasks"), "{stdout}");
    assert!(
        stdout.contains("milestone reviews: core ✓ · cli ✓"),
        "{stdout}"
    );

    // JUnit: one testcase per task (five plan tasks and two milestone reviews).
    let xml = std::fs::read_to_string(p.root.join("junit.xml")).unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let suite = doc
        .descendants()
        .find(|n| n.has_tag_name("testsuite"))
        .unwrap();
    assert_eq!(suite.attribute("tests"), Some("7"));
    assert_eq!(suite.attribute("failures"), Some("0"));
    let cases: Vec<String> = doc
        .descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .map(|n| n.attribute("name").unwrap().to_string())
        .collect();
    assert_eq!(cases.len(), 7);
    assert!(cases.contains(&"T1: Count words in a string".to_string()));
    // A testcase carries the work's own summary and its evidence.
    let t1 = doc
        .descendants()
        .find(|n| {
            n.has_tag_name("testcase") && n.attribute("name") == Some("T1: Count words in a string")
        })
        .unwrap();
    let out = t1
        .children()
        .find(|c| c.has_tag_name("system-out"))
        .and_then(|c| c.text())
        .unwrap();
    assert!(out.contains("summary: executor completed of T1"), "{out}");
    assert!(
        out.contains("evidence: build_pass: `python3 -m compileall -q wordcount` built with exit 0 (command-run:"),
        "{out}"
    );
    assert!(cases.contains(&"core:milestone-1: Milestone review of phase core".to_string()));

    let summary = std::fs::read_to_string(p.root.join("summary.md")).unwrap();
    assert!(summary.contains("```mermaid\nflowchart TD"), "{summary}");
    assert!(summary.contains("class t_T1 completed"), "{summary}");
    assert!(summary.contains("t_T1 --> t_T2"), "{summary}");

    let session = newest_session(&p);
    let report = newest_report(&p);
    assert_eq!(report["outcome"], "completed");
    assert_eq!(report["counts"]["completed"], 7);
    let graph: serde_json::Value =
        serde_json::from_slice(&std::fs::read(p.paths().plan().join("task-graph.json")).unwrap())
            .unwrap();
    assert_eq!(graph["tasks"].as_array().unwrap().len(), 5);
    assert!(p.paths().state().join("scheduler-state.json").is_file());

    // The graph is in the session database, and every worker's stderr was kept.
    let conn = db(&p, &session);
    assert_eq!(
        count(
            &conn,
            "SELECT COUNT(*) FROM task_dependencies WHERE dependency_type = 'hard'"
        ),
        5
    );
    assert_eq!(
        count(
            &conn,
            "SELECT COUNT(*) FROM agents WHERE status = 'completed'"
        ),
        12
    );
    // Quiet workers leave no stderr behind.
    assert_eq!(
        std::fs::read_dir(p.paths().artifacts(&session).join("workers"))
            .unwrap()
            .count(),
        0
    );
}

const BAD: &str = "\
# Things go wrong

## Task crashy: crashes once, then works

air-test: executor=crash,complete

## Task hangs: never finishes

- hard_timeout: 2s
- soft_timeout: 1s
- retry_budget: 0

air-test: executor=hang

## Task garbage: prints garbage

- retry_budget: 0

air-test: executor=garbage

## Task liar: claims evidence it does not have

- category: logic

air-test: executor=lie

## Task after: waits for the liar

- depends_on: liar

## Task flood: floods the pipe, then completes

air-test: executor=flood

## Task silent: stops sending heartbeats

- retry_budget: 0

air-test: executor=silent
";

#[test]
fn crashes_hangs_garbage_and_lies_end_as_the_rules_say() {
    let p = project();
    write(&p, "bad.md", BAD);
    let out = air(&p, &["run", "--plan", "bad.md", "--junit", "junit.xml"]);
    expect(&out, 1);
    let xml = std::fs::read_to_string(p.root.join("junit.xml")).unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let outcome: HashMap<String, (String, String)> = doc
        .descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .map(|n| {
            let id = n
                .attribute("name")
                .unwrap()
                .split(':')
                .next()
                .unwrap()
                .to_string();
            let child = n
                .children()
                .find(|c| c.is_element() && c.tag_name().name() != "system-out");
            let kind = child
                .map(|c| c.tag_name().name().to_string())
                .unwrap_or_else(|| "passed".into());
            let message = child
                .and_then(|c| c.attribute("message"))
                .unwrap_or("")
                .to_string();
            (id, (kind, message))
        })
        .collect();
    assert_eq!(
        outcome["crashy"].0, "passed",
        "a crash is retried as a new attempt"
    );
    assert_eq!(outcome["hangs"].0, "failure");
    assert!(
        outcome["hangs"].1.contains("hard timeout"),
        "{:?}",
        outcome["hangs"]
    );
    assert_eq!(outcome["garbage"].0, "failure");
    assert!(
        outcome["garbage"].1.contains("protocol error"),
        "{:?}",
        outcome["garbage"]
    );
    assert_eq!(outcome["liar"].0, "error", "blocked");
    assert!(
        outcome["liar"]
            .1
            .contains("missing build_pass: no build of this attempt exited 0"),
        "{:?}",
        outcome["liar"]
    );
    assert_eq!(outcome["flood"].0, "passed", "10,000 log lines do not hurt");
    assert_eq!(outcome["silent"].0, "failure");
    assert!(
        outcome["silent"].1.contains("no heartbeat"),
        "{:?}",
        outcome["silent"]
    );
    assert_eq!(outcome["after"].0, "error");
    assert!(
        outcome["after"].1.contains("waits for liar"),
        "{:?}",
        outcome["after"]
    );

    let session = newest_session(&p);
    let conn = db(&p, &session);
    // The hung worker's process group was killed (exit code 5 semantics: a timeout).
    assert_eq!(
        count(&conn, "SELECT COUNT(*) FROM agents WHERE id = 'hangs-executor-1' AND status = 'failed' AND reason LIKE 'hard timeout%'"),
        1
    );
    assert_eq!(
        count(
            &conn,
            "SELECT COUNT(*) FROM task_attempts WHERE task_id = 'crashy'"
        ),
        2
    );
    // The crashed worker's stderr is an artifact of the session.
    let path: String = conn
        .query_row(
            "SELECT path FROM artifacts WHERE agent_id = 'crashy-executor-1' AND original_name = 'stderr'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let stderr = std::fs::read_to_string(p.paths().artifacts(&session).join(path)).unwrap();
    assert!(
        stderr.contains("scripted crash of crashy-executor-1"),
        "{stderr}"
    );
    assert_eq!(
        count(
            &conn,
            "SELECT COUNT(*) FROM events WHERE type = 'agent.soft_timeout'"
        ),
        1
    );
    let pid: i64 = conn
        .query_row(
            "SELECT pid FROM agents WHERE id = 'hangs-executor-1'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), None).is_err(),
        "the hung worker is gone"
    );
}

#[test]
fn exit_codes_say_blocked_and_plan_errors() {
    let p = project();
    write(
        &p,
        "blocked.md",
        "## Task B: blocks\n\nair-test: executor=block\n",
    );
    let out = air(&p, &["run", "--plan", "blocked.md"]);
    // The executor blocks, the debugger (default: fix) retries, it blocks again...
    // until the same failure three times escalates: blocked.
    expect(&out, 3);
    assert!(
        text(&out.stderr).contains("blocked"),
        "{}",
        text(&out.stderr)
    );

    write(&p, "broken.md", "## Task A: a\n\n- depends_on: nope\n");
    let out = air(&p, &["run", "--plan", "broken.md"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("broken.md:3: depends_on: unknown task `nope`"),
        "{}",
        text(&out.stderr)
    );
    let out = air(&p, &["run"]);
    assert_eq!(out.status.code(), Some(2), "no --plan: usage error");
}

#[test]
fn a_detached_run_is_followed_by_air_wait() {
    let p = scripted_project();
    let out = air(&p, &["run", "--plan", "plan.md", "--detach"]);
    expect(&out, 0);
    let session = text(&out.stdout).trim().to_string();
    assert!(!session.is_empty());
    let out = air(&p, &["wait", &session, "--json"]);
    expect(&out, 0);
    let last = text(&out.stdout).lines().last().unwrap().to_string();
    let report: serde_json::Value = serde_json::from_str(&last).unwrap();
    assert_eq!(report["outcome"], "completed");
    // Every other line is an event.
    let events = text(&out.stdout).lines().count() - 1;
    assert!(events > 20, "{events} events");
}

/// Polls until `f` holds, for at most `secs`.
pub(crate) fn until(secs: u64, mut f: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < end {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

const SLOW: &str = "\
# Slow

## Task S1: one
air-test-sleep: 400

## Task S2: two
air-test-sleep: 400

## Task S3: three

- depends_on: S1, S2

air-test-sleep: 400

## Task S4: four

- depends_on: S3

air-test-sleep: 400
";

/// The pids of the session's agents the database says are running.
fn running_workers(p: &Project, session: &str) -> Vec<i64> {
    let conn = db(p, session);
    let mut stmt = conn
        .prepare("SELECT pid FROM agents WHERE status = 'running' AND pid IS NOT NULL")
        .unwrap();
    stmt.query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

/// kill -9 of the project's daemon, waiting until it is gone.
fn kill_daemon(p: &Project) {
    let pid = nix::unistd::Pid::from_raw(p.daemon_pid().unwrap() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGKILL).unwrap();
    assert!(until(5, || nix::sys::signal::kill(pid, None).is_err()));
}

#[test]
fn after_kill_9_of_airsd_the_run_resumes_and_nothing_completes_twice() {
    let p = project();
    // Agents that take long enough for the kill to land while some run.
    write(
        &p,
        "slow.md",
        &SLOW.replace("air-test-sleep: 400", "air-test-sleep: 1500"),
    );
    let out = air(&p, &["run", "--plan", "slow.md", "--detach"]);
    expect(&out, 0);
    let session = text(&out.stdout).trim().to_string();
    // Wait until something has completed and an agent has just started (it has more
    // than a second of work left, so it is surely running when the kill lands).
    let progressed = until(20, || {
        let conn = db(&p, &session);
        let fresh = {
            let mut stmt = conn
                .prepare("SELECT started_at FROM agents WHERE status = 'running'")
                .unwrap();
            let fresh = stmt
                .query_map([], |r| r.get::<_, String>(0))
                .unwrap()
                .map(Result::unwrap)
                .filter_map(|t| air_proto::time::parse(&t))
                .any(|t| t.elapsed().is_ok_and(|e| e < Duration::from_millis(500)));
            fresh
        };
        fresh
            && count(
                &conn,
                "SELECT COUNT(*) FROM tasks WHERE status = 'completed'",
            ) >= 1
    });
    assert!(progressed);
    let running_pids = running_workers(&p, &session);
    kill_daemon(&p);
    // What the database says was running when airsd died (it cannot change now).
    let running_at_kill = count(
        &db(&p, &session),
        "SELECT COUNT(*) FROM agents WHERE status = 'running'",
    );
    // Workers whose parent died see their stdin close and exit.
    assert!(until(10, || running_pids.iter().all(|&w| {
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(w as i32), None).is_err()
    })));

    let out = air(&p, &["run", "--resume", &session]);
    expect(&out, 0);
    let conn = db(&p, &session);
    let twice = count(
        &conn,
        "SELECT COUNT(*) FROM (SELECT json_extract(payload_json, '$.task_id') AS t, COUNT(*) AS n
         FROM events WHERE type = 'task.completed' GROUP BY t HAVING n > 1)",
    );
    assert_eq!(twice, 0, "a task completed twice");
    assert_eq!(
        count(
            &conn,
            "SELECT COUNT(*) FROM tasks WHERE status = 'completed'"
        ),
        4
    );
    // Every agent that was running when airsd died is recorded as interrupted.
    assert_eq!(
        count(
            &conn,
            "SELECT COUNT(*) FROM agents WHERE reason LIKE 'airsd stopped%'"
        ),
        running_at_kill
    );
    assert!(running_at_kill >= 1);
    assert_eq!(
        count(
            &conn,
            "SELECT COUNT(*) FROM events WHERE type = 'run.completed'"
        ),
        1
    );
    // The new daemon found that the old one did not stop as it should, and says so.
    let out = air(&p, &["doctor"]);
    let said = text(&out.stdout);
    assert!(
        said.contains("the project's previous daemon (pid ")
            && said.contains("ended without stopping"),
        "{said}"
    );
    // And in the user's log, in plain words.
    let user_log =
        std::fs::read_to_string(p.dir.path().join("air-home/logs/air.log")).unwrap_or_default();
    assert!(user_log.contains("ended without stopping"), "{user_log}");
    // That the run resumed is said once it has.
    assert!(
        user_log.contains("the unfinished run of session ") && user_log.contains(" resumed"),
        "{user_log}"
    );
    // Stopped as it should, the next daemon finds nothing to report.
    expect(&air(&p, &["daemon", "stop"]), 0);
    expect(&air(&p, &["daemon", "start"]), 0);
    let said = text(&air(&p, &["doctor"]).stdout);
    assert!(!said.contains("ended without stopping"), "{said}");
    let _ = air(&p, &["daemon", "stop"]);
}

/// After a reboot: every process of the project is gone mid-run, and the daemon is
/// started by its installed service unit (its `ExecStart`, with the environment
/// systemd gives a user service) with no client ever connecting. It resumes the
/// unfinished run and carries it to its end by itself.
#[test]
#[cfg(target_os = "linux")]
fn a_supervised_daemon_resumes_the_run_after_a_reboot_with_no_client() {
    let p = project();
    write(
        &p,
        "slow.md",
        &SLOW.replace("air-test-sleep: 400", "air-test-sleep: 1000"),
    );
    let out = air(&p, &["run", "--plan", "slow.md", "--detach"]);
    expect(&out, 0);
    let session = text(&out.stdout).trim().to_string();
    assert!(until(20, || count(
        &db(&p, &session),
        "SELECT COUNT(*) FROM tasks WHERE status = 'completed'"
    ) >= 1));
    let workers = running_workers(&p, &session);
    // The machine goes down: the daemon and its workers are gone.
    kill_daemon(&p);
    for &w in &workers {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(w as i32),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
    assert_eq!(
        count(
            &db(&p, &session),
            "SELECT COUNT(*) FROM events WHERE type = 'run.completed'"
        ),
        0
    );

    // The unit as `air daemon install-service` writes it.
    let home = p.dir.path().join("home");
    let installed = Command::new(bin("air"))
        .args(["daemon", "install-service", "--keep-keys"])
        .current_dir(&p.root)
        .env("HOME", &home)
        .env("OPENROUTER_API_KEY", "sk-or-kept \"quoted\"")
        .env_remove("AIR_AIRSD")
        .output()
        .unwrap();
    expect(&installed, 0);
    let units = home.join(".config/systemd/user");
    // The template as shipped; the project's drop-in names the airsd it runs.
    let template = std::fs::read_to_string(units.join("airsd@.service")).unwrap();
    let shipped = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../systemd/airsd@.service"),
    )
    .unwrap();
    assert_eq!(template, shipped);
    let root = p.root.canonicalize().unwrap();
    let instance = text(
        &Command::new("systemd-escape")
            .args(["--path"])
            .arg(&root)
            .output()
            .unwrap()
            .stdout,
    )
    .trim()
    .to_string();
    let unit = std::fs::read_to_string(units.join(format!("airsd@{instance}.service.d/air.conf")))
        .unwrap();
    let exec = unit
        .lines()
        .filter_map(|l| l.strip_prefix("ExecStart="))
        .rfind(|e| !e.is_empty())
        .unwrap_or_else(|| panic!("{unit}"));
    // The provider settings, readable by the user alone, as systemd reads them.
    let kept = home.join(".air/service.env");
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&kept).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600);
    let env_file = std::fs::read_to_string(&kept).unwrap();
    assert!(
        env_file.contains("OPENROUTER_API_KEY=\"sk-or-kept \\\"quoted\\\"\""),
        "{env_file}"
    );
    let root = root.display().to_string();
    // `/%I` is the instance unescaped: the project's absolute path.
    let line = exec
        .replace("/%I", &root)
        .replace("%h", &home.display().to_string());
    let mut words = line.split_whitespace();
    let program = words.next().unwrap().to_string();
    let log = std::fs::File::create(p.dir.path().join("service.log")).unwrap();
    let mut daemon = Command::new(&program)
        .args(words)
        .current_dir("/")
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &home)
        .env("AIR_LOG", "info")
        // What the scripted agents and the test's timings need (a drop-in would).
        .env("AIR_WORKER", bin("air-test-worker"))
        .env("AIR_HEARTBEAT_MS", "100")
        .env("AIR_STALL_MS", "3000")
        .env("AIR_HOME", p.dir.path().join("air-home"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap();
    // Nobody connects: the database alone shows the run going on to its end.
    let ended = until(60, || {
        count(
            &db(&p, &session),
            "SELECT COUNT(*) FROM events WHERE type = 'run.completed'",
        ) == 1
    });
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(daemon.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    );
    let mut status = None;
    assert!(until(20, || {
        status = daemon.try_wait().unwrap();
        status.is_some()
    }));
    let status = status.unwrap();
    let said = std::fs::read_to_string(p.dir.path().join("service.log")).unwrap_or_default();
    assert!(ended, "the run did not end: {said}");
    assert!(status.success(), "{status}: {said}");
    assert!(said.contains("recovered an unfinished run"), "{said}");
    let conn = db(&p, &session);
    assert_eq!(
        count(
            &conn,
            "SELECT COUNT(*) FROM tasks WHERE status = 'completed'"
        ),
        4
    );
    assert_eq!(
        count(
            &conn,
            "SELECT COUNT(*) FROM (SELECT json_extract(payload_json, '$.task_id') AS t, COUNT(*) AS n
             FROM events WHERE type = 'task.completed' GROUP BY t HAVING n > 1)",
        ),
        0,
        "a task completed twice"
    );
}

/// A call that was running when airsd died is not offered again unsaid (the next
/// agent's notes name it), and one that was running at two deaths is refused.
#[test]
fn a_call_running_at_two_deaths_of_airsd_is_refused_the_third_time() {
    let p = project();
    write(
        &p,
        "hang.md",
        "## Task H: runs a long command\n\n- retry_budget: 4\n\nair-test-call: shell.run {\"command\": \"sleep 37\"}\n",
    );
    let out = air(&p, &["run", "--plan", "hang.md", "--detach"]);
    expect(&out, 0);
    let session = text(&out.stdout).trim().to_string();
    let running = "SELECT COUNT(*) FROM tool_runs WHERE tool = 'shell.run' AND status = 'running'";
    let runs = "SELECT COUNT(*) FROM tool_runs WHERE tool = 'shell.run'";
    for round in 1..=2 {
        // This round's own call (the last round's stays `running` until the resumed
        // daemon marks it interrupted, which may take a while on a loaded machine).
        assert!(
            until(30, || {
                let conn = db(&p, &session);
                count(&conn, running) == 1 && count(&conn, runs) == i64::from(round)
            }),
            "round {round}: the call never ran"
        );
        kill_daemon(&p);
        // The command died with the daemon: nothing goes on changing the project.
        let sleeping = || {
            std::fs::read_dir("/proc")
                .unwrap()
                .flatten()
                .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
                .any(|c| c == b"sleep\x0037\x00")
        };
        assert!(
            until(5, || !sleeping()),
            "round {round}: the command outlived airsd"
        );
        if round == 1 {
            let out = air(&p, &["run", "--resume", &session, "--detach"]);
            expect(&out, 0);
        }
    }
    let out = air(&p, &["run", "--resume", &session]);
    expect(&out, 0);
    let conn = db(&p, &session);
    let runs: Vec<(String, String)> = {
        let mut stmt = conn
            .prepare("SELECT status, coalesce(error, '') FROM tool_runs WHERE tool = 'shell.run' ORDER BY seq")
            .unwrap();
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    assert_eq!(runs.len(), 3, "{runs:?}");
    assert!(
        runs[..2].iter().all(|r| r.1.starts_with("interrupted")),
        "{runs:?}"
    );
    assert!(
        runs[2]
            .1
            .contains("was running when airsd stopped, 2 times"),
        "{runs:?}"
    );
    // Each agent after a death was told which call was running then.
    let agents: Vec<String> = {
        let mut stmt = conn
            .prepare("SELECT id FROM agents WHERE agent_type = 'executor' ORDER BY started_at")
            .unwrap();
        stmt.query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    let noted = agents
        .iter()
        .filter(|a| {
            let log = p
                .paths()
                .artifacts(&session)
                .join(format!("workers/{a}.stderr.log"));
            std::fs::read_to_string(log)
                .unwrap_or_default()
                .contains("`shell_run` {\"command\":\"sleep 37\"} was running when airsd stopped")
        })
        .count();
    assert!(noted >= 2, "{noted} of {} agents were told", agents.len());
}

#[test]
fn sigint_cancels_a_foreground_run_and_resume_finishes_it() {
    let p = project();
    write(&p, "slow.md", SLOW);
    let child = command(&p, &["run", "--plan", "slow.md"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    std::thread::sleep(Duration::from_millis(700));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let out = child.wait_with_output().unwrap();
    expect(&out, 130);
    let session = newest_session(&p);
    assert!(
        text(&out.stderr).contains(&format!("air run --resume {session}")),
        "{}",
        text(&out.stderr)
    );
    let out = air(&p, &["run", "--resume", &session]);
    expect(&out, 0);
    assert!(
        text(&out.stderr).contains("reopened"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn pause_resume_and_cancel_reach_the_scheduler() {
    let p = project();
    write(&p, "slow.md", SLOW);
    let out = air(&p, &["run", "--plan", "slow.md", "--detach"]);
    let session = text(&out.stdout).trim().to_string();
    let out = air(&p, &["pause", "-s", &session]);
    expect(&out, 0);
    let out = air(&p, &["status"]);
    let status = text(&out.stdout);
    assert!(
        status.contains(&format!("run       {session} Slow")),
        "{status}"
    );
    assert!(status.contains(", paused"), "{status}");
    let out = air(&p, &["resume", "-s", &session]);
    expect(&out, 0);
    let out = air(&p, &["approve", "R1", "-s", &session]);
    expect(&out, 2);
    assert!(
        text(&out.stderr).contains("has no permission request R1"),
        "{}",
        text(&out.stderr)
    );
    let out = air(&p, &["cancel", "S9", "-s", &session]);
    expect(&out, 2);
    assert!(
        text(&out.stderr).contains("has no task `S9`"),
        "{}",
        text(&out.stderr)
    );
    let out = air(&p, &["cancel", "S4", "-s", &session]);
    expect(&out, 0);
    let out = air(&p, &["wait", &session]);
    assert_eq!(
        out.status.code(),
        Some(3),
        "cancelled task: blocked outcome\n{}",
        text(&out.stdout)
    );
    let conn = db(&p, &session);
    assert_eq!(
        count(
            &conn,
            "SELECT COUNT(*) FROM events WHERE type IN ('scheduler.paused', 'scheduler.resumed')"
        ),
        2
    );
    assert_eq!(
        count(
            &conn,
            "SELECT COUNT(*) FROM tasks WHERE id = 'S4' AND status = 'cancelled'"
        ),
        1
    );
    let out = air(&p, &["pause", "-s", &session]);
    assert_eq!(out.status.code(), Some(2), "no run in progress any more");
    assert!(
        text(&out.stderr).contains("no run is in progress"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn the_user_config_sets_run_defaults_and_a_bad_one_is_named() {
    let p = project();
    let home = p.dir.path().join("air-home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(
        home.join("config.yaml"),
        "run:\n  concurrency: 1\n  on_ask: queue\n",
    )
    .unwrap();
    write(&p, "slow.md", SLOW);
    let out = air(&p, &["run", "--plan", "slow.md"]);
    expect(&out, 0);
    let session = newest_session(&p);
    let conn = db(&p, &session);
    let (concurrency, on_ask): (i64, String) = conn
        .query_row(
            "SELECT json_extract(payload_json, '$.concurrency'), json_extract(payload_json, '$.on_ask')
             FROM events WHERE type = 'run.started'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((concurrency, on_ask.as_str()), (1, "queue"));
    // With one agent at a time, no two agents' lifetimes overlap.
    let overlaps = count(
        &conn,
        "SELECT COUNT(*) FROM agents a JOIN agents b ON a.id < b.id
         WHERE a.started_at < b.ended_at AND b.started_at < a.ended_at",
    );
    assert_eq!(overlaps, 0);
    // A flag beats the config.
    let out = air(
        &p,
        &["run", "--plan", "slow.md", "--concurrency", "2", "--detach"],
    );
    expect(&out, 0);
    let session = text(&out.stdout).trim().to_string();
    let _ = air(&p, &["wait", &session]);
    let conn = db(&p, &session);
    assert_eq!(
        count(&conn, "SELECT json_extract(payload_json, '$.concurrency') FROM events WHERE type = 'run.started'"),
        2
    );

    // A broken config refuses runs with the file and line; restart to reread it.
    std::fs::write(home.join("config.yaml"), "run:\n  concurency: 1\n").unwrap();
    let _ = air(&p, &["daemon", "stop"]);
    let out = air(&p, &["run", "--plan", "slow.md"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("config.yaml:2"), "{stderr}");
    assert!(stderr.contains("unknown field `concurency`"), "{stderr}");
}

#[test]
fn a_spent_budget_stops_the_run_and_resume_with_a_larger_one_finishes_it() {
    let p = project();
    write(&p, "slow.md", SLOW);
    let out = air(&p, &["run", "--plan", "slow.md", "--max-time", "600ms"]);
    expect(&out, 3);
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("blocked: the time budget (600ms) ran out"),
        "{stderr}"
    );
    let session = newest_session(&p);
    let conn = db(&p, &session);
    assert_eq!(count(&conn, "SELECT COUNT(*) FROM events WHERE type = 'scheduler.stopped' AND json_extract(payload_json, '$.budget') = 'max_time'"), 1);
    let unfinished = count(
        &conn,
        "SELECT COUNT(*) FROM tasks WHERE status != 'completed'",
    );
    assert!(unfinished > 0);
    let out = air(&p, &["run", "--resume", &session, "--max-time", "1h"]);
    expect(&out, 0);
    assert_eq!(
        count(
            &conn,
            "SELECT COUNT(*) FROM tasks WHERE status != 'completed'"
        ),
        0
    );
}

#[test]
fn a_worker_that_cannot_start_refuses_the_run_before_any_task() {
    let p = project();
    let out = command(&p, &["run", "--plan", "plan.md"])
        .env("AIR_WORKER", p.root.join("no-such-worker"))
        .output()
        .unwrap();
    expect(&out, 2);
    let stderr = text(&out.stderr);
    assert!(stderr.contains("cannot start the worker"), "{stderr}");
    assert!(stderr.contains("no-such-worker"), "{stderr}");
    assert!(
        !p.paths().sessions().exists()
            || std::fs::read_dir(p.paths().sessions()).unwrap().count() == 0
    );
}

#[test]
fn air_run_follows_the_run_across_a_daemon_restart() {
    let p = project();
    write(&p, "slow.md", SLOW);
    let child = command(&p, &["run", "--plan", "slow.md"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    // A graceful stop: the scheduler stops its workers and records nothing.
    let out = air(&p, &["daemon", "stop"]);
    expect(&out, 0);
    let out = child.wait_with_output().unwrap();
    expect(&out, 0);
    let stdout = text(&out.stdout);
    assert!(stdout.contains("lost the daemon"), "{stdout}");
    assert!(stdout.contains("reconnected"), "{stdout}");
    assert!(
        stdout.contains("Slow: completed in") && stdout.contains(" · 4 tasks"),
        "{stdout}"
    );
    let session = newest_session(&p);
    let conn = db(&p, &session);
    assert!(
        count(
            &conn,
            "SELECT COUNT(*) FROM agents WHERE reason LIKE 'airsd stopped%'"
        ) >= 1
    );
}

#[test]
fn a_worker_past_its_soft_timeout_gets_more_time_when_it_asks() {
    let p = project();
    write(
        &p,
        "extend.md",
        "## Task E: needs more time\n\n- soft_timeout: 1s\n- hard_timeout: 2s\n- retry_budget: 0\n\nair-test: executor=extend\n",
    );
    let out = air(&p, &["run", "--plan", "extend.md"]);
    expect(&out, 0);
    let session = newest_session(&p);
    let conn = db(&p, &session);
    assert_eq!(
        count(
            &conn,
            "SELECT COUNT(*) FROM events WHERE type = 'agent.soft_timeout'"
        ),
        1
    );
    assert_eq!(
        count(&conn, "SELECT json_extract(payload_json, '$.extra_ms') FROM events WHERE type = 'agent.timeout_extended'"),
        2000
    );
}

#[test]
fn agents_change_the_project_only_through_recorded_tool_calls() {
    let p = project();
    write(
        &p,
        "tools.md",
        "## Task W: writes through the tools\n\nair-test: executor=tools reviewer=trywrite\n",
    );
    let out = air(&p, &["run", "--plan", "tools.md"]);
    expect(&out, 0);
    assert_eq!(
        std::fs::read_to_string(p.root.join("out/W.txt")).unwrap(),
        "goodbye from W\n"
    );
    assert!(
        !p.root.join("reviewer.txt").exists(),
        "the reviewer could not write"
    );
    let session = newest_session(&p);
    let conn = db(&p, &session);
    let rows: Vec<(String, String, String)> = {
        let mut stmt = conn
            .prepare("SELECT tool, status, COALESCE(agent_id, '') FROM tool_runs ORDER BY seq")
            .unwrap();
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    let expected: Vec<(String, String, String)> = [
        ("fs.write", "completed", "W-executor-1"),
        ("fs.edit", "completed", "W-executor-1"),
        ("fs.read", "completed", "W-executor-1"),
        ("fs.write", "failed", "W-reviewer-1"),
    ]
    .iter()
    .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
    .collect();
    assert_eq!(rows, expected);
    let error: String = conn
        .query_row(
            "SELECT error FROM tool_runs WHERE status = 'failed'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(error.contains("not allowed for a reviewer"), "{error}");
}

#[test]
fn a_task_cannot_write_outside_its_scope() {
    let p = project();
    write(
        &p,
        "scoped.md",
        "## Task X: may only touch docs\n\n- allowed_paths: `docs/**`\n- retry_budget: 0\n\nair-test: executor=tools\n",
    );
    let out = air(&p, &["run", "--plan", "scoped.md"]);
    expect(&out, 1);
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("out/X.txt: outside the task's allowed_paths"),
        "{stdout}"
    );
    assert!(!p.root.join("out/X.txt").exists());
}

/// `air run` shows a permission question with how to answer it, and the answer.
#[test]
fn air_run_shows_permission_questions_and_their_answers() {
    let p = project();
    write(
        &p,
        "ask.md",
        "## Task Q: touches the repository's data\n\nair-test-call: fs.write {\"path\": \".git/info/exclude\", \"content\": \"x\\n\"}\n",
    );
    let out = air(&p, &["run", "--plan", "ask.md", "--on-ask", "deny"]);
    let all = text(&out.stdout) + &text(&out.stderr);
    assert!(
        all.contains("permission needed for task Q: write ")
            && all.contains(".git/info/exclude [code_config]; answer with `air approve "),
        "{all}"
    );
    assert!(
        all.contains("denied by policy: nobody is attached"),
        "{all}"
    );
    assert!(
        !p.root.join(".git/info/exclude").exists()
            || std::fs::read_to_string(p.root.join(".git/info/exclude")).unwrap() != "x\n"
    );
}

#[test]
fn air_doctor_names_what_is_missing_and_a_run_without_a_model_is_refused() {
    let p = project();
    let keys = [
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "OPENROUTER_API_KEY",
        "AIR_MODEL",
    ];
    let real = |args: &[&str]| {
        let mut c = command(&p, args);
        c.env("AIR_WORKER", bin("air-worker"));
        for k in keys {
            c.env_remove(k);
        }
        c
    };
    let out = real(&["doctor"]).output().unwrap();
    expect(&out, 1);
    let stdout = text(&out.stdout);
    for part in [
        "ANTHROPIC_API_KEY not set",
        "daemon: not running",
        "executor               none: no LLM provider is configured",
        "to fix:",
        "sandbox: ",
    ] {
        assert!(stdout.contains(part), "{part:?} missing from {stdout}");
    }
    // What the command sandbox holds here, as airsd itself finds it.
    let found = airsd::sandbox::protections(&bin("airsd"));
    let expected = match (found.landlock, found.isolation.is_ok()) {
        (true, true) => "sandbox: full",
        _ => "sandbox: degraded, without ",
    };
    assert!(
        stdout.contains(expected),
        "{expected:?} missing from {stdout}"
    );
    // A broken models.yaml is named with its line.
    std::fs::create_dir_all(p.dir.path().join("air-home")).unwrap();
    std::fs::write(
        p.dir.path().join("air-home/models.yaml"),
        "models:\n  executer: x\n",
    )
    .unwrap();
    let out = real(&["doctor", "--json"]).output().unwrap();
    expect(&out, 1);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let files = v["files"].to_string();
    assert!(files.contains("models.yaml:2"), "{files}");
    assert_eq!(v["sandbox"]["namespaces"], found.isolation.is_ok(), "{v}");
    std::fs::remove_file(p.dir.path().join("air-home/models.yaml")).unwrap();

    // The same environment cannot run a plan: refused before any task, exit 2.
    let out = real(&["run", "--plan", "plan.md"]).output().unwrap();
    expect(&out, 2);
    let stderr = text(&out.stderr);
    assert!(stderr.contains("no task was started"), "{stderr}");
    assert!(stderr.contains("air doctor"), "{stderr}");
    let _ = air(&p, &["daemon", "stop"]);

    // With a key, each agent type has a model (the key itself is never printed).
    let out = real(&["doctor"])
        .env("ANTHROPIC_API_KEY", "sk-secret-value")
        .output()
        .unwrap();
    expect(&out, 0);
    let stdout = text(&out.stdout);
    assert!(stdout.contains("ANTHROPIC_API_KEY set"), "{stdout}");
    assert!(
        stdout.contains("reviewer               anthropic/claude-sonnet-4-5"),
        "{stdout}"
    );
    assert!(!stdout.contains("sk-secret-value"));
    // A diagnostic bundle: the report, the configuration and the log, no secret.
    std::fs::write(
        p.dir.path().join("air-home/config.yaml"),
        "run:\n  concurrency: 2\n# token: tok-1234567890\n",
    )
    .unwrap();
    let bundle = p.dir.path().join("bundle.json");
    let out = real(&["doctor", "--bundle", bundle.to_str().unwrap()])
        .env("ANTHROPIC_API_KEY", "sk-secret-value")
        .output()
        .unwrap();
    expect(&out, 0);
    assert!(text(&out.stdout).contains("nothing was sent"));
    let written = std::fs::read_to_string(&bundle).unwrap();
    let v: serde_json::Value = serde_json::from_str(&written).unwrap();
    assert_eq!(v["doctor"]["ok"], true, "{v}");
    assert!(v["config"]["~/.air/config.yaml"]
        .as_str()
        .unwrap()
        .contains("concurrency: 2"));
    assert!(v["logs"]["airsd.log"].is_string(), "{v}");
    for secret in ["sk-secret-value", "tok-1234567890"] {
        assert!(!written.contains(secret), "{secret} in the bundle");
    }
    // --provider with a model names both; a provider with a slash is a usage error.
    let out = real(&["run", "--plan", "plan.md", "--provider", "anthropic/x"])
        .output()
        .unwrap();
    expect(&out, 2);
    assert!(text(&out.stderr).contains("--provider `anthropic/x`"));
}

/// The README's quick start: the example conversation replayed from the recording
/// shipped with it, with no key: the Main Agent reads the project and answers.
#[test]
fn the_shipped_conversation_replays_with_no_key() {
    let p = project();
    let out = with_the_real_worker(
        &p,
        &[
            "chat",
            "-p",
            "What is this project, and what is left to build?",
            "--replay",
            "conversation",
        ],
    );
    expect(&out, 0);
    let stdout = text(&out.stdout);
    assert!(stdout.starts_with("This is `wordcount`"), "{stdout}");
    assert!(stdout.contains("(T1, plan.md:21)"), "{stdout}");
    // As `claude -p` takes it: the flag apart from its message, which comes on stdin.
    let piped = air_tests::output_with_input(
        &mut real_worker(&p, &["chat", "--replay", "conversation", "-p"]),
        "What is this project, and what is left to build?\n",
    );
    expect(&piped, 0);
    assert_eq!(text(&piped.stdout), stdout);
    let _ = air(&p, &["daemon", "stop"]);
}

/// The README's quick start: the example plan replayed from the recording shipped
/// with it, by the real `air-worker`, with no key and no provider, in a git
/// repository as `examples/run` makes it (each task in its own worktree, the result
/// landed in the checkout).
#[test]
fn the_shipped_recording_replays_the_example_plan_with_no_key() {
    let p = project();
    git_commit_all(&p);
    let out = with_the_real_worker(&p, &["run", "--plan", "plan.md", "--replay", "recording"]);
    expect(&out, 0);
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains(": completed in") && stdout.contains(" · 5 tasks"),
        "{stdout}"
    );
    // What airsd saw: the files each task changed, its checks, its review.
    assert!(
        stdout.contains("changed  wordcount/__main__.py"),
        "{stdout}"
    );
    assert!(stdout.contains("checked  build ✓ · 6 tests ✓"), "{stdout}");
    assert!(stdout.contains("review   "), "{stdout}");
    assert!(stdout.contains("next: air diff "), "{stdout}");
    // The work is really there: the project's own tests pass.
    let tests = Command::new("python3")
        .args(["-m", "unittest", "discover", "-s", "tests"])
        .current_dir(&p.root)
        .output()
        .unwrap();
    assert!(tests.status.success(), "{}", text(&tests.stderr));
    assert!(p.root.join("wordcount/__main__.py").exists());
    // The report lists each task's evidence as airsd recorded it from the commands the
    // agents ran, each with what shows it.
    let evidence = reported_evidence(&p, "T1");
    assert!(
        evidence.contains("test_pass: `python3 -m unittest discover -s tests` ran 1 test(s), none failed (command-run:"),
        "{evidence}"
    );
    assert!(
        evidence.contains(
            "build_pass: `python3 -m compileall -q wordcount` built with exit 0 (command-run:"
        ),
        "{evidence}"
    );
    let _ = air(&p, &["daemon", "stop"]);

    // Replaying while recording re-records: a fresh recording of the same run.
    let q = project();
    git_commit_all(&q);
    let out = with_the_real_worker(
        &q,
        &[
            "run",
            "--plan",
            "plan.md",
            "--replay",
            "recording",
            "--record",
            "again",
        ],
    );
    expect(&out, 0);
    let files = std::fs::read_dir(q.root.join("again")).unwrap().count();
    assert_eq!(
        files,
        std::fs::read_dir(q.root.join("recording")).unwrap().count()
    );
    let _ = air(&q, &["daemon", "stop"]);
}

/// The idle timeout counts only when nothing is going on: a run whose client has gone
/// (`--detach`) keeps the daemon up to its end, and then it exits on its own.
#[test]
fn the_daemon_does_not_exit_on_its_idle_timeout_while_a_run_is_going() {
    let p = project();
    write(
        &p,
        "long.md",
        "# Long\n\n## Task L1: one\nair-test-sleep: 1500\n\n## Task L2: two\n\n- depends_on: L1\n\nair-test-sleep: 1500\n",
    );
    let mut daemon = Command::new(bin("airsd"))
        .args(["--foreground", "--idle-timeout", "1", "--project"])
        .arg(&p.root)
        .env("AIR_WORKER", bin("air-test-worker"))
        .env("AIR_HEARTBEAT_MS", "100")
        .env("AIR_HOME", p.dir.path().join("air-home"))
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !p.paths().socket().exists() {
        assert!(Instant::now() < deadline, "airsd did not start");
        std::thread::sleep(Duration::from_millis(10));
    }
    let started = Instant::now();
    let out = air(&p, &["run", "--plan", "long.md", "--detach"]);
    expect(&out, 0);
    // No client is attached from here; the run alone keeps the daemon up.
    let status = daemon.wait().unwrap();
    let lived = started.elapsed();
    assert!(status.success(), "{status}");
    assert!(
        lived >= Duration::from_secs(3),
        "exited after {lived:?}, mid-run"
    );
    let session = newest_session(&p);
    let conn = db(&p, &session);
    assert_eq!(
        count(
            &conn,
            "SELECT COUNT(*) FROM events WHERE type = 'run.completed'"
        ),
        1,
        "the run ended before the daemon did"
    );
    assert_eq!(
        count(
            &conn,
            "SELECT COUNT(*) FROM tasks WHERE status = 'completed'"
        ),
        2
    );
}

/// The shipped recording, made in a git repository, replays outside one as well:
/// what a tool finds differs between the two (`git.status` fails outside), and the
/// replay tolerates that, not a change of what air sends.
#[test]
fn the_shipped_recording_replays_outside_git_too() {
    // Outside git the tasks share the checkout; one at a time, each task's checks see
    // what they saw when the recording was made, each in its own worktree.
    let p = project();
    let out = with_the_real_worker(
        &p,
        &[
            "run",
            "--plan",
            "plan.md",
            "--replay",
            "recording",
            "--concurrency",
            "1",
        ],
    );
    expect(&out, 0);
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains(": completed in") && stdout.contains(" · 5 tasks"),
        "{stdout}"
    );
    assert!(p.root.join("wordcount/__main__.py").exists());
}

/// `git init` and a first commit of everything in the project, as `examples/run` does.
pub(crate) fn git_commit_all(p: &Project) {
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .args(args)
            .current_dir(&p.root)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {}", text(&out.stderr));
    };
    git(&["init", "-q"]);
    git(&["add", "-A"]);
    git(&[
        "-c",
        "user.name=air",
        "-c",
        "user.email=air@example.invalid",
        "commit",
        "-qm",
        "example",
    ]);
}

/// Two runs started at once in one project both write the task graph: each write is
/// whole, the file names the session it belongs to, and neither run logs a failed
/// write.
#[test]
fn two_runs_started_at_once_write_the_task_graph_whole() {
    let p = project();
    write(&p, "slow.md", SLOW);
    let starts: Vec<_> = (0..2)
        .map(|_| {
            command(&p, &["run", "--plan", "slow.md", "--detach"])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in starts {
        expect(&child.wait_with_output().unwrap(), 0);
    }
    let graph: serde_json::Value =
        serde_json::from_slice(&std::fs::read(p.paths().plan().join("task-graph.json")).unwrap())
            .unwrap();
    let sessions: Vec<String> = std::fs::read_dir(p.paths().sessions())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(sessions.len(), 2);
    let owner = graph["session_id"].as_str().unwrap();
    assert!(
        sessions.iter().any(|s| s == owner),
        "{owner} of {sessions:?}"
    );
    assert_eq!(graph["tasks"].as_array().unwrap().len(), 4);
    let _ = air(&p, &["daemon", "stop"]);
    let log = std::fs::read_to_string(p.paths().daemon_log()).unwrap_or_default();
    assert!(!log.contains("cannot write"), "{log}");
    let leftovers: Vec<_> = std::fs::read_dir(p.paths().plan())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.to_string_lossy().contains(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

/// `air run` compiles the plan once, in the daemon: its errors come back named by
/// file:line. A plan larger than a message may be is refused naming its size and the
/// limit, not taken for a lost daemon.
#[test]
fn air_run_shows_the_daemons_plan_errors_and_refuses_a_plan_too_large_to_send() {
    let p = project();
    write(
        &p,
        "broken.md",
        "# P\n\n## Task A: a\n\n- depends_on: B\n- colour: red\n\n## Task B: b\n\n- depends_on: A\n",
    );
    let out = air(&p, &["run", "--plan", "broken.md"]);
    expect(&out, 2);
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("broken.md:3: depends_on: dependency cycle: A → B → A"),
        "{stderr}"
    );
    assert!(
        stderr.contains("broken.md:6: colour: unknown field `colour`"),
        "{stderr}"
    );
    assert!(stderr.contains("2 errors in the plan"), "{stderr}");

    let mut huge = String::from("# Huge\n\n## Task A: a\n\n");
    while huge.len() < 20 * 1024 * 1024 {
        huge.push_str("The task's description goes on and on, line after line.\n");
    }
    write(&p, "huge.md", &huge);
    let out = air(&p, &["run", "--plan", "huge.md"]);
    expect(&out, 2);
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("huge.md: the plan is too large to send to the daemon: 20.")
            && stderr.contains("at most 16 MiB"),
        "{stderr}"
    );
    assert!(!stderr.contains("lost the daemon"), "{stderr}");
}

/// An agent out of time while its model's provider said nothing of the answer is the
/// provider's fault, not the task's: it runs again (no debugger is sent into the same
/// silence), and the task is blocked on the provider when it stays silent.
#[test]
fn a_silent_provider_is_not_the_tasks_failure() {
    let p = project();
    write(
        &p,
        "silent.md",
        "## Task quiet: its model never answers\n\n- hard_timeout: 2s\n- soft_timeout: 1s\n\nair-test: executor=model-silent\n",
    );
    let out = air(&p, &["run", "--plan", "silent.md", "--junit", "junit.xml"]);
    expect(&out, 3);
    let session = newest_session(&p);
    let conn = db(&p, &session);
    let agents: Vec<(String, String, Option<String>)> = conn
        .prepare("SELECT id, status, reason FROM agents ORDER BY seq")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        count(
            &conn,
            "SELECT COUNT(*) FROM agents WHERE task_id = 'quiet' AND agent_type = 'executor' AND status = 'failed' AND reason LIKE '%provider had said nothing%'"
        ),
        2,
        "ran again once: {agents:?}"
    );
    assert_eq!(
        count(
            &conn,
            "SELECT COUNT(*) FROM agents WHERE agent_type = 'debugger'"
        ),
        0,
        "no debugger is sent into the provider's silence"
    );
    let xml = std::fs::read_to_string(p.root.join("junit.xml")).unwrap();
    assert!(xml.contains("the model provider did not answer"), "{xml}");
}
