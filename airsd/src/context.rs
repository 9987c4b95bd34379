//! The ContextAssembler (D-046, seed 001 §9): each agent's starting context, built
//! from layers as Anthropic canonical messages.
//!
//! - System layers: the system prompt and the agent type's prompt (`resources/prompts/`),
//!   then the project rules from `.air/shared/rules/*.md` that apply to the task's
//!   files.
//! - One user message in sections: the task (its spec, and what its paths, frozen
//!   interfaces and turn budget mean), where the agent works, the plan's overview, the
//!   direct neighbours in the task graph, the results of the tasks it depends on, the
//!   files the task changed so far, the notes from earlier attempts, the result under
//!   review and the diff of its changes.
//!
//! Every section gets a token estimate; the total is held against the model's budget.
//! Above it, optional sections are left out in a fixed order, each omission recorded
//! with its reason and told to the agent; if the context still does not fit,
//! compaction is requested (`context.compaction.requested`). The assembler never
//! compacts anything itself.
//!
//! Assembly is pure work on what the run already holds (the rules are read once, when
//! the run starts), so the scheduler can do it as it dispatches.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use air_proto::context::{
    AssembledContext, BudgetPolicy, CompactionNeed, ContextPurpose, ContextSummary, IncludedRefs,
    Omission, TokenEstimate,
};
use air_proto::event::AgentType;
use air_proto::message::{ContentBlock, Message};
use air_proto::projection::TaskStatus;
use air_proto::result::WorkerResult;
use air_proto::task::{DependencyType, TaskSpec};
use air_proto::tool::ToolDefinition;
use serde::Deserialize;

const SYSTEM: &str = include_str!("../../resources/prompts/system.md");

/// The agent type's prompt; the Architecture Designer consulted about a task (an
/// `execute` task, not a milestone review) has its own. The agents that change the
/// project through a task (the executor, the debugger) share how to work
/// (`work.md`); every role says how its turn ends.
pub fn role_prompt(role: AgentType, consulted: bool, direct: bool) -> &'static str {
    match role {
        AgentType::Executor if direct => include_str!("../../resources/prompts/direct.md"),
        AgentType::ArchitectureDesigner if consulted => {
            include_str!("../../resources/prompts/consult.md")
        }
        AgentType::Reviewer => include_str!("../../resources/prompts/reviewer.md"),
        AgentType::Debugger => concat!(
            include_str!("../../resources/prompts/debugger.md"),
            "\n",
            include_str!("../../resources/prompts/work.md")
        ),
        AgentType::ArchitectureDesigner => {
            include_str!("../../resources/prompts/architecture_designer.md")
        }
        AgentType::Main => include_str!("../../resources/prompts/main.md"),
        AgentType::Compactor => compaction::PROMPT,
        AgentType::ExperienceMiner => mining::PROMPT,
        _ => concat!(
            include_str!("../../resources/prompts/executor.md"),
            "\n",
            include_str!("../../resources/prompts/work.md")
        ),
    }
}

/// Output tokens reserved for the answer when the model allows more (the worker asks
/// for at most this much per turn).
pub const RESERVED_OUTPUT: u64 = 16_384;
/// Slack for the estimate's error.
pub const SAFETY_MARGIN: u64 = 2_048;
/// Compaction is requested above this share of the usable window (seed 001 §10.1).
pub const TARGET_USAGE: f64 = 0.7;

/// The budget for a model with this window and output limit, whose turns think with
/// `thinking` tokens on top of the answer's room.
pub fn budget(context_window: u64, max_output: u32, thinking: Option<u32>) -> BudgetPolicy {
    BudgetPolicy {
        context_window_tokens: context_window,
        reserved_output_tokens: (RESERVED_OUTPUT + u64::from(thinking.unwrap_or(0)))
            .min(u64::from(max_output)),
        safety_margin_tokens: SAFETY_MARGIN,
        target_usage_ratio: TARGET_USAGE,
    }
}

/// Tokens a text costs, estimated: about four bytes a token for English prose and
/// code, rounded up.
pub fn estimate(text: &str) -> u64 {
    (text.len() as u64).div_ceil(4)
}

/// A project rule file.
#[derive(Clone, Debug, PartialEq)]
pub struct Rule {
    /// Its path from the project root.
    pub name: String,
    /// The files it applies to (globs); empty: every task.
    pub paths: Vec<String>,
    pub body: String,
    /// It applies only to a task that names files under its `paths` (a nested
    /// `AGENTS.md`), never to one that names none.
    pub scoped: bool,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleFrontMatter {
    #[serde(default)]
    paths: Vec<String>,
    #[serde(default)]
    #[allow(dead_code)]
    description: Option<String>,
}

/// What a run's contexts are made of besides each task's own state.
#[derive(Clone, Debug, Default)]
pub struct Sources {
    pub plan_title: Option<String>,
    /// The plan's text outside any task.
    pub overview: Option<String>,
    pub rules: Vec<Rule>,
    /// The project's profile from `.air/shared/project.json` (D-022), if it has one.
    pub project: Option<air_proto::project_profile::ProjectProfile>,
}

impl Sources {
    /// Reads the project rules: every `*.md` in `rules_dir`, by name. A rule file may
    /// start with YAML front matter naming the files it applies to (`paths:` globs).
    pub fn load_rules(root: &Path, rules_dir: &Path) -> Result<Vec<Rule>, String> {
        let entries = match std::fs::read_dir(rules_dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(format!("{}: {e}", rules_dir.display())),
        };
        let mut files: Vec<_> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "md") && p.is_file())
            .collect();
        files.sort();
        let mut rules = Vec::new();
        for path in files {
            let text =
                std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            let name = path
                .strip_prefix(root)
                .unwrap_or(&path)
                .display()
                .to_string();
            let (front, body) = air_proto::config::split_front_matter(&text);
            let front: RuleFrontMatter = match front {
                Some((yaml, first_line)) => air_proto::config::parse_yaml(&path, yaml)
                    .map_err(|e| format!("{e} (front matter from line {first_line})"))?,
                None => RuleFrontMatter::default(),
            };
            for glob in &front.paths {
                globset::Glob::new(glob)
                    .map_err(|e| format!("{name}: `paths`: bad glob `{glob}`: {e}"))?;
            }
            rules.push(Rule {
                name,
                paths: front.paths,
                body: body.trim().to_string(),
                scoped: false,
            });
        }
        // The project's own instruction files for coding agents.
        rules.extend(instructions::load(root));
        Ok(rules)
    }
}

/// How a neighbour relates to the task.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Relation {
    /// The task depends on it.
    Dependency(DependencyType),
    /// It depends on the task.
    Dependent,
}

/// A task next to this one in the graph.
#[derive(Clone, Debug)]
pub struct Neighbour {
    pub spec: TaskSpec,
    pub status: TaskStatus,
    pub relation: Relation,
    /// Its accepted result, when it completed and the run still holds it.
    pub result: Option<WorkerResult>,
}

/// What to assemble a context for.
pub struct Request<'a> {
    pub role: AgentType,
    pub spec: &'a TaskSpec,
    pub notes: &'a [String],
    pub previous: Option<&'a WorkerResult>,
    pub neighbours: &'a [Neighbour],
    pub tools: &'a [ToolDefinition],
    pub model_id: &'a str,
    pub budget: BudgetPolicy,
    /// The diff of the changes under review (new files included), for a reviewer.
    pub diff: Option<&'a ReviewDiff>,
    /// The files the task's agents changed so far (airsd's record).
    pub task_changes: &'a [String],
    /// Where the agent works, as airsd saw it at dispatch.
    pub environment: Option<&'a Environment>,
    /// For the Main Agent: the conversation so far and the session's work.
    pub conversation: Option<&'a Conversation>,
    /// The skills installed, which the agent is shown by name and description.
    pub skills: &'a [air_proto::skills::SkillRef],
    /// The learned memories that concern the task, and those that did not fit.
    pub memory: Option<&'a crate::memory::Selection>,
}

pub mod compaction;
mod instructions;
pub mod mining;
mod talk;
use talk::{conversation_text, direct_text, session_tasks_text, turn_text};
pub use talk::{Conversation, Said, TaskLine, CONVERSATION_CHARS};

/// What a reviewer is shown of the changes under review.
#[derive(Clone, Debug, PartialEq)]
pub enum ReviewDiff {
    /// The diff against the last commit, new files included, and how many changed
    /// files it leaves out (outside the project, or not the reviewer's to read).
    Diff(String, usize),
    /// The task changed no file.
    NoChanges,
    /// Not a git repository: there is nothing to diff against.
    NoGit,
    /// git could not make it (the reason).
    Unavailable(String),
}

/// The working tree as git tells it.
#[derive(Clone, Debug, PartialEq)]
pub enum Worktree {
    NotGit,
    /// A git repository: its branch line and the files changed and not committed.
    Git {
        branch: Option<String>,
        dirty: Vec<String>,
    },
    /// A git repository whose status could not be read (too large, or git failed).
    Unknown,
    /// The task's own git worktree: the files changed and not committed yet.
    Task {
        dirty: Vec<String>,
    },
}

/// Where an agent works: the facts a person at the terminal would know.
#[derive(Clone, Debug)]
pub struct Environment {
    pub root: String,
    pub os: String,
    pub date: String,
    /// The working tree, as git tells it.
    pub tree: Worktree,
    /// The run's permission mode.
    pub mode: air_proto::plan::PermissionMode,
}

/// Files of the working tree named in the environment at most.
const DIRTY_SHOWN: usize = 20;

use air_proto::context::{DIFF_HEADING as DIFF, ENVIRONMENT_HEADING as ENVIRONMENT};

fn environment_text(e: &Environment) -> String {
    use air_proto::plan::PermissionMode;
    let mode = match e.mode {
        PermissionMode::Default => "default: risky actions are asked of a person",
        PermissionMode::AcceptEdits => {
            "accept_edits: edits within the task's paths are not asked; risky actions are"
        }
        PermissionMode::Plan => "plan: nothing may be written and no command changes anything",
        PermissionMode::BypassPermissions => {
            "bypass_permissions: only what always needs a person is asked"
        }
    };
    let mut s = format!(
        "{ENVIRONMENT}\n\n- Project root: {}\n- Platform: {}; commands run in bash\n- Date: {}\n- Permission mode: {mode}\n",
        e.root, e.os, e.date
    );
    match &e.tree {
        Worktree::NotGit => s.push_str("- Not a git repository\n"),
        Worktree::Unknown => s.push_str(
            "- A git repository whose status could not be read (too large); git_status may say more\n",
        ),
        Worktree::Git { .. } | Worktree::Task { .. } => {
            let (branch, dirty) = match &e.tree {
                Worktree::Git { branch, dirty } => (branch.as_deref(), dirty.as_slice()),
                Worktree::Task { dirty } => {
                    s.push_str("- The project root is this task's own git worktree: airsd commits your changes and merges them once the task is reviewed (do not commit or switch branches)\n");
                    (None, dirty.as_slice())
                }
                _ => (None, &[][..]),
            };
            if let Some(b) = branch {
                let _ = writeln!(s, "- Git branch: {b}");
            }
            if dirty.is_empty() {
                s.push_str("- Uncommitted changes: none\n");
            } else {
                let shown: Vec<String> =
                    dirty.iter().take(DIRTY_SHOWN).map(|f| format!("`{f}`")).collect();
                let _ = write!(s, "- Uncommitted changes: {}", shown.join(", "));
                if dirty.len() > DIRTY_SHOWN {
                    let _ = write!(s, " and {} more", dirty.len() - DIRTY_SHOWN);
                }
                s.push('\n');
            }
        }
    }
    s
}

/// `text` with its Markdown headings moved `by` levels down (at most to level 6),
/// outside code fences: a plan's `# Title` nested under a section's `##`.
fn nest_headings(text: &str, by: usize) -> String {
    // A fence: its character and length; a closing fence repeats the character at
    // least as often, with nothing after it.
    fn fence(line: &str) -> Option<(char, usize)> {
        let t = line.trim_start();
        let c = t.chars().next().filter(|c| *c == '`' || *c == '~')?;
        let n = t.chars().take_while(|x| *x == c).count();
        (n >= 3).then_some((c, n))
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut open: Option<(char, usize)> = None;
    for line in text.split_inclusive('\n') {
        match (open, fence(line)) {
            (Some((c, n)), Some((d, m))) if c == d && m >= n => {
                let rest = line.trim_start().trim_start_matches(c);
                if rest.trim().is_empty() {
                    open = None;
                }
            }
            (Some(_), _) => {}
            (None, Some(f)) => open = Some(f),
            (None, None) if line.starts_with('#') => {
                let level = line.chars().take_while(|c| *c == '#').count();
                if level <= 6 && line[level..].starts_with([' ', '\n']) {
                    out.push_str(&"#".repeat((level + by).min(6)));
                    out.push_str(&line[level..]);
                    continue;
                }
            }
            (None, None) => {}
        }
        out.push_str(line);
    }
    out
}

/// A section of the user message, in the order it appears.
struct Section {
    name: &'static str,
    text: String,
    /// Left out first when the budget is short (lower goes first); `None`: never.
    drop_rank: Option<u8>,
    refs: Vec<String>,
}

/// Builds an agent's starting context.
pub fn assemble(sources: &Sources, req: &Request<'_>) -> AssembledContext {
    let spec = req.spec;
    let direct = air_proto::conversation::is_direct(&spec.id);
    let planning = air_proto::planning::phase_of(spec);
    let consulted = req.role == AgentType::ArchitectureDesigner
        && spec.task_type == air_proto::task::TaskType::Execute
        && planning.is_none();
    let prompt = match planning {
        Some(_) => include_str!("../../resources/prompts/planning.md"),
        None => role_prompt(req.role, consulted, direct),
    };
    let mut omissions = Vec::new();
    let mut included = IncludedRefs::default();

    // Rules that apply to the task's files.
    let files: Vec<&str> = spec
        .scope
        .expected_files
        .iter()
        .flatten()
        .map(String::as_str)
        .collect();
    let mut rules: Vec<&Rule> = Vec::new();
    for rule in &sources.rules {
        if applies(rule, &files) {
            rules.push(rule);
        } else {
            omissions.push(Omission {
                reference: rule.name.clone(),
                reason: format!(
                    "the rule applies to {}, none of the task's expected files",
                    rule.paths.join(", ")
                ),
            });
        }
    }

    let mut sections = vec![Section {
        name: "task",
        text: if let Some(phase) = planning {
            let taken: Vec<String> = req
                .conversation
                .map(|c| c.tasks.iter().map(|t| t.id.clone()).collect())
                .unwrap_or_default();
            crate::planning::turn_text(spec, phase, &taken)
        } else if req.role == AgentType::Main {
            turn_text(spec)
        } else if direct {
            direct_text(spec)
        } else {
            task_text(spec, req.role)
        },
        drop_rank: None,
        refs: vec![spec.id.clone()],
    }];
    if let Some(c) = req.conversation {
        let heading = if req.role == AgentType::ArchitectureDesigner && planning.is_none() {
            "The phase's tasks"
        } else {
            "The session's tasks"
        };
        if let Some(text) = session_tasks_text(heading, &c.tasks) {
            sections.push(Section {
                name: "session",
                text,
                drop_rank: Some(0),
                refs: c.tasks.iter().map(|t| t.id.clone()).collect(),
            });
        }
        if let Some((text, ids, left_out)) = conversation_text(c) {
            if left_out > 0 {
                omissions.push(Omission {
                    reference: "conversation".into(),
                    reason: format!(
                        "{left_out} earlier message(s) left out: a turn is given the latest {CONVERSATION_CHARS} characters of the conversation"
                    ),
                });
            }
            included.messages = ids;
            sections.push(Section {
                name: "conversation",
                text,
                drop_rank: Some(1),
                refs: Vec::new(),
            });
        }
    }
    if let Some(e) = req.environment {
        sections.push(Section {
            name: "environment",
            text: environment_text(e),
            drop_rank: None,
            refs: Vec::new(),
        });
    }
    if let Some(profile) = &sources.project {
        sections.push(Section {
            name: "project",
            text: profile.context_text(),
            // Short and what every step needs: the last optional section to go.
            drop_rank: Some(9),
            refs: Vec::new(),
        });
    }
    if let Some(overview) = sources.overview.as_deref().filter(|o| !o.trim().is_empty()) {
        let mut text = String::from("## The plan\n\n");
        if let Some(title) = sources
            .plan_title
            .as_ref()
            .filter(|t| !overview.contains(t.as_str()))
        {
            let _ = writeln!(text, "{title}\n");
        }
        text.push_str(nest_headings(overview.trim(), 2).trim_end());
        text.push('\n');
        sections.push(Section {
            name: "plan",
            text,
            drop_rank: Some(2),
            refs: spec.context_refs.plan_ref.iter().cloned().collect(),
        });
    }
    if !req.neighbours.is_empty() {
        sections.push(Section {
            name: "neighbours",
            text: neighbours_text(req.neighbours),
            drop_rank: Some(0),
            refs: req.neighbours.iter().map(|n| n.spec.id.clone()).collect(),
        });
    }
    let parents: Vec<&Neighbour> = req
        .neighbours
        .iter()
        .filter(|n| {
            // A hard dependency has always completed; a soft one may or may not have
            // by now, and the context must not depend on that race.
            n.relation == Relation::Dependency(DependencyType::Hard) && n.result.is_some()
        })
        .collect();
    if !parents.is_empty() {
        sections.push(Section {
            name: "parents",
            text: parents_text(&parents),
            drop_rank: Some(1),
            refs: parents
                .iter()
                .map(|n| format!("result:{}", n.spec.id))
                .collect(),
        });
    }
    if !req.skills.is_empty() {
        let mut text = String::from(
            "## Skills\n\nInstructions for kinds of work, written down before; when one applies to what you do, load it with skill_load by its name and follow it:\n\n",
        );
        for sk in req.skills {
            let _ = writeln!(text, "- `{}`: {}", sk.name, sk.description);
        }
        sections.push(Section {
            name: "skills",
            text,
            drop_rank: Some(1),
            refs: req
                .skills
                .iter()
                .map(|sk| format!("skill:{}", sk.name))
                .collect(),
        });
    }
    if let Some(m) = req.memory.filter(|m| !m.chosen.is_empty()) {
        sections.push(Section {
            name: "memory",
            text: crate::memory::section_text(&m.chosen),
            drop_rank: Some(1),
            refs: m
                .chosen
                .iter()
                .map(|e| format!("memory:{}", e.id))
                .collect(),
        });
    }
    if !req.notes.is_empty() {
        let mut text = String::from(if planning.is_some() {
            "## The discussion so far\n\n"
        } else {
            "## From earlier attempts\n\n"
        });
        for n in req.notes {
            let _ = writeln!(text, "- {}", n.trim());
        }
        sections.push(Section {
            name: "notes",
            text,
            drop_rank: None,
            refs: Vec::new(),
        });
    }
    if let Some(prev) = req.previous {
        let heading = match req.role {
            AgentType::Debugger => "## The executor's result to investigate",
            AgentType::ArchitectureDesigner => "## The executor's latest result",
            _ => "## The executor's result under review",
        };
        // Its diff is given as the diff itself, where the role reads it.
        let mut shown = prev.clone();
        shown.diff_ref = None;
        sections.push(Section {
            name: "previous",
            text: format!(
                "{heading}\n\n```json\n{}\n```\n",
                serde_json::to_string_pretty(&shown).unwrap_or_default()
            ),
            drop_rank: None,
            refs: vec![format!("result:{}", prev.agent_id)],
        });
    }
    if !req.task_changes.is_empty() {
        let mut text = String::from(
            "## Files this task has changed so far\n\nBy earlier attempts or the debugger, as airsd recorded them; read them before you change them again.\n\n",
        );
        for f in req.task_changes {
            let _ = writeln!(text, "- `{f}`");
        }
        sections.push(Section {
            name: "changes",
            text,
            drop_rank: None,
            refs: Vec::new(),
        });
    }
    if let Some(diff) = req.diff {
        let left_out = match diff {
            ReviewDiff::Diff(_, n) if *n > 0 => format!(
                "{n} changed file(s) are not shown: outside the project, or not yours to read.\n"
            ),
            _ => String::new(),
        };
        let text = match diff {
            ReviewDiff::Diff(d, _) if !d.trim().is_empty() => format!(
                "{DIFF}\n\nAgainst the last commit, new files included; git_diff and fs_read show more. {left_out}\n```diff\n{}\n```\n",
                d.trim_end()
            ),
            ReviewDiff::Diff(_, n) if *n > 0 => format!("{DIFF}\n\n{left_out}"),
            ReviewDiff::Diff(..) => format!(
                "{DIFF}\n\nThe files the task changed show no difference from the last commit.\n"
            ),
            ReviewDiff::NoChanges => format!("{DIFF}\n\nThe task changed no file.\n"),
            ReviewDiff::NoGit => format!(
                "{DIFF}\n\nThe project is not a git repository, so there is no diff, and files that commands changed are not known: read the files the result names with fs_read, and look for others with fs_glob.\n"
            ),
            ReviewDiff::Unavailable(why) => format!(
                "{DIFF}\n\nThe diff could not be made ({why}): read the changed files with fs_read.\n"
            ),
        };
        sections.push(Section {
            name: "diff",
            text,
            drop_rank: Some(3),
            refs: Vec::new(),
        });
    }

    // The Main Agent, the direct lane and the designer planning read the conversation
    // before the message.
    if (req.role == AgentType::Main || direct || planning.is_some()) && !sections.is_empty() {
        let message = sections.remove(0);
        sections.push(message);
    }

    // The estimate, and what to leave out when it is over budget.
    let rules_text = rules_text(&rules);
    let tools_json = serde_json::to_string(req.tools).unwrap_or_default();
    let mut by_section = BTreeMap::new();
    by_section.insert("system".to_string(), estimate(SYSTEM));
    by_section.insert("role".to_string(), estimate(prompt));
    if !rules_text.is_empty() {
        by_section.insert("rules".to_string(), estimate(&rules_text));
    }
    by_section.insert("tools".to_string(), estimate(&tools_json));
    for s in &sections {
        by_section.insert(s.name.to_string(), estimate(&s.text));
    }
    let threshold = req.budget.threshold();
    let total = |m: &BTreeMap<String, u64>| m.values().sum::<u64>();
    let mut ranked: Vec<usize> = (0..sections.len())
        .filter(|&i| sections[i].drop_rank.is_some())
        .collect();
    ranked.sort_by_key(|&i| sections[i].drop_rank);
    let mut dropped = vec![false; sections.len()];
    for i in ranked {
        let now = total(&by_section);
        if now <= threshold {
            break;
        }
        let s = &sections[i];
        by_section.remove(s.name);
        dropped[i] = true;
        omissions.push(Omission {
            reference: s.name.to_string(),
            reason: format!(
                "left out to fit the budget: the context came to ~{now} tokens, over the {threshold} allowed for {}",
                req.model_id
            ),
        });
    }
    let estimated = total(&by_section);
    let compaction = if estimated > threshold {
        CompactionNeed {
            needed: true,
            reason: Some(format!(
                "the starting context is ~{estimated} tokens with every optional section left out, over the threshold of {threshold} ({}% of {}'s usable window)",
                (req.budget.target_usage_ratio * 100.0).round(),
                req.model_id
            )),
            requested_event_id: None,
        }
    } else {
        CompactionNeed::default()
    };

    // The user message.
    let mut user = String::new();
    for (s, gone) in sections.iter().zip(&dropped) {
        if *gone {
            continue;
        }
        if !user.is_empty() {
            user.push('\n');
        }
        user.push_str(&s.text);
        for r in &s.refs {
            if r.starts_with("result:") {
                included.summaries.push(r.clone());
            } else if let Some(id) = r.strip_prefix("memory:") {
                included.memories.push(id.to_string());
            } else if s.name == "plan" {
                included.artifacts.push(r.clone());
            } else if !included.tasks.contains(r) {
                included.tasks.push(r.clone());
            }
        }
    }
    if !omissions.is_empty() {
        user.push_str("\n## Left out of this context\n\n");
        for o in &omissions {
            let _ = writeln!(user, "- {}: {}", o.reference, o.reason);
        }
        user.push_str("Read what you need of it with the file tools.\n");
    }
    included.rules = rules.iter().map(|r| r.name.clone()).collect();
    // Memories that concerned the task but did not fit in the memory's share: named
    // for the record (an agent cannot read them with its file tools).
    for (id, title) in req.memory.map_or(&[][..], |m| &m.omitted) {
        omissions.push(Omission {
            reference: format!("memory:{id}"),
            reason: format!(
                "\"{title}\" concerns the task but the memory section holds at most {} characters",
                crate::memory::CONTEXT_CHARS
            ),
        });
    }

    let mut system = vec![SYSTEM.trim().to_string(), prompt.trim().to_string()];
    if !rules_text.is_empty() {
        system.push(rules_text);
    }
    if let Some(m) = air_proto::conversation::answered_message(spec) {
        included.messages.push(m.to_string());
    }
    let purpose = match req.role {
        _ if planning.is_some() => ContextPurpose::ArchitecturePlanning,
        AgentType::Main => ContextPurpose::UserResponse,
        _ if direct => ContextPurpose::UserResponse,
        // A milestone review and a consult about a task review what was done.
        AgentType::Reviewer | AgentType::ArchitectureDesigner => ContextPurpose::Review,
        AgentType::Debugger => ContextPurpose::Debug,
        AgentType::Compactor => ContextPurpose::Compaction,
        AgentType::ExperienceMiner => ContextPurpose::ExperienceMining,
        _ => ContextPurpose::TaskExecution,
    };
    AssembledContext {
        request_id: air_proto::ids::new_id(),
        system,
        messages: vec![Message::user(vec![ContentBlock::text(user)])],
        summary: ContextSummary {
            purpose: Some(purpose),
            included_refs: included,
            token_estimate: TokenEstimate {
                total: estimated,
                by_section,
                model_id: req.model_id.to_string(),
            },
            budget: req.budget,
            compaction,
            omissions,
        },
    }
}

fn applies(rule: &Rule, files: &[&str]) -> bool {
    if rule.paths.is_empty() || files.is_empty() {
        return !(rule.scoped && files.is_empty());
    }
    let mut set = globset::GlobSetBuilder::new();
    for p in &rule.paths {
        // Checked when the rules were read.
        if let Ok(g) = globset::Glob::new(p) {
            set.add(g);
        }
    }
    match set.build() {
        Ok(set) => files.iter().any(|f| set.is_match(f)),
        Err(_) => true,
    }
}

fn rules_text(rules: &[&Rule]) -> String {
    let mut text = String::new();
    for r in rules {
        if r.body.is_empty() {
            continue;
        }
        if text.is_empty() {
            text.push_str("# Project rules\n");
        }
        let _ = write!(text, "\n## {}\n\n{}\n", r.name, r.body);
    }
    text
}

fn task_text(t: &TaskSpec, role: AgentType) -> String {
    let mut s = format!(
        "# Task {}: {}\n\n{}\n",
        t.id,
        t.title,
        nest_headings(t.description.trim(), 1).trim_end()
    );
    if !t.acceptance_criteria.is_empty() {
        s.push_str("\nAcceptance criteria:\n");
        for c in &t.acceptance_criteria {
            let _ = writeln!(s, "- {c}");
        }
    }
    if let Some(cmds) = t.verification.commands.as_ref().filter(|c| !c.is_empty()) {
        s.push_str("\nVerification commands:\n");
        for c in cmds {
            let _ = writeln!(s, "- `{c}`");
        }
    }
    // What the evidence gate will ask of the result, so the agent knows before it
    // submits (the gate is air_proto::gate, which airsd applies).
    if t.task_type == air_proto::task::TaskType::Execute && role == AgentType::Executor {
        let kinds: Vec<&str> = air_proto::gate::task_evidence(t)
            .iter()
            .map(|k| k.as_str())
            .collect();
        s.push_str("\nEvidence this task needs to complete:");
        if air_proto::gate::judged_by_change(t) {
            s.push_str(" what its change needs (code: build_pass, test_pass; tests alone: build_pass, test_output; build or configuration files: build_pass; documentation: none)");
        } else if kinds.is_empty() {
            s.push_str(" none of its own");
        } else {
            let _ = write!(s, " {}", kinds.join(", "));
        }
        if t.verification.required {
            s.push_str("; and each verification command passed");
        }
        s.push_str(". airsd records evidence from the commands you run, never from what a result says; a change after a check makes it stale, so run checks after your last edit. C or C++ changes also need static_analysis.\n");
        if t.verification
            .commands
            .as_ref()
            .is_some_and(|c| !c.is_empty())
        {
            s.push_str("A verification command counts when what runs is that command: wrapping it (`2>&1 | tail -30`, `timeout 600 …`, `-v`, `cd DIR &&`) is fine; `|| true`, `; exit 0` or another target is not.\n");
        }
        if kinds.iter().any(|k| k.starts_with("test_")) {
            s.push_str("airsd counts the tests a run's output shows, so keep the runner's summary in view.\n");
        }
        if kinds.contains(&"reproduction") {
            s.push_str("Reproduction: airsd runs the task's check before you begin and tells you how it ended. A failure there, or of a test you add and run before you fix the code, then a pass of that same check after your last change, is the reproduction; the order you fix and test in is yours.\n");
        }
    }
    let scope = &t.scope;
    let lists = [
        (
            "Expected files (where the work is likely to go; a hint, not a limit)",
            &scope.expected_files,
        ),
        (
            "Allowed paths (writes anywhere else are refused)",
            &scope.allowed_paths,
        ),
        (
            "Denied paths (neither read nor written)",
            &scope.denied_paths,
        ),
        (
            "Preserved paths (must stay exactly as they are)",
            &scope.preserved_paths,
        ),
    ];
    for (label, list) in lists {
        if let Some(list) = list.as_ref().filter(|l| !l.is_empty()) {
            let _ = writeln!(s, "\n{label}: {}", quoted(list));
        }
    }
    let mut frozen = false;
    for (label, list) in [
        ("Interfaces this task provides", &t.contracts.provides),
        ("Interfaces this task relies on", &t.contracts.requires),
    ] {
        if let Some(list) = list.as_ref().filter(|l| !l.is_empty()) {
            let _ = writeln!(s, "\n{label}:");
            for c in list {
                frozen |= c.stability == air_proto::task::Stability::Frozen;
                let _ = writeln!(
                    s,
                    "- {} `{}` of {} ({})",
                    c.kind.as_str(),
                    c.spec,
                    c.module,
                    c.stability.as_str()
                );
            }
        }
    }
    if frozen {
        s.push_str("A frozen interface must stay exactly as stated: if the task cannot be done without changing it, report `blocked` naming it.\n");
    }
    if role == AgentType::Executor || role == AgentType::Debugger {
        let turns = match t.constraints.max_turns {
            0 => air_proto::plan::DEFAULT_MAX_TURNS,
            n => n,
        };
        let _ = writeln!(
            s,
            "\nTurn budget: {turns} model calls; you will be told when few are left."
        );
    }
    s
}

fn quoted(list: &[String]) -> String {
    list.iter()
        .map(|p| format!("`{p}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn neighbours_text(neighbours: &[Neighbour]) -> String {
    let mut s = String::from("## Neighbouring tasks\n\n");
    for n in neighbours {
        // Only a hard dependency's state is settled (it completed); the others'
        // change as the run goes, so they are not shown.
        let relation = match n.relation {
            Relation::Dependency(DependencyType::Hard) => {
                format!("{}; this task depends on it", n.status.as_str())
            }
            Relation::Dependency(DependencyType::Conflict) => {
                "it must not run at the same time as this task".into()
            }
            Relation::Dependency(_) => "this task should run after it".into(),
            Relation::Dependent => "it depends on this task".into(),
        };
        let _ = writeln!(s, "- {} \"{}\" ({relation})", n.spec.id, n.spec.title);
        if let Some(files) = n
            .spec
            .scope
            .expected_files
            .as_ref()
            .filter(|f| !f.is_empty())
        {
            let _ = writeln!(s, "  files: {}", quoted(files));
        }
    }
    s
}

fn parents_text(parents: &[&Neighbour]) -> String {
    let mut s = String::from("## Results of the tasks this one builds on\n");
    for n in parents {
        let Some(r) = &n.result else { continue };
        let _ = write!(
            s,
            "\n### {}: {}\n\n{}\n",
            n.spec.id,
            n.spec.title,
            r.summary.trim()
        );
        if !r.changed_files.is_empty() {
            let _ = writeln!(s, "Changed files: {}", quoted(&r.changed_files));
        }
    }
    s
}

/// The context of an agent airsd runs beside the scheduler: its system layers and
/// one user message, each named section estimated.
pub(crate) fn side_context(
    system: Vec<String>,
    sections: &[(&str, &str)],
    purpose: ContextPurpose,
    budget: BudgetPolicy,
    model_id: &str,
) -> AssembledContext {
    let by_section: BTreeMap<String, u64> = sections
        .iter()
        .map(|(name, text)| (name.to_string(), estimate(text)))
        .collect();
    let text = sections.last().map_or("", |(_, t)| *t).to_string();
    AssembledContext {
        request_id: air_proto::ids::new_id(),
        system,
        messages: vec![Message::user(vec![ContentBlock::text(text)])],
        summary: ContextSummary {
            purpose: Some(purpose),
            token_estimate: TokenEstimate {
                total: by_section.values().sum(),
                by_section,
                model_id: model_id.to_string(),
            },
            budget,
            ..ContextSummary::default()
        },
    }
}

#[cfg(test)]
mod tests;
