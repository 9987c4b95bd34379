//! The project's `.air/` tree (D-049, baseline §5): where everything lives, how a project
//! root is found from a working directory, and `air init`.
//!
//! ```text
//! <project>/.air/shared/   git-shareable: project.json, rules/, plan/
//! <project>/.air/local/    gitignored, mode 0700: sessions/<id>/session.db and artifacts/,
//!                          state/, backups/, locks/, tmp/, workspaces/, logs/
//! ```

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// Longest Unix socket path that binds (`sun_path` holds 108 bytes with the NUL).
pub const MAX_SOCKET_PATH: usize = 107;

/// Version of the `project.json` shape this build reads and writes.
pub const PROJECT_SCHEMA_VERSION: u32 = 1;
/// The line `air init` adds to `.gitignore`.
pub const GITIGNORE_LINE: &str = ".air/local/";

/// `.air/shared/project.json`.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProjectJson {
    pub schema_version: u32,
    /// Stable UUID, generated once; not derived from the path.
    pub project_id: String,
    pub name: String,
    pub created_at: Option<String>,
    /// What the project is and how it is built and tested (absent until the first
    /// scan; older projects have none).
    pub profile: Option<crate::project_profile::ProjectProfile>,
}

#[derive(Debug, thiserror::Error)]
pub enum LayoutError {
    #[error("not inside an air project (no .air/shared/project.json in {start} or any parent directory); run `air init` in the project's root first")]
    NotInProject { start: PathBuf },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not a directory")]
    NotADirectory { path: PathBuf },
    #[error("{path}: invalid project file: {message}")]
    BadProjectJson { path: PathBuf, message: String },
    #[error(
        "{path}: schema_version {found} is newer than this air supports ({supported}); upgrade air"
    )]
    ProjectSchemaTooNew {
        path: PathBuf,
        found: u32,
        supported: u32,
    },
}

impl LayoutError {
    fn io(path: &Path, source: std::io::Error) -> Self {
        LayoutError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

pub type Result<T, E = LayoutError> = std::result::Result<T, E>;

/// Every path of one project's `.air/` tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProjectPaths {
    root: PathBuf,
}

impl ProjectPaths {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }
    pub fn air(&self) -> PathBuf {
        self.root.join(".air")
    }
    pub fn shared(&self) -> PathBuf {
        self.air().join("shared")
    }
    /// Copies of the project as it was at its last commit, made by airsd for an
    /// analysis to compare with: readable by commands, never writable by them.
    pub fn base_copies(&self) -> PathBuf {
        self.air().join("base")
    }

    pub fn local(&self) -> PathBuf {
        self.air().join("local")
    }
    pub fn project_json(&self) -> PathBuf {
        self.shared().join("project.json")
    }
    pub fn rules(&self) -> PathBuf {
        self.shared().join("rules")
    }
    pub fn plan(&self) -> PathBuf {
        self.shared().join("plan")
    }
    pub fn sessions(&self) -> PathBuf {
        self.local().join("sessions")
    }
    pub fn state(&self) -> PathBuf {
        self.local().join("state")
    }
    /// Left by a daemon that was asked to stop (`air daemon stop`, a signal), from the
    /// moment it starts stopping until the next daemon starts: a client that loses
    /// it does not start another.
    pub fn daemon_stopped(&self) -> PathBuf {
        self.state().join("airsd.stopped")
    }
    pub fn backups(&self) -> PathBuf {
        self.local().join("backups")
    }
    pub fn locks(&self) -> PathBuf {
        self.local().join("locks")
    }
    pub fn tmp(&self) -> PathBuf {
        self.local().join("tmp")
    }
    /// Where a command's changes to what runs later are kept after they are put
    /// back (`quarantine/<command_run_id>/`).
    pub fn quarantine(&self) -> PathBuf {
        self.local().join("quarantine")
    }
    pub fn workspaces(&self) -> PathBuf {
        self.local().join("workspaces")
    }
    pub fn logs(&self) -> PathBuf {
        self.local().join("logs")
    }
    /// The project's debug knowledge: what its debuggers found, searchable.
    pub fn debug_records(&self) -> PathBuf {
        self.local().join("debug-records.db")
    }
    /// The project's learned memory (D-020): typed entries, candidates and promoted.
    pub fn learned_memory(&self) -> PathBuf {
        self.local().join("learned-memory.db")
    }
    /// The daemon's socket at its default place.
    pub fn socket(&self) -> PathBuf {
        self.local().join("airsd.sock")
    }
    /// Where the daemon records a fallback socket path (see [`MAX_SOCKET_PATH`]).
    pub fn socket_record(&self) -> PathBuf {
        self.local().join("airsd.sock.path")
    }
    /// The socket a client should connect to: the default one, or for a project too deep
    /// for a socket path, the fallback the daemon recorded.
    pub fn client_socket(&self) -> PathBuf {
        let default = self.socket();
        if default.as_os_str().len() <= MAX_SOCKET_PATH {
            return default;
        }
        match fs::read_to_string(self.socket_record()) {
            Ok(text) if !text.trim().is_empty() => PathBuf::from(text.trim()),
            _ => default,
        }
    }
    pub fn daemon_log(&self) -> PathBuf {
        self.logs().join("airsd.log")
    }
    pub fn session_dir(&self, session_id: &str) -> PathBuf {
        self.sessions().join(session_id)
    }
    pub fn session_db(&self, session_id: &str) -> PathBuf {
        self.session_dir(session_id).join("session.db")
    }
    pub fn artifacts(&self, session_id: &str) -> PathBuf {
        self.session_dir(session_id).join("artifacts")
    }

    /// Directories `air init` creates, shared first.
    pub fn init_dirs(&self) -> Vec<PathBuf> {
        let mut dirs = vec![self.rules(), self.plan()];
        dirs.extend(self.local_dirs());
        dirs
    }

    /// The directories under `.air/local/`.
    pub fn local_dirs(&self) -> [PathBuf; 7] {
        [
            self.sessions(),
            self.state(),
            self.backups(),
            self.locks(),
            self.tmp(),
            self.workspaces(),
            self.logs(),
        ]
    }

    /// Creates `.air/local/` and its directories (mode 0700) if missing: a fresh clone
    /// has `.air/shared/` only, since `.air/local/` is gitignored.
    pub fn ensure_local(&self) -> Result<()> {
        for dir in self.local_dirs() {
            fs::create_dir_all(&dir).map_err(|e| LayoutError::io(&dir, e))?;
        }
        restrict_to_owner(&self.local())
    }

    /// Reads and checks `project.json`.
    pub fn read_project(&self) -> Result<ProjectJson> {
        let path = self.project_json();
        let text = fs::read_to_string(&path).map_err(|e| LayoutError::io(&path, e))?;
        let project: ProjectJson =
            serde_json::from_str(&text).map_err(|e| LayoutError::BadProjectJson {
                path: path.clone(),
                message: e.to_string(),
            })?;
        if project.schema_version > PROJECT_SCHEMA_VERSION {
            return Err(LayoutError::ProjectSchemaTooNew {
                path,
                found: project.schema_version,
                supported: PROJECT_SCHEMA_VERSION,
            });
        }
        if uuid::Uuid::parse_str(&project.project_id).is_err() {
            return Err(LayoutError::BadProjectJson {
                path,
                message: format!("project_id `{}` is not a UUID", project.project_id),
            });
        }
        Ok(project)
    }

    /// Writes `project.json` whole (atomically: a crash leaves the old or the new).
    pub fn write_project(&self, project: &ProjectJson) -> Result<()> {
        let path = self.project_json();
        let mut text =
            serde_json::to_string_pretty(project).map_err(|e| LayoutError::BadProjectJson {
                path: path.clone(),
                message: e.to_string(),
            })?;
        text.push('\n');
        write_atomic(&path, text.as_bytes())
    }

    /// Holds `.air/local/locks/project.lock` until the returned guard is dropped: every
    /// change of `project.json` is made under it. (Not to be taken twice in one
    /// process: the second waits for the first.)
    pub fn lock_project(&self) -> Result<nix::fcntl::Flock<fs::File>> {
        self.ensure_local()?;
        let path = self.locks().join("project.lock");
        let lock = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| LayoutError::io(&path, e))?;
        nix::fcntl::Flock::lock(lock, nix::fcntl::FlockArg::LockExclusive)
            .map_err(|(_, e)| LayoutError::io(&path, std::io::Error::from(e)))
    }

    /// Reads `project.json`, lets `change` change it and writes it back when `change`
    /// says so (true), holding [`Self::lock_project`] throughout: two writers (the
    /// daemon's rescan, `air profile`, a proposal) never lose each other's change.
    /// Returns the project as it then is.
    pub fn update_project(
        &self,
        change: impl FnOnce(&mut ProjectJson) -> bool,
    ) -> Result<ProjectJson> {
        let _held = self.lock_project()?;
        let mut project = self.read_project()?;
        if change(&mut project) {
            self.write_project(&project)?;
        }
        Ok(project)
    }
}

/// Checks that `id` can name a session directory: 1 to 128 characters from
/// `A-Z a-z 0-9 . _ -`, not starting with `.` or `-`. Anything else could escape
/// `.air/local/sessions/`.
pub fn check_session_id(id: &str) -> std::result::Result<(), String> {
    if id.is_empty() || id.len() > 128 {
        return Err(format!(
            "session id must be 1 to 128 characters (got {})",
            id.len()
        ));
    }
    if id.starts_with('.') || id.starts_with('-') {
        return Err(format!("session id `{id}` must not start with `.` or `-`"));
    }
    match id
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        Some(c) => Err(format!(
            "session id `{id}` contains `{c}`; use letters, digits, `.`, `_`, `-`"
        )),
        None => Ok(()),
    }
}

/// Walks up from `start` to the nearest directory holding `.air/shared/project.json`,
/// as git finds `.git`.
pub fn find_root(start: &Path) -> Result<ProjectPaths> {
    let mut dir = Some(start);
    while let Some(d) = dir {
        if d.join(".air").join("shared").join("project.json").is_file() {
            return Ok(ProjectPaths::new(d));
        }
        dir = d.parent();
    }
    Err(LayoutError::NotInProject {
        start: start.to_path_buf(),
    })
}

/// What `air init` did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InitReport {
    pub project: ProjectJson,
    /// `project.json` was written now (false: it existed and was kept).
    pub created: bool,
    /// `.air/local/` was added to `.gitignore` now.
    pub gitignore_updated: bool,
}

/// Creates the layout under `root`, keeping whatever exists. Running it twice changes
/// nothing the second time.
pub fn init(root: &Path, created_at: &str) -> Result<InitReport> {
    let meta = fs::metadata(root).map_err(|e| LayoutError::io(root, e))?;
    if !meta.is_dir() {
        return Err(LayoutError::NotADirectory {
            path: root.to_path_buf(),
        });
    }
    let paths = ProjectPaths::new(root);
    for dir in paths.init_dirs() {
        fs::create_dir_all(&dir).map_err(|e| LayoutError::io(&dir, e))?;
    }
    restrict_to_owner(&paths.local())?;

    let project_path = paths.project_json();
    let (project, created) = if project_path.exists() {
        (paths.read_project()?, false)
    } else {
        let name = root
            .canonicalize()
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "project".to_string());
        let project = ProjectJson {
            schema_version: PROJECT_SCHEMA_VERSION,
            project_id: uuid::Uuid::new_v4().to_string(),
            name,
            created_at: Some(created_at.to_string()),
            profile: None,
        };
        let mut text =
            serde_json::to_string_pretty(&project).map_err(|e| LayoutError::BadProjectJson {
                path: project_path.clone(),
                message: e.to_string(),
            })?;
        text.push('\n');
        write_atomic(&project_path, text.as_bytes())?;
        (project, true)
    };
    let gitignore_updated = ensure_gitignored(root)?;
    Ok(InitReport {
        project,
        created,
        gitignore_updated,
    })
}

/// Adds `.air/local/` to `<root>/.gitignore` unless an equivalent line is there.
fn ensure_gitignored(root: &Path) -> Result<bool> {
    let path = root.join(".gitignore");
    let existing = match fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(LayoutError::io(&path, e)),
    };
    let covered = existing.lines().map(str::trim).any(|l| {
        matches!(
            l,
            ".air/local/"
                | ".air/local"
                | "/.air/local/"
                | "/.air/local"
                | ".air/"
                | ".air"
                | "/.air/"
                | "/.air"
        )
    });
    if covered {
        return Ok(false);
    }
    let mut file = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .map_err(|e| LayoutError::io(&path, e))?;
    let mut text = String::new();
    if !existing.is_empty() && !existing.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(GITIGNORE_LINE);
    text.push('\n');
    file.write_all(text.as_bytes())
        .map_err(|e| LayoutError::io(&path, e))?;
    Ok(true)
}

/// Writes `bytes` to a temporary file beside `path`, syncs it and renames it into place.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    // A temporary name of this write alone: two writes of one file at once (two runs
    // starting together) each rename their own, and the file is whole either way.
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = path.with_extension(format!("tmp.{}.{n}", std::process::id()));
    let result = (|| {
        let mut file = fs::File::create(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if let Err(e) = result {
        let _ = fs::remove_file(&tmp);
        return Err(LayoutError::io(path, e));
    }
    Ok(())
}

#[cfg(unix)]
fn restrict_to_owner(dir: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(dir, fs::Permissions::from_mode(0o700)).map_err(|e| LayoutError::io(dir, e))
}

#[cfg(not(unix))]
fn restrict_to_owner(_dir: &Path) -> Result<()> {
    Ok(())
}
