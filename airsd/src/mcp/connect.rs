//! Starting one server: a stdio server's process under the sandbox (as an agent's
//! command is: the project writable, the rest of the home hidden, a clean
//! environment, the network through airsd's proxy), or a connection to an HTTP one;
//! then MCP's handshake and the list of its tools.

use std::path::Path;
use std::sync::{Arc, Mutex};

use air_proto::mcp::{expand, McpServer, Transport};
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, Tool};
use rmcp::service::{RoleClient, RunningService};
use rmcp::ServiceExt as _;

use super::{CurrentAsker, Launching};

/// Most of a server's stderr kept, to say why it stopped.
const STDERR_TAIL: usize = 4 * 1024;

/// A server that is up.
pub struct Live {
    pub client: RunningService<RoleClient, ClientConfig>,
    pub tools: Vec<Tool>,
    pub asker: Arc<CurrentAsker>,
    /// How its connections out are judged (a stdio server's in its own network).
    pub net: Option<crate::proxy::CommandNet>,
    /// A stdio server's process group, killed with it.
    _group: Group,
    stderr: Arc<Mutex<String>>,
    _net: Option<crate::proxy::Registered>,
}

impl Live {
    /// Ends the session as MCP says (an HTTP server's is deleted, a refresh under
    /// way is saved), a while at most.
    pub async fn close(self) {
        let _ = tokio::time::timeout(std::time::Duration::from_secs(5), self.client.cancel()).await;
    }

    /// Why a call failed, with what the server said last on stderr.
    pub fn failed(&self, error: &str) -> String {
        let tail = self
            .stderr
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let tail = crate::tools::secrets::redact(tail.trim());
        if tail.is_empty() {
            format!("the MCP server failed: {error}")
        } else {
            format!("the MCP server failed: {error}; its last words: {tail}")
        }
    }
}

/// An rmcp error without the Rust type names it carries (`Transport [rmcp::…]`).
fn plain(error: &str) -> String {
    let mut out = error.to_string();
    while let Some(i) = out.find("Transport [") {
        let Some(end) = out[i..].find("] ") else {
            break;
        };
        out.replace_range(i..i + end + 2, "");
    }
    out.replace("Send message error error: ", "")
        .replace("Client error: ", "")
}

fn client_config() -> ClientConfig {
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("air", env!("CARGO_PKG_VERSION")),
    )
}

/// What `${NAME}` stands for in a server's declaration: airsd's variable. A server
/// the person did not declare themselves (a project's) is given no secret, by its
/// name or its value.
pub(super) fn lookup(server: &McpServer) -> impl Fn(&str) -> Option<String> {
    let own = server.source.is_persons();
    move |name: &str| {
        let v = std::env::var(name).ok()?;
        if own || (!crate::tools::exec::secret(name) && !crate::tools::secrets::in_value(&v)) {
            Some(v)
        } else {
            // Withheld: the project's server gets it empty.
            Some(String::new())
        }
    }
}

/// A process group, killed when this goes (a server's, from its start on).
struct Group(Option<i32>);

impl Drop for Group {
    fn drop(&mut self) {
        if let Some(g) = self.0 {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(g),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}

/// Starts `server` and lists its tools.
pub async fn start(server: &McpServer, launching: &Launching) -> Result<Live, String> {
    match &server.transport {
        Transport::Stdio { command, args, env } => {
            stdio(server, command, args, env, launching).await
        }
        Transport::Http { url, headers } => http(server, url, headers, launching).await,
    }
}

async fn handshake<T, E, A>(
    transport: T,
) -> Result<(RunningService<RoleClient, ClientConfig>, Vec<Tool>), String>
where
    T: rmcp::transport::IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let client = client_config()
        .serve(transport)
        .await
        .map_err(|e| format!("the MCP handshake failed: {}", plain(&e.to_string())))?;
    let tools = client
        .list_all_tools()
        .await
        .map_err(|e| format!("cannot list its tools: {e}"))?;
    Ok((client, tools))
}

/// Most tools one server offers, and the largest schema of one.
const MOST_TOOLS: usize = 500;
const MOST_SCHEMA_BYTES: usize = 64 * 1024;

/// A server's tools as agents may be offered them: the first of each name (as
/// agents see it), none whose schema is larger than [`MOST_SCHEMA_BYTES`], at most
/// [`MOST_TOOLS`].
fn fit(tools: Vec<Tool>) -> Vec<Tool> {
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for t in tools {
        let size = serde_json::to_string(&*t.input_schema).map_or(usize::MAX, |s| s.len());
        if size > MOST_SCHEMA_BYTES {
            tracing::warn!(
                "an MCP tool's schema of {size} bytes is left out: {:?}",
                t.name
            );
            continue;
        }
        if t.name.is_empty() || t.name.chars().any(char::is_control) || t.name.len() > 128 {
            continue;
        }
        if seen.insert(t.name.to_string()) && out.len() < MOST_TOOLS {
            out.push(t);
        }
    }
    out
}

async fn stdio(
    server: &McpServer,
    command: &str,
    args: &[String],
    env_given: &std::collections::BTreeMap<String, String>,
    launching: &Launching,
) -> Result<Live, String> {
    use crate::tools::exec;
    let engine = &launching.engine;
    let root = engine.root();
    let sandbox = launching
        .sandbox_exe
        .as_ref()
        .filter(|(_, p)| engine.sandbox() && (p.landlock || p.isolation.is_ok()));
    // A project's server runs in its own namespaces (its network through the
    // proxy, the home hidden), or not at all.
    if !server.source.is_persons() && sandbox.is_none_or(|(_, p)| p.isolation.is_err()) {
        return Err(
            "a project's MCP server starts only in air's isolating sandbox (its own network, the home hidden), which this machine (or permissions.yaml) does not give"
                .into(),
        );
    }
    let env_var = lookup(server);
    let command = expand(command, &env_var)?;
    let args = args
        .iter()
        .map(|a| expand(a, &env_var))
        .collect::<Result<Vec<_>, _>>()?;
    let plan = engine.mode() == air_proto::plan::PermissionMode::Plan;
    let writable = if plan {
        vec![std::env::temp_dir()]
    } else {
        crate::sandbox::writable(root, engine.home(), engine.writable_roots())
    };
    let isolated = sandbox.is_some_and(|(_, p)| p.isolation.is_ok());
    let views = isolated.then(|| engine.views(&writable, &[], &[]));
    let registered = match (&launching.proxy, isolated) {
        (Some(proxy), true) => {
            let asker = Arc::new(CurrentAsker::default());
            let net = crate::proxy::CommandNet::new(launching.net.clone(), asker.clone());
            let r = proxy.register(net.clone());
            Some((proxy.address(&r), r, asker, net))
        }
        _ => None,
    };
    let mut env = exec::command_env(std::env::vars_os(), engine.shell_env(), engine.home());
    if registered.is_some() {
        exec::through_proxy(&mut env);
    }
    // The declared variables are set by `env` inside the sandbox, never on the
    // launcher: what the dynamic loader reads (LD_PRELOAD …) acts on the sandboxed
    // program only.
    let mut declared = Vec::new();
    for (k, v) in env_given {
        let v = expand(v, &env_var).map_err(|e| format!("env {k}: {e}"))?;
        declared.push(format!("{k}={v}"));
    }
    let mut cmd = match sandbox {
        Some((exe, _)) => {
            let env_program = ["/usr/bin/env", "/bin/env"]
                .into_iter()
                .find(|p| Path::new(p).is_file())
                .unwrap_or("env");
            let inner: Vec<String> = std::iter::once("-".to_string())
                .chain(declared)
                .chain(std::iter::once(command.clone()))
                .chain(args.iter().cloned())
                .collect();
            let mut c = tokio::process::Command::new(exe);
            c.args(crate::sandbox::launcher_args(
                &crate::sandbox::Policy {
                    writable,
                    home: engine.home().map(Path::to_path_buf),
                    home_read: engine.home_read(),
                    isolate: views,
                    net: registered.as_ref().map(|(a, _, _, _)| a.clone()),
                },
                env_program,
                &inner,
            ));
            c
        }
        None => {
            // Only the person's own server runs without the sandbox.
            for d in &declared {
                if let Some((k, v)) = d.split_once('=') {
                    env.retain(|(n, _)| n.to_str() != Some(k));
                    env.push((k.into(), v.into()));
                }
            }
            let mut c = tokio::process::Command::new(&command);
            c.args(&args);
            c
        }
    };
    cmd.env_clear()
        .envs(env.iter().map(|(k, v)| (k, v)))
        .current_dir(root)
        .process_group(0)
        .kill_on_drop(true);
    let (transport, stderr) = rmcp::transport::TokioChildProcess::builder(cmd)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start `{command}`: {e}"))?;
    let group = Group(transport.id().and_then(|id| i32::try_from(id).ok()));
    let tail = Arc::new(Mutex::new(String::new()));
    if let Some(mut err) = stderr {
        let tail = tail.clone();
        tokio::spawn(async move {
            use tokio::io::AsyncReadExt as _;
            let mut buf = vec![0u8; 4096];
            while let Ok(n) = err.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                let mut t = tail.lock().unwrap_or_else(|p| p.into_inner());
                t.push_str(&String::from_utf8_lossy(&buf[..n]));
                if t.len() > STDERR_TAIL {
                    let from = t.len() - STDERR_TAIL;
                    let from = (from..t.len())
                        .find(|i| t.is_char_boundary(*i))
                        .unwrap_or(0);
                    *t = t[from..].to_string();
                }
            }
        });
    }
    // On a failed start the group goes with `group`, dropped here.
    let kill = |why: String| {
        let said =
            crate::tools::secrets::redact(tail.lock().unwrap_or_else(|p| p.into_inner()).trim());
        if said.is_empty() {
            why
        } else {
            format!("{why}; it said: {said}")
        }
    };
    let (client, tools) = match handshake(transport).await {
        Ok(x) => x,
        Err(e) => return Err(kill(e)),
    };
    let tools = fit(tools);
    let (registration, asker, net) = match registered {
        Some((_, r, asker, net)) => (Some(r), asker, Some(net)),
        None => (None, Arc::new(CurrentAsker::default()), None),
    };
    Ok(Live {
        client,
        tools,
        asker,
        net,
        _group: group,
        stderr: tail,
        _net: registration,
    })
}

async fn http(
    server: &McpServer,
    url: &str,
    headers: &std::collections::BTreeMap<String, String>,
    launching: &Launching,
) -> Result<Live, String> {
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    use rmcp::transport::StreamableHttpClientTransport;
    crate::tls();
    let env_var = lookup(server);
    let url = expand(url, &env_var)?;
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.clone());
    let mut custom = std::collections::HashMap::new();
    for (k, v) in headers {
        let v = expand(v, &env_var).map_err(|e| format!("header {k}: {e}"))?;
        if k.eq_ignore_ascii_case("authorization") {
            if let Some(token) = v.strip_prefix("Bearer ") {
                config = config.auth_header(token.to_string());
                continue;
            }
        }
        let name =
            http::HeaderName::from_bytes(k.as_bytes()).map_err(|e| format!("header `{k}`: {e}"))?;
        let value = http::HeaderValue::from_str(&v).map_err(|e| format!("header `{k}`: {e}"))?;
        custom.insert(name, value);
    }
    config = config.custom_headers(custom);
    let client = reqwest::Client::builder()
        .connect_timeout(std::time::Duration::from_secs(15))
        // Its headers (a token) go to the URL declared, never where a redirect says.
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| format!("cannot make an HTTP client: {e}"))?;
    let stored = super::oauth::manager(launching.air_home.as_deref(), &server.name, &url).await?;
    let (client, tools) = match stored {
        Some(manager) => {
            let auth = rmcp::transport::auth::AuthClient::new(client, manager);
            handshake(StreamableHttpClientTransport::with_client(auth, config)).await
        }
        None => handshake(StreamableHttpClientTransport::with_client(client, config)).await,
    }
    .map(|(c, t)| (c, fit(t)))
    .map_err(|e| {
        if e.contains("401") || e.to_lowercase().contains("auth") {
            format!(
                "{e} (if it asks for OAuth: `air mcp login {}`)",
                server.name
            )
        } else {
            e
        }
    })?;
    Ok(Live {
        client,
        tools,
        asker: Arc::new(CurrentAsker::default()),
        net: None,
        _group: Group(None),
        stderr: Arc::new(Mutex::new(String::new())),
        _net: None,
    })
}
