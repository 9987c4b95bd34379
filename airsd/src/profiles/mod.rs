//! Language profiles (D-036, baseline §1): what each language's projects look like,
//! which of its commands build, test or analyse (so that airsd derives evidence from
//! the commands it runs), and what it needs installed (DependencySpecs for `air
//! doctor`). A profile is one module behind [`Profile`]; adding a language adds a
//! module and a line in [`all`], and touches nothing in the scheduler, the gate or
//! the tools.
//!
//! Must not: run anything. Recognising a command is a pure function of its words.

use std::path::Path;

use air_proto::dependency::DependencySpec;

pub mod cpp;
pub mod lines;
mod python;
mod rust;

pub use cpp::Cpp;
pub use python::Python;
pub use rust::Rust;

/// What a command step does, as a profile recognises it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Activity {
    /// It builds the project (or part of it); exit 0 is a passing build.
    Build,
    /// It runs tests; its output says how many ran and failed.
    Test,
    /// It analyses source statically. `paths`: what it was pointed at, as written
    /// (relative to where it ran); empty: the whole tree under where it ran.
    Analysis { paths: Vec<String> },
}

/// One language's knowledge.
pub trait Profile: Sync {
    /// Its name (`cpp`, `python`).
    fn name(&self) -> &'static str;
    /// Whether the project at `root` is (partly) in this language, from the files
    /// at its top: the files that say so.
    fn detect(&self, root: &Path) -> Vec<String>;
    /// What one step of a shell command does, from its words (`argv[0]` is the
    /// program as written, wrappers such as `env` or `timeout` already removed).
    fn classify(&self, argv: &[String]) -> Vec<Activity>;
    /// What the profile's tools and checks need installed.
    fn dependencies(&self) -> Vec<DependencySpec>;
}

/// Every profile air ships.
pub fn all() -> &'static [&'static dyn Profile] {
    &[&Cpp, &Python, &Rust]
}

/// What any profile recognises in a step.
pub fn classify(argv: &[String]) -> Vec<Activity> {
    let mut out: Vec<Activity> = Vec::new();
    for p in all() {
        for a in p.classify(argv) {
            if !out.contains(&a) {
                out.push(a);
            }
        }
    }
    out
}

/// The profiles the project at `root` calls for, with the files that say so.
pub fn detected(root: &Path) -> Vec<(&'static dyn Profile, Vec<String>)> {
    all()
        .iter()
        .filter_map(|p| {
            let found = p.detect(root);
            (!found.is_empty()).then_some((*p, found))
        })
        .collect()
}

/// The program's name without its directory (`/usr/bin/python3` → `python3`). A
/// program named by a relative path (`./make`, `bin/pytest`) is the project's own
/// script, whatever its name: it is no tool of a profile.
fn program(argv: &[String]) -> &str {
    argv.first()
        .filter(|p| !p.contains('/') || p.starts_with('/'))
        .map(|p| p.rsplit('/').next().unwrap_or(p))
        .unwrap_or("")
}

/// The words after the program that are not options (`-x`, `--flag`, `--k=v`).
fn operands(args: &[String]) -> Vec<String> {
    args.iter()
        .filter(|a| !a.starts_with('-'))
        .cloned()
        .collect()
}

/// Which of `names` exist at the top of `root`.
fn present(root: &Path, names: &[&str]) -> Vec<String> {
    names
        .iter()
        .filter(|n| root.join(n).exists())
        .map(|n| n.to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn each_language_recognises_its_builds_tests_and_analyses() {
        use Activity::*;
        for (command, want) in [
            ("cmake --build build", vec![Build]),
            ("cmake -S . -B build -G Ninja", vec![]),
            ("ctest --test-dir build", vec![Test]),
            ("make", vec![Build]),
            ("make -j4 all", vec![Build]),
            ("make test", vec![Test]),
            ("make check", vec![Build, Test]),
            ("ninja -C build", vec![Build]),
            ("g++ -c a.cpp -o a.o", vec![Build]),
            ("g++ --version", vec![]),
            (
                "cppcheck --error-exitcode=1 src include",
                vec![Analysis {
                    paths: vec!["src".into(), "include".into()],
                }],
            ),
            // What vouches for nothing: findings that do not fail it, a dry run, a
            // script of the project's named like a tool, a program given to -c.
            ("cppcheck src", vec![]),
            ("make -n", vec![]),
            ("ninja -t targets", vec![]),
            ("./make", vec![]),
            ("bin/pytest", vec![]),
            ("/usr/bin/make", vec![Build]),
            ("python3 -c print(1) -m pytest", vec![]),
            ("python3 script.py -m pytest", vec![]),
            ("python3 -u -m pytest", vec![Test]),
            ("python3 -m compileall -q wordcount", vec![Build]),
            ("python3 -m unittest discover -s tests", vec![Test]),
            ("/usr/bin/python3.11 -m pytest -q", vec![Test]),
            ("pytest tests/test_a.py", vec![Test]),
            (
                "ruff check wordcount",
                vec![Analysis {
                    paths: vec!["wordcount".into()],
                }],
            ),
            ("python3 -m http.server", vec![]),
            ("cargo test --workspace", vec![Build, Test]),
            ("cargo build --release", vec![Build]),
            ("cargo clippy", vec![Analysis { paths: vec![] }]),
            ("echo make test", vec![]),
        ] {
            assert_eq!(classify(&words(command)), want, "{command}");
        }
    }
}
