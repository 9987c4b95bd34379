//! The tests of `exec`.

#![allow(clippy::unwrap_used)]
use super::*;

#[test]
fn a_command_behind_the_proxy_is_told_it_the_ways_its_tools_read() {
    let mut env: Vec<(std::ffi::OsString, std::ffi::OsString)> = vec![
        ("HTTPS_PROXY".into(), "http://elsewhere:1".into()),
        ("JAVA_TOOL_OPTIONS".into(), "-Xmx1g".into()),
    ];
    through_proxy(&mut env);
    let get = |k: &str| {
        env.iter()
            .filter(|(n, _)| n == k)
            .map(|(_, v)| v.to_string_lossy().into_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(get("HTTPS_PROXY"), [crate::sandbox::PROXY_URL]);
    assert_eq!(get("https_proxy"), [crate::sandbox::PROXY_URL]);
    // The JVM's own properties, after the options it had.
    let jvm = get("JAVA_TOOL_OPTIONS");
    assert_eq!(jvm.len(), 1);
    assert!(
        jvm[0].starts_with("-Xmx1g -Dhttp.proxyHost=127.0.0.1 -Dhttp.proxyPort=3128")
            && jvm[0].contains("-Dhttps.proxyHost=127.0.0.1 -Dhttps.proxyPort=3128"),
        "{jvm:?}"
    );
}

#[test]
fn commands_get_an_allowlist_of_variables_and_never_a_secret() {
    let vars = [
        ("PATH", "/usr/bin"),
        ("HOME", "/home/u"),
        ("LC_TIME", "C"),
        ("CARGO_HOME", "/c"),
        ("GIT_AUTHOR_NAME", "a"),
        ("ANTHROPIC_API_KEY", "sk-1"),
        ("OPENAI_BASE_URL", "http://x"),
        ("GITHUB_TOKEN", "t"),
        ("AWS_SECRET_ACCESS_KEY", "s"),
        ("DB_PASSWORD", "p"),
        ("AIR_MODEL", "m"),
        ("HTTPS_PROXY", "http://user:pw@proxy:3128"),
        ("HTTP_PROXY", "http://proxy:3128"),
        ("MYAPP_MODE", "dev"),
        ("MYAPP_TOKEN", "t"),
        ("UNRELATED", "x"),
    ]
    .map(|(k, v)| (k.into(), v.into()));
    let env = command_env(vars.into_iter(), &["MYAPP_*".into()], Some(Path::new("/h")));
    let names: Vec<String> = env
        .iter()
        .map(|(k, v)| format!("{}={}", k.to_string_lossy(), v.to_string_lossy()))
        .collect();
    assert_eq!(
        names,
        [
            "PATH=/usr/bin",
            "LC_TIME=C",
            "CARGO_HOME=/c",
            "GIT_AUTHOR_NAME=a",
            "HTTP_PROXY=http://proxy:3128",
            "MYAPP_MODE=dev",
            "HOME=/h"
        ]
    );
}

#[test]
fn capture_keeps_the_head_and_the_tail() {
    let mut c = Capture::default();
    c.push(b"start\n");
    for _ in 0..10_000 {
        c.push(b"middle line\n");
    }
    c.push(b"the end\n");
    assert!(c.truncated());
    let t = c.text(Some("artifact://x"));
    assert!(t.starts_with("start\nmiddle"));
    assert!(t.ends_with("middle line\nthe end\n"));
    assert!(
        t.contains(&format!(
            "bytes left out, from byte {SHOWN_BYTES}; all of it is in artifact://x"
        )),
        "{}",
        &t[SHOWN_BYTES - 20..SHOWN_BYTES + 120]
    );
    assert!(t.len() < 2 * SHOWN_BYTES + 200);
    let mut small = Capture::default();
    small.push(b"ok\n");
    assert_eq!(small.text(None), "ok\n");
}

fn prepared(command: &str, timeout: Duration) -> Prepared {
    Prepared {
        command: command.into(),
        cwd: std::env::temp_dir(),
        timeout,
        extra_writable: Vec::new(),
        visible: Vec::new(),
        unlocked: Vec::new(),
    }
}

#[test]
fn streams_in_order_and_kills_the_process_tree_on_timeout() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let launch = Launch {
            launcher: None,
            policy: Default::default(),
            env: command_env(std::env::vars_os(), &[], None),
            stdin: None,
        };
        let mut seen = Vec::new();
        let ended = execute(
            &prepared(
                "echo one; echo two >&2; echo three; exit 3",
                Duration::from_secs(10),
            ),
            &launch,
            |c, d| seen.push((c, String::from_utf8_lossy(d).into_owned())),
            || false,
        )
        .await
        .unwrap();
        assert_eq!(ended.exit_code, Some(3));
        let out: String = seen
            .iter()
            .filter(|(c, _)| *c == Channel::Stdout)
            .map(|(_, t)| t.as_str())
            .collect();
        assert_eq!(out, "one\nthree\n");

        // A pipeline whose first command fails fails (pipefail).
        let ended = execute(
            &prepared("false | true", Duration::from_secs(10)),
            &launch,
            |_, _| {},
            || false,
        )
        .await
        .unwrap();
        assert_eq!(ended.exit_code, Some(1), "`false | true` must fail");

        // A child that outlives the timeout is killed with its parent.
        let dir = tempfile::tempdir().unwrap();
        let pidfile = dir.path().join("pid");
        let t0 = Instant::now();
        let ended = execute(
            &prepared(
                &format!("sleep 30 & echo $! > {}; wait", pidfile.display()),
                Duration::from_millis(300),
            ),
            &launch,
            |_, _| {},
            || false,
        )
        .await
        .unwrap();
        assert!(ended.timed_out);
        assert!(t0.elapsed() < Duration::from_secs(5));
        let pid: i32 = std::fs::read_to_string(&pidfile)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        // Killed with its group: it is gone (or a zombie) within a deadline.
        let alive = || {
            nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None).is_ok()
                && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .unwrap_or_default()
                    .contains(") Z")
        };
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while alive() && std::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(!alive(), "the grandchild {pid} survived");
    });
}
