//! `git.status` and `git.diff`: the read-only views of the working tree a reviewer
//! needs, from the real `git` in the project root.

use std::process::Command;

use serde::{Deserialize, Serialize};

use super::error::ToolError;
use super::fs::FsContext;

/// Bytes of a diff returned at most.
pub const MAX_DIFF_BYTES: usize = 256 * 1024;

#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StatusInput {}

#[derive(Clone, Debug, PartialEq, Deserialize, Serialize, schemars::JsonSchema)]
pub struct StatusOutput {
    /// The branch line (`## main...origin/main`), if any.
    pub branch: Option<String>,
    /// `XY path` entries of `git status --porcelain`.
    pub entries: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DiffInput {
    /// Compare the index with HEAD (what is staged) instead of the working tree.
    #[serde(default)]
    pub staged: bool,
    /// Only these paths (relative to the project root).
    #[serde(default)]
    pub paths: Vec<String>,
    /// A revision to compare against (e.g. `HEAD~1`).
    #[serde(default)]
    pub base: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Deserialize, Serialize, schemars::JsonSchema)]
pub struct DiffOutput {
    pub diff: String,
    pub truncated: bool,
}

/// Runs git for a read-only tool: with a clean environment (none of airsd's, which
/// holds the providers' keys), none of the repository's ways to run code (fsmonitor,
/// external diffs, text conversions, hooks), at most `cap` bytes of output kept and
/// [`super::fs::TOOL_TIME_LIMIT`] to finish.
fn git_capped(ctx: &FsContext<'_>, args: &[&str], cap: usize) -> Result<(String, bool), ToolError> {
    use std::io::Read as _;
    let mut cmd = Command::new("git");
    cmd.args([
        "-c",
        "core.fsmonitor=false",
        "-c",
        "core.hooksPath=/dev/null",
        "-c",
        "diff.external=",
    ])
    .args(args)
    .current_dir(ctx.root)
    .env_clear()
    .env("GIT_PAGER", "cat")
    .env("GIT_OPTIONAL_LOCKS", "0")
    .env("GIT_TERMINAL_PROMPT", "0")
    .stdin(std::process::Stdio::null())
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped());
    for k in ["PATH", "HOME", "LANG", "LC_ALL", "TZ"] {
        if let Some(v) = std::env::var_os(k) {
            cmd.env(k, v);
        }
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| ToolError(format!("cannot run git: {e}")))?;
    let (Some(mut stdout), Some(mut stderr)) = (child.stdout.take(), child.stderr.take()) else {
        return Err(ToolError("git's output could not be read".into()));
    };
    let errors = std::thread::spawn(move || {
        let mut text = Vec::new();
        let _ = (&mut stderr).take(64 * 1024).read_to_end(&mut text);
        text
    });
    // The clock: past it, git is killed and what it gave is all there is.
    let pid = child.id();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let clock = std::thread::spawn(move || {
        if done_rx.recv_timeout(super::fs::TOOL_TIME_LIMIT).is_err() {
            if let Ok(pid) = i32::try_from(pid) {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
            return true;
        }
        false
    });
    let mut out = Vec::new();
    let read = (&mut stdout).take(cap as u64 + 1).read_to_end(&mut out);
    let truncated = out.len() > cap;
    if truncated {
        out.truncate(cap);
        let _ = child.kill();
    }
    drop(stdout);
    let status = child.wait();
    let _ = done_tx.send(());
    let timed_out = clock.join().unwrap_or(false);
    let stderr = errors.join().unwrap_or_default();
    if timed_out {
        return Err(ToolError(format!(
            "git {}: stopped after {} s",
            args.join(" "),
            super::fs::TOOL_TIME_LIMIT.as_secs()
        )));
    }
    read.map_err(|e| ToolError(format!("git {}: {e}", args.join(" "))))?;
    match status {
        Ok(s) if s.success() || truncated => {}
        Ok(_) => {
            return Err(ToolError(format!(
                "git {}: {}",
                args.join(" "),
                String::from_utf8_lossy(&stderr).trim()
            )))
        }
        Err(e) => return Err(ToolError(format!("git {}: {e}", args.join(" ")))),
    }
    Ok((String::from_utf8_lossy(&out).into_owned(), truncated))
}

fn git(ctx: &FsContext<'_>, args: &[&str]) -> Result<String, ToolError> {
    git_capped(ctx, args, 4 * 1024 * 1024).map(|(text, _)| text)
}

/// `git.status`.
pub fn status(ctx: &FsContext<'_>, _: &StatusInput) -> Result<StatusOutput, ToolError> {
    let text = git(
        ctx,
        &[
            "status",
            "--porcelain=v1",
            "--branch",
            "--untracked-files=all",
        ],
    )?;
    let mut branch = None;
    let mut entries = Vec::new();
    for line in text.lines() {
        match line.strip_prefix("## ") {
            Some(b) => branch = Some(b.to_string()),
            None if !line.is_empty() => entries.push(line.to_string()),
            None => {}
        }
    }
    Ok(StatusOutput { branch, entries })
}

/// `git.diff`.
pub fn diff(ctx: &FsContext<'_>, input: &DiffInput) -> Result<DiffOutput, ToolError> {
    let mut args: Vec<String> = vec![
        "diff".into(),
        "--no-color".into(),
        "--no-ext-diff".into(),
        "--no-textconv".into(),
    ];
    if input.staged {
        args.push("--cached".into());
    }
    if let Some(base) = &input.base {
        if base.starts_with('-') {
            return Err(ToolError(format!("base: `{base}` is not a revision")));
        }
        args.push(base.clone());
    }
    args.push("--".into());
    for p in &input.paths {
        let (resolved, _) = ctx.permit(p, super::permission::Access::Read)?;
        args.push(resolved.display().to_string());
    }
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let (mut diff, cut_short) = git_capped(ctx, &refs, MAX_DIFF_BYTES + 1)?;
    let truncated = cut_short || diff.len() > MAX_DIFF_BYTES;
    if truncated && diff.len() > MAX_DIFF_BYTES {
        let mut cut = MAX_DIFF_BYTES;
        while !diff.is_char_boundary(cut) {
            cut -= 1;
        }
        diff.truncate(cut);
    }
    if truncated {
        diff.push_str("\n… [diff truncated; ask for fewer paths]\n");
    }
    Ok(DiffOutput { diff, truncated })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::tools::ReadLedger;

    fn run(dir: &std::path::Path, args: &[&str]) {
        let ok = Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.com")
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    }

    #[test]
    fn status_and_diff_of_a_real_repository() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        run(&root, &["init", "-q", "-b", "main"]);
        std::fs::write(root.join("a.txt"), "one\n").unwrap();
        run(&root, &["add", "a.txt"]);
        run(&root, &["commit", "-qm", "first"]);
        std::fs::write(root.join("a.txt"), "two\n").unwrap();
        std::fs::write(root.join("new.txt"), "n\n").unwrap();
        let ledger = ReadLedger::default();
        let scope = crate::tools::scope::Scope::default();
        let ctx = FsContext {
            root: &root,
            agent_id: "r",
            ledger: &ledger,
            scope: &scope,
            perm: crate::tools::permission::test_permits(&root),
        };
        let s = status(&ctx, &StatusInput {}).unwrap();
        assert_eq!(s.branch.as_deref(), Some("main"));
        assert_eq!(s.entries, [" M a.txt", "?? new.txt"]);
        let d = diff(&ctx, &DiffInput::default()).unwrap();
        assert!(d.diff.contains("-one\n+two\n"), "{}", d.diff);
        let d = diff(
            &ctx,
            &DiffInput {
                paths: vec!["new.txt".into()],
                ..DiffInput::default()
            },
        )
        .unwrap();
        assert!(d.diff.is_empty(), "untracked files have no diff");
        let e = diff(
            &ctx,
            &DiffInput {
                base: Some("--output=/tmp/x".into()),
                ..DiffInput::default()
            },
        )
        .unwrap_err();
        assert!(e.0.contains("not a revision"), "{e}");
    }
}
