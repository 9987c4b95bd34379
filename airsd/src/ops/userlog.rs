//! `~/.air/logs/air.log` (baseline §23): what a user can act on — a daemon that could
//! not start, a configuration that cannot be read, a daemon that ended without
//! stopping — in plain words, one timestamped line each with its project. Lines older
//! than seven days are dropped as new ones are written. The full log of a daemon stays
//! in its project (`.air/local/logs/airsd.log`).

use std::path::Path;
use std::time::{Duration, SystemTime};

/// How long a line is kept.
const KEEP: Duration = Duration::from_secs(7 * 24 * 3600);

/// Writes `text` about the project at `project` to `<air_home>/logs/air.log`; a log
/// that cannot be written is passed over (the daemon's own log has it too).
pub fn note(air_home: &Path, project: &Path, text: &str) {
    let path = air_home.join("logs").join("air.log");
    let now = SystemTime::now();
    let old = std::fs::read_to_string(&path).unwrap_or_default();
    let mut kept: Vec<&str> = old
        .lines()
        .filter(|l| {
            l.split_whitespace()
                .next()
                .and_then(air_proto::time::parse)
                .is_some_and(|t| now.duration_since(t).map_or(true, |age| age < KEEP))
        })
        .collect();
    let line = format!(
        "{} {}: {}",
        air_proto::time::iso(now),
        project.display(),
        text.replace('\n', " ")
    );
    kept.push(&line);
    let written = std::fs::create_dir_all(path.parent().unwrap_or(air_home)).and_then(|()| {
        air_proto::layout::write_atomic(&path, format!("{}\n", kept.join("\n")).as_bytes())
            .map_err(std::io::Error::other)
    });
    if let Err(e) = written {
        tracing::warn!("cannot write {}: {e}", path.display());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_older_than_a_week_are_dropped() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("logs")).unwrap();
        let old = air_proto::time::iso(SystemTime::now() - Duration::from_secs(8 * 24 * 3600));
        let recent = air_proto::time::iso(SystemTime::now() - Duration::from_secs(3600));
        std::fs::write(
            dir.path().join("logs/air.log"),
            format!("{old} /p: old\n{recent} /p: recent\n"),
        )
        .unwrap();
        note(
            dir.path(),
            Path::new("/proj"),
            "the configuration\ncannot be read",
        );
        let text = std::fs::read_to_string(dir.path().join("logs/air.log")).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert!(lines[0].ends_with("/p: recent"));
        assert!(lines[1].ends_with("/proj: the configuration cannot be read"));
    }
}
