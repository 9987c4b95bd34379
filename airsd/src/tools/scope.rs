//! A task's scope as the tools enforce it (D-041): `denied_paths` are neither read
//! nor written, `preserved_paths` are never written, and when `allowed_paths` is set
//! nothing else is written. Globs are matched against paths relative to the project
//! root, with ripgrep's glob syntax.

use air_proto::task::TaskScope;
use globset::{Glob, GlobSet, GlobSetBuilder};

use super::error::ToolError;

#[derive(Clone, Debug, Default)]
pub struct Scope {
    allowed: Option<GlobSet>,
    denied: Option<GlobSet>,
    preserved: Option<GlobSet>,
    /// The task's expected files (a hint: never enforced).
    expected: Option<GlobSet>,
}

fn set(globs: &Option<Vec<String>>, field: &str) -> Result<Option<GlobSet>, ToolError> {
    let Some(globs) = globs else { return Ok(None) };
    let mut builder = GlobSetBuilder::new();
    for g in globs {
        builder.add(
            Glob::new(g)
                .map_err(|e| ToolError(format!("scope.{field}: bad glob `{g}`: {}", e.kind())))?,
        );
        // A directory glob covers what is inside it.
        if !g.ends_with("/**") {
            if let Ok(inner) = Glob::new(&format!("{}/**", g.trim_end_matches('/'))) {
                builder.add(inner);
            }
        }
    }
    builder
        .build()
        .map(Some)
        .map_err(|e| ToolError(format!("scope.{field}: {e}")))
}

impl Scope {
    pub fn new(scope: &TaskScope) -> Result<Scope, ToolError> {
        Ok(Scope {
            allowed: set(&scope.allowed_paths, "allowed_paths")?,
            denied: set(&scope.denied_paths, "denied_paths")?,
            preserved: set(&scope.preserved_paths, "preserved_paths")?,
            expected: set(&scope.expected_files, "expected_files")?,
        })
    }

    /// Whether `rel` is one of the task's declared places (its allowed paths or
    /// expected files); `None` when the task declares none.
    pub fn declares(&self, rel: &str) -> Option<bool> {
        if self.allowed.is_none() && self.expected.is_none() {
            return None;
        }
        Some(
            self.allowed.as_ref().is_some_and(|a| a.is_match(rel))
                || self.expected.as_ref().is_some_and(|e| e.is_match(rel)),
        )
    }

    /// May the task read `rel` (relative to the project root)?
    pub fn check_read(&self, rel: &str) -> Result<(), ToolError> {
        if self.denied.as_ref().is_some_and(|d| d.is_match(rel)) {
            return Err(ToolError(format!("{rel}: in the task's denied_paths")));
        }
        Ok(())
    }

    /// May the task write `rel`?
    pub fn check_write(&self, rel: &str) -> Result<(), ToolError> {
        self.check_read(rel)?;
        if self.preserved.as_ref().is_some_and(|p| p.is_match(rel)) {
            return Err(ToolError(format!(
                "{rel}: in the task's preserved_paths; it must be left as it is"
            )));
        }
        if self.allowed.as_ref().is_some_and(|a| !a.is_match(rel)) {
            return Err(ToolError(format!(
                "{rel}: outside the task's allowed_paths"
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn denied_preserved_and_allowed() {
        let scope = Scope::new(&TaskScope {
            write_area: None,
            expected_files: None,
            allowed_paths: Some(vec!["src/**".into(), "README.md".into()]),
            denied_paths: Some(vec!["secrets".into()]),
            preserved_paths: Some(vec!["src/legacy.rs".into()]),
        })
        .unwrap();
        assert!(scope.check_write("src/a/b.rs").is_ok());
        assert!(scope.check_write("README.md").is_ok());
        assert!(scope
            .check_write("Cargo.toml")
            .unwrap_err()
            .0
            .contains("outside the task's allowed_paths"));
        assert!(scope
            .check_write("src/legacy.rs")
            .unwrap_err()
            .0
            .contains("preserved_paths"));
        assert!(scope.check_read("src/legacy.rs").is_ok());
        assert!(scope
            .check_read("secrets/key")
            .unwrap_err()
            .0
            .contains("denied_paths"));
        assert!(Scope::new(&TaskScope {
            denied_paths: Some(vec!["[".into()]),
            ..TaskScope::default()
        })
        .is_err());
        let open = Scope::default();
        assert!(open.check_write("anything").is_ok());
    }
}
