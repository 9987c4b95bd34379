//! The JSON-RPC methods: the `AirApi` implementation over [`DaemonState`], one handler
//! a method of the API's table, each given its params struct.

use std::sync::Arc;

use air_proto::api::{
    codes, params, AirApi, ClientInfo, DaemonStatus, EventsPage, Hello, MessageSent, RunInfo,
    SessionInfo, SessionUpdate, Snapshot,
};
use air_proto::error::ErrorKind;
use jsonrpsee::core::{RpcResult, SubscriptionResult};
use jsonrpsee::types::ErrorObjectOwned;
use jsonrpsee::{Extensions, PendingSubscriptionSink, SubscriptionSink};
use serde_json::value::RawValue;

use super::state::DaemonState;
use crate::bus::{Recv, Subscription};
use crate::error::Error;
use crate::scheduler::shell::Control;

/// Who is on the other end of a connection; put in each request's extensions by the
/// accept loop.
#[derive(Clone, Copy, Debug)]
pub struct Peer {
    pub conn: u64,
    pub pid: Option<u32>,
}

pub struct DaemonRpc {
    pub state: Arc<DaemonState>,
}

/// The wire error for a daemon error: a stable code, the message, and the kind as data.
pub fn rpc_error(e: Error) -> ErrorObjectOwned {
    let kind = e.kind();
    let code = match kind {
        ErrorKind::InvalidInput | ErrorKind::Protocol => codes::INVALID_PARAMS,
        ErrorKind::NotFound => codes::NOT_FOUND,
        ErrorKind::Conflict => codes::CONFLICT,
        ErrorKind::PermissionDenied => codes::PERMISSION_DENIED,
        ErrorKind::SchemaMismatch => codes::SCHEMA_MISMATCH,
        ErrorKind::Unavailable | ErrorKind::Timeout | ErrorKind::RateLimited => codes::UNAVAILABLE,
        _ => codes::INTERNAL,
    };
    let data = match &e {
        Error::Plan(errors) => serde_json::json!({ "kind": kind, "plan_errors": errors }),
        _ => serde_json::json!({ "kind": kind }),
    };
    ErrorObjectOwned::owned(code, e.to_string(), Some(data))
}

fn to_json<T: serde::Serialize>(
    item: &T,
) -> Result<Box<serde_json::value::RawValue>, ErrorObjectOwned> {
    serde_json::value::to_raw_value(item).map_err(|e| rpc_error(Error::Internal(e.to_string())))
}

fn rss_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    let page = nix::unistd::sysconf(nix::unistd::SysconfVar::PAGE_SIZE).ok()??;
    Some(pages * page as u64)
}

impl AirApi for DaemonRpc {
    async fn hello(
        &self,
        ext: &Extensions,
        params::Hello { hello }: params::Hello,
    ) -> RpcResult<Hello> {
        let peer = ext.get::<Peer>().copied();
        let conn = peer.map_or(0, |p| p.conn);
        let client_id = format!("c{conn}");
        if hello.protocol_version != air_proto::PROTOCOL_VERSION {
            return Err(ErrorObjectOwned::owned(
                codes::INVALID_PARAMS,
                format!(
                    "protocol mismatch: {} {} speaks protocol {}, this airsd {} speaks {}; run `air daemon restart` so that both are the same version",
                    hello.client,
                    hello.version,
                    hello.protocol_version,
                    env!("CARGO_PKG_VERSION"),
                    air_proto::PROTOCOL_VERSION
                ),
                Some(serde_json::json!({ "kind": ErrorKind::Protocol, "daemon_protocol_version": air_proto::PROTOCOL_VERSION })),
            ));
        }
        if let Some(peer) = peer {
            self.state.register_client(
                peer.conn,
                ClientInfo {
                    client_id: client_id.clone(),
                    client: hello.client,
                    version: hello.version,
                    pid: peer.pid,
                    connected_at: air_proto::time::now_iso(),
                    session_id: hello.session_id,
                    mode: hello.mode,
                },
            );
        }
        Ok(Hello {
            daemon_version: env!("CARGO_PKG_VERSION").to_string(),
            protocol_version: air_proto::PROTOCOL_VERSION,
            pid: std::process::id(),
            project_id: self.state.project.project_id.clone(),
            project_root: self.state.paths.root().display().to_string(),
            client_id,
        })
    }

    async fn status(&self, _: &Extensions, _: params::NoParams) -> RpcResult<DaemonStatus> {
        let s = &self.state;
        let sessions = s.list_sessions().await.map_err(rpc_error)?.len();
        Ok(DaemonStatus {
            pid: std::process::id(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            protocol_version: air_proto::PROTOCOL_VERSION,
            started_at: s.started_at.clone(),
            uptime_ms: s.started.elapsed().as_millis() as u64,
            socket: s.socket.display().to_string(),
            project_root: s.paths.root().display().to_string(),
            project_id: s.project.project_id.clone(),
            sessions,
            open_sessions: s.open_sessions().await,
            clients: s.connections(),
            running_workers: s.running_workers(),
            rss_bytes: rss_bytes(),
            idle_timeout_secs: s.idle_timeout.as_secs(),
            runs: s.run_briefs().await,
            provider_settings: s.own_provider_settings(),
            last_abnormal_exit: s.last_abnormal_exit.clone(),
        })
    }

    async fn shutdown(&self, _: &Extensions, _: params::NoParams) -> RpcResult<bool> {
        tracing::info!("shutdown requested over the API");
        // Answer first: stopping closes this connection.
        let state = self.state.clone();
        tokio::spawn(async move {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            state.request_shutdown();
        });
        Ok(true)
    }

    async fn session_create(
        &self,
        _: &Extensions,
        params: params::SessionCreate,
    ) -> RpcResult<SessionInfo> {
        self.state.create_session(params).await.map_err(rpc_error)
    }

    async fn session_list(
        &self,
        _: &Extensions,
        _: params::NoParams,
    ) -> RpcResult<Vec<SessionInfo>> {
        self.state.list_sessions().await.map_err(rpc_error)
    }

    async fn session_get(
        &self,
        _: &Extensions,
        params::Session { session_id }: params::Session,
    ) -> RpcResult<SessionInfo> {
        self.state
            .session_info(&session_id)
            .await
            .map_err(rpc_error)
    }

    async fn session_snapshot(
        &self,
        _: &Extensions,
        params::Session { session_id }: params::Session,
    ) -> RpcResult<Snapshot> {
        let session = self.state.session(&session_id).await.map_err(rpc_error)?;
        let projection = session.snapshot();
        Ok(Snapshot {
            session_id,
            seq: projection.seq,
            projection,
        })
    }

    async fn session_subscribe(
        &self,
        _: &Extensions,
        pending: PendingSubscriptionSink,
        params::Subscribe {
            session_id,
            from_seq,
        }: params::Subscribe,
    ) -> SubscriptionResult {
        if let Err(e) = self.state.session(&session_id).await {
            pending.reject(rpc_error(e)).await;
            return Ok(());
        }
        let sink = pending.accept().await?;
        let state = self.state.clone();
        tokio::spawn(async move {
            if let Err(e) = stream_session(&state, &session_id, from_seq, sink).await {
                tracing::debug!(session = %session_id, reason = %e, "subscription ended");
            }
        });
        Ok(())
    }

    async fn editor_serve(
        &self,
        ext: &Extensions,
        pending: PendingSubscriptionSink,
        params::EditorServe {
            session_id,
            read,
            write,
        }: params::EditorServe,
    ) -> SubscriptionResult {
        let session = match self.state.session(&session_id).await {
            Ok(s) => s,
            Err(e) => {
                pending.reject(rpc_error(e)).await;
                return Ok(());
            }
        };
        // Only the person's own client, steering the session, serves its files.
        let Some(conn) = ext
            .get::<Peer>()
            .map(|p| p.conn)
            .filter(|c| self.state.steers(*c, &session_id))
        else {
            pending
                .reject(rpc_error(Error::Refused(format!(
                    "editor.serve needs a connection that steers session {session_id} (daemon.hello with its id and mode `steering`)"
                ))))
                .await;
            return Ok(());
        };
        let sink = pending.accept().await?;
        let root = crate::scheduler::tooljob::resolved_root(self.state.paths.root());
        let mut requests =
            session
                .editors()
                .serve(conn, &root, read.unwrap_or(false), write.unwrap_or(false));
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = sink.closed() => break,
                    request = requests.recv() => {
                        let Some(request) = request else { break };
                        let sent = match to_json(&request) {
                            Ok(json) => sink.send(json).await.is_ok(),
                            Err(_) => false,
                        };
                        if !sent {
                            break;
                        }
                    }
                }
            }
            session.editors().withdraw(conn);
        });
        Ok(())
    }

    async fn editor_answer(
        &self,
        ext: &Extensions,
        params::EditorAnswer {
            session_id,
            request_id,
            content,
            error,
        }: params::EditorAnswer,
    ) -> RpcResult<bool> {
        let session = self.state.session(&session_id).await.map_err(rpc_error)?;
        let conn = ext.get::<Peer>().map_or(0, |p| p.conn);
        let answer = match error {
            Some(why) => Err(why),
            None => Ok(content),
        };
        Ok(session.editors().answer(conn, &request_id, answer))
    }

    async fn events_list(
        &self,
        _: &Extensions,
        query: params::EventsList,
    ) -> RpcResult<EventsPage> {
        self.state.events(query).await.map_err(rpc_error)
    }

    async fn ui_state_get(
        &self,
        _: &Extensions,
        params::UiStateGet { session_id, key }: params::UiStateGet,
    ) -> RpcResult<Option<serde_json::Value>> {
        self.state
            .ui_state_get(&session_id, &key)
            .await
            .map_err(rpc_error)
    }

    async fn ui_state_put(
        &self,
        _: &Extensions,
        params::UiStatePut {
            session_id,
            key,
            value,
        }: params::UiStatePut,
    ) -> RpcResult<bool> {
        self.state
            .ui_state_put(&session_id, &key, value)
            .await
            .map(|()| true)
            .map_err(rpc_error)
    }

    async fn message_send(
        &self,
        ext: &Extensions,
        params::MessageSend {
            session_id,
            text,
            to,
            env,
        }: params::MessageSend,
    ) -> RpcResult<MessageSent> {
        // The sender's settings: a run this message starts or continues uses them.
        self.state.remember_env(&session_id, env);
        self.state
            .converse(&session_id, &text, to, self.who(ext))
            .await
            .map_err(rpc_error)
    }

    async fn conversation_list(
        &self,
        _: &Extensions,
        params: params::ConversationList,
    ) -> RpcResult<air_proto::api::ConversationPage> {
        self.state
            .conversation_page(params)
            .await
            .map_err(rpc_error)
    }

    async fn conversation_start(
        &self,
        ext: &Extensions,
        params: params::ConversationStart,
    ) -> RpcResult<SessionInfo> {
        let by = super::conversation::Caller {
            conn: ext.get::<Peer>().map(|p| p.conn),
            name: self.who(ext),
        };
        self.state
            .start_conversation(params, by)
            .await
            .map_err(rpc_error)
    }

    async fn clients_list(
        &self,
        _: &Extensions,
        _: params::NoParams,
    ) -> RpcResult<Vec<ClientInfo>> {
        Ok(self.state.clients())
    }

    async fn run_start(&self, _: &Extensions, params: params::RunStart) -> RpcResult<RunInfo> {
        self.state.start_run(params).await.map_err(rpc_error)
    }

    async fn run_continue(
        &self,
        ext: &Extensions,
        params::RunContinue {
            session_id,
            max_cost,
            max_tokens,
            max_time_ms,
            task_ids,
            env,
        }: params::RunContinue,
    ) -> RpcResult<RunInfo> {
        // The settings of the client asking: a run picked up again uses them.
        self.state.remember_env(&session_id, env);
        let budgets = air_proto::plan::Budgets {
            max_cost,
            max_tokens,
            max_time_ms,
        };
        self.state
            .continue_run(&session_id, self.who(ext), budgets, task_ids)
            .await
            .map_err(rpc_error)
    }

    async fn run_cancel(
        &self,
        ext: &Extensions,
        params::RunCancel {
            session_id,
            task_id,
            reason,
        }: params::RunCancel,
    ) -> RpcResult<bool> {
        let by = self.who(ext);
        let reason = reason.unwrap_or_else(|| match &by {
            Some(who) => format!("cancelled by {who}"),
            None => "cancelled".into(),
        });
        self.state
            .control_run(
                &session_id,
                Control::Cancel {
                    task_id,
                    reason,
                    by,
                },
            )
            .await
            .map_err(rpc_error)
    }

    async fn run_land(
        &self,
        _ext: &Extensions,
        params::RunLand { session_id, always }: params::RunLand,
    ) -> RpcResult<air_proto::payload::Landing> {
        self.state
            .land(&session_id, always.unwrap_or(false))
            .await
            .map_err(rpc_error)
    }

    async fn run_undo(
        &self,
        _ext: &Extensions,
        params::RunUndo {
            session_id,
            task_id,
        }: params::RunUndo,
    ) -> RpcResult<air_proto::payload::UndoResult> {
        self.state
            .undo(&session_id, &task_id)
            .await
            .map_err(rpc_error)
    }

    async fn workspace_prune(
        &self,
        _ext: &Extensions,
        params::WorkspacePrune { all, dry_run }: params::WorkspacePrune,
    ) -> RpcResult<air_proto::payload::PruneResult> {
        self.state
            .prune_worktrees(all.unwrap_or(false), dry_run.unwrap_or(false))
            .await
            .map_err(rpc_error)
    }

    async fn run_set_mode(
        &self,
        ext: &Extensions,
        params::RunSetMode {
            session_id,
            permission_mode,
        }: params::RunSetMode,
    ) -> RpcResult<bool> {
        self.state
            .set_mode(&session_id, permission_mode, self.who(ext))
            .await
            .map_err(rpc_error)
    }

    async fn run_pause(
        &self,
        ext: &Extensions,
        params::RunPause {
            session_id,
            task_id,
        }: params::RunPause,
    ) -> RpcResult<bool> {
        self.state
            .set_paused(&session_id, task_id.as_deref(), true, self.who(ext))
            .await
            .map_err(rpc_error)
    }

    async fn run_resume(
        &self,
        ext: &Extensions,
        params::RunPause {
            session_id,
            task_id,
        }: params::RunPause,
    ) -> RpcResult<bool> {
        self.state
            .set_paused(&session_id, task_id.as_deref(), false, self.who(ext))
            .await
            .map_err(rpc_error)
    }

    async fn planning_answer(
        &self,
        ext: &Extensions,
        params: params::PlanningAnswer,
    ) -> RpcResult<u64> {
        self.state
            .answer_planning(params, self.who(ext))
            .await
            .map_err(rpc_error)
    }

    async fn requirement_change(
        &self,
        ext: &Extensions,
        params: params::RequirementChange,
    ) -> RpcResult<u64> {
        self.state
            .change_requirement(params, self.who(ext))
            .await
            .map_err(rpc_error)
    }

    async fn planning_decide(
        &self,
        ext: &Extensions,
        params: params::PlanningDecide,
    ) -> RpcResult<u64> {
        self.state
            .decide_plan(params, self.who(ext))
            .await
            .map_err(rpc_error)
    }

    async fn permission_respond(
        &self,
        ext: &Extensions,
        params::PermissionRespond {
            session_id,
            request_id,
            decision,
            reason,
        }: params::PermissionRespond,
    ) -> RpcResult<u64> {
        let allow = decision == air_proto::payload::PermissionDecision::Allow;
        self.state
            .respond_permission(&session_id, &request_id, allow, reason, self.who(ext))
            .await
            .map_err(rpc_error)
    }

    async fn session_archive(
        &self,
        _: &Extensions,
        params::SessionRetire { session_id, reason }: params::SessionRetire,
    ) -> RpcResult<u64> {
        self.state
            .archive_session(&session_id, reason)
            .await
            .map_err(rpc_error)
    }

    async fn session_delete(
        &self,
        _: &Extensions,
        params::SessionRetire { session_id, reason }: params::SessionRetire,
    ) -> RpcResult<u64> {
        self.state
            .delete_session(&session_id, reason)
            .await
            .map_err(rpc_error)
    }

    async fn debug_search(
        &self,
        _: &Extensions,
        params::DebugSearch { query, limit }: params::DebugSearch,
    ) -> RpcResult<Vec<air_proto::api::DebugRecord>> {
        let path = self.state.paths.debug_records();
        let limit = limit.unwrap_or(10).clamp(1, 100);
        if !path.exists() {
            return Ok(Vec::new());
        }
        tokio::task::spawn_blocking(move || {
            crate::learning::knowledge::DebugRecords::open(&path)?.search(&query, limit)
        })
        .await
        .map_err(|e| rpc_error(crate::error::Error::Internal(e.to_string())))?
        .map_err(rpc_error)
    }

    async fn memory_list(
        &self,
        _: &Extensions,
        params::MemoryList {
            status,
            kind,
            limit,
        }: params::MemoryList,
    ) -> RpcResult<Vec<air_proto::memory::MemoryEntry>> {
        self.state
            .memory_list(status, kind, limit)
            .await
            .map_err(rpc_error)
    }

    async fn memory_show(
        &self,
        _: &Extensions,
        params::MemoryId { id }: params::MemoryId,
    ) -> RpcResult<air_proto::api::MemoryView> {
        self.state.memory_show(id).await.map_err(rpc_error)
    }

    async fn memory_promote(
        &self,
        _: &Extensions,
        params::MemoryId { id }: params::MemoryId,
    ) -> RpcResult<air_proto::api::MemoryView> {
        self.state.memory_promote(id).await.map_err(rpc_error)
    }

    async fn memory_forget(
        &self,
        _: &Extensions,
        params::MemoryId { id }: params::MemoryId,
    ) -> RpcResult<air_proto::memory::MemoryEntry> {
        self.state.memory_forget(id).await.map_err(rpc_error)
    }

    async fn memory_curate(
        &self,
        _: &Extensions,
        _: params::NoParams,
    ) -> RpcResult<air_proto::api::CuratorReport> {
        self.state.memory_curate().await.map_err(rpc_error)
    }

    async fn artifact_list(
        &self,
        _: &Extensions,
        params::ArtifactList {
            session_id,
            task_id,
            command_run_id,
        }: params::ArtifactList,
    ) -> RpcResult<Vec<air_proto::api::ArtifactInfo>> {
        self.state
            .artifact_list(&session_id, task_id, command_run_id)
            .await
            .map_err(rpc_error)
    }

    async fn artifact_read(
        &self,
        _: &Extensions,
        params::ArtifactRead {
            session_id,
            artifact_id,
            offset,
            limit,
        }: params::ArtifactRead,
    ) -> RpcResult<air_proto::api::ArtifactChunk> {
        self.state
            .artifact_read(&session_id, &artifact_id, offset, limit)
            .await
            .map_err(rpc_error)
    }
}

impl DaemonRpc {
    /// The client behind a request, for the record.
    fn who(&self, ext: &Extensions) -> Option<String> {
        let peer = ext.get::<Peer>()?;
        self.state.client_name(peer.conn)
    }
}

/// Feeds one subscription: a starting point (resync snapshot, or durable events replayed
/// from the database after `from_seq`), then the live stream, resyncing whenever the
/// subscriber falls behind.
async fn stream_session(
    state: &DaemonState,
    session_id: &str,
    from_seq: Option<u64>,
    sink: SubscriptionSink,
) -> Result<(), String> {
    let session = state.session(session_id).await.map_err(|e| e.to_string())?;
    let (snapshot, mut sub) = session.subscribe();
    let seq = snapshot.seq;
    match from_seq {
        Some(from) if from <= seq => {
            // Replay what the client missed, from the database, then go live: the bus
            // subscription was taken at `seq`, so nothing is lost or repeated.
            let mut after = from;
            while after < seq {
                let page = state
                    .replay(session_id, after, seq, 1000)
                    .await
                    .map_err(|e| e.to_string())?;
                // A shared page may reach past this subscription's starting point.
                let ready: Vec<&(u64, Box<RawValue>)> =
                    page.iter().take_while(|(s, _)| *s <= seq).collect();
                let Some(&&(last, _)) = ready.last() else {
                    break;
                };
                let wires: Vec<&RawValue> = ready.iter().map(|(_, d)| &**d).collect();
                send_deltas(&sink, &wires).await?;
                after = last;
            }
            send(&sink, &SessionUpdate::CaughtUp { seq }).await?;
        }
        Some(from) => {
            let reason = format!("seq {from} is ahead of this session (at {seq})");
            resync(&sink, session_id, reason, snapshot).await?;
        }
        None => resync(&sink, session_id, "initial snapshot".into(), snapshot).await?,
    }
    live(session_id, &session, &mut sub, &sink).await
}

async fn live(
    session_id: &str,
    session: &crate::Session,
    sub: &mut Subscription,
    sink: &SubscriptionSink,
) -> Result<(), String> {
    let mut batch = Vec::with_capacity(256);
    loop {
        batch.clear();
        tokio::select! {
            _ = sink.closed() => return Ok(()),
            next = sub.recv_up_to(&mut batch, MAX_BATCH * 4) => match next {
                None => {
                    let mut encoded = Vec::with_capacity(batch.len());
                    for d in batch.drain(..) {
                        if d.wire.get().is_none() {
                            let json = to_json(&DeltaRef { seq: d.seq, durable: d.durable, event: &d.event })
                                .map_err(|e| e.to_string())?;
                            let _ = d.wire.set(json);
                        }
                        encoded.push(d.wire);
                    }
                    let wires: Vec<&RawValue> = encoded.iter().filter_map(|w| w.get().map(|b| &**b)).collect();
                    send_deltas(sink, &wires).await?;
                }
                Some(Recv::Resync) => {
                    let (snapshot, fresh) = session.subscribe();
                    *sub = fresh;
                    let reason = "the client fell behind; ephemeral events were dropped".to_string();
                    resync(sink, session_id, reason, snapshot).await?;
                }
                Some(_) => return Ok(()),
            }
        }
    }
}

/// Most deltas in one `deltas` notification.
const MAX_BATCH: usize = 64;

/// Sends encoded deltas: one alone as a `delta`, several as `deltas` notifications
/// (fewer frames and fewer writes for the same events; the items are spliced in as they
/// are, not re-encoded).
async fn send_deltas(sink: &SubscriptionSink, wires: &[&RawValue]) -> Result<(), String> {
    if let [one] = wires {
        return sink
            .send((*one).to_owned())
            .await
            .map_err(|e| e.to_string());
    }
    for chunk in wires.chunks(MAX_BATCH) {
        let json = to_json(&DeltasRef { deltas: chunk }).map_err(|e| e.to_string())?;
        sink.send(json).await.map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// The wire form of `SessionUpdate::Deltas` over already encoded deltas.
#[derive(serde::Serialize)]
#[serde(tag = "type", rename = "deltas")]
struct DeltasRef<'a> {
    deltas: &'a [&'a RawValue],
}

/// The wire form of `SessionUpdate::Delta`, serialized from a borrowed event so that one
/// encoding serves every subscriber.
#[derive(serde::Serialize)]
#[serde(tag = "type", rename = "delta")]
struct DeltaRef<'a> {
    seq: u64,
    durable: bool,
    event: &'a air_proto::event::RuntimeEvent,
}

async fn resync(
    sink: &SubscriptionSink,
    session_id: &str,
    reason: String,
    projection: air_proto::projection::Projection,
) -> Result<(), String> {
    let snapshot = Snapshot {
        session_id: session_id.to_string(),
        seq: projection.seq,
        projection,
    };
    send(
        sink,
        &SessionUpdate::Resync {
            reason,
            snapshot: Box::new(snapshot),
        },
    )
    .await
}

async fn send(sink: &SubscriptionSink, update: &SessionUpdate) -> Result<(), String> {
    let json = to_json(update).map_err(|e| e.to_string())?;
    sink.send(json).await.map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shared_delta_encoding_is_the_api_shape() {
        let event = air_proto::event::RuntimeEvent::new(
            "task.progress",
            "s",
            air_proto::event::EventSource::system(),
            serde_json::json!({"task_id": "T1"}),
        );
        let ours = serde_json::to_value(DeltaRef {
            seq: 7,
            durable: false,
            event: &event,
        })
        .unwrap();
        let api = serde_json::to_value(SessionUpdate::Delta {
            seq: 7,
            durable: false,
            event,
        })
        .unwrap();
        assert_eq!(ours, api);
    }
}
