//! `air plan check` and `air plan graph`: the plan compiler on the user's machine, no
//! daemon needed.

use std::path::{Path, PathBuf};

use air_proto::plan::graph::{self, Outcomes};
use air_proto::plan::{compile, Compiled};
use clap::{Subcommand, ValueEnum};

use crate::{exit, CmdResult, Failure};

#[derive(Subcommand)]
pub enum PlanCommand {
    /// Plan from a requirement with the Architecture Designer: its questions
    /// answered, the requirements agreed, the proposal confirmed; airsd writes the
    /// plan and runs it (or, with --out, only writes it).
    #[command(after_help = crate::plan_new::PLAN_NEW_EXIT_CODES)]
    New(Box<crate::plan_new::PlanNewArgs>),
    /// Validate a plan and print its waves, without running anything. Every error is
    /// printed as FILE:LINE: FIELD: message.
    Check {
        /// The plan file (Markdown, see docs/plan-format.md).
        plan: PathBuf,
        /// Print the compiled task graph as JSON instead.
        #[arg(long)]
        json: bool,
    },
    /// Draw a plan's task graph.
    Graph {
        /// The plan file (Markdown, see docs/plan-format.md).
        plan: PathBuf,
        /// text (boxes in the terminal), mermaid (for Markdown) or dot (Graphviz).
        #[arg(long, value_enum, default_value_t = GraphFormat::Text)]
        format: GraphFormat,
    },
}

#[derive(Clone, Copy, ValueEnum)]
pub enum GraphFormat {
    Mermaid,
    Dot,
    Text,
}

/// Reads and compiles a plan file; errors carry exit code 2.
pub fn load(path: &Path) -> Result<Compiled, Failure> {
    let text = std::fs::read_to_string(path).map_err(|e| Failure {
        code: exit::USAGE,
        message: format!("cannot read the plan {}: {e}", path.display()),
    })?;
    let name = path.display().to_string();
    let compiled = compile(&name, &text).map_err(|errors| {
        let n = errors.errors.len();
        Failure {
            code: exit::USAGE,
            message: format!(
                "{errors}\n{name}: {n} error{} in the plan",
                if n == 1 { "" } else { "s" }
            ),
        }
    })?;
    for warning in &compiled.warnings {
        eprintln!("warning: {}", warning.display(&name));
    }
    Ok(compiled)
}

/// Where the plan's tasks would work, said before it runs: each in its own git
/// worktree in a git repository, else in the checkout itself, where tasks of one write
/// area run one at a time.
fn where_tasks_work(worktrees: Option<bool>, plan: &std::path::Path) -> &'static str {
    let dir = std::fs::canonicalize(plan)
        .ok()
        .and_then(|p| p.parent().map(std::path::Path::to_path_buf))
        .or_else(|| std::env::current_dir().ok());
    let in_git = dir.is_some_and(|d| d.ancestors().any(|a| a.join(".git").exists()));
    match (worktrees, in_git) {
        (Some(false), _) => "tasks work in the checkout itself (`worktrees: false`): tasks of one write area run one at a time",
        (_, true) => "in this git repository (once it has a commit) each task works in its own worktree, merged behind its check and landed at the end (docs/worktrees.md)",
        (_, false) => "not a git repository: tasks work in the checkout itself, and tasks of one write area run one at a time (docs/worktrees.md)",
    }
}

pub fn run(command: PlanCommand) -> CmdResult {
    match command {
        PlanCommand::New(_) => Err(Failure::from("`air plan new` needs the daemon")),
        PlanCommand::Check { plan, json } => {
            let compiled = load(&plan)?;
            let g = &compiled.graph;
            if json {
                outln!("{}", serde_json::to_string_pretty(g)?);
                return Ok(());
            }
            let phases = if g.phases.is_empty() {
                String::new()
            } else {
                format!(", {} phase{}", g.phases.len(), plural(g.phases.len()))
            };
            outln!(
                "{}: ok — {} task{} in {} wave{}{phases}",
                plan.display(),
                g.tasks.len(),
                plural(g.tasks.len()),
                g.waves.len(),
                plural(g.waves.len()),
            );
            if let Some(title) = &g.title {
                outln!("{title}");
            }
            outln!("{}", where_tasks_work(g.settings.worktrees, &plan));
            outln!();
            out!("{}", graph::text(g, &Outcomes::new()));
            Ok(())
        }
        PlanCommand::Graph { plan, format } => {
            let compiled = load(&plan)?;
            let outcomes = Outcomes::new();
            let drawing = match format {
                GraphFormat::Mermaid => graph::mermaid(&compiled.graph, &outcomes),
                GraphFormat::Dot => graph::dot(&compiled.graph, &outcomes),
                GraphFormat::Text => graph::text(&compiled.graph, &outcomes),
            };
            out!("{drawing}");
            Ok(())
        }
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}
