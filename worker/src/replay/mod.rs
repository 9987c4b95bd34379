//! Recording a run's provider exchanges, and replaying them.
//!
//! With `air run --record DIR` (or `AIR_RECORD=DIR`), each agent writes its
//! conversation to `DIR/<agent id>.json` as it goes: every turn's request, normalized,
//! and the provider's stream as it came. `air run --replay DIR` runs the plan against
//! those files instead of a live provider: each agent starts a loopback server
//! ([`Server`]) that speaks the recorded protocol and answers each turn from the
//! recording — if the request still matches it. One that does not is refused with
//! the difference (the adapter's error, so the agent ends blocked saying what
//! changed).
//!
//! Requests are compared after [`normalize`]: the project directory becomes
//! `${PROJECT}`, ids and timestamps are masked, and tool results count by their
//! outcome, not their text, which holds timings and paths. What differs between
//! machines is tolerated: whether a tool call failed (a lookup that fails outside a
//! git repository works inside one); a command's exit code still counts. Everything
//! air itself sends — prompts, context, tools, the model's earlier turns — must be
//! the same.

mod server;

use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use air_proto::models::ProviderKind;
use serde_json::{json, Map, Value};

pub use server::{Exchange, Expect, Received, Recording, Reply, Server};

use crate::provider::RawEvent;

static ID: LazyLock<Option<regex::Regex>> = LazyLock::new(|| {
    regex::Regex::new(
        r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}",
    )
    .ok()
});
static TIME: LazyLock<Option<regex::Regex>> = LazyLock::new(|| {
    regex::Regex::new(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})?").ok()
});

static MACHINE: LazyLock<Option<regex::Regex>> = LazyLock::new(|| {
    let headings: Vec<String> = air_proto::context::MACHINE_SECTIONS
        .iter()
        .map(|h| regex::escape(h))
        .collect();
    // A section ends at the next heading of its level or above (`## `, `# `).
    regex::Regex::new(&format!(r"(?ms)^({})\n.*?(\n##? |\z)", headings.join("|"))).ok()
});
/// The project's profile section, with the line that joins it to the one before.
static PROJECT_SECTION: LazyLock<Option<regex::Regex>> = LazyLock::new(|| {
    regex::Regex::new(&format!(
        r"(?ms)\n{}\n.*?\n(\n##? |\z)",
        regex::escape(air_proto::context::PROJECT_HEADING)
    ))
    .ok()
});
static EXIT: LazyLock<Option<regex::Regex>> =
    LazyLock::new(|| regex::Regex::new(r"^Exit code (-?\d+) ").ok());

/// What stands for the project directory in recordings.
pub const PROJECT: &str = "${PROJECT}";

/// Parts of a request that stay the same through a conversation; after the first
/// exchange a recording keeps them as [`SAME`].
const STABLE: &[&str] = &["system", "instructions", "tools"];
/// "As in the conversation's first request."
pub const SAME: &str = "<as in request 1>";

/// A recorded request with its [`SAME`] parts filled in from the first one.
pub fn expanded(recorded: &Value, first: Option<&Value>) -> Value {
    let mut r = recorded.clone();
    if let (Some(o), Some(first)) = (r.as_object_mut(), first) {
        for k in STABLE {
            if o.get(*k).and_then(Value::as_str) == Some(SAME) {
                if let Some(v) = first.get(*k) {
                    o.insert((*k).to_string(), v.clone());
                }
            }
        }
    }
    r
}

fn mask(text: &str, root: Option<&str>) -> String {
    let mut s = match root.filter(|r| r.len() > 1) {
        Some(r) => text.replace(r, PROJECT),
        None => text.to_string(),
    };
    if let Some(re) = ID.as_ref() {
        s = re.replace_all(&s, "<id>").into_owned();
    }
    if let Some(re) = TIME.as_ref() {
        s = re.replace_all(&s, "<time>").into_owned();
    }
    if let Some(re) = MACHINE.as_ref() {
        s = re
            .replace_all(&s, "$1\n<as on this machine>\n$2")
            .into_owned();
    }
    if let Some(re) = PROJECT_SECTION.as_ref() {
        s = re.replace_all(&s, "$1").into_owned();
    }
    s
}

/// A tool result as compared: its outcome, not its text.
fn outcome(content: &str) -> Value {
    if content.starts_with("error: ") {
        return json!("<error>");
    }
    // A command's answer as text starts with how it ended.
    if let Some(code) = EXIT
        .as_ref()
        .and_then(|re| re.captures(content))
        .and_then(|c| c[1].parse::<i64>().ok())
    {
        return json!({ "exit_code": code });
    }
    if [
        "Timed out:",
        "Cancelled:",
        "Killed by signal",
        "Ended without an exit code",
    ]
    .iter()
    .any(|p| content.starts_with(p))
    {
        return json!({ "exit_code": null });
    }
    match serde_json::from_str::<Value>(content) {
        Ok(Value::Object(o)) if o.contains_key("exit_code") => {
            json!({ "exit_code": o["exit_code"] })
        }
        _ => json!("<result>"),
    }
}

/// A request body as recordings keep and compare it.
pub fn normalize(body: &Value, root: Option<&str>) -> Value {
    match body {
        Value::String(s) => Value::String(mask(s, root)),
        Value::Array(a) => Value::Array(a.iter().map(|v| normalize(v, root)).collect()),
        Value::Object(o) => {
            // Tool results: Anthropic `tool_result`, Chat Completions `tool`
            // messages, Responses `function_call_output`.
            let result_field = match (
                o.get("type").and_then(Value::as_str),
                o.get("role").and_then(Value::as_str),
            ) {
                (Some("tool_result"), _) => Some("content"),
                (Some("function_call_output"), _) => Some("output"),
                (_, Some("tool")) => Some("content"),
                _ => None,
            };
            let mut out = Map::new();
            for (k, v) in o {
                let v = match (result_field, v) {
                    (Some(f), Value::String(text)) if f == k => outcome(text),
                    _ => normalize(v, root),
                };
                out.insert(k.clone(), v);
            }
            Value::Object(out)
        }
        other => other.clone(),
    }
}

const MAX_DIFFS: usize = 5;

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 160 {
        format!("{}…", s.chars().take(160).collect::<String>())
    } else {
        s
    }
}

/// Around the first place two texts differ.
fn text_diff(a: &str, b: &str) -> String {
    let at = a
        .char_indices()
        .zip(b.chars())
        .find(|((_, x), y)| x != y)
        .map(|((i, _), _)| i)
        .unwrap_or(a.len().min(b.len()));
    let window = |s: &str| {
        let start = s[..at.min(s.len())]
            .char_indices()
            .rev()
            .nth(40)
            .map(|(i, _)| i)
            .unwrap_or(0);
        let rest = &s[start..];
        let tail: String = rest.chars().take(100).collect();
        let more = if rest.chars().count() > 100 {
            "…"
        } else {
            ""
        };
        format!("{}{tail}{more}", if start > 0 { "…" } else { "" })
    };
    format!(
        "(from character {}): recorded {:?}, now {:?}",
        a[..at.min(a.len())].chars().count() + 1,
        window(a),
        window(b)
    )
}

/// Whether two tool outcomes count as the same: a lookup that failed on the machine
/// that recorded and works on this one (or the other way: `git.status` outside and
/// inside a repository) is the machine, not air. A command's exit code still counts.
fn same_outcome(a: &Value, b: &Value) -> bool {
    let outcome = |v: &Value| matches!(v.as_str(), Some("<error>" | "<result>"));
    outcome(a) && outcome(b)
}

fn walk(path: &str, a: &Value, b: &Value, out: &mut Vec<String>) {
    if out.len() >= MAX_DIFFS || a == b || same_outcome(a, b) {
        return;
    }
    let at = if path.is_empty() { "the request" } else { path };
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            // A tool result's error flag goes with its outcome (see `same_outcome`).
            let tool_result = x.get("type").and_then(Value::as_str) == Some("tool_result");
            for k in keys {
                if tool_result && k == "is_error" {
                    continue;
                }
                let p = if path.is_empty() {
                    k.clone()
                } else {
                    format!("{path}.{k}")
                };
                match (x.get(k), y.get(k)) {
                    (Some(u), Some(v)) => walk(&p, u, v, out),
                    (Some(u), None) => {
                        out.push(format!("at {p}: recorded {}, now absent", short(u)))
                    }
                    (None, Some(v)) => out.push(format!("at {p}: not recorded, now {}", short(v))),
                    (None, None) => {}
                }
                if out.len() >= MAX_DIFFS {
                    return;
                }
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            for (i, (u, v)) in x.iter().zip(y).enumerate() {
                walk(&format!("{path}[{i}]"), u, v, out);
            }
            if x.len() != y.len() && out.len() < MAX_DIFFS {
                out.push(format!(
                    "at {at}: recorded {} items, now {}",
                    x.len(),
                    y.len()
                ));
            }
        }
        (Value::String(x), Value::String(y)) => out.push(format!("at {at} {}", text_diff(x, y))),
        _ => out.push(format!("at {at}: recorded {}, now {}", short(a), short(b))),
    }
}

/// What differs between a recorded (normalized) request and one now (normalized
/// here), as lines naming each place; `None` when they match.
pub fn diff(recorded: &Value, now: &Value) -> Option<String> {
    let mut out = Vec::new();
    walk("", recorded, now, &mut out);
    (!out.is_empty()).then(|| format!("  {}", out.join("\n  ")))
}

/// A recording's file for an agent.
pub fn file_for(dir: &Path, agent_id: &str) -> PathBuf {
    let safe: String = agent_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    dir.join(format!("{safe}.json"))
}

/// Writes an agent's conversation as it goes.
pub struct Recorder {
    path: PathBuf,
    root: Option<String>,
    recording: Recording,
}

impl Recorder {
    /// Records into `DIR/<agent id>.json` (the directory is made).
    pub fn new(
        dir: &Path,
        agent_id: &str,
        kind: ProviderKind,
        root: Option<String>,
    ) -> Result<Recorder, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        crate::provider::keep_wire(true);
        Ok(Recorder {
            path: file_for(dir, agent_id),
            root,
            recording: Recording {
                provider: kind.as_str().to_string(),
                exchanges: Vec::new(),
                request_bytes: Vec::new(),
            },
        })
    }

    /// The protocol it records.
    pub fn kind(&self) -> ProviderKind {
        ProviderKind::parse(&self.recording.provider).unwrap_or(ProviderKind::Anthropic)
    }

    /// Adds a turn (the request body sent, the stream that came) and rewrites the
    /// file, so a crash keeps every finished turn.
    pub fn push(&mut self, body: &Value, wire: &[RawEvent]) -> Result<(), String> {
        let data: Vec<Value> = wire
            .iter()
            .filter(|e| e.data.trim() != "[DONE]")
            .filter_map(|e| serde_json::from_str(&e.data).ok())
            .collect();
        let reply = if self.recording.provider == ProviderKind::OpenaiChat.as_str() {
            Reply::Chunks(data)
        } else {
            Reply::Events(data)
        };
        let tools = body
            .get("tools")
            .and_then(Value::as_array)
            .map(|t| {
                t.iter()
                    .filter_map(|t| t.get("name").or(t.pointer("/function/name"))?.as_str())
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        let mut request = normalize(body, self.root.as_deref());
        if let (Some(first), Some(o)) = (
            self.recording
                .exchanges
                .first()
                .and_then(|x| x.request.as_ref()),
            request.as_object_mut(),
        ) {
            for k in STABLE {
                if o.contains_key(*k) && o.get(*k) == first.get(*k) {
                    o.insert((*k).to_string(), Value::String(SAME.into()));
                }
            }
        }
        self.recording
            .request_bytes
            .push(body.to_string().len() as u64);
        self.recording.exchanges.push(Exchange {
            expect: Expect {
                contains: Vec::new(),
                tools,
            },
            request: Some(request),
            reply,
        });
        let text = serde_json::to_vec_pretty(&self.recording).map_err(|e| e.to_string())?;
        air_proto::layout::write_atomic(&self.path, &text)
            .map_err(|e| format!("{}: {e}", self.path.display()))
    }
}

/// The protocol a recording speaks, and the model its first request named.
pub fn recorded_model(recording: &Recording) -> Result<(ProviderKind, String), String> {
    let kind = match recording.provider.as_str() {
        "anthropic" => ProviderKind::Anthropic,
        "openai_chat" => ProviderKind::OpenaiChat,
        "openai_responses" => ProviderKind::OpenaiResponses,
        other => {
            return Err(format!(
            "`provider`: `{other}` is not a protocol (anthropic, openai_chat or openai_responses)"
        ))
        }
    };
    let model = recording
        .exchanges
        .iter()
        .find_map(|x| {
            x.request
                .as_ref()?
                .get("model")?
                .as_str()
                .map(str::to_string)
        })
        .unwrap_or_else(|| "recorded".into());
    Ok((kind, model))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_project_section_is_left_out_of_what_is_compared() {
        let without = "# Task T1\n\nDo it.\n\n## The plan\n\nText.\n";
        let between = "# Task T1\n\nDo it.\n\n## The project\n\nAs the user confirmed it:\n- Build: `make`\n\n## The plan\n\nText.\n";
        assert_eq!(mask(between, None), without);
        let last = "# Task T1\n\nDo it.\n\n## The project\n\n- Build: unknown\n";
        assert_eq!(mask(last, None), "# Task T1\n\nDo it.\n");
        assert_eq!(mask(without, None), without);
    }

    #[test]
    fn normalize_masks_what_varies_and_keeps_what_air_sends() {
        let body = json!({
            "model": "m",
            "system": [{"type": "text", "text": "Root: /home/u/p. Session 0190a8c2-7a1b-7cde-8f00-123456789abc at 2026-11-30T10:00:00.123Z."}],
            "messages": [
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": "{\"exit_code\":0,\"duration_ms\":12}"},
                    {"type": "tool_result", "tool_use_id": "t2", "content": "{\"created\":true}", "is_error": false},
                ]},
                {"role": "tool", "tool_call_id": "c1", "content": "error: denied"},
            ],
            "input": [{"type": "function_call_output", "call_id": "c2", "output": "plain"}],
        });
        let n = normalize(&body, Some("/home/u/p"));
        assert_eq!(
            n["system"][0]["text"],
            "Root: ${PROJECT}. Session <id> at <time>."
        );
        assert_eq!(
            n["messages"][0]["content"][0]["content"],
            json!({"exit_code": 0})
        );
        assert_eq!(n["messages"][0]["content"][1]["content"], "<result>");
        assert_eq!(n["messages"][1]["content"], "<error>");
        assert_eq!(n["input"][0]["output"], "<result>");
        // Timings in a tool's output do not matter; its exit code does.
        let mut later = body.clone();
        later["messages"][0]["content"][0]["content"] =
            json!("{\"exit_code\":0,\"duration_ms\":99}");
        assert_eq!(diff(&n, &normalize(&later, Some("/home/u/p"))), None);
        later["messages"][0]["content"][0]["content"] =
            json!("{\"exit_code\":1,\"duration_ms\":99}");
        let d = diff(&n, &normalize(&later, Some("/home/u/p"))).unwrap();
        assert!(
            d.contains("at messages[0].content[0].content.exit_code: recorded 0, now 1"),
            "{d}"
        );
        // A command's answer as text counts by its exit code too.
        let text = |t: &str| {
            json!({"messages": [{"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t", "content": t}]}]})
        };
        let a = normalize(
            &text("Exit code 0 after 0.1 s (command_run_id x).\nok\n"),
            None,
        );
        let b = normalize(
            &text("Exit code 0 after 2.5 s (command_run_id y).\nok, more\n"),
            None,
        );
        assert_eq!(diff(&a, &b), None);
        let c = normalize(&text("Exit code 2 after 0.1 s (command_run_id x).\n"), None);
        assert!(diff(&a, &c).is_some());
        // The environment section is the machine's and the moment's.
        let env = |e: &str| {
            json!({"messages": [{"role": "user", "content": [{"type": "text",
            "text": format!("# Task T1\n\n## Environment\n\n{e}\n## The plan\n\nP\n")}]}]})
        };
        let here = normalize(
            &env("- Date: 2026-12-01\n- Uncommitted changes: `a`\n"),
            None,
        );
        let there = normalize(&env("- Date: 2027-01-02\n"), None);
        assert_eq!(diff(&here, &there), None);
        assert!(here.to_string().contains("## The plan"), "{here}");
        // It ends at a top heading too: what follows it is compared.
        let message = |m: &str| {
            json!({"messages": [{"role": "user", "content": [{"type": "text",
            "text": format!("## Environment\n\n- Date: 2026-12-01\n\n# The user's message\n\n{m}\n")}]}]})
        };
        assert!(diff(
            &normalize(&message("hi"), None),
            &normalize(&message("bye"), None)
        )
        .is_some());
        // A heading of that name deeper in a task's text is the task's, and compared.
        let nested = |t: &str| {
            json!({"messages": [{"role": "user", "content": [{"type": "text",
            "text": format!("# Task T1\n\n### Environment\n\n{t}\n")}]}]})
        };
        assert!(diff(
            &normalize(&nested("Use Python 3.9."), None),
            &normalize(&nested("Use Python 3.12."), None)
        )
        .is_some());
    }

    #[test]
    fn a_tool_that_failed_on_another_machine_still_matches_but_a_prompt_change_does_not() {
        let at = |error: bool, text: &str| {
            let mut result = json!({"type": "tool_result", "tool_use_id": "t1", "content": if error { "error: not a git repository" } else { "{\"clean\":true}" }});
            if error {
                result["is_error"] = json!(true);
            }
            normalize(
                &json!({"system": "S", "messages": [{"role": "user", "content": [{"type": "text", "text": text}, result]}]}),
                None,
            )
        };
        assert_eq!(diff(&at(true, "go"), &at(false, "go")), None);
        assert_eq!(diff(&at(false, "go"), &at(true, "go")), None);
        let d = diff(&at(true, "go"), &at(false, "stop")).unwrap();
        assert!(d.contains("messages[0].content[0].text"), "{d}");
    }

    #[test]
    fn diff_names_each_place_that_changed() {
        let a = json!({"model": "m", "system": "You are the executor. Be brief.", "tools": [{"name": "a"}, {"name": "b"}]});
        let b = json!({"model": "n", "system": "You are the executor. Be thorough.", "tools": [{"name": "a"}], "x": 1});
        let d = diff(&a, &b).unwrap();
        assert!(
            d.contains("at model (from character 1): recorded \"m\", now \"n\""),
            "{d}"
        );
        assert!(d.contains("at system (from character 26): recorded \"You are the executor. Be brief.\", now \"You are the executor. Be thorough.\""), "{d}");
        assert!(d.contains("at tools: recorded 2 items, now 1"), "{d}");
        assert!(d.contains("at x: not recorded, now 1"), "{d}");
        assert_eq!(diff(&a, &a), None);
    }
}
