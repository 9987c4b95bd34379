//! Compaction (D-025, D-037, D-047): the rules in three tiers, the classifier that
//! labels each block of an agent's messages, the Compactor's input made from a
//! snapshot of messages 1…N, and the text that stands for them in the agent's
//! context afterwards. Pure: the shell reads the files and the messages.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use air_proto::message::{ContentBlock, Role};
use air_proto::payload::ClassCount;
use serde::Deserialize;

/// The built-in rules, always the first tier.
pub const BUILT_IN: &str = include_str!("../../../resources/compaction-rules.md");

/// What a block of an agent's conversation is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Class {
    /// What the user said to the agent while it worked.
    UserRequirement,
    /// A tool that failed, or a command that exited other than 0.
    Error,
    /// The model's own words.
    Decision,
    /// A call of a tool.
    ToolCall,
    /// A tool's answer.
    ToolOutput,
    /// What the loop told the model (turns left, time).
    Note,
    Thinking,
}

impl Class {
    pub const ALL: [Class; 7] = [
        Class::UserRequirement,
        Class::Error,
        Class::Decision,
        Class::ToolCall,
        Class::ToolOutput,
        Class::Note,
        Class::Thinking,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Class::UserRequirement => "user_requirement",
            Class::Error => "error",
            Class::Decision => "decision",
            Class::ToolCall => "tool_call",
            Class::ToolOutput => "tool_output",
            Class::Note => "note",
            Class::Thinking => "thinking",
        }
    }
}

/// What the rules do with a class.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Rule {
    Keep,
    Summarise,
    DropIfNeeded,
}

impl Rule {
    pub fn as_str(self) -> &'static str {
        match self {
            Rule::Keep => "keep",
            Rule::Summarise => "summarise",
            Rule::DropIfNeeded => "drop_if_needed",
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Front {
    #[serde(default)]
    classes: BTreeMap<Class, Rule>,
    keep_chars: Option<usize>,
}

/// The rules in force: the built-in tier, then the user's, then the project's.
#[derive(Clone, Debug, PartialEq)]
pub struct Rules {
    pub classes: BTreeMap<Class, Rule>,
    /// The most characters one kept block keeps word for word.
    pub keep_chars: usize,
    /// What the Compactor is told to write (the Markdown body of the last tier that
    /// has one).
    pub guidance: String,
    /// Files that could not be used, each named by file:line, and why (the tiers
    /// before them stand).
    pub warnings: Vec<String>,
}

/// The tiers' files after the built-in one: `~/.air/compaction-rules.md`, then
/// `.air/shared/compaction-rules.md`.
pub fn tier_files(air_home: Option<&Path>, shared: &Path) -> Vec<PathBuf> {
    air_home
        .map(|h| h.join("compaction-rules.md"))
        .into_iter()
        .chain(std::iter::once(shared.join("compaction-rules.md")))
        .collect()
}

impl Rules {
    /// The built-in rules alone.
    pub fn built_in() -> Rules {
        let mut rules = Rules {
            classes: BTreeMap::new(),
            keep_chars: 2_000,
            guidance: String::new(),
            warnings: Vec::new(),
        };
        if let Err(e) = rules.over("resources/compaction-rules.md", BUILT_IN) {
            rules.warnings.push(e);
        }
        rules
    }

    /// The built-in rules with each file of `tiers` over them, in order; a missing
    /// file is no tier, a broken one is named and passed over.
    pub fn load(tiers: &[PathBuf]) -> Rules {
        let mut rules = Rules::built_in();
        for path in tiers {
            let text = match std::fs::read_to_string(path) {
                Ok(t) => t,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => {
                    rules.warnings.push(format!("{}: {e}", path.display()));
                    continue;
                }
            };
            if let Err(e) = rules.over(&path.display().to_string(), &text) {
                rules.warnings.push(e);
            }
        }
        rules
    }

    /// Lays one tier's text over these rules, or says what is wrong with it (by
    /// file:line) and changes nothing.
    pub fn over(&mut self, name: &str, text: &str) -> Result<(), String> {
        let (front, body) = air_proto::config::split_front_matter(text);
        let front: Front = match front {
            None => Front::default(),
            Some((yaml, first_line)) => {
                air_proto::config::parse_front_matter::<Front>(Path::new(name), yaml, first_line)?
            }
        };
        if front.keep_chars == Some(0) {
            return Err(format!("{name}: keep_chars must be more than 0"));
        }
        self.classes.extend(front.classes);
        if let Some(n) = front.keep_chars {
            self.keep_chars = n;
        }
        if !body.trim().is_empty() {
            self.guidance = body.trim().to_string();
        }
        Ok(())
    }

    /// The rule of a class (a class no tier names is summarised).
    pub fn rule(&self, class: Class) -> Rule {
        self.classes.get(&class).copied().unwrap_or(Rule::Summarise)
    }
}

/// The class of one block of a message.
pub fn classify(role: Role, block: &ContentBlock) -> Class {
    match (role, block) {
        (_, ContentBlock::Thinking { .. } | ContentBlock::RedactedThinking { .. }) => {
            Class::Thinking
        }
        (_, ContentBlock::ToolUse { .. }) => Class::ToolCall,
        (Role::Assistant, ContentBlock::Text { .. }) => Class::Decision,
        (
            _,
            ContentBlock::ToolResult {
                is_error, content, ..
            },
        ) => {
            if *is_error || failed_command(content) {
                Class::Error
            } else {
                Class::ToolOutput
            }
        }
        (Role::User, ContentBlock::Text { text }) => {
            if text.starts_with(air_proto::message::USER_SAYS) {
                Class::UserRequirement
            } else {
                Class::Note
            }
        }
    }
}

/// Whether a tool's answer is a command that exited other than 0 (the shell's
/// answer starts `Exit code N`).
fn failed_command(content: &str) -> bool {
    content
        .strip_prefix("Exit code ")
        .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit() && c != '-').next())
        .and_then(|code| code.parse::<i64>().ok())
        .is_some_and(|code| code != 0)
}

/// One message of the snapshot, as the session holds it.
#[derive(Clone, Debug, PartialEq)]
pub struct Stored {
    pub id: String,
    pub role: Role,
    pub content: Vec<ContentBlock>,
}

impl From<&crate::event_store::query::StoredMessage> for Stored {
    fn from(m: &crate::event_store::query::StoredMessage) -> Self {
        Stored {
            id: m.id.clone(),
            role: if m.user { Role::User } else { Role::Assistant },
            // A block the contracts do not know is left out, not fatal.
            content: serde_json::from_value::<Vec<ContentBlock>>(m.content.clone())
                .unwrap_or_default(),
        }
    }
}

/// The Compactor's input and what the replacement keeps.
#[derive(Clone, Debug, PartialEq)]
pub struct Prepared {
    /// The transcript the Compactor summarises (the earlier summary first).
    pub transcript: String,
    /// Blocks the rules keep word for word, rendered.
    pub kept: Vec<String>,
    pub classes: Vec<ClassCount>,
    /// Tokens of the messages the summary stands for, estimated.
    pub tokens_before: u64,
}

/// The most characters of one block the Compactor reads when its input must shrink.
const BLOCK_CUT: usize = 4_000;

/// The text of a block as the transcript shows it.
fn block_text(block: &ContentBlock) -> String {
    match block {
        ContentBlock::Text { text } => text.clone(),
        ContentBlock::Thinking { thinking, .. } => thinking.clone(),
        ContentBlock::RedactedThinking { .. } => "(redacted thinking)".into(),
        ContentBlock::ToolUse { name, input, .. } => format!("{name} {input}"),
        ContentBlock::ToolResult { content, .. } => content.clone(),
    }
}

/// At most `max` characters of `text`, saying how much was cut.
fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_string(),
        Some((at, _)) => format!(
            "{}… [{} more characters]",
            &text[..at],
            text[at..].chars().count()
        ),
    }
}

/// The Compactor's input from `messages` (numbered from `first`, the agent's
/// message number of the first), within `budget_tokens` as far as the rules allow:
/// `drop_if_needed` blocks go first (oldest first), then long blocks are cut.
pub fn prepare(
    rules: &Rules,
    previous: Option<&str>,
    messages: &[Stored],
    first: usize,
    budget_tokens: u64,
) -> Prepared {
    struct Item {
        header: String,
        class: Class,
        text: String,
    }
    let mut items = Vec::new();
    let mut tokens_before = previous.map_or(0, super::estimate);
    for (i, m) in messages.iter().enumerate() {
        let role = match m.role {
            Role::User => "user",
            Role::Assistant => "assistant",
        };
        for block in &m.content {
            let class = classify(m.role, block);
            let text = block_text(block);
            tokens_before += super::estimate(&text);
            items.push(Item {
                header: format!("[#{} {role} · {}]", first + i, class.as_str()),
                class,
                text,
            });
        }
    }
    let mut counts: BTreeMap<Class, (u32, u32)> = BTreeMap::new();
    for it in &items {
        counts.entry(it.class).or_default().0 += 1;
    }
    let size = |items: &[Item], dropped: &[bool]| -> u64 {
        items
            .iter()
            .zip(dropped)
            .filter(|(_, d)| !**d)
            .map(|(it, _)| super::estimate(&it.text) + 8)
            .sum::<u64>()
            + previous.map_or(0, super::estimate)
    };
    let mut dropped = vec![false; items.len()];
    for i in 0..items.len() {
        if size(&items, &dropped) <= budget_tokens {
            break;
        }
        if rules.rule(items[i].class) == Rule::DropIfNeeded {
            dropped[i] = true;
            counts.entry(items[i].class).or_default().1 += 1;
        }
    }
    let shrink = size(&items, &dropped) > budget_tokens;
    let mut transcript = String::new();
    if let Some(p) = previous {
        transcript.push_str("## The summary of the messages before these\n\n");
        transcript.push_str(p.trim());
        transcript.push_str("\n\n## The messages\n\n");
    }
    let mut kept = Vec::new();
    for (it, d) in items.iter().zip(&dropped) {
        if rules.rule(it.class) == Rule::Keep {
            kept.push(format!("{} {}", it.header, cut(&it.text, rules.keep_chars)));
        }
        if *d {
            continue;
        }
        let text = if shrink {
            cut(&it.text, BLOCK_CUT)
        } else {
            it.text.clone()
        };
        transcript.push_str(&format!("{} {}\n\n", it.header, text.trim_end()));
    }
    Prepared {
        transcript,
        kept,
        classes: Class::ALL
            .iter()
            .filter_map(|c| {
                let (messages, dropped) = counts.get(c).copied()?;
                Some(ClassCount {
                    class: c.as_str().to_string(),
                    rule: rules.rule(*c).as_str().to_string(),
                    messages,
                    dropped,
                })
            })
            .collect(),
        tokens_before,
    }
}

/// What stands for messages 1…`upto` in the agent's context: the marker, the
/// Compactor's summary, and what the rules keep word for word.
pub fn replacement(upto: usize, summary: &str, kept: &[String]) -> String {
    let mut text = format!(
        "[Compaction marker: messages 1–{upto} of your work so far are summarised here. The originals are kept: context_recall reads any of them back by number.]\n\n## Summary\n\n{}\n",
        summary.trim()
    );
    if !kept.is_empty() {
        text.push_str("\n## Kept word for word\n\n");
        for k in kept {
            text.push_str(&format!("- {}\n", k.trim_end()));
        }
    }
    text
}

/// The Compactor's prompt.
pub const PROMPT: &str = include_str!("../../../resources/prompts/compactor.md");

/// The Compactor's starting context: its prompt with the rules' guidance, then the
/// task and the transcript of messages 1…`upto`.
pub fn compactor_context(
    prepared: &Prepared,
    rules: &Rules,
    task: &air_proto::task::TaskSpec,
    upto: usize,
    budget: air_proto::context::BudgetPolicy,
    model_id: &str,
) -> air_proto::context::AssembledContext {
    let guidance = format!("# What to write\n\n{}", rules.guidance);
    let text = format!(
        "Summarise messages 1–{upto} of an agent's work on task {}: {}.\n\n## The task\n\n{}\n\n{}",
        task.id,
        task.title,
        task.description.trim(),
        prepared.transcript
    );
    super::side_context(
        vec![PROMPT.trim().to_string(), guidance.clone()],
        &[("role", PROMPT), ("rules", &guidance), ("messages", &text)],
        air_proto::context::ContextPurpose::Compaction,
        budget,
        model_id,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(text: &str) -> ContentBlock {
        ContentBlock::text(text)
    }

    #[test]
    fn the_tiers_override_class_by_class_and_a_broken_file_is_named_and_passed_over() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let shared = dir.path().join("shared");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&shared).unwrap();
        let built = Rules::built_in();
        assert!(built.warnings.is_empty(), "{:?}", built.warnings);
        assert_eq!(built.rule(Class::UserRequirement), Rule::Keep);
        assert_eq!(built.rule(Class::Thinking), Rule::DropIfNeeded);
        assert!(built.guidance.contains("what is left to do"));
        std::fs::write(
            home.join("compaction-rules.md"),
            "---\nclasses:\n  tool_output: drop_if_needed\nkeep_chars: 100\n---\nMy guidance.\n",
        )
        .unwrap();
        std::fs::write(
            shared.join("compaction-rules.md"),
            "---\nclasses:\n  error: summarise\n  tool_ouput: keep\n---\nProject guidance.\n",
        )
        .unwrap();
        let rules = Rules::load(&tier_files(Some(&home), &shared));
        assert_eq!(rules.rule(Class::ToolOutput), Rule::DropIfNeeded);
        assert_eq!(rules.keep_chars, 100);
        assert_eq!(
            rules.guidance, "My guidance.",
            "the broken tier changes nothing"
        );
        assert_eq!(rules.rule(Class::Error), Rule::Keep);
        assert_eq!(rules.warnings.len(), 1, "{:?}", rules.warnings);
        let w = &rules.warnings[0];
        assert!(
            w.contains("shared/compaction-rules.md:4") && w.contains("tool_ouput"),
            "{w}"
        );
        // A good project tier lays itself over the user's.
        std::fs::write(
            shared.join("compaction-rules.md"),
            "---\nclasses:\n  error: summarise\n---\n",
        )
        .unwrap();
        let rules = Rules::load(&tier_files(Some(&home), &shared));
        assert_eq!(
            (rules.rule(Class::Error), rules.guidance.as_str()),
            (Rule::Summarise, "My guidance.")
        );
    }

    #[test]
    fn blocks_are_classified_and_the_input_drops_what_it_may_first() {
        let messages = vec![
            Stored {
                id: "a1".into(),
                role: Role::Assistant,
                content: vec![
                    ContentBlock::Thinking {
                        thinking: "x".repeat(4_000),
                        signature: String::new(),
                    },
                    ContentBlock::text("I will read main.c"),
                    ContentBlock::ToolUse {
                        id: "t1".into(),
                        name: "fs_read".into(),
                        input: serde_json::json!({"path": "main.c"}),
                    },
                ],
            },
            Stored {
                id: "u1".into(),
                role: Role::User,
                content: vec![
                    ContentBlock::ToolResult {
                        tool_use_id: "t1".into(),
                        content: "Exit code 2 after 0.1 s\nmain.c:3: error: x".into(),
                        is_error: false,
                    },
                    user(&format!("{} use C11", air_proto::message::USER_SAYS)),
                    user("3 turns left of 50"),
                ],
            },
        ];
        let classes: Vec<Class> = messages
            .iter()
            .flat_map(|m| m.content.iter().map(|b| classify(m.role, b)))
            .collect();
        assert_eq!(
            classes,
            [
                Class::Thinking,
                Class::Decision,
                Class::ToolCall,
                Class::Error,
                Class::UserRequirement,
                Class::Note
            ]
        );
        let rules = Rules::built_in();
        let roomy = prepare(&rules, None, &messages, 1, 100_000);
        assert!(roomy.transcript.contains("[#1 assistant · thinking] xxx"));
        assert!(roomy.transcript.contains("[#2 user · error] Exit code 2"));
        assert_eq!(roomy.kept.len(), 2, "the error and what the user said");
        let tight = prepare(&rules, Some("Earlier: set up."), &messages, 1, 200);
        assert!(!tight.transcript.contains("xxx"), "the thinking went first");
        assert!(tight
            .transcript
            .starts_with("## The summary of the messages before these"));
        let thinking = tight
            .classes
            .iter()
            .find(|c| c.class == "thinking")
            .unwrap();
        assert_eq!((thinking.messages, thinking.dropped), (1, 1));
        let text = replacement(2, "Read main.c; it fails.", &tight.kept);
        assert!(text.starts_with("[Compaction marker: messages 1–2"));
        assert!(text.contains("- [#2 user · user_requirement]"));
    }
}
