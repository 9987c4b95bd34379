//! `air restore`: brings back files outside the project that agents changed, from the
//! backup repository at `.air/local/backups/` (D-030, D-032). It needs no daemon.

use std::path::PathBuf;

use air_proto::backup::{Backups, Restored};

use crate::{exit, project, CmdResult, Failure};

#[derive(clap::Args, Debug)]
#[group(required = true, multiple = false)]
pub struct RestoreArgs {
    /// List the backups, newest first.
    #[arg(long)]
    list: bool,
    /// Restore one file to its state before its latest change by an agent.
    #[arg(long, value_name = "PATH")]
    file: Option<PathBuf>,
    /// Restore every file a session changed to its state before the session.
    #[arg(long, value_name = "ID")]
    session: Option<String>,
    /// Restore every file changed since this time (RFC 3339, e.g.
    /// 2026-11-30T12:00:00Z) to its state then.
    #[arg(long, value_name = "TIME")]
    at: Option<String>,
}

fn usage(message: String) -> Failure {
    Failure {
        code: exit::USAGE,
        message,
    }
}

fn report(restored: &[Restored]) {
    for r in restored {
        if r.removed {
            outln!(
                "removed  {}  (it did not exist before; backup {})",
                r.path.display(),
                short(&r.from_commit)
            );
        } else {
            outln!(
                "restored {}  (backup {})",
                r.path.display(),
                short(&r.from_commit)
            );
        }
    }
}

fn short(commit: &str) -> &str {
    commit.get(..10).unwrap_or(commit)
}

pub fn run(args: RestoreArgs) -> CmdResult {
    let paths = project()?;
    let backups = Backups::new(paths.backups());
    if args.list {
        let list = backups.list()?;
        if list.is_empty() {
            outln!("no backups: no agent has changed a file outside the project");
        }
        for e in list {
            outln!(
                "{}  {}  session {}  {}  {}{}",
                short(&e.commit),
                e.time,
                e.session_id,
                e.agent_type,
                e.path.display(),
                if e.existed { "" } else { "  (created)" }
            );
        }
        return Ok(());
    }
    if let Some(file) = args.file {
        let absolute = if file.is_absolute() {
            file
        } else {
            std::env::current_dir()
                .map_err(|e| Failure::from(format!("cannot read the current directory: {e}")))?
                .join(file)
        };
        let parent = absolute
            .parent()
            .and_then(|p| std::fs::canonicalize(p).ok())
            .unwrap_or_else(|| absolute.parent().map(PathBuf::from).unwrap_or_default());
        let resolved = match absolute.file_name() {
            Some(name) => parent.join(name),
            None => absolute,
        };
        report(&[backups.restore_file(&resolved)?]);
        return Ok(());
    }
    if let Some(session) = args.session {
        report(&backups.restore_session(&session)?);
        return Ok(());
    }
    if let Some(at) = args.at {
        let when = air_proto::time::parse(&at).ok_or_else(|| {
            usage(format!(
                "--at: `{at}` is not an RFC 3339 time (e.g. 2026-11-30T12:00:00Z)"
            ))
        })?;
        report(&backups.restore_at(when)?);
        return Ok(());
    }
    Err(usage("give one of --list, --file, --session, --at".into()))
}
