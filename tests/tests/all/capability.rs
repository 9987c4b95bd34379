//! Capabilities through the real binaries: one folder that adds an MCP server (the
//! reference `server-everything` from npm), a skill and a rule, and needs a variable
//! and a program, installed from a git repository and trusted at once; its server's
//! tools, its skill and its rule reach the agent; `air doctor` says what it needs;
//! changed, it adds nothing until trusted again.

use std::path::Path;

use air_tests::mock_provider::{text_events, Exchange, MockProvider, Reply};
use serde_json::{json, Value};

use crate::agents::{call, key};
use crate::conversation::{chat_ok, expect};
use crate::daemon::Project;

fn write(dir: &Path, rel: &str, text: &str) {
    let p = dir.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn git(dir: &Path, args: &[&str]) {
    let out = std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_capability_from_git_adds_its_server_skill_and_rule_once_trusted() {
    let p = Project::new();
    let server =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("mcp/node_modules/.bin/mcp-server-everything");
    assert!(
        server.exists(),
        "tests/run installs the MCP servers (npm ci --prefix tests/mcp)"
    );
    let src = p.dir.path().join("demo-src");
    write(
        &src,
        "capability.yaml",
        &format!(
            "name: demo\nversion: 1.2.0\ndescription: A demonstration\nadds:\n  mcp_servers:\n    everything:\n      command: {}\n      args: [stdio]\n  skills: skills\n  rules: rules\nneeds:\n  network: [api.example.com]\n  env: [AIR_TEST_CAPABILITY_TOKEN]\n  dependencies:\n    - id: air-test-no-such-program\n      kind: executable\n      required_for: [demo]\n      severity: optional\n      detect: {{executable: air-test-no-such-program}}\n      risk: none\n",
            server.display()
        ),
    );
    write(&src, "skills/greet/SKILL.md", "---\nname: greet-the-team\ndescription: Greets the team the way it likes.\n---\nSay hello.\n");
    write(
        &src,
        "rules/fruit.md",
        "Every answer ends with the word PINEAPPLE.\n",
    );
    git(&src, &["init", "-q"]);
    git(&src, &["add", "-A"]);
    git(&src, &["commit", "-q", "-m", "demo"]);
    let url = format!("file://{}", src.display());

    let added = crate::run::command(&p, &["capability", "add", &url, "--yes"])
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&added.stdout).to_string();
    assert!(
        added.status.success(),
        "{said}{}",
        String::from_utf8_lossy(&added.stderr)
    );
    assert!(
        said.contains("adds MCP server `everything`") && said.contains("api.example.com"),
        "{said}"
    );
    let installed = p.dir.path().join("air-home/capabilities/demo");
    assert!(installed.join("capability.yaml").is_file());
    assert!(
        !installed.join(".git").exists(),
        "only the capability's files are installed"
    );
    let listed = crate::run::command(&p, &["capability", "list"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&listed.stdout).contains("[trusted]"));

    let rt = crate::provider_rt();
    let mock = rt.block_on(MockProvider::start(vec![
        Exchange {
            request: None,
            expect: expect(&["PINEAPPLE", "greet-the-team"], &["mcp__everything__echo"]),
            reply: call(
                "c1",
                "mcp__everything__echo",
                json!({"message": "from a capability"}),
            ),
        },
        Exchange {
            request: None,
            expect: expect(&["Echo: from a capability"], &[]),
            reply: Reply::Events(text_events("Done. PINEAPPLE")),
        },
    ]));
    let env: Vec<(&str, String)> = key(&mock).into_iter().collect();
    chat_ok(
        &rt,
        &p,
        &["-p", "echo something", "--direct", "--json"],
        &env,
    );
    assert!(mock.mismatches().is_empty(), "{:?}", mock.mismatches());

    // The doctor says what it needs.
    let doctor = crate::run::command(&p, &["doctor", "--json"])
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&doctor.stdout).unwrap();
    let caps = report["capabilities"].as_array().unwrap();
    assert_eq!(caps[0]["name"], "demo");
    assert_eq!(caps[0]["env_unset"], json!(["AIR_TEST_CAPABILITY_TOKEN"]));
    assert!(
        report.to_string().contains("air-test-no-such-program"),
        "{report}"
    );

    // Changed, it adds nothing until trusted again.
    write(
        &installed,
        "rules/fruit.md",
        "Every answer ends with the word BANANA.\n",
    );
    let listed = crate::run::command(&p, &["capability", "list"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&listed.stdout).contains("CHANGED"));
    let servers = crate::run::command(&p, &["mcp", "list"]).output().unwrap();
    assert!(!String::from_utf8_lossy(&servers.stdout).contains("everything"));
    let trusted = crate::run::command(&p, &["capability", "trust", "--yes"])
        .output()
        .unwrap();
    assert!(trusted.status.success());
    let servers = crate::run::command(&p, &["mcp", "list"]).output().unwrap();
    assert!(String::from_utf8_lossy(&servers.stdout).contains("everything"));
}
