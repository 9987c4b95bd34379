//! The project's profile (D-022): `air init` scans the project (through `airsd __scan`)
//! and shows what it found, and the user confirms or corrects it once; `air profile
//! show|confirm|set|unset` reads and edits it in `.air/shared/project.json`, which
//! every agent's context is given.

use std::io::{BufRead, IsTerminal, Write};
use std::process::Stdio;

use air_proto::layout::ProjectPaths;
use air_proto::project_profile::{ProfileOrigin, ProjectProfile, FIELDS};

use crate::{args::usage, exit, project, CmdResult, Failure};

#[derive(clap::Subcommand, Debug)]
pub enum ProfileCommand {
    /// What air knows of the project: languages, build and test commands, layout,
    /// conventions (`unknown` where nothing is known).
    Show,
    /// Scan the project again and refresh what detection says (a profile you
    /// confirmed is kept).
    Scan,
    /// Say that the profile is right as it is.
    Confirm,
    /// Correct one field: `air profile set test "ctest --test-dir build"` (several
    /// values: several commands, in order). Confirms the profile.
    Set {
        /// languages, build, test, source_dirs, test_dirs or conventions.
        field: String,
        #[arg(required = true)]
        values: Vec<String>,
    },
    /// Make a field unknown again. Confirms the profile.
    Unset { field: String },
}

/// Scans the project through airsd and returns what it printed.
fn scan(paths: &ProjectPaths) -> Result<serde_json::Value, Failure> {
    let airsd = crate::doctor::airsd_path();
    let out = std::process::Command::new(&airsd)
        .arg("__scan")
        .arg("--root")
        .arg(paths.root())
        .stdin(Stdio::null())
        .output()
        .map_err(|e| Failure::from(format!("cannot start {}: {e}", airsd.display())))?;
    if !out.status.success() {
        return Err(Failure::from(
            String::from_utf8_lossy(&out.stderr).trim().to_string(),
        ));
    }
    serde_json::from_slice(&out.stdout).map_err(|e| {
        Failure::from(format!(
            "{} __scan answered unreadably: {e}",
            airsd.display()
        ))
    })
}

fn show(profile: Option<&ProjectProfile>) {
    match profile {
        None => println!("no profile yet (`air profile scan` makes one)"),
        Some(p) => {
            let origin = match p.origin {
                ProfileOrigin::Confirmed => "confirmed",
                ProfileOrigin::Detected => "detected, not confirmed",
                ProfileOrigin::Proposed => "proposed, not confirmed",
            };
            println!("project profile ({origin}):");
            for l in p.lines() {
                println!("  {l}");
            }
        }
    }
}

/// After `air init`: the scan, the profile, and (at a terminal) the question.
pub fn after_init(paths: &ProjectPaths) -> CmdResult {
    let report = scan(paths)?;
    let s = &report["scan"];
    println!(
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
    let profile: Option<ProjectProfile> = serde_json::from_value(report["profile"].clone())
        .ok()
        .flatten();
    show(profile.as_ref());
    let Some(p) = profile.filter(|p| p.origin != ProfileOrigin::Confirmed) else {
        return Ok(());
    };
    if !std::io::stdin().is_terminal() {
        println!("`air profile confirm` says it is right; `air profile set FIELD VALUE…` corrects a field");
        return Ok(());
    }
    print!("is this right? [Y/n] ");
    std::io::stdout().flush()?;
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer)?;
    if matches!(
        answer.trim().to_ascii_lowercase().as_str(),
        "" | "y" | "yes"
    ) {
        confirm(paths, p)?;
        println!("confirmed");
    } else {
        println!(
            "correct it with `air profile set FIELD VALUE…` ({})",
            FIELDS.join(", ")
        );
    }
    Ok(())
}

fn confirm(paths: &ProjectPaths, mut p: ProjectProfile) -> CmdResult {
    let mut project = paths.read_project()?;
    p.origin = ProfileOrigin::Confirmed;
    p.confirmed_at = Some(air_proto::time::now_iso().to_string());
    project.profile = Some(p);
    paths.write_project(&project)?;
    Ok(())
}

pub fn run(command: ProfileCommand) -> CmdResult {
    let paths = project()?;
    match command {
        ProfileCommand::Show => {
            show(paths.read_project()?.profile.as_ref());
            Ok(())
        }
        ProfileCommand::Scan => {
            let report = scan(&paths)?;
            let profile: Option<ProjectProfile> = serde_json::from_value(report["profile"].clone())
                .ok()
                .flatten();
            show(profile.as_ref());
            Ok(())
        }
        ProfileCommand::Confirm => {
            let Some(p) = paths.read_project()?.profile else {
                return Err(Failure {
                    code: exit::USAGE,
                    message: "no profile to confirm yet: `air profile scan` makes one".into(),
                });
            };
            confirm(&paths, p)?;
            println!("confirmed");
            Ok(())
        }
        ProfileCommand::Set { field, values } => edit(&paths, &field, Some(values)),
        ProfileCommand::Unset { field } => edit(&paths, &field, None),
    }
}

fn edit(paths: &ProjectPaths, field: &str, values: Option<Vec<String>>) -> CmdResult {
    let mut p = paths.read_project()?.profile.unwrap_or(ProjectProfile {
        origin: ProfileOrigin::Confirmed,
        languages: None,
        build: None,
        test: None,
        source_dirs: None,
        test_dirs: None,
        conventions: None,
        confirmed_at: None,
    });
    let Some(slot) = p.field_mut(field) else {
        return Err(usage(format!(
            "no profile field `{field}`; the fields are {}",
            FIELDS.join(", ")
        )));
    };
    *slot = values.filter(|v| !v.is_empty());
    confirm(paths, p.clone())?;
    show(paths.read_project()?.profile.as_ref());
    Ok(())
}
