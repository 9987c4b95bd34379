//! The daemon through its real binaries and its real socket: lifecycle, auto-start,
//! one daemon per project, stale sockets, deep projects, peer checks, bad input.

use air_proto::api::params;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use air_tests::bin;

/// A project with a daemon that is stopped (or killed) when the test ends.
pub struct Project {
    pub dir: tempfile::TempDir,
    pub root: PathBuf,
}

impl Project {
    pub fn new() -> Self {
        Self::at_depth("")
    }

    /// A project under `sub` inside a fresh temporary directory.
    pub fn at_depth(sub: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join(sub);
        std::fs::create_dir_all(&root).unwrap();
        let out = Command::new(bin("air"))
            .args(["init", "--no-model"])
            .current_dir(&root)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        Self { dir, root }
    }

    pub fn air(&self, args: &[&str]) -> Output {
        Command::new(bin("air"))
            .args(args)
            .current_dir(&self.root)
            .output()
            .unwrap()
    }

    pub fn paths(&self) -> air_proto::layout::ProjectPaths {
        air_proto::layout::ProjectPaths::new(&self.root)
    }

    /// The pid in the daemon's lock file.
    pub fn daemon_pid(&self) -> Option<u32> {
        std::fs::read_to_string(self.paths().locks().join("airsd.lock"))
            .ok()?
            .trim()
            .parse()
            .ok()
    }

    pub fn curl(&self, body: &str) -> String {
        let socket = self.paths().client_socket();
        let out = Command::new("curl")
            .args(["-s", "--unix-socket"])
            .arg(&socket)
            .args([
                "-H",
                "content-type: application/json",
                "-d",
                body,
                "http://localhost/",
            ])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

impl Drop for Project {
    fn drop(&mut self) {
        let _ = self.air(&["daemon", "stop"]);
        if let Some(pid) = self.daemon_pid() {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).output();
        }
    }
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

#[test]
fn start_status_stop() {
    let p = Project::new();
    let out = p.air(&["daemon", "status"]);
    assert_eq!(out.status.code(), Some(4), "{}", text(&out));
    assert!(text(&out).contains("no daemon running"), "{}", text(&out));

    let out = p.air(&["status"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("airsd 0.1.0"), "{}", text(&out));
    let socket = p.paths().socket();
    assert_eq!(mode(&socket), 0o600);
    assert_eq!(mode(&p.paths().local()), 0o700);

    let reply = p.curl(r#"{"jsonrpc":"2.0","id":1,"method":"daemon.status","params":[]}"#);
    let reply: serde_json::Value = serde_json::from_str(&reply).unwrap();
    let pid = reply["result"]["pid"].as_u64().unwrap() as u32;
    assert_eq!(Some(pid), p.daemon_pid());
    assert!(reply["result"]["rss_bytes"].as_u64().unwrap() > 0);

    let out = p.air(&["daemon", "status", "--json"]);
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(status["pid"], pid);

    // A second daemon for the same project exits at once, naming the running one.
    let out = Command::new(bin("airsd"))
        .arg("--project")
        .arg(&p.root)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert!(text(&out).contains(&format!("pid {pid}")), "{}", text(&out));

    let out = p.air(&["daemon", "stop"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(!socket.exists(), "the socket is removed");
    assert_eq!(p.air(&["daemon", "status"]).status.code(), Some(4));
    assert!(std::fs::read_to_string(p.paths().daemon_log())
        .unwrap()
        .contains("airsd stopped"));
}

#[test]
fn a_socket_left_by_a_killed_daemon_is_replaced() {
    let p = Project::new();
    assert!(p.air(&["daemon", "start"]).status.success());
    let pid = p.daemon_pid().unwrap();
    Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    while std::path::Path::new(&format!("/proc/{pid}")).exists() {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert!(
        p.paths().socket().exists(),
        "SIGKILL leaves the socket file"
    );
    let out = p.air(&["status"]);
    assert!(out.status.success(), "{}", text(&out));
    let new_pid = p.daemon_pid().unwrap();
    assert_ne!(new_pid, pid);
}

#[test]
fn clients_starting_the_daemon_at_once_end_with_one_daemon() {
    let p = Project::new();
    let children: Vec<_> = (0..4)
        .map(|_| {
            Command::new(bin("air"))
                .args(["status", "--json"])
                .current_dir(&p.root)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let pids: Vec<u64> = children
        .into_iter()
        .map(|c| {
            let out = c.wait_with_output().unwrap();
            assert!(out.status.success(), "{}", text(&out));
            let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            v["daemon"]["pid"].as_u64().unwrap()
        })
        .collect();
    assert!(pids.iter().all(|&pid| pid == pids[0]), "{pids:?}");
}

#[test]
fn a_deep_project_uses_a_short_fallback_socket() {
    let deep = format!("{}/{}/{}", "a".repeat(50), "b".repeat(50), "c".repeat(20));
    let p = Project::at_depth(&deep);
    assert!(p.paths().socket().as_os_str().len() > air_proto::layout::MAX_SOCKET_PATH);
    let out = p.air(&["status"]);
    assert!(out.status.success(), "{}", text(&out));
    let socket = p.paths().client_socket();
    assert_ne!(socket, p.paths().socket());
    assert!(socket.as_os_str().len() <= air_proto::layout::MAX_SOCKET_PATH);
    assert_eq!(mode(&socket), 0o600);
    assert_eq!(mode(socket.parent().unwrap()), 0o700);
    assert!(p
        .curl(r#"{"jsonrpc":"2.0","id":1,"method":"session.list"}"#)
        .contains("\"result\":[]"));
}

#[test]
fn bad_requests_get_errors_and_the_daemon_keeps_serving() {
    let p = Project::new();
    assert!(p.air(&["daemon", "start"]).status.success());
    let reply = p.curl("{not json");
    assert!(reply.contains("-32700"), "parse error: {reply}");
    let reply = p.curl(r#"{"jsonrpc":"2.0","id":1,"method":"no.such"}"#);
    assert!(reply.contains("-32601"), "method not found: {reply}");
    let reply =
        p.curl(r#"{"jsonrpc":"2.0","id":1,"method":"session.get","params":{"session_id":42}}"#);
    // FIXME: name the field (`session_id`); jsonrpsee's generated parser reports only
    // the serde error of the value.
    assert!(
        reply.contains("-32602") && reply.contains("invalid type: integer `42`, expected a string"),
        "{reply}"
    );
    let reply = p.curl(r#"{"jsonrpc":"2.0","id":1,"method":"session.get","params":{}}"#);
    assert!(
        reply.contains("-32602") && reply.contains("session_id"),
        "a missing param is named: {reply}"
    );
    let reply = p.curl(
        r#"{"jsonrpc":"2.0","id":1,"method":"session.get","params":{"session_id":"../../etc"}}"#,
    );
    assert!(
        reply.contains("-32602") && reply.contains("invalid session id"),
        "{reply}"
    );
    let reply =
        p.curl(r#"{"jsonrpc":"2.0","id":1,"method":"session.get","params":{"session_id":"nope"}}"#);
    assert!(
        reply.contains("-32004") && reply.contains("no session `nope` in this project"),
        "{reply}"
    );
    let reply = p.curl(
        r#"{"jsonrpc":"2.0","id":1,"method":"events.list","params":{"session_id":"x","limit":0}}"#,
    );
    assert!(reply.contains("error"), "{reply}");
    // A frame over the 16 MiB cap.
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"session.create","params":{{"title":"{}"}}}}"#,
        "x".repeat(17 * 1024 * 1024)
    );
    let file = p.dir.path().join("big.json");
    std::fs::write(&file, big).unwrap();
    let out = Command::new("curl")
        .args([
            "-s",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            "--unix-socket",
        ])
        .arg(p.paths().socket())
        .args(["-H", "content-type: application/json", "--data-binary"])
        .arg(format!("@{}", file.display()))
        .arg("http://localhost/")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "413",
        "payload too large"
    );
    // Still serving.
    assert!(p
        .curl(r#"{"jsonrpc":"2.0","id":1,"method":"daemon.status"}"#)
        .contains("\"pid\""));
}

#[test]
fn another_users_connection_is_refused() {
    let is_root = String::from_utf8(Command::new("id").arg("-u").output().unwrap().stdout)
        .unwrap()
        .trim()
        == "0";
    if !is_root {
        // Only root can make another user's process here; the check runs in CI as root.
        return;
    }
    let p = Project::new();
    assert!(p.air(&["daemon", "start"]).status.success());
    // Open the way to the socket so that only the peer check stands. The daemon
    // keeps `.air/local` private (it sets 0700 again as its start-up work goes on), so
    // the way is opened again until the other user's curl reaches the socket (exit 7
    // is "could not connect"), bounded.
    let socket = p.paths().socket();
    let end = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let out = loop {
        for dir in [
            p.dir.path(),
            &p.root,
            &p.root.join(".air"),
            &p.paths().local(),
        ] {
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o777)).unwrap();
        let out = Command::new("setpriv")
            .args([
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "curl",
                "-s",
                "--unix-socket",
            ])
            .arg(&socket)
            .args([
                "-H",
                "content-type: application/json",
                "-d",
                r#"{"jsonrpc":"2.0","id":1,"method":"daemon.status"}"#,
                "http://localhost/",
            ])
            .output()
            .unwrap();
        if out.status.code() != Some(7) {
            break out;
        }
        assert!(
            std::time::Instant::now() < end,
            "the socket was never reachable"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert!(!out.status.success(), "refused: {}", text(&out));
    assert!(!String::from_utf8_lossy(&out.stdout).contains("pid"));
    // The daemon writes its log line when it refuses, which may come a moment after
    // curl saw the connection close: waited for (bounded), never slept on.
    let end = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let log = loop {
        let log = std::fs::read_to_string(p.paths().daemon_log()).unwrap_or_default();
        if log.contains("connection from another user refused") {
            break log;
        }
        assert!(std::time::Instant::now() < end, "{log}");
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert!(log.contains("connection from another user refused"));
    // Our own connections still work.
    assert!(p
        .curl(r#"{"jsonrpc":"2.0","id":1,"method":"daemon.status"}"#)
        .contains("\"pid\""));
}

fn wait_gone(pid: u32) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while std::path::Path::new(&format!("/proc/{pid}")).exists() && !is_zombie(pid) {
        assert!(
            std::time::Instant::now() < deadline,
            "pid {pid} did not exit"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

fn is_zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            s.rsplit(')')
                .next()
                .is_some_and(|rest| rest.trim_start().starts_with('Z'))
        })
        .unwrap_or(true)
}

#[test]
fn sigterm_stops_gracefully_and_keeps_committed_data() {
    let p = Project::new();
    let mut daemon = Command::new(bin("airsd"))
        .args(["--foreground", "--project"])
        .arg(&p.root)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let reply = loop {
        let r = p.curl(
            r#"{"jsonrpc":"2.0","id":1,"method":"session.create","params":{"title":"kept"}}"#,
        );
        if !r.is_empty() {
            break r;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    };
    let id = serde_json::from_str::<serde_json::Value>(&reply).unwrap()["result"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let sent = p.curl(&format!(r#"{{"jsonrpc":"2.0","id":2,"method":"message.send","params":{{"session_id":"{id}","text":"hello"}}}}"#));
    assert!(sent.contains("\"seq\":2"), "{sent}");
    Command::new("kill")
        .args(["-TERM", &daemon.id().to_string()])
        .status()
        .unwrap();
    let status = daemon.wait().unwrap();
    assert!(status.success(), "SIGTERM is a normal stop: {status}");
    let mut log = String::new();
    std::io::Read::read_to_string(daemon.stderr.as_mut().unwrap(), &mut log).unwrap();
    assert!(
        log.contains("reason=Signal") && log.contains("airsd stopped"),
        "{log}"
    );
    assert!(!p.paths().socket().exists());
    // The next command starts a new daemon that has everything.
    let out = p.air(&["events", "--session", &id, "--json"]);
    assert!(out.status.success(), "{}", text(&out));
    let lines = String::from_utf8_lossy(&out.stdout).lines().count();
    assert_eq!(lines, 2, "session.created and the message");
}

#[test]
fn an_idle_daemon_exits_and_clients_keep_it_alive() {
    let p = Project::new();
    let mut daemon = Command::new(bin("airsd"))
        .args(["--foreground", "--idle-timeout", "1", "--project"])
        .arg(&p.root)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // A client holding a connection keeps the daemon up past the idle timeout.
    crate::rt().block_on(async {
        let mut options = air_proto::client::ConnectOptions::new(p.paths(), "air-tests", "0");
        options.start_wait = std::time::Duration::from_secs(5);
        let conn = loop {
            match air_proto::client::connect_running(&options).await {
                Ok(c) => break c,
                Err(_) => tokio::time::sleep(std::time::Duration::from_millis(10)).await,
            }
        };
        tokio::time::sleep(std::time::Duration::from_millis(2500)).await;
        use air_proto::api::AirApiClient;
        let status = conn.client.status(params::NoParams {}).await.unwrap();
        assert_eq!(status.idle_timeout_secs, 1);
        assert!(status.clients >= 1);
    });
    // Without clients it exits on its own.
    let started = std::time::Instant::now();
    let status = daemon.wait().unwrap();
    assert!(status.success());
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    assert!(!p.paths().socket().exists());
}

#[test]
fn stopping_with_clients_attached_tells_them() {
    let p = Project::new();
    assert!(p.air(&["daemon", "start"]).status.success());
    let pid = p.daemon_pid().unwrap();
    crate::rt().block_on(async {
        use air_proto::api::AirApiClient;
        let options = air_proto::client::ConnectOptions::new(p.paths(), "air-tests", "0");
        let conn = air_proto::client::connect_running(&options).await.unwrap();
        let session = conn
            .client
            .session_create(params::SessionCreate {
                ..Default::default()
            })
            .await
            .unwrap();
        let mut sub = conn
            .client
            .session_subscribe(params::Subscribe {
                session_id: session.id,
                from_seq: None,
            })
            .await
            .unwrap();
        let _ = sub.next().await; // the initial snapshot
        let out = p.air(&["daemon", "stop"]);
        assert!(out.status.success(), "{}", text(&out));
        let end = tokio::time::timeout(std::time::Duration::from_secs(5), sub.next())
            .await
            .unwrap();
        assert!(end.is_none(), "the subscription ends when the daemon stops");
    });
    wait_gone(pid);
}

#[test]
fn a_client_of_another_protocol_version_is_told_what_to_do() {
    let p = Project::new();
    assert!(p.air(&["daemon", "start"]).status.success());
    let reply = p.curl(r#"{"jsonrpc":"2.0","id":1,"method":"daemon.hello","params":{"hello":{"client":"old-air","version":"0.0.1","protocol_version":0}}}"#);
    assert!(
        reply.contains("protocol mismatch") && reply.contains("air daemon restart"),
        "{reply}"
    );
}

#[test]
fn socket_activation_adopts_the_inherited_socket() {
    let p = Project::new();
    let socket = p.paths().socket();
    // systemd-socket-activate binds the socket and starts airsd on the first connection,
    // passing it as LISTEN_FDS.
    let mut activator = match Command::new("systemd-socket-activate")
        .arg("-l")
        .arg(&socket)
        .arg(bin("airsd"))
        .args(["--foreground", "--project"])
        .arg(&p.root)
        .stderr(Stdio::null())
        .spawn()
    {
        Ok(c) => c,
        Err(e) => panic!(
            "systemd-socket-activate is needed for this test (tests/run installs systemd): {e}"
        ),
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    let reply = loop {
        let r = p.curl(r#"{"jsonrpc":"2.0","id":1,"method":"daemon.status"}"#);
        if r.contains("pid") || std::time::Instant::now() > deadline {
            break r;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert!(
        reply.contains(&format!("\"socket\":\"{}\"", socket.display())),
        "{reply}"
    );
    let _ = p.curl(r#"{"jsonrpc":"2.0","id":2,"method":"daemon.shutdown"}"#);
    let _ = activator.kill();
    let _ = activator.wait();
}

#[test]
fn service_unit_files_are_valid() {
    let dir = tempfile::tempdir().unwrap();
    let repo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    // systemd: the templates as shipped, with an instance's drop-in naming this
    // build's airsd (as `air daemon install-service` writes it), verified.
    for unit in ["airsd@.service", "airsd@.socket"] {
        std::fs::copy(repo.join("systemd").join(unit), dir.path().join(unit)).unwrap();
    }
    let drop_in = dir.path().join("airsd@tmp-proj.service.d");
    std::fs::create_dir_all(&drop_in).unwrap();
    std::fs::write(
        drop_in.join("air.conf"),
        format!(
            "[Service]\nExecStart=\nExecStart={} --foreground --project /%I --idle-timeout 0\n",
            bin("airsd").display()
        ),
    )
    .unwrap();
    let out = Command::new("systemd-analyze")
        .args(["verify", "--man=no"])
        .arg(dir.path().join("airsd@tmp-proj.service"))
        .arg(dir.path().join("airsd@tmp-proj.socket"))
        .env("SYSTEMD_UNIT_PATH", format!("{}:", dir.path().display()))
        .output()
        .unwrap();
    let report = text(&out);
    assert!(
        out.status.success() && report.trim().is_empty(),
        "systemd-analyze found problems in the units:\n{report}"
    );
    // launchd: the plist parses and runs airsd in the foreground.
    let out = Command::new("python3")
        .args(["-c", "import plistlib,sys; p=plistlib.load(open(sys.argv[1],'rb')); print(p['Label']); print(' '.join(p['ProgramArguments']))"])
        .arg(repo.join("launchd/com.air.airsd.plist"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(
        printed.contains("--foreground") && printed.contains("--project"),
        "{printed}"
    );
}

#[test]
fn three_terminals_following_events_see_the_same_lines() {
    let p = Project::new();
    let out = p.air(&["status"]);
    assert!(out.status.success(), "{}", text(&out));
    let created =
        p.curl(r#"{"jsonrpc":"2.0","id":1,"method":"session.create","params":{"title":"follow"}}"#);
    let id = serde_json::from_str::<serde_json::Value>(&created).unwrap()["result"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let followers: Vec<_> = (0..3)
        .map(|_| {
            Command::new(bin("air"))
                .args(["events", "--follow", "--json", "--session", &id])
                .current_dir(&p.root)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    // Wait until the three are attached (the status call itself is one more client).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let status = p.curl(r#"{"jsonrpc":"2.0","id":1,"method":"daemon.status"}"#);
        let clients = serde_json::from_str::<serde_json::Value>(&status).unwrap()["result"]
            ["clients"]
            .as_u64()
            .unwrap();
        if clients >= 4 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "followers did not attach"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    for i in 0..30 {
        let body = format!(
            r#"{{"jsonrpc":"2.0","id":2,"method":"message.send","params":{{"session_id":"{id}","text":"line {i}"}}}}"#
        );
        assert!(p.curl(&body).contains("\"seq\""));
    }
    // Stopping the daemon ends every follower (after it printed what it received).
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(p.air(&["daemon", "stop"]).status.success());
    let outputs: Vec<String> = followers
        .into_iter()
        .map(|f| String::from_utf8(f.wait_with_output().unwrap().stdout).unwrap())
        .collect();
    let seqs = |o: &str| -> Vec<u64> {
        o.lines()
            .map(|l| {
                serde_json::from_str::<serde_json::Value>(l).unwrap()["seq"]
                    .as_u64()
                    .unwrap()
            })
            .collect()
    };
    assert_eq!(
        seqs(&outputs[0]),
        (1..=31).collect::<Vec<u64>>(),
        "{}",
        outputs[0]
    );
    assert_eq!(outputs[0], outputs[1]);
    assert_eq!(outputs[0], outputs[2]);
}

#[test]
fn install_service_writes_units_for_this_project() {
    let p = Project::new();
    let home = tempfile::tempdir().unwrap();
    let out = Command::new(bin("air"))
        .args(["daemon", "install-service"])
        .current_dir(&p.root)
        .env("HOME", home.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let printed = String::from_utf8_lossy(&out.stdout);
    let instance = printed
        .lines()
        .find_map(|l| {
            l.trim()
                .strip_prefix("systemctl --user enable --now 'airsd@")
        })
        .and_then(|rest| rest.split_once(".socket'"))
        .map(|(instance, rest)| {
            // The service is enabled too: it resumes unfinished runs after a reboot.
            assert_eq!(rest, format!(" 'airsd@{instance}.service'"), "{printed}");
            instance
        })
        .unwrap_or_else(|| panic!("{printed}"))
        .to_string();
    let escaped = Command::new("systemd-escape")
        .arg("--path")
        .arg(p.root.canonicalize().unwrap())
        .output()
        .unwrap();
    assert_eq!(instance, String::from_utf8_lossy(&escaped.stdout).trim());
    let units = home.path().join(".config/systemd/user");
    // The template as shipped (another project's install leaves this one's alone);
    // this project's drop-in names the airsd beside this air.
    let service = std::fs::read_to_string(units.join("airsd@.service")).unwrap();
    let shipped = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../systemd/airsd@.service"),
    )
    .unwrap();
    assert_eq!(service, shipped);
    let drop_in =
        std::fs::read_to_string(units.join(format!("airsd@{instance}.service.d/air.conf")))
            .unwrap();
    assert!(
        drop_in.contains(&format!(
            "ExecStart={} --foreground",
            bin("airsd").display()
        )),
        "{drop_in}"
    );
    // No key is kept unless asked.
    assert!(!home.path().join(".air/service.env").exists());
    let out = Command::new("systemd-analyze")
        .args(["verify", "--man=no"])
        .arg(units.join(format!("airsd@{instance}.service")))
        .arg(units.join(format!("airsd@{instance}.socket")))
        .env("SYSTEMD_UNIT_PATH", format!("{}:", units.display()))
        .output()
        .unwrap();
    assert!(
        out.status.success() && text(&out).trim().is_empty(),
        "{}",
        text(&out)
    );
}

#[test]
fn a_fresh_clone_without_local_state_starts_its_daemon() {
    let p = Project::new();
    std::fs::remove_dir_all(p.paths().local()).unwrap();
    let out = p.air(&["status"]);
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(mode(&p.paths().local()), 0o700);
    assert!(p.paths().locks().is_dir());
}

#[test]
fn clients_arriving_while_the_daemon_stops_are_always_answered() {
    let p = Project::new();
    assert!(p.air(&["daemon", "start"]).status.success());
    let old = p.daemon_pid().unwrap();
    Command::new("kill")
        .args(["-TERM", &old.to_string()])
        .status()
        .unwrap();
    // Whether the old daemon still answers, is stopping (socket gone, lock held) or is
    // gone, every client gets an answer, from it or from a new daemon.
    for _ in 0..10 {
        let out = p.air(&["status", "--json"]);
        assert!(out.status.success(), "{}", text(&out));
    }
    let out = p.air(&["daemon", "status", "--json"]);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_ne!(
        v["pid"].as_u64().unwrap() as u32,
        old,
        "the stopped daemon was replaced"
    );
}

/// A client keeps its UI state under a key (D-053): stored, read back, replaced; a bad
/// key or an oversized value is refused naming the param.
#[test]
fn ui_state_is_kept_per_session_and_key() {
    let p = Project::new();
    assert!(p.air(&["daemon", "start"]).status.success());
    let reply =
        p.curl(r#"{"jsonrpc":"2.0","id":1,"method":"session.create","params":{"title":"ui"}}"#);
    let id = serde_json::from_str::<serde_json::Value>(&reply).unwrap()["result"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let call = |method: &str, params: String| -> serde_json::Value {
        let r = p.curl(&format!(
            r#"{{"jsonrpc":"2.0","id":2,"method":"{method}","params":{params}}}"#
        ));
        serde_json::from_str(&r).unwrap()
    };
    let get = call(
        "ui_state.get",
        format!(r#"{{"session_id":"{id}","key":"attach"}}"#),
    );
    assert_eq!(get["result"], serde_json::Value::Null, "{get}");
    let put = call(
        "ui_state.put",
        format!(r#"{{"session_id":"{id}","key":"attach","value":{{"selected_task":"T2"}}}}"#),
    );
    assert_eq!(put["result"], true, "{put}");
    call(
        "ui_state.put",
        format!(r#"{{"session_id":"{id}","key":"attach","value":{{"selected_task":"T3"}}}}"#),
    );
    let get = call(
        "ui_state.get",
        format!(r#"{{"session_id":"{id}","key":"attach"}}"#),
    );
    assert_eq!(get["result"]["selected_task"], "T3", "{get}");
    let bad = call(
        "ui_state.put",
        format!(r#"{{"session_id":"{id}","key":"","value":1}}"#),
    );
    assert!(
        bad["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("key"),
        "{bad}"
    );
    let big = "x".repeat(70_000);
    let bad = call(
        "ui_state.put",
        format!(r#"{{"session_id":"{id}","key":"k","value":"{big}"}}"#),
    );
    assert!(
        bad["error"]["message"]
            .as_str()
            .unwrap_or("")
            .contains("at most 65536"),
        "{bad}"
    );
}

/// The developer log (D-035): what the daemon logged is on disk only encrypted, to
/// the key it was given, one armoured age message per write, each readable with the
/// key alone.
#[test]
fn the_developer_log_is_on_disk_only_encrypted() {
    use std::io::Read;
    let p = Project::new();
    let identity = age::x25519::Identity::generate();
    let home = p.dir.path().join("air-home");
    let air = |args: &[&str]| {
        Command::new(bin("air"))
            .args(args)
            .current_dir(&p.root)
            .env("AIR_HOME", &home)
            .env(
                "AIR_DEVELOPER_LOG_RECIPIENT",
                identity.to_public().to_string(),
            )
            .output()
            .unwrap()
    };
    let out = air(&["status"]);
    assert!(out.status.success(), "{}", text(&out));
    let out = air(&["daemon", "stop"]);
    assert!(out.status.success(), "{}", text(&out));
    let files: Vec<PathBuf> = std::fs::read_dir(home.join("logs"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("air.developer.")
        })
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let on_disk = std::fs::read_to_string(&files[0]).unwrap();
    assert!(
        on_disk.starts_with("-----BEGIN AGE ENCRYPTED FILE-----"),
        "{on_disk}"
    );
    assert!(!on_disk.contains("airsd"), "plain text on disk: {on_disk}");
    let mut plain = String::new();
    for block in on_disk.split_inclusive("-----END AGE ENCRYPTED FILE-----\n") {
        let d = age::Decryptor::new(age::armor::ArmoredReader::new(block.as_bytes())).unwrap();
        d.decrypt(std::iter::once(&identity as &dyn age::Identity))
            .unwrap()
            .read_to_string(&mut plain)
            .unwrap();
    }
    assert!(plain.contains("airsd stopped"), "{plain}");
    // The start's project scan ends either way: done, or cut short by the stop
    // when the stop came first. Either line is a write of its own.
    assert!(
        plain.contains("project scanned") || plain.contains("project scan not kept"),
        "{plain}"
    );
    assert!(plain.contains("airsd listening"), "{plain}");
}

/// Requests whose id JSON-RPC does not allow get the protocol's error, with a null
/// id, not an empty `null`; junk params are named; a client creating sessions without
/// end does not make the daemon keep them all open.
#[test]
fn malformed_requests_get_the_protocols_errors() {
    let p = Project::new();
    assert!(p.air(&["daemon", "start"]).status.success());
    for id in ["{}", "[1]", "18446744073709551616", "1.5", "true"] {
        for body in [
            format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"daemon.status"}}"#),
            format!(r#"[{{"jsonrpc":"2.0","id":{id},"method":"daemon.status"}}]"#),
        ] {
            let answer: serde_json::Value = serde_json::from_str(&p.curl(&body)).unwrap();
            assert_eq!(answer["error"]["code"], -32600, "{body}: {answer}");
            assert_eq!(answer["id"], serde_json::Value::Null, "{body}: {answer}");
        }
    }
    for method in ["session.create", "memory.curate"] {
        let answer: serde_json::Value = serde_json::from_str(&p.curl(&format!(
            r#"{{"jsonrpc":"2.0","id":3,"method":"{method}","params":{{"junk":1}}}}"#
        )))
        .unwrap();
        assert_eq!(answer["error"]["code"], -32602, "{method}: {answer}");
    }
    for _ in 0..airsd::daemon::MOST_OPEN_SESSIONS + 5 {
        let answer = p.curl(r#"{"jsonrpc":"2.0","id":4,"method":"session.create","params":{}}"#);
        assert!(answer.contains("\"result\""), "{answer}");
    }
    let status: serde_json::Value =
        serde_json::from_str(&p.curl(r#"{"jsonrpc":"2.0","id":5,"method":"daemon.status"}"#))
            .unwrap();
    assert!(status["result"]["pid"].is_number(), "{status}");
    let _ = p.air(&["daemon", "stop"]);
}
