#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Shared helpers of air's cross-crate tests: locating the workspace's binaries, and
//! building realistic event streams.

use std::path::PathBuf;

pub mod mock_provider;

use air_proto::event::{EventSource, RuntimeEvent};
use air_proto::payload as p;
use air_proto::task::{
    Constraints, ContextRefs, ModelPolicy, OutputContract, TaskDependency, TaskScope, TaskSpec,
    TaskType, Verification,
};
use serde_json::json;

/// The path of a binary built from this workspace (`air`, `airsd`, `air-worker`, …).
/// Runs git in `dir` with a neutral identity and none of the user's global
/// configuration, and checks that it succeeded (showing its stderr when not).
pub fn git(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    let out = std::process::Command::new("git")
        .args([
            "-c",
            "user.name=air",
            "-c",
            "user.email=air@example.invalid",
        ])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .unwrap_or_else(|e| panic!("git {args:?}: {e}"));
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Copies a directory tree (regular files and directories).
pub fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap_or_else(|e| panic!("{}: {e}", to.display()));
    for e in std::fs::read_dir(from).into_iter().flatten().flatten() {
        let target = to.join(e.file_name());
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target)
                .unwrap_or_else(|err| panic!("{}: {err}", e.path().display()));
        }
    }
}

pub fn bin(name: &str) -> PathBuf {
    // Test executables live in target/<profile>/deps; binaries one level up.
    let exe = std::env::current_exe().unwrap_or_default();
    let mut dir = exe.parent().map(PathBuf::from).unwrap_or_default();
    if dir.ends_with("deps") {
        dir.pop();
    }
    let path = dir.join(name);
    assert!(
        path.exists(),
        "binary {} not built (run the tests through cargo)",
        path.display()
    );
    path
}

/// The path of a release binary of this workspace, for the benchmarks.
pub fn release_bin(name: &str) -> PathBuf {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../target/release")
        .join(name);
    assert!(
        path.exists(),
        "{} missing: run `cargo build --release --workspace` first",
        path.display()
    );
    path
}

/// `air ARGS` (the release build) in `root` with `home` as its HOME, its agents
/// (the release `air-worker`) answered by the mock Anthropic provider at `url`, and
/// no other provider's key: how the benchmarks run a plan.
pub fn release_air(
    root: &std::path::Path,
    home: &std::path::Path,
    url: &str,
    args: &[&str],
) -> std::process::Command {
    let mut c = std::process::Command::new(release_bin("air"));
    c.args(args)
        .current_dir(root)
        .env("HOME", home)
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENROUTER_API_KEY")
        .env("ANTHROPIC_API_KEY", "sk-bench")
        .env("ANTHROPIC_BASE_URL", url)
        .env("AIR_WORKER", release_bin("air-worker"));
    c
}

/// A fresh project (`air init --no-model`, its own `home/`) whose agents the mock
/// provider at `url` answers, with the release binaries: the directory (the project's
/// root) and `air ARGS` in it.
pub fn release_project(
    url: &str,
) -> (tempfile::TempDir, impl Fn(&[&str]) -> std::process::Command) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let (root, url) = (dir.path().to_path_buf(), url.to_string());
    let home = root.join("home");
    std::fs::create_dir_all(&home).expect("the project's home");
    let air = move |args: &[&str]| release_air(&root, &home, &url, args);
    let init = air(&["init", "--no-model"])
        .output()
        .expect("air init runs");
    assert!(
        init.status.success(),
        "{}",
        String::from_utf8_lossy(&init.stderr)
    );
    (dir, air)
}

/// A minimal valid TaskSpec.
pub fn task_spec(id: &str, deps: &[&str]) -> TaskSpec {
    TaskSpec {
        id: id.to_string(),
        task_type: TaskType::Execute,
        title: format!("task {id}"),
        description: "generated".into(),
        acceptance_criteria: vec!["it works".into()],
        category: None,
        phase: None,
        scope: TaskScope::default(),
        contracts: Default::default(),
        dependencies: deps
            .iter()
            .map(|d| TaskDependency {
                depends_on_task_id: d.to_string(),
                dependency_type: air_proto::task::DependencyType::Hard,
                reason: None,
                source: None,
            })
            .collect(),
        verification: Verification {
            commands: None,
            required: false,
            fallback_allowed: true,
            evidence_types: None,
            declared: None,
        },
        constraints: Constraints {
            max_turns: 10,
            soft_timeout_ms: 60_000,
            hard_timeout_ms: 120_000,
            retry_budget: 2,
            model_policy: ModelPolicy::AgentSelect,
            model_id: None,
        },
        context_refs: ContextRefs::default(),
        output_contract: OutputContract::ExecutorResult,
    }
}

/// Builds an event with a typed payload.
pub fn event<P: serde::Serialize>(session: &str, ty: &str, payload: &P) -> RuntimeEvent {
    RuntimeEvent::typed(ty, session, EventSource::scheduler(), payload).expect("payload serializes")
}

/// The events of one unit of work: a task, an agent on it, a tool call with a command,
/// and completion. `n` makes the ids unique.
pub fn work_unit(session: &str, n: u64) -> Vec<RuntimeEvent> {
    let task = format!("T{n}");
    let agent = format!("A{n}");
    let tool = format!("R{n}");
    let cmd = format!("C{n}");
    vec![
        event(
            session,
            "task.created",
            &p::TaskCreated {
                task: task_spec(&task, &[]),
            },
        ),
        event(
            session,
            "agent.started",
            &p::AgentStarted {
                agent_id: agent.clone(),
                agent_type: air_proto::event::AgentType::Executor,
                task_id: Some(task.clone()),
                pid: Some(4242),
                model: None,
                context: None,
            },
        ),
        event(
            session,
            "task.started",
            &p::TaskStatusChanged {
                task_id: task.clone(),
                agent_id: Some(agent.clone()),
                ..Default::default()
            },
        ),
        event(
            session,
            "tool.started",
            &p::ToolStarted {
                tool_run_id: tool.clone(),
                tool: "shell.run".into(),
                input: json!({"command": "make test"}),
                agent_id: Some(agent.clone()),
                task_id: Some(task.clone()),
                origin_message_id: None,
            },
        ),
        event(
            session,
            "command.started",
            &p::CommandStarted {
                command_run_id: cmd.clone(),
                command: "make test".into(),
                cwd: None,
                tool_run_id: Some(tool.clone()),
                agent_id: Some(agent.clone()),
                task_id: Some(task.clone()),
                origin_message_id: None,
            },
        ),
        event(
            session,
            "command.completed",
            &p::CommandCompleted {
                command_run_id: cmd,
                exit_code: 0,
                duration_ms: Some(12),
            },
        ),
        event(
            session,
            "tool.completed",
            &p::ToolCompleted {
                tool_run_id: tool,
                output: None,
                duration_ms: Some(15),
            },
        ),
        event(
            session,
            "task.completed",
            &p::TaskStatusChanged {
                task_id: task,
                agent_id: Some(agent.clone()),
                ..Default::default()
            },
        ),
        event(
            session,
            "agent.completed",
            &p::AgentCompleted {
                agent_id: agent,
                exit_code: Some(0),
                result: None,
                gate: None,
            },
        ),
    ]
}

/// Runs `cmd` with `stdin` as its input (then closed), collecting its output.
pub fn output_with_input(cmd: &mut std::process::Command, stdin: &str) -> std::process::Output {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the command starts");
    if let Some(mut input) = child.stdin.take() {
        // A command that exits without reading its input is no failure here.
        let _ = input.write_all(stdin.as_bytes());
    }
    child
        .wait_with_output()
        .expect("the command's output is read")
}
