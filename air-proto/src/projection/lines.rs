//! The projection's lines for people: a tool call's input or output in brief, a
//! result's evidence as lines, and the evidence airsd recorded of a task.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// How many pieces of evidence a task view keeps.
pub const TASK_EVIDENCE_LIMIT: usize = 50;

/// A piece of evidence airsd recorded: what it shows, and what shows it.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EvidenceView {
    pub id: String,
    pub evidence_type: String,
    pub claim: String,
    /// `command-run:<id>` or an artifact URI.
    pub reference: String,
    pub agent_id: Option<String>,
}

impl EvidenceView {
    /// One line for people: `build_pass: claim (reference)`.
    pub fn line(&self) -> String {
        format!(
            "{}: {} ({})",
            self.evidence_type, self.claim, self.reference
        )
    }
}

/// Characters of a tool call's input or output kept as its brief.
pub const BRIEF_CHARS: usize = 160;

/// A tool call's input or output in one line for people: its short fields
/// (`path=src/a.rs line=3`); long text, lists and objects only counted; ids, empty
/// values and `false` left out.
pub fn brief(v: &Value) -> Option<String> {
    let field = |k: &str, v: &Value| -> Option<String> {
        // Ids and hashes are for programs.
        if k.ends_with("_id") || k.contains("sha256") || k.ends_with("hash") {
            return None;
        }
        Some(match v {
            Value::Null | Value::Bool(false) => return None,
            Value::String(s) if s.is_empty() => return None,
            Value::Array(a) if a.is_empty() => return None,
            Value::String(s) if s.contains('\n') => format!("{k}=({} lines)", s.lines().count()),
            Value::String(s) if s.chars().count() > 80 => {
                format!("{k}=({} chars)", s.chars().count())
            }
            Value::String(s) => format!("{k}={s}"),
            Value::Array(a) => format!("{k}=[{}]", a.len()),
            Value::Object(_) => format!("{k}={{…}}"),
            other => format!("{k}={other}"),
        })
    };
    let text = match v {
        Value::Null => return None,
        Value::Object(m) => m
            .iter()
            .filter_map(|(k, v)| field(k, v))
            .collect::<Vec<_>>()
            .join(" "),
        Value::String(s) => s.lines().next().unwrap_or("").to_string(),
        other => other.to_string(),
    };
    let mut out: String = text.chars().take(BRIEF_CHARS).collect();
    if text.chars().count() > BRIEF_CHARS {
        out.push('…');
    }
    (!out.is_empty()).then_some(out)
}

/// The argument that says what a tool call is about: its command, path, pattern, …
/// (`None`: it has none of them).
pub fn main_argument(input: &Value) -> Option<(&'static str, &str)> {
    [
        "command", "path", "pattern", "query", "url", "task_id", "title", "intent",
    ]
    .into_iter()
    .find_map(|k| input.get(k).and_then(Value::as_str).map(|v| (k, v)))
}

/// A tool call's input in one line: its main argument as it is (a command's first
/// line, a path), then its other short fields.
pub fn brief_input(v: &Value) -> Option<String> {
    let Some((key, main)) = main_argument(v) else {
        return brief(v);
    };
    let mut line = main.lines().next().unwrap_or("").to_string();
    if main.lines().nth(1).is_some() {
        line.push_str(" …");
    }
    let mut rest = v.clone();
    if let Some(o) = rest.as_object_mut() {
        o.remove(key);
        // What the model said it does: its own words, not the call.
        o.remove("description");
    }
    if let Some(more) = brief(&rest) {
        line = format!("{line} · {more}");
    }
    let mut out: String = line.chars().take(BRIEF_CHARS).collect();
    if line.chars().count() > BRIEF_CHARS {
        out.push('…');
    }
    Some(out)
}

/// A tool call's output in one line, as the model would sum it up: a command's
/// exit code and its last line (of stderr when it failed), a read's lines, else its
/// short fields.
pub fn brief_output(v: &Value) -> Option<String> {
    let last = |k: &str| {
        v.get(k)
            .and_then(Value::as_str)
            .and_then(|s| s.lines().rev().find(|l| !l.trim().is_empty()))
            .map(|l| l.trim().chars().take(100).collect::<String>())
    };
    if let Some(code) = v.get("exit_code") {
        let said = match code.as_i64() {
            Some(0) => ["stdout", "stderr"].into_iter().find_map(last),
            Some(_) => ["stderr", "stdout"].into_iter().find_map(last),
            None => None,
        };
        let code = match code.as_i64() {
            Some(c) => format!("exit {c}"),
            None => "stopped before it exited".to_string(),
        };
        return Some(match said {
            Some(s) => format!("{code} · {s}"),
            None => code,
        });
    }
    if let (Some(path), Some(diff)) = (
        v.get("path").and_then(Value::as_str),
        v.get("diff").and_then(Value::as_str),
    ) {
        let (added, removed) = diff.lines().fold((0, 0), |(a, r), l| {
            match (
                l.starts_with('+') && !l.starts_with("+++"),
                l.starts_with('-') && !l.starts_with("---"),
            ) {
                (true, _) => (a + 1, r),
                (_, true) => (a, r + 1),
                _ => (a, r),
            }
        });
        return Some(format!("changed {path} (+{added} −{removed})"));
    }
    if let (Some(path), Some(true)) = (
        v.get("path").and_then(Value::as_str),
        v.get("created").and_then(Value::as_bool),
    ) {
        return Some(match v.get("bytes").and_then(Value::as_u64) {
            Some(n) => format!("created {path} ({n} bytes)"),
            None => format!("created {path}"),
        });
    }
    if let Some(total) = v.get("total_lines").and_then(Value::as_u64) {
        let n = |k: &str| v.get(k).and_then(Value::as_u64);
        return Some(match (n("first_line"), n("last_line")) {
            (Some(a), Some(b)) if (a, b) != (1, total) => format!("lines {a}–{b} of {total}"),
            _ if total == 1 => "1 line".to_string(),
            _ => format!("{total} lines"),
        });
    }
    brief(v)
}

/// The evidence of a result as lines for people: `test_pass: the tests passed
/// (command_run cmd-1)`.
pub fn evidence_lines(result: &crate::result::WorkerResult) -> Vec<String> {
    result
        .evidence_refs
        .iter()
        .map(|e| {
            let kind = e.evidence_type.map_or("evidence", |t| t.as_str());
            format!("{kind}: {} ({} {})", e.claim, e.kind.as_str(), e.reference)
        })
        .collect()
}

impl super::AgentView {
    /// Takes in the result the agent handed back, as lines for people.
    pub fn set_result(&mut self, result: &crate::result::WorkerResult) {
        self.summary = Some(result.summary.clone());
        self.evidence = evidence_lines(result);
        self.verification = result
            .verification
            .iter()
            .map(|v| {
                let status = serde_json::to_value(v.status)
                    .ok()
                    .and_then(|s| s.as_str().map(str::to_string))
                    .unwrap_or_default();
                match v.notes.as_deref().filter(|n| !n.is_empty()) {
                    Some(notes) => format!("{status}: {} — {notes}", v.name),
                    None => format!("{status}: {}", v.name),
                }
            })
            .collect();
        self.risks = result
            .risks
            .iter()
            .map(|r| {
                let severity = serde_json::to_value(r.severity)
                    .ok()
                    .and_then(|s| s.as_str().map(str::to_string))
                    .unwrap_or_default();
                format!("{severity}: {}", r.summary)
            })
            .collect();
        self.follow_ups = result
            .follow_up_tasks
            .iter()
            .map(|t| t.title.clone())
            .collect();
    }
}
