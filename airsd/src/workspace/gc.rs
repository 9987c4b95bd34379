//! Kept worktrees pruned (`air gc`, and at the start of each run): a task that failed
//! or was blocked keeps its worktree for inspection; one left longer than the age
//! limit, or the oldest ones while all of them take more than the disk budget, are
//! removed. Nothing is lost: what a worktree holds uncommitted is committed on its
//! branch first (which stays), and a worktree that cannot be committed is kept and
//! named. Worktrees of a session whose run is going are never touched. What an
//! interrupted removal left (`git worktree prune`'s records) is pruned too.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::{admin_dir, commit_attempt, common_writable, no_links, Workspace, STEP};
use crate::launcher::{Launcher, Reads};

/// One kept worktree, and what became of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub path: PathBuf,
    pub branch: String,
    pub bytes: u64,
    /// Since its last change.
    pub age: Duration,
    /// Why it was removed, or kept.
    pub why: String,
}

/// What a pruning did (or, dry, would do).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Pruned {
    pub removed: Vec<Entry>,
    pub kept: Vec<Entry>,
}

/// The limits: worktrees older than `keep` go; then the oldest while all the kept
/// ones take more than `budget` bytes. `all`: every one not in use.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub keep: Duration,
    pub budget: u64,
    pub all: bool,
}

/// Files walked at most when a worktree's size is measured.
const MOST_FILES: usize = 1_000_000;

/// The bytes on disk under `dir`, following no link.
fn size(dir: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt as _;
    let mut total = 0u64;
    let mut stack = vec![dir.to_path_buf()];
    let mut seen = 0usize;
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            seen += 1;
            if seen > MOST_FILES {
                return total;
            }
            let Ok(m) = e.path().symlink_metadata() else {
                continue;
            };
            total = total.saturating_add(m.blocks().saturating_mul(512));
            if m.is_dir() {
                stack.push(e.path());
            }
        }
    }
    total
}

/// Since when the worktree at `path` (git directory `git_dir`) last changed: its top
/// directory, its index (each commit), its git directory.
fn last_change(path: &Path, git_dir: &Path) -> SystemTime {
    [
        path.to_path_buf(),
        git_dir.join("index"),
        git_dir.to_path_buf(),
    ]
    .iter()
    .filter_map(|p| p.symlink_metadata().and_then(|m| m.modified()).ok())
    .max()
    .unwrap_or(SystemTime::UNIX_EPOCH)
}

/// Prunes the kept worktrees under `worktrees` (of the repository at `main`'s root),
/// leaving alone the sessions named in `live` (their directory names, as
/// [`super::branch_part`] makes them). `dry`: says what it would do.
pub fn prune(
    main: &Launcher,
    worktrees: &Path,
    live: &[String],
    limits: Limits,
    dry: bool,
) -> Result<Pruned, String> {
    let mut found = Vec::new();
    let sessions = match std::fs::read_dir(worktrees) {
        Ok(s) => s,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Pruned::default()),
        Err(e) => return Err(format!("{}: {e}", worktrees.display())),
    };
    no_links(worktrees)?;
    let now = SystemTime::now();
    for s in sessions.flatten() {
        let name = s.file_name().to_string_lossy().into_owned();
        if live.contains(&name) || !s.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let Ok(tasks) = std::fs::read_dir(s.path()) else {
            continue;
        };
        for t in tasks.flatten() {
            if !t.file_type().is_ok_and(|k| k.is_dir()) {
                continue;
            }
            let path = t.path();
            let Ok(git_dir) = admin_dir(main, &path) else {
                continue;
            };
            let at = main.worktree(&path, &git_dir, main.views().clone());
            let branch = at
                .git(&["symbolic-ref", "-q", "HEAD"], Reads::Metadata, 4096, STEP)
                .map(|(b, _)| b.trim().trim_start_matches("refs/heads/").to_string())
                .unwrap_or_default();
            let age = now
                .duration_since(last_change(&path, &git_dir))
                .unwrap_or_default();
            found.push((
                Workspace {
                    path: path.clone(),
                    branch: branch.clone(),
                    base: String::new(),
                    git_dir,
                },
                Entry {
                    bytes: size(&path),
                    path,
                    branch,
                    age,
                    why: String::new(),
                },
            ));
        }
    }
    // Oldest first: the age limit, then the budget, takes them in this order.
    found.sort_by_key(|f| std::cmp::Reverse(f.1.age));
    let mut total: u64 = found.iter().map(|(_, e)| e.bytes).sum();
    let mut out = Pruned::default();
    for (ws, mut entry) in found {
        let why = if limits.all {
            Some("asked for (`--all`)".to_string())
        } else if entry.age > limits.keep {
            Some(format!(
                "unchanged for {} days, over the {}-day limit",
                entry.age.as_secs() / 86_400,
                limits.keep.as_secs() / 86_400
            ))
        } else if total > limits.budget {
            Some(format!(
                "the kept worktrees took {} MiB, over the {} MiB budget",
                total >> 20,
                limits.budget >> 20
            ))
        } else {
            None
        };
        let Some(why) = why else {
            entry.why = "within the age limit and the budget".into();
            out.kept.push(entry);
            continue;
        };
        if !ws.branch.starts_with("air/") {
            entry.why = format!("on `{}`, not a branch of air's", ws.branch);
            out.kept.push(entry);
            continue;
        }
        if dry {
            entry.why = why;
            total = total.saturating_sub(entry.bytes);
            out.removed.push(entry);
            continue;
        }
        // What it holds uncommitted goes to its branch first.
        let kept = commit_attempt(
            main,
            &ws,
            worktrees,
            "air: work left in the task's worktree, kept on its branch when the worktree was pruned",
        )
        .and_then(|_| super::remove(main, &ws, worktrees));
        match kept {
            Ok(_) => {
                entry.why = format!("{why}; its work is on {}", ws.branch);
                total = total.saturating_sub(entry.bytes);
                out.removed.push(entry);
            }
            Err(e) => {
                entry.why = format!("{why}, but it could not be kept on its branch: {e}");
                out.kept.push(entry);
            }
        }
    }
    if !dry {
        let places = common_writable(main, worktrees)?;
        super::worktree_git(main, &["worktree", "prune"], &places)?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn git(root: &Path, args: &[&str]) {
        let out = std::process::Command::new("git")
            .args(args)
            .current_dir(root)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    #[test]
    fn pruning_keeps_the_work_on_its_branch_and_spares_live_sessions() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        git(&root, &["init", "-q", "-b", "main"]);
        std::fs::write(root.join(".gitignore"), ".air/local/\n").unwrap();
        std::fs::write(root.join("a.txt"), "a\n").unwrap();
        git(&root, &["add", "-A"]);
        git(
            &root,
            &[
                "-c",
                "user.email=t@t",
                "-c",
                "user.name=t",
                "commit",
                "-qm",
                "a",
            ],
        );
        let main = Launcher::plain(&root);
        let worktrees = root.join(".air/local/workspaces");
        let old = super::super::create(&main, &worktrees, "s1", "T1", "HEAD").unwrap();
        let live = super::super::create(&main, &worktrees, "s2", "T1", "HEAD").unwrap();
        // Work left uncommitted in the kept worktree.
        std::fs::write(old.path.join("left.txt"), "unfinished\n").unwrap();
        std::fs::write(live.path.join("left.txt"), "in use\n").unwrap();
        let limits = Limits {
            keep: Duration::from_secs(7 * 86_400),
            budget: u64::MAX,
            all: false,
        };
        // Young and within the budget: kept.
        let p = prune(&main, &worktrees, &[], limits, false).unwrap();
        assert!(p.removed.is_empty() && p.kept.len() == 2, "{p:?}");
        // Over a budget of nothing, the non-live one goes; dry first.
        let tight = Limits {
            budget: 0,
            ..limits
        };
        let live_names = vec![super::super::branch_part("s2")];
        let p = prune(&main, &worktrees, &live_names, tight, true).unwrap();
        assert_eq!(p.removed.len(), 1, "{p:?}");
        assert!(old.path.exists());
        let p = prune(&main, &worktrees, &live_names, tight, false).unwrap();
        assert_eq!(p.removed.len(), 1, "{p:?}");
        assert!(p.removed[0].why.contains("budget"), "{p:?}");
        assert!(!old.path.exists() && live.path.exists());
        // Its work is on its branch.
        let out = std::process::Command::new("git")
            .args(["show", &format!("{}:left.txt", old.branch)])
            .current_dir(&root)
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout), "unfinished\n");
    }
}
