//! The Main Agent's proposal of the project's profile through the real binaries (`air`,
//! `airsd __propose`, `air-worker`) and the mock Anthropic provider: `air init` scans,
//! the model is shown the scan, detection's profile and the build and CI files, and
//! its proposal, read loosely (a field it gets wrong is unknown and filled from
//! detection, a field the profile lacks is passed over), is kept as `proposed`. A
//! correction confirms it and says what may follow from it; a confirmed profile is
//! never sent to the model again; a model that answers in plain JSON is taken at its
//! word; without a model the profile is what detection says.

use std::path::Path;
use std::process::{Command, Output};

use air_tests::mock_provider::{
    text_events, tool_use_events, Exchange, Expect, MockProvider, Reply,
};
use air_tests::{bin, git};
use serde_json::{json, Value};

/// `air ARGS` in `root`, with a home of its own and the mock's key (none when `url` is
/// `None`).
async fn air(root: &Path, home: &Path, url: Option<&str>, args: &[&str]) -> Output {
    let mut c = Command::new(bin("air"));
    c.args(args)
        .current_dir(root)
        .env("HOME", home)
        .env_remove("AIR_HOME")
        .env_remove("AIR_MODEL")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("ANTHROPIC_BASE_URL")
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENROUTER_API_KEY")
        .env_remove("AIR_WORKER")
        .env_remove("AIR_AIRSD")
        .env_remove("AIR_RECORD")
        .stdin(std::process::Stdio::null());
    if let Some(url) = url {
        c.env("ANTHROPIC_API_KEY", "sk-test")
            .env("ANTHROPIC_BASE_URL", url);
    }
    let out = tokio::task::spawn_blocking(move || c.output().unwrap())
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "air {args:?}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn profile(root: &Path) -> Value {
    let project: Value =
        serde_json::from_slice(&std::fs::read(root.join(".air/shared/project.json")).unwrap())
            .unwrap();
    project["profile"].clone()
}

#[test]
fn the_main_agent_proposes_the_profile_from_the_scan_and_the_user_corrects_it() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap().join("demo");
    let home = dir.path().join("home");
    for d in ["src", "tests", ".github/workflows", "third_party/zlib"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(
        root.join("CMakeLists.txt"),
        "cmake_minimum_required(VERSION 3.21)\nproject(demo CXX)\nadd_executable(demo src/main.cpp)\nenable_testing()\n",
    )
    .unwrap();
    std::fs::write(
        root.join(".github/workflows/ci.yml"),
        "jobs:\n  build:\n    steps:\n      - run: cmake --preset ci && cmake --build --preset ci\n      - run: ctest --preset ci\n",
    )
    .unwrap();
    for f in ["src/main.cpp", "src/lib.cpp", "tests/lib_test.cpp"] {
        std::fs::write(root.join(f), "int f() { return 1; }\n").unwrap();
    }
    std::fs::write(root.join("third_party/zlib/zlib.c"), "int z;\n").unwrap();
    git(&root, &["init", "-q"]);

    crate::rt().block_on(async {
        let mock = MockProvider::start(vec![
            Exchange {
                request: None,
                expect: Expect {
                    contains: vec![
                        "You are the Main Agent of air, a multi-agent coding runtime, meeting a project".into(),
                        "Propose the profile of this project.".into(),
                        // The scan, detection's profile and the files' text.
                        "Files by extension: .cpp 3".into(),
                        "third_party/".into(),
                        "languages    C++".into(),
                        "### CMakeLists.txt".into(),
                        "project(demo CXX)".into(),
                        "### .github/workflows/ci.yml".into(),
                        "ctest --preset ci".into(),
                    ],
                    tools: vec!["submit_result".into()],
                },
                reply: Reply::Events(tool_use_events(
                    "toolu_1",
                    "submit_result",
                    &json!({
                        "languages": ["C++"],
                        "build": ["cmake --preset ci", "cmake --build --preset ci"],
                        "test": "ctest --preset ci",
                        "source_dirs": [{"dir": "src"}],
                        "conventions": ["CI: GitHub Actions (.github/workflows/ci.yml)"],
                        "owner": "someone"
                    }),
                )),
            },
            // After `air profile reset`: a model that answers in plain JSON.
            Exchange {
                request: None,
                expect: Expect {
                    contains: vec!["Propose the profile of this project.".into()],
                    tools: vec![],
                },
                reply: Reply::Events(text_events(
                    "Here it is:\n```json\n{\"languages\": [\"C++\"], \"test\": [\"ctest --preset ci\"]}\n```",
                )),
            },
            // A model that tells nothing of the profile.
            Exchange {
                request: None,
                expect: Expect {
                    contains: vec!["Propose the profile of this project.".into()],
                    tools: vec!["submit_result".into()],
                },
                reply: Reply::Events(tool_use_events(
                    "toolu_3",
                    "submit_result",
                    &json!({"status": "failed", "summary": "cannot tell"}),
                )),
            },
        ])
        .await;
        let url = mock.url.clone();

        // air init: scanned, proposed, shown; not a terminal, so not asked.
        let out = air(&root, &home, Some(&url), &["init"]).await;
        let said = stdout(&out);
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(said.contains("scanned 7 files in "), "{said}");
        assert!(err.contains("to propose the project's profile (Ctrl-C stops it"), "{err}");
        assert!(said.contains("proposed by anthropic/"), "{said}");
        assert!(said.contains("50 tokens in, 20 out"), "{said}");
        assert!(
            said.contains("note: `owner` is not a field of the profile: passed over"),
            "{said}"
        );
        assert!(
            said.contains("note: `source_dirs[0]` is an object, not text: passed over"),
            "{said}"
        );
        assert!(
            said.contains("left unknown by the model, taken from detection: source_dirs, test_dirs"),
            "{said}"
        );
        assert!(said.contains("project profile (proposed, not confirmed):"), "{said}");
        assert!(
            said.contains("build        cmake --preset ci; cmake --build --preset ci"),
            "{said}"
        );
        assert!(said.contains("`air profile confirm` says it is right"), "{said}");
        assert_eq!(mock.mismatches(), Vec::<String>::new());
        assert_eq!(mock.received().len(), 1);
        let p = profile(&root);
        assert_eq!(p["origin"], "proposed");
        assert_eq!(p["test"], json!(["ctest --preset ci"]));
        // air init once more does not ask again.
        let out = air(&root, &home, Some(&url), &["init"]).await;
        assert!(!stdout(&out).contains("proposed by"), "{}", stdout(&out));
        assert_eq!(mock.received().len(), 1);
        assert_eq!(profile(&root), p);
        assert_eq!(p["source_dirs"], json!(["src"]));
        assert_eq!(p["test_dirs"], json!(["tests"]));

        // A correction confirms the profile and says what may follow from it.
        let out = air(&root, &home, Some(&url), &["profile", "set", "languages", "C++", "C"]).await;
        let said = stdout(&out);
        assert!(said.contains("project profile (confirmed):"), "{said}");
        assert!(
            said.contains("this may change what follows from `languages`: check build, test, source_dirs, test_dirs, conventions"),
            "{said}"
        );
        let p = profile(&root);
        assert_eq!((p["origin"].as_str(), p["languages"].clone()), (Some("confirmed"), json!(["C++", "C"])));
        assert_eq!(p["build"], json!(["cmake --preset ci", "cmake --build --preset ci"]));

        // A confirmed profile is kept: the model is not asked.
        let out = air(&root, &home, Some(&url), &["profile", "scan"]).await;
        assert!(stdout(&out).contains("the profile you confirmed is kept"), "{}", stdout(&out));
        assert_eq!(mock.received().len(), 1);

        // Made again: a plain JSON answer is taken; what it leaves out, detection fills.
        let out = air(&root, &home, Some(&url), &["profile", "reset"]).await;
        let said = stdout(&out);
        assert!(said.contains("project profile (proposed, not confirmed):"), "{said}");
        assert!(said.contains("taken from detection: build, source_dirs, test_dirs"), "{said}");
        assert_eq!(mock.mismatches(), Vec::<String>::new());
        assert_eq!(mock.received().len(), 2);
        let p = profile(&root);
        assert_eq!(p["test"], json!(["ctest --preset ci"]));
        assert_eq!(
            p["build"],
            json!(["cmake -S . -B build && cmake --build build"])
        );

        // Without a model: what detection says, and why no model was asked.
        let out = air(&root, &home, None, &["profile", "reset"]).await;
        let said = stdout(&out);
        assert!(said.contains("no model proposes the profile: no LLM provider is configured"), "{said}");
        assert!(said.contains("project profile (detected, not confirmed):"), "{said}");
        assert_eq!(profile(&root)["origin"], "detected");
        // A proposal of nothing is no proposal: the profile stays as it was.
        let out = air(&root, &home, Some(&url), &["profile", "scan"]).await;
        let said = stdout(&out);
        assert!(
            said.contains("the Main Agent proposed nothing (the model proposed no field of the profile): the profile stays as it was"),
            "{said}"
        );
        assert!(said.contains("note: `status` is not a field of the profile"), "{said}");
        assert_eq!(profile(&root)["origin"], "detected");
        assert_eq!(mock.received().len(), 3);
        // --no-model asks no model even with a key.
        let out = air(&root, &home, Some(&url), &["profile", "reset", "--no-model"]).await;
        assert!(!stdout(&out).contains("propose"), "{}", stdout(&out));
        assert_eq!(mock.received().len(), 3);
    });
}

/// The real thing: a live model (whichever key the environment has) proposes the
/// profile of a small CMake project whose CI file says how it is built and tested.
/// Ignored — reported as skipped — unless `tests/run` finds a key.
#[test]
#[ignore = "talks to a live LLM provider: tests/run runs it when ANTHROPIC_API_KEY, OPENAI_API_KEY or OPENROUTER_API_KEY is set"]
fn live_provider_proposes_the_profile_of_a_cmake_project() {
    let env = crate::agents::live_env();
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap().join("demo");
    let home = dir.path().join("home");
    for d in ["src", "test", ".github/workflows"] {
        std::fs::create_dir_all(root.join(d)).unwrap();
    }
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(
        root.join("CMakeLists.txt"),
        "cmake_minimum_required(VERSION 3.21)\nproject(demo CXX)\nadd_library(demo src/demo.cpp)\nenable_testing()\nadd_executable(demo_test test/demo_test.cpp)\ntarget_link_libraries(demo_test demo)\nadd_test(NAME demo_test COMMAND demo_test)\n",
    )
    .unwrap();
    std::fs::write(
        root.join(".github/workflows/ci.yml"),
        "on: push\njobs:\n  build:\n    runs-on: ubuntu-latest\n    steps:\n      - uses: actions/checkout@v4\n      - run: cmake -S . -B out -G Ninja\n      - run: cmake --build out\n      - run: ctest --test-dir out --output-on-failure\n",
    )
    .unwrap();
    std::fs::write(root.join("src/demo.cpp"), "int demo() { return 1; }\n").unwrap();
    std::fs::write(
        root.join("test/demo_test.cpp"),
        "int main() { return 0; }\n",
    )
    .unwrap();
    let mut c = Command::new(bin("air"));
    c.args(["init"])
        .current_dir(&root)
        .env("HOME", &home)
        .stdin(std::process::Stdio::null())
        .envs(env.iter().map(|(k, v)| (*k, v)));
    let out = c.output().unwrap();
    let said = stdout(&out);
    assert!(
        out.status.success(),
        "{said}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        said.contains("proposed by "),
        "{said}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let p = profile(&root);
    assert_eq!(p["origin"], "proposed", "{p:#}");
    let all = |field: &str| -> String {
        p[field]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert!(all("languages").contains("C++"), "{p:#}");
    // The CI file's build directory, not detection's generic one.
    assert!(all("build").contains("out"), "{p:#}");
    assert!(all("test").contains("ctest"), "{p:#}");
}
