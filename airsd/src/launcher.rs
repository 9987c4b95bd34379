//! The one way airsd runs a program on the project's content itself (git, today), as
//! opposed to an agent's command (`tools::exec`): the program by absolute path from a
//! trusted directory ([`air_proto::program::find`], never the project's or a
//! temporary directory), a clean environment, git's executing settings fixed
//! ([`air_proto::program::NEUTRAL_GIT`]) and the system and global configuration
//! ignored, its own process group killed when it ends, overruns its time or says too
//! much. A program that reads the files' content (where a filter or diff driver the
//! repository names could still run) also gets every driver of the repository's
//! configuration blanked and runs under the sandbox an agent's command gets, with
//! nothing writable: whatever still ran would run as confined as the agent.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::sandbox::{Policy, Protections, Views};

/// What a run of git reads, which decides how it is confined.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reads {
    /// Refs, objects, the index and names of files (`rev-parse`, `log --format`,
    /// `ls-files`): nothing a repository's configuration can hook a program to.
    Metadata,
    /// The working tree's files (`status`, `diff`): filters and diff drivers apply.
    Content,
}

/// Settings for a run of git that writes the repository (a worktree, a commit, a
/// ref, a merged tree): nothing signed or verified, no automatic maintenance, no
/// recorded resolutions, no editor. What the repository's configuration says of these
/// does not count.
const WRITE_GIT: &[&str] = &[
    "commit.gpgSign=false",
    "tag.gpgSign=false",
    "merge.verifySignatures=false",
    "gc.auto=0",
    "maintenance.auto=false",
    "rerere.enabled=false",
    "core.editor=false",
    "sequence.editor=false",
    "advice.detachedHead=false",
    // Worktrees name their places absolutely, as airsd reads them.
    "worktree.useRelativePaths=false",
];

/// The name and address air commits as (the user's global configuration, where
/// their own would be, is never read).
pub const AIR_IDENTITY: (&str, &str) = ("air", "air@localhost.invalid");

/// How airsd runs its own programs for one project.
#[derive(Clone, Debug)]
pub struct Launcher {
    root: PathBuf,
    git: Option<PathBuf>,
    /// airsd itself (`airsd __sandbox`) and what the sandbox can do here.
    sandbox: Option<(PathBuf, Protections)>,
    /// What a confined program may not see (air's state, the credential stores).
    views: Views,
    /// A task's worktree: its git directory, named to git each run (with the
    /// worktree as the working tree), never found from the worktree's `.git` file.
    git_dir: Option<PathBuf>,
}

impl Launcher {
    /// `path` is the `PATH` airsd was started with; git is taken from a trusted
    /// directory of it (never one inside `root`).
    pub fn new(
        root: &Path,
        path: Option<&std::ffi::OsStr>,
        sandbox: Option<(PathBuf, Protections)>,
        views: Views,
    ) -> Launcher {
        Launcher {
            root: root.to_path_buf(),
            git: air_proto::program::find("git", path, &[root]),
            sandbox,
            views,
            git_dir: None,
        }
    }

    /// No sandbox, git from the system directories: for work without a run (the
    /// scan, tests).
    pub fn plain(root: &Path) -> Launcher {
        Launcher::new(root, None, None, Views::default())
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The same launcher (its git, its sandbox, what it hides), running in `root`
    /// instead: a worktree of the project.
    pub fn at(&self, root: &Path) -> Launcher {
        Launcher {
            root: root.to_path_buf(),
            ..self.clone()
        }
    }

    /// The same launcher, running git on the worktree at `root` whose git directory
    /// is `git_dir` (both named to git each run), with `views` for what it runs
    /// confined: a task's worktree.
    pub fn worktree(&self, root: &Path, git_dir: &Path, mut views: Views) -> Launcher {
        show_within_hidden(&mut views, std::slice::from_ref(&root.to_path_buf()));
        Launcher {
            root: root.to_path_buf(),
            git_dir: Some(git_dir.to_path_buf()),
            views,
            ..self.clone()
        }
    }

    /// `--git-dir` and `--work-tree` for a worktree's launcher.
    fn repo_args(&self) -> Vec<String> {
        match &self.git_dir {
            Some(g) => vec![
                format!("--git-dir={}", g.display()),
                format!("--work-tree={}", self.root.display()),
            ],
            None => Vec::new(),
        }
    }

    /// The same launcher with `views` for what it runs confined (views made for the
    /// places a run of git may write, so that what is read-only there stays so).
    pub fn with_views(&self, views: Views) -> Launcher {
        Launcher {
            views,
            ..self.clone()
        }
    }

    /// What a program this launcher confines may not see.
    pub fn views(&self) -> &Views {
        &self.views
    }

    /// The git airsd runs, if one was found.
    pub fn git_program(&self) -> Option<&Path> {
        self.git.as_deref()
    }

    /// Runs git in the project root with `args`; keeps at most `cap` bytes of its
    /// output (the answer says whether it was cut) and stops it after `limit`.
    pub fn git(
        &self,
        args: &[&str],
        reads: Reads,
        cap: usize,
        limit: Duration,
    ) -> Result<(String, bool), String> {
        self.run_git(args, reads, None, cap, limit, &[])
            .map(|(out, cut, _)| (out, cut))
    }

    /// Runs git that writes the repository (`worktree add`, `add`, `commit`,
    /// `update-ref`, `merge-tree --write-tree`): as a content read runs (every driver
    /// of the repository's configuration blanked, under the sandbox), with
    /// [`WRITE_GIT`] and air's identity, and only `writable` (the worktree, the
    /// repository's git directory) writable.
    pub fn git_write(
        &self,
        args: &[&str],
        writable: &[PathBuf],
        cap: usize,
        limit: Duration,
    ) -> Result<(String, bool), String> {
        self.run_git(args, Reads::Content, Some(writable), cap, limit, &[])
            .map(|(out, cut, _)| (out, cut))
    }

    /// [`Launcher::git`] for a git whose exit code answers too (`rev-parse --verify
    /// -q` exits 1 for a name that is not there): the codes in `answers` are
    /// answers, not failures.
    pub fn git_answer(
        &self,
        args: &[&str],
        reads: Reads,
        answers: &[i32],
        cap: usize,
        limit: Duration,
    ) -> Result<(String, i32), String> {
        self.run_git(args, reads, None, cap, limit, answers)
            .map(|(out, _, code)| (out, code))
    }

    /// [`Launcher::git_write`] for a git whose exit code answers too (`merge-tree`
    /// exits 1 on a conflict): the codes in `answers` are answers, not failures, and
    /// the code comes back with the output.
    pub fn git_write_answer(
        &self,
        args: &[&str],
        writable: &[PathBuf],
        answers: &[i32],
        cap: usize,
        limit: Duration,
    ) -> Result<(String, bool, i32), String> {
        self.run_git(args, Reads::Content, Some(writable), cap, limit, answers)
    }

    fn run_git(
        &self,
        args: &[&str],
        reads: Reads,
        writes: Option<&[PathBuf]>,
        cap: usize,
        limit: Duration,
        answers: &[i32],
    ) -> Result<(String, bool, i32), String> {
        let git = self.git.as_deref().ok_or_else(|| {
            "no git found in a system directory or a trusted directory of PATH".to_string()
        })?;
        let mut blanked: Vec<(String, String)> = Vec::new();
        if reads == Reads::Content && !runs_no_driver(args) {
            blanked = self.blank_drivers(git)?;
        }
        let mut git_args: Vec<String> = self.repo_args();
        for s in air_proto::program::NEUTRAL_GIT
            .iter()
            .chain(writes.map_or(&[][..], |_| WRITE_GIT))
        {
            git_args.push("-c".into());
            git_args.push(s.to_string());
        }
        // The blanks go through the environment, where a driver named `a=b` is one
        // key (`-c filter.a=b.clean=` would set `filter.a`); also as `-c` where the
        // name allows it, for a git older than `GIT_CONFIG_COUNT` (2.31).
        for (key, value) in blanked.iter().filter(|(k, _)| !k.contains('=')) {
            git_args.push("-c".into());
            git_args.push(format!("{key}={value}"));
        }
        let mut blank_env: Vec<(String, String)> =
            vec![("GIT_CONFIG_COUNT".into(), blanked.len().to_string())];
        for (i, (key, value)) in blanked.into_iter().enumerate() {
            blank_env.push((format!("GIT_CONFIG_KEY_{i}"), key));
            blank_env.push((format!("GIT_CONFIG_VALUE_{i}"), value));
        }
        git_args.extend(args.iter().map(|a| a.to_string()));
        let sandboxed = self.sandbox.is_some() && reads == Reads::Content;
        let confined = match (&self.sandbox, reads) {
            (Some((exe, found)), Reads::Content) => {
                let mut writable = vec![PathBuf::from("/dev/null")];
                writable.extend(writes.unwrap_or_default().iter().cloned());
                // What git writes inside air's hidden state (the worktrees) it sees.
                let mut views = self.views.clone();
                show_within_hidden(&mut views, writes.unwrap_or_default());
                let policy = Policy {
                    writable,
                    net: None,
                    home: self.views.home.clone(),
                    home_read: self.views.home_read.clone(),
                    isolate: found.isolation.is_ok().then_some(views),
                };
                let mut c = Command::new(exe);
                c.args(crate::sandbox::launcher_args(
                    &policy,
                    &git.display().to_string(),
                    &git_args,
                ));
                c
            }
            _ => {
                let mut c = Command::new(git);
                c.args(&git_args);
                c
            }
        };
        let mut cmd = confined;
        cmd.env_clear()
            .envs(air_proto::program::git_env(git))
            .envs(blank_env)
            .current_dir(&self.root);
        if writes.is_some() {
            let (name, email) = AIR_IDENTITY;
            cmd.envs([
                ("GIT_AUTHOR_NAME", name),
                ("GIT_AUTHOR_EMAIL", email),
                ("GIT_COMMITTER_NAME", name),
                ("GIT_COMMITTER_EMAIL", email),
            ]);
        }
        let what = format!("git {}", args.join(" "));
        let out = run_bounded(cmd, cap, limit, &what)?;
        let code = out.status.and_then(|s| s.code()).unwrap_or(-1);
        match out.status {
            Some(s) if s.success() || out.cut => {}
            Some(s) if s.code().is_some_and(|c| answers.contains(&c)) => {}
            Some(status) => {
                let said = String::from_utf8_lossy(&out.stderr);
                // Outside the sandbox git reads, as airsd's user, whatever a command
                // left in `.git` (a link to any file named `packed-refs`, `index` or
                // `objects/info/alternates`), and its errors quote it: they are
                // neither shown nor kept.
                if !sandboxed {
                    return Err(format!(
                        "{what}: git failed ({status}); what it said is not shown, as it \
                         may quote files outside the sandbox"
                    ));
                }
                return Err(format!("{what}: {}", said.trim()));
            }
            None => return Err(format!("{what}: it did not end")),
        }
        Ok((
            String::from_utf8_lossy(&out.stdout).into_owned(),
            out.cut,
            code,
        ))
    }

    /// The settings (key, value) that blank every filter, diff and merge driver the
    /// repository's own configuration defines (the system and global ones are not
    /// read), so that what the attributes name runs nothing.
    fn blank_drivers(&self, git: &Path) -> Result<Vec<(String, String)>, String> {
        // Known from an earlier run while none of the files git reads its
        // configuration from has changed (a change moves its change time, which no
        // program can set back).
        type Known = std::collections::HashMap<(PathBuf, Option<PathBuf>, PathBuf), Blanked>;
        type Blanked = (Vec<Option<Stamp>>, Vec<(String, String)>);
        static KNOWN: std::sync::Mutex<Option<Known>> = std::sync::Mutex::new(None);
        let key = (self.root.clone(), self.git_dir.clone(), git.to_path_buf());
        let stamps = self.config_stamps();
        if let Some(stamps) = &stamps {
            let known = KNOWN
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if let Some((s, blanks)) = known.as_ref().and_then(|k| k.get(&key)) {
                if s == stamps {
                    return Ok(blanks.clone());
                }
            }
        }
        let (blanked, includes) = self.read_drivers(git)?;
        // A configuration that includes other files is read each time: what those
        // hold is not stamped.
        if let (Some(stamps), false) = (stamps, includes) {
            let mut known = KNOWN
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let known = known.get_or_insert_with(Default::default);
            if known.len() >= 1024 {
                known.clear();
            }
            known.insert(key, (stamps, blanked.clone()));
        }
        Ok(blanked)
    }

    /// The stamps of the files git reads this repository's configuration from (its
    /// `config`, the worktree's `config.worktree`); `None` when they cannot be named
    /// for certain (the project is not at the top of its repository, or its `.git`
    /// is a file), and the configuration is then read each time.
    fn config_stamps(&self) -> Option<Vec<Option<Stamp>>> {
        let files = match &self.git_dir {
            Some(g) => {
                let common = crate::opened::read_small(&g.join("commondir"), g, 4096)?;
                let common = g.join(common.trim());
                vec![g.join("config.worktree"), common.join("config")]
            }
            None => {
                let dot = self.root.join(".git");
                if !std::fs::symlink_metadata(&dot).ok()?.is_dir() {
                    return None;
                }
                // A `commondir` file sends git to another directory's configuration.
                if std::fs::symlink_metadata(dot.join("commondir")).is_ok() {
                    return None;
                }
                vec![dot.join("config"), dot.join("config.worktree")]
            }
        };
        // A link's target could change under an unchanged link.
        let linked = files
            .iter()
            .any(|f| std::fs::symlink_metadata(f).is_ok_and(|m| m.file_type().is_symlink()));
        (!linked).then(|| files.iter().map(|f| stamp(f)).collect())
    }

    /// The blanks for the repository's drivers, and whether its configuration
    /// includes other files.
    fn read_drivers(&self, git: &Path) -> Result<(Vec<(String, String)>, bool), String> {
        let mut cmd = air_proto::program::git_command(git);
        cmd.args(self.repo_args())
            .args(["config", "--list", "--name-only", "-z"])
            .current_dir(&self.root);
        let out = run_bounded(
            cmd,
            1024 * 1024,
            Duration::from_secs(5),
            "git config --list",
        )?;
        if out.cut {
            return Err("the repository's configuration is too large to read".to_string());
        }
        let names = String::from_utf8_lossy(&out.stdout);
        let includes = names.split('\0').any(|n| {
            let n = n.trim().to_ascii_lowercase();
            n.starts_with("include.") || n.starts_with("includeif.")
        });
        Ok((blanks(&names), includes))
    }
}

/// What tells a file changed: its device, inode, size, and modification and change
/// times to the nanosecond.
type Stamp = (u64, u64, u64, i64, i64, i64, i64);

/// The stamp of the file at `path` (not followed if a link), if it is there.
fn stamp(path: &Path) -> Option<Stamp> {
    use std::os::unix::fs::MetadataExt as _;
    let m = std::fs::symlink_metadata(path).ok()?;
    Some((
        m.dev(),
        m.ino(),
        m.size(),
        m.mtime(),
        m.mtime_nsec(),
        m.ctime(),
        m.ctime_nsec(),
    ))
}

/// Whether git run with `args` reads or writes no file's content through a driver of
/// the repository's (a filter, a diff or merge driver, a textconv): commands on refs,
/// commits and trees alone, whose blanking would cost a second git run for nothing.
fn runs_no_driver(args: &[&str]) -> bool {
    match args.first().copied() {
        Some(
            "update-ref" | "commit-tree" | "rev-parse" | "rev-list" | "symbolic-ref" | "reflog"
            | "for-each-ref" | "merge-base",
        ) => true,
        Some("worktree") => matches!(args.get(1).copied(), Some("prune" | "remove")),
        // The object as stored: no `--filters`, no `--textconv`.
        Some("cat-file") => !args
            .iter()
            .any(|a| a.starts_with("--filters") || a.starts_with("--textconv")),
        _ => false,
    }
}

/// Adds to what `views` shows each of `places` that lies inside a place it hides.
fn show_within_hidden(views: &mut Views, places: &[PathBuf]) {
    for p in places {
        let inside = views.hidden.iter().any(|h| p.starts_with(h) && p != h);
        if inside && !views.shown.contains(p) && p.is_dir() {
            views.shown.push(p.clone());
        }
    }
}

/// The settings (key, value) that blank each driver named in a `git config --list
/// --name-only -z` answer.
fn blanks(names: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for name in names.split('\0') {
        let name = name.trim();
        let Some((section, rest)) = name.split_once('.') else {
            continue;
        };
        let Some((driver, _key)) = rest.rsplit_once('.') else {
            continue;
        };
        let section = section.to_ascii_lowercase();
        let keys: &[(&str, &str)] = match section.as_str() {
            "filter" => &[
                ("clean", ""),
                ("smudge", ""),
                ("process", ""),
                ("required", "false"),
            ],
            "diff" => &[("textconv", ""), ("command", "")],
            "merge" => &[("driver", "")],
            _ => continue,
        };
        if !seen.insert((section.clone(), driver.to_string())) {
            continue;
        }
        for (k, v) in keys {
            out.push((format!("{section}.{driver}.{k}"), v.to_string()));
        }
    }
    out
}

/// How a bounded run ended.
pub struct Bounded {
    pub stdout: Vec<u8>,
    /// The output was longer than the cap: it was cut there and the program killed.
    pub cut: bool,
    pub stderr: Vec<u8>,
    /// `None` when it was killed for its time.
    pub status: Option<std::process::ExitStatus>,
}

/// Runs `cmd` in its own process group with no input, keeping at most `cap` bytes of
/// its output and 64 KiB of its errors; past `limit`, or once the output is cut, the
/// whole group is killed, and so is whatever it left when it ends (nothing it started
/// outlives it).
pub fn run_bounded(
    mut cmd: Command,
    cap: usize,
    limit: Duration,
    what: &str,
) -> Result<Bounded, String> {
    use std::os::unix::process::CommandExt as _;
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("{what}: cannot start it: {e}"))?;
    let group = i32::try_from(child.id()).ok();
    let kill_group = move || {
        if let Some(g) = group {
            let _ = nix::sys::signal::killpg(
                nix::unistd::Pid::from_raw(g),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    };
    let (Some(mut stdout), Some(mut stderr)) = (child.stdout.take(), child.stderr.take()) else {
        kill_group();
        let _ = child.wait();
        return Err(format!("{what}: its output could not be read"));
    };
    let errors = std::thread::spawn(move || {
        let mut text = Vec::new();
        let _ = (&mut stderr).take(64 * 1024).read_to_end(&mut text);
        text
    });
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let clock = std::thread::spawn(move || {
        if done_rx.recv_timeout(limit).is_err() {
            kill_group();
            return true;
        }
        false
    });
    let mut out = Vec::new();
    let read = (&mut stdout).take(cap as u64 + 1).read_to_end(&mut out);
    let cut = out.len() > cap;
    if cut {
        out.truncate(cap);
        kill_group();
    }
    drop(stdout);
    let status = child.wait();
    let _ = done_tx.send(());
    let timed_out = clock.join().unwrap_or(false);
    // What it left behind (a filter's `sleep &`) goes with it.
    kill_group();
    let stderr = errors.join().unwrap_or_default();
    if timed_out {
        return Err(format!("{what}: stopped after {} s", limit.as_secs()));
    }
    read.map_err(|e| format!("{what}: {e}"))?;
    let status = status.map_err(|e| format!("{what}: {e}"))?;
    Ok(Bounded {
        stdout: out,
        cut,
        stderr,
        status: Some(status),
    })
}

/// A launcher for unit tests: no sandbox, git from the system directories. Leaked:
/// tests are short-lived processes.
#[cfg(test)]
pub(crate) fn test_launcher(root: &Path) -> &'static Launcher {
    Box::leak(Box::new(Launcher::plain(root)))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn only_commands_on_refs_commits_and_trees_skip_the_blanking() {
        for safe in [
            &["update-ref", "-m", "x", "refs/heads/a", "b"][..],
            &["commit-tree", "t", "-p", "p"],
            &["rev-list", "--count", "a..b"],
            &["worktree", "prune"],
            &["cat-file", "-p", "HEAD:a"],
        ] {
            assert!(runs_no_driver(safe), "{safe:?}");
        }
        for driven in [
            &["merge-tree", "--write-tree", "a", "b"][..],
            &["read-tree", "-m", "-u", "a", "b"],
            &["add", "-A"],
            &["diff", "a", "b"],
            &["reset", "-q", "--hard"],
            &["worktree", "add", "p"],
            &["cat-file", "--filters", "HEAD:a"],
            &["cat-file", "--textconv", "HEAD:a"],
            &[],
        ] {
            assert!(!runs_no_driver(driven), "{driven:?}");
        }
    }

    #[test]
    fn every_driver_the_configuration_names_is_blanked() {
        let list = "core.bare\0filter.evil.clean\0filter.evil.smudge\0Filter.a.b.process\0diff.x.textconv\0merge.m.driver\0include.path\0";
        let shown: Vec<String> = blanks(list)
            .into_iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        assert_eq!(
            shown,
            [
                "filter.evil.clean=",
                "filter.evil.smudge=",
                "filter.evil.process=",
                "filter.evil.required=false",
                "filter.a.b.clean=",
                "filter.a.b.smudge=",
                "filter.a.b.process=",
                "filter.a.b.required=false",
                "diff.x.textconv=",
                "diff.x.command=",
                "merge.m.driver=",
            ]
        );
    }

    /// Who the tests' own commits are by.
    const AS_A: &[&str] = &["-c", "user.name=a", "-c", "user.email=a@example.invalid"];

    /// A repository on branch `main` with one commit of `a.txt`, and a way to run git
    /// in it as airsd does; `None` where there is no git.
    fn committed() -> Option<(tempfile::TempDir, PathBuf, impl Fn(&[&str]))> {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let git = air_proto::program::find("git", None, &[])?;
        let at = root.clone();
        let run = move |args: &[&str]| {
            let out = air_proto::program::git_command(&git)
                .args(args)
                .current_dir(&at)
                .output()
                .unwrap();
            assert!(out.status.success(), "git {args:?}: {out:?}");
        };
        run(&["init", "-q", "-b", "main"]);
        std::fs::write(root.join("a.txt"), "a\n").unwrap();
        run(&["add", "a.txt"]);
        run(&[AS_A, &["commit", "-qm", "one"]].concat());
        Some((dir, root, run))
    }

    /// A driver whose name `-c` cannot carry (`a=b`), a lazy fetch through a
    /// transport the repository allows itself: git, run as airsd runs it with no
    /// sandbox at all, runs neither.
    #[test]
    fn what_the_repository_configures_runs_nothing() {
        let Some((_dir, root, run)) = committed() else {
            return;
        };
        let ran = root.join("ran");
        let payload = format!("touch {}; cat", ran.display());
        let config = root.join(".git/config");
        let mut text = std::fs::read_to_string(&config).unwrap();
        text.push_str(&format!(
            "[filter \"a=b\"]\n\tclean = {payload}\n\tsmudge = {payload}\n[diff \"a=b\"]\n\ttextconv = {payload}\n"
        ));
        text.push_str(&format!(
            "[extensions]\n\tpartialClone = origin\n[remote \"origin\"]\n\turl = ext::sh -c touch% {}\n\tpromisor = true\n[protocol \"ext\"]\n\tallow = always\n",
            root.join("fetched").display()
        ));
        text = text.replace("repositoryformatversion = 0", "repositoryformatversion = 1");
        std::fs::write(&config, text).unwrap();
        std::fs::write(root.join(".gitattributes"), "* filter=a=b diff=a=b\n").unwrap();
        std::fs::write(root.join("a.txt"), "b\n").unwrap();
        let launcher = Launcher::plain(&root);
        let status = launcher
            .git(
                &["status", "--porcelain"],
                Reads::Content,
                1 << 20,
                Duration::from_secs(10),
            )
            .unwrap();
        assert!(status.0.contains(" M a.txt"), "{status:?}");
        let _ = launcher.git(&["diff"], Reads::Content, 1 << 20, Duration::from_secs(10));
        assert!(!ran.exists(), "a driver named a=b ran");
        // An object the index names that is not there: a promisor remote would fetch it.
        let missing = "1111111111111111111111111111111111111111";
        run(&[
            "update-index",
            "--add",
            "--cacheinfo",
            &format!("100644,{missing},gone.txt"),
        ]);
        let _ = launcher.git(
            &["diff", "--", "gone.txt"],
            Reads::Content,
            1 << 20,
            Duration::from_secs(10),
        );
        let _ = launcher.git(
            &["status", "--porcelain"],
            Reads::Content,
            1 << 20,
            Duration::from_secs(10),
        );
        assert!(
            !root.join("fetched").exists(),
            "a lazy fetch ran the remote's transport"
        );
    }

    /// `git status` as airsd runs it to read content.
    fn status_of(launcher: &Launcher) -> (String, bool) {
        launcher
            .git(
                &["status", "--porcelain"],
                Reads::Content,
                1 << 20,
                Duration::from_secs(10),
            )
            .unwrap()
    }

    /// The blanks are remembered between runs only while the configuration is
    /// unchanged: a driver added after a first run (by a rewrite of the file within
    /// the same second, or through a file the configuration includes) runs nothing.
    #[test]
    fn a_driver_added_after_a_run_is_blanked_too() {
        let Some((_dir, root, _run)) = committed() else {
            return;
        };
        let ran = root.join("ran");
        std::fs::write(root.join("a.txt"), "b\n").unwrap();
        let launcher = Launcher::plain(&root);
        let status = || status_of(&launcher);
        let config = root.join(".git/config");
        let payload = format!("touch {}; cat", ran.display());
        let section = format!("[filter \"x\"]\n\tclean = {payload}\n");
        // First a comment as long as the section that replaces it: the same size.
        let mut text = std::fs::read_to_string(&config).unwrap();
        let plain = text.clone();
        text.push_str(&format!("#{}\n", " ".repeat(section.len() - 2)));
        std::fs::write(&config, &text).unwrap();
        let _ = status();
        let before = std::fs::metadata(&config).unwrap().modified().unwrap();
        text = format!("{plain}{section}");
        std::fs::write(&config, &text).unwrap();
        // Its modification time set back: the change time still moves.
        std::fs::File::options()
            .write(true)
            .open(&config)
            .unwrap()
            .set_modified(before)
            .unwrap();
        std::fs::write(root.join(".gitattributes"), "* filter=x\n").unwrap();
        let _ = status();
        assert!(!ran.exists(), "a driver added to the configuration ran");
        // Through an included file changed after the configuration was last read.
        let extra = root.join("extra.cfg");
        std::fs::write(&extra, "").unwrap();
        text.push_str(&format!("[include]\n\tpath = {}\n", extra.display()));
        std::fs::write(&config, &text).unwrap();
        let _ = status();
        std::fs::write(&extra, format!("[filter \"y\"]\n\tclean = {payload}\n")).unwrap();
        std::fs::write(root.join(".gitattributes"), "* filter=y\n").unwrap();
        std::fs::write(root.join("a.txt"), "c\n").unwrap();
        let _ = status();
        assert!(!ran.exists(), "a driver of an included file ran");
    }

    /// A `commondir` file written into `.git` after a first run sends git to another
    /// directory's configuration: its driver is blanked too.
    #[test]
    fn a_common_directory_named_after_a_run_is_read_too() {
        let Some((dir, root, _run)) = committed() else {
            return;
        };
        let ran = root.join("ran");
        std::fs::write(root.join("a.txt"), "b\n").unwrap();
        let launcher = Launcher::plain(&root);
        let status = || status_of(&launcher);
        let _ = status();
        // Another git directory, a copy of this one, whose configuration names a
        // filter; `.git/commondir` points at it.
        let other = dir.path().join("other");
        let copied = Command::new("cp")
            .args([
                "-r",
                &root.join(".git").display().to_string(),
                &other.display().to_string(),
            ])
            .status()
            .unwrap();
        assert!(copied.success());
        let mut config = std::fs::read_to_string(other.join("config")).unwrap();
        config.push_str(&format!(
            "[filter \"x\"]\n\tclean = touch {}; cat\n",
            ran.display()
        ));
        std::fs::write(other.join("config"), config).unwrap();
        std::fs::write(root.join(".git/commondir"), other.display().to_string()).unwrap();
        std::fs::write(root.join(".gitattributes"), "* filter=x\n").unwrap();
        std::fs::write(root.join("a.txt"), "c\n").unwrap();
        let _ = status();
        assert!(!ran.exists(), "the common directory's driver ran");
    }

    /// A worktree made, a commit in it, a merged tree and a ref moved, each by airsd's
    /// git that writes: none of the hooks, filters or merge drivers the repository
    /// planted runs, and the commit is air's.
    #[test]
    fn a_git_that_writes_runs_nothing_the_repository_planted() {
        let Some((_dir, root, run)) = committed() else {
            return;
        };
        let ran = root.join("ran");
        // The attributes are committed before anything they name exists.
        std::fs::write(root.join(".gitattributes"), "* filter=evil merge=evil\n").unwrap();
        run(&["add", ".gitattributes"]);
        run(&[AS_A, &["commit", "-qm", "attrs"]].concat());
        let payload = format!("touch {}; cat", ran.display());
        let mut config = std::fs::read_to_string(root.join(".git/config")).unwrap();
        config.push_str(&format!(
            "[core]\n\thooksPath = {}\n[filter \"evil\"]\n\tclean = {payload}\n\tsmudge = {payload}\n\tprocess = {payload}\n[merge \"evil\"]\n\tdriver = {payload}\n[commit]\n\tgpgSign = true\n[gpg]\n\tprogram = {}\n",
            root.join(".git/hooks").display(),
            root.join("ran-gpg").display()
        ));
        std::fs::write(root.join(".git/config"), config).unwrap();
        for hook in [
            "post-checkout",
            "pre-commit",
            "commit-msg",
            "post-commit",
            "reference-transaction",
            "post-merge",
        ] {
            let h = root.join(".git/hooks").join(hook);
            std::fs::write(&h, format!("#!/bin/sh\ntouch {}\n", ran.display())).unwrap();
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(&h, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let wt = root.join(".air/local/workspaces/s/T1");
        let writable = [root.join(".git"), root.join(".air/local/workspaces")];
        let launcher = Launcher::plain(&root);
        let t = Duration::from_secs(20);
        let wt_s = wt.display().to_string();
        launcher
            .git_write(
                &["worktree", "add", "-q", "-b", "air/s/T1", &wt_s, "HEAD"],
                &writable,
                1 << 20,
                t,
            )
            .unwrap();
        assert_eq!(std::fs::read_to_string(wt.join("a.txt")).unwrap(), "a\n");
        std::fs::write(wt.join("b.txt"), "b\n").unwrap();
        let in_wt = launcher.at(&wt);
        in_wt
            .git_write(&["add", "-A"], &writable, 1 << 20, t)
            .unwrap();
        in_wt
            .git_write(&["commit", "-q", "-m", "T1"], &writable, 1 << 20, t)
            .unwrap();
        let (author, _) = in_wt
            .git(
                &["log", "-1", "--format=%an <%ae>"],
                Reads::Metadata,
                1024,
                t,
            )
            .unwrap();
        assert_eq!(author.trim(), "air <air@localhost.invalid>");
        let (tree, _) = launcher
            .git_write(
                &["merge-tree", "--write-tree", "main", "air/s/T1"],
                &writable,
                1 << 20,
                t,
            )
            .unwrap();
        let tree = tree.lines().next().unwrap_or_default().to_string();
        assert_eq!(tree.len(), 40, "{tree}");
        launcher
            .git_write(
                &["update-ref", "refs/heads/air/s/integration", "air/s/T1"],
                &writable,
                1024,
                t,
            )
            .unwrap();
        assert!(!ran.exists(), "something the repository planted ran");
        assert!(!root.join("ran-gpg").exists(), "a commit was signed");
    }

    /// A `packed-refs` linked to any file: git's error quotes its first line, and an
    /// unconfined git reads it as airsd's user.
    #[test]
    fn an_unconfined_gits_errors_quote_nothing() {
        let Some((_dir, root, _)) = committed() else {
            return;
        };
        let secret = tempfile::tempdir().unwrap();
        std::fs::write(secret.path().join("s"), "TOPSECRET=hunter2\n").unwrap();
        std::fs::remove_file(root.join(".git/refs/heads/main")).unwrap();
        std::os::unix::fs::symlink(secret.path().join("s"), root.join(".git/packed-refs")).unwrap();
        let err = Launcher::plain(&root)
            .git(
                &["rev-parse", "HEAD"],
                Reads::Metadata,
                1024,
                Duration::from_secs(10),
            )
            .unwrap_err();
        assert!(!err.contains("hunter2"), "{err}");
        assert!(err.contains("git rev-parse HEAD: git failed"), "{err}");
    }
}
