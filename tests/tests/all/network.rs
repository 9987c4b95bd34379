//! Commands' network: their own network namespace with loopback only, the world
//! through airsd's proxy, which lets through the hosts permissions.yaml allows and
//! refuses the rest when nobody is there to ask. A loopback web server stands in for
//! a registry (resolved by name), with a repository `git clone` takes over
//! HTTP, an npm package `npm install` takes and a wheel `pip install` takes; every
//! other way out (a direct connection, bash's `/dev/tcp`, UDP, a raw
//! packet socket, an abstract socket, an agent's socket) finds nothing.

use std::path::Path;
use std::time::Duration;

use air_proto::layout::ProjectPaths;
use air_proto::plan::OnAsk;
use air_tests::{bin, git};
use serde_json::json;

use crate::permissions::{ended_within, outputs, plan, tool_runs};

/// A web server on loopback serving `dir`, killed when dropped.
struct Server {
    child: std::process::Child,
    port: u16,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(dir: &Path) -> Server {
    use std::io::BufRead as _;
    let mut child = std::process::Command::new("python3")
        .args(["-u", "-m", "http.server", "0", "--bind", "127.0.0.1"])
        .current_dir(dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    // "Serving HTTP on 127.0.0.1 port 43567 (http://127.0.0.1:43567/) ..."
    let port = line
        .split_whitespace()
        .skip_while(|w| *w != "port")
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in {line:?}"));
    Server { child, port }
}

/// An npm registry and a Python package index in `dir`, as served at `url`: the
/// package `air-test-pad` (its packument and tarball) and `air-test-pkg` (a wheel in
/// the simple index, whose directory listing is the index page).
fn registries(dir: &Path, url: &str) {
    let pad = dir.join("air-test-pad");
    std::fs::create_dir_all(pad.join("-")).unwrap();
    let src = tempfile::tempdir().unwrap();
    let package = src.path().join("package");
    std::fs::create_dir_all(&package).unwrap();
    std::fs::write(
        package.join("package.json"),
        r#"{"name":"air-test-pad","version":"1.0.0","main":"index.js"}"#,
    )
    .unwrap();
    std::fs::write(
        package.join("index.js"),
        "module.exports = () => 'padded from the registry';\n",
    )
    .unwrap();
    let tarball = pad.join("-").join("air-test-pad-1.0.0.tgz");
    let made = std::process::Command::new("tar")
        .arg("czf")
        .arg(&tarball)
        .arg("-C")
        .arg(src.path())
        .arg("package")
        .status()
        .unwrap();
    assert!(made.success());
    let packument = json!({
        "name": "air-test-pad",
        "dist-tags": { "latest": "1.0.0" },
        "versions": { "1.0.0": {
            "name": "air-test-pad",
            "version": "1.0.0",
            "dist": { "tarball": format!("{url}/air-test-pad/-/air-test-pad-1.0.0.tgz") },
        } },
    });
    std::fs::write(pad.join("index.html"), packument.to_string()).unwrap();
    let index = dir.join("simple").join("air-test-pkg");
    std::fs::create_dir_all(&index).unwrap();
    let wheel = r#"
import base64, hashlib, sys, zipfile
files = {
    "air_test_pkg/__init__.py": "X = 'installed from the index'\n",
    "air_test_pkg-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: air-test-pkg\nVersion: 1.0\n",
    "air_test_pkg-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: air-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}
record = []
with zipfile.ZipFile(sys.argv[1], "w") as z:
    for name, text in files.items():
        z.writestr(name, text)
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(text)}")
    record.append("air_test_pkg-1.0.dist-info/RECORD,,")
    z.writestr("air_test_pkg-1.0.dist-info/RECORD", "\n".join(record) + "\n")
"#;
    let made = std::process::Command::new("python3")
        .args(["-c", wheel])
        .arg(index.join("air_test_pkg-1.0-py3-none-any.whl"))
        .status()
        .unwrap();
    assert!(made.success());
}

/// A name for loopback in `/etc/hosts` while this lives (a registry's name, which
/// commands do not reach directly: `localhost` is theirs).
struct HostName(String);

impl HostName {
    fn add() -> Option<HostName> {
        let name = format!("registry-{}.air-test.invalid", std::process::id());
        let hosts = std::fs::read_to_string("/etc/hosts").ok()?;
        std::fs::write("/etc/hosts", format!("{hosts}127.0.0.1 {name}\n")).ok()?;
        Some(HostName(name))
    }
}

impl Drop for HostName {
    fn drop(&mut self) {
        if let Ok(hosts) = std::fs::read_to_string("/etc/hosts") {
            let kept: String = hosts
                .lines()
                .filter(|l| !l.ends_with(&format!(" {}", self.0)))
                .map(|l| format!("{l}\n"))
                .collect();
            let _ = std::fs::write("/etc/hosts", kept);
        }
    }
}

#[test]
fn commands_reach_the_network_only_through_the_proxy() {
    let protections = airsd::sandbox::protections(&bin("airsd"));
    if protections.isolation.is_err() {
        println!("skipped: no namespaces here ({protections:?})");
        return;
    }
    // The registry's name, resolved by the proxy as any host's is.
    let Some(name) = HostName::add() else {
        println!("skipped: /etc/hosts cannot be changed here (the test runs as root in CI)");
        return;
    };
    let host = name.0.clone();
    let project = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(project.path()).unwrap();
    // What the "registry" serves: a file and a repository over git's plain HTTP.
    let site = tempfile::tempdir().unwrap();
    std::fs::write(site.path().join("hello.txt"), "hello from the registry\n").unwrap();
    let work = site.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    git(&work, &["init", "-q"]);
    std::fs::write(work.join("f.txt"), "cloned content\n").unwrap();
    git(&work, &["add", "f.txt"]);
    git(&work, &["commit", "-qm", "one"]);
    git(site.path(), &["clone", "-q", "--bare", "work", "repo.git"]);
    git(&site.path().join("repo.git"), &["update-server-info"]);
    let server = serve(site.path());
    let port = server.port;
    registries(site.path(), &format!("http://{host}:{port}"));
    // A UDP listener, an abstract socket and an agent's socket on the host.
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.set_nonblocking(true).unwrap();
    let udp_port = udp.local_addr().unwrap().port();
    let abstract_name = format!("air-test-{}", std::process::id());
    let _abstract = {
        use std::os::linux::net::SocketAddrExt as _;
        let a =
            std::os::unix::net::SocketAddr::from_abstract_name(abstract_name.as_bytes()).unwrap();
        std::os::unix::net::UnixListener::bind_addr(&a).unwrap()
    };
    let agent_dir = tempfile::tempdir().unwrap();
    let agent = agent_dir.path().join("agent.sock");
    let agent_listener = std::os::unix::net::UnixListener::bind(&agent).unwrap();
    agent_listener.set_nonblocking(true).unwrap();
    let py = |code: String| json!({ "command": format!("python3 -c \"{code}\"") });
    let steps = vec![
        ("shell.run", json!({ "command": format!("curl -sf http://{host}:{port}/hello.txt") })),
        ("shell.run", json!({ "command": "curl -s -o /dev/null -w '%{http_connect}' https://example.org/; echo; curl -s -o /dev/null -w '%{http_code}' http://example.org/; echo; curl -s -x socks5h://127.0.0.1:3128 http://example.org/; echo socks=$?" })),
        ("shell.run", json!({ "command": format!("git clone -q http://{host}:{port}/repo.git cloned && cat cloned/f.txt") })),
        ("shell.run", py(format!("import socket; socket.create_connection(('127.0.0.1', {port}), timeout=3)"))),
        ("shell.run", json!({ "command": format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected") })),
        ("shell.run", py(format!("import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b'leak', ('127.0.0.1', {udp_port})); s.sendto(b'leak', ('1.1.1.1', 53))"))),
        ("shell.run", py("import socket; socket.socket(socket.AF_PACKET, socket.SOCK_RAW)".to_string())),
        ("shell.run", py(format!("import socket; s=socket.socket(socket.AF_UNIX); s.connect(chr(0)+'{abstract_name}')"))),
        ("shell.run", py(format!("import socket; s=socket.socket(socket.AF_UNIX); s.connect('{}'); s.send(b'sign this')", agent.display()))),
        ("shell.run", json!({ "command": "wget -q -O - http://example.org/ || echo refused" })),
        // Package managers install from an allowed registry through the proxy.
        ("shell.run", json!({ "command": format!("npm install --registry http://{host}:{port}/ --no-audit --no-fund air-test-pad 2>&1 | tail -1 && node -e 'console.log(require(\"air-test-pad\")())'") })),
        ("shell.run", json!({ "command": format!("python3 -m venv .venv && .venv/bin/pip install -q --disable-pip-version-check --index-url http://{host}:{port}/simple/ --trusted-host {host} air-test-pkg && .venv/bin/python -c 'import air_test_pkg; print(air_test_pkg.X)'") })),
    ];
    crate::rt().block_on(async {
        let state = crate::asks::state(&root, Duration::from_secs(600));
        std::fs::write(
            ProjectPaths::new(&root).shared().join("permissions.yaml"),
            "allow_domains: [\"*.air-test.invalid\"]\n",
        )
        .unwrap();
        let session = crate::asks::start_plan(&state, &plan(&steps), OnAsk::Deny, None).await;
        // npm and a venv's pip install on a loaded machine: minutes, not seconds.
        ended_within(&state, &session, Duration::from_secs(300)).await;
        let runs = tool_runs(&root, &session);
        let outs = outputs(&root, &session);
        let shown = crate::permissions::shown(&runs, &outs);
        let out = |i: usize| outs[i]["stdout"].as_str().unwrap_or_default().to_string();
        let code = |i: usize| outs[i]["exit_code"].as_i64().unwrap_or(-1);
        assert_eq!(out(0), "hello from the registry\n", "{shown}");
        // Refused as HTTPS (the tunnel's answer), as plain HTTP, and by SOCKS5 (97:
        // the connection not allowed).
        assert_eq!(out(1), "403\n403\nsocks=97\n", "{shown}");
        assert_eq!(out(2), "cloned content\n", "{shown}");
        for i in [3, 4, 5, 6, 7, 8] {
            assert_ne!(code(i), 0, "step {i} got out: {shown}");
        }
        assert!(!out(4).contains("connected"), "{shown}");
        assert!(out(9).contains("refused"), "{shown}");
        assert!(out(10).ends_with("padded from the registry\n"), "{shown}");
        assert_eq!(out(11), "installed from the index\n", "{shown}");
        let mut buf = [0u8; 16];
        assert!(udp.recv(&mut buf).is_err(), "a datagram got out: {shown}");
        assert!(agent_listener.accept().is_err(), "the agent's socket was reached: {shown}");
        // The refusal was a question nobody was there to answer, recorded with the
        // command's call.
        let conn = rusqlite::Connection::open(ProjectPaths::new(&root).session_db(&session)).unwrap();
        let asked: Vec<String> = conn
            .prepare("SELECT payload_json FROM events WHERE type = 'permission.requested'")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert!(
            asked.iter().any(|a| a.contains("connect to example.org") && a.contains("\"risk\":\"network\"")),
            "{asked:?}"
        );
        state.stop_runs().await;
    });
    drop(server);
    drop(name);
}
