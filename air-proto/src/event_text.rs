//! Events as sentences for people: what `air log` prints and the event pane of
//! `air attach` shows (`air events` keeps the JSON). A reader keeps the little it
//! needs from earlier events: which tool or command a run id is, so that its end
//! says what ended.

use std::collections::HashMap;

use serde_json::Value;

use crate::event::RuntimeEvent;
use crate::projection::{brief_input, brief_output};

/// Reads events in order into lines.
#[derive(Clone, Debug, Default)]
pub struct Reader {
    /// Tool and command runs: what each is (`fs.read`, `$ cargo test`), and its task.
    runs: HashMap<String, (String, Option<String>)>,
}

/// One event for people.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Said {
    /// The task it is about (also for a run that names only its run id), else the
    /// agent, else empty.
    pub who: String,
    pub task: Option<String>,
    pub text: String,
}

impl Reader {
    /// What `e` says; runs are remembered for their ends.
    pub fn read(&mut self, e: &RuntimeEvent) -> Said {
        let p = &e.payload;
        let s = |k: &str| p.get(k).and_then(Value::as_str).unwrap_or("");
        let opt = |k: &str| p.get(k).and_then(Value::as_str).filter(|v| !v.is_empty());
        let mut task = opt("task_id").map(str::to_string);
        let text = match e.event_type.as_str() {
            "session.created" => match opt("title").or(opt("plan_ref")) {
                Some(t) => format!("session started: {t}"),
                None => "session started".into(),
            },
            "user.message.created" => format!("message from {}", opt("client").unwrap_or("you")),
            "assistant.message.created" => "the agent answered".into(),
            "context.message.created" => "context given to the agent".into(),
            "agent.started" => {
                let who = s("agent_type").replace('_', " ");
                match opt("model") {
                    Some(m) => format!("{who} started ({m})"),
                    None => format!("{who} started"),
                }
            }
            "agent.completed" => {
                let summary = p
                    .pointer("/result/summary")
                    .and_then(Value::as_str)
                    .and_then(|t| t.lines().next());
                match summary {
                    Some(t) => format!("agent done: {t}"),
                    None => "agent done".into(),
                }
            }
            "agent.failed" => format!("agent failed: {}", s("reason")),
            "agent.model_fallback" => format!(
                "model {} → {}: {}",
                s("from_model"),
                s("to_model"),
                s("reason")
            ),
            "run.started" => "run started".into(),
            "run.completed" => "run ended".into(),
            "run.halted" => format!("run halted: {}", s("reason")),
            "task.created" => {
                task = p
                    .pointer("/task/id")
                    .and_then(Value::as_str)
                    .map(str::to_string);
                format!(
                    "task added: {}",
                    p.pointer("/task/title")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                )
            }
            "task.ready" => "ready".into(),
            "task.started" => format!(
                "started ({}, attempt {})",
                s("agent_type").replace('_', " "),
                p.get("attempt").and_then(Value::as_u64).unwrap_or(1)
            ),
            "task.reviewing" => "in review".into(),
            "task.debugging" => "being debugged".into(),
            "task.completed" => "completed".into(),
            "task.blocked" | "task.failed" | "task.cancelled" | "task.retried" => {
                let what = &e.event_type["task.".len()..];
                match opt("reason") {
                    Some(r) => format!("{what}: {r}"),
                    None => what.to_string(),
                }
            }
            "tool.started" => {
                let tool = s("tool").to_string();
                self.runs
                    .insert(s("tool_run_id").into(), (tool.clone(), task.clone()));
                let input = p.get("input").and_then(brief_input).unwrap_or_default();
                format!("{tool} {input}").trim_end().to_string()
            }
            "tool.completed" | "tool.failed" => {
                let (tool, t) = self.runs.get(s("tool_run_id")).cloned().unwrap_or_default();
                task = task.or(t);
                let said = match opt("error") {
                    Some(err) => format!("failed: {}", err.lines().next().unwrap_or("")),
                    None => p.get("output").and_then(brief_output).unwrap_or_default(),
                };
                format!("{tool} → {said}").trim_end().to_string()
            }
            "command.started" => {
                let cmd = format!("$ {}", s("command").lines().next().unwrap_or(""));
                self.runs
                    .insert(s("command_run_id").into(), (cmd.clone(), task.clone()));
                cmd
            }
            "command.completed" | "command.failed" => {
                let (cmd, t) = self
                    .runs
                    .get(s("command_run_id"))
                    .cloned()
                    .unwrap_or_default();
                task = task.or(t);
                let code = match p.get("exit_code").and_then(Value::as_i64) {
                    Some(c) => format!("exit {c}"),
                    None => "no exit code".into(),
                };
                let took = p
                    .get("duration_ms")
                    .and_then(Value::as_u64)
                    .map(|ms| format!(" in {ms} ms"))
                    .unwrap_or_default();
                match opt("error") {
                    Some(err) => format!("{cmd} → {code}{took}: {err}"),
                    None => format!("{cmd} → {code}{took}"),
                }
            }
            "evidence.created" => format!(
                "evidence: {} — {}",
                p.pointer("/evidence/evidence_type")
                    .and_then(Value::as_str)
                    .unwrap_or("evidence")
                    .replace('_', " "),
                p.pointer("/evidence/claim")
                    .and_then(Value::as_str)
                    .unwrap_or("")
            ),
            "workspace.created" => "worktree made".into(),
            "workspace.merged" => match p.get("files").and_then(Value::as_array) {
                Some(f) if !f.is_empty() => format!("merged: {} file(s) changed", f.len()),
                _ => "merged".into(),
            },
            "workspace.removed" => match opt("reason") {
                Some(r) => format!("worktree removed: {r}"),
                None => "worktree removed".into(),
            },
            "workspace.merge_failed" => format!("merge failed: {}", s("reason")),
            "permission.requested" => format!("asks to {}", s("action")),
            "permission.decision.recorded" => format!(
                "{} by {}",
                if s("decision") == "allow" {
                    "allowed"
                } else {
                    "denied"
                },
                s("decided_by")
            ),
            "requirement.changed" => format!("requirement changed: {}", s("change")),
            "architecture.change.classified" => format!(
                "the change is {}: {}",
                p.pointer("/change/scope")
                    .and_then(Value::as_str)
                    .unwrap_or("?")
                    .replace('_', " "),
                p.pointer("/change/summary")
                    .and_then(Value::as_str)
                    .unwrap_or("")
            ),
            "architecture.impact.completed" => {
                // The re-plan is about the graph, not the turn that classified it.
                task = None;
                let zone = |z: &str| -> Vec<String> {
                    p.get("tasks")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .filter(|t| t.get("zone").and_then(Value::as_str) == Some(z))
                        .map(|t| {
                            let id = t.get("task_id").and_then(Value::as_str).unwrap_or("?");
                            match t.get("action").and_then(Value::as_str) {
                                Some(a) if a != "keep" => format!("{id} ({})", a.replace('_', " ")),
                                _ => id.to_string(),
                            }
                        })
                        .collect()
                };
                let list = |v: Vec<String>| {
                    if v.is_empty() {
                        "none".to_string()
                    } else {
                        v.join(", ")
                    }
                };
                format!(
                    "impact: impacted {}; boundary {}; safe {}",
                    list(zone("impacted")),
                    list(zone("boundary")),
                    list(zone("safe"))
                )
            }
            "agent.loop_detected" if p.get("stopped").and_then(Value::as_bool) == Some(true) => {
                format!("stopped in a loop: {}", s("reason"))
            }
            "agent.loop_detected" => format!("told it is in a loop: {}", s("reason")),
            other => {
                // Any other: its name in words, and its reason or summary.
                let name = other.replace(['.', '_'], " ");
                match opt("reason").or(opt("summary")).or(opt("message")) {
                    Some(d) => format!("{name}: {d}"),
                    None => name,
                }
            }
        };
        let text: String = text
            .chars()
            .take(240)
            .map(|c| if c == '\n' { ' ' } else { c })
            .collect();
        Said {
            who: task
                .clone()
                .or(opt("agent_id").map(str::to_string))
                .unwrap_or_default(),
            task,
            text,
        }
    }

    /// `e` as a line of `air log`: its time, who, and what it says.
    pub fn line(&mut self, e: &RuntimeEvent) -> String {
        let said = self.read(e);
        let time = e.timestamp.get(11..19).unwrap_or("");
        if said.who.is_empty() {
            format!("{time} {}", said.text)
        } else {
            format!("{time} {} {}", said.who, said.text)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(ty: &str, payload: Value) -> RuntimeEvent {
        RuntimeEvent {
            id: "e".into(),
            event_type: ty.into(),
            version: 1,
            timestamp: "2026-12-05T10:11:12.000Z".into(),
            session_id: "s".into(),
            project_id: None,
            source: crate::event::EventSource::new(crate::event::SourceKind::Scheduler),
            route: vec![],
            payload,
        }
    }

    #[test]
    fn runs_end_with_what_they_were_and_noise_is_left_out() {
        let mut r = Reader::default();
        let start = event(
            "tool.started",
            json!({"tool_run_id": "tr1", "tool": "fs.read", "task_id": "T1",
                   "input": {"path": "src/a.rs"}}),
        );
        assert_eq!(r.line(&start), "10:11:12 T1 fs.read src/a.rs");
        let done = event(
            "tool.completed",
            json!({"tool_run_id": "tr1", "output": {"path": "src/a.rs", "content": "a\nb\n",
                   "first_line": 1, "last_line": 2, "total_lines": 2, "sha256": "00ff"}}),
        );
        let said = r.line(&done);
        assert_eq!(said, "10:11:12 T1 fs.read → 2 lines");
        r.read(&event(
            "command.started",
            json!({"command_run_id": "c1", "command": "cargo test 2>&1 | tail", "task_id": "T1"}),
        ));
        assert_eq!(
            r.line(&event(
                "command.completed",
                json!({"command_run_id": "c1", "exit_code": 101, "duration_ms": 900})
            )),
            "10:11:12 T1 $ cargo test 2>&1 | tail → exit 101 in 900 ms"
        );
        // Unknown types still read as words, with their reason on one line.
        assert_eq!(
            r.line(&event("scheduler.patrol", json!({"reason": "a\nb"}))),
            "10:11:12 scheduler patrol: a b"
        );
        // What a change impacts, zone by zone.
        assert_eq!(
            r.line(&event(
                "architecture.impact.completed",
                json!({"task_id": "plan:3", "change": {"scope": "external_interface", "summary": "s"},
                       "tasks": [{"task_id": "A", "zone": "safe", "action": "keep"},
                                 {"task_id": "B", "zone": "impacted", "action": "revert", "why": "w"},
                                 {"task_id": "C", "zone": "boundary", "action": "wait_and_assess", "why": "w"}]})
            )),
            "10:11:12 impact: impacted B (revert); boundary C (wait and assess); safe A"
        );
    }
}
