//! Hooks through the real binaries, the real worker and the loopback provider: a
//! project's `PreToolUse` hook that refuses `rm -rf` is not run while nobody trusted
//! it; once trusted it refuses the call and the model reads why; changed, it is
//! untrusted again.

use air_tests::mock_provider::{text_events, Exchange, MockProvider, Reply};
use serde_json::{json, Value};

use crate::agents::{call, key, plain};
use crate::conversation::{chat_ok, expect};
use crate::daemon::Project;

const HOOK: &str = "PreToolUse:\n  - matcher: Bash\n    hooks:\n      - type: command\n        command: \"if grep -q 'rm -rf'; then echo 'rm -rf is not allowed here: use git clean' >&2; exit 2; fi\"\n        timeout: 20\n";

fn run(p: &Project, mock: &MockProvider, rt: &tokio::runtime::Runtime) -> Vec<Value> {
    let env: Vec<(&str, String)> = key(mock).into_iter().collect();
    let args = [
        "-p",
        "remove the build directory",
        "--direct",
        "--permission-mode",
        "bypass_permissions",
        "--json",
    ];
    let out = chat_ok(rt, p, &args, &env);
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn hook_runs(events: &[Value]) -> Vec<&Value> {
    events
        .iter()
        .filter(|e| e["type"] == "hook.completed")
        .map(|e| &e["payload"])
        .collect()
}

#[test]
fn a_trusted_pre_tool_use_hook_refuses_rm_rf_and_the_model_reads_why() {
    let p = Project::new();
    let hooks = p.root.join(".air/shared/hooks.yaml");
    std::fs::write(&hooks, HOOK).unwrap();
    let build = p.root.join("build");
    std::fs::create_dir_all(&build).unwrap();
    let rt = crate::provider_rt();
    let mock = rt.block_on(MockProvider::start(vec![
        plain(call("c1", "shell_run", json!({"command": "rm -rf build"}))),
        plain(Reply::Events(text_events("Removed build."))),
        plain(call("c2", "shell_run", json!({"command": "rm -rf build"}))),
        Exchange {
            request: None,
            expect: expect(&["rm -rf is not allowed here: use git clean"], &[]),
            reply: Reply::Events(text_events("The project's hook refused it.")),
        },
    ]));

    // Nobody trusted the project's hook: it is passed over, and the command runs.
    let listed = crate::run::command(&p, &["hooks"]).output().unwrap();
    assert!(
        String::from_utf8_lossy(&listed.stdout).contains("UNTRUSTED"),
        "{}",
        String::from_utf8_lossy(&listed.stderr)
    );
    let events = run(&p, &mock, &rt);
    let runs = hook_runs(&events);
    assert_eq!(runs.len(), 1, "{events:?}");
    assert!(runs[0]["skipped"]
        .as_str()
        .unwrap()
        .contains("air hooks trust"));
    assert!(!build.exists());

    // Trusted as it is: it refuses the call, and the model is told why.
    let trusted = crate::run::command(&p, &["hooks", "trust", "--yes"])
        .output()
        .unwrap();
    assert!(trusted.status.success());
    assert!(String::from_utf8_lossy(&trusted.stdout).contains("rm -rf"));
    std::fs::create_dir_all(&build).unwrap();
    let events = run(&p, &mock, &rt);
    let runs = hook_runs(&events);
    assert_eq!(runs.len(), 1, "{events:?}");
    assert_eq!(runs[0]["blocked"], true);
    assert_eq!(runs[0]["exit_code"], 2);
    assert!(build.exists(), "the hook refused the command");
    assert!(mock.mismatches().is_empty(), "{:?}", mock.mismatches());

    // Changed, it is not trusted until trusted again.
    std::fs::write(&hooks, HOOK.replace("timeout: 20", "timeout: 30")).unwrap();
    let listed = crate::run::command(&p, &["hooks", "list"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&listed.stdout).contains("UNTRUSTED"));
}

/// The person's own `UserPromptSubmit` hook (trusted as written) refuses a message
/// before it is recorded or answered, the first of a conversation too: `air chat`
/// fails with the hook's reason, and no model is asked.
#[test]
fn a_user_prompt_submit_hook_refuses_a_message_before_any_model_sees_it() {
    let p = Project::new();
    let home = p.dir.path().join("air-home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(
        home.join("hooks.yaml"),
        "UserPromptSubmit:\n  - hooks:\n      - type: command\n        command: \"if grep -qi password; then echo 'never paste a password here' >&2; exit 2; fi\"\n",
    )
    .unwrap();
    let rt = crate::provider_rt();
    let mock = rt.block_on(MockProvider::start(vec![plain(Reply::Events(
        text_events("Fine."),
    ))]));
    let env: Vec<(&str, String)> = key(&mock).into_iter().collect();
    let refused = rt
        .block_on(async {
            tokio::process::Command::from(crate::conversation::chat_command(
                &p,
                &["-p", "my password is hunter2", "--direct"],
                &env,
            ))
            .output()
            .await
        })
        .unwrap();
    assert_ne!(refused.status.code(), Some(0));
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        said.contains("never paste a password here") && said.contains("UserPromptSubmit"),
        "{said}"
    );
    assert!(mock.received().is_empty(), "no model saw it");
    // Another message goes through.
    let out = chat_ok(&rt, &p, &["-p", "say fine", "--direct"], &env);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "Fine.\n");
}

/// A `Stop` hook that refuses the Main Agent's stop keeps it going: its reason is the
/// message the next turn answers, and `air chat` prints both answers. It refuses
/// once here (a file it leaves says so), and the conversation ends after.
#[test]
fn a_stop_hook_keeps_the_main_agent_going() {
    let p = Project::new();
    std::fs::write(p.root.join("README.md"), "A greeting tool.\n").unwrap();
    let home = p.dir.path().join("air-home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(
        home.join("hooks.yaml"),
        "Stop:\n  - hooks:\n      - type: command\n        command: \"if [ ! -f .stopped-once ]; then touch .stopped-once; echo 'say whether the tests pass too' >&2; exit 2; fi\"\n",
    )
    .unwrap();
    let rt = crate::provider_rt();
    let mut exchanges = crate::conversation::readme_question("It is a greeting tool.");
    exchanges.extend([
        Exchange {
            request: None,
            expect: expect(&["say whether the tests pass too"], &[]),
            reply: call(
                "m3",
                "classify",
                json!({"intent": "chat", "reason": "the hook asks"}),
            ),
        },
        plain(Reply::Events(text_events("It has no tests yet."))),
    ]);
    let mock = rt.block_on(MockProvider::start(exchanges));
    let env: Vec<(&str, String)> = key(&mock).into_iter().collect();
    let out = chat_ok(&rt, &p, &["-p", "What is this project?"], &env);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "It is a greeting tool.\n\nIt has no tests yet.\n"
    );
    assert!(mock.mismatches().is_empty(), "{:?}", mock.mismatches());
    assert!(p.root.join(".stopped-once").exists());
}

/// A trusted guard whose script changed since (as an agent could change it) is not
/// quietly switched off: it refuses every call until a person trusts it again.
#[test]
fn a_guard_whose_script_changed_since_it_was_trusted_refuses_until_trusted_again() {
    let p = Project::new();
    std::fs::create_dir_all(p.root.join("scripts")).unwrap();
    std::fs::write(
        p.root.join("scripts/guard.sh"),
        "if grep -q 'rm -rf'; then echo 'no rm -rf' >&2; exit 2; fi\n",
    )
    .unwrap();
    std::fs::write(
        p.root.join(".air/shared/hooks.yaml"),
        "PreToolUse:\n  - matcher: Bash\n    hooks:\n      - type: command\n        command: bash scripts/guard.sh\n",
    )
    .unwrap();
    let trusted = crate::run::command(&p, &["hooks", "trust", "--yes"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&trusted.stdout).contains("scripts/guard.sh"));
    // Switched off by an edit of its script.
    std::fs::write(p.root.join("scripts/guard.sh"), "exit 0\n").unwrap();
    let rt = crate::provider_rt();
    let mock = rt.block_on(MockProvider::start(vec![
        plain(call("c1", "shell_run", json!({"command": "echo hi"}))),
        Exchange {
            request: None,
            expect: expect(&["changed since a person trusted it"], &[]),
            reply: Reply::Events(text_events("The guard refused it.")),
        },
    ]));
    let events = run(&p, &mock, &rt);
    let runs = hook_runs(&events);
    assert_eq!(runs.len(), 1, "{events:?}");
    assert_eq!(runs[0]["blocked"], true);
    assert!(mock.mismatches().is_empty(), "{:?}", mock.mismatches());
}

/// A `TaskCompleted` hook that refuses keeps the task from completing, beside the
/// evidence gate: with no retry left, the task ends blocked with the hook's reason,
/// and the run says so.
#[test]
fn a_task_completed_hook_that_fails_keeps_the_task_from_completing() {
    let p = Project::new();
    let home = p.dir.path().join("air-home");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(
        home.join("hooks.yaml"),
        format!(
            "TaskCompleted:\n  - hooks:\n      - type: command\n        command: \"echo 'CHANGELOG.md does not mention it' >&2; exit 2\"\n{}",
            ["SessionStart", "TaskCreated", "SubagentStop", "SessionEnd"]
                .iter()
                .map(|e| format!("{e}:\n  - hooks:\n      - type: command\n        command: echo {e} >> hooks.log\n"))
                .collect::<String>()
        ),
    )
    .unwrap();
    std::fs::write(
        p.root.join("plan.md"),
        "## Task A: write a greeting\n\n- category: docs\n- retry_budget: 0\n\nCreate hello.txt saying hello.\n\nAcceptance criteria:\n- hello.txt says hello\n",
    )
    .unwrap();
    let rt = crate::provider_rt();
    let mock = rt.block_on(MockProvider::start(crate::conversation::hello_work(
        crate::agents::any(),
        call(
            "e1",
            "fs_write",
            json!({"path": "hello.txt", "content": "hello\n"}),
        ),
        "Wrote hello.txt.",
    )));
    let env: Vec<(&str, String)> = key(&mock).into_iter().collect();
    let out = rt
        .block_on(async {
            let mut c = crate::run::real_worker(&p, &["run", "--plan", "plan.md"]);
            c.envs(env.iter().map(|(k, v)| (*k, v.as_str())));
            tokio::process::Command::from(c).output().await
        })
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(3),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("TaskCompleted hook did not let the task complete")
            && stdout.contains("CHANGELOG.md does not mention it"),
        "{stdout}"
    );
    assert!(mock.mismatches().is_empty(), "{:?}", mock.mismatches());
    // The events that only tell ran beside the scheduler (the last may end after
    // the run).
    let log = p.root.join("hooks.log");
    let end = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let told = std::fs::read_to_string(&log).unwrap_or_default();
        if ["SessionStart", "TaskCreated", "SubagentStop", "SessionEnd"]
            .iter()
            .all(|e| told.lines().any(|l| l == *e))
        {
            break;
        }
        assert!(std::time::Instant::now() < end, "hooks.log: {told}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}
