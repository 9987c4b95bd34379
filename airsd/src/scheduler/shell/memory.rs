//! The shell's side of the learned memory (`crate::memory`): the entries that concern
//! an agent's task, for its context, and their use counted. A memory that cannot be
//! read or written is logged and passed: it never holds the run up.

use super::*;
use crate::memory::{Memory, Selection};

impl Shell {
    /// The promoted memories that concern the task this agent is given: by the
    /// task's files (expected, allowed, its write area, those its agents changed) and
    /// by its words.
    pub(super) async fn memory_for(&self, d: &Dispatch, changes: &[String]) -> Option<Selection> {
        if matches!(d.role, AgentType::Compactor | AgentType::ExperienceMiner) {
            return None;
        }
        let path = self.ctx.paths.learned_memory();
        if !path.exists() {
            return None;
        }
        let scope = &d.spec.scope;
        let files: Vec<String> = scope
            .expected_files
            .iter()
            .chain(&scope.allowed_paths)
            .flatten()
            .chain(&scope.write_area)
            .chain(changes)
            .cloned()
            .collect();
        let text = format!(
            "{} {} {}",
            d.spec.title,
            d.spec.description,
            d.spec.acceptance_criteria.join(" ")
        );
        let found = tokio::task::spawn_blocking(move || {
            Memory::open(&path)?.select(&files, &text, crate::memory::CONTEXT_CHARS)
        })
        .await;
        match found {
            Ok(Ok(s)) => Some(s),
            Ok(Err(e)) => {
                tracing::warn!(task = %d.task_id, "cannot read the learned memory: {e}");
                None
            }
            Err(e) => {
                tracing::warn!(task = %d.task_id, "cannot read the learned memory: {e}");
                None
            }
        }
    }

    /// Counts the memories put in a context (for the Curator: unused ones are
    /// archived).
    pub(super) fn memory_used(&self, ids: &[String]) {
        if ids.is_empty() {
            return;
        }
        let path = self.ctx.paths.learned_memory();
        let ids = ids.to_vec();
        tokio::task::spawn_blocking(move || {
            let now = air_proto::time::now_iso();
            if let Err(e) = Memory::open(&path).and_then(|m| m.mark_used(&ids, &now)) {
                tracing::warn!("cannot count the memories used: {e}");
            }
        });
    }
}
