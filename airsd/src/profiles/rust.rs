//! The Rust profile: cargo's build, test and clippy.

use std::path::Path;

use air_proto::dependency::{DependencySeverity, DependencySpec};

use super::{present, program, Activity, Profile};

pub struct Rust;

impl Profile for Rust {
    fn name(&self) -> &'static str {
        "rust"
    }

    fn detect(&self, root: &Path) -> Vec<String> {
        present(root, &["Cargo.toml"])
    }

    fn classify(&self, argv: &[String]) -> Vec<Activity> {
        if program(argv) != "cargo" {
            return Vec::new();
        }
        // `cargo +nightly test`: the toolchain comes first.
        let sub = argv[1..].iter().find(|a| !a.starts_with('+'));
        match sub.map(String::as_str) {
            Some("build" | "b") => vec![Activity::Build],
            // Tests are built before they run: a run that exits 0 built too.
            Some("test" | "t" | "nextest") => vec![Activity::Build, Activity::Test],
            Some("clippy") => vec![Activity::Analysis { paths: Vec::new() }],
            _ => Vec::new(),
        }
    }

    fn dependencies(&self) -> Vec<DependencySpec> {
        use air_proto::dependency::{executable, Packages};
        let packages = Packages {
            debian: "cargo",
            fedora: "cargo",
            arch: "rust",
            macos: "rust",
        };
        vec![executable(
            "cargo",
            &["rust"],
            DependencySeverity::Required,
            packages,
        )]
    }
}
