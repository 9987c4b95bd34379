//! `airsd __mcp probe|login`, for `air mcp` and `air doctor`: each server of the
//! project with whether a person trusted it and whether it starts (and its tools),
//! or the OAuth sign-in of an HTTP server. Servers start here as in a run.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use air_proto::config::PermissionsConfig;
use air_proto::hooks::{Pinned as _, Trusted};
use air_proto::mcp::Transport;
use serde_json::{json, Value};

pub const ARG: &str = "__mcp";

/// The run's engine for the project at `root`, in default mode.
fn engine(
    root: &Path,
    air_home: Option<&Path>,
) -> Result<crate::tools::permission::Engine, String> {
    let user = match air_home {
        Some(h) => {
            PermissionsConfig::load_file(&h.join("permissions.yaml")).map_err(|e| e.to_string())?
        }
        None => PermissionsConfig::default(),
    };
    let paths = air_proto::layout::ProjectPaths::new(root);
    let project = PermissionsConfig::load_project(&paths.shared().join("permissions.yaml"))
        .map_err(|e| e.to_string())?;
    let home = std::env::var_os("HOME").map(PathBuf::from);
    crate::tools::permission::Engine::new(
        root,
        home.as_deref(),
        air_home,
        air_proto::plan::PermissionMode::Default,
        &user.overridden_by(project),
    )
    .map_err(|e| e.0)
    .map(|e| e.with_path_dirs(std::env::var_os("PATH").as_deref()))
}

async fn probe(root: &Path) -> Result<Value, String> {
    let home = crate::air_home();
    let config = super::Config::load(home.as_deref(), root)?;
    let engine = engine(root, home.as_deref())?;
    // The hosts the trusted capabilities need, allowed as in a run.
    let (capabilities, _) = air_proto::capability::trusted(home.as_deref(), root);
    let hosts: Vec<String> = engine
        .allow_domains()
        .iter()
        .cloned()
        .chain(
            capabilities
                .iter()
                .flat_map(|c| c.manifest.needs.network.clone()),
        )
        .collect();
    let engine = Arc::new(engine);
    let sandbox_exe = std::env::current_exe().ok().and_then(|exe| {
        let found = crate::sandbox::protections(&exe);
        (found.landlock || found.isolation.is_ok()).then_some((exe, found))
    });
    // A proxy as a run has, where servers have their own network: they reach the
    // hosts allowed (nobody is asked here).
    let proxy = sandbox_exe
        .as_ref()
        .filter(|(_, p)| p.isolation.is_ok() && engine.sandbox())
        .and_then(|_| crate::proxy::Proxy::start().ok().map(Arc::new));
    let launching = super::Launching {
        engine: engine.clone(),
        sandbox_exe,
        proxy,
        net: Arc::new(crate::proxy::NetPolicy::new(hosts)),
        air_home: home.clone(),
    };
    let mut out = Vec::new();
    let mut starts = Vec::new();
    for s in &config.loaded.servers {
        let trusted = config.trust.of(root, s);
        let mut v = json!({
            "name": s.name,
            "source": s.source.as_str(),
            "file": s.file.display().to_string(),
            "transport": match s.transport { Transport::Stdio { .. } => "stdio", Transport::Http { .. } => "http" },
            "shown": s.shown(),
            "trust": match trusted { Trusted::Yes => "trusted", Trusted::No => "untrusted", Trusted::Changed => "changed" },
            "pin": s.pin(),
        });
        if let (Transport::Http { url, .. }, Some(h)) = (&s.transport, home.as_deref()) {
            v["oauth_tokens"] = super::oauth::has_tokens(h, &s.name, url).into();
        }
        if trusted == Trusted::Yes {
            let (s, launching) = (s.clone(), launching.clone());
            starts.push((
                out.len(),
                tokio::spawn(async move {
                    tokio::time::timeout(super::START, super::connect::start(&s, &launching)).await
                }),
            ));
        }
        out.push(v);
    }
    for (i, task) in starts {
        let state = match task.await {
            Ok(Ok(Ok(live))) => {
                let names: Vec<String> = live.tools.iter().map(|t| t.name.to_string()).collect();
                live.close().await;
                json!({"state": "up", "tools": names})
            }
            Ok(Ok(Err(e))) => json!({"state": "error", "error": e}),
            Ok(Err(_)) => {
                json!({"state": "error", "error": format!("did not start within {} s", super::START.as_secs())})
            }
            Err(e) => json!({"state": "error", "error": e.to_string()}),
        };
        if let (Some(Value::Object(o)), Value::Object(s)) = (out.get_mut(i), state) {
            o.extend(s);
        }
    }
    Ok(json!({
        "servers": out,
        "warnings": config.loaded.warnings,
        "schema_budget_tokens": config.loaded.schema_budget_tokens,
    }))
}

async fn login(root: &Path, name: &str) -> Result<Value, String> {
    let home = crate::air_home().ok_or("no home directory to keep the tokens in (set AIR_HOME)")?;
    let config = super::Config::load(Some(&home), root)?;
    let server = config
        .loaded
        .servers
        .iter()
        .find(|s| s.name == name)
        .ok_or_else(|| format!("no MCP server `{name}` in this project (`air mcp list`)"))?;
    let Transport::Http { url, .. } = &server.transport else {
        return Err(format!(
            "`{name}` is a program air starts; only an HTTP server signs in"
        ));
    };
    if config.trust.of(root, server) != Trusted::Yes {
        return Err(format!(
            "`{name}` is a project's server nobody trusted yet: `air mcp trust` first"
        ));
    }
    let url = air_proto::mcp::expand(url, super::connect::lookup(server))?;
    super::oauth::login(&home, name, &url, |to_open| {
        eprintln!("air: open this page to sign in to `{name}`:\n\n  {to_open}\n");
    })
    .await?;
    Ok(json!({"server": name, "signed_in": true}))
}

/// `airsd __mcp probe --root DIR` / `airsd __mcp login NAME --root DIR`.
pub fn main(args: &[std::ffi::OsString]) -> i32 {
    let args: Vec<String> = args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let mut root = None;
    let mut words = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--root" => match it.next() {
                Some(d) => root = Some(PathBuf::from(d)),
                None => {
                    eprintln!("airsd {ARG}: --root needs a directory");
                    return 2;
                }
            },
            w => words.push(w.to_string()),
        }
    }
    let root = match root.map(std::fs::canonicalize) {
        Some(Ok(r)) => r,
        Some(Err(e)) => {
            eprintln!("airsd {ARG}: --root: {e}");
            return 2;
        }
        None => {
            eprintln!("airsd {ARG}: --root DIR is needed");
            return 2;
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("airsd {ARG}: {e}");
            return 1;
        }
    };
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    let result = runtime.block_on(async {
        match words.as_slice() {
            ["probe"] => probe(&root).await,
            ["login", name] => login(&root, name).await,
            _ => Err(format!("usage: airsd {ARG} probe|login NAME --root DIR")),
        }
    });
    let code = crate::answer_json(result);
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    code
}
