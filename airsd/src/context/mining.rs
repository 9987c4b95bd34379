//! The ExperienceMiner's context (D-024): its prompt, what air already remembers
//! (each entry's kind and title, so that a lesson seen again is proposed under the
//! same title and counted), the skills installed, and the material of what it learns
//! from, cut to fit its window.

use std::fmt::Write as _;

use air_proto::context::{AssembledContext, BudgetPolicy, ContextPurpose};
use air_proto::memory::MemoryEntry;
use air_proto::skills::SkillRef;

/// The ExperienceMiner's prompt.
pub const PROMPT: &str = include_str!("../../../resources/prompts/experience_miner.md");
/// The most entries of the memory listed by title.
const KNOWN_LISTED: usize = 200;

/// The context of an ExperienceMiner given `material` (Markdown: what happened),
/// `known` (the memory's entries, newest first) and the skills installed.
pub fn miner_context(
    material: &str,
    known: &[MemoryEntry],
    skills: &[SkillRef],
    budget: BudgetPolicy,
    model_id: &str,
) -> AssembledContext {
    let mut text = String::new();
    if !known.is_empty() {
        text.push_str("## Already in air's memory\n\n");
        for e in known.iter().take(KNOWN_LISTED) {
            let _ = writeln!(
                text,
                "- [{}, {}] {}",
                e.kind.as_str(),
                e.status.as_str(),
                e.title
            );
        }
        text.push('\n');
    }
    if !skills.is_empty() {
        text.push_str("## Skills installed\n\n");
        for s in skills {
            let _ = writeln!(text, "- `{}`: {}", s.name, s.description);
        }
        text.push('\n');
    }
    // The material takes what is left of the usable window (four characters a token).
    let usable = budget
        .context_window_tokens
        .saturating_sub(budget.reserved_output_tokens)
        .saturating_sub(budget.safety_margin_tokens);
    let room = usize::try_from(usable.saturating_mul(3))
        .unwrap_or(usize::MAX)
        .saturating_sub(text.len() + PROMPT.len());
    text.push_str(&cut(material, room));
    super::side_context(
        vec![PROMPT.trim().to_string()],
        &[("role", PROMPT), ("material", &text)],
        ContextPurpose::ExperienceMining,
        budget,
        model_id,
    )
}

/// `text` within `max` bytes: its start and its end, the middle named as left out.
fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let half = max / 2;
    let mut head = half.min(text.len());
    while !text.is_char_boundary(head) {
        head -= 1;
    }
    let mut tail = text.len().saturating_sub(half);
    while !text.is_char_boundary(tail) {
        tail += 1;
    }
    format!(
        "{}\n\n[… {} bytes left out to fit the window …]\n\n{}",
        &text[..head],
        tail - head,
        &text[tail..]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_material_keeps_its_start_and_end() {
        let text = format!("BEGIN {} END", "é".repeat(10_000));
        let c = cut(&text, 1_000);
        assert!(
            c.starts_with("BEGIN") && c.ends_with("END") && c.len() < 1_200,
            "{}",
            c.len()
        );
        assert_eq!(cut("short", 100), "short");
    }
}
