//! The OS sandbox for agents' commands (Landlock on Linux, best effort, as Codex
//! does): a command may read everything but write only beneath the paths the
//! PermissionEngine allowed, so it cannot do what the engine refused, whatever the
//! analysis of its text missed.
//!
//! The restriction is applied by airsd itself, re-executed as
//! `airsd __sandbox --write DIR … -- PROGRAM ARGS…`: it restricts its own process,
//! then execs the command, which inherits the restriction (and cannot lift it).
//! Doing it in the child between fork and exec would allocate in a forked copy of a
//! multithreaded process; a fresh process has no such hazard.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use landlock::{
    path_beneath_rules, Access, AccessFs, CompatLevel, Compatible, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus, ABI,
};

/// The first argument that makes airsd a sandbox launcher.
pub const ARG: &str = "__sandbox";

const ABI_USED: ABI = ABI::V5;

/// Whether this kernel enforces Landlock.
pub fn available() -> bool {
    Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(ABI::V1))
        .and_then(|r| r.create())
        .is_ok()
}

/// Devices commands use in the ordinary way.
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
    "/dev/ptmx",
    "/dev/pts",
    "/dev/shm",
];

/// Caches in the home directory that builds and package managers write.
const HOME_CACHES: &[&str] = &[
    ".cache",
    ".cargo/registry",
    ".cargo/git",
    ".rustup",
    ".npm",
    ".pnpm-store",
    ".yarn",
    ".gradle",
    ".m2",
    ".ccache",
    ".conan",
    ".conan2",
    ".cpm",
    ".vcpkg",
    ".local/state",
];

/// The places any command may write: the project, the temporary directories, the
/// ordinary devices, build caches in the home directory, and `extra`.
pub fn writable(root: &Path, home: Option<&Path>, extra: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = vec![
        root.to_path_buf(),
        std::env::temp_dir(),
        PathBuf::from("/tmp"),
        PathBuf::from("/var/tmp"),
    ];
    out.extend(DEVICES.iter().map(PathBuf::from));
    if let Some(h) = home {
        out.extend(HOME_CACHES.iter().map(|c| h.join(c)));
    }
    out.extend(extra.iter().cloned());
    out.retain(|p| p.exists());
    out.sort();
    out.dedup();
    out
}

/// The launcher's arguments: `--write DIR`… `--` program args….
pub fn launcher_args(writable: &[PathBuf], program: &str, args: &[String]) -> Vec<OsString> {
    let mut out: Vec<OsString> = vec![ARG.into()];
    for w in writable {
        out.push("--write".into());
        out.push(w.clone().into_os_string());
    }
    out.push("--".into());
    out.push(program.into());
    out.extend(args.iter().map(OsString::from));
    out
}

fn restrict(writable: &[PathBuf]) -> Result<RulesetStatus, String> {
    let all = AccessFs::from_all(ABI_USED);
    let status = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(all)
        .and_then(|r| r.create())
        .and_then(|r| r.add_rules(path_beneath_rules(["/"], AccessFs::from_read(ABI_USED))))
        .and_then(|r| r.add_rules(path_beneath_rules(writable, all)))
        .and_then(|r| r.restrict_self())
        .map_err(|e| format!("landlock: {e}"))?;
    Ok(status.ruleset)
}

/// `airsd __sandbox …`: restricts this process, then becomes the command. Returns
/// only on failure, with the exit code to use.
pub fn launch(args: &[OsString]) -> i32 {
    use std::os::unix::process::CommandExt as _;
    let mut writable = Vec::new();
    let mut i = 0;
    while i < args.len() {
        if args[i] == "--write" {
            if let Some(p) = args.get(i + 1) {
                writable.push(PathBuf::from(p));
            }
            i += 2;
        } else if args[i] == "--" {
            i += 1;
            break;
        } else {
            eprintln!("airsd {ARG}: unexpected argument {:?}", args[i]);
            return 126;
        }
    }
    let Some(program) = args.get(i) else {
        eprintln!("airsd {ARG}: no command to run");
        return 126;
    };
    if let Err(e) = restrict(&writable) {
        eprintln!("airsd {ARG}: the sandbox could not be set up: {e}");
        return 126;
    }
    let e = std::process::Command::new(program)
        .args(&args[i + 1..])
        .exec();
    eprintln!(
        "airsd {ARG}: cannot run {}: {e}",
        Path::new(program).display()
    );
    127
}
