//! The C and C++ tools end to end, with the real toolchain (`tests/run` installs
//! cmake, ninja, g++, clang, cppcheck, clangd and GoogleTest): the seeded sample
//! project under `tests/fixtures/cpp-sample` fails to compile, is diagnosed (the same
//! signature from g++ and clang++), is fixed, builds with Ninja, its tests fail then
//! pass as seeded, cppcheck finds the seeded defect, clangd finds the file's flags;
//! and with Ninja gone from PATH the build directory is repaired and built with Make.
//! The calls are made by the scripted worker through airsd, as an agent makes them.

use std::path::Path;

use crate::daemon::Project;
use crate::run::{air, db, expect, newest_session};

/// A copy of the sample project.
fn sample() -> Project {
    let p = Project::new();
    let from = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/cpp-sample");
    air_tests::copy_dir(&from, &p.root);
    p
}

fn write_call(path: &str, content: &str) -> String {
    format!(
        "air-test-call: fs.read {}\nair-test-call: fs.write {}\n",
        serde_json::json!({ "path": path }),
        serde_json::json!({ "path": path, "content": content })
    )
}

/// The outputs of the calls of one tool, in order.
fn outputs(conn: &rusqlite::Connection, tool: &str) -> Vec<serde_json::Value> {
    conn.prepare("SELECT COALESCE(output_json, error) FROM tool_runs WHERE tool = ?1 ORDER BY seq")
        .unwrap()
        .query_map([tool], |r| r.get::<_, String>(0))
        .unwrap()
        .map(|r| {
            let text = r.unwrap();
            serde_json::from_str(&text).unwrap_or(serde_json::Value::String(text))
        })
        .collect()
}

fn signatures(v: &serde_json::Value) -> Vec<String> {
    v["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|f| f["signature"].as_str().unwrap_or("").to_string())
        .collect()
}

#[test]
fn the_sample_is_built_diagnosed_fixed_tested_and_analysed_with_the_real_toolchain() {
    for tool in ["cmake", "ninja", "g++", "clang++", "cppcheck", "clangd"] {
        assert!(
            std::process::Command::new(tool)
                .arg("--version")
                .output()
                .is_ok(),
            "{tool} is missing: tests/run installs the C and C++ toolchain"
        );
    }
    let p = sample();
    let half_fixed = "#include \"sample/sum.h\"\n\nint sum(int a, int b) { return a == b ? a + b + 1 : a + b; }\n";
    let fixed = "#include \"sample/sum.h\"\n\nint sum(int a, int b) { return a + b; }\n";
    let mut plan = String::from(
        "# The sample\n\n## Task S: make the sample build and pass\n\n- expected_files: `src/sum.cpp`\n\nair-test: executor=complete\n",
    );
    plan.push_str("air-test-call: cpp.build {}\n");
    plan.push_str("air-test-call: shell.run {\"command\": \"clang++ -std=c++17 -Iinclude -c src/sum.cpp -o /tmp/air-cpp-sample-clang.o\"}\n");
    plan.push_str("air-test-call: shell.run {\"command\": \"g++ -std=c++17 -Iinclude -c src/sum.cpp -o /tmp/air-cpp-sample-gcc.o\"}\n");
    plan.push_str("air-test-call: cpp.diagnose {\"command_run_id\": \"$LAST_COMMAND_RUN\"}\n");
    plan.push_str(&write_call("src/sum.cpp", half_fixed));
    plan.push_str("air-test-call: cpp.build {}\nair-test-call: cpp.test {}\n");
    plan.push_str(&write_call("src/sum.cpp", fixed));
    plan.push_str("air-test-call: cpp.build {}\nair-test-call: cpp.test {}\n");
    plan.push_str("air-test-call: cpp.analyze {\"files\": [\"src/buffer.cpp\"]}\n");
    plan.push_str("air-test-call: cpp.analyze {\"files\": [\"src/sum.cpp\"]}\n");
    plan.push_str("air-test-call: cpp.intelligence {\"file\": \"src/sum.cpp\"}\n");
    std::fs::write(p.root.join("plan.md"), &plan).unwrap();
    let out = air(&p, &["run", "--plan", "plan.md"]);
    // The task completes on airsd's own evidence: the analysis of the changed file.
    expect(&out, 0);
    let session = newest_session(&p);
    let conn = db(&p, &session);

    let builds = outputs(&conn, "cpp.build");
    assert_eq!(builds.len(), 3, "{builds:#?}");
    assert_eq!(builds[0]["passed"], false, "{:#?}", builds[0]);
    assert_eq!(builds[0]["generator"], "Ninja", "{:#?}", builds[0]);
    assert!(
        signatures(&builds[0]).contains(&"undeclared-identifier:offset".to_string()),
        "{:#?}",
        builds[0]
    );
    assert_eq!(builds[1]["passed"], true, "{:#?}", builds[1]);
    assert_eq!(builds[1]["compile_commands"], "build/compile_commands.json");
    assert_eq!(builds[2]["passed"], true);
    // The same error from the CMake build (g++), clang++ and g++ by hand: one signature.
    let by_tool: Vec<(String, String)> = conn
        .prepare("SELECT d.signature, c.command FROM diagnostics d JOIN command_runs c ON c.id = d.command_run_id WHERE d.severity = 'error' ORDER BY d.seq")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    for compiler in ["cmake --build", "clang++", "g++ -std"] {
        assert!(
            by_tool
                .iter()
                .any(|(s, c)| s == "undeclared-identifier:offset" && c.contains(compiler)),
            "{compiler}: {by_tool:#?}"
        );
    }
    let diagnosed = outputs(&conn, "cpp.diagnose");
    assert!(
        signatures(&diagnosed[0]).contains(&"undeclared-identifier:offset".to_string()),
        "{diagnosed:#?}"
    );

    let tests = outputs(&conn, "cpp.test");
    assert_eq!(tests.len(), 2, "{tests:#?}");
    assert_eq!(
        (
            tests[0]["passed"].clone(),
            tests[0]["tests"].clone(),
            tests[0]["failures"].clone()
        ),
        (false.into(), 2.into(), 1.into()),
        "{:#?}",
        tests[0]
    );
    let failed = &tests[0]["failed"][0];
    assert_eq!(failed["name"], "Sum.Seeded", "{failed:#}");
    assert!(
        failed["file"]
            .as_str()
            .unwrap_or("")
            .ends_with("tests/sum_test.cpp"),
        "{failed:#}"
    );
    assert_eq!(failed["line"], 8, "{failed:#}");
    assert_eq!(
        (tests[1]["passed"].clone(), tests[1]["tests"].clone()),
        (true.into(), 2.into()),
        "{:#?}",
        tests[1]
    );

    let analyses = outputs(&conn, "cpp.analyze");
    assert_eq!(analyses[0]["passed"], false, "{:#?}", analyses[0]);
    let defect = analyses[0]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["signature"] == "cppcheck:arrayIndexOutOfBounds")
        .unwrap_or_else(|| panic!("{:#?}", analyses[0]));
    assert_eq!(
        (defect["file"].as_str(), defect["line"].as_u64()),
        (Some("src/buffer.cpp"), Some(6))
    );
    assert_eq!(analyses[1]["passed"], true, "{:#?}", analyses[1]);

    // Each tool's logs are kept under what they are (builds/, tests/).
    for (v, dir) in [(&builds[1], "builds/"), (&tests[1], "tests/")] {
        let id = v["command_run_id"].as_str().unwrap();
        let paths: Vec<String> = conn
            .prepare("SELECT path FROM artifacts WHERE command_run_id = ?1")
            .unwrap()
            .query_map([id], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert!(
            !paths.is_empty() && paths.iter().all(|p| p.starts_with(dir)),
            "{dir}: {paths:?}"
        );
    }

    let clangd = outputs(&conn, "cpp.intelligence");
    assert_eq!(clangd[0]["compile_flags_found"], true, "{:#?}", clangd[0]);

    // airsd's evidence of the work: the passing build, the tests, the analysis.
    let evidence: Vec<String> = conn
        .prepare("SELECT evidence_type FROM evidence_refs WHERE task_id = 'S' ORDER BY seq")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    for kind in [
        "build_pass",
        "build_log",
        "test_output",
        "test_pass",
        "static_analysis",
    ] {
        assert!(evidence.iter().any(|e| e == kind), "{kind}: {evidence:?}");
    }
    let _ = air(&p, &["daemon", "stop"]);

    // With Ninja gone from PATH, the build directory Ninja made is set aside and the
    // project is configured and built with Make.
    let shadow = tempfile::tempdir().unwrap();
    for dir in std::env::split_paths(&std::env::var_os("PATH").unwrap()) {
        for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let name = e.file_name();
            if name == "ninja" || shadow.path().join(&name).exists() {
                continue;
            }
            let _ = std::os::unix::fs::symlink(e.path(), shadow.path().join(&name));
        }
    }
    std::fs::write(
        p.root.join("make.md"),
        "# Again\n\n## Task M: build without Ninja\n\nair-test: executor=complete\nair-test-call: cpp.build {}\n",
    )
    .unwrap();
    let out = crate::run::command(&p, &["run", "--plan", "make.md"])
        .env("PATH", shadow.path())
        .output()
        .unwrap();
    expect(&out, 0);
    let session = newest_session(&p);
    let builds = outputs(&db(&p, &session), "cpp.build");
    assert_eq!(builds[0]["passed"], true, "{:#?}", builds[0]);
    assert_eq!(builds[0]["generator"], "Unix Makefiles", "{:#?}", builds[0]);
    let repaired = builds[0]["repaired"].to_string();
    assert!(
        repaired.contains("made with Ninja, which is not installed here"),
        "{repaired}"
    );
    let _ = air(&p, &["daemon", "stop"]);
}

/// The shipped C++ example replays with no key: the real agents, airsd's C and C++
/// tools and the real toolchain carry its plan out, each task completed on the
/// evidence airsd recorded.
#[test]
fn the_shipped_cpp_recording_replays_with_no_key() {
    let p = Project::new();
    air_tests::copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/intstats"),
        &p.root,
    );
    let out = crate::run::real_worker(&p, &["run", "--plan", "plan.md", "--replay", "recording"])
        .output()
        .unwrap();
    expect(&out, 0);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(": completed in") && stdout.contains(" · 2 tasks"),
        "{stdout}"
    );
    // The work is there: the tests CTest runs pass.
    let ctest = std::process::Command::new("ctest")
        .args(["--test-dir", "build"])
        .current_dir(&p.root)
        .output()
        .unwrap();
    assert!(
        ctest.status.success(),
        "{}",
        String::from_utf8_lossy(&ctest.stdout)
    );
    let t2 = crate::run::reported_evidence(&p, "T2");
    for kind in [
        "cmake --build build` built with exit 0",
        "test_pass: `ctest --test-dir build",
        "ran 5 test(s), none failed",
        "static_analysis: `cppcheck",
    ] {
        assert!(t2.contains(kind), "{kind}: {t2}");
    }
    let _ = air(&p, &["daemon", "stop"]);
}

/// A C project with cppcheck findings already in the file a task changes: the task
/// completes when its change adds none (the old ones are counted as there before),
/// and never when it adds one, even one on a line it did not make (the same analysis
/// of the project as it was tells). Its tests are its Makefile's, run by cpp_test.
#[test]
fn findings_that_were_there_before_the_change_do_not_hold_a_task_back() {
    for tool in ["cc", "make", "cppcheck", "git"] {
        assert!(
            std::process::Command::new("bash")
                .args(["-c", &format!("command -v {tool}")])
                .output()
                .is_ok_and(|o| o.status.success()),
            "{tool} is missing: tests/run installs the C and C++ toolchain"
        );
    }
    let p = Project::new();
    let old = "#include <stdio.h>\n\nint old_bug(void)\n{\n    int a[2];\n    a[2] = 1;\n    return a[0];\n}\n\nint deref(const int *p)\n{\n    return *p + 1;\n}\n\nint add(int a, int b)\n{\n    return a + b;\n}\n\nint main(void)\n{\n    int x = 1;\n    printf(\"%d %d\\n\", add(2, 3), deref(&x));\n    return 0;\n}\n";
    std::fs::write(p.root.join("main.c"), old).unwrap();
    std::fs::write(
        p.root.join("Makefile"),
        "prog: main.c\n\tcc -o prog main.c\n\ntest: prog\n\t@./prog > /dev/null && printf 'ok 1 - add\\n# tests 1\\n# pass 1\\n# fail 0\\n'\n\n.PHONY: test\n",
    )
    .unwrap();
    std::fs::write(p.root.join(".gitignore"), "prog\nplan.md\n").unwrap();
    let git = |args: &str| {
        let out = std::process::Command::new("bash")
            .args(["-c", &format!("git {args}")])
            .current_dir(&p.root)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args}: {out:?}");
    };
    git("init -q");
    git("add -A");
    git("-c user.email=t@t -c user.name=t commit -qm start");
    let clean = old.replace(
        "int main(void)",
        "int sub(int a, int b)\n{\n    return a - b;\n}\n\nint main(void)",
    );
    // The change's one line is sound by itself; the finding it causes is in a
    // function it did not touch (a null pointer that function now receives).
    let defect = clean.replace(
        "    return 0;\n}\n",
        "    printf(\"%d\\n\", deref(NULL));\n    return 0;\n}\n",
    );
    let untouched_line = defect
        .lines()
        .position(|l| l.contains("return *p + 1;"))
        .map(|i| i + 1)
        .unwrap();
    // The tests through cpp_test: no CTest here, so the Makefile's test target.
    let steps = "air-test-call: shell.run {\"command\": \"make\"}\nair-test-call: cpp.test {}\nair-test-call: cpp.analyze {\"files\": [\"main.c\"]}\n";
    let plan = format!(
        "# Old findings\n\n## Task T1: add sub\n\n- category: logic\n\nair-test: executor=claim\n{}{steps}air-test-claim-1: {{}}\n\n## Task T2: add a function with a bug\n\n- category: logic\n- depends: T1\n\nair-test: executor=claim architecture_designer=stop\n{}{steps}air-test-claim-1: {{}}\n",
        write_call("main.c", &clean),
        write_call("main.c", &defect),
    );
    std::fs::write(p.root.join("plan.md"), plan).unwrap();
    let out = air(&p, &["run", "--plan", "plan.md", "--json"]);
    let session = newest_session(&p);
    let conn = db(&p, &session);
    let status = |id: &str| -> String {
        conn.query_row("SELECT status FROM tasks WHERE id = ?1", [id], |r| r.get(0))
            .unwrap()
    };
    let analyses = outputs(&conn, "cpp.analyze");
    assert_eq!(
        status("T1"),
        "completed",
        "{:#?}\n{analyses:#?}",
        crate::evidence::verdicts(&p, &session)
    );
    let first = &analyses[0];
    assert_eq!(first["passed"], true, "{first:#}");
    assert_eq!(first["new_findings"], 0, "{first:#}");
    assert!(first["findings_before"].as_u64() >= Some(1), "{first:#}");
    let tests = outputs(&conn, "cpp.test");
    assert_eq!(
        (
            tests[0]["runner"].as_str(),
            tests[0]["tests"].as_u64(),
            tests[0]["passed"].as_bool()
        ),
        (Some("make"), Some(1), Some(true)),
        "{:#}",
        tests[0]
    );
    assert_eq!(status("T2"), "blocked", "{analyses:#?}");
    let second = &analyses[1];
    assert_eq!(second["passed"], false, "{second:#}");
    assert!(second["new_findings"].as_u64() >= Some(1), "{second:#}");
    let fresh = second["findings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["line"] == untouched_line)
        .unwrap_or_else(|| panic!("{second:#}"));
    assert_eq!(
        (&fresh["file"], &fresh["new"]),
        (&serde_json::json!("main.c"), &serde_json::json!(true)),
        "{second:#}"
    );
    // The old one stays marked as there before.
    assert!(
        second["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["line"] == 6 && f["new"] == false),
        "{second:#}"
    );
    expect(&out, 3);
}
