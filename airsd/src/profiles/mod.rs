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
mod dotnet;
mod go;
mod jvm;
pub mod lines;
mod node;
mod python;
mod rust;
pub mod words;

pub use cpp::Cpp;
pub use dotnet::Dotnet;
pub use go::Go;
pub use jvm::Jvm;
pub use node::Node;
pub use python::Python;
pub use rust::Rust;

/// What a command step does, as a profile recognises it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Activity {
    /// It builds the project (or part of it); exit 0 is a passing build.
    Build,
    /// It runs tests; its output says how many ran and failed.
    Test,
    /// Running it loads the code it runs, which is that code's build in a language
    /// with no separate one (Python's, JavaScript's test runners): a passing run that
    /// ran tests is a passing build too.
    Load,
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
    /// program as written, wrappers such as `env` or `timeout` and runners such as
    /// `uv run` or `npx` already removed: [`words::tool`]).
    fn classify(&self, argv: &[String]) -> Vec<Activity>;
    /// The step's words with the options that change only how its tool reports taken
    /// out (`-v`, `--color=never`), when the tool is this profile's.
    fn quiet(&self, _argv: &[String]) -> Option<Vec<String>> {
        None
    }
    /// The shell text the step hands on to, read from the directory it ran in
    /// (`at`: the project root and that directory, both resolved) (an npm script),
    /// when it runs one.
    fn script(&self, _argv: &[String], _at: (&Path, &Path)) -> Option<String> {
        None
    }
    /// What the profile's tools and checks need installed.
    fn dependencies(&self) -> Vec<DependencySpec>;
}

/// Every profile air ships.
pub fn all() -> &'static [&'static dyn Profile] {
    &[&Cpp, &Python, &Rust, &Go, &Node, &Jvm, &Dotnet]
}

/// What any profile recognises in a step.
pub fn classify(argv: &[String]) -> Vec<Activity> {
    classify_in(argv, None)
}

/// What any profile recognises in a step that ran in a directory of the project
/// (`at`: the project root and that directory, both resolved; `None`: not known, so
/// no script is read): a script it hands on to (`npm run build`) does what the
/// script's steps do, when the script's status vouches for them.
pub fn classify_in(argv: &[String], at: Option<(&Path, &Path)>) -> Vec<Activity> {
    classify_at(argv, at, 0)
}

fn classify_at(argv: &[String], at: Option<(&Path, &Path)>, depth: usize) -> Vec<Activity> {
    let argv = words::tool(argv);
    let mut out: Vec<Activity> = Vec::new();
    let add = |found: Vec<Activity>, out: &mut Vec<Activity>| {
        for a in found {
            if !out.contains(&a) {
                out.push(a);
            }
        }
    };
    for p in all() {
        add(p.classify(&argv), &mut out);
    }
    let Some((root, dir)) = at.filter(|_| depth < 3) else {
        return out;
    };
    for p in all() {
        let Some(text) = p.script(&argv, (root, dir)) else {
            continue;
        };
        let read = air_proto::chain::read(&text, true);
        if !read.vouches {
            continue;
        }
        for step in &read.steps {
            // A script's `cd` stays inside the directory it started in.
            let Some(sub) = step.dir.as_deref().filter(|d| !d.starts_with("..")) else {
                continue;
            };
            let found = match sub {
                "" => classify_at(&step.argv, Some((root, dir)), depth + 1),
                sub => classify_at(&step.argv, Some((root, &dir.join(sub))), depth + 1),
            };
            add(found, &mut out);
        }
    }
    out
}

/// A step's words as a check compares them: the tool without its runner
/// ([`words::tool`]), and without the options that change only how it reports.
pub fn canonical(argv: &[String]) -> Vec<String> {
    let argv = words::tool(argv);
    all().iter().find_map(|p| p.quiet(&argv)).unwrap_or(argv)
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
pub fn program(argv: &[String]) -> &str {
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
            ("python3 -u -m pytest", vec![Test, Load]),
            ("python3 -m compileall -q wordcount", vec![Build]),
            ("python3 -m unittest discover -s tests", vec![Test, Load]),
            ("/usr/bin/python3.11 -m pytest -q", vec![Test, Load]),
            ("pytest tests/test_a.py", vec![Test, Load]),
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

    #[test]
    fn every_common_stack_s_builds_and_tests_are_recognised() {
        use Activity::*;
        for (command, want) in [
            // Python's runners and environments.
            ("uv run pytest -q", vec![Test, Load]),
            ("poetry run pytest", vec![Test, Load]),
            (".venv/bin/pytest tests", vec![Test, Load]),
            ("uv run --with pytest python -m pytest", vec![Test, Load]),
            ("tox -e py311", vec![Test, Load]),
            ("pytest --collect-only", vec![]),
            // Rust.
            ("cargo check --workspace", vec![Build]),
            ("cargo nextest run", vec![Build, Test]),
            ("cargo test --no-run", vec![Build]),
            ("cargo test --help", vec![]),
            // Go.
            ("go build ./...", vec![Build]),
            ("go test ./...", vec![Build, Test]),
            ("go test -json -count=1 ./...", vec![Build, Test]),
            ("go test -c ./pkg", vec![Build]),
            ("go test -n ./...", vec![]),
            (
                "go vet ./...",
                vec![Analysis {
                    paths: vec![".".into()],
                }],
            ),
            // JavaScript and TypeScript.
            ("npm test", vec![Test]),
            ("npm run test", vec![Test]),
            ("pnpm test", vec![Test]),
            ("yarn test", vec![Test]),
            ("npx vitest run", vec![Test, Load]),
            ("pnpm exec vitest", vec![Test, Load]),
            ("./node_modules/.bin/jest --ci", vec![Test, Load]),
            ("node --test", vec![Test, Load]),
            ("node --test test/a.test.js", vec![Test, Load]),
            ("node test.js", vec![]),
            ("bun test", vec![Test, Load]),
            ("npx tsc --noEmit", vec![Build]),
            ("tsc -v", vec![]),
            ("vitest watch", vec![]),
            (
                "npx eslint src",
                vec![Analysis {
                    paths: vec!["src".into()],
                }],
            ),
            ("eslint --fix src", vec![]),
            ("npm install", vec![]),
            // Java and Kotlin.
            ("mvn test", vec![Build, Test]),
            ("mvn -B -q clean verify", vec![Build, Test]),
            ("./mvnw package -DskipTests", vec![Build]),
            ("mvn compile", vec![Build]),
            ("mvn --version", vec![]),
            ("./gradlew test", vec![Build, Test]),
            ("gradle build -x test", vec![Build]),
            ("gradle assemble", vec![Build]),
            ("gradle tasks", vec![]),
            // C#.
            ("dotnet build", vec![Build]),
            ("dotnet test", vec![Build, Test]),
            ("dotnet test --no-build", vec![Test]),
            ("dotnet test --list-tests", vec![]),
            (
                "dotnet format --verify-no-changes",
                vec![Analysis { paths: vec![] }],
            ),
        ] {
            assert_eq!(classify(&words(command)), want, "{command}");
        }
    }

    #[test]
    fn a_script_does_what_its_steps_do() {
        use Activity::*;
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("package.json"),
            r#"{"scripts": {"build": "tsc -p .", "check": "tsc && vitest run", "lint": "eslint . || true", "test": "node --test"}}"#,
        )
        .unwrap();
        let root = dir.path().canonicalize().unwrap();
        let at = |c: &str| classify_in(&words(c), Some((&root, &root)));
        assert_eq!(at("npm run build"), [Build]);
        assert_eq!(at("pnpm build"), [Build]);
        assert_eq!(at("yarn run check"), [Build, Test, Load]);
        assert_eq!(at("npm test"), [Test, Load]);
        // A script whose status vouches for nothing, one that is not there.
        assert!(at("npm run lint").is_empty());
        assert!(at("npm run nothing").is_empty());
        // A link at package.json is not followed.
        let other = tempfile::tempdir().unwrap();
        let other = other.path().canonicalize().unwrap();
        std::os::unix::fs::symlink(root.join("package.json"), other.join("package.json")).unwrap();
        assert!(classify_in(&words("npm run build"), Some((&other, &other))).is_empty());
        // Nor a link on the way to it.
        std::os::unix::fs::symlink(&root, other.join("sub")).unwrap();
        let sub = other.join("sub");
        assert!(classify_in(&words("npm run build"), Some((&other, &sub))).is_empty());
    }

    #[test]
    fn only_what_changes_the_report_is_left_out_of_a_check() {
        for (a, b) in [
            ("pytest -v --tb=short", "pytest"),
            (".venv/bin/pytest -q", "pytest"),
            ("uv run pytest -vv", "pytest"),
            ("python3 -m pytest -x", "pytest"),
            ("npm test -- --verbose", "npm test"),
            ("npm run test --silent", "npm test"),
            ("npx vitest run --reporter=verbose", "vitest"),
            ("go test -v -count=1 ./...", "go test ./..."),
            ("cargo test -q --color never -- --nocapture", "cargo test"),
            ("make -j4 -s test", "make test"),
            (
                "ctest --output-on-failure -j 4 --test-dir build",
                "ctest --test-dir build",
            ),
            ("mvn -B -q test", "mvn test"),
            ("./gradlew --console=plain test", "./gradlew test"),
            ("dotnet test -v q --nologo", "dotnet test"),
        ] {
            assert_eq!(canonical(&words(a)), canonical(&words(b)), "{a} ~ {b}");
        }
        // What changes what runs stays.
        for (a, b) in [
            ("make -v test", "make test"),
            ("make -q test", "make test"),
            ("pytest -k one", "pytest"),
            ("go test -run TestA ./...", "go test ./..."),
            ("npm test -- -t one", "npm test"),
            ("cargo test --lib", "cargo test"),
            ("mvn test -Dtest=A", "mvn test"),
            ("npm run build", "npm test"),
        ] {
            assert_ne!(canonical(&words(a)), canonical(&words(b)), "{a} ≁ {b}");
        }
    }
}
