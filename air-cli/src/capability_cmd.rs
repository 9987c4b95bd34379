//! `air capability`: the capabilities installed for you (`~/.air/capabilities/`)
//! and the project (`.air/shared/capabilities/`), adding one from a folder or a git
//! repository (trusted as it is, once you confirmed what it adds and needs),
//! removing one, and trusting the project's.

use std::path::{Path, PathBuf};

use air_proto::capability::{self, Capability, Scope};
use air_proto::hooks::{Pinned as _, Trust, Trusted};
use clap::Subcommand;

use crate::{CmdResult, Failure};

#[derive(Subcommand, Debug)]
pub enum CapabilityCommand {
    /// List the capabilities, whether each is trusted as it is, and what it adds.
    List {
        #[arg(long, help = crate::JSON_HELP)]
        json: bool,
    },
    /// Install a capability from a folder or a git repository (a URL), for you, or
    /// with --project for the project; what it adds and needs is shown and you
    /// confirm. Installed again, it replaces the one of the same name.
    Add {
        /// A folder with a capability.yaml, or a git URL (https://…, git@…).
        source: String,
        /// For the project (.air/shared/capabilities/), to trust on each machine.
        #[arg(long)]
        project: bool,
        /// Install and trust it without asking (what it adds is still printed).
        #[arg(long, short = 'y')]
        yes: bool,
    },
    /// Remove an installed capability.
    Remove {
        /// The capability's name.
        name: String,
        /// The project's (.air/shared/capabilities/).
        #[arg(long)]
        project: bool,
    },
    /// Trust the capabilities installed as they are now (a project's, or one that
    /// changed since it was trusted).
    Trust {
        /// Trust them without asking (what is trusted is still printed).
        #[arg(long, short = 'y')]
        yes: bool,
    },
}

struct Here {
    root: PathBuf,
    home: Option<PathBuf>,
    trust: Trust,
}

fn here() -> Result<Here, Failure> {
    let paths = crate::project()?;
    let root = std::fs::canonicalize(paths.root()).unwrap_or_else(|_| paths.root().to_path_buf());
    let home = crate::doctor::air_home();
    let trust = match &home {
        Some(h) => Trust::load(&h.join("trust.json")).map_err(Failure::from)?,
        None => Trust::default(),
    };
    Ok(Here { root, home, trust })
}

/// What a capability adds and needs, as lines (escaped: what is shown is what is).
pub(crate) fn describe(c: &Capability) -> Vec<String> {
    let m = &c.manifest;
    let mut out = vec![format!(
        "{} {} ({}, {}){}",
        m.name,
        m.version.escape_debug(),
        c.scope.as_str(),
        c.dir.display(),
        if m.description.is_empty() {
            String::new()
        } else {
            format!(": {}", m.description.escape_debug())
        }
    )];
    for (name, s) in &m.adds.mcp_servers {
        out.push(format!(
            "  adds MCP server `{name}`: {}",
            s.to_string().escape_debug()
        ));
    }
    for (what, rel) in [
        ("skills", &m.adds.skills),
        ("hooks", &m.adds.hooks),
        ("rules", &m.adds.rules),
    ] {
        if let Some(rel) = rel {
            out.push(format!("  adds {what}: {}", rel.escape_debug()));
        }
    }
    if !m.needs.network.is_empty() {
        out.push(format!(
            "  needs the network to: {} (allowed in runs while it is trusted)",
            m.needs.network.join(", ").escape_debug()
        ));
    }
    if !m.needs.env.is_empty() {
        out.push(format!(
            "  needs variables: {}",
            m.needs.env.join(", ").escape_debug()
        ));
    }
    for d in &m.needs.dependencies {
        out.push(format!(
            "  needs {} ({:?}, {:?}){}",
            d.id.escape_debug(),
            d.kind,
            d.severity,
            d.install
                .as_ref()
                .and_then(|i| i.commands.as_ref())
                .map(|c| format!(
                    "; `air setup` would run: {}",
                    c.iter()
                        .map(|c| c.command.escape_debug().to_string())
                        .collect::<Vec<_>>()
                        .join(" | ")
                ))
                .unwrap_or_default()
        ));
    }
    out
}

fn is_git(source: &str) -> bool {
    source.starts_with("https://")
        || source.starts_with("http://")
        || source.starts_with("git@")
        || source.starts_with("ssh://")
        || source.starts_with("git://")
        || source.starts_with("file://")
}

/// A shallow clone of `url` into `into`; git runs with nothing of the repository's
/// able to run (no hooks, no `ext::` transports, no prompts).
fn clone(url: &str, into: &Path) -> Result<(), Failure> {
    let out = std::process::Command::new("git")
        .args([
            "-c",
            "core.hooksPath=/dev/null",
            "-c",
            "protocol.ext.allow=never",
            "-c",
            "protocol.file.allow=user",
            "clone",
            "--depth",
            "1",
            "--no-recurse-submodules",
            "--quiet",
            "--",
            url,
        ])
        .arg(into)
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| Failure::from(format!("cannot run git: {e}")))?;
    if !out.status.success() {
        return Err(Failure::from(format!(
            "git could not clone {url}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(())
}

/// Copies the files and folders of `from` (no links: [`capability::tree`] refused
/// them) into `to`, leaving out `.git`.
fn copy(from: &Path, to: &Path, files: &[(String, u64)]) -> Result<(), Failure> {
    for (rel, _) in files {
        let (src, dst) = (from.join(rel), to.join(rel));
        if let Some(dir) = dst.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| Failure::from(format!("{}: {e}", dir.display())))?;
        }
        std::fs::copy(&src, &dst).map_err(|e| Failure::from(format!("{}: {e}", dst.display())))?;
    }
    Ok(())
}

fn save(h: &Here, trust: &Trust) -> Result<(), Failure> {
    let Some(file) = h.home.as_ref().map(|h| h.join("trust.json")) else {
        return Err(Failure::from(
            "no home directory to keep the trust in (set AIR_HOME)",
        ));
    };
    trust.save(&file).map_err(Failure::from)
}

fn add(h: &Here, source: &str, project: bool, yes: bool) -> CmdResult {
    let scratch = tempfile_dir()?;
    let from = if is_git(source) {
        let dir = scratch.join("clone");
        clone(source, &dir)?;
        dir
    } else {
        std::fs::canonicalize(source).map_err(|e| Failure::from(format!("{source}: {e}")))?
    };
    let scope = if project { Scope::Project } else { Scope::User };
    let found = capability::read(&from, scope).map_err(Failure::from)?;
    // Its servers are read as they will be.
    if let Some(yaml) = found.mcp_yaml() {
        air_proto::mcp::parse(
            &yaml,
            &from.join(capability::MANIFEST),
            air_proto::mcp::Source::Capability,
        )
        .map_err(|e| Failure::from(format!("{e} (adds.mcp_servers)")))?;
    }
    let (_, files) = capability::tree(&from).map_err(Failure::from)?;
    let base = match (project, &h.home) {
        (true, _) => capability::project_dir(&h.root),
        (false, Some(home)) => capability::user_dir(home),
        (false, None) => {
            return Err(Failure::from(
                "no home directory to install into (set AIR_HOME)",
            ))
        }
    };
    let dest = base.join(&found.manifest.name);
    outln!("to install in {}:", dest.display());
    for l in describe(&found) {
        outln!("  {l}");
    }
    if !yes && !crate::hooks_cmd::confirmed("install and trust it?")? {
        let _ = std::fs::remove_dir_all(&scratch);
        return Err(Failure {
            code: crate::exit::USAGE,
            message: "nothing installed (confirm at a terminal, or --yes)".into(),
        });
    }
    // Made beside, then put in place whole.
    let staged = base.join(format!(".{}.new", found.manifest.name));
    let _ = std::fs::remove_dir_all(&staged);
    copy(&from, &staged, &files)?;
    let installed = capability::read(&staged, scope).map_err(Failure::from)?;
    if installed.tree != found.tree {
        let _ = std::fs::remove_dir_all(&staged);
        return Err(Failure::from(
            "the capability changed while it was copied; nothing installed",
        ));
    }
    if dest.exists() {
        std::fs::remove_dir_all(&dest)
            .map_err(|e| Failure::from(format!("{}: {e}", dest.display())))?;
    }
    std::fs::rename(&staged, &dest)
        .map_err(|e| Failure::from(format!("{}: {e}", dest.display())))?;
    let _ = std::fs::remove_dir_all(&scratch);
    let now = capability::read(&dest, scope).map_err(Failure::from)?;
    let mut trust = h.trust.clone();
    let key = capability::trust_key(&now, h.home.as_deref(), &h.root);
    trust.trust(&key, std::slice::from_ref(&now));
    save(h, &trust)?;
    outln!(
        "installed and trusted `{}` {} ({})",
        now.manifest.name,
        now.manifest.version,
        &now.pin()[..12]
    );
    if !now.manifest.needs.dependencies.is_empty() {
        outln!("what it needs: air doctor (air setup installs it)");
    }
    Ok(())
}

fn tempfile_dir() -> Result<PathBuf, Failure> {
    let dir = std::env::temp_dir().join(format!(
        "air-capability-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default()
    ));
    std::fs::create_dir_all(&dir).map_err(|e| Failure::from(format!("{}: {e}", dir.display())))?;
    Ok(dir)
}

pub fn run(command: Option<CapabilityCommand>) -> CmdResult {
    let h = here()?;
    match command.unwrap_or(CapabilityCommand::List { json: false }) {
        CapabilityCommand::List { json } => {
            let found = capability::installed(h.home.as_deref(), &h.root, &h.trust);
            for w in &found.warnings {
                eprintln!("air: {w}");
            }
            if json {
                let list: Vec<serde_json::Value> = found
                    .capabilities
                    .iter()
                    .map(|(c, t)| {
                        serde_json::json!({
                            "name": c.manifest.name,
                            "version": c.manifest.version,
                            "scope": c.scope.as_str(),
                            "dir": c.dir.display().to_string(),
                            "trusted": *t == Trusted::Yes,
                            "changed": *t == Trusted::Changed,
                            "pin": c.pin(),
                            "manifest": c.manifest,
                        })
                    })
                    .collect();
                outln!("{}", serde_json::to_string_pretty(&list)?);
                return Ok(());
            }
            if found.capabilities.is_empty() {
                outln!("no capabilities (air capability add PATH|GIT; docs/capabilities.md)");
            }
            for (c, t) in &found.capabilities {
                let lines = describe(c);
                let state = match t {
                    Trusted::Yes => "trusted",
                    Trusted::No => "UNTRUSTED (air capability trust)",
                    Trusted::Changed => "CHANGED since trusted (air capability trust)",
                };
                outln!("{}  [{state}]", lines[0]);
                for l in &lines[1..] {
                    outln!("{l}");
                }
            }
        }
        CapabilityCommand::Add {
            source,
            project,
            yes,
        } => add(&h, &source, project, yes)?,
        CapabilityCommand::Remove { name, project } => {
            if !capability::valid_name(&name) {
                return Err(Failure::from(format!(
                    "`{name}` is not a capability's name"
                )));
            }
            let base = match (project, &h.home) {
                (true, _) => capability::project_dir(&h.root),
                (false, Some(home)) => capability::user_dir(home),
                (false, None) => return Err(Failure::from("no home directory (set AIR_HOME)")),
            };
            let dir = base.join(&name);
            if !dir.join(capability::MANIFEST).is_file() {
                return Err(Failure::from(format!(
                    "no capability `{name}` in {}",
                    base.display()
                )));
            }
            std::fs::remove_dir_all(&dir)
                .map_err(|e| Failure::from(format!("{}: {e}", dir.display())))?;
            outln!("removed `{name}` ({})", dir.display());
        }
        CapabilityCommand::Trust { yes } => {
            let found = capability::installed(h.home.as_deref(), &h.root, &h.trust);
            let new: Vec<&Capability> = found
                .capabilities
                .iter()
                .filter(|(_, t)| *t != Trusted::Yes)
                .map(|(c, _)| c)
                .collect();
            if new.is_empty() {
                outln!("every capability is trusted as it is");
                return Ok(());
            }
            outln!("capabilities to trust, as they are now:");
            for c in &new {
                for l in describe(c) {
                    outln!("  {l}");
                }
            }
            if !yes && !crate::hooks_cmd::confirmed("trust these?")? {
                return Err(Failure {
                    code: crate::exit::USAGE,
                    message: "nothing trusted (confirm at a terminal, or --yes)".into(),
                });
            }
            let mut trust = h.trust.clone();
            for c in &new {
                let key = capability::trust_key(c, h.home.as_deref(), &h.root);
                trust.trust(&key, std::slice::from_ref(*c));
            }
            save(&h, &trust)?;
            outln!("trusted {} capability(ies)", new.len());
        }
    }
    Ok(())
}
