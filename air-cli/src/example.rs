//! The examples shipped with air (`examples/` beside the binaries), watched from
//! the first-run screen with no model: a copy of the example (in the temporary
//! directory) becomes a project of its own, its recorded run replays there, and `air attach` shows it.

use std::path::Path;
use std::process::{Command, Stdio};

use air_tui::app::ExampleRow;

use crate::{CmdResult, Failure};

/// The examples found beside this binary (a release's `bin/../examples`, or a
/// build's `target/debug/../../examples`) that have a recorded run.
pub(crate) fn shipped() -> Vec<ExampleRow> {
    let Ok(exe) = std::env::current_exe() else {
        return Vec::new();
    };
    // The first `examples` up the tree that holds one (a build's `target/debug/`
    // has an `examples` of its own, for Cargo's).
    let mut rows = exe
        .ancestors()
        .skip(1)
        .take(3)
        .map(|a| examples_in(&a.join("examples")))
        .find(|rows| !rows.is_empty())
        .unwrap_or_default();
    rows.sort_by(|a, b| a.name.cmp(&b.name));
    rows
}

/// The examples in `dir` with a recorded run.
fn examples_in(dir: &Path) -> Vec<ExampleRow> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("recording").is_dir())
        .filter_map(|p| {
            let plan = std::fs::read_to_string(p.join("plan.md")).ok()?;
            let title = plan
                .lines()
                .find_map(|l| l.strip_prefix("# "))
                .unwrap_or("")
                .trim()
                .to_string();
            Some(ExampleRow {
                name: p.file_name()?.to_string_lossy().into_owned(),
                title,
                dir: p,
            })
        })
        .collect()
}

/// Copies the example `dir` to a new project in the temporary directory, starts its
/// recorded run there and attaches to it.
pub(crate) async fn watch(dir: &Path) -> CmdResult {
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "example".into());
    let stamp = air_proto::time::now_iso()
        .chars()
        .filter(char::is_ascii_digit)
        .take(14)
        .collect::<String>();
    // A folder of the temporary directory, made here and only for this user (not
    // under ~/.air, which agents' commands never see). mkdir fails on anything
    // already there, a planted link included.
    let work =
        std::env::temp_dir().join(format!("air-example-{name}-{stamp}-{}", std::process::id()));
    {
        use std::os::unix::fs::DirBuilderExt as _;
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&work)
            .map_err(|e| Failure::from(format!("cannot make {}: {e}", work.display())))?;
    }
    copy_tree(dir, &work).map_err(|e| {
        Failure::from(format!(
            "cannot copy {} to {}: {e}",
            dir.display(),
            work.display()
        ))
    })?;
    // As a project is: a repository (a run works in worktrees of it).
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .current_dir(&work)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    let _ = git(&["init", "-q"])
        && git(&["add", "-A"])
        && git(&[
            "-c",
            "user.name=air",
            "-c",
            "user.email=air@example.invalid",
            "commit",
            "-qm",
            &name,
        ]);
    let air = std::env::current_exe().map_err(|e| Failure::from(format!("where is air? {e}")))?;
    let init = Command::new(&air)
        .args(["init", "--no-model"])
        .current_dir(&work)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .output()
        .map_err(|e| Failure::from(format!("cannot run air init: {e}")))?;
    if !init.status.success() {
        return Err(Failure::from(format!(
            "air init in {} failed: {}",
            work.display(),
            String::from_utf8_lossy(&init.stderr).trim()
        )));
    }
    let run = Command::new(&air)
        .args([
            "run",
            "--plan",
            "plan.md",
            "--replay",
            "recording",
            "--detach",
        ])
        .current_dir(&work)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| Failure::from(format!("cannot run air run: {e}")))?;
    let session = String::from_utf8_lossy(&run.stdout).trim().to_string();
    if !run.status.success() || session.is_empty() {
        return Err(Failure::from(format!(
            "the example's replay did not start in {}: {}",
            work.display(),
            String::from_utf8_lossy(&run.stderr).trim()
        )));
    }
    std::env::set_current_dir(&work)
        .map_err(|e| Failure::from(format!("cannot enter {}: {e}", work.display())))?;
    eprintln!(
        "air: the example `{name}` replays its recorded run in {} (a project of its own)",
        work.display()
    );
    crate::attach(Some(session), None, false).await
}

/// Copies the regular files and folders of `from` into a new `to` (links are left
/// out: a shipped example has none, and one would point outside the copy).
fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let target = to.join(entry.file_name());
        if kind.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}
