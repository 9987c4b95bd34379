//! What detection alone can say of a project's profile (D-022), from the scan: its
//! languages by file count, its build and test commands from the build files at its
//! top (and the scripts `package.json` names), its source and test directories, and
//! its conventions (formatting, analysis, CI, rules files). What it cannot tell is
//! left `None` ("unknown"). The Main Agent may propose better from the same scan; the
//! user confirms or corrects it (`air profile`).

use std::path::{Path, PathBuf};

use air_proto::project_profile::{ProfileOrigin, ProjectProfile};

use crate::project::scan::Scan;

/// The hidden subcommand that scans and keeps the profile.
pub const ARG: &str = "__scan";

/// Languages by the extensions of their files.
const LANGUAGES: &[(&str, &[&str])] = &[
    (
        "C++",
        &["cpp", "cc", "cxx", "c++", "hpp", "hh", "hxx", "ipp", "tpp"],
    ),
    ("C", &["c"]),
    ("Rust", &["rs"]),
    ("Python", &["py"]),
    ("TypeScript", &["ts", "tsx"]),
    ("JavaScript", &["js", "jsx", "mjs", "cjs"]),
    ("Go", &["go"]),
    ("Java", &["java"]),
    ("Kotlin", &["kt", "kts"]),
    ("C#", &["cs"]),
    ("Swift", &["swift"]),
    ("Ruby", &["rb"]),
    ("Shell", &["sh", "bash"]),
];

const SOURCE_DIRS: &[&str] = &[
    "src", "source", "lib", "include", "app", "pkg", "cmd", "crates", "libs",
];
const TEST_DIRS: &[&str] = &["test", "tests", "testing", "spec", "__tests__", "unittests"];

fn top(scan: &Scan, name: &str) -> bool {
    scan.top_level.iter().any(|t| t == name)
}

fn some(v: Vec<String>) -> Option<Vec<String>> {
    (!v.is_empty()).then_some(v)
}

/// The profile of the project at `root` as its scan shows it.
pub fn detect(root: &Path, scan: &Scan) -> ProjectProfile {
    // Languages: those with at least 5% of the source files, most first (`.h` counts
    // for C++ where there is C++, else for C).
    let count = |exts: &[&str]| -> u64 {
        exts.iter()
            .map(|e| scan.extensions.get(*e).copied().unwrap_or(0))
            .sum()
    };
    let headers = count(&["h"]);
    let mut langs: Vec<(&str, u64)> = LANGUAGES
        .iter()
        .map(|(name, exts)| (*name, count(exts)))
        .filter(|(_, n)| *n > 0)
        .collect();
    if headers > 0 {
        match langs.iter_mut().find(|(n, _)| *n == "C++") {
            Some(cpp) => cpp.1 += headers,
            None => match langs.iter_mut().find(|(n, _)| *n == "C") {
                Some(c) => c.1 += headers,
                None => langs.push(("C", headers)),
            },
        }
    }
    let total: u64 = langs.iter().map(|(_, n)| n).sum();
    langs.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let languages: Vec<String> = langs
        .iter()
        .filter(|(_, n)| *n * 20 >= total)
        .map(|(l, _)| l.to_string())
        .collect();

    // Build and test commands from the build files at the top.
    let mut build = Vec::new();
    let mut test = Vec::new();
    if top(scan, "CMakeLists.txt") {
        if top(scan, "CMakePresets.json") {
            build.push("cmake --preset default && cmake --build --preset default".into());
        } else {
            build.push("cmake -S . -B build && cmake --build build".into());
        }
        test.push("ctest --test-dir build --output-on-failure".into());
    } else if top(scan, "meson.build") {
        build.push("meson setup build && meson compile -C build".into());
        test.push("meson test -C build".into());
    } else if top(scan, "Makefile") || top(scan, "GNUmakefile") {
        build.push("make".into());
        // Read following no link.
        let text = ["Makefile", "GNUmakefile"]
            .iter()
            .find_map(|n| crate::opened::read_small(&root.join(n), root, 1024 * 1024))
            .unwrap_or_default();
        for target in ["test", "check"] {
            if text.lines().any(|l| l.starts_with(&format!("{target}:"))) {
                test.push(format!("make {target}"));
                break;
            }
        }
    }
    if top(scan, "Cargo.toml") {
        build.push("cargo build".into());
        test.push("cargo test".into());
    }
    if top(scan, "go.mod") {
        build.push("go build ./...".into());
        test.push("go test ./...".into());
    }
    if top(scan, "package.json") {
        let scripts = std::fs::read_to_string(root.join("package.json"))
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .map(|v| v["scripts"].clone())
            .unwrap_or_default();
        if scripts.get("build").is_some() {
            build.push("npm run build".into());
        }
        if scripts.get("test").is_some() {
            test.push("npm test".into());
        }
    }
    if top(scan, "pyproject.toml") || top(scan, "setup.py") {
        test.push("python3 -m pytest".into());
    }

    let dirs = |names: &[&str]| -> Vec<String> {
        names
            .iter()
            .filter(|d| top(scan, &format!("{d}/")))
            .map(|d| d.to_string())
            .collect()
    };

    let mut conventions = Vec::new();
    for (file, what) in [
        (".clang-format", "formatting: clang-format (.clang-format)"),
        (".editorconfig", "editor settings: .editorconfig"),
        (".clang-tidy", "static analysis: clang-tidy (.clang-tidy)"),
        (
            ".pre-commit-config.yaml",
            "pre-commit hooks: .pre-commit-config.yaml",
        ),
    ] {
        if top(scan, file) {
            conventions.push(what.to_string());
        }
    }
    if let Some(ci) = scan.special.get("ci") {
        conventions.push(format!("CI: {}", ci.join(", ")));
    }
    for rules in ["AIR.md", "AGENTS.md", "CLAUDE.md"] {
        if top(scan, rules) {
            conventions.push(format!("project rules: {rules}"));
        }
    }
    ProjectProfile {
        origin: ProfileOrigin::Detected,
        languages: some(languages),
        build: some(build),
        test: some(test),
        source_dirs: some({
            let found = dirs(SOURCE_DIRS);
            // Sources at the top of the project, in no source directory: the root.
            let at_top = scan.top_level.iter().any(|e| {
                !e.ends_with('/')
                    && e.rsplit_once('.').is_some_and(|(_, ext)| {
                        LANGUAGES
                            .iter()
                            .any(|(_, exts)| exts.contains(&ext.to_ascii_lowercase().as_str()))
                    })
            });
            if found.is_empty() && at_top {
                vec![".".to_string()]
            } else {
                found
            }
        }),
        test_dirs: some(dirs(TEST_DIRS)),
        conventions: some(conventions),
        confirmed_at: None,
    }
}

/// What `airsd __scan` prints.
#[derive(Debug, serde::Serialize)]
pub struct Report {
    pub scan: Scan,
    /// The project's profile now.
    pub profile: Option<air_proto::project_profile::ProjectProfile>,
    /// Whether the detected profile was written to `project.json` (never over one the
    /// user confirmed or the Main Agent proposed).
    pub profile_written: bool,
}

/// Scans the project, keeps the scan, and keeps what detection says of its profile
/// unless someone said better.
pub fn scan_and_profile(paths: &air_proto::layout::ProjectPaths) -> Result<Report, String> {
    scan_and_profile_until(paths, &std::sync::atomic::AtomicBool::new(false))
}

/// [`scan_and_profile`], given up (keeping nothing) once `stop` is set.
pub fn scan_and_profile_until(
    paths: &air_proto::layout::ProjectPaths,
    stop: &std::sync::atomic::AtomicBool,
) -> Result<Report, String> {
    let scan = crate::project::scan::scan_project_until(paths, stop)
        .map_err(|e| format!("{}: {e}", paths.state().display()))?;
    let detected = detect(paths.root(), &scan);
    let mut replace = false;
    let project = paths
        .update_project(|project| {
            replace = match &project.profile {
                None => true,
                Some(p) => p.origin == ProfileOrigin::Detected && *p != detected,
            };
            if replace {
                project.profile = Some(detected);
            }
            replace
        })
        .map_err(|e| e.to_string())?;
    Ok(Report {
        scan,
        profile: project.profile,
        profile_written: replace,
    })
}

/// `airsd __scan --root DIR`: scans, keeps, prints the report as JSON.
pub fn main(args: &[std::ffi::OsString]) -> i32 {
    let root = match args {
        [flag, dir] if flag == "--root" => PathBuf::from(dir),
        _ => {
            eprintln!("airsd {ARG}: usage: airsd {ARG} --root DIR");
            return 2;
        }
    };
    crate::answer_json(
        scan_and_profile(&air_proto::layout::ProjectPaths::new(root))
            .map_err(|e| format!("airsd {ARG}: {e}")),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cmake_project_is_told_and_what_is_not_known_is_unknown() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for f in [
            "CMakeLists.txt",
            "src/a.cpp",
            "src/b.cpp",
            "include/a.h",
            "tests/t.cpp",
            "tools/x.py",
            ".clang-format",
            ".github/workflows/ci.yml",
        ] {
            crate::project::scan::tests::touch(root, f);
        }
        let (scan, _) =
            crate::project::scan::scan(root, &Default::default(), crate::project::scan::TIME_LIMIT);
        let p = detect(root, &scan);
        assert_eq!(p.languages, Some(vec!["C++".into(), "Python".into()]));
        assert_eq!(
            p.build,
            Some(vec!["cmake -S . -B build && cmake --build build".into()])
        );
        assert_eq!(
            p.test,
            Some(vec!["ctest --test-dir build --output-on-failure".into()])
        );
        assert_eq!(p.source_dirs, Some(vec!["src".into(), "include".into()]));
        assert_eq!(p.test_dirs, Some(vec!["tests".into()]));
        let conventions = p.conventions.unwrap();
        assert!(conventions.contains(&"formatting: clang-format (.clang-format)".to_string()));
        assert!(conventions.contains(&"CI: .github/workflows/ci.yml".to_string()));

        // Nothing to go by: every field unknown.
        let empty = tempfile::tempdir().unwrap();
        let (scan, _) = crate::project::scan::scan(
            empty.path(),
            &Default::default(),
            crate::project::scan::TIME_LIMIT,
        );
        let p = detect(empty.path(), &scan);
        assert_eq!((p.languages, p.build, p.test), (None, None, None));
    }

    #[test]
    fn sources_at_the_top_are_the_roots() {
        let dir = tempfile::tempdir().unwrap();
        for f in ["Makefile", "main.c", "util.c", "util.h", "tests/t.c"] {
            crate::project::scan::tests::touch(dir.path(), f);
        }
        let (scan, _) = crate::project::scan::scan(
            dir.path(),
            &Default::default(),
            crate::project::scan::TIME_LIMIT,
        );
        let p = detect(dir.path(), &scan);
        assert_eq!(p.source_dirs, Some(vec![".".into()]));
        assert_eq!(p.build, Some(vec!["make".into()]));
    }
}
