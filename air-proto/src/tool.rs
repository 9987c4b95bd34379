//! Tool metadata (D-044): what a tool is, which schemas it validates against and which
//! permissions it needs. The `execute` half of the seeds' interface lives in airsd.

use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    pub name: String,
    pub version: u32,
    pub description: String,
    /// JSON Schema of the input.
    pub input_schema: Value,
    /// JSON Schema of the output.
    pub output_schema: Value,
    pub category: ToolCategory,
    pub permissions: ToolPermissions,
    pub streaming: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolCategory {
    Filesystem,
    Shell,
    Build,
    Test,
    Debug,
    StaticAnalysis,
    Gui,
    Network,
    Memory,
    Project,
    Internal,
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolPermissions {
    pub read_paths: Option<PathPolicy>,
    pub write_paths: Option<PathPolicy>,
    pub execute: Option<bool>,
    pub network: Option<bool>,
    pub system_sensitive: Option<bool>,
}

/// Which paths a tool may touch before the PermissionEngine narrows it further.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PathPolicy {
    /// Only the task's scope (allowed_paths minus denied_paths).
    TaskScope,
    /// Anywhere inside the project.
    Project,
    /// Anywhere the PermissionEngine allows, including outside the project.
    Anywhere,
}
