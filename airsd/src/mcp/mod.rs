//! The MCP client of a run (docs/mcp.md): the servers of `~/.air/mcp.yaml`,
//! `.air/shared/mcp.yaml` and `.mcp.json` a person trusted, started when the run
//! starts (stdio servers under the sandbox, as commands are; HTTP ones reached by
//! airsd), their tools offered to agents as `mcp__<server>__<tool>` (or, past the
//! schema budget, behind `mcp.search`), each call made by the run's tool jobs, which
//! ask the PermissionEngine and record it as a tool run. Dropped with the run: the
//! servers stop.

mod connect;
pub mod oauth;
pub mod probe;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use air_proto::event::AgentType;
use air_proto::hooks::{Trust, Trusted};
use air_proto::mcp::{self, McpServer};
use air_proto::tool::{PathPolicy, ToolCategory, ToolDefinition, ToolPermissions};
use rmcp::model::Tool;
use serde_json::{json, Value};

/// Longest a server may take to start and list its tools.
const START: Duration = Duration::from_secs(60);
/// Longest an agent's start waits for servers still starting (from the run's start).
const WAIT_AT_DISPATCH: Duration = Duration::from_secs(20);
/// Most characters of a tool's answer an agent reads (the record keeps as much).
const MOST_ANSWER_CHARS: usize = 60_000;
/// Most tools one search answers with.
const MOST_FOUND: usize = 8;

/// The servers declared for a project and the person's trust, as a run starts.
#[derive(Clone, Debug, Default)]
pub struct Config {
    pub loaded: mcp::Loaded,
    pub trust: Trust,
}

impl Config {
    /// Reads them: the person's `mcp.yaml` (in `air_home`) that cannot be read is an
    /// error naming it, as is a trust file that cannot be read when there are
    /// servers.
    pub fn load(
        air_home: Option<&std::path::Path>,
        root: &std::path::Path,
    ) -> Result<Config, String> {
        let user = air_home.map(|h| h.join("mcp.yaml"));
        let loaded = mcp::load(user.as_deref(), root)?;
        for w in &loaded.warnings {
            tracing::warn!("mcp: {w}");
        }
        let trust = match (
            air_home,
            loaded
                .servers
                .iter()
                .any(air_proto::hooks::Pinned::needs_trust),
        ) {
            (Some(h), true) => Trust::load(&h.join("trust.json"))?,
            _ => Trust::default(),
        };
        Ok(Config { loaded, trust })
    }
}

/// What a server's processes and connections are started with: the run's.
#[derive(Clone)]
pub struct Launching {
    pub engine: Arc<crate::tools::permission::Engine>,
    pub sandbox_exe: Option<(PathBuf, crate::sandbox::Protections)>,
    pub proxy: Option<Arc<crate::proxy::Proxy>>,
    pub net: Arc<crate::proxy::NetPolicy>,
    /// `~/.air`, where OAuth tokens are kept.
    pub air_home: Option<PathBuf>,
}

/// The tool calls a server's connections are asked about now (its network goes
/// through the proxy, which asks a person through the newest of them).
#[derive(Default)]
pub struct CurrentAsker(Mutex<Vec<(String, Arc<dyn crate::proxy::Asks>)>>);

impl CurrentAsker {
    fn set(&self, run: &str, asker: Arc<dyn crate::proxy::Asks>) {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((run.to_string(), asker));
    }

    fn clear(&self, run: &str) {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|(r, _)| r != run);
    }
}

impl crate::proxy::Asks for CurrentAsker {
    fn ask<'a>(
        &'a self,
        ask: crate::tools::permission::Ask,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), String>> + Send + 'a>> {
        let now = self
            .0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .last()
            .map(|(_, a)| a.clone());
        Box::pin(async move {
            match now {
                Some(asker) => asker.ask(ask).await,
                None => Err(format!(
                    "{}: an MCP server connects out only while one of its tools runs (or to hosts in permissions.yaml allow_domains)",
                    ask.action
                )),
            }
        })
    }
}

/// One server of the run, started once.
struct Slot {
    server: McpServer,
    live: tokio::sync::OnceCell<Result<Arc<connect::Live>, String>>,
}

/// A server's tool, as agents see it.
#[derive(Clone)]
pub struct Found {
    pub server: String,
    pub tool: Tool,
    /// Its name for agents (`mcp__server__tool`).
    pub name: String,
    /// The server's own `allow` list names it: it never asks.
    pub allowed: bool,
}

impl Found {
    /// Whether it only reads: its server says so (`readOnlyHint`).
    pub fn read_only(&self) -> bool {
        self.tool
            .annotations
            .as_ref()
            .and_then(|a| a.read_only_hint)
            .unwrap_or(false)
    }

    /// Why it asks a person before it runs, if it does: MCP's defaults are that a
    /// tool may destroy and reaches the open world, unless its server says not.
    pub fn asks(&self) -> Option<(crate::tools::permission::Risk, &'static str)> {
        use crate::tools::permission::Risk;
        if self.allowed {
            return None;
        }
        let a = self.tool.annotations.as_ref();
        // What reaches the world may carry the project out, reading or not.
        if a.and_then(|a| a.open_world_hint) != Some(false) && self.read_only() {
            return Some((
                Risk::McpOpenWorld,
                "its server says (or does not deny) that it reaches outside the project",
            ));
        }
        if self.read_only() {
            return None;
        }
        if a.and_then(|a| a.destructive_hint) != Some(false) {
            return Some((
                Risk::McpDestructive,
                "its server does not say that it only reads or that it destroys nothing",
            ));
        }
        if a.and_then(|a| a.open_world_hint) != Some(false) {
            return Some((
                Risk::McpOpenWorld,
                "its server says (or does not deny) that it reaches outside the project",
            ));
        }
        None
    }

    fn definition(&self) -> ToolDefinition {
        let mut schema = Value::Object((*self.tool.input_schema).clone());
        air_proto::tool::compact_schema(&mut schema);
        let description: String = self
            .tool
            .description
            .as_deref()
            .unwrap_or("")
            .chars()
            .take(2_000)
            .collect();
        ToolDefinition {
            name: self.name.clone(),
            version: 1,
            description: format!("(MCP server `{}`) {description}", self.server),
            input_schema: schema,
            output_schema: json!({}),
            category: ToolCategory::Mcp,
            permissions: ToolPermissions {
                read_paths: Some(PathPolicy::Anywhere),
                write_paths: (!self.read_only()).then_some(PathPolicy::Anywhere),
                network: Some(
                    self.tool
                        .annotations
                        .as_ref()
                        .and_then(|a| a.open_world_hint)
                        != Some(false),
                ),
                ..ToolPermissions::default()
            },
            streaming: false,
        }
    }
}

/// The run's MCP servers.
pub struct Hub {
    slots: Vec<Arc<Slot>>,
    /// The servers that do not start, and why (not trusted, changed since).
    passed: Vec<(String, String)>,
    budget_tokens: usize,
    launching: Launching,
    started: Mutex<Option<tokio::time::Instant>>,
}

impl Hub {
    /// No servers.
    pub fn none(launching: Launching) -> Hub {
        Hub {
            slots: Vec::new(),
            passed: Vec::new(),
            budget_tokens: mcp::DEFAULT_SCHEMA_BUDGET_TOKENS,
            launching,
            started: Mutex::new(None),
        }
    }

    /// The servers of `loaded` that may start in the project at `root` (the person's,
    /// and the project's a person trusted as they are now).
    pub fn new(loaded: &mcp::Loaded, trust: &Trust, launching: Launching) -> Hub {
        let root = launching.engine.root().to_path_buf();
        let mut hub = Hub::none(launching);
        hub.budget_tokens = loaded.schema_budget_tokens;
        for s in &loaded.servers {
            match trust.of(&root, s) {
                Trusted::Yes => hub.slots.push(Arc::new(Slot {
                    server: s.clone(),
                    live: tokio::sync::OnceCell::new(),
                })),
                Trusted::No => hub.passed.push((
                    s.name.clone(),
                    "a project's server a person has not trusted (`air mcp trust`)".into(),
                )),
                Trusted::Changed => hub.passed.push((
                    s.name.clone(),
                    "changed since a person trusted it (`air mcp trust`)".into(),
                )),
            }
        }
        hub
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Starts every server in the background (on the current runtime).
    pub fn warm(&self) {
        if self.slots.is_empty() {
            return;
        }
        *self.started.lock().unwrap_or_else(|p| p.into_inner()) = Some(tokio::time::Instant::now());
        for slot in &self.slots {
            let (slot, launching) = (slot.clone(), self.launching.clone());
            tokio::spawn(async move {
                if let Err(e) = live(&slot, &launching).await {
                    tracing::warn!("the MCP server `{}` did not start: {e}", slot.server.name);
                }
            });
        }
    }

    /// Waits (a while after the run's start at most) for the servers to be up.
    async fn settle(&self) {
        let Some(t0) = *self.started.lock().unwrap_or_else(|p| p.into_inner()) else {
            return;
        };
        let until = t0 + WAIT_AT_DISPATCH;
        for slot in &self.slots {
            let _ = tokio::time::timeout_at(until, live(slot, &self.launching)).await;
        }
    }

    /// Every tool of the servers that are up, with the servers that are not and why.
    pub fn found(&self) -> (Vec<Found>, Vec<(String, String)>) {
        let mut tools = Vec::new();
        let mut seen = std::collections::HashSet::new();
        let mut down = self.passed.clone();
        for slot in &self.slots {
            match slot.live.get() {
                Some(Ok(l)) => tools.extend(
                    l.tools
                        .iter()
                        .filter(|t| {
                            // One tool per name as agents see it (two servers' names may meet).
                            let name = mcp::tool_name(&slot.server.name, &t.name);
                            seen.insert(name)
                        })
                        .map(|t| Found {
                            server: slot.server.name.clone(),
                            name: mcp::tool_name(&slot.server.name, &t.name),
                            // Only the person's own declaration (or a capability's) turns a
                            // question off.
                            allowed: slot.server.source.is_persons()
                                && slot.server.allow.iter().any(|a| a == t.name.as_ref()),
                            tool: t.clone(),
                        }),
                ),
                Some(Err(e)) => down.push((slot.server.name.clone(), e.clone())),
                None => down.push((slot.server.name.clone(), "still starting".into())),
            }
        }
        (tools, down)
    }

    /// The tool an agent called by `name`.
    pub fn find(&self, name: &str) -> Option<Found> {
        self.found().0.into_iter().find(|f| f.name == name)
    }

    /// What an agent of `role` is offered: the tools it may call, or the search tool
    /// in their place when their schemas pass the budget. Waits for servers still
    /// starting, a while after the run's start at most.
    pub async fn offered(&self, role: AgentType) -> Vec<ToolDefinition> {
        if self.slots.is_empty() {
            return Vec::new();
        }
        self.settle().await;
        let (tools, down) = self.found();
        let defs: Vec<ToolDefinition> = tools
            .iter()
            .filter(|f| may_call(role, f))
            .map(Found::definition)
            .collect();
        let chars: usize = defs
            .iter()
            .map(|d| d.name.len() + d.description.len() + d.input_schema.to_string().len())
            .sum();
        if chars / 4 <= self.budget_tokens && down.iter().all(|(_, why)| why != "still starting") {
            return defs;
        }
        if defs.is_empty() && down.is_empty() {
            return Vec::new();
        }
        let servers: Vec<String> = self.slots.iter().map(|s| s.server.name.clone()).collect();
        vec![search_definition(&servers, defs.len())]
    }

    /// `mcp.search`: the tools whose name or description has the query's words, with
    /// their schemas (the agent's worker adds them to what it may call).
    pub async fn search(&self, role: AgentType, input: &Value) -> Result<Value, String> {
        let query = input
            .get("query")
            .and_then(Value::as_str)
            .ok_or("invalid input for `mcp_search` at `query`: expected a string")?
            .to_lowercase();
        let most = input
            .get("max_results")
            .and_then(Value::as_u64)
            .map_or(MOST_FOUND, |m| usize::try_from(m).unwrap_or(MOST_FOUND))
            .clamp(1, 20);
        // Servers still starting are waited for here, as long as a server may take.
        for slot in &self.slots {
            let _ = tokio::time::timeout(START, live(slot, &self.launching)).await;
        }
        let (tools, down) = self.found();
        let words: Vec<&str> = query.split_whitespace().collect();
        let mut scored: Vec<(usize, &Found)> = tools
            .iter()
            .filter(|f| may_call(role, f))
            .filter_map(|f| {
                let name = f.name.to_lowercase();
                if name == query || query == f.tool.name.to_lowercase() {
                    return Some((usize::MAX, f));
                }
                let text = format!(
                    "{name} {} {}",
                    f.tool.description.as_deref().unwrap_or("").to_lowercase(),
                    f.server.to_lowercase()
                );
                let score = words
                    .iter()
                    .filter(|w| text.contains(*w))
                    .map(|w| if name.contains(w) { 3 } else { 1 })
                    .sum::<usize>();
                (score > 0 || words.is_empty()).then_some((score, f))
            })
            .collect();
        scored.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.name.cmp(&b.1.name)));
        let found: Vec<ToolDefinition> = scored
            .iter()
            .take(most)
            .map(|(_, f)| f.definition())
            .collect();
        let names: Vec<&str> = found.iter().map(|d| d.name.as_str()).collect();
        Ok(json!({
            "content": if found.is_empty() {
                format!("no MCP tool matches `{query}`; the servers are {}", self.slots.iter().map(|s| s.server.name.as_str()).collect::<Vec<_>>().join(", "))
            } else {
                format!("loaded {}: call them as any other tool", names.join(", "))
            },
            "tools": found,
            "servers_down": down.iter().map(|(s, why)| json!({"server": s, "why": why})).collect::<Vec<_>>(),
        }))
    }

    /// Calls a server's tool; `asker` is asked about the server's connections out
    /// while it runs. The answer: its text (redacted), its structured content.
    pub async fn call(
        &self,
        found: &Found,
        arguments: Value,
        tool_run_id: &str,
        asker: Arc<dyn crate::proxy::Asks>,
    ) -> Result<Value, String> {
        let Some(slot) = self.slots.iter().find(|s| s.server.name == found.server) else {
            return Err(format!("no MCP server `{}` in this run", found.server));
        };
        let live = live(slot, &self.launching).await?;
        let arguments = match arguments {
            Value::Object(m) => m,
            Value::Null => serde_json::Map::new(),
            other => {
                return Err(format!(
                    "invalid input for `{}`: expected an object, got {other}",
                    found.name
                ))
            }
        };
        // Each call is a new command to the proxy: what an earlier one was refused is
        // asked again.
        if let Some(net) = &live.net {
            net.reset();
        }
        live.asker.set(tool_run_id, asker);
        let params = rmcp::model::CallToolRequestParams::new(found.tool.name.clone())
            .with_arguments(arguments);
        let limit = Duration::from_secs(slot.server.timeout_secs);
        let result = tokio::time::timeout(limit, live.client.call_tool(params)).await;
        live.asker.clear(tool_run_id);
        let result = match result {
            Err(_) => {
                return Err(format!(
                    "the MCP tool `{}` of `{}` took longer than {} s; it was cancelled",
                    found.tool.name, found.server, slot.server.timeout_secs
                ))
            }
            Ok(Err(e)) => return Err(live.failed(&e.to_string())),
            Ok(Ok(r)) => r,
        };
        let text = answer_text(&result);
        let (text, cut) = cut(&text);
        if result.is_error == Some(true) {
            return Err(format!(
                "the MCP tool `{}` of `{}` answered with an error: {text}",
                found.tool.name, found.server
            ));
        }
        let mut out = json!({
            "server": found.server,
            "tool": found.tool.name,
            "content": text,
            "truncated": cut,
        });
        if let Some(s) = result.structured_content {
            let text = s.to_string();
            if text.len() <= MOST_ANSWER_CHARS && crate::tools::secrets::find(&text).is_none() {
                out["structured_content"] = s;
            }
        }
        Ok(out)
    }
}

/// Whether an agent of `role` may call `f`: the roles that only read (and the Main
/// Agent, which reads and delegates) call the tools their servers say only read.
fn may_call(role: AgentType, f: &Found) -> bool {
    f.read_only() || matches!(role, AgentType::Executor | AgentType::Debugger)
}

/// Why `role` may not call `f` now (`evidence`: a debugger's is recorded).
pub fn refusal(role: AgentType, f: &Found, evidence: bool, plan: bool) -> Option<String> {
    if f.read_only() {
        return None;
    }
    if plan {
        return Some(format!(
            "`{}` is refused in plan mode: its server does not say it only reads",
            f.name
        ));
    }
    match role {
        AgentType::Executor => None,
        AgentType::Debugger if evidence => None,
        AgentType::Debugger => Some(format!(
            "`{}` is not allowed for a debugger yet: it fixes only after airsd has recorded its evidence (run the failing check with shell_run, or read the code involved, first)",
            f.name
        )),
        _ => Some(format!(
            "`{}` is not allowed for a {}: its server does not say it only reads, and a {} only reads",
            f.name,
            role.as_str(),
            role.as_str()
        )),
    }
}

/// The definition of `mcp.search`.
fn search_definition(servers: &[String], tools: usize) -> ToolDefinition {
    ToolDefinition {
        name: mcp::SEARCH_TOOL.into(),
        version: 1,
        description: format!(
            "Find and load tools of the MCP servers {} ({} tools{}): words of what you need, or a tool's exact name. The tools found are yours to call from then on.",
            servers.join(", "),
            tools,
            if tools == 0 { ", some still starting" } else { "" }
        ),
        input_schema: json!({
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Words of what the tool does, or its name."},
                "max_results": {"type": "integer", "description": "At most this many tools (default 8)."}
            },
            "required": ["query"]
        }),
        output_schema: json!({}),
        category: ToolCategory::Mcp,
        permissions: ToolPermissions::default(),
        streaming: false,
    }
}

/// The server of `slot`, started once (its error kept).
async fn live(slot: &Slot, launching: &Launching) -> Result<Arc<connect::Live>, String> {
    slot.live
        .get_or_init(|| async {
            match tokio::time::timeout(START, connect::start(&slot.server, launching)).await {
                Ok(r) => r.map(Arc::new),
                Err(_) => Err(format!(
                    "did not start and list its tools within {} s",
                    START.as_secs()
                )),
            }
        })
        .await
        .clone()
}

/// An answer's content as text: text blocks as they are, the rest named.
fn answer_text(r: &rmcp::model::CallToolResult) -> String {
    use rmcp::model::ContentBlock as RawContent;
    let mut parts = Vec::new();
    for c in &r.content {
        match c {
            RawContent::Text(t) => parts.push(t.text.clone()),
            RawContent::Image(i) => parts.push(format!(
                "[an image, {}, {} bytes of base64]",
                i.mime_type,
                i.data.len()
            )),
            RawContent::Audio(a) => parts.push(format!(
                "[audio, {}, {} bytes of base64]",
                a.mime_type,
                a.data.len()
            )),
            RawContent::Resource(r) => parts.push(match &r.resource {
                rmcp::model::ResourceContents::TextResourceContents { uri, text, .. } => {
                    format!("[resource {uri}]\n{text}")
                }
                rmcp::model::ResourceContents::BlobResourceContents { uri, blob, .. } => {
                    format!("[resource {uri}, {} bytes of base64]", blob.len())
                }
                _ => "[a resource of a kind air does not know]".to_string(),
            }),
            RawContent::ResourceLink(l) => parts.push(format!("[resource link {}]", l.uri)),
            _ => parts.push("[content of a kind air does not know]".into()),
        }
    }
    if parts.is_empty() {
        if let Some(s) = &r.structured_content {
            parts.push(s.to_string());
        }
    }
    crate::tools::secrets::redact(&parts.join("\n"))
}

/// `text`, at most [`MOST_ANSWER_CHARS`], and whether it was cut.
fn cut(text: &str) -> (String, bool) {
    match text.char_indices().nth(MOST_ANSWER_CHARS) {
        None => (text.to_string(), false),
        Some((i, _)) => (
            format!(
                "{}\n[… cut: the answer has {} characters]",
                &text[..i],
                text.chars().count()
            ),
            true,
        ),
    }
}
