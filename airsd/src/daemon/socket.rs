//! The daemon's socket: where it lives, binding it safely, and who may connect.
//!
//! The socket is `.air/local/airsd.sock`. A Unix socket path must fit in `sun_path`
//! (108 bytes with its NUL on Linux); for a project deep in the file system the socket
//! moves to a short path keyed by the project id, under a 0700 directory of this user,
//! and that path is recorded in `.air/local/airsd.sock.path` for clients.
//!
//! Binding happens only while holding the daemon lock, so any socket file found then was
//! left by a dead daemon and is removed.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use air_proto::layout::ProjectPaths;
use tokio::net::UnixListener;

use air_proto::layout::MAX_SOCKET_PATH;

/// A short socket path for `project_id` under `runtime_dir`.
pub fn fallback_path(runtime_dir: &Path, project_id: &str) -> PathBuf {
    runtime_dir
        .join(format!("air-{}", nix::unistd::getuid()))
        .join(format!("{project_id}.sock"))
}

#[derive(Debug, thiserror::Error)]
#[error("{path}: {source}")]
pub struct SocketError {
    pub path: PathBuf,
    pub source: std::io::Error,
}

fn err(path: &Path) -> impl FnOnce(std::io::Error) -> SocketError + '_ {
    move |source| SocketError {
        path: path.to_path_buf(),
        source,
    }
}

/// Binds the daemon's socket (the caller holds the daemon lock). Returns the listener
/// and the path it is bound at.
pub fn bind(
    paths: &ProjectPaths,
    project_id: &str,
    runtime_dir: &Path,
) -> Result<(UnixListener, PathBuf), SocketError> {
    let default = paths.socket();
    let record = paths.socket_record();
    let path = if default.as_os_str().len() <= MAX_SOCKET_PATH {
        let _ = std::fs::remove_file(&record);
        default
    } else {
        let path = fallback_path(runtime_dir, project_id);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(err(dir))?;
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
                .map_err(err(dir))?;
        }
        air_proto::layout::write_atomic(&record, format!("{}\n", path.display()).as_bytes())
            .map_err(|e| SocketError {
                path: record.clone(),
                source: std::io::Error::other(e.to_string()),
            })?;
        path
    };
    match std::fs::remove_file(&path) {
        Ok(()) => {
            tracing::info!(socket = %path.display(), "removed a socket left by a daemon that is gone")
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(err(&path)(e)),
    }
    let listener = UnixListener::bind(&path).map_err(err(&path))?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).map_err(err(&path))?;
    Ok((listener, path))
}

/// Adopts an inherited listening socket (systemd socket activation).
pub fn adopt(
    listener: std::os::unix::net::UnixListener,
) -> Result<(UnixListener, PathBuf), SocketError> {
    let path = listener
        .local_addr()
        .ok()
        .and_then(|a| a.as_pathname().map(Path::to_path_buf))
        .unwrap_or_default();
    listener.set_nonblocking(true).map_err(err(&path))?;
    let listener = UnixListener::from_std(listener).map_err(err(&path))?;
    Ok((listener, path))
}
