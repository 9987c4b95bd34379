//! `air`: the command-line client. It never opens SQLite and never spawns workers; what
//! it cannot do from the project's files it asks airsd for.

use std::path::PathBuf;
use std::process::ExitCode;

use air_proto::layout;
use clap::{Parser, Subcommand};

/// Exit codes: 0 success, 1 failure, 2 usage error.
#[derive(Parser)]
#[command(name = "air", version, about = "air: a multi-agent coding runtime", after_help = EXIT_CODES)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

const EXIT_CODES: &str = "Exit codes:\n  0  success\n  1  the command failed\n  2  usage error";

#[derive(Subcommand)]
enum Command {
    /// Make a directory an air project: creates .air/shared and .air/local and
    /// gitignores .air/local/. Safe to run again.
    Init {
        /// The project root (default: the current directory).
        #[arg(long, value_name = "DIR")]
        path: Option<PathBuf>,
    },
    /// Print the root of the project containing the current directory.
    Root,
    /// Print air's version.
    Version,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli.command) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("air: {e:#}");
            ExitCode::from(1)
        }
    }
}

fn current_dir() -> anyhow::Result<PathBuf> {
    std::env::current_dir().map_err(|e| anyhow::anyhow!("cannot read the current directory: {e}"))
}

fn run(command: Command) -> anyhow::Result<()> {
    match command {
        Command::Init { path } => {
            let root = match path {
                Some(p) => p,
                None => current_dir()?,
            };
            let report = layout::init(&root, &air_proto::time::now_iso())?;
            let project = &report.project;
            if report.created {
                println!(
                    "initialized air project `{}` ({}) in {}",
                    project.name,
                    project.project_id,
                    root.display()
                );
            } else {
                println!(
                    "air project `{}` ({}) already initialized in {}",
                    project.name,
                    project.project_id,
                    root.display()
                );
            }
            if report.gitignore_updated {
                println!("added {} to .gitignore", layout::GITIGNORE_LINE);
            }
            Ok(())
        }
        Command::Root => {
            let paths = layout::find_root(&current_dir()?)?;
            println!("{}", paths.root().display());
            Ok(())
        }
        Command::Version => {
            println!(
                "air {} (protocol {})",
                env!("CARGO_PKG_VERSION"),
                air_proto::PROTOCOL_VERSION
            );
            Ok(())
        }
    }
}
