//! The OS sandbox for agents' commands, in two parts, each used where the kernel has
//! it (as Codex and bubblewrap do):
//!
//! - **Landlock**: a command may read everything but write only beneath the paths
//!   the PermissionEngine allowed, so it cannot do what the engine refused, whatever
//!   the analysis of its text missed.
//! - **Namespaces** (`isolate`): what it may see. air's own state (the session
//!   databases, the socket), the credential stores and air's configuration are
//!   covered by empty stand-ins; git's configuration and hooks are read-only; other
//!   processes and their environments are out of sight.
//!
//! The restriction is applied by airsd itself, re-executed as
//! `airsd __sandbox [--isolate] [--hide P]… [--ro P]… --write DIR … -- PROGRAM ARGS…`:
//! it restricts its own process, then execs the command, which inherits the
//! restriction (and cannot lift it). Doing it in the child between fork and exec
//! would allocate in a forked copy of a multithreaded process; a fresh process has
//! no such hazard.

mod isolate;

pub use isolate::Views;

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use landlock::{
    path_beneath_rules, Access, AccessFs, CompatLevel, Compatible, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus, ABI,
};

/// Where a command's launcher listens for airsd's network proxy, in the command's own
/// network namespace (see `crate::proxy`).
pub const PROXY_LISTEN: &str = "127.0.0.1:3128";
/// The proxy's address as commands are told it (`HTTP_PROXY` …).
pub const PROXY_URL: &str = "http://127.0.0.1:3128";

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
    "go/pkg/mod",
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
    ".nuget/packages",
    ".local/share/NuGet",
    ".local/state",
];

/// The places any command may write: the project, the temporary directories, the
/// ordinary devices, build caches in the home directory, and `extra`. A home without
/// the XDG cache directory (a fresh account, a container) gets it first: pip, go,
/// node-gyp and most tools keep their caches there, and a command cannot make it
/// itself.
pub fn writable(root: &Path, home: Option<&Path>, extra: &[PathBuf]) -> Vec<PathBuf> {
    let mut out = vec![
        root.to_path_buf(),
        std::env::temp_dir(),
        PathBuf::from("/tmp"),
        PathBuf::from("/var/tmp"),
    ];
    out.extend(DEVICES.iter().map(PathBuf::from));
    if let Some(h) = home {
        make_cache_dir(h);
        out.extend(HOME_CACHES.iter().map(|c| h.join(c)));
    }
    out.extend(extra.iter().cloned());
    out.retain(|p| p.exists());
    out.sort();
    out.dedup();
    out
}

/// Makes `home/.cache` (0700) when the home is a directory and it is missing; a
/// failure leaves the cache unwritable, as before.
fn make_cache_dir(home: &Path) {
    make_home_dir(home, ".cache");
}

/// Makes `home/rel` (each missing part 0700) when the home is a directory and it is
/// missing; never through a link, never outside the home.
fn make_home_dir(home: &Path, rel: &str) {
    use std::os::unix::fs::DirBuilderExt as _;
    if !home.is_dir()
        || rel
            .split('/')
            .any(|p| p.is_empty() || p == "." || p == "..")
    {
        return;
    }
    let mut at = home.to_path_buf();
    for part in rel.split('/') {
        at.push(part);
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.is_dir() => continue,
            Ok(_) => return,
            Err(_) => {
                if std::fs::DirBuilder::new().mode(0o700).create(&at).is_err() {
                    return;
                }
            }
        }
    }
}

/// The caches in the home directory each build tool keeps, by the program's name.
const TOOL_CACHES: &[(&[&str], &[&str])] = &[
    (&["mvn", "mvnw"], &[".m2"]),
    (&["gradle", "gradlew"], &[".gradle"]),
    (&["npm", "npx"], &[".npm"]),
    (&["pnpm"], &[".pnpm-store"]),
    (&["yarn"], &[".yarn"]),
    (&["cargo"], &[".cargo/registry", ".cargo/git"]),
    (&["go"], &["go/pkg/mod"]),
    (&["conan"], &[".conan2"]),
    (&["dotnet"], &[".nuget/packages", ".local/share/NuGet"]),
    (&["uv", "uvx"], &[".cache/uv"]),
    (&["ccache"], &[".ccache"]),
];

/// Makes the home caches (`~/.m2` for Maven) of the build tools `command` runs, when
/// missing: the sandbox lets a command write only caches that exist, and a fresh
/// account has none, so Maven's first build would fail to make its repository. Only
/// the tools the command runs get theirs.
pub fn make_tool_caches(home: Option<&Path>, command: &str) {
    let Some(home) = home else { return };
    let chain = air_proto::chain::read(command, true);
    for step in &chain.steps {
        let argv = crate::profiles::words::tool(&step.argv);
        let Some(first) = argv.first() else { continue };
        // A wrapper script of the project's (`./mvnw`) by its name.
        let name = first.rsplit('/').next().unwrap_or(first);
        for (programs, caches) in TOOL_CACHES {
            if programs.contains(&name) {
                for c in *caches {
                    make_home_dir(home, c);
                }
            }
        }
    }
}

/// How one command is confined.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Policy {
    /// Where it may write (Landlock).
    pub writable: Vec<PathBuf>,
    /// The home directory, of which it reads only `home_read` (and the writable
    /// places); other users' homes are not read either. `None`: it reads everything.
    pub home: Option<PathBuf>,
    pub home_read: Vec<PathBuf>,
    /// Its own namespaces with these views (when the kernel allows them).
    pub isolate: Option<Views>,
    /// airsd's proxy (`TOKEN@NAME`), the command's only way out of its network
    /// namespace; without it the command has no network at all.
    pub net: Option<String>,
}

/// The launcher's arguments: `[--isolate [--ro P]… [--hide P]…] --write DIR`… `--`
/// program args….
pub fn launcher_args(policy: &Policy, program: &str, args: &[String]) -> Vec<OsString> {
    // Who the launcher's parent must be: if airsd dies before the launcher ties its
    // life to it, the launcher finds another parent (init, or a subreaper) and stops.
    let mut out: Vec<OsString> = vec![
        ARG.into(),
        "--parent".into(),
        std::process::id().to_string().into(),
    ];
    if let Some(views) = &policy.isolate {
        out.push("--isolate".into());
        for p in &views.read_only {
            out.push("--ro".into());
            out.push(p.clone().into_os_string());
        }
        for p in &views.hidden {
            out.push("--hide".into());
            out.push(p.clone().into_os_string());
        }
        for p in &views.shown {
            out.push("--show".into());
            out.push(p.clone().into_os_string());
        }
        for p in &views.pinned {
            out.push("--pin".into());
            out.push(p.clone().into_os_string());
        }
        if let Some(n) = &policy.net {
            out.push("--net".into());
            out.push(n.into());
        }
        for (copy, original) in &views.masked {
            out.push("--mask".into());
            out.push(copy.clone().into_os_string());
            out.push(original.clone().into_os_string());
        }
        for (from, onto) in &views.lent {
            out.push("--lend".into());
            out.push(from.clone().into_os_string());
            out.push(onto.clone().into_os_string());
        }
    }
    if let Some(h) = &policy.home {
        out.push("--home".into());
        out.push(h.clone().into_os_string());
        for p in &policy.home_read {
            out.push("--home-read".into());
            out.push(p.clone().into_os_string());
        }
    }
    for w in &policy.writable {
        out.push("--write".into());
        out.push(w.clone().into_os_string());
    }
    out.push("--".into());
    out.push(program.into());
    out.extend(args.iter().map(OsString::from));
    out
}

/// The top directories where people's homes live: commands read none of them but
/// what [`readable`] allows of their own.
const HOMES: &[&str] = &["/home", "/root", "/Users", "/var/home"];

/// What the command may read. With a home directory: the system's directories (every
/// entry of `/` but the homes), of the home only `home_read`, and the writable places
/// (given their own rules); a root command, which owns the block devices, gets no raw
/// disk under `/dev`, so it cannot read a hidden file off the disk beneath the
/// stand-ins. Without one: everything (but the raw disks, for root).
fn readable(home: Option<&Path>, home_read: &[PathBuf]) -> Vec<PathBuf> {
    let root = nix::unistd::geteuid().is_root();
    if home.is_none() && !root {
        return vec![PathBuf::from("/")];
    }
    use std::os::unix::fs::FileTypeExt as _;
    // What Landlock takes a rule for: directories, files and character devices
    // (not sockets, pipes or the block devices), symlinks followed.
    let entries = |dir: &str| -> Vec<PathBuf> {
        let ruled = |t: std::fs::FileType| t.is_dir() || t.is_file() || t.is_char_device();
        std::fs::read_dir(dir)
            .map(|rd| {
                rd.flatten()
                    .filter(|e| match e.file_type() {
                        // The directory's own record says, but for a link, which is
                        // followed.
                        Ok(t) if t.is_symlink() => {
                            std::fs::metadata(e.path()).is_ok_and(|m| ruled(m.file_type()))
                        }
                        Ok(t) => ruled(t),
                        Err(_) => false,
                    })
                    .map(|e| e.path())
                    .collect()
            })
            .unwrap_or_default()
    };
    // The home's own top directory (`/home`, `/root`, or wherever it is) is left out.
    let home_top: Option<PathBuf> = home.and_then(|h| {
        let mut c = h.components();
        c.next()?;
        Some(PathBuf::from("/").join(c.next()?))
    });
    let mut out: Vec<PathBuf> = entries("/")
        .into_iter()
        .filter(|p| !(root && p == Path::new("/dev")))
        .filter(|p| {
            home.is_none()
                || !(HOMES.iter().any(|h| p == Path::new(h)) || home_top.as_deref() == Some(p))
        })
        .collect();
    if root {
        out.retain(|p| p != Path::new("/dev"));
        out.extend(entries("/dev"));
    }
    if let Some(h) = home {
        // The home's top may hold more than homes (`/var` for a service's home): what
        // of it is not on the way to the home is read as before.
        if let Some(top) = &home_top {
            if !HOMES.iter().any(|t| top == Path::new(t)) {
                let mut dir = top.clone();
                for c in h.strip_prefix(top).unwrap_or(h).components() {
                    let next = dir.join(c);
                    out.extend(
                        entries(&dir.display().to_string())
                            .into_iter()
                            .filter(|e| e != &next),
                    );
                    dir = next;
                }
            }
        }
        out.extend(home_read.iter().filter(|p| p.exists()).cloned());
    }
    out
}

fn restrict(writable: &[PathBuf], readable: Vec<PathBuf>) -> Result<RulesetStatus, String> {
    let all = AccessFs::from_all(ABI_USED);
    let status = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(all)
        .and_then(|r| r.create())
        .and_then(|r| r.add_rules(path_beneath_rules(readable, AccessFs::from_read(ABI_USED))))
        .and_then(|r| r.add_rules(path_beneath_rules(writable, all)))
        .and_then(|r| r.restrict_self())
        .map_err(|e| format!("landlock: {e}"))?;
    Ok(status.ruleset)
}

/// `airsd __sandbox …`: restricts this process, then becomes the command. Returns
/// only on failure, with the exit code to use.
pub fn launch(args: &[OsString]) -> i32 {
    use std::os::unix::process::CommandExt as _;
    if args.first().is_some_and(|a| a == "--probe") {
        // `airsd __sandbox --probe`: what the sandbox can do here, for `air doctor`.
        let found = std::env::current_exe()
            .map(|exe| protections(&exe))
            .unwrap_or_else(|e| Protections {
                landlock: available(),
                isolation: Err(format!("cannot find airsd itself: {e}")),
            });
        let report = serde_json::json!({
            "landlock": found.landlock,
            "namespaces": found.isolation.is_ok(),
            "why_not": found.isolation.err(),
        });
        println!("{report}");
        return 0;
    }
    let mut writable = Vec::new();
    let mut net: Option<String> = None;
    let mut views = Views::default();
    let mut isolate = false;
    let mut parent = None;
    let mut i = 0;
    while i < args.len() {
        let value = args.get(i + 1).map(PathBuf::from);
        match (args[i].to_str(), value) {
            (Some("--write"), Some(p)) => writable.push(p),
            (Some("--hide"), Some(p)) => views.hidden.push(p),
            (Some("--show"), Some(p)) => views.shown.push(p),
            (Some("--ro"), Some(p)) => views.read_only.push(p),
            (Some("--pin"), Some(p)) => views.pinned.push(p),
            (Some("--home"), Some(p)) => views.home = Some(p),
            (Some("--net"), Some(p)) => net = Some(p.to_string_lossy().into_owned()),
            (Some("--home-read"), Some(p)) => views.home_read.push(p),
            (Some("--mask"), Some(copy)) => match args.get(i + 2) {
                Some(original) => {
                    views.masked.push((copy, PathBuf::from(original)));
                    i += 1;
                }
                None => {
                    eprintln!("airsd {ARG}: --mask takes a copy and the file it covers");
                    return 126;
                }
            },
            (Some("--lend"), Some(from)) => match args.get(i + 2) {
                Some(onto) => {
                    views.lent.push((from, PathBuf::from(onto)));
                    i += 1;
                }
                None => {
                    eprintln!("airsd {ARG}: --lend takes a directory and where it goes");
                    return 126;
                }
            },
            (Some("--parent"), Some(p)) => {
                parent = p.to_str().and_then(|p| p.parse::<i32>().ok());
                if parent.is_none() {
                    eprintln!("airsd {ARG}: --parent takes a process id, not {p:?}");
                    return 126;
                }
            }
            (Some("--isolate"), _) => {
                isolate = true;
                i += 1;
                continue;
            }
            (Some("--"), _) => {
                i += 1;
                break;
            }
            _ => {
                eprintln!("airsd {ARG}: unexpected argument {:?}", args[i]);
                return 126;
            }
        }
        i += 2;
    }
    let Some(program) = args.get(i) else {
        eprintln!("airsd {ARG}: no command to run");
        return 126;
    };
    // The command dies with airsd: a command of a daemon that was killed must not go
    // on changing the project while the run is recovered.
    if let Err(e) = isolate::die_with_parent(parent) {
        eprintln!("airsd {ARG}: {e}");
        return 126;
    }
    if isolate {
        // airsd's proxy, reached while the launcher is still in airsd's network.
        let proxy = match net.as_deref().map(connect_proxy) {
            None => None,
            Some(Ok(s)) => Some(s),
            Some(Err(e)) => {
                eprintln!("airsd {ARG}: the network proxy cannot be reached: {e}");
                return 126;
            }
        };
        if let Err(e) = isolate::enter(&views, &writable, proxy) {
            eprintln!("airsd {ARG}: the sandbox could not be set up: {e}");
            return 126;
        }
    }
    let readable = readable(views.home.as_deref(), &views.home_read);
    if let Err(e) = restrict(&writable, readable) {
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

/// Connects to airsd's proxy named by `--net TOKEN@NAME` and says the token.
fn connect_proxy(spec: &str) -> Result<std::os::unix::net::UnixStream, String> {
    use std::io::Write as _;
    use std::os::linux::net::SocketAddrExt as _;
    let (token, name) = spec
        .split_once('@')
        .ok_or_else(|| format!("--net takes TOKEN@NAME, not {spec:?}"))?;
    let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes())
        .map_err(|e| e.to_string())?;
    let mut s = std::os::unix::net::UnixStream::connect_addr(&addr).map_err(|e| e.to_string())?;
    s.write_all(format!("{token}\n").as_bytes())
        .map_err(|e| e.to_string())?;
    Ok(s)
}

/// What the OS sandbox can do on this machine, found once per launcher.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Protections {
    /// Landlock confines writes.
    pub landlock: bool,
    /// Namespaces hide air's state, the credential stores and other processes; when
    /// they cannot, why not.
    pub isolation: Result<(), String>,
}

impl Protections {
    /// The `sandbox` word of a command's result.
    pub fn label(&self, isolated: bool) -> &'static str {
        match (self.landlock, isolated && self.isolation.is_ok()) {
            (true, true) => "landlock+namespaces",
            (true, false) => "landlock",
            (false, true) => "namespaces",
            (false, false) => "none",
        }
    }
}

/// Tries the launcher once: a command in its own namespaces, with a directory
/// hidden and a file made read-only, must see the stand-in and only itself.
fn probe(exe: &Path) -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| format!("a probe directory: {e}"))?;
    let secret = dir.path().join("hidden");
    let fixed = dir.path().join("fixed");
    std::fs::create_dir(&secret)
        .and_then(|()| std::fs::write(secret.join("s"), "x"))
        .and_then(|()| std::fs::write(&fixed, "x"))
        .map_err(|e| format!("a probe directory: {e}"))?;
    let policy = Policy {
        writable: Vec::new(),
        net: None,
        home: None,
        home_read: Vec::new(),
        isolate: Some(Views {
            hidden: vec![secret.clone()],
            read_only: vec![fixed.clone()],
            ..Views::default()
        }),
    };
    let script = format!(
        "test ! -e '{}/s' && test ! -w '{}' && test \"$(ls /proc | grep -c '^[0-9]')\" -le 8",
        secret.display(),
        fixed.display()
    );
    let out = std::process::Command::new(exe)
        .args(launcher_args(
            &policy,
            "/bin/sh",
            &["-c".to_string(), script],
        ))
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", exe.display()))?;
    if out.status.success() {
        return Ok(());
    }
    let why = String::from_utf8_lossy(&out.stderr).trim().to_string();
    Err(if why.is_empty() {
        "the namespaces did not hide what they should".into()
    } else {
        why.trim_start_matches(&format!("airsd {ARG}: "))
            .to_string()
    })
}

/// What the sandbox launcher `exe` can do here (probed once per process: the probe
/// starts the launcher, tens of milliseconds; a caller asking while it runs waits for
/// its answer rather than probing again).
pub fn protections(exe: &Path) -> Protections {
    use std::collections::HashMap;
    use std::sync::{Mutex, OnceLock};
    static SEEN: OnceLock<Mutex<HashMap<PathBuf, Protections>>> = OnceLock::new();
    let seen = SEEN.get_or_init(|| Mutex::new(HashMap::new()));
    let mut seen = seen.lock().unwrap_or_else(|p| p.into_inner());
    seen.entry(exe.to_path_buf())
        .or_insert_with(|| Protections {
            landlock: available(),
            isolation: probe(exe),
        })
        .clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_home_without_a_cache_directory_gets_one_commands_may_write() {
        let home = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        let places = writable(project.path(), Some(home.path()), &[]);
        let cache = home.path().join(".cache");
        assert!(cache.is_dir());
        assert!(places.contains(&cache), "{places:?}");
        // Caches that do not exist are not made.
        assert!(!home.path().join(".npm").exists());
        // A name already taken (here by a link) is left as it is, and not made writable.
        let other = tempfile::tempdir().unwrap();
        let home2 = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(other.path().join("gone"), home2.path().join(".cache")).unwrap();
        let places = writable(project.path(), Some(home2.path()), &[]);
        assert!(!other.path().join("gone").exists());
        assert!(!places.contains(&home2.path().join(".cache")), "{places:?}");
    }

    #[test]
    fn the_build_tools_a_command_runs_get_their_caches() {
        let home = tempfile::tempdir().unwrap();
        let project = tempfile::tempdir().unwrap();
        make_tool_caches(
            Some(home.path()),
            "cd app && ./mvnw -q test 2>&1 | tail -20 && timeout 60 cargo build",
        );
        for made in [".m2", ".cargo/registry", ".cargo/git"] {
            assert!(home.path().join(made).is_dir(), "{made}");
        }
        // Only theirs: npm's is not made for a Maven build.
        assert!(!home.path().join(".npm").exists());
        let places = writable(project.path(), Some(home.path()), &[]);
        assert!(places.contains(&home.path().join(".m2")), "{places:?}");
        // Never through a link.
        let other = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(other.path(), home.path().join(".gradle")).unwrap();
        make_tool_caches(Some(home.path()), "gradle test");
        assert!(std::fs::read_dir(other.path()).unwrap().next().is_none());
        // A home cache named with a link part is not followed either.
        std::os::unix::fs::symlink(other.path(), home.path().join("go")).unwrap();
        make_tool_caches(Some(home.path()), "go test ./...");
        assert!(!other.path().join("pkg").exists());
    }
}
