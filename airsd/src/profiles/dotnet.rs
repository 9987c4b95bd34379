//! The C# and F# profile: `dotnet build` and `dotnet test`, and `dotnet format
//! --verify-no-changes` as an analysis.

use std::path::Path;

use air_proto::dependency::{DependencySeverity, DependencySpec};

use super::words::{without, Quiet};
use super::{program, Activity, Profile};

pub struct Dotnet;

const QUIET: Quiet = &[
    "-v _",
    "--verbosity _",
    "--verbosity=*",
    "--nologo",
    "-tl*",
    "--tl*",
    "--logger=console*",
    "--no-restore",
];

impl Profile for Dotnet {
    fn name(&self) -> &'static str {
        "dotnet"
    }

    fn detect(&self, root: &Path) -> Vec<String> {
        let mut found = Vec::new();
        if let Ok(dir) = std::fs::read_dir(root) {
            for e in dir.flatten().take(500) {
                let name = e.file_name().to_string_lossy().into_owned();
                if [".sln", ".slnx", ".csproj", ".fsproj"]
                    .iter()
                    .any(|x| name.ends_with(x))
                {
                    found.push(name);
                }
            }
        }
        found.sort();
        found
    }

    fn classify(&self, argv: &[String]) -> Vec<Activity> {
        if program(argv) != "dotnet" {
            return Vec::new();
        }
        let args = &argv[1..];
        if args
            .iter()
            .any(|a| matches!(a.as_str(), "-h" | "--help" | "--list-tests" | "-t"))
        {
            return Vec::new();
        }
        match args.first().map(String::as_str) {
            Some("build") => vec![Activity::Build],
            Some("test") if args.iter().any(|a| a == "--no-build") => vec![Activity::Test],
            Some("test") => vec![Activity::Build, Activity::Test],
            Some("format") if args.iter().any(|a| a == "--verify-no-changes") => {
                vec![Activity::Analysis { paths: Vec::new() }]
            }
            _ => Vec::new(),
        }
    }

    fn quiet(&self, argv: &[String]) -> Option<Vec<String>> {
        (program(argv) == "dotnet").then(|| without(argv, QUIET))
    }

    fn dependencies(&self) -> Vec<DependencySpec> {
        use air_proto::dependency::{executable, Packages};
        let packages = Packages {
            debian: "dotnet-sdk-8.0",
            fedora: "dotnet-sdk-8.0",
            arch: "dotnet-sdk",
            macos: "dotnet-sdk",
        };
        vec![executable(
            "dotnet",
            &["dotnet"],
            DependencySeverity::Required,
            packages,
        )]
    }
}
