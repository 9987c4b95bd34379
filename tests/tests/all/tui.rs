//! `air attach`, the real binary in real terminals: tmux windows driven with
//! send-keys and read with capture-pane. Two terminals attach to one run; a
//! permission request shows in both; approved in one, it closes in both with who
//! answered; both detach and the run finishes anyway; a new attach shows the end,
//! opens the changed file in `$EDITOR`, reads the command's whole output, scrolls with
//! the mouse wheel, and comes back after the daemon stopped; another redraws at 80×24
//! and restores the terminal on SIGTERM.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use air_tests::bin;

use crate::daemon::Project;

/// A tmux server of its own (its own socket), killed when dropped.
pub(crate) struct Tmux {
    socket: String,
}

impl Tmux {
    pub(crate) fn new() -> Tmux {
        Tmux {
            socket: format!("air-test-{}-{}", std::process::id(), rand_suffix()),
        }
    }

    fn cmd(&self, args: &[&str]) -> std::process::Output {
        Command::new("tmux")
            .args(["-L", &self.socket])
            .args(args)
            .output()
            .unwrap()
    }

    /// A window running `air attach` in `root`, 100×32.
    fn attach(&self, name: &str, root: &Path) {
        self.attach_with(name, root, "");
    }

    /// The same, with more environment (`NAME=value …`).
    fn attach_with(&self, name: &str, root: &Path, env: &str) {
        self.run_air(
            name,
            root,
            &format!("{env} AIR_WORKER='{}'", bin("air-test-worker").display()),
            "attach",
        );
    }

    /// A window running `air ARGS` in `root` with this environment, 100×32; it says
    /// DETACHED when the command ends.
    pub(crate) fn run_air(&self, name: &str, root: &Path, env: &str, args: &str) {
        let air = bin("air");
        let shell = format!(
            "cd '{}' && {env} NO_COLOR=1 '{}' {args}; echo DETACHED; stty -a | tr ' ;' '\\n\\n' | grep -E -x -- '-?(icanon|echo)'; sleep 30",
            root.display(),
            air.display()
        );
        let out = if self.cmd(&["has-session", "-t", "air"]).status.success() {
            self.cmd(&["new-window", "-t", "air", "-n", name, &shell])
        } else {
            self.cmd(&[
                "new-session",
                "-d",
                "-s",
                "air",
                "-n",
                name,
                "-x",
                "100",
                "-y",
                "32",
                &shell,
            ])
        };
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    pub(crate) fn screen(&self, name: &str) -> String {
        String::from_utf8_lossy(
            &self
                .cmd(&["capture-pane", "-p", "-t", &format!("air:{name}")])
                .stdout,
        )
        .into_owned()
    }

    pub(crate) fn keys(&self, name: &str, keys: &str) {
        assert!(self
            .cmd(&["send-keys", "-t", &format!("air:{name}"), keys])
            .status
            .success());
    }

    /// Types `text` as it is (no key names).
    pub(crate) fn type_text(&self, name: &str, text: &str) {
        assert!(self
            .cmd(&["send-keys", "-t", &format!("air:{name}"), "-l", text])
            .status
            .success());
    }

    /// Waits until the window shows `what`.
    pub(crate) fn wait_for(&self, name: &str, what: &dyn Fn(&str) -> bool, why: &str) -> String {
        self.wait_for_within(name, what, why, Duration::from_secs(20))
    }

    /// Waits until the window shows `what`, for as long as `limit`.
    pub(crate) fn wait_for_within(
        &self,
        name: &str,
        what: &dyn Fn(&str) -> bool,
        why: &str,
        limit: Duration,
    ) -> String {
        let end = Instant::now() + limit;
        loop {
            let s = self.screen(name);
            if what(&s) {
                return s;
            }
            assert!(Instant::now() < end, "{name}: {why}; the screen:\n{s}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.cmd(&["kill-server"]);
    }
}

/// Starts a run of `plan` in `root` with the scripted worker, detached: its session.
fn run_detached(root: &Path, plan: &str) -> String {
    let run = Command::new(bin("air"))
        .args(["run", "--plan", plan, "--detach"])
        .current_dir(root)
        .env("AIR_WORKER", bin("air-test-worker"))
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    String::from_utf8_lossy(&run.stdout).trim().to_string()
}

/// Waits for the session's run to end, successfully.
fn wait_run(root: &Path, session: &str) {
    let wait = Command::new(bin("air"))
        .args(["wait", session])
        .current_dir(root)
        .output()
        .unwrap();
    assert!(
        wait.status.success(),
        "{}",
        String::from_utf8_lossy(&wait.stderr)
    );
}

fn rand_suffix() -> u32 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0)
}

#[test]
fn two_terminals_share_a_run_and_its_permission_dialog() {
    let p = Project::new();
    assert!(Command::new("git")
        .args(["init", "-q"])
        .current_dir(&p.root)
        .status()
        .unwrap()
        .success());
    // The executor writes into .git/, which asks a person; nobody but the terminals
    // may answer (queue).
    std::fs::write(
        p.root.join("p.md"),
        "---\non_ask: queue\n---\n## Task A: touch git\n\nair-test-call: todo.write {\"todos\": [{\"content\": \"Leave a note in git\", \"status\": \"in_progress\"}, {\"content\": \"Count to 3000\", \"status\": \"pending\"}]}\nair-test-call: fs.write {\"path\": \".git/air-note\", \"content\": \"hi\\n\"}\nair-test-call: shell.run {\"command\": \"seq 1 3000\"}\n",
    )
    .unwrap();
    let session = run_detached(&p.root, "p.md");

    let tmux = Tmux::new();
    tmux.attach("one", &p.root);
    tmux.attach("two", &p.root);
    let asks = |s: &str| s.contains("Permission") && s.contains(".git/air-note");
    tmux.wait_for("one", &asks, "no permission dialog");
    tmux.wait_for("two", &asks, "no permission dialog");

    // Approved in one terminal: the dialog closes in both, each saying who answered.
    tmux.keys("one", "a");
    let closed = |s: &str| !s.contains("Permission") && s.contains("approved by");
    tmux.wait_for("one", &closed, "the dialog did not close");
    let two = tmux.wait_for(
        "two",
        &closed,
        "the dialog did not close in the other terminal",
    );
    assert!(two.contains("approved by air attach (pid"), "{two}");
    // The task's todo list, as its agent keeps it, beside the task.
    tmux.wait_for(
        "one",
        &|s| s.contains("todo 0/2") && s.contains("▸ Leave a note in git"),
        "no todo list in the task's detail",
    );

    // Both detach; the run goes on to its end without them.
    tmux.keys("one", "q");
    tmux.keys("two", "q");
    tmux.wait_for("one", &|s| s.contains("DETACHED"), "did not detach");
    tmux.wait_for("two", &|s| s.contains("DETACHED"), "did not detach");
    let wait = Command::new(bin("air"))
        .args(["wait", &session])
        .current_dir(&p.root)
        .output()
        .unwrap();
    assert!(
        wait.status.success(),
        "{}",
        String::from_utf8_lossy(&wait.stdout)
    );
    assert_eq!(
        std::fs::read_to_string(p.root.join(".git/air-note")).unwrap(),
        "hi\n"
    );

    // A new terminal shows the end, and opens the file the task wrote in $EDITOR.
    let editor = p.dir.path().join("editor.sh");
    std::fs::write(&editor, "#!/bin/sh\necho \"opened $1\" > \"$1.opened\"\n").unwrap();
    std::fs::set_permissions(&editor, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    tmux.attach_with("three", &p.root, &format!("EDITOR='{}'", editor.display()));
    let end = tmux.wait_for(
        "three",
        &|s| s.contains("✓ A touch git"),
        "the final state is not shown",
    );
    assert!(end.contains("run completed"), "{end}");
    tmux.keys("three", "e");
    tmux.wait_for(
        "three",
        &|s| s.contains("edited .git/air-note") && s.starts_with(" air ●"),
        "the editor was not run, or the screen was not redrawn whole after it",
    );
    let opened = std::fs::read_to_string(p.root.join(".git/air-note.opened")).unwrap();
    assert!(
        opened.starts_with("opened /") && opened.trim_end().ends_with(".git/air-note"),
        "{opened}"
    );
    // The command's whole output, read from its stored log over the API.
    tmux.keys("three", "o");
    let shown = tmux.wait_for(
        "three",
        &|s| s.contains("$ seq 1 3000") && s.contains("of 3000"),
        "the command's output is not shown",
    );
    assert!(shown.contains("lines 1–"), "{shown}");
    tmux.keys("three", "G");
    tmux.wait_for(
        "three",
        &|s| s.contains("lines 3000–3000 of 3000") && s.contains("│3000"),
        "the end of the output is not shown",
    );
    tmux.keys("three", "Escape");
    tmux.wait_for(
        "three",
        &|s| !s.contains("of 3000") && s.contains("✓ A touch git"),
        "the viewer did not close",
    );
    // The mouse: the wheel over the event log (rows 25–31 of the 32) scrolls it back.
    // The terminal reports it as an SGR mouse sequence (button 64: wheel up).
    assert!(tmux
        .cmd(&["send-keys", "-t", "air:three", "-l", "\x1b[<64;10;28M"])
        .status
        .success());
    tmux.wait_for(
        "three",
        &|s| s.contains("more below)"),
        "the wheel did not scroll the event log",
    );
    // The daemon is stopped: the terminal says so and leaves it stopped (it starts
    // none: the mark of a stop on purpose stays until a daemon starts), then comes
    // back from a fresh snapshot when someone starts it.
    let stop = Command::new(bin("air"))
        .args(["daemon", "stop"])
        .current_dir(&p.root)
        .output()
        .unwrap();
    assert!(
        stop.status.success(),
        "{}",
        String::from_utf8_lossy(&stop.stderr)
    );
    tmux.wait_for(
        "three",
        &|s| s.contains("the daemon was stopped; this view comes back when it starts again"),
        "the terminal does not say the daemon was stopped",
    );
    let mark = p.root.join(".air/local/state/airsd.stopped");
    // Several of its reconnect attempts (one each 400 ms) pass: none starts a daemon.
    let until = std::time::Instant::now() + std::time::Duration::from_millis(1_500);
    while std::time::Instant::now() < until {
        assert!(mark.exists(), "the terminal started another daemon");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let start = Command::new(bin("air"))
        .args(["daemon", "start"])
        .current_dir(&p.root)
        .env("AIR_WORKER", bin("air-test-worker"))
        .output()
        .unwrap();
    assert!(
        start.status.success(),
        "{}",
        String::from_utf8_lossy(&start.stderr)
    );
    // Back to the end of the event log, where the news is.
    tmux.keys("three", "NPage");
    tmux.wait_for(
        "three",
        &|s| {
            s.contains("reconnected; the state is fresh from a snapshot")
                && s.contains("✓ A touch git")
        },
        "did not reconnect after the daemon stopped",
    );
    tmux.keys("three", "q");

    // Resized to 80×24 it redraws to fit; SIGTERM restores the terminal.
    tmux.attach("four", &p.root);
    tmux.wait_for("four", &|s| s.contains("✓ A touch git"), "not attached");
    assert!(tmux
        .cmd(&["resize-window", "-t", "air:four", "-x", "80", "-y", "24"])
        .status
        .success());
    tmux.wait_for(
        "four",
        &|s| {
            let lines: Vec<&str> = s.lines().collect();
            lines.len() <= 24
                && lines.iter().all(|l| l.chars().count() <= 80)
                && lines.last().is_some_and(|l| l.contains("q detach"))
        },
        "did not redraw at 80x24",
    );
    let shell = String::from_utf8_lossy(
        &tmux
            .cmd(&["display-message", "-p", "-t", "air:four", "#{pane_pid}"])
            .stdout,
    )
    .trim()
    .to_string();
    let child = Command::new("pgrep").args(["-P", &shell]).output().unwrap();
    let pid = String::from_utf8_lossy(&child.stdout).trim().to_string();
    assert!(!pid.is_empty(), "no air attach under the shell {shell}");
    assert!(Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    let after = tmux.wait_for(
        "four",
        &|s| s.contains("DETACHED") && s.contains("icanon"),
        "did not end on SIGTERM",
    );
    // Raw mode is off again: the line discipline is back (`icanon`, `echo`).
    let flags: Vec<&str> = after
        .lines()
        .map(str::trim)
        .filter(|l| l.ends_with("icanon") || l.ends_with("echo"))
        .collect();
    assert_eq!(flags, ["icanon", "echo"], "{after}");
}

/// The real TUI at 80×24 while a run's merge queue works: a task whose change is
/// being merged (its check on the merged tree waits for the test) says `merging`, one
/// reviewed behind it `queued`; once merged, all complete. Each step waits for a file
/// the test writes once the screen showed the step before.
#[test]
fn the_task_list_shows_the_merge_queue_at_80x24() {
    let p = Project::new();
    let go = |n: &str| p.root.join(format!("go-{n}"));
    let until = |n: &str| format!("until [ -e '{}' ]; do sleep 0.05; done", go(n).display());
    std::fs::write(p.root.join("README.md"), "# queue\n").unwrap();
    // Q2's check waits only where Q1 is merged: in the merge queue's gate, not in
    // its own worktree (made before Q1 merged). One command, as a check must be.
    std::fs::write(
        p.root.join("gate.sh"),
        format!("if [ -e Q1.txt ]; then {}; fi\n", until("c")),
    )
    .unwrap();
    for args in [
        &["init", "-q", "-b", "main"][..],
        &["add", "-A"],
        &[
            "-c",
            "user.name=p",
            "-c",
            "user.email=p@example.invalid",
            "commit",
            "-qm",
            "start",
        ],
    ] {
        assert!(Command::new("git")
            .args(args)
            .current_dir(&p.root)
            .status()
            .unwrap()
            .success());
    }
    let run_until = |n: &str| {
        format!(
            "air-test-call: shell.run {}\n",
            serde_json::json!({ "command": until(n) })
        )
    };
    let write = |id: &str| {
        format!("air-test-call: fs.write {{\"path\": \"{id}.txt\", \"content\": \"{id}\\n\"}}\n")
    };
    let md = format!(
        "---\nconcurrency: 3\n---\n# Queue\n\n\
         ## Task Q1: file Q1\n\n- evidence: none\n\n{}\n\
         ## Task Q2: file Q2\n\n- evidence: none\n- verify: `sh gate.sh`\n\n{}{}\n\
         ## Task Q3: file Q3\n\n- evidence: none\n\n{}{}\n",
        write("Q1"),
        run_until("a"),
        write("Q2"),
        run_until("b"),
        write("Q3"),
    );
    std::fs::write(p.root.join("q.md"), md).unwrap();
    let session = run_detached(&p.root, "q.md");
    let tmux = Tmux::new();
    tmux.attach("q", &p.root);
    assert!(tmux
        .cmd(&["resize-window", "-t", "air:q", "-x", "80", "-y", "24"])
        .status
        .success());
    let line = |s: &str, id: &str, word: &str| {
        s.lines()
            .any(|l| l.contains(&format!("{id} ")) && l.contains(word))
    };
    tmux.wait_for("q", &|s| line(s, "Q1", "completed"), "Q1 did not merge");
    std::fs::write(go("a"), "").unwrap();
    // In the merge queue, not only its worktree taking Q1's merge: its check runs
    // (and waits for `c`).
    tmux.wait_for(
        "q",
        &|s| line(s, "Q2", "merging") && s.contains("sh gate.sh"),
        "Q2 is not shown merging",
    );
    std::fs::write(go("b"), "").unwrap();
    let queue = tmux.wait_for(
        "q",
        &|s| line(s, "Q2", "merging") && line(s, "Q3", "queued"),
        "Q3 is not shown queued behind Q2",
    );
    assert!(queue.lines().count() <= 24, "{queue}");
    std::fs::write(go("c"), "").unwrap();
    wait_run(&p.root, &session);
    // Each row of the list is marked done (the event pane's lines scroll away).
    tmux.wait_for(
        "q",
        &|s| {
            ["Q1", "Q2", "Q3"]
                .iter()
                .all(|id| s.contains(&format!("│✓ {id} ")))
        },
        "the tasks did not end merged",
    );
    for id in ["Q1", "Q2", "Q3"] {
        assert!(p.root.join(format!("{id}.txt")).is_file(), "{id} landed");
    }
}
