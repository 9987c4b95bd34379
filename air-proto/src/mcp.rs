//! MCP servers air connects to: declared in `~/.air/mcp.yaml` (the person's own),
//! `.air/shared/mcp.yaml` (the project's) and the project's `.mcp.json` (Claude
//! Code's file, read as well). A project's server starts only once a person trusted
//! it ([`crate::trust::Trust`]), pinned by the hash of its command and configuration
//! and of the project's files its command names: changed, it is asked about again.
//! docs/mcp.md.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

pub use crate::hooks::HookSource as Source;
use crate::trust::{hash_parts, hex, pin_of, read_config, Pinned};

/// Longest one tool call may take when the server's declaration does not say
/// (seconds).
pub const DEFAULT_TIMEOUT_SECS: u64 = 120;
/// Longest any tool call may take.
pub const MAX_TIMEOUT_SECS: u64 = 3600;
/// Past this many tokens of MCP tool schemas (about four characters each), an agent
/// is offered one search tool that loads a schema on demand instead.
pub const DEFAULT_SCHEMA_BUDGET_TOKENS: usize = 8_000;

/// How air reaches a server.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case", tag = "type")]
pub enum Transport {
    /// A program air starts (under its sandbox), speaking MCP on stdin and stdout.
    Stdio {
        command: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        args: Vec<String>,
        /// Variables set for it besides the sandbox's allowlist; `${NAME}` in a value
        /// is taken from airsd's environment.
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        env: BTreeMap<String, String>,
    },
    /// A server at a URL, over streamable HTTP (with OAuth when it asks for it).
    Http {
        url: String,
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        headers: BTreeMap<String, String>,
    },
}

/// One server, as declared.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct McpServer {
    /// Its name: its tools reach agents as `mcp__<name>__<tool>`.
    pub name: String,
    pub transport: Transport,
    /// Longest one of its tool calls may take (seconds).
    pub timeout_secs: u64,
    /// Its tools that never ask, whatever their annotations say.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allow: Vec<String>,
    pub source: Source,
    pub file: PathBuf,
    /// The project's files its command and arguments name, with the hash of each as
    /// it is now: what the server runs is in its pin too.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scripts: Vec<(PathBuf, String)>,
}

impl McpServer {
    /// The command line as shown to a person (stdio), or the URL.
    pub fn shown(&self) -> String {
        match &self.transport {
            Transport::Stdio { command, args, .. } => std::iter::once(command.as_str())
                .chain(args.iter().map(String::as_str))
                .map(|w| {
                    if w.is_empty() || w.contains(|c: char| c.is_whitespace() || c == '\'') {
                        format!("{w:?}")
                    } else {
                        w.to_string()
                    }
                })
                .collect::<Vec<_>>()
                .join(" "),
            Transport::Http { url, .. } => url.clone(),
        }
    }
}

impl Pinned for McpServer {
    /// The hash of everything declared (each part length-prefixed and tagged, so that
    /// no hook and no other server shares it).
    fn identity(&self) -> String {
        let mut parts: Vec<String> = vec!["mcp".into(), self.name.clone()];
        match &self.transport {
            Transport::Stdio { command, args, env } => {
                parts.push("stdio".into());
                parts.push(command.clone());
                parts.push(args.len().to_string());
                parts.extend(args.iter().cloned());
                for (k, v) in env {
                    parts.push(format!("env {k}={v}"));
                }
            }
            Transport::Http { url, headers } => {
                parts.push("http".into());
                parts.push(url.clone());
                for (k, v) in headers {
                    parts.push(format!("header {k}: {v}"));
                }
            }
        }
        parts.push(self.timeout_secs.to_string());
        parts.extend(self.allow.iter().map(|a| format!("allow {a}")));
        hash_parts(parts.iter().map(String::as_str))
    }

    fn pin(&self) -> String {
        pin_of(&self.identity(), &self.scripts)
    }

    fn needs_trust(&self) -> bool {
        !matches!(
            self.source,
            Source::User | Source::Capability | Source::ProjectCapability
        )
    }
}

/// Whether `name` may name a server: letters, digits, `-` and `_`, at most 32, no
/// `__` (which separates a tool's parts).
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 32
        && !name.contains("__")
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// The servers of one file and the settings it gives, and what was passed over.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Parsed {
    pub servers: Vec<McpServer>,
    /// `schema_budget_tokens`, when the file says.
    pub schema_budget_tokens: Option<usize>,
    pub warnings: Vec<String>,
}

fn strings(v: &Value, at: &str) -> Result<Vec<String>, String> {
    match v {
        Value::Array(a) => a
            .iter()
            .enumerate()
            .map(|(i, s)| match s {
                Value::String(s) => Ok(s.clone()),
                Value::Number(n) => Ok(n.to_string()),
                _ => Err(format!("{at}[{i}]: expected a string")),
            })
            .collect(),
        _ => Err(format!("{at}: expected a list of strings")),
    }
}

fn string_map(v: &Value, at: &str) -> Result<BTreeMap<String, String>, String> {
    let Value::Object(m) = v else {
        return Err(format!("{at}: expected a map of names to strings"));
    };
    m.iter()
        .map(|(k, v)| match v {
            Value::String(s) => Ok((k.clone(), s.clone())),
            Value::Number(n) => Ok((k.clone(), n.to_string())),
            Value::Bool(b) => Ok((k.clone(), b.to_string())),
            _ => Err(format!("{at}.{k}: expected a string")),
        })
        .collect()
}

fn no_control(s: &str, at: &str) -> Result<(), String> {
    if s.chars().any(char::is_control) {
        return Err(format!(
            "{at}: a control character (what it shows would not be what runs)"
        ));
    }
    Ok(())
}

/// One server's declaration (`at` names it in errors).
fn server(
    name: &str,
    v: &Value,
    at: &str,
    file: &Path,
    source: Source,
) -> Result<Option<McpServer>, String> {
    let Value::Object(m) = v else {
        return Err(format!(
            "{at}: expected a map (command, args, env or url, headers)"
        ));
    };
    const KNOWN: &[&str] = &[
        "type", "command", "args", "env", "url", "headers", "timeout", "allow", "disabled",
    ];
    if let Some(k) = m.keys().find(|k| !KNOWN.contains(&k.as_str())) {
        return Err(format!(
            "{at}.{}: not a field air knows ({})",
            k.escape_debug(),
            KNOWN.join(", ")
        ));
    }
    if m.get("disabled").and_then(Value::as_bool) == Some(true) {
        return Ok(None);
    }
    let kind = match m.get("type") {
        None => None,
        Some(Value::String(t)) => Some(t.as_str()),
        Some(_) => return Err(format!("{at}.type: expected a string")),
    };
    let text = |k: &str| -> Result<Option<String>, String> {
        match m.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => {
                no_control(s, &format!("{at}.{k}"))?;
                Ok(Some(s.clone()))
            }
            Some(_) => Err(format!("{at}.{k}: expected a string")),
        }
    };
    let transport = match (kind, text("command")?, text("url")?) {
        (Some("sse"), _, _) => {
            return Err(format!(
                "{at}.type: `sse`, MCP's old HTTP transport, which air does not speak; give the server's streamable HTTP URL with type `http`"
            ))
        }
        (None | Some("stdio"), Some(command), None) => {
            if command.trim().is_empty() {
                return Err(format!("{at}.command: empty"));
            }
            let args = m
                .get("args")
                .map(|a| strings(a, &format!("{at}.args")))
                .transpose()?
                .unwrap_or_default();
            for (i, a) in args.iter().enumerate() {
                no_control(a, &format!("{at}.args[{i}]"))?;
            }
            let env = m
                .get("env")
                .map(|e| string_map(e, &format!("{at}.env")))
                .transpose()?
                .unwrap_or_default();
            Transport::Stdio { command, args, env }
        }
        (None | Some("http" | "streamable-http" | "streamable_http"), None, Some(url)) => {
            if !(url.starts_with("https://") || url.starts_with("http://")) {
                return Err(format!("{at}.url: `{url}`: expected an http or https URL"));
            }
            let headers = m
                .get("headers")
                .map(|h| string_map(h, &format!("{at}.headers")))
                .transpose()?
                .unwrap_or_default();
            for (k, v) in &headers {
                no_control(v, &format!("{at}.headers.{k}"))?;
            }
            Transport::Http { url, headers }
        }
        (_, Some(_), Some(_)) => {
            return Err(format!(
                "{at}: both `command` and `url`; a server is one or the other"
            ))
        }
        (Some(t), _, _)
            if !matches!(t, "stdio" | "http" | "streamable-http" | "streamable_http") =>
        {
            return Err(format!(
                "{at}.type: `{}`: expected stdio or http",
                t.escape_debug()
            ))
        }
        _ => {
            return Err(format!(
                "{at}: neither `command` (a program air starts) nor `url` (a server over HTTP)"
            ))
        }
    };
    let timeout_secs = match m.get("timeout") {
        None => DEFAULT_TIMEOUT_SECS,
        Some(t) => match t.as_u64() {
            Some(t) if (1..=MAX_TIMEOUT_SECS).contains(&t) => t,
            _ => {
                return Err(format!(
                    "{at}.timeout: {t}; give 1 to {MAX_TIMEOUT_SECS} seconds"
                ))
            }
        },
    };
    let allow = m
        .get("allow")
        .map(|a| strings(a, &format!("{at}.allow")))
        .transpose()?
        .unwrap_or_default();
    Ok(Some(McpServer {
        name: name.to_string(),
        transport,
        timeout_secs,
        allow,
        source,
        file: file.to_path_buf(),
        scripts: Vec::new(),
    }))
}

/// The servers of one file: air's `mcp.yaml` (`servers:`) or Claude Code's
/// `.mcp.json` (`mcpServers`); either key is read in either file.
pub fn parse(text: &str, file: &Path, source: Source) -> Result<Parsed, String> {
    let shown = file.display();
    let value: Value = if file.extension().is_some_and(|e| e == "json") {
        serde_json::from_str(text).map_err(|e| format!("{shown}: not JSON: {e}"))?
    } else {
        yaml_serde::from_str(text).map_err(|e| format!("{shown}: not YAML: {e}"))?
    };
    let mut out = Parsed::default();
    let top = match value {
        Value::Null => return Ok(out),
        Value::Object(m) => m,
        _ => return Err(format!("{shown}: expected a map with `servers`")),
    };
    if let Some(b) = top.get("schema_budget_tokens") {
        out.schema_budget_tokens = Some(
            b.as_u64()
                .and_then(|b| usize::try_from(b).ok())
                .ok_or_else(|| format!("{shown}: schema_budget_tokens: {b}: expected a count"))?,
        );
    }
    for k in top.keys() {
        if !matches!(
            k.as_str(),
            "servers" | "mcpServers" | "schema_budget_tokens"
        ) {
            out.warnings.push(format!(
                "{shown}: {}: not a field air knows (servers, mcpServers, schema_budget_tokens): passed over",
                k.escape_debug()
            ));
        }
    }
    for key in ["servers", "mcpServers"] {
        let Some(servers) = top.get(key) else {
            continue;
        };
        let servers = match servers {
            Value::Null => continue,
            Value::Object(m) => m,
            _ => {
                return Err(format!(
                    "{shown}: {key}: expected a map of names to servers"
                ))
            }
        };
        for (name, v) in servers {
            let at = format!("{shown}: {key}.{}", name.escape_debug());
            if !valid_name(name) {
                out.warnings.push(format!(
                    "{at}: a server's name is letters, digits, `-` and `_` (at most 32, no `__`): passed over"
                ));
                continue;
            }
            if let Some(s) = server(name, v, &at, file, source)? {
                out.servers.push(s);
            }
        }
    }
    Ok(out)
}

/// Every server of a project, and what was passed over.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Loaded {
    pub servers: Vec<McpServer>,
    pub schema_budget_tokens: usize,
    pub warnings: Vec<String>,
}

/// The project's files that may declare servers.
pub fn project_files(root: &Path) -> [(PathBuf, Source); 2] {
    [
        (
            root.join(".air").join("shared").join("mcp.yaml"),
            Source::Project,
        ),
        (root.join(".mcp.json"), Source::Claude),
    ]
}

/// Every server of the project at `root`, the person's first (from `user_file`,
/// `~/.air/mcp.yaml`). The person's own file that cannot be read is an error naming
/// it; a project's is passed over with a warning. A project's server named as one of
/// the person's is passed over: the person's is the one that runs.
pub fn load(user_file: Option<&Path>, root: &Path) -> Result<Loaded, String> {
    let mut out = Loaded {
        schema_budget_tokens: DEFAULT_SCHEMA_BUDGET_TOKENS,
        ..Loaded::default()
    };
    if let Some(file) = user_file {
        if let Some(text) = read_config(file, true)? {
            let parsed = parse(&text, file, Source::User)?;
            out.servers.extend(parsed.servers);
            out.warnings.extend(parsed.warnings);
            if let Some(b) = parsed.schema_budget_tokens {
                out.schema_budget_tokens = b;
            }
        }
    }
    // The trusted capabilities' servers, as the person's (`${CAPABILITY_DIR}` is the
    // capability's folder); one of the person's of the same name wins.
    let (capabilities, warnings) =
        crate::capability::trusted(user_file.and_then(Path::parent), root);
    out.warnings.extend(warnings);
    for c in &capabilities {
        let Some(yaml) = c.mcp_yaml() else { continue };
        let file = c.dir.join(crate::capability::MANIFEST);
        match parse(&yaml, &file, crate::hooks::capability_source(c)) {
            Ok(parsed) => {
                let dir = c.dir.display().to_string();
                for mut s in parsed.servers {
                    if out.servers.iter().any(|o| o.name == s.name) {
                        let other = out.servers.iter().find(|o| o.name == s.name);
                        out.warnings.push(format!(
                            "capability `{}`: server `{}` is also declared in {}: that one is used",
                            c.manifest.name,
                            s.name,
                            other.map_or_else(String::new, |o| o.file.display().to_string())
                        ));
                        continue;
                    }
                    if let Transport::Stdio { command, args, env } = &mut s.transport {
                        *command = command.replace("${CAPABILITY_DIR}", &dir);
                        for a in args.iter_mut().chain(env.values_mut()) {
                            *a = a.replace("${CAPABILITY_DIR}", &dir);
                        }
                    }
                    out.servers.push(s);
                }
            }
            Err(e) => out.warnings.push(format!("{e}: its servers do not start")),
        }
    }
    for (file, source) in project_files(root) {
        let parsed = read_config(&file, false).and_then(|text| match text {
            None => Ok(Parsed::default()),
            Some(t) => parse(&t, &file, source),
        });
        match parsed {
            Ok(parsed) => {
                out.warnings.extend(parsed.warnings);
                if parsed.schema_budget_tokens.is_some() {
                    out.warnings.push(format!(
                        "{}: schema_budget_tokens is yours to set (~/.air/mcp.yaml): passed over",
                        file.display()
                    ));
                }
                for mut s in parsed.servers {
                    if let Some(other) = out.servers.iter().find(|o| o.name == s.name) {
                        out.warnings.push(format!(
                            "{}: server `{}` is also declared in {}: that one is used",
                            file.display(),
                            s.name,
                            other.file.display()
                        ));
                        continue;
                    }
                    // What runs is named as it is: a project's command and arguments
                    // take nothing from the environment.
                    if let Transport::Stdio { command, args, .. } = &s.transport {
                        if std::iter::once(command)
                            .chain(args)
                            .any(|w| w.contains("${"))
                        {
                            out.warnings.push(format!(
                                "{}: server `{}`: a project's server names no `${{…}}` in its command or arguments (only in `env`): it does not start",
                                file.display(),
                                s.name
                            ));
                            continue;
                        }
                    }
                    s.scripts = named_files(&s, root);
                    out.servers.push(s);
                }
            }
            Err(e) => out.warnings.push(format!("{e}: its servers do not start")),
        }
    }
    Ok(out)
}

/// Most bytes of one named file hashed; a larger one is pinned by its size and time.
const MOST_HASHED: u64 = 512 * 1024 * 1024;

/// What a project server's words name, each with what it is now: every word of its
/// command, arguments and variables (and what follows a `=` in one) that is a path
/// (from the project, or where a link in it leads), as the hash of a file's bytes,
/// `dir` for a folder, `missing` for a path that is not there yet (a file a later
/// pull adds changes the pin). A folder's files are not in it.
pub fn named_files(s: &McpServer, root: &Path) -> Vec<(PathBuf, String)> {
    let Ok(real_root) = std::fs::canonicalize(root) else {
        return Vec::new();
    };
    let mut words: Vec<&str> = Vec::new();
    if let Transport::Stdio { command, args, env } = &s.transport {
        words.push(command);
        words.extend(args.iter().map(String::as_str));
        for v in env.values() {
            words.extend(v.split(|c: char| c.is_whitespace() || c == ':' || c == ','));
        }
    }
    let mut out: Vec<(PathBuf, String)> = Vec::new();
    for w in words {
        let after = w.split_once('=').map(|(_, a)| a);
        for c in std::iter::once(w).chain(after) {
            let c = c.trim_matches(|c| c == '"' || c == '\'');
            if c.is_empty() || (c.starts_with('-') && !c.contains('/')) {
                continue;
            }
            let given = Path::new(c);
            let path = root.join(given);
            let state = match std::fs::canonicalize(&path) {
                Err(_) if c.contains('/') || c.contains('.') => "missing".to_string(),
                Err(_) => continue,
                Ok(real) => {
                    let outside = !real.starts_with(&real_root);
                    // A program of the system named by its absolute path is not the
                    // project's to change.
                    if outside && given.is_absolute() {
                        continue;
                    }
                    let what = match std::fs::metadata(&real) {
                        Ok(m) if m.is_file() && m.len() <= MOST_HASHED => hash_file(&real),
                        Ok(m) if m.is_file() => {
                            format!("large {} {:?}", m.len(), m.modified().ok())
                        }
                        Ok(m) if m.is_dir() => "dir".to_string(),
                        Ok(_) => "special".to_string(),
                        Err(e) => format!("unreadable {e}"),
                    };
                    if outside {
                        format!("outside {} {what}", real.display())
                    } else {
                        what
                    }
                }
            };
            if !out.iter().any(|(p, _)| *p == path) {
                out.push((path, state));
            }
        }
    }
    out
}

fn hash_file(path: &Path) -> String {
    use std::io::Read as _;
    let Ok(mut f) = std::fs::File::open(path) else {
        return "unreadable".into();
    };
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => h.update(&buf[..n]),
            Err(_) => return "unreadable".into(),
        }
    }
    hex(&h.finalize())
}

/// `${NAME}` and `${NAME:-default}` in `text`, from `lookup`; a name that is not set
/// and has no default is an error naming it.
pub fn expand(text: &str, lookup: impl Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = text;
    while let Some(i) = rest.find("${") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        let Some(end) = after.find('}') else {
            return Err(format!("`{text}`: `${{` without its `}}`"));
        };
        let inner = &after[..end];
        let (name, default) = match inner.split_once(":-") {
            Some((n, d)) => (n, Some(d)),
            None => (inner, None),
        };
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!("`{text}`: `${{{inner}}}` is not a variable"));
        }
        match (lookup(name), default) {
            (Some(v), _) => out.push_str(&v),
            (None, Some(d)) => out.push_str(d),
            (None, None) => {
                return Err(format!(
                    "`${{{name}}}` is not set in airsd's environment (set it, or give a default: `${{{name}:-…}}`)"
                ))
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// A tool's name as agents see it: `mcp__<server>__<tool>`, within the providers'
/// rule (`^[a-zA-Z0-9_-]{1,64}$`): other characters become `_`, and a name too long
/// is cut and ends with a short hash of the whole.
pub fn tool_name(server: &str, tool: &str) -> String {
    let clean: String = tool
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let full = format!("mcp__{server}__{clean}");
    if full.len() <= 64 && clean == tool {
        return full;
    }
    let hash = hex(&Sha256::digest(tool.as_bytes()));
    let keep = 64usize.saturating_sub(9).min(full.len());
    format!("{}_{}", &full[..keep], &hash[..8])
}

/// Whether `name` is an MCP tool's name as agents see it.
pub fn is_tool_name(name: &str) -> bool {
    name.starts_with("mcp__")
}

/// The search tool agents are offered in place of MCP tools past the budget.
pub const SEARCH_TOOL: &str = "mcp.search";

/// Adds (or replaces) the server `name` in the file at `file` (`mcp.yaml`; made when
/// missing), checked as it would be read. The file is written whole, as YAML.
pub fn add_to(file: &Path, name: &str, server: Value) -> Result<(), String> {
    if !valid_name(name) {
        return Err(format!(
            "`{name}`: a server's name is letters, digits, `-` and `_` (at most 32, no `__`)"
        ));
    }
    let mut top = read_top(file)?;
    let servers = top
        .entry("servers")
        .or_insert_with(|| Value::Object(serde_json::Map::new()));
    let Value::Object(servers) = servers else {
        return Err(format!("{}: servers: expected a map", file.display()));
    };
    servers.insert(name.to_string(), server);
    write_top(file, top)
}

/// Removes the server `name` from the file at `file`; whether it was there.
pub fn remove_from(file: &Path, name: &str) -> Result<bool, String> {
    let mut top = read_top(file)?;
    let mut gone = false;
    for key in ["servers", "mcpServers"] {
        if let Some(Value::Object(servers)) = top.get_mut(key) {
            gone |= servers.remove(name).is_some();
        }
    }
    if gone {
        write_top(file, top)?;
    }
    Ok(gone)
}

fn read_top(file: &Path) -> Result<serde_json::Map<String, Value>, String> {
    match read_config(file, true)? {
        None => Ok(serde_json::Map::new()),
        Some(text) => match yaml_serde::from_str::<Value>(&text)
            .map_err(|e| format!("{}: not YAML: {e}", file.display()))?
        {
            Value::Null => Ok(serde_json::Map::new()),
            Value::Object(m) => Ok(m),
            _ => Err(format!("{}: expected a map with `servers`", file.display())),
        },
    }
}

fn write_top(file: &Path, top: serde_json::Map<String, Value>) -> Result<(), String> {
    let text = yaml_serde::to_string(&Value::Object(top)).map_err(|e| e.to_string())?;
    // What is written must read back.
    parse(&text, file, Source::User)?;
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    crate::trust::write_private(file, text.as_bytes())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn servers_are_read_from_airs_file_and_claude_codes() {
        let yaml = "servers:\n  everything:\n    command: npx\n    args: [-y, '@modelcontextprotocol/server-everything']\n    env: {TOKEN: '${TOKEN:-none}'}\n    allow: [echo]\n  remote:\n    url: https://mcp.example.com/mcp\n    headers: {X-Key: abc}\n  off:\n    command: x\n    disabled: true\nschema_budget_tokens: 100\n";
        let p = parse(yaml, Path::new("mcp.yaml"), Source::User).unwrap();
        assert_eq!(p.servers.len(), 2);
        assert_eq!(p.schema_budget_tokens, Some(100));
        assert_eq!(p.servers[0].allow, vec!["echo"]);
        assert!(
            matches!(&p.servers[1].transport, Transport::Http { url, .. } if url.ends_with("/mcp"))
        );
        let json = r#"{"mcpServers": {"fs": {"type": "stdio", "command": "npx", "args": ["-y", "x", "."]}, "web": {"type": "http", "url": "http://127.0.0.1:9/mcp"}}}"#;
        let p = parse(json, Path::new(".mcp.json"), Source::Claude).unwrap();
        assert_eq!(p.servers.len(), 2);
        // What is wrong is named where it is.
        let e = parse(
            "servers:\n  a:\n    command: x\n    argz: []\n",
            Path::new("m.yaml"),
            Source::User,
        )
        .unwrap_err();
        assert!(e.contains("servers.a.argz"), "{e}");
        let e = parse(
            r#"{"mcpServers": {"a": {"type": "sse", "url": "http://x/sse"}}}"#,
            Path::new(".mcp.json"),
            Source::Claude,
        )
        .unwrap_err();
        assert!(e.contains("streamable HTTP"), "{e}");
        let e = parse(
            "servers:\n  a:\n    command: \"x\\u001b[2Jy\"\n",
            Path::new("m.yaml"),
            Source::User,
        )
        .unwrap_err();
        assert!(e.contains("control character"), "{e}");
        let p = parse(
            "servers:\n  a__b:\n    command: x\n",
            Path::new("m.yaml"),
            Source::User,
        )
        .unwrap();
        assert!(p.servers.is_empty() && p.warnings.len() == 1);
    }

    #[test]
    fn a_servers_pin_follows_its_command_config_and_scripts() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("srv.js"), "one").unwrap();
        std::fs::write(
            dir.path().join(".mcp.json"),
            r#"{"mcpServers": {"s": {"command": "node", "args": ["./srv.js"]}}}"#,
        )
        .unwrap();
        let a = load(None, dir.path()).unwrap();
        assert_eq!(a.servers.len(), 1);
        assert_eq!(a.servers[0].scripts.len(), 1);
        std::fs::write(dir.path().join("srv.js"), "two").unwrap();
        let b = load(None, dir.path()).unwrap();
        assert_eq!(a.servers[0].identity(), b.servers[0].identity());
        assert_ne!(a.servers[0].pin(), b.servers[0].pin());
        let mut trust = crate::trust::Trust::default();
        trust.trust(dir.path(), &a.servers);
        assert_eq!(
            trust.of(dir.path(), &a.servers[0]),
            crate::trust::Trusted::Yes
        );
        assert_eq!(
            trust.of(dir.path(), &b.servers[0]),
            crate::trust::Trusted::Changed
        );
    }

    #[test]
    fn variables_are_expanded_or_named() {
        let env = |n: &str| (n == "A").then(|| "1".to_string());
        assert_eq!(expand("x${A}y${B:-2}", env).unwrap(), "x1y2");
        assert!(expand("${B}", env).unwrap_err().contains("`${B}`"));
        assert!(expand("${A", env).is_err());
    }

    #[test]
    fn tool_names_fit_the_providers_rule() {
        assert_eq!(
            tool_name("everything", "get-sum"),
            "mcp__everything__get-sum"
        );
        let long = tool_name("s", &"x.".repeat(60));
        assert!(
            long.len() <= 64 && long.starts_with("mcp__s__x_x_"),
            "{long}"
        );
        assert_ne!(tool_name("s", "a.b"), tool_name("s", "a_b"));
    }
}
