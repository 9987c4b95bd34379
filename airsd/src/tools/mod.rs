//! Tools agents call through airsd (`tool.call`). Every effect an agent has on the
//! project is one of these, checked and recorded by airsd: the agent's whitelist
//! (seed 001 §4), the input against the tool's schema (the error names the field),
//! then the tool itself.

pub mod command;
pub mod editor;
pub mod error;
#[cfg(test)]
mod escapes;
pub mod exec;
pub mod fs;
pub mod git;
pub mod guard;
pub use crate::opened;
pub mod permission;
pub mod render;
pub mod scope;
pub mod search;
pub mod secrets;
pub mod todo;

use air_proto::event::AgentType;
use air_proto::tool::{PathPolicy, ToolCategory, ToolDefinition, ToolPermissions};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

pub use error::ToolError;
pub use fs::{FsContext, ReadLedger};

/// A tool's name as offered to an LLM provider (`^[a-zA-Z0-9_-]{1,64}$`): `fs.read`
/// goes out as `fs_read`.
pub fn provider_name(name: &str) -> String {
    name.replace('.', "_")
}

/// The tool a provider-side name stands for.
pub fn from_provider_name(name: &str) -> Option<&'static str> {
    TOOLS
        .iter()
        .map(|t| t.name)
        .find(|t| provider_name(t) == name)
}

/// What a tool does to the machine, for the agents' whitelists.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Read,
    Write,
    /// Runs a command (`shell.run`).
    Run,
    /// Keeps the agent's own list of its steps: no effect on the machine, for the
    /// roles whose tasks take many steps (executor, debugger).
    Todo,
}

struct Tool {
    name: &'static str,
    description: &'static str,
    category: ToolCategory,
    kind: Kind,
    input: fn() -> Value,
    output: fn() -> Value,
    /// The language profile whose tool it is (offered when the project or the task
    /// calls for that language), or none: offered always.
    profile: Option<&'static str>,
}

fn schema<T: schemars::JsonSchema>() -> Value {
    schemars::schema_for!(T).to_value()
}

/// An input schema as the model reads it: compacted.
fn input_schema<T: schemars::JsonSchema>() -> Value {
    let mut s = schema::<T>();
    air_proto::tool::compact_schema(&mut s);
    s
}

const TOOLS: &[Tool] = &[
    Tool {
        name: "fs.read",
        description: "Read a text file (regular files only; binary files are refused, a directory is listed with fs_glob). Lines come as `NUMBER<TAB>text`; the number and the tab are not in the file (leave them out of an edit's old_string). Up to 2,000 lines from `offset`. A file must be read before it is edited or replaced, and again after it changed. Read related files together, in one turn.",
        category: ToolCategory::Filesystem,
        kind: Kind::Read,
        input: input_schema::<fs::ReadInput>,
        output: schema::<fs::ReadOutput>,
        profile: None,
    },
    Tool {
        name: "fs.glob",
        description: "Find files by a glob such as `src/**/*.py`, newest first; what .gitignore excludes, hidden files and .git are skipped.",
        category: ToolCategory::Filesystem,
        kind: Kind::Read,
        input: input_schema::<search::GlobInput>,
        output: schema::<search::GlobOutput>,
        profile: None,
    },
    Tool {
        name: "fs.grep",
        description: "Search file contents with a regular expression (ripgrep's syntax), respecting .gitignore and skipping binary files: the files that match, the matching lines, or counts. Prefer it to grep in shell_run.",
        category: ToolCategory::Filesystem,
        kind: Kind::Read,
        input: input_schema::<search::GrepInput>,
        output: schema::<search::GrepOutput>,
        profile: None,
    },
    Tool {
        name: "git.status",
        description: "The branch, and the changed and untracked files as `git status --porcelain` lines.",
        category: ToolCategory::Project,
        kind: Kind::Read,
        input: input_schema::<git::StatusInput>,
        output: schema::<git::StatusOutput>,
        profile: None,
    },
    Tool {
        name: "git.diff",
        description: "The working tree's diff (the index's with `staged`, or against a revision with `base`), new untracked files shown as added; optionally for some paths only.",
        category: ToolCategory::Project,
        kind: Kind::Read,
        input: input_schema::<git::DiffInput>,
        output: schema::<git::DiffOutput>,
        profile: None,
    },
    Tool {
        name: "fs.write",
        description: "Create a file, or replace all of an existing one (read it first); for changes to an existing file prefer fs_edit. Writes outside the allowed paths, into .git, into air's .air/ or to credentials are refused or asked of a person.",
        category: ToolCategory::Filesystem,
        kind: Kind::Write,
        input: input_schema::<fs::WriteInput>,
        output: schema::<fs::WriteOutput>,
        profile: None,
    },
    Tool {
        name: "fs.edit",
        description: "Replace an exact string in a file: old_string must match the file byte for byte (indentation included, no line-number prefix) and occur once, unless replace_all. The file must have been read, and not changed since. Answers with the diff, so the file need not be read again. Path rules as for fs_write.",
        category: ToolCategory::Filesystem,
        kind: Kind::Write,
        input: input_schema::<fs::EditInput>,
        output: schema::<fs::EditOutput>,
        profile: None,
    },
    Tool {
        name: "fs.multi_edit",
        description: "Several fs_edit replacements in one file, applied in order, all or none; answers with the diff.",
        category: ToolCategory::Filesystem,
        kind: Kind::Write,
        input: input_schema::<fs::MultiEditInput>,
        output: schema::<fs::EditOutput>,
        profile: None,
    },
    Tool {
        name: "shell.run",
        description: "Run a command in a fresh non-interactive bash (`bash -o pipefail -c`: a pipeline fails when any part fails), in the project root or `cwd`; nothing carries over between calls, stdin is empty. The answer starts with the exit code and the command_run_id (a check's evidence), then stdout and stderr, each cut to its first and last 16 KiB when longer (shell_output reads the rest). Timeout 2 minutes, at most 10. Writes outside the project and the temporary directories, into .git, or reads of credentials are refused or asked of a person. Edit files with fs_edit and fs_write, not the shell: shell edits skip the read-before-edit check.",
        category: ToolCategory::Shell,
        kind: Kind::Run,
        input: input_schema::<exec::RunInput>,
        output: schema::<exec::RunOutput>,
        profile: None,
    },
    Tool {
        name: "shell.output",
        description: "Read a page of a command's kept stdout or stderr, by its command_run_id, from a byte offset.",
        category: ToolCategory::Shell,
        kind: Kind::Read,
        input: input_schema::<exec::OutputInput>,
        output: schema::<exec::OutputOutput>,
        profile: None,
    },
    Tool {
        name: "shell.stop",
        description: "End a `background: true` command of yours; answers how it ended.",
        category: ToolCategory::Shell,
        kind: Kind::Run,
        input: input_schema::<exec::StopInput>,
        output: schema::<exec::RunOutput>,
        profile: None,
    },
    Tool {
        name: "todo.write",
        description: "Your todo list for work of several steps, whole each call; people watching see it.",
        category: ToolCategory::Project,
        kind: Kind::Todo,
        input: input_schema::<todo::TodoInput>,
        output: schema::<todo::TodoOutput>,
        profile: None,
    },
    Tool {
        name: "cpp.build",
        description: "Build C/C++ with CMake (Ninja, else Make; compile_commands.json; a stale build dir repaired) or a Makefile: pass or fail, each compiler and linker error parsed. Both: the profile's, else ask the user.",
        category: ToolCategory::Build,
        kind: Kind::Run,
        input: input_schema::<crate::profiles::cpp::tools::BuildInput>,
        output: schema::<crate::profiles::cpp::tools::BuildOutput>,
        profile: Some("cpp"),
    },
    Tool {
        name: "cpp.test",
        description: "Run the tests (CTest, a GoogleTest binary, or `make test`/`check`): counts, each failure with file and line. No test run is no pass.",
        category: ToolCategory::Test,
        kind: Kind::Run,
        input: input_schema::<crate::profiles::cpp::tools::TestInput>,
        output: schema::<crate::profiles::cpp::tools::TestOutput>,
        profile: Some("cpp"),
    },
    Tool {
        name: "cpp.analyze",
        description: "cppcheck (and clang-tidy if installed) over the files (default: this task's); findings the last commit already had do not count. Silence a false finding: `// cppcheck-suppress ID`.",
        category: ToolCategory::StaticAnalysis,
        kind: Kind::Run,
        input: input_schema::<crate::profiles::cpp::tools::AnalyzeInput>,
        output: schema::<crate::profiles::cpp::tools::AnalyzeOutput>,
        profile: Some("cpp"),
    },
    Tool {
        name: "cpp.intelligence",
        description: "clangd --check of one file: its diagnostics, and whether its compile flags were found.",
        category: ToolCategory::StaticAnalysis,
        kind: Kind::Run,
        input: input_schema::<crate::profiles::cpp::tools::IntelligenceInput>,
        output: schema::<crate::profiles::cpp::tools::IntelligenceOutput>,
        profile: Some("cpp"),
    },
    Tool {
        name: "cpp.diagnose",
        description: "Parse a command's compiler and linker output (by command_run_id, or text): file, line, severity, signature.",
        category: ToolCategory::Debug,
        kind: Kind::Read,
        input: input_schema::<crate::profiles::cpp::tools::DiagnoseInput>,
        output: schema::<crate::profiles::cpp::tools::DiagnoseOutput>,
        profile: Some("cpp"),
    },
];

/// The tools that change a file, which their output's `path` names.
pub const WRITE_TOOLS: [&str; 3] = ["fs.write", "fs.edit", "fs.multi_edit"];

/// Whether a tool has no effect on the machine (a read, or the agent's todo list).
pub fn reads_only(tool: &str) -> bool {
    TOOLS
        .iter()
        .any(|t| t.name == tool && matches!(t.kind, Kind::Read | Kind::Todo))
}

/// Checks a tool's output against its published output schema (D-044: outputs are
/// validated as inputs are), naming the JSON path of the first mismatch.
pub fn validate_output(tool: &str, output: &Value) -> Result<(), ToolError> {
    static VALIDATORS: std::sync::OnceLock<Vec<(&'static str, Option<jsonschema::Validator>)>> =
        std::sync::OnceLock::new();
    let validators = VALIDATORS.get_or_init(|| {
        TOOLS
            .iter()
            .map(|t| (t.name, jsonschema::validator_for(&(t.output)()).ok()))
            .collect()
    });
    let Some((_, validator)) = validators.iter().find(|(n, _)| *n == tool) else {
        return Err(ToolError(format!("no tool `{tool}`")));
    };
    let Some(validator) = validator else {
        return Err(ToolError(format!(
            "`{tool}`: its output schema does not compile"
        )));
    };
    match validator.iter_errors(output).next() {
        None => Ok(()),
        Some(e) => Err(ToolError(format!(
            "`{tool}` produced output that does not match its schema at `{}`: {e}",
            e.instance_path()
        ))),
    }
}

/// Every tool's definition (D-044), with schemas generated from the Rust types.
pub fn definitions() -> Vec<ToolDefinition> {
    TOOLS
        .iter()
        .map(|t| ToolDefinition {
            name: t.name.to_string(),
            version: 1,
            description: t.description.to_string(),
            input_schema: (t.input)(),
            output_schema: (t.output)(),
            category: t.category,
            permissions: ToolPermissions {
                read_paths: Some(PathPolicy::Anywhere),
                write_paths: matches!(t.kind, Kind::Write | Kind::Run)
                    .then_some(PathPolicy::Anywhere),
                execute: (t.kind == Kind::Run).then_some(true),
                network: (t.kind == Kind::Run).then_some(true),
                ..ToolPermissions::default()
            },
            streaming: t.kind == Kind::Run,
        })
        .collect()
}

/// The tools offered to an agent of this type: its whitelist. A debugger is offered
/// its fixing tools too; airsd refuses them until its evidence is recorded, and says
/// so.
pub fn offered(agent: AgentType) -> Vec<ToolDefinition> {
    offered_for(agent, &[])
}

/// Tools that read findings, which are the debugger's and the reviewer's: an
/// executor reads its build's findings in `cpp_build`'s answer (and its first request
/// stays within its budget). It may still call them.
const DIAGNOSIS: &[&str] = &["cpp.intelligence", "cpp.diagnose"];

/// [`offered`], with the tools of these language profiles (`cpp`) too.
pub fn offered_for(agent: AgentType, profiles: &[&str]) -> Vec<ToolDefinition> {
    definitions()
        .into_iter()
        .filter(|d| allowed_with(agent, &d.name, true).is_ok())
        .filter(|d| agent != AgentType::Executor || !DIAGNOSIS.contains(&d.name.as_str()))
        .filter(|d| {
            TOOLS
                .iter()
                .find(|t| t.name == d.name)
                .and_then(|t| t.profile)
                .is_none_or(|p| profiles.contains(&p))
        })
        .collect()
}

/// Whether an agent of this type may call this tool at all (seed 001 §4: the
/// reviewer and the architecture designer are read-only; the debugger reads and runs
/// diagnostic commands, which may not write, until airsd has recorded its evidence).
pub fn allowed(agent: AgentType, tool: &str) -> Result<(), ToolError> {
    allowed_with(agent, tool, false)
}

/// [`allowed`], knowing whether airsd has recorded the (debugging) agent's evidence.
pub fn allowed_with(agent: AgentType, tool: &str, evidence: bool) -> Result<(), ToolError> {
    let Some(t) = TOOLS.iter().find(|t| t.name == tool) else {
        return Err(ToolError(format!(
            "no tool `{}`; the tools are {}",
            provider_name(tool),
            TOOLS
                .iter()
                .map(|t| provider_name(t.name))
                .collect::<Vec<_>>()
                .join(", ")
        )));
    };
    let refused = match t.kind {
        Kind::Read => false,
        Kind::Todo => !matches!(agent, AgentType::Executor | AgentType::Debugger),
        Kind::Write => match agent {
            AgentType::Reviewer
            | AgentType::ArchitectureDesigner
            | AgentType::Main
            | AgentType::Compactor
            | AgentType::ExperienceMiner => true,
            AgentType::Debugger => !evidence,
            _ => false,
        },
        Kind::Run => matches!(
            agent,
            AgentType::Reviewer
                | AgentType::ArchitectureDesigner
                | AgentType::Main
                | AgentType::Compactor
                | AgentType::ExperienceMiner
        ),
    };
    let shown = provider_name(tool);
    if refused && agent == AgentType::Debugger {
        return Err(ToolError(format!(
            "`{shown}` is not allowed for a debugger yet: it fixes only after airsd has recorded its evidence (run the failing check with shell_run, or read the code involved, first)"
        )));
    }
    if refused && agent == AgentType::Main {
        return Err(ToolError(format!(
            "`{shown}` is not allowed for the main agent: it reads and delegates; changes and commands are an executor's work"
        )));
    }
    if refused && t.kind == Kind::Todo {
        return Err(ToolError(format!(
            "`{shown}` is an executor's and a debugger's: a {} has no task of steps to list",
            agent.as_str()
        )));
    }
    if refused {
        return Err(ToolError(format!(
            "`{shown}` is not allowed for a {}: its tools are read-only",
            agent.as_str()
        )));
    }
    Ok(())
}

/// Reads a tool's input; the error names the field.
pub fn input<T: DeserializeOwned>(tool: &str, value: Value) -> Result<T, ToolError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        ToolError(format!(
            "invalid input for `{}` at `{path}`: {}",
            provider_name(tool),
            e.inner()
        ))
    })
}

fn output<T: Serialize>(value: Result<T, ToolError>) -> Result<Value, ToolError> {
    serde_json::to_value(value?).map_err(|e| ToolError(format!("cannot encode the output: {e}")))
}

/// Runs a tool for an agent (blocking file system work: call it off the async threads).
pub fn call(
    ctx: &FsContext<'_>,
    agent: AgentType,
    tool: &str,
    args: Value,
) -> Result<Value, ToolError> {
    allowed_with(agent, tool, ctx.perm.evidence)?;
    match tool {
        "fs.read" => output(fs::read(ctx, &input(tool, args)?)),
        "fs.glob" => output(search::glob(ctx, &input(tool, args)?)),
        "fs.grep" => output(search::grep(ctx, &input(tool, args)?)),
        "git.status" => output(git::status(ctx, &input(tool, args)?)),
        "git.diff" => output(git::diff(ctx, &input(tool, args)?)),
        "fs.write" => output(fs::write(ctx, &input(tool, args)?)),
        "fs.edit" => output(fs::edit(ctx, &input(tool, args)?)),
        "fs.multi_edit" => output(fs::multi_edit(ctx, &input(tool, args)?)),
        "todo.write" => output(todo::write(&input(tool, args)?)),
        "shell.run" | "shell.output" | "shell.stop" => Err(ToolError(format!(
            "{} runs beside the scheduler; it is not a blocking tool",
            provider_name(tool)
        ))),
        other => Err(ToolError(format!("no tool `{}`", provider_name(other)))),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn provider_names_fit_the_providers_rule() {
        for d in definitions() {
            let name = provider_name(&d.name);
            assert!(
                !name.is_empty()
                    && name.len() <= 64
                    && name
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
                "{name}"
            );
            assert_eq!(from_provider_name(&name), Some(d.name.as_str()));
            assert_eq!(d.input_schema["type"], "object", "{}", d.name);
        }
    }

    /// The model is told what each parameter is: every property of every tool's
    /// input schema (nested ones included) has a description.
    #[test]
    fn every_parameter_is_described() {
        let missing: Vec<String> = definitions()
            .iter()
            .flat_map(|d| {
                air_proto::tool::undescribed(&d.input_schema)
                    .into_iter()
                    .map(move |p| format!("{}: {p}", d.name))
            })
            .collect();
        assert!(missing.is_empty(), "undescribed parameters: {missing:?}");
    }

    #[test]
    fn outputs_are_checked_against_their_schemas() {
        for d in definitions() {
            assert!(
                jsonschema::validator_for(&d.output_schema).is_ok(),
                "{}",
                d.name
            );
        }
        let good = serde_json::json!({"path": "a", "created": true, "bytes": 1});
        assert!(validate_output("fs.write", &good).is_ok());
        let bad = serde_json::json!({"path": "a", "created": "yes", "bytes": 1});
        let e = validate_output("fs.write", &bad).unwrap_err();
        assert!(e.0.contains("at `/created`"), "{e}");
    }

    #[test]
    fn each_agent_is_offered_its_whitelist() {
        let names = |a| offered(a).into_iter().map(|d| d.name).collect::<Vec<_>>();
        let always = TOOLS.iter().filter(|t| t.profile.is_none()).count();
        assert_eq!(names(AgentType::Executor).len(), always);
        assert_eq!(
            names(AgentType::Reviewer),
            [
                "fs.read",
                "fs.glob",
                "fs.grep",
                "git.status",
                "git.diff",
                "shell.output"
            ]
        );
        assert_eq!(
            names(AgentType::ArchitectureDesigner),
            names(AgentType::Reviewer)
        );
        assert_eq!(names(AgentType::Debugger).len(), always);
        // A language's tools when the project calls for it; read-only ones for the
        // reviewer.
        let cpp = |a| {
            offered_for(a, &["cpp"])
                .into_iter()
                .map(|d| d.name)
                .filter(|n| n.starts_with("cpp."))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            cpp(AgentType::Debugger),
            [
                "cpp.build",
                "cpp.test",
                "cpp.analyze",
                "cpp.intelligence",
                "cpp.diagnose"
            ]
        );
        assert_eq!(
            cpp(AgentType::Executor),
            ["cpp.build", "cpp.test", "cpp.analyze"]
        );
        assert_eq!(cpp(AgentType::Reviewer), ["cpp.diagnose"]);
    }

    #[test]
    fn the_debugger_fixes_only_after_its_evidence() {
        let before = allowed_with(AgentType::Debugger, "fs.edit", false).unwrap_err();
        assert!(
            before.0.contains("after airsd has recorded its evidence"),
            "{before}"
        );
        assert!(allowed_with(AgentType::Debugger, "fs.edit", true).is_ok());
        assert!(allowed_with(AgentType::Debugger, "shell.run", false).is_ok());
        assert!(allowed_with(AgentType::Reviewer, "fs.edit", true).is_err());
        assert!(allowed_with(AgentType::Reviewer, "shell.run", true).is_err());
        assert!(allowed_with(AgentType::Executor, "shell.run", false).is_ok());
        // The Main Agent reads and delegates: no write, no command, whatever it has.
        for tool in ["fs.write", "fs.edit", "fs.multi_edit", "shell.run"] {
            let e = allowed_with(AgentType::Main, tool, true).unwrap_err();
            assert!(e.0.contains("not allowed for the main agent"), "{e}");
        }
        let names = |a| offered(a).into_iter().map(|d| d.name).collect::<Vec<_>>();
        assert_eq!(names(AgentType::Main), names(AgentType::Reviewer));
    }

    #[test]
    fn whitelists_and_input_errors_name_the_problem() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let ledger = ReadLedger::default();
        let ctx = FsContext {
            root: &root,
            agent_id: "r",
            ledger: &ledger,
            scope: &crate::tools::scope::Scope::default(),
            perm: crate::tools::permission::test_permits(&root),
            launcher: crate::launcher::test_launcher(&root),
            overlay: None,
        };
        let e = call(
            &ctx,
            AgentType::Reviewer,
            "fs.write",
            serde_json::json!({"path": "a", "content": "x"}),
        )
        .unwrap_err();
        assert!(e.0.contains("not allowed for a reviewer"), "{e}");
        let e = call(
            &ctx,
            AgentType::Executor,
            "fs.read",
            serde_json::json!({"path": 3}),
        )
        .unwrap_err();
        assert!(e.0.contains("invalid input for `fs_read` at `path`"), "{e}");
        let e = call(
            &ctx,
            AgentType::Executor,
            "fs.read",
            serde_json::json!({"path": "a", "colour": 1}),
        )
        .unwrap_err();
        assert!(e.0.contains("unknown field `colour`"), "{e}");
        let e = call(&ctx, AgentType::Executor, "shell.rm", serde_json::json!({})).unwrap_err();
        assert!(e.0.contains("no tool `shell_rm`"), "{e}");
        let out = call(
            &ctx,
            AgentType::Executor,
            "fs.write",
            serde_json::json!({"path": "a.txt", "content": "x\n"}),
        )
        .unwrap();
        assert_eq!(out["created"], true);
    }
}
