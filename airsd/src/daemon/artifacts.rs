//! `artifact.list` and `artifact.read`: thin clients read a session's artifacts through
//! airsd and never open its files themselves.

use air_proto::api::{ArtifactChunk, ArtifactInfo};
use base64::Engine as _;

use super::state::DaemonState;
use crate::artifacts::ArtifactStore;
use crate::error::{Error, Result};

/// The most `artifact.read` returns at once.
pub const MAX_READ: u64 = 1024 * 1024;

const COLUMNS: &str = "id, type, uri, path, original_name, size_bytes, sha256, task_id, agent_id,
     tool_run_id, command_run_id, created_at";

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<ArtifactInfo> {
    Ok(ArtifactInfo {
        id: r.get(0)?,
        artifact_type: r.get(1)?,
        uri: r.get(2)?,
        path: r.get(3)?,
        original_name: r.get(4)?,
        size_bytes: r.get(5)?,
        sha256: r.get(6)?,
        task_id: r.get(7)?,
        agent_id: r.get(8)?,
        tool_run_id: r.get(9)?,
        command_run_id: r.get(10)?,
        created_at: r.get(11)?,
    })
}

impl DaemonState {
    pub async fn artifact_list(
        &self,
        session_id: &str,
        task_id: Option<String>,
        command_run_id: Option<String>,
    ) -> Result<Vec<ArtifactInfo>> {
        let session = self.session(session_id).await?;
        let conn = session.readers().get()?;
        let mut stmt = conn.prepare_cached(&format!(
            "SELECT {COLUMNS} FROM artifacts
             WHERE (?1 IS NULL OR task_id = ?1) AND (?2 IS NULL OR command_run_id = ?2)
             ORDER BY seq DESC"
        ))?;
        let rows = stmt.query_map(rusqlite::params![task_id, command_run_id], row)?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }

    pub async fn artifact_read(
        &self,
        session_id: &str,
        artifact_id: &str,
        offset: Option<u64>,
        limit: Option<u64>,
    ) -> Result<ArtifactChunk> {
        if self.session_info(session_id).await?.status
            == air_proto::projection::SessionStatus::Deleted
        {
            return Err(Error::NotFound(format!(
                "session {session_id} was deleted; its artifacts were purged"
            )));
        }
        let session = self.session(session_id).await?;
        let info = {
            use rusqlite::OptionalExtension as _;
            let conn = session.readers().get()?;
            conn.query_row(
                &format!("SELECT {COLUMNS} FROM artifacts WHERE id = ?1"),
                [artifact_id],
                row,
            )
            .optional()?
        };
        let info = info.ok_or_else(|| {
            Error::NotFound(format!(
                "session {session_id} has no artifact {artifact_id} (`artifact.list` lists them)"
            ))
        })?;
        let rel = info
            .path
            .clone()
            .ok_or_else(|| Error::NotFound(format!("artifact {artifact_id} has no stored file")))?;
        if rel.split('/').any(|c| c == ".." || c.is_empty()) {
            return Err(Error::Internal(format!(
                "artifact {artifact_id}: its recorded path `{rel}` is not a plain relative path"
            )));
        }
        let offset = offset.unwrap_or(0);
        let limit = limit.unwrap_or(MAX_READ).clamp(1, MAX_READ);
        let store = ArtifactStore::new(
            self.paths.artifacts(session_id),
            &self.project.project_id,
            session_id,
        );
        let (bytes, more) = tokio::task::spawn_blocking(move || store.read(&rel, offset, limit))
            .await
            .map_err(|e| Error::Internal(format!("artifact read: {e}")))?
            .map_err(|e| Error::Internal(format!("artifact {artifact_id}: {e}")))?;
        // Text comes back as text; a chunk that ends inside a character stops before
        // it (the next read starts there); other bytes come back as base64.
        let (encoding, data, n, more) = match String::from_utf8(bytes) {
            Ok(text) => {
                let n = text.len() as u64;
                ("utf8", text, n, more)
            }
            Err(e) if e.utf8_error().error_len().is_none() && e.utf8_error().valid_up_to() > 0 => {
                let valid = e.utf8_error().valid_up_to();
                let mut bytes = e.into_bytes();
                bytes.truncate(valid);
                let text = String::from_utf8_lossy(&bytes).into_owned();
                ("utf8", text, valid as u64, true)
            }
            Err(e) => {
                let bytes = e.into_bytes();
                let n = bytes.len() as u64;
                (
                    "base64",
                    base64::engine::general_purpose::STANDARD.encode(bytes),
                    n,
                    more,
                )
            }
        };
        Ok(ArtifactChunk {
            artifact_id: artifact_id.to_string(),
            offset,
            bytes: n,
            encoding: encoding.into(),
            data,
            eof: !more,
        })
    }
}
