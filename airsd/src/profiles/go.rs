//! The Go profile: `go build`, `go vet` and `go test` (which builds what it tests),
//! golangci-lint and staticcheck as analyses.

use std::path::Path;

use air_proto::dependency::{DependencySeverity, DependencySpec};

use super::words::{without, Quiet};
use super::{operands, present, program, Activity, Profile};

pub struct Go;

const QUIET: Quiet = &[
    "-v",
    "-x",
    "-json",
    "-count=*",
    "-count _",
    "-failfast",
    "-timeout=*",
    "-timeout _",
    "-p _",
    "-p=*",
    "-shuffle=*",
    "-race",
    "-cover",
];

/// Options with which `go test` or `go build` builds or runs nothing it vouches for.
const INERT: &[&str] = &["-n", "-h", "-help", "--help"];

impl Profile for Go {
    fn name(&self) -> &'static str {
        "go"
    }

    fn detect(&self, root: &Path) -> Vec<String> {
        present(root, &["go.mod", "go.work"])
    }

    fn classify(&self, argv: &[String]) -> Vec<Activity> {
        let args = &argv[argv.len().min(1)..];
        match program(argv) {
            "go" => {
                if args.iter().any(|a| INERT.contains(&a.as_str())) {
                    return Vec::new();
                }
                let rest = &args[args.len().min(1)..];
                match args.first().map(String::as_str) {
                    Some("build" | "install") => vec![Activity::Build],
                    // `go test -c` only compiles; `-list` only lists; `-run` with a
                    // pattern that matches nothing runs no test, which its report shows.
                    Some("test") if rest.iter().any(|a| a == "-c") => vec![Activity::Build],
                    Some("test")
                        if rest.iter().any(|a| a == "-list" || a.starts_with("-list=")) =>
                    {
                        Vec::new()
                    }
                    Some("test") => vec![Activity::Build, Activity::Test],
                    Some("vet") => vec![Activity::Analysis {
                        paths: go_paths(rest),
                    }],
                    _ => Vec::new(),
                }
            }
            "golangci-lint"
                if args.first().is_some_and(|a| a == "run")
                    && !args.iter().any(|a| a == "--fix") =>
            {
                vec![Activity::Analysis {
                    paths: go_paths(&args[1..]),
                }]
            }
            "staticcheck" => vec![Activity::Analysis {
                paths: go_paths(args),
            }],
            _ => Vec::new(),
        }
    }

    fn quiet(&self, argv: &[String]) -> Option<Vec<String>> {
        (program(argv) == "go").then(|| without(argv, QUIET))
    }

    fn dependencies(&self) -> Vec<DependencySpec> {
        use air_proto::dependency::{executable, Packages};
        let packages = Packages {
            debian: "golang-go",
            fedora: "golang",
            arch: "go",
            macos: "go",
        };
        vec![executable(
            "go",
            &["go"],
            DependencySeverity::Required,
            packages,
        )]
    }
}

/// The directories Go packages named as `./pkg/...` cover (`./...`: the whole tree).
fn go_paths(args: &[String]) -> Vec<String> {
    operands(args)
        .into_iter()
        .map(|p| {
            let p = p.trim_end_matches("/...").trim_end_matches("...");
            if p.is_empty() || p == "." || p == "./" {
                ".".to_string()
            } else {
                p.to_string()
            }
        })
        .collect()
}
