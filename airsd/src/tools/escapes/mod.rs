//! The escape corpus: attempts to reach past the project, the task's scope or the
//! agent's role through the tools. Each must be refused or asked, for the reason the
//! row names; a few ordinary actions must go through, so the corpus cannot pass by
//! refusing everything.

#![allow(clippy::unwrap_used)]

use std::collections::HashSet;

use air_proto::backup::{BackupTag, Backups};
use air_proto::config::PermissionsConfig;
use air_proto::task::TaskScope;
use serde_json::{json, Value};

use super::exec::{self, RunInput};
use super::permission::{Engine, Permits, Risk};
use super::scope::Scope;
use super::{FsContext, ReadLedger};

mod prelude {
    pub use crate::tools::permission::Risk;
    pub use air_proto::event::AgentType;
    pub use air_proto::plan::PermissionMode;
    pub use serde_json::{json, Value};
}

mod cases;

use cases::{cases, fixture, Act, Allow, Ask, Case, Fixture, Refuse};

/// Runs one case: `Ok` with the risks asked, or `Err` with the refusal.
fn attempt(f: &Fixture, c: &Case) -> Result<Vec<Risk>, String> {
    let engine = Engine::new(
        &f.root,
        Some(&f.home),
        Some(&f.home.join(".air")),
        c.mode,
        &PermissionsConfig::default(),
    )
    .unwrap();
    let backups = Backups::new(f.root.join(".air/local/backups"));
    let scope = Scope::new(&TaskScope {
        allowed_paths: c.narrow.then(|| vec!["src/**".into()]),
        denied_paths: Some(vec!["secret/**".into()]),
        preserved_paths: Some(vec!["keep/**".into()]),
        ..TaskScope::default()
    })
    .unwrap();
    let ledger = ReadLedger::default();
    let run = |granted: HashSet<String>, tool: &str, input: Value| {
        let permits = Permits::new(&engine, Some(&backups), BackupTag::default(), granted);
        let ctx = FsContext {
            root: &f.root,
            agent_id: "agent",
            ledger: &ledger,
            scope: &scope,
            perm: &permits,
            launcher: crate::launcher::test_launcher(&f.root),
            overlay: None,
        };
        let result = if tool == "shell.run" {
            super::allowed(c.agent, tool).and_then(|()| {
                exec::prepare(
                    &ctx,
                    &RunInput {
                        command: input["command"].as_str().unwrap_or_default().to_string(),
                        cwd: input["cwd"].as_str().map(str::to_string),
                        timeout_ms: None,
                        description: None,
                        background: false,
                    },
                    c.agent,
                    exec::Confinement::default(),
                )
                .map(|_| Value::Null)
            })
        } else {
            super::call(&ctx, c.agent, tool, input)
        };
        (result, permits.take_asks())
    };
    let (tool, input) = match &c.act {
        Act::Fs(tool, input) => (
            *tool,
            serde_json::from_str(&f.fill(&input.to_string())).unwrap(),
        ),
        Act::Cmd(command) => ("shell.run", json!({ "command": f.fill(command) })),
    };
    // Writes need a read of the file first: done (with the read granted), so the
    // write is judged for itself.
    if tool != "fs.read" && tool != "shell.run" {
        if let Some(path) = input.get("path").and_then(Value::as_str) {
            let probe = Permits::new(&engine, None, BackupTag::default(), HashSet::new());
            let ctx = FsContext {
                root: &f.root,
                agent_id: "agent",
                ledger: &ledger,
                scope: &Scope::default(),
                perm: &probe,
                launcher: crate::launcher::test_launcher(&f.root),
                overlay: None,
            };
            if let Ok(resolved) = ctx.resolve(path) {
                let granted = HashSet::from([format!("read:{}", resolved.display())]);
                let _ = run(granted, "fs.read", json!({ "path": path }));
            }
        }
    }
    let (result, asks) = run(HashSet::new(), tool, input);
    match (result, asks.is_empty()) {
        (Ok(_), true) => Ok(Vec::new()),
        (Err(_), false) => Ok(asks.iter().map(|a| a.risk).collect()),
        (Err(e), true) => Err(e.0),
        (Ok(_), false) => Err("went through although it asked".into()),
    }
}

#[test]
fn every_escape_is_refused_or_asked_for_its_reason() {
    let f = fixture();
    let cases = cases();
    let escapes = cases.iter().filter(|c| !matches!(c.expect, Allow)).count();
    assert!(escapes >= 60, "the corpus has {escapes} escapes");
    let mut failures = Vec::new();
    for c in &cases {
        let got = attempt(&f, c);
        let ok = match (&c.expect, &got) {
            (Ask(risk), Ok(risks)) => risks.contains(risk),
            (Refuse(why), Err(e)) => e.contains(why),
            (Allow, Ok(risks)) => risks.is_empty(),
            _ => false,
        };
        if !ok {
            let want = match &c.expect {
                Ask(r) => format!("ask ({})", r.as_str()),
                Refuse(w) => format!("refuse (…{w}…)"),
                Allow => "allow".into(),
            };
            failures.push(format!("{}: wanted {want}, got {got:?}", c.name));
        }
    }
    // Nothing escaped on disk either.
    assert_eq!(
        std::fs::read_to_string(f.outside.join("o.txt")).unwrap(),
        "outside\n"
    );
    println!(
        "{escapes} escapes tried through the tools, each refused or asked for its reason; {} ordinary actions went through",
        cases.len() - escapes
    );
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

/// A path that becomes a symbolic link between the check and the use is refused.
#[test]
fn a_file_swapped_for_a_symlink_after_the_check_is_refused() {
    let f = fixture();
    let path = f.root.join("src/a.rs");
    std::fs::remove_file(&path).unwrap();
    std::os::unix::fs::symlink(f.home.join(".ssh/id_rsa"), &path).unwrap();
    let e = super::fs::read_nofollow(&path, &f.root, "src/a.rs").unwrap_err();
    assert!(
        e.0.contains("became a symbolic link after it was checked"),
        "{e}"
    );
}
