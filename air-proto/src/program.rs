//! The programs air runs itself (git above all), and how: found by absolute path in a
//! directory neither an agent nor a repository can put a program in, and git run so
//! that nothing of a repository's configuration (or an agent's change to it) can make
//! it execute anything.
//!
//! A trusted directory is absolute, outside the project and the temporary
//! directories, and it and every directory above it belong to root or to this user
//! and are writable by nobody else; the program in it likewise. `PATH` is searched
//! in its order for such a directory, then the usual system directories.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Where a program is looked for when `PATH` holds no trusted directory with it.
const SYSTEM_DIRS: &[&str] = &[
    "/usr/bin",
    "/bin",
    "/usr/local/bin",
    "/opt/homebrew/bin",
    "/run/current-system/sw/bin",
    "/home/linuxbrew/.linuxbrew/bin",
    "/usr/local/git/bin",
    "/usr/sbin",
    "/sbin",
];

/// Places anyone may write: never a source of programs.
const SHARED_WRITABLE: &[&str] = &["/tmp", "/var/tmp", "/dev/shm", "/private/tmp"];

/// Whether `meta` belongs to root or this user and nobody else may write it.
fn owned_and_closed(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    let me = nix::unistd::geteuid().as_raw();
    (meta.uid() == 0 || meta.uid() == me) && meta.mode() & 0o022 == 0
}

/// `dir`, resolved, if programs may be taken from it.
fn trusted_dir(dir: &Path, avoid: &[&Path]) -> Option<PathBuf> {
    if !dir.is_absolute() {
        return None;
    }
    let real = std::fs::canonicalize(dir).ok()?;
    let temp = std::env::temp_dir();
    let shared = SHARED_WRITABLE
        .iter()
        .map(Path::new)
        .chain(std::iter::once(temp.as_path()));
    for place in shared.chain(avoid.iter().copied()) {
        let place = std::fs::canonicalize(place).unwrap_or_else(|_| place.to_path_buf());
        if real.starts_with(&place) {
            return None;
        }
    }
    real.ancestors()
        .all(|a| std::fs::metadata(a).is_ok_and(|m| owned_and_closed(&m)))
        .then_some(real)
}

/// Whether programs may be taken from `dir` (absolute, outside the temporary
/// directories, it and every directory above it closed to other users).
pub fn trusted(dir: &Path) -> bool {
    trusted_dir(dir, &[]).is_some()
}

/// A directory for programs a test makes, where [`find`] takes them from: the first
/// of `preferred` (the build's own directory) and the user's cache that is trusted.
/// A checkout under `/tmp` has no trusted directory in it.
pub fn trusted_scratch(preferred: &Path) -> Option<PathBuf> {
    let cache = std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache").join("air-tests"));
    [Some(preferred.to_path_buf()), cache]
        .into_iter()
        .flatten()
        .find(|c| std::fs::create_dir_all(c).is_ok() && trusted(c))
}

/// The program `name` in `dir`, if it is one this user may trust: a regular executable
/// file (after its links are followed) that belongs to root or this user, writable by
/// nobody else, in a trusted directory.
fn trusted_program(dir: &Path, name: &str, avoid: &[&Path]) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = trusted_dir(dir, avoid)?;
    let candidate = dir.join(name);
    let real = std::fs::canonicalize(&candidate).ok()?;
    let meta = std::fs::metadata(&real).ok()?;
    let ok = meta.is_file()
        && meta.permissions().mode() & 0o111 != 0
        && owned_and_closed(&meta)
        && real.parent().and_then(|p| trusted_dir(p, avoid)).is_some();
    // The name on PATH is kept (`/usr/bin/git`, not git's own directory), as what a
    // person would run.
    ok.then_some(candidate)
}

/// Finds `name` in a trusted directory of `path` (a `PATH` value), in its order, or
/// else in the system directories. `avoid` are places never to take a program from
/// besides the temporary directories (the project root).
pub fn find(name: &str, path: Option<&OsStr>, avoid: &[&Path]) -> Option<PathBuf> {
    if name.is_empty() || name.contains('/') {
        return None;
    }
    let listed: Vec<PathBuf> = path
        .map(|p| std::env::split_paths(p).collect())
        .unwrap_or_default();
    listed
        .iter()
        .map(PathBuf::as_path)
        .chain(SYSTEM_DIRS.iter().map(Path::new))
        .find_map(|dir| trusted_program(dir, name, avoid))
}

/// git's settings air's own runs of git fix, so that no configuration of the
/// repository (its `config`, a `config.worktree`, a common directory an agent pointed
/// `commondir` at, an `include`) can make git run a program: no filesystem monitor,
/// no hooks, no pager, no external diff, no signature check, no transport, no
/// credential helper, no submodule recursion.
pub const NEUTRAL_GIT: &[&str] = &[
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "core.pager=cat",
    "core.attributesFile=/dev/null",
    "core.sshCommand=false",
    "core.askPass=",
    "core.alternateRefsCommand=",
    "diff.external=",
    "log.showSignature=false",
    "gpg.program=false",
    "gpg.ssh.program=false",
    "gpg.x509.program=false",
    "credential.helper=",
    "protocol.allow=never",
    "submodule.recurse=false",
    "status.submoduleSummary=false",
    "diff.ignoreSubmodules=all",
    "safe.directory=*",
];

/// A `git` command with a clean environment (none of the caller's: no provider key
/// reaches it), the system and the user's global configuration ignored, no prompt, no
/// optional lock, and [`NEUTRAL_GIT`]. The caller adds the subcommand and its
/// arguments.
pub fn git_command(git: &Path) -> Command {
    let mut cmd = Command::new(git);
    cmd.env_clear();
    for (k, v) in git_env(git) {
        cmd.env(k, v);
    }
    for setting in NEUTRAL_GIT {
        cmd.arg("-c").arg(setting);
    }
    cmd
}

/// The whole environment of [`git_command`]: a `PATH` of git's own directory and the
/// system's, the C locale, and git's switches for ignoring the system and global
/// configuration, prompts, optional locks, transports and lazy fetches.
pub fn git_env(git: &Path) -> Vec<(String, String)> {
    let dir = git
        .parent()
        .map(|d| d.display().to_string())
        .unwrap_or_default();
    vec![
        ("PATH".into(), format!("{dir}:/usr/bin:/bin")),
        ("LANG".into(), "C".into()),
        ("LC_ALL".into(), "C".into()),
        ("GIT_CONFIG_NOSYSTEM".into(), "1".into()),
        ("GIT_CONFIG_GLOBAL".into(), "/dev/null".into()),
        ("GIT_ATTR_NOSYSTEM".into(), "1".into()),
        ("GIT_TERMINAL_PROMPT".into(), "0".into()),
        ("GIT_OPTIONAL_LOCKS".into(), "0".into()),
        ("GIT_PAGER".into(), "cat".into()),
        ("PAGER".into(), "cat".into()),
        ("GIT_PROTOCOL_FROM_USER".into(), "0".into()),
        // No transport at all, whatever the repository's configuration allows (a
        // per-protocol `protocol.X.allow` would beat `-c protocol.allow=never`), and
        // no fetch of a missing object from a promisor remote.
        ("GIT_ALLOW_PROTOCOL".into(), "none".into()),
        ("GIT_NO_LAZY_FETCH".into(), "1".into()),
    ]
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_program_is_never_taken_from_the_project_or_a_shared_directory() {
        use std::os::unix::fs::PermissionsExt as _;
        let system = find("sh", None, &[]).expect("a system sh");
        // A directory of the project on PATH, first: passed over.
        let dir = tempfile::tempdir_in(std::env::current_dir().unwrap()).unwrap();
        let project = std::fs::canonicalize(dir.path()).unwrap();
        let bin = project.join("tools/bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::write(bin.join("sh"), "#!/bin/sh\necho planted\n").unwrap();
        std::fs::set_permissions(bin.join("sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = std::env::join_paths([bin.as_path(), Path::new("/usr/bin"), Path::new("/bin")])
            .unwrap();
        let found = find("sh", Some(&path), &[&project]).unwrap();
        assert!(!found.starts_with(&project), "{}", found.display());
        // A relative PATH entry, a temporary directory, a directory others may write:
        // passed over too.
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join("sh"), "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(
            tmp.path().join("sh"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        let open = tempfile::tempdir_in(std::env::current_dir().unwrap()).unwrap();
        std::fs::write(open.path().join("sh"), "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(
            open.path().join("sh"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        std::fs::set_permissions(open.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        let path = std::env::join_paths([
            Path::new("tools/bin"),
            tmp.path(),
            open.path(),
            Path::new("/usr/bin"),
            Path::new("/bin"),
        ])
        .unwrap();
        let found = find("sh", Some(&path), &[]).unwrap();
        assert!(
            found.starts_with("/usr/bin") || found.starts_with("/bin"),
            "{}",
            found.display()
        );
        assert_eq!(find("sh", None, &[]), Some(system));
        assert_eq!(find("../sh", None, &[]), None);
    }

    #[test]
    fn git_runs_with_a_clean_environment() {
        let Some(git) = find("git", None, &[]) else {
            return;
        };
        let out = git_command(&git)
            .args(["config", "--get", "core.hooksPath"])
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "/dev/null");
        let env: Vec<String> = git_env(&git).into_iter().map(|(k, _)| k).collect();
        assert!(!env.iter().any(|k| k.contains("KEY")), "{env:?}");
    }
}
