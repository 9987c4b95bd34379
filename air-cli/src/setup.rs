//! What air and the project's languages need installed, as `air doctor` shows it,
//! and `air doctor --fix` (`air setup`): the exact command for each missing
//! dependency, run only after the user says yes. `--yes` runs the package-manager
//! commands after showing them, but a dependency that touches credentials or the
//! system's security settings is always asked about, whatever the flags or the
//! permission mode (D-045).
//!
//! The first time a project is used on this machine (no mark in `.air/local/state/`),
//! the read-only check runs by itself and says what is missing; it never installs.

use std::io::{BufRead, Write};
use std::path::Path;
use std::process::Stdio;

use air_proto::dependency::{
    DependencyRisk, DependencySeverity, Found, HighPermissionInstall, LowPermissionInstall, Report,
};
use air_proto::layout::ProjectPaths;

/// The mark of a project whose first-start check ran: the report it found.
const FIRST_START_MARK: &str = "dependencies.json";

/// Asks airsd what this machine has of what air and the project at `root` need.
pub fn check(airsd: &Path, root: Option<&Path>) -> Result<Report, String> {
    let mut cmd = std::process::Command::new(airsd);
    cmd.arg("__dependencies").stdin(Stdio::null());
    if let Some(root) = root {
        cmd.arg("--root").arg(root);
    }
    let out = cmd
        .output()
        .map_err(|e| format!("cannot start {}: {e}", airsd.display()))?;
    if !out.status.success() {
        return Err(format!(
            "{} __dependencies failed ({}): {}",
            airsd.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    serde_json::from_slice(&out.stdout).map_err(|e| {
        format!(
            "{} __dependencies answered unreadably: {e}",
            airsd.display()
        )
    })
}

fn severity(s: DependencySeverity) -> &'static str {
    match s {
        DependencySeverity::Required => "required",
        DependencySeverity::Optional => "optional",
        DependencySeverity::Degraded => "recommended",
    }
}

/// `required for cpp.build (cpp)`.
fn what_for(f: &Found) -> String {
    format!(
        "{} for {} ({})",
        severity(f.spec.severity),
        f.spec.required_for.join(", "),
        f.needed_by.join(", ")
    )
}

/// Whether a missing dependency keeps a run from starting: one air itself requires.
pub fn blocks_runs(f: &Found) -> bool {
    !f.present
        && f.spec.severity == DependencySeverity::Required
        && f.needed_by.iter().any(|b| b == "air")
}

/// The report's lines.
pub fn lines(report: &Report) -> Vec<String> {
    let profiles = if report.profiles.is_empty() {
        "no language detected".to_string()
    } else {
        report
            .profiles
            .iter()
            .map(|(p, files)| format!("{p} from {}", files.join(", ")))
            .collect::<Vec<_>>()
            .join("; ")
    };
    let mut out = vec![format!(
        "dependencies ({}; this project: {profiles}):",
        report.platform
    )];
    for f in &report.dependencies {
        let what = what_for(f);
        if f.present {
            let name = match &f.version {
                Some(v) => format!("{} {v}", f.spec.id),
                None => f.spec.id.clone(),
            };
            out.push(format!("  ok       {name:<24} {what}"));
        } else {
            let how = match (&f.install, &f.docs) {
                (Some(c), _) => format!(": `{c}`"),
                (None, Some(d)) => format!(": {d}"),
                (None, None) => format!(": air knows no command for {}", report.platform),
            };
            out.push(format!("  missing  {:<24} {what}{how}", f.spec.id));
        }
    }
    if report
        .dependencies
        .iter()
        .any(|f| !f.present && f.install.is_some())
    {
        out.push("  `air doctor --fix` shows each command and asks before running it".into());
    }
    out
}

/// How a missing dependency may be installed given `--yes`.
#[derive(Debug, PartialEq, Eq)]
pub enum Consent {
    /// Shown, then asked.
    Ask,
    /// Shown, then run (`--yes` and a dependency whose policy allows it).
    Announce,
    /// Shown only: air never runs it.
    Never,
}

pub fn consent(f: &Found, yes: bool) -> Consent {
    let Some(install) = &f.spec.install else {
        return Consent::Never;
    };
    if f.install.is_none() {
        return Consent::Never;
    }
    // Whatever the flags: a credential or a system setting is the user's to allow.
    let always_ask = matches!(
        f.spec.risk,
        DependencyRisk::Credentials | DependencyRisk::SystemSensitive
    );
    if yes && !always_ask {
        match install.high_permission {
            HighPermissionInstall::Never => Consent::Never,
            HighPermissionInstall::AnnounceThenRun | HighPermissionInstall::SafeCache => {
                Consent::Announce
            }
            HighPermissionInstall::Prompt => Consent::Ask,
        }
    } else {
        match (install.low_permission, install.high_permission) {
            (LowPermissionInstall::Never, HighPermissionInstall::Never) => Consent::Never,
            _ => Consent::Ask,
        }
    }
}

/// Offers each missing dependency's command; returns how many were installed and how
/// many are still missing among the required.
pub fn fix(
    report: &Report,
    yes: bool,
    input: &mut dyn BufRead,
    out: &mut dyn Write,
) -> std::io::Result<(usize, usize)> {
    let mut installed = 0;
    let missing: Vec<&Found> = report.dependencies.iter().filter(|f| !f.present).collect();
    if missing.is_empty() {
        writeln!(
            out,
            "nothing to install: everything air and this project need is here"
        )?;
    }
    for f in missing {
        let what = format!("{} ({})", f.spec.id, what_for(f));
        let Some(command) = &f.install else {
            match &f.docs {
                Some(d) => writeln!(out, "{what} is missing: {d}")?,
                None => writeln!(
                    out,
                    "{what} is missing; air knows no command for {}: install it yourself",
                    report.platform
                )?,
            }
            continue;
        };
        writeln!(
            out,
            "{what} is missing; to install it air would run:\n    {command}"
        )?;
        let run = match consent(f, yes) {
            Consent::Never => {
                writeln!(
                    out,
                    "  air does not run this itself: run it yourself if you want it"
                )?;
                false
            }
            Consent::Announce => true,
            Consent::Ask => {
                write!(out, "  run it? [y/N] ")?;
                out.flush()?;
                let mut answer = String::new();
                input.read_line(&mut answer)?;
                let yes = matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes");
                if !yes {
                    writeln!(out, "  skipped")?;
                }
                yes
            }
        };
        if !run {
            continue;
        }
        out.flush()?;
        // The user's terminal stays the command's: sudo may ask for a password.
        let status = std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg(command)
            .status();
        match status {
            Ok(s) if s.success() => {
                installed += 1;
                writeln!(out, "  done")?;
            }
            Ok(s) => writeln!(out, "  failed ({s})")?,
            Err(e) => writeln!(out, "  could not run it: {e}")?,
        }
    }
    let still = report
        .dependencies
        .iter()
        .filter(|f| !f.present && f.spec.severity == DependencySeverity::Required)
        .count();
    Ok((installed, still))
}

/// The first use of a project on this machine: runs the read-only check once and says
/// on stderr what is missing. Never installs, never fails the command that called it.
pub fn first_start(paths: &ProjectPaths, airsd: &Path) {
    let mark = paths.state().join(FIRST_START_MARK);
    if mark.exists() {
        return;
    }
    let Ok(report) = check(airsd, Some(paths.root())) else {
        return;
    };
    if paths.ensure_local().is_err() {
        return;
    }
    if let Ok(text) = serde_json::to_string_pretty(&report) {
        let _ = std::fs::write(&mark, text);
    }
    let missing: Vec<String> = report
        .dependencies
        .iter()
        .filter(|f| !f.present)
        .map(|f| format!("{} ({})", f.spec.id, severity(f.spec.severity)))
        .collect();
    if !missing.is_empty() {
        eprintln!(
            "air: first use of this project here; missing: {} (`air doctor` says what each is for, `air doctor --fix` installs them, asking first)",
            missing.join(", ")
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use air_proto::dependency::*;

    fn found(risk: DependencyRisk, high: HighPermissionInstall) -> Found {
        Found {
            spec: DependencySpec {
                id: "x".into(),
                kind: DependencyKind::Executable,
                required_for: vec!["cpp.build".into()],
                severity: DependencySeverity::Required,
                detect: DependencyDetectSpec::default(),
                install: Some(InstallSpec {
                    low_permission: LowPermissionInstall::Prompt,
                    high_permission: high,
                    commands: None,
                    docs: None,
                }),
                risk,
            },
            needed_by: vec!["cpp".into()],
            present: false,
            location: None,
            version: None,
            install: Some("true".into()),
            docs: None,
        }
    }

    #[test]
    fn credentials_and_system_settings_are_always_asked() {
        use HighPermissionInstall::*;
        let pkg = found(DependencyRisk::NeedsRoot, AnnounceThenRun);
        assert_eq!(consent(&pkg, false), Consent::Ask);
        assert_eq!(consent(&pkg, true), Consent::Announce);
        for risk in [DependencyRisk::Credentials, DependencyRisk::SystemSensitive] {
            let f = found(risk, AnnounceThenRun);
            assert_eq!(consent(&f, true), Consent::Ask, "{risk:?}");
            assert_eq!(consent(&f, false), Consent::Ask, "{risk:?}");
        }
        assert_eq!(
            consent(&found(DependencyRisk::None, Never), true),
            Consent::Never
        );
    }

    #[test]
    fn a_no_is_not_run_and_a_yes_runs_the_command_shown() {
        let dir = tempfile::tempdir().unwrap();
        let touched = dir.path().join("ran");
        let mut a = found(
            DependencyRisk::NeedsRoot,
            HighPermissionInstall::AnnounceThenRun,
        );
        a.install = Some(format!("echo a >> {}", touched.display()));
        let mut b = a.clone();
        b.spec.id = "y".into();
        b.install = Some(format!("echo b >> {}", touched.display()));
        let report = Report {
            platform: "debian".into(),
            profiles: vec![],
            dependencies: vec![a, b],
        };
        let mut out = Vec::new();
        let (installed, still) = fix(&report, false, &mut "n\nyes\n".as_bytes(), &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!((installed, still), (1, 2));
        assert_eq!(std::fs::read_to_string(&touched).unwrap(), "b\n");
        assert!(
            text.contains(&format!("echo a >> {}", touched.display())),
            "{text}"
        );
        assert!(text.contains("skipped"), "{text}");
        // No answer at all (stdin closed) is a no.
        let mut out = Vec::new();
        fix(&report, false, &mut "".as_bytes(), &mut out).unwrap();
        assert_eq!(std::fs::read_to_string(&touched).unwrap(), "b\n");
    }
}
