//! The PermissionEngine (baseline §12, D-026…D-031): what an agent may read, write and
//! run, decided on physical paths (symlinks and `..` resolved before this is asked).
//!
//! | path | read | write |
//! |---|---|---|
//! | credential stores (`~/.ssh`, `~/.aws`, `.env`, keychains …) | ask, always | ask, always |
//! | the project | allow | allow |
//! | the project's `.git/` | allow | ask (`git_writes: allow` in permissions.yaml) |
//! | airsd's bookkeeping (`.air/local/`, `~/.air/`) | allow | refused |
//! | system paths (`/etc`, `/boot`, `/usr` …) | allow | ask, always |
//! | anywhere else | allow | back up, then allow |
//!
//! "Always" means even in the high-permission profile (`bypass_permissions`); the
//! `plan` mode refuses every write. Task scopes narrow this further (`scope.rs`).

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use air_proto::backup::{BackupTag, Backups};
use air_proto::config::{GitWrites, PermissionsConfig};
use air_proto::plan::PermissionMode;
use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

use super::error::ToolError;

mod git;
mod places;
mod views;
pub use views::environments;

use git::nested_git_control;
pub use git::{git_code, git_dirs, listening_sockets, GIT_CONTROL};
use places::*;
pub use places::{CODE_CONFIG, DEVICES, HOME_READ};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    Read,
    Write,
}

/// Why something needs a person (`permission.requested.risk`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Risk {
    Credentials,
    SystemSensitive,
    GitMetadata,
    DownloadsCode,
    ForcePush,
    DiskTools,
    /// A command that changes a whole directory tree outside the project.
    Destructive,
    /// A command writing in place to a file with other hard links (which may be
    /// outside the project).
    HardLink,
    /// A command whose effect cannot be read from its text (`eval`, a command in a
    /// variable).
    Opaque,
    /// A change to air's own configuration (`.air/shared/permissions.yaml`): what
    /// agents may do is the user's to decide.
    AirConfig,
    /// Configuration that makes git run code or send data elsewhere (hooks,
    /// `core.hooksPath`, aliases, filters, remotes …).
    CodeConfig,
    /// A connection out of the command's sandbox, to a host nobody allowed yet.
    Network,
    /// An MCP tool its server does not say is harmless (MCP's default: it may
    /// destroy).
    McpDestructive,
    /// An MCP tool that reaches outside the project (a web search, a service).
    McpOpenWorld,
}

impl Risk {
    pub fn as_str(self) -> &'static str {
        match self {
            Risk::Credentials => "credentials",
            Risk::SystemSensitive => "system_sensitive",
            Risk::GitMetadata => "git_metadata",
            Risk::DownloadsCode => "downloads_code",
            Risk::ForcePush => "force_push",
            Risk::DiskTools => "disk_tools",
            Risk::Destructive => "destructive",
            Risk::HardLink => "hard_link",
            Risk::Opaque => "opaque_command",
            Risk::AirConfig => "air_config",
            Risk::CodeConfig => "code_config",
            Risk::Network => "network",
            Risk::McpDestructive => "mcp_destructive",
            Risk::McpOpenWorld => "mcp_open_world",
        }
    }

    /// Risks the security model confirms with a person whatever the profile.
    pub fn always_asks(self) -> bool {
        matches!(
            self,
            Risk::Credentials
                | Risk::SystemSensitive
                | Risk::DiskTools
                | Risk::Destructive
                | Risk::AirConfig
                | Risk::CodeConfig
        )
    }
}

/// A question for a person.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ask {
    /// What a grant is keyed by, e.g. `write:/etc/hosts`.
    pub key: String,
    /// What is asked, e.g. `write /etc/hosts`.
    pub action: String,
    pub risk: Risk,
    pub reason: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Allow,
    /// Outside the project: back the file up first (D-030), then allow.
    Backup,
    Ask(Ask),
    Deny(String),
}

fn globs(patterns: &[String], home: Option<&Path>, what: &str) -> Result<GlobSet, ToolError> {
    let mut b = GlobSetBuilder::new();
    for p in patterns {
        let expanded = expand_home(p, home);
        let Some(expanded) = expanded else { continue };
        let mut pats = vec![expanded.clone()];
        // A directory covers what is inside it, and `dir/**` covers `dir` itself.
        match expanded.strip_suffix("/**") {
            Some(dir) if !dir.is_empty() && !dir.ends_with("**") => pats.push(dir.to_string()),
            Some(_) => {}
            None => pats.push(format!("{}/**", expanded.trim_end_matches('/'))),
        }
        for pat in pats {
            let g = GlobBuilder::new(&pat)
                .literal_separator(true)
                .build()
                .map_err(|e| ToolError(format!("{what}: bad path pattern `{p}`: {}", e.kind())))?;
            b.add(g);
        }
    }
    b.build().map_err(|e| ToolError(format!("{what}: {e}")))
}

/// `~/x` → `<home>/x`; a `~` pattern without a home directory is dropped.
fn expand_home(p: &str, home: Option<&Path>) -> Option<String> {
    if p == "~" {
        return home.map(|h| h.display().to_string());
    }
    match p.strip_prefix("~/") {
        Some(rest) => {
            home.map(|h| format!("{}/{rest}", h.display().to_string().trim_end_matches('/')))
        }
        None => Some(p.to_string()),
    }
}

/// A run's permission mode, shared by its engines and changed while it runs.
#[derive(Clone, Debug)]
struct ModeCell(std::sync::Arc<std::sync::atomic::AtomicU8>);

impl ModeCell {
    const MODES: [PermissionMode; 4] = [
        PermissionMode::Default,
        PermissionMode::AcceptEdits,
        PermissionMode::Plan,
        PermissionMode::BypassPermissions,
    ];

    fn new(mode: PermissionMode) -> ModeCell {
        let cell = ModeCell(Default::default());
        cell.set(mode);
        cell
    }

    fn get(&self) -> PermissionMode {
        let at = self.0.load(std::sync::atomic::Ordering::SeqCst);
        Self::MODES
            .get(usize::from(at))
            .copied()
            .unwrap_or(PermissionMode::Default)
    }

    fn set(&self, mode: PermissionMode) {
        let at = Self::MODES.iter().position(|m| *m == mode).unwrap_or(0);
        self.0.store(at as u8, std::sync::atomic::Ordering::SeqCst);
    }
}

/// The engine of one run: the project, the person's home, the mode and the rules.
#[derive(Clone, Debug)]
pub struct Engine {
    root: PathBuf,
    /// For a task that works in its own worktree ([`Engine::rooted`]): the project's
    /// checkout, which the task reads but never writes.
    fence: Option<PathBuf>,
    /// For a task in its own worktree: the checkout's environments lent into it
    /// (relative paths, the same in both).
    lent: Vec<String>,
    home: Option<PathBuf>,
    bookkeeping: Vec<PathBuf>,
    /// Shared by the engines of a run's worktrees: a change of mode reaches them all.
    mode: ModeCell,
    git_writes: GitWrites,
    credentials: GlobSet,
    system: GlobSet,
    not_system: GlobSet,
    writable_roots: Vec<PathBuf>,
    sandbox: bool,
    /// The (device, inode) of each file in the credential stores of the home
    /// directory, so a hard link to one is known for what it is.
    credential_inodes: HashSet<(u64, u64)>,
    /// What commands must not see: air's own state and the credential stores.
    hidden: Vec<PathBuf>,
    /// The user's files that start code on their own.
    autostart: Vec<PathBuf>,
    /// More environment variables commands see (permissions.yaml `shell_env`).
    shell_env: Vec<String>,
    /// The user allowed agents' changes to the project's permissions.yaml.
    config_writes: GitWrites,
    /// More of the home directory commands read (permissions.yaml `readable_roots`).
    readable_roots: Vec<PathBuf>,
    /// Hosts commands reach without asking (permissions.yaml `allow_domains`).
    allow_domains: Vec<String>,
    /// [`CODE_CONFIG`], matched against paths relative to the project root.
    code_config: GlobSet,
    /// The directories of `PATH` outside the project: a new program there would
    /// shadow one that people and tools run by name.
    path_dirs: Vec<PathBuf>,
}

/// `.env` files (not the shareable examples) directly in `dir`.
fn env_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    rd.flatten()
        .filter(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            (name == ".env" || name.starts_with(".env.")) && !ENV_EXAMPLES.contains(&&*name)
        })
        .map(|e| e.path())
        .collect()
}

/// The project's own `.env` files (not the shareable examples), four levels down at
/// most, past the directories of dependencies and builds: bounded, as this runs at
/// each command.
fn project_env_files(root: &Path) -> Vec<PathBuf> {
    const SKIPPED: &[&str] = &[
        ".git",
        ".air",
        "node_modules",
        "target",
        "build",
        "dist",
        ".venv",
        "venv",
        "vendor",
    ];
    let mut out = Vec::new();
    let mut queue = vec![(root.to_path_buf(), 0)];
    let mut dirs = 0;
    while let Some((dir, depth)) = queue.pop() {
        dirs += 1;
        if dirs > 2_000 || out.len() >= 64 {
            break;
        }
        out.extend(env_files(&dir));
        if depth >= 4 {
            continue;
        }
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in rd.flatten() {
            let skip = e.file_name().to_str().is_some_and(|n| SKIPPED.contains(&n));
            if !skip && e.file_type().is_ok_and(|t| t.is_dir()) {
                queue.push((e.path(), depth + 1));
            }
        }
    }
    out
}

/// `.env` files of other projects in the home directory, two levels down at most
/// (`~/app/.env`, `~/src/app/.env`), never the project's own: bounded, as this runs at
/// each run's start and each is a mount for each command.
fn nearby_env_files(home: &Path, root: &Path) -> Vec<PathBuf> {
    const MOST_DIRS: usize = 2_000;
    const MOST_FILES: usize = 64;
    let subdirs = |d: &Path| -> Vec<PathBuf> {
        std::fs::read_dir(d)
            .map(|rd| {
                rd.flatten()
                    .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                    .map(|e| e.path())
                    .filter(|p| {
                        !p.file_name()
                            .and_then(|n| n.to_str())
                            .is_some_and(|n| n.starts_with('.') || n == "node_modules")
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut dirs = subdirs(home);
    let second: Vec<PathBuf> = dirs
        .iter()
        .flat_map(|d| subdirs(d))
        .take(MOST_DIRS)
        .collect();
    dirs.extend(second);
    dirs.iter()
        .filter(|d| !d.starts_with(root) && !root.starts_with(d))
        .flat_map(|d| env_files(d))
        .take(MOST_FILES)
        .collect()
}

fn inodes(home: Option<&Path>) -> HashSet<(u64, u64)> {
    use std::os::unix::fs::MetadataExt as _;
    let mut out = HashSet::new();
    let mut starts: Vec<PathBuf> = vec!["/etc/shadow".into(), "/etc/gshadow".into()];
    if let Some(h) = home {
        starts.extend(CREDENTIAL_DIRS.iter().map(|d| h.join(d)));
    }
    for start in starts {
        let walk = ignore::WalkBuilder::new(&start)
            .standard_filters(false)
            .max_depth(Some(4))
            .build();
        for entry in walk.flatten().take(2_000) {
            if let Ok(meta) = entry.metadata() {
                if meta.is_file() {
                    out.insert((meta.dev(), meta.ino()));
                }
            }
        }
    }
    out
}

impl Engine {
    /// `root` is the project root, resolved; `air_home` is `~/.air` (or `$AIR_HOME`).
    pub fn new(
        root: &Path,
        home: Option<&Path>,
        air_home: Option<&Path>,
        mode: PermissionMode,
        config: &PermissionsConfig,
    ) -> Result<Engine, ToolError> {
        let resolve = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        let home = home.map(resolve);
        let mut credentials: Vec<String> = CREDENTIALS.iter().map(|s| s.to_string()).collect();
        credentials.extend(config.credentials.iter().cloned());
        let mut system: Vec<String> = SYSTEM.iter().map(|s| s.to_string()).collect();
        system.extend(config.system_paths.iter().cloned());
        let not_system: Vec<String> = NOT_SYSTEM.iter().map(|s| s.to_string()).collect();
        let mut bookkeeping = vec![root.join(".air").join("local")];
        if let Some(a) = air_home {
            bookkeeping.push(resolve(a));
            // air's own configuration names the providers' keys.
            credentials.push(format!("{}/models.yaml", resolve(a).display()));
        }
        let credential_inodes = inodes(home.as_deref());
        let mut hidden: Vec<PathBuf> = bookkeeping.clone();
        let socket = air_proto::layout::ProjectPaths::new(root).client_socket();
        if !socket.starts_with(&bookkeeping[0]) {
            hidden.push(socket);
        }
        hidden.extend(HIDDEN_SYSTEM.iter().map(PathBuf::from));
        let mut autostart = Vec::new();
        if let Some(h) = &home {
            // `.npmrc` is npm's own configuration too (its registries): npm must find
            // it, so it is asked for by name but not hidden.
            hidden.extend(
                CREDENTIAL_DIRS
                    .iter()
                    .filter(|d| **d != ".npmrc")
                    .map(|d| h.join(d)),
            );
            hidden.extend(HIDDEN_IN_HOME.iter().map(|d| h.join(d)));
            hidden.extend(env_files(h));
            hidden.extend(nearby_env_files(h, root));
            autostart.extend(AUTOSTART.iter().map(|d| h.join(d)));
        }
        // `.env` files of the directories above the project (its own are its own).
        for dir in root.ancestors().skip(1) {
            if home.as_deref() != Some(dir) {
                hidden.extend(env_files(dir));
            }
        }
        hidden.extend(
            config
                .credentials
                .iter()
                .filter(|c| !c.contains(['*', '?', '[', '{']))
                .filter_map(|c| expand_home(c, home.as_deref()))
                .map(PathBuf::from),
        );
        hidden.sort();
        hidden.dedup();
        for g in git_dirs(root) {
            // A repository without hooks/ would let a command create it: git makes
            // one at `git init`, and so does air.
            let hooks = g.join("hooks");
            if g.is_dir() && !hooks.exists() {
                let _ = std::fs::create_dir(&hooks);
            }
        }
        let writable_roots = config
            .writable_roots
            .iter()
            .filter_map(|p| expand_home(p, home.as_deref()))
            .map(|p| resolve(Path::new(&p)))
            .collect();
        let readable_roots = config
            .readable_roots
            .iter()
            .filter_map(|p| expand_home(p, home.as_deref()))
            .map(|p| resolve(Path::new(&p)))
            .collect();
        Ok(Engine {
            root: root.to_path_buf(),
            fence: None,
            lent: Vec::new(),
            credentials: globs(&credentials, home.as_deref(), "credentials")?,
            system: globs(&system, home.as_deref(), "system_paths")?,
            not_system: globs(&not_system, None, "system paths")?,
            home,
            bookkeeping,
            mode: ModeCell::new(mode),
            git_writes: config.git_writes.unwrap_or(GitWrites::Ask),
            writable_roots,
            sandbox: config.sandbox.unwrap_or(true),
            credential_inodes,
            hidden,
            autostart,
            shell_env: config.shell_env.clone(),
            config_writes: config.config_writes.unwrap_or(GitWrites::Ask),
            code_config: {
                let mut b = GlobSetBuilder::new();
                for pat in CODE_CONFIG {
                    for p in [pat.to_string(), format!("{pat}/**")] {
                        let g = GlobBuilder::new(&p)
                            .literal_separator(true)
                            .build()
                            .map_err(|e| ToolError(format!("code config pattern `{pat}`: {e}")))?;
                        b.add(g);
                    }
                }
                b.build()
                    .map_err(|e| ToolError(format!("code config patterns: {e}")))?
            },
            path_dirs: Vec::new(),
            readable_roots,
            allow_domains: config.allow_domains.clone(),
        })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The project's checkout, where air keeps its state: the root, or for a task in
    /// its own worktree the checkout the worktree was made from.
    pub fn checkout(&self) -> &Path {
        self.fence.as_deref().unwrap_or(&self.root)
    }

    /// Whether this engine is a task's in its own worktree.
    pub fn in_worktree(&self) -> bool {
        self.fence.is_some()
    }

    /// The engine of a task that works in its own worktree at `worktree` (resolved,
    /// inside the checkout's `.air/local/workspaces/`): the worktree is its project,
    /// writable as a project is; the checkout is read and never written; the rest of
    /// air's state, other tasks' worktrees among it, stays hidden and refused.
    pub fn rooted(&self, worktree: &Path) -> Engine {
        let checkout = self.checkout().to_path_buf();
        let mut out = self.clone();
        out.root = worktree.to_path_buf();
        out.fence = Some(checkout.clone());
        out.lent = environments(&checkout);
        let own = worktree.join(".air").join("local");
        out.bookkeeping.push(own.clone());
        out.hidden.push(own);
        out.hidden.sort();
        out.hidden.dedup();
        out.readable_roots.push(checkout);
        out.path_dirs.retain(|d| !d.starts_with(worktree));
        out
    }

    pub fn home(&self) -> Option<&Path> {
        self.home.as_deref()
    }

    pub fn mode(&self) -> PermissionMode {
        self.mode.get()
    }

    /// The run's mode from now on, for this engine and those made from it.
    pub fn set_mode(&self, mode: PermissionMode) {
        self.mode.set(mode);
    }

    pub fn sandbox(&self) -> bool {
        self.sandbox
    }

    /// Hosts commands reach without asking (permissions.yaml `allow_domains`).
    pub fn allow_domains(&self) -> &[String] {
        &self.allow_domains
    }

    /// More variables commands see (permissions.yaml `shell_env`).
    pub fn shell_env(&self) -> &[String] {
        &self.shell_env
    }

    /// Extra places commands may write (permissions.yaml `writable_roots`).
    pub fn writable_roots(&self) -> &[PathBuf] {
        &self.writable_roots
    }

    /// Whether `path` names a credential store (by its path alone: no file system
    /// access).
    pub fn is_credential_path(&self, path: &Path) -> bool {
        if self.credentials.is_match(path) {
            let name = path
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default();
            return !ENV_EXAMPLES.contains(&name);
        }
        false
    }

    /// Whether `path` is a credential store, by its path or as a hard link to a file
    /// of one (which takes a `stat`).
    pub fn is_credential(&self, path: &Path) -> bool {
        use std::os::unix::fs::MetadataExt as _;
        self.is_credential_path(path)
            || std::fs::metadata(path).is_ok_and(|m| {
                m.is_file() && m.nlink() > 1 && self.credential_inodes.contains(&(m.dev(), m.ino()))
            })
    }

    /// Whether an opened file is a file of a credential store (by device and inode).
    pub fn is_credential_inode(&self, meta: &std::fs::Metadata) -> bool {
        use std::os::unix::fs::MetadataExt as _;
        meta.is_file() && self.credential_inodes.contains(&(meta.dev(), meta.ino()))
    }

    /// What of the home directory commands may read ([`HOME_READ`], `readable_roots`,
    /// the directories of `PATH` in it) and the project wherever it is; empty without
    /// a home.
    pub fn home_read(&self) -> Vec<PathBuf> {
        let Some(h) = &self.home else {
            return Vec::new();
        };
        let mut out: Vec<PathBuf> = HOME_READ.iter().map(|p| h.join(p)).collect();
        out.extend(self.readable_roots.iter().cloned());
        // A home itself, or where homes live: never read whole for a PATH entry.
        let tops = ["/home", "/Users", "/var/home"];
        let home_like = |p: &Path| {
            p == h.as_path()
                || p == Path::new("/")
                || p == Path::new("/root")
                || tops.iter().any(|t| p == Path::new(t))
                || p.parent()
                    .is_some_and(|q| tops.iter().any(|t| q == Path::new(t)))
        };
        for d in &self.path_dirs {
            // A PATH directory in a home reads the tree it belongs to there
            // (`~/.pyenv/shims` reads `~/.pyenv`, whose shims run its `libexec`);
            // elsewhere the system's directories are read already.
            let Some(home) = d.ancestors().skip(1).find(|a| home_like(a)) else {
                continue;
            };
            if home == Path::new("/") {
                continue;
            }
            let Some(first) = d.strip_prefix(home).ok().and_then(|r| r.iter().next()) else {
                continue;
            };
            out.push(home.join(first));
        }
        out.push(self.root.clone());
        out.sort();
        out.dedup();
        out
    }

    /// Whether `path` is a system path.
    pub fn is_system(&self, path: &Path) -> bool {
        self.system.is_match(path) && !self.not_system.is_match(path)
    }

    pub fn in_project(&self, path: &Path) -> bool {
        path.starts_with(&self.root)
    }

    fn ask(&self, access: Access, path: &Path, risk: Risk, reason: &str) -> Verdict {
        let verb = match access {
            Access::Read => "read",
            Access::Write => "write",
        };
        Verdict::Ask(Ask {
            key: format!("{verb}:{}", path.display()),
            action: format!("{verb} {}", path.display()),
            risk,
            reason: reason.to_string(),
        })
    }

    /// The decision for one access to `path` (absolute and physically resolved).
    pub fn check(&self, path: &Path, access: Access) -> Verdict {
        if self.is_credential(path) {
            return self.ask(
                access,
                path,
                Risk::Credentials,
                "a credential store: a person confirms every access",
            );
        }
        if access == Access::Read {
            // A task in its own worktree reads the checkout, not air's state nor
            // another task's worktree.
            if self.fence.is_some() && self.is_bookkeeping(path) {
                return Verdict::Deny(format!(
                    "{}: air's own state, which a task does not read",
                    path.display()
                ));
            }
            return Verdict::Allow;
        }
        if self.mode() == PermissionMode::Plan {
            return Verdict::Deny(format!(
                "{}: the run is in plan mode, which is read-only",
                path.display()
            ));
        }
        if let Some(rel) = self
            .lent
            .iter()
            .find(|rel| path.starts_with(self.root.join(rel)))
        {
            return Verdict::Deny(format!(
                "{}: `{rel}` is the project's own, lent to this task read-only; make an environment of the task's own under another name to change it",
                path.display()
            ));
        }
        if let Some(checkout) = &self.fence {
            if path.starts_with(checkout) && !path.starts_with(&self.root) {
                let there = path
                    .strip_prefix(checkout)
                    .map(|rel| self.root.join(rel))
                    .unwrap_or_else(|_| self.root.clone());
                return Verdict::Deny(format!(
                    "{}: the project's checkout, which this task does not write; it works in its own worktree, and its change reaches the checkout when it is merged: write {} instead",
                    path.display(),
                    there.display()
                ));
            }
        }
        if self.is_bookkeeping(path) {
            return Verdict::Deny(format!(
                "{}: air's own bookkeeping; agents may not write it",
                path.display()
            ));
        }
        if self.is_air_config(path) && self.config_writes == GitWrites::Ask {
            return self.ask(
                access,
                path,
                Risk::AirConfig,
                "air's own configuration (what agents may do, the rules and skills later agents are given): a person changes it",
            );
        }
        if self.is_git_code(path) {
            return self.ask(
                access,
                path,
                Risk::CodeConfig,
                "git's configuration or hooks, which decide what git runs",
            );
        }
        if self.is_code_config(path) {
            return self.ask(
                access,
                path,
                Risk::CodeConfig,
                "a file that makes code run later by itself (an editor's tasks, a directory's environment, CI, git's attributes, hooks)",
            );
        }
        if self.in_project(path) {
            let git = self.root.join(".git");
            if path.starts_with(&git)
                && self.git_writes == GitWrites::Ask
                && self.mode() != PermissionMode::BypassPermissions
            {
                return self.ask(
                    access,
                    path,
                    Risk::GitMetadata,
                    "the repository's own data (.git/); git commands change it safely",
                );
            }
            return Verdict::Allow;
        }
        if DEVICES.iter().any(|d| path == Path::new(d)) || path.starts_with("/dev/fd") {
            return Verdict::Allow;
        }
        if self.is_system(path) {
            return self.ask(
                access,
                path,
                Risk::SystemSensitive,
                "a system path: a person confirms every change",
            );
        }
        if self.is_autostart(path) {
            return self.ask(
                access,
                path,
                Risk::SystemSensitive,
                "a file that starts code on its own (a shell's start-up file, git's configuration, a service)",
            );
        }
        if self.shadows_a_program(path) {
            return self.ask(
                access,
                path,
                Risk::CodeConfig,
                "a directory of PATH: a file there is run by anyone who runs that name",
            );
        }
        Verdict::Backup
    }

    /// Whether `path` is air's own bookkeeping (`.air/local/`, `~/.air/`).
    pub fn is_bookkeeping(&self, path: &Path) -> bool {
        // A task's worktree lies in air's state, and is the task's project.
        self.bookkeeping.iter().any(|b| {
            path.starts_with(b) && !(self.root.starts_with(b) && path.starts_with(&self.root))
        })
    }

    /// Whether `path` is air's own configuration in the project: everything in
    /// `.air/shared/` (its permissions, the rules and skills later agents are given,
    /// compaction rules, the plan).
    pub fn is_air_config(&self, path: &Path) -> bool {
        path.starts_with(self.root.join(".air").join("shared"))
    }

    /// Whether `path` is a file of the project that makes code run by itself later
    /// ([`CODE_CONFIG`]).
    pub fn is_code_config(&self, path: &Path) -> bool {
        path.strip_prefix(&self.root)
            .is_ok_and(|rel| !rel.as_os_str().is_empty() && self.code_config.is_match(rel))
    }

    /// What the command guard reads before and after each command
    /// ([`super::guard`]): git's control files in every git directory of the
    /// repository, the project's files that run code later ([`CODE_CONFIG`] at its
    /// top), and with `air_config` the configuration air gives later agents.
    pub fn guarded(&self, air_config: bool) -> Vec<PathBuf> {
        let dot = self.root.join(".git");
        let mut out: Vec<PathBuf> = git_code(&self.root)
            .into_iter()
            .filter(|p| p != &dot || !dot.is_dir())
            .collect();
        out.extend(
            CODE_CONFIG
                .iter()
                .filter(|p| !p.starts_with("**/"))
                .map(|p| self.root.join(p.trim_end_matches("/**"))),
        );
        if air_config {
            let shared = self.root.join(".air").join("shared");
            out.extend(
                [
                    "permissions.yaml",
                    "hooks.yaml",
                    "rules",
                    "skills",
                    "compaction-rules.md",
                ]
                .iter()
                .map(|p| shared.join(p)),
            );
        }
        out
    }

    /// Sets the directories of `PATH` (those outside the project count).
    pub fn with_path_dirs(mut self, path: Option<&std::ffi::OsStr>) -> Self {
        self.path_dirs = path
            .map(|p| {
                std::env::split_paths(p)
                    .filter(|d| d.is_absolute())
                    .map(|d| std::fs::canonicalize(&d).unwrap_or(d))
                    .filter(|d| !d.starts_with(&self.root))
                    .collect()
            })
            .unwrap_or_default();
        self
    }

    /// Whether writing `path` puts a file straight into a directory of `PATH` outside
    /// the project.
    pub fn shadows_a_program(&self, path: &Path) -> bool {
        path.parent()
            .is_some_and(|dir| self.path_dirs.iter().any(|d| d == dir))
    }

    /// Whether `path` is what decides what git runs or where it looks ([`git_code`],
    /// as the repository is now, and the same in a repository nested in the
    /// project).
    pub fn is_git_code(&self, path: &Path) -> bool {
        let dot = self.root.join(".git");
        // The project's `.git` counts itself when it is (or would be made) a file
        // naming a git directory elsewhere; a `.git` directory is the repository's
        // data, and only its control files count.
        if path == dot {
            return !dot.is_dir();
        }
        git_code(&self.root)
            .iter()
            .any(|g| g != &dot && path.starts_with(g))
            || (!path.starts_with(&dot) && nested_git_control(&self.root, path))
    }

    /// Whether `path` is one of the user's files that start code on their own.
    pub fn is_autostart(&self, path: &Path) -> bool {
        self.autostart.iter().any(|a| path.starts_with(a))
    }
}

/// The permissions of one tool call: the engine, what a person granted for it, and
/// the questions it raised.
pub struct Permits<'a> {
    pub engine: &'a Engine,
    pub backups: Option<&'a Backups>,
    pub tag: BackupTag,
    /// Keys of asks a person allowed for this call.
    pub granted: HashSet<String>,
    /// For a debugger: airsd has recorded its evidence (a diagnostic command it ran
    /// to its end), so it is past gathering and may fix (seed 001 §4).
    pub evidence: bool,
    asks: Mutex<Vec<Ask>>,
}

impl<'a> Permits<'a> {
    pub fn new(
        engine: &'a Engine,
        backups: Option<&'a Backups>,
        tag: BackupTag,
        granted: HashSet<String>,
    ) -> Permits<'a> {
        Permits {
            engine,
            backups,
            tag,
            granted,
            evidence: false,
            asks: Mutex::new(Vec::new()),
        }
    }

    /// Says whether the (debugging) agent has recorded evidence.
    pub fn with_evidence(mut self, evidence: bool) -> Self {
        self.evidence = evidence;
        self
    }

    /// The questions this call raised (it refused to go on without answers).
    pub fn take_asks(&self) -> Vec<Ask> {
        std::mem::take(&mut *self.asks.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Whether this call raised a question.
    pub fn pending(&self) -> bool {
        !self
            .asks
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_empty()
    }

    /// Records a question; the call stops with an error naming it.
    pub fn raise(&self, ask: Ask) -> ToolError {
        let message = format!(
            "permission needed to {} ({}): {}",
            ask.action,
            ask.risk.as_str(),
            ask.reason
        );
        let mut asks = self.asks.lock().unwrap_or_else(|p| p.into_inner());
        if !asks.iter().any(|a| a.key == ask.key) {
            asks.push(ask);
        }
        ToolError(message)
    }

    /// Checks one access, backing the file up first when the engine says so.
    pub fn check(&self, path: &Path, access: Access) -> Result<(), ToolError> {
        match self.engine.check(path, access) {
            Verdict::Allow => Ok(()),
            Verdict::Backup => self.backup(path),
            Verdict::Deny(reason) => Err(ToolError(reason)),
            Verdict::Ask(ask) if self.granted.contains(&ask.key) => {
                if access == Access::Write && !self.engine.in_project(path) {
                    self.backup(path)?;
                }
                Ok(())
            }
            Verdict::Ask(ask) => Err(self.raise(ask)),
        }
    }

    /// Checks what an open of `path` reached: a file of a credential store (by its
    /// device and inode) is a credential however it was named, and needs the same
    /// person's yes as its own path.
    pub fn check_opened(
        &self,
        path: &Path,
        opened: &std::fs::Metadata,
        access: Access,
    ) -> Result<(), ToolError> {
        use std::os::unix::fs::MetadataExt as _;
        if !opened.is_file()
            || !self
                .engine
                .credential_inodes
                .contains(&(opened.dev(), opened.ino()))
        {
            return Ok(());
        }
        let ask = self.engine.ask(
            access,
            path,
            Risk::Credentials,
            "a credential store (the same file under another name): a person confirms every access",
        );
        match ask {
            Verdict::Ask(a) if self.granted.contains(&a.key) => Ok(()),
            Verdict::Ask(a) => Err(self.raise(a)),
            _ => Ok(()),
        }
    }

    /// A page of `path` holds a secret (`what`): a person confirms before it is
    /// shown, as for a credential store.
    pub fn check_secret(&self, path: &Path, what: &str) -> Result<(), ToolError> {
        let key = format!("read:{}", path.display());
        if self.granted.contains(&key) {
            return Ok(());
        }
        Err(self.raise(Ask {
            key,
            action: format!("read {}", path.display()),
            risk: Risk::Credentials,
            reason: format!("it holds {what}: a person confirms before a secret reaches the model"),
        }))
    }

    /// Backs `path` up before it changes.
    pub fn backup(&self, path: &Path) -> Result<(), ToolError> {
        let Some(backups) = self.backups else {
            return Err(ToolError(format!(
                "{}: outside the project, and no backup store is set up; refused",
                path.display()
            )));
        };
        backups
            .save(path, &self.tag)
            .map(|_| ())
            .map_err(|e| ToolError(format!("{}: not changed: {e}", path.display())))
    }
}

#[cfg(test)]
pub(crate) use tests::test_permits;
#[cfg(test)]
mod tests;
