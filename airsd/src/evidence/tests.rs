//! Deriving evidence from a command run: what a build, a test run, an analysis and a declared check show, and what a status that vouches for nothing does not.
use super::*;

fn run<'a>(command: &'a str, exit: Option<i32>, count: Option<Count>) -> Run<'a> {
    Run {
        command_run_id: "c1",
        command,
        exit_code: exit,
        reading: &READING,
        start_dir: "",
        logs: &[],
        count,
        yields: &[],
    }
}

fn kinds(d: &[Derived]) -> Vec<EvidenceType> {
    d.iter().map(|d| d.evidence_type).collect()
}

static READING: std::sync::LazyLock<air_proto::gate::Reading> =
    std::sync::LazyLock::new(|| air_proto::gate::Reading {
        canonical: crate::profiles::canonical,
        ..Default::default()
    });

const fn count(ran: u64, failed: u64) -> Option<Count> {
    Some(Count {
        ran,
        failed,
        packages: false,
    })
}

const THREE: Option<Count> = count(3, 0);

#[test]
fn a_build_that_exits_0_is_build_pass_and_one_that_fails_is_nothing() {
    use EvidenceType::*;
    assert_eq!(
        kinds(&derive(&run("cmake --build build", Some(0), None))),
        [BuildPass]
    );
    assert!(derive(&run("cmake --build build", Some(2), None)).is_empty());
    assert!(derive(&run("cmake --build build", None, None)).is_empty());
    // Its exit status does not vouch for the build.
    assert!(derive(&run("cmake --build build || true", Some(0), None)).is_empty());
    assert!(derive(&run("make; echo done", Some(0), None)).is_empty());
    // Not a build at all.
    assert!(derive(&run("echo cmake --build", Some(0), None)).is_empty());
    let logs = ["artifact://project/p/session/s/log".to_string()];
    let with_log = Run {
        logs: &logs,
        ..run("cd build && ninja", Some(0), None)
    };
    let d = derive(&with_log);
    assert_eq!(kinds(&d), [BuildPass, BuildLog]);
    assert_eq!(d[0].reference, "command-run:c1");
    assert_eq!(d[1].reference, logs[0]);
}

#[test]
fn a_test_run_passes_only_with_tests_run_and_none_failed() {
    use EvidenceType::*;
    assert_eq!(
        kinds(&derive(&run("ctest --test-dir build", Some(0), THREE))),
        [TestOutput, TestPass]
    );
    // Zero tests run is not a pass, nor output.
    let none = count(0, 0);
    assert!(derive(&run("ctest", Some(0), none)).is_empty());
    // A count nobody could read: no pass.
    assert!(derive(&run("ctest", Some(0), None)).is_empty());
    // Failures: output, no pass.
    let failing = count(3, 1);
    assert_eq!(
        kinds(&derive(&run("pytest", Some(1), failing))),
        [TestOutput]
    );
    // A test count printed by something that is not a test runner: nothing.
    assert!(derive(&run("echo '3 passed in 0.1s'", Some(0), THREE)).is_empty());
    // cargo test builds and tests.
    assert_eq!(
        kinds(&derive(&run("cargo test", Some(0), THREE))),
        [BuildPass, TestOutput, TestPass]
    );
}

#[test]
fn an_analysis_covers_what_it_was_pointed_at_from_the_project_root() {
    let d = derive(&Run {
        start_dir: "sub",
        ..run(
            "cd src && cppcheck --error-exitcode=1 --enable=all a.cpp ../include",
            Some(0),
            None,
        )
    });
    assert_eq!(d[0].evidence_type, EvidenceType::StaticAnalysis);
    assert_eq!(
        d[0].covers,
        Some(vec!["sub/src/a.cpp".into(), "sub/include".into()])
    );
    let d = derive(&run("ruff check", Some(0), None));
    assert_eq!(d[0].covers, Some(vec![".".into()]));
    assert!(derive(&run("cppcheck --error-exitcode=1 src", Some(1), None)).is_empty());
    // Findings that do not fail it: its status says nothing.
    assert!(derive(&run("cppcheck src", Some(0), None)).is_empty());
    let d = derive(&run("cppcheck --error-exitcode=1 src/*.cpp", Some(0), None));
    assert_eq!(
        d[0].covers,
        Some(vec!["src".into()]),
        "a glob covers its directory"
    );
}

#[test]
fn a_check_the_plan_declares_yields_its_evidence_when_it_passes() {
    let yields = [
        ("./scripts/smoke.sh".to_string(), EvidenceType::SmokeTest),
        ("./run-tests".to_string(), EvidenceType::TestPass),
    ];
    let d = derive(&Run {
        yields: &yields,
        ..run("./scripts/smoke.sh", Some(0), None)
    });
    assert_eq!(kinds(&d), [EvidenceType::SmokeTest]);
    assert!(derive(&Run {
        yields: &yields,
        ..run("./scripts/smoke.sh", Some(1), None)
    })
    .is_empty());
    // A declared test run whose output shows no test is no pass either.
    assert!(derive(&Run {
        yields: &yields,
        ..run("./run-tests", Some(0), None)
    })
    .is_empty());
    // A declared test run whose output shows a failure is not a pass.
    let failing = count(2, 1);
    assert!(derive(&Run {
        yields: &yields,
        ..run("./run-tests", Some(0), failing)
    })
    .is_empty());
}

#[test]
fn a_test_run_that_loads_the_code_is_its_build_where_there_is_no_other() {
    use EvidenceType::*;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("package.json"),
        r#"{"scripts": {"test": "node --test"}}"#,
    )
    .unwrap();
    let reading = air_proto::gate::Reading {
        root: dir.path().to_str().map(str::to_string),
        canonical: crate::profiles::canonical,
        ..Default::default()
    };
    let ran = |command: &'static str, count| Run {
        reading: &reading,
        ..run(command, Some(0), count)
    };
    assert_eq!(
        kinds(&derive(&ran(
            "timeout 120 npm test --silent 2>&1 | tail -20",
            THREE
        ))),
        [BuildPass, TestOutput, TestPass]
    );
    assert_eq!(
        kinds(&derive(&ran(".venv/bin/python -m unittest -v", THREE))),
        [BuildPass, TestOutput, TestPass]
    );
    // No test ran: nothing was shown to load.
    assert!(derive(&ran("npm test", count(0, 0))).is_empty());
    // A compiled language's test run is a build by itself; no second one.
    assert_eq!(
        kinds(&derive(&ran("go test ./...", THREE))),
        [BuildPass, TestOutput, TestPass]
    );
}
