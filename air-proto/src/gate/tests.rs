//! The evidence gate's rules, each shown on a ledger built by hand: real records complete a task, and each way a result can claim more than the records show is refused.
#![allow(clippy::unwrap_used)]
use super::*;
use crate::result::{EvidenceRef, VerificationResult};
use crate::role::AgentType;
use crate::task::{
    Constraints, ContextRefs, Contracts, ModelPolicy, TaskCategory, TaskScope, TaskType,
    Verification,
};

fn spec(category: TaskCategory, verify: &[&str]) -> TaskSpec {
    TaskSpec {
        id: "T1".into(),
        task_type: TaskType::Execute,
        title: "t".into(),
        description: String::new(),
        acceptance_criteria: Vec::new(),
        category: Some(category),
        phase: None,
        scope: TaskScope::default(),
        contracts: Contracts::default(),
        dependencies: Vec::new(),
        verification: Verification {
            commands: (!verify.is_empty()).then(|| verify.iter().map(|c| c.to_string()).collect()),
            required: !verify.is_empty(),
            fallback_allowed: false,
            evidence_types: None,
            declared: None,
        },
        constraints: Constraints {
            max_turns: 10,
            soft_timeout_ms: 1,
            hard_timeout_ms: 2,
            retry_budget: 0,
            model_policy: ModelPolicy::SchedulerForced,
            model_id: None,
        },
        context_refs: ContextRefs::default(),
        output_contract: TaskType::Execute.output_contract(),
    }
}

fn completed(changed: &[&str]) -> WorkerResult {
    let mut r = WorkerResult::new(
        "T1",
        "a1",
        AgentType::Executor,
        WorkerStatus::Completed,
        "done".into(),
    );
    r.changed_files = changed.iter().map(|c| c.to_string()).collect();
    r
}

fn claim(kind: EvidenceType, command_run: &str) -> EvidenceRef {
    EvidenceRef {
        id: format!("ev-{}", kind.as_str()),
        kind: EvidenceKind::CommandRun,
        reference: format!("{COMMAND_RUN}{command_run}"),
        location: None,
        claim: format!("{} holds", kind.as_str()),
        evidence_type: Some(kind),
    }
}

fn passed(name: &str) -> VerificationResult {
    VerificationResult {
        name: name.into(),
        status: VerificationStatus::Passed,
        evidence_refs: None,
        notes: None,
    }
}

/// A ledger built step by step, seqs in order.
#[derive(Default)]
struct Record {
    ledger: Ledger,
    seq: u64,
}

impl Record {
    fn next(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    fn ran(
        &mut self,
        id: &str,
        command: &str,
        exit: Option<i32>,
        shows: &[EvidenceType],
    ) -> &mut Self {
        let seq = self.next();
        self.ledger.commands.push(CommandRecord {
            command_run_id: id.into(),
            command: command.into(),
            exit_code: exit,
            seq,
            start_dir: Some(String::new()),
            before: false,
        });
        for kind in shows {
            let seq = self.next();
            self.ledger.pieces.push(Piece {
                id: format!("{id}-{}", kind.as_str()),
                evidence_type: *kind,
                reference: format!("{COMMAND_RUN}{id}"),
                claim: format!("{command} shows {}", kind.as_str()),
                seq,
                command_run_id: Some(id.into()),
                covers: None,
            });
        }
        self
    }

    /// airsd's run of the task's check before the attempt's agent began.
    fn before(&mut self, id: &str, command: &str, exit: Option<i32>) -> &mut Self {
        self.ran(id, command, exit, &[]);
        if let Some(c) = self.ledger.commands.last_mut() {
            c.before = true;
        }
        self
    }

    fn wrote(&mut self, file: &str) -> &mut Self {
        let seq = self.next();
        self.ledger.changes.push(Change {
            seq,
            files: vec![file.into()],
            command_run_id: None,
        });
        self
    }
}

use EvidenceType::*;

#[test]
fn real_records_complete_a_logic_task() {
    let mut rec = Record::default();
    rec.wrote("src/a.py")
        .ran("c1", "python3 -m compileall -q src", Some(0), &[BuildPass])
        .ran(
            "c2",
            "python3 -m unittest",
            Some(0),
            &[TestPass, TestOutput],
        );
    let v = check(
        &spec(TaskCategory::Logic, &[]),
        &completed(&["src/a.py"]),
        &rec.ledger,
    );
    assert!(v.passed(), "{v:?}");
    let counted: Vec<_> = v
        .counted
        .iter()
        .map(|c| (c.evidence_type, c.evidence_id.as_str()))
        .collect();
    assert_eq!(
        counted,
        [(BuildPass, "c1-build_pass"), (TestPass, "c2-test_pass")]
    );
}

#[test]
fn a_claim_the_records_do_not_show_is_refused_each_way_a_worker_can_lie() {
    let s = spec(TaskCategory::Logic, &[]);
    let mut rec = Record::default();
    rec.wrote("src/a.py").ran("bad", "make", Some(2), &[]).ran(
        "ok",
        "python3 -m unittest",
        Some(0),
        &[TestPass],
    );
    // build_pass and test_pass both pointing at a failed command.
    let mut r = completed(&["src/a.py"]);
    r.evidence_refs = vec![claim(BuildPass, "bad"), claim(TestPass, "bad")];
    let v = check(&s, &r, &rec.ledger);
    assert!(!v.passed());
    assert!(
        v.refused[0].contains("evidence[0] claims build_pass from `make`"),
        "{v:?}"
    );
    assert!(v.refused[0].contains("exited 2"), "{v:?}");
    assert!(
        v.refused
            .iter()
            .any(|r| r.starts_with("missing build_pass")),
        "{v:?}"
    );
    // A command of another attempt (not in this ledger).
    let mut r = completed(&["src/a.py"]);
    r.evidence_refs = vec![claim(BuildPass, "elsewhere")];
    let v = check(&s, &r, &rec.ledger);
    assert!(
        v.refused[0].contains("no agent of this attempt ran"),
        "{v:?}"
    );
    // A build before the last edit.
    let mut rec = Record::default();
    rec.ran("b1", "make", Some(0), &[BuildPass])
        .ran("t1", "ctest", Some(0), &[TestPass])
        .wrote("src/a.cpp");
    let mut r = completed(&["src/a.cpp"]);
    r.evidence_refs = vec![claim(BuildPass, "b1")];
    let v = check(&spec(TaskCategory::CppLogic, &[]), &r, &rec.ledger);
    assert!(
        v.refused[0].contains("which ran before src/a.cpp changed"),
        "{v:?}"
    );
    assert!(
        v.refused
            .iter()
            .any(|r| r.contains("missing build_pass: the last one") && r.contains("src/a.cpp")),
        "{v:?}"
    );
    // A "passed" check no command shows.
    let mut rec = Record::default();
    rec.wrote("src/a.py")
        .ran("c1", "python3 -m compileall -q src", Some(0), &[BuildPass])
        .ran("c2", "python3 -m unittest", Some(0), &[TestPass]);
    let mut r = completed(&["src/a.py"]);
    r.verification = vec![passed("pytest -q")];
    let v = check(&s, &r, &rec.ledger);
    assert_eq!(v.refused.len(), 1, "{v:?}");
    assert!(
        v.refused[0].contains("no command of this attempt shows it"),
        "{v:?}"
    );
    // A claim of build_pass from something that is not a command.
    let mut r = completed(&["src/a.py"]);
    r.evidence_refs = vec![EvidenceRef {
        kind: EvidenceKind::Message,
        reference: "trust me".into(),
        ..claim(BuildPass, "x")
    }];
    let v = check(&s, &r, &rec.ledger);
    assert!(v.refused[0].contains("not a command airsd ran"), "{v:?}");
}

#[test]
fn a_command_s_own_changes_leave_its_evidence_fresh() {
    let mut rec = Record::default();
    rec.wrote("src/a.py")
        .ran("c1", "make", Some(0), &[BuildPass]);
    rec.ledger.changes.push(Change {
        seq: 99,
        files: vec!["src/generated.py".into()],
        command_run_id: Some("c1".into()),
    });
    let v = check(
        &spec(TaskCategory::Build, &[]),
        &completed(&["src/a.py"]),
        &rec.ledger,
    );
    assert!(v.passed(), "{v:?}");
}

#[test]
fn the_task_s_checks_must_each_have_passed_after_the_last_change() {
    let s = spec(
        TaskCategory::Docs,
        &[
            "python3 -m unittest discover -s tests",
            "grep -q x README.md",
        ],
    );
    let mut rec = Record::default();
    rec.wrote("README.md")
        .ran(
            "c1",
            "python3 -m compileall -q . && python3 -m unittest discover -s tests",
            Some(0),
            &[],
        )
        .ran("c2", "grep -q x README.md", Some(1), &[]);
    let mut r = completed(&["README.md"]);
    r.verification = vec![passed("python3 -m unittest discover -s tests")];
    let v = check(&s, &r, &rec.ledger);
    assert_eq!(
        v.refused,
        ["the task's check `grep -q x README.md` exited 1 when it last ran (command-run:c2)"]
    );
    rec.ran("c3", "grep -q x README.md", Some(0), &[])
        .wrote("README.md");
    let v = check(&s, &r, &rec.ledger);
    assert!(
        v.refused
            .iter()
            .all(|r| r.contains("changed; run it again")),
        "{v:?}"
    );
    assert_eq!(v.refused.len(), 3, "{v:?}");
}

#[test]
fn c_changes_need_an_analysis_that_covered_them() {
    let mut rec = Record::default();
    rec.wrote("src/a.cpp").wrote("lib/b.hpp").ran(
        "c1",
        "cmake --build build",
        Some(0),
        &[BuildPass],
    );
    let seq = rec.next();
    rec.ledger.pieces.push(Piece {
        id: "p".into(),
        evidence_type: StaticAnalysis,
        reference: "command-run:c2".into(),
        claim: "cppcheck src passed".into(),
        seq,
        command_run_id: Some("c2".into()),
        covers: Some(vec!["src".into()]),
    });
    let v = check(
        &spec(TaskCategory::CppBuild, &[]),
        &completed(&["src/a.cpp"]),
        &rec.ledger,
    );
    assert_eq!(
        v.refused,
        ["missing static_analysis: no analysis of this attempt covered lib/b.hpp"]
    );
    rec.ledger.pieces.last_mut().unwrap().covers = Some(vec![".".into()]);
    assert!(check(
        &spec(TaskCategory::CppBuild, &[]),
        &completed(&[]),
        &rec.ledger
    )
    .passed());
}

#[test]
fn a_bugfix_needs_the_check_to_fail_first_and_pass_after_the_fix() {
    let s = spec(TaskCategory::Bugfix, &[]);
    let mut rec = Record::default();
    rec.ran("t1", "pytest -q", Some(1), &[])
        .wrote("a.py")
        .ran("b", "python3 -m compileall -q .", Some(0), &[BuildPass])
        .ran("t2", "pytest -q", Some(0), &[TestPass]);
    let v = check(&s, &completed(&["a.py"]), &rec.ledger);
    assert!(v.passed(), "{v:?}");
    assert!(v
        .counted
        .iter()
        .any(|c| c.evidence_type == Reproduction && c.claim.contains("command-run:t1")));
    // Passing only, never failing first: no reproduction.
    let mut rec = Record::default();
    rec.wrote("a.py")
        .ran("b", "python3 -m compileall -q .", Some(0), &[BuildPass])
        .ran("t2", "pytest -q", Some(0), &[TestPass]);
    let v = check(&s, &completed(&["a.py"]), &rec.ledger);
    assert_eq!(v.refused.len(), 1, "{v:?}");
    assert!(v.refused[0].starts_with("missing reproduction"), "{v:?}");
}

#[test]
fn evidence_no_tool_records_names_the_marker_to_use() {
    let v = check(
        &spec(TaskCategory::CppGui, &[]),
        &completed(&["a.cpp"]),
        &Ledger::default(),
    );
    assert!(
        v.refused.iter().any(
            |r| r.contains("no tool of air records screenshot evidence yet")
                && r.contains("[no-screenshot]")
        ),
        "{v:?}"
    );
}

#[test]
fn a_failed_result_is_checked_for_its_claims_only() {
    let mut r = completed(&[]);
    r.status = WorkerStatus::Failed;
    assert!(check(&spec(TaskCategory::Logic, &[]), &r, &Ledger::default()).passed());
    r.evidence_refs = vec![claim(TestPass, "nowhere")];
    assert!(!check(&spec(TaskCategory::Logic, &[]), &r, &Ledger::default()).passed());
}

#[test]
fn runs_matches_a_step_of_an_and_chain_only() {
    assert!(runs("make  all &&  make  test", "make test"));
    assert!(runs("make test", "make  test"));
    assert!(!runs("make test || true", "make test"));
    assert!(!runs("make tests", "make test"));
    assert!(runs(
        "CMAKE_BUILD_PARALLEL_LEVEL=2 cmake --build build",
        "cmake --build build"
    ));
    // What could hide the step or change what it runs.
    for ran in [
        "true # && make test",
        "echo \"&& make test &&\"",
        "mkdir -p x && cd x && make test",
        "PATH=/tmp/fake make test",
        "make test & wait",
    ] {
        assert!(!runs(ran, "make test"), "{ran}");
    }
}

#[test]
fn a_check_is_matched_by_what_it_runs_not_by_its_spelling() {
    // What the profiles would take out: verbosity.
    fn quiet(argv: &[String]) -> Vec<String> {
        argv.iter().filter(|a| *a != "-v").cloned().collect()
    }
    let reading = Reading {
        root: Some("/p/proj".into()),
        canonical: quiet,
        ..Reading::default()
    };
    let at = |ran: &str, start: &str, wanted: &str| compare(ran, Some(start), wanted, &reading);
    for ran in [
        "make test 2>&1 | tail -30",
        "timeout 60 make test",
        "time make test > out.log 2>&1",
        "env CI=1 make test | tee log | grep -v PASS",
        "make test -v",
        "cd /p/proj && make test",
        "make all && make test && echo done",
    ] {
        assert_eq!(at(ran, "", "make test"), Match::Runs, "{ran}");
    }
    // A check in a directory: run there, by any way of getting there.
    for (ran, start) in [
        ("cd sub && make test", ""),
        ("make test", "sub"),
        ("cd /p/proj/sub && make test", "other"),
        ("cd ../sub && make test", "other"),
    ] {
        assert_eq!(
            at(ran, start, "cd sub && make test"),
            Match::Runs,
            "{ran} in {start}"
        );
    }
    // What differs is named.
    for (ran, why) in [
        ("make test || true", "`||` lets it end 0"),
        ("make test; exit 0", "`;` lets it end 0"),
        ("set +e && make test", "`set`"),
        ("make test -k one", "adds `-k one`"),
        ("make", "leaves out `test`"),
        (
            "cd sub && make test",
            "it ran in `sub` where the check runs in the project root",
        ),
        ("cd /tmp && make test", "a directory airsd cannot place"),
    ] {
        match at(ran, "", "make test") {
            Match::Differs(d) => assert!(d.contains(why), "{ran}: {d}"),
            other => panic!("{ran}: {other:?}"),
        }
    }
    assert_eq!(at("echo make test", "", "make test"), Match::Unrelated);
    // Without pipefail a pipe hides the status.
    let plain = Reading {
        pipefail: false,
        ..Reading::default()
    };
    assert!(matches!(
        compare("make test | tail", Some(""), "make test", &plain),
        Match::Differs(_)
    ));
}

#[test]
fn a_run_of_the_program_that_ended_well_is_a_smoke_test_cited_either_way() {
    let s = spec(TaskCategory::Logic, &[]);
    let mut rec = Record::default();
    rec.wrote("src/a.py")
        .ran("b", "python3 -m compileall -q src", Some(0), &[BuildPass])
        .ran("t", "python3 -m unittest", Some(0), &[TestPass])
        .ran("run", "python3 -m src.cli 3 4", Some(0), &[])
        .ran("crash", "python3 -m src.cli x", Some(1), &[]);
    // Cited bare, as an artifact excerpt: it is still the command.
    let mut r = completed(&["src/a.py"]);
    let mut smoke = claim(SmokeTest, "run");
    smoke.kind = EvidenceKind::ArtifactExcerpt;
    smoke.reference = "run".into();
    let mut tests = claim(TestPass, "t");
    tests.reference = "t".into();
    r.evidence_refs = vec![smoke, tests];
    let v = check(&s, &r, &rec.ledger);
    assert!(v.passed(), "{v:?}");
    // A run that failed is no smoke test.
    r.evidence_refs = vec![claim(SmokeTest, "crash")];
    let v = check(&s, &r, &rec.ledger);
    assert!(
        v.refused[0].contains("shows no smoke_test (exited 1)"),
        "{v:?}"
    );
    // Nor one the code changed after.
    rec.wrote("src/b.py");
    r.evidence_refs = vec![claim(SmokeTest, "run")];
    let v = check(&s, &r, &rec.ledger);
    assert!(
        v.refused
            .iter()
            .any(|x| x.contains("ran before src/b.py changed")),
        "{v:?}"
    );
}

#[test]
fn a_task_without_a_category_is_gated_by_what_it_changes() {
    let files = |f: &[&str]| f.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    for (changed, want) in [
        (&["src/a.py"][..], Some(TaskCategory::Logic)),
        (&["README.md", "src/lib.rs"], Some(TaskCategory::Logic)),
        (&["tests/test_a.py"], Some(TaskCategory::Test)),
        (
            &["pkg/a_test.go", "web/a.test.ts", "src/FooTest.java"],
            Some(TaskCategory::Test),
        ),
        (&["Cargo.toml"], Some(TaskCategory::Build)),
        (&["requirements-dev.txt"], Some(TaskCategory::Build)),
        (
            &[".github/workflows/ci.yml", "config.yaml"],
            Some(TaskCategory::Config),
        ),
        (
            &["README.md", "docs/guide.txt", "LICENSE"],
            Some(TaskCategory::Docs),
        ),
        (&[], None),
        (
            &["/etc/x.conf", "~/.bashrc", ".git/air-note", ".air/shared/x"],
            None,
        ),
    ] {
        assert_eq!(category_of_change(&files(changed)), want, "{changed:?}");
    }
    let mut s = spec(TaskCategory::Logic, &[]);
    s.category = None;
    assert_eq!(
        required_for(&s, WorkerStatus::Completed, &files(&["src/a.py"])),
        [BuildPass, TestPass]
    );
    assert!(required_for(&s, WorkerStatus::Completed, &files(&["docs/a.md"])).is_empty());
    assert_eq!(
        required_for(&s, WorkerStatus::Completed, &[]),
        [EvidenceType::Explanation]
    );
    // A task with its own list keeps it.
    s.verification.evidence_types = Some(vec![]);
    assert!(required_for(&s, WorkerStatus::Completed, &files(&["src/a.py"])).is_empty());
}

#[test]
fn a_task_handed_on_from_a_conversation_is_gated_by_what_it_changes() {
    let d = crate::conversation::DelegatedTask {
        title: "Fix add".into(),
        description: "add subtracts".into(),
        acceptance_criteria: vec!["add(2, 3) is 5".into()],
        expected_files: vec!["calc.js".into()],
        verify: Vec::new(),
        category: None,
    };
    let s = d.spec("T1".into());
    assert!(judged_by_change(&s));
    assert_eq!(
        required_for(&s, WorkerStatus::Completed, &["calc.js".to_string()]),
        [BuildPass, TestPass]
    );
}

/// Whether the verdict counts a reproduction (no refusal names one missing).
fn reproduced(v: &Verdict) -> bool {
    !v.refused
        .iter()
        .any(|r| r.starts_with("missing reproduction"))
}

#[test]
fn airsds_run_before_the_attempt_is_the_reproduction_when_the_agent_fixes_first() {
    let s = spec(TaskCategory::Bugfix, &["python3 -m pytest -q"]);
    let mut rec = Record::default();
    // Fixed first, tested after, the check wrapped as models do.
    rec.before("b0", "python3 -m pytest -q", Some(1))
        .wrote("a.py")
        .ran("b", "python3 -m compileall -q .", Some(0), &[BuildPass])
        .ran(
            "t2",
            "python3 -m pytest -q 2>&1 | tail -20",
            Some(0),
            &[TestPass, TestOutput],
        );
    let v = check(&s, &completed(&["a.py"]), &rec.ledger);
    assert!(reproduced(&v), "{v:?}");
    let r = v
        .counted
        .iter()
        .find(|c| c.evidence_type == Reproduction)
        .unwrap();
    assert!(
        r.claim.contains("before the task changed anything"),
        "{r:?}"
    );
    // Another command that passed is not the check that failed.
    let mut rec = Record::default();
    rec.before("b0", "python3 -m pytest -q", Some(1))
        .wrote("a.py")
        .ran(
            "t2",
            "python3 -m pytest -q tests/test_other.py",
            Some(0),
            &[TestPass],
        );
    let v = check(&s, &completed(&["a.py"]), &rec.ledger);
    assert!(!reproduced(&v), "{v:?}");
    // Masked, it proves nothing.
    let mut rec = Record::default();
    rec.before("b0", "python3 -m pytest -q", Some(1))
        .wrote("a.py")
        .ran("t2", "python3 -m pytest -q || true", Some(0), &[TestPass]);
    let v = check(&s, &completed(&["a.py"]), &rec.ledger);
    assert!(!reproduced(&v), "{v:?}");
}

#[test]
fn a_passing_check_before_asks_for_a_test_that_shows_the_bug() {
    let s = spec(TaskCategory::Bugfix, &[]);
    let mut rec = Record::default();
    rec.before("b0", "make test", Some(0)).wrote("a.c").ran(
        "t2",
        "make test",
        Some(0),
        &[BuildPass, TestPass],
    );
    let v = check(&s, &completed(&["a.c"]), &rec.ledger);
    let why = v
        .refused
        .iter()
        .find(|r| r.starts_with("missing reproduction"))
        .unwrap();
    assert!(why.contains("write one, run it and see it fail"), "{why}");
    // The new test, run and failing before the fix, then passing after it.
    rec.wrote("tests/test_bug.c")
        .ran("t3", "make test", Some(2), &[TestOutput])
        .wrote("a.c")
        .ran(
            "t4",
            "make test 2>&1 | tail -5",
            Some(0),
            &[BuildPass, TestPass],
        );
    let v = check(&s, &completed(&["a.c"]), &rec.ledger);
    assert!(reproduced(&v), "{v:?}");
}

#[test]
fn a_failure_before_an_earlier_attempt_counts_once_that_attempts_fix_holds() {
    let s = spec(TaskCategory::Bugfix, &["cargo test"]);
    let mut rec = Record::default();
    rec.ledger.earlier.push(CommandRecord {
        command_run_id: "b-first".into(),
        command: "cargo test".into(),
        exit_code: Some(101),
        seq: 0,
        start_dir: Some(String::new()),
        before: true,
    });
    // This attempt's own run before it began passed: the earlier attempt's fix.
    rec.before("b0", "cargo test", Some(0))
        .wrote("src/lib.rs")
        .ran(
            "t1",
            "cargo test 2>&1 | tail -3",
            Some(0),
            &[BuildPass, TestPass],
        );
    let v = check(&s, &completed(&["src/lib.rs"]), &rec.ledger);
    assert!(reproduced(&v), "{v:?}");
    // Without the earlier failure, nothing failed.
    rec.ledger.earlier.clear();
    let v = check(&s, &completed(&["src/lib.rs"]), &rec.ledger);
    assert!(!reproduced(&v), "{v:?}");
}

#[test]
fn a_debuggers_failure_is_its_failing_checks_and_the_files_it_names() {
    let mut s = spec(TaskCategory::Logic, &["make check"]);
    s.id = "T1".into();
    let mut failed = completed(&["src/lexer.c"]);
    failed.status = WorkerStatus::Failed;
    failed.summary = "The build broke at include/lexer.h:3.".into();
    // A check named in words, not by its command: the task's checks still count.
    failed.verification.push(VerificationResult {
        name: "the scripted tests".into(),
        status: VerificationStatus::Failed,
        evidence_refs: None,
        notes: None,
    });
    let f = Failure::of(
        &s,
        Some(&failed),
        &["see https://example.com/x.html".into()],
    );
    assert_eq!(f.checks, ["make check", "the scripted tests"]);
    assert_eq!(f.files, ["src/lexer.c", "include/lexer.h"]);
    assert!(f.reads("./src/lexer.c") && f.reads("include/lexer.h"));
    assert!(!f.reads("README.md"));
    assert!(idle("true") && idle("echo ok && pwd") && !idle("make check || true"));
}
