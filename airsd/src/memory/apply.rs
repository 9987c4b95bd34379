//! What promoting a skill draft or a patch writes: a draft becomes
//! `.air/shared/skills/<name>/SKILL.md`; a patch replaces the skill or project rules
//! file it corrects with the corrected text (a skill's front matter kept when the
//! correction is of its body alone). Before that the user sees the file and the diff
//! (`memory.show`); a write that would not leave a readable skill is refused.

use std::path::{Path, PathBuf};

use air_proto::api::MemoryView;
use air_proto::memory::{MemoryEntry, MemoryKind};

/// Where skills and rules are.
pub struct Places<'a> {
    pub root: &'a Path,
    /// `.air/shared`.
    pub shared: PathBuf,
    /// `~/.air`, for the user's skills.
    pub air_home: Option<&'a Path>,
}

/// The file promoting `entry` writes and its new text; `None` for a memory proper.
pub fn target(
    entry: &MemoryEntry,
    places: &Places<'_>,
) -> Result<Option<(PathBuf, String)>, String> {
    let named = |prefix: &str| {
        entry
            .target
            .as_deref()
            .and_then(|t| t.strip_prefix(prefix))
            .map(str::trim)
    };
    match entry.kind {
        MemoryKind::Skill => {
            let name = named("skill:").ok_or("a skill draft without a name (`skill:<name>`)")?;
            check_name(name)?;
            let (skills, _) = air_proto::skills::discover(places.air_home, &places.shared);
            if let Some(s) = skills.iter().find(|s| s.name == name) {
                return Err(format!(
                    "a skill named `{name}` exists ({}); a correction of it is a patch",
                    s.path
                ));
            }
            let path = places.shared.join("skills").join(name).join("SKILL.md");
            let text = if entry.body.starts_with("---") {
                entry.body.clone()
            } else {
                format!(
                    "---\nname: {name}\ndescription: {}\n---\n\n{}\n",
                    yaml_string(&entry.title),
                    entry.body.trim()
                )
            };
            Ok(Some((path, text)))
        }
        MemoryKind::Patch => {
            let path = if let Some(name) = named("skill:") {
                let (skills, _) = air_proto::skills::discover(places.air_home, &places.shared);
                let s = skills
                    .iter()
                    .find(|s| s.name == name)
                    .ok_or_else(|| format!("no skill named `{name}` is installed any more"))?;
                PathBuf::from(&s.path)
            } else if let Some(rel) = named("rules:") {
                let path = places.root.join(rel);
                let inside = path
                    .canonicalize()
                    .ok()
                    .zip(places.root.canonicalize().ok())
                    .is_some_and(|(p, root)| p.starts_with(root));
                if !inside || !path.is_file() {
                    return Err(format!("`{rel}` is not a file of the project"));
                }
                path
            } else {
                return Err(format!(
                    "a patch's target is `skill:<name>` or `rules:<path>`, not {:?}",
                    entry.target
                ));
            };
            let old = std::fs::read_to_string(&path)
                .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            let (front, _) = air_proto::config::split_front_matter(&old);
            let text = match front {
                // The body alone was corrected: the file's front matter stays.
                Some((yaml, _)) if !entry.body.starts_with("---") => {
                    format!("---\n{yaml}---\n\n{}\n", entry.body.trim())
                }
                _ => format!("{}\n", entry.body.trim_end()),
            };
            Ok(Some((path, text)))
        }
        _ => Ok(None),
    }
}

/// An entry as the user is shown it before promoting it.
pub fn view(entry: MemoryEntry, places: &Places<'_>) -> MemoryView {
    let (path, diff, problem) = match target(&entry, places) {
        Ok(Some((path, text))) => {
            let old = std::fs::read_to_string(&path).unwrap_or_default();
            let diff = (entry.kind == MemoryKind::Patch).then(|| {
                similar::TextDiff::from_lines(&old, &text)
                    .unified_diff()
                    .context_radius(3)
                    .header("as it is", "corrected")
                    .to_string()
            });
            (Some(path.display().to_string()), diff, None)
        }
        Ok(None) => (None, None, None),
        Err(problem) => (None, None, Some(problem)),
    };
    MemoryView {
        entry,
        path,
        diff,
        problem,
    }
}

/// Writes what promoting `entry` writes; the file, if any. A skill that would not
/// read back is not written.
pub fn write(entry: &MemoryEntry, places: &Places<'_>) -> Result<Option<PathBuf>, String> {
    let Some((path, text)) = target(entry, places)? else {
        return Ok(None);
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    }
    let is_skill = path.file_name().is_some_and(|n| n == "SKILL.md");
    if is_skill {
        // Checked on a copy first: the skill as written must read back.
        let probe = path.with_extension("md.check");
        std::fs::write(&probe, &text)
            .map_err(|e| format!("cannot write {}: {e}", probe.display()))?;
        let read = air_proto::skills::read(&probe, "project");
        let _ = std::fs::remove_file(&probe);
        read.map_err(|e| format!("the skill would not read back: {e}"))?;
    }
    air_proto::layout::write_atomic(&path, text.as_bytes()).map_err(|e| e.to_string())?;
    Ok(Some(path))
}

/// A skill's name: letters, digits, `-` and `_`, at most 64.
fn check_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "`{name}` is not a skill name (letters, digits, - and _, at most 64)"
        ))
    }
}

/// A YAML scalar on one line, quoted.
fn yaml_string(s: &str) -> String {
    serde_json::to_string(&s.split_whitespace().collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "\"\"".into())
}
