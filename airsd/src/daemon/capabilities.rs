//! What the trusted capabilities add to a run (docs/capabilities.md): their rules
//! join the project's, the hosts they need are allowed. (Their MCP servers, hooks and
//! skills are read where those are.)

use std::path::Path;

/// Adds the trusted capabilities' rules and hosts to a run's. One whose rules cannot
/// be read adds none, said in the log.
pub(super) fn apply(
    air_home: Option<&Path>,
    root: &Path,
    permissions: &mut air_proto::config::PermissionsConfig,
    rules: &mut Vec<crate::context::Rule>,
) {
    // The trusted capabilities: their rules join the project's, the hosts they
    // need are allowed. One whose rules cannot be read adds none, said in the log.
    let (capabilities, passed) = air_proto::capability::trusted(air_home, root);
    for w in passed {
        tracing::warn!("capabilities: {w}");
    }
    for c in &capabilities {
        permissions
            .allow_domains
            .extend(c.manifest.needs.network.iter().cloned());
        if let Some(rel) = &c.manifest.adds.rules {
            match crate::context::Sources::load_rules(&c.dir, &c.within(rel)) {
                Ok(more) => rules.extend(more),
                Err(e) => tracing::warn!(
                    "capability `{}`: its rules are not used: {e}",
                    c.manifest.name
                ),
            }
        }
    }
}
