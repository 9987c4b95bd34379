//! `git.status` and `git.diff`: the read-only views of the working tree a reviewer
//! needs, from the real `git` in the project root.

use std::process::Command;

use serde::{Deserialize, Serialize};

use super::fs::{FsContext, ToolError};

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

fn git(ctx: &FsContext<'_>, args: &[&str]) -> Result<String, ToolError> {
    let out = Command::new("git")
        .args(args)
        .current_dir(ctx.root)
        .env("GIT_PAGER", "cat")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .output()
        .map_err(|e| ToolError(format!("cannot run git: {e}")))?;
    if !out.status.success() {
        return Err(ToolError(format!(
            "git {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
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
    let mut args: Vec<String> = vec!["diff".into(), "--no-color".into(), "--no-ext-diff".into()];
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
    let mut diff = git(ctx, &refs)?;
    let truncated = diff.len() > MAX_DIFF_BYTES;
    if truncated {
        let mut cut = MAX_DIFF_BYTES;
        while !diff.is_char_boundary(cut) {
            cut -= 1;
        }
        diff.truncate(cut);
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
