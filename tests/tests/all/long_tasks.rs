//! What an agent keeps beside a long task's work: its todo list (shown with its task)
//! and commands in the background (a server it starts runs until it stops it, or
//! until the agent ends).

use crate::run::{air, db, expect, newest_session, project, until};

/// The outputs (or errors) of one tool's calls, in order.
fn runs(conn: &rusqlite::Connection, tool: &str) -> Vec<serde_json::Value> {
    conn.prepare(
        "SELECT COALESCE(output_json, json_object('error', error)) FROM tool_runs
         WHERE tool = ?1 ORDER BY seq",
    )
    .unwrap()
    .query_map([tool], |r| r.get::<_, String>(0))
    .unwrap()
    .map(|s| serde_json::from_str(&s.unwrap()).unwrap())
    .collect()
}

/// Whether a process whose command line holds `marker` is alive.
fn alive(marker: &str) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
        std::fs::read(e.path().join("cmdline"))
            .map(|c| String::from_utf8_lossy(&c).replace('\0', " "))
            .is_ok_and(|c| c.contains(marker) && !c.contains("pgrep"))
    })
}

#[test]
fn a_todo_list_is_kept_with_its_task_one_step_at_a_time() {
    let p = project();
    std::fs::write(
        p.root.join("todo.md"),
        "## Task T1: steps\n\n\
         air-test-call: todo.write {\"todos\": [{\"content\": \"a\", \"status\": \"in_progress\"}, {\"content\": \"b\", \"status\": \"in_progress\"}]}\n\
         air-test-call: todo.write {\"todos\": [{\"content\": \"Read the parser\", \"status\": \"completed\"}, {\"content\": \"Add the error type\", \"status\": \"in_progress\"}, {\"content\": \"Run the tests\", \"status\": \"pending\"}]}\n",
    )
    .unwrap();
    let out = air(&p, &["run", "--plan", "todo.md"]);
    expect(&out, 0);
    let session = newest_session(&p);
    let conn = db(&p, &session);
    let calls = runs(&conn, "todo.write");
    assert!(
        calls[0]["error"]
            .as_str()
            .is_some_and(|e| e.contains("one at a time")),
        "{calls:?}"
    );
    assert_eq!(calls[1]["in_progress"], 1, "{calls:?}");
    // The snapshot every client reads gives the task its latest list.
    let projection = airsd::projection::hydrate(&conn, &session).unwrap();
    let task = projection.tasks.iter().find(|t| t.id == "T1").unwrap();
    let shown: Vec<(&str, &str)> = task
        .todos
        .iter()
        .map(|t| (t.content.as_str(), t.status.as_str()))
        .collect();
    assert_eq!(
        shown,
        [
            ("Read the parser", "completed"),
            ("Add the error type", "in_progress"),
            ("Run the tests", "pending")
        ]
    );
}

#[test]
fn a_background_command_runs_until_it_is_stopped_or_its_agent_ends() {
    let p = project();
    // Two servers: one stopped by its agent, one left running when the agent ends.
    let (first, second) = ("sleep 4713", "sleep 4714");
    std::fs::write(
        p.root.join("serve.md"),
        format!(
            "## Task T1: serves\n\n\
             air-test-call: shell.run {{\"command\": \"echo listening on 8080; {first}\", \"background\": true}}\n\
             air-test-call: shell.output {{\"command_run_id\": \"$LAST_COMMAND_RUN\"}}\n\
             air-test-call: shell.stop {{\"command_run_id\": \"$LAST_COMMAND_RUN\"}}\n\
             air-test-call: shell.run {{\"command\": \"echo second; {second}\", \"background\": true}}\n\
             air-test-call: shell.run {{\"command\": \"echo in front\"}}\n"
        ),
    )
    .unwrap();
    let out = air(&p, &["run", "--plan", "serve.md"]);
    expect(&out, 0);
    let session = newest_session(&p);
    let conn = db(&p, &session);
    let started = runs(&conn, "shell.run");
    assert_eq!(started[0]["running"], true, "{started:?}");
    assert!(
        started[0]["stdout"]
            .as_str()
            .is_some_and(|s| s.contains("listening on 8080")),
        "{started:?}"
    );
    // A command in front runs while the server does, and answers as always.
    assert_eq!(started[2]["exit_code"], 0, "{started:?}");
    let read = runs(&conn, "shell.output");
    assert_eq!(read[0]["running"], true, "{read:?}");
    assert!(read[0]["text"]
        .as_str()
        .is_some_and(|t| t.contains("listening on 8080")));
    let stopped = runs(&conn, "shell.stop");
    assert_eq!(stopped[0]["cancelled"], true, "{stopped:?}");
    assert!(
        stopped[0]["notes"]
            .to_string()
            .contains("stopped by shell_stop"),
        "{stopped:?}"
    );
    // The one left running ends with its agent, recorded as cancelled.
    assert!(until(30, || !alive(first) && !alive(second)));
    let ended = |marker: &str| -> Option<String> {
        conn.query_row(
            "SELECT COALESCE(error, '') FROM command_runs WHERE command LIKE ?1",
            [format!("%{marker}%")],
            |r| r.get(0),
        )
        .ok()
    };
    assert!(
        until(30, || ended(second)
            .is_some_and(|e| e.contains("the agent ended"))),
        "{:?}",
        ended(second)
    );
}

/// A file that runs code later (an editor's tasks), written by a command a person
/// allowed while the agent's server runs, stays: the command's guard and, when it
/// ends with its agent, the server's put back only what nobody allowed.
#[test]
fn a_server_ending_keeps_what_a_person_allowed_meanwhile() {
    let p = project();
    std::fs::write(
        p.root.join("allowed.md"),
        "## Task T1: serves, then configures the editor\n\n\
         air-test-call: shell.run {\"command\": \"echo up; sleep 4721\", \"background\": true}\n\
         air-test-call: shell.run {\"command\": \"mkdir -p .vscode && echo allowed > .vscode/tasks.json\"}\n",
    )
    .unwrap();
    // A person answers the question the editor's file raises, while the run waits.
    let child = crate::run::command(&p, &["run", "--plan", "allowed.md", "--on-ask", "queue"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pending = || -> Option<(String, String)> {
        let out = air(&p, &["sessions", "--json"]);
        let list: serde_json::Value = serde_json::from_slice(&out.stdout).ok()?;
        let session = list[0]["id"].as_str()?.to_string();
        let conn = db(&p, &session);
        let id = conn
            .query_row(
                "SELECT id FROM permission_requests WHERE status = 'pending'",
                [],
                |r| r.get::<_, String>(0),
            )
            .ok()?;
        Some((session, id))
    };
    let mut asked = None;
    assert!(until(60, || {
        asked = pending();
        asked.is_some()
    }));
    let (session, id) = asked.unwrap();
    expect(&air(&p, &["approve", &id, "-s", &session]), 0);
    let out = child.wait_with_output().unwrap();
    expect(&out, 0);
    // The server ended with its agent, and its guard has settled.
    let conn = db(&p, &session);
    assert!(until(30, || {
        conn.query_row(
            "SELECT status FROM command_runs WHERE command LIKE '%sleep 4721%'",
            [],
            |r| r.get::<_, String>(0),
        )
        .is_ok_and(|s| s != "running")
    }));
    let kept = std::fs::read_to_string(p.root.join(".vscode/tasks.json")).unwrap_or_default();
    assert_eq!(
        kept.trim(),
        "allowed",
        "{}\n{:#?}",
        String::from_utf8_lossy(&out.stdout),
        runs(&conn, "shell.run")
            .into_iter()
            .chain(runs(&conn, "shell.stop"))
            .map(|o| (o["notes"].clone(), o["error"].clone()))
            .collect::<Vec<_>>()
    );
}
