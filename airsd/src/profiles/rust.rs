//! The Rust profile: cargo's build, test and clippy.

use std::path::Path;

use air_proto::dependency::{DependencySeverity, DependencySpec};

use super::words::{without, Quiet};
use super::{present, program, Activity, Profile};

/// Options of cargo and of the test harness (after `--`) that change only how they
/// report or how fast they run.
const QUIET: Quiet = &[
    "-q",
    "--quiet",
    "-v",
    "-vv",
    "--verbose",
    "--color _",
    "--color=*",
    "-j _",
    "-j*",
    "--jobs _",
    "--jobs=*",
    "--nocapture",
    "--show-output",
    "--test-threads=*",
    "--test-threads _",
    "--message-format _",
    "--message-format=*",
    "--no-fail-fast",
    "--offline",
    "--locked",
    "--frozen",
];

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
            _ if argv.iter().any(|a| {
                matches!(
                    a.as_str(),
                    "--help" | "-h" | "--version" | "-V" | "--no-run" | "--list"
                )
            }) =>
            {
                // `cargo test --no-run` builds the tests and runs none.
                if argv.iter().any(|a| a == "--no-run") {
                    vec![Activity::Build]
                } else {
                    Vec::new()
                }
            }
            // `cargo check` compiles without producing code: the type checker's
            // verdict is a build's.
            Some("build" | "b" | "check" | "c") => vec![Activity::Build],
            // Tests are built before they run: a run that exits 0 built too.
            Some("test" | "t" | "nextest") => vec![Activity::Build, Activity::Test],
            Some("clippy") => vec![Activity::Analysis { paths: Vec::new() }],
            _ => Vec::new(),
        }
    }

    fn quiet(&self, argv: &[String]) -> Option<Vec<String>> {
        (program(argv) == "cargo").then(|| without(argv, QUIET))
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
