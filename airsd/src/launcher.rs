//! The one way airsd runs a program on the project's content itself (git, today), as
//! opposed to an agent's command (`tools::exec`): the program by absolute path from a
//! trusted directory ([`air_proto::program::find`], never the project's or a
//! temporary directory), a clean environment, git's executing settings fixed
//! ([`air_proto::program::NEUTRAL_GIT`]) and the system and global configuration
//! ignored, its own process group killed when it ends, overruns its time or says too
//! much. A program that reads the files' content (where a filter or diff driver the
//! repository names could still run) also gets every driver of the repository's
//! configuration blanked, and runs under the sandbox an agent's command gets, with
//! nothing writable: whatever still ran would run as confined as the agent. Only
//! where nothing git reads of its configuration can change between airsd's list and
//! git's run (see [`Fixed`]) does it run as a metadata read does.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::sandbox::{Policy, Protections, Views};

/// How many commands running now may write git's own configuration (a person
/// allowed them a protected write). The lock is also held through each content read
/// that runs outside the sandbox, so that none of them overlaps such a command.
static UNSTEADY: std::sync::Mutex<usize> = std::sync::Mutex::new(0);

/// Held by a command a person allowed a protected write, from before it starts until
/// the state after it is read: meanwhile content reads run under the sandbox.
pub struct Unsteady(());

impl Unsteady {
    pub fn hold() -> Unsteady {
        *UNSTEADY.lock().unwrap_or_else(|p| p.into_inner()) += 1;
        Unsteady(())
    }
}

impl Drop for Unsteady {
    fn drop(&mut self) {
        let mut n = UNSTEADY.lock().unwrap_or_else(|p| p.into_inner());
        *n = n.saturating_sub(1);
    }
}

/// What a run of git reads, which decides how it is confined.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reads {
    /// Refs, objects, the index and names of files (`rev-parse`, `log --format`,
    /// `ls-files`): nothing a repository's configuration can hook a program to.
    Metadata,
    /// The working tree's files (`status`, `diff`): filters and diff drivers apply.
    Content,
}

/// How airsd runs its own programs for one project.
#[derive(Clone, Debug)]
pub struct Launcher {
    root: PathBuf,
    git: Option<PathBuf>,
    /// airsd itself (`airsd __sandbox`) and what the sandbox can do here.
    sandbox: Option<(PathBuf, Protections)>,
    /// What a confined program may not see (air's state, the credential stores).
    views: Views,
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
        let git = self.git.as_deref().ok_or_else(|| {
            "no git found in a system directory or a trusted directory of PATH".to_string()
        })?;
        let mut settings: Vec<String> = Vec::new();
        // Where git's directories are named to it rather than found (see `Fixed`).
        let mut fixed: Option<Fixed> = None;
        // Held from the list of the configuration to the end of an unconfined run.
        let mut steady = None;
        if reads == Reads::Content {
            let held = UNSTEADY.lock().unwrap_or_else(|p| p.into_inner());
            let (names, found) = self.read_config(git)?;
            settings = blanks(&names);
            if *held == 0 {
                fixed = found;
                steady = Some(held);
            }
        }
        let mut git_args: Vec<String> = Vec::new();
        for s in air_proto::program::NEUTRAL_GIT
            .iter()
            .map(|s| s.to_string())
            .chain(settings)
        {
            git_args.push("-c".into());
            git_args.push(s);
        }
        git_args.extend(args.iter().map(|a| a.to_string()));
        let confined = match (&self.sandbox, reads) {
            // Commands cannot change what this git reads of its configuration (their
            // own mount namespaces make it read-only) and it was all read above: the
            // blanks hold, and it runs as a metadata read does.
            (Some((_, found)), Reads::Content) if fixed.is_some() && found.isolation.is_ok() => {
                let mut c = Command::new(git);
                c.args(&git_args);
                c
            }
            (Some((exe, found)), Reads::Content) => {
                let policy = Policy {
                    writable: vec![PathBuf::from("/dev/null")],
                    net: None,
                    home: self.views.home.clone(),
                    home_read: self.views.home_read.clone(),
                    isolate: found.isolation.is_ok().then(|| self.views.clone()),
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
            .current_dir(&self.root);
        if let Some(f) = &fixed {
            cmd.envs(f.env());
        }
        let what = format!("git {}", args.join(" "));
        if fixed.is_none() {
            // Only an unconfined run needs every unsteady command kept out.
            drop(steady.take());
        }
        let out = run_bounded(cmd, cap, limit, &what)?;
        drop(steady);
        match out.status {
            Some(s) if s.success() || out.cut => {}
            Some(_) => {
                return Err(format!(
                    "{what}: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                ))
            }
            None => return Err(format!("{what}: it did not end")),
        }
        Ok((String::from_utf8_lossy(&out.stdout).into_owned(), out.cut))
    }

    /// The names the repository's own configuration sets (the system and global ones
    /// are not read): what [`blanks`] blanks. With them, for a repository of the plain
    /// layout whose whole configuration is its own `.git/config` (no include, no
    /// per-worktree file), the directories to name to git so that it reads nothing
    /// else: then no command can add a driver between this read and git's.
    fn read_config(&self, git: &Path) -> Result<(String, Option<Fixed>), String> {
        let fixed = Fixed::find(&self.root);
        let mut cmd = air_proto::program::git_command(git);
        cmd.args(["config", "--list", "--name-only", "--show-origin", "-z"])
            .current_dir(&self.root);
        if let Some(f) = &fixed {
            cmd.envs(f.env());
        }
        let out = run_bounded(
            cmd,
            1024 * 1024,
            Duration::from_secs(5),
            "git config --list",
        )?;
        if out.cut {
            return Err("the repository's configuration is too large to read".to_string());
        }
        let text = String::from_utf8_lossy(&out.stdout);
        let mut names = String::new();
        let mut steady = fixed.is_some();
        let own = fixed
            .as_ref()
            .map(|f| format!("file:{}", f.git_dir.join("config").display()));
        let mut fields = text.split('\0');
        while let (Some(origin), Some(name)) = (fields.next(), fields.next()) {
            let lower = name.to_ascii_lowercase();
            let from_elsewhere = origin != "command line:" && Some(origin) != own.as_deref();
            if from_elsewhere
                || lower.starts_with("include.")
                || lower.starts_with("includeif.")
                || lower == "extensions.worktreeconfig"
            {
                steady = false;
            }
            names.push_str(name);
            names.push('\0');
        }
        Ok((names, fixed.filter(|_| steady)))
    }
}

/// A repository of the plain layout: git would find it from the project root as the
/// `.git` directory (not a link, not a file naming another) of `top`, with no
/// `commondir`. git is told these directories instead of finding them, so a
/// `commondir` or `.git` file a command makes meanwhile is not followed.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Fixed {
    top: PathBuf,
    git_dir: PathBuf,
}

impl Fixed {
    fn find(root: &Path) -> Option<Fixed> {
        for dir in root.ancestors() {
            let dot = dir.join(".git");
            match std::fs::symlink_metadata(&dot) {
                Ok(m) if m.is_dir() => {
                    if std::fs::symlink_metadata(dot.join("commondir")).is_ok() {
                        return None;
                    }
                    return Some(Fixed {
                        top: dir.to_path_buf(),
                        git_dir: dot,
                    });
                }
                Ok(_) => return None,
                Err(_) => continue,
            }
        }
        None
    }

    fn env(&self) -> [(&'static str, &Path); 3] {
        [
            ("GIT_DIR", self.git_dir.as_path()),
            ("GIT_COMMON_DIR", self.git_dir.as_path()),
            ("GIT_WORK_TREE", self.top.as_path()),
        ]
    }
}

/// The settings that blank each driver named in a `git config --list --name-only -z`
/// answer.
fn blanks(names: &str) -> Vec<String> {
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
        let keys: &[&str] = match section.as_str() {
            "filter" => &["clean=", "smudge=", "process=", "required=false"],
            "diff" => &["textconv=", "command="],
            "merge" => &["driver="],
            _ => continue,
        };
        if !seen.insert((section.clone(), driver.to_string())) {
            continue;
        }
        for k in keys {
            out.push(format!("{section}.{driver}.{k}"));
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
    fn every_driver_the_configuration_names_is_blanked() {
        let list = "core.bare\0filter.evil.clean\0filter.evil.smudge\0Filter.a.b.process\0diff.x.textconv\0merge.m.driver\0include.path\0";
        assert_eq!(
            blanks(list),
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

    fn repo() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let git = air_proto::program::find("git", None, &[]).unwrap();
        let run = |args: &[&str]| {
            let ok = air_proto::program::git_command(&git)
                .args(args)
                .current_dir(&root)
                .output()
                .unwrap()
                .status
                .success();
            assert!(ok, "git {args:?}");
        };
        run(&["init", "-q"]);
        std::fs::write(root.join("a.txt"), "a\n").unwrap();
        run(&["add", "a.txt"]);
        run(&[
            "-c",
            "user.name=a",
            "-c",
            "user.email=a@example.invalid",
            "commit",
            "-qm",
            "one",
        ]);
        (dir, root)
    }

    #[test]
    fn a_plain_repository_is_read_with_its_directories_named() {
        let (_d, root) = repo();
        let launcher = Launcher::plain(&root.join("sub"));
        std::fs::create_dir_all(root.join("sub")).unwrap();
        let git = launcher.git_program().unwrap().to_path_buf();
        let (_, fixed) = launcher.read_config(&git).unwrap();
        assert_eq!(
            fixed,
            Some(Fixed {
                top: root.clone(),
                git_dir: root.join(".git")
            })
        );
        // An include (even of a file not there yet) or a per-worktree file: what git
        // reads could change after the list; so could a commondir or a .git file.
        for (key, value) in [
            ("include.path", "../x.cfg"),
            ("includeIf.gitdir:/x/.path", "y.cfg"),
            ("extensions.worktreeConfig", "true"),
        ] {
            let (_d, root) = repo();
            let ok = air_proto::program::git_command(&git)
                .args(["config", key, value])
                .current_dir(&root)
                .status()
                .unwrap()
                .success();
            assert!(ok);
            let launcher = Launcher::plain(&root);
            assert_eq!(launcher.read_config(&git).unwrap().1, None, "{key}");
        }
        let (_d, root) = repo();
        std::fs::write(root.join(".git/commondir"), ".").unwrap();
        assert_eq!(Fixed::find(&root), None);
        let (_d, root) = repo();
        let real = root.join("real-git");
        std::fs::rename(root.join(".git"), &real).unwrap();
        std::fs::write(root.join(".git"), format!("gitdir: {}\n", real.display())).unwrap();
        assert_eq!(Fixed::find(&root), None);
    }

    #[test]
    fn a_commondir_planted_after_the_list_is_not_followed() {
        let (_d, root) = repo();
        let fixed = Fixed::find(&root).unwrap();
        // What a command plants meanwhile: a common directory whose configuration
        // defines the filter the attributes name.
        let evil = tempfile::tempdir().unwrap();
        let marker = evil.path().join("ran");
        let copy = std::process::Command::new("cp")
            .arg("-r")
            .arg(root.join(".git/."))
            .arg(evil.path())
            .status()
            .unwrap();
        assert!(copy.success());
        std::fs::write(
            evil.path().join("config"),
            format!(
                "[core]\n\trepositoryformatversion = 0\n[filter \"x\"]\n\tclean = touch {}; cat\n",
                marker.display()
            ),
        )
        .unwrap();
        std::fs::write(
            root.join(".git/commondir"),
            evil.path().display().to_string(),
        )
        .unwrap();
        std::fs::write(root.join(".gitattributes"), "* filter=x\n").unwrap();
        std::fs::write(root.join("a.txt"), "b\n").unwrap();
        let git = air_proto::program::find("git", None, &[]).unwrap();
        // Without the names git follows it (the test is of something real) …
        let followed = air_proto::program::git_command(&git)
            .args(["status", "--porcelain"])
            .current_dir(&root)
            .output()
            .unwrap();
        assert!(followed.status.success());
        assert!(marker.exists(), "git did not follow the commondir");
        std::fs::remove_file(&marker).unwrap();
        // … and with them it does not.
        let out = air_proto::program::git_command(&git)
            .args(["status", "--porcelain"])
            .envs(fixed.env())
            .current_dir(&root)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stdout).contains(" M a.txt"));
        assert!(!marker.exists(), "the planted filter ran");
    }
}
