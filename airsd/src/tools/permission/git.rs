//! What of a repository decides what git runs or where it looks, found as the
//! repository is now (its git directories, their control files), and the sockets
//! something listens on, which a command must not reach by their paths.

use std::path::{Path, PathBuf};

/// What in a git directory decides what git runs or where it takes its configuration
/// from: its configuration (and a worktree's own), where its common directory is,
/// where a linked worktree's working tree is, its hooks and `info/` (attributes,
/// excludes).
pub const GIT_CONTROL: &[&str] = &[
    "config",
    "config.worktree",
    "commondir",
    "gitdir",
    "hooks",
    "info",
];

/// The git directory `dot` (a `.git` directory, or a `.git` file naming one) stands
/// for.
fn gitdir_of(dot: &Path) -> Option<PathBuf> {
    let meta = std::fs::symlink_metadata(dot).ok()?;
    if meta.is_dir() {
        return Some(dot.to_path_buf());
    }
    if !meta.is_file() || meta.len() > 4096 {
        return None;
    }
    let text = std::fs::read_to_string(dot).ok()?;
    let named = text.lines().find_map(|l| l.strip_prefix("gitdir:"))?.trim();
    Some(dot.parent()?.join(named))
}

/// The repository's git directories as they are now: the project's (`.git/`, or the
/// directory its `.git` file names), the common directory that one shares, its
/// submodules' (`modules/…`, or a `.git` in a submodule's directory that
/// `.gitmodules` names: `git status` goes into them) and its linked worktrees'
/// (`worktrees/*`).
pub fn git_dirs(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Some(g) = gitdir_of(&root.join(".git")) else {
        return out;
    };
    let mut queue = vec![g.clone()];
    if let Ok(text) = std::fs::read_to_string(root.join(".gitmodules")) {
        for line in text.lines().take(4096) {
            let Some((key, value)) = line.split_once('=') else {
                continue;
            };
            let rel = Path::new(value.trim());
            if key.trim() != "path"
                || rel.is_absolute()
                || rel.components().any(|c| c.as_os_str() == "..")
            {
                continue;
            }
            if let Some(sub) = gitdir_of(&root.join(rel).join(".git")) {
                queue.push(sub);
            }
            if queue.len() > 64 {
                break;
            }
        }
    }
    if let Ok(common) = std::fs::read_to_string(g.join("commondir")) {
        queue.push(g.join(common.trim()));
    }
    // Bounded: a repository's submodules and worktrees, not a tree someone made deep.
    let mut seen = 0;
    while let Some(dir) = queue.pop() {
        let dir = std::fs::canonicalize(&dir).unwrap_or(dir);
        if out.contains(&dir) || seen > 256 {
            continue;
        }
        seen += 1;
        for nested in ["modules", "worktrees"] {
            let Ok(rd) = std::fs::read_dir(dir.join(nested)) else {
                continue;
            };
            for e in rd.flatten().take(64) {
                let p = e.path();
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    if p.join("HEAD").exists() {
                        queue.push(p.clone());
                    }
                    // A submodule named `a/b` lives in `modules/a/b`.
                    if nested == "modules" && !p.join("HEAD").exists() {
                        if let Ok(inner) = std::fs::read_dir(&p) {
                            queue.extend(
                                inner
                                    .flatten()
                                    .take(64)
                                    .map(|i| i.path())
                                    .filter(|i| i.join("HEAD").exists()),
                            );
                        }
                    }
                }
            }
        }
        out.push(dir);
    }
    out
}

/// What makes git run code or look elsewhere, as it is now: [`GIT_CONTROL`] in each of
/// the repository's git directories (whether there or not: one made later counts),
/// and the project's `.git` itself.
pub fn git_code(root: &Path) -> Vec<PathBuf> {
    let mut dirs = git_dirs(root);
    if dirs.is_empty() {
        // No repository yet: `git init` would make it here.
        dirs.push(root.join(".git"));
    }
    let mut out: Vec<PathBuf> = dirs
        .iter()
        .flat_map(|g| GIT_CONTROL.iter().map(move |c| g.join(c)))
        .collect();
    out.push(root.join(".git"));
    out
}

/// Whether `path`, inside the project, is a git directory's control file of a
/// repository nested in it (`vendor/x/.git/hooks/…`), or a `.git` entry itself.
pub(super) fn nested_git_control(root: &Path, path: &Path) -> bool {
    let Ok(rel) = path.strip_prefix(root) else {
        return false;
    };
    let parts: Vec<&std::ffi::OsStr> = rel.iter().collect();
    let Some(at) = parts.iter().rposition(|p| *p == ".git") else {
        return false;
    };
    match parts.get(at + 1) {
        None => true,
        Some(next) => {
            let next = next.to_string_lossy();
            GIT_CONTROL.contains(&next.as_ref()) || next == "modules" || next == "worktrees"
        }
    }
}

/// The paths of the Unix sockets listening in this network namespace
/// (`/proc/net/unix`: the accepting flag, a path, not an abstract name), but those in
/// `except`; at most 4,096.
pub fn listening_sockets(except: &Path) -> Vec<PathBuf> {
    const ACCEPTING: u32 = 0x0001_0000;
    let text = std::fs::read_to_string("/proc/net/unix").unwrap_or_default();
    let mut out: Vec<PathBuf> = text
        .lines()
        .skip(1)
        .filter_map(|l| {
            let flags = u32::from_str_radix(l.split_whitespace().nth(3)?, 16).ok()?;
            // The path is the rest of the line after seven fields: it may hold spaces.
            let mut rest = l;
            for _ in 0..7 {
                rest = rest.trim_start();
                rest = &rest[rest.find(' ')?..];
            }
            let path = rest.trim_start();
            (flags & ACCEPTING != 0 && path.starts_with('/')).then(|| PathBuf::from(path))
        })
        .filter(|p| !p.starts_with(except))
        .filter(|p| {
            use std::os::unix::fs::FileTypeExt as _;
            std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_socket())
        })
        .take(4096)
        .collect();
    out.sort();
    out.dedup();
    out
}
