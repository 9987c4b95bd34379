//! The C and C++ tools' inputs and answers, and what they decide without running
//! anything: which build system a tree has (D-011: CMake built in, a Makefile as the
//! fallback, Meson, Bazel and XMake named as not yet supported, two at once a question
//! for the user), which generator a CMake cache was made with, and how to read a
//! JUnit or GoogleTest report and `clangd --check`'s output. The tool calls
//! themselves run in `scheduler::tooljob::cpp`, each command through `shell.run`'s
//! path (the PermissionEngine, the sandbox, the kept logs, the evidence).

use std::path::Path;

use serde::{Deserialize, Serialize};

// `cpp.build`'s input.
#[derive(Clone, Debug, Default, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BuildInput {
    /// Default `.`.
    #[serde(default)]
    pub source_dir: Option<String>,
    /// Default `build`.
    #[serde(default)]
    pub build_dir: Option<String>,
    /// Default: all.
    #[serde(default)]
    pub target: Option<String>,
    /// `cmake` or `make` (the user's choice).
    #[serde(default)]
    pub build_system: Option<String>,
}

/// One command a C/C++ tool ran.
#[derive(Clone, Debug, Default, Deserialize, Serialize, schemars::JsonSchema)]
pub struct Step {
    pub command: String,
    pub command_run_id: String,
    pub exit_code: Option<i32>,
    pub duration_ms: u64,
}

/// A compiler's, linker's or analyzer's finding in an answer.
#[derive(Clone, Debug, Default, Deserialize, Serialize, schemars::JsonSchema)]
pub struct Finding {
    pub file: Option<String>,
    pub line: Option<u32>,
    pub column: Option<u32>,
    pub severity: String,
    pub code: Option<String>,
    pub signature: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// An analysis judged by the change: whether the change brought the finding
    /// (`false`: the project had it at its last commit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new: Option<bool>,
}

impl From<super::diagnose::Diagnostic> for Finding {
    fn from(d: super::diagnose::Diagnostic) -> Self {
        Finding {
            file: d.file,
            line: d.line,
            column: d.column,
            severity: d.severity.as_str().to_string(),
            code: d.code,
            signature: d.signature,
            message: d.message,
            notes: d.notes,
            new: None,
        }
    }
}

/// Findings told in an answer, at most.
pub const FINDINGS_SHOWN: usize = 30;

/// `cpp.build`'s answer.
#[derive(Clone, Debug, Default, Deserialize, Serialize, schemars::JsonSchema)]
pub struct BuildOutput {
    /// Whether the build exited 0.
    pub passed: bool,
    /// `cmake` or `make`.
    pub build_system: String,
    /// The CMake generator used (`Ninja`, `Unix Makefiles`).
    pub generator: Option<String>,
    pub build_dir: Option<String>,
    /// The compilation database CMake wrote, when it did.
    pub compile_commands: Option<String>,
    pub steps: Vec<Step>,
    /// What was repaired before the build (a stale cache, a missing directory).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repaired: Vec<String>,
    /// The errors (then warnings) the compilers and linkers reported.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<Finding>,
    /// The last command's run (its evidence, its logs).
    pub command_run_id: String,
    /// The last command's kept output.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<String>,
    /// The end of the last command's output.
    pub output_tail: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changed_files: Vec<String>,
}

// `cpp.test`'s input.
#[derive(Clone, Debug, Default, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TestInput {
    /// Default `build`.
    #[serde(default)]
    pub build_dir: Option<String>,
    /// A regex of test names.
    #[serde(default)]
    pub filter: Option<String>,
    /// A GoogleTest binary to run instead of CTest.
    #[serde(default)]
    pub gtest: Option<String>,
}

/// A test that failed.
#[derive(Clone, Debug, Default, Deserialize, Serialize, schemars::JsonSchema)]
pub struct FailedTest {
    pub name: String,
    pub message: Option<String>,
    pub file: Option<String>,
    pub line: Option<u32>,
}

/// `cpp.test`'s answer.
#[derive(Clone, Debug, Default, Deserialize, Serialize, schemars::JsonSchema)]
pub struct TestOutput {
    /// At least one test ran and none failed.
    pub passed: bool,
    /// `ctest` or `gtest`.
    pub runner: String,
    pub tests: u64,
    pub failures: u64,
    pub skipped: u64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed: Vec<FailedTest>,
    /// The report the runner wrote (JUnit or GoogleTest XML), relative to the root.
    pub report: Option<String>,
    pub command_run_id: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<String>,
    pub output_tail: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Files of the working tree the test run changed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changed_files: Vec<String>,
}

// `cpp.analyze`'s input.
#[derive(Clone, Debug, Default, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AnalyzeInput {
    /// Default: the C/C++ files this task changed, else all.
    #[serde(default)]
    pub files: Option<Vec<String>>,
    /// Default `build`.
    #[serde(default)]
    pub build_dir: Option<String>,
}

/// `cpp.analyze`'s answer.
#[derive(Clone, Debug, Default, Deserialize, Serialize, schemars::JsonSchema)]
pub struct AnalyzeOutput {
    /// No analyzer reported an error.
    pub passed: bool,
    /// The analyzers that ran (`cppcheck`, `clang-tidy`).
    pub analyzers: Vec<String>,
    /// What they covered: the files, or `.` for the whole tree.
    pub covered: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<Finding>,
    pub steps: Vec<Step>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Files of the working tree the analysis changed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changed_files: Vec<String>,
    /// Findings on lines the change made (judged against the last commit); `None`
    /// when that could not be told (outside git), and every finding counts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_findings: Option<usize>,
    /// Findings on lines the change did not make: there before it, not the task's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub findings_before: Option<usize>,
}

// `cpp.intelligence`'s input.
#[derive(Clone, Debug, Default, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IntelligenceInput {
    /// A source file.
    pub file: String,
    /// Default `build`.
    #[serde(default)]
    pub build_dir: Option<String>,
}

/// `cpp.intelligence`'s answer.
#[derive(Clone, Debug, Default, Deserialize, Serialize, schemars::JsonSchema)]
pub struct IntelligenceOutput {
    pub file: String,
    /// Whether clangd found the file's compile flags in a compilation database (else
    /// it guessed them, and its findings may be wrong).
    pub compile_flags_found: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<Finding>,
    pub command_run_id: String,
    /// Files of the working tree the check changed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changed_files: Vec<String>,
}

// `cpp.diagnose`'s input.
#[derive(Clone, Debug, Default, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DiagnoseInput {
    /// A command run's output to read.
    #[serde(default)]
    pub command_run_id: Option<String>,
    /// Or the output itself.
    #[serde(default)]
    pub text: Option<String>,
}

/// `cpp.diagnose`'s answer.
#[derive(Clone, Debug, Default, Deserialize, Serialize, schemars::JsonSchema)]
pub struct DiagnoseOutput {
    pub errors: u64,
    pub warnings: u64,
    /// Errors first, at most 30.
    pub findings: Vec<Finding>,
}

/// The build systems a tree has at its top.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Systems {
    pub cmake: bool,
    /// A Makefile that CMake did not generate.
    pub make: bool,
    /// Build systems named but not supported yet, with the file that says so.
    pub unsupported: Vec<(&'static str, &'static str)>,
}

/// At most `cap` bytes of a regular file, never following a last symbolic link and
/// never waiting on a FIFO or a device (what a command left in the tree is read by
/// airsd itself, outside the sandbox).
pub fn read_capped(path: &Path, cap: u64) -> std::io::Result<String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let meta = std::fs::symlink_metadata(path)?;
    if !meta.file_type().is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{} is not a regular file", path.display()),
        ));
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags((nix::fcntl::OFlag::O_NOFOLLOW | nix::fcntl::OFlag::O_NONBLOCK).bits())
        .open(path)?;
    let mut bytes = Vec::new();
    file.take(cap).read_to_end(&mut bytes)?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// Which build systems the directory holds.
pub fn systems(dir: &Path) -> Systems {
    let makefile = ["Makefile", "makefile", "GNUmakefile"]
        .iter()
        .map(|n| dir.join(n))
        .find(|p| p.is_file());
    let generated = makefile.as_ref().is_some_and(|p| {
        read_capped(p, 4096).is_ok_and(|head| head.contains("CMAKE generated file"))
    });
    let mut s = Systems {
        cmake: dir.join("CMakeLists.txt").is_file(),
        make: makefile.is_some() && !generated,
        unsupported: Vec::new(),
    };
    for (name, file) in [
        ("Meson", "meson.build"),
        ("Bazel", "BUILD.bazel"),
        ("Bazel", "WORKSPACE"),
        ("XMake", "xmake.lua"),
    ] {
        if dir.join(file).exists() && !s.unsupported.iter().any(|(n, _)| *n == name) {
            s.unsupported.push((name, file));
        }
    }
    s
}

/// Which of CMake and Make the project's profile builds it with: the program its
/// first build command runs (`cmake …`; `make …`), after any `VAR=value`.
pub fn profile_build_system(
    profile: &air_proto::project_profile::ProjectProfile,
) -> Option<&'static str> {
    let first = profile
        .build
        .as_ref()?
        .iter()
        .find(|c| !c.trim().is_empty())?;
    let chain = air_proto::chain::read(first, true);
    let argv = &chain.steps.first()?.argv;
    let program = argv.first()?.rsplit('/').next()?;
    match program {
        "cmake" => Some("cmake"),
        "make" | "gmake" => Some("make"),
        _ => None,
    }
}

/// The project's own test command, as its profile names it (its commands joined
/// with `&&`), when one of them runs C or C++ tests (CTest, `make test`, a test
/// program of the project): what `cpp.test` runs. A profile whose tests are another
/// language's (`pytest`) says nothing here.
pub fn profile_test_command(
    profile: &air_proto::project_profile::ProjectProfile,
) -> Option<String> {
    let commands: Vec<&str> = profile
        .test
        .as_ref()?
        .iter()
        .map(|c| c.trim())
        .filter(|c| !c.is_empty())
        .collect();
    let runs_c_tests = commands.iter().any(|c| {
        air_proto::chain::read(c, true).steps.iter().any(|s| {
            let argv = crate::profiles::words::tool(&s.argv);
            argv.first().is_some_and(|p| p.starts_with("./"))
                || crate::profiles::Profile::classify(&super::Cpp, &argv)
                    .contains(&crate::profiles::Activity::Test)
        })
    });
    runs_c_tests.then(|| commands.join(" && "))
}

/// The directory a CTest command runs in (`--test-dir DIR`), when the command is
/// CTest's.
pub fn ctest_dir(command: &str) -> Option<Option<String>> {
    let chain = air_proto::chain::read(command, true);
    let [only] = &chain.steps[..] else {
        return None;
    };
    let argv = crate::profiles::words::tool(&only.argv);
    if argv.first().map(|p| p.rsplit('/').next().unwrap_or(p)) != Some("ctest") {
        return None;
    }
    let dir = argv
        .windows(2)
        .find(|w| w[0] == "--test-dir")
        .map(|w| w[1].clone())
        .or_else(|| {
            argv.iter()
                .find_map(|a| a.strip_prefix("--test-dir=").map(str::to_string))
        });
    Some(dir)
}

/// The Makefile's own test target at `dir` (`test`, else `check`), read from the
/// file's text (a target line starts its line), never by running make on it.
pub fn make_test_target(dir: &Path) -> Option<&'static str> {
    // Read following no link: a Makefile that is a link out of the project says
    // nothing.
    let text = ["GNUmakefile", "makefile", "Makefile"]
        .iter()
        .find_map(|n| crate::opened::read_small(&dir.join(n), dir, 1024 * 1024))?;
    if text.contains("CMAKE generated file") {
        return None;
    }
    ["test", "check"].into_iter().find(|t| {
        text.lines().any(|l| {
            l.split_once(':').is_some_and(|(names, rest)| {
                !rest.starts_with('=')
                    && !l.starts_with(['\t', ' ', '#', '.'])
                    && names.split_whitespace().any(|n| n == *t)
            })
        })
    })
}

/// The generator a CMake cache was made with.
pub fn cache_generator(build_dir: &Path) -> Option<String> {
    let cache = read_capped(&build_dir.join("CMakeCache.txt"), 4 * 1024 * 1024).ok()?;
    cache
        .lines()
        .find_map(|l| l.strip_prefix("CMAKE_GENERATOR:INTERNAL="))
        .map(str::to_string)
}

/// Counts and failures of a JUnit report (CTest's `--output-junit`) or a GoogleTest
/// XML report (`--gtest_output=xml`), which share their shape.
pub fn read_report(xml: &str) -> Result<(u64, u64, u64, Vec<FailedTest>), String> {
    let doc = roxmltree::Document::parse(xml).map_err(|e| format!("the report is not XML: {e}"))?;
    let (mut tests, mut failures, mut skipped) = (0u64, 0u64, 0u64);
    let mut failed = Vec::new();
    for case in doc.descendants().filter(|n| n.has_tag_name("testcase")) {
        // GoogleTest lists tests it did not run as `status="notrun"`.
        if case.attribute("status") == Some("notrun") {
            skipped += 1;
            continue;
        }
        tests += 1;
        if case.children().any(|c| c.has_tag_name("skipped")) {
            skipped += 1;
            continue;
        }
        let failure = case
            .children()
            .find(|c| c.has_tag_name("failure") || c.has_tag_name("error"));
        if let Some(f) = failure {
            failures += 1;
            let message = f
                .attribute("message")
                .filter(|m| !m.trim().is_empty())
                .map(str::to_string)
                .or_else(|| f.text().map(str::to_string));
            // CTest keeps GoogleTest's words in the case's output.
            let output = case
                .children()
                .find(|c| c.has_tag_name("system-out"))
                .and_then(|c| c.text())
                .unwrap_or("");
            let name = match case.attribute("classname") {
                Some(c)
                    if !c.is_empty()
                        && case.attribute("name").is_some_and(|n| !n.starts_with(c)) =>
                {
                    format!("{c}.{}", case.attribute("name").unwrap_or(""))
                }
                _ => case.attribute("name").unwrap_or("").to_string(),
            };
            let (file, line) = message
                .as_deref()
                .and_then(failure_place)
                .or_else(|| failure_place(output))
                .map_or((None, None), |(f, l)| (Some(f), Some(l)));
            let message = message.or_else(|| {
                output
                    .lines()
                    .skip_while(|l| !l.ends_with(": Failure"))
                    .take(6)
                    .map(str::trim)
                    .collect::<Vec<_>>()
                    .join("\n")
                    .into()
            });
            failed.push(FailedTest {
                name,
                message: message.map(|m| m.chars().take(500).collect()),
                file,
                line,
            });
        }
    }
    Ok((tests, failures, skipped, failed))
}

/// `tests/sum_test.cpp:12` of GoogleTest's `tests/sum_test.cpp:12\nExpected equality…`
/// (or `…:12: Failure`).
fn failure_place(message: &str) -> Option<(String, u32)> {
    // GoogleTest's own lines say `FILE:LINE: Failure`; its XML's message starts with
    // `FILE:LINE`.
    let lines: Vec<&str> = message.lines().collect();
    let marked = lines.iter().find(|l| l.trim_end().ends_with(": Failure"));
    for line in marked.into_iter().chain(lines.iter()) {
        let line = line.trim().trim_end_matches(": Failure");
        if let Some((file, n)) = line.rsplit_once(':') {
            if let Ok(n) = n.trim().parse::<u32>() {
                if !file.is_empty() && !file.contains(' ') {
                    return Some((file.to_string(), n));
                }
            }
        }
    }
    None
}

/// What `clangd --check` said: whether it found the file's compile flags, and its
/// findings (`E[…] [code] Line N: message`).
pub fn read_clangd(output: &str, file: &str) -> (bool, Vec<Finding>) {
    let mut found_flags = false;
    let mut findings = Vec::new();
    for line in output.lines() {
        if line.contains("Loaded compilation database from")
            || line.contains("Compile command from CDB")
        {
            found_flags = true;
        }
        let severity = match line.as_bytes().first() {
            Some(b'E') => "error",
            Some(b'W') => "warning",
            _ => continue,
        };
        let Some((_, rest)) = line.split_once("] ") else {
            continue;
        };
        let (code, rest) = match rest.strip_prefix('[').and_then(|r| r.split_once("] ")) {
            Some((c, r)) => (Some(c.to_string()), r),
            None => (None, rest),
        };
        let Some(rest) = rest.strip_prefix("Line ") else {
            continue;
        };
        let Some((n, message)) = rest.split_once(": ") else {
            continue;
        };
        let sev = if severity == "error" {
            air_proto::payload::DiagnosticSeverity::Error
        } else {
            air_proto::payload::DiagnosticSeverity::Warning
        };
        findings.push(Finding {
            file: Some(file.to_string()),
            line: n.trim().parse().ok(),
            column: None,
            severity: severity.to_string(),
            signature: super::signature::signature(message, code.as_deref(), sev),
            code,
            message: message.to_string(),
            notes: Vec::new(),
            new: None,
        });
    }
    (found_flags, findings)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_and_clangd_are_read() {
        let junit = r#"<?xml version="1.0"?><testsuite tests="3"><testcase name="Sum.Zero" classname="sum_test"/><testcase name="Sum.Negative" classname="sum_test"><failure message="tests/sum_test.cpp:12&#10;Expected equality of these values:&#10;  sum(-1, -1)&#10;    Which is: 0"/></testcase><testcase name="Sum.Later" classname="sum_test"><skipped/></testcase></testsuite>"#;
        let (tests, failures, skipped, failed) = read_report(junit).unwrap();
        assert_eq!((tests, failures, skipped), (3, 1, 1));
        assert_eq!(failed[0].file.as_deref(), Some("tests/sum_test.cpp"));
        assert_eq!(failed[0].line, Some(12));
        assert!(read_report("not xml").is_err());
        let clangd = "I[07:26:56.414] Failed to find compilation database for /tmp/diag/cl.cpp\nE[07:26:56.463] [undeclared_var_use] Line 2: use of undeclared identifier 'undeclared_name'\nI[07:26:56.463] All checks completed, 1 errors\n";
        let (flags, findings) = read_clangd(clangd, "cl.cpp");
        assert!(!flags);
        assert_eq!(findings.len(), 1);
        assert_eq!(findings[0].line, Some(2));
        assert_eq!(
            findings[0].signature,
            "undeclared-identifier:undeclared_name"
        );
    }

    #[test]
    fn the_profile_names_the_build_system_and_a_makefile_its_test_target() {
        let mut p = air_proto::project_profile::ProjectProfile::unknown(
            air_proto::project_profile::ProfileOrigin::Confirmed,
        );
        p.build = Some(vec!["cmake -S . -B build && cmake --build build".into()]);
        assert_eq!(profile_build_system(&p), Some("cmake"));
        p.build = Some(vec!["CC=clang make -j4".into()]);
        assert_eq!(profile_build_system(&p), Some("make"));
        p.build = Some(vec!["./build.sh".into()]);
        assert_eq!(profile_build_system(&p), None);

        let dir = tempfile::tempdir().unwrap();
        let mk = |text: &str| std::fs::write(dir.path().join("Makefile"), text).unwrap();
        mk("all: prog\n\nprog: main.c\n\tcc -o prog main.c\n\ncheck: prog\n\t./prog\n");
        assert_eq!(make_test_target(dir.path()), Some("check"));
        mk(".PHONY: test\nTESTS := a b\ntest tidy: prog\n\t./run\n");
        assert_eq!(make_test_target(dir.path()), Some("test"));
        // A variable is not a target, nor is a recipe line.
        mk("test = 1\nall:\n\techo test: no\n");
        assert_eq!(make_test_target(dir.path()), None);
        // A link out of the project says nothing.
        std::fs::remove_file(dir.path().join("Makefile")).unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("Makefile"), "test:\n\ttrue\n").unwrap();
        std::os::unix::fs::symlink(outside.path().join("Makefile"), dir.path().join("Makefile"))
            .unwrap();
        assert_eq!(make_test_target(dir.path()), None);
    }

    #[test]
    fn the_profile_s_test_command_is_cpp_test_s_when_it_runs_c_tests() {
        let mut p = air_proto::project_profile::ProjectProfile::unknown(
            air_proto::project_profile::ProfileOrigin::Confirmed,
        );
        p.test = Some(vec!["make test".into()]);
        assert_eq!(profile_test_command(&p).as_deref(), Some("make test"));
        p.test = Some(vec!["make sds-test".into(), "./sds-test".into()]);
        assert_eq!(
            profile_test_command(&p).as_deref(),
            Some("make sds-test && ./sds-test")
        );
        p.test = Some(vec!["ctest --test-dir out --output-on-failure".into()]);
        let c = profile_test_command(&p).unwrap();
        assert_eq!(ctest_dir(&c), Some(Some("out".to_string())));
        assert_eq!(ctest_dir("ctest"), Some(None));
        assert_eq!(ctest_dir("make test"), None);
        // Another language's tests are not cpp_test's.
        p.test = Some(vec!["python -m pytest".into()]);
        assert_eq!(profile_test_command(&p), None);
        p.test = None;
        assert_eq!(profile_test_command(&p), None);
    }
}
