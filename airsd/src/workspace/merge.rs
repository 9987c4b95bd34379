//! The session's integration branch: each completed task's branch merged into it one
//! at a time (a merge commit per task, its checkpoint), and the branch brought into
//! the person's checkout at the end only where that touches none of their
//! uncommitted edits. Every run of git is airsd's own, confined as in
//! [`super::create`].

use std::path::{Path, PathBuf};

use super::{branch_part, common_writable, Workspace, NAMES_CAP, STEP};
use crate::launcher::{Launcher, Reads};

/// The branch a session's completed tasks are merged into:
/// `air/<first 8 of the session>/integration`.
pub fn integration_branch(session: &str) -> String {
    format!("air/{}/integration", branch_part(session))
}

/// The commit `rev` names, if any (`None` when it names nothing).
pub(super) fn commit_of(at: &Launcher, rev: &str) -> Result<Option<String>, String> {
    let arg = format!("{rev}^{{commit}}");
    // `--verify -q` says nothing and exits 1 for a name that is not there.
    let (out, code) = at.git_answer(
        &["rev-parse", "--verify", "-q", "--end-of-options", &arg],
        Reads::Metadata,
        &[1],
        4096,
        STEP,
    )?;
    Ok(Some(out.trim().to_string()).filter(|c| code == 0 && !c.is_empty()))
}

/// Whether the project at `main`'s root is a git repository with a commit to branch
/// from.
pub fn has_commit(main: &Launcher) -> bool {
    crate::tools::git::in_repository(main.root())
        && commit_of(main, "HEAD").is_ok_and(|c| c.is_some())
}

/// The commit the branch `name` points at, if it is there.
pub fn branch_head(at: &Launcher, name: &str) -> Result<Option<String>, String> {
    commit_of(at, &format!("refs/heads/{name}"))
}

/// Whether the branch `name` is there.
pub fn branch_exists(at: &Launcher, name: &str) -> Result<bool, String> {
    Ok(commit_of(at, &format!("refs/heads/{name}"))?.is_some())
}

/// How many commits `from..to` holds.
pub(super) fn count(at: &Launcher, from: &str, to: &str) -> Result<u64, String> {
    let range = format!("{from}..{to}");
    let (out, _) = at.git(
        &["rev-list", "--count", "--end-of-options", &range],
        Reads::Metadata,
        4096,
        STEP,
    )?;
    out.trim()
        .parse()
        .map_err(|_| format!("git counted `{}` commits", out.trim()))
}

/// How many commits `from..to` and `to..from` hold (one run of git): what `to`
/// lacks of `from`, and what it has that `from` has not.
pub(super) fn counts(at: &Launcher, from: &str, to: &str) -> Result<(u64, u64), String> {
    let range = format!("{from}...{to}");
    let (out, _) = at.git(
        &[
            "rev-list",
            "--left-right",
            "--count",
            "--end-of-options",
            &range,
        ],
        Reads::Metadata,
        4096,
        STEP,
    )?;
    let mut n = out.split_whitespace().map(str::parse::<u64>);
    match (n.next(), n.next(), n.next()) {
        (Some(Ok(left)), Some(Ok(right)), None) => Ok((left, right)),
        _ => Err(format!("git counted `{}` commits", out.trim())),
    }
}

pub(super) fn names(out: &str) -> Vec<String> {
    let mut v: Vec<String> = out
        .split('\0')
        .filter(|n| !n.is_empty())
        .map(str::to_string)
        .collect();
    v.sort();
    v.dedup();
    v
}

/// Whether one of the last 10,000 merges of `head` merged `tip` (as its second
/// parent): a task's branch merged before airsd was restarted.
pub(super) fn merged_before(at: &Launcher, head: &str, tip: &str) -> Result<bool, String> {
    let (out, _) = at.git(
        &[
            "rev-list",
            "--merges",
            "--parents",
            "--max-count=10000",
            "--end-of-options",
            head,
        ],
        Reads::Metadata,
        NAMES_CAP,
        STEP,
    )?;
    Ok(out
        .lines()
        .any(|l| l.split_whitespace().skip(2).any(|p| p == tip)))
}

/// The files `from` and `to` differ in, from the project's root.
pub(super) fn changed_between(at: &Launcher, from: &str, to: &str) -> Result<Vec<String>, String> {
    let (out, _) = at.git(
        &[
            "diff",
            "--name-only",
            "-z",
            "--no-renames",
            "--ignore-submodules=none",
            "--no-relative",
            from,
            to,
            "--",
        ],
        Reads::Metadata,
        NAMES_CAP,
        STEP,
    )?;
    Ok(names(&out))
}

/// The tree of the merge of `theirs` into `ours`, made beside any checkout
/// (`merge-tree`), and the files both change the same lines of (whose text in the
/// tree then holds git's conflict markers).
pub(super) fn merge_tree(
    at: &Launcher,
    writable: &[PathBuf],
    ours: &str,
    theirs: &str,
) -> Result<(String, Vec<String>), String> {
    merge_tree_of(at, writable, None, ours, theirs)
}

/// As [`merge_tree`], with `base` as the merge base (the change from `base` to
/// `theirs` applied onto `ours`: with a merge as `base` and its first parent as
/// `theirs`, the merge undone). Needs git 2.40 or newer.
pub(super) fn merge_tree_based(
    at: &Launcher,
    writable: &[PathBuf],
    base: &str,
    ours: &str,
    theirs: &str,
) -> Result<(String, Vec<String>), String> {
    merge_tree_of(at, writable, Some(base), ours, theirs).map_err(|e| {
        if e.contains("merge-base") && (e.contains("unknown option") || e.contains("usage")) {
            format!("this needs git 2.40 or newer (`git merge-tree --merge-base`): {e}")
        } else {
            e
        }
    })
}

fn merge_tree_of(
    at: &Launcher,
    writable: &[PathBuf],
    base: Option<&str>,
    ours: &str,
    theirs: &str,
) -> Result<(String, Vec<String>), String> {
    let based = base.map(|b| format!("--merge-base={b}"));
    let mut args = vec![
        "merge-tree",
        "--write-tree",
        "-z",
        "--name-only",
        "--no-messages",
    ];
    args.extend(based.as_deref());
    args.extend([ours, theirs]);
    let (out, _, code) = at.git_write_answer(&args, writable, &[1], NAMES_CAP, STEP)?;
    let mut fields = out.split('\0');
    let tree = fields.next().unwrap_or_default().trim().to_string();
    if tree.is_empty() || !tree.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!("git merge-tree named no tree: `{tree}`"));
    }
    let conflicts = if code == 1 {
        names(&fields.collect::<Vec<_>>().join("\0"))
    } else {
        Vec::new()
    };
    Ok((tree, conflicts))
}

/// A commit of `tree` whose parents are `ours` then `theirs`.
pub(super) fn commit_of_both(
    at: &Launcher,
    writable: &[PathBuf],
    tree: &str,
    ours: &str,
    theirs: &str,
    message: &str,
) -> Result<String, String> {
    let (commit, _) = at.git_write(
        &["commit-tree", tree, "-p", ours, "-p", theirs, "-m", message],
        writable,
        4096,
        STEP,
    )?;
    Ok(commit.trim().to_string())
}

/// The merge of `theirs` into `ours` as a commit of both, made beside any checkout
/// (`merge-tree`): the commit, or the files both change the same lines of (nothing
/// made then).
fn merge_commit(
    at: &Launcher,
    writable: &[PathBuf],
    ours: &str,
    theirs: &str,
    message: &str,
) -> Result<Result<String, Vec<String>>, String> {
    let (tree, conflicts) = merge_tree(at, writable, ours, theirs)?;
    if !conflicts.is_empty() {
        return Ok(Err(conflicts));
    }
    commit_of_both(at, writable, &tree, ours, theirs, message).map(Ok)
}

/// The session's integration branch, made from the checkout's last commit when it is
/// not there yet; `None` when the checkout has no commit to start from. Called once
/// by each airsd process that runs the session, before any other git of its
/// worktrees: what a git killed with the airsd before it left locked is unlocked.
pub fn integration(
    main: &Launcher,
    worktrees: &Path,
    session: &str,
) -> Result<Option<String>, String> {
    super::unlock_stale(main, worktrees, session);
    let branch = integration_branch(session);
    let full = format!("refs/heads/{branch}");
    if commit_of(main, &full)?.is_some() {
        return Ok(Some(branch));
    }
    let Some(head) = commit_of(main, "HEAD")? else {
        return Ok(None);
    };
    let places = common_writable(main, worktrees)?;
    // The branch the run began from, in the branch's first reflog entry: landing
    // goes there only.
    let from = main
        .git_answer(
            &["symbolic-ref", "-q", "HEAD"],
            Reads::Metadata,
            &[1],
            4096,
            STEP,
        )
        .map(|(b, _)| b.trim().to_string())
        .unwrap_or_default();
    let message = format!("{BEGAN}{from}");
    // Made only where no such branch is (the empty old value): two runs never
    // overwrite each other's.
    main.git_write(
        &["update-ref", "-m", &message, &full, &head, ""],
        &places,
        4096,
        STEP,
    )?;
    Ok(Some(branch))
}

/// The reflog message the integration branch is made with, before the branch the
/// checkout was on.
const BEGAN: &str = "air: integration from ";

/// The branch (`refs/heads/…`) the checkout was on when the integration branch was
/// made, as its first reflog entry says; `None` when git kept no reflog of it.
fn began_on(at: &Launcher, full: &str) -> Option<String> {
    let (log, _) = at
        .git(
            &["reflog", "show", "--format=%gs", "--end-of-options", full],
            Reads::Metadata,
            NAMES_CAP,
            STEP,
        )
        .ok()?;
    log.lines()
        .last()?
        .strip_prefix(BEGAN)
        .map(str::to_string)
        .filter(|b| !b.is_empty())
}

/// What merging a task's branch did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Merged {
    /// The branch holds no change of its own.
    Nothing,
    /// Everything on the branch is in the integration branch already (merged before
    /// airsd was restarted).
    Already,
    /// Merged: the new head of the integration branch and the files it changed.
    Merged { commit: String, files: Vec<String> },
    /// The branch and the integration branch change the same lines of these files:
    /// nothing was merged.
    Conflict { files: Vec<String> },
}

/// Merges the task's branch into the integration branch `integration` as one merge
/// commit, the branch moving only from the head the merge was made on (a branch moved
/// meanwhile fails the merge, never loses the other change).
pub fn merge(
    main: &Launcher,
    worktrees: &Path,
    ws: &Workspace,
    integration: &str,
    message: &str,
) -> Result<Merged, String> {
    let full = format!("refs/heads/{integration}");
    let old = commit_of(main, &full)?.ok_or_else(|| format!("no branch {integration}"))?;
    let tip = commit_of(main, &format!("refs/heads/{}", ws.branch))?
        .ok_or_else(|| format!("no branch {}", ws.branch))?;
    if count(main, &old, &tip)? == 0 {
        return Ok(if merged_before(main, &old, &tip)? {
            Merged::Already
        } else {
            Merged::Nothing
        });
    }
    let places = common_writable(main, worktrees)?;
    let commit = match merge_commit(main, &places, &old, &tip, message)? {
        Ok(commit) => commit,
        Err(files) => return Ok(Merged::Conflict { files }),
    };
    main.git_write(
        &["update-ref", "-m", message, &full, &commit, &old],
        &places,
        4096,
        STEP,
    )?;
    let files = changed_between(main, &old, &commit)?;
    Ok(Merged::Merged { commit, files })
}

/// Whether the branch checked out at `checkout`'s root holds `integration`'s head
/// (the run landed there).
pub fn landed(checkout: &Launcher, integration: &str) -> Result<bool, String> {
    let full = format!("refs/heads/{integration}");
    let tip = commit_of(checkout, &full)?.ok_or_else(|| format!("no branch {integration}"))?;
    let Some(head) = commit_of(checkout, "HEAD")? else {
        return Ok(false);
    };
    Ok(count(checkout, &head, &tip)? == 0)
}

/// Whether every commit of `head` that `tip` lacks is air's, as another session's
/// landing makes them: on one of air's integration branches, or the merge commit
/// of a landing (`air: land …`, air as author and committer).
fn only_air(at: &Launcher, tip: &str, head: &str) -> Result<bool, String> {
    let not_tip = format!("^{tip}");
    let (out, cut) = at.git(
        &[
            "log",
            "--format=%ae %ce%x1f%s",
            "--max-count=100000",
            head,
            &not_tip,
            "--not",
            "--glob=refs/heads/air/*/integration",
            "--",
        ],
        Reads::Metadata,
        NAMES_CAP,
        STEP,
    )?;
    let email = crate::launcher::AIR_IDENTITY.1;
    let landing = format!("{email} {email}\x1fair: land ");
    Ok(!cut && out.lines().all(|l| l.starts_with(&landing)))
}

/// What landing the integration branch in the checkout did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Landing {
    /// The checkout has all of it already.
    Nothing,
    /// The checkout's branch now holds it, and these files changed.
    Landed { branch: String, files: Vec<String> },
    /// Not landed, and why (what to do is in it).
    Kept { reason: String },
}

/// The paths `git status --porcelain -z` names (both of a rename).
fn status_paths(out: &str) -> Vec<String> {
    let mut v = Vec::new();
    let mut fields = out.split('\0');
    while let Some(f) = fields.next() {
        if f.len() < 4 {
            continue;
        }
        let (code, path) = f.split_at(3);
        v.push(path.to_string());
        if code.starts_with('R') || code.starts_with('C') {
            if let Some(from) = fields.next() {
                v.push(from.to_string());
            }
        }
    }
    v
}

/// Whether a file the run changed (`changed`) and a path of the person's
/// (`theirs`, a directory with a trailing `/`) are the same, or one is inside the
/// other.
fn overlaps(changed: &str, theirs: &str) -> bool {
    let dir = theirs.trim_end_matches('/');
    changed == dir
        || changed.starts_with(&format!("{dir}/"))
        || dir.starts_with(&format!("{changed}/"))
}

/// Brings `integration` into the branch checked out at `checkout`'s root by a
/// fast-forward, only when the files it changes are none the person changed or left
/// untracked there. When the branch moved on since and `merge` allows it, by a merge
/// commit made beside the checkout first (a conflict lands nothing). `checkout`
/// confines git with what it may write there (the project, its `.git`); a run that
/// changed a file `protected` says is air's to keep (which the sandbox would not let
/// git write) is not landed.
pub fn land(
    checkout: &Launcher,
    integration: &str,
    merge: bool,
    protected: &dyn Fn(&str) -> bool,
) -> Result<Landing, String> {
    let root = checkout.root().to_path_buf();
    let full = format!("refs/heads/{integration}");
    let tip = commit_of(checkout, &full)?.ok_or_else(|| format!("no branch {integration}"))?;
    let how = format!("`git merge {integration}`");
    let branch = match checkout.git(&["symbolic-ref", "-q", "HEAD"], Reads::Metadata, 4096, STEP) {
        Ok((b, _)) => b.trim().to_string(),
        Err(_) => {
            return Ok(Landing::Kept {
                reason: format!("the checkout has no branch checked out; land it with {how}"),
            })
        }
    };
    let short = branch
        .strip_prefix("refs/heads/")
        .unwrap_or(&branch)
        .to_string();
    // Only onto the branch the run began from.
    if let Some(began) = began_on(checkout, &full).filter(|b| *b != branch) {
        let began = began.strip_prefix("refs/heads/").unwrap_or(&began);
        return Ok(Landing::Kept {
            reason: format!(
                "the run began on {began} and the checkout is on {short} now; switch back to {began} to land it, or land it with {how}"
            ),
        });
    }
    let head = commit_of(checkout, "HEAD")?.ok_or("the checkout has no commit")?;
    if count(checkout, &head, &tip)? == 0 {
        return Ok(Landing::Nothing);
    }
    let mut target = tip.clone();
    if count(checkout, &tip, &head)? > 0 {
        // The branch moved on since: merged beside the checkout when `merge` allows
        // it, or when all that moved it is air's (another session's run landed).
        if !merge && !only_air(checkout, &tip, &head)? {
            return Ok(Landing::Kept {
                reason: format!("{short} has commits made since the run began; land it with {how}"),
            });
        }
        let writable = [root.join(".git")];
        let message = format!("air: land {integration}");
        target = match merge_commit(checkout, &writable, &head, &tip, &message)? {
            Ok(commit) => commit,
            Err(files) => {
                return Ok(Landing::Kept {
                    reason: format!(
                        "{short} and the run changed the same lines of {}; merge it by hand: {how}",
                        files.join(", ")
                    ),
                })
            }
        };
    }
    let files = changed_between(checkout, &head, &target)?;
    let guarded: Vec<&String> = files.iter().filter(|f| protected(f)).take(10).collect();
    if !guarded.is_empty() {
        let named: Vec<&str> = guarded.iter().map(|s| s.as_str()).collect();
        return Ok(Landing::Kept {
            reason: format!(
                "the run changed {}, which air keeps from being written without you; land it with {how}",
                named.join(", ")
            ),
        });
    }
    // The person's changes, new files and ignored ones (a directory whole where git
    // shows it so): none may be where the run writes, or inside or above it.
    let (status, cut) = checkout.git(
        &[
            "status",
            "--porcelain=v1",
            "-z",
            "--untracked-files=normal",
            "--ignored=traditional",
            "--no-renames",
        ],
        Reads::Content,
        NAMES_CAP,
        STEP,
    )?;
    if cut {
        return Ok(Landing::Kept {
            reason: format!(
                "the checkout has too many changed or ignored files to check; land it with {how}"
            ),
        });
    }
    let theirs = status_paths(&status);
    let touched: Vec<&String> = files
        .iter()
        .filter(|f| theirs.iter().any(|t| overlaps(f, t)))
        .collect();
    if !touched.is_empty() {
        let named: Vec<&str> = touched.iter().take(10).map(|s| s.as_str()).collect();
        return Ok(Landing::Kept {
            reason: format!(
                "your uncommitted changes touch {} that the run changed too; commit or put them aside, then land it with {how}",
                named.join(", ")
            ),
        });
    }
    let writable: Vec<PathBuf> = vec![root];
    checkout.git_write(
        &[
            "merge",
            "--ff-only",
            "-q",
            "--no-verify",
            "--no-overwrite-ignore",
            "--end-of-options",
            &target,
        ],
        &writable,
        64 * 1024,
        STEP,
    )?;
    Ok(Landing::Landed {
        branch: short,
        files,
    })
}

/// Held while a landing runs.
static LANDING: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Lands `integration` in the checkout of `engine`'s project ([`land`], with a
/// merge commit when `always`), as the run report says it: what air keeps from
/// agents' writes (its state and configuration, git's, the files that run code
/// later) is the person's to land, and git is confined to what the engine lets a
/// command write there.
pub fn land_checkout(
    engine: &crate::tools::permission::Engine,
    main: &Launcher,
    integration: &str,
    always: bool,
) -> air_proto::payload::Landing {
    use crate::tools::permission::{Access, Verdict};
    let root = engine.checkout().to_path_buf();
    let checkout = main
        .at(&root)
        .with_views(engine.views(std::slice::from_ref(&root), &[], &[]));
    let protected = |f: &str| {
        let path = root.join(f);
        !matches!(
            engine.check(&path, Access::Write),
            Verdict::Allow | Verdict::Backup
        ) || engine.is_air_config(&path)
            || engine.is_code_config(&path)
    };
    // One landing at a time in this airsd (one per project): two sessions' runs
    // ending together land one after the other, the second beside the first.
    let _one = LANDING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let (landed, branch, files, reason) = match land(&checkout, integration, always, &protected) {
        Ok(Landing::Nothing) => (
            false,
            None,
            Vec::new(),
            Some(air_proto::payload::NOTHING_TO_LAND.into()),
        ),
        Ok(Landing::Landed { branch, files }) => (true, Some(branch), files, None),
        Ok(Landing::Kept { reason }) => (false, None, Vec::new(), Some(reason)),
        Err(e) => (
            false,
            None,
            Vec::new(),
            Some(format!(
                "landing failed: {e}; land it with `git merge {integration}`"
            )),
        ),
    };
    air_proto::payload::Landing {
        integration_branch: integration.to_string(),
        landed,
        branch,
        files,
        reason,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::workspace::{commit_attempt, create, remove};

    fn git(root: &Path, args: &[&str]) -> String {
        let git = air_proto::program::find("git", None, &[]).unwrap();
        let out = air_proto::program::git_command(&git)
            .args(["-c", "user.name=p", "-c", "user.email=p@example.invalid"])
            .args(args)
            .current_dir(root)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// A committed repository of `lib.py` (holding `lib`) and `notes.txt`; `None`
    /// without git.
    fn repo(lib: &str) -> Option<(tempfile::TempDir, PathBuf)> {
        air_proto::program::find("git", None, &[])?;
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        git(&root, &["init", "-q", "-b", "main"]);
        std::fs::write(root.join(".gitignore"), ".air/local/\n").unwrap();
        std::fs::write(root.join("lib.py"), lib).unwrap();
        std::fs::write(root.join("notes.txt"), "n\n").unwrap();
        git(&root, &["add", "-A"]);
        git(&root, &["commit", "-qm", "one"]);
        Some((dir, root))
    }

    /// Three tasks add a function each to one file from the same start; all three
    /// merge. A fourth changes the same line as the first: a conflict, named, and the
    /// integration branch as it was. Landing then touches none of the person's edits,
    /// and waits while one of them is in a file the run changed.
    #[test]
    fn tasks_merge_one_at_a_time_and_land_around_the_persons_edits() {
        let lib = "def a():\n    return 1\n\n\n\n\n\n\ndef b():\n    return 2\n\n\n\n\n\n\ndef c():\n    return 3\n";
        let Some((_dir, root)) = repo(lib) else {
            return;
        };
        let main = Launcher::plain(&root);
        let worktrees = air_proto::layout::ProjectPaths::new(&root).workspaces();
        assert_eq!(merge_missing(&main), None);
        let integ = integration(&main, &worktrees, "s1").unwrap().unwrap();
        assert_eq!(integ, "air/s1/integration");
        // Made once: a second call keeps it.
        assert_eq!(
            integration(&main, &worktrees, "s1").unwrap().unwrap(),
            integ
        );
        let edit = |task: &str, from: &str, to: &str| {
            let ws = create(&main, &worktrees, "s1", task, &integ).unwrap();
            let text = std::fs::read_to_string(ws.path.join("lib.py")).unwrap();
            assert!(text.contains(from), "{text}");
            std::fs::write(ws.path.join("lib.py"), text.replacen(from, to, 1)).unwrap();
            commit_attempt(&main, &ws, &worktrees, task).unwrap();
            ws
        };
        let t1 = edit("T1", "return 1", "return 10");
        let t2 = edit("T2", "return 2", "return 20");
        let t3 = edit("T3", "return 3", "return 30");
        let t5 = edit("T5", "return 1", "return 100");
        for ws in [&t1, &t2, &t3] {
            match merge(&main, &worktrees, ws, &integ, "merge").unwrap() {
                Merged::Merged { files, .. } => assert_eq!(files, ["lib.py"]),
                other => panic!("{other:?}"),
            }
        }
        let before = git(&root, &["rev-parse", "refs/heads/air/s1/integration"]);
        assert_eq!(
            merge(&main, &worktrees, &t5, &integ, "merge").unwrap(),
            Merged::Conflict {
                files: vec!["lib.py".into()]
            }
        );
        assert_eq!(
            git(&root, &["rev-parse", "refs/heads/air/s1/integration"]),
            before
        );
        // Merged already: nothing more.
        assert_eq!(
            merge(&main, &worktrees, &t1, &integ, "merge").unwrap(),
            Merged::Already
        );
        let merged = git(&root, &["show", "refs/heads/air/s1/integration:lib.py"]);
        for n in ["return 10", "return 20", "return 30"] {
            assert!(merged.contains(n), "{merged}");
        }
        for ws in [&t1, &t2, &t3, &t5] {
            remove(&main, ws, &worktrees).unwrap();
        }
        // The person edits lib.py: the run's lib.py waits for them.
        std::fs::write(root.join("lib.py"), "mine\n").unwrap();
        match land(&main, &integ, false, &|_| false).unwrap() {
            Landing::Kept { reason } => assert!(reason.contains("lib.py"), "{reason}"),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            std::fs::read_to_string(root.join("lib.py")).unwrap(),
            "mine\n"
        );
        // With their edit elsewhere, it lands, and their edit stays.
        std::fs::write(root.join("lib.py"), lib).unwrap();
        std::fs::write(root.join("notes.txt"), "their note\n").unwrap();
        match land(&main, &integ, false, &|_| false).unwrap() {
            Landing::Landed { branch, files } => {
                assert_eq!(
                    (branch.as_str(), files),
                    ("main", vec!["lib.py".to_string()])
                )
            }
            other => panic!("{other:?}"),
        }
        assert!(std::fs::read_to_string(root.join("lib.py"))
            .unwrap()
            .contains("return 30"));
        assert_eq!(
            std::fs::read_to_string(root.join("notes.txt")).unwrap(),
            "their note\n"
        );
        assert_eq!(
            land(&main, &integ, false, &|_| false).unwrap(),
            Landing::Nothing
        );
    }

    /// The repository at `root` with task T1's `lib.py = 2` merged into session
    /// `s1`'s integration branch, its worktree removed: the launcher, the worktrees'
    /// directory and the integration branch.
    fn one_task_merged(root: &Path) -> (Launcher, PathBuf, String) {
        let main = Launcher::plain(root);
        let worktrees = air_proto::layout::ProjectPaths::new(root).workspaces();
        let integ = integration(&main, &worktrees, "s1").unwrap().unwrap();
        let ws = create(&main, &worktrees, "s1", "T1", &integ).unwrap();
        std::fs::write(ws.path.join("lib.py"), "x = 2\n").unwrap();
        commit_attempt(&main, &ws, &worktrees, "T1").unwrap();
        assert!(matches!(
            merge(&main, &worktrees, &ws, &integ, "merge").unwrap(),
            Merged::Merged { .. }
        ));
        remove(&main, &ws, &worktrees).unwrap();
        (main, worktrees, integ)
    }

    /// The person committed while the run worked: `clean` keeps the work on its
    /// branch, `always` lands it as a merge commit; a conflict lands nothing.
    #[test]
    fn a_branch_that_moved_on_lands_only_when_asked_and_never_over_a_conflict() {
        let Some((_dir, root)) = repo("x = 1\n") else {
            return;
        };
        let (main, worktrees, integ) = one_task_merged(&root);
        std::fs::write(root.join("notes.txt"), "theirs\n").unwrap();
        git(&root, &["commit", "-qam", "theirs"]);
        assert!(matches!(
            land(&main, &integ, false, &|_| false).unwrap(),
            Landing::Kept { .. }
        ));
        match land(&main, &integ, true, &|_| false).unwrap() {
            Landing::Landed { files, .. } => assert_eq!(files, ["lib.py"]),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            std::fs::read_to_string(root.join("lib.py")).unwrap(),
            "x = 2\n"
        );
        assert_eq!(
            std::fs::read_to_string(root.join("notes.txt")).unwrap(),
            "theirs\n"
        );
        assert_eq!(
            git(&root, &["log", "-1", "--format=%P"]).split(' ').count(),
            2
        );
        // A second task changes the line the person changed too: nothing lands.
        let ws = create(&main, &worktrees, "s1", "T2", &integ).unwrap();
        std::fs::write(ws.path.join("notes.txt"), "the run's\n").unwrap();
        commit_attempt(&main, &ws, &worktrees, "T2").unwrap();
        merge(&main, &worktrees, &ws, &integ, "merge").unwrap();
        std::fs::write(root.join("notes.txt"), "theirs again\n").unwrap();
        git(&root, &["commit", "-qam", "again"]);
        let head = git(&root, &["rev-parse", "HEAD"]);
        match land(&main, &integ, true, &|_| false).unwrap() {
            Landing::Kept { reason } => assert!(reason.contains("notes.txt"), "{reason}"),
            other => panic!("{other:?}"),
        }
        assert_eq!(git(&root, &["rev-parse", "HEAD"]), head);
        assert_eq!(git(&root, &["status", "--porcelain"]), "");
    }

    /// A run lands only on the branch it began from.
    #[test]
    fn landing_goes_only_to_the_branch_the_run_began_on() {
        let Some((_dir, root)) = repo("x = 1\n") else {
            return;
        };
        let (main, _, integ) = one_task_merged(&root);
        git(&root, &["checkout", "-q", "-b", "elsewhere"]);
        match land(&main, &integ, true, &|_| false).unwrap() {
            Landing::Kept { reason } => assert!(reason.contains("began on main"), "{reason}"),
            other => panic!("{other:?}"),
        }
        git(&root, &["checkout", "-q", "main"]);
        assert!(matches!(
            land(&main, &integ, false, &|_| false).unwrap(),
            Landing::Landed { .. }
        ));
    }

    /// A file the run adds where the person keeps ignored files (a directory the
    /// project ignores) is not landed over them; nor is one air protects.
    #[test]
    fn landing_never_overwrites_what_the_person_ignores() {
        let Some((_dir, root)) = repo("x = 1\n") else {
            return;
        };
        std::fs::write(root.join(".gitignore"), ".air/local/\ndata/\n").unwrap();
        git(&root, &["commit", "-qam", "ignore data"]);
        let main = Launcher::plain(&root);
        let worktrees = air_proto::layout::ProjectPaths::new(&root).workspaces();
        let integ = integration(&main, &worktrees, "s1").unwrap().unwrap();
        let ws = create(&main, &worktrees, "s1", "T1", &integ).unwrap();
        // `data/` matches directories only: a file `data` is committed.
        std::fs::write(ws.path.join("data"), "the run's\n").unwrap();
        commit_attempt(&main, &ws, &worktrees, "T1").unwrap();
        merge(&main, &worktrees, &ws, &integ, "merge").unwrap();
        remove(&main, &ws, &worktrees).unwrap();
        std::fs::create_dir_all(root.join("data")).unwrap();
        std::fs::write(root.join("data/mine.csv"), "1,2\n").unwrap();
        match land(&main, &integ, false, &|_| false).unwrap() {
            Landing::Kept { reason } => assert!(reason.contains("data"), "{reason}"),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            std::fs::read_to_string(root.join("data/mine.csv")).unwrap(),
            "1,2\n"
        );
        // A file air protects is the person's to land.
        std::fs::remove_dir_all(root.join("data")).unwrap();
        match land(&main, &integ, false, &|f| f == "data").unwrap() {
            Landing::Kept { reason } => assert!(reason.contains("keeps"), "{reason}"),
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            land(&main, &integ, false, &|_| false).unwrap(),
            Landing::Landed { .. }
        ));
    }

    /// No branch is named by a ref that is not there.
    fn merge_missing(main: &Launcher) -> Option<String> {
        commit_of(main, "refs/heads/air/none").unwrap()
    }
}
