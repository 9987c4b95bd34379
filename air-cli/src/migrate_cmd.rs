//! `air migrate` (D-055): shows how this project's `.air` would be brought to the
//! schema of this air, asks (whatever the permission mode; `--yes` is the user's own
//! answer given ahead), stops the project's daemon, and has airsd do it: back up, migrate,
//! verify, and put everything back on any failure. The work is airsd's (`airsd
//! __migrate`): this client never opens a database.

use std::io::{BufRead, Write};

use crate::hidden::{self, Interrupt};
use crate::{project, CmdResult};

pub async fn run(yes: bool) -> CmdResult {
    let paths = project()?;
    let plan = hidden::run("__migrate", paths.root(), &[], Interrupt::Ends, false).await?;
    let steps = plan["steps"].as_array().cloned().unwrap_or_default();
    for u in plan["unreadable"].as_array().into_iter().flatten() {
        outln!(
            "cannot read {} ({}): left as it is",
            u["path"].as_str().unwrap_or("?"),
            u["reason"].as_str().unwrap_or("no reason given")
        );
    }
    let unreadable = plan["unreadable"].as_array().map_or(0, Vec::len);
    if steps.is_empty() {
        outln!(
            "up to date{}: project.json at v{}, {} file(s) at this air's versions (sessions v{})",
            if unreadable > 0 {
                format!(" except the {unreadable} unreadable above")
            } else {
                String::new()
            },
            plan["project_schema"],
            plan["current"],
            plan["session_schema"]
        );
        return Ok(());
    }
    outln!(
        "air migrate would bring {} file(s) of this project's .air to air {}'s schema:",
        steps.len(),
        env!("CARGO_PKG_VERSION")
    );
    for s in &steps {
        outln!(
            "  {}: v{} → v{} ({})",
            s["path"].as_str().unwrap_or("?"),
            s["from"],
            s["to"],
            s["what"].as_str().unwrap_or("")
        );
    }
    outln!("The files it changes are copied to .air/local/backups/migrations/<time>/ first; each is verified after, and on any failure all are put back as they were.");
    let lock = paths.locks().join("airsd.lock");
    let running = crate::daemon_cmd::lock_held(&lock);
    if running {
        outln!("The daemon serving this project is stopped first.");
    }
    if !yes {
        // On stderr: seen at the terminal even when stdout goes to a file.
        eprint!("migrate? [y/N] ");
        std::io::stderr().flush()?;
        let mut answer = String::new();
        std::io::stdin().lock().read_line(&mut answer)?;
        if !matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes") {
            outln!("nothing was changed");
            return Ok(());
        }
    }
    if running {
        crate::daemon_cmd::stop().await?;
    }
    let outcome = hidden::run(
        "__migrate",
        paths.root(),
        &["--apply"],
        Interrupt::Hold(
            "the migration goes on to its end: cut off, it could leave .air half migrated",
        ),
        false,
    )
    .await?;
    let done = outcome["migrated"].as_array().map(Vec::len).unwrap_or(0);
    outln!(
        "migrated {done} file(s) and verified them; the copies from before are in {}",
        outcome["backup"].as_str().unwrap_or("?")
    );
    Ok(())
}
