//! `air acp` driven by the official ACP client SDK (TypeScript, from npm: `tests/run`
//! installs it under tests/acp) as an editor drives it, against the real daemon, the
//! real `air-worker` and the loopback provider: a session started, a prompt answered
//! with its tool calls and a permission request the editor answers, a slow prompt
//! cancelled, the session listed, then loaded again by another editor with its
//! history; `air attach` in a terminal shows the same conversation.

use std::path::PathBuf;

use air_tests::mock_provider::{text_events, Exchange, MockProvider, Reply};
use serde_json::{json, Value};

use crate::agents::{call, plain};
use crate::daemon::Project;
use crate::tui::Tmux;

fn client_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("acp")
}

/// Runs the SDK's client with `args` in the project; its report.
async fn client(p: &Project, mock: &MockProvider, args: &[&str]) -> Value {
    client_at(p.root.clone(), mock.url.clone(), args, Vec::new()).await
}

/// [`client`] in the project at `root` against the provider at `url`, with more of
/// the client's environment.
async fn client_at(root: PathBuf, url: String, args: &[&str], env: Vec<(&str, PathBuf)>) -> Value {
    let dir = client_dir();
    assert!(
        dir.join("node_modules/@agentclientprotocol/sdk").is_dir(),
        "the ACP SDK is not installed: run `npm ci --prefix tests/acp` (tests/run does)"
    );
    let out = tokio::process::Command::new("node")
        .arg(dir.join("client.mjs"))
        .args(args)
        .current_dir(&root)
        .env("AIR_BIN", air_tests::bin("air"))
        .env("AIR_WORKER", air_tests::bin("air-worker"))
        .env("ANTHROPIC_API_KEY", "sk-test")
        .env("ANTHROPIC_BASE_URL", &url)
        .envs(env)
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "stdout:\n{stdout}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

/// The editor's part of the test: it writes the session's id to `id_file` and waits
/// for `go_file` before its second prompt.
async fn drive(root: PathBuf, url: String, id_file: PathBuf, go_file: PathBuf) -> Value {
    // The editor's terminals need a runtime folder of the user's own, apart from the
    // temporary directory (which sandboxed commands write).
    let base = id_file.parent().unwrap().to_path_buf();
    let (run, tmp) = (base.join("run"), base.join("tmp"));
    for d in [&run, &tmp] {
        use std::os::unix::fs::DirBuilderExt as _;
        std::fs::DirBuilder::new().mode(0o700).create(d).unwrap();
    }
    client_at(
        root,
        url,
        &[
            "drive",
            "/direct write hello.txt and an .envrc",
            "/direct read hello.txt back",
        ],
        vec![
            ("ACP_SESSION_FILE", id_file),
            ("ACP_GO_FILE", go_file),
            ("XDG_RUNTIME_DIR", run),
            ("TMPDIR", tmp),
        ],
    )
    .await
}

/// The text of `file` once it is there.
fn wait_for_file(file: &std::path::Path) -> String {
    let end = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        if let Ok(text) = std::fs::read_to_string(file) {
            if !text.is_empty() {
                return text;
            }
        }
        assert!(
            std::time::Instant::now() < end,
            "the editor did not start a session"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

fn updates<'a>(report: &'a Value, kind: &str) -> Vec<&'a Value> {
    report["updates"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|u| u["sessionUpdate"] == kind)
        .collect()
}

fn said(report: &Value, kind: &str) -> String {
    updates(report, kind)
        .iter()
        .filter_map(|u| u["content"]["text"].as_str())
        .collect()
}

#[test]
fn an_editor_drives_a_session_over_acp_and_another_loads_it() {
    let p = Project::new();
    std::fs::write(p.root.join("README.md"), "A greeting tool.\n").unwrap();
    nix::unistd::mkfifo(&p.root.join("pipe"), nix::sys::stat::Mode::S_IRWXU).unwrap();
    let rt = crate::provider_rt();
    let mock = rt.block_on(MockProvider::start(vec![
        // The first prompt: the file the editor has open read and edited as it has
        // it (unsaved), then two writes, the second of which always asks.
        plain(call("r0", "fs_read", json!({"path": "README.md"}))),
        Exchange {
            request: None,
            expect: crate::conversation::expect(&["An unsaved greeting tool."], &[]),
            reply: call(
                "e0",
                "fs_edit",
                json!({"path": "README.md", "old_string": "An unsaved", "new_string": "A saved"}),
            ),
        },
        plain(call(
            "w1",
            "fs_write",
            json!({"path": "hello.txt", "content": "hello\n"}),
        )),
        plain(call(
            "w2",
            "fs_write",
            json!({"path": ".envrc", "content": "export GREETING=hello\n"}),
        )),
        // A command: it runs in airsd's sandbox, and the editor's terminal shows it.
        plain(call(
            "s1",
            "shell_run",
            json!({"command": "echo from the sandbox; exit 3"}),
        )),
        plain(Reply::Events(text_events("I wrote hello.txt and .envrc."))),
        // The second, in plan mode: a write refused, a read, then an answer that takes
        // a minute (cancelled).
        plain(call(
            "w3",
            "fs_write",
            json!({"path": "refused.txt", "content": "no\n"}),
        )),
        // A FIFO the model asks to read is refused on disk, the editor never asked.
        plain(call("r2", "fs_read", json!({"path": "pipe"}))),
        plain(call("r1", "fs_read", json!({"path": "hello.txt"}))),
        plain(Reply::Slow {
            events: text_events("This answer is never finished."),
            gap_ms: 60_000,
        }),
    ]));
    // The editor drives the session while a terminal attaches to it: once the
    // terminal shows the first exchange, the editor goes on, and its second prompt
    // appears there as it is made.
    let signals = tempfile::tempdir().unwrap();
    let (id_file, go_file) = (signals.path().join("session"), signals.path().join("go"));
    let editor = rt.spawn(drive(
        p.root.clone(),
        mock.url.clone(),
        id_file.clone(),
        go_file.clone(),
    ));
    let session = wait_for_file(&id_file);
    let env = format!(
        "AIR_WORKER='{}' ANTHROPIC_API_KEY=sk-test ANTHROPIC_BASE_URL='{}'",
        air_tests::bin("air-worker").display(),
        mock.url
    );
    let tmux = Tmux::new();
    tmux.run_air("attach", &p.root, &env, &format!("attach -s {session}"));
    tmux.wait_for(
        "attach",
        &|s| s.contains("I wrote hello.txt and .envrc.") && s.contains("acp:air-acp-test"),
        "air attach does not show the editor's conversation",
    );
    std::fs::write(&go_file, "").unwrap();
    tmux.wait_for(
        "attach",
        &|s| s.contains("read hello.txt back"),
        "the editor's second prompt did not appear in the terminal",
    );
    let report = rt.block_on(editor).unwrap();
    let steps = &report["steps"];
    let init = &steps["initialize"]["ok"];
    assert_eq!(init["agentCapabilities"]["loadSession"], true, "{report}");
    assert!(
        init["authMethods"][0]["description"]
            .as_str()
            .unwrap()
            .contains("ANTHROPIC_API_KEY"),
        "{report}"
    );
    assert_eq!(
        steps["new"]["ok"]["sessionId"],
        session.as_str(),
        "{report}"
    );
    let modes = &steps["new"]["ok"]["modes"];
    assert_eq!(modes["currentModeId"], "default", "{report}");
    let ids: Vec<&str> = modes["availableModes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["id"].as_str())
        .collect();
    assert_eq!(
        ids,
        ["default", "accept_edits", "plan", "bypass_permissions"]
    );
    assert_eq!(steps["prompt"]["ok"]["stopReason"], "end_turn", "{report}");
    assert_eq!(
        std::fs::read_to_string(p.root.join("hello.txt")).unwrap(),
        "hello\n"
    );
    assert_eq!(
        std::fs::read_to_string(p.root.join(".envrc")).unwrap(),
        "export GREETING=hello\n",
        "the editor allowed the write"
    );
    // The answer streamed, the tool calls with their kind, location, status and diff.
    assert!(
        said(&report, "agent_message_chunk").contains("I wrote hello.txt and .envrc."),
        "{report}"
    );
    let calls = updates(&report, "tool_call");
    let write = calls
        .iter()
        .find(|c| c["title"] == "Write hello.txt")
        .unwrap_or_else(|| panic!("{report}"));
    assert_eq!(write["kind"], "edit");
    assert_eq!(
        write["locations"][0]["path"],
        p.root.join("hello.txt").display().to_string()
    );
    let done = updates(&report, "tool_call_update")
        .into_iter()
        .find(|u| u["toolCallId"] == write["toolCallId"] && u["status"] == "completed")
        .unwrap_or_else(|| panic!("{report}"));
    assert_eq!(done["content"][0]["type"], "diff");
    assert_eq!(done["content"][0]["newText"], "hello\n");
    // The permission request, on the tool call it is about.
    let asked = report["permissions"].as_array().unwrap();
    assert_eq!(asked.len(), 1, "{report}");
    assert_eq!(asked[0]["sessionId"], session.as_str());
    assert!(
        asked[0]["toolCall"]["title"]
            .as_str()
            .unwrap()
            .contains(".envrc"),
        "{report}"
    );
    // The editor's unsaved text was what the agent read and edited; its edit and
    // its writes were put into the editor's buffers.
    let readme = p.root.join("README.md").display().to_string();
    assert!(
        report["reads"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r == readme.as_str()),
        "{report}"
    );
    assert_eq!(
        std::fs::read_to_string(p.root.join("README.md")).unwrap(),
        "A saved greeting tool.\n"
    );
    let wrote = |file: &str, text: &str| {
        let file = p.root.join(file).display().to_string();
        report["writes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w["path"] == file.as_str() && w["content"] == text)
    };
    assert!(wrote("README.md", "A saved greeting tool.\n"), "{report}");
    assert!(wrote("hello.txt", "hello\n"), "{report}");
    let pipe = p.root.join("pipe").display().to_string();
    assert!(
        !report["reads"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r == pipe.as_str()),
        "{report}"
    );
    // The command ran in airsd's sandbox and the editor's terminal showed it, with
    // its status; the tool call embeds the terminal.
    let shown = report["terminals"].as_array().unwrap();
    assert_eq!(shown.len(), 1, "{report}");
    assert!(
        shown[0]["output"]
            .as_str()
            .unwrap()
            .contains("from the sandbox"),
        "{report}"
    );
    assert_eq!(shown[0]["exitStatus"]["exitCode"], 3, "{report}");
    assert!(
        updates(&report, "tool_call_update").iter().any(|u| {
            u["content"][0]["type"] == "terminal" && u["content"][0]["terminalId"] == "term-1"
        }),
        "{report}"
    );
    // The editor's own messages are not echoed back to it.
    assert!(
        updates(&report, "user_message_chunk").is_empty(),
        "{report}"
    );
    // In plan mode, the write of the second prompt was refused, and the editor was
    // told of the mode.
    assert!(steps["set_mode"].get("ok").is_some(), "{report}");
    let modes_told: Vec<&Value> = updates(&report, "current_mode_update");
    assert_eq!(modes_told.len(), 1, "{report}");
    assert_eq!(modes_told[0]["currentModeId"], "plan");
    assert!(!p.root.join("refused.txt").exists());
    let refused = calls
        .iter()
        .find(|c| c["title"] == "Write refused.txt")
        .unwrap_or_else(|| panic!("{report}"));
    assert!(
        updates(&report, "tool_call_update")
            .iter()
            .any(|u| u["toolCallId"] == refused["toolCallId"] && u["status"] == "failed"),
        "{report}"
    );
    // The slow prompt, cancelled once under way.
    assert!(
        calls.iter().any(|c| c["title"] == "Read hello.txt"),
        "{report}"
    );
    assert_eq!(
        steps["slow_prompt"]["ok"]["stopReason"], "cancelled",
        "{report}"
    );
    let listed = steps["list"]["ok"]["sessions"].as_array().unwrap();
    assert!(
        listed.iter().any(|s| s["sessionId"] == session.as_str()),
        "{report}"
    );

    // Another editor loads the session: its history replayed, the person's messages
    // included.
    let loaded = rt.block_on(client(&p, &mock, &["load", &session]));
    assert!(loaded["steps"]["load"].get("ok").is_some(), "{loaded}");
    let users = said(&loaded, "user_message_chunk");
    assert!(
        users.contains("write hello.txt and an .envrc") && users.contains("read hello.txt back"),
        "{loaded}"
    );
    assert!(
        said(&loaded, "agent_message_chunk").contains("I wrote hello.txt and .envrc."),
        "{loaded}"
    );
    assert!(
        updates(&loaded, "tool_call")
            .iter()
            .any(|c| c["title"] == "Write .envrc"),
        "{loaded}"
    );
    assert!(loaded["permissions"].as_array().unwrap().is_empty());

    assert!(mock.mismatches().is_empty(), "{:?}", mock.mismatches());
}
