//! The EventStore: the only way events enter a session.
//!
//! It looks each event's type up in the registry and decides: a durable event is
//! checked, prepared and handed to the session's writer thread, which inserts it and its
//! domain-table change in one transaction, commits (group commit: every request waiting
//! at that moment shares one fsync), publishes it on the bus and only then acknowledges
//! it. An ephemeral event is checked and published on the bus at once, never written.

mod apply;
mod checkpoint;
mod prepare;
pub mod query;
mod writer;

use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use air_proto::event::RuntimeEvent;
use air_proto::projection::Projection;
use rusqlite::Connection;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use crate::bus::EventBus;
use crate::error::{Error, Result};

pub(crate) use apply::apply as apply_prepared;
pub(crate) use prepare::{check, prepare};
use writer::{WriteOp, WriteRequest};

/// The bus of a session, carrying its projection.
pub type ProjectionBus = EventBus<Projection>;

/// What `append` did with an event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Appended {
    /// The event's sequence number (durable), or the seq it was published at (ephemeral).
    pub seq: u64,
    pub durable: bool,
}

#[derive(Clone, Copy, Debug)]
pub struct StoreConfig {
    /// Write requests that may wait for the writer before `append` waits too.
    pub queue: usize,
    /// Most requests committed in one transaction.
    pub max_batch: usize,
}

impl Default for StoreConfig {
    fn default() -> Self {
        Self {
            queue: 8_192,
            max_batch: 2_048,
        }
    }
}

pub struct EventStore {
    session_id: String,
    project_id: Option<String>,
    tx: Mutex<Option<mpsc::Sender<WriteRequest>>>,
    bus: Arc<ProjectionBus>,
    writer: Mutex<Option<JoinHandle<()>>>,
    checkpointer: Mutex<Option<JoinHandle<()>>>,
    publisher: Mutex<Option<JoinHandle<()>>>,
}

/// An event handed to the writer ([`EventStore::enqueue`]).
pub struct Queued(Option<oneshot::Receiver<Result<Vec<u64>>>>);

impl Queued {
    /// An event already committed.
    pub fn done() -> Queued {
        Queued(None)
    }

    /// Waits until the event is committed (or refused).
    pub async fn committed(self) -> Result<()> {
        match self.0 {
            None => Ok(()),
            Some(done) => done.await.map_err(|_| Error::WriterClosed)?.map(drop),
        }
    }
}

impl EventStore {
    /// Starts the writer thread on `conn` and the checkpoint thread on `checkpoint_conn`;
    /// `last_seq` is the highest stored seq.
    pub(crate) fn start(
        conn: Connection,
        checkpoint_conn: Connection,
        session_id: String,
        project_id: Option<String>,
        bus: Arc<ProjectionBus>,
        last_seq: u64,
        config: StoreConfig,
    ) -> Result<Self> {
        let (tx, rx) = mpsc::channel(config.queue);
        let (commit_tx, commit_rx) = std::sync::mpsc::sync_channel(1);
        let writer_bus = bus.clone();
        let short: String = session_id.chars().take(8).collect();
        let checkpointer = std::thread::Builder::new()
            .name(format!("air-ckpt-{short}"))
            .spawn(move || checkpoint::run(checkpoint_conn, commit_rx))
            .map_err(|e| Error::Internal(format!("cannot start the checkpoint thread: {e}")))?;
        let (outcome_tx, outcome_rx) = std::sync::mpsc::sync_channel(4);
        let publisher = std::thread::Builder::new()
            .name(format!("air-publish-{short}"))
            .spawn(move || writer::publish(writer_bus, outcome_rx))
            .map_err(|e| Error::Internal(format!("cannot start the publisher thread: {e}")))?;
        let handle = std::thread::Builder::new()
            .name(format!("air-writer-{short}"))
            .spawn(move || {
                writer::run(
                    conn,
                    rx,
                    outcome_tx,
                    last_seq + 1,
                    config.max_batch,
                    commit_tx,
                )
            })
            .map_err(|e| Error::Internal(format!("cannot start the writer thread: {e}")))?;
        Ok(Self {
            session_id,
            project_id,
            tx: Mutex::new(Some(tx)),
            bus,
            writer: Mutex::new(Some(handle)),
            checkpointer: Mutex::new(Some(checkpointer)),
            publisher: Mutex::new(Some(publisher)),
        })
    }

    pub fn bus(&self) -> &Arc<ProjectionBus> {
        &self.bus
    }

    fn sender(&self) -> Result<mpsc::Sender<WriteRequest>> {
        self.tx
            .lock()
            .map_err(|_| Error::WriterClosed)?
            .as_ref()
            .cloned()
            .ok_or(Error::WriterClosed)
    }

    async fn submit(&self, op: WriteOp) -> Result<Vec<u64>> {
        let (ack, done) = oneshot::channel();
        self.sender()?
            .send(WriteRequest { op, ack })
            .await
            .map_err(|_| Error::WriterClosed)?;
        done.await.map_err(|_| Error::WriterClosed)?
    }

    /// Fills what the store owns in the envelope: the project id, and the timestamp in
    /// its canonical form (UTC, microseconds), so stored times compare as text.
    fn complete(&self, event: &mut RuntimeEvent) {
        if event.project_id.is_none() {
            event.project_id.clone_from(&self.project_id);
        }
        if let Some(ts) = air_proto::time::canonical(&event.timestamp) {
            event.timestamp = ts;
        }
    }

    pub fn project_id(&self) -> Option<&str> {
        self.project_id.as_deref()
    }

    /// Appends one event. A durable event returns once it is committed and published; an
    /// ephemeral one once it is published.
    pub async fn append(&self, mut event: RuntimeEvent) -> Result<Appended> {
        self.complete(&mut event);
        let spec = check(&event, &self.session_id)?;
        if !spec.is_durable() {
            let seq = self.bus.publish_ephemeral(Arc::new(event));
            return Ok(Appended {
                seq,
                durable: false,
            });
        }
        let prepared = prepare(event)?;
        let seqs = self.submit(WriteOp::Events(vec![prepared])).await?;
        let seq = seqs
            .first()
            .copied()
            .ok_or_else(|| Error::Internal("writer returned no seq".into()))?;
        Ok(Appended { seq, durable: true })
    }

    /// Queues one event for the writer without waiting for its commit: events queued
    /// one after another are committed in that order. [`Queued::committed`] waits for
    /// it (and reports a refusal); dropping it leaves the event to commit on its own.
    pub async fn enqueue(&self, mut event: RuntimeEvent) -> Result<Queued> {
        self.complete(&mut event);
        let spec = check(&event, &self.session_id)?;
        if !spec.is_durable() {
            self.bus.publish_ephemeral(Arc::new(event));
            return Ok(Queued(None));
        }
        let prepared = prepare(event)?;
        let (ack, done) = oneshot::channel();
        self.sender()?
            .send(WriteRequest {
                op: WriteOp::Events(vec![prepared]),
                ack,
            })
            .await
            .map_err(|_| Error::WriterClosed)?;
        Ok(Queued(Some(done)))
    }

    /// Appends durable events atomically: all are committed, or none. Returns their seqs.
    pub async fn append_batch(&self, events: Vec<RuntimeEvent>) -> Result<Vec<u64>> {
        let mut prepared = Vec::with_capacity(events.len());
        for mut event in events {
            self.complete(&mut event);
            let spec = check(&event, &self.session_id)?;
            if !spec.is_durable() {
                return Err(Error::EphemeralInBatch {
                    event_type: event.event_type,
                });
            }
            prepared.push(prepare(event)?);
        }
        if prepared.is_empty() {
            return Ok(Vec::new());
        }
        self.submit(WriteOp::Events(prepared)).await
    }

    /// Stores the streaming state of an assistant message (crash recovery, D-051).
    pub async fn put_draft(
        &self,
        message_id: &str,
        agent_id: Option<&str>,
        task_id: Option<&str>,
        content: &Value,
    ) -> Result<()> {
        self.submit(draft_op(message_id, agent_id, task_id, content)?)
            .await
            .map(drop)
    }

    /// Queues a draft behind what is queued before it, without waiting for its
    /// commit (the writer deletes it when the finished message is recorded, so the
    /// order is what matters).
    pub async fn queue_draft(
        &self,
        message_id: &str,
        agent_id: Option<&str>,
        task_id: Option<&str>,
        content: &Value,
    ) -> Result<()> {
        let (ack, _done) = oneshot::channel();
        self.sender()?
            .send(WriteRequest {
                op: draft_op(message_id, agent_id, task_id, content)?,
                ack,
            })
            .await
            .map_err(|_| Error::WriterClosed)
    }

    /// Stores one key of UI recovery state (D-053).
    pub async fn put_ui_state(&self, key: &str, value: &Value) -> Result<()> {
        let value_json =
            serde_json::to_string(value).map_err(|e| Error::Internal(format!("ui state: {e}")))?;
        self.submit(WriteOp::PutUiState {
            key: key.to_string(),
            value_json,
        })
        .await
        .map(drop)
    }

    /// Stops accepting writes, lets queued ones commit and waits for the writer. Blocks:
    /// call it from a blocking context, after the tasks that append have stopped.
    pub fn shutdown(&self) {
        self.stop_accepting();
        let threads = [
            ("writer", &self.writer),
            ("publisher", &self.publisher),
            ("checkpoint", &self.checkpointer),
        ];
        for (name, slot) in threads {
            let handle = slot.lock().ok().and_then(|mut h| h.take());
            if let Some(handle) = handle {
                if handle.join().is_err() {
                    tracing::error!(session = %self.session_id, "the {name} thread panicked");
                }
            }
        }
        self.bus.close();
    }

    fn stop_accepting(&self) {
        if let Ok(mut tx) = self.tx.lock() {
            tx.take();
        }
    }
}

fn draft_op(
    message_id: &str,
    agent_id: Option<&str>,
    task_id: Option<&str>,
    content: &Value,
) -> Result<WriteOp> {
    let content_json = serde_json::to_string(content)
        .map_err(|e| Error::Internal(format!("draft content: {e}")))?;
    Ok(WriteOp::PutDraft {
        message_id: message_id.to_string(),
        agent_id: agent_id.map(str::to_string),
        task_id: task_id.map(str::to_string),
        content_json,
    })
}

impl Drop for EventStore {
    /// Closes the queue without waiting: the threads commit what is queued and end on
    /// their own. (Waiting here could hang a runtime whose tasks still hold the queue.)
    fn drop(&mut self) {
        self.stop_accepting();
    }
}
