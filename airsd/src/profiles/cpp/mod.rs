//! The C and C++ profile (baseline §20, D-011…D-013): CMake, Make and Ninja builds,
//! compiler calls, CTest, cppcheck and clang-tidy.

use std::path::Path;

use air_proto::dependency::{DependencySeverity, DependencySpec};

use super::words::{without, Quiet};
use super::{operands, present, program, Activity, Profile};

/// Options of make, ninja, CMake's build and CTest that change only how they report
/// or how fast they run (each tool its own: `make -v` prints a version).
const QUIET_MAKE: Quiet = &[
    "-s",
    "--silent",
    "-j #",
    "-j*",
    "--jobs=*",
    "V=1",
    "VERBOSE=1",
    "--no-print-directory",
];
const QUIET_NINJA: Quiet = &["-v", "--verbose", "-j _", "-j*"];
const QUIET_CMAKE: Quiet = &[
    "-j #",
    "-j*",
    "--parallel #",
    "--parallel=*",
    "-v",
    "--verbose",
];
const QUIET_CTEST: Quiet = &[
    "-V",
    "-VV",
    "--verbose",
    "--extra-verbose",
    "--output-on-failure",
    "--progress",
    "--timeout _",
    "-j #",
    "-j*",
    "--parallel #",
    "--parallel=*",
];

pub mod diagnose;
mod signature;
pub mod tools;

pub struct Cpp;

/// Make targets that run tests rather than build.
const TEST_TARGETS: &[&str] = &["test", "tests", "check", "ctest"];
/// Make targets that neither build nor test.
const OTHER_TARGETS: &[&str] = &["clean", "distclean", "install", "uninstall", "help"];

impl Profile for Cpp {
    fn name(&self) -> &'static str {
        "cpp"
    }

    fn quiet(&self, argv: &[String]) -> Option<Vec<String>> {
        let quiet = match program(argv) {
            "make" | "gmake" => QUIET_MAKE,
            "ninja" => QUIET_NINJA,
            "cmake" => QUIET_CMAKE,
            "ctest" => QUIET_CTEST,
            _ => return None,
        };
        Some(without(argv, quiet))
    }

    fn detect(&self, root: &Path) -> Vec<String> {
        present(
            root,
            &[
                "CMakeLists.txt",
                "meson.build",
                "BUILD.bazel",
                "WORKSPACE",
                "xmake.lua",
                "compile_commands.json",
                ".clang-format",
                ".clang-tidy",
            ],
        )
    }

    fn classify(&self, argv: &[String]) -> Vec<Activity> {
        let args = &argv[argv.len().min(1)..];
        match program(argv) {
            "cmake" if args.iter().any(|a| a == "--build") => vec![Activity::Build],
            // A dry run, a question or errors ignored builds nothing it vouches for.
            "make" | "gmake" | "ninja"
                if args.iter().any(|a| {
                    matches!(
                        a.as_str(),
                        "-n" | "-q"
                            | "-i"
                            | "-t"
                            | "--dry-run"
                            | "--just-print"
                            | "--recon"
                            | "--question"
                            | "--ignore-errors"
                            | "--touch"
                    ) || (program(argv) == "ninja" && a.starts_with("-t"))
                }) =>
            {
                Vec::new()
            }
            "make" | "gmake" | "ninja" => {
                let targets: Vec<String> = operands(args)
                    .into_iter()
                    // `make -C dir` and `ninja -C dir` name a directory, not a target.
                    .filter(|t| !t.contains('=') && !t.contains('/'))
                    .filter(|t| {
                        !args
                            .windows(2)
                            .any(|w| (w[0] == "-C" || w[0] == "-f" || w[0] == "-j") && &w[1] == t)
                    })
                    .collect();
                if targets.iter().any(|t| OTHER_TARGETS.contains(&t.as_str())) {
                    return Vec::new();
                }
                let tests = targets.iter().any(|t| TEST_TARGETS.contains(&t.as_str()));
                match (tests, targets.iter().any(|t| t == "check")) {
                    // `make check` builds what it tests (the GNU convention).
                    (true, true) => vec![Activity::Build, Activity::Test],
                    (true, false) => vec![Activity::Test],
                    (false, _) => vec![Activity::Build],
                }
            }
            "ctest" => vec![Activity::Test],
            "g++" | "gcc" | "clang" | "clang++" | "c++" | "cc"
                if args.iter().any(|a| a == "-c" || a == "-o") =>
            {
                vec![Activity::Build]
            }
            // An analyzer vouches by its status only when findings fail it.
            "cppcheck"
                if !args.iter().any(|a| {
                    a.strip_prefix("--error-exitcode=")
                        .is_some_and(|n| n != "0")
                }) =>
            {
                Vec::new()
            }
            "clang-tidy"
                if !args.iter().any(|a| {
                    a.starts_with("--warnings-as-errors") || a.starts_with("-warnings-as-errors")
                }) =>
            {
                Vec::new()
            }
            "cppcheck" | "clang-tidy" => {
                // The files it was given, or those its filters keep of a project.
                let mut paths = operands(args);
                paths.extend(
                    args.iter()
                        .filter_map(|a| a.strip_prefix("--file-filter="))
                        .map(str::to_string),
                );
                vec![Activity::Analysis { paths }]
            }
            _ => Vec::new(),
        }
    }

    fn dependencies(&self) -> Vec<DependencySpec> {
        use air_proto::dependency::{executable, Packages};
        use DependencySeverity::*;
        vec![
            executable("cmake", &["cpp.build"], Required, Packages::same("cmake")),
            executable(
                "ninja",
                &["cpp.build"],
                Optional,
                Packages {
                    debian: "ninja-build",
                    fedora: "ninja-build",
                    arch: "ninja",
                    macos: "ninja",
                },
            ),
            executable("make", &["cpp.build"], Degraded, Packages::same("make")),
            // One compiler cache for every task's worktree.
            executable("ccache", &["cpp.build"], Optional, Packages::same("ccache")),
            executable(
                "g++",
                &["cpp.build"],
                Required,
                Packages {
                    debian: "g++",
                    fedora: "gcc-c++",
                    arch: "gcc",
                    macos: "gcc",
                },
            ),
            executable(
                "clang++",
                &["cpp.diagnose"],
                Optional,
                Packages {
                    debian: "clang",
                    fedora: "clang",
                    arch: "clang",
                    macos: "llvm",
                },
            ),
            executable("ctest", &["cpp.test"], Required, Packages::same("cmake")),
            executable(
                "cppcheck",
                &["cpp.analyze"],
                Required,
                Packages::same("cppcheck"),
            ),
            executable(
                "clang-tidy",
                &["cpp.analyze"],
                Optional,
                Packages {
                    debian: "clang-tidy",
                    fedora: "clang-tools-extra",
                    arch: "clang",
                    macos: "llvm",
                },
            ),
            executable(
                "clangd",
                &["cpp.intelligence"],
                Optional,
                Packages {
                    debian: "clangd",
                    fedora: "clang-tools-extra",
                    arch: "clang",
                    macos: "llvm",
                },
            ),
        ]
    }
}
