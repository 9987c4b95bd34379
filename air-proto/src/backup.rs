//! Backups of files outside the project (D-030, D-032). Before an agent changes a file
//! outside the project, airsd copies it into a git repository at
//! `<project>/.air/local/backups/` and commits it, with the session, the agent and
//! the reason in the commit's trailers. `air restore` brings files back at three
//! granularities: one file (its state before the latest change), a whole session
//! (every file as it was before the session touched it), or a point in time.
//!
//! A file that did not exist before the change is recorded as absent: restoring it
//! removes the file. The repository is plain git: `git log` in it shows everything.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::program;
use std::sync::Mutex;

/// Why a backup or a restore failed, with what was being done.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct BackupError(pub String);

fn fail(message: impl Into<String>) -> BackupError {
    BackupError(message.into())
}

/// Who changes the file and why, for the commit message.
#[derive(Clone, Debug, Default)]
pub struct BackupTag {
    pub session_id: String,
    pub agent_type: String,
    pub agent_id: String,
    pub reason: String,
}

/// One backup commit.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct BackupEntry {
    pub commit: String,
    /// RFC 3339, the commit's time.
    pub time: String,
    pub session_id: String,
    pub agent_type: String,
    pub path: PathBuf,
    /// Whether the file existed before the change.
    pub existed: bool,
    pub reason: String,
}

/// What `restore` did to one file.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Restored {
    pub path: PathBuf,
    pub from_commit: String,
    /// `true` when the file was removed (it did not exist before).
    pub removed: bool,
}

/// The backup repository of one project.
pub struct Backups {
    dir: PathBuf,
    /// Commits are serialized: git's index is one per repository.
    lock: Mutex<()>,
    /// The git it runs (found in a trusted directory; see [`crate::program`]).
    git: Option<PathBuf>,
}

const FILES: &str = "files";

impl Backups {
    pub fn new(dir: impl Into<PathBuf>) -> Backups {
        Backups {
            dir: dir.into(),
            lock: Mutex::new(()),
            git: program::find("git", None, &[]),
        }
    }

    /// Runs this git (found by the caller on its `PATH`, see [`program::find`]).
    pub fn with_git(mut self, git: Option<PathBuf>) -> Backups {
        if git.is_some() {
            self.git = git;
        }
        self
    }

    /// git on the backup repository, as air runs git (see [`program::git_command`]).
    fn command(&self) -> Result<Command, BackupError> {
        let git = self.git.as_deref().ok_or_else(|| {
            fail("backups: no git found in a system directory or a trusted directory of PATH")
        })?;
        let mut cmd = program::git_command(git);
        cmd.arg("-C").arg(&self.dir);
        Ok(cmd)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn git(&self, args: &[&str]) -> Result<String, BackupError> {
        let out = self
            .command()?
            .args(args)
            .output()
            .map_err(|e| fail(format!("backups: cannot run git: {e}")))?;
        if !out.status.success() {
            return Err(fail(format!(
                "backups ({}): git {} failed: {}",
                self.dir.display(),
                args.first().copied().unwrap_or_default(),
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    fn ensure_repo(&self) -> Result<(), BackupError> {
        if self.dir.join(".git").is_dir() {
            return Ok(());
        }
        std::fs::create_dir_all(self.dir.join(FILES))
            .map_err(|e| fail(format!("backups: {}: {e}", self.dir.display())))?;
        self.git(&["init", "-q"])?;
        self.git(&["config", "user.name", "air"])?;
        self.git(&["config", "user.email", "air@localhost"])?;
        self.git(&["config", "commit.gpgsign", "false"])?;
        Ok(())
    }

    /// Where a file's copy lives in the repository.
    fn copy_of(&self, path: &Path) -> PathBuf {
        let rel: PathBuf = path
            .components()
            .filter(|c| matches!(c, std::path::Component::Normal(_)))
            .collect();
        self.dir.join(FILES).join(rel)
    }

    /// Records `path` (absolute and resolved) as it is now, before a change.
    pub fn save(&self, path: &Path, tag: &BackupTag) -> Result<BackupEntry, BackupError> {
        if !path.is_absolute() {
            return Err(fail(format!(
                "backups: {} is not an absolute path",
                path.display()
            )));
        }
        let _guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        self.ensure_repo()?;
        let copy = self.copy_of(path);
        let existed = match std::fs::symlink_metadata(path) {
            Ok(meta) if meta.is_file() => {
                if let Some(dir) = copy.parent() {
                    std::fs::create_dir_all(dir)
                        .map_err(|e| fail(format!("backups: {}: {e}", dir.display())))?;
                }
                std::fs::copy(path, &copy)
                    .map_err(|e| fail(format!("backups: copy {}: {e}", path.display())))?;
                true
            }
            Ok(_) => {
                return Err(fail(format!(
                    "backups: {} is not a regular file; it cannot be backed up",
                    path.display()
                )))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let _ = std::fs::remove_file(&copy);
                false
            }
            Err(e) => return Err(fail(format!("backups: {}: {e}", path.display()))),
        };
        let message = format!(
            "backup {} before a change by {}\n\nAir-Session: {}\nAir-Agent: {}\nAir-Agent-Id: {}\nAir-Path: {}\nAir-State: {}\nAir-Reason: {}\n",
            path.display(),
            tag.agent_type,
            one_line(&tag.session_id),
            one_line(&tag.agent_type),
            one_line(&tag.agent_id),
            path.display(),
            if existed { "existed" } else { "absent" },
            one_line(&tag.reason),
        );
        self.git(&["add", "-A", FILES])?;
        self.git(&["commit", "-q", "--allow-empty", "-m", &message])?;
        let commit = self.git(&["rev-parse", "HEAD"])?.trim().to_string();
        Ok(BackupEntry {
            commit,
            time: crate::time::now_iso(),
            session_id: tag.session_id.clone(),
            agent_type: tag.agent_type.clone(),
            path: path.to_path_buf(),
            existed,
            reason: tag.reason.clone(),
        })
    }

    /// Every backup, newest first.
    pub fn list(&self) -> Result<Vec<BackupEntry>, BackupError> {
        if !self.dir.join(".git").is_dir() {
            return Ok(Vec::new());
        }
        const SEP: &str = "\u{1f}";
        let format = format!(
            "--format=%H{SEP}%cI{SEP}%(trailers:key=Air-Session,valueonly,separator=)\
{SEP}%(trailers:key=Air-Agent,valueonly,separator=){SEP}%(trailers:key=Air-Path,valueonly,separator=)\
{SEP}%(trailers:key=Air-State,valueonly,separator=){SEP}%(trailers:key=Air-Reason,valueonly,separator=)\u{1e}"
        );
        let out = self.git(&["log", &format])?;
        Ok(out
            .split('\u{1e}')
            .filter_map(|record| {
                let f: Vec<&str> = record.trim().split(SEP).map(str::trim).collect();
                let [commit, time, session, agent, path, state, reason] = f.as_slice() else {
                    return None;
                };
                if path.is_empty() {
                    return None;
                }
                Some(BackupEntry {
                    commit: commit.to_string(),
                    time: time.to_string(),
                    session_id: session.to_string(),
                    agent_type: agent.to_string(),
                    path: PathBuf::from(path),
                    existed: *state == "existed",
                    reason: reason.to_string(),
                })
            })
            .collect())
    }

    fn put_back(&self, entry: &BackupEntry) -> Result<Restored, BackupError> {
        if entry.existed {
            let rel = self
                .copy_of(&entry.path)
                .strip_prefix(&self.dir)
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_default();
            let out = self
                .command()?
                .args(["show", &format!("{}:{rel}", entry.commit)])
                .output()
                .map_err(|e| fail(format!("backups: cannot run git: {e}")))?;
            if !out.status.success() {
                return Err(fail(format!(
                    "backups: commit {} has no copy of {}",
                    entry.commit,
                    entry.path.display()
                )));
            }
            if let Some(dir) = entry.path.parent() {
                std::fs::create_dir_all(dir)
                    .map_err(|e| fail(format!("restore {}: {e}", dir.display())))?;
            }
            std::fs::write(&entry.path, &out.stdout)
                .map_err(|e| fail(format!("restore {}: {e}", entry.path.display())))?;
        } else {
            match std::fs::remove_file(&entry.path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(fail(format!("restore {}: {e}", entry.path.display()))),
            }
        }
        Ok(Restored {
            path: entry.path.clone(),
            from_commit: entry.commit.clone(),
            removed: !entry.existed,
        })
    }

    /// Restores `path` to its state before its latest backed-up change.
    pub fn restore_file(&self, path: &Path) -> Result<Restored, BackupError> {
        let all = self.list()?;
        let entry = all
            .iter()
            .find(|e| e.path == path)
            .ok_or_else(|| fail(format!("no backup of {}", path.display())))?;
        self.put_back(entry)
    }

    /// Restores every file a session changed to its state before the session's first
    /// change of it.
    pub fn restore_session(&self, session_id: &str) -> Result<Vec<Restored>, BackupError> {
        let all = self.list()?;
        let mut earliest: Vec<&BackupEntry> = Vec::new();
        // Oldest first, so the first entry of each path is the session's first change.
        for e in all.iter().rev().filter(|e| e.session_id == session_id) {
            if !earliest.iter().any(|x| x.path == e.path) {
                earliest.push(e);
            }
        }
        if earliest.is_empty() {
            return Err(fail(format!("no backups of session {session_id}")));
        }
        earliest.into_iter().map(|e| self.put_back(e)).collect()
    }

    /// Restores every file changed after `at` to its state at that time.
    pub fn restore_at(&self, at: std::time::SystemTime) -> Result<Vec<Restored>, BackupError> {
        let all = self.list()?;
        let mut first_after: Vec<&BackupEntry> = Vec::new();
        for e in all.iter().rev() {
            let Some(when) = crate::time::parse(&e.time) else {
                continue;
            };
            if when >= at && !first_after.iter().any(|x| x.path == e.path) {
                first_after.push(e);
            }
        }
        if first_after.is_empty() {
            return Err(fail(
                "no backed-up change after that time; nothing to restore".to_string(),
            ));
        }
        first_after.into_iter().map(|e| self.put_back(e)).collect()
    }
}

fn one_line(s: &str) -> String {
    s.replace(['\n', '\r'], " ")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn tag(session: &str) -> BackupTag {
        BackupTag {
            session_id: session.into(),
            agent_type: "executor".into(),
            agent_id: "a1".into(),
            reason: "fs.write".into(),
        }
    }

    #[test]
    fn the_three_granularities_bring_files_back() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        let b = Backups::new(dir.path().join("backups"));
        let f = outside.join("rc");
        let g = outside.join("new");
        std::fs::write(&f, "v1\n").unwrap();

        b.save(&f, &tag("s1")).unwrap();
        std::fs::write(&f, "v2\n").unwrap();
        b.save(&g, &tag("s1")).unwrap();
        std::fs::write(&g, "created\n").unwrap();
        b.save(&f, &tag("s1")).unwrap();
        std::fs::write(&f, "v3\n").unwrap();
        let mid = std::time::SystemTime::now();
        std::thread::sleep(std::time::Duration::from_millis(1100));
        b.save(&f, &tag("s2")).unwrap();
        std::fs::write(&f, "v4\n").unwrap();

        let list = b.list().unwrap();
        assert_eq!(list.len(), 4);
        assert_eq!(list[0].session_id, "s2");
        assert!(!list[2].existed, "{list:?}");
        assert_eq!(list[2].path, g);

        // One file: the state before its latest change.
        b.restore_file(&f).unwrap();
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "v3\n");
        // A point in time: before s2's change.
        std::fs::write(&f, "v4\n").unwrap();
        let r = b.restore_at(mid).unwrap();
        assert_eq!(r.len(), 1);
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "v3\n");
        // A session: before s1 touched anything; the file it created is removed.
        let r = b.restore_session("s1").unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "v1\n");
        assert!(!g.exists());
        assert!(b.restore_session("nope").is_err());
        assert!(b.restore_file(&outside.join("other")).is_err());
    }
}
