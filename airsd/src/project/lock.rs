//! One daemon per project: an exclusive `flock` on `.air/local/locks/airsd.lock`, held for
//! the daemon's life. The kernel releases it when the process dies, even by SIGKILL, so a
//! stale lock cannot exist; the file holds the owner's pid for messages.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use nix::fcntl::{Flock, FlockArg};

pub struct DaemonLock {
    _lock: Flock<File>,
    path: PathBuf,
}

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("another airsd (pid {pid}) already serves this project; use `air daemon stop` or `air daemon restart`")]
    Held { pid: String },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl DaemonLock {
    /// Takes the lock without waiting.
    pub fn acquire(path: &Path) -> Result<Self, LockError> {
        let io = |source| LockError::Io {
            path: path.to_path_buf(),
            source,
        };
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(io)?;
        let mut lock = match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(lock) => lock,
            Err((mut file, errno)) if errno == nix::errno::Errno::EWOULDBLOCK => {
                let mut pid = String::new();
                let _ = file.read_to_string(&mut pid);
                let pid = pid.trim().to_string();
                return Err(LockError::Held {
                    pid: if pid.is_empty() {
                        "unknown".into()
                    } else {
                        pid
                    },
                });
            }
            Err((_, errno)) => return Err(io(std::io::Error::from(errno))),
        };
        lock.set_len(0).map_err(io)?;
        lock.seek(SeekFrom::Start(0)).map_err(io)?;
        writeln!(lock, "{}", std::process::id()).map_err(io)?;
        lock.sync_all().map_err(io)?;
        Ok(Self {
            _lock: lock,
            path: path.to_path_buf(),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether some process holds the lock at `path` right now.
    pub fn is_held(path: &Path) -> bool {
        let Ok(file) = OpenOptions::new().read(true).write(true).open(path) else {
            return false;
        };
        Flock::lock(file, FlockArg::LockExclusiveNonblock).is_err()
    }
}
