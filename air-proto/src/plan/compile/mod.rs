//! The plan compiler: Markdown (with YAML front matter) to a [`TaskGraph`], reporting
//! every error in one pass with its line and field.

use std::collections::HashMap;
use std::time::Duration;

use super::blocks::{blocks, plain, Block, BlockKind, Inline, Item, Lines};
use super::graph::{cycle_path, layer};
use super::{
    Budgets, Compiled, ConstraintDefaults, Land, OnAsk, PermissionMode, Phase, PlanDiagnostic,
    PlanErrors, PlanSettings, TaskGraph, DEFAULT_HARD_TIMEOUT_MS, DEFAULT_MAX_TURNS,
    DEFAULT_RETRY_BUDGET, DEFAULT_SOFT_TIMEOUT_MS, TASK_GRAPH_VERSION,
};
use crate::task::{
    Constraints, ContextRefs, ContractKind, Contracts, DependencySource, DependencyType,
    EvidenceType, InterfaceContract, ModelPolicy, Stability, TaskCategory, TaskDependency,
    TaskScope, TaskSpec, TaskType, Verification,
};

mod build;
mod syntax;

use syntax::*;
pub use syntax::{FIELDS, FRONT_MATTER_KEYS};

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
    /// Verify commands the plan declares evidence of (`[test_pass]` after one).
    declared: Vec<(String, EvidenceType)>,
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
            declared: Vec::new(),
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
                    let declared = declared_of(&inlines, &commands);
                    match declared {
                        Ok(declared) => {
                            if let Some(task) = self.current.as_mut() {
                                task.commands.extend(commands);
                                task.declared.extend(declared);
                            }
                        }
                        Err(message) => self.error(line, Some("verify"), message),
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
            let message = match Section::parse(&key) {
                // A section written as a field: say how sections are written.
                Some(_) => format!(
                    "`{key}` is a section, not a field: after the field list, write `{key}:` alone on a line, then its items as a list"
                ),
                None => unknown("field", &key, FIELDS.iter().map(|(n, _)| *n)),
            };
            self.error(line, Some(&key), message);
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
            "verify" => {
                let commands = commands_of(value);
                task.declared.extend(declared_of(value, &commands)?);
                task.commands.extend(commands);
            }
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
                    "land" => {
                        self.settings.land =
                            Some(parse_enum(&text, Land::ALL, Land::as_str, Land::parse)?)
                    }
                    "worktrees" => {
                        self.settings.worktrees = Some(match text.trim() {
                            "true" | "yes" | "on" => true,
                            "false" | "no" | "off" => false,
                            other => {
                                return Err(format!("worktrees is true or false, not `{other}`"))
                            }
                        })
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
                        return Err(unknown(
                            "front matter key",
                            &key,
                            FRONT_MATTER_KEYS.iter().map(|(k, _)| *k),
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
