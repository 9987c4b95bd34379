//! What air has learned and been taught: `air debug search TEXT`, the project's
//! debugging records that best match, asked of airsd (`debug.search`) — what failed,
//! the error signatures, the cause, the fix and whether a build or tests passed after
//! it; and `air skills list`, the skills agents are shown.

use air_proto::api::{params, AirApiClient as _};
use clap::Subcommand;

use crate::connect;
use crate::output::print_json;
use crate::CmdResult;

#[derive(Subcommand, Debug)]
pub enum DebugCommand {
    /// The debugging records that best match TEXT (symptom, error message,
    /// signature), best first.
    Search {
        /// What to look for.
        #[arg(required = true, num_args = 1..)]
        text: Vec<String>,
        /// Most records to show.
        #[arg(long, short = 'n', default_value_t = 10)]
        limit: u32,
        #[arg(long, help = crate::JSON_HELP)]
        json: bool,
    },
}

pub async fn run(command: DebugCommand) -> CmdResult {
    let DebugCommand::Search { text, limit, json } = command;
    let conn = connect().await?;
    let hits = conn
        .client
        .debug_search(params::DebugSearch {
            query: text.join(" "),
            limit: Some(limit),
        })
        .await
        .map_err(crate::rpc_failure)?;
    if json {
        return print_json(&hits);
    }
    if hits.is_empty() {
        outln!("no debugging record of this project matches");
        return Ok(());
    }
    for h in &hits {
        let state = if h
            .evidence
            .iter()
            .any(|e| e == "build_pass" || e == "test_pass")
        {
            "fixed, verified"
        } else if h.fixed {
            "fixed"
        } else {
            "not fixed"
        };
        outln!(
            "{}  {}  task {} ({}, session {})",
            h.created_at.chars().take(19).collect::<String>(),
            state,
            h.task_id,
            h.agent_id,
            h.session_id
        );
        outln!("  symptom:    {}", h.symptom);
        if let Some(cause) = &h.root_cause {
            outln!("  root cause: {cause}");
        }
        if !h.fix.is_empty() {
            outln!("  fix:        {}", h.fix);
        }
        for line in h.signature.lines().take(3) {
            outln!("  signature:  {line}");
        }
        outln!();
    }
    Ok(())
}

#[derive(Subcommand, Debug)]
pub enum SkillsCommand {
    /// The skills agents are shown: the user's (`~/.air/skills/`) and the project's
    /// (`.air/shared/skills/`, which win by name), and any that cannot be read.
    List {
        #[arg(long, help = crate::JSON_HELP)]
        json: bool,
    },
}

pub fn skills(command: SkillsCommand) -> CmdResult {
    let SkillsCommand::List { json } = command;
    let paths = crate::project()?;
    let (skills, problems) =
        air_proto::skills::discover(crate::doctor::air_home().as_deref(), &paths.shared());
    if json {
        return print_json(&serde_json::json!({ "skills": skills, "problems": problems }));
    }
    if skills.is_empty() {
        outln!("no skills: add one as ~/.air/skills/NAME/SKILL.md or .air/shared/skills/NAME/SKILL.md (front matter with name and description)");
    }
    for s in &skills {
        outln!("{:<24} {:<8} {}", s.name, s.scope, s.description);
    }
    for p in &problems {
        eprintln!("left out: {p}");
    }
    Ok(())
}
