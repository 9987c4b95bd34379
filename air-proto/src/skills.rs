//! Skills (D-058): reusable procedural knowledge, one directory each with a
//! `SKILL.md` — YAML front matter naming the skill and saying when to use it, then
//! the instructions — and, beside it, `scripts/`, `references/` and `assets/`. The
//! user's are in `~/.air/skills/<name>/`, the project's in
//! `.air/shared/skills/<name>/` (a project skill of the same name wins). Agents are
//! shown each skill's name and description and load one's instructions when it
//! applies; `air skills list` shows them.

use serde::{Deserialize, Serialize};

/// A skill as agents are shown it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SkillRef {
    pub name: String,
    /// What it does and when to use it.
    pub description: String,
    /// Its `SKILL.md`.
    pub path: String,
    /// `user` (`~/.air/skills`) or `project` (`.air/shared/skills`).
    pub scope: String,
}

#[cfg(feature = "config")]
mod files;
#[cfg(feature = "hooks")]
pub use files::discover;
#[cfg(feature = "config")]
pub use files::{load, read};
