//! `air doctor`: what air finds on this machine — the project, the daemon, the
//! configuration files, the providers and the model each agent would use — and what
//! to do about what is missing. Exit 0 when a run could start, 1 otherwise.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use air_proto::api::AirApiClient;
use air_proto::client::connect_running;
use air_proto::event::AgentType;
use air_proto::ipc::{ModelQuery, ModelReply};
use air_proto::models::ModelsConfig;
use serde_json::json;

use crate::{connect_options, exit, CmdResult, Failure};

/// `~/.air`, or `$AIR_HOME`.
pub(crate) fn air_home() -> Option<PathBuf> {
    std::env::var_os("AIR_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".air")))
}

/// The daemon's binary: `AIR_AIRSD`, or `airsd` beside `air`.
pub(crate) fn airsd_path() -> PathBuf {
    std::env::var_os("AIR_AIRSD")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::current_exe()
                .ok()
                .map(|e| air_proto::client::airsd_beside(&e))
        })
        .unwrap_or_else(|| PathBuf::from("airsd"))
}

/// What the command sandbox can do on this machine, as airsd finds it: a line for
/// the report, and the JSON.
fn sandbox(airsd: &Path) -> (String, serde_json::Value) {
    let out = std::process::Command::new(airsd)
        .args(["__sandbox", "--probe"])
        .stdin(Stdio::null())
        .output();
    let found: Option<serde_json::Value> = out
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| serde_json::from_slice(&o.stdout).ok());
    let Some(found) = found else {
        return (
            format!("sandbox: unknown ({} did not answer)", airsd.display()),
            json!(null),
        );
    };
    let landlock = found["landlock"].as_bool().unwrap_or(false);
    let namespaces = found["namespaces"].as_bool().unwrap_or(false);
    let line = match (landlock, namespaces) {
        (true, true) => "sandbox: full (Landlock confines commands' writes; namespaces hide air's state, the credential stores and other processes)".to_string(),
        (l, n) => {
            let mut missing = Vec::new();
            if !l {
                missing.push("Landlock (the kernel has none): commands' writes to computed paths ask".to_string());
            }
            if !n {
                missing.push(format!(
                    "namespaces ({}): commands that could read air's state, a credential store or other processes' environments ask first",
                    found["why_not"].as_str().unwrap_or("not allowed here")
                ));
            }
            format!("sandbox: degraded, without {}", missing.join("; and without "))
        }
    };
    (line, found)
}

/// The worker airsd would start: `AIR_WORKER`, or `air-worker` beside airsd.
fn worker_path() -> PathBuf {
    if let Some(p) = std::env::var_os("AIR_WORKER") {
        return PathBuf::from(p);
    }
    let airsd = airsd_path();
    airsd
        .parent()
        .map(|d| d.join("air-worker"))
        .unwrap_or_else(|| PathBuf::from("air-worker"))
}

const ROLES: [AgentType; 4] = [
    AgentType::Executor,
    AgentType::Reviewer,
    AgentType::Debugger,
    AgentType::ArchitectureDesigner,
];

/// How to give air a model, where one is missing.
pub(crate) const KEY_HELP: &str = "set a provider's key (ANTHROPIC_API_KEY, OPENAI_API_KEY or OPENROUTER_API_KEY), or add a provider to ~/.air/models.yaml (a run uses the settings of the shell that starts it)";

/// Asks the worker which model each agent type would use, as airsd does before a run.
fn resolve(worker: &Path) -> Result<Vec<ModelReply>, String> {
    resolve_with(worker, &ROLES)
}

/// Which model each of `roles` would use, as the worker beside this `air` says.
pub(crate) fn resolve_roles(roles: &[AgentType]) -> Result<Vec<ModelReply>, String> {
    resolve_with(&worker_path(), roles)
}

fn resolve_with(worker: &Path, roles: &[AgentType]) -> Result<Vec<ModelReply>, String> {
    let queries: Vec<ModelQuery> = roles
        .iter()
        .map(|r| ModelQuery {
            agent_type: *r,
            flag: None,
            task: None,
            replay: None,
        })
        .collect();
    let json = serde_json::to_string(&queries).map_err(|e| e.to_string())?;
    let out = std::process::Command::new(worker)
        .arg("--resolve")
        .arg(json)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot start {}: {e}", worker.display()))?;
    if !out.status.success() {
        return Err(format!(
            "{} --resolve failed ({}): {}",
            worker.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("{} --resolve answered unreadably: {e}", worker.display()))
}

fn check_file<T>(
    label: &str,
    path: &Path,
    loaded: Result<T, impl std::fmt::Display>,
) -> (String, bool) {
    match loaded {
        Ok(_) if path.exists() => (format!("{label}: {} ok", path.display()), true),
        Ok(_) => (
            format!("{label}: {} (none; defaults)", path.display()),
            true,
        ),
        Err(e) => (format!("{label}: {e}"), false),
    }
}

/// `fix`: `Some(yes)` for `air doctor --fix [--yes]` and `air setup`.
pub async fn run(json_out: bool, fix: Option<bool>, bundle: Option<&Path>) -> CmdResult {
    let mut ok = true;
    let mut lines: Vec<String> = Vec::new();

    // The project and its daemon.
    let cwd = crate::current_dir()?;
    let project = air_proto::layout::find_root(&cwd).ok();
    let mut daemon = json!(null);
    match &project {
        Some(paths) => {
            lines.push(format!("project: {}", paths.root().display()));
            match connect_running(&connect_options(paths.clone())).await {
                Ok(conn) => match conn
                    .client
                    .status(air_proto::api::params::NoParams {})
                    .await
                {
                    Ok(s) => {
                        lines.push(format!(
                            "daemon: running (pid {}, version {})",
                            s.pid, s.version
                        ));
                        let mine = air_proto::env::ClientEnv::current().shown();
                        lines.push(format!(
                            "  runs started from this shell use its provider settings: {}",
                            if mine.is_empty() {
                                "none".to_string()
                            } else {
                                mine.join(", ")
                            }
                        ));
                        let differ: Vec<&String> = s
                            .provider_settings
                            .iter()
                            .filter(|v| !mine.contains(v))
                            .chain(mine.iter().filter(|v| !s.provider_settings.contains(v)))
                            .collect();
                        if !differ.is_empty() {
                            lines.push(format!(
                                "  the daemon's own differ ({}): a run it resumes by itself after a restart uses those; `air run --resume SESSION` from this shell uses this shell's",
                                s.provider_settings.join(", ")
                            ));
                        }
                        if let Some(previous) = &s.last_abnormal_exit {
                            lines.push(format!("  {previous}"));
                        }
                        daemon = json!({
                            "running": true, "pid": s.pid, "version": s.version,
                            "last_abnormal_exit": s.last_abnormal_exit,
                            "provider_settings": s.provider_settings, "this_shell": mine
                        });
                    }
                    Err(e) => lines.push(format!("daemon: answers, but status failed: {e}")),
                },
                Err(_) => {
                    lines.push("daemon: not running (air starts it when needed)".into());
                    daemon = json!({"running": false});
                }
            }
        }
        None => lines.push(format!(
            "project: none at or above {} (`air init` makes one)",
            cwd.display()
        )),
    }

    // Configuration files.
    let home = air_home();
    let mut files = Vec::new();
    if let Some(home) = &home {
        files.push(check_file(
            "config",
            &home.join("config.yaml"),
            air_proto::config::UserConfig::load(home),
        ));
        files.push(check_file(
            "permissions",
            &home.join("permissions.yaml"),
            air_proto::config::PermissionsConfig::load_file(&home.join("permissions.yaml")),
        ));
        files.push(check_file(
            "models",
            &home.join("models.yaml"),
            air_proto::config::load_yaml::<ModelsConfig>(&home.join("models.yaml")),
        ));
    }
    if let Some(paths) = &project {
        let p = paths.shared().join("permissions.yaml");
        files.push(check_file(
            "project permissions",
            &p,
            air_proto::config::PermissionsConfig::load_project(&p),
        ));
    }
    for (line, good) in &files {
        ok &= good;
        lines.push(line.clone());
    }

    // The command sandbox.
    let (sandbox_line, sandbox_json) = sandbox(&airsd_path());
    lines.push(sandbox_line);

    // What air and the project's languages need installed.
    let root = project.as_ref().map(|p| p.root().to_path_buf());
    let dependencies = crate::setup::check(&airsd_path(), root.as_deref());
    let dependencies_json = match &dependencies {
        Ok(report) => {
            lines.extend(crate::setup::lines(report));
            if report.dependencies.iter().any(crate::setup::blocks_runs) {
                ok = false;
            }
            serde_json::to_value(report).unwrap_or_default()
        }
        Err(e) => {
            lines.push(format!("dependencies: unknown ({e})"));
            json!(null)
        }
    };

    // The hooks, and whether each may run.
    let hooks_json = match &project {
        Some(paths) => {
            let (line, list, fine) = hooks_summary(paths);
            ok &= fine;
            lines.push(line);
            list
        }
        None => json!(null),
    };
    // The capabilities: each, whether it is trusted, the variables it needs unset.
    let capabilities_json = match &project {
        Some(paths) => {
            let (line, list) = capabilities_summary(paths);
            lines.push(line);
            list
        }
        None => json!(null),
    };

    // The MCP servers: each, whether it may start, and whether it does.
    let mcp_json = match &project {
        Some(paths) => {
            let (line, list, fine) = mcp_summary(paths);
            ok &= fine;
            lines.push(line);
            list
        }
        None => json!(null),
    };

    // Providers, as this shell's environment has them.
    let models = ModelsConfig::load(home.as_deref()).unwrap_or_default();
    let env = |k: &str| std::env::var(k).ok();
    let providers = models.provider_statuses(&env);
    lines.push("providers (this shell's environment):".into());
    for p in &providers {
        let key = match (&p.key_env, p.key_set) {
            (None, _) => "no key needed".to_string(),
            (Some(v), true) => format!("{v} set"),
            (Some(v), false) => format!("{v} not set"),
        };
        lines.push(format!(
            "  {:<11} {:<28} {} ({})",
            p.name,
            key,
            p.base_url,
            p.kind.as_str()
        ));
    }

    // How long a model's provider may keep silent, and what happens then.
    lines.push(format!(
        "model streams: connect {} s, first byte {} s, no byte {} s, nothing of the answer {} s (models.yaml `stream:`); an agent stopped at its time while its provider was silent is the provider's fault: it runs again once, then its task is blocked",
        air_proto::models::StreamLimits::CONNECT_SECS,
        air_proto::models::StreamLimits::FIRST_BYTE_SECS,
        models.stream.idle().as_secs(),
        models.stream.stall().as_secs()
    ));
    // The model of each agent type, as the worker resolves it.
    let worker = worker_path();
    let mut resolved = Vec::new();
    lines.push(format!("models (as {} resolves them):", worker.display()));
    match resolve(&worker) {
        Ok(replies) => {
            for (role, r) in ROLES.iter().zip(replies) {
                match (&r.resolved, &r.error) {
                    (Some(c), _) => lines.push(format!(
                        "  {:<22} {}/{} ({} tokens in, {} out)",
                        role.as_str(),
                        c.provider,
                        c.model,
                        c.context_window,
                        c.max_output
                    )),
                    (None, e) => {
                        ok = false;
                        lines.push(format!(
                            "  {:<22} none: {}",
                            role.as_str(),
                            e.as_deref().unwrap_or("no answer")
                        ));
                    }
                }
                resolved.push(json!({"agent_type": role.as_str(), "resolved": r.resolved.as_ref().map(|c| json!({"provider": c.provider, "model": c.model, "context_window": c.context_window, "max_output": c.max_output})), "error": r.error}));
            }
        }
        Err(e) => {
            ok = false;
            lines.push(format!("  {e}"));
        }
    }
    if !ok {
        lines.push(format!("to fix: {KEY_HELP}"));
    }

    let out = json!({
        "ok": ok,
        "project": project.as_ref().map(|p| p.root().display().to_string()),
        "daemon": daemon,
        "files": files.iter().map(|(l, g)| json!({"check": l, "ok": g})).collect::<Vec<_>>(),
        "sandbox": sandbox_json,
        "dependencies": dependencies_json,
        "hooks": hooks_json,
        "mcp": mcp_json,
        "capabilities": capabilities_json,
        "providers": providers,
        "models": resolved,
    });
    if let Some(file) = bundle {
        crate::bundle::write(file, &out, air_home().as_deref(), project.as_ref())
            .map_err(Failure::from)?;
        lines.push(format!(
            "wrote the diagnostic bundle to {} (read it before you share it; nothing was sent)",
            file.display()
        ));
    }
    if json_out {
        outln!("{}", serde_json::to_string_pretty(&out).unwrap_or_default());
    } else {
        for l in &lines {
            outln!("{l}");
        }
    }
    if let (Some(yes), Ok(report)) = (fix, &dependencies) {
        outln!();
        let stdin = std::io::stdin();
        let (installed, still) =
            crate::setup::fix(report, yes, &mut stdin.lock(), &mut crate::stdout::Out)
                .map_err(|e| Failure::from(format!("air doctor --fix: {e}")))?;
        if installed > 0 {
            // What the commands changed, as the machine now has it.
            let now = crate::setup::check(&airsd_path(), root.as_deref())
                .map_err(|e| Failure::from(format!("air doctor --fix: checking again: {e}")))?;
            outln!();
            for l in crate::setup::lines(&now) {
                outln!("{l}");
            }
            let required = now
                .dependencies
                .iter()
                .filter(|f| {
                    !f.present
                        && f.spec.severity == air_proto::dependency::DependencySeverity::Required
                })
                .count();
            if required > 0 {
                return Err(Failure {
                    code: exit::FAILED,
                    message: format!("{required} required dependencies are still missing"),
                });
            }
        } else if still > 0 {
            return Err(Failure {
                code: exit::FAILED,
                message: format!("{still} required dependencies are still missing"),
            });
        }
    }
    if ok {
        Ok(())
    } else {
        Err(Failure {
            code: exit::FAILED,
            message: "a run could not start: see above".into(),
        })
    }
}

/// `air doctor`'s lines on the capabilities installed for the project at `paths`
/// (their dependencies are among the dependencies), and their JSON.
fn capabilities_summary(paths: &air_proto::layout::ProjectPaths) -> (String, serde_json::Value) {
    use air_proto::hooks::Trusted;
    let root = std::fs::canonicalize(paths.root()).unwrap_or_else(|_| paths.root().to_path_buf());
    let home = air_home();
    let trust = home
        .as_ref()
        .map(|h| air_proto::hooks::Trust::load(&h.join("trust.json")).unwrap_or_default())
        .unwrap_or_default();
    let found = air_proto::capability::installed(home.as_deref(), &root, &trust);
    let mut line = format!("capabilities: {}", found.capabilities.len());
    let mut list = Vec::new();
    for (c, t) in &found.capabilities {
        let unset: Vec<&String> = c
            .manifest
            .needs
            .env
            .iter()
            .filter(|v| std::env::var_os(v.as_str()).is_none())
            .collect();
        let state = match t {
            Trusted::Yes => "trusted",
            Trusted::No => "UNTRUSTED (air capability trust)",
            Trusted::Changed => "CHANGED since trusted (air capability trust)",
        };
        line.push_str(&format!(
            "\n  {} {} ({})  {state}{}",
            c.manifest.name,
            c.manifest.version.escape_debug(),
            c.scope.as_str(),
            if unset.is_empty() {
                String::new()
            } else {
                format!(
                    "; not set: {}",
                    unset
                        .iter()
                        .map(|s| s.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            }
        ));
        list.push(serde_json::json!({
            "name": c.manifest.name,
            "version": c.manifest.version,
            "scope": c.scope.as_str(),
            "state": state,
            "env_unset": unset,
        }));
    }
    for w in &found.warnings {
        line.push_str(&format!("\n  passed over: {w}"));
    }
    (line, serde_json::json!(list))
}

/// What `airsd __mcp probe` found: each server, trusted or not, up or not.
pub(crate) fn mcp_probe(root: &std::path::Path) -> Result<serde_json::Value, Failure> {
    let out = std::process::Command::new(airsd_path())
        .arg("__mcp")
        .arg("probe")
        .arg("--root")
        .arg(root)
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| Failure::from(format!("cannot run airsd: {e}")))?;
    if !out.status.success() {
        return Err(Failure::from(format!(
            "the MCP servers could not be looked at: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    serde_json::from_slice(&out.stdout)
        .map_err(|e| Failure::from(format!("airsd's answer could not be read: {e}")))
}

/// One server's line: its name, state, where it is declared and what it runs.
pub(crate) fn mcp_line(s: &serde_json::Value) -> String {
    let text = |k: &str| s.get(k).and_then(serde_json::Value::as_str).unwrap_or("");
    // What a server wrote is shown without its control characters.
    let clean = |t: &str| -> String {
        t.chars()
            .map(|c| if c.is_control() { '?' } else { c })
            .collect()
    };
    let state = match (text("trust"), text("state")) {
        ("untrusted", _) => "UNTRUSTED (air mcp trust)".to_string(),
        ("changed", _) => "CHANGED since trusted (air mcp trust)".to_string(),
        (_, "up") => format!(
            "up, {} tools",
            s.get("tools")
                .and_then(serde_json::Value::as_array)
                .map_or(0, Vec::len)
        ),
        (_, "error") => {
            let said: Vec<&str> = text("error")
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .take(3)
                .collect();
            let said = clean(&said.join(" / "));
            match said.char_indices().nth(300) {
                Some((i, _)) => format!("FAILS: {}…", &said[..i]),
                None => format!("FAILS: {said}"),
            }
        }
        _ => "not started".to_string(),
    };
    // Escaped, so that what is shown is what runs.
    format!(
        "{:<16} {:<6} {}  ({}, {})\n  {}",
        text("name"),
        text("transport"),
        text("shown").escape_debug(),
        text("source"),
        text("file"),
        state
    )
}

/// `air doctor`'s lines on the MCP servers of the project at `paths` (each started
/// as a run starts it), their JSON, and whether all is well: a server that fails to
/// start is a fault; one nobody trusted is said, not a fault.
fn mcp_summary(paths: &air_proto::layout::ProjectPaths) -> (String, serde_json::Value, bool) {
    let root = std::fs::canonicalize(paths.root()).unwrap_or_else(|_| paths.root().to_path_buf());
    let home = air_home();
    let user = home.as_ref().map(|h| h.join("mcp.yaml"));
    let any = user.iter().any(|u| u.exists())
        || air_proto::mcp::project_files(&root)
            .iter()
            .any(|(f, _)| std::fs::symlink_metadata(f).is_ok())
        || air_proto::capability::project_dir(&root).is_dir()
        || home
            .as_ref()
            .is_some_and(|h| air_proto::capability::user_dir(h).is_dir());
    if !any {
        return (
            "mcp servers: none".into(),
            serde_json::json!({"servers": []}),
            true,
        );
    }
    let found = match mcp_probe(&root) {
        Ok(f) => f,
        Err(e) => {
            return (
                format!("mcp servers: {}", e.message),
                serde_json::json!({"error": e.message}),
                false,
            )
        }
    };
    let servers = found
        .get("servers")
        .and_then(serde_json::Value::as_array)
        .cloned()
        .unwrap_or_default();
    let failing = servers.iter().filter(|s| s["state"] == "error").count();
    let mut line = format!(
        "mcp servers: {} ({failing} failing to start)",
        servers.len()
    );
    for s in &servers {
        for l in mcp_line(s).lines() {
            line.push_str(&format!("\n  {l}"));
        }
    }
    for w in found
        .get("warnings")
        .and_then(serde_json::Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(serde_json::Value::as_str)
    {
        line.push_str(&format!("\n  passed over: {w}"));
    }
    (line, found, failing == 0)
}

/// `air doctor`'s line on the hooks of the project at `paths`, their JSON, and
/// whether all is well (every hook readable; a project's not trusted is said, not a
/// fault).
fn hooks_summary(paths: &air_proto::layout::ProjectPaths) -> (String, serde_json::Value, bool) {
    let root = std::fs::canonicalize(paths.root()).unwrap_or_else(|_| paths.root().to_path_buf());
    let home = air_home();
    let loaded = match air_proto::hooks::load(
        home.as_ref().map(|h| h.join("hooks.yaml")).as_deref(),
        &root,
    ) {
        Ok(l) => l,
        Err(e) => {
            return (
                format!("hooks: {e}"),
                serde_json::json!({"error": e}),
                false,
            )
        }
    };
    let trust = home
        .map(|h| air_proto::hooks::Trust::load(&h.join("trust.json")).unwrap_or_default())
        .unwrap_or_default();
    let waiting: Vec<&air_proto::hooks::Hook> = loaded
        .hooks
        .iter()
        .filter(|h| !trust.allows(&root, h))
        .collect();
    let mut line = format!(
        "hooks: {} ({} not trusted as they are: `air hooks trust`)",
        loaded.hooks.len(),
        waiting.len()
    );
    for w in &loaded.warnings {
        line.push_str(&format!("\n  passed over: {w}"));
    }
    let json = serde_json::json!({
        "count": loaded.hooks.len(),
        "untrusted": waiting.iter().map(|h| serde_json::json!({"event": h.event.as_str(), "command": h.command, "file": h.file})).collect::<Vec<_>>(),
        "warnings": loaded.warnings,
    });
    (line, json, true)
}
