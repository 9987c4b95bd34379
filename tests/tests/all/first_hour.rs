//! The first hour of a new user, through the real binaries: commands that never wait
//! for input nobody sees, and output whose reader went away.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

use air_tests::{bin, git};

use crate::run::{command, scripted_project};
use crate::tui::Tmux;

/// `air ARGS` with stdout a pipe whose reader is already closed: the first line it
/// writes meets a broken pipe, as under `| head -1` once head has its line.
fn with_stdout_closed(mut cmd: Command) -> std::process::Output {
    let (reader, writer) = nix::unistd::pipe().unwrap();
    drop(reader);
    cmd.stdout(Stdio::from(writer)).stderr(Stdio::piped());
    cmd.output().unwrap()
}

#[test]
fn commands_whose_reader_went_away_exit_0_without_a_panic() {
    let p = scripted_project();
    // A repository, so that tasks work in worktrees and have diffs.
    git(&p.root, &["init", "-q"]);
    git(&p.root, &["add", "-A"]);
    git(
        &p.root,
        &[
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-qm",
            "start",
        ],
    );
    let run = command(&p, &["run", "--plan", "plan.md"]).output().unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    for args in [
        &["events"][..],
        &["events", "--json"],
        &["log"],
        &["cost"],
        &["sessions"],
        &["sessions", "--json"],
        &["status"],
        &["wait"],
        &["diff", "T1"],
        &["completions", "bash"],
        &["plan", "graph", "plan.md"],
        &["plan", "check", "plan.md"],
        &["profile", "show"],
        &["version"],
        &["--help"],
        &["run", "--help"],
    ] {
        let out = with_stdout_closed(command(&p, args));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "air {args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "air {args:?}: {stderr}");
    }
    // Under a real `head -1` too, with a stream longer than a pipe holds.
    let mut events = command(&p, &["events", "--json"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(events.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(first.starts_with('{'), "{first}");
    assert_eq!(events.wait().unwrap().code(), Some(0));
}

/// Waits for a tmux window's command to end (it says DETACHED).
fn ended(t: &Tmux, name: &str) -> String {
    t.wait_for(
        name,
        &|s| s.contains("DETACHED"),
        "the command ends by itself",
    )
}

#[test]
fn air_init_asks_only_a_person_who_sees_the_question() {
    let t = Tmux::new();
    let quiet = tempfile::tempdir().unwrap();
    git(quiet.path(), &["init", "-q"]);
    std::fs::write(quiet.path().join("main.py"), "print('hi')\n").unwrap();
    // stdin is the terminal, stdout is not: nobody would see a question.
    t.run_air("quiet", quiet.path(), "", "init --no-model >/dev/null");
    let s = ended(&t, "quiet");
    assert!(!s.contains("[Y/n]"), "{s}");
    assert!(quiet.path().join(".air/shared/project.json").is_file());

    // Both are the terminal: asked, and Enter confirms.
    let asked = tempfile::tempdir().unwrap();
    git(asked.path(), &["init", "-q"]);
    std::fs::write(asked.path().join("main.py"), "print('hi')\n").unwrap();
    t.run_air("asked", asked.path(), "", "init --no-model");
    t.wait_for("asked", &|s| s.contains("is this right? [Y/n]"), "asked");
    t.keys("asked", "Enter");
    let s = ended(&t, "asked");
    assert!(s.contains("confirmed"), "{s}");
}

#[test]
fn examples_run_at_a_terminal_finishes_by_itself() {
    let t = Tmux::new();
    let here = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let script = here.join("examples/run");
    let dir = tempfile::tempdir().unwrap();
    let air = bin("air");
    let bins = air.parent().unwrap();
    // `run_air` runs `air ARGS`; the script runs after it, with its own environment
    // (what `run_air` puts before `air` is air's alone).
    t.run_air(
        "example",
        dir.path(),
        "",
        &format!(
            "version >/dev/null && AIR_BIN='{}' TMPDIR='{}' '{}' && echo EXAMPLE-OK",
            bins.display(),
            dir.path().display(),
            script.display()
        ),
    );
    let s = t.wait_for_within(
        "example",
        &|s| s.contains("DETACHED"),
        "examples/run ends by itself",
        std::time::Duration::from_secs(180),
    );
    assert!(s.contains("the project is in"), "{s}");
    assert!(s.contains("EXAMPLE-OK"), "{s}");
    assert!(!s.contains("panicked"), "{s}");
}

#[test]
fn sessions_are_named_by_the_start_of_their_id_and_an_unknown_one_in_words() {
    let p = scripted_project();
    // `air plan new` writes here; `air run` with no --plan runs it.
    std::fs::copy(
        p.root.join("plan.md"),
        p.root.join(".air/shared/plan/plan.md"),
    )
    .unwrap();
    let run = command(&p, &["run", "--detach"]).output().unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let session = String::from_utf8_lossy(&run.stdout).trim().to_string();
    let short = &session[..8];
    // As the TUI shows it, by position or by -s.
    for args in [&["wait", short][..], &["wait", "-s", short]] {
        let out = command(&p, args).output().unwrap();
        assert!(
            out.status.success(),
            "air {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let events = command(&p, &["events", "-s", short, "--json"])
        .output()
        .unwrap();
    assert!(events.status.success());
    assert!(String::from_utf8_lossy(&events.stdout).contains(&session));
    // An id nobody has: said in words, as a usage error, from every command.
    for args in [
        &["events", "-s", "ffff0000"][..],
        &["wait", "ffff0000"],
        &["cancel", "-s", "ffff0000"],
        &["land", "-s", "ffff0000"],
        &["diff", "T1", "-s", "ffff0000"],
        &["attach", "-s", "ffff0000"],
        &["run", "--resume", "ffff0000"],
    ] {
        let out = command(&p, args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "air {args:?}: {stderr}");
        assert!(
            stderr.contains("no session `ffff0000` in this project"),
            "air {args:?}: {stderr}"
        );
        for leak in ["ErrorObject", "session.db", "-32004"] {
            assert!(!stderr.contains(leak), "air {args:?}: {stderr}");
        }
    }
    // A session's id where a task's goes: said so, with the commands meant.
    let out = command(&p, &["resume", short]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "`{short}` is a session, not a task: `air resume -s {short}`"
        )) && stderr.contains(&format!("air run --resume {session}")),
        "{stderr}"
    );
}

/// A local model that is not running: the answer says so at once and names it,
/// instead of retrying a refused connection and blaming the protocol.
#[test]
fn a_local_model_that_is_not_running_is_named_at_once() {
    let p = scripted_project();
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let out = crate::run::real_worker(
        &p,
        &["chat", "--direct", "-p", "--model", "ollama/qwen3", "hello"],
    )
    .env("OLLAMA_BASE_URL", format!("http://127.0.0.1:{port}/v1"))
    .output()
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "ollama: nothing answers at http://127.0.0.1:{port} (connection refused); is ollama running there?"
        )),
        "{stderr}"
    );
    assert!(!stderr.contains("gave up after"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    // The conversation is listed by what it began with, and how it went.
    let list = command(&p, &["sessions"]).output().unwrap();
    let list = String::from_utf8_lossy(&list.stdout);
    let row = list.lines().nth(1).unwrap_or("");
    assert!(
        row.contains("chat, blocked") && row.ends_with("hello"),
        "{list}"
    );
}

/// After a run: `air sessions` says how it ended, how long it took and its tasks;
/// `air log` tells it in words; `air cost` sums it by task; `air wait` read back
/// stamps each line with when it happened, not when it is printed.
#[test]
fn an_ended_run_is_listed_told_and_costed_in_words() {
    let p = scripted_project();
    let run = command(&p, &["run", "--plan", "plan.md"]).output().unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let text = |args: &[&str]| {
        let out = command(&p, args).output().unwrap();
        assert!(
            out.status.success(),
            "air {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let list = text(&["sessions"]);
    let row = list.lines().nth(1).unwrap_or("");
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cells.get(1), Some(&"completed"), "{list}");
    assert!(!list.contains("active"), "{list}");
    assert!(row.contains("s "), "a duration: {list}");
    let log = text(&["log"]);
    for said in [
        "session started",
        "T1 started (executor, attempt 1)",
        "T1 $ ",
        "→ exit 0",
        "T1 completed",
        "run ended",
    ] {
        assert!(log.contains(said), "{said:?} missing from the log:\n{log}");
    }
    assert!(!log.contains('{'), "the log is words, not JSON:\n{log}");
    let cost = text(&["cost"]);
    assert!(cost.lines().any(|l| l.starts_with("all ")), "{cost}");
    assert!(cost.lines().any(|l| l.starts_with("T1 ")), "{cost}");
    // `air wait` on the ended run: the line of T1's start carries its event's time.
    let events = text(&["events", "--json", "--type", "task.started"]);
    let first: serde_json::Value = serde_json::from_str(events.lines().next().unwrap()).unwrap();
    let at = first["event"]["timestamp"].as_str().unwrap()[11..19].to_string();
    let waited = text(&["wait"]);
    assert!(
        waited
            .lines()
            .any(|l| l.starts_with(&at) && l.contains("T1 started")),
        "T1's start at {at}:\n{waited}"
    );
}

/// Bare `air` with no model, in a new project: the first-run screen says how to give
/// air one, and the shipped example replays from it, watched in the TUI.
#[test]
fn bare_air_with_no_model_opens_the_first_run_screen_and_plays_an_example() {
    let t = Tmux::new();
    let project = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    git(project.path(), &["init", "-q"]);
    std::fs::write(project.path().join("main.py"), "print('hi')\n").unwrap();
    let home = project.path().join(".air-home");
    let env = format!(
        "env -u ANTHROPIC_API_KEY -u OPENAI_API_KEY -u OPENROUTER_API_KEY -u AIR_MODEL AIR_HOME='{}' TMPDIR='{}'",
        home.display(),
        tmp.path().display()
    );
    t.run_air("init", project.path(), &env, "init --no-model </dev/null");
    ended(&t, "init");
    t.run_air("air", project.path(), &env, "");
    let s = t.wait_for(
        "air",
        &|s| s.contains("wordcount: Word counting library and CLI"),
        "the first-run screen lists the examples",
    );
    for said in [
        "Welcome to air: no model answers yet",
        "no LLM provider is configured",
        "export ANTHROPIC_API_KEY=",
        "~/.air/models.yaml",
        "air chat --model ollama/NAME",
        "Sessions (0) and shipped examples (",
    ] {
        assert!(s.contains(said), "{said:?} missing from\n{s}");
    }
    // intstats, then wordcount.
    t.keys("air", "Down");
    t.keys("air", "Enter");
    let s = t.wait_for_within(
        "air",
        &|s| s.contains("7 completed"),
        "the example's recorded run replays to its end",
        std::time::Duration::from_secs(120),
    );
    assert!(s.contains("Word counting library and CLI"), "{s}");
    t.keys("air", "q");
    let s = ended(&t, "air");
    assert!(!s.contains("panicked"), "{s}");
    // The copy is a project of its own, in the temporary directory: its daemon stops.
    let copy = std::fs::read_dir(tmp.path())
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("air-example-wordcount-"))
        })
        .unwrap();
    assert!(copy.join(".air/shared/project.json").is_file());
    let stop = Command::new(bin("air"))
        .args(["daemon", "stop"])
        .current_dir(&copy)
        .env("AIR_HOME", &home)
        .output()
        .unwrap();
    assert!(
        stop.status.success(),
        "{}",
        String::from_utf8_lossy(&stop.stderr)
    );
    let _ = Command::new(bin("air"))
        .args(["daemon", "stop"])
        .current_dir(project.path())
        .env("AIR_HOME", &home)
        .output();
}

/// The README's quick start, run in order in a terminal as a new user would: each
/// command of its block runs to its end by itself (the two questions `air init`
/// asks are shown, then answered; `air attach` is left with q), and none fails or
/// panics.
#[test]
fn the_readme_quick_start_runs_in_order_in_a_terminal() {
    let here = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let readme = std::fs::read_to_string(here.join("README.md")).unwrap();
    let section = &readme[readme.find("## Quick start").unwrap()..];
    let start = section.find("```sh\n").unwrap() + "```sh\n".len();
    let block = &section[start..start + section[start..].find("```").unwrap()];
    let scratch = tempfile::tempdir().unwrap();
    let bins = bin("air").parent().unwrap().to_path_buf();
    // As built here (a debug build), in a scratch directory instead of /tmp.
    let block = block
        .replace("$PWD/target/release", &bins.display().to_string())
        .replace("/tmp/", &format!("{}/", scratch.path().display()));
    let script = scratch.path().join("quick-start.sh");
    std::fs::write(
        &script,
        format!(
            "set -eE\ntrap 'echo \"STEP-FAILED: $BASH_COMMAND\"' ERR\n\
             export AIR_HOME='{home}' GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@t GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@t\n\
             unset ANTHROPIC_API_KEY OPENAI_API_KEY OPENROUTER_API_KEY AIR_MODEL AIR_WORKER\n\
             {block}\necho QUICKSTART-OK\n",
            home = scratch.path().join("air-home").display()
        ),
    )
    .unwrap();
    let t = Tmux::new();
    t.run_air(
        "quick",
        &here,
        "",
        &format!("version >/dev/null && bash '{}'", script.display()),
    );
    let wait = |what: &dyn Fn(&str) -> bool, why: &str| {
        t.wait_for_within("quick", what, why, std::time::Duration::from_secs(120))
    };
    let asked = |s: &str| s.contains("is this right? [Y/n]") || s.contains("STEP-FAILED");
    let s = wait(&asked, "air init asks whether the profile is right");
    assert!(!s.contains("STEP-FAILED"), "{s}");
    t.keys("quick", "Enter");
    // Two sessions (the conversation, the run): the picker, the newest first.
    let s = wait(
        &|s: &str| s.contains("Sessions (2)") || s.contains("STEP-FAILED"),
        "air attach offers the sessions",
    );
    assert!(!s.contains("STEP-FAILED"), "{s}");
    assert!(s.contains("completed") && s.contains("chat"), "{s}");
    t.keys("quick", "Enter");
    let s = wait(
        &|s: &str| s.starts_with(" air ●") || s.contains("STEP-FAILED"),
        "air attach shows the run",
    );
    assert!(!s.contains("STEP-FAILED"), "{s}");
    assert!(s.contains("7 completed"), "{s}");
    t.keys("quick", "q");
    let s = wait(
        &|s: &str| s.contains("is this right? [Y/n]") || s.contains("STEP-FAILED"),
        "the second air init asks",
    );
    assert!(!s.contains("STEP-FAILED"), "{s}");
    t.keys("quick", "Enter");
    let s = t.wait_for_within(
        "quick",
        &|s| s.contains("DETACHED"),
        "the quick start ends by itself",
        std::time::Duration::from_secs(180),
    );
    assert!(s.contains("QUICKSTART-OK"), "{s}");
    assert!(!s.contains("STEP-FAILED") && !s.contains("panicked"), "{s}");
    for copy in ["wc", "wc-plan"] {
        let _ = Command::new(bin("air"))
            .args(["daemon", "stop"])
            .current_dir(scratch.path().join(copy))
            .env("AIR_HOME", scratch.path().join("air-home"))
            .output();
    }
}

/// The `models.yaml` the README shows is one air reads, and it means what it says.
#[test]
fn the_readme_models_yaml_is_read_as_written() {
    let here = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let readme = std::fs::read_to_string(here.join("README.md")).unwrap();
    let section = &readme[readme.find("## Models").unwrap()..];
    let start = section.find("```yaml\n").unwrap() + "```yaml\n".len();
    let yaml = &section[start..start + section[start..].find("```").unwrap()];
    let user = air_proto::models::ModelsConfig::parse(Path::new("README.md"), yaml).unwrap();
    let shipped = air_proto::models::ModelsConfig::load(None).unwrap();
    let models = shipped.overridden_by(user);
    let env = |k: &str| (k == "VLLM_KEY").then(|| "k".to_string());
    let reviewer = models.resolve("reviewer", None, &env).unwrap();
    assert_eq!(
        (reviewer.provider.as_str(), reviewer.model.as_str()),
        ("vllm", "qwen3-coder")
    );
    assert_eq!(reviewer.base_url, "http://gpu-box:8000/v1");
    assert_eq!(reviewer.capability.context_window, 131_072);
}
