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

/// A plain HTTP GET of `url` (http only): its status and `Location`.
fn http_get(url: &str) -> (u16, Option<String>) {
    use std::io::{Read as _, Write as _};
    let rest = url.strip_prefix("http://").unwrap();
    let (host, path) = rest
        .split_once('/')
        .map_or((rest, "/".to_string()), |(h, p)| (h, format!("/{p}")));
    let mut conn = std::net::TcpStream::connect(host).unwrap();
    write!(
        conn,
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut text = String::new();
    conn.read_to_string(&mut text).unwrap();
    let status = text.split_whitespace().nth(1).unwrap().parse().unwrap();
    let location = text
        .lines()
        .find_map(|l| {
            l.strip_prefix("Location: ")
                .or_else(|| l.strip_prefix("location: "))
        })
        .map(|l| l.trim().to_string());
    (status, location)
}

#[test]
fn an_oauth_server_is_signed_in_once_and_its_tokens_refresh() {
    use std::io::BufRead as _;
    let p = Project::new();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    // Tokens said to expire at once: every use refreshes them, and each refresh token
    // is good once.
    let mut server = std::process::Command::new("node")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("mcp/oauth-server.mjs"))
        .env("PORT", port.to_string())
        .env("ADVERTISED_SECONDS", "0")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let said = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let (up_tx, up_rx) = std::sync::mpsc::channel();
    {
        let said = said.clone();
        let out = server.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
                if line.starts_with("listening") {
                    let _ = up_tx.send(());
                }
                said.lock().unwrap().push(line);
            }
        });
    }
    up_rx
        .recv_timeout(std::time::Duration::from_secs(120))
        .expect("the OAuth server did not start");
    let home = air_home(&p);
    std::fs::write(
        home.join("mcp.yaml"),
        format!("servers:\n  guarded:\n    url: http://127.0.0.1:{port}/mcp\n"),
    )
    .unwrap();

    let listed = crate::run::command(&p, &["mcp", "list"]).output().unwrap();
    let text = String::from_utf8_lossy(&listed.stdout).to_string();
    assert!(text.contains("air mcp login guarded"), "{text}");

    // The sign-in: the page it names redirects (the demo server signs in at once) to
    // air's listener on 127.0.0.1.
    let mut login = crate::run::command(&p, &["mcp", "login", "guarded"])
        .stderr(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let err = std::io::BufReader::new(login.stderr.take().unwrap());
    let page = err
        .lines()
        .map_while(Result::ok)
        .find_map(|l| {
            l.trim()
                .starts_with("http://")
                .then(|| l.trim().to_string())
        })
        .expect("air mcp login names a page");
    let (status, back) = http_get(&page);
    assert_eq!(status, 302, "{page}");
    let (status, _) = http_get(&back.unwrap());
    assert_eq!(status, 200);
    assert!(login.wait().unwrap().success());
    let file = home.join("mcp-credentials.json");
    use std::os::unix::fs::PermissionsExt as _;
    assert_eq!(
        std::fs::metadata(&file).unwrap().permissions().mode() & 0o777,
        0o600
    );

    let rt = crate::provider_rt();
    let mock = rt.block_on(MockProvider::start(vec![
        exchange(
            expect(&[], &["mcp__guarded__whoami"]),
            call("w1", "mcp__guarded__whoami", json!({})),
        ),
        exchange(
            expect(&["signed in as"], &[]),
            Reply::Events(text_events("Signed in.")),
        ),
    ]));
    let env: Vec<(&str, String)> = key(&mock).into_iter().collect();
    chat_ok(
        &rt,
        &p,
        &["-p", "who am I there?", "--direct", "--json"],
        &env,
    );
    assert!(mock.mismatches().is_empty(), "{:?}", mock.mismatches());
    let refreshed = said
        .lock()
        .unwrap()
        .iter()
        .filter(|l| *l == "refreshed")
        .count();
    assert!(refreshed >= 1, "{:?}", said.lock().unwrap());

    // The rotated tokens were kept: another process signs in with them.
    let listed = crate::run::command(&p, &["mcp", "list"]).output().unwrap();
    let text = String::from_utf8_lossy(&listed.stdout).to_string();
    assert!(text.contains("up, 1 tools"), "{text}");
    let _ = server.kill();
    let _ = server.wait();
}
