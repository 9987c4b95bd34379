//! Running hooks ([`air_proto::hooks`]) at their events: each as a command is run
//! (bash in the sandbox, the project writable, no network, a clean environment), with
//! its timeout and the event's JSON on stdin, as Claude Code gives it. A project's
//! hook nobody trusted as it is now is passed over. What each did is returned to be
//! recorded as `hook.completed`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use air_proto::hooks::{Hook, HookEvent, Trust, Trusted};
use air_proto::payload as p;
use serde_json::{json, Value};

/// The hooks of a run, with the trust they were read with.
#[derive(Clone, Debug, Default)]
pub struct Hooks {
    hooks: Vec<Hook>,
    trust: Trust,
    root: PathBuf,
}

/// Most of a hook's words kept (its reason, its stderr).
const MAX_SAID: usize = 4000;

impl Hooks {
    /// The hooks of the project at `root`: the person's (`~/.air/hooks.yaml` in
    /// `air_home`) and the project's, with the person's trust (`~/.air/trust.json`).
    pub fn load(air_home: Option<&Path>, root: &Path) -> Result<Hooks, String> {
        let loaded =
            air_proto::hooks::load(air_home.map(|h| h.join("hooks.yaml")).as_deref(), root)?;
        for w in &loaded.warnings {
            tracing::warn!("hooks: {w}");
        }
        let hooks = loaded.hooks;
        let trust = match air_home {
            Some(h) => Trust::load(&h.join("trust.json"))?,
            None => Trust::default(),
        };
        Ok(Hooks {
            hooks,
            trust,
            root: root.to_path_buf(),
        })
    }

    /// The hooks of `event` for a tool known by `names` (any, for an event of no tool).
    fn of(&self, event: HookEvent, names: &[&str]) -> Vec<&Hook> {
        self.hooks
            .iter()
            .filter(|h| h.event == event && (names.is_empty() || h.matches(names)))
            .collect()
    }

    pub fn is_empty(&self) -> bool {
        self.hooks.is_empty()
    }

    /// Whether any hook is declared for `event`.
    pub fn has(&self, event: HookEvent) -> bool {
        self.hooks.iter().any(|h| h.event == event)
    }
}

/// How a hook is started: the sandbox and the environment of the run's commands.
pub struct Launching<'a> {
    pub engine: &'a crate::tools::permission::Engine,
    pub sandbox_exe: Option<&'a (PathBuf, crate::sandbox::Protections)>,
    /// Where a file that decides what runs later, changed by a hook, is set aside
    /// when it is put back.
    pub quarantine: PathBuf,
}

/// What the hooks of one event said.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Why what they ran for is refused, when one refused it.
    pub blocked: Option<String>,
    pub runs: Vec<p::HookCompleted>,
}

/// Claude Code's name of an air tool, which hooks' matchers use.
pub fn claude_name(tool: &str) -> Option<&'static str> {
    Some(match tool {
        "shell.run" => "Bash",
        "fs.read" => "Read",
        "fs.write" => "Write",
        "fs.edit" => "Edit",
        "fs.multi_edit" => "MultiEdit",
        "fs.glob" => "Glob",
        "fs.grep" => "Grep",
        "todo.write" => "TodoWrite",
        _ => return None,
    })
}

/// A tool's input as Claude Code's hooks read it: its `path` also as an absolute
/// `file_path`.
pub fn tool_input(root: &Path, input: &Value) -> Value {
    let mut input = input.clone();
    if let (Some(path), Some(map)) = (
        input["path"].as_str().map(str::to_string),
        input.as_object_mut(),
    ) {
        // As the tool resolves it: `src/../.env` and a link name the file they reach.
        let resolved =
            crate::tools::fs::resolve_in(root, &path).unwrap_or_else(|_| root.join(&path));
        map.entry("file_path")
            .or_insert_with(|| Value::String(resolved.display().to_string()));
    }
    input
}

/// Runs the hooks of `event` for the tool `tool` (none: an event of no tool), one
/// after another until one blocks. `input` is the event's JSON without the fields
/// every event has.
pub async fn run(
    hooks: &Hooks,
    event: HookEvent,
    tool: Option<&str>,
    mut input: Value,
    session_id: &str,
    launching: &Launching<'_>,
) -> Outcome {
    let mut names: Vec<String> = Vec::new();
    if let Some(t) = tool {
        names.extend(claude_name(t).map(str::to_string));
        names.push(crate::tools::provider_name(t));
    }
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let mut out = Outcome::default();
    // Where the call works: the checkout, or a task's worktree.
    let cwd = launching.engine.root();
    if let Some(map) = input.as_object_mut() {
        map.insert("session_id".into(), json!(session_id));
        map.insert("cwd".into(), json!(cwd.display().to_string()));
        map.insert("hook_event_name".into(), json!(event.as_str()));
        map.insert(
            "permission_mode".into(),
            json!(launching.engine.mode().as_str()),
        );
        if let Some(name) = names.first() {
            map.insert("tool_name".into(), json!(name));
        }
    }
    for hook in hooks.of(event, &names) {
        let mut run = p::HookCompleted {
            event: event.as_str().to_string(),
            command: hook.command.clone(),
            source: hook.source.as_str().to_string(),
            tool: tool.map(str::to_string),
            tool_run_id: None,
            task_id: None,
            exit_code: None,
            timed_out: false,
            blocked: false,
            reason: None,
            skipped: None,
            duration_ms: None,
        };
        match hooks.trust.of(&hooks.root, hook) {
            Trusted::Yes => {}
            // A guard that changed since it was trusted (it, or a file it runs, which
            // an agent may have edited) refuses until a person trusts it again: it is
            // never quietly switched off.
            Trusted::Changed
                if matches!(event, HookEvent::PreToolUse | HookEvent::UserPromptSubmit) =>
            {
                let why = format!(
                    "the {} hook `{}` of {}, or a file it runs, changed since a person trusted it: it refuses until trusted again (`air hooks trust`)",
                    event.as_str(),
                    hook.command,
                    hook.file.display()
                );
                run.blocked = true;
                run.skipped = Some(why.clone());
                out.blocked = Some(why);
                out.runs.push(run);
                break;
            }
            state => {
                run.skipped = Some(format!(
                    "{} is {} as it is now: `air hooks trust` after reading it",
                    hook.file.display(),
                    if state == Trusted::Changed {
                        "changed since it was trusted"
                    } else {
                        "not trusted"
                    }
                ));
                out.runs.push(run);
                continue;
            }
        }
        // A project's hook runs confined, or not at all.
        if !hook.source.is_persons()
            && !launching
                .sandbox_exe
                .is_some_and(|(_, p)| launching.engine.sandbox() && p.isolation.is_ok())
        {
            run.skipped = Some(
                "a project's hook runs only under air's sandbox, which this machine does not have"
                    .into(),
            );
            out.runs.push(run);
            continue;
        }
        let (ended, stdout, stderr) = match execute(hook, &input, cwd, launching).await {
            Ok(r) => r,
            Err(e) => {
                run.reason = Some(e.0);
                out.runs.push(run);
                continue;
            }
        };
        run.exit_code = ended.exit_code;
        run.timed_out = ended.timed_out;
        run.duration_ms = Some(ended.duration.as_millis() as u64);
        let why = said(&stdout, &stderr, ended.exit_code);
        run.blocked = why.is_some();
        run.reason = why.or_else(|| {
            let err = cut(stderr.trim());
            (!err.is_empty()).then_some(err)
        });
        if run.blocked {
            out.blocked = Some(format!(
                "blocked by the {} hook `{}`: {}",
                event.as_str(),
                hook.command,
                run.reason.as_deref().unwrap_or("no reason given")
            ));
            out.runs.push(run);
            break;
        }
        out.runs.push(run);
    }
    out
}

fn cut(s: &str) -> String {
    match s.char_indices().nth(MAX_SAID) {
        Some((at, _)) => format!("{}…", &s[..at]),
        None => s.to_string(),
    }
}

/// Why a hook refused, as Claude Code's hooks say it: exit code 2 with the reason on
/// stderr, or exit 0 with JSON on stdout (`decision: block`, a `deny` permission
/// decision, `continue: false`).
fn said(stdout: &str, stderr: &str, exit: Option<i32>) -> Option<String> {
    if exit == Some(2) {
        let err = cut(stderr.trim());
        return Some(if err.is_empty() {
            "it exited with code 2".into()
        } else {
            err
        });
    }
    if exit != Some(0) {
        return None;
    }
    let v: Value = serde_json::from_str(stdout.trim()).ok()?;
    let text = |k: &str, at: &Value| at[k].as_str().map(|s| cut(s.trim()));
    if v["decision"] == "block" {
        return Some(text("reason", &v).unwrap_or_else(|| "no reason given".into()));
    }
    let specific = &v["hookSpecificOutput"];
    if specific["permissionDecision"] == "deny" {
        return Some(
            text("permissionDecisionReason", specific).unwrap_or_else(|| "no reason given".into()),
        );
    }
    if v["continue"] == false {
        return Some(text("stopReason", &v).unwrap_or_else(|| "no reason given".into()));
    }
    None
}

/// Runs one hook's command: its exit, stdout and stderr.
async fn execute(
    hook: &Hook,
    input: &Value,
    root: &Path,
    launching: &Launching<'_>,
) -> Result<(crate::tools::exec::Ended, String, String), crate::tools::ToolError> {
    use crate::tools::exec;
    let engine = launching.engine;
    let sandbox = launching.sandbox_exe.filter(|_| engine.sandbox());
    // In plan mode the project is read-only for hooks too.
    let writable = if engine.mode() == air_proto::plan::PermissionMode::Plan {
        vec![std::env::temp_dir()]
    } else {
        crate::sandbox::writable(root, engine.home(), engine.writable_roots())
    };
    let views = sandbox
        .is_some_and(|(_, p)| p.isolation.is_ok())
        .then(|| engine.views(&writable, &[], &[]));
    // What decides what runs later (git's hooks and configuration, an editor's or
    // CI's files, air's) is put back after it, as after an agent's command.
    let guard = {
        let (engine, isolated) = (engine.clone(), views.is_some());
        tokio::task::spawn_blocking(move || crate::tools::guard::Guard::take(&engine, isolated))
            .await
            .ok()
    };
    let mut env = exec::command_env(std::env::vars_os(), engine.shell_env(), engine.home());
    for name in ["CLAUDE_PROJECT_DIR", "AIR_PROJECT_DIR"] {
        env.push((name.into(), root.as_os_str().to_owned()));
    }
    let launch = exec::Launch {
        launcher: sandbox.map(|(exe, _)| exe.as_path()),
        policy: crate::sandbox::Policy {
            writable,
            home: engine.home().map(Path::to_path_buf),
            home_read: engine.home_read(),
            isolate: views,
            // No network: the proxy is for an agent's commands, which ask.
            net: None,
        },
        env,
        stdin: Some(serde_json::to_vec(input).unwrap_or_default()),
    };
    let prepared = exec::Prepared {
        command: hook.command.clone(),
        cwd: root.to_path_buf(),
        timeout: Duration::from_secs(hook.timeout_secs),
        extra_writable: Vec::new(),
        visible: Vec::new(),
        unlocked: Vec::new(),
    };
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let ended = exec::execute(
        &prepared,
        &launch,
        |channel, data| {
            let to = match channel {
                exec::Channel::Stdout => &mut out,
                exec::Channel::Stderr => &mut err,
            };
            if to.len() < 64 * 1024 {
                to.extend_from_slice(data);
            }
        },
        || false,
    )
    .await?;
    let mut err = String::from_utf8_lossy(&err).into_owned();
    if let Some(guard) = guard {
        let (root, quarantine) = (root.to_path_buf(), launching.quarantine.clone());
        let notes =
            tokio::task::spawn_blocking(move || guard.settle(&root, &quarantine, |_| false))
                .await
                .unwrap_or_default();
        for note in notes {
            err.push_str(&format!(
                "\n(air) {}",
                note.replace("the command", "the hook")
            ));
        }
    }
    Ok((ended, String::from_utf8_lossy(&out).into_owned(), err))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_hook_refuses_as_claude_codes_hooks_do() {
        assert_eq!(
            said("", "no rm -rf\n", Some(2)).as_deref(),
            Some("no rm -rf")
        );
        assert_eq!(said("", "", Some(1)), None);
        assert_eq!(said("not json", "", Some(0)), None);
        assert_eq!(
            said(
                r#"{"decision": "block", "reason": "tests first"}"#,
                "",
                Some(0)
            )
            .as_deref(),
            Some("tests first")
        );
        assert_eq!(
            said(
                r#"{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "not here"}}"#,
                "",
                Some(0)
            )
            .as_deref(),
            Some("not here")
        );
        assert_eq!(
            said(
                r#"{"hookSpecificOutput": {"permissionDecision": "allow"}}"#,
                "",
                Some(0)
            ),
            None
        );
        assert!(said(r#"{"continue": false}"#, "", Some(0)).is_some());
    }

    #[test]
    fn a_tools_input_reads_as_claude_codes() {
        let v = tool_input(
            Path::new("/p"),
            &json!({"path": "src/a.rs", "content": "x"}),
        );
        assert_eq!(v["file_path"], "/p/src/a.rs");
        assert_eq!(v["path"], "src/a.rs");
        assert_eq!(claude_name("shell.run"), Some("Bash"));
    }
}
