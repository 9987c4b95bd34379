//! `air hooks`: the hooks air runs in this project (yours from `~/.air/hooks.yaml`,
//! the project's from `.air/shared/hooks.yaml` and `.claude/settings.json`), whether
//! each may run, and `air hooks trust` to let the project's run as they are now.

use air_proto::hooks::{Hook, Trust};
use clap::Subcommand;

use crate::{CmdResult, Failure};

#[derive(Subcommand, Debug)]
pub enum HooksCommand {
    /// List the hooks and whether each may run.
    List {
        #[arg(long, help = crate::JSON_HELP)]
        json: bool,
    },
    /// Trust the project's hooks as they are now, with the files their commands run
    /// (each is shown, and you confirm); one changed later is not run until trusted
    /// again.
    Trust {
        /// Trust them without asking (what is trusted is still printed).
        #[arg(long, short = 'y')]
        yes: bool,
    },
}

fn loaded() -> Result<
    (
        std::path::PathBuf,
        Vec<Hook>,
        Trust,
        Option<std::path::PathBuf>,
    ),
    Failure,
> {
    let paths = crate::project()?;
    let root = std::fs::canonicalize(paths.root()).unwrap_or_else(|_| paths.root().to_path_buf());
    let home = crate::doctor::air_home();
    let loaded = air_proto::hooks::load(
        home.as_ref().map(|h| h.join("hooks.yaml")).as_deref(),
        &root,
    )
    .map_err(Failure::from)?;
    for w in &loaded.warnings {
        eprintln!("air: {w}");
    }
    let hooks = loaded.hooks;
    let trust_file = home.map(|h| h.join("trust.json"));
    let trust = match &trust_file {
        Some(f) => Trust::load(f).map_err(Failure::from)?,
        None => Trust::default(),
    };
    Ok((root, hooks, trust, trust_file))
}

fn line(h: &Hook, runs: bool) -> String {
    // Escaped, so that what is shown is what runs.
    let scripts: Vec<String> = h
        .scripts
        .iter()
        .map(|(p, _)| p.display().to_string())
        .collect();
    format!(
        "{:<16} {:<14} {:<10} {}  ({}, {}{})",
        h.event.as_str(),
        h.matcher.as_deref().unwrap_or("*").escape_debug(),
        if runs { "runs" } else { "UNTRUSTED" },
        h.command.escape_debug(),
        h.source.as_str(),
        h.file.display(),
        if scripts.is_empty() {
            String::new()
        } else {
            format!("; runs {}", scripts.join(", "))
        }
    )
}

/// The person's yes to `question`, at a terminal (no terminal: no).
pub(crate) fn confirmed(question: &str) -> Result<bool, Failure> {
    use std::io::IsTerminal as _;
    if !std::io::stdin().is_terminal() {
        return Ok(false);
    }
    eprint!("air: {question} [y/N] ");
    let mut line = String::new();
    std::io::stdin()
        .read_line(&mut line)
        .map_err(|e| Failure::from(format!("cannot read the answer: {e}")))?;
    Ok(matches!(line.trim(), "y" | "Y" | "yes"))
}

pub fn run(command: Option<HooksCommand>) -> CmdResult {
    let (root, hooks, mut trust, trust_file) = loaded()?;
    match command.unwrap_or(HooksCommand::List { json: false }) {
        HooksCommand::List { json: true } => {
            let list: Vec<serde_json::Value> = hooks
                .iter()
                .map(|h| {
                    let mut v = serde_json::to_value(h).unwrap_or_default();
                    v["trusted"] = trust.allows(&root, h).into();
                    v["pin"] = h.pin().into();
                    v
                })
                .collect();
            outln!("{}", serde_json::to_string_pretty(&list)?);
        }
        HooksCommand::List { json: false } => {
            if hooks.is_empty() {
                outln!("no hooks (~/.air/hooks.yaml, .air/shared/hooks.yaml, .claude/settings.json; docs/hooks.md)");
            }
            for h in &hooks {
                outln!("{}", line(h, trust.allows(&root, h)));
            }
        }
        HooksCommand::Trust { yes } => {
            let new: Vec<Hook> = hooks
                .iter()
                .filter(|h| !trust.allows(&root, h))
                .cloned()
                .collect();
            if new.is_empty() {
                outln!("every hook of this project is trusted as it is");
                return Ok(());
            }
            let Some(file) = trust_file else {
                return Err(Failure::from(
                    "no home directory to keep the trust in (set AIR_HOME)",
                ));
            };
            outln!("the project's hooks to trust, as they are now:");
            for h in &new {
                outln!("  {}", line(h, true));
            }
            if !yes && !confirmed("trust these?")? {
                return Err(Failure {
                    code: crate::exit::USAGE,
                    message: "nothing trusted (confirm at a terminal, or --yes)".into(),
                });
            }
            trust.trust(&root, &new);
            outln!("trusted {} hook(s)", new.len());
            trust.save(&file).map_err(Failure::from)?;
        }
    }
    Ok(())
}
