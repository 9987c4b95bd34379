//! The Java and Kotlin profile: Maven and Gradle, and their wrappers (`./mvnw`,
//! `./gradlew`), by the goals and tasks they run.

use std::path::Path;

use air_proto::dependency::{DependencySeverity, DependencySpec};

use super::words::{without, Quiet};
use super::{operands, present, Activity, Profile};

pub struct Jvm;

const QUIET_MAVEN: Quiet = &[
    "-q",
    "--quiet",
    "-B",
    "--batch-mode",
    "-e",
    "--errors",
    "-X",
    "--debug",
    "-ntp",
    "--no-transfer-progress",
    "-T _",
    "-T*",
    "--threads _",
    "-Dstyle.color=*",
    "-o",
    "--offline",
];
const QUIET_GRADLE: Quiet = &[
    "-q",
    "--quiet",
    "-i",
    "--info",
    "-d",
    "--debug",
    "-s",
    "--stacktrace",
    "-S",
    "--full-stacktrace",
    "--console=*",
    "--console _",
    "--warning-mode=*",
    "--warning-mode _",
    "--no-daemon",
    "--daemon",
    "--offline",
    "--parallel",
    "--build-cache",
    "--no-build-cache",
];

/// The tool a step runs: Maven or Gradle, or their wrappers by a path in the project.
fn tool(argv: &[String]) -> Option<&'static str> {
    let first = argv.first()?;
    let name = first.rsplit('/').next().unwrap_or(first);
    // A wrapper is the project's own script by design: `./mvnw`, `./gradlew`.
    match name {
        "mvn" | "mvnw" | "mvnd" => Some("maven"),
        "gradle" | "gradlew" => Some("gradle"),
        _ => None,
    }
}

impl Profile for Jvm {
    fn name(&self) -> &'static str {
        "jvm"
    }

    fn detect(&self, root: &Path) -> Vec<String> {
        present(
            root,
            &[
                "pom.xml",
                "build.gradle",
                "build.gradle.kts",
                "settings.gradle",
                "settings.gradle.kts",
                "mvnw",
                "gradlew",
            ],
        )
    }

    fn classify(&self, argv: &[String]) -> Vec<Activity> {
        let args = &argv[argv.len().min(1)..];
        if args.iter().any(|a| {
            matches!(
                a.as_str(),
                "-v" | "--version" | "-h" | "--help" | "--dry-run" | "-m"
            )
        }) {
            return Vec::new();
        }
        let goals = operands(args);
        let has = |names: &[&str]| goals.iter().any(|g| names.contains(&g.as_str()));
        match tool(argv) {
            Some("maven") => {
                let skips = args.iter().any(|a| {
                    a == "-DskipTests"
                        || a.starts_with("-DskipTests=true")
                        || a.starts_with("-Dmaven.test.skip=true")
                        || a == "-Dmaven.test.skip"
                });
                // A later phase runs the earlier ones: `package` compiles and tests.
                if has(&["test", "package", "verify", "install", "deploy"]) {
                    if skips {
                        vec![Activity::Build]
                    } else {
                        vec![Activity::Build, Activity::Test]
                    }
                } else if has(&["compile", "test-compile"]) {
                    vec![Activity::Build]
                } else {
                    Vec::new()
                }
            }
            Some("gradle") => {
                let excluded = args
                    .windows(2)
                    .any(|w| (w[0] == "-x" || w[0] == "--exclude-task") && w[1].ends_with("test"));
                let tests = has(&["test", "check", "build"]) && !excluded;
                let builds = tests
                    || has(&[
                        "assemble",
                        "compileJava",
                        "compileKotlin",
                        "classes",
                        "jar",
                        "build",
                    ]);
                match (builds, tests) {
                    (_, true) => vec![Activity::Build, Activity::Test],
                    (true, false) => vec![Activity::Build],
                    _ => Vec::new(),
                }
            }
            _ => Vec::new(),
        }
    }

    fn quiet(&self, argv: &[String]) -> Option<Vec<String>> {
        let quiet = match tool(argv)? {
            "maven" => QUIET_MAVEN,
            _ => QUIET_GRADLE,
        };
        Some(without(argv, quiet))
    }

    fn dependencies(&self) -> Vec<DependencySpec> {
        use air_proto::dependency::{executable, Packages};
        let packages = Packages {
            debian: "default-jdk maven",
            fedora: "java-latest-openjdk-devel maven",
            arch: "jdk-openjdk maven",
            macos: "openjdk maven",
        };
        vec![executable(
            "java",
            &["jvm"],
            DependencySeverity::Required,
            packages,
        )]
    }
}
