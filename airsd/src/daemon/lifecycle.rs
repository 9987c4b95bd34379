//! Archiving and deleting sessions: an archived session keeps its artifacts; a deleted
//! one has them purged (its database stays, with the record of what happened).

use air_proto::event::{EventSource, RuntimeEvent};
use air_proto::events::{self as ev, Event};
use air_proto::payload::SessionStatusChanged;
use air_proto::projection::SessionStatus;

use super::state::DaemonState;
use crate::error::{Error, Result};

impl DaemonState {
    async fn refuse_if_running(&self, session_id: &str, what: &str) -> Result<()> {
        let Some(handle) = self.run_handle(session_id) else {
            return Ok(());
        };
        // A run whose end is recorded has a scheduler finishing up (its report, what
        // the session taught): that is waited for, not refused.
        let session = self.session(session_id).await?;
        let ended = session.bus().read(|p, _| {
            p.run
                .as_ref()
                .is_some_and(|r| r.status == air_proto::projection::RunState::Ended)
        });
        if ended
            && tokio::time::timeout(std::time::Duration::from_secs(30), handle.wait())
                .await
                .is_ok()
        {
            return Ok(());
        }
        Err(Error::Refused(format!(
            "a run is in progress in session {session_id}; cancel it first (`air cancel -s {session_id}`), then {what} it"
        )))
    }

    async fn set_status<E: Event>(&self, session_id: &str, event: E) -> Result<u64> {
        let session = self.session(session_id).await?;
        let e = RuntimeEvent::of(session_id, EventSource::system(), &event)
            .map_err(|e| Error::Internal(e.to_string()))?;
        Ok(session.store().append(e).await?.seq)
    }

    /// `session.archive`: the session is kept, artifacts included, marked archived.
    pub async fn archive_session(&self, session_id: &str, reason: Option<String>) -> Result<u64> {
        self.refuse_if_running(session_id, "archive").await?;
        let info = self.session_info(session_id).await?;
        if info.status == SessionStatus::Deleted {
            return Err(Error::Refused(format!(
                "session {session_id} was deleted; it cannot be archived"
            )));
        }
        self.set_status(
            session_id,
            ev::SessionArchived(SessionStatusChanged { reason }),
        )
        .await
    }

    /// `session.delete`: recorded as deleted, and its artifacts purged.
    pub async fn delete_session(&self, session_id: &str, reason: Option<String>) -> Result<u64> {
        self.refuse_if_running(session_id, "delete").await?;
        let seq = self
            .set_status(
                session_id,
                ev::SessionDeleted(SessionStatusChanged { reason }),
            )
            .await?;
        let dir = self.paths.artifacts(session_id);
        match std::fs::remove_dir_all(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => return Err(Error::Io { path: dir, source }),
        }
        Ok(seq)
    }
}
