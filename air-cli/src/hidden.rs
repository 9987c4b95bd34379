//! airsd's hidden subcommands run by this client (`airsd __scan`, `__propose`,
//! `__migrate`): each prints its answer as JSON on stdout, its error on stderr.

use std::process::Stdio;

use crate::Failure;

/// What an interrupt (Ctrl-C) does while the subcommand runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interrupt {
    /// It reaches the subcommand, which stops and answers (a terminal's Ctrl-C
    /// reaches both already; passing it on covers a `kill -INT` of this command).
    PassOn,
    /// The subcommand must not be cut off (it holds signals itself): the user is told
    /// it goes on to its end.
    Hold(&'static str),
}

/// Runs `airsd SUBCOMMAND --root ROOT ARGS…` and reads the JSON it prints. With
/// `progress` its stderr is the user's (what it is doing); otherwise it is the error
/// when it fails. An interrupt does as `interrupt` says rather than ending this
/// command.
pub async fn run(
    subcommand: &str,
    root: &std::path::Path,
    args: &[&str],
    interrupt: Interrupt,
    progress: bool,
) -> Result<serde_json::Value, Failure> {
    let airsd = crate::doctor::airsd_path();
    let child = tokio::process::Command::new(&airsd)
        .arg(subcommand)
        .arg("--root")
        .arg(root)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(if progress {
            Stdio::inherit()
        } else {
            Stdio::piped()
        })
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| Failure::from(format!("cannot start {}: {e}", airsd.display())))?;
    let pid = child.id();
    let mut sigint = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
        .map_err(|e| Failure::from(format!("cannot handle signals: {e}")))?;
    let output = child.wait_with_output();
    tokio::pin!(output);
    let out = loop {
        tokio::select! {
            out = &mut output => break out,
            _ = sigint.recv() => match interrupt {
                Interrupt::PassOn => {
                    if let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()) {
                        let _ = nix::sys::signal::kill(
                            nix::unistd::Pid::from_raw(pid),
                            nix::sys::signal::Signal::SIGINT,
                        );
                    }
                }
                Interrupt::Hold(why) => eprintln!("air: {why}"),
            }
        }
    }
    .map_err(|e| Failure::from(format!("{} {subcommand}: {e}", airsd.display())))?;
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
