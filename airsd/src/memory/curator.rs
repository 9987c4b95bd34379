//! The Curator (D-024): a pass airsd runs weekly (and `air memory curate` now) over
//! the learned memory and the skills. It names skills that say much the same
//! (candidates for one merged skill), archives promoted memories whose files are all
//! gone (stale) or that no context has used for long (unused), and names skills not
//! loaded for long. Archiving keeps an entry (the user may promote it again); no
//! skill file is moved or deleted: that is the user's to do.

use std::collections::BTreeSet;
use std::path::Path;

use air_proto::api::{CuratorReport, SkillOverlap};
use air_proto::memory::{MemoryEntry, MemoryStatus};
use air_proto::skills::SkillRef;

use super::Memory;
use crate::error::Result;

/// Days without use after which a memory is archived and a skill named.
pub const UNUSED_DAYS: u32 = 90;
/// Days between two passes.
pub const EVERY_DAYS: u64 = 7;
/// The share of words two skills must have in common to be named as overlapping.
const OVERLAP: f64 = 0.5;
/// Where the store keeps the last pass.
pub const LAST_PASS: &str = "curator.last_pass";
/// Where the store keeps when each skill was first seen (a skill's age, for unused).
const FIRST_SEEN: &str = "curator.skill_first_seen.";

/// The pass: its report, and the memories it archived (for their events).
pub fn pass(
    memory: &Memory,
    skills: &[SkillRef],
    root: &Path,
    now: std::time::SystemTime,
) -> Result<(CuratorReport, Vec<(MemoryEntry, String)>)> {
    let at = air_proto::time::iso(now);
    let cutoff =
        air_proto::time::iso(now - std::time::Duration::from_secs(u64::from(UNUSED_DAYS) * 86_400));
    let mut report = CuratorReport {
        at: at.clone(),
        unused_days: UNUSED_DAYS,
        ..CuratorReport::default()
    };
    // Skills that say much the same.
    let words: Vec<BTreeSet<String>> = skills
        .iter()
        .map(|s| {
            crate::learning::fts::words(&format!("{} {}", s.name, s.description), usize::MAX)
                .into_iter()
                .collect()
        })
        .collect();
    for i in 0..skills.len() {
        for j in i + 1..skills.len() {
            let common = words[i].intersection(&words[j]).count();
            let either = words[i].union(&words[j]).count();
            let overlap = if either == 0 {
                0.0
            } else {
                common as f64 / either as f64
            };
            if overlap >= OVERLAP {
                report.overlapping_skills.push(SkillOverlap {
                    a: skills[i].name.clone(),
                    b: skills[j].name.clone(),
                    overlap: (overlap * 100.0).round() / 100.0,
                });
            }
        }
    }
    // Skills not loaded since the cutoff (nor since air first saw them).
    let uses = memory.skill_uses()?;
    for s in skills {
        let key = format!("{FIRST_SEEN}{}", s.name);
        let first = match memory.meta(&key)? {
            Some(f) => f,
            None => {
                memory.set_meta(&key, &at)?;
                at.clone()
            }
        };
        let last = uses.get(&s.name).map_or(first, |(_, last)| last.clone());
        if last < cutoff {
            report.unused_skills.push(s.name.clone());
        }
    }
    // Memories: stale when every file they concern is gone, unused when no context
    // took them since the cutoff.
    let mut archived = Vec::new();
    for e in memory.list(Some(MemoryStatus::Promoted), None, u32::MAX)? {
        if !e.kind.is_memory() {
            continue;
        }
        let gone = !e.files.is_empty() && e.files.iter().all(|f| !root.join(f).exists());
        let last = e.last_used_at.as_deref().unwrap_or(&e.updated_at);
        let reason = if gone {
            report.stale.push(e.id.clone());
            format!(
                "stale: the files it concerns are gone ({})",
                e.files.join(", ")
            )
        } else if last < cutoff.as_str() {
            report.unused.push(e.id.clone());
            format!("unused: in no agent's context for {UNUSED_DAYS} days")
        } else {
            continue;
        };
        if let Some(e) = memory.set_status(&e.id, MemoryStatus::Archived, Some(&reason), &at)? {
            archived.push((e, reason));
        }
    }
    memory.set_meta(
        LAST_PASS,
        &serde_json::to_string(&report).unwrap_or_default(),
    )?;
    Ok((report, archived))
}

/// Whether a pass is due: none yet, or the last one `EVERY_DAYS` ago.
pub fn due(memory: &Memory, now: std::time::SystemTime) -> Result<bool> {
    let Some(last) = memory.meta(LAST_PASS)? else {
        return Ok(true);
    };
    let at = serde_json::from_str::<CuratorReport>(&last)
        .ok()
        .and_then(|r| air_proto::time::parse(&r.at));
    Ok(at.is_none_or(|at| {
        now.duration_since(at)
            .is_ok_and(|d| d.as_secs() >= EVERY_DAYS * 86_400)
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use air_proto::memory::{MemoryKind, MemoryProposal};
    use std::time::{Duration, SystemTime};

    fn skill(name: &str, description: &str) -> SkillRef {
        SkillRef {
            name: name.into(),
            description: description.into(),
            path: format!("/skills/{name}/SKILL.md"),
            scope: "project".into(),
        }
    }

    #[test]
    fn overlaps_are_named_stale_and_unused_memories_archived_nothing_deleted() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("here.cpp"), "").unwrap();
        let mut m = Memory::open(&root.join("learned-memory.db")).unwrap();
        let old = "2026-01-01T00:00:00Z";
        let now = air_proto::time::parse("2026-12-02T00:00:00Z").unwrap();
        let mut promoted = |title: &str, files: &[&str], at: &str| {
            let p = MemoryProposal {
                kind: MemoryKind::Project,
                title: title.into(),
                body: "b".into(),
                files: files.iter().map(|f| f.to_string()).collect(),
                terms: vec![],
                target: None,
            };
            let id = m.propose(&p, "user", None, at).unwrap().entry.id;
            m.set_status(&id, MemoryStatus::Promoted, None, at).unwrap();
            id
        };
        let stale = promoted("gone", &["removed.cpp"], "2026-11-30T00:00:00Z");
        let unused = promoted("old", &["here.cpp"], old);
        let fresh = promoted("fresh", &["here.cpp"], "2026-11-30T00:00:00Z");
        let skills = [
            skill(
                "cmake-build",
                "Build a CMake project with ninja and run ctest",
            ),
            skill(
                "cmake-ninja",
                "Build the CMake project with ninja, run ctest",
            ),
            skill("qt-gui", "Lay out Qt widgets"),
        ];
        assert!(due(&m, now).unwrap());
        let (report, archived) = pass(&m, &skills, root, now).unwrap();
        assert_eq!(report.overlapping_skills.len(), 1, "{report:?}");
        assert_eq!(report.overlapping_skills[0].a, "cmake-build");
        assert_eq!(report.stale, std::slice::from_ref(&stale));
        assert_eq!(report.unused, std::slice::from_ref(&unused));
        assert!(report.unused_skills.is_empty(), "first seen just now");
        assert_eq!(archived.len(), 2);
        assert_eq!(
            m.get(&fresh).unwrap().unwrap().status,
            MemoryStatus::Promoted
        );
        let kept = m.get(&stale).unwrap().unwrap();
        assert_eq!(kept.status, MemoryStatus::Archived, "archived, not deleted");
        assert!(kept.note.unwrap().starts_with("stale"));
        assert!(!due(&m, now + Duration::from_secs(86_400)).unwrap());
        assert!(due(&m, now + Duration::from_secs(8 * 86_400)).unwrap());
        // A quarter later, a skill never loaded is named.
        let later = now + Duration::from_secs(100 * 86_400);
        m.skill_used("qt-gui", &air_proto::time::iso(later))
            .unwrap();
        let (report, _) = pass(&m, &skills, root, later).unwrap();
        assert_eq!(report.unused_skills, ["cmake-build", "cmake-ninja"]);
        let _ = SystemTime::now();
    }
}
