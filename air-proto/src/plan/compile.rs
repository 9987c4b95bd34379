//! The plan compiler: Markdown (with YAML front matter) to a [`TaskGraph`], reporting
//! every error in one pass with its line and field.

use std::collections::HashMap;
use std::time::Duration;

use super::blocks::{blocks, plain, Block, BlockKind, Inline, Item, Lines};
use super::graph::{cycle_path, layer};
use super::{
    Budgets, Compiled, ConstraintDefaults, OnAsk, PermissionMode, Phase, PlanDiagnostic,
    PlanErrors, PlanSettings, TaskGraph, DEFAULT_HARD_TIMEOUT_MS, DEFAULT_MAX_TURNS,
    DEFAULT_RETRY_BUDGET, DEFAULT_SOFT_TIMEOUT_MS, TASK_GRAPH_VERSION,
};
use crate::task::{
    Constraints, ContextRefs, ContractKind, Contracts, DependencySource, DependencyType,
    EvidenceType, InterfaceContract, ModelPolicy, Stability, TaskCategory, TaskDependency,
    TaskScope, TaskSpec, TaskType, Verification,
};

/// The fields of a task's field list, with what they take (for errors and the docs).
pub const FIELDS: &[(&str, &str)] = &[
    ("type", "execute (the default), review, debug, compact or mine_experience"),
    ("category", "the evidence category: logic, build, gui, network, deploy, config, docs, test, refactor, bugfix, or a cpp_ one"),
    ("phase", "the phase id, when not given by a `Phase` heading"),
    ("write_area", "a name; tasks with the same write area never run at once"),
    ("depends_on", "task ids this task needs finished first, each with an optional (reason)"),
    ("soft_depends_on", "task ids to prefer running first"),
    ("conflicts_with", "task ids never to run at the same time as this one"),
    ("serialize_with", "task ids to run one at a time with this one, in plan order"),
    ("expected_files", "paths or globs the task is expected to change"),
    ("allowed_paths", "globs the task may write; nothing else"),
    ("denied_paths", "globs the task must not touch"),
    ("preserved_paths", "globs that must be left exactly as they are"),
    ("verify", "a command that verifies the task (more in a `Verify:` section)"),
    ("verification_required", "true or false: passed verification results are needed to complete (default: true when there are commands)"),
    ("fallback_allowed", "true or false: other checks may stand in for a command that cannot run"),
    ("evidence", "evidence types required, replacing the category's; `no-screenshot` style entries opt out"),
    ("max_turns", "a number of LLM turns"),
    ("soft_timeout", "a duration (`10m`): the agent is warned"),
    ("hard_timeout", "a duration (`30m`): the agent is killed"),
    ("retry_budget", "how many retries after failures"),
    ("model_policy", "scheduler_forced or agent_select"),
    ("model", "a model id"),
];

/// The keys of the front matter.
pub const FRONT_MATTER_KEYS: &[(&str, &str)] = &[
    ("title", "the plan's title (else its first `#` heading)"),
    ("concurrency", "most agents running at once"),
    (
        "permission_mode",
        "default, accept_edits, plan or bypass_permissions",
    ),
    (
        "on_ask",
        "deny, fail or queue: what a permission request does with no human to ask",
    ),
    ("max_turns", "default for tasks"),
    ("soft_timeout", "default for tasks"),
    ("hard_timeout", "default for tasks"),
    ("retry_budget", "default for tasks"),
    ("model_policy", "default for tasks"),
    ("model", "default for tasks"),
    ("max_cost", "budget in US dollars for the whole run"),
    ("max_tokens", "budget in tokens for the whole run"),
    ("max_time", "budget in wall time for the whole run (`2h`)"),
];

/// Sections of a task introduced by a label (`Acceptance criteria:`) or a sub-heading.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Section {
    Acceptance,
    Verify,
    Provides,
    Requires,
}

impl Section {
    fn parse(label: &str) -> Option<Self> {
        match normalize(label.trim().trim_end_matches(':').trim()).as_str() {
            "acceptance" | "acceptance_criteria" => Some(Self::Acceptance),
            "verify" | "verification" | "verification_commands" => Some(Self::Verify),
            "provides" => Some(Self::Provides),
            "requires" => Some(Self::Requires),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Acceptance => "acceptance_criteria",
            Self::Verify => "verification.commands",
            Self::Provides => "contracts.provides",
            Self::Requires => "contracts.requires",
        }
    }
}

fn normalize(key: &str) -> String {
    key.trim()
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c == ' ' || c == '-' { '_' } else { c })
        .collect()
}

/// Accepted spellings of field names.
fn canonical_field(key: &str) -> Option<&'static str> {
    let key = normalize(key);
    let alias = match key.as_str() {
        "depends" | "after" => "depends_on",
        "soft_depends" | "prefer_after" => "soft_depends_on",
        "conflicts" | "conflict" | "conflict_with" => "conflicts_with",
        "serialize" | "serialise_with" | "serialized_with" => "serialize_with",
        "model_id" => "model",
        "evidence_types" => "evidence",
        "required" => "verification_required",
        other => other,
    };
    FIELDS
        .iter()
        .map(|(name, _)| *name)
        .find(|name| *name == alias)
}

fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 64
        && id.starts_with(|c: char| c.is_ascii_alphanumeric())
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
}

/// `Task T1: Title [no-screenshot]` → (id, title, opt-outs). `None` when the heading is
/// not a task heading; `Some(Err)` when it starts like one but is malformed.
/// A task heading's id, title and `[no-…]` markers.
type TaskHeading = (String, String, Vec<String>);

fn task_heading(text: &str) -> Option<Result<TaskHeading, String>> {
    let rest = strip_keyword(text, "task")?;
    let Some((id, title)) = rest.split_once(':') else {
        return Some(Err(format!(
            "a task heading reads `Task <id>: <title>`, not `{text}`"
        )));
    };
    let id = id.trim();
    if !valid_id(id) {
        return Some(Err(format!(
            "task id `{id}` must be 1–64 letters, digits, `_`, `-` or `.`, starting with a letter or digit"
        )));
    }
    let (title, markers) = strip_markers(title.trim());
    if title.is_empty() {
        return Some(Err(format!("task {id} has no title after the colon")));
    }
    Some(Ok((id.to_string(), title, markers)))
}

/// `Phase P1: Title` / `Milestone M1` → (id, title).
fn phase_heading(text: &str) -> Option<Result<(String, Option<String>), String>> {
    let rest = strip_keyword(text, "phase").or_else(|| strip_keyword(text, "milestone"))?;
    let (id, title) = match rest.split_once(':') {
        Some((id, title)) => (id.trim(), Some(title.trim().to_string())),
        None => (rest.trim(), None),
    };
    if !valid_id(id) {
        return Some(Err(format!(
            "a phase heading reads `Phase <id>: <title>`; `{id}` is not a valid id"
        )));
    }
    Some(Ok((id.to_string(), title.filter(|t| !t.is_empty()))))
}

/// The rest of `text` after a leading keyword and a space (case-insensitive).
fn strip_keyword<'a>(text: &'a str, keyword: &str) -> Option<&'a str> {
    let head = text.get(..keyword.len())?;
    let rest = text.get(keyword.len()..)?;
    (head.eq_ignore_ascii_case(keyword) && rest.starts_with([' ', '\t'])).then(|| rest.trim_start())
}

/// Removes trailing `[no-x]` markers from a heading.
fn strip_markers(text: &str) -> (String, Vec<String>) {
    let mut markers = Vec::new();
    let mut title = text.trim().to_string();
    while title.ends_with(']') {
        let Some(open) = title.rfind('[') else { break };
        let inner = title[open + 1..title.len() - 1].trim().to_string();
        if !(inner.starts_with("no-") || inner.starts_with("no_")) {
            break;
        }
        markers.push(inner);
        title = title[..open].trim_end().to_string();
    }
    markers.reverse();
    (title, markers)
}

/// `no-screenshot` / `no_static-analysis` → the evidence type.
fn opt_out(marker: &str) -> Result<EvidenceType, String> {
    let name = normalize(&marker[3..]);
    EvidenceType::parse(&name).ok_or_else(|| {
        format!(
            "`{marker}` opts out of an unknown evidence type; known: {}",
            names(EvidenceType::ALL.iter().map(|e| e.as_str()))
        )
    })
}

fn names<'a>(list: impl Iterator<Item = &'a str>) -> String {
    list.collect::<Vec<_>>().join(", ")
}

fn parse_enum<T: Copy>(
    value: &str,
    all: &[T],
    as_str: fn(T) -> &'static str,
    parse: fn(&str) -> Option<T>,
) -> Result<T, String> {
    parse(&normalize(value)).ok_or_else(|| {
        format!(
            "`{value}` is not one of {}",
            names(all.iter().map(|v| as_str(*v)))
        )
    })
}

fn parse_u32(value: &str) -> Result<u32, String> {
    value
        .trim()
        .parse::<u32>()
        .map_err(|_| format!("`{value}` is not a whole number"))
}

fn parse_bool(value: &str) -> Result<bool, String> {
    match normalize(value).as_str() {
        "true" | "yes" | "on" => Ok(true),
        "false" | "no" | "off" => Ok(false),
        _ => Err(format!("`{value}` is not true or false")),
    }
}

fn parse_duration_ms(value: &str) -> Result<u64, String> {
    let trimmed = value.trim();
    if trimmed.chars().all(|c| c.is_ascii_digit()) {
        return Err(format!(
            "`{value}` needs a unit, e.g. `{trimmed}s` or `{trimmed}m`"
        ));
    }
    let duration: Duration = humantime::parse_duration(trimmed)
        .map_err(|e| format!("`{value}` is not a duration like `90s`, `10m` or `1h 30m`: {e}"))?;
    let ms = u64::try_from(duration.as_millis()).map_err(|_| format!("`{value}` is too long"))?;
    if ms == 0 {
        return Err("a timeout of zero would end every attempt at once".into());
    }
    Ok(ms)
}

/// A dependency list: `T1 (reason), T2`. Commas inside parentheses belong to the
/// reason.
fn parse_dependency_list(text: &str) -> Result<Vec<(String, Option<String>)>, String> {
    let mut parts = Vec::new();
    let mut depth = 0i32;
    let mut current = String::new();
    for c in text.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    parts.push(current);
    let mut out = Vec::new();
    for part in parts {
        let part = part.trim();
        if part.is_empty() {
            continue;
        }
        let (id, reason) = match part.split_once('(') {
            Some((id, reason)) => {
                let reason = reason.trim();
                let Some(reason) = reason.strip_suffix(')') else {
                    return Err(format!("`{part}`: the reason needs a closing `)`"));
                };
                (id.trim(), Some(reason.trim().to_string()))
            }
            None => (part, None),
        };
        if !valid_id(id) {
            return Err(format!("`{id}` is not a task id"));
        }
        out.push((id.to_string(), reason.filter(|r| !r.is_empty())));
    }
    Ok(out)
}

/// Comma-separated values; code spans stay whole.
fn tokens(inlines: &[Inline]) -> Vec<String> {
    let mut out = Vec::new();
    for inline in inlines {
        match inline {
            Inline::Code(code) => out.push(code.trim().to_string()),
            Inline::Text(text) => out.extend(
                text.split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_string),
            ),
        }
    }
    out.retain(|s| !s.is_empty());
    out
}

/// Splits a field item into its key and the inlines of its value.
fn split_field(inlines: &[Inline]) -> Option<(String, Vec<Inline>)> {
    let Some(Inline::Text(first)) = inlines.first() else {
        return None;
    };
    let (key, rest) = first.split_once(':')?;
    if key.trim().is_empty()
        || !key
            .trim()
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | ' '))
    {
        return None;
    }
    let mut value = Vec::new();
    let rest = rest.trim_start();
    if !rest.is_empty() {
        value.push(Inline::Text(rest.to_string()));
    }
    value.extend(inlines[1..].iter().cloned());
    Some((key.trim().to_string(), value))
}

struct DepEntry {
    id: String,
    kind: Option<DependencyType>,
    reason: Option<String>,
    line: u32,
    field: &'static str,
}

struct TaskBuilder {
    id: String,
    title: String,
    level: u8,
    line: u32,
    phase: Option<String>,
    markers: Vec<(String, u32)>,
    fields_seen: bool,
    blocks_seen: usize,
    description: Vec<std::ops::Range<usize>>,
    task_type: TaskType,
    category: Option<TaskCategory>,
    write_area: Option<String>,
    deps: Vec<DepEntry>,
    expected_files: Option<Vec<String>>,
    allowed_paths: Option<Vec<String>>,
    denied_paths: Option<Vec<String>>,
    preserved_paths: Option<Vec<String>>,
    commands: Vec<String>,
    verification_required: Option<bool>,
    fallback_allowed: bool,
    evidence: Option<Vec<EvidenceType>>,
    max_turns: Option<u32>,
    soft_timeout_ms: Option<(u64, u32)>,
    hard_timeout_ms: Option<(u64, u32)>,
    retry_budget: Option<u32>,
    model_policy: Option<ModelPolicy>,
    model_id: Option<String>,
    acceptance: Vec<String>,
    provides: Vec<InterfaceContract>,
    requires: Vec<InterfaceContract>,
}

impl TaskBuilder {
    fn new(id: String, title: String, level: u8, line: u32, phase: Option<String>) -> Self {
        Self {
            id,
            title,
            level,
            line,
            phase,
            markers: Vec::new(),
            fields_seen: false,
            blocks_seen: 0,
            description: Vec::new(),
            task_type: TaskType::Execute,
            category: None,
            write_area: None,
            deps: Vec::new(),
            expected_files: None,
            allowed_paths: None,
            denied_paths: None,
            preserved_paths: None,
            commands: Vec::new(),
            verification_required: None,
            fallback_allowed: false,
            evidence: None,
            max_turns: None,
            soft_timeout_ms: None,
            hard_timeout_ms: None,
            retry_budget: None,
            model_policy: None,
            model_id: None,
            acceptance: Vec::new(),
            provides: Vec::new(),
            requires: Vec::new(),
        }
    }
}

struct Compiler<'a> {
    file: &'a str,
    text: &'a str,
    lines: Lines,
    errors: Vec<PlanDiagnostic>,
    warnings: Vec<PlanDiagnostic>,
    title: Option<String>,
    settings: PlanSettings,
    phases: Vec<Phase>,
    phase: Option<String>,
    overview: Vec<std::ops::Range<usize>>,
    tasks: Vec<TaskBuilder>,
    current: Option<TaskBuilder>,
    section: Option<(Section, u32)>,
}

/// Compiles a plan. `file` names the plan in errors and in `context_refs.plan_ref`.
pub fn compile(file: &str, text: &str) -> Result<Compiled, PlanErrors> {
    let mut c = Compiler {
        file,
        text,
        lines: Lines::new(text),
        errors: Vec::new(),
        warnings: Vec::new(),
        title: None,
        settings: PlanSettings::default(),
        phases: Vec::new(),
        phase: None,
        overview: Vec::new(),
        tasks: Vec::new(),
        current: None,
        section: None,
    };
    for (index, block) in blocks(text).into_iter().enumerate() {
        c.block(index, block);
    }
    c.finish_task();
    c.build()
}

impl Compiler<'_> {
    fn line(&self, offset: usize) -> u32 {
        self.lines.line(offset)
    }

    fn error(&mut self, line: u32, field: Option<&str>, message: impl Into<String>) {
        let mut d = PlanDiagnostic::new(line, field, message);
        d.task_id = self.current.as_ref().map(|t| t.id.clone());
        self.errors.push(d);
    }

    fn block(&mut self, index: usize, block: Block) {
        let line = self.line(block.range.start);
        match &block.kind {
            BlockKind::FrontMatter(yaml) => {
                if index == 0 {
                    self.front_matter(yaml, line + 1);
                }
                return;
            }
            BlockKind::Heading(level, inlines) => {
                self.heading(*level, &plain(inlines), &block);
                return;
            }
            _ => {}
        }
        let Some(mut task) = self.current.take() else {
            if let Some((section, line)) = self.section.take() {
                self.error(
                    line,
                    Some(section.name()),
                    "this section is outside any task",
                );
            }
            self.overview.push(block.range.clone());
            return;
        };
        let first = task.blocks_seen == 0;
        task.blocks_seen += 1;
        if let Some((section, label_line)) = self.section.take() {
            self.current = Some(task);
            self.section_content(section, label_line, &block);
            return;
        }
        match &block.kind {
            BlockKind::Paragraph(inlines) => {
                let text = plain(inlines);
                if text.trim_end().ends_with(':') {
                    if let Some(section) = Section::parse(&text) {
                        self.current = Some(task);
                        self.section = Some((section, line));
                        return;
                    }
                }
                task.description.push(block.range.clone());
            }
            BlockKind::List(items)
                if first
                    && !task.fields_seen
                    && items
                        .first()
                        .is_some_and(|i| split_field(&i.inlines).is_some()) =>
            {
                task.fields_seen = true;
                self.current = Some(task);
                for item in items {
                    self.field(item);
                }
                return;
            }
            _ => task.description.push(block.range.clone()),
        }
        self.current = Some(task);
    }

    fn heading(&mut self, level: u8, text: &str, block: &Block) {
        let line = self.line(block.range.start);
        if let Some((section, label_line)) = self.section {
            // A section heading directly followed by another heading is empty.
            if self.current.is_some() {
                self.section = None;
                self.error(
                    label_line,
                    Some(section.name()),
                    "the section is empty: put a list (or for commands a code block) under it",
                );
            }
        }
        if let Some(parsed) = task_heading(text) {
            self.finish_task();
            match parsed {
                Ok((id, title, markers)) => {
                    let mut task = TaskBuilder::new(id, title, level, line, self.phase.clone());
                    task.markers = markers.into_iter().map(|m| (m, line)).collect();
                    self.current = Some(task);
                }
                Err(message) => self.error(line, Some("heading"), message),
            }
            return;
        }
        if let Some(parsed) = phase_heading(text) {
            self.finish_task();
            match parsed {
                Ok((id, title)) => {
                    if self.phases.iter().any(|p| p.id == id) {
                        self.error(
                            line,
                            Some("phase"),
                            format!("phase `{id}` is declared twice"),
                        );
                    } else {
                        self.phases.push(Phase {
                            id: id.clone(),
                            title,
                        });
                    }
                    self.phase = Some(id);
                }
                Err(message) => self.error(line, Some("phase"), message),
            }
            return;
        }
        if let Some(task) = self.current.as_mut() {
            if level > task.level {
                task.blocks_seen += 1;
                if let Some(section) = Section::parse(text) {
                    self.section = Some((section, line));
                } else {
                    task.description.push(block.range.clone());
                }
                return;
            }
        }
        self.finish_task();
        if level == 1 && self.title.is_none() {
            self.title = Some(text.to_string());
        } else {
            self.overview.push(block.range.clone());
        }
    }

    fn section_content(&mut self, section: Section, label_line: u32, block: &Block) {
        let line = self.line(block.range.start);
        let items: Vec<(Vec<Inline>, u32)> = match &block.kind {
            BlockKind::List(items) => items
                .iter()
                .map(|i| (i.inlines.clone(), self.line(i.range.start)))
                .collect(),
            BlockKind::Paragraph(inlines) => vec![(inlines.clone(), line)],
            BlockKind::Code(code) if section == Section::Verify => {
                let commands = shell_lines(code);
                if let Some(task) = self.current.as_mut() {
                    task.commands.extend(commands);
                }
                return;
            }
            _ => {
                self.error(
                    label_line,
                    Some(section.name()),
                    "expected a list (or for commands a code block) under this label",
                );
                return;
            }
        };
        for (inlines, line) in items {
            match section {
                Section::Acceptance => {
                    let text = plain(&inlines).trim().to_string();
                    if let Some(task) = self.current.as_mut().filter(|_| !text.is_empty()) {
                        task.acceptance.push(text);
                    }
                }
                Section::Verify => {
                    let commands = commands_of(&inlines);
                    if let Some(task) = self.current.as_mut() {
                        task.commands.extend(commands);
                    }
                }
                Section::Provides | Section::Requires => match contract(&inlines) {
                    Ok(contract) => {
                        if let Some(task) = self.current.as_mut() {
                            match section {
                                Section::Provides => task.provides.push(contract),
                                _ => task.requires.push(contract),
                            }
                        }
                    }
                    Err(message) => self.error(line, Some(section.name()), message),
                },
            }
        }
    }

    fn field(&mut self, item: &Item) {
        let line = self.line(item.range.start);
        let Some((key, value)) = split_field(&item.inlines) else {
            self.error(
                line,
                None,
                format!(
                    "expected `field: value` in the task's field list, found `{}`",
                    plain(&item.inlines)
                ),
            );
            return;
        };
        let Some(field) = canonical_field(&key) else {
            self.error(
                line,
                Some(&key),
                format!(
                    "unknown field `{key}`; the fields are {}",
                    names(FIELDS.iter().map(|(n, _)| *n))
                ),
            );
            return;
        };
        let text = plain(&value).trim().to_string();
        if text.is_empty() {
            self.error(line, Some(field), "the value is empty");
            return;
        }
        if let Err(message) = self.set_field(field, &value, &text, line) {
            self.error(line, Some(field), message);
        }
    }

    fn set_field(
        &mut self,
        field: &'static str,
        value: &[Inline],
        text: &str,
        line: u32,
    ) -> Result<(), String> {
        let Some(task) = self.current.as_mut() else {
            return Ok(());
        };
        match field {
            "type" => {
                task.task_type = parse_enum(text, TaskType::ALL, TaskType::as_str, TaskType::parse)?
            }
            "category" => {
                task.category = Some(parse_enum(
                    text,
                    TaskCategory::ALL,
                    TaskCategory::as_str,
                    TaskCategory::parse,
                )?)
            }
            "phase" => {
                if !valid_id(text) {
                    return Err(format!("`{text}` is not a valid phase id"));
                }
                task.phase = Some(text.to_string());
            }
            "write_area" => task.write_area = Some(text.to_string()),
            "depends_on" | "soft_depends_on" | "conflicts_with" | "serialize_with" => {
                let kind = match field {
                    "depends_on" => DependencyType::Hard,
                    "soft_depends_on" => DependencyType::Soft,
                    "conflicts_with" => DependencyType::Conflict,
                    _ => DependencyType::Serialization,
                };
                for (id, reason) in parse_dependency_list(text)? {
                    task.deps.push(DepEntry {
                        id,
                        kind: Some(kind),
                        reason,
                        line,
                        field,
                    });
                }
            }
            "expected_files" | "allowed_paths" | "denied_paths" | "preserved_paths" => {
                let globs = tokens(value);
                let mut bad = Vec::new();
                for glob in &globs {
                    if let Err(e) = globset::Glob::new(glob) {
                        bad.push(format!("bad glob `{glob}`: {}", e.kind()));
                    }
                }
                if !bad.is_empty() {
                    return Err(bad.join("; "));
                }
                let slot = match field {
                    "expected_files" => &mut task.expected_files,
                    "allowed_paths" => &mut task.allowed_paths,
                    "denied_paths" => &mut task.denied_paths,
                    _ => &mut task.preserved_paths,
                };
                slot.get_or_insert_with(Vec::new).extend(globs);
            }
            "verify" => task.commands.extend(commands_of(value)),
            "verification_required" => task.verification_required = Some(parse_bool(text)?),
            "fallback_allowed" => task.fallback_allowed = parse_bool(text)?,
            "evidence" => {
                let mut required = Vec::new();
                for token in tokens(value) {
                    let token = token.trim_matches(|c| c == '[' || c == ']').to_string();
                    if token.starts_with("no-") || token.starts_with("no_") {
                        task.markers.push((token, line));
                    } else if normalize(&token) == "none" {
                        // An explicit empty list.
                    } else {
                        required.push(parse_enum(
                            &token,
                            EvidenceType::ALL,
                            EvidenceType::as_str,
                            EvidenceType::parse,
                        )?);
                    }
                }
                if !required.is_empty() || normalize(text) == "none" {
                    task.evidence = Some(required);
                }
            }
            "max_turns" => {
                let n = parse_u32(text)?;
                if n == 0 {
                    return Err("max_turns must be at least 1".into());
                }
                task.max_turns = Some(n);
            }
            "soft_timeout" => task.soft_timeout_ms = Some((parse_duration_ms(text)?, line)),
            "hard_timeout" => task.hard_timeout_ms = Some((parse_duration_ms(text)?, line)),
            "retry_budget" => task.retry_budget = Some(parse_u32(text)?),
            "model_policy" => {
                task.model_policy = Some(parse_enum(
                    text,
                    ModelPolicy::ALL,
                    ModelPolicy::as_str,
                    ModelPolicy::parse,
                )?)
            }
            "model" => task.model_id = Some(text.to_string()),
            _ => {}
        }
        Ok(())
    }

    fn front_matter(&mut self, yaml: &str, first_line: u32) {
        let value: yaml_serde::Value = match yaml_serde::from_str(yaml) {
            Ok(v) => v,
            Err(e) => {
                let line = e
                    .location()
                    .map(|l| first_line + u32::try_from(l.line()).unwrap_or(1) - 1)
                    .unwrap_or(first_line);
                self.error(line, Some("front matter"), format!("not valid YAML: {e}"));
                return;
            }
        };
        let mapping = match value {
            yaml_serde::Value::Mapping(m) => m,
            yaml_serde::Value::Null => return,
            _ => {
                self.error(
                    first_line,
                    Some("front matter"),
                    "the front matter must be `key: value` lines",
                );
                return;
            }
        };
        let key_line = |key: &str| -> u32 {
            yaml.lines()
                .position(|l| {
                    l.strip_prefix(key)
                        .is_some_and(|r| r.trim_start().starts_with(':'))
                })
                .map(|i| first_line + u32::try_from(i).unwrap_or(0))
                .unwrap_or(first_line)
        };
        let mut defaults = ConstraintDefaults::default();
        let mut budgets = Budgets::default();
        for (key, value) in mapping {
            let Some(key) = key.as_str().map(str::to_string) else {
                self.error(first_line, Some("front matter"), "keys must be strings");
                continue;
            };
            let line = key_line(&key);
            let text = match &value {
                yaml_serde::Value::String(s) => s.clone(),
                yaml_serde::Value::Number(n) => n.to_string(),
                yaml_serde::Value::Bool(b) => b.to_string(),
                _ => {
                    self.error(line, Some(&key), "expected a single value");
                    continue;
                }
            };
            let result: Result<(), String> = (|| {
                match key.as_str() {
                    "title" => self.title = Some(text.clone()),
                    "concurrency" => {
                        let n = parse_u32(&text)?;
                        if n == 0 {
                            return Err("concurrency must be at least 1".into());
                        }
                        self.settings.concurrency = Some(n);
                    }
                    "permission_mode" => {
                        self.settings.permission_mode = Some(parse_enum(
                            &text,
                            PermissionMode::ALL,
                            PermissionMode::as_str,
                            PermissionMode::parse,
                        )?)
                    }
                    "on_ask" => {
                        self.settings.on_ask =
                            Some(parse_enum(&text, OnAsk::ALL, OnAsk::as_str, OnAsk::parse)?)
                    }
                    "max_turns" => defaults.max_turns = Some(parse_u32(&text)?),
                    "soft_timeout" => defaults.soft_timeout_ms = Some(parse_duration_ms(&text)?),
                    "hard_timeout" => defaults.hard_timeout_ms = Some(parse_duration_ms(&text)?),
                    "retry_budget" => defaults.retry_budget = Some(parse_u32(&text)?),
                    "model_policy" => {
                        defaults.model_policy = Some(parse_enum(
                            &text,
                            ModelPolicy::ALL,
                            ModelPolicy::as_str,
                            ModelPolicy::parse,
                        )?)
                    }
                    "model" => defaults.model_id = Some(text.clone()),
                    "max_cost" => {
                        let cost: f64 = text
                            .trim()
                            .trim_start_matches('$')
                            .parse()
                            .map_err(|_| format!("`{text}` is not an amount in dollars"))?;
                        if !(cost.is_finite() && cost > 0.0) {
                            return Err("max_cost must be more than zero".into());
                        }
                        budgets.max_cost = Some(cost);
                    }
                    "max_tokens" => {
                        budgets.max_tokens = Some(
                            text.trim()
                                .replace('_', "")
                                .parse()
                                .map_err(|_| format!("`{text}` is not a whole number"))?,
                        )
                    }
                    "max_time" => budgets.max_time_ms = Some(parse_duration_ms(&text)?),
                    _ => {
                        return Err(format!(
                            "unknown front matter key `{key}`; the keys are {}",
                            names(FRONT_MATTER_KEYS.iter().map(|(k, _)| *k))
                        ));
                    }
                }
                Ok(())
            })();
            if let Err(message) = result {
                self.error(line, Some(&key), message);
            }
        }
        if let (Some(soft), Some(hard)) = (defaults.soft_timeout_ms, defaults.hard_timeout_ms) {
            if soft > hard {
                self.error(
                    key_line("soft_timeout"),
                    Some("soft_timeout"),
                    "the soft timeout is longer than the hard timeout",
                );
            }
        }
        self.settings.defaults = defaults;
        self.settings.budgets = budgets;
    }

    fn finish_task(&mut self) {
        if let Some((section, line)) = self.section.take() {
            if self.current.is_some() {
                self.error(
                    line,
                    Some(section.name()),
                    "the section is empty: put a list (or for commands a code block) under it",
                );
            }
        }
        if let Some(task) = self.current.take() {
            self.tasks.push(task);
        }
    }

    fn source(&self, ranges: &[std::ops::Range<usize>]) -> String {
        ranges
            .iter()
            .filter_map(|r| self.text.get(r.clone()))
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join("\n\n")
    }

    fn build(mut self) -> Result<Compiled, PlanErrors> {
        if self.tasks.is_empty() {
            self.errors.push(PlanDiagnostic::new(
                1,
                None,
                "the plan has no tasks: give each task a heading like `## Task T1: Add the parser`",
            ));
        }
        let mut first_line: HashMap<String, u32> = HashMap::new();
        let builders = std::mem::take(&mut self.tasks);
        for task in &builders {
            if let Some(first) = first_line.get(&task.id) {
                let mut d = PlanDiagnostic::new(
                    task.line,
                    Some("id"),
                    format!(
                        "duplicate task id `{}` (first defined at line {first})",
                        task.id
                    ),
                );
                d.task_id = Some(task.id.clone());
                self.errors.push(d);
            } else {
                first_line.insert(task.id.clone(), task.line);
            }
        }
        let mut specs = Vec::with_capacity(builders.len());
        for task in builders {
            let spec = self.spec(task, &first_line);
            specs.push(spec);
        }
        let layering = layer(&specs);
        for cycle in &layering.cycles {
            let id = cycle.first().cloned().unwrap_or_default();
            let line = first_line.get(&id).copied().unwrap_or(1);
            let mut d = PlanDiagnostic::new(
                line,
                Some("depends_on"),
                format!("dependency cycle: {}", cycle_path(cycle)),
            );
            d.task_id = Some(id);
            self.errors.push(d);
        }
        if !self.errors.is_empty() {
            self.errors.sort_by_key(|e| e.line);
            return Err(PlanErrors {
                file: self.file.to_string(),
                errors: self.errors,
            });
        }
        let overview = self.source(&self.overview.clone());
        self.warnings.sort_by_key(|w| w.line);
        Ok(Compiled {
            graph: TaskGraph {
                version: TASK_GRAPH_VERSION,
                title: self.title,
                source: Some(self.file.to_string()),
                overview: (!overview.is_empty()).then_some(overview),
                settings: self.settings,
                phases: self.phases,
                tasks: specs,
                waves: layering.waves,
            },
            warnings: self.warnings,
        })
    }

    fn spec(&mut self, task: TaskBuilder, ids: &HashMap<String, u32>) -> TaskSpec {
        let diag = |line: u32, field: &str, message: String| {
            let mut d = PlanDiagnostic::new(line, Some(field), message);
            d.task_id = Some(task.id.clone());
            d
        };
        let mut dependencies: Vec<TaskDependency> = Vec::new();
        for dep in &task.deps {
            if dep.id == task.id {
                self.errors.push(diag(
                    dep.line,
                    dep.field,
                    format!("task {} depends on itself", task.id),
                ));
                continue;
            }
            if !ids.contains_key(&dep.id) {
                self.errors.push(diag(
                    dep.line,
                    dep.field,
                    format!("unknown task `{}`: no task in the plan has this id", dep.id),
                ));
                continue;
            }
            let kind = dep.kind.unwrap_or(DependencyType::Hard);
            if dependencies
                .iter()
                .any(|d| d.depends_on_task_id == dep.id && d.dependency_type == kind)
            {
                continue;
            }
            dependencies.push(TaskDependency {
                depends_on_task_id: dep.id.clone(),
                dependency_type: kind,
                reason: dep.reason.clone(),
                source: Some(DependencySource::User),
            });
        }
        let defaults = &self.settings.defaults;
        let soft = task
            .soft_timeout_ms
            .map(|(ms, _)| ms)
            .or(defaults.soft_timeout_ms)
            .unwrap_or(DEFAULT_SOFT_TIMEOUT_MS);
        let hard = task
            .hard_timeout_ms
            .map(|(ms, _)| ms)
            .or(defaults.hard_timeout_ms)
            .unwrap_or(DEFAULT_HARD_TIMEOUT_MS)
            .max(if task.hard_timeout_ms.is_none() {
                soft
            } else {
                0
            });
        if soft > hard {
            let line = task
                .soft_timeout_ms
                .or(task.hard_timeout_ms)
                .map(|(_, l)| l)
                .unwrap_or(task.line);
            self.errors.push(diag(
                line,
                "soft_timeout",
                format!("the soft timeout ({soft} ms) is longer than the hard timeout ({hard} ms)"),
            ));
        }
        let mut evidence: Vec<EvidenceType> = match &task.evidence {
            Some(list) => list.clone(),
            None => task
                .category
                .map(|c| c.required_evidence().to_vec())
                .unwrap_or_default(),
        };
        for (marker, line) in &task.markers {
            match opt_out(marker) {
                Ok(kind) => {
                    if !evidence.contains(&kind) {
                        self.warnings.push(diag(
                            *line,
                            "evidence",
                            format!("`{marker}` opts out of evidence the task does not require"),
                        ));
                    }
                    evidence.retain(|e| *e != kind);
                }
                Err(message) => self.errors.push(diag(*line, "evidence", message)),
            }
        }
        evidence.sort();
        evidence.dedup();
        if task.task_type == TaskType::Execute && task.acceptance.is_empty() {
            self.warnings.push(diag(
                task.line,
                "acceptance_criteria",
                format!(
                    "task {} has no acceptance criteria; the reviewer will judge against the description only",
                    task.id
                ),
            ));
        }
        let description = self.source(&task.description);
        let required = task
            .verification_required
            .unwrap_or(!task.commands.is_empty());
        TaskSpec {
            id: task.id.clone(),
            task_type: task.task_type,
            title: task.title,
            description,
            acceptance_criteria: task.acceptance,
            category: task.category,
            phase: task.phase,
            scope: TaskScope {
                write_area: task.write_area,
                expected_files: task.expected_files,
                allowed_paths: task.allowed_paths,
                denied_paths: task.denied_paths,
                preserved_paths: task.preserved_paths,
            },
            contracts: Contracts {
                provides: (!task.provides.is_empty()).then_some(task.provides),
                requires: (!task.requires.is_empty()).then_some(task.requires),
            },
            dependencies,
            verification: Verification {
                commands: (!task.commands.is_empty()).then_some(task.commands),
                required,
                fallback_allowed: task.fallback_allowed,
                evidence_types: (!evidence.is_empty()).then_some(evidence),
            },
            constraints: Constraints {
                max_turns: task
                    .max_turns
                    .or(defaults.max_turns)
                    .unwrap_or(DEFAULT_MAX_TURNS),
                soft_timeout_ms: soft,
                hard_timeout_ms: hard,
                retry_budget: task
                    .retry_budget
                    .or(defaults.retry_budget)
                    .unwrap_or(DEFAULT_RETRY_BUDGET),
                model_policy: task
                    .model_policy
                    .or(defaults.model_policy)
                    .unwrap_or(ModelPolicy::SchedulerForced),
                model_id: task.model_id.or_else(|| defaults.model_id.clone()),
            },
            context_refs: ContextRefs {
                plan_ref: Some(format!("{}#{}", self.file, task.id)),
                ..ContextRefs::default()
            },
            output_contract: task.task_type.output_contract(),
        }
    }
}

/// Commands in a list item: its code spans, or its whole text when it has none.
fn commands_of(inlines: &[Inline]) -> Vec<String> {
    let spans: Vec<String> = inlines
        .iter()
        .filter_map(|i| match i {
            Inline::Code(c) if !c.trim().is_empty() => Some(c.trim().to_string()),
            _ => None,
        })
        .collect();
    if !spans.is_empty() {
        return spans;
    }
    let text = plain(inlines).trim().to_string();
    if text.is_empty() {
        Vec::new()
    } else {
        vec![text]
    }
}

/// Commands in a shell code block: one per line, `\` continuations joined, comments and
/// blank lines skipped.
fn shell_lines(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut pending = String::new();
    for line in code.lines() {
        let line = line.trim();
        if pending.is_empty() && (line.is_empty() || line.starts_with('#')) {
            continue;
        }
        let line = line.strip_prefix("$ ").unwrap_or(line);
        if let Some(head) = line.strip_suffix('\\') {
            pending.push_str(head.trim_end());
            pending.push(' ');
            continue;
        }
        pending.push_str(line);
        out.push(std::mem::take(&mut pending));
    }
    if !pending.trim().is_empty() {
        out.push(pending.trim().to_string());
    }
    out
}

/// `api auth: login(user, password) -> token (frozen)`.
fn contract(inlines: &[Inline]) -> Result<InterfaceContract, String> {
    let text = plain(inlines);
    let text = text.trim();
    let usage = "a contract reads `<kind> <module>: <spec> (<stability>)`, e.g. `api auth: login(user) -> token (stable)`";
    let Some((head, spec)) = text.split_once(':') else {
        return Err(format!("{usage}; found `{text}`"));
    };
    let mut words = head.split_whitespace();
    let (Some(kind), Some(module)) = (words.next(), words.next()) else {
        return Err(format!("{usage}; found `{text}`"));
    };
    let kind = ContractKind::parse(&normalize(kind)).ok_or_else(|| {
        format!(
            "`{kind}` is not a contract kind ({})",
            names(ContractKind::ALL.iter().map(|k| k.as_str()))
        )
    })?;
    let mut spec = spec.trim().to_string();
    let mut stability = Stability::Stable;
    if spec.ends_with(')') {
        if let Some(open) = spec.rfind('(') {
            if let Some(s) = Stability::parse(&normalize(&spec[open + 1..spec.len() - 1])) {
                stability = s;
                spec = spec[..open].trim_end().to_string();
            }
        }
    }
    if spec.is_empty() {
        return Err(format!("{usage}; the spec is empty"));
    }
    Ok(InterfaceContract {
        module: module.to_string(),
        kind,
        spec,
        stability,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headings() {
        assert_eq!(
            task_heading("Task T1: Add it [no-screenshot]"),
            Some(Ok((
                "T1".into(),
                "Add it".into(),
                vec!["no-screenshot".into()]
            )))
        );
        assert!(task_heading("Tasks overview").is_none());
        assert!(matches!(task_heading("task: x"), None | Some(Err(_))));
        assert!(matches!(task_heading("Task T1 Add"), Some(Err(_))));
        assert_eq!(
            phase_heading("Phase P1: Base"),
            Some(Ok(("P1".into(), Some("Base".into()))))
        );
        assert_eq!(phase_heading("Milestone m2"), Some(Ok(("m2".into(), None))));
        assert!(phase_heading("Phases of the work").is_none());
    }

    #[test]
    fn dependency_lists_keep_commas_in_reasons() {
        assert_eq!(
            parse_dependency_list("T1 (needs a, b), T2").unwrap(),
            vec![
                ("T1".into(), Some("needs a, b".into())),
                ("T2".into(), None)
            ]
        );
        assert!(parse_dependency_list("T1 (open").is_err());
        assert!(parse_dependency_list("not an id!").is_err());
    }

    #[test]
    fn shell_blocks() {
        assert_eq!(
            shell_lines("# build\nmake \\\n  -j2\n\n$ make test\n"),
            vec!["make -j2".to_string(), "make test".to_string()]
        );
    }

    #[test]
    fn contracts() {
        let c = contract(&[Inline::Text(
            "api auth: login(user, pw) -> token (frozen)".into(),
        )])
        .unwrap();
        assert_eq!(c.module, "auth");
        assert_eq!(c.kind, ContractKind::Api);
        assert_eq!(c.spec, "login(user, pw) -> token");
        assert_eq!(c.stability, Stability::Frozen);
        assert!(contract(&[Inline::Text("thing: x".into())]).is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration_ms("10m"), Ok(600_000));
        assert_eq!(parse_duration_ms("1h 30m"), Ok(5_400_000));
        assert!(parse_duration_ms("600").is_err());
        assert!(parse_duration_ms("soon").is_err());
    }
}
