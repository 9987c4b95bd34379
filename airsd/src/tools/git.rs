//! `git.status` and `git.diff`: the read-only views of the working tree a reviewer
//! needs, from the real `git` in the project root.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::error::ToolError;
use super::fs::FsContext;
use crate::launcher::{Launcher, Reads};

/// Bytes of a diff returned at most.
pub const MAX_DIFF_BYTES: usize = 256 * 1024;

#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StatusInput {}

#[derive(Clone, Debug, PartialEq, Deserialize, Serialize, schemars::JsonSchema)]
pub struct StatusOutput {
    /// The branch line (`## main...origin/main`), if any.
    pub branch: Option<String>,
    /// `XY path` entries of `git status --porcelain` (untracked directories as one
    /// entry each, as git shows them), at most [`STATUS_ENTRIES`].
    pub entries: Vec<String>,
    /// What was left out, when there was more to show.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// Entries `git.status` shows at most.
pub const STATUS_ENTRIES: usize = 1_000;
/// Bytes of `git status` read for the tool at most.
const STATUS_TOOL_BYTES: usize = 256 * 1024;

#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DiffInput {
    /// Compare the index with HEAD (what is staged) instead of the working tree.
    #[serde(default)]
    pub staged: bool,
    /// Only these paths (relative to the project root).
    #[serde(default)]
    pub paths: Vec<String>,
    /// A revision to compare against (e.g. `HEAD~1`).
    #[serde(default)]
    pub base: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Deserialize, Serialize, schemars::JsonSchema)]
pub struct DiffOutput {
    pub diff: String,
    pub truncated: bool,
}

/// git for a read-only tool, through airsd's [`Launcher`] (which confines a run that
/// reads the files' content), at most `cap` bytes of its output kept and
/// [`super::fs::TOOL_TIME_LIMIT`] to finish.
fn git_capped(
    launcher: &Launcher,
    args: &[&str],
    reads: Reads,
    cap: usize,
) -> Result<(String, bool), ToolError> {
    launcher
        .git(args, reads, cap, super::fs::TOOL_TIME_LIMIT)
        .map_err(ToolError)
}

fn git(launcher: &Launcher, args: &[&str], reads: Reads) -> Result<String, ToolError> {
    git_capped(launcher, args, reads, 4 * 1024 * 1024).map(|(text, _)| text)
}

/// Whether `root` is inside a git working tree (a `.git` in it or above it): checked
/// on the file system, without running git.
pub fn in_repository(root: &Path) -> bool {
    prefix(root).is_some()
}

/// Where `root` lies in its repository, as git writes paths (`service/` for a project
/// in a monorepo's `service` directory, empty at the top); `None` outside one.
fn prefix(root: &Path) -> Option<String> {
    let top = root.ancestors().find(|d| d.join(".git").exists())?;
    let rel = root.strip_prefix(top).ok()?.to_string_lossy().into_owned();
    Some(if rel.is_empty() {
        rel
    } else {
        format!("{rel}/")
    })
}

/// Bytes of `git status` read at most for a command's changed files; past it the
/// working tree is too busy to tell, and nothing is said.
const STATUS_CAP: usize = 4 * 1024 * 1024;
/// Time `git status` may take for a command's changed files or an agent's
/// environment: past it nothing is said, and no dispatch waits longer.
const STATUS_TIME: std::time::Duration = std::time::Duration::from_secs(5);

/// The state of the project's changed files (air's own `.air/` aside), relative to
/// the project root: their status letters and, for a file that exists, its size and
/// modification time. Two of these taken around a command tell which files it
/// changed. `None` outside a git repository, or when git cannot say.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Dirty {
    files: BTreeMap<String, (String, Option<(u64, std::time::SystemTime)>)>,
    /// The branch line (`main...origin/main`).
    pub branch: Option<String>,
}

impl Dirty {
    /// Reads it from `git status` of the project's part of the repository; `None` at
    /// once outside a git repository (no `.git` in `root` or above it), so a command
    /// there pays nothing for it.
    pub fn read(launcher: &Launcher) -> Option<Dirty> {
        let root = launcher.root();
        let prefix = prefix(root)?;
        let (text, cut) = launcher
            .git(
                &[
                    "status",
                    "--porcelain=v1",
                    "-z",
                    "--branch",
                    "--untracked-files=all",
                    "--ignore-submodules",
                    "--",
                    ".",
                ],
                Reads::Content,
                STATUS_CAP,
                STATUS_TIME,
            )
            .ok()?;
        if cut {
            return None;
        }
        let mut dirty = Dirty::default();
        let mut fields = text.split('\0');
        while let Some(entry) = fields.next() {
            if let Some(b) = entry.strip_prefix("## ") {
                dirty.branch = Some(b.to_string());
                continue;
            }
            let (Some(xy), Some(path)) = (entry.get(..2), entry.get(3..)) else {
                continue;
            };
            // A rename or copy (in either column) is followed by its old name.
            if xy.contains(['R', 'C']) {
                fields.next();
            }
            // git writes paths from the top of the repository.
            let Some(path) = path.strip_prefix(prefix.as_str()) else {
                continue;
            };
            // air's own state is never a change of the project's.
            if path.is_empty() || path == ".air" || path.starts_with(".air/") {
                continue;
            }
            let meta = std::fs::symlink_metadata(root.join(path))
                .ok()
                .and_then(|m| Some((m.len(), m.modified().ok()?)));
            dirty
                .files
                .insert(path.to_string(), (xy.trim_end().to_string(), meta));
        }
        Some(dirty)
    }

    /// The changed files, relative to the project root.
    pub fn files(&self) -> Vec<String> {
        self.files.keys().cloned().collect()
    }

    /// The files whose state differs between `self` (before) and `after`.
    pub fn changed(&self, after: &Dirty) -> Vec<String> {
        let mut out: Vec<String> = after
            .files
            .iter()
            .filter(|(p, state)| self.files.get(*p) != Some(state))
            .map(|(p, _)| p.clone())
            .collect();
        out.extend(
            self.files
                .keys()
                .filter(|p| !after.files.contains_key(*p))
                .cloned(),
        );
        out.sort();
        out
    }
}

/// `git.status`: the branch line and the entries, bounded.
pub fn status(ctx: &FsContext<'_>, _: &StatusInput) -> Result<StatusOutput, ToolError> {
    let (text, cut) = git_capped(
        ctx.launcher,
        &[
            "status",
            "--porcelain=v1",
            "--branch",
            "--ignore-submodules=dirty",
        ],
        Reads::Content,
        STATUS_TOOL_BYTES,
    )?;
    let mut branch = None;
    let mut entries = Vec::new();
    let mut more = 0usize;
    let mut lines: Vec<&str> = text.lines().collect();
    if cut {
        // The last line may be cut in its middle.
        lines.pop();
    }
    for line in lines {
        match line.strip_prefix("## ") {
            Some(b) => branch = Some(b.to_string()),
            None if line.is_empty() => {}
            None if entries.len() < STATUS_ENTRIES => entries.push(line.to_string()),
            None => more += 1,
        }
    }
    let mut notes = Vec::new();
    if more > 0 || cut {
        notes.push(format!(
            "{} more entr{} not shown{}; narrow it with git_diff's paths, or run `git status -- <dir>` with shell_run",
            if cut { format!("{more} or") } else { more.to_string() },
            if more == 1 && !cut { "y" } else { "ies" },
            if cut { format!(" (git_status reads {} KiB at most)", STATUS_TOOL_BYTES / 1024) } else { String::new() }
        ));
    }
    Ok(StatusOutput {
        branch,
        entries,
        notes,
    })
}

/// `git.diff`: tracked changes as git shows them, then each new (untracked) file the
/// agent may read, as a diff from nothing — a task that created a file shows it.
pub fn diff(ctx: &FsContext<'_>, input: &DiffInput) -> Result<DiffOutput, ToolError> {
    if let Some(base) = &input.base {
        if base.starts_with('-') {
            return Err(ToolError(format!("base: `{base}` is not a revision")));
        }
    }
    let mut paths = Vec::new();
    for p in &input.paths {
        let (resolved, _) = ctx.permit(p, super::permission::Access::Read)?;
        paths.push(resolved);
    }
    let new: Vec<String> = if input.staged {
        Vec::new()
    } else {
        untracked(ctx.launcher, &paths)?
            .into_iter()
            .filter(|f| ctx.permit(f, super::permission::Access::Read).is_ok())
            .collect()
    };
    changes(
        ctx.launcher,
        input.staged,
        input.base.as_deref(),
        &paths,
        &new,
    )
}

/// Files of a task's diff shown at most.
pub const TASK_DIFF_FILES: usize = 200;

/// The diff of a task's files against the last commit, new files included: what a
/// reviewer reads first. `Ok(None)` outside a git repository; files outside the
/// project are left out (they are not the repository's).
pub fn task_diff(launcher: &Launcher, files: &[String]) -> Result<Option<DiffOutput>, ToolError> {
    let root = launcher.root();
    if !in_repository(root) {
        return Ok(None);
    }
    let inside: Vec<&String> = files
        .iter()
        .filter(|f| !f.is_empty() && !Path::new(f.as_str()).is_absolute() && !f.starts_with(".."))
        .collect();
    let paths: Vec<std::path::PathBuf> = inside
        .iter()
        .take(TASK_DIFF_FILES)
        .map(|f| root.join(f.as_str()))
        .collect();
    if paths.is_empty() {
        return Ok(Some(DiffOutput {
            diff: String::new(),
            truncated: false,
        }));
    }
    let new = untracked(launcher, &paths)?;
    let head = git(
        launcher,
        &["rev-parse", "--verify", "-q", "HEAD"],
        Reads::Metadata,
    )
    .is_ok();
    let mut out = changes(launcher, false, head.then_some("HEAD"), &paths, &new)?;
    if inside.len() > TASK_DIFF_FILES {
        out.truncated = true;
        out.diff.push_str(&format!(
            "\n… [{} more changed files not shown; git_diff shows them]\n",
            inside.len() - TASK_DIFF_FILES
        ));
    }
    Ok(Some(out))
}

/// A file (relative to the project root) as the last commit has it; `None` when that
/// commit does not have it (or there is none, or no repository).
pub fn committed(launcher: &Launcher, file: &str) -> Result<Option<String>, ToolError> {
    let Some(prefix) = prefix(launcher.root()) else {
        return Ok(None);
    };
    let spec = format!("HEAD:{prefix}{file}");
    if git(launcher, &["cat-file", "-e", &spec], Reads::Metadata).is_err() {
        return Ok(None);
    }
    let (text, cut) = git_capped(
        launcher,
        &["cat-file", "blob", &spec],
        Reads::Content,
        64 << 20,
    )?;
    if cut {
        return Err(ToolError(format!("{file}: too large at the last commit")));
    }
    Ok(Some(text))
}

/// Which lines of a file a change made, against the last commit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Made {
    /// The whole file: it is new (untracked, or there is no commit yet).
    All,
    /// These lines (1-based, `start..end`) of the file as it is now; a deletion
    /// marks the line after it.
    Lines(Vec<(u32, u32)>),
}

impl Made {
    pub fn contains(&self, line: u32) -> bool {
        match self {
            Made::All => true,
            Made::Lines(spans) => spans.iter().any(|(a, b)| (*a..*b).contains(&line)),
        }
    }
}

/// The lines each of `files` (relative to the project root) has that its last commit
/// did not: what a change to it made. A file with no change is not in the answer.
/// `Ok(None)` outside a git repository.
pub fn made_lines(
    launcher: &Launcher,
    files: &[String],
) -> Result<Option<BTreeMap<String, Made>>, ToolError> {
    let root = launcher.root();
    let Some(prefix) = prefix(root) else {
        return Ok(None);
    };
    let paths: Vec<std::path::PathBuf> = files
        .iter()
        .filter(|f| !f.is_empty() && !Path::new(f.as_str()).is_absolute() && !f.starts_with(".."))
        .map(|f| root.join(f.as_str()))
        .collect();
    let mut out = BTreeMap::new();
    if paths.is_empty() {
        return Ok(Some(out));
    }
    // Named from the project root, as git ls-files names them from where it runs.
    for f in untracked(launcher, &paths)? {
        out.insert(f, Made::All);
    }
    let head = git(
        launcher,
        &["rev-parse", "--verify", "-q", "HEAD"],
        Reads::Metadata,
    )
    .is_ok();
    if !head {
        for f in files {
            out.insert(f.clone(), Made::All);
        }
        return Ok(Some(out));
    }
    let mut args: Vec<String> = [
        "diff",
        "--no-color",
        "--no-ext-diff",
        "--no-textconv",
        "--no-renames",
        "-U0",
        "HEAD",
        "--",
    ]
    .iter()
    .map(|a| a.to_string())
    .collect();
    args.extend(paths.iter().map(|p| p.display().to_string()));
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let diff = git(launcher, &refs, Reads::Content)?;
    let mut file: Option<String> = None;
    for line in diff.lines() {
        if let Some(path) = line.strip_prefix("+++ ") {
            file = path
                .strip_prefix("b/")
                .and_then(|p| p.strip_prefix(prefix.as_str()))
                .map(str::to_string);
            continue;
        }
        let (Some(f), Some(hunk)) = (file.as_ref(), line.strip_prefix("@@ ")) else {
            continue;
        };
        // `@@ -a,b +c,d @@`: the new side starts at c and has d lines (1 unless given).
        let Some(new) = hunk.split_whitespace().find_map(|w| w.strip_prefix('+')) else {
            continue;
        };
        let (start, count) = match new.split_once(',') {
            Some((s, c)) => (s.parse::<u32>().ok(), c.parse::<u32>().ok()),
            None => (new.parse::<u32>().ok(), Some(1)),
        };
        let (Some(start), Some(count)) = (start, count) else {
            continue;
        };
        let span = if count == 0 {
            (start.saturating_add(1), start.saturating_add(2))
        } else {
            (start, start.saturating_add(count))
        };
        match out
            .entry(f.clone())
            .or_insert_with(|| Made::Lines(Vec::new()))
        {
            Made::Lines(spans) => spans.push(span),
            Made::All => {}
        }
    }
    Ok(Some(out))
}

/// The untracked files (not ignored) among `paths`, or in the whole tree.
fn untracked(launcher: &Launcher, paths: &[std::path::PathBuf]) -> Result<Vec<String>, ToolError> {
    let mut args: Vec<String> = vec![
        "ls-files".into(),
        "--others".into(),
        "--exclude-standard".into(),
        "-z".into(),
        "--".into(),
    ];
    args.extend(paths.iter().map(|p| p.display().to_string()));
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let text = git(launcher, &refs, Reads::Metadata)?;
    Ok(text
        .split('\0')
        .filter(|f| !f.is_empty())
        .map(str::to_string)
        .collect())
}

/// A new file as a diff from nothing: a regular file's lines (a binary one named
/// only), a symbolic link by its target, never what it points at.
fn new_file_diff(root: &Path, rel: &str, room: usize) -> String {
    use std::io::Read as _;
    let path = root.join(rel);
    let mut out = format!("diff --git a/{rel} b/{rel}\nnew file\n");
    match std::fs::symlink_metadata(&path) {
        Ok(m) if m.file_type().is_symlink() => {
            let target = std::fs::read_link(&path)
                .map(|t| t.display().to_string())
                .unwrap_or_default();
            out.push_str(&format!("(a symbolic link to {target})\n"));
            return out;
        }
        Ok(_) => {}
        Err(_) => return out,
    }
    let mut bytes = Vec::new();
    let read = super::fs::open_regular(&path, root, rel)
        .map_err(|e| e.0)
        .and_then(|(f, _)| {
            f.take(room as u64 + 1)
                .read_to_end(&mut bytes)
                .map_err(|e| e.to_string())
        });
    if let Err(why) = read {
        out.push_str(&format!("(not shown: {why})\n"));
        return out;
    }
    if bytes[..bytes.len().min(8192)].contains(&0) {
        out.push_str(&format!("Binary file b/{rel} added\n"));
        return out;
    }
    let text = String::from_utf8_lossy(&bytes);
    // A page with a secret is fs_read's to show, after asking.
    if let Some(what) = super::secrets::find(&text) {
        out.push_str(&format!(
            "(not shown: it holds {what}; fs_read asks before showing it)\n"
        ));
        return out;
    }
    let lines: Vec<&str> = text.lines().collect();
    out.push_str(&format!(
        "--- /dev/null\n+++ b/{rel}\n@@ -0,0 +1,{} @@\n",
        lines.len()
    ));
    for l in &lines {
        out.push('+');
        out.push_str(l);
        out.push('\n');
    }
    if !text.is_empty() && !text.ends_with('\n') {
        out.push_str("\\ No newline at end of file\n");
    }
    out
}

fn changes(
    launcher: &Launcher,
    staged: bool,
    base: Option<&str>,
    paths: &[std::path::PathBuf],
    new: &[String],
) -> Result<DiffOutput, ToolError> {
    let mut args: Vec<String> = vec![
        "diff".into(),
        "--no-color".into(),
        "--no-ext-diff".into(),
        "--no-textconv".into(),
        "--ignore-submodules=dirty".into(),
    ];
    if staged {
        args.push("--cached".into());
    }
    if let Some(base) = base {
        args.push(base.to_string());
    }
    args.push("--".into());
    args.extend(paths.iter().map(|p| p.display().to_string()));
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let (mut diff, cut_short) = git_capped(launcher, &refs, Reads::Content, MAX_DIFF_BYTES + 1)?;
    let mut truncated = cut_short || diff.len() > MAX_DIFF_BYTES;
    for f in new {
        if diff.len() >= MAX_DIFF_BYTES {
            truncated = true;
            break;
        }
        diff.push_str(&new_file_diff(
            launcher.root(),
            f,
            MAX_DIFF_BYTES - diff.len(),
        ));
    }
    if diff.len() > MAX_DIFF_BYTES {
        truncated = true;
        let mut cut = MAX_DIFF_BYTES;
        while !diff.is_char_boundary(cut) {
            cut -= 1;
        }
        diff.truncate(cut);
    }
    if truncated {
        diff.push_str("\n… [diff truncated; ask for fewer paths]\n");
    }
    Ok(DiffOutput { diff, truncated })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::tools::ReadLedger;

    fn run(dir: &std::path::Path, args: &[&str]) {
        let ok = std::process::Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@example.com")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@example.com")
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    }

    #[test]
    fn status_and_diff_of_a_real_repository() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        run(&root, &["init", "-q", "-b", "main"]);
        std::fs::write(root.join("a.txt"), "one\n").unwrap();
        run(&root, &["add", "a.txt"]);
        run(&root, &["commit", "-qm", "first"]);
        std::fs::write(root.join("a.txt"), "two\n").unwrap();
        std::fs::write(root.join("new.txt"), "n\n").unwrap();
        let ledger = ReadLedger::default();
        let scope = crate::tools::scope::Scope::default();
        let ctx = FsContext {
            root: &root,
            agent_id: "r",
            ledger: &ledger,
            scope: &scope,
            perm: crate::tools::permission::test_permits(&root),
            launcher: crate::launcher::test_launcher(&root),
            overlay: None,
        };
        let s = status(&ctx, &StatusInput {}).unwrap();
        assert_eq!(s.branch.as_deref(), Some("main"));
        assert_eq!(s.entries, [" M a.txt", "?? new.txt"]);
        let d = diff(&ctx, &DiffInput::default()).unwrap();
        assert!(d.diff.contains("-one\n+two\n"), "{}", d.diff);
        let d = diff(
            &ctx,
            &DiffInput {
                paths: vec!["new.txt".into()],
                ..DiffInput::default()
            },
        )
        .unwrap();
        assert_eq!(
            d.diff,
            "diff --git a/new.txt b/new.txt\nnew file\n--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,1 @@\n+n\n",
            "a new file shows as added"
        );
        let all = diff(&ctx, &DiffInput::default()).unwrap();
        assert!(all.diff.contains("+++ b/new.txt"), "{}", all.diff);
        let task = task_diff(
            crate::launcher::test_launcher(&root),
            &["a.txt".into(), "new.txt".into()],
        )
        .unwrap()
        .unwrap();
        assert!(
            task.diff.contains("+two") && task.diff.contains("+n\n"),
            "{}",
            task.diff
        );
        let before = Dirty::read(crate::launcher::test_launcher(&root)).unwrap();
        std::fs::write(root.join("made.txt"), "m\n").unwrap();
        std::fs::write(root.join("a.txt"), "three, longer\n").unwrap();
        let after = Dirty::read(crate::launcher::test_launcher(&root)).unwrap();
        assert_eq!(before.changed(&after), ["a.txt", "made.txt"]);
        assert_eq!(after.branch.as_deref(), Some("main"));
        // A new symbolic link shows as one, never as what it points at; a FIFO is
        // not opened.
        let secret = root.join("secret");
        std::fs::write(&secret, "TOPSECRET\n").unwrap();
        std::os::unix::fs::symlink(&secret, root.join("link.txt")).unwrap();
        nix::unistd::mkfifo(&root.join("pipe"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        let shown = task_diff(
            crate::launcher::test_launcher(&root),
            &["link.txt".into(), "pipe".into(), "/etc/passwd".into()],
        )
        .unwrap()
        .unwrap();
        assert!(
            shown.diff.contains("(a symbolic link to "),
            "{}",
            shown.diff
        );
        // git lists no FIFO; one handed over anyway is not opened.
        assert!(
            new_file_diff(&root, "pipe", 100).contains("(not shown: "),
            "a FIFO"
        );
        // A new file holding a secret is named, not shown.
        std::fs::write(
            root.join("deploy.yaml"),
            "registry: https://ci:s3cr3t-pass@registry.example.invalid/\n",
        )
        .unwrap();
        let held = new_file_diff(&root, "deploy.yaml", 4096);
        assert!(
            held.contains("(not shown: it holds a password in a URL") && !held.contains("s3cr3t"),
            "{held}"
        );
        assert!(
            !shown.diff.contains("TOPSECRET") && !shown.diff.contains("root:"),
            "{}",
            shown.diff
        );
        // A project in a directory of a larger repository: paths from its own root.
        std::fs::create_dir_all(root.join("service")).unwrap();
        std::fs::write(root.join("service/x.rs"), "x\n").unwrap();
        let sub = root.join("service");
        let d = Dirty::read(crate::launcher::test_launcher(&sub)).unwrap();
        assert_eq!(d.files(), ["x.rs"]);
        let before = d;
        std::fs::write(sub.join("x.rs"), "x, longer now\n").unwrap();
        assert_eq!(
            before.changed(&Dirty::read(crate::launcher::test_launcher(&sub)).unwrap()),
            ["x.rs"]
        );
        // Outside a repository there is nothing to read.
        let plain = tempfile::tempdir().unwrap();
        assert!(Dirty::read(crate::launcher::test_launcher(plain.path())).is_none());
        assert!(
            task_diff(crate::launcher::test_launcher(plain.path()), &["a".into()])
                .unwrap()
                .is_none()
        );
        let e = diff(
            &ctx,
            &DiffInput {
                base: Some("--output=/tmp/x".into()),
                ..DiffInput::default()
            },
        )
        .unwrap_err();
        assert!(e.0.contains("not a revision"), "{e}");
    }
}
