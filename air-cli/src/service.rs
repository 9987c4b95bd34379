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

/// The variables of the provider settings a service keeps: the known providers' keys
/// and base URLs, `AIR_MODEL`, and the key variables `models.yaml` names.
fn provider_variables() -> Vec<String> {
    let mut names: Vec<String> = [
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "OPENROUTER_API_KEY",
        "ANTHROPIC_BASE_URL",
        "OPENAI_BASE_URL",
        "OLLAMA_BASE_URL",
        "AIR_MODEL",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    if let Ok(models) = air_proto::models::ModelsConfig::load(crate::doctor::air_home().as_deref())
    {
        for p in models.providers.values() {
            if let Some(v) = p.api_key_env.as_ref().filter(|v| !names.contains(v)) {
                names.push(v.clone());
            }
        }
    }
    names
}

/// Writes the set ones of `names` to `path` as systemd reads an environment file,
/// made readable by the user alone before anything is written to it. Returns the
/// names written.
pub fn keep_settings(path: &Path, names: &[String]) -> Result<Vec<String>, Failure> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let set: Vec<(String, String)> = names
        .iter()
        .filter_map(|n| std::env::var(n).ok().map(|v| (n.clone(), v)))
        // A value on more than one line is no environment file's.
        .filter(|(_, v)| !v.is_empty() && !v.contains('\n'))
        .collect();
    let mut text = String::from(
        "# Provider settings of air's services (air daemon install-service --keep-keys).\n",
    );
    for (k, v) in &set {
        let quoted = v.replace('\\', "\\\\").replace('"', "\\\"");
        text.push_str(&format!("{k}=\"{quoted}\"\n"));
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| Failure::from(format!("{}: {e}", dir.display())))?;
    // A new file beside it, 0600 from its creation, then renamed over the old one.
    let tmp = dir.join(format!(".service.env.{}", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(|e| Failure::from(format!("{}: {e}", tmp.display())))?;
    file.write_all(text.as_bytes())
        .and_then(|()| file.sync_all())
        .and_then(|()| std::fs::rename(&tmp, path))
        .map_err(|e| Failure::from(format!("{}: {e}", path.display())))?;
    Ok(set.into_iter().map(|(k, _)| k).collect())
}

pub fn install(paths: &ProjectPaths, keep_keys: bool) -> CmdResult {
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
    // The units as shipped (one template for every project), and this project's
    // instance told which airsd to run: another project's install changes only its own.
    write(&dir.join("airsd@.service"), SYSTEMD_SERVICE)?;
    write(&dir.join("airsd@.socket"), SYSTEMD_SOCKET)?;
    let instance = systemd_escape_path(&root);
    write(
        &dir.join(format!("airsd@{instance}.service.d")).join("air.conf"),
        &format!(
            "# Written by air daemon install-service for {}.\n[Service]\nExecStart=\nExecStart={} --foreground --project /%I --idle-timeout 0\n",
            root.display(),
            airsd.display()
        ),
    )?;
    let keep = keep_keys
        || {
            use std::io::IsTerminal as _;
            std::io::stdin().is_terminal()
                && crate::stdout::is_terminal()
                && {
                    eprint!("keep this shell's provider settings (keys, base URLs) for the service in ~/.air/service.env, readable by you alone, so that runs resumed after a reboot reach their model? [y/N] ");
                    let mut answer = String::new();
                    std::io::stdin().read_line(&mut answer).is_ok()
                        && matches!(answer.trim(), "y" | "Y" | "yes")
                }
        };
    if keep {
        let path = home()?.join(".air/service.env");
        let kept = keep_settings(&path, &provider_variables())?;
        outln!(
            "kept {} in {} (mode 0600)",
            if kept.is_empty() {
                "no provider setting (none is set here)".to_string()
            } else {
                kept.join(", ")
            },
            path.display()
        );
    } else {
        outln!("a run resumed after a reboot has only the service's environment: --keep-keys keeps this shell's provider settings for it");
    }
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
