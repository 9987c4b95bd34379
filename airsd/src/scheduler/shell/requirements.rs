//! The requirement files, watched while a plan's work is unfinished: a person who
//! edits `.air/shared/plan/requirements.md` or an ADR (`docs/ADR-*.md`) while the run
//! goes has changed a requirement, recorded as `requirement.changed` for the core to
//! re-plan. Each file's size and modification time are read every couple of seconds
//! (a few `stat`s, no file contents); airsd's own write of a confirmed plan moves
//! the baseline instead of counting as an edit.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

/// How often the files are looked at.
const EVERY: Duration = Duration::from_secs(2);

/// What a file looked like: its size and modification time.
type Stamp = (u64, Option<SystemTime>);

/// The watched files as last seen.
#[derive(Debug, Default)]
pub struct Watched {
    seen: Option<BTreeMap<PathBuf, Stamp>>,
    last: Option<Instant>,
}

/// The requirement files of a project and their stamps.
fn stamps(root: &Path) -> BTreeMap<PathBuf, Stamp> {
    let stamp = |p: &Path| {
        std::fs::metadata(p)
            .ok()
            .filter(std::fs::Metadata::is_file)
            .map(|m| (m.len(), m.modified().ok()))
    };
    let mut out = BTreeMap::new();
    let req = PathBuf::from(".air/shared/plan/requirements.md");
    if let Some(s) = stamp(&root.join(&req)) {
        out.insert(req, s);
    }
    if let Ok(entries) = std::fs::read_dir(root.join("docs")) {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            if name.starts_with("ADR-") && name.ends_with(".md") {
                let rel = PathBuf::from("docs").join(&name);
                if let Some(s) = stamp(&root.join(&rel)) {
                    out.insert(rel, s);
                }
            }
        }
    }
    out
}

impl Watched {
    /// Takes what the files look like now as the baseline (after airsd wrote them).
    pub fn rebase(&mut self, root: &Path) {
        self.seen = Some(stamps(root));
    }

    /// The files edited since last seen, when it is time to look (none the first
    /// time: that is the baseline).
    pub fn edited(&mut self, root: &Path, now: Instant) -> Vec<String> {
        if self.last.is_some_and(|t| now.duration_since(t) < EVERY) {
            return Vec::new();
        }
        self.last = Some(now);
        let current = stamps(root);
        let Some(seen) = self.seen.replace(current.clone()) else {
            return Vec::new();
        };
        let mut out: Vec<String> = current
            .iter()
            .filter(|(p, s)| seen.get(*p) != Some(*s))
            .map(|(p, _)| p.display().to_string())
            .collect();
        out.extend(
            seen.keys()
                .filter(|p| !current.contains_key(*p))
                .map(|p| format!("{} (removed)", p.display())),
        );
        out
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn an_edit_of_the_requirements_or_an_adr_is_seen_and_a_rebase_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join(".air/shared/plan")).unwrap();
        std::fs::create_dir_all(root.join("docs")).unwrap();
        std::fs::write(root.join(".air/shared/plan/requirements.md"), "# R\n").unwrap();
        let mut w = Watched::default();
        let t0 = Instant::now();
        assert!(
            w.edited(root, t0).is_empty(),
            "the first look is the baseline"
        );
        std::fs::write(
            root.join(".air/shared/plan/requirements.md"),
            "# R\n\n- more\n",
        )
        .unwrap();
        assert!(w.edited(root, t0).is_empty(), "not looked at again so soon");
        let t1 = t0 + EVERY;
        assert_eq!(w.edited(root, t1), [".air/shared/plan/requirements.md"]);
        std::fs::write(root.join("docs/ADR-0001-x.md"), "# x\n").unwrap();
        w.rebase(root);
        assert!(w.edited(root, t1 + EVERY).is_empty(), "airsd's own write");
        std::fs::remove_file(root.join("docs/ADR-0001-x.md")).unwrap();
        std::fs::write(root.join("docs/notes.md"), "not an ADR\n").unwrap();
        assert_eq!(
            w.edited(root, t1 + 2 * EVERY),
            ["docs/ADR-0001-x.md (removed)"]
        );
    }
}
