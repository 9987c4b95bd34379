//! What an editor is shown of a session: air's events, in order, turned into ACP
//! `session/update`s. The Main Agent's and the direct lane's text streams as message
//! chunks (thinking as thought chunks), their tool runs are tool calls with status,
//! kind, locations and diffs, a todo list is the plan, a turn's usage is a usage
//! update; work handed on (the task graph's tasks) is a tool call each, whose status
//! follows the task. Permission requests and the ends of turns are told apart, for
//! the relay to act on.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use agent_client_protocol::v1::schema::{
    Content, ContentBlock, ContentChunk, Cost, CurrentModeUpdate, Diff, Plan, PlanEntry,
    PlanEntryPriority, PlanEntryStatus, SessionUpdate, TextContent, ToolCall, ToolCallContent,
    ToolCallLocation, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind, UsageUpdate,
};
use air_proto::conversation::in_conversation;
use air_proto::event::RuntimeEvent;
use air_proto::events as ev;
use air_proto::payload as p;
use air_proto::projection::TaskStatus;
use air_proto::todo::{TodoItem, TodoStatus};
use serde_json::Value;

/// What one event means for the editor.
#[derive(Debug)]
pub enum Out {
    /// A `session/update` to send.
    Update(Box<SessionUpdate>),
    /// A permission request to put to the person (`session/request_permission`).
    Ask(p::PermissionRequested),
    /// A permission request was answered (by anyone) or expired.
    Answered(String),
    /// The session is idle: its run ended, or it waits for the person's next message.
    Idle,
    /// The run's scheduler stopped without ending the run (the session could not be
    /// written), and why.
    Halted(String),
}

/// The state the translation needs across events.
pub struct Translator {
    root: PathBuf,
    /// Each agent's task, and the context window it was started with.
    agents: BTreeMap<String, (Option<String>, u64)>,
    /// Messages whose text was streamed (their final form is then not sent again).
    streamed: BTreeSet<String>,
    /// The tool runs shown, by id: their tool and input.
    tools: BTreeMap<String, (String, Value)>,
    /// User messages this editor sent (the editor shows them already), by id, and
    /// by text while they are being sent (their event may come before the answer).
    own: BTreeSet<String>,
    sending: Vec<String>,
    /// The name this editor has in airsd (a message's `client`).
    name: String,
    /// The session's cost so far, in millionths of a dollar.
    cost_micro_usd: u64,
}

impl Translator {
    pub fn new(root: &Path, name: &str) -> Translator {
        Translator {
            root: root.to_path_buf(),
            agents: BTreeMap::new(),
            streamed: BTreeSet::new(),
            tools: BTreeMap::new(),
            own: BTreeSet::new(),
            sending: Vec::new(),
            name: name.to_string(),
            cost_micro_usd: 0,
        }
    }

    /// A message this editor is sending: not echoed back to it.
    pub fn sending(&mut self, text: &str) {
        self.sending.push(text.to_string());
    }

    /// The message this editor sent as `text`: its id, or `None` when it was refused.
    pub fn sent(&mut self, text: &str, message_id: Option<&str>) {
        if let Some(at) = self.sending.iter().position(|t| t == text) {
            self.sending.remove(at);
        }
        if let Some(id) = message_id {
            self.own.insert(id.to_string());
        }
    }

    fn task_of_agent(&self, agent: Option<&str>) -> Option<&str> {
        self.agents.get(agent?)?.0.as_deref()
    }

    /// Whether what an agent (or a task) did belongs to the conversation itself.
    fn conversational(&self, task: Option<&str>, agent: Option<&str>) -> bool {
        task.or_else(|| self.task_of_agent(agent))
            .is_some_and(in_conversation)
    }

    /// The updates one event makes.
    pub fn event(&mut self, event: &RuntimeEvent) -> Vec<Out> {
        let payload = &event.payload;
        match event.event_type.as_str() {
            ev::AgentStarted::TYPE => {
                if let Some(a) = de::<p::AgentStarted>(payload) {
                    let window = a
                        .context
                        .map(|c| c.budget.context_window_tokens)
                        .unwrap_or(0);
                    self.agents.insert(a.agent_id, (a.task_id, window));
                }
                Vec::new()
            }
            ev::TokenDelta::TYPE => {
                let Some(d) = de::<p::TokenDelta>(payload) else {
                    return Vec::new();
                };
                if !self.conversational(None, d.agent_id.as_deref()) || d.text.is_empty() {
                    return Vec::new();
                }
                let chunk = ContentChunk::new(text(&d.text));
                let chunk_update = match d.kind {
                    p::DeltaKind::Text => SessionUpdate::AgentMessageChunk(chunk),
                    p::DeltaKind::Thinking => SessionUpdate::AgentThoughtChunk(chunk),
                    p::DeltaKind::InputJson => return Vec::new(),
                };
                self.streamed.insert(d.message_id);
                vec![update(chunk_update)]
            }
            ev::AssistantMessageCreated::TYPE => self.assistant(payload),
            ev::UserMessageCreated::TYPE => {
                let Some(m) = de::<p::MessageCreated>(payload) else {
                    return Vec::new();
                };
                // A word to a running task is not the conversation's.
                if self.own.contains(&m.message_id) || m.task_id.is_some() {
                    return Vec::new();
                }
                let said = air_proto::message::text_of(&m.content);
                // airsd names a client with the pid of its process when it knows it.
                let ours = format!("{} (pid {})", self.name, std::process::id());
                if m.client
                    .as_deref()
                    .is_some_and(|c| c == self.name || c == ours)
                {
                    if let Some(at) = self.sending.iter().position(|t| *t == said) {
                        self.sending.remove(at);
                        self.own.insert(m.message_id);
                        return Vec::new();
                    }
                }
                if said.trim().is_empty() {
                    return Vec::new();
                }
                vec![update(SessionUpdate::UserMessageChunk(ContentChunk::new(
                    text(&said),
                )))]
            }
            ev::ToolStarted::TYPE => self.tool_started(payload),
            ev::ToolCompleted::TYPE => self.tool_ended(payload, true),
            ev::ToolFailed::TYPE => self.tool_ended(payload, false),
            ev::TaskCreated::TYPE => {
                let task = &payload["task"];
                let (Some(id), title) = (task["id"].as_str(), task["title"].as_str()) else {
                    return Vec::new();
                };
                if in_conversation(id) || air_proto::conversation::is_turn(id) {
                    return Vec::new();
                }
                let title = match title {
                    Some(t) => format!("{id}: {t}"),
                    None => id.to_string(),
                };
                vec![update(SessionUpdate::ToolCall(
                    ToolCall::new(task_call(id), title)
                        .kind(ToolKind::Think)
                        .status(ToolCallStatus::Pending),
                ))]
            }
            ev::PermissionRequested::TYPE => de::<p::PermissionRequested>(payload)
                .map(Out::Ask)
                .into_iter()
                .collect(),
            ev::PermissionDecisionRecorded::TYPE => payload["request_id"]
                .as_str()
                .map(|r| Out::Answered(r.to_string()))
                .into_iter()
                .collect(),
            ev::RunCompleted::TYPE => vec![Out::Idle],
            ev::RunHalted::TYPE => de::<p::RunHalted>(payload)
                .and_then(|h| h.reason)
                .map(Out::Halted)
                .into_iter()
                .collect(),
            ev::RunModeChanged::TYPE => de::<p::RunModeChanged>(payload)
                .map(|m| {
                    update(SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(
                        m.permission_mode.as_str(),
                    )))
                })
                .into_iter()
                .collect(),
            ty => {
                if let Some(asked) = crate::chat_cmd::planning_wait(event) {
                    return vec![
                        update(SessionUpdate::AgentMessageChunk(ContentChunk::new(text(
                            &format!("\n\n{asked}\n"),
                        )))),
                        Out::Idle,
                    ];
                }
                self.task_status(ty, payload)
            }
        }
    }

    fn assistant(&mut self, payload: &Value) -> Vec<Out> {
        let Some(m) = de::<p::MessageCreated>(payload) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        if let Some(u) = m.usage {
            self.cost_micro_usd = self
                .cost_micro_usd
                .saturating_add(u.cost_micro_usd.unwrap_or(0));
            let window = m
                .agent_id
                .as_deref()
                .and_then(|a| self.agents.get(a))
                .map(|a| a.1)
                .unwrap_or(0);
            let used = u.input_tokens
                + u.cache_read_input_tokens.unwrap_or(0)
                + u.cache_creation_input_tokens.unwrap_or(0)
                + u.output_tokens;
            let mut usage = UsageUpdate::new(used, window.max(used));
            if self.cost_micro_usd > 0 {
                usage = usage.cost(Cost::new(self.cost_micro_usd as f64 / 1e6, "USD"));
            }
            out.push(update(SessionUpdate::UsageUpdate(usage)));
        }
        let task = m.task_id.as_deref();
        if !self.conversational(task, m.agent_id.as_deref()) || self.streamed.remove(&m.message_id)
        {
            return out;
        }
        // Not streamed (a provider that does not stream, or an editor that joined
        // after): the whole message, its thinking first.
        if let Value::Array(blocks) = &m.content {
            for b in blocks {
                if let (Some("thinking"), Some(t)) = (b["type"].as_str(), b["thinking"].as_str()) {
                    out.push(update(SessionUpdate::AgentThoughtChunk(ContentChunk::new(
                        text(t),
                    ))));
                }
            }
        }
        let said = air_proto::message::text_of(&m.content);
        if !said.trim().is_empty() {
            out.push(update(SessionUpdate::AgentMessageChunk(ContentChunk::new(
                text(&said),
            ))));
        }
        out
    }

    fn tool_started(&mut self, payload: &Value) -> Vec<Out> {
        let Some(t) = de::<p::ToolStarted>(payload) else {
            return Vec::new();
        };
        if !self.conversational(t.task_id.as_deref(), t.agent_id.as_deref()) {
            return Vec::new();
        }
        self.tools
            .insert(t.tool_run_id.clone(), (t.tool.clone(), t.input.clone()));
        if t.tool == "todo.write" {
            return Vec::new();
        }
        let (title, kind) = shown(&t.tool, &t.input);
        let mut call = ToolCall::new(t.tool_run_id, title)
            .kind(kind)
            .status(ToolCallStatus::InProgress)
            .raw_input(t.input.clone());
        if let Some(path) = t.input["path"].as_str() {
            call = call.locations(vec![ToolCallLocation::new(self.root.join(path))]);
        }
        vec![update(SessionUpdate::ToolCall(call))]
    }

    fn tool_ended(&mut self, payload: &Value, ok: bool) -> Vec<Out> {
        let Some(id) = payload["tool_run_id"].as_str() else {
            return Vec::new();
        };
        let Some((tool, input)) = self.tools.remove(id) else {
            return Vec::new();
        };
        let output = &payload["output"];
        if tool == "todo.write" {
            return match air_proto::todo::from_output(output) {
                Some(todos) if ok => vec![update(SessionUpdate::Plan(plan(&todos)))],
                _ => Vec::new(),
            };
        }
        let mut content = Vec::new();
        if !ok {
            let why = payload["error"].as_str().unwrap_or("it failed");
            content.push(ToolCallContent::Content(Content::new(text(why))));
        } else if let Some(diff) = self.diff(&tool, &input) {
            content.push(ToolCallContent::Diff(diff));
        } else if let Some(said) = said(output) {
            content.push(ToolCallContent::Content(Content::new(text(&said))));
        }
        let fields = ToolCallUpdateFields::new()
            .status(if ok {
                ToolCallStatus::Completed
            } else {
                ToolCallStatus::Failed
            })
            .content(content)
            .raw_output(output.clone());
        vec![update(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
            id.to_string(),
            fields,
        )))]
    }

    /// An edit as a diff: the text replaced and its replacement, or a new file's text.
    fn diff(&self, tool: &str, input: &Value) -> Option<Diff> {
        let path = self.root.join(input["path"].as_str()?);
        match tool {
            "fs.write" => Some(Diff::new(path, input["content"].as_str()?)),
            "fs.edit" => Some(
                Diff::new(path, input["new_string"].as_str()?)
                    .old_text(input["old_string"].as_str()?.to_string()),
            ),
            "fs.multi_edit" => {
                let edits = input["edits"].as_array()?;
                let join = |k: &str| {
                    edits
                        .iter()
                        .filter_map(|e| e[k].as_str())
                        .collect::<Vec<_>>()
                        .join("\n…\n")
                };
                Some(Diff::new(path, join("new_string")).old_text(join("old_string")))
            }
            _ => None,
        }
    }

    /// A task of the graph moved: its tool call follows.
    fn task_status(&self, ty: &str, payload: &Value) -> Vec<Out> {
        let (Some(status), Some(id)) =
            (TaskStatus::from_event_type(ty), payload["task_id"].as_str())
        else {
            return Vec::new();
        };
        if in_conversation(id) || air_proto::conversation::is_turn(id) {
            return Vec::new();
        }
        let (call_status, note) = match status {
            TaskStatus::Running => (ToolCallStatus::InProgress, "an executor works on it"),
            TaskStatus::Reviewing => (ToolCallStatus::InProgress, "in review"),
            TaskStatus::Debugging => (ToolCallStatus::InProgress, "a debugger works on it"),
            TaskStatus::Completed => (ToolCallStatus::Completed, "completed"),
            TaskStatus::Failed => (ToolCallStatus::Failed, "failed"),
            TaskStatus::Blocked => (ToolCallStatus::Failed, "blocked: it needs a decision"),
            TaskStatus::Cancelled => (ToolCallStatus::Failed, "cancelled"),
            _ => return Vec::new(),
        };
        let note = match payload["reason"].as_str() {
            Some(why) if call_status == ToolCallStatus::Failed => format!("{note}: {why}"),
            _ => note.to_string(),
        };
        let fields = ToolCallUpdateFields::new()
            .status(call_status)
            .content(vec![ToolCallContent::Content(Content::new(text(&note)))]);
        vec![update(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
            task_call(id),
            fields,
        )))]
    }
}

/// The tool call id of a task of the graph.
fn task_call(task: &str) -> String {
    format!("task:{task}")
}

fn text(s: &str) -> ContentBlock {
    ContentBlock::Text(TextContent::new(s))
}

pub(super) fn de<T: serde::de::DeserializeOwned>(v: &Value) -> Option<T> {
    serde_json::from_value(v.clone()).ok()
}

/// A tool run's title and kind, as an editor lists it.
fn shown(tool: &str, input: &Value) -> (String, ToolKind) {
    let s = |k: &str| input[k].as_str().unwrap_or("");
    match tool {
        "fs.read" => (format!("Read {}", s("path")), ToolKind::Read),
        "fs.write" => (format!("Write {}", s("path")), ToolKind::Edit),
        "fs.edit" | "fs.multi_edit" => (format!("Edit {}", s("path")), ToolKind::Edit),
        "fs.glob" => (format!("Find {}", s("pattern")), ToolKind::Search),
        "fs.grep" => (format!("Search for {}", s("pattern")), ToolKind::Search),
        "shell.run" => (format!("Run `{}`", s("command")), ToolKind::Execute),
        "shell.output" | "shell.stop" => (tool.to_string(), ToolKind::Execute),
        "git.status" | "git.diff" => (tool.replace('.', " "), ToolKind::Read),
        t if t.starts_with("cpp.") => (t.to_string(), ToolKind::Execute),
        t => (t.to_string(), ToolKind::Other),
    }
}

/// What a tool's output says, as text: a command's exit code and output, or the
/// output itself, cut to a screenful.
fn said(output: &Value) -> Option<String> {
    const MOST: usize = 4000;
    let text = match output {
        Value::Null => return None,
        Value::String(s) => s.clone(),
        o if o.get("exit_code").is_some() => {
            let mut t = format!("exit code {}", o["exit_code"]);
            for k in ["stdout", "stderr", "output"] {
                if let Some(s) = o[k].as_str().filter(|s| !s.is_empty()) {
                    t.push_str("\n\n");
                    t.push_str(s);
                }
            }
            t
        }
        o => serde_json::to_string_pretty(o).ok()?,
    };
    Some(match text.char_indices().nth(MOST) {
        Some((cut, _)) => format!("{}\n…", &text[..cut]),
        None => text,
    })
}

/// A todo list as the plan's entries.
fn plan(todos: &[TodoItem]) -> Plan {
    Plan::new(
        todos
            .iter()
            .map(|t| {
                PlanEntry::new(
                    t.content.clone(),
                    PlanEntryPriority::Medium,
                    match t.status {
                        TodoStatus::Pending => PlanEntryStatus::Pending,
                        TodoStatus::InProgress => PlanEntryStatus::InProgress,
                        TodoStatus::Completed => PlanEntryStatus::Completed,
                    },
                )
            })
            .collect(),
    )
}

fn update(u: SessionUpdate) -> Out {
    Out::Update(Box::new(u))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use air_proto::event::EventSource;
    use serde_json::json;

    fn ev(ty: &str, payload: Value) -> RuntimeEvent {
        RuntimeEvent::new(ty, "s", EventSource::system(), payload)
    }

    fn updates(outs: Vec<Out>) -> Vec<Value> {
        outs.into_iter()
            .filter_map(|o| match o {
                Out::Update(u) => Some(serde_json::to_value(*u).unwrap()),
                _ => None,
            })
            .collect()
    }

    fn started(t: &mut Translator, agent: &str, task: &str) {
        t.event(&ev(
            "agent.started",
            json!({"agent_id": agent, "agent_type": "executor", "task_id": task}),
        ));
    }

    /// Streamed text is shown as it comes and not again when the message is recorded;
    /// a message nobody streamed is shown whole; a task's own agent is not the
    /// conversation.
    #[test]
    fn text_is_shown_once_and_only_the_conversations() {
        let mut t = Translator::new(Path::new("/p"), "acp:zed");
        started(&mut t, "a1", "direct:1");
        started(&mut t, "a2", "T1");
        let delta = |agent: &str, text: &str| {
            ev(
                "token.delta",
                json!({"message_id": "m1", "block_index": 0, "kind": "text", "text": text, "agent_id": agent}),
            )
        };
        let u = updates(t.event(&delta("a1", "Hel")));
        assert_eq!(u[0]["sessionUpdate"], "agent_message_chunk");
        assert_eq!(u[0]["content"]["text"], "Hel");
        assert!(updates(t.event(&delta("a2", "not shown"))).is_empty());
        let recorded = |id: &str, agent: &str| {
            ev(
                "assistant.message.created",
                json!({"message_id": id, "content": [{"type": "text", "text": "Hello"}], "agent_id": agent}),
            )
        };
        assert!(updates(t.event(&recorded("m1", "a1"))).is_empty());
        let whole = updates(t.event(&recorded("m2", "a1")));
        assert_eq!(whole[0]["content"]["text"], "Hello");
        assert!(updates(t.event(&recorded("m3", "a2"))).is_empty());
    }

    /// The editor's own message is not echoed, by its text while it is being sent and
    /// by its id after; another client's is shown.
    #[test]
    fn the_editors_own_messages_are_not_echoed() {
        let mut t = Translator::new(Path::new("/p"), "acp:zed");
        let said = |id: &str, client: &str| {
            ev(
                "user.message.created",
                json!({"message_id": id, "content": "fix it", "client": client}),
            )
        };
        t.sending("fix it");
        let ours = format!("acp:zed (pid {})", std::process::id());
        assert!(updates(t.event(&said("u1", &ours))).is_empty());
        t.sent("fix it", Some("u1"));
        assert!(updates(t.event(&said("u1", &ours))).is_empty());
        let theirs = updates(t.event(&said("u2", "air attach (pid 1)")));
        assert_eq!(theirs[0]["sessionUpdate"], "user_message_chunk");
        // Sent again by the same editor later: known by its new id.
        t.sending("fix it");
        t.sent("fix it", Some("u3"));
        assert!(updates(t.event(&said("u3", &ours))).is_empty());
    }

    /// A tool run becomes a tool call with its kind and file, and its end a status and
    /// a diff; a todo list becomes the plan; a task of the graph a tool call that
    /// follows its status; a permission request and a run's end are told apart.
    #[test]
    fn tools_tasks_todos_and_asks() {
        let mut t = Translator::new(Path::new("/p"), "acp:zed");
        started(&mut t, "a1", "main:1");
        let u = updates(t.event(&ev(
            "tool.started",
            json!({"tool_run_id": "r1", "tool": "fs.edit", "input": {"path": "src/a.rs", "old_string": "x", "new_string": "y"}, "agent_id": "a1", "task_id": "main:1"}),
        )));
        assert_eq!(u[0]["kind"], "edit");
        assert_eq!(u[0]["title"], "Edit src/a.rs");
        assert_eq!(u[0]["locations"][0]["path"], "/p/src/a.rs");
        let u = updates(t.event(&ev(
            "tool.completed",
            json!({"tool_run_id": "r1", "output": {"path": "src/a.rs"}}),
        )));
        assert_eq!(u[0]["status"], "completed");
        assert_eq!(u[0]["content"][0]["oldText"], "x");
        assert_eq!(u[0]["content"][0]["newText"], "y");
        t.event(&ev(
            "tool.started",
            json!({"tool_run_id": "r2", "tool": "todo.write", "input": {}, "agent_id": "a1", "task_id": "main:1"}),
        ));
        let u = updates(t.event(&ev(
            "tool.completed",
            json!({"tool_run_id": "r2", "output": {"todos": [{"content": "read", "status": "completed"}, {"content": "fix", "status": "in_progress"}]}}),
        )));
        assert_eq!(u[0]["sessionUpdate"], "plan");
        assert_eq!(u[0]["entries"][1]["status"], "in_progress");
        let u = updates(t.event(&ev(
            "task.created",
            json!({"task": {"id": "T1", "title": "Write hello.txt"}}),
        )));
        assert_eq!(u[0]["toolCallId"], "task:T1");
        // Pending is the protocol's default, left out on the wire.
        assert!(u[0].get("status").is_none_or(|s| s == "pending"), "{u:?}");
        let u = updates(t.event(&ev(
            "task.failed",
            json!({"task_id": "T1", "reason": "the tests fail"}),
        )));
        assert_eq!(u[0]["status"], "failed");
        assert!(u[0]["content"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .contains("the tests fail"));
        let asked = t.event(&ev(
            "permission.requested",
            json!({"request_id": "q1", "action": "write .envrc"}),
        ));
        assert!(matches!(&asked[..], [Out::Ask(r)] if r.request_id == "q1"));
        let answered = t.event(&ev(
            "permission.decision.recorded",
            json!({"request_id": "q1", "decision": "allow", "decided_by": "user"}),
        ));
        assert!(matches!(&answered[..], [Out::Answered(r)] if r == "q1"));
        assert!(matches!(
            &t.event(&ev("run.completed", json!({"outcome": "completed"})))[..],
            [Out::Idle]
        ));
        // A scheduler that stopped without ending the run ends the prompt with why;
        // its running again (no reason) does not.
        assert!(matches!(
            &t.event(&ev("run.halted", json!({"reason": "the disk is full"})))[..],
            [Out::Halted(why)] if why == "the disk is full"
        ));
        assert!(t
            .event(&ev("run.halted", json!({"reason": null})))
            .is_empty());
    }

    /// What a broken or hostile daemon sends is passed over, never a panic.
    #[test]
    fn malformed_payloads_are_passed_over() {
        let mut t = Translator::new(Path::new("/p"), "acp:zed");
        for ty in [
            "agent.started",
            "token.delta",
            "assistant.message.created",
            "user.message.created",
            "tool.started",
            "tool.completed",
            "task.created",
            "task.failed",
            "permission.requested",
            "questions.asked",
        ] {
            for payload in [
                json!(null),
                json!([1, 2]),
                json!({"task": 5, "task_id": []}),
            ] {
                let _ = t.event(&ev(ty, payload));
            }
        }
    }
}
