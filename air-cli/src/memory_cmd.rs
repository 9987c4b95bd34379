//! `air memory`: the project's learned memory, asked of airsd (`memory.*`) — list
//! what it holds and what awaits the user's word, show one (a patch with its diff),
//! promote, forget, run the Curator now, and export the project's shareable part as
//! Markdown with YAML front matter (`air memory export --project-rules AIR.md`).

use std::path::{Path, PathBuf};

use air_proto::api::{params, AirApiClient as _};
use air_proto::memory::{MemoryEntry, MemoryKind, MemoryStatus};
use clap::Subcommand;

use crate::connect;
use crate::output::print_json;
use crate::CmdResult;

#[derive(Subcommand, Debug)]
pub enum MemoryCommand {
    /// Entries, newest first; those awaiting your word are marked `ask`.
    List {
        /// candidate, promoted or archived.
        #[arg(long, value_parser = parse_status)]
        status: Option<MemoryStatus>,
        /// user, project, feedback, reference, skill or patch.
        #[arg(long, value_parser = parse_kind)]
        kind: Option<MemoryKind>,
        /// Show at most this many.
        #[arg(long, short = 'n', default_value_t = 100)]
        limit: u32,
        #[arg(long, help = crate::JSON_HELP)]
        json: bool,
    },
    /// One entry in full; a skill draft or patch with the file it writes (and diff).
    Show {
        /// The entry's id, as `air memory list` shows it.
        id: String,
        #[arg(long, help = crate::JSON_HELP)]
        json: bool,
    },
    /// Promote an entry: agents are shown it; a skill draft or patch is written.
    Promote {
        /// The entry's id, as `air memory list` shows it.
        id: String,
    },
    /// Remove an entry for good.
    Forget {
        /// The entry's id, as `air memory list` shows it.
        id: String,
    },
    /// Run the Curator's pass now (airsd runs it weekly).
    Curate {
        #[arg(long, help = crate::JSON_HELP)]
        json: bool,
    },
    /// Write the project's promoted memories (project, feedback, reference; not your
    /// personal ones) to a Markdown file, between marks that a later export replaces.
    Export {
        /// The file to write (created, or its exported part replaced).
        #[arg(long = "project-rules", value_name = "FILE")]
        project_rules: PathBuf,
    },
}

fn parse_status(s: &str) -> Result<MemoryStatus, String> {
    MemoryStatus::parse(s).ok_or_else(|| format!("`{s}`: one of candidate, promoted, archived"))
}

fn parse_kind(s: &str) -> Result<MemoryKind, String> {
    MemoryKind::parse(s)
        .ok_or_else(|| format!("`{s}`: one of user, project, feedback, reference, skill, patch"))
}

pub async fn run(command: MemoryCommand) -> CmdResult {
    let conn = connect().await?;
    let client = &conn.client;
    match command {
        MemoryCommand::List {
            status,
            kind,
            limit,
            json,
        } => {
            let entries = client
                .memory_list(params::MemoryList {
                    status,
                    kind,
                    limit: Some(limit),
                })
                .await
                .map_err(crate::rpc_failure)?;
            if json {
                return print_json(&entries);
            }
            if entries.is_empty() {
                outln!(
                    "the learned memory holds nothing{}",
                    filter_note(status, kind)
                );
            }
            for e in &entries {
                outln!("{}", line(e));
            }
            let asking = entries.iter().filter(|e| e.awaits_user()).count();
            if asking > 0 {
                outln!("\n{asking} await your word: air memory show ID, then air memory promote ID or air memory forget ID");
            }
            Ok(())
        }
        MemoryCommand::Show { id, json } => {
            let view = client
                .memory_show(params::MemoryId { id })
                .await
                .map_err(crate::rpc_failure)?;
            if json {
                return print_json(&view);
            }
            let e = &view.entry;
            outln!("{}", line(e));
            outln!(
                "  source {}, seen {}×, used {}×{}{}",
                e.source,
                e.seen,
                e.uses,
                e.debug_record_id
                    .as_ref()
                    .map(|d| format!(", from debugging record {d}"))
                    .unwrap_or_default(),
                if e.verified {
                    " (proven by a passing build or test)"
                } else {
                    ""
                }
            );
            if !e.files.is_empty() {
                outln!("  files: {}", e.files.join(", "));
            }
            if let Some(t) = &e.target {
                outln!("  target: {t}");
            }
            if let Some(n) = &e.note {
                outln!("  note: {n}");
            }
            outln!("\n{}\n", e.body.trim());
            if let Some(p) = &view.path {
                outln!("promoting it writes {p}");
            }
            if let Some(d) = &view.diff {
                outln!("{d}");
            }
            if let Some(p) = &view.problem {
                outln!("it cannot be promoted as things stand: {p}");
            }
            Ok(())
        }
        MemoryCommand::Promote { id } => {
            let view = client
                .memory_promote(params::MemoryId { id })
                .await
                .map_err(crate::rpc_failure)?;
            match &view.path {
                Some(p) => outln!("promoted {}: wrote {p}", view.entry.id),
                None => outln!(
                    "promoted {}: agents are shown it when it concerns their task",
                    view.entry.id
                ),
            }
            Ok(())
        }
        MemoryCommand::Forget { id } => {
            let e = client
                .memory_forget(params::MemoryId { id })
                .await
                .map_err(crate::rpc_failure)?;
            outln!("forgot {} ({})", e.id, e.title);
            Ok(())
        }
        MemoryCommand::Curate { json } => {
            let r = client
                .memory_curate(params::NoParams {})
                .await
                .map_err(crate::rpc_failure)?;
            if json {
                return print_json(&r);
            }
            for o in &r.overlapping_skills {
                outln!(
                    "skills {} and {} overlap ({:.0}% of their words): consider merging them",
                    o.a,
                    o.b,
                    o.overlap * 100.0
                );
            }
            for id in &r.stale {
                outln!("archived {id}: stale, the files it concerns are gone");
            }
            for id in &r.unused {
                outln!(
                    "archived {id}: in no agent's context for {} days",
                    r.unused_days
                );
            }
            for s in &r.unused_skills {
                outln!(
                    "skill {s} was not loaded for {} days: remove it if it is no longer needed",
                    r.unused_days
                );
            }
            if r.overlapping_skills.is_empty()
                && r.stale.is_empty()
                && r.unused.is_empty()
                && r.unused_skills.is_empty()
            {
                outln!("nothing to curate");
            }
            Ok(())
        }
        MemoryCommand::Export { project_rules } => {
            let entries = client
                .memory_list(params::MemoryList {
                    status: Some(MemoryStatus::Promoted),
                    kind: None,
                    limit: Some(10_000),
                })
                .await
                .map_err(crate::rpc_failure)?;
            let shared: Vec<&MemoryEntry> = entries
                .iter()
                .filter(|e| {
                    matches!(
                        e.kind,
                        MemoryKind::Project | MemoryKind::Feedback | MemoryKind::Reference
                    )
                })
                .collect();
            let path = if project_rules.is_absolute() {
                project_rules
            } else {
                crate::current_dir()?.join(project_rules)
            };
            export(&path, &shared)?;
            outln!("wrote {} memories to {}", shared.len(), path.display());
            Ok(())
        }
    }
}

fn filter_note(status: Option<MemoryStatus>, kind: Option<MemoryKind>) -> String {
    match (status, kind) {
        (None, None) => String::new(),
        _ => format!(
            " ({}{})",
            status.map(|s| s.as_str()).unwrap_or("any status"),
            kind.map(|k| format!(", {}", k.as_str()))
                .unwrap_or_default()
        ),
    }
}

fn line(e: &MemoryEntry) -> String {
    format!(
        "{}  {:<9} {:<9} {}{}",
        e.id,
        e.status.as_str(),
        e.kind.as_str(),
        e.title,
        if e.awaits_user() { "  [ask]" } else { "" }
    )
}

const BEGIN: &str = "<!-- air:memory:begin (written by `air memory export`; what is between these marks is replaced by the next export) -->";
const END: &str = "<!-- air:memory:end -->";

/// Writes the entries between the marks of `path`, keeping what is around them; a
/// new file gets YAML front matter first.
fn export(path: &Path, entries: &[&MemoryEntry]) -> CmdResult {
    let mut section = format!("{BEGIN}\n## What air learned about this project\n");
    for e in entries {
        section.push_str(&format!("\n### {}\n\n", e.title.trim()));
        let mut meta = vec![format!("kind: {}", e.kind.as_str())];
        if !e.files.is_empty() {
            meta.push(format!("files: {}", e.files.join(", ")));
        }
        if e.verified {
            meta.push("proven by a passing build or test".into());
        }
        section.push_str(&format!("_{}_\n\n{}\n", meta.join(" · "), e.body.trim()));
    }
    section.push_str(END);
    section.push('\n');
    let text = match std::fs::read_to_string(path) {
        Ok(old) => match (old.find(BEGIN), old.find(END)) {
            (Some(b), Some(e)) if e > b => {
                format!("{}{}{}", &old[..b], section, old[e + END.len()..].trim_start_matches('\n'))
            }
            _ => format!("{}\n\n{section}", old.trim_end()),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => format!(
            "---\ntitle: Project rules\nsource: air memory export\nexported_at: {}\nentries: {}\n---\n\n# Project rules\n\n{section}",
            air_proto::time::now_iso(),
            entries.len()
        ),
        Err(e) => return Err(format!("cannot read {}: {e}", path.display()).into()),
    };
    std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    Ok(())
}
