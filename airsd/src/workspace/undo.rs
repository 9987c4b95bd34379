//! `air undo TASK`: one task's merged change taken back out of the session's
//! integration branch, as a new commit on it (what later tasks changed stays). The
//! task's merge commit (its checkpoint) is found by its branch's head as the merge's
//! second parent, on the integration branch's first-parent line; the change undone is
//! that merge against its first parent, applied in reverse onto the branch's head by
//! `merge-tree` (a conflict with what came later undoes nothing and names the files).

use std::path::Path;

use super::merge::{changed_between, commit_of, merge_tree_based};
use super::{branch_name, common_writable, remove, Workspace, NAMES_CAP, STEP};
use crate::launcher::{Launcher, Reads};

/// What undoing a task did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Undone {
    /// Taken out: the integration branch's new head, and the files that changed.
    Undone { commit: String, files: Vec<String> },
    /// The task's change was never merged (or its merge is not on the branch).
    NotMerged,
    /// Undone before (the undo commit names its merge).
    Already,
    /// What later tasks changed touches the same lines of these files: nothing undone.
    Conflict { files: Vec<String> },
}

/// The trailer an undo commit names the merge it undoes with.
const UNDOES: &str = "Undoes: ";
/// How an undo commit's subject begins.
pub const UNDO_SUBJECT: &str = "air: undo ";

/// Undoes `task`'s merge on `integration` (session `session`), with `message` as the
/// undo commit's subject; the branch moves only from the head it was read at.
pub fn undo(
    main: &Launcher,
    worktrees: &Path,
    integration: &str,
    session: &str,
    task: &str,
    message: &str,
) -> Result<Undone, String> {
    let full = format!("refs/heads/{integration}");
    let head = commit_of(main, &full)?.ok_or_else(|| format!("no branch {integration}"))?;
    let branch = branch_name(session, task);
    let Some(tip) = commit_of(main, &format!("refs/heads/{branch}"))? else {
        return Err(format!(
            "task {task} has no branch ({branch}): it did not work in a worktree of this session"
        ));
    };
    let (line, _) = main.git(
        &[
            "rev-list",
            "--first-parent",
            "--parents",
            "--max-count=100000",
            "--end-of-options",
            &head,
        ],
        Reads::Metadata,
        NAMES_CAP,
        STEP,
    )?;
    let merge = line.lines().find_map(|l| {
        let mut ids = l.split_whitespace();
        let (commit, first, second) = (ids.next()?, ids.next()?, ids.next()?);
        (second == tip).then(|| (commit.to_string(), first.to_string()))
    });
    let Some((merge, before)) = merge else {
        return Ok(Undone::NotMerged);
    };
    // Undone before: an undo commit of air's (one parent, its subject, its trailer
    // naming this merge) after it on the first-parent line. A merge's own message
    // (a task's title) cannot stand in for one.
    let range = format!("{merge}..{head}");
    let (log, _) = main.git(
        &[
            "log",
            "--first-parent",
            "--max-count=100000",
            "--format=%P%x1f%ae%x1f%s%x1f%(trailers:key=Undoes,valueonly,separator=%x2C)%x1e",
            "--end-of-options",
            &range,
        ],
        Reads::Metadata,
        NAMES_CAP,
        STEP,
    )?;
    let undone = log.split('\x1e').any(|c| {
        let f: Vec<&str> = c.trim_start_matches('\n').split('\x1f').collect();
        f.len() == 4
            && f[0].split_whitespace().count() == 1
            && f[1] == crate::launcher::AIR_IDENTITY.1
            && f[2].starts_with(UNDO_SUBJECT)
            && f[3].trim().split(',').any(|m| m.trim() == merge)
    });
    if undone {
        return Ok(Undone::Already);
    }
    let places = common_writable(main, worktrees)?;
    // The merge's change in reverse: from the merge to its first parent, onto head.
    let (tree, conflicts) = merge_tree_based(main, &places, &merge, &head, &before)?;
    if !conflicts.is_empty() {
        return Ok(Undone::Conflict { files: conflicts });
    }
    let body = format!("{message}\n\n{UNDOES}{merge}");
    let (commit, _) = main.git_write(
        &["commit-tree", &tree, "-p", &head, "-m", &body],
        &places,
        4096,
        STEP,
    )?;
    let commit = commit.trim().to_string();
    main.git_write(
        &["update-ref", "-m", message, &full, &commit, &head],
        &places,
        4096,
        STEP,
    )?;
    let files = changed_between(main, &head, &commit)?;
    Ok(Undone::Undone { commit, files })
}

/// Sets a task's work aside after its change was taken back out: its worktree (if
/// any) removed, its branch's commits kept under `<branch>-replaced-<n>`, and its
/// branch moved to `fresh` (the integration branch's head), so that the task,
/// started over, works from there. Answers the name the work is kept under
/// (`None`: the task had no branch).
pub fn set_aside(
    main: &Launcher,
    ws: Option<&Workspace>,
    worktrees: &Path,
    session: &str,
    task: &str,
    fresh: &str,
) -> Result<Option<String>, String> {
    if let Some(ws) = ws {
        remove(main, ws, worktrees)?;
    }
    let branch = branch_name(session, task);
    let full = format!("refs/heads/{branch}");
    let Some(tip) = commit_of(main, &full)? else {
        return Ok(None);
    };
    let places = common_writable(main, worktrees)?;
    let mut n = 1;
    let kept = loop {
        let name = format!("{branch}-replaced-{n}");
        if commit_of(main, &format!("refs/heads/{name}"))?.is_none() {
            break name;
        }
        n += 1;
    };
    // A commit's name: nothing git could take for an option.
    if !(fresh.len() == 40 || fresh.len() == 64) || !fresh.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!("`{fresh}` names no commit"));
    }
    // The kept name is made where the branch points, then the branch moves (only
    // from that commit): loose refs both, nothing of the repository's own files.
    main.git_write(
        &["update-ref", &format!("refs/heads/{kept}"), &tip, ""],
        &places,
        4096,
        STEP,
    )?;
    main.git_write(&["update-ref", &full, fresh, &tip], &places, 4096, STEP)?;
    Ok(Some(kept))
}
