//! The C and C++ tools of a tool call (baseline §20): `cpp.build` (CMake with Ninja,
//! falling back to Make; a Makefile alone; repairs before anything goes to the
//! debugger; `compile_commands.json` made on demand), `cpp.test` (CTest's JUnit
//! report, or a GoogleTest binary's XML), `cpp.analyze` ([`analyze`]),
//! `cpp.intelligence`
//! (`clangd --check`) and `cpp.diagnose` (a command's kept output read for findings).
//! Every command runs through `shell.run`'s path ([`ToolJob::run_step`]): judged by
//! the PermissionEngine, confined by the sandbox, its output streamed and kept, its
//! evidence and findings recorded with its end.

use std::path::{Path, PathBuf};

use air_proto::task::EvidenceType;
use serde_json::Value;

use super::shell::Logs;
use super::ToolJob;
use crate::profiles::cpp::diagnose::{self, Diagnostic};
use crate::profiles::cpp::tools::*;
use crate::tools::exec::{RunInput, RunOutput};
use crate::tools::ToolError;

mod analyze;

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

/// A finding's file from the project root (a compiler or an analyzer may name it
/// absolutely, or through `..`).
fn relative(file: &str, root: &std::path::Path) -> String {
    let path = std::path::Path::new(file);
    let rel = path.strip_prefix(root).unwrap_or(path);
    tidy_path(&rel.to_string_lossy())
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
                background: false,
            },
            yields,
            logs,
            // A large project's first build takes longer than one command may: a
            // step may take as long as the task.
            Some(self.time_limit_ms.max(LONG)),
            None,
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
        // Compiled through ccache where it is installed, one cache for every worktree:
        // paths under the project's root are hashed as relative to it (its base
        // directory), and the directory compiled in is not hashed, so a task's
        // worktree reuses what another's built.
        let launcher = root
            .to_str()
            .filter(|r| on_path("ccache") && !r.contains(';'))
            .map(|r| {
                let l = format!("env;CCACHE_BASEDIR={r};CCACHE_NOHASHDIR=true;ccache");
                format!(
                    " {} {}",
                    air_proto::chain::quoted(&format!("-DCMAKE_C_COMPILER_LAUNCHER={l}")),
                    air_proto::chain::quoted(&format!("-DCMAKE_CXX_COMPILER_LAUNCHER={l}"))
                )
            })
            .unwrap_or_default();
        if configure {
            let mut tried = Vec::new();
            let mut done = false;
            for g in [Some("Ninja").filter(|_| ninja), Some("Unix Makefiles")]
                .into_iter()
                .flatten()
            {
                let command = format!(
                    "cmake -S {} -B {} -G {} -DCMAKE_EXPORT_COMPILE_COMMANDS=ON{launcher}",
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
        let root = self.root();
        // The project's own test command, as its profile names it, runs its tests
        // (CTest's in the directory it names).
        let profile = self.env.test_command.as_deref();
        let profile_ctest = profile.and_then(crate::profiles::cpp::tools::ctest_dir);
        if let (Some(command), None, None) = (profile, &profile_ctest, &input.gtest) {
            let runner = air_proto::chain::read(command, true)
                .steps
                .first()
                .and_then(|s| crate::profiles::words::tool(&s.argv).first().cloned())
                .unwrap_or_else(|| "profile".into());
            return self
                .counted_test(
                    tool_run_id,
                    command.to_string(),
                    &runner,
                    input.filter.is_some(),
                )
                .await;
        }
        let profile_dir = profile_ctest.flatten();
        let build = inside(
            "build_dir",
            input.build_dir.as_deref().or(profile_dir.as_deref()),
            "build",
        )?;
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
                        .counted_test(
                            tool_run_id,
                            format!("make {target}"),
                            "make",
                            input.filter.is_some(),
                        )
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

    /// A test command of the project's own (its profile's, or `make test`): counted
    /// from what the run's output shows, as `shell.run`'s runs are.
    async fn counted_test(
        &self,
        tool_run_id: &str,
        command: String,
        runner: &str,
        filtered: bool,
    ) -> Result<TestOutput, ToolError> {
        let ran = self.step_ran(tool_run_id, command.clone(), &[]).await?;
        let out = ran.out;
        let mut notes = Vec::new();
        if filtered {
            notes.push(format!(
                "filter: `{command}` runs every test the project names; the filter was not applied"
            ));
        }
        let (tests, failures) = ran.count.map_or((0, 0), |c| (c.ran, c.failed));
        if tests == 0 {
            notes.push(format!(
                "`{command}` showed no test count airsd can read (a runner's summary such as CTest's, GoogleTest's, Unity's, Catch2's, TAP's or `N passed, N failed`): that is not a pass"
            ));
        }
        Ok(TestOutput {
            passed: tests > 0 && failures == 0 && out.exit_code == Some(0),
            runner: runner.into(),
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
