//! The MCP client against real servers from npm (`tests/mcp`, installed by
//! tests/run): the reference `server-everything` over stdio and over streamable
//! HTTP, and `server-filesystem`, driven by a scripted model through the real
//! binaries and worker. Their calls are recorded as tool runs, a destructive tool
//! asks, a project's server nobody trusted is not started, and past the schema
//! budget a tool's schema is loaded on demand by the search tool.

use std::path::{Path, PathBuf};

use air_tests::mock_provider::{text_events, Exchange, Expect, MockProvider, Reply};
use serde_json::{json, Value};

use crate::agents::{call, key};
use crate::conversation::{chat_ok, expect};
use crate::daemon::Project;

fn bin(name: &str) -> PathBuf {
    let b = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("mcp/node_modules/.bin")
        .join(name);
    assert!(
        b.exists(),
        "{} is missing: tests/run installs the MCP servers (npm ci --prefix tests/mcp)",
        b.display()
    );
    b
}

/// `server-everything` over streamable HTTP on a free port, until dropped.
struct HttpServer {
    child: std::process::Child,
    url: String,
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn http_server() -> HttpServer {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = std::process::Command::new(bin("mcp-server-everything"))
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let server = HttpServer {
        child,
        url: format!("http://127.0.0.1:{port}/mcp"),
    };
    // Up when it takes connections (polled, however busy the machine).
    let t0 = std::time::Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            t0.elapsed().as_secs() < 120,
            "the HTTP server did not start"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    server
}

fn air_home(p: &Project) -> PathBuf {
    let h = p.dir.path().join("air-home");
    std::fs::create_dir_all(&h).unwrap();
    h
}

fn events(out: &std::process::Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn of_type<'a>(events: &'a [Value], t: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|e| e["type"] == t)
        .map(|e| &e["payload"])
        .collect()
}

fn exchange(expect: Expect, reply: Reply) -> Exchange {
    Exchange {
        request: None,
        expect,
        reply,
    }
}

#[test]
fn an_agent_calls_real_mcp_servers_and_a_destructive_tool_asks() {
    let p = Project::new();
    let web = http_server();
    let root = std::fs::canonicalize(&p.root).unwrap();
    std::fs::write(
        air_home(&p).join("mcp.yaml"),
        format!(
            "schema_budget_tokens: 200000\nservers:\n  everything:\n    command: {}\n    args: [stdio]\n    env: {{AIR_MCP_MARK: marked}}\n  web:\n    url: {}\n  files:\n    command: {}\n    args: ['{}']\n",
            bin("mcp-server-everything").display(),
            web.url,
            bin("mcp-server-filesystem").display(),
            root.display()
        ),
    )
    .unwrap();
    // The project's own server: nobody trusted it, so it never starts.
    let planted = root.join("planted-ran");
    std::fs::write(
        root.join(".mcp.json"),
        json!({"mcpServers": {"planted": {"command": "sh", "args": ["-c", format!("touch {}", planted.display())]}}}).to_string(),
    )
    .unwrap();
    let notes = root.join("notes.txt");
    let write = json!({"path": notes.display().to_string(), "content": "from MCP\n"});
    let rt = crate::provider_rt();
    let mock = rt.block_on(MockProvider::start(vec![
        // The first run asks nobody (on_ask deny): the destructive write is refused.
        exchange(
            expect(
                &[],
                &[
                    "mcp__everything__get-sum",
                    "mcp__web__echo",
                    "mcp__files__write_file",
                ],
            ),
            call("c1", "mcp__everything__get-sum", json!({"a": 2, "b": 3})),
        ),
        exchange(
            expect(&["The sum of 2 and 3 is 5"], &[]),
            call("c2", "mcp__web__echo", json!({"message": "over http"})),
        ),
        exchange(
            expect(&["Echo: over http"], &[]),
            call("c3", "mcp__files__write_file", write.clone()),
        ),
        exchange(
            expect(&["mcp_destructive", "was not given"], &[]),
            Reply::Events(text_events("The write was refused.")),
        ),
        // The second run bypasses the questions: the write lands. The server's
        // environment is what it declared, and none of airsd's secrets.
        exchange(
            expect(&[], &["mcp__files__write_file"]),
            call("e1", "mcp__everything__get-env", json!({})),
        ),
        exchange(
            expect(&["AIR_MCP_MARK"], &[]),
            call("c4", "mcp__files__write_file", write),
        ),
        exchange(
            expect(&["Successfully wrote"], &[]),
            Reply::Events(text_events("Written.")),
        ),
    ]));
    let mut env: Vec<(&str, String)> = key(&mock).into_iter().collect();
    env.push(("AIR_TEST_LEAK_TOKEN", "sk-should-not-leak".into()));

    let listed = crate::run::command(&p, &["mcp", "list"]).output().unwrap();
    let listed_text = String::from_utf8_lossy(&listed.stdout).to_string();
    assert!(
        listed.status.success(),
        "{}",
        String::from_utf8_lossy(&listed.stderr)
    );
    assert!(
        listed_text.contains("planted") && listed_text.contains("UNTRUSTED"),
        "{listed_text}"
    );
    assert!(listed_text.contains("up, 13 tools"), "{listed_text}");

    let out = chat_ok(
        &rt,
        &p,
        &[
            "-p",
            "add 2 and 3, echo over http, then write notes.txt",
            "--direct",
            "--permission-mode",
            "default",
            "--on-ask",
            "deny",
            "--json",
        ],
        &env,
    );
    let first = events(&out);
    let completed = of_type(&first, "tool.completed");
    let outputs: Vec<String> = completed.iter().map(|c| c["output"].to_string()).collect();
    assert!(
        outputs
            .iter()
            .any(|o| o.contains("The sum of 2 and 3 is 5")),
        "{outputs:?}"
    );
    assert!(
        outputs.iter().any(|o| o.contains("Echo: over http")),
        "{outputs:?}"
    );
    let asked = of_type(&first, "permission.requested");
    assert_eq!(asked.len(), 1, "{first:?}");
    assert!(asked[0]["risk"]
        .as_str()
        .unwrap()
        .contains("mcp_destructive"));
    assert!(asked[0]["action"].as_str().unwrap().contains("write_file"));
    let failed = of_type(&first, "tool.failed");
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert!(!notes.exists(), "a refused write did not happen");

    let out = chat_ok(
        &rt,
        &p,
        &[
            "-p",
            "write notes.txt",
            "--direct",
            "--permission-mode",
            "bypass_permissions",
            "--json",
        ],
        &env,
    );
    let second = events(&out);
    let completed = of_type(&second, "tool.completed");
    assert_eq!(completed.len(), 2, "{second:?}");
    let seen = completed[0]["output"].to_string();
    assert!(seen.contains("marked"), "{seen}");
    assert!(!seen.contains("sk-should-not-leak"), "{seen}");
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "from MCP\n");
    assert!(
        !planted.exists(),
        "an untrusted project's server never started"
    );
    assert!(mock.mismatches().is_empty(), "{:?}", mock.mismatches());
}

#[test]
fn past_the_schema_budget_a_tool_is_loaded_on_demand() {
    let p = Project::new();
    std::fs::write(
        air_home(&p).join("mcp.yaml"),
        format!(
            "schema_budget_tokens: 50\nservers:\n  everything:\n    command: {}\n    args: [stdio]\n",
            bin("mcp-server-everything").display(),
        ),
    )
    .unwrap();
    let rt = crate::provider_rt();
    let mock = rt.block_on(MockProvider::start(vec![
        exchange(
            expect(&[], &["mcp_search"]),
            call("s1", "mcp_search", json!({"query": "sum numbers"})),
        ),
        exchange(
            expect(
                &["loaded mcp__everything__get-sum"],
                &["mcp__everything__get-sum"],
            ),
            call("s2", "mcp__everything__get-sum", json!({"a": 20, "b": 22})),
        ),
        exchange(
            expect(&["The sum of 20 and 22 is 42"], &[]),
            Reply::Events(text_events("42.")),
        ),
    ]));
    let env: Vec<(&str, String)> = key(&mock).into_iter().collect();
    let out = chat_ok(
        &rt,
        &p,
        &["-p", "add 20 and 22", "--direct", "--json"],
        &env,
    );
    let evs = events(&out);
    let runs: Vec<&str> = of_type(&evs, "tool.started")
        .iter()
        .map(|s| s["tool"].as_str().unwrap())
        .collect();
    assert_eq!(runs, ["mcp.search", "mcp__everything__get-sum"], "{evs:?}");
    assert!(mock.mismatches().is_empty(), "{:?}", mock.mismatches());
}
