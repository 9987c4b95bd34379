//! The project's profile (D-015, D-022): `air init` scans the project (through `airsd
//! __scan`), the Main Agent proposes the profile from the scan when a model is
//! configured (`airsd __propose`, with this client's environment), and the user
//! confirms or corrects it once; `air profile show|scan|reset|confirm|set|unset` reads
//! and edits it in `.air/shared/project.json`, which every agent's context is given.

use std::io::{BufRead, IsTerminal, Write};

use air_proto::layout::ProjectPaths;
use air_proto::project_profile::{related, ProfileOrigin, ProjectProfile, FIELDS};

use crate::hidden::{self, Interrupt};
use crate::{args::usage, exit, project, CmdResult, Failure};

#[derive(clap::Subcommand, Debug)]
pub enum ProfileCommand {
    /// What air knows of the project: languages, build and test commands, layout,
    /// conventions (`unknown` where nothing is known).
    Show {
        /// The profile as JSON (`null` when there is none yet).
        #[arg(long)]
        json: bool,
    },
    /// Scan the project again and refresh the profile: what detection says, then
    /// the Main Agent's proposal when a model is configured (a profile you confirmed
    /// is kept).
    Scan {
        #[command(flatten)]
        ask: Ask,
    },
    /// Forget the profile, confirmed or not, and make it again as `scan` does.
    Reset {
        #[command(flatten)]
        ask: Ask,
    },
    /// Say that the profile is right as it is.
    Confirm,
    /// Correct one field: `air profile set test "ctest --test-dir build"` (several
    /// values: several commands, in order). Confirms the profile.
    Set {
        /// languages, build, test, source_dirs, test_dirs or conventions.
        field: String,
        /// Its value: several words for a list field (`air profile set test_dirs tests
        /// spec`), one command for build or test.
        #[arg(required = true)]
        values: Vec<String>,
    },
    /// Make a field unknown again. Confirms the profile.
    Unset {
        /// languages, build, test, source_dirs, test_dirs or conventions.
        field: String,
    },
}

/// Whether and which model proposes the profile.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct Ask {
    /// Keep what detection says: do not ask a model to propose the profile.
    #[arg(long)]
    pub no_model: bool,
    /// The model that proposes it (PROVIDER/MODEL; default: the Main Agent's).
    #[arg(long, value_name = "PROVIDER/MODEL", conflicts_with = "no_model")]
    pub model: Option<String>,
}

/// Scans the project: says what it found and returns the profile.
async fn scan(paths: &ProjectPaths) -> Result<Option<ProjectProfile>, Failure> {
    let report = hidden::run("__scan", paths.root(), &[], Interrupt::Ends, false).await?;
    let s = &report["scan"];
    outln!(
        "scanned {} files in {} directories ({} ms){}",
        s["files"],
        s["dirs"],
        s["elapsed_ms"],
        if s["complete"] == true {
            String::new()
        } else {
            "; stopped at the time limit: what it reached is kept, the rest is scanned later"
                .to_string()
        }
    );
    Ok(serde_json::from_value(report["profile"].clone())
        .ok()
        .flatten())
}

/// Scans, then (unless told not to) asks the Main Agent's model to propose the
/// profile; returns the profile as it then is. A confirmed profile is never proposed
/// again; a proposed one only when `again` (`air profile scan`, not `air init` run
/// once more).
async fn scan_and_propose(
    paths: &ProjectPaths,
    ask: &Ask,
    again: bool,
) -> Result<Option<ProjectProfile>, Failure> {
    let detected = scan(paths).await?;
    let settled = detected.as_ref().is_some_and(|p| match p.origin {
        ProfileOrigin::Confirmed => true,
        ProfileOrigin::Proposed => !again,
        ProfileOrigin::Detected => false,
    });
    if ask.no_model || settled {
        return Ok(detected);
    }
    let mut args = vec!["--until-stdin-closes"];
    if let Some(m) = &ask.model {
        args.extend(["--model", m.as_str()]);
    }
    let outcome = match hidden::run("__propose", paths.root(), &args, Interrupt::Ends, true).await {
        Ok(o) => o,
        Err(e) => {
            eprintln!(
                "air: no proposal ({}); the profile stays as it was",
                e.message
            );
            return Ok(detected);
        }
    };
    let first_line = |v: &serde_json::Value| {
        v.as_str()
            .and_then(|r| r.lines().next())
            .unwrap_or("no reason given")
            .to_string()
    };
    match outcome["status"].as_str() {
        Some("proposed") => {
            let mut usage = format!(
                "{} tokens in, {} out",
                outcome["input_tokens"], outcome["output_tokens"]
            );
            if let Some(c) = outcome["cost_micro_usd"].as_u64() {
                usage.push_str(&format!(", ${:.4}", c as f64 / 1e6));
            }
            outln!(
                "proposed by {} ({usage})",
                outcome["model"].as_str().unwrap_or("the Main Agent")
            );
            for n in outcome["notes"].as_array().into_iter().flatten() {
                outln!("  note: {}", n.as_str().unwrap_or_default());
            }
            let filled: Vec<&str> = outcome["filled"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|f| f.as_str())
                .collect();
            if !filled.is_empty() {
                outln!(
                    "  left unknown by the model, taken from detection: {}",
                    filled.join(", ")
                );
            }
        }
        Some("skipped") => outln!(
            "no model proposes the profile: {}",
            first_line(&outcome["reason"])
        ),
        Some("failed") => {
            outln!(
                "the Main Agent proposed nothing ({}): the profile stays as it was",
                first_line(&outcome["reason"])
            );
            for n in outcome["notes"].as_array().into_iter().flatten() {
                outln!("  note: {}", n.as_str().unwrap_or_default());
            }
        }
        _ => {}
    }
    Ok(serde_json::from_value(outcome["profile"].clone())
        .ok()
        .flatten()
        .or(detected))
}

fn show(profile: Option<&ProjectProfile>) {
    match profile {
        None => outln!("no profile yet (`air profile scan` makes one)"),
        Some(p) => {
            let origin = match p.origin {
                ProfileOrigin::Confirmed => "confirmed",
                ProfileOrigin::Detected => "detected, not confirmed",
                ProfileOrigin::Proposed => "proposed, not confirmed",
            };
            outln!("project profile ({origin}):");
            for l in p.lines() {
                outln!("  {l}");
            }
        }
    }
}

/// After `air init`: the scan, the proposal, the profile, and (at a terminal) the
/// question.
pub async fn after_init(paths: &ProjectPaths, ask: &Ask) -> CmdResult {
    let profile = scan_and_propose(paths, ask, false).await?;
    show(profile.as_ref());
    let Some(p) = profile.filter(|p| p.origin != ProfileOrigin::Confirmed) else {
        return Ok(());
    };
    // Asked only of a person who sees the question: stdout sent elsewhere (a file,
    // /dev/null, a pipe) means nobody reads it, so nobody is waited for.
    if !(std::io::stdin().is_terminal() && crate::stdout::is_terminal()) {
        outln!("`air profile confirm` says it is right; `air profile set FIELD VALUE…` corrects a field");
        return Ok(());
    }
    eprint!("is this right? [Y/n] ");
    std::io::stderr().flush()?;
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer)?;
    if matches!(
        answer.trim().to_ascii_lowercase().as_str(),
        "" | "y" | "yes"
    ) {
        if confirm_shown(paths, &p)? {
            outln!("confirmed");
        } else {
            outln!("the profile changed since it was shown: see `air profile show`, then `air profile confirm`");
        }
    } else {
        outln!(
            "correct it with `air profile set FIELD VALUE…` ({})",
            FIELDS.join(", ")
        );
    }
    Ok(())
}

/// Confirms the profile the user was shown, if it is still the one kept (another
/// command may have changed it while the user read it); whether it did.
fn confirm_shown(paths: &ProjectPaths, shown: &ProjectProfile) -> Result<bool, Failure> {
    let now = air_proto::time::now_iso().to_string();
    let mut confirmed = false;
    paths.update_project(|project| {
        let Some(p) = project.profile.as_mut() else {
            return false;
        };
        let same = ProjectProfile {
            origin: shown.origin,
            confirmed_at: shown.confirmed_at.clone(),
            ..p.clone()
        } == *shown;
        if same {
            p.origin = ProfileOrigin::Confirmed;
            p.confirmed_at = Some(now);
            confirmed = true;
        }
        same
    })?;
    Ok(confirmed)
}

pub async fn run(command: ProfileCommand) -> CmdResult {
    let paths = project()?;
    match command {
        ProfileCommand::Show { json } => {
            let profile = paths.read_project()?.profile;
            if json {
                return crate::output::print_json(&profile);
            }
            show(profile.as_ref());
            Ok(())
        }
        ProfileCommand::Scan { ask } => {
            let profile = scan_and_propose(&paths, &ask, true).await?;
            if profile
                .as_ref()
                .is_some_and(|p| p.origin == ProfileOrigin::Confirmed)
            {
                outln!("the profile you confirmed is kept (`air profile reset` makes it again)");
            }
            show(profile.as_ref());
            Ok(())
        }
        ProfileCommand::Reset { ask } => {
            paths.update_project(|project| project.profile.take().is_some())?;
            let profile = scan_and_propose(&paths, &ask, true).await?;
            show(profile.as_ref());
            Ok(())
        }
        ProfileCommand::Confirm => {
            let now = air_proto::time::now_iso().to_string();
            let project = paths.update_project(|project| match project.profile.as_mut() {
                Some(p) => {
                    p.origin = ProfileOrigin::Confirmed;
                    p.confirmed_at = Some(now);
                    true
                }
                None => false,
            })?;
            if project.profile.is_none() {
                return Err(Failure {
                    code: exit::USAGE,
                    message: "no profile to confirm yet: `air profile scan` makes one".into(),
                });
            }
            outln!("confirmed");
            Ok(())
        }
        ProfileCommand::Set { field, values } => edit(&paths, &field, Some(values)),
        ProfileCommand::Unset { field } => edit(&paths, &field, None),
    }
}

fn edit(paths: &ProjectPaths, field: &str, values: Option<Vec<String>>) -> CmdResult {
    if !FIELDS.contains(&field) {
        return Err(usage(format!(
            "no profile field `{field}`; the fields are {}",
            FIELDS.join(", ")
        )));
    }
    let now = air_proto::time::now_iso().to_string();
    let project = paths.update_project(|project| {
        let p = project
            .profile
            .get_or_insert_with(|| ProjectProfile::unknown(ProfileOrigin::Confirmed));
        if let Some(slot) = p.field_mut(field) {
            *slot = values.filter(|v| !v.is_empty());
        }
        p.origin = ProfileOrigin::Confirmed;
        p.confirmed_at = Some(now);
        true
    })?;
    show(project.profile.as_ref());
    // What was inferred from the field may be wrong now (D-015).
    let Some(mut p) = project.profile else {
        return Ok(());
    };
    let known: Vec<&str> = related(field)
        .iter()
        .copied()
        .filter(|r| p.field_mut(r).is_some_and(|v| v.is_some()))
        .collect();
    if !known.is_empty() {
        outln!(
            "this may change what follows from `{field}`: check {} (`air profile set` corrects each)",
            known.join(", ")
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the user confirms is what they were shown: a profile changed meanwhile
    /// (another terminal, a rescan, a proposal) is neither confirmed nor overwritten.
    #[test]
    fn only_the_profile_shown_is_confirmed() {
        let dir = tempfile::tempdir().unwrap();
        air_proto::layout::init(dir.path(), "2026-12-02T00:00:00Z").unwrap();
        let paths = ProjectPaths::new(dir.path());
        let mut shown = ProjectProfile::unknown(ProfileOrigin::Proposed);
        shown.test = Some(vec!["ctest".into()]);
        paths
            .update_project(|p| {
                p.profile = Some(shown.clone());
                true
            })
            .unwrap();
        // Changed while the question waited.
        let mut newer = shown.clone();
        newer.test = Some(vec!["ctest --preset ci".into()]);
        paths
            .update_project(|p| {
                p.profile = Some(newer.clone());
                true
            })
            .unwrap();
        assert!(matches!(confirm_shown(&paths, &shown), Ok(false)));
        assert_eq!(paths.read_project().unwrap().profile, Some(newer.clone()));
        assert!(matches!(confirm_shown(&paths, &newer), Ok(true)));
        let kept = paths.read_project().unwrap().profile.unwrap();
        assert_eq!(kept.origin, ProfileOrigin::Confirmed);
        assert_eq!(kept.test, newer.test);
    }
}
