//! The ProjectProfile (D-022, baseline §21): what a person new to the project would
//! want to know first — its languages, how it is built and tested, where its sources
//! and tests are, and its conventions. Made from the project scan (what detection alone
//! can say, or what the Main Agent proposes from it), confirmed or corrected by the user
//! once, kept in `.air/shared/project.json`, and given to every agent's context. A
//! field nobody knows is `None` ("unknown"), never an error.

use serde::{Deserialize, Serialize};

/// Where a profile's contents come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProfileOrigin {
    /// Detected from the scan's files, not yet seen by the user.
    Detected,
    /// Proposed by the Main Agent from the scan, not yet seen by the user.
    Proposed,
    /// Confirmed (and perhaps corrected) by the user.
    Confirmed,
}

#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProjectProfile {
    pub origin: ProfileOrigin,
    /// Most files first.
    pub languages: Option<Vec<String>>,
    /// Commands that build the project, in order.
    pub build: Option<Vec<String>>,
    /// Commands that run its tests.
    pub test: Option<Vec<String>>,
    /// Where the sources are (directories relative to the root).
    pub source_dirs: Option<Vec<String>>,
    /// Where the tests are.
    pub test_dirs: Option<Vec<String>>,
    /// Formatting, analysis, CI, rules files: one line each.
    pub conventions: Option<Vec<String>>,
    /// When the user confirmed it.
    pub confirmed_at: Option<String>,
}

/// The profile's fields by the names `air profile set` takes.
pub const FIELDS: &[&str] = &[
    "languages",
    "build",
    "test",
    "source_dirs",
    "test_dirs",
    "conventions",
];

impl ProjectProfile {
    /// The field named `name`, for `air profile set`.
    pub fn field_mut(&mut self, name: &str) -> Option<&mut Option<Vec<String>>> {
        Some(match name {
            "languages" => &mut self.languages,
            "build" => &mut self.build,
            "test" => &mut self.test,
            "source_dirs" => &mut self.source_dirs,
            "test_dirs" => &mut self.test_dirs,
            "conventions" => &mut self.conventions,
            _ => return None,
        })
    }

    fn fields(&self) -> [(&'static str, &Option<Vec<String>>); 6] {
        [
            ("languages", &self.languages),
            ("build", &self.build),
            ("test", &self.test),
            ("source_dirs", &self.source_dirs),
            ("test_dirs", &self.test_dirs),
            ("conventions", &self.conventions),
        ]
    }

    /// One line per field, `unknown` where nothing is known (for `air init` and `air
    /// profile show`).
    pub fn lines(&self) -> Vec<String> {
        self.fields()
            .iter()
            .map(|(name, v)| match v {
                Some(items) if !items.is_empty() => format!("{name:<12} {}", items.join("; ")),
                _ => format!("{name:<12} unknown"),
            })
            .collect()
    }

    /// The section of an agent's context.
    pub fn context_text(&self) -> String {
        let mut out = format!("{}\n\n", crate::context::PROJECT_HEADING);
        out.push_str(match self.origin {
            ProfileOrigin::Confirmed => "As the user confirmed it:\n",
            ProfileOrigin::Detected => "As air detected it from the project's files (not confirmed by the user; check before relying on it):\n",
            ProfileOrigin::Proposed => "As proposed from the project's files (not confirmed by the user; check before relying on it):\n",
        });
        for (name, v) in self.fields() {
            let label = match name {
                "languages" => "Languages",
                "build" => "Build",
                "test" => "Tests",
                "source_dirs" => "Sources",
                "test_dirs" => "Test sources",
                _ => "Conventions",
            };
            match v {
                Some(items) if !items.is_empty() => {
                    let quoted = matches!(name, "build" | "test");
                    let shown: Vec<String> = items
                        .iter()
                        .map(|i| if quoted { format!("`{i}`") } else { i.clone() })
                        .collect();
                    out.push_str(&format!("- {label}: {}\n", shown.join("; ")));
                }
                _ => out.push_str(&format!("- {label}: unknown\n")),
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_fields_are_said_so_and_commands_quoted() {
        let p = ProjectProfile {
            origin: ProfileOrigin::Confirmed,
            languages: Some(vec!["C++".into()]),
            build: Some(vec!["cmake --build build".into()]),
            test: None,
            source_dirs: Some(vec![]),
            test_dirs: None,
            conventions: None,
            confirmed_at: None,
        };
        let text = p.context_text();
        assert!(text.contains("- Build: `cmake --build build`\n"), "{text}");
        assert!(text.contains("- Tests: unknown\n"), "{text}");
        assert!(text.contains("- Sources: unknown\n"), "{text}");
        assert_eq!(p.lines()[2], "test         unknown");
        let back: ProjectProfile =
            serde_json::from_str(&serde_json::to_string(&p).unwrap()).unwrap();
        assert_eq!(back, p);
    }
}
