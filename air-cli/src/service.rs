//! `air daemon install-service`: the unit files of `systemd/` and `launchd/`, filled in
//! for this project and this installation of airsd.

use std::path::{Path, PathBuf};

use air_proto::layout::ProjectPaths;

use crate::{CmdResult, Failure};

const SYSTEMD_SERVICE: &str = include_str!("../../systemd/airsd@.service");
const SYSTEMD_SOCKET: &str = include_str!("../../systemd/airsd@.socket");
const LAUNCHD_PLIST: &str = include_str!("../../launchd/com.air.airsd.plist");

/// systemd's path escaping (`systemd-escape --path`): `/home/me/my proj` →
/// `home-me-my\x20proj`.
pub fn systemd_escape_path(path: &Path) -> String {
    let text = path.to_string_lossy();
    let trimmed: Vec<&str> = text.split('/').filter(|s| !s.is_empty()).collect();
    if trimmed.is_empty() {
        return "-".to_string();
    }
    let joined = trimmed.join("/");
    let mut out = String::new();
    for (i, b) in joined.bytes().enumerate() {
        match b {
            b'/' => out.push('-'),
            b'.' if i == 0 => out.push_str("\\x2e"),
            b if b.is_ascii_alphanumeric() || matches!(b, b':' | b'_' | b'.') => {
                out.push(b as char)
            }
            b => out.push_str(&format!("\\x{b:02x}")),
        }
    }
    out
}

fn home() -> Result<PathBuf, Failure> {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .ok_or_else(|| Failure::from("HOME is not set"))
}

fn write(path: &Path, text: &str) -> CmdResult {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| Failure::from(format!("{}: {e}", dir.display())))?;
    }
    std::fs::write(path, text).map_err(|e| Failure::from(format!("{}: {e}", path.display())))?;
    outln!("wrote {}", path.display());
    Ok(())
}

pub fn install(paths: &ProjectPaths) -> CmdResult {
    let airsd = crate::connect_options(paths.clone())
        .airsd
        .unwrap_or_else(|| PathBuf::from("airsd"));
    let root = paths
        .root()
        .canonicalize()
        .unwrap_or_else(|_| paths.root().to_path_buf());
    if cfg!(target_os = "macos") {
        let project = paths.read_project()?;
        let plist = LAUNCHD_PLIST
            .replace("/usr/local/bin/airsd", &airsd.display().to_string())
            .replace("PROJECT_DIR", &root.display().to_string())
            .replace(
                "<string>com.air.airsd</string>",
                &format!("<string>com.air.airsd.{}</string>", project.project_id),
            );
        let path = home()?
            .join("Library/LaunchAgents")
            .join(format!("com.air.airsd.{}.plist", project.project_id));
        write(&path, &plist)?;
        outln!("enable it with:\n  launchctl load {}", path.display());
        return Ok(());
    }
    let dir = home()?.join(".config/systemd/user");
    let exec = airsd.display().to_string();
    write(
        &dir.join("airsd@.service"),
        &SYSTEMD_SERVICE.replace("%h/.cargo/bin/airsd", &exec),
    )?;
    write(&dir.join("airsd@.socket"), SYSTEMD_SOCKET)?;
    let instance = systemd_escape_path(&root);
    // The service enabled too: after a reboot the daemon starts by itself and resumes
    // the project's unfinished runs, without waiting for a client to connect.
    outln!(
        "enable it with:\n  systemctl --user daemon-reload\n  systemctl --user enable --now 'airsd@{instance}.socket' 'airsd@{instance}.service'\nand, for it to start at boot before you log in:\n  loginctl enable-linger \"$USER\""
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_paths_as_systemd_does() {
        assert_eq!(
            systemd_escape_path(Path::new("/home/me/proj")),
            "home-me-proj"
        );
        assert_eq!(
            systemd_escape_path(Path::new("/srv/my proj/.x")),
            "srv-my\\x20proj-.x"
        );
        assert_eq!(
            systemd_escape_path(Path::new("/.hidden/a-b")),
            "\\x2ehidden-a\\x2db"
        );
        assert_eq!(systemd_escape_path(Path::new("/")), "-");
    }
}
