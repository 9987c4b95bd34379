//! The C and C++ tools of a tool call (baseline §20): `cpp.build` (CMake with Ninja,
//! falling back to Make; a Makefile alone; repairs before anything goes to the
//! debugger; `compile_commands.json` made on demand), `cpp.test` (CTest's JUnit
//! report, or a GoogleTest binary's XML), `cpp.analyze` (cppcheck over the
//! compilation database or the files; clang-tidy when installed), `cpp.intelligence`
//! (`clangd --check`) and `cpp.diagnose` (a command's kept output read for findings).
//! Every command runs through `shell.run`'s path ([`ToolJob::run_step`]): judged by
//! the PermissionEngine, confined by the sandbox, its output streamed and kept, its
//! evidence and findings recorded with its end.

use std::path::{Path, PathBuf};

use air_proto::task::EvidenceType;
use serde_json::Value;

use super::shell::Logs;
use super::ToolJob;
use crate::profiles::cpp::diagnose::{self, Diagnostic, CPPCHECK_TEMPLATE};
use crate::profiles::cpp::tools::*;
use crate::tools::exec::{RunInput, RunOutput};
use crate::tools::ToolError;

/// How long a build, a test run or an analysis may take (the most `shell.run`
/// allows).
const LONG: u64 = 600_000;
/// Largest test report read.
const REPORT_CAP: u64 = 16 * 1024 * 1024;

fn encode<T: serde::Serialize>(out: &T) -> Result<Value, ToolError> {
    serde_json::to_value(out).map_err(|e| ToolError(format!("cannot encode the answer: {e}")))
}

/// A directory the model named, as a path under the project root: refused when it
/// leaves the project.
fn inside(field: &str, value: Option<&str>, default: &str) -> Result<String, ToolError> {
    let v = value.unwrap_or(default).trim();
    let v = if v.is_empty() { default } else { v };
    if Path::new(v).is_absolute() || v.split('/').any(|p| p == "..") || v.starts_with('-') {
        return Err(ToolError(format!(
            "{field}: `{v}` must be a path inside the project, relative to its root"
        )));
    }
    Ok(v.trim_end_matches('/').to_string())
}

fn step(command: &str, out: &RunOutput) -> Step {
    Step {
        command: command.to_string(),
        command_run_id: out.command_run_id.clone(),
        exit_code: out.exit_code,
        duration_ms: out.duration_ms,
    }
}

/// The end of a command's output, for the answer.
fn tail(out: &RunOutput) -> String {
    let text = format!("{}{}", out.stdout, out.stderr);
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(30)..].join("\n")
}

/// Findings for an answer: errors first, at most [`FINDINGS_SHOWN`].
fn shown(mut found: Vec<Diagnostic>, root: &std::path::Path) -> Vec<Finding> {
    // One place, one name: a file named absolutely or through `..` (`tests/../x.c`,
    // as CMake names what it compiles) is named from the project root, and a finding
    // reported twice there (one file compiled twice) is one.
    for d in &mut found {
        if let Some(f) = d.file.as_mut() {
            *f = relative(f, root);
        }
    }
    let mut seen = std::collections::HashSet::new();
    found.retain(|d| seen.insert((d.file.clone(), d.line, d.column, d.signature.clone())));
    found.sort_by_key(|d| d.severity != air_proto::payload::DiagnosticSeverity::Error);
    found
        .into_iter()
        .take(FINDINGS_SHOWN)
        .map(Finding::from)
        .collect()
}

/// A relative path with its `.` and `dir/..` steps taken out (a path that climbs out
/// of where it starts is left as it is).
fn tidy_path(path: &str) -> String {
    if path.starts_with('/') {
        return path.to_string();
    }
    let mut parts: Vec<&str> = Vec::new();
    for p in path.split('/') {
        match p {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    return path.to_string();
                }
            }
            p => parts.push(p),
        }
    }
    parts.join("/")
}

/// Most findings from before a change set aside one by one in a second analysis.
const MAX_SUPPRESSED: usize = 400;

/// A finding's file from the project root (a compiler or an analyzer may name it
/// absolutely, or through `..`).
fn relative(file: &str, root: &std::path::Path) -> String {
    let path = std::path::Path::new(file);
    let rel = path.strip_prefix(root).unwrap_or(path);
    tidy_path(&rel.to_string_lossy())
}

/// Whether a finding is on a line the change made (one that cannot be placed
/// counts as made).
fn is_new(
    d: &Diagnostic,
    made: &std::collections::BTreeMap<String, crate::tools::git::Made>,
    root: &std::path::Path,
) -> bool {
    let (Some(file), Some(line)) = (d.file.as_deref(), d.line) else {
        return true;
    };
    if line == 0 {
        return true;
    }
    // A file the change did not touch (or one outside the project) has only what
    // was there before.
    made.get(&relative(file, root))
        .is_some_and(|m| m.contains(line))
}

/// Whether `program` is on the PATH the commands run with.
fn on_path(program: &str) -> bool {
    std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path).any(|d| {
            let p = d.join(program);
            p.is_file()
                && std::fs::metadata(&p).is_ok_and(|m| {
                    use std::os::unix::fs::PermissionsExt;
                    m.permissions().mode() & 0o111 != 0
                })
        })
    })
}

impl ToolJob {
    /// One of the C and C++ tools.
    pub(super) async fn cpp(&self, tool_run_id: &str) -> Result<Value, ToolError> {
        let tool = self.call.tool.as_str();
        crate::tools::allowed(self.role, tool)?;
        let input = self.call.input.clone();
        match tool {
            "cpp.build" => encode(
                &self
                    .cpp_build(tool_run_id, crate::tools::input(tool, input)?)
                    .await?,
            ),
            "cpp.test" => encode(
                &self
                    .cpp_test(tool_run_id, crate::tools::input(tool, input)?)
                    .await?,
            ),
            "cpp.analyze" => encode(
                &self
                    .cpp_analyze(tool_run_id, crate::tools::input(tool, input)?)
                    .await?,
            ),
            "cpp.intelligence" => encode(
                &self
                    .cpp_intelligence(tool_run_id, crate::tools::input(tool, input)?)
                    .await?,
            ),
            "cpp.diagnose" => encode(&self.cpp_diagnose(crate::tools::input(tool, input)?).await?),
            other => Err(ToolError(format!("no tool `{other}`"))),
        }
    }

    fn root(&self) -> PathBuf {
        super::resolved_root(self.env.engine.root())
    }

    async fn step(
        &self,
        tool_run_id: &str,
        command: String,
        yields: &[(String, EvidenceType)],
    ) -> Result<(RunOutput, Vec<Diagnostic>), ToolError> {
        self.step_ran(tool_run_id, command, yields)
            .await
            .map(|r| (r.out, r.found))
    }

    /// One step, with the tests its output showed.
    async fn step_ran(
        &self,
        tool_run_id: &str,
        command: String,
        yields: &[(String, EvidenceType)],
    ) -> Result<super::shell::Ran, ToolError> {
        // Each command's logs under what it is (D-054).
        let logs = match self.call.tool.as_str() {
            "cpp.build" => Logs::Build,
            "cpp.test" => Logs::Test,
            _ => Logs::Command,
        };
        self.run_step(
            tool_run_id,
            RunInput {
                command,
                cwd: None,
                timeout_ms: Some(LONG),
                description: None,
            },
            yields,
            logs,
            // A large project's first build takes longer than one command may: a
            // step may take as long as the task.
            Some(self.time_limit_ms.max(LONG)),
        )
        .await
    }

    async fn cpp_build(
        &self,
        tool_run_id: &str,
        input: BuildInput,
    ) -> Result<BuildOutput, ToolError> {
        let source = inside("source_dir", input.source_dir.as_deref(), ".")?;
        let build = inside("build_dir", input.build_dir.as_deref(), "build")?;
        let root = self.root();
        let found = systems(&root.join(&source));
        let chosen = match input.build_system.as_deref().map(str::to_ascii_lowercase) {
            Some(s) if s == "cmake" && found.cmake => "cmake",
            Some(s) if s == "make" && found.make => "make",
            Some(s) => {
                return Err(ToolError(format!(
                    "build_system: `{s}` is not a build system of `{source}` (it has {})",
                    names(&found)
                )))
            }
            None => match (found.cmake, found.make) {
                // The project's profile says which one builds it.
                (true, true) if source == "." && self.env.build_system.is_some() => {
                    self.env.build_system.unwrap_or("cmake")
                }
                (true, true) => {
                    return Err(ToolError(format!(
                        "`{source}` has two build systems, CMake (CMakeLists.txt) and Make (a Makefile CMake did not generate), and the project's profile names neither; which one builds the project is the user's decision, not a guess: ask, then call cpp_build with build_system (or set the profile's build commands with `air profile set build`)"
                    )))
                }
                (true, false) => "cmake",
                (false, true) => "make",
                (false, false) => {
                    return Err(ToolError(match found.unsupported.first() {
                        Some((name, file)) => format!(
                            "`{source}` is built with {name} ({file}), which cpp_build does not support yet: run its commands with shell_run"
                        ),
                        None => format!("`{source}` has no CMakeLists.txt or Makefile: nothing for cpp_build to build"),
                    }))
                }
            },
        };
        if chosen == "make" {
            let mut command = format!("make -C {}", air_proto::chain::quoted(&source));
            if let Some(t) = &input.target {
                command.push(' ');
                command.push_str(&air_proto::chain::quoted(t));
            }
            let (out, found) = self.step(tool_run_id, command.clone(), &[]).await?;
            return Ok(BuildOutput {
                passed: out.exit_code == Some(0),
                build_system: "make".into(),
                steps: vec![step(&command, &out)],
                findings: shown(found, &root),
                command_run_id: out.command_run_id.clone(),
                artifacts: out.artifacts.clone(),
                output_tail: tail(&out),
                changed_files: out.changed_files.clone(),
                ..BuildOutput::default()
            });
        }
        let mut steps = Vec::new();
        let mut repaired = Vec::new();
        let mut changed: Vec<String> = Vec::new();
        let build_path = root.join(&build);
        let ninja = on_path("ninja");
        // A cache made with a generator that cannot build here (Ninja gone) is set
        // aside: the build directory is configured again.
        let cached = cache_generator(&build_path);
        let mut configure = cached.is_none();
        if let Some(g) = &cached {
            if g == "Ninja" && !ninja {
                let command = format!(
                    "rm -rf {}/CMakeCache.txt {}/CMakeFiles",
                    air_proto::chain::quoted(&build),
                    air_proto::chain::quoted(&build)
                );
                let (out, _) = self.step(tool_run_id, command.clone(), &[]).await?;
                steps.push(step(&command, &out));
                repaired.push(format!(
                    "{build}'s CMake cache was made with Ninja, which is not installed here: set aside, configured again with Make"
                ));
                configure = true;
            }
        }
        if !build_path.is_dir() {
            repaired.push(format!("{build} did not exist: made by configuring"));
        }
        let mut generator = cached.filter(|_| !configure);
        if configure {
            let mut tried = Vec::new();
            let mut done = false;
            for g in [Some("Ninja").filter(|_| ninja), Some("Unix Makefiles")]
                .into_iter()
                .flatten()
            {
                let command = format!(
                    "cmake -S {} -B {} -G {} -DCMAKE_EXPORT_COMPILE_COMMANDS=ON",
                    air_proto::chain::quoted(&source),
                    air_proto::chain::quoted(&build),
                    air_proto::chain::quoted(g)
                );
                let (out, _) = self.step(tool_run_id, command.clone(), &[]).await?;
                steps.push(step(&command, &out));
                changed.extend(out.changed_files.clone());
                if out.exit_code == Some(0) {
                    generator = Some(g.to_string());
                    done = true;
                    break;
                }
                tried.push(g);
                // A failed configure leaves a cache with its generator: set it aside
                // before the next one.
                let clean = format!(
                    "rm -rf {}/CMakeCache.txt {}/CMakeFiles",
                    air_proto::chain::quoted(&build),
                    air_proto::chain::quoted(&build)
                );
                let (o, _) = self.step(tool_run_id, clean.clone(), &[]).await?;
                steps.push(step(&clean, &o));
                if g == "Ninja" {
                    repaired
                        .push("configuring with Ninja failed: configured again with Make".into());
                }
                if g == "Unix Makefiles" {
                    return Ok(BuildOutput {
                        passed: false,
                        build_system: "cmake".into(),
                        generator: None,
                        build_dir: Some(build),
                        steps,
                        repaired,
                        command_run_id: out.command_run_id.clone(),
                        artifacts: out.artifacts.clone(),
                        output_tail: tail(&out),
                        changed_files: changed,
                        ..BuildOutput::default()
                    });
                }
            }
            if !ninja {
                repaired.push("Ninja is not installed here: configured with Make".into());
            }
            let _ = done;
        }
        // As people write it (so it is the task's `cmake --build build` check too).
        // Ninja builds in parallel by itself; Make is told how, through CMake's
        // variable for it.
        let mut command = match generator.as_deref() {
            Some("Ninja") => format!("cmake --build {}", air_proto::chain::quoted(&build)),
            _ => format!(
                "CMAKE_BUILD_PARALLEL_LEVEL={} cmake --build {}",
                std::thread::available_parallelism().map_or(2, |n| n.get()),
                air_proto::chain::quoted(&build)
            ),
        };
        if let Some(t) = &input.target {
            command.push_str(&format!(" --target {}", air_proto::chain::quoted(t)));
        }
        let (out, found) = self.step(tool_run_id, command.clone(), &[]).await?;
        steps.push(step(&command, &out));
        changed.extend(out.changed_files.clone());
        let db = format!("{build}/compile_commands.json");
        Ok(BuildOutput {
            passed: out.exit_code == Some(0),
            build_system: "cmake".into(),
            generator,
            build_dir: Some(build),
            compile_commands: root.join(&db).is_file().then_some(db),
            steps,
            repaired,
            findings: shown(found, &root),
            command_run_id: out.command_run_id.clone(),
            artifacts: out.artifacts.clone(),
            output_tail: tail(&out),
            changed_files: changed,
        })
    }

    async fn cpp_test(&self, tool_run_id: &str, input: TestInput) -> Result<TestOutput, ToolError> {
        let build = inside("build_dir", input.build_dir.as_deref(), "build")?;
        let root = self.root();
        let (command, report, runner, yields) = match &input.gtest {
            Some(binary) => {
                let binary = inside("gtest", Some(binary), "")?;
                let report = format!("{build}/air-gtest-report.xml");
                let mut command = format!(
                    "./{} --gtest_output=xml:{}",
                    air_proto::chain::quoted(&binary),
                    air_proto::chain::quoted(&report)
                );
                if let Some(f) = &input.filter {
                    command.push_str(&format!(" --gtest_filter={}", air_proto::chain::quoted(f)));
                }
                let yields = vec![
                    (command.clone(), EvidenceType::TestPass),
                    (command.clone(), EvidenceType::TestOutput),
                ];
                (command, report, "gtest", yields)
            }
            None if !root.join(&build).join("CTestTestfile.cmake").is_file() => {
                // A project without CTest: its Makefile's own test target.
                if let Some(target) = crate::profiles::cpp::tools::make_test_target(&root) {
                    return self
                        .make_test(tool_run_id, target, input.filter.is_some())
                        .await;
                }
                let cmake = root.join("CMakeLists.txt").is_file();
                return Err(ToolError(if cmake {
                    format!(
                        "build_dir: `{build}` has no tests CTest knows of (no CTestTestfile.cmake): build the project with cpp_build first; its CMakeLists.txt must call enable_testing() and add_test()"
                    )
                } else {
                    "the project has no CTest tests (no CMakeLists.txt) and its Makefile no `test` or `check` target: run its tests with shell_run".to_string()
                }));
            }
            None => {
                let report = format!("{build}/air-ctest-junit.xml");
                let mut command = format!(
                    "ctest --test-dir {} --output-on-failure --output-junit air-ctest-junit.xml",
                    air_proto::chain::quoted(&build)
                );
                if let Some(f) = &input.filter {
                    command.push_str(&format!(" -R {}", air_proto::chain::quoted(f)));
                }
                (command, report, "ctest", Vec::new())
            }
        };
        let report_path = root.join(&report);
        // An old report is set aside (never through a link: only a regular file).
        if std::fs::symlink_metadata(&report_path).is_ok_and(|m| m.file_type().is_file()) {
            let _ = std::fs::remove_file(&report_path);
        }
        let (out, _) = self.step(tool_run_id, command, &yields).await?;
        let mut notes = Vec::new();
        let under_root = report_path
            .parent()
            .and_then(|d| std::fs::canonicalize(d).ok())
            .is_some_and(|d| d.starts_with(&root));
        let path = report_path.clone();
        let read = if under_root {
            tokio::task::spawn_blocking(move || read_capped(&path, REPORT_CAP))
                .await
                .unwrap_or_else(|e| Err(std::io::Error::other(e.to_string())))
        } else {
            Err(std::io::Error::other(
                "its directory is not inside the project",
            ))
        };
        let (tests, failures, skipped, failed) = match read {
            Ok(xml) => read_report(&xml).unwrap_or_else(|e| {
                notes.push(format!("{report}: {e}"));
                (0, 0, 0, Vec::new())
            }),
            Err(e) => {
                notes.push(format!("no report at {report}: {e}"));
                (0, 0, 0, Vec::new())
            }
        };
        if tests == 0 {
            notes.push("no test ran: that is not a pass".into());
        }
        Ok(TestOutput {
            passed: tests > 0 && failures == 0 && out.exit_code == Some(0),
            runner: runner.into(),
            tests,
            failures,
            skipped,
            failed,
            report: report_path.is_file().then_some(report),
            command_run_id: out.command_run_id.clone(),
            artifacts: out.artifacts.clone(),
            output_tail: tail(&out),
            notes,
            changed_files: out.changed_files.clone(),
        })
    }

    /// `make test` (or `check`) for a project whose tests its Makefile runs: counted
    /// from what the run's output shows, as `shell_run`'s runs are.
    async fn make_test(
        &self,
        tool_run_id: &str,
        target: &'static str,
        filtered: bool,
    ) -> Result<TestOutput, ToolError> {
        let command = format!("make {target}");
        let ran = self.step_ran(tool_run_id, command, &[]).await?;
        let out = ran.out;
        let mut notes = Vec::new();
        if filtered {
            notes.push(format!(
                "filter: `make {target}` runs every test its Makefile names; the filter was not applied"
            ));
        }
        let (tests, failures) = ran.count.map_or((0, 0), |c| (c.ran, c.failed));
        if tests == 0 {
            notes.push(format!(
                "`make {target}` showed no test count airsd can read (a runner's summary such as CTest's, GoogleTest's or TAP's `# pass N`): that is not a pass"
            ));
        }
        Ok(TestOutput {
            passed: tests > 0 && failures == 0 && out.exit_code == Some(0),
            runner: "make".into(),
            tests,
            failures,
            skipped: 0,
            failed: Vec::new(),
            report: None,
            command_run_id: out.command_run_id.clone(),
            artifacts: out.artifacts.clone(),
            output_tail: tail(&out),
            notes,
            changed_files: out.changed_files.clone(),
        })
    }

    async fn cpp_analyze(
        &self,
        tool_run_id: &str,
        input: AnalyzeInput,
    ) -> Result<AnalyzeOutput, ToolError> {
        let build = inside("build_dir", input.build_dir.as_deref(), "build")?;
        let root = self.root();
        let files: Vec<String> = match input.files {
            Some(files) => files
                .iter()
                .map(|f| inside("files", Some(f), "."))
                .collect::<Result<_, _>>()?,
            None => self.changed_c_files().await,
        };
        let db = format!("{build}/compile_commands.json");
        let with_db = root.join(&db).is_file();
        let mut command = format!(
            "cppcheck --enable=warning,performance,portability --inline-suppr --error-exitcode=1 --quiet --template={}",
            air_proto::chain::quoted(CPPCHECK_TEMPLATE)
        );
        if with_db {
            command.push_str(&format!(" --project={}", air_proto::chain::quoted(&db)));
            for f in &files {
                command.push_str(&format!(" --file-filter={}", air_proto::chain::quoted(f)));
            }
        } else if files.is_empty() {
            command.push_str(" .");
        } else {
            for f in &files {
                command.push(' ');
                command.push_str(&air_proto::chain::quoted(f));
            }
        }
        let covered = if files.is_empty() {
            vec![".".to_string()]
        } else {
            files.clone()
        };
        let (out, found) = self.step(tool_run_id, command.clone(), &[]).await?;
        let mut steps = vec![step(&command, &out)];
        let mut changed_files = out.changed_files.clone();
        let mut analyzers = vec!["cppcheck".to_string()];
        let mut notes = Vec::new();
        let mut passed = out.exit_code == Some(0);
        // Judged by what the change adds: findings on lines it did not make were
        // there before, and do not hold the task back.
        let made = if passed || found.is_empty() {
            None
        } else {
            self.made_lines(&found).await
        };
        let (mut new_findings, mut findings_before) = (None, None);
        let mut findings = found;
        if let Some(made) = &made {
            let (new, old): (Vec<&Diagnostic>, Vec<&Diagnostic>) =
                findings.iter().partition(|d| is_new(d, made, &root));
            new_findings = Some(new.len());
            findings_before = Some(old.len());
            let suppress: Vec<String> = old
                .iter()
                .filter_map(|d| {
                    let file = relative(d.file.as_deref()?, &root);
                    Some(format!(
                        "--suppress={}:*{}:{}",
                        d.code.as_deref()?,
                        file,
                        d.line?
                    ))
                })
                .collect();
            if new.is_empty() && suppress.len() == old.len() && suppress.len() <= MAX_SUPPRESSED {
                // Again, with what was there before suppressed one by one, so that
                // the analysis that passes is on record as the evidence.
                let mut again = command.clone();
                for s in &suppress {
                    again.push(' ');
                    again.push_str(&air_proto::chain::quoted(s));
                }
                let (o, f) = self.step(tool_run_id, again.clone(), &[]).await?;
                steps.push(step(&again, &o));
                changed_files.extend(o.changed_files.clone());
                passed = o.exit_code == Some(0);
                notes.push(format!(
                    "{} finding(s) were there before this change (on lines it did not make) and do not count against it; none is new",
                    old.len()
                ));
                if !f.is_empty() {
                    notes.push(format!(
                        "{} finding(s) remained once those were set aside",
                        f.len()
                    ));
                }
            } else if new.is_empty() {
                notes.push(format!(
                    "{} finding(s) were there before this change, too many to set aside one by one: analyse fewer files",
                    old.len()
                ));
            } else {
                notes.push(format!(
                    "{} finding(s) are on lines this change made and must be fixed; {} were there before it and do not count",
                    new.len(),
                    old.len()
                ));
            }
        } else if !passed && !findings.is_empty() && !crate::tools::git::in_repository(&root) {
            notes.push("not a git repository: what was there before the change cannot be told, so every finding counts".into());
        }
        if on_path("clang-tidy") && with_db && !files.is_empty() {
            let mut tidy = format!("clang-tidy -p {} --quiet", air_proto::chain::quoted(&build));
            for f in &files {
                tidy.push(' ');
                tidy.push_str(&air_proto::chain::quoted(f));
            }
            let (o, f) = self.step(tool_run_id, tidy.clone(), &[]).await?;
            steps.push(step(&tidy, &o));
            changed_files.extend(o.changed_files.clone());
            // clang-tidy's findings, judged as cppcheck's are.
            let tidy_passed = if o.exit_code == Some(0) {
                true
            } else {
                match self.made_lines(&f).await {
                    Some(made) if !f.is_empty() => !f.iter().any(|d| is_new(d, &made, &root)),
                    _ => false,
                }
            };
            findings.extend(f);
            passed &= tidy_passed;
            analyzers.push("clang-tidy".into());
        } else if !on_path("clang-tidy") {
            notes.push("clang-tidy is not installed here: cppcheck alone analysed".into());
        }
        Ok(AnalyzeOutput {
            passed,
            analyzers,
            covered,
            findings: shown(findings, &root),
            steps,
            notes,
            changed_files,
            new_findings,
            findings_before,
        })
    }

    /// What the change made of the files findings are in, against the last commit;
    /// `None` when that cannot be told.
    async fn made_lines(
        &self,
        found: &[Diagnostic],
    ) -> Option<std::collections::BTreeMap<String, crate::tools::git::Made>> {
        let root = self.root();
        let mut files: Vec<String> = found
            .iter()
            .filter_map(|d| d.file.as_deref())
            .map(|f| relative(f, &root))
            .collect();
        files.sort();
        files.dedup();
        let launcher = self.env.launcher.clone();
        tokio::task::spawn_blocking(move || crate::tools::git::made_lines(&launcher, &files))
            .await
            .ok()?
            .ok()?
    }

    /// The C and C++ files the task's agents changed so far.
    async fn changed_c_files(&self) -> Vec<String> {
        let (session, task) = (self.env.session.clone(), self.task_id.clone());
        tokio::task::spawn_blocking(move || {
            session
                .readers()
                .get()
                .map_err(crate::Error::from)
                .and_then(|conn| {
                    crate::event_store::query::changed_in_task(
                        &conn,
                        &task,
                        &crate::tools::WRITE_TOOLS,
                    )
                })
                .unwrap_or_default()
        })
        .await
        .unwrap_or_default()
        .into_iter()
        .filter(|f| air_proto::gate::is_c_family(f))
        .collect()
    }

    async fn cpp_intelligence(
        &self,
        tool_run_id: &str,
        input: IntelligenceInput,
    ) -> Result<IntelligenceOutput, ToolError> {
        let file = inside("file", Some(&input.file), "")?;
        let build = inside("build_dir", input.build_dir.as_deref(), "build")?;
        let root = self.root();
        if !root.join(&file).is_file() {
            return Err(ToolError(format!(
                "file: `{file}` is not a file of the project"
            )));
        }
        let mut command = format!("clangd --check={}", air_proto::chain::quoted(&file));
        if root.join(&build).join("compile_commands.json").is_file() {
            command.push_str(&format!(
                " --compile-commands-dir={}",
                air_proto::chain::quoted(&build)
            ));
        }
        // clangd logs to stderr; the answer reads it whole from the step's output.
        let (out, _) = self
            .step(tool_run_id, format!("{command} 2>&1"), &[])
            .await?;
        let text = format!("{}\n{}", out.stdout, out.stderr);
        let (compile_flags_found, findings) = read_clangd(&text, &file);
        Ok(IntelligenceOutput {
            file,
            compile_flags_found,
            findings,
            command_run_id: out.command_run_id.clone(),
            changed_files: out.changed_files.clone(),
        })
    }

    async fn cpp_diagnose(&self, input: DiagnoseInput) -> Result<DiagnoseOutput, ToolError> {
        let text = match (input.text, input.command_run_id) {
            (Some(t), _) => t,
            (None, Some(id)) => self.kept_output(&id).await?,
            (None, None) => {
                return Err(ToolError(
                    "give `command_run_id` (a command whose output to read) or `text`".into(),
                ))
            }
        };
        let found = diagnose::parse(&text);
        let errors = found
            .iter()
            .filter(|d| d.severity == air_proto::payload::DiagnosticSeverity::Error)
            .count() as u64;
        let warnings = found
            .iter()
            .filter(|d| d.severity == air_proto::payload::DiagnosticSeverity::Warning)
            .count() as u64;
        Ok(DiagnoseOutput {
            errors,
            warnings,
            findings: shown(found, &self.root()),
        })
    }

    /// A command run's kept stdout and stderr (bounded), from the ArtifactStore.
    async fn kept_output(&self, id: &str) -> Result<String, ToolError> {
        let id = super::shell::command_run_id(id)?;
        let store = self.env.artifacts.clone();
        tokio::task::spawn_blocking(move || {
            let mut text = String::new();
            for name in ["stdout.log", "stderr.log"] {
                let rel = store.command_log(&id, name);
                if let Ok((bytes, _)) = store.read(&rel, 0, 8 * 1024 * 1024) {
                    text.push_str(&String::from_utf8_lossy(&bytes));
                    text.push('\n');
                }
            }
            if text.trim().is_empty() {
                Err(ToolError(format!(
                    "command_run_id: no kept output for `{id}` in this session"
                )))
            } else {
                Ok(text)
            }
        })
        .await
        .map_err(|e| ToolError(format!("cannot read the output: {e}")))?
    }
}

fn names(s: &Systems) -> String {
    let mut out = Vec::new();
    if s.cmake {
        out.push("CMake".to_string());
    }
    if s.make {
        out.push("Make".to_string());
    }
    out.extend(
        s.unsupported
            .iter()
            .map(|(n, _)| format!("{n} (not supported yet)")),
    );
    if out.is_empty() {
        "none".into()
    } else {
        out.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_named_one_way_from_the_project_root() {
        let root = std::path::Path::new("/p/proj");
        assert_eq!(relative("/p/proj/tests/../src/x.c", root), "src/x.c");
        assert_eq!(relative("./src/x.c", root), "src/x.c");
        assert_eq!(relative("src/x.c", root), "src/x.c");
        assert_eq!(relative("../other/x.c", root), "../other/x.c");
        assert_eq!(
            relative("/usr/include/stdio.h", root),
            "/usr/include/stdio.h"
        );
    }
}
