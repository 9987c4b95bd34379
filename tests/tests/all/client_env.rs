//! A run uses the provider settings of the client that started it: two `air run`s in
//! one project, the first with `ANTHROPIC_BASE_URL` at one provider and the second at
//! another, reach each its own, though one daemon (started by the first) runs both;
//! `air doctor` says what this shell's runs use and how the daemon's own differ. The
//! key is never printed nor stored.

use std::process::Command;

use air_tests::bin;
use air_tests::mock_provider::{Exchange, MockProvider};
use serde_json::json;

use crate::agents::{any, call, review};
use crate::daemon::Project;

const PLAN: &str = "## Task A: write a greeting\n\n- model: anthropic/claude-haiku-4-5\n\nCreate FILE saying hello.\n";

/// The executor writes `file` and submits; the reviewer approves.
fn exchanges(file: &str) -> Vec<Exchange> {
    let x = |reply| Exchange {
        request: None,
        expect: any(),
        reply,
    };
    vec![
        x(call(
            "e1",
            "fs_write",
            json!({"path": file, "content": "hello\n"}),
        )),
        x(call(
            "e2",
            "submit_result",
            json!({"status": "completed", "summary": format!("{file} says hello.")}),
        )),
        x(review("approved", json!([]))),
    ]
}

fn air(p: &Project, url: &str, args: &[&str]) -> std::process::Output {
    let mut c = Command::new(bin("air"));
    c.args(args)
        .current_dir(&p.root)
        .env("AIR_WORKER", bin("air-worker"))
        .env("AIR_HOME", p.dir.path().join("air-home"))
        .env("ANTHROPIC_API_KEY", "sk-client-secret")
        .env("ANTHROPIC_BASE_URL", url)
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENROUTER_API_KEY")
        .env_remove("AIR_MODEL")
        .env_remove("AIR_RECORD")
        .env_remove("GITHUB_STEP_SUMMARY");
    c.output().unwrap()
}

#[test]
fn each_run_calls_the_provider_its_client_names() {
    let p = Project::new();
    // The mock servers run on this runtime's thread while `air` runs here.
    let rt = crate::provider_rt();
    let x = rt.block_on(MockProvider::start(exchanges("x.txt")));
    let y = rt.block_on(MockProvider::start(exchanges("y.txt")));
    std::fs::write(p.root.join("x.md"), PLAN.replace("FILE", "x.txt")).unwrap();
    std::fs::write(p.root.join("y.md"), PLAN.replace("FILE", "y.txt")).unwrap();
    let show = |o: &std::process::Output| {
        format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    };

    // The first run starts the daemon, with X in its environment.
    let out = air(&p, &x.url, &["run", "--plan", "x.md"]);
    assert!(out.status.success(), "{}", show(&out));
    assert_eq!(x.received().len(), 3, "{:?}", x.mismatches());
    // The second, from a shell that names Y, calls Y; X hears nothing more.
    let out = air(&p, &y.url, &["run", "--plan", "y.md"]);
    assert!(out.status.success(), "{}", show(&out));
    assert_eq!(y.received().len(), 3, "{:?}", y.mismatches());
    assert_eq!(x.received().len(), 3);
    assert!(p.root.join("x.txt").exists() && p.root.join("y.txt").exists());

    // `air doctor` from Y's shell: this shell's settings, and the daemon's own.
    let out = air(&p, &y.url, &["doctor"]);
    let text = show(&out);
    assert!(
        text.contains(&format!("runs started from this shell use its provider settings: ANTHROPIC_API_KEY set, ANTHROPIC_BASE_URL={}", y.url)),
        "{text}"
    );
    assert!(text.contains("the daemon's own differ"), "{text}");
    assert!(
        text.contains(&format!("ANTHROPIC_BASE_URL={}", x.url)),
        "{text}"
    );
    assert!(!text.contains("sk-client-secret"), "{text}");

    // The key is in no session, no log.
    let _ = air(&p, &y.url, &["daemon", "stop"]);
    let mut stack = vec![p.root.join(".air")];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = e.path();
            if path.is_dir() {
                stack.push(path);
            } else if let Ok(bytes) = std::fs::read(&path) {
                let found = bytes
                    .windows(b"sk-client-secret".len())
                    .any(|w| w == b"sk-client-secret");
                assert!(!found, "the key is in {}", path.display());
            }
        }
    }
    drop(rt);
}
