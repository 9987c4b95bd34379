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
