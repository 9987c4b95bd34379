//! The writer thread: the one connection that writes a session's database.
//!
//! It takes every request waiting in its queue (up to `max_batch`), runs them in one
//! transaction (a bad request fails alone, see [`commit_batch`]), commits once with
//! `synchronous=FULL`, and hands the outcome to the publisher thread, which publishes
//! the committed events on the bus in sequence order and then acknowledges each request.
//! Group commit is what makes a durable event cheap; the separate publisher lets the next
//! transaction start while the last one's events fan out.

use std::sync::Arc;

use rusqlite::{params, Connection};
use tokio::sync::{mpsc, oneshot};

use super::apply;
use super::prepare::Prepared;
use super::ProjectionBus;
use crate::error::{Error, Result};

pub(crate) enum WriteOp {
    /// Durable events, all or nothing.
    Events(Vec<Prepared>),
    PutDraft {
        message_id: String,
        agent_id: Option<String>,
        task_id: Option<String>,
        content_json: String,
    },
    PutUiState {
        key: String,
        value_json: String,
    },
}

pub(crate) struct WriteRequest {
    pub op: WriteOp,
    pub ack: oneshot::Sender<Result<Vec<u64>>>,
}

/// A committed (or failed) batch on its way to the publisher.
pub(crate) type Outcome = Vec<(WriteRequest, Result<Vec<u64>>)>;

pub(crate) fn run(
    mut conn: Connection,
    mut rx: mpsc::Receiver<WriteRequest>,
    publisher: std::sync::mpsc::SyncSender<Outcome>,
    mut next_seq: u64,
    max_batch: usize,
    committed: std::sync::mpsc::SyncSender<()>,
) {
    let mut batch = Vec::with_capacity(max_batch);
    while let Some(first) = rx.blocking_recv() {
        batch.push(first);
        while batch.len() < max_batch {
            match rx.try_recv() {
                Ok(req) => batch.push(req),
                Err(_) => break,
            }
        }
        let (outcome, next) = commit_batch(&mut conn, &mut batch, next_seq);
        next_seq = next;
        if publisher.send(outcome).is_err() {
            tracing::error!("the publisher thread is gone; stopping the writer");
            return;
        }
        // Wake the checkpointer; if it is already awake this commit rides along.
        let _ = committed.try_send(());
    }
}

/// Commits one batch; returns the next free seq.
///
/// The batch first runs as one plain transaction. Only if a request fails is it rolled
/// back and run again with a savepoint per request, so that the bad request fails alone:
/// savepoints cost a statement journal each, and failures are rare.
fn commit_batch(
    conn: &mut Connection,
    batch: &mut Vec<WriteRequest>,
    first_seq: u64,
) -> (Outcome, u64) {
    let outcome = match run_batch(conn, batch, first_seq, false) {
        Ok(done) => Ok(done),
        Err(BatchError::Request) => run_batch(conn, batch, first_seq, true),
        Err(e) => Err(e),
    };
    let requests = std::mem::take(batch);
    match outcome {
        Ok((results, next_seq)) => (requests.into_iter().zip(results).collect(), next_seq),
        Err(e) => {
            let message = match e {
                BatchError::Sqlite(e) => e.to_string(),
                BatchError::Request => "a request failed outside its savepoint".to_string(),
            };
            tracing::error!(error = %message, "commit of a write batch failed");
            let failed = requests
                .into_iter()
                .map(|req| {
                    let err =
                        Error::Internal(format!("the write could not be committed: {message}"));
                    (req, Err(err))
                })
                .collect();
            (failed, first_seq)
        }
    }
}

/// The publisher thread: publishes each committed batch in order, then acknowledges it.
pub(crate) fn publish(bus: Arc<ProjectionBus>, outcomes: std::sync::mpsc::Receiver<Outcome>) {
    for outcome in outcomes {
        let mut published = Vec::new();
        let mut acks = Vec::with_capacity(outcome.len());
        for (req, result) in outcome {
            if let (WriteOp::Events(events), Ok(seqs)) = (req.op, &result) {
                for (p, &seq) in events.into_iter().zip(seqs) {
                    published.push((seq, Arc::new(p.event)));
                }
            }
            acks.push((req.ack, result));
        }
        // The events are committed whatever happens here: a bug in a projection update
        // must not turn their acknowledgements into errors (a retry would duplicate them).
        let publish = std::panic::AssertUnwindSafe(|| bus.publish_durable(published));
        if std::panic::catch_unwind(publish).is_err() {
            tracing::error!("publishing a committed batch panicked; subscribers should resync");
        }
        for (ack, result) in acks {
            let _ = ack.send(result);
        }
    }
}

enum BatchError {
    /// A request failed while running without savepoints: run again isolated.
    Request,
    Sqlite(rusqlite::Error),
}

impl From<rusqlite::Error> for BatchError {
    fn from(e: rusqlite::Error) -> Self {
        BatchError::Sqlite(e)
    }
}

type BatchOutcome = (Vec<Result<Vec<u64>>>, u64);

/// Runs and commits `batch`; with `isolate`, each request in its own savepoint.
fn run_batch(
    conn: &mut Connection,
    batch: &[WriteRequest],
    first_seq: u64,
    isolate: bool,
) -> std::result::Result<BatchOutcome, BatchError> {
    let mut results: Vec<Result<Vec<u64>>> = Vec::with_capacity(batch.len());
    let mut next_seq = first_seq;
    let mut tx = conn.transaction()?;
    for req in batch {
        if !isolate {
            match run_op(&tx, &req.op, &mut next_seq) {
                Ok(seqs) => results.push(Ok(seqs)),
                Err(_) => return Err(BatchError::Request), // `tx` rolls back on drop
            }
            continue;
        }
        let mut sp = tx.savepoint()?;
        let start = next_seq;
        match run_op(&sp, &req.op, &mut next_seq) {
            Ok(seqs) => {
                sp.commit()?;
                results.push(Ok(seqs));
            }
            Err(e) => {
                sp.rollback()?;
                drop(sp);
                next_seq = start;
                results.push(Err(e));
            }
        }
    }
    tx.commit()?;
    Ok((results, next_seq))
}

fn run_op(conn: &Connection, op: &WriteOp, next_seq: &mut u64) -> Result<Vec<u64>> {
    match op {
        WriteOp::Events(events) => {
            let mut seqs = Vec::with_capacity(events.len());
            for p in events {
                let seq = *next_seq;
                apply::apply(conn, seq, p)?;
                *next_seq += 1;
                seqs.push(seq);
            }
            apply::check_request(conn, events)?;
            Ok(seqs)
        }
        WriteOp::PutDraft {
            message_id,
            agent_id,
            task_id,
            content_json,
        } => {
            conn.prepare_cached(
                "INSERT INTO message_drafts (message_id, agent_id, task_id, content_json, updated_at)
                 VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (message_id) DO UPDATE SET content_json = excluded.content_json,
                     updated_at = excluded.updated_at",
            )?
            .execute(params![message_id, agent_id, task_id, content_json, air_proto::time::now_iso()])?;
            Ok(Vec::new())
        }
        WriteOp::PutUiState { key, value_json } => {
            conn.prepare_cached(
                "INSERT INTO ui_state (key, value_json, updated_at) VALUES (?1, ?2, ?3)
                 ON CONFLICT (key) DO UPDATE SET value_json = excluded.value_json,
                     updated_at = excluded.updated_at",
            )?
            .execute(params![key, value_json, air_proto::time::now_iso()])?;
            Ok(Vec::new())
        }
    }
}
