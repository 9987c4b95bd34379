//! Capability dependencies that `air doctor` detects and repairs (D-045).

use serde::{Deserialize, Serialize};

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DependencySpec {
    pub id: String,
    pub kind: DependencyKind,
    pub required_for: Vec<String>,
    pub severity: DependencySeverity,
    pub detect: DependencyDetectSpec,
    pub install: Option<InstallSpec>,
    pub risk: DependencyRisk,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DependencyKind {
    Executable,
    SystemPackage,
    NpmPackage,
    PipPackage,
    LspServer,
    Formatter,
    McpServer,
    EnvVar,
    Permission,
    Service,
    NetworkPort,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DependencySeverity {
    Required,
    Optional,
    Degraded,
}

/// How to tell whether a dependency is present. Each field is one probe; all present
/// probes must pass.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DependencyDetectSpec {
    /// Executable looked up on PATH.
    pub executable: Option<String>,
    /// Arguments that make the executable print its version.
    pub version_args: Option<Vec<String>>,
    /// Regex with one capture group extracting the version from that output.
    pub version_regex: Option<String>,
    pub min_version: Option<String>,
    pub env_var: Option<String>,
    pub path: Option<String>,
    pub port: Option<u16>,
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstallSpec {
    pub low_permission: LowPermissionInstall,
    pub high_permission: HighPermissionInstall,
    pub commands: Option<Vec<InstallCommandTemplate>>,
    pub docs: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LowPermissionInstall {
    Never,
    Prompt,
    SafeCache,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HighPermissionInstall {
    Never,
    AnnounceThenRun,
    SafeCache,
    Prompt,
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstallCommandTemplate {
    /// Platform selector, e.g. `debian`, `macos`; absent means any.
    pub platform: Option<String>,
    pub command: String,
    pub requires_root: Option<bool>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DependencyRisk {
    None,
    DownloadsCode,
    NeedsRoot,
    NetworkCapture,
    Credentials,
    SystemSensitive,
}

/// One dependency as this machine has it.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Found {
    pub spec: DependencySpec,
    /// The profiles or `air` that need it.
    pub needed_by: Vec<String>,
    pub present: bool,
    /// Where it was found, or which variable holds it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The exact command that would install it here (root through `sudo` when not
    /// root); none when air does not know one for this platform.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub install: Option<String>,
    /// What to do by hand instead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub docs: Option<String>,
}

/// The report `air doctor` shows.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Report {
    pub platform: String,
    /// The profiles the project calls for, with the files that say so.
    pub profiles: Vec<(String, Vec<String>)>,
    pub dependencies: Vec<Found>,
}

/// The package of one executable on each platform air knows how to install on.
#[derive(Clone, Copy)]
pub struct Packages {
    pub debian: &'static str,
    pub fedora: &'static str,
    pub arch: &'static str,
    pub macos: &'static str,
}

impl Packages {
    /// The same name everywhere.
    pub const fn same(name: &'static str) -> Self {
        Packages {
            debian: name,
            fedora: name,
            arch: name,
            macos: name,
        }
    }
}

/// An executable on PATH, detected by its version, installed by the platform's
/// package manager (which needs root, so it is always asked).
pub fn executable(
    id: &str,
    required_for: &[&str],
    severity: DependencySeverity,
    packages: Packages,
) -> DependencySpec {
    let commands = [
        (
            "debian",
            format!("apt-get install -y {}", packages.debian),
            true,
        ),
        (
            "fedora",
            format!("dnf install -y {}", packages.fedora),
            true,
        ),
        (
            "arch",
            format!("pacman -S --noconfirm {}", packages.arch),
            true,
        ),
        ("macos", format!("brew install {}", packages.macos), false),
    ]
    .into_iter()
    .map(|(platform, command, root)| InstallCommandTemplate {
        platform: Some(platform.to_string()),
        command,
        requires_root: Some(root),
    })
    .collect();
    DependencySpec {
        id: id.to_string(),
        kind: DependencyKind::Executable,
        required_for: required_for.iter().map(|s| s.to_string()).collect(),
        severity,
        detect: DependencyDetectSpec {
            executable: Some(id.to_string()),
            version_args: Some(vec!["--version".into()]),
            ..Default::default()
        },
        install: Some(InstallSpec {
            low_permission: LowPermissionInstall::Prompt,
            // `air doctor --fix --yes` shows it, then runs it.
            high_permission: HighPermissionInstall::AnnounceThenRun,
            commands: Some(commands),
            docs: None,
        }),
        risk: DependencyRisk::NeedsRoot,
    }
}
