//! The Python profile: byte-compiling is its build, unittest and pytest its tests,
//! ruff, flake8, pyflakes, mypy and pylint its analyses.

use std::path::Path;

use air_proto::dependency::{DependencySeverity, DependencySpec};

use super::words::{is_python, strip, Quiet};
use super::{operands, present, program, Activity, Profile};

pub struct Python;

const ANALYZERS: &[&str] = &["flake8", "pyflakes", "mypy", "pylint", "pyright"];

/// Options of pytest and unittest that change only how they report.
const QUIET: Quiet = &[
    "-v",
    "-vv",
    "-vvv",
    "-q",
    "-qq",
    "--verbose",
    "--quiet",
    "-s",
    "--capture=*",
    "--tb=*",
    "--tb _",
    "-r*",
    "--color=*",
    "--no-header",
    "--no-summary",
    "-x",
    "--exitfirst",
    "--durations=*",
    "-b",
    "--buffer",
];

/// Options of unittest that change only how it reports.
const QUIET_UNITTEST: Quiet = &[
    "-v",
    "-q",
    "--verbose",
    "--quiet",
    "-b",
    "--buffer",
    "--durations=*",
];

fn by_name(name: &str, args: &[String]) -> Vec<Activity> {
    match name {
        "compileall" | "py_compile" => vec![Activity::Build],
        "unittest" | "pytest" | "py.test" | "tox" | "nox"
            if !args.iter().any(|a| {
                matches!(
                    a.as_str(),
                    "--version"
                        | "-h"
                        | "--help"
                        | "--collect-only"
                        | "--co"
                        | "-l"
                        | "--list"
                        | "--listenvs"
                        | "--notest"
                )
            }) =>
        {
            vec![Activity::Test, Activity::Load]
        }
        "ruff" if args.first().is_some_and(|a| a == "check") => vec![Activity::Analysis {
            paths: operands(&args[1..]),
        }],
        n if ANALYZERS.contains(&n) => vec![Activity::Analysis {
            paths: operands(args),
        }],
        _ => Vec::new(),
    }
}

impl Profile for Python {
    fn name(&self) -> &'static str {
        "python"
    }

    fn detect(&self, root: &Path) -> Vec<String> {
        let mut found = present(
            root,
            &[
                "pyproject.toml",
                "setup.py",
                "setup.cfg",
                "requirements.txt",
                "tox.ini",
            ],
        );
        if found.is_empty() {
            // A package at the top: a directory with an __init__.py.
            if let Ok(dir) = std::fs::read_dir(root) {
                for e in dir.flatten().take(200) {
                    if e.path().join("__init__.py").is_file() {
                        found.push(format!("{}/__init__.py", e.file_name().to_string_lossy()));
                        break;
                    }
                }
            }
        }
        found
    }

    fn classify(&self, argv: &[String]) -> Vec<Activity> {
        let name = program(argv);
        let args = &argv[argv.len().min(1)..];
        if is_python(name) {
            // `python3 [-u -B …] -m MODULE …`: the module is what runs only when `-m`
            // comes before any script or `-c` program.
            for (i, a) in args.iter().enumerate() {
                match a.as_str() {
                    "-m" => {
                        return match args.get(i + 1) {
                            Some(module) => by_name(module, &args[i + 2..]),
                            None => Vec::new(),
                        }
                    }
                    "-c" => return Vec::new(),
                    a if a.starts_with('-') => {}
                    _ => return Vec::new(),
                }
            }
            return Vec::new();
        }
        by_name(name, args)
    }

    fn quiet(&self, argv: &[String]) -> Option<Vec<String>> {
        let name = program(argv);
        let tail = |from: usize, quiet: Quiet| {
            let mut out = argv[..from].to_vec();
            out.extend(strip(&argv[from..], quiet));
            out
        };
        match name {
            "pytest" | "py.test" => Some(tail(1, QUIET)),
            n if is_python(n)
                && argv.get(1).is_some_and(|a| a == "-m")
                && argv.get(2).is_some_and(|m| m == "unittest") =>
            {
                Some(tail(3, QUIET_UNITTEST))
            }
            _ => None,
        }
    }

    fn dependencies(&self) -> Vec<DependencySpec> {
        use air_proto::dependency::{executable, Packages};
        let packages = Packages {
            debian: "python3",
            fedora: "python3",
            arch: "python",
            macos: "python",
        };
        vec![executable(
            "python3",
            &["python"],
            DependencySeverity::Required,
            packages,
        )]
    }
}
