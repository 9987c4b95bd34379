//! A task's own worktree (issue 35's lifecycle, before the scheduler uses it): made
//! from a base commit on a branch of its own (`air/<session>/<task>`), its attempt
//! committed there by airsd (the agent never has to), its change read as the branch
//! against its base, and removed. Every run of git is airsd's own
//! ([`Launcher::git_write`]): nothing the repository planted runs, and only the
//! repository's git directory and the worktrees' directory are writable.
//!
//! Must not: touch the person's checkout (its index, its branch, its files).

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::launcher::{Launcher, Reads};

mod gc;
mod merge;
mod queue;
mod undo;

pub use gc::{prune, Entry as PrunedEntry, Limits, Pruned};
pub use merge::{
    branch_exists, branch_head, has_commit, integration, integration_branch, land, land_checkout,
    landed, merge, Landing, Merged,
};
pub use queue::{advance, between, prepare, Prepared};
pub use undo::{set_aside, undo, Undone, UNDO_SUBJECT};

/// How long one git step of a worktree may take.
const STEP: Duration = Duration::from_secs(120);

/// `git worktree add|remove|prune`, one at a time in this process: git reads every
/// worktree's administrative directory while it adds one, and fails on one another
/// `worktree add` has made but not yet filled ("failed to read .git/worktrees/…/
/// commondir"), as two runs of a project starting their tasks at once do.
pub(crate) fn worktree_git(
    main: &Launcher,
    args: &[&str],
    writable: &[PathBuf],
) -> Result<(String, bool), String> {
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _held = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    main.git_write(args, writable, 64 * 1024, STEP)
}
/// Bytes of git's answer kept for a list of names; a diff is cut at its own cap.
const NAMES_CAP: usize = 4 << 20;
/// The largest file a task's change may hold.
const MOST_FILE_BYTES: u64 = 100 << 20;

/// A worktree of one task.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Workspace {
    /// Where it is checked out.
    pub path: PathBuf,
    /// Its branch (`air/<session>/<task>`).
    pub branch: String,
    /// The commit it was made from.
    pub base: String,
    /// Its git directory (`<common>/worktrees/<id>`), named to git at each run: the
    /// worktree's `.git` file, which the task's commands could reach, is never
    /// what says where it is.
    pub git_dir: PathBuf,
}

impl Workspace {
    /// airsd's git for this worktree: `main`'s program and sandbox, `views` for what
    /// it runs confined.
    pub fn launcher(&self, main: &Launcher, views: crate::sandbox::Views) -> Launcher {
        main.worktree(&self.path, &self.git_dir, views)
    }
}

/// The branch of a session's task: `air/<first 8 of the session>/<task>`, each part
/// kept to the characters a ref may hold anywhere.
pub fn branch_name(session: &str, task: &str) -> String {
    let (s, t) = parts(session, task);
    format!("air/{s}/{t}")
}

/// A task's part of its branch and of its worktree's place (`T1`, `ph-milestone-1`).
pub fn task_part(task: &str) -> String {
    parts("", task).1
}

/// The session's part of a branch: its first 8 characters, cleaned.
pub fn branch_part(session: &str) -> String {
    parts(session, "").0
}

/// The session's and the task's part of a branch and of a worktree's place, cleaned
/// (only letters, digits, `-` and `_`).
fn parts(session: &str, task: &str) -> (String, String) {
    let clean = |s: &str| -> String {
        let kept: String = s
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '-'
                }
            })
            .collect();
        let kept = kept.trim_matches('-').to_string();
        if kept.is_empty() {
            "x".into()
        } else {
            kept
        }
    };
    // A session id's last 8 characters: its random part (the first ones are the
    // time, the same for sessions started within a minute of each other).
    let chars: Vec<char> = session
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .collect();
    let short: String = chars[chars.len().saturating_sub(8)..].iter().collect();
    // One task, one name: an id that had to be changed (or that is the session's
    // own branch's) gets a piece of its hash, so `T1.1` and `T1-1` never share a
    // branch.
    let cleaned = clean(task);
    let task = if cleaned != task || cleaned == "integration" {
        use sha2::Digest as _;
        let h = sha2::Sha256::digest(task.as_bytes());
        format!("{cleaned}-{:02x}{:02x}{:02x}{:02x}", h[0], h[1], h[2], h[3])
    } else {
        cleaned
    };
    (clean(&short), task)
}

/// Refuses a path that a symbolic link leads through (from the top): the worktrees'
/// directory is made and written by airsd, and a link committed at `.air/local`
/// would carry that elsewhere.
fn no_links(path: &Path) -> Result<(), String> {
    let mut at = PathBuf::new();
    for part in path.components() {
        at.push(part);
        if std::fs::symlink_metadata(&at).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(format!("{} is a symbolic link", at.display()));
        }
    }
    Ok(())
}

/// The repository's common git directory, as git at `main`'s root names it.
fn common_dir(main: &Launcher) -> Result<PathBuf, String> {
    // Known for this repository once its `.git` is as it was then.
    type Known = std::collections::HashMap<PathBuf, ((u64, i64, i64), PathBuf)>;
    static KNOWN: std::sync::Mutex<Option<Known>> = std::sync::Mutex::new(None);
    let stamp = {
        use std::os::unix::fs::MetadataExt as _;
        std::fs::symlink_metadata(main.root().join(".git"))
            .map(|m| (m.ino(), m.mtime(), m.mtime_nsec()))
            .ok()
    };
    let root = main.root().to_path_buf();
    if let Some(stamp) = stamp {
        let known = KNOWN
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((s, dir)) = known.as_ref().and_then(|k| k.get(&root)) {
            if *s == stamp && dir.is_dir() {
                return Ok(dir.clone());
            }
        }
    }
    let found = read_common_dir(main)?;
    if let Some(stamp) = stamp {
        let mut known = KNOWN
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        known
            .get_or_insert_with(Default::default)
            .insert(root, (stamp, found.clone()));
    }
    Ok(found)
}

fn read_common_dir(main: &Launcher) -> Result<PathBuf, String> {
    let (common, _) = main.git(
        &["rev-parse", "--path-format=absolute", "--git-common-dir"],
        Reads::Metadata,
        4096,
        STEP,
    )?;
    let common = PathBuf::from(common.trim());
    if !common.is_absolute() {
        return Err(format!(
            "git named no git directory: `{}`",
            common.display()
        ));
    }
    std::fs::canonicalize(&common).map_err(|e| format!("{}: {e}", common.display()))
}

/// The places a worktree's git runs may write: of the repository's git directory its
/// objects, refs, reflogs and worktrees' own directories (never its configuration,
/// its hooks or the checkout's index and HEAD), and the directory the worktrees are
/// made in.
fn common_writable(main: &Launcher, worktrees: &Path) -> Result<Vec<PathBuf>, String> {
    let common = common_dir(main)?;
    let mut out = Vec::new();
    for part in ["objects", "refs", "logs", "worktrees"] {
        let p = common.join(part);
        no_links(&p)?;
        std::fs::create_dir_all(&p).map_err(|e| format!("{}: {e}", p.display()))?;
        out.push(p);
    }
    out.push(worktrees.to_path_buf());
    Ok(out)
}

/// The git directory git made for the worktree at `path`: the one of the common
/// directory's `worktrees/` whose `gitdir` names `path`'s `.git`.
fn admin_dir(main: &Launcher, path: &Path) -> Result<PathBuf, String> {
    let mut found = admin_dirs(main, path)?;
    // One made whole first (an interrupted creation may have left another).
    found.sort_by_key(|d| !d.join(READY).exists());
    found
        .into_iter()
        .next()
        .ok_or_else(|| format!("git keeps no worktree at {}", path.display()))
}

/// Every git directory of the common directory's `worktrees/` whose `gitdir` names
/// `path`'s `.git`.
fn admin_dirs(main: &Launcher, path: &Path) -> Result<Vec<PathBuf>, String> {
    let common = common_dir(main)?;
    let dot = path.join(".git");
    let listed = std::fs::read_dir(common.join("worktrees"))
        .map_err(|e| format!("{}: {e}", common.join("worktrees").display()))?;
    Ok(listed
        .flatten()
        .take(4096)
        .map(|e| e.path())
        .filter(|dir| {
            crate::opened::read_small(&dir.join("gitdir"), dir, 8192)
                .is_some_and(|n| Path::new(n.trim()) == dot)
        })
        .collect())
}

/// Removes the lock files a git killed with an earlier airsd left on what only
/// airsd's git writes for this session: its branches (`refs/heads/air/<session>/`)
/// and its worktrees' git directories. Only files named `*.lock`, reached through no
/// link; the repository's own locks (`packed-refs.lock`, the checkout's index) are
/// never touched.
pub(crate) fn unlock_stale(main: &Launcher, worktrees: &Path, session: &str) {
    let Ok(common) = common_dir(main) else {
        return;
    };
    let locks_in = |dir: &Path, deep: bool| -> Vec<PathBuf> {
        let mut out = Vec::new();
        let mut queue = vec![(dir.to_path_buf(), 0)];
        while let Some((d, depth)) = queue.pop() {
            let Ok(rd) = std::fs::read_dir(&d) else {
                continue;
            };
            for e in rd.flatten().take(4096) {
                let Ok(t) = e.file_type() else { continue };
                let p = e.path();
                if t.is_dir() && deep && depth < 8 {
                    queue.push((p, depth + 1));
                } else if t.is_file() && p.extension().is_some_and(|x| x == "lock") {
                    out.push(p);
                }
            }
        }
        out
    };
    let mut stale = locks_in(
        &common.join("refs/heads/air").join(branch_part(session)),
        true,
    );
    if let Ok(rd) = std::fs::read_dir(common.join("worktrees")) {
        for e in rd.flatten().take(4096) {
            let dir = e.path();
            let named = crate::opened::read_small(&dir.join("gitdir"), &dir, 8192);
            let own = worktrees.join(branch_part(session));
            if named.is_some_and(|n| Path::new(n.trim()).starts_with(&own)) {
                stale.extend(locks_in(&dir, false));
            }
        }
    }
    for lock in stale {
        if no_links(&lock).is_ok() {
            tracing::info!(
                "removing a lock an earlier airsd's git left: {}",
                lock.display()
            );
            let _ = std::fs::remove_file(&lock);
        }
    }
}

/// What of a task an earlier attempt left: its worktree, its branch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Left {
    pub worktree: bool,
    pub branch: bool,
}

impl Left {
    pub fn any(self) -> bool {
        self.worktree || self.branch
    }
}

/// Whether the worktree of `task` (under `worktrees`) and its branch are there.
pub fn left(main: &Launcher, worktrees: &Path, session: &str, task: &str) -> Left {
    let (s, t) = parts(session, task);
    let full = format!("refs/heads/{}", branch_name(session, task));
    Left {
        worktree: std::fs::symlink_metadata(worktrees.join(s).join(t)).is_ok(),
        branch: main
            .git_answer(
                &["rev-parse", "--verify", "-q", "--end-of-options", &full],
                Reads::Metadata,
                &[1],
                4096,
                STEP,
            )
            .is_ok_and(|(h, code)| code == 0 && !h.trim().is_empty()),
    }
}

/// Makes the worktree of `task` under `worktrees` (made if missing) from `base` (a
/// revision of the repository at `main`'s root), on its own new branch.
pub fn create(
    main: &Launcher,
    worktrees: &Path,
    session: &str,
    task: &str,
    base: &str,
) -> Result<Workspace, String> {
    if !worktrees.is_absolute() {
        return Err(format!("{} is not an absolute path", worktrees.display()));
    }
    no_links(worktrees)?;
    std::fs::create_dir_all(worktrees).map_err(|e| format!("{}: {e}", worktrees.display()))?;
    let found = std::fs::canonicalize(worktrees).map_err(|e| e.to_string())?;
    if found != worktrees {
        return Err(format!("{} is reached through a link", worktrees.display()));
    }
    let (commit, _) = main.git(
        &[
            "rev-parse",
            "--verify",
            "-q",
            "--end-of-options",
            &format!("{base}^{{commit}}"),
        ],
        Reads::Metadata,
        4096,
        STEP,
    )?;
    let commit = commit.trim().to_string();
    if !(commit.len() == 40 || commit.len() == 64) || !commit.bytes().all(|b| b.is_ascii_hexdigit())
    {
        return Err(format!("`{base}` names no commit"));
    }
    let branch = branch_name(session, task);
    let (s, t) = parts(session, task);
    let path = worktrees.join(s).join(t);
    let places = common_writable(main, worktrees)?;
    let full = format!("refs/heads/{branch}");
    let kept = left(main, worktrees, session, task).branch;
    let there = std::fs::symlink_metadata(&path).is_ok();
    // Ready: made and checked out whole (only then does an agent start in it).
    let admin = if there {
        admin_dir(main, &path)
            .ok()
            .filter(|a| a.join(READY).exists())
    } else {
        None
    };
    if there && admin.is_none() {
        // What a creation airsd did not finish left (no agent ever worked in it):
        // taken away, and made again.
        no_links(&path)?;
        // Its git directories too (git keeps one it was making, locked).
        for dir in admin_dirs(main, &path)? {
            no_links(&dir)?;
            std::fs::remove_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        }
        std::fs::remove_dir_all(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        worktree_git(main, &["worktree", "prune"], &places)?;
    }
    if let Some(git_dir) = admin {
        if !kept {
            return Err(format!(
                "{} exists already, on no branch of the task",
                path.display()
            ));
        }
        let ws = Workspace {
            base: String::new(),
            path,
            branch,
            git_dir,
        };
        on_branch(&ws.launcher(main, main.views().clone()), &ws)?;
        // Where its change starts: the integration commit it was last merged with,
        // else where it was made, as written then.
        let read = |name: &str| {
            crate::opened::read_small(&ws.git_dir.join(name), &ws.git_dir, 4096)
                .map(|b| b.trim().to_string())
                .filter(|b| !b.is_empty())
        };
        let made_from = read(MERGED_BASE).or_else(|| read(READY));
        let base = match made_from {
            Some(b) => b,
            None => fork_point(main, &commit, &full)?,
        };
        let ws = Workspace { base, ..ws };
        // An earlier attempt's worktree: continued as it was left, uncommitted work
        // and all (it belongs to the task).
        lend_places(main, &ws);
        return Ok(ws);
    }
    // Made empty, then checked out from inside it: what the repository's
    // configuration adds for the new branch or its git directory (`includeIf
    // onbranch:`) is then read, and blanked, by the run that checks out. A branch an
    // earlier attempt left (its worktree removed) is continued.
    let path_arg = path.display().to_string();
    let mut add = vec!["worktree", "add", "-q", "--no-checkout"];
    if kept {
        // By its name: git checks a branch out only when named so (a full ref would
        // be a detached HEAD).
        add.extend(["--", &path_arg, &branch]);
    } else {
        add.extend(["-b", &branch, "--", &path_arg, &commit]);
    }
    worktree_git(main, &add, &places)?;
    let git_dir = admin_dir(main, &path)?;
    let ws = Workspace {
        base: if kept {
            fork_point(main, &commit, &full)?
        } else {
            commit
        },
        path,
        branch,
        git_dir,
    };
    checkout(main, &ws, &places)?;
    lend_places(main, &ws);
    Ok(ws)
}

/// Refuses a worktree whose HEAD is not its task's branch.
fn on_branch(at: &Launcher, ws: &Workspace) -> Result<(), String> {
    let (head, _) = at.git(&["symbolic-ref", "-q", "HEAD"], Reads::Metadata, 4096, STEP)?;
    if head.trim() != format!("refs/heads/{}", ws.branch) {
        return Err(format!(
            "{} is on `{}`, not on {}",
            ws.path.display(),
            head.trim(),
            ws.branch
        ));
    }
    Ok(())
}

/// In a worktree's git directory once its files are checked out, holding the commit
/// it was made from: a worktree without it was being made when airsd stopped.
const READY: &str = "air-ready";
/// Beside it once the merge queue merged the integration branch into the task's
/// branch: the integration commit merged, against which the task's change is read
/// from then on.
const MERGED_BASE: &str = "air-merged-base";

/// Checks the worktree's files out from its branch, then marks it ready; a worktree
/// that is not on its branch is refused.
fn checkout(main: &Launcher, ws: &Workspace, places: &[PathBuf]) -> Result<(), String> {
    let at = ws.launcher(main, main.views().clone());
    on_branch(&at, ws)?;
    at.git_write(&["reset", "-q", "--hard"], places, 64 * 1024, STEP)?;
    crate::opened::write_new(&ws.git_dir.join(READY), &ws.git_dir, ws.base.as_bytes())
        .or_else(|e| {
            if ws.git_dir.join(READY).exists() {
                Ok(())
            } else {
                Err(e)
            }
        })
        .map_err(|e| format!("{}: {e}", ws.git_dir.join(READY).display()))
}

/// Moves a worktree nobody has worked in yet (made ahead of its task's start) to
/// `to`, the integration branch as it is now: its branch and its files, and its
/// record of where it started.
pub fn restart_at(
    main: &Launcher,
    worktrees: &Path,
    ws: &mut Workspace,
    to: &str,
) -> Result<(), String> {
    if ws.base == to {
        return Ok(());
    }
    // A commit's name: nothing git could take for an option.
    if !(to.len() == 40 || to.len() == 64) || !to.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!("`{to}` names no commit"));
    }
    let places = common_writable(main, worktrees)?;
    let at = ws.launcher(main, main.views().clone());
    on_branch(&at, ws)?;
    // Its branch (checked out there, holding nothing of its own) moves with it.
    at.git_write(
        &["reset", "-q", "--hard", to, "--"],
        &places,
        64 * 1024,
        STEP,
    )?;
    crate::opened::write_atomic(&ws.git_dir.join(READY), &ws.git_dir, to.as_bytes())
        .map_err(|e| format!("{}: {e}", ws.git_dir.join(READY).display()))?;
    ws.base = to.to_string();
    Ok(())
}

/// Takes away a worktree nobody worked in (made ahead for a task that did not start
/// in it): the worktree, and its branch while it still points where it was made
/// (so that the task, if it starts later, starts from the integration branch as it
/// is then).
pub fn forget(main: &Launcher, ws: &Workspace, worktrees: &Path) -> Result<(), String> {
    remove(main, ws, worktrees)?;
    let places = common_writable(main, worktrees)?;
    let full = format!("refs/heads/{}", ws.branch);
    main.git_write(&["update-ref", "-d", &full, &ws.base], &places, 4096, STEP)?;
    Ok(())
}

/// Makes the empty directory each of the checkout's environments is lent onto in the
/// worktree, where the worktree has nothing there and the directory above it is its
/// own (reached through no link).
fn lend_places(main: &Launcher, ws: &Workspace) {
    for rel in crate::tools::permission::environments(main.root()) {
        let at = ws.path.join(&rel);
        let parent_ok = at
            .parent()
            .is_some_and(|p| p.is_dir() && no_links(p).is_ok());
        if parent_ok && std::fs::symlink_metadata(&at).is_err() {
            let _ = std::fs::create_dir(&at);
        }
    }
}

/// Where the branch `full` left `base`'s history: the commit its change is read
/// against.
fn fork_point(main: &Launcher, base: &str, full: &str) -> Result<String, String> {
    let (at, _) = main.git(
        &["merge-base", "--end-of-options", base, full],
        Reads::Metadata,
        4096,
        STEP,
    )?;
    Ok(at.trim().to_string())
}

/// Commits what the attempt left in the worktree (everything but what the project
/// ignores) on its branch, as air; the new head, or `None` when nothing changed.
pub fn commit_attempt(
    main: &Launcher,
    ws: &Workspace,
    worktrees: &Path,
    message: &str,
) -> Result<Option<String>, String> {
    let places = common_writable(main, worktrees)?;
    let at = ws.launcher(main, main.views().clone());
    // Only ever on the task's branch.
    on_branch(&at, ws)?;
    at.git_write(&["add", "-A", "--", "."], &places, 64 * 1024, STEP)?;
    // Every staged entry with its modes (submodules shown, whatever the repository
    // says): a nested repository the attempt made would be committed as a bare
    // pointer to commits nobody can review.
    let (staged, cut) = at.git(
        &[
            "diff",
            "--cached",
            "--raw",
            "-z",
            "--no-renames",
            "--ignore-submodules=none",
            "--no-relative",
        ],
        Reads::Metadata,
        NAMES_CAP,
        STEP,
    )?;
    let unstage = |name: &str| {
        let _ = at.git_write(&["reset", "-q", "--", name], &places, 64 * 1024, STEP);
    };
    if cut {
        unstage(".");
        return Err("the attempt changed too many files to list (over 4 MiB of names)".into());
    }
    let mut fields = staged.split('\0');
    let mut any = false;
    while let Some(head) = fields.next() {
        if head.is_empty() {
            continue;
        }
        let name = fields.next().unwrap_or_default();
        any = true;
        // `:OLDMODE NEWMODE OLDID NEWID STATUS`
        if head.split_whitespace().nth(1) == Some("160000") {
            unstage(name);
            return Err(format!(
                "`{name}` is a git repository of its own inside the project: its files cannot be part of the task's change (remove its `.git`, or keep it out of the project)"
            ));
        }
        let size = std::fs::symlink_metadata(ws.path.join(name)).map_or(0, |m| m.len());
        if size > MOST_FILE_BYTES {
            unstage(name);
            return Err(format!(
                "`{name}` is {} MiB, over the {} MiB a file of a task's change may be (a build output or data file belongs in .gitignore)",
                size >> 20,
                MOST_FILE_BYTES >> 20
            ));
        }
    }
    if !any {
        return Ok(None);
    }
    at.git_write(
        &["commit", "-q", "--no-verify", "-m", message],
        &places,
        64 * 1024,
        STEP,
    )?;
    let (head, _) = at.git(&["rev-parse", "HEAD"], Reads::Metadata, 4096, STEP)?;
    Ok(Some(head.trim().to_string()))
}

/// `git diff` of the branch (by its full ref) against its base, with `options`:
/// submodules shown and paths from the top, whatever the repository's settings.
fn branch_diff(
    main: &Launcher,
    ws: &Workspace,
    options: &[&str],
    reads: Reads,
    cap: usize,
) -> Result<(String, bool), String> {
    let head = format!("refs/heads/{}", ws.branch);
    let mut args = vec![
        "diff",
        "--no-renames",
        "--ignore-submodules=none",
        "--no-relative",
    ];
    args.extend_from_slice(options);
    args.extend([ws.base.as_str(), head.as_str(), "--"]);
    main.git(&args, reads, cap, STEP)
}

/// The files the branch changed against its base, from the project's root.
pub fn changed(main: &Launcher, ws: &Workspace) -> Result<Vec<String>, String> {
    let (names, _) = branch_diff(main, ws, &["--name-only", "-z"], Reads::Metadata, NAMES_CAP)?;
    Ok(names
        .split('\0')
        .filter(|n| !n.is_empty())
        .map(str::to_string)
        .collect())
}

/// The diff of `files` between two revisions of the repository, cut at `cap` bytes
/// (and whether it was).
pub fn diff_of(
    main: &Launcher,
    from: &str,
    to: &str,
    files: &[String],
    cap: usize,
) -> Result<(String, bool), String> {
    let mut args = vec![
        "diff",
        "--no-renames",
        "--ignore-submodules=none",
        "--no-relative",
        "--no-color",
        "--no-ext-diff",
        "--no-textconv",
        "--end-of-options",
        from,
        to,
        "--",
    ];
    let literal: Vec<String> = files.iter().map(|f| format!(":(literal){f}")).collect();
    args.extend(literal.iter().map(String::as_str));
    main.git(&args, Reads::Content, cap, STEP)
}

/// The branch's diff against its base, cut at `cap` bytes (and whether it was).
pub fn diff(main: &Launcher, ws: &Workspace, cap: usize) -> Result<(String, bool), String> {
    branch_diff(
        main,
        ws,
        &["--no-color", "--no-ext-diff", "--no-textconv"],
        Reads::Content,
        cap,
    )
}

/// Removes the worktree (its branch stays, with the attempt's commits).
pub fn remove(main: &Launcher, ws: &Workspace, worktrees: &Path) -> Result<(), String> {
    let places = common_writable(main, worktrees)?;
    worktree_git(
        main,
        &[
            "worktree",
            "remove",
            "--force",
            &ws.path.display().to_string(),
        ],
        &places,
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn worktrees_are_never_made_through_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.join(".air")).unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), root.join(".air/local")).unwrap();
        let main = Launcher::plain(&root);
        let worktrees = root.join(".air/local/workspaces");
        let e = create(&main, &worktrees, "s", "T1", "HEAD").unwrap_err();
        assert!(e.contains("symbolic link"), "{e}");
        assert!(std::fs::read_dir(elsewhere.path())
            .unwrap()
            .next()
            .is_none());
        // And a session id never leaves the worktrees' directory.
        let (s, t) = parts("../../..", "/tmp/x");
        assert_eq!(s, "x");
        assert!(t.starts_with("tmp-x-") && !t.contains('/'), "{t}");
    }

    #[test]
    fn branch_names_hold_only_what_a_ref_may() {
        assert_eq!(
            branch_name("01a2424a-c532-763d-8f00-0123abcd4567", "T1"),
            "air/abcd4567/T1"
        );
        // Two sessions of one minute differ.
        assert_ne!(
            branch_name("01a2424a-c532-763d-8f00-0123abcd4567", "T1"),
            branch_name("01a2424a-c533-7000-8f00-99999999aaaa", "T1")
        );
        assert!(branch_name("s", "../x y:z").starts_with("air/s/x-y-z-"));
        // Two ids that clean to one name keep two branches; `integration` is the
        // session's own.
        assert_ne!(branch_name("s", "T1.1"), branch_name("s", "T1-1"));
        assert_eq!(branch_name("s", "T1-1"), "air/s/T1-1");
        assert_ne!(branch_name("s", "integration"), integration_branch("s"));
        assert!(branch_name("", "").starts_with("air/x/x-"));
    }

    const SESSION: &str = "01a2424a-c532-763d-8f00-0123abcd4567";

    /// An empty directory for a repository, and git run there (its output back).
    fn repository() -> Option<(tempfile::TempDir, PathBuf, impl Fn(&[&str]) -> String)> {
        let git = air_proto::program::find("git", None, &[])?;
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let at = root.clone();
        let run = move |args: &[&str]| {
            let out = air_proto::program::git_command(&git)
                .args(args)
                .current_dir(&at)
                .output()
                .unwrap();
            assert!(out.status.success(), "git {args:?}: {out:?}");
            String::from_utf8_lossy(&out.stdout).into_owned()
        };
        Some((dir, root, run))
    }

    /// A worktree made ahead of its task's start moves to what was committed since
    /// (its files, its branch, where its change starts); one forgotten takes its
    /// untouched branch with it.
    #[test]
    fn a_worktree_made_ahead_starts_from_the_newest_commit() {
        let Some((_dir, root, run)) = repository() else {
            return;
        };
        let run = |args: &[&str]| {
            let mut all = vec!["-c", "user.name=p", "-c", "user.email=p@example.invalid"];
            all.extend_from_slice(args);
            run(&all).trim().to_string()
        };
        run(&["init", "-q", "-b", "main"]);
        std::fs::write(root.join(".gitignore"), ".air/local/\n").unwrap();
        std::fs::write(root.join("a.txt"), "a\n").unwrap();
        run(&["add", "-A"]);
        run(&["commit", "-qm", "one"]);
        let main = Launcher::plain(&root);
        let worktrees = root.join(".air/local/workspaces");
        let mut ws = create(&main, &worktrees, SESSION, "T1", "main").unwrap();
        let first = ws.base.clone();
        std::fs::write(root.join("b.txt"), "b\n").unwrap();
        run(&["add", "-A"]);
        run(&["commit", "-qm", "two"]);
        let second = run(&["rev-parse", "HEAD"]);
        restart_at(&main, &worktrees, &mut ws, &second).unwrap();
        assert_eq!(ws.base, second);
        assert_eq!(
            std::fs::read_to_string(ws.path.join("b.txt")).unwrap(),
            "b\n"
        );
        assert_eq!(
            run(&["rev-parse", &format!("refs/heads/{}", ws.branch)]),
            second
        );
        // Where its change starts, as read again when continued.
        let again = create(&main, &worktrees, SESSION, "T1", "main").unwrap();
        assert_eq!(again.base, second);
        assert_ne!(first, second);
        forget(&main, &ws, &worktrees).unwrap();
        assert!(!ws.path.exists());
        assert!(!left(&main, &worktrees, SESSION, "T1").any());
    }

    /// A task's worktree from the project's last commit: its attempt is committed on
    /// its branch, its change is exactly its own while the person edits the main
    /// checkout, and removing it leaves the branch and the checkout as they were.
    #[test]
    fn a_task_works_in_its_own_worktree_and_the_checkout_is_untouched() {
        let Some((_dir, root, run)) = repository() else {
            return;
        };
        run(&["init", "-q", "-b", "main"]);
        std::fs::write(root.join("a.txt"), "a\n").unwrap();
        std::fs::write(root.join(".gitignore"), ".air/local/\n").unwrap();
        // Every file through a filter the configuration adds only on air's branches.
        std::fs::write(root.join(".gitattributes"), "* filter=evil\n").unwrap();
        run(&["add", "-A"]);
        run(&[
            "-c",
            "user.name=p",
            "-c",
            "user.email=p@example.invalid",
            "commit",
            "-qm",
            "one",
        ]);
        let ran = root.join("ran");
        std::fs::write(
            root.join(".git/evil.cfg"),
            format!(
                "[filter \"evil\"]\n\tclean = touch {0}; cat\n\tsmudge = touch {0}; cat\n",
                ran.display()
            ),
        )
        .unwrap();
        let mut config = std::fs::read_to_string(root.join(".git/config")).unwrap();
        config.push_str("[includeIf \"onbranch:air/**\"]\n\tpath = evil.cfg\n");
        std::fs::write(root.join(".git/config"), config).unwrap();
        let main = Launcher::plain(&root);
        let worktrees = air_proto::layout::ProjectPaths::new(&root).workspaces();
        let ws = create(&main, &worktrees, SESSION, "T1", "HEAD").unwrap();
        assert_eq!(ws.branch, "air/abcd4567/T1");
        assert_eq!(
            std::fs::read_to_string(ws.path.join("a.txt")).unwrap(),
            "a\n"
        );
        // The person edits the checkout meanwhile; the task edits its worktree.
        std::fs::write(root.join("a.txt"), "the person's\n").unwrap();
        std::fs::write(root.join("theirs.txt"), "x\n").unwrap();
        std::fs::write(ws.path.join("b.txt"), "b\n").unwrap();
        std::fs::write(ws.path.join("a.txt"), "a\nand more\n").unwrap();
        assert_eq!(
            commit_attempt(&main, &ws, &worktrees, "T1: attempt 1")
                .unwrap()
                .map(|h| h.len()),
            Some(40)
        );
        // Nothing more: nothing to commit.
        assert_eq!(
            commit_attempt(&main, &ws, &worktrees, "again").unwrap(),
            None
        );
        // A ref that git would find before the branch (`refs/air/…`) stands for
        // nothing.
        run(&["update-ref", "refs/air/abcd4567/T1", &ws.base]);
        assert_eq!(changed(&main, &ws).unwrap(), ["a.txt", "b.txt"]);
        let (d, cut) = diff(&main, &ws, 1 << 20).unwrap();
        assert!(
            !cut && d.contains("+and more") && !d.contains("the person's"),
            "{d}"
        );
        // The checkout: its branch, its index and the person's edits as they were.
        assert_eq!(run(&["rev-parse", "--abbrev-ref", "HEAD"]).trim(), "main");
        assert_eq!(
            std::fs::read_to_string(root.join("a.txt")).unwrap(),
            "the person's\n"
        );
        let status = run(&["status", "--porcelain"]);
        assert!(
            status.contains(" M a.txt") && status.contains("?? theirs.txt"),
            "{status}"
        );
        assert!(!status.contains("b.txt"), "{status}");
        // A repository made inside the worktree is refused, named.
        std::fs::create_dir_all(ws.path.join("sub")).unwrap();
        let nested = ws.path.join("sub");
        let inner = nested.display().to_string();
        run(&["-C", &inner, "init", "-q"]);
        std::fs::write(nested.join("f.txt"), "f\n").unwrap();
        run(&[
            "-C",
            &inner,
            "-c",
            "user.name=p",
            "-c",
            "user.email=p@example.invalid",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "inner",
        ]);
        let e = commit_attempt(&main, &ws, &worktrees, "with sub").unwrap_err();
        assert!(e.contains("`sub`"), "{e}");
        std::fs::remove_dir_all(&nested).unwrap();
        // The next attempt continues the worktree, with what was left uncommitted.
        std::fs::write(ws.path.join("c.txt"), "c\n").unwrap();
        let again = create(&main, &worktrees, SESSION, "T1", "HEAD").unwrap();
        assert_eq!(again, ws);
        assert!(again.path.join("c.txt").exists());
        // Its next commit is the task's change too.
        assert!(commit_attempt(&main, &again, &worktrees, "T1: attempt 2")
            .unwrap()
            .is_some());
        assert_eq!(changed(&main, &again).unwrap(), ["a.txt", "b.txt", "c.txt"]);
        std::fs::remove_file(again.path.join("c.txt")).unwrap();
        commit_attempt(&main, &again, &worktrees, "T1: attempt 3").unwrap();
        remove(&main, &ws, &worktrees).unwrap();
        assert!(!ws.path.exists());
        // And once removed, its branch: the attempt's work is there.
        let third = create(&main, &worktrees, SESSION, "T1", "HEAD").unwrap();
        assert_eq!((&third.base, &third.branch), (&ws.base, &ws.branch));
        assert!(third.path.join("b.txt").exists());
        remove(&main, &third, &worktrees).unwrap();
        assert!(!ran.exists(), "a filter of the repository's ran");
        assert_eq!(
            run(&["log", "-1", "--format=%an %s", "refs/heads/air/abcd4567/T1"]).trim(),
            "air T1: attempt 3"
        );
    }
}
