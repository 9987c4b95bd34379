//! `air migrate` (D-055, baseline §22): brings a project's `.air` to the schema this
//! air writes. The plan first — `project.json`'s and each session database's version,
//! and what would change — then, once the user said yes: the daemon's lock taken (no
//! daemon may serve the project meanwhile), the files the migration changes copied to
//! `.air/local/backups/migrations/<time>/` with a manifest of their sha256, each
//! database migrated in one transaction, everything verified (integrity, foreign keys,
//! the version, and the rows of every table the database had before), and on any
//! failure every file put back as it was and checked against the manifest.
//!
//! `airsd __migrate --root DIR [--apply]` prints the plan (or with `--apply` the
//! outcome) as JSON; `air migrate` shows it and asks. A schema newer than this air is
//! refused with its version named, and nothing is touched.

use std::path::{Path, PathBuf};

use air_proto::layout::{ProjectPaths, PROJECT_SCHEMA_VERSION};
use rusqlite::{Connection, OpenFlags};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::db::{self, SCHEMA_VERSION};

/// The hidden subcommand.
pub const ARG: &str = "__migrate";

/// One file of `.air` and the versions it goes between.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Step {
    /// Relative to the project's root.
    pub path: String,
    pub from: u32,
    pub to: u32,
    /// What changes, in words.
    pub what: String,
}

/// What `air migrate` would do.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Plan {
    pub project_schema: u32,
    pub session_schema: u32,
    pub steps: Vec<Step>,
    /// Files already at this air's version.
    pub current: usize,
    /// Session databases that cannot be read, left as they are: each with why.
    #[serde(default)]
    pub unreadable: Vec<Skipped>,
}

/// A session database the plan could not read.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Skipped {
    /// Relative to the project's root.
    pub path: String,
    pub reason: String,
}

/// What it did.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Outcome {
    pub migrated: Vec<Step>,
    /// Where the files were copied before.
    pub backup: String,
}

/// Why a migration cannot be planned or did not happen.
#[derive(Debug, thiserror::Error)]
pub enum MigrateError {
    #[error("{path}: schema version {found} is newer than this air knows ({supported}); upgrade air (nothing was changed)")]
    TooNew {
        path: String,
        found: u32,
        supported: u32,
    },
    #[error("{path}: {message} (nothing was changed)")]
    Unreadable { path: String, message: String },
    #[error("a daemon (pid {pid}) serves this project: stop it first (`air daemon stop`); nothing was changed")]
    DaemonRunning { pid: String },
    #[error("{0} (nothing was changed)")]
    Backup(String),
    #[error("migrating {path} failed: {message}; every file was put back as it was (the copies stay in {backup})")]
    RolledBack {
        path: String,
        message: String,
        backup: String,
    },
    #[error("migrating {path} failed: {message}; putting the files back failed too: {restore}. Copy them back from {backup} (manifest.json lists them) before using this project")]
    RestoreFailed {
        path: String,
        message: String,
        restore: String,
        backup: String,
    },
}

/// What each session migration does, by the version it leads to.
fn describe(to: u32) -> &'static str {
    match to {
        2 => "adds context_messages (the tool results and notes agents were given), filled from the session's events",
        _ => "the session schema's next version",
    }
}

fn relative(paths: &ProjectPaths, p: &Path) -> String {
    p.strip_prefix(paths.root())
        .unwrap_or(p)
        .display()
        .to_string()
}

/// The session databases of the project, by id, and the places that could not be
/// looked at, with why.
fn session_dbs(paths: &ProjectPaths) -> (Vec<PathBuf>, Vec<(PathBuf, String)>) {
    let (mut found, mut unreadable) = (Vec::new(), Vec::new());
    let dir = paths.sessions();
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return (found, unreadable),
        Err(e) => {
            unreadable.push((dir, e.to_string()));
            return (found, unreadable);
        }
    };
    for entry in entries {
        let db = match entry {
            Ok(e) => e.path().join("session.db"),
            Err(e) => {
                unreadable.push((dir.clone(), e.to_string()));
                continue;
            }
        };
        match std::fs::symlink_metadata(&db) {
            Ok(m) if m.is_file() => found.push(db),
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => unreadable.push((db, e.to_string())),
        }
    }
    found.sort();
    unreadable.sort();
    (found, unreadable)
}

/// Reads the versions of `.air`'s files; changes nothing.
pub fn plan(paths: &ProjectPaths) -> Result<Plan, MigrateError> {
    let mut plan = Plan {
        project_schema: PROJECT_SCHEMA_VERSION,
        session_schema: SCHEMA_VERSION,
        ..Plan::default()
    };
    let pj = paths.project_json();
    let unreadable = |p: &Path, message: String| MigrateError::Unreadable {
        path: relative(paths, p),
        message,
    };
    let text = std::fs::read_to_string(&pj).map_err(|e| unreadable(&pj, e.to_string()))?;
    let json: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| unreadable(&pj, format!("not JSON: {e}")))?;
    let found = json["schema_version"]
        .as_u64()
        .and_then(|v| u32::try_from(v).ok())
        .ok_or_else(|| unreadable(&pj, "no schema_version".into()))?;
    if found > PROJECT_SCHEMA_VERSION {
        return Err(MigrateError::TooNew {
            path: relative(paths, &pj),
            found,
            supported: PROJECT_SCHEMA_VERSION,
        });
    }
    plan.current += 1;
    let (dbs, unreadable) = session_dbs(paths);
    plan.unreadable
        .extend(unreadable.into_iter().map(|(p, reason)| Skipped {
            path: relative(paths, &p),
            reason,
        }));
    for db_path in dbs {
        // One session that cannot be read is left as it is, and said; the others are
        // still brought up to date.
        let version = Connection::open_with_flags(
            &db_path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| e.to_string())
        .and_then(|conn| db::schema_version(&conn, &db_path).map_err(|e| e.to_string()));
        let version = match version {
            Ok(v) => v,
            Err(reason) => {
                // The path is said once, before the reason.
                let own = format!("{}: ", db_path.display());
                plan.unreadable.push(Skipped {
                    path: relative(paths, &db_path),
                    reason: reason.strip_prefix(&own).unwrap_or(&reason).to_string(),
                });
                continue;
            }
        };
        // An empty file holds no session: nothing to migrate.
        let Some(version) = version else {
            continue;
        };
        if version > SCHEMA_VERSION {
            return Err(MigrateError::TooNew {
                path: relative(paths, &db_path),
                found: version,
                supported: SCHEMA_VERSION,
            });
        }
        if version == SCHEMA_VERSION {
            plan.current += 1;
            continue;
        }
        let what = (version + 1..=SCHEMA_VERSION)
            .map(|v| format!("v{v}: {}", describe(v)))
            .collect::<Vec<_>>()
            .join("; ");
        plan.steps.push(Step {
            path: relative(paths, &db_path),
            from: version,
            to: SCHEMA_VERSION,
            what,
        });
    }
    Ok(plan)
}

fn sha256(path: &Path) -> std::io::Result<String> {
    let bytes = std::fs::read(path)?;
    Ok(Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

/// A file as it was before the migration: its copy, or that it did not exist.
#[derive(Serialize, Deserialize)]
struct Saved {
    path: String,
    sha256: Option<String>,
}

/// The files of a database: itself and its WAL and shared memory.
fn db_files(db: &Path) -> [PathBuf; 3] {
    let name = db
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    [
        db.to_path_buf(),
        db.with_file_name(format!("{name}-wal")),
        db.with_file_name(format!("{name}-shm")),
    ]
}

/// Copies `files` (relative to the root) to `backup`, with the manifest.
fn save(paths: &ProjectPaths, files: &[String], backup: &Path) -> Result<Vec<Saved>, String> {
    let mut saved = Vec::new();
    for rel in files {
        let from = paths.root().join(rel);
        let sum = if from.exists() {
            let to = backup.join("files").join(rel);
            if let Some(dir) = to.parent() {
                std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
            }
            std::fs::copy(&from, &to).map_err(|e| format!("copying {rel}: {e}"))?;
            Some(sha256(&from).map_err(|e| format!("{rel}: {e}"))?)
        } else {
            None
        };
        saved.push(Saved {
            path: rel.clone(),
            sha256: sum,
        });
    }
    let manifest = serde_json::to_string_pretty(&saved).map_err(|e| e.to_string())?;
    std::fs::write(backup.join("manifest.json"), manifest)
        .map_err(|e| format!("{}: {e}", backup.display()))?;
    Ok(saved)
}

/// Puts every saved file back (and removes those that did not exist), then checks
/// each against the manifest.
fn restore(paths: &ProjectPaths, saved: &[Saved], backup: &Path) -> Result<(), String> {
    for s in saved {
        let to = paths.root().join(&s.path);
        match &s.sha256 {
            Some(_) => {
                std::fs::copy(backup.join("files").join(&s.path), &to)
                    .map_err(|e| format!("{}: {e}", s.path))?;
            }
            None => match std::fs::remove_file(&to) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(format!("{}: {e}", s.path)),
            },
        }
    }
    for s in saved {
        let to = paths.root().join(&s.path);
        let now = if to.exists() {
            Some(sha256(&to).map_err(|e| format!("{}: {e}", s.path))?)
        } else {
            None
        };
        if now != s.sha256 {
            return Err(format!("{} differs from its copy", s.path));
        }
    }
    Ok(())
}

/// The rows of each table of a database.
fn row_counts(conn: &Connection) -> rusqlite::Result<Vec<(String, i64)>> {
    let tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name")?
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    tables
        .into_iter()
        .map(|t| {
            let n = conn.query_row(&format!("SELECT COUNT(*) FROM \"{t}\""), [], |r| r.get(0))?;
            Ok((t, n))
        })
        .collect()
}

/// Migrates one session database and verifies it.
fn migrate_db(path: &Path, from: u32) -> Result<(), String> {
    let mut conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(|e| e.to_string())?;
    conn.busy_timeout(std::time::Duration::from_secs(5))
        .map_err(|e| e.to_string())?;
    conn.execute_batch("PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON;")
        .map_err(|e| e.to_string())?;
    let before = row_counts(&conn).map_err(|e| e.to_string())?;
    db::apply_migrations(&mut conn, from).map_err(|e| e.to_string())?;
    // Verified: sound, consistent, at this version, and nothing it held lost.
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .map_err(|e| e.to_string())?;
    if check != "ok" {
        return Err(format!("integrity check: {check}"));
    }
    let broken: i64 = conn
        .query_row("SELECT COUNT(*) FROM pragma_foreign_key_check", [], |r| {
            r.get(0)
        })
        .map_err(|e| e.to_string())?;
    if broken > 0 {
        return Err(format!("{broken} rows break foreign keys"));
    }
    match db::schema_version(&conn, path).map_err(|e| e.to_string())? {
        Some(v) if v == SCHEMA_VERSION => {}
        other => return Err(format!("version after migrating: {other:?}")),
    }
    let after = row_counts(&conn).map_err(|e| e.to_string())?;
    for (table, n) in before.iter().filter(|(t, _)| t != "schema_version") {
        let now = after.iter().find(|(t, _)| t == table).map(|(_, n)| *n);
        if now != Some(*n) {
            return Err(format!("table {table} had {n} rows, now {now:?}"));
        }
    }
    conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);")
        .map_err(|e| e.to_string())?;
    Ok(())
}

/// Carries out `plan` (from [`plan`] just before). Takes the daemon's lock for the
/// whole of it.
pub fn apply(paths: &ProjectPaths) -> Result<Outcome, MigrateError> {
    let lock = match super::lock::DaemonLock::acquire(&paths.locks().join("airsd.lock")) {
        Ok(l) => l,
        Err(super::lock::LockError::Held { pid }) => {
            return Err(MigrateError::DaemonRunning { pid })
        }
        Err(e) => return Err(MigrateError::Backup(e.to_string())),
    };
    // And project.json's own lock: a profile changed meanwhile (`air profile set`) is
    // neither copied half way nor lost to a putting back.
    let _project = paths
        .lock_project()
        .map_err(|e| MigrateError::Backup(e.to_string()))?;
    // Planned again under the lock: what a daemon did before it stopped counts.
    let plan = plan(paths)?;
    let stamp = air_proto::time::now_iso()
        .to_string()
        .replace([':', '-'], "")
        .replace('.', "-");
    let backup = paths.backups().join("migrations").join(stamp);
    if plan.steps.is_empty() {
        drop(lock);
        return Ok(Outcome {
            migrated: Vec::new(),
            backup: String::new(),
        });
    }
    std::fs::create_dir_all(&backup)
        .map_err(|e| MigrateError::Backup(format!("{}: {e}", backup.display())))?;
    let mut files = vec![relative(paths, &paths.project_json())];
    for step in &plan.steps {
        for f in db_files(&paths.root().join(&step.path)) {
            files.push(relative(paths, &f));
        }
    }
    let saved = save(paths, &files, &backup).map_err(MigrateError::Backup)?;
    let backup_shown = relative(paths, &backup);
    for step in &plan.steps {
        if let Err(message) = migrate_db(&paths.root().join(&step.path), step.from) {
            return Err(match restore(paths, &saved, &backup) {
                Ok(()) => MigrateError::RolledBack {
                    path: step.path.clone(),
                    message,
                    backup: backup_shown,
                },
                Err(restore) => MigrateError::RestoreFailed {
                    path: step.path.clone(),
                    message,
                    restore,
                    backup: backup_shown,
                },
            });
        }
    }
    drop(lock);
    Ok(Outcome {
        migrated: plan.steps,
        backup: backup_shown,
    })
}

/// `airsd __migrate --root DIR [--apply]`: prints the plan or the outcome as JSON;
/// exit 1 with the error on stderr when it cannot.
pub fn main(args: &[std::ffi::OsString]) -> i32 {
    let mut root = None;
    let mut run = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.to_str() {
            Some("--apply") => run = true,
            Some("--root") => root = it.next().map(PathBuf::from),
            _ => {
                eprintln!(
                    "airsd {ARG}: unknown argument `{}` (usage: airsd {ARG} --root DIR [--apply])",
                    a.to_string_lossy()
                );
                return 2;
            }
        }
    }
    let Some(root) = root else {
        eprintln!("airsd {ARG}: --root DIR is needed");
        return 2;
    };
    let paths = ProjectPaths::new(root);
    if run {
        // Cut off half way, `.air` would be half migrated (and a restore half done):
        // interrupts wait until it is over.
        let mut held = nix::sys::signal::SigSet::empty();
        for s in [
            nix::sys::signal::Signal::SIGINT,
            nix::sys::signal::Signal::SIGTERM,
            nix::sys::signal::Signal::SIGHUP,
            nix::sys::signal::Signal::SIGQUIT,
        ] {
            held.add(s);
        }
        let _ = nix::sys::signal::sigprocmask(
            nix::sys::signal::SigmaskHow::SIG_BLOCK,
            Some(&held),
            None,
        );
        crate::answer_json(apply(&paths))
    } else {
        crate::answer_json(plan(&paths))
    }
}
