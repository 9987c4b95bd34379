//! `air migrate` (D-055): shows how this project's `.air` would be brought to the
//! schema of this air, asks (whatever the permission mode; `--yes` is the user's own
//! answer given ahead), stops the project's daemon, and has airsd do it: back up, migrate,
//! verify, and put everything back on any failure. The work is airsd's (`airsd
//! __migrate`): this client never opens a database.

use std::io::{BufRead, Write};
use std::process::Stdio;

use serde_json::Value;

use crate::{exit, project, CmdResult, Failure};

/// Runs `airsd __migrate` and returns its JSON, or its error in its words.
fn airsd_migrate(root: &std::path::Path, apply: bool) -> Result<Value, Failure> {
    let airsd = crate::doctor::airsd_path();
    let mut cmd = std::process::Command::new(&airsd);
    cmd.arg("__migrate")
        .arg("--root")
        .arg(root)
        .stdin(Stdio::null());
    if apply {
        cmd.arg("--apply");
    }
    let out = cmd
        .output()
        .map_err(|e| Failure::from(format!("cannot start {}: {e}", airsd.display())))?;
    if !out.status.success() {
        return Err(Failure {
            code: exit::FAILED,
            message: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    serde_json::from_slice(&out.stdout).map_err(|e| {
        Failure::from(format!(
            "{} __migrate answered unreadably: {e}",
            airsd.display()
        ))
    })
}

pub async fn run(yes: bool) -> CmdResult {
    let paths = project()?;
    let plan = airsd_migrate(paths.root(), false)?;
    let steps = plan["steps"].as_array().cloned().unwrap_or_default();
    for u in plan["unreadable"].as_array().into_iter().flatten() {
        println!(
            "cannot read {} ({}): left as it is",
            u["path"].as_str().unwrap_or("?"),
            u["reason"].as_str().unwrap_or("no reason given")
        );
    }
    if steps.is_empty() {
        println!(
            "up to date: project.json at v{}, {} file(s) at this air's versions (sessions v{})",
            plan["project_schema"], plan["current"], plan["session_schema"]
        );
        return Ok(());
    }
    println!(
        "air migrate would bring {} file(s) of this project's .air to air {}'s schema:",
        steps.len(),
        env!("CARGO_PKG_VERSION")
    );
    for s in &steps {
        println!(
            "  {}: v{} → v{} ({})",
            s["path"].as_str().unwrap_or("?"),
            s["from"],
            s["to"],
            s["what"].as_str().unwrap_or("")
        );
    }
    println!("The files it changes are copied to .air/local/backups/migrations/<time>/ first; each is verified after, and on any failure all are put back as they were.");
    let lock = paths.locks().join("airsd.lock");
    let running = crate::daemon_cmd::lock_held(&lock);
    if running {
        println!("The daemon serving this project is stopped first.");
    }
    if !yes {
        print!("migrate? [y/N] ");
        std::io::stdout().flush()?;
        let mut answer = String::new();
        std::io::stdin().lock().read_line(&mut answer)?;
        if !matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes") {
            println!("nothing was changed");
            return Ok(());
        }
    }
    if running {
        crate::daemon_cmd::stop().await?;
    }
    let outcome = airsd_migrate(paths.root(), true)?;
    let done = outcome["migrated"].as_array().map(Vec::len).unwrap_or(0);
    println!(
        "migrated {done} file(s) and verified them; the copies from before are in {}",
        outcome["backup"].as_str().unwrap_or("?")
    );
    Ok(())
}
