//! Reading the pieces of a plan: the fields and front-matter keys it knows, headings,
//! field values (numbers, booleans, durations, enums), dependency lists, commands and
//! interface contracts.

use super::*;

/// The fields of a task's field list, with what they take (for errors and the docs).
pub const FIELDS: &[(&str, &str)] = &[
    ("type", "execute (the default), review, debug, compact or mine_experience"),
    ("category", "the evidence category: logic, build, gui, network, deploy, config, docs, test, refactor, bugfix, or a cpp_ one"),
    ("phase", "the phase id, when not given by a `Phase` heading"),
    ("write_area", "a name; tasks with the same write area never run at once in a shared checkout (each in its own worktree, they do: the merge finds a real conflict)"),
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
    ("model_policy", "scheduler_forced (the model airsd resolves) or agent_select (the executor may move to another configured model with a price or on this machine, recorded as `agent.model_selected`)"),
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
    (
        "worktrees",
        "true or false: each task in its own git worktree (true in a git project)",
    ),
    (
        "land",
        "never, clean or always: when the merged work lands in the checkout",
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

pub(super) fn normalize(key: &str) -> String {
    key.trim()
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c == ' ' || c == '-' { '_' } else { c })
        .collect()
}

/// Accepted spellings of field names.
pub(super) fn canonical_field(key: &str) -> Option<&'static str> {
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

pub(super) fn valid_id(id: &str) -> bool {
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

pub(super) fn task_heading(text: &str) -> Option<Result<TaskHeading, String>> {
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
pub(super) fn phase_heading(text: &str) -> Option<Result<(String, Option<String>), String>> {
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
pub(super) fn strip_keyword<'a>(text: &'a str, keyword: &str) -> Option<&'a str> {
    let head = text.get(..keyword.len())?;
    let rest = text.get(keyword.len()..)?;
    (head.eq_ignore_ascii_case(keyword) && rest.starts_with([' ', '\t'])).then(|| rest.trim_start())
}

/// Removes trailing `[no-x]` markers from a heading.
pub(super) fn strip_markers(text: &str) -> (String, Vec<String>) {
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
pub(super) fn opt_out(marker: &str) -> Result<EvidenceType, String> {
    let name = normalize(&marker[3..]);
    EvidenceType::parse(&name).ok_or_else(|| {
        format!(
            "`{marker}` opts out of an unknown evidence type; known: {}",
            names(EvidenceType::ALL.iter().map(|e| e.as_str()))
        )
    })
}

pub(super) fn names<'a>(list: impl Iterator<Item = &'a str>) -> String {
    list.collect::<Vec<_>>().join(", ")
}

/// What an unknown `key` may have meant among `known`: "did you mean `depends_on`?"
/// when one name is close to it, else every name.
pub(super) fn unknown<'a>(what: &str, key: &str, known: impl Iterator<Item = &'a str>) -> String {
    let known: Vec<&str> = known.collect();
    let wanted = normalize(key);
    let closest = known
        .iter()
        .map(|k| (strsim::jaro_winkler(&wanted, k), *k))
        .filter(|(score, _)| *score >= 0.85)
        .max_by(|a, b| a.0.total_cmp(&b.0));
    match closest {
        Some((_, k)) => format!("unknown {what} `{key}`: did you mean `{k}`?"),
        None => format!(
            "unknown {what} `{key}`; the {what}s are {}",
            known.join(", ")
        ),
    }
}

pub(super) fn parse_enum<T: Copy>(
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

pub(super) fn parse_u32(value: &str) -> Result<u32, String> {
    value
        .trim()
        .parse::<u32>()
        .map_err(|_| format!("`{value}` is not a whole number"))
}

pub(super) fn parse_bool(value: &str) -> Result<bool, String> {
    match normalize(value).as_str() {
        "true" | "yes" | "on" => Ok(true),
        "false" | "no" | "off" => Ok(false),
        _ => Err(format!("`{value}` is not true or false")),
    }
}

pub(super) fn parse_duration_ms(value: &str) -> Result<u64, String> {
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
pub(super) fn parse_dependency_list(text: &str) -> Result<Vec<(String, Option<String>)>, String> {
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
pub(super) fn tokens(inlines: &[Inline]) -> Vec<String> {
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
pub(super) fn split_field(inlines: &[Inline]) -> Option<(String, Vec<Inline>)> {
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

/// Commands in a list item: its code spans, or its whole text when it has none.
pub(super) fn commands_of(inlines: &[Inline]) -> Vec<String> {
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

/// The evidence a verify item declares of its commands: `[type]` in its text after
/// them (`- \`./smoke.sh\` [smoke_test]`); every command of the item yields it. Only
/// what a passing command can show may be declared.
pub(super) fn declared_of(
    inlines: &[Inline],
    commands: &[String],
) -> Result<Vec<(String, crate::task::EvidenceType)>, String> {
    let text: String = inlines
        .iter()
        .filter(|i| !matches!(i, Inline::Code(_)))
        .map(|i| plain(std::slice::from_ref(i)))
        .collect();
    let mut out = Vec::new();
    let mut rest = text.as_str();
    while let Some(open) = rest.find('[') {
        let Some(close) = rest[open..].find(']') else {
            break;
        };
        let word = rest[open + 1..open + close].trim();
        rest = &rest[open + close + 1..];
        let Some(kind) = crate::task::EvidenceType::parse(word) else {
            return Err(format!(
                "`[{word}]` is not an evidence type; a check may declare {}",
                declarable()
            ));
        };
        if !crate::task::DECLARABLE.contains(&kind) {
            return Err(format!(
                "`[{word}]` cannot be declared of a command (no tool of air records it yet); a check may declare {}",
                declarable()
            ));
        }
        for c in commands {
            out.push((c.clone(), kind));
        }
    }
    Ok(out)
}

fn declarable() -> String {
    crate::task::DECLARABLE
        .iter()
        .map(|k| k.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Commands in a shell code block: one per line, `\` continuations joined, comments and
/// blank lines skipped.
pub(super) fn shell_lines(code: &str) -> Vec<String> {
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
pub(super) fn contract(inlines: &[Inline]) -> Result<InterfaceContract, String> {
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
