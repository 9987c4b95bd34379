//! Errors of the daemon library, one enum, mapped to a wire [`ErrorKind`] at the edge.

use std::path::PathBuf;

use air_proto::error::ErrorKind;
use air_proto::registry::PayloadError;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("unknown event type `{event_type}` (not in the event registry)")]
    UnknownEventType { event_type: String },
    #[error("event `{event_type}`: version {found} is not supported (the registry has version {expected})")]
    EventVersion {
        event_type: String,
        found: u32,
        expected: u32,
    },
    #[error("event `{event_type}`: {source}")]
    Payload {
        event_type: String,
        source: PayloadError,
    },
    #[error("event `{event_type}`: session_id `{found}` does not match this session `{expected}`")]
    WrongSession {
        event_type: String,
        expected: String,
        found: String,
    },
    #[error("event `{event_type}`: {field}: {message}")]
    Invalid {
        event_type: String,
        field: String,
        message: String,
    },
    #[error("event `{event_type}`: {field}: {message}")]
    Conflict {
        event_type: String,
        field: String,
        message: String,
    },
    #[error(
        "a batch must hold durable events only; `{event_type}` is ephemeral (publish it alone)"
    )]
    EphemeralInBatch { event_type: String },
    #[error("{path}: database schema version {found} is newer than this airsd supports ({supported}); upgrade air")]
    SchemaTooNew {
        path: PathBuf,
        found: u32,
        supported: u32,
    },
    #[error("{path}: database schema version {found} is older than this airsd ({supported}); run `air migrate` to upgrade it (a backup is taken first)")]
    SchemaTooOld {
        path: PathBuf,
        found: u32,
        supported: u32,
    },
    #[error("{path}: not an air session database (tables present but no schema version record)")]
    SchemaUnknown { path: PathBuf },
    #[error("invalid session id: {0}")]
    BadSessionId(String),
    #[error("{path}: the session database holds no session (its creation did not complete)")]
    IncompleteSession { path: PathBuf },
    #[error(
        "no session `{}` in this project (`air sessions` lists them)",
        session_named(path)
    )]
    NoSuchSession { path: PathBuf },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {source}")]
    Layout {
        path: PathBuf,
        #[source]
        source: Box<air_proto::layout::LayoutError>,
    },
    #[error("sqlite: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("database connection pool: {0}")]
    Pool(#[from] r2d2::Error),
    #[error("the session's writer has stopped")]
    WriterClosed,
    #[error("airsd is shutting down; retry once it has restarted")]
    ShuttingDown,
    #[error("{0}")]
    Plan(air_proto::plan::PlanErrors),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    Refused(String),
    #[error("internal: {0}")]
    Internal(String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// The session a database path names: its directory under `sessions/`.
fn session_named(db: &std::path::Path) -> String {
    db.parent()
        .and_then(|d| d.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| db.display().to_string())
}

impl Error {
    /// The stable kind this error has on the wire.
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::UnknownEventType { .. }
            | Error::EventVersion { .. }
            | Error::Payload { .. }
            | Error::WrongSession { .. }
            | Error::Invalid { .. }
            | Error::EphemeralInBatch { .. }
            | Error::BadSessionId(_)
            | Error::Plan(_) => ErrorKind::InvalidInput,
            Error::NotFound(_) => ErrorKind::NotFound,
            Error::Refused(_) => ErrorKind::Conflict,
            Error::Conflict { .. } => ErrorKind::Conflict,
            Error::SchemaTooNew { .. }
            | Error::SchemaTooOld { .. }
            | Error::SchemaUnknown { .. }
            | Error::IncompleteSession { .. } => ErrorKind::SchemaMismatch,
            Error::NoSuchSession { .. } => ErrorKind::NotFound,
            Error::Io { .. }
            | Error::Layout { .. }
            | Error::Pool(_)
            | Error::WriterClosed
            | Error::ShuttingDown => ErrorKind::Unavailable,
            Error::Sqlite(_) | Error::Internal(_) => ErrorKind::Internal,
        }
    }

    pub(crate) fn invalid(event_type: &str, field: &str, message: impl Into<String>) -> Self {
        Error::Invalid {
            event_type: event_type.into(),
            field: field.into(),
            message: message.into(),
        }
    }

    pub(crate) fn conflict(event_type: &str, field: &str, message: impl Into<String>) -> Self {
        Error::Conflict {
            event_type: event_type.into(),
            field: field.into(),
            message: message.into(),
        }
    }
}

impl Error {
    /// When this error says the session cannot be written (its disk is full, the
    /// database or its file system is read-only), what to tell the user, naming the
    /// place: `db` is the session's database.
    pub fn storage(&self, db: &std::path::Path) -> Option<String> {
        use rusqlite::ErrorCode;
        let dir = db.parent().unwrap_or(db).display();
        let full = || format!("the disk holding {dir} is full");
        let read_only = || {
            format!(
                "the session database {} cannot be written (read-only)",
                db.display()
            )
        };
        match self {
            Error::Sqlite(rusqlite::Error::SqliteFailure(e, _)) => match e.code {
                ErrorCode::DiskFull => Some(full()),
                ErrorCode::ReadOnly => Some(read_only()),
                _ => None,
            },
            Error::Io { source, .. } => match source.raw_os_error() {
                Some(libc::ENOSPC) | Some(libc::EDQUOT) => Some(full()),
                Some(libc::EROFS) => Some(read_only()),
                _ => None,
            },
            other => {
                let text = other.to_string();
                if text.contains("database or disk is full") || text.contains("No space left") {
                    Some(full())
                } else if text.contains("readonly database")
                    || text.contains("Read-only file system")
                {
                    Some(read_only())
                } else {
                    None
                }
            }
        }
    }
}
