//! airsd's hidden subcommands run by this client (`airsd __scan`, `__propose`,
//! `__migrate`): each prints its answer as JSON on stdout, its error on stderr.

use std::process::Stdio;

use crate::Failure;

/// What an interrupt (Ctrl-C) does while the subcommand runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interrupt {
    /// It ends this command as usual (the default action: no handler is taken); the
    /// subcommand, which a terminal's Ctrl-C reaches too, stops its own work.
    Ends,
    /// The subcommand must not be cut off (it holds signals itself): this command
    /// waits for it and says why. (For a last step only: the handler stays for the
    /// rest of the process.)
    Hold(&'static str),
}

/// Runs `airsd SUBCOMMAND --root ROOT ARGS…` and reads the JSON it prints. With
/// `progress` its stderr is the user's (what it is doing); otherwise it is the error
/// when it fails. An interrupt does as `interrupt` says.
pub async fn run(
    subcommand: &str,
    root: &std::path::Path,
    args: &[&str],
    interrupt: Interrupt,
    progress: bool,
) -> Result<serde_json::Value, Failure> {
    let airsd = crate::doctor::airsd_path();
    // Taken before the subcommand starts: no moment in which Ctrl-C ends this command.
    let mut sigint = match interrupt {
        Interrupt::Ends => None,
        Interrupt::Hold(_) => Some(
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
                .map_err(|e| Failure::from(format!("cannot handle signals: {e}")))?,
        ),
    };
    let mut child = tokio::process::Command::new(&airsd)
        .arg(subcommand)
        .arg("--root")
        .arg(root)
        .args(args)
        // A pipe this command holds until the subcommand ends: when this command is
        // killed it closes, and a subcommand that watches it stops.
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(if progress {
            Stdio::inherit()
        } else {
            Stdio::piped()
        })
        // Never killed half way when it must not be cut off.
        .kill_on_drop(interrupt == Interrupt::Ends)
        .spawn()
        .map_err(|e| Failure::from(format!("cannot start {}: {e}", airsd.display())))?;
    let held_stdin = child.stdin.take();
    let output = child.wait_with_output();
    let out = match (interrupt, sigint.as_mut()) {
        (Interrupt::Hold(why), Some(sigint)) => {
            tokio::pin!(output);
            loop {
                tokio::select! {
                    out = &mut output => break out,
                    _ = sigint.recv() => eprintln!("air: {why}"),
                }
            }
        }
        _ => output.await,
    }
    .map_err(|e| Failure::from(format!("{} {subcommand}: {e}", airsd.display())))?;
    drop(held_stdin);
    if !out.status.success() {
        let said = String::from_utf8_lossy(&out.stderr).trim().to_string();
        return Err(Failure::from(if said.is_empty() {
            format!("{} {subcommand} failed ({})", airsd.display(), out.status)
        } else {
            said
        }));
    }
    serde_json::from_slice(&out.stdout).map_err(|e| {
        Failure::from(format!(
            "{} {subcommand} answered unreadably: {e}",
            airsd.display()
        ))
    })
}
