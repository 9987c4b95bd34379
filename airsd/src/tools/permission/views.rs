//! What a command's namespace hides and makes read-only, from the engine's rules
//! (the sandbox's views), and the copies of configurations with their secrets taken
//! out that are bound over the originals.

use std::path::{Path, PathBuf};

use super::git::{git_code, git_dirs, listening_sockets};
use super::{project_env_files, Engine};

impl Engine {
    /// The configurations commands need that hold secrets (git's, with a token in a
    /// remote's URL or a header; npm's, with an auth token): a copy of each with the
    /// secrets taken out, written to `.air/local/masked/`, to be bound over it for a
    /// command (unless a person let it see the original).
    fn masked(&self, visible: &[PathBuf]) -> Vec<(PathBuf, PathBuf)> {
        use sha2::Digest as _;
        let mut candidates: Vec<PathBuf> = git_dirs(&self.root)
            .iter()
            .map(|g| g.join("config"))
            .collect();
        if let Some(h) = &self.home {
            candidates.extend(
                [".gitconfig", ".config/git/config", ".npmrc"]
                    .iter()
                    .map(|p| h.join(p)),
            );
        }
        let dir = self.checkout().join(".air").join("local").join("masked");
        let mut out = Vec::new();
        for original in candidates {
            if visible.iter().any(|v| v == &original) {
                continue;
            }
            let Ok(meta) = std::fs::metadata(&original) else {
                continue;
            };
            if !meta.is_file() || meta.len() > 1024 * 1024 {
                continue;
            }
            let Ok(text) = std::fs::read_to_string(&original) else {
                continue;
            };
            if crate::tools::secrets::find(&text).is_none() {
                continue;
            }
            let name: String = sha2::Sha256::digest(original.as_os_str().as_encoded_bytes())
                .iter()
                .take(8)
                .map(|b| format!("{b:02x}"))
                .collect();
            let copy = dir.join(name);
            let written = std::fs::create_dir_all(&dir).is_ok()
                && air_proto::layout::write_atomic(
                    &copy,
                    crate::tools::secrets::redact(&text).as_bytes(),
                )
                .is_ok();
            if written {
                out.push((copy, original));
            }
        }
        out
    }

    /// What a command's namespace hides and makes read-only. `writable` is where it
    /// may write (only what lies there needs making read-only); `visible` holds the
    /// credential reads a person allowed for this command, `unlocked` the protected
    /// writes: their stores and files stay as they are, for this command alone.
    pub fn views(
        &self,
        writable: &[PathBuf],
        visible: &[PathBuf],
        unlocked: &[PathBuf],
    ) -> crate::sandbox::Views {
        let touches =
            |p: &Path, list: &[PathBuf]| list.iter().any(|v| v.starts_with(p) || p.starts_with(v));
        // Every socket something listens on now, but the project's own (an ssh or gpg
        // agent, a container engine, a desktop bus): connecting to one by its path
        // would cross the command's own network.
        let sockets = listening_sockets(&self.root)
            .into_iter()
            // And the project's own secrets, however a command names them.
            .chain(project_env_files(&self.root))
            // A task in a worktree reads the checkout, whose secrets stay its own.
            .chain(self.fence.iter().flat_map(|c| project_env_files(c)));
        let hidden = self
            .hidden
            .iter()
            .filter(|h| !touches(h, visible))
            .filter(|h| std::fs::symlink_metadata(h).is_ok())
            .cloned()
            .chain(sockets)
            .collect();
        let shared = self.root.join(".air").join("shared");
        // airsd's copies of the project as it was, which its analyses compare with.
        let base = air_proto::layout::ProjectPaths::new(self.checkout()).base_copies();
        let within = |p: &PathBuf| writable.iter().any(|w| p.starts_with(w));
        // The project, its `.git` and `.air`: never renamed or replaced (what they
        // hold would then be the command's to make anew).
        let pinned = [
            self.root.clone(),
            self.root.join(".git"),
            self.root.join(".air"),
        ]
        .into_iter()
        .filter(|p| within(p))
        .filter(|p| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_dir()))
        .collect();
        let read_only = git_code(&self.root)
            .into_iter()
            .filter(|p| p != &self.root.join(".git") || !p.is_dir())
            .chain([shared, base])
            .chain(self.autostart.iter().cloned())
            .filter(|p| !touches(p, unlocked))
            // A task in its own worktree reads the checkout and never writes it,
            // whatever a person unlocked in the worktree.
            .chain(self.fence.iter().cloned())
            .filter(within)
            .filter(|p| std::fs::symlink_metadata(p).is_ok())
            .collect();
        // A task's worktree, inside air's state that is hidden.
        let shown = self
            .fence
            .iter()
            .map(|_| self.root.clone())
            .filter(|r| r.is_dir())
            .collect();
        // The checkout's environments, read-only where the task's commands look.
        // Only onto the empty directory airsd made for it: never over the task's own
        // files, never through a link.
        let empty_dir = |p: &PathBuf| {
            std::fs::symlink_metadata(p).is_ok_and(|m| m.is_dir())
                && std::fs::read_dir(p).is_ok_and(|mut d| d.next().is_none())
        };
        let lent = self
            .fence
            .iter()
            .flat_map(|c| {
                self.lent
                    .iter()
                    .map(move |rel| (c.join(rel), self.root.join(rel)))
            })
            .filter(|(_, onto)| empty_dir(onto))
            .collect();
        crate::sandbox::Views {
            hidden,
            shown,
            lent,
            read_only,
            pinned,
            masked: self.masked(visible),
            home: self.home.clone(),
            home_read: self.home_read(),
        }
    }
}

/// The checkout's environments its commands run with that git does not hold: a
/// Python virtual environment (a directory with a `pyvenv.cfg`, whatever its name)
/// and `node_modules`, at the top or one directory down; at most 16, as paths from
/// the top. A task's worktree gets an empty directory at each, which its commands see
/// as the checkout's, read-only.
pub fn environments(checkout: &Path) -> Vec<String> {
    const MOST: usize = 16;
    let is_env =
        |dir: &Path, name: &str| name == "node_modules" || dir.join("pyvenv.cfg").is_file();
    let dirs = |dir: &Path| -> Vec<(PathBuf, String)> {
        std::fs::read_dir(dir)
            .map(|rd| {
                rd.flatten()
                    .take(4096)
                    .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                    .filter_map(|e| {
                        let name = e.file_name().to_str()?.to_string();
                        (name != ".git" && name != ".air").then(|| (e.path(), name))
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut out = Vec::new();
    for (path, name) in dirs(checkout).into_iter().take(256) {
        if is_env(&path, &name) {
            out.push(name);
            continue;
        }
        for (inner, inner_name) in dirs(&path) {
            if is_env(&inner, &inner_name) {
                out.push(format!("{name}/{inner_name}"));
            }
        }
    }
    out.sort();
    out.truncate(MOST);
    out
}
