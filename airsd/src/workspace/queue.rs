//! The merge queue's git. A reviewed task's change is merged with the session's
//! integration branch inside the task's own worktree first: a merge commit on the
//! task's branch (the integration branch its first parent), checked out there, where
//! the task's check then runs on the merged tree. The integration branch moves to that
//! commit only once the check passed, by a compare-and-swap: it is before the merge or
//! after it, never between, and a failed gate leaves it untouched. A conflict is
//! committed with git's markers on the task's branch, for its debugger to resolve; the
//! integration branch never sees it.

use std::path::Path;

use super::merge::{changed_between, commit_of, commit_of_both, count, merge_tree, merged_before};
use super::{common_writable, on_branch, Workspace, MERGED_BASE, STEP};
use crate::launcher::{Launcher, Reads};

/// What preparing a task's merge found or did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Prepared {
    /// The branch holds no change of its own.
    Nothing,
    /// Everything on the branch is in the integration branch already (merged before
    /// airsd was restarted).
    Already,
    /// The integration branch can move from `old` to `commit`, the task's branch head.
    /// `check`: `commit` is a merge airsd made that no agent's attempt has tested, so
    /// the task's check runs on it first.
    Ready {
        old: String,
        commit: String,
        check: bool,
    },
    /// The branch and the integration branch change the same lines of `files`. The
    /// merge, markers and all, is now the task branch's head and checked out in its
    /// worktree; `hunks` are the conflicting regions, both sides.
    Conflict { files: Vec<String>, hunks: String },
}

/// The parents of `commit`.
fn parents(at: &Launcher, commit: &str) -> Result<Vec<String>, String> {
    let arg = format!("{commit}^{{commit}}");
    let (out, _) = at.git(
        &["rev-list", "--parents", "-n", "1", "--end-of-options", &arg],
        Reads::Metadata,
        4096,
        STEP,
    )?;
    Ok(out.split_whitespace().skip(1).map(str::to_string).collect())
}

/// Prepares the merge of the task's branch into `integration` in the task's worktree
/// `ws` (whose base becomes the integration commit merged, so that its change is read
/// against what it was merged with).
pub fn prepare(
    main: &Launcher,
    worktrees: &Path,
    ws: &mut Workspace,
    integration: &str,
) -> Result<Prepared, String> {
    let full = format!("refs/heads/{integration}");
    let old = commit_of(main, &full)?.ok_or_else(|| format!("no branch {integration}"))?;
    let branch = format!("refs/heads/{}", ws.branch);
    let tip = commit_of(main, &branch)?.ok_or_else(|| format!("no branch {}", ws.branch))?;
    if count(main, &old, &tip)? == 0 {
        return Ok(if merged_before(main, &old, &tip)? {
            Prepared::Already
        } else {
            Prepared::Nothing
        });
    }
    if count(main, &tip, &old)? == 0 {
        // The branch has the integration branch in it already. Only a merge airsd
        // made here (the integration branch its first parent) is untested.
        let p = parents(main, &tip)?;
        let check = p.len() > 1 && p.first() == Some(&old);
        return Ok(Prepared::Ready {
            old,
            commit: tip,
            check,
        });
    }
    let places = common_writable(main, worktrees)?;
    let (tree, conflicts) = merge_tree(main, &places, &old, &tip)?;
    let message = if conflicts.is_empty() {
        format!("air: bring {integration} into {}", ws.branch)
    } else {
        format!(
            "air: bring {integration} into {}, with conflicts in {}",
            ws.branch,
            conflicts.join(", ")
        )
    };
    let commit = commit_of_both(main, &places, &tree, &old, &tip, &message)?;
    // The worktree's files first, then its branch: a stop between leaves the merge
    // staged on the old head, which the next attempt's commit keeps.
    let at = ws.launcher(main, main.views().clone());
    on_branch(&at, ws)?;
    at.git_write(
        &["read-tree", "-m", "-u", &tip, &commit],
        &places,
        64 * 1024,
        STEP,
    )?;
    at.git_write(
        &["update-ref", "-m", &message, &branch, &commit, &tip],
        &places,
        4096,
        STEP,
    )?;
    crate::opened::write_atomic(&ws.git_dir.join(MERGED_BASE), &ws.git_dir, old.as_bytes())
        .map_err(|e| format!("{}: {e}", ws.git_dir.join(MERGED_BASE).display()))?;
    ws.base = old.clone();
    if conflicts.is_empty() {
        return Ok(Prepared::Ready {
            old,
            commit,
            check: true,
        });
    }
    let hunks = hunks(&ws.path, &conflicts);
    Ok(Prepared::Conflict {
        files: conflicts,
        hunks,
    })
}

/// Moves the integration branch from `old` (only from there) to one merge commit of
/// it and `commit` (a task's head that has `old` in it), of `commit`'s tree: each
/// task one merge on the integration branch's first-parent line, its checkpoint.
/// The new head, and the files that changed.
pub fn advance(
    main: &Launcher,
    worktrees: &Path,
    integration: &str,
    old: &str,
    commit: &str,
    message: &str,
) -> Result<(String, Vec<String>), String> {
    let places = common_writable(main, worktrees)?;
    let full = format!("refs/heads/{integration}");
    let tree = format!("{commit}^{{tree}}");
    let (tree, _) = main.git(
        &["rev-parse", "--verify", "--end-of-options", &tree],
        Reads::Metadata,
        4096,
        STEP,
    )?;
    let merge = commit_of_both(main, &places, tree.trim(), old, commit, message)?;
    main.git_write(
        &["update-ref", "-m", message, &full, &merge, old],
        &places,
        4096,
        STEP,
    )?;
    let files = changed_between(main, old, &merge)?;
    Ok((merge, files))
}

/// The files two commits differ in, from the project's root.
pub fn between(main: &Launcher, from: &str, to: &str) -> Result<Vec<String>, String> {
    changed_between(main, from, to)
}

/// Bytes of conflicting regions shown at most, lines of one region, files read.
const HUNK_BYTES: usize = 8 * 1024;
const HUNK_LINES: usize = 60;
const HUNK_FILES: usize = 8;

/// The regions between git's conflict markers in `files` of the worktree at `root`,
/// each under its file's name, cut at [`HUNK_BYTES`]; read following no link.
fn hunks(root: &Path, files: &[String]) -> String {
    let mut out = String::new();
    for file in files.iter().take(HUNK_FILES) {
        let Some(text) = crate::opened::read_small(&root.join(file), root, 1 << 20) else {
            continue;
        };
        let mut region: Vec<&str> = Vec::new();
        let mut inside = false;
        let mut header = false;
        for line in text.lines() {
            if line.starts_with("<<<<<<< ") {
                inside = true;
                region.clear();
            }
            if inside && region.len() < HUNK_LINES {
                region.push(line);
            }
            if inside && line.starts_with(">>>>>>> ") {
                inside = false;
                if !header {
                    out.push_str(&format!("--- {file}\n"));
                    header = true;
                }
                if region.len() == HUNK_LINES {
                    region.push("… (cut)");
                }
                for l in &region {
                    out.push_str(l);
                    out.push('\n');
                }
            }
            if out.len() > HUNK_BYTES {
                let mut cut = HUNK_BYTES;
                while !out.is_char_boundary(cut) {
                    cut -= 1;
                }
                out.truncate(cut);
                out.push_str("\n… (cut)\n");
                return out;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_hunks_are_the_regions_between_the_markers() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::write(
            root.join("calc.py"),
            "def add(a, b):\n<<<<<<< ours\n    return a + b\n=======\n    return b + a\n>>>>>>> theirs\n\nx = 1\n",
        )
        .unwrap();
        let h = hunks(&root, &["calc.py".into(), "gone.py".into()]);
        assert_eq!(
            h,
            "--- calc.py\n<<<<<<< ours\n    return a + b\n=======\n    return b + a\n>>>>>>> theirs\n"
        );
    }
}
