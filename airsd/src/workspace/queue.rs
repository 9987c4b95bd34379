//! The merge queue's git. A reviewed task's change is merged with the session's
//! integration branch inside the task's own worktree first: a merge commit on the
//! task's branch (the integration branch its first parent), checked out there, where
//! the task's check then runs on the merged tree. The integration branch moves to that
//! commit only once the check passed, by a compare-and-swap: it is before the merge or
//! after it, never between, and a failed gate leaves it untouched. A conflict is
//! committed with git's markers on the task's branch, for its debugger to resolve; the
//! integration branch never sees it.

use std::path::Path;

use super::merge::{changed_between, commit_of, commit_of_both, counts, merge_tree, merged_before};
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
    /// the task's check runs on it first. `tree`: for a task with no check, the tree
    /// of the merge with `old` (made beside any checkout, not committed on its branch),
    /// which lands instead of `commit`'s.
    Ready {
        old: String,
        commit: String,
        check: bool,
        tree: Option<String>,
    },
    /// The branch and the integration branch change the same lines of `files`. The
    /// merge, markers and all, is now the task branch's head and checked out in its
    /// worktree; `hunks` are the conflicting regions, both sides.
    Conflict { files: Vec<String>, hunks: String },
    /// Files of an earlier conflict still hold git's markers on the branch's head.
    Markers { files: Vec<String> },
}

/// Beside the worktree's git directory's other records: the files of the last
/// conflict airsd committed on the task's branch, one per line.
const CONFLICTS: &str = "air-conflicts";

/// Files of a conflict recorded at most, and bytes of one read to look for markers.
const MOST_CONFLICTS: usize = 200;
const MARKED_BYTES: usize = 8 << 20;

/// The recorded conflict files of `ws`.
fn recorded_conflicts(ws: &Workspace) -> Vec<String> {
    crate::opened::read_small(&ws.git_dir.join(CONFLICTS), &ws.git_dir, 1 << 20)
        .map(|t| {
            t.lines()
                .filter(|l| !l.is_empty())
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// Which of `files` hold a line of git's conflict markers in `commit`.
fn marked(at: &Launcher, commit: &str, files: &[String]) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for f in files.iter().take(MOST_CONFLICTS) {
        let spec = format!("{commit}:{f}");
        // 128: the file is gone (deleted is resolved).
        let (text, code) = at.git_answer(
            &["cat-file", "-p", "--end-of-options", &spec],
            Reads::Content,
            &[128],
            MARKED_BYTES,
            STEP,
        )?;
        if code == 0
            && text
                .lines()
                .any(|l| l.starts_with("<<<<<<< ") || l.starts_with(">>>>>>> "))
        {
            out.push(f.clone());
        }
    }
    Ok(out)
}

/// Prepares the merge of the task's branch into `integration` in the task's worktree
/// `ws` (whose base becomes the integration commit merged, so that its change is read
/// against what it was merged with).
pub fn prepare(
    main: &Launcher,
    worktrees: &Path,
    ws: &mut Workspace,
    integration: &str,
    checked: bool,
) -> Result<Prepared, String> {
    let full = format!("refs/heads/{integration}");
    let old = commit_of(main, &full)?.ok_or_else(|| format!("no branch {integration}"))?;
    let branch = format!("refs/heads/{}", ws.branch);
    let tip = commit_of(main, &branch)?.ok_or_else(|| format!("no branch {}", ws.branch))?;
    let (behind, ahead) = counts(main, &old, &tip)?;
    if ahead == 0 {
        return Ok(if merged_before(main, &old, &tip)? {
            Prepared::Already
        } else {
            Prepared::Nothing
        });
    }
    // An earlier conflict's files must hold no marker, whatever comes next.
    let left = marked(main, &tip, &recorded_conflicts(ws))?;
    if !left.is_empty() {
        return Ok(Prepared::Markers { files: left });
    }
    if behind == 0 {
        // The branch has the integration branch in it already. Untested unless it
        // is the task's own tree from its base (nothing was ever merged into it):
        // after a merge of airsd's, the check runs whatever came since.
        let check = ws.git_dir.join(MERGED_BASE).exists();
        return Ok(Prepared::Ready {
            old,
            commit: tip,
            check,
            tree: None,
        });
    }
    let places = common_writable(main, worktrees)?;
    let (tree, conflicts) = merge_tree(main, &places, &old, &tip)?;
    // No check to run on the merge: nothing of it is needed in the worktree, and the
    // merge's tree lands as it is (a conflict still goes to the task's branch).
    if conflicts.is_empty() && !checked {
        return Ok(Prepared::Ready {
            old,
            commit: tip,
            check: false,
            tree: Some(tree),
        });
    }
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
    // Its records first (harmless if the merge stops here), then the worktree's files,
    // then its branch: a stop between leaves the merge staged on the old head, which
    // the next attempt's commit keeps.
    let write = |name: &str, text: &str| {
        crate::opened::write_atomic(&ws.git_dir.join(name), &ws.git_dir, text.as_bytes())
            .map_err(|e| format!("{}: {e}", ws.git_dir.join(name).display()))
    };
    write(MERGED_BASE, &old)?;
    write(CONFLICTS, &conflicts.join("\n"))?;
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
    ws.base = old.clone();
    if conflicts.is_empty() {
        return Ok(Prepared::Ready {
            old,
            commit,
            check: true,
            tree: None,
        });
    }
    let hunks = hunks(&ws.path, &conflicts);
    Ok(Prepared::Conflict {
        files: conflicts,
        hunks,
    })
}

/// Moves the integration branch from `old` (only from there) to one merge commit of
/// it and `commit` (a task's head), of `tree` (the merge's, from [`prepare`]) or
/// else `commit`'s own (which has `old` in it): each task one merge on the
/// integration branch's first-parent line, its checkpoint. The new head, and the
/// files that changed.
pub fn advance(
    main: &Launcher,
    worktrees: &Path,
    integration: &str,
    (old, commit, tree): (&str, &str, Option<&str>),
    message: &str,
) -> Result<(String, Vec<String>), String> {
    let places = common_writable(main, worktrees)?;
    let full = format!("refs/heads/{integration}");
    let tree = match tree {
        Some(t) => t.to_string(),
        None => {
            let spec = format!("{commit}^{{tree}}");
            main.git(
                &["rev-parse", "--verify", "--end-of-options", &spec],
                Reads::Metadata,
                4096,
                STEP,
            )?
            .0
            .trim()
            .to_string()
        }
    };
    let merge = commit_of_both(main, &places, &tree, old, commit, message)?;
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
    use crate::workspace::{commit_attempt, create, integration};

    fn git(root: &Path, args: &[&str]) {
        let out = std::process::Command::new("git")
            .args(["-c", "user.name=p", "-c", "user.email=p@example.invalid"])
            .args(args)
            .current_dir(root)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
    }

    /// A committed repository of one file, `name` (holding `n`), with session `s1`'s
    /// integration branch: its directory, airsd's git for it, the worktrees' place and
    /// the branch.
    fn repository(name: &str) -> (tempfile::TempDir, Launcher, std::path::PathBuf, String) {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        git(&root, &["init", "-q", "-b", "main"]);
        std::fs::write(root.join(".gitignore"), ".air/local/\n").unwrap();
        std::fs::write(root.join(name), "n\n").unwrap();
        git(&root, &["add", "-A"]);
        git(&root, &["commit", "-qm", "one"]);
        let main = Launcher::plain(&root);
        let worktrees = root.join(".air/local/workspaces");
        let integ = integration(&main, &worktrees, "s1").unwrap().unwrap();
        (dir, main, worktrees, integ)
    }

    /// A conflict's markers never reach the integration branch: committed on the
    /// task's branch, they refuse its merge until they are gone, and what resolves them
    /// is checked on the merged tree.
    #[test]
    fn a_conflict_is_merged_only_once_resolved_and_checked() {
        let (_dir, main, worktrees, integ) = repository("notes.txt");
        let mut a = create(&main, &worktrees, "s1", "A", &integ).unwrap();
        let mut b = create(&main, &worktrees, "s1", "B", &integ).unwrap();
        for (ws, text) in [(&a, "a\n"), (&b, "b\n")] {
            std::fs::write(ws.path.join("notes.txt"), text).unwrap();
            commit_attempt(&main, ws, &worktrees, "attempt").unwrap();
        }
        // A first: its own tree from the base, no check needed.
        let Prepared::Ready {
            old, commit, check, ..
        } = prepare(&main, &worktrees, &mut a, &integ, true).unwrap()
        else {
            panic!("A merges")
        };
        assert!(!check);
        advance(
            &main,
            &worktrees,
            &integ,
            (&old, &commit, None),
            "air: merge A a",
        )
        .unwrap();
        // B conflicts: the markers are committed on its branch, in its worktree.
        let p = prepare(&main, &worktrees, &mut b, &integ, true).unwrap();
        let Prepared::Conflict { files, hunks } = p else {
            panic!("{p:?}")
        };
        assert_eq!(files, ["notes.txt"]);
        assert!(
            hunks.contains("<<<<<<< ") && hunks.contains("a\n") && hunks.contains("b\n"),
            "{hunks}"
        );
        // Nothing resolved: refused again, never Ready.
        let p = prepare(&main, &worktrees, &mut b, &integ, true).unwrap();
        assert_eq!(
            p,
            Prepared::Markers {
                files: vec!["notes.txt".into()]
            }
        );
        // Resolved: ready, and checked on the merged tree.
        std::fs::write(b.path.join("notes.txt"), "a\nb\n").unwrap();
        commit_attempt(&main, &b, &worktrees, "resolved").unwrap();
        let p = prepare(&main, &worktrees, &mut b, &integ, true).unwrap();
        let Prepared::Ready { check, .. } = p else {
            panic!("{p:?}")
        };
        assert!(check);
    }

    /// A task with no check to run lands the merge's tree as it is: nothing of the
    /// merge is committed on its branch or checked out in its worktree.
    #[test]
    fn with_no_check_the_merge_lands_beside_the_worktree() {
        let (_dir, main, worktrees, integ) = repository("a.txt");
        let mut x = create(&main, &worktrees, "s1", "X", &integ).unwrap();
        let mut y = create(&main, &worktrees, "s1", "Y", &integ).unwrap();
        std::fs::write(x.path.join("x.txt"), "x\n").unwrap();
        commit_attempt(&main, &x, &worktrees, "x").unwrap();
        std::fs::write(y.path.join("y.txt"), "y\n").unwrap();
        let tip = commit_attempt(&main, &y, &worktrees, "y").unwrap().unwrap();
        for ws in [&mut x, &mut y] {
            let Prepared::Ready {
                old,
                commit,
                check,
                tree,
            } = prepare(&main, &worktrees, ws, &integ, false).unwrap()
            else {
                panic!("merges")
            };
            assert!(!check);
            advance(
                &main,
                &worktrees,
                &integ,
                (&old, &commit, tree.as_deref()),
                "air: merge",
            )
            .unwrap();
        }
        // Y's branch and worktree are as its attempt left them; the integration
        // branch has both.
        assert_eq!(
            super::super::merge::branch_head(&main, &y.branch).unwrap(),
            Some(tip)
        );
        assert!(!y.path.join("x.txt").exists());
        let files = between(&main, "main", &format!("refs/heads/{integ}")).unwrap();
        assert_eq!(files, ["x.txt", "y.txt"]);
    }

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
