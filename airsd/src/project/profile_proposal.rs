//! The Main Agent's proposal of the project's profile (D-015, D-022, baseline §21):
//! from the project scan, what detection made of it and the text of the main build and
//! CI files, the Main Agent's model proposes the profile (origin `proposed`) for the
//! user to confirm or correct once.
//!
//! `airsd __propose --root DIR [--model M]`, run by `air init` and `air profile scan`
//! with the client's own environment (so its provider settings are the ones used). It
//! asks the worker binary which model the Main Agent talks to; without one it says so
//! and the profile stays what detection says. Otherwise it starts `air-worker` with
//! no project tools and a form whose every field is optional, read loosely: a field
//! the model leaves out or gets wrong is unknown (filled from detection when detection
//! knows it), never a reason to ask again. A confirmed profile is never replaced.

use std::path::{Path, PathBuf};
use std::time::Duration;

use air_proto::event::AgentType;
use air_proto::ipc::{
    AgentStart, ControlMessage, Direction, IpcBody, IpcHeader, IpcMessage, ModelChoice, ModelQuery,
};
use air_proto::layout::ProjectPaths;
use air_proto::project_profile::{ProfileOrigin, ProjectProfile, ProposalResult};
use serde::Serialize;

use crate::agents::supervisor::{Worker, WorkerCommand, WorkerEvent};
use crate::project::scan::Scan;

/// The hidden subcommand.
pub const ARG: &str = "__propose";
/// The agent's id (and its recording's name under `AIR_RECORD`).
pub const AGENT_ID: &str = "main-profile";
const PROMPT: &str = include_str!("../../../resources/prompts/project_profile.md");
/// Turns the agent has: one to answer, two more if it must be reminded of the form.
const TURNS: u32 = 3;
/// How long the whole proposal may take before it is given up.
const TIME_LIMIT: Duration = Duration::from_secs(120);
/// How much of one file, and of all files, the model is shown.
const FILE_CHARS: usize = 6_000;
const FILES_CHARS: usize = 30_000;
/// The reason of a proposal stopped by an interrupt.
const INTERRUPTED: &str = "interrupted";
/// How many extensions the scan's summary lists.
const EXTENSIONS_SHOWN: usize = 30;

/// How the proposal went.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// The profile was proposed and kept in `project.json`.
    Proposed,
    /// The user confirmed the profile already: nobody was asked.
    Kept,
    /// No model could be reached: the profile is what detection says.
    Skipped,
    /// The model was asked and no proposal came (the reason says why).
    Failed,
}

/// What `airsd __propose` prints.
#[derive(Debug, Serialize)]
pub struct Outcome {
    pub status: Status,
    /// `provider/model` asked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The project's profile now.
    pub profile: Option<ProjectProfile>,
    /// What was passed over in reading the proposal.
    pub notes: Vec<String>,
    /// The fields the proposal left unknown and detection filled.
    pub filled: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Tokens in and out, and the cost when known (millionths of a dollar).
    pub input_tokens: u64,
    pub output_tokens: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost_micro_usd: Option<u64>,
}

impl Outcome {
    fn new(status: Status, profile: Option<ProjectProfile>, reason: Option<String>) -> Outcome {
        Outcome {
            status,
            model: None,
            profile,
            notes: Vec::new(),
            filled: Vec::new(),
            reason,
            input_tokens: 0,
            output_tokens: 0,
            cost_micro_usd: None,
        }
    }
}

/// The scan as the model reads it.
pub fn scan_text(scan: &Scan) -> String {
    let mut out = format!(
        "{} files in {} directories{}.\n",
        scan.files,
        scan.dirs,
        if scan.complete {
            ""
        } else {
            " (the scan stopped at its time limit: counts are of what it reached)"
        }
    );
    let mut ext: Vec<(&String, &u64)> = scan.extensions.iter().collect();
    ext.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let shown: Vec<String> = ext
        .iter()
        .take(EXTENSIONS_SHOWN)
        .map(|(e, n)| {
            if e.is_empty() {
                format!("(no extension) {n}")
            } else {
                format!(".{e} {n}")
            }
        })
        .collect();
    if !shown.is_empty() {
        out.push_str(&format!("\nFiles by extension: {}", shown.join(", ")));
        if ext.len() > EXTENSIONS_SHOWN {
            out.push_str(&format!(", and {} more", ext.len() - EXTENSIONS_SHOWN));
        }
        out.push_str(".\n");
    }
    if !scan.top_level.is_empty() {
        let shown: Vec<&str> = scan
            .top_level
            .iter()
            .take(TOP_LEVEL_SHOWN)
            .map(String::as_str)
            .collect();
        out.push_str(&format!("\nAt the top: {}", shown.join(" ")));
        if scan.top_level.len() > TOP_LEVEL_SHOWN {
            out.push_str(&format!(
                " … and {} more",
                scan.top_level.len() - TOP_LEVEL_SHOWN
            ));
        }
        out.push('\n');
    }
    if !scan.special.is_empty() {
        out.push_str("\nSpecial files (shallowest first):\n");
        for (kind, found) in &scan.special {
            out.push_str(&format!("- {kind}: {}\n", found.join(", ")));
        }
    }
    if let Some(g) = &scan.git {
        let part = |label: &str, v: &Option<String>| v.as_ref().map(|v| format!("{label} {v}"));
        let said: Vec<String> = [
            part("branch", &g.branch),
            part("head", &g.head),
            part("committed", &g.head_time),
            part("origin", &g.remote),
        ]
        .into_iter()
        .flatten()
        .collect();
        out.push_str(&format!("\nGit: {}.\n", said.join(", ")));
    }
    out
}

/// The files at the top whose text says how a project is built and tested, in the
/// order they are shown (the budget may end before the last).
const BUILD_FILES: &[&str] = &[
    "CMakePresets.json",
    "CMakeLists.txt",
    "Makefile",
    "GNUmakefile",
    "meson.build",
    "Cargo.toml",
    "package.json",
    "pyproject.toml",
    "setup.py",
    "setup.cfg",
    "tox.ini",
    "go.mod",
    "pom.xml",
    "build.gradle",
    "build.gradle.kts",
    "BUILD.bazel",
    "WORKSPACE",
    "conanfile.txt",
    "conanfile.py",
    "vcpkg.json",
    "Gemfile",
];
const READMES: &[&str] = &["README.md", "README", "README.rst", "README.txt"];
/// Rules for contributors and agents, then the settings of tools.
const RULES_AND_SETTINGS: &[&str] = &[
    "AGENTS.md",
    "CLAUDE.md",
    "AIR.md",
    ".pre-commit-config.yaml",
    ".clang-tidy",
    ".clang-format",
    ".editorconfig",
];
/// Most entries of the top level listed.
const TOP_LEVEL_SHOWN: usize = 100;

/// The files whose text the model is shown, most telling first: the build files at
/// the top, the shallowest two CI files, the README, then rules and tool settings;
/// each a regular file inside the root, with its real path.
fn shown_files(root: &Path, scan: &Scan) -> Vec<(String, PathBuf)> {
    let at_top = |name: &str| scan.top_level.iter().any(|t| t == name);
    let mut names: Vec<String> = BUILD_FILES
        .iter()
        .filter(|n| at_top(n))
        .map(|n| n.to_string())
        .collect();
    names.extend(
        scan.special
            .get("ci")
            .into_iter()
            .flatten()
            .take(2)
            .cloned(),
    );
    names.extend(READMES.iter().find(|n| at_top(n)).map(|n| n.to_string()));
    names.extend(
        RULES_AND_SETTINGS
            .iter()
            .filter(|n| at_top(n))
            .map(|n| n.to_string()),
    );
    let Ok(real_root) = root.canonicalize() else {
        return Vec::new();
    };
    names
        .into_iter()
        .filter_map(|n| {
            let path = regular_inside(root, &real_root, &n)?;
            Some((n, path))
        })
        .collect()
}

/// `rel`'s real path when it is a regular file (not a link) inside `root` (whose real
/// path is `real_root`).
fn regular_inside(root: &Path, real_root: &Path, rel: &str) -> Option<PathBuf> {
    let path = root.join(rel);
    let meta = std::fs::symlink_metadata(&path).ok()?;
    if !meta.file_type().is_file() {
        return None;
    }
    let real = path.canonicalize().ok()?;
    real.starts_with(real_root).then_some(real)
}

/// The start of a file as text, or `None` for a binary one.
fn head_of(path: &Path, chars: usize) -> Option<(String, bool)> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    // Not through a link put there since it was checked, and never waiting on a pipe.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags((nix::fcntl::OFlag::O_NOFOLLOW | nix::fcntl::OFlag::O_NONBLOCK).bits())
        .open(path)
        .ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut bytes = Vec::new();
    file.take((chars * 4) as u64 + 1)
        .read_to_end(&mut bytes)
        .ok()?;
    if bytes.contains(&0) {
        return None;
    }
    let text = String::from_utf8_lossy(&bytes);
    let cut = text.chars().count() > chars;
    Some((text.chars().take(chars).collect(), cut))
}

/// The agent's one message: the scan, detection's profile and the files.
pub fn request_text(root: &Path, scan: &Scan, detected: &ProjectProfile) -> String {
    let mut out = format!(
        "Propose the profile of this project.\n\n## The scan\n\n{}\n## What detection says\n\n",
        scan_text(scan)
    );
    for l in detected.lines() {
        out.push_str(&format!("    {l}\n"));
    }
    let mut left = FILES_CHARS;
    let mut files = String::new();
    for (name, path) in shown_files(root, scan) {
        if left < 200 {
            files.push_str(&format!("\n(more files not shown: {name} …)\n"));
            break;
        }
        let Some((text, cut)) = head_of(&path, FILE_CHARS.min(left)) else {
            continue;
        };
        left = left.saturating_sub(text.chars().count());
        files.push_str(&format!(
            "\n### {name}{}\n\n````\n{}\n````\n",
            if cut { " (its start)" } else { "" },
            text.trim_end()
        ));
    }
    if !files.is_empty() {
        out.push_str("\n## Files\n");
        out.push_str(&files);
    }
    out
}

/// The worker's stderr file, removed when the worker wrote nothing to it.
struct KeptIfWritten(PathBuf);

impl Drop for KeptIfWritten {
    fn drop(&mut self) {
        if std::fs::metadata(&self.0).is_ok_and(|m| m.len() == 0) {
            let _ = std::fs::remove_file(&self.0);
        }
    }
}

/// Why no model was asked.
enum NoModel {
    /// None is configured (and none was named): nothing to ask.
    NoneConfigured(String),
    /// One was named, or the asking itself failed.
    Failed(String),
}

/// Asks the worker binary for the Main Agent's model.
async fn model(worker: &WorkerCommand, flag: Option<String>) -> Result<ModelChoice, NoModel> {
    let named = flag.is_some();
    let query = ModelQuery {
        agent_type: AgentType::Main,
        flag,
        task: None,
        replay: None,
    };
    let mut replies = crate::agents::models::ask(worker, &[query])
        .await
        .map_err(NoModel::Failed)?;
    let reply = replies
        .pop()
        .ok_or_else(|| NoModel::Failed("the worker gave no answer".into()))?;
    match (reply.resolved, reply.error) {
        (Some(c), None) => Ok(c),
        (_, Some(e)) if !named && e.starts_with(air_proto::models::NO_PROVIDER) => {
            Err(NoModel::NoneConfigured(e))
        }
        (_, Some(e)) => Err(NoModel::Failed(e)),
        (None, None) => Err(NoModel::Failed(
            "the worker gave neither a model nor an error".into(),
        )),
    }
}

/// Proposes the profile of the project at `paths` and keeps it, unless the user
/// confirmed one. `worker` is how the agent is started; `flag` a `--model`; `asking`
/// is told the model just before it is asked; a word on `stop` (an interrupt, the
/// client gone) stops it all (the agent killed, nothing kept).
pub async fn propose(
    paths: &ProjectPaths,
    worker: &WorkerCommand,
    flag: Option<String>,
    asking: impl FnOnce(&str),
    stop: &mut tokio::sync::mpsc::Receiver<()>,
) -> Outcome {
    let (project_id, current) = match paths.read_project() {
        Ok(p) => (p.project_id, p.profile),
        Err(e) => return Outcome::new(Status::Failed, None, Some(e.to_string())),
    };
    if current
        .as_ref()
        .is_some_and(|p| p.origin == ProfileOrigin::Confirmed)
    {
        return Outcome::new(
            Status::Kept,
            current,
            Some("the profile is confirmed: `air profile reset` drops it".into()),
        );
    }
    let scan = match crate::project::scan::last(paths) {
        Some(s) => s,
        None => match crate::project::scan::scan_project(paths) {
            Ok(s) => s,
            Err(e) => return Outcome::new(Status::Failed, current, Some(e.to_string())),
        },
    };
    let choice = tokio::select! {
        c = model(worker, flag.clone()) => c,
        _ = stop.recv() => Err(NoModel::Failed(INTERRUPTED.into())),
    };
    let choice = match choice {
        Ok(c) => c,
        Err(NoModel::NoneConfigured(e)) => return Outcome::new(Status::Skipped, current, Some(e)),
        Err(NoModel::Failed(e)) => return Outcome::new(Status::Failed, current, Some(e)),
    };
    let model_id = format!("{}/{}", choice.provider, choice.model);
    asking(&model_id);
    let detected = crate::project::project_profile::detect(paths.root(), &scan);
    let text = request_text(paths.root(), &scan, &detected);
    let (mut outcome, result) =
        run_agent(paths, &project_id, worker, flag, choice, &text, stop).await;
    outcome.model = Some(model_id);
    outcome.profile = current;
    let Some(result) = result else {
        outcome.status = Status::Failed;
        return outcome;
    };
    if result.is_empty() {
        outcome.status = Status::Failed;
        outcome.notes = result.notes;
        outcome.reason = Some("the model proposed no field of the profile".into());
        return outcome;
    }
    let ProposalResult {
        mut profile, notes, ..
    } = result;
    outcome.notes = notes;
    outcome.filled = profile
        .fill_from(&detected)
        .into_iter()
        .map(str::to_string)
        .collect();
    // Under the project's lock: the user may have confirmed one meanwhile.
    let mut confirmed = false;
    let written = paths.update_project(|project| {
        confirmed = project
            .profile
            .as_ref()
            .is_some_and(|p| p.origin == ProfileOrigin::Confirmed);
        if !confirmed {
            project.profile = Some(profile);
        }
        !confirmed
    });
    let project = match written {
        Ok(p) => p,
        Err(e) => {
            outcome.status = Status::Failed;
            outcome.reason = Some(e.to_string());
            return outcome;
        }
    };
    if confirmed {
        outcome.status = Status::Kept;
        outcome.profile = project.profile;
        outcome.reason = Some("the profile was confirmed meanwhile".into());
        return outcome;
    }
    outcome.status = Status::Proposed;
    outcome.profile = project.profile;
    outcome
}

/// Runs the agent to its result: the outcome's usage and reason, and the proposal.
async fn run_agent(
    paths: &ProjectPaths,
    project_id: &str,
    worker: &WorkerCommand,
    flag: Option<String>,
    choice: ModelChoice,
    text: &str,
    stop: &mut tokio::sync::mpsc::Receiver<()>,
) -> (Outcome, Option<ProposalResult>) {
    let mut outcome = Outcome::new(Status::Failed, None, None);
    let model_id = format!("{}/{}", choice.provider, choice.model);
    let budget = crate::context::budget(
        choice.context_window,
        choice.max_output,
        choice.thinking_budget,
    );
    let context = crate::context::side_context(
        vec![PROMPT.trim().to_string()],
        &[("role", PROMPT), ("scan", text)],
        air_proto::context::ContextPurpose::ProjectProfile,
        budget,
        &model_id,
    );
    let mut spec = air_proto::conversation::turn_spec(
        0,
        "Propose the project's profile",
        "Propose the project's profile from its scan.",
        None,
        &[],
    );
    spec.id = air_proto::project_profile::PROPOSAL_TASK.to_string();
    spec.output_contract = air_proto::task::OutputContract::ProjectProfile;
    spec.constraints.max_turns = TURNS;
    let session_id = format!("profile-{}", air_proto::ids::new_id());
    let start = AgentStart {
        version: 1,
        task_spec: spec,
        context_pack: air_proto::context::ContextPack {
            assembled: Some(Box::new(context)),
            ..Default::default()
        },
        runtime: air_proto::context::AgentRuntimeContext {
            session_id: session_id.clone(),
            project_id: project_id.to_string(),
            agent_id: AGENT_ID.to_string(),
            worktree_path: None,
            permission_template: air_proto::context::PermissionTemplate::System,
            agent_type: Some(AgentType::Main),
            attempt: None,
            heartbeat_interval_ms: Some(5_000),
            model: flag,
            resolved: Some(choice),
            record: None,
            replay: None,
        },
        tools: Vec::new(),
    };
    let message = IpcMessage {
        header: IpcHeader::new(Direction::ParentToWorker, &session_id, AGENT_ID),
        body: IpcBody::Control(ControlMessage::Start(Box::new(start))),
    };
    let stderr = paths.logs().join(format!("{AGENT_ID}.stderr"));
    let (tx, mut rx) = tokio::sync::mpsc::channel(256);
    let agent = match Worker::spawn(worker, paths.root(), &stderr, &message, tx) {
        Ok(w) => w,
        Err(e) => {
            outcome.reason = Some(format!("the Main Agent could not start: {e}"));
            return (outcome, None);
        }
    };
    let _stderr_kept = KeptIfWritten(stderr.clone());
    let deadline = tokio::time::sleep(TIME_LIMIT);
    tokio::pin!(deadline);
    let mut result = None;
    let mut last_error = None;
    loop {
        let event = tokio::select! {
            e = rx.recv() => e,
            _ = &mut deadline => {
                agent.kill();
                outcome.reason = Some(format!("no proposal within {} s", TIME_LIMIT.as_secs()));
                return (outcome, None);
            }
            _ = stop.recv() => {
                agent.kill();
                outcome.reason = Some(INTERRUPTED.into());
                return (outcome, None);
            }
        };
        let Some(event) = event else { break };
        match event {
            WorkerEvent::Message { message, .. } => match message.body {
                IpcBody::Event(e)
                    if e.event_type == air_proto::events::AssistantMessageCreated::TYPE =>
                {
                    let usage =
                        serde_json::from_value::<air_proto::payload::MessageCreated>(e.payload)
                            .ok()
                            .and_then(|m| m.usage);
                    if let Some(u) = usage {
                        outcome.input_tokens += u.input_tokens;
                        outcome.output_tokens += u.output_tokens;
                        if let Some(c) = u.cost_micro_usd {
                            *outcome.cost_micro_usd.get_or_insert(0) += c;
                        }
                    }
                }
                IpcBody::ToolCall(call) => {
                    agent.reply(
                        &message.header,
                        IpcBody::ToolResult(crate::agents::supervisor::not_its_tool(&call)),
                    );
                }
                IpcBody::Log(record) if matches!(record.level, air_proto::ipc::LogLevel::Error) => {
                    last_error = Some(record.message);
                }
                IpcBody::WorkerResult(r) => result = Some(r),
                _ => {}
            },
            WorkerEvent::ProtocolViolation { error, .. } => {
                last_error = Some(format!("protocol error: {}", error.message));
            }
            WorkerEvent::Exited { exit, .. } => {
                if result.is_none() {
                    outcome.reason = Some(match last_error.take() {
                        Some(e) => format!("the Main Agent ended ({exit}): {e}"),
                        None if std::fs::metadata(&stderr).is_ok_and(|m| m.len() > 0) => {
                            format!(
                                "the Main Agent ended ({exit}) without a proposal; what it said on stderr is in {}",
                                stderr.display()
                            )
                        }
                        None => format!("the Main Agent ended ({exit}) without a proposal"),
                    });
                }
                break;
            }
        }
    }
    let Some(r) = result else {
        return (outcome, None);
    };
    if r.status != air_proto::result::WorkerStatus::Completed {
        outcome.reason = Some(r.summary);
        return (outcome, None);
    }
    match serde_json::from_value::<ProposalResult>(r.result) {
        Ok(p) => (outcome, Some(p)),
        Err(e) => {
            outcome.reason = Some(format!("the Main Agent's result is not a proposal: {e}"));
            (outcome, None)
        }
    }
}

/// `airsd __propose --root DIR [--model M]`: proposes, keeps, prints the outcome as
/// JSON (exit 0 whatever the outcome: its `status` says). `worker` is how agents are
/// started, as the daemon would.
pub fn main(args: &[std::ffi::OsString], worker: &WorkerCommand) -> i32 {
    const USAGE: &str = "--root DIR [--model PROVIDER/MODEL] [--until-stdin-closes]";
    let mut root = None;
    let mut flag = None;
    let mut watch_stdin = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.to_str() {
            Some("--root") => root = it.next().map(PathBuf::from),
            Some("--model") => flag = it.next().map(|v| v.to_string_lossy().into_owned()),
            // The client's pipe: closed when the client is gone (killed, not only
            // interrupted at a terminal), which stops the proposal.
            Some("--until-stdin-closes") => watch_stdin = true,
            _ => {
                eprintln!(
                    "airsd {ARG}: unknown argument `{}` (usage: airsd {ARG} {USAGE})",
                    a.to_string_lossy()
                );
                return 2;
            }
        }
    }
    let Some(root) = root else {
        eprintln!("airsd {ARG}: --root DIR is needed (usage: airsd {ARG} {USAGE})");
        return 2;
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("airsd {ARG}: cannot start the runtime: {e}");
            return 1;
        }
    };
    let paths = ProjectPaths::new(root);
    let outcome = runtime.block_on(async {
        // Taken first: an interrupt from now on stops the proposal, not the process.
        let mut sigint =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt()) {
                Ok(s) => s,
                Err(e) => {
                    return Outcome::new(
                        Status::Failed,
                        None,
                        Some(format!("cannot handle interrupts: {e}")),
                    )
                }
            };
        let (tx, mut stop) = tokio::sync::mpsc::channel(2);
        let interrupted = tx.clone();
        tokio::spawn(async move {
            if sigint.recv().await.is_some() {
                let _ = interrupted.send(()).await;
            }
        });
        if watch_stdin {
            // A thread of its own: reading stdin blocks.
            std::thread::spawn(move || {
                use std::io::Read;
                let mut buf = [0u8; 64];
                let mut stdin = std::io::stdin();
                while matches!(stdin.read(&mut buf), Ok(n) if n > 0) {}
                let _ = tx.blocking_send(());
            });
        }
        propose(
            &paths,
            worker,
            flag,
            |model| {
                eprintln!(
                    "asking {model} to propose the project's profile (Ctrl-C stops it; `air profile scan` asks again)…"
                );
            },
            &mut stop,
        )
        .await
    });
    crate::answer_json(Ok::<_, String>(outcome))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_request_holds_the_scan_detection_and_the_files_inside_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for f in [
            "src/a.cpp",
            "src/b.cpp",
            "tests/t.cpp",
            ".github/workflows/ci.yml",
        ] {
            crate::project::scan::tests::touch(root, f);
        }
        std::fs::write(
            root.join("CMakeLists.txt"),
            "project(demo CXX)\nadd_executable(demo src/a.cpp)\n",
        )
        .unwrap();
        std::fs::write(root.join("README.md"), "x".repeat(FILE_CHARS + 10)).unwrap();
        // A build file that leads outside the project is not read.
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "TOPSECRET").unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), root.join("Makefile")).unwrap();
        let (scan, _) =
            crate::project::scan::scan(root, &Default::default(), crate::project::scan::TIME_LIMIT);
        let detected = crate::project::project_profile::detect(root, &scan);
        let text = request_text(root, &scan, &detected);
        assert!(text.contains(&format!("{} files in", scan.files)), "{text}");
        assert!(text.contains("Files by extension: .cpp 3"), "{text}");
        assert!(
            text.contains("- CMakeLists.txt: CMakeLists.txt\n"),
            "{text}"
        );
        assert!(text.contains("    languages    C++\n"), "{text}");
        assert!(
            text.contains("### CMakeLists.txt\n\n````\nproject(demo CXX)"),
            "{text}"
        );
        assert!(text.contains("### .github/workflows/ci.yml\n"), "{text}");
        assert!(text.contains("### README.md (its start)\n"), "{text}");
        assert!(!text.contains("TOPSECRET"), "{text}");
        assert!(text.len() < FILES_CHARS + 4_000, "{}", text.len());
    }
}
