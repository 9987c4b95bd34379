//! Evidence that airsd owns (seed 001 §8.2, P0-1): derived from the commands airsd
//! ran itself, never from what an agent says. A build that exited 0 is `build_pass`
//! (its log `build_log`), a test run that ran at least one test and failed none is
//! `test_pass` (any run that ran tests is `test_output`), an analysis that passed is
//! `static_analysis` over the paths it covered, and a check the plan declares (a
//! verify command with the evidence it yields) is that evidence when it passes.
//! What counts as a build, a test or an analysis is the language [`profiles`]'; how
//! a command's text vouches for its steps is [`chain`]'s; how many tests ran is
//! [`tally`]'s.
//!
//! Each piece becomes an `evidence.created` recorded in the same transaction as the
//! `command.completed` it comes from.
//!
//! [`profiles`]: crate::profiles

use air_proto::gate::COMMAND_RUN;
use air_proto::result::EvidenceKind;
use air_proto::task::EvidenceType;

use crate::profiles::{self, Activity};

pub use air_proto::chain;
pub mod reports;
pub mod tally;

pub use tally::{Count, Tally};

pub use air_proto::gate::CHECK_TOOL as CHECK;

/// The evidence gate's verdict on `result`, from what airsd recorded of the agents of
/// its attempt. A record that cannot be read refuses: evidence that cannot be shown
/// does not count.
pub fn judge(
    session: &crate::Session,
    root: &std::path::Path,
    subject: &GateSubject,
    result: &air_proto::result::WorkerResult,
) -> air_proto::gate::Verdict {
    // The root as the tools see it (resolved), as commands' directories are recorded.
    let resolved = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let ledger = session
        .readers()
        .get()
        .map_err(crate::Error::from)
        .and_then(|conn| {
            crate::event_store::query::attempt_ledger(
                &conn,
                &subject.agents,
                &crate::tools::WRITE_TOOLS,
                &[&resolved, root],
            )
        })
        .and_then(|mut ledger| {
            ledger.reading = reading(&resolved);
            ledger.earlier = earlier_failures(session, &resolved, root, subject)?;
            Ok(ledger)
        });
    match ledger {
        Ok(ledger) if subject.completes => air_proto::gate::check(&subject.spec, result, &ledger),
        Ok(ledger) => air_proto::gate::check_claims(result, &ledger),
        Err(e) => air_proto::gate::Verdict {
            refused: vec![format!(
                "airsd could not read its records of this attempt: {e}"
            )],
            ..Default::default()
        },
    }
}

/// airsd's runs of the task's check before its earlier attempts began that failed
/// (for a task that needs a reproduction; none for any other).
fn earlier_failures(
    session: &crate::Session,
    resolved: &std::path::Path,
    root: &std::path::Path,
    subject: &GateSubject,
) -> crate::Result<Vec<air_proto::gate::CommandRecord>> {
    if !air_proto::gate::task_evidence(&subject.spec).contains(&EvidenceType::Reproduction) {
        return Ok(Vec::new());
    }
    let conn = session.readers().get()?;
    let agents =
        crate::event_store::query::checked_before(&conn, &subject.spec.id, &subject.agents)?;
    if agents.is_empty() {
        return Ok(Vec::new());
    }
    let earlier = crate::event_store::query::attempt_ledger(
        &conn,
        &agents,
        &crate::tools::WRITE_TOOLS,
        &[resolved, root],
    )?;
    Ok(earlier
        .commands
        .into_iter()
        .filter(|c| c.before && c.exit_code.is_some_and(|e| e != 0))
        .collect())
}

/// How commands that ran in the project at `root` (resolved) are read for the checks
/// they ran.
pub fn reading(root: &std::path::Path) -> air_proto::gate::Reading {
    air_proto::gate::Reading {
        pipefail: !crate::tools::exec::without_pipefail(),
        root: root.to_str().map(str::to_string),
        canonical: profiles::canonical,
    }
}

/// What the evidence gate of one agent's result reads.
#[derive(Clone, Debug, PartialEq)]
pub struct GateSubject {
    pub spec: air_proto::task::TaskSpec,
    /// The agents of the task's attempt, whose records count.
    pub agents: Vec<String>,
    /// Whether the result may complete the task (an executor's, or the one agent's
    /// of a task of another type): then the task's evidence is required too; a
    /// debugger's result has only its own claims checked.
    pub completes: bool,
}

/// Answers a worker's `evidence.check`: the gate's verdict on the result it carries,
/// from airsd's records (a subject of `None`: the agent's result claims no evidence,
/// and nothing is refused).
pub async fn answer_check(
    session: std::sync::Arc<crate::Session>,
    root: std::path::PathBuf,
    subject: Option<GateSubject>,
    call: air_proto::ipc::ToolCall,
) -> air_proto::ipc::ToolResult {
    use air_proto::ipc::{ToolResult, ToolResultStatus};
    #[derive(serde::Deserialize)]
    struct Input {
        result: air_proto::result::WorkerResult,
    }
    let verdict = match serde_path_to_error::deserialize::<_, Input>(call.input) {
        Err(e) => Err(format!("{CHECK}: at `{}`: {}", e.path(), e.inner())),
        Ok(input) => match subject {
            None => Ok(air_proto::gate::Verdict::default()),
            Some(subject) => {
                tokio::task::spawn_blocking(move || judge(&session, &root, &subject, &input.result))
                    .await
                    .map_err(|e| format!("the evidence gate stopped: {e}"))
            }
        },
    };
    let (status, output, error) = match verdict.and_then(|v| {
        serde_json::to_value(v).map_err(|e| format!("cannot encode the verdict: {e}"))
    }) {
        Ok(v) => (ToolResultStatus::Ok, Some(v), None),
        Err(message) => (
            ToolResultStatus::Error,
            None,
            Some(air_proto::error::WireError {
                kind: air_proto::error::ErrorKind::InvalidInput,
                message,
                details: None,
            }),
        ),
    };
    ToolResult {
        tool_call_id: call.tool_call_id,
        status,
        content: None,
        output,
        error,
        truncated: false,
        artifact_ref: None,
    }
}

/// What a command run was, for deriving its evidence.
#[derive(Clone, Debug)]
pub struct Run<'a> {
    pub command_run_id: &'a str,
    pub command: &'a str,
    /// `None`: it did not run to its end (killed, timed out, cancelled).
    pub exit_code: Option<i32>,
    /// How its text is read (pipefail, the project root, the profiles' words).
    pub reading: &'a air_proto::gate::Reading,
    /// Where it started, relative to the project root (`""`: the root).
    pub start_dir: &'a str,
    /// Its kept output (artifact URIs).
    pub logs: &'a [String],
    /// The tests its output says ran.
    pub count: Option<Count>,
    /// The task's verify commands with the evidence each yields.
    pub yields: &'a [(String, EvidenceType)],
}

/// One piece of evidence a run shows.
#[derive(Clone, Debug, PartialEq)]
pub struct Derived {
    pub evidence_type: EvidenceType,
    pub kind: EvidenceKind,
    pub reference: String,
    pub claim: String,
    /// For `static_analysis`: the paths covered, from the project root.
    pub covers: Option<Vec<String>>,
}

/// The evidence a finished command run shows.
pub fn derive(run: &Run<'_>) -> Vec<Derived> {
    let root = run.reading.root.as_deref();
    let read = chain::read_placed(
        run.command,
        run.reading.pipefail,
        root.map(|r| (r, run.start_dir)),
    );
    let passed = run.exit_code == Some(0) && read.vouches;
    let reference = format!("{COMMAND_RUN}{}", run.command_run_id);
    let shown = format!("`{}`", short(run.command));
    let mut out: Vec<Derived> = Vec::new();
    let mut push = |d: Derived| {
        if !out.iter().any(|o| o.evidence_type == d.evidence_type) {
            out.push(d);
        }
    };
    let mut built = false;
    let mut tested = false;
    let mut loads = false;
    let mut covers: Option<Vec<String>> = None;
    for step in &read.steps {
        // Where it ran, to read the scripts it hands on to (`npm run build`).
        let dir = root.zip(step.dir.as_deref()).and_then(|(r, d)| {
            Some(std::path::Path::new(r).join(chain::from_root(run.start_dir, Some(d), ".")?))
        });
        let at = root.map(std::path::Path::new).zip(dir.as_deref());
        for activity in profiles::classify_in(&step.argv, at) {
            match activity {
                Activity::Build => built = true,
                Activity::Test => tested = true,
                Activity::Load => loads = true,
                Activity::Analysis { paths } => {
                    let all = covers.get_or_insert_with(Vec::new);
                    // A glob covers the directory before its first pattern.
                    let wanted: Vec<String> = if paths.is_empty() {
                        vec![".".to_string()]
                    } else {
                        paths
                            .into_iter()
                            .map(|p| match p.find(['*', '?', '[']) {
                                Some(i) => {
                                    let dir = p[..i].rsplit_once('/').map_or("", |(d, _)| d);
                                    if dir.is_empty() {
                                        ".".to_string()
                                    } else {
                                        dir.to_string()
                                    }
                                }
                                None => p,
                            })
                            .collect()
                    };
                    // A path that cannot be placed covers nothing.
                    all.extend(
                        wanted
                            .iter()
                            .filter_map(|p| chain::from_root(run.start_dir, step.dir.as_deref(), p))
                            .map(|p| if p.is_empty() { ".".into() } else { p }),
                    );
                }
            }
        }
    }
    let log = run.logs.first().cloned();
    if built && passed {
        push(Derived {
            evidence_type: EvidenceType::BuildPass,
            kind: EvidenceKind::CommandRun,
            reference: reference.clone(),
            claim: format!("{shown} built with exit 0"),
            covers: None,
        });
        if let Some(uri) = &log {
            push(Derived {
                evidence_type: EvidenceType::BuildLog,
                kind: EvidenceKind::ArtifactExcerpt,
                reference: uri.clone(),
                claim: format!("the log of {shown}"),
                covers: None,
            });
        }
    }
    let tests_passed = run.count.is_some_and(|c| c.ran > 0 && c.failed == 0);
    if loads && tested && passed && tests_passed && !built {
        push(Derived {
            evidence_type: EvidenceType::BuildPass,
            kind: EvidenceKind::CommandRun,
            reference: reference.clone(),
            claim: format!("{shown} loaded the code its tests ran, with exit 0"),
            covers: None,
        });
    }
    if let Some(c) = run.count.filter(|c| c.ran > 0) {
        if tested {
            push(Derived {
                evidence_type: EvidenceType::TestOutput,
                kind: if log.is_some() {
                    EvidenceKind::ArtifactExcerpt
                } else {
                    EvidenceKind::CommandRun
                },
                reference: log.clone().unwrap_or_else(|| reference.clone()),
                claim: format!("{shown} ran {}, {} failed", tests(c), c.failed),
                covers: None,
            });
        }
    }
    if tested && passed && tests_passed {
        let c = run.count.unwrap_or_default();
        push(Derived {
            evidence_type: EvidenceType::TestPass,
            kind: EvidenceKind::CommandRun,
            reference: reference.clone(),
            claim: format!("{shown} ran {}, none failed", tests(c)),
            covers: None,
        });
    }
    if let Some(covers) = covers.filter(|_| passed) {
        push(Derived {
            evidence_type: EvidenceType::StaticAnalysis,
            kind: EvidenceKind::CommandRun,
            reference: reference.clone(),
            claim: format!("{shown} passed over {}", covers.join(", ")),
            covers: Some(covers),
        });
    }
    // The checks the plan declares: their evidence when they pass.
    for (wanted, kind) in run.yields {
        let ran_it =
            air_proto::gate::compare(run.command, Some(run.start_dir), wanted, run.reading)
                == air_proto::gate::Match::Runs;
        if !ran_it || run.exit_code != Some(0) {
            continue;
        }
        let counted = run.count.filter(|c| c.ran > 0);
        // Tests are evidence only when the run's output shows they ran.
        let holds = match kind {
            EvidenceType::TestPass => run.count.is_some_and(|c| c.ran > 0 && c.failed == 0),
            EvidenceType::TestOutput => counted.is_some(),
            _ => true,
        };
        if holds {
            push(Derived {
                evidence_type: *kind,
                kind: EvidenceKind::CommandRun,
                reference: reference.clone(),
                claim: format!(
                    "`{}`, which the task declares {}, exited 0",
                    short(wanted),
                    kind.as_str()
                ),
                covers: (*kind == EvidenceType::StaticAnalysis).then(|| vec![".".into()]),
            });
        }
    }
    out
}

/// Whether a command builds or analyses C or C++ (a step the C and C++ profile
/// recognises, or an analyzer of it, also one whose findings do not fail it), so
/// that its output is read for compiler, linker and analyzer findings.
pub fn compiles(command: &str) -> bool {
    use crate::profiles::Profile as _;
    chain::read(command, true).steps.iter().any(|s| {
        let argv = crate::profiles::words::tool(&s.argv);
        matches!(crate::profiles::program(&argv), "cppcheck" | "clang-tidy")
            || crate::profiles::Cpp
                .classify(&s.argv)
                .iter()
                .any(|a| matches!(a, Activity::Build | Activity::Analysis { .. }))
    })
}

/// Most findings of one command recorded as `diagnostic.created` (errors first).
pub const DIAGNOSTICS_RECORDED: usize = 200;

/// The findings of a command's output worth recording: its errors, then its
/// warnings, at most [`DIAGNOSTICS_RECORDED`].
pub fn recorded(
    mut found: Vec<crate::profiles::cpp::diagnose::Diagnostic>,
) -> Vec<crate::profiles::cpp::diagnose::Diagnostic> {
    use air_proto::payload::DiagnosticSeverity;
    found.retain(|d| d.severity != DiagnosticSeverity::Note);
    found.sort_by_key(|d| d.severity != DiagnosticSeverity::Error);
    found.truncate(DIAGNOSTICS_RECORDED);
    found
}

/// What a count counted, for a claim.
fn tests(c: Count) -> String {
    if c.packages {
        format!("the tests of {} package(s)", c.ran)
    } else {
        format!("{} test(s)", c.ran)
    }
}

/// A command as a claim quotes it: its first line, at most 120 characters.
fn short(command: &str) -> String {
    let first = command.lines().next().unwrap_or("").trim();
    let mut s: String = first.chars().take(120).collect();
    if first.chars().count() > 120 || command.lines().count() > 1 {
        s.push('…');
    }
    s
}

#[cfg(test)]
mod tests;
