//! `air doctor --bundle FILE` (D-050): a diagnostic bundle for a bug report — air's
//! version and the platform, the doctor's report, the configuration files, and the
//! end of the daemon's log with its errors — written to a file the user reads and
//! sends themselves. Nothing is sent anywhere. Secrets are taken out first: the
//! values of the provider keys in this environment wherever they appear, anything that
//! looks like an API key (`sk-…`), and the value of every `key:`/`token=`-like line.

use std::path::Path;

use serde_json::{json, Value};

/// The most bytes of a log the bundle keeps (its end).
const LOG_TAIL: u64 = 256 * 1024;
/// The most error lines it keeps.
const ERRORS_KEPT: usize = 50;

/// `text` with the secrets taken out.
pub fn redact(text: &str, secrets: &[String]) -> String {
    let mut out = text.to_string();
    for s in secrets.iter().filter(|s| s.len() >= 6) {
        out = out.replace(s.as_str(), "[redacted]");
    }
    // Anything shaped like a provider key.
    let mut cleaned = String::with_capacity(out.len());
    let mut rest = out.as_str();
    while let Some(at) = rest.find("sk-") {
        cleaned.push_str(&rest[..at]);
        let tail = &rest[at + 3..];
        let len = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
            .unwrap_or(tail.len());
        if len >= 8 {
            cleaned.push_str("[redacted]");
        } else {
            cleaned.push_str(&rest[at..at + 3 + len]);
        }
        rest = &tail[len..];
    }
    cleaned.push_str(rest);
    // The values of lines that name a secret.
    cleaned
        .lines()
        .map(|line| {
            let lower = line.to_ascii_lowercase();
            let named = ["key", "token", "secret", "password"]
                .iter()
                .any(|w| lower.contains(w));
            match line.find([':', '=']) {
                Some(at) if named && !line[at + 1..].trim().is_empty() => {
                    format!("{} [redacted]", &line[..=at])
                }
                _ => line.to_string(),
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn read_tail(path: &Path, max: u64) -> Option<String> {
    use std::io::{Read as _, Seek as _};
    let mut f = std::fs::File::open(path).ok()?;
    let len = f.metadata().ok()?.len();
    f.seek(std::io::SeekFrom::Start(len.saturating_sub(max)))
        .ok()?;
    let mut bytes = Vec::new();
    f.take(max).read_to_end(&mut bytes).ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

/// Writes the bundle to `file`: the doctor's `report`, the files of `air_home` and
/// of the project, and the project's daemon log.
pub fn write(
    file: &Path,
    report: &Value,
    air_home: Option<&Path>,
    project: Option<&air_proto::layout::ProjectPaths>,
) -> Result<(), String> {
    let secrets: Vec<String> = std::env::vars()
        .filter(|(k, _)| air_proto::env::is_provider_var(k) && air_proto::env::is_secret(k))
        .map(|(_, v)| v)
        .collect();
    let mut config = serde_json::Map::new();
    let mut candidates: Vec<(String, std::path::PathBuf)> = Vec::new();
    if let Some(home) = air_home {
        for f in [
            "config.yaml",
            "models.yaml",
            "permissions.yaml",
            "compaction-rules.md",
        ] {
            candidates.push((format!("~/.air/{f}"), home.join(f)));
        }
    }
    if let Some(p) = project {
        for f in ["project.json", "permissions.yaml", "compaction-rules.md"] {
            candidates.push((format!(".air/shared/{f}"), p.shared().join(f)));
        }
    }
    for (name, path) in candidates {
        if let Some(text) = read_tail(&path, LOG_TAIL) {
            config.insert(name, Value::String(redact(&text, &secrets)));
        }
    }
    let mut logs = serde_json::Map::new();
    let mut errors = Vec::new();
    if let Some(p) = project {
        if let Ok(entries) = std::fs::read_dir(p.logs()) {
            let mut files: Vec<_> = entries.flatten().map(|e| e.path()).collect();
            files.sort();
            for path in files {
                let Some(text) = read_tail(&path, LOG_TAIL) else {
                    continue;
                };
                let text = redact(&text, &secrets);
                errors.extend(
                    text.lines()
                        .filter(|l| l.contains(" ERROR ") || l.contains("panicked"))
                        .map(str::to_string),
                );
                let name = path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                logs.insert(name, Value::String(text));
            }
        }
    }
    // The user's log, and the developer log of the last two days: encrypted to the
    // maintainers' key, whole messages only.
    if let Some(home) = air_home {
        let dir = home.join("logs");
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n == "air.log" || n.starts_with("air.developer."))
            .collect();
        files.sort();
        let developer: Vec<&String> = files
            .iter()
            .filter(|n| n.starts_with("air.developer."))
            .collect();
        let recent = &developer[developer.len().saturating_sub(2)..];
        for name in files
            .iter()
            .filter(|n| *n == "air.log" || recent.contains(n))
        {
            let Some(text) = read_tail(&dir.join(name), LOG_TAIL) else {
                continue;
            };
            let text = if name == "air.log" {
                redact(&text, &secrets)
            } else {
                match text.find("-----BEGIN AGE ENCRYPTED FILE-----") {
                    Some(i) => text[i..].to_string(),
                    None => continue,
                }
            };
            logs.insert(format!("~/.air/logs/{name}"), Value::String(text));
        }
    }
    let skip = errors.len().saturating_sub(ERRORS_KEPT);
    let bundle = json!({
        "about": "A diagnostic bundle of air, written by `air doctor --bundle`. It stays on this machine: nothing was sent. Secrets were taken out; read it before you share it.",
        "air_version": env!("CARGO_PKG_VERSION"),
        "written_at": air_proto::time::now_iso(),
        "platform": {"os": std::env::consts::OS, "arch": std::env::consts::ARCH},
        "doctor": report,
        "config": config,
        "logs": logs,
        "errors": errors.into_iter().skip(skip).collect::<Vec<_>>(),
    });
    let text = serde_json::to_string_pretty(&bundle).map_err(|e| e.to_string())?;
    std::fs::write(file, text).map_err(|e| format!("cannot write {}: {e}", file.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_taken_out_and_the_rest_kept() {
        let text = "api_key: abcdef123456\nurl: http://x\nseen sk-ant-0123456789abcdef in a line\nmine=plainvalue123\nsk-no";
        let out = redact(text, &["plainvalue123".to_string()]);
        assert!(!out.contains("abcdef123456"), "{out}");
        assert!(!out.contains("0123456789abcdef"), "{out}");
        assert!(!out.contains("plainvalue123"), "{out}");
        assert!(
            out.contains("url: http://x") && out.contains("api_key: [redacted]"),
            "{out}"
        );
        assert!(out.ends_with("sk-no"), "{out}");
    }
}
