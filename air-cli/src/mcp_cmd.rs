//! `air mcp`: the MCP servers of this project (yours from `~/.air/mcp.yaml`, the
//! project's from `.air/shared/mcp.yaml` and `.mcp.json`), whether each may start
//! and whether it does; adding and removing one; trusting the project's; the OAuth
//! sign-in of an HTTP server. What starts a server is airsd (`airsd __mcp`), as in a
//! run.

use air_proto::hooks::{Pinned as _, Trust};
use air_proto::mcp::McpServer;
use clap::Subcommand;
use serde_json::{json, Value};

use crate::{CmdResult, Failure};

#[derive(Subcommand, Debug)]
pub enum McpCommand {
    /// List the servers, whether each may start, and (started as a run starts them)
    /// their tools or why they do not start.
    List {
        #[arg(long, help = crate::JSON_HELP)]
        json: bool,
    },
    /// Add a server: `air mcp add NAME -- COMMAND [ARGS]…` for a program air
    /// starts, `air mcp add NAME --url URL` for one over HTTP. Yours
    /// (~/.air/mcp.yaml) unless --project (.air/shared/mcp.yaml).
    Add {
        /// The server's name: its tools reach agents as mcp__NAME__TOOL.
        name: String,
        /// The server's streamable HTTP endpoint.
        #[arg(long, conflicts_with = "command")]
        url: Option<String>,
        /// A variable set for the server (`NAME=VALUE`; `${VAR}` is read from
        /// airsd's environment when it starts).
        #[arg(long = "env", value_name = "NAME=VALUE")]
        env: Vec<String>,
        /// A header sent to an HTTP server (`Name: value`).
        #[arg(long = "header", value_name = "NAME: VALUE")]
        headers: Vec<String>,
        /// Its tools that never ask, whatever their annotations say.
        #[arg(long = "allow", value_name = "TOOL")]
        allow: Vec<String>,
        /// In the project's .air/shared/mcp.yaml (then trusted with `air mcp trust`).
        #[arg(long)]
        project: bool,
        /// The program and its arguments, after `--`.
        #[arg(last = true)]
        command: Vec<String>,
    },
    /// Remove a server from your file (or, with --project, the project's).
    Remove {
        /// The server's name.
        name: String,
        /// From the project's .air/shared/mcp.yaml.
        #[arg(long)]
        project: bool,
    },
    /// Trust the project's servers as they are now, with the files their commands
    /// run (each is shown, and you confirm); one changed later does not start until
    /// trusted again.
    Trust {
        /// Trust them without asking (what is trusted is still printed).
        #[arg(long, short = 'y')]
        yes: bool,
    },
    /// Sign in to an HTTP server that asks for OAuth (the tokens are kept in
    /// ~/.air/mcp-credentials.json, yours only, and refreshed as they expire).
    Login {
        /// The server's name.
        name: String,
    },
}

struct Project {
    root: std::path::PathBuf,
    home: Option<std::path::PathBuf>,
    servers: Vec<McpServer>,
    trust: Trust,
}

fn project() -> Result<Project, Failure> {
    let paths = crate::project()?;
    let root = std::fs::canonicalize(paths.root()).unwrap_or_else(|_| paths.root().to_path_buf());
    let home = crate::doctor::air_home();
    let loaded = air_proto::mcp::load(home.as_ref().map(|h| h.join("mcp.yaml")).as_deref(), &root)
        .map_err(Failure::from)?;
    for w in &loaded.warnings {
        eprintln!("air: {w}");
    }
    let trust = match &home {
        Some(h) => Trust::load(&h.join("trust.json")).map_err(Failure::from)?,
        None => Trust::default(),
    };
    Ok(Project {
        root,
        home,
        servers: loaded.servers,
        trust,
    })
}

fn file_of(project: bool, p: &Project) -> Result<std::path::PathBuf, Failure> {
    if project {
        return Ok(air_proto::layout::ProjectPaths::new(&p.root)
            .shared()
            .join("mcp.yaml"));
    }
    p.home
        .as_ref()
        .map(|h| h.join("mcp.yaml"))
        .ok_or_else(|| Failure::from("no home directory for ~/.air/mcp.yaml (set AIR_HOME)"))
}

fn pairs(
    list: &[String],
    sep: char,
    what: &str,
) -> Result<serde_json::Map<String, Value>, Failure> {
    list.iter()
        .map(|e| match e.split_once(sep) {
            Some((k, v)) if !k.trim().is_empty() => Ok((
                k.trim().to_string(),
                Value::String(v.trim_start().to_string()),
            )),
            _ => Err(Failure {
                code: crate::exit::USAGE,
                message: format!("`{e}`: a {what} is `NAME{sep}VALUE`"),
            }),
        })
        .collect()
}

pub fn run(command: Option<McpCommand>) -> CmdResult {
    let p = project()?;
    match command.unwrap_or(McpCommand::List { json: false }) {
        McpCommand::List { json } => {
            let found = crate::doctor::mcp_probe(&p.root)?;
            if json {
                outln!("{}", serde_json::to_string_pretty(&found)?);
                return Ok(());
            }
            let servers = found
                .get("servers")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            if servers.is_empty() {
                outln!("no MCP servers (~/.air/mcp.yaml, .air/shared/mcp.yaml, .mcp.json; docs/mcp.md)");
            }
            for s in &servers {
                outln!("{}", crate::doctor::mcp_line(s));
            }
        }
        McpCommand::Add {
            name,
            url,
            env,
            headers,
            allow,
            project,
            command,
        } => {
            let file = file_of(project, &p)?;
            let mut server = serde_json::Map::new();
            match (url, command.split_first()) {
                (Some(url), None) => {
                    server.insert("url".into(), url.into());
                    let h = pairs(&headers, ':', "header")?;
                    if !h.is_empty() {
                        server.insert("headers".into(), Value::Object(h));
                    }
                }
                (None, Some((program, args))) => {
                    server.insert("command".into(), program.clone().into());
                    if !args.is_empty() {
                        server.insert("args".into(), json!(args));
                    }
                    let e = pairs(&env, '=', "variable")?;
                    if !e.is_empty() {
                        server.insert("env".into(), Value::Object(e));
                    }
                }
                _ => {
                    return Err(Failure {
                        code: crate::exit::USAGE,
                        message: "give the server's program after `--` (air mcp add NAME -- npx -y PACKAGE), or --url URL".into(),
                    })
                }
            }
            if !allow.is_empty() {
                server.insert("allow".into(), json!(allow));
            }
            air_proto::mcp::add_to(&file, &name, Value::Object(server)).map_err(Failure::from)?;
            outln!("added `{name}` to {}", file.display());
            if project {
                outln!("a project's server starts once trusted: air mcp trust");
            }
        }
        McpCommand::Remove { name, project } => {
            let file = file_of(project, &p)?;
            if !air_proto::mcp::remove_from(&file, &name).map_err(Failure::from)? {
                return Err(Failure::from(format!(
                    "no server `{name}` in {}",
                    file.display()
                )));
            }
            outln!("removed `{name}` from {}", file.display());
        }
        McpCommand::Trust { yes } => {
            let new: Vec<&McpServer> = p
                .servers
                .iter()
                .filter(|s| !p.trust.allows(&p.root, s))
                .collect();
            if new.is_empty() {
                outln!("every MCP server of this project is trusted as it is");
                return Ok(());
            }
            let Some(file) = p.home.as_ref().map(|h| h.join("trust.json")) else {
                return Err(Failure::from(
                    "no home directory to keep the trust in (set AIR_HOME)",
                ));
            };
            outln!("the project's MCP servers to trust, as they are now:");
            for s in &new {
                let env: Vec<String> = match &s.transport {
                    air_proto::mcp::Transport::Stdio { env, .. } => {
                        env.iter().map(|(k, v)| format!("{k}={v}")).collect()
                    }
                    air_proto::mcp::Transport::Http { headers, .. } => {
                        headers.iter().map(|(k, v)| format!("{k}: {v}")).collect()
                    }
                };
                outln!(
                    "  {:<16} {}  ({}; timeout {} s{}){}{}",
                    s.name,
                    s.shown().escape_debug(),
                    s.file.display(),
                    s.timeout_secs,
                    if s.allow.is_empty() {
                        String::new()
                    } else {
                        format!("; allow {}", s.allow.join(", ").escape_debug())
                    },
                    if env.is_empty() {
                        String::new()
                    } else {
                        format!("; with {}", env.join(", ").escape_debug())
                    },
                    if s.scripts.is_empty() {
                        String::new()
                    } else {
                        format!(
                            "; runs {}",
                            s.scripts
                                .iter()
                                .map(|(p, _)| p.display().to_string())
                                .collect::<Vec<_>>()
                                .join(", ")
                        )
                    }
                );
            }
            if !yes && !crate::hooks_cmd::confirmed("trust these?")? {
                return Err(Failure {
                    code: crate::exit::USAGE,
                    message: "nothing trusted (confirm at a terminal, or --yes)".into(),
                });
            }
            let mut trust = p.trust.clone();
            trust.trust(&p.root, &new);
            trust.save(&file).map_err(Failure::from)?;
            outln!(
                "trusted {} server(s): {}",
                new.len(),
                new.iter()
                    .map(|s| s.pin()[..12].to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        McpCommand::Login { name } => {
            let status = std::process::Command::new(crate::doctor::airsd_path())
                .arg("__mcp")
                .arg("login")
                .arg(&name)
                .arg("--root")
                .arg(&p.root)
                .status()
                .map_err(|e| Failure::from(format!("cannot run airsd: {e}")))?;
            if !status.success() {
                return Err(Failure::from(format!("`{name}`: not signed in")));
            }
        }
    }
    Ok(())
}
