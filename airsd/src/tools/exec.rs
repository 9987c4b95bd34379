//! `shell.run`: a command run by bash in its own process group, judged before it runs
//! (the command analysis and the PermissionEngine) and confined while it runs (the
//! OS sandbox where the kernel has one). Its output streams as it comes; all of it
//! is kept as artifacts, and the agent gets the head and the tail with a pointer to
//! the rest. A timeout or a cancel kills the whole process group, and so does the end
//! of the command: nothing it started outlives it.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use air_proto::event::AgentType;
use air_proto::plan::PermissionMode;
use serde::{Deserialize, Serialize};
use tokio::io::AsyncReadExt as _;

use super::command::{self, Env};
use super::error::ToolError;
use super::fs::FsContext;
use super::permission::{Access, Ask, Risk, Verdict};

/// The timeout when the call gives none.
pub const DEFAULT_TIMEOUT_MS: u64 = 120_000;
/// The longest timeout a call may ask for.
pub const MAX_TIMEOUT_MS: u64 = 600_000;
/// Bytes of each stream the result shows from the start, and again from the end.
pub const SHOWN_BYTES: usize = 16 * 1024;
/// Changed files a command's answer names at most (the record keeps them all).
pub const CHANGED_SHOWN: usize = 200;
/// Bytes of output streamed live per command; the rest is in the artifacts.
pub const STREAM_CAP: u64 = 1024 * 1024;

#[derive(Clone, Debug, PartialEq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunInput {
    /// The command, as bash reads it.
    pub command: String,
    /// Where it runs (default: the project root).
    #[serde(default)]
    pub cwd: Option<String>,
    /// Milliseconds before the command is killed (default 120,000; at most 600,000).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// What the command is for, in a few words.
    #[serde(default)]
    pub description: Option<String>,
    /// A server: answered at once, it runs until shell_stop, its timeout (default:
    /// the task's) or your end.
    #[serde(default)]
    pub background: bool,
}

#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StopInput {
    /// Its command_run_id.
    pub command_run_id: String,
}

#[derive(Clone, Debug, Default, PartialEq, Deserialize, Serialize, schemars::JsonSchema)]
pub struct RunOutput {
    pub command_run_id: String,
    /// The exit code; absent when the command was killed.
    pub exit_code: Option<i32>,
    /// The signal that ended it, when one did.
    pub signal: Option<i32>,
    pub timed_out: bool,
    pub cancelled: bool,
    pub duration_ms: u64,
    /// The start and the end of stdout (the middle is in the artifact when long).
    pub stdout: String,
    pub stderr: String,
    pub stdout_bytes: u64,
    pub stderr_bytes: u64,
    /// True when stdout or stderr is shown in part.
    pub truncated: bool,
    /// The full output, as artifact URIs (`artifact.read` reads them).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<String>,
    /// `landlock` when the command ran confined, `none` when not.
    pub sandbox: String,
    /// Files of the working tree whose state changed while the command ran (from
    /// git's status before and after; empty outside a git repository).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub changed_files: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// Started in the background and still running: the output is what it printed
    /// so far.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub running: bool,
    /// The task's checks this command ran to its end, however it was wrapped (`2>&1 |
    /// tail`, `-v`), as the evidence gate reads commands.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<String>,
}

/// Which output of a command.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Stream {
    #[default]
    Stdout,
    Stderr,
}

#[derive(Clone, Debug, PartialEq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OutputInput {
    /// The `command_run_id` a `shell_run` answered with.
    pub command_run_id: String,
    /// `stdout` (the default) or `stderr`.
    #[serde(default)]
    pub stream: Stream,
    /// The byte to start at (default 0; a previous answer's `next_offset` goes on).
    #[serde(default)]
    pub offset: Option<u64>,
    /// Most bytes to return (default and most 65,536).
    #[serde(default)]
    pub limit: Option<u64>,
}

#[derive(Clone, Debug, PartialEq, Deserialize, Serialize, schemars::JsonSchema)]
pub struct OutputOutput {
    pub command_run_id: String,
    pub stream: Stream,
    pub offset: u64,
    pub text: String,
    /// Where the next page starts, when there is more.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_offset: Option<u64>,
    /// The command still runs in the background: more may come.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub running: bool,
}

/// Bytes of kept output `shell.output` returns at most.
pub const OUTPUT_PAGE: u64 = 64 * 1024;

/// A command cleared to run.
#[derive(Clone, Debug)]
pub struct Prepared {
    pub command: String,
    pub cwd: PathBuf,
    pub timeout: Duration,
    /// Places outside the usual ones the command was allowed to write.
    pub extra_writable: Vec<PathBuf>,
    /// Credential stores a person allowed this command to read: not hidden from it.
    pub visible: Vec<PathBuf>,
    /// Protected files (git's configuration, air's) this command was allowed to
    /// write: not read-only for it.
    pub unlocked: Vec<PathBuf>,
}

/// What the OS will do to a command while it runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Confinement {
    /// Its writes are confined (Landlock).
    pub writes: bool,
    /// air's state, the credential stores and other processes are hidden from it,
    /// and git's configuration is read-only (namespaces).
    pub views: bool,
}

fn devices_or_temp(path: &Path) -> bool {
    super::permission::DEVICES
        .iter()
        .any(|d| path == Path::new(d))
        || path.starts_with("/dev/fd")
        || path.starts_with(std::env::temp_dir())
        || path.starts_with("/tmp")
}

/// Judges a command before it runs: what it writes (each path through the scope and
/// the PermissionEngine, which backs files up or raises questions), and its other
/// risks. `confined` says what the OS will hold while it runs.
pub fn prepare(
    ctx: &FsContext<'_>,
    input: &RunInput,
    role: AgentType,
    confined: Confinement,
) -> Result<Prepared, ToolError> {
    let engine = ctx.perm.engine;
    if engine.mode() == PermissionMode::Plan {
        return Err(ToolError(
            "the run is in plan mode, which is read-only: commands are not run".into(),
        ));
    }
    if input.command.trim().is_empty() {
        return Err(ToolError("command: empty".into()));
    }
    let timeout_ms = input.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS);
    if timeout_ms == 0 || timeout_ms > MAX_TIMEOUT_MS {
        return Err(ToolError(format!(
            "timeout_ms: {timeout_ms} is out of range (1..={MAX_TIMEOUT_MS})"
        )));
    }
    let cwd = match &input.cwd {
        Some(c) => ctx.permit(c, Access::Read)?.0,
        None => ctx.root.to_path_buf(),
    };
    if !cwd.is_dir() {
        return Err(ToolError(format!(
            "cwd: {} is not a directory",
            cwd.display()
        )));
    }
    if engine.is_bookkeeping(&cwd) {
        return Err(ToolError(format!(
            "cwd: {} is air's own bookkeeping; commands do not run there",
            cwd.display()
        )));
    }
    let analysis = command::analyze(
        &input.command,
        &Env {
            cwd: &cwd,
            home: engine.home(),
        },
    )?;
    let bypass = engine.mode() == PermissionMode::BypassPermissions;
    let shown_command: String = input.command.chars().take(200).collect();
    let mut asked = None;
    let mut ask = |risk: Risk, detail: String| {
        let key = format!("command:{}:{detail}", risk.as_str());
        if ctx.perm.granted.contains(&key) || (bypass && !risk.always_asks()) {
            return;
        }
        asked = Some(ctx.perm.raise(Ask {
            key,
            action: format!("run `{shown_command}`"),
            risk,
            reason: detail,
        }));
    };
    for (risk, detail) in analysis.risks {
        ask(risk, detail);
    }
    let held = confined.writes && confined.views;
    if !analysis.dynamic.is_empty() && !held {
        // Without both parts of the sandbox, a computed write could reach a place
        // outside the project, or git's hooks and air's rules inside it.
        ask(
            Risk::Opaque,
            format!(
                "writes to places known only when it runs ({}), and no OS sandbox {} here",
                analysis.dynamic.join(", "),
                if confined.writes {
                    "keeps git's hooks and air's configuration read-only"
                } else {
                    "confines it"
                }
            ),
        );
    }
    if !confined.views {
        // No network of its own here: the host's network is the command's.
        for what in &analysis.network {
            ask(
                Risk::Network,
                format!(
                    "{what}, and no network namespace keeps it to air's proxy here (air doctor says why)"
                ),
            );
        }
        for reach in &analysis.reaches {
            ask(
                Risk::Opaque,
                format!(
                    "{reach}, which could read air's own records, its socket or a credential store, and no OS sandbox hides them here"
                ),
            );
        }
    }
    let mut visible = Vec::new();
    for m in &analysis.mentions {
        let Ok(path) = ctx.resolve(&m.to_string_lossy()) else {
            continue;
        };
        if !engine.is_credential(&path) {
            continue;
        }
        let key = format!("read:{}", path.display());
        if ctx.perm.granted.contains(&key) {
            visible.push(path);
        } else {
            asked = Some(ctx.perm.raise(Ask {
                key,
                action: format!("read {}", path.display()),
                risk: Risk::Credentials,
                reason: "a credential store: a person confirms every access".into(),
            }));
        }
    }
    // A copy into an existing directory writes the files it names there.
    let mut writes = Vec::new();
    for t in analysis.writes {
        if !t.bulk && !t.sources.is_empty() && t.path.is_dir() {
            for name in &t.sources {
                writes.push(command::Target {
                    path: t.path.join(name),
                    by: t.by.clone(),
                    bulk: false,
                    sources: Vec::new(),
                });
            }
        } else {
            writes.push(t);
        }
    }
    let mut extra = Vec::new();
    let mut unlocked = Vec::new();
    for t in &writes {
        let path = ctx.resolve(&t.path.to_string_lossy())?;
        if !engine.in_project(&path) && devices_or_temp(&path) {
            continue;
        }
        if role == AgentType::Debugger && !ctx.perm.evidence {
            return Err(ToolError(format!(
                "`{}` would write {}: a debugger's commands only gather evidence until airsd has recorded some",
                t.by,
                path.display()
            )));
        }
        // The scope, as for the file tools: a path outside the project is named in
        // full, so `allowed_paths` (relative to the project) never admits it.
        let shown = ctx.shown(&path);
        ctx.scope
            .check_write(if shown.is_empty() { "." } else { &shown })?;
        let outside = !engine.in_project(&path);
        let linked = std::fs::metadata(&path).is_ok_and(|m| {
            use std::os::unix::fs::MetadataExt as _;
            m.is_file() && m.nlink() > 1
        });
        let key = format!("hardlink:{}", path.display());
        if linked && !bypass && !ctx.perm.granted.contains(&key) {
            asked = Some(ctx.perm.raise(Ask {
                key,
                action: format!("`{}` writing {} in place", t.by, path.display()),
                risk: Risk::HardLink,
                reason: "the file has other hard links, which may be outside the project; writing it in place changes them all".into(),
            }));
            continue;
        }
        if t.bulk && outside {
            // A whole tree outside the project cannot be backed up file by file.
            let verdict = engine.check(&path, Access::Write);
            if let Verdict::Deny(reason) = verdict {
                return Err(ToolError(reason));
            }
            let key = format!("write:{}", path.display());
            if !ctx.perm.granted.contains(&key) {
                asked = Some(ctx.perm.raise(Ask {
                    key,
                    action: format!("`{}` on all of {}", t.by, path.display()),
                    risk: Risk::Destructive,
                    reason: "changes a whole directory outside the project, which cannot be backed up".into(),
                }));
                continue;
            }
        } else if let Err(e) = ctx.perm.check(&path, Access::Write) {
            if ctx.perm.pending() {
                asked = Some(e);
                continue;
            }
            return Err(e);
        }
        // A protected file a person allowed this command to write: it stays writable
        // for it, and its change stays after it (the guard puts back only what
        // nobody allowed).
        if engine.is_git_code(&path)
            || engine.is_air_config(&path)
            || engine.is_autostart(&path)
            || engine.is_code_config(&path)
        {
            unlocked.push(path.clone());
        }
        if outside {
            extra.push(if path.exists() {
                path.clone()
            } else {
                path.parent().map(Path::to_path_buf).unwrap_or(path.clone())
            });
        }
    }
    if let Some(e) = asked {
        return Err(e);
    }
    Ok(Prepared {
        command: input.command.clone(),
        cwd,
        timeout: Duration::from_millis(timeout_ms),
        extra_writable: extra,
        visible,
        unlocked,
    })
}

/// The start and the end of a stream, within a fixed size.
#[derive(Default)]
pub struct Capture {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    pub total: u64,
}

impl Capture {
    pub fn push(&mut self, data: &[u8]) {
        self.total += data.len() as u64;
        let room = SHOWN_BYTES.saturating_sub(self.head.len());
        let (h, rest) = data.split_at(room.min(data.len()));
        self.head.extend_from_slice(h);
        self.tail.extend(rest);
        let extra = self.tail.len().saturating_sub(SHOWN_BYTES);
        self.tail.drain(..extra);
    }

    pub fn truncated(&self) -> bool {
        self.total > (self.head.len() + self.tail.len()) as u64
    }

    /// The text shown to the agent: the head, a note of what is left out, the tail.
    pub fn text(&self, artifact: Option<&str>) -> String {
        let mut out = String::from_utf8_lossy(&self.head).into_owned();
        if self.truncated() {
            let omitted = self.total - (self.head.len() + self.tail.len()) as u64;
            out.push_str(&format!(
                "\n[… {omitted} bytes left out, from byte {}{} …]\n",
                self.head.len(),
                artifact
                    .map(|a| format!("; all of it is in {a}"))
                    .unwrap_or_default()
            ));
        }
        let (a, b) = self.tail.as_slices();
        let mut tail = a.to_vec();
        tail.extend_from_slice(b);
        out.push_str(&String::from_utf8_lossy(&tail));
        out
    }
}

/// Which stream a chunk came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Channel {
    Stdout,
    Stderr,
}

/// How a command ended.
#[derive(Debug, Default)]
pub struct Ended {
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub timed_out: bool,
    pub cancelled: bool,
    pub duration: Duration,
}

/// Whether a variable's name says it holds a secret: such a variable never reaches
/// a command, whoever lists it.
pub fn secret(name: &str) -> bool {
    let n = name.to_ascii_uppercase();
    const WORDS: &[&str] = &[
        "KEY",
        "SECRET",
        "TOKEN",
        "PASSWORD",
        "PASSWD",
        "PASSPHRASE",
        "CREDENTIAL",
        "AUTH",
        "COOKIE",
        "PWD",
    ];
    let named = n
        .split(|c: char| !c.is_ascii_alphanumeric())
        .map(|part| part.strip_suffix('S').unwrap_or(part))
        .any(|part| WORDS.iter().any(|w| part.ends_with(w)));
    (named && n != "PWD" && n != "OLDPWD")
        || n.starts_with("AIR_")
        || n.starts_with("ANTHROPIC")
        || n.starts_with("OPENAI")
        || n.starts_with("OPENROUTER")
}

/// The ordinary variables a command sees (an allowlist, as Codex's shell
/// environment policy): the basics of a process and a terminal, the locale, proxies
/// and certificates, and the variables build tools and package managers read.
const SHELL_ENV: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "USERNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "TERM",
    "COLORTERM",
    "TZ",
    "TMPDIR",
    "TEMP",
    "TMP",
    "PWD",
    "DISPLAY",
    "WAYLAND_DISPLAY",
    "XDG_CONFIG_HOME",
    "XDG_CACHE_HOME",
    "XDG_DATA_HOME",
    "XDG_STATE_HOME",
    "XDG_RUNTIME_DIR",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "all_proxy",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
    "CC",
    "CXX",
    "CPP",
    "LD",
    "AR",
    "AS",
    "NM",
    "RANLIB",
    "STRIP",
    "CFLAGS",
    "CXXFLAGS",
    "CPPFLAGS",
    "LDFLAGS",
    "LDLIBS",
    "MAKEFLAGS",
    "MAKELEVEL",
    "PKG_CONFIG_PATH",
    "PKG_CONFIG_LIBDIR",
    "LD_LIBRARY_PATH",
    "LIBRARY_PATH",
    "CPATH",
    "C_INCLUDE_PATH",
    "CPLUS_INCLUDE_PATH",
    "JAVA_HOME",
    "JAVA_OPTS",
    "MAVEN_OPTS",
    "GRADLE_USER_HOME",
    "GRADLE_OPTS",
    "GOPATH",
    "GOROOT",
    "GOCACHE",
    "GOMODCACHE",
    "GOFLAGS",
    "GOPROXY",
    "GOPRIVATE",
    "NODE_PATH",
    "NODE_OPTIONS",
    "NVM_DIR",
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    "CONDA_DEFAULT_ENV",
    "PYENV_ROOT",
    "PYENV_VERSION",
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONDONTWRITEBYTECODE",
    "PYTHONUNBUFFERED",
    "PIP_INDEX_URL",
    "PIP_EXTRA_INDEX_URL",
    "PIP_CACHE_DIR",
    "PIPX_HOME",
    "UV_CACHE_DIR",
    "POETRY_HOME",
    "GEM_HOME",
    "GEM_PATH",
    "BUNDLE_PATH",
    "RBENV_ROOT",
    "CARGO_HOME",
    "RUSTUP_HOME",
    "RUSTUP_TOOLCHAIN",
    "RUSTFLAGS",
    "RUSTDOCFLAGS",
    "RUST_BACKTRACE",
    "RUST_LOG",
    "CARGO_TARGET_DIR",
    "CARGO_BUILD_JOBS",
    "CARGO_INCREMENTAL",
    "CARGO_TERM_COLOR",
    "CMAKE_PREFIX_PATH",
    "CMAKE_GENERATOR",
    "CMAKE_BUILD_PARALLEL_LEVEL",
    "CTEST_OUTPUT_ON_FAILURE",
    "CTEST_PARALLEL_LEVEL",
    "CCACHE_DIR",
    "CONAN_HOME",
    "VCPKG_ROOT",
    "NINJA_STATUS",
    "DOTNET_ROOT",
    "NUGET_PACKAGES",
    "CI",
    "NO_COLOR",
    "FORCE_COLOR",
    "EDITOR",
    "PAGER",
    "GIT_AUTHOR_NAME",
    "GIT_AUTHOR_EMAIL",
    "GIT_COMMITTER_NAME",
    "GIT_COMMITTER_EMAIL",
];

/// Whether a value is a URL with a user and password in it (a proxy's, say).
fn holds_userinfo(v: &std::ffi::OsStr) -> bool {
    v.to_str().is_some_and(|v| {
        v.split_once("://")
            .is_some_and(|(_, rest)| rest.split('/').next().unwrap_or_default().contains('@'))
    })
}

/// The environment a command runs with: the allowlist, the locale's `LC_*`, and what
/// `extra` names (a name, or a prefix ending in `*`), never a variable named like a
/// secret. `HOME` is the home directory the PermissionEngine judges by.
pub fn command_env(
    vars: impl Iterator<Item = (std::ffi::OsString, std::ffi::OsString)>,
    extra: &[String],
    home: Option<&Path>,
) -> Vec<(std::ffi::OsString, std::ffi::OsString)> {
    let mut out: Vec<_> = vars
        .filter(|(k, _)| {
            let Some(k) = k.to_str() else { return false };
            let listed = SHELL_ENV.contains(&k)
                || k.starts_with("LC_")
                || extra.iter().any(|e| match e.strip_suffix('*') {
                    Some(prefix) => k.starts_with(prefix),
                    None => e == k,
                });
            listed && !secret(k)
        })
        .filter(|(_, v)| !holds_userinfo(v))
        // A value that carries a secret (`-Ddb.password=…` in JAVA_OPTS) stays out
        // whatever its name.
        .filter(|(_, v)| !v.to_str().is_some_and(super::secrets::in_value))
        .collect();
    if let Some(h) = home {
        out.retain(|(k, _)| k != "HOME");
        out.push(("HOME".into(), h.as_os_str().to_owned()));
    }
    out
}

/// Points a command's environment at airsd's proxy (its only way out): the proxy
/// variables every common tool reads, in both cases, replacing the user's own.
pub fn through_proxy(env: &mut Vec<(std::ffi::OsString, std::ffi::OsString)>) {
    const NAMES: &[&str] = &[
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "NO_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
        "no_proxy",
    ];
    env.retain(|(k, _)| !k.to_str().is_some_and(|k| NAMES.contains(&k)));
    let url = crate::sandbox::PROXY_URL;
    let socks = url.replace("http://", "socks5h://");
    for (k, v) in [
        ("HTTP_PROXY", url),
        ("HTTPS_PROXY", url),
        ("http_proxy", url),
        ("https_proxy", url),
        ("ALL_PROXY", socks.as_str()),
        ("all_proxy", socks.as_str()),
        ("NO_PROXY", "localhost,127.0.0.1,::1"),
        ("no_proxy", "localhost,127.0.0.1,::1"),
    ] {
        env.push((k.into(), v.into()));
    }
    // The JVM (Maven, Gradle, sbt) reads no proxy variable: it is told by its own
    // properties, after any options the command already had.
    let (host, port) = crate::sandbox::PROXY_LISTEN
        .split_once(':')
        .unwrap_or(("127.0.0.1", "3128"));
    let jvm = format!(
        "-Dhttp.proxyHost={host} -Dhttp.proxyPort={port} -Dhttps.proxyHost={host} -Dhttps.proxyPort={port} -Dhttp.nonProxyHosts=localhost|127.0.0.1"
    );
    match env.iter_mut().find(|(k, _)| k == "JAVA_TOOL_OPTIONS") {
        Some((_, v)) => {
            let mut joined = v.clone();
            joined.push(" ");
            joined.push(&jvm);
            *v = joined;
        }
        None => env.push(("JAVA_TOOL_OPTIONS".into(), jvm.into())),
    }
}

/// Kills the process group when dropped (the call was abandoned).
struct Group(i32);

impl Group {
    fn kill(&self) {
        let _ = nix::sys::signal::killpg(
            nix::unistd::Pid::from_raw(self.0),
            nix::sys::signal::Signal::SIGKILL,
        );
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.kill();
    }
}

/// How to start bash: directly, or through the sandbox launcher.
pub struct Launch<'a> {
    /// `airsd` (it runs `airsd __sandbox --write … -- bash -c …`).
    pub launcher: Option<&'a Path>,
    pub policy: crate::sandbox::Policy,
    /// The whole environment of the command.
    pub env: Vec<(std::ffi::OsString, std::ffi::OsString)>,
    /// What the command reads on stdin (a hook's JSON); nothing when `None`.
    pub stdin: Option<Vec<u8>>,
}

/// The bash commands run with: `/bin/bash`, else the first on `PATH` (NixOS has no
/// `/bin/bash`), else `/bin/sh` (which may not know `pipefail`; the answer says so).
fn bash() -> &'static str {
    static BASH: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    BASH.get_or_init(|| {
        std::iter::once(std::path::PathBuf::from("/bin/bash"))
            .chain(
                std::env::var_os("PATH")
                    .map(|p| {
                        std::env::split_paths(&p)
                            .map(|d| d.join("bash"))
                            .collect::<Vec<_>>()
                    })
                    .unwrap_or_default(),
            )
            .find(|p| {
                use std::os::unix::fs::PermissionsExt as _;
                p.is_absolute()
                    && std::fs::metadata(p)
                        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            })
            .map_or_else(|| "/bin/sh".to_string(), |p| p.display().to_string())
    })
}

/// Whether commands run without `pipefail` (no bash here).
pub fn without_pipefail() -> bool {
    !bash().ends_with("bash")
}

/// Runs a prepared command to its end, handing each chunk of output to `output` as
/// it comes. `cancelled` is polled; when it says so, the process group is killed.
pub async fn execute(
    p: &Prepared,
    launch: &Launch<'_>,
    mut output: impl FnMut(Channel, &[u8]),
    cancelled: impl Fn() -> bool,
) -> Result<Ended, ToolError> {
    // A pipeline fails when any of its commands fails (`cargo test | tail` is not a
    // pass when the tests fail); bash only, as `sh` may not know the option.
    let mut script_args = Vec::new();
    if bash().ends_with("bash") {
        script_args.extend(["-o".to_string(), "pipefail".to_string()]);
    }
    script_args.extend(["-c".to_string(), p.command.clone()]);
    let mut cmd = match launch.launcher {
        Some(exe) => {
            let mut c = tokio::process::Command::new(exe);
            c.args(crate::sandbox::launcher_args(
                &launch.policy,
                bash(),
                &script_args,
            ));
            c
        }
        None => {
            let mut c = tokio::process::Command::new(bash());
            c.args(&script_args);
            c
        }
    };
    cmd.env_clear()
        .envs(launch.env.iter().map(|(k, v)| (k, v)))
        .current_dir(&p.cwd)
        .stdin(if launch.stdin.is_some() {
            std::process::Stdio::piped()
        } else {
            std::process::Stdio::null()
        })
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let t0 = Instant::now();
    let mut child = cmd
        .spawn()
        .map_err(|e| ToolError(format!("cannot start {}: {e}", bash())))?;
    let group = Group(
        child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .unwrap_or_default(),
    );
    // Written beside the reading, so that a command that writes before it reads
    // never blocks on a full pipe; closed after, so that it sees the end.
    if let (Some(mut pipe), Some(bytes)) = (child.stdin.take(), launch.stdin.clone()) {
        tokio::spawn(async move {
            use tokio::io::AsyncWriteExt as _;
            let _ = pipe.write_all(&bytes).await;
        });
    }
    let (Some(mut out), Some(mut err)) = (child.stdout.take(), child.stderr.take()) else {
        return Err(ToolError(
            "the command's output could not be captured".into(),
        ));
    };
    let mut ended = Ended::default();
    let (mut out_open, mut err_open) = (true, true);
    let mut status = None;
    let mut ob = vec![0u8; 64 * 1024];
    let mut eb = vec![0u8; 64 * 1024];
    let deadline = tokio::time::Instant::now() + p.timeout;
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    let mut drain_until: Option<tokio::time::Instant> = None;
    while out_open || err_open || status.is_none() {
        if let Some(until) = drain_until {
            if tokio::time::Instant::now() >= until {
                break;
            }
        }
        tokio::select! {
            n = out.read(&mut ob), if out_open => match n {
                Ok(0) | Err(_) => out_open = false,
                Ok(n) => output(Channel::Stdout, &ob[..n]),
            },
            n = err.read(&mut eb), if err_open => match n {
                Ok(0) | Err(_) => err_open = false,
                Ok(n) => output(Channel::Stderr, &eb[..n]),
            },
            s = child.wait(), if status.is_none() => {
                status = Some(s);
                // What the command left running may hold the pipes open: read what
                // is there for a moment, then the group goes.
                drain_until = Some(tokio::time::Instant::now() + Duration::from_millis(200));
            }
            _ = tokio::time::sleep_until(deadline), if status.is_none() => {
                ended.timed_out = true;
                group.kill();
            }
            _ = tick.tick() => {
                if status.is_none() && !ended.cancelled && cancelled() {
                    ended.cancelled = true;
                    group.kill();
                }
            }
        }
    }
    group.kill();
    ended.duration = t0.elapsed();
    if let Some(Ok(s)) = status {
        use std::os::unix::process::ExitStatusExt as _;
        ended.exit_code = s.code();
        ended.signal = s.signal();
    }
    Ok(ended)
}

#[cfg(test)]
mod tests;
