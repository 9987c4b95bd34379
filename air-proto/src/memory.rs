//! Learned memory (D-020, D-024): what air learned about the user and the project,
//! kept as typed entries in `.air/local/learned-memory.db`. The ExperienceMiner
//! proposes candidates (`memory.candidate.created`); one proposed again is counted,
//! not stored twice. A non-debug candidate seen three times asks the user to promote
//! it; a debugging lesson is promoted on its evidence (a build or tests that passed
//! after the fix). Promoted entries reach agents' contexts when they concern the
//! task's files or words. Skill drafts and corrections of a skill or rules file are
//! candidates too, applied only when the user promotes them. Nothing is deleted
//! without the user.

use serde::{Deserialize, Serialize};

wire_enum! {
    /// What an entry is about.
    pub enum MemoryKind {
        /// The user: preferences, habits, how they like work done.
        User = "user",
        /// The project: its conventions, structure, traps.
        Project = "project",
        /// What the user said of air's work (do, don't, again).
        Feedback = "feedback",
        /// Where to look: documents, commands, places outside the project.
        Reference = "reference",
        /// A skill draft: promoted, it is written as `.air/shared/skills/<name>/SKILL.md`.
        Skill = "skill",
        /// A correction of a skill or rules file an agent found wrong: promoted, the
        /// file is replaced by the corrected text.
        Patch = "patch",
    }
}

wire_enum! {
    /// Where an entry stands.
    pub enum MemoryStatus {
        /// Proposed; not shown to agents.
        Candidate = "candidate",
        /// Confirmed (by the user, or by evidence): shown to agents when relevant.
        Promoted = "promoted",
        /// Set aside (stale, unused, replaced); kept, and promoted again by the user.
        Archived = "archived",
    }
}

impl MemoryKind {
    /// Kinds that are memories proper (shown to agents); skills and patches are
    /// applied to files instead.
    pub fn is_memory(self) -> bool {
        !matches!(self, MemoryKind::Skill | MemoryKind::Patch)
    }
}

/// Times a non-debug candidate is proposed before the user is asked to promote it.
pub const SEEN_TO_ASK: u32 = 3;

/// One entry of the learned memory.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MemoryEntry {
    pub id: String,
    pub kind: MemoryKind,
    pub status: MemoryStatus,
    /// One line: what it says (for a skill draft, when to use the skill; for a
    /// patch, what was wrong).
    pub title: String,
    /// Markdown: the memory itself, a skill's instructions, or a patched file's
    /// whole corrected text.
    pub body: String,
    /// Project files or directories it concerns (relative paths).
    #[serde(default)]
    pub files: Vec<String>,
    /// Words it is found by besides its title and body.
    #[serde(default)]
    pub terms: Vec<String>,
    /// A skill draft's name (`skill:<name>`), or a patch's target (`skill:<name>`,
    /// `rules:<path>`).
    pub target: Option<String>,
    /// What proposed it: `debug`, `session_end`, `nudge`, `outdated`, `user`.
    pub source: String,
    /// Times it was proposed.
    pub seen: u32,
    /// The debugging record it was learned from, and whether airsd saw a build or
    /// tests pass after that fix.
    pub debug_record_id: Option<String>,
    #[serde(default)]
    pub verified: bool,
    pub created_at: String,
    pub updated_at: String,
    /// Times it was put in an agent's context, and the last time.
    #[serde(default)]
    pub uses: u32,
    pub last_used_at: Option<String>,
    /// Why it was archived.
    pub note: Option<String>,
}

impl MemoryEntry {
    /// Whether the user should be asked to promote it: a candidate proposed often
    /// enough, or a skill draft or patch (those always wait for the user).
    pub fn awaits_user(&self) -> bool {
        self.status == MemoryStatus::Candidate
            && (self.seen >= SEEN_TO_ASK || !self.kind.is_memory())
            && self.debug_record_id.is_none()
    }
}

/// A memory the ExperienceMiner proposes (its form's item, before airsd keeps it).
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryProposal {
    pub kind: MemoryKind,
    pub title: String,
    pub body: String,
    #[serde(default)]
    pub files: Vec<String>,
    #[serde(default)]
    pub terms: Vec<String>,
    pub target: Option<String>,
}

/// The ExperienceMiner's result.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MinerOutput {
    #[serde(default)]
    pub memories: Vec<MemoryProposal>,
}

/// `memory.candidate.created`: the ExperienceMiner proposed a memory, a skill draft
/// or a patch (again: `seen` counts).
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MemoryCandidateCreated {
    pub memory_id: String,
    pub kind: MemoryKind,
    pub title: String,
    pub target: Option<String>,
    pub source: String,
    /// The miner that proposed it.
    pub agent_id: String,
    pub seen: u32,
    /// Whether the user is now asked to promote it.
    #[serde(default)]
    pub ask_user: bool,
}

/// `memory.promoted`: an entry now reaches agents (or its skill or patch was
/// written).
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MemoryPromoted {
    pub memory_id: String,
    pub kind: MemoryKind,
    pub title: String,
    /// `user`, or `evidence` (a debugging lesson whose fix a build or test proved).
    pub by: String,
    /// The file written (a skill, a patched file).
    pub path: Option<String>,
}

/// `memory.archived`: an entry was set aside or forgotten.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MemoryArchived {
    pub memory_id: String,
    pub title: String,
    pub reason: String,
    /// `user` or `curator`.
    pub by: String,
    /// Forgotten at the user's word: removed from the store.
    #[serde(default)]
    pub deleted: bool,
}

/// `skill.loaded`: an agent loaded a skill's instructions.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SkillLoaded {
    pub agent_id: String,
    pub name: String,
    /// Its `SKILL.md`.
    pub path: String,
}

/// `memory.outdated.reported`: an agent found a skill or rules file wrong.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct OutdatedReported {
    pub agent_id: String,
    pub task_id: Option<String>,
    /// `skill:<name>` or `rules:<path>` (a project rules file).
    pub target: String,
    /// What is wrong, and what the agent found true instead.
    pub problem: String,
}

/// The key under which an entry is counted rather than stored again: its kind and
/// target, or its title's words in lower case.
pub fn key_of(kind: MemoryKind, title: &str, target: Option<&str>) -> String {
    match target {
        Some(t) if !kind.is_memory() => format!("{}:{}", kind.as_str(), t.trim()),
        _ => {
            let words: Vec<String> = title
                .split(|c: char| !c.is_alphanumeric())
                .filter(|w| !w.is_empty())
                .map(str::to_lowercase)
                .collect();
            format!("{}:{}", kind.as_str(), words.join(" "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_lesson_in_other_words_case_or_marks_is_one_key() {
        assert_eq!(
            key_of(MemoryKind::Project, "Build with `ninja -C build`!", None),
            key_of(MemoryKind::Project, "build with ninja  -c BUILD", None)
        );
        assert_ne!(
            key_of(MemoryKind::Project, "a", None),
            key_of(MemoryKind::User, "a", None)
        );
        assert_eq!(
            key_of(MemoryKind::Skill, "anything", Some("skill:cmake")),
            "skill:skill:cmake"
        );
    }
}
