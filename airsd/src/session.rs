//! A session: its database, its writer, its bus and projection, as one handle.
//!
//! Opening and creating are blocking (SQLite I/O and hydration): call them from a
//! blocking context (`spawn_blocking`) inside an async runtime.

use air_proto::events as ev;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use air_proto::event::{EventSource, RuntimeEvent};
use air_proto::layout::{check_session_id, ProjectPaths};
use air_proto::payload::SessionCreated;
use air_proto::projection::Projection;
use rusqlite::OptionalExtension;

use crate::bus::{BusConfig, EventBus, Subscription};
use crate::db::{self, OpenMode, ReaderPool};
use crate::error::{Error, Result};
use crate::event_store::{self, EventStore, ProjectionBus, StoreConfig};
use crate::projection::hydrate;

#[derive(Clone, Copy, Debug)]
pub struct SessionConfig {
    pub bus: BusConfig,
    pub store: StoreConfig,
    /// Read-only connections in the pool.
    pub readers: u32,
}

impl Default for SessionConfig {
    fn default() -> Self {
        Self {
            bus: BusConfig::default(),
            store: StoreConfig::default(),
            readers: 4,
        }
    }
}

pub struct Session {
    id: String,
    db_path: PathBuf,
    store: EventStore,
    readers: ReaderPool,
    /// The editor serving the session's files, if any (`editor.serve`).
    editors: crate::tools::editor::Editors,
}

/// The `session.created` event of a session about to be created.
pub fn created_event(session_id: &str, created: &SessionCreated) -> Result<RuntimeEvent> {
    RuntimeEvent::of(session_id, EventSource::system(), created)
        .map_err(|e| Error::Internal(format!("session.created payload: {e}")))
}

impl Session {
    /// Creates a session: its directory, its database, and `session.created` as event 1.
    ///
    /// The database is built under a temporary name and renamed into place once
    /// `session.created` is committed, so a session either exists whole or not at all.
    pub fn create(
        paths: &ProjectPaths,
        project_id: &str,
        session_id: &str,
        created: &SessionCreated,
        config: SessionConfig,
    ) -> Result<Session> {
        let created = created_event(session_id, created)?;
        Self::create_with(paths, project_id, session_id, created, Vec::new(), config)
    }

    /// [`Session::create`] from its `session.created` event (see [`created_event`]),
    /// with `first`, durable events of this session made after it, recorded in the
    /// same new file (a run's start and its plan): the session exists with them or not
    /// at all.
    pub fn create_with(
        paths: &ProjectPaths,
        project_id: &str,
        session_id: &str,
        created: RuntimeEvent,
        first: Vec<RuntimeEvent>,
        config: SessionConfig,
    ) -> Result<Session> {
        if created.event_type != ev::SessionCreated::TYPE {
            return Err(Error::Internal(format!(
                "a session starts with {}, not {}",
                ev::SessionCreated::TYPE,
                created.event_type
            )));
        }
        check_session_id(session_id).map_err(Error::BadSessionId)?;
        let dir = paths.session_dir(session_id);
        let db_path = paths.session_db(session_id);
        if db_path.exists() {
            return Err(Error::conflict(
                ev::SessionCreated::TYPE,
                "session_id",
                format!("session `{session_id}` already exists"),
            ));
        }
        for d in [dir.clone(), paths.artifacts(session_id)] {
            std::fs::create_dir_all(&d).map_err(|source| Error::Io {
                path: d.clone(),
                source,
            })?;
        }
        // The whole file is made in memory from the empty template with its first
        // events, written and synced under a temporary name, then renamed: a
        // `session.db` is always complete.
        let mut prepared = Vec::with_capacity(first.len() + 1);
        for mut event in std::iter::once(created).chain(first) {
            if event.project_id.is_none() {
                event.project_id = Some(project_id.to_string());
            }
            if let Some(ts) = air_proto::time::canonical(&event.timestamp) {
                event.timestamp = ts;
            }
            if !event_store::check(&event, session_id)?.is_durable() {
                return Err(Error::EphemeralInBatch {
                    event_type: event.event_type,
                });
            }
            prepared.push(event_store::prepare(event)?);
        }
        let image = {
            let template = db::template()?;
            let mut conn = rusqlite::Connection::open_in_memory()?;
            conn.deserialize_read_exact(rusqlite::MAIN_DB, template, template.len(), false)?;
            conn.execute_batch("PRAGMA foreign_keys = ON;")?;
            let tx = conn.transaction()?;
            for (seq, p) in (1..).zip(&prepared) {
                event_store::apply_prepared(&tx, seq, p)?;
            }
            tx.commit()?;
            db::as_wal_file(conn.serialize(rusqlite::MAIN_DB)?.to_vec())
        };
        let building = dir.join("session.db.creating");
        let written = (|| {
            use std::io::Write as _;
            // What a creation that did not finish left is replaced; a name made
            // meanwhile (a link) is refused, never followed.
            match std::fs::remove_file(&building) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
            let mut file = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&building)?;
            file.write_all(&image)?;
            file.sync_all()?;
            std::fs::rename(&building, &db_path)
        })();
        if let Err(source) = written {
            // A full disk leaves no half-written file behind.
            let _ = std::fs::remove_file(&building);
            return Err(Error::Io {
                path: building,
                source,
            });
        }
        std::fs::File::open(&dir)
            .and_then(|d| d.sync_all())
            .map_err(|source| Error::Io {
                path: dir.clone(),
                source,
            })?;
        // Its projection is its first events applied, as they would be live: nothing
        // is read back.
        let mut projection = Projection::new(session_id);
        for (seq, p) in (1..).zip(&prepared) {
            projection.apply(seq, &p.event, true);
        }
        let conn = db::open_writer(&db_path, OpenMode::Made)?;
        Self::start_with(
            conn,
            projection,
            db_path,
            session_id,
            Some(project_id.to_string()),
            config,
        )
    }

    /// Opens an existing session.
    pub fn open(paths: &ProjectPaths, session_id: &str, config: SessionConfig) -> Result<Session> {
        check_session_id(session_id).map_err(Error::BadSessionId)?;
        Self::open_path(&paths.session_db(session_id), session_id, config)
    }

    /// Opens the session database at `db_path`.
    pub fn open_path(db_path: &Path, session_id: &str, config: SessionConfig) -> Result<Session> {
        let conn = db::open_writer(db_path, OpenMode::Existing)?;
        let project_id: Option<Option<String>> = conn
            .query_row("SELECT project_id FROM session_meta", [], |r| r.get(0))
            .optional()?;
        let Some(project_id) = project_id else {
            return Err(Error::IncompleteSession {
                path: db_path.to_path_buf(),
            });
        };
        Self::start(conn, db_path.to_path_buf(), session_id, project_id, config)
    }

    fn start(
        conn: rusqlite::Connection,
        db_path: PathBuf,
        session_id: &str,
        project_id: Option<String>,
        config: SessionConfig,
    ) -> Result<Session> {
        let projection = hydrate(&conn, session_id)?;
        Self::start_with(conn, projection, db_path, session_id, project_id, config)
    }

    /// Starts the session's writer and bus from its projection.
    fn start_with(
        conn: rusqlite::Connection,
        projection: Projection,
        db_path: PathBuf,
        session_id: &str,
        project_id: Option<String>,
        config: SessionConfig,
    ) -> Result<Session> {
        let seq = projection.seq;
        let bus = Arc::new(EventBus::new(projection, seq, config.bus));
        let readers = db::reader_pool(&db_path, config.readers)?;
        let checkpoint_conn = db::open_checkpointer(&db_path)?;
        let store = EventStore::start(
            conn,
            checkpoint_conn,
            session_id.to_string(),
            project_id,
            bus,
            seq,
            config.store,
        )?;
        Ok(Session {
            id: session_id.to_string(),
            db_path,
            store,
            readers,
            editors: Default::default(),
        })
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    /// The editor serving the session's files, if any.
    pub fn editors(&self) -> &crate::tools::editor::Editors {
        &self.editors
    }

    pub fn db_path(&self) -> &Path {
        &self.db_path
    }

    pub fn store(&self) -> &EventStore {
        &self.store
    }

    pub fn bus(&self) -> &Arc<ProjectionBus> {
        self.store.bus()
    }

    /// Read-only connections for queries (event listing, details).
    pub fn readers(&self) -> &ReaderPool {
        &self.readers
    }

    /// The projection and the seq it reflects.
    pub fn snapshot(&self) -> Projection {
        self.bus().read(|p, _| p.clone())
    }

    /// A snapshot and a subscription to every delta after it, atomically.
    pub fn subscribe(&self) -> (Projection, Subscription) {
        self.bus().subscribe_with(|p, _| p.clone())
    }

    /// Rebuilds the projection from the database, as a fresh start would.
    pub fn rehydrate(&self) -> Result<Projection> {
        let conn = self.readers.get()?;
        hydrate(&conn, &self.id)
    }

    /// Lets queued writes commit and stops the writer.
    pub fn close(self) {
        self.store.shutdown();
    }
}
