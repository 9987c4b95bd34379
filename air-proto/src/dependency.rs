//! Capability dependencies that `air doctor` detects and repairs (D-045).

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DependencySpec {
    pub id: String,
    pub kind: DependencyKind,
    pub required_for: Vec<String>,
    pub severity: DependencySeverity,
    pub detect: DependencyDetectSpec,
    #[serde(default, skip_serializing_if = "Option::is_none")]
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
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DependencyDetectSpec {
    /// Executable looked up on PATH.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub executable: Option<String>,
    /// Arguments that make the executable print its version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version_args: Option<Vec<String>>,
    /// Regex with one capture group extracting the version from that output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version_regex: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env_var: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstallSpec {
    pub low_permission: LowPermissionInstall,
    pub high_permission: HighPermissionInstall,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commands: Option<Vec<InstallCommandTemplate>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
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

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstallCommandTemplate {
    /// Platform selector, e.g. `debian`, `macos`; absent means any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platform: Option<String>,
    pub command: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
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
