//! The evidence gates (seed 001 §8.2, P0-1, P0-2): what must be on airsd's record
//! before a task may complete. Evidence is airsd's, never the agent's: a build that
//! exited 0, a test run that ran tests and failed none, an analysis over the changed
//! files, each one a piece airsd derived from a command it ran itself. A result may
//! cite those records; it cannot create evidence by claiming it.
//!
//! One pure function, [`check`], of the task, the result and the [`Ledger`] of the
//! attempt (what airsd recorded of it, in record order): airsd runs it when a worker
//! asks before it hands its result back (so the agent is told in the same turn what is
//! missing), and again as the authority when the result arrives; its [`Verdict`] is
//! recorded with the result, so that a replay decides as the run did.

use serde::{Deserialize, Serialize};

use crate::result::{EvidenceKind, VerificationStatus, WorkerResult, WorkerStatus};
use crate::task::{EvidenceType, TaskCategory, TaskSpec};

/// File endings that count as C or C++ source (global rule 3).
const C_FAMILY: &[&str] = &[
    ".c", ".cc", ".cpp", ".cxx", ".c++", ".h", ".hh", ".hpp", ".hxx", ".ipp", ".tpp",
];

/// The tool a worker calls (never offered to the model) to hear the gate's verdict on
/// a result from airsd's records before it hands the result back.
pub const CHECK_TOOL: &str = "evidence.check";

/// The prefix of a reference to a command run (`command-run:<command_run_id>`).
pub const COMMAND_RUN: &str = "command-run:";

/// The call a worker makes before a bugfix task's executor starts: airsd runs the
/// task's check itself, so that its failure before any change is on record (the
/// reproduction) whichever order the agent then fixes and tests in.
pub const BEFORE_TOOL: &str = "check.before";

/// A piece of evidence airsd derived from its own records (an `evidence.created`).
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Piece {
    pub id: String,
    pub evidence_type: EvidenceType,
    /// What shows it: `command-run:<id>`, an artifact URI, `diagnostic:<id>`.
    pub reference: String,
    pub claim: String,
    /// Where it stands in the session's record (its event's seq).
    pub seq: u64,
    /// The command run it comes from.
    pub command_run_id: Option<String>,
    /// For `static_analysis`: the paths the analysis covered (relative to the project
    /// root; a directory covers what is under it). `None`: the whole project.
    pub covers: Option<Vec<String>>,
}

/// A command an agent of the attempt ran, as airsd recorded its end.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct CommandRecord {
    pub command_run_id: String,
    pub command: String,
    /// `None`: it did not run to its end (killed, timed out, could not start).
    pub exit_code: Option<i32>,
    /// The seq of its end.
    pub seq: u64,
    /// Where it started, relative to the project root (`""`: the root; `None`:
    /// outside the project).
    #[serde(default = "project_root")]
    pub start_dir: Option<String>,
    /// airsd ran it before the agent began ([`BEFORE_TOOL`]): the task's check as the
    /// project stood before the attempt changed anything.
    #[serde(default)]
    pub before: bool,
}

fn project_root() -> Option<String> {
    Some(String::new())
}

impl CommandRecord {
    fn passed(&self) -> bool {
        self.exit_code == Some(0)
    }
}

/// Files a tool call of the attempt changed.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Change {
    /// The seq of the call's start (one agent's calls never overlap).
    pub seq: u64,
    pub files: Vec<String>,
    /// The command that changed them, when it was one.
    pub command_run_id: Option<String>,
}

/// An error a compiler or linker reported in a command of the attempt, by its
/// semantic signature (the same for the same error whichever compiler said it).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Finding {
    pub command_run_id: String,
    pub signature: String,
}

/// What airsd recorded of one attempt of a task, in record order.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Ledger {
    pub pieces: Vec<Piece>,
    pub commands: Vec<CommandRecord>,
    pub changes: Vec<Change>,
    #[serde(default)]
    pub findings: Vec<Finding>,
    /// The runs of the task's check airsd made before its earlier attempts began that
    /// failed: the bug as it stood before the task changed anything.
    #[serde(default)]
    pub earlier: Vec<CommandRecord>,
    /// How the commands are read (airsd's, never recorded).
    #[serde(skip)]
    #[schemars(skip)]
    pub reading: Reading,
}

impl Ledger {
    /// The error signatures of the attempt's latest failed command that had any,
    /// sorted: what the failure is, for counting repeats of it.
    pub fn failure_signatures(&self) -> Vec<String> {
        let failed = self.commands.iter().rev().find(|c| {
            !c.passed()
                && self
                    .findings
                    .iter()
                    .any(|f| f.command_run_id == c.command_run_id)
        });
        let Some(c) = failed else {
            return Vec::new();
        };
        let mut out: Vec<String> = self
            .findings
            .iter()
            .filter(|f| f.command_run_id == c.command_run_id)
            .map(|f| f.signature.clone())
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// The first file changed after `seq` by anything but `own` (the command the
    /// evidence comes from judged its own changes): the evidence is stale.
    pub fn stale_by(&self, seq: u64, own: Option<&str>) -> Option<&str> {
        // A command's own changes are excused only when it is one step: `make` that
        // regenerates a file judged it; `make && sed -i …` did not.
        let own = own.filter(|id| self.command(id).is_some_and(|c| single_step(&c.command)));
        self.changes
            .iter()
            .filter(|c| c.seq > seq && (own.is_none() || c.command_run_id.as_deref() != own))
            .flat_map(|c| c.files.iter())
            .map(String::as_str)
            .find(|f| !is_output(f))
    }

    /// Every file the attempt's calls changed (build outputs left out), once each, in
    /// order.
    pub fn changed_files(&self) -> Vec<String> {
        let mut seen = std::collections::HashSet::new();
        let mut out: Vec<String> = Vec::new();
        for f in self.changes.iter().flat_map(|c| &c.files) {
            if !is_output(f) && seen.insert(f.as_str()) {
                out.push(f.clone());
            }
        }
        out
    }

    /// Whether command `c` of the attempt ran the check `wanted`.
    pub fn runs(&self, c: &CommandRecord, wanted: &str) -> bool {
        compare(&c.command, c.start_dir.as_deref(), wanted, &self.reading) == Match::Runs
    }

    /// The latest command of the attempt that ran the program of the check `wanted`
    /// but not the check itself, with what differed.
    pub fn nearest(&self, wanted: &str) -> Option<(&CommandRecord, String)> {
        self.commands.iter().rev().find_map(|c| {
            match compare(&c.command, c.start_dir.as_deref(), wanted, &self.reading) {
                Match::Differs(why) => Some((c, why)),
                _ => None,
            }
        })
    }

    /// Whether two commands of the attempt ran the same check: either runs what the
    /// other ran, where it ran (a pipe into `tail` or a `-v` make no difference).
    fn same_check(&self, a: &CommandRecord, b: &CommandRecord) -> bool {
        let wanted = |c: &CommandRecord| {
            c.start_dir.as_deref().map(|d| match d {
                "" => c.command.clone(),
                d => format!("cd {} && {}", crate::chain::quoted(d), c.command),
            })
        };
        wanted(b).is_some_and(|w| self.runs(a, &w)) || wanted(a).is_some_and(|w| self.runs(b, &w))
    }

    fn command(&self, id: &str) -> Option<&CommandRecord> {
        self.commands.iter().find(|c| c.command_run_id == id)
    }

    fn fresh(&self, c: &CommandRecord) -> bool {
        self.stale_by(c.seq, Some(&c.command_run_id)).is_none()
    }
}

/// A piece that counted for a required evidence type.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Counted {
    pub evidence_type: EvidenceType,
    /// The piece's id (`result:…` for what the result itself is, e.g. an explanation).
    pub evidence_id: String,
    pub reference: String,
    pub claim: String,
}

/// What the gate found: the evidence that counted, and why the result cannot
/// complete its task (empty: it may).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Verdict {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub counted: Vec<Counted>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refused: Vec<String>,
    /// The compiler and linker errors of the attempt's latest failed build, by
    /// signature ([`Ledger::failure_signatures`]): how the scheduler tells the same
    /// failure again.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub signatures: Vec<String>,
}

impl Verdict {
    pub fn passed(&self) -> bool {
        self.refused.is_empty()
    }
}

/// Where an evidence type comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// airsd derives it from a command it ran (a build, tests, an analysis, a check
    /// the plan names).
    Records,
    /// The result itself is it (an explanation, the debugger's analysis).
    Result,
    /// The scheduler's own step provides it (the review that follows every task).
    Scheduler,
    /// No tool records it yet: the task must opt out with a `[no-…]` marker.
    NoTool,
}

/// Where evidence of `kind` comes from.
pub fn source(kind: EvidenceType) -> Source {
    use EvidenceType::*;
    match kind {
        BuildPass | TestPass | TestOutput | StaticAnalysis | BuildLog | SmokeTest
        | Reproduction => Source::Records,
        Explanation | DebuggerAnalysis => Source::Result,
        DiffReview => Source::Scheduler,
        Screenshot | Pcap | DeployVerify | CodeTrace => Source::NoTool,
    }
}

/// The evidence the task itself asks for: its own list, or its category's. (A result
/// may need more: see [`required_evidence`].)
pub fn task_evidence(spec: &TaskSpec) -> Vec<EvidenceType> {
    match &spec.verification.evidence_types {
        Some(list) => list.clone(),
        None => spec
            .category
            .map(|c| c.required_evidence().to_vec())
            .unwrap_or_default(),
    }
}

/// The category a change of `files` is, for a task that names none (seed 001 §8.2:
/// every task is gated): code needs its build and tests (`logic`), tests alone their
/// run (`test`), build files their build (`build`), configuration its build
/// (`config`), documentation nothing (`docs`). `None`: nothing in the project changed.
pub fn category_of_change(files: &[String]) -> Option<TaskCategory> {
    #[derive(PartialEq, PartialOrd)]
    enum Kind {
        Docs,
        Config,
        Build,
        Test,
        Code,
    }
    fn kind(path: &str) -> Kind {
        let path = path.trim_start_matches("./");
        let name = path.rsplit('/').next().unwrap_or(path);
        let lower = name.to_ascii_lowercase();
        let ext = lower.rsplit_once('.').map_or("", |(_, e)| e);
        let dirs: Vec<&str> = path.split('/').rev().skip(1).collect();
        const BUILD: &[&str] = &[
            "cmakelists.txt",
            "makefile",
            "gnumakefile",
            "meson.build",
            "cargo.toml",
            "cargo.lock",
            "package.json",
            "package-lock.json",
            "pnpm-lock.yaml",
            "yarn.lock",
            "pyproject.toml",
            "setup.py",
            "setup.cfg",
            "go.mod",
            "go.sum",
            "pom.xml",
            "build.gradle",
            "build.gradle.kts",
            "settings.gradle",
            "settings.gradle.kts",
            "build.bazel",
            "workspace",
            "dockerfile",
            "tsconfig.json",
        ];
        if BUILD.contains(&lower.as_str())
            || lower.starts_with("requirements") && ext == "txt"
            || matches!(ext, "cmake" | "csproj" | "fsproj" | "sln")
        {
            return Kind::Build;
        }
        if matches!(
            ext,
            "md" | "markdown" | "rst" | "txt" | "adoc" | "org" | "png" | "svg"
        ) || [
            "license",
            "licence",
            "readme",
            "changelog",
            "authors",
            "notice",
            "copying",
        ]
        .iter()
        .any(|n| lower.starts_with(n))
            || dirs.last().is_some_and(|d| *d == "docs" || *d == "doc")
        {
            return Kind::Docs;
        }
        if matches!(
            ext,
            "yaml" | "yml" | "toml" | "json" | "ini" | "cfg" | "conf" | "env" | "properties"
        ) || lower.starts_with('.')
            || dirs.last().is_some_and(|d| d.starts_with('.'))
        {
            return Kind::Config;
        }
        let stem = lower.split('.').next().unwrap_or("");
        if dirs
            .iter()
            .any(|d| matches!(*d, "test" | "tests" | "__tests__" | "spec" | "testdata"))
            || stem.starts_with("test_")
            || stem.ends_with("_test")
            || stem.ends_with("test") && name.starts_with(|c: char| c.is_ascii_uppercase())
            || lower.contains(".test.")
            || lower.contains(".spec.")
        {
            return Kind::Test;
        }
        Kind::Code
    }
    // Files outside the project, git's and air's own are no part of its code.
    let most = files
        .iter()
        .map(|f| f.trim_start_matches("./"))
        .filter(|f| {
            !f.starts_with('/')
                && !f.starts_with('~')
                && !f.starts_with(".git/")
                && !f.starts_with(".air/")
        })
        .map(kind)
        .fold(None, |m: Option<Kind>, k| match m {
            Some(m) if m >= k => Some(m),
            _ => Some(k),
        })?;
    Some(match most {
        Kind::Code => TaskCategory::Logic,
        Kind::Test => TaskCategory::Test,
        Kind::Build => TaskCategory::Build,
        Kind::Config => TaskCategory::Config,
        Kind::Docs => TaskCategory::Docs,
    })
}

/// Whether the task's evidence follows what its attempt changes: an `execute` task
/// with neither a category nor a list of its own.
pub fn judged_by_change(spec: &TaskSpec) -> bool {
    spec.category.is_none()
        && spec.verification.evidence_types.is_none()
        && spec.task_type == crate::task::TaskType::Execute
}

/// The evidence `result` must carry for `spec`: the task's list (or its category's,
/// or for a task with neither the category of what the attempt changed), plus the
/// three global rules. `changed` is every file the attempt changed.
pub fn required_for(
    spec: &TaskSpec,
    status: WorkerStatus,
    changed: &[String],
) -> Vec<EvidenceType> {
    let mut required = task_evidence(spec);
    if judged_by_change(spec) && status == WorkerStatus::Completed {
        if let Some(c) = category_of_change(changed) {
            required.extend_from_slice(c.required_evidence());
        }
    }
    // 1. failed or blocked needs a debugger's analysis.
    if matches!(status, WorkerStatus::Failed | WorkerStatus::Blocked) {
        required.push(EvidenceType::DebuggerAnalysis);
    }
    // 2. done without changing anything needs an explanation.
    if status == WorkerStatus::Completed && changed.is_empty() {
        required.push(EvidenceType::Explanation);
    }
    // 3. C and C++ changes need static analysis.
    if changed.iter().any(|f| is_c_family(f)) {
        required.push(EvidenceType::StaticAnalysis);
    }
    required.sort();
    required.dedup();
    required
}

/// [`required_for`] the result's own status and changed files.
pub fn required_evidence(spec: &TaskSpec, result: &WorkerResult) -> Vec<EvidenceType> {
    required_for(spec, result.status, &result.changed_files)
}

/// Whether `path` is C or C++ source (global rule 3).
pub fn is_c_family(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    C_FAMILY.iter().any(|ext| lower.ends_with(ext))
}

pub use crate::chain::RUNS_ELSEWHERE;

mod failure;
mod matching;
pub use failure::{idle, Failure};
pub use matching::{compare, runs, Match, Reading};

/// What a build or a test run leaves behind, not a change to the work: compiled
/// Python, object files, a build or target directory, caches.
pub fn is_output(path: &str) -> bool {
    let p = path.trim_start_matches("./");
    const DIRS: &[&str] = &[
        "__pycache__",
        "build",
        "target",
        "node_modules",
        ".pytest_cache",
        ".mypy_cache",
        ".ruff_cache",
        "CMakeFiles",
        "Testing",
    ];
    const ENDINGS: &[&str] = &[
        ".pyc", ".pyo", ".o", ".obj", ".a", ".so", ".d", ".gcda", ".gcno",
    ];
    p.split('/')
        .rev()
        .skip(1)
        .any(|dir| DIRS.contains(&dir) || dir.starts_with("cmake-build-"))
        || ENDINGS.iter().any(|e| p.ends_with(e))
}

/// Whether a command is one step: no chain, list, pipe, substitution or comment.
fn single_step(command: &str) -> bool {
    !["&&", "||", ";", "|", "&", "\n", "`", "$(", "#"]
        .iter()
        .any(|op| command.contains(op))
}

/// A command's text with its whitespace folded, for comparing what an agent names
/// with what ran.
pub fn normalize_command(command: &str) -> String {
    command.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Whether `path` is one of `covers` or under one of them.
fn covered(path: &str, covers: &[String]) -> bool {
    let path = path.trim_start_matches("./");
    covers.iter().any(|c| {
        let c = c.trim_start_matches("./").trim_end_matches('/');
        c.is_empty() || c == "." || path == c || path.starts_with(&format!("{c}/"))
    })
}

fn command_id(reference: &str) -> &str {
    reference
        .trim()
        .strip_prefix(COMMAND_RUN)
        .unwrap_or(reference.trim())
}

/// Checks a result against what airsd recorded of its attempt: every evidence ref and
/// every "passed" verification in the result must point at a record of this attempt
/// that shows it, fresh (nothing the task changed since); and a result that claims
/// completion must have, for each evidence type its task requires, a passing, fresh
/// piece airsd recorded. Each refusal names what is missing and what to do.
pub fn check(spec: &TaskSpec, result: &WorkerResult, ledger: &Ledger) -> Verdict {
    let mut v = check_claims(result, ledger);
    if result.status != WorkerStatus::Completed {
        return v;
    }
    let mut changed = ledger.changed_files();
    let mut seen: std::collections::HashSet<String> = changed.iter().cloned().collect();
    for f in &result.changed_files {
        if !is_output(f) && seen.insert(f.clone()) {
            changed.push(f.clone());
        }
    }
    for kind in required_for(spec, result.status, &changed) {
        match find(kind, spec, result, ledger, &changed) {
            Ok(c) => v.counted.push(c),
            Err(why) => v.refused.push(why),
        }
    }
    if spec.verification.required {
        check_verification(spec, result, ledger, &mut v.refused);
    }
    v
}

/// Only the result's own claims: every evidence ref and "passed" check points at a
/// fresh record of this attempt that shows it (a debugger's result, which does not
/// complete its task).
pub fn check_claims(result: &WorkerResult, ledger: &Ledger) -> Verdict {
    let mut v = Verdict {
        signatures: ledger.failure_signatures(),
        ..Verdict::default()
    };
    claims(result, ledger, &mut v.refused);
    v
}

/// The result's own claims: its evidence refs and its passed checks.
fn claims(result: &WorkerResult, ledger: &Ledger, refused: &mut Vec<String>) {
    for (i, e) in result.evidence_refs.iter().enumerate() {
        let Some(kind) = e.evidence_type.filter(|k| source(*k) == Source::Records) else {
            continue;
        };
        // A command is cited by its id, bare or as `command-run:<id>`, whatever kind
        // the claim gives it.
        let id = command_id(&e.reference);
        let cites_a_command = e.kind == EvidenceKind::CommandRun
            || e.reference.trim().starts_with(COMMAND_RUN)
            || ledger.command(id).is_some();
        if !cites_a_command {
            refused.push(format!(
                "evidence[{i}] claims {} from `{}`, which is not a command airsd ran; {} is airsd's record of a command, never a claim",
                kind.as_str(),
                e.reference,
                kind.as_str()
            ));
            continue;
        }
        let Some(c) = ledger.command(id) else {
            refused.push(format!(
                "evidence[{i}] cites {COMMAND_RUN}{id}, which no agent of this attempt ran; run the check now and let its record stand"
            ));
            continue;
        };
        let piece = ledger
            .pieces
            .iter()
            .rev()
            .find(|p| p.evidence_type == kind && p.command_run_id.as_deref() == Some(id));
        match piece {
            // A smoke test is a run of the program that ended well: the claim names
            // which run it was, and airsd's record shows how it ended.
            None if kind == EvidenceType::SmokeTest && c.passed() => {
                if let Some(file) = ledger.stale_by(c.seq, Some(id)) {
                    refused.push(format!(
                        "evidence[{i}] claims smoke_test from `{}` ({COMMAND_RUN}{id}), which ran before {file} changed; run it again",
                        c.command
                    ));
                }
            }
            None => refused.push(format!(
                "evidence[{i}] claims {} from `{}` ({COMMAND_RUN}{id}), but airsd's record of it shows no {} ({}){}",
                kind.as_str(),
                c.command,
                kind.as_str(),
                ended(c),
                if matches!(kind, EvidenceType::TestPass | EvidenceType::TestOutput) {
                    if c.command.contains('|') {
                        "; airsd counts the tests its output shows, and a filter such as `tail` can cut the runner's summary"
                    } else {
                        "; airsd counts the tests its output shows: it showed none that ran"
                    }
                } else {
                    ""
                }
            )),
            Some(p) => {
                if let Some(file) = ledger.stale_by(p.seq, p.command_run_id.as_deref()) {
                    refused.push(format!(
                        "evidence[{i}] claims {} from `{}` ({COMMAND_RUN}{id}), which ran before {file} changed; run it again",
                        kind.as_str(),
                        c.command
                    ));
                }
            }
        }
    }
    for (i, check) in result.verification.iter().enumerate() {
        if check.status != VerificationStatus::Passed {
            continue;
        }
        let cited: Vec<&str> = check
            .evidence_refs
            .iter()
            .flatten()
            .map(|r| command_id(r))
            .collect();
        let named = |c: &&CommandRecord| {
            cited.contains(&c.command_run_id.as_str()) || ledger.runs(c, &check.name)
        };
        let latest = ledger.commands.iter().rev().find(named);
        match latest {
            None => refused.push(format!(
                "verification[{i}] `{}` is reported passed, but no command of this attempt shows it; run it and name it by its exact command",
                check.name
            )),
            Some(c) if !c.passed() => refused.push(format!(
                "verification[{i}] `{}` is reported passed, but its latest run ({COMMAND_RUN}{}) {}",
                check.name,
                c.command_run_id,
                ended(c)
            )),
            Some(c) if !ledger.fresh(c) => refused.push(format!(
                "verification[{i}] `{}` passed before {} changed; run it again",
                check.name,
                ledger
                    .stale_by(c.seq, Some(&c.command_run_id))
                    .unwrap_or_default()
            )),
            Some(_) => {}
        }
    }
}

fn ended(c: &CommandRecord) -> String {
    match c.exit_code {
        Some(code) => format!("exited {code}"),
        None => "did not run to its end".to_string(),
    }
}

/// The piece that provides `kind`, or why none does.
fn find(
    kind: EvidenceType,
    spec: &TaskSpec,
    result: &WorkerResult,
    ledger: &Ledger,
    changed: &[String],
) -> Result<Counted, String> {
    match source(kind) {
        Source::Result => result
            .evidence_refs
            .iter()
            .find(|e| e.evidence_type == Some(kind) && !e.claim.trim().is_empty())
            .map(|e| Counted {
                evidence_type: kind,
                evidence_id: e.id.clone(),
                reference: e.reference.clone(),
                claim: e.claim.clone(),
            })
            .ok_or_else(|| match kind {
                EvidenceType::Explanation => "missing explanation: completing without changing a file needs an explanation of why no change was needed".to_string(),
                _ => format!("missing {}", kind.as_str()),
            }),
        Source::Scheduler => Ok(Counted {
            evidence_type: kind,
            evidence_id: "scheduler:review".into(),
            reference: "the review that follows the task".into(),
            claim: "the reviewer reviews the diff before the task completes".into(),
        }),
        Source::NoTool => Err(format!(
            "missing {}: no tool of air records {} evidence yet; the plan must opt out with [no-{}] until one does",
            kind.as_str(),
            kind.as_str(),
            kind.as_str().replace('_', "-")
        )),
        Source::Records if kind == EvidenceType::Reproduction => reproduction(spec, ledger),
        Source::Records => {
            let mut stale: Option<(String, String)> = None;
            let mut uncovered: Option<String> = None;
            for p in ledger.pieces.iter().rev().filter(|p| p.evidence_type == kind) {
                if let Some(file) = ledger.stale_by(p.seq, p.command_run_id.as_deref()) {
                    stale.get_or_insert_with(|| (p.claim.clone(), file.to_string()));
                    continue;
                }
                if kind == EvidenceType::StaticAnalysis {
                    if let Some(covers) = &p.covers {
                        if let Some(f) = changed
                            .iter()
                            .find(|f| is_c_family(f) && !covered(f, covers))
                        {
                            uncovered.get_or_insert_with(|| f.clone());
                            continue;
                        }
                    }
                }
                return Ok(Counted {
                    evidence_type: kind,
                    evidence_id: p.id.clone(),
                    reference: p.reference.clone(),
                    claim: p.claim.clone(),
                });
            }
            Err(match (stale, uncovered) {
                (Some((claim, file)), _) => format!(
                    "missing {}: the last one ({claim}) was recorded before {file} changed; run it again",
                    kind.as_str()
                ),
                (None, Some(file)) => format!(
                    "missing {}: no analysis of this attempt covered {file}",
                    kind.as_str()
                ),
                (None, None) => format!("missing {}: {}", kind.as_str(), how_to(kind)),
            })
        }
    }
}

/// What produces evidence of a kind airsd records.
fn how_to(kind: EvidenceType) -> &'static str {
    use EvidenceType::*;
    match kind {
        BuildPass => "no build of this attempt exited 0 (airsd records a build it ran: a build tool, or a verify command of the task that builds)",
        BuildLog => "no build of this attempt kept its log",
        TestPass => "no test run of this attempt ran at least one test and failed none",
        TestOutput => "no test run of this attempt ran a test",
        StaticAnalysis => "no static analysis of this attempt ran over the changed files and passed (cpp_analyze counts only the findings the change brought)",
        SmokeTest => "no smoke test of this attempt passed (a verify command of the task declared as smoke_test)",
        _ => "airsd has no record of it",
    }
}

/// The check failed, then passed after a change: the problem reproduced, then fixed.
///
/// The failing run is airsd's run of the task's check before the attempt began, or
/// one of the attempt's own; a change of the attempt must lie between it and a fresh
/// passing run of the same check (matched by what runs, as verification commands
/// are). A failure airsd saw before an earlier attempt counts when this attempt's own
/// first run of the check already passed: the earlier attempt's change fixed it.
/// When the task names verification commands, the runs must be of one of them; when
/// it names none, the passing run must have run tests.
fn reproduction(spec: &TaskSpec, ledger: &Ledger) -> Result<Counted, String> {
    let checks: Vec<&String> = spec.verification.commands.iter().flatten().collect();
    let is_check = |c: &CommandRecord| {
        if checks.is_empty() {
            ledger.pieces.iter().any(|p| {
                matches!(
                    p.evidence_type,
                    EvidenceType::TestOutput | EvidenceType::TestPass
                ) && p.command_run_id.as_deref() == Some(c.command_run_id.as_str())
            })
        } else {
            checks.iter().any(|w| ledger.runs(c, w))
        }
    };
    let failed = |c: &&CommandRecord| c.exit_code.is_some_and(|code| code != 0);
    for pass in ledger.commands.iter().rev().filter(|c| c.passed()) {
        if !ledger.fresh(pass) || !is_check(pass) {
            continue;
        }
        let before = ledger.commands.iter().filter(failed).find(|f| {
            f.seq < pass.seq
                && ledger.same_check(f, pass)
                && ledger
                    .changes
                    .iter()
                    .any(|ch| ch.seq > f.seq && ch.seq < pass.seq)
        });
        let before = before.or_else(|| {
            ledger.earlier.iter().filter(failed).find(|f| {
                ledger.same_check(f, pass)
                    && ledger.commands.iter().any(|b| {
                        b.before && b.passed() && b.seq <= pass.seq && ledger.same_check(b, f)
                    })
            })
        });
        if let Some(f) = before {
            return Ok(Counted {
                evidence_type: EvidenceType::Reproduction,
                evidence_id: format!("reproduction:{}", pass.command_run_id),
                reference: format!("{COMMAND_RUN}{}", pass.command_run_id),
                claim: format!(
                    "`{}` failed{} ({COMMAND_RUN}{}, {}) and passed after the change",
                    pass.command,
                    if f.before {
                        " before the task changed anything"
                    } else {
                        ""
                    },
                    f.command_run_id,
                    ended(f)
                ),
            });
        }
    }
    let before = ledger
        .commands
        .iter()
        .find(|c| c.before)
        .map(|b| match b.exit_code {
            Some(0) => format!(
                "; airsd's run of `{}` before the attempt passed, so no test shows the bug yet: write one, run it and see it fail, then fix the code and run it again",
                b.command
            ),
            Some(_) => format!(
                "; airsd's run of `{}` before the attempt failed ({COMMAND_RUN}{}): run that same check again after your last change",
                b.command, b.command_run_id
            ),
            None => String::new(),
        })
        .unwrap_or_default();
    Err(format!("missing reproduction: no run of the task's check failed before a change and passed after it{before}"))
}

/// With required verification: checks were reported, and each command the task names
/// passed, fresh (unless the task allows other checks to stand in).
fn check_verification(
    spec: &TaskSpec,
    result: &WorkerResult,
    ledger: &Ledger,
    refused: &mut Vec<String>,
) {
    if result.verification.is_empty() {
        refused.push("verification is required but no verification result was reported".into());
    }
    refused.extend(result.verification.iter().filter_map(|c| unpassed(spec, c)));
    if spec.verification.fallback_allowed {
        return;
    }
    for wanted in spec.verification.commands.iter().flatten() {
        let latest = ledger
            .commands
            .iter()
            .rev()
            .find(|c| ledger.runs(c, wanted));
        match latest {
            Some(c) if c.passed() && ledger.fresh(c) => {}
            Some(c) if c.passed() => refused.push(format!(
                "the task's check `{wanted}` passed before {} changed; run it again",
                ledger
                    .stale_by(c.seq, Some(&c.command_run_id))
                    .unwrap_or_default()
            )),
            Some(c) => refused.push(format!(
                "the task's check `{wanted}` {} when it last ran ({COMMAND_RUN}{})",
                ended(c),
                c.command_run_id
            )),
            None => refused.push(match ledger.nearest(wanted) {
                Some((c, why)) => format!(
                    "the task's check `{wanted}` was not run in this attempt: `{}` ({COMMAND_RUN}{}) does not count as it: {why}; run the check (wrapping it is fine: `2>&1 | tail -30`, `timeout 600 …`, `-v`, `cd DIR &&` into the directory it names)",
                    c.command, c.command_run_id
                ),
                None => format!(
                    "the task's check `{wanted}` was not run in this attempt; run it (wrapping it is fine: `2>&1 | tail -30`, `timeout 600 …`, `-v`, `cd DIR &&` into the directory it names)"
                ),
            }),
        }
    }
}

/// Why a reported check does not count as passed, if it does not.
fn unpassed(spec: &TaskSpec, check: &crate::result::VerificationResult) -> Option<String> {
    let word = match check.status {
        VerificationStatus::Passed => return None,
        VerificationStatus::Skipped if spec.verification.fallback_allowed => return None,
        VerificationStatus::Skipped => "skipped (no fallback allowed)",
        VerificationStatus::Failed => "failed",
        VerificationStatus::Unknown => "unknown",
    };
    Some(format!("verification `{}` is {word}", check.name))
}

/// How a result recorded without a verdict (before airsd derived evidence) is checked:
/// by its own claims, as it was when it was recorded, so that a replay decides as the
/// run did.
pub fn check_recorded_claims(spec: &TaskSpec, result: &WorkerResult) -> Result<(), Vec<String>> {
    let mut reasons = Vec::new();
    for kind in required_evidence(spec, result) {
        let present = result
            .evidence_refs
            .iter()
            .any(|e| e.evidence_type == Some(kind));
        if !present {
            reasons.push(format!("missing {} evidence", kind.as_str()));
        }
    }
    if spec.verification.required {
        if result.verification.is_empty() {
            reasons.push("verification is required but no verification result was reported".into());
        }
        reasons.extend(result.verification.iter().filter_map(|c| unpassed(spec, c)));
        if !result.verification.is_empty()
            && !result
                .verification
                .iter()
                .any(|v| v.status == VerificationStatus::Passed)
        {
            reasons.push("no verification passed".into());
        }
    }
    if reasons.is_empty() {
        Ok(())
    } else {
        Err(reasons)
    }
}

/// Whether a failed result failed its build or tests (as opposed to giving up for
/// another reason).
pub fn failed_verification(result: &WorkerResult) -> Vec<String> {
    result
        .verification
        .iter()
        .filter(|v| v.status == VerificationStatus::Failed)
        .map(|v| v.name.clone())
        .collect()
}

#[cfg(test)]
mod tests;
