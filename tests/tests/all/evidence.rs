//! Evidence that airsd owns, end to end: the real `air`, daemon and tools, and a
//! scripted worker that lies about its evidence in each way a worker can, every lie
//! refused from airsd's own records until real evidence exists; and a worker killed
//! on its hard timeout analysed by the debugger before its task fails.

use crate::daemon::Project;
use crate::run::{air as run_with_the_scripted_worker, db, expect, newest_session};

/// Each executor result's recorded verdict, by agent id, in order.
pub(crate) fn verdicts(p: &Project, session: &str) -> Vec<(String, air_proto::gate::Verdict)> {
    let conn = db(p, session);
    let mut stmt = conn
        .prepare("SELECT agent_id, payload_json FROM events WHERE type = 'agent.completed' AND agent_id LIKE '%-executor-%' ORDER BY seq")
        .unwrap();
    stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
        .unwrap()
        .map(|r| {
            let (agent, json) = r.unwrap();
            let payload: serde_json::Value = serde_json::from_str(&json).unwrap();
            let verdict = serde_json::from_value(payload["gate"].clone()).unwrap_or_default();
            (agent, verdict)
        })
        .collect()
}

/// Checks how task `id` ended: its status, and a reason that says `says`.
fn ended(conn: &rusqlite::Connection, id: &str, status: &str, says: &str) {
    let (got, reason): (String, String) = conn
        .query_row(
            "SELECT status, COALESCE(reason, '') FROM tasks WHERE id = ?1",
            [id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(got, status, "{reason}");
    assert!(reason.contains(says), "{reason}");
}

const LIES: &str = r#"# Lies

## Task L: a package that builds

- category: build
- verify: `python3 -m compileall -q pkg`

air-test: executor=claim,claim,claim,claim,complete architecture_designer=retry
air-test-call-1: shell.run {"command": "python3 -m py_compile no_such_file.py"}
air-test-claim-1: {"evidence_refs": [{"id": "e1", "kind": "command_run", "ref": "command-run:$LAST_COMMAND_RUN", "claim": "it builds", "evidence_type": "build_pass"}], "verification": [{"name": "python3 -m compileall -q pkg", "status": "passed", "evidence_refs": ["command-run:$LAST_COMMAND_RUN"]}]}
air-test-claim-2: {"evidence_refs": [{"id": "e1", "kind": "command_run", "ref": "command-run:$NOTED_COMMAND_RUN", "claim": "it builds", "evidence_type": "build_pass"}]}
air-test-call-3: shell.run {"command": "python3 -m compileall -q pkg"}
air-test-call-3: fs.write {"path": "pkg/b.py", "content": "B = 2\n"}
air-test-claim-3: {"evidence_refs": [{"id": "e1", "kind": "command_run", "ref": "command-run:$LAST_COMMAND_RUN", "claim": "it builds", "evidence_type": "build_pass"}], "verification": [{"name": "python3 -m compileall -q pkg", "status": "passed"}]}
air-test-claim-4: {"verification": [{"name": "python3 -m compileall -q pkg", "status": "passed"}]}
"#;

#[test]
fn a_worker_that_lies_is_refused_each_time_until_real_evidence_exists() {
    let p = Project::new();
    std::fs::create_dir_all(p.root.join("pkg")).unwrap();
    std::fs::write(p.root.join("pkg/a.py"), "A = 1\n").unwrap();
    std::fs::write(p.root.join("lies.md"), LIES).unwrap();
    let out = run_with_the_scripted_worker(&p, &["run", "--plan", "lies.md", "--json"]);
    expect(&out, 0);
    let session = newest_session(&p);
    let v = verdicts(&p, &session);
    assert_eq!(v.len(), 5, "{v:#?}");
    let refused = |i: usize, what: &str| {
        assert!(
            v[i].1.refused.iter().any(|r| r.contains(what)),
            "run {}: expected a refusal saying {what:?}, got {:#?}",
            i + 1,
            v[i].1
        );
    };
    // 1. build_pass pointing at a command that failed, and a "passed" check that
    //    exited 1.
    refused(
        0,
        "claims build_pass from `python3 -m py_compile no_such_file.py`",
    );
    refused(0, "shows no build_pass (exited 1)");
    refused(0, "is reported passed, but its latest run");
    // 2. build_pass pointing at a command of another attempt.
    refused(1, "which no agent of this attempt ran");
    // 3. build_pass from a build made before the last edit.
    refused(2, "which ran before pkg/b.py changed");
    refused(2, "missing build_pass: the last one");
    // 4. a passed check that no command of the attempt shows.
    refused(3, "no command of this attempt shows it");
    for (_, verdict) in &v[..4] {
        assert!(!verdict.passed());
    }
    // 5. real evidence: the check run after the last change, recorded by airsd.
    assert!(v[4].1.passed(), "{:#?}", v[4].1);
    let counted = &v[4].1.counted;
    assert_eq!(counted.len(), 1, "{counted:?}");
    assert_eq!(
        counted[0].evidence_type,
        air_proto::task::EvidenceType::BuildPass
    );
    assert!(counted[0].reference.starts_with("command-run:"));
    assert!(counted[0].claim.contains("python3 -m compileall -q pkg"));
    // The evidence rows are airsd's: every one names the command run it came from.
    let conn = db(&p, &session);
    let rows: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM evidence_refs e JOIN command_runs c ON e.ref = 'command-run:' || c.id WHERE e.evidence_type = 'build_pass' AND c.exit_code = 0",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(rows, 2, "the two builds of pkg that exited 0");
    let failed_builds: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM evidence_refs e JOIN command_runs c ON e.ref = 'command-run:' || c.id WHERE c.exit_code <> 0",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(failed_builds, 0, "a failed command is no evidence");
}

const HANGS: &str = "# Hangs

## Task H: never finishes

- soft_timeout: 1s
- hard_timeout: 2s
- retry_budget: 0

air-test: executor=hang debugger=fix architecture_designer=stop
";

#[test]
fn a_worker_killed_on_its_hard_timeout_is_analysed_before_its_task_fails() {
    let p = Project::new();
    std::fs::write(p.root.join("hangs.md"), HANGS).unwrap();
    let out = run_with_the_scripted_worker(&p, &["run", "--plan", "hangs.md", "--json"]);
    expect(&out, 1);
    let session = newest_session(&p);
    let conn = db(&p, &session);
    let agents: Vec<(String, String, String)> = conn
        .prepare("SELECT id, status, COALESCE(reason, '') FROM agents ORDER BY seq")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(agents[0].0, "H-executor-1");
    assert_eq!(agents[0].1, "failed");
    assert!(agents[0].2.starts_with("hard timeout"), "{agents:?}");
    assert_eq!(
        (agents[1].0.as_str(), agents[1].1.as_str()),
        ("H-debugger-1", "completed"),
        "{agents:?}"
    );
    ended(
        &conn,
        "H",
        "failed",
        "debugger analysis: the cause of H's failure",
    );
}

const BROKEN_BUILD: &str = r#"# A build that keeps failing

## Task C: compile the unit

- retry_budget: 5

air-test: executor=fail debugger=fix
air-test-call: shell.run {"command": "g++ -c unit.cpp -o unit.o"}
"#;

/// A C++ build that fails is read by airsd: its compiler's findings are recorded
/// with their signatures, the debugger is told them, and the same compiler error
/// three times is the same failure, whatever else the attempts said.
#[test]
fn a_failing_build_is_diagnosed_and_its_repeats_are_told_by_signature() {
    assert!(
        std::process::Command::new("g++")
            .arg("--version")
            .output()
            .is_ok(),
        "g++ is missing: tests/run installs the C and C++ toolchain"
    );
    let p = Project::new();
    std::fs::write(
        p.root.join("unit.cpp"),
        "int unit() {\n  return undeclared_name + 1;\n}\n",
    )
    .unwrap();
    std::fs::write(p.root.join("broken.md"), BROKEN_BUILD).unwrap();
    let out = run_with_the_scripted_worker(&p, &["run", "--plan", "broken.md", "--json"]);
    expect(&out, 3);
    let session = newest_session(&p);
    let conn = db(&p, &session);
    type Finding = (String, Option<u32>, Option<u32>, String, String);
    let findings: Vec<Finding> = conn
        .prepare("SELECT file, line, column_number, signature, source_tool FROM diagnostics WHERE severity = 'error' ORDER BY seq")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(findings.len(), 3, "one per attempt: {findings:?}");
    for f in &findings {
        assert_eq!(
            (f.0.as_str(), f.1, f.2, f.3.as_str(), f.4.as_str()),
            (
                "unit.cpp",
                Some(2),
                Some(10),
                "undeclared-identifier:undeclared_name",
                "compiler"
            )
        );
    }
    ended(
        &conn,
        "C",
        "blocked",
        "the same failure 3 times, escalated: build failed: undeclared-identifier:undeclared_name",
    );
    // The debugger was told the findings (its notes are in its worker's stderr).
    let workers = p.paths().artifacts(&session).join("workers");
    let told = std::fs::read_dir(&workers)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains("debugger"))
        .map(|e| std::fs::read_to_string(e.path()).unwrap_or_default())
        .any(|s| s.contains("unit.cpp:2:10: error [undeclared-identifier:undeclared_name]"));
    assert!(told, "the debugger's notes name the finding");
}

/// A check the plan declares (`[smoke_test]`) is that evidence when it passes: airsd
/// records it from the command's run, and the task completes on it.
#[test]
fn a_declared_check_yields_its_evidence_when_it_passes() {
    let p = Project::new();
    std::fs::write(p.root.join("smoke.sh"), "echo the service answers\n").unwrap();
    std::fs::write(
        p.root.join("declared.md"),
        "# Declared\n\n## Task D: a smoke check\n\n- evidence: smoke_test\n- verify: `sh smoke.sh` [smoke_test]\n\nair-test: executor=complete\n\nAcceptance criteria:\n- the smoke check passes\n",
    )
    .unwrap();
    let out = run_with_the_scripted_worker(&p, &["run", "--plan", "declared.md"]);
    expect(&out, 0);
    let session = newest_session(&p);
    let v = verdicts(&p, &session);
    let counted = &v[0].1.counted;
    let smoke = counted
        .iter()
        .find(|c| c.evidence_type == air_proto::task::EvidenceType::SmokeTest)
        .unwrap_or_else(|| panic!("{v:#?}"));
    assert!(
        smoke
            .claim
            .contains("`sh smoke.sh`, which the task declares smoke_test, exited 0"),
        "{smoke:?}"
    );
    assert!(smoke.reference.starts_with("command-run:"));
}
