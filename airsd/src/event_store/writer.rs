//! The writer thread: the one connection that writes a session's database.
//!
//! It takes every request waiting in its queue (up to `max_batch`), runs each in a
//! savepoint of one transaction (a bad request fails alone), commits once with
//! `synchronous=FULL`, publishes the committed events on the bus in sequence order, and
//! then acknowledges each request. Group commit is what makes a durable event cheap.

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

pub(crate) fn run(
    mut conn: Connection,
    mut rx: mpsc::Receiver<WriteRequest>,
    bus: Arc<ProjectionBus>,
    mut next_seq: u64,
    max_batch: usize,
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
        next_seq = commit_batch(&mut conn, &mut batch, &bus, next_seq);
    }
}

/// Commits one batch; returns the next free seq.
fn commit_batch(
    conn: &mut Connection,
    batch: &mut Vec<WriteRequest>,
    bus: &ProjectionBus,
    first_seq: u64,
) -> u64 {
    let mut results: Vec<Result<Vec<u64>>> = Vec::with_capacity(batch.len());
    let mut next_seq = first_seq;
    let outcome = (|| -> Result<()> {
        let mut tx = conn.transaction()?;
        for req in batch.iter() {
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
        Ok(())
    })();
    let requests = std::mem::take(batch);
    if let Err(e) = outcome {
        tracing::error!(error = %e, "commit of a write batch failed");
        let message = format!("the write could not be committed: {e}");
        for req in requests {
            let _ = req.ack.send(Err(Error::Internal(message.clone())));
        }
        return first_seq;
    }
    // Committed: publish in seq order, then acknowledge.
    let mut published = Vec::new();
    let mut acks = Vec::with_capacity(requests.len());
    for (req, result) in requests.into_iter().zip(results) {
        if let (WriteOp::Events(events), Ok(seqs)) = (req.op, &result) {
            for (p, &seq) in events.into_iter().zip(seqs) {
                published.push((seq, Arc::new(p.event)));
            }
        }
        acks.push((req.ack, result));
    }
    bus.publish_durable(published);
    for (ack, result) in acks {
        let _ = ack.send(result);
    }
    next_seq
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
