//! Read commands and how they print: plain text for people, `--json` for programs.

use air_proto::api::{params, AirApiClient, DaemonStatus, SessionInfo, SessionUpdate};
use air_proto::event::RuntimeEvent;
use jsonrpsee::core::client::Subscription;

use crate::{connect, rpc_failure, CmdResult, Failure};

pub(crate) fn print_json<T: serde::Serialize>(value: &T) -> CmdResult {
    outln!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}

fn human_bytes(n: u64) -> String {
    format!("{:.1} MiB", n as f64 / (1024.0 * 1024.0))
}

pub fn print_daemon_status(s: &DaemonStatus, json: bool) -> CmdResult {
    if json {
        return print_json(s);
    }
    outln!(
        "airsd {} (protocol {}), pid {}, up {}",
        s.version,
        s.protocol_version,
        s.pid,
        air_proto::report::duration(s.uptime_ms)
    );
    outln!("project   {} ({})", s.project_root, s.project_id);
    outln!("socket    {}", s.socket);
    outln!("sessions  {} stored, {} open", s.sessions, s.open_sessions);
    outln!("clients   {}", s.clients);
    outln!("workers   {}", s.running_workers);
    if let Some(rss) = s.rss_bytes {
        outln!("memory    {}", human_bytes(rss));
    }
    let idle = if s.idle_timeout_secs == 0 {
        "never".to_string()
    } else {
        air_proto::report::duration(s.idle_timeout_secs.saturating_mul(1000))
    };
    outln!("idle exit {idle}");
    for r in &s.runs {
        if let Some(why) = &r.halted {
            outln!(
                "run       {} {} — halted: {why}",
                r.session_id,
                r.title.as_deref().unwrap_or(&r.plan)
            );
            continue;
        }
        outln!(
            "run       {} {} — {}/{} tasks ended, {} agent(s) running{} (`air wait {}`)",
            r.session_id,
            r.title.as_deref().unwrap_or(&r.plan),
            r.ended,
            r.tasks,
            r.running_agents,
            if r.paused { ", paused" } else { "" },
            r.session_id
        );
    }
    Ok(())
}

fn print_sessions(list: &[SessionInfo]) {
    if list.is_empty() {
        outln!("no sessions yet");
        return;
    }
    let now = std::time::SystemTime::now();
    let rows: Vec<[String; 6]> = list
        .iter()
        .map(|s| {
            let run = s.run.as_ref();
            let outcome = s.outcome();
            let took = run
                .and_then(|r| {
                    let start = air_proto::time::parse(&r.started_at)?;
                    let end = match &r.ended_at {
                        Some(e) => air_proto::time::parse(e)?,
                        None if r.outcome == "running" => now,
                        None => return None,
                    };
                    end.duration_since(start).ok()
                })
                .map(|d| {
                    air_proto::report::duration(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
                })
                .unwrap_or_else(|| "-".into());
            let cost = match run.map_or(0, |r| r.cost_micro_usd) {
                0 => "-".to_string(),
                c => format!("${:.2}", c as f64 / 1e6),
            };
            [
                air_proto::api::short_id(&s.id, list).to_string(),
                outcome,
                s.created_at
                    .get(..16)
                    .unwrap_or(&s.created_at)
                    .replace('T', " "),
                took,
                format!("{} · {cost}", run.map_or(0, |r| r.tasks)),
                s.title.clone().or(s.plan_ref.clone()).unwrap_or_default(),
            ]
        })
        .collect();
    let width = |i: usize| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0);
    let (w0, w1, w3, w4) = (
        width(0).max(8),
        width(1).max(7),
        width(3).max(4),
        width(4).max(12),
    );
    outln!(
        "{:<w0$}  {:<w1$}  {:<16}  {:<w3$}  {:<w4$}  title",
        "session",
        "outcome",
        "started (UTC)",
        "took",
        "tasks · cost"
    );
    for r in rows {
        outln!(
            "{:<w0$}  {:<w1$}  {:<16}  {:<w3$}  {:<w4$}  {}",
            r[0],
            r[1],
            r[2],
            r[3],
            r[4],
            r[5]
        );
    }
}

pub async fn status(json: bool) -> CmdResult {
    let conn = connect().await?;
    let status = conn.client.status(params::NoParams {}).await?;
    let sessions = conn.client.session_list(params::NoParams {}).await?;
    // The newest session with a plan run: its tasks, where each one's change is
    // (its branch, merged or not) and where the run's work went.
    let mut newest: Vec<&SessionInfo> = sessions.iter().collect();
    newest.sort_by(|a, b| b.created_at.cmp(&a.created_at));
    let mut run = None;
    for s in newest.into_iter().take(20) {
        let Ok(snapshot) = conn
            .client
            .session_snapshot(params::Session {
                session_id: s.id.clone(),
            })
            .await
        else {
            continue;
        };
        if let Some(report) = air_proto::report::RunReport::from_projection(&snapshot.projection) {
            run = Some(report);
            break;
        }
    }
    if json {
        return print_json(
            &serde_json::json!({ "daemon": status, "sessions": sessions, "run": run }),
        );
    }
    print_daemon_status(&status, false)?;
    outln!();
    print_sessions(&sessions);
    if let Some(report) = &run {
        outln!("\nthe newest run, of session {}:", report.session_id);
        print_summary(report);
    }
    Ok(())
}

pub async fn sessions(json: bool) -> CmdResult {
    let conn = connect().await?;
    let list = conn.client.session_list(params::NoParams {}).await?;
    if json {
        return print_json(&list);
    }
    print_sessions(&list);
    Ok(())
}

/// `air sessions archive|delete ID`.
pub async fn retire(action: crate::SessionsAction) -> CmdResult {
    let conn = connect().await?;
    match action {
        crate::SessionsAction::Archive { session, reason } => {
            let session = crate::session_of(&conn, Some(session)).await?;
            conn.client
                .session_archive(params::SessionRetire {
                    session_id: session.clone(),
                    reason,
                })
                .await
                .map_err(crate::rpc_failure)?;
            outln!("session {session} archived; its artifacts are kept");
        }
        crate::SessionsAction::Delete { session, reason } => {
            let session = crate::session_of(&conn, Some(session)).await?;
            conn.client
                .session_delete(params::SessionRetire {
                    session_id: session.clone(),
                    reason,
                })
                .await
                .map_err(crate::rpc_failure)?;
            outln!("session {session} deleted; its artifacts were purged");
        }
    }
    Ok(())
}

/// How events print: `air events` as stored (or JSON), `air log` in words.
pub enum Format {
    Raw,
    Json,
    Words(Box<air_proto::event_text::Reader>),
}

impl Format {
    fn print(&mut self, seq: u64, event: &RuntimeEvent) -> CmdResult {
        match self {
            Format::Json => outln!(
                "{}",
                serde_json::to_string(&serde_json::json!({ "seq": seq, "event": event }))?
            ),
            Format::Raw => outln!(
                "{:>7}  {}  {:<28} {}",
                seq,
                event.timestamp,
                event.event_type,
                serde_json::to_string(&event.payload)?
            ),
            // The stream's pieces are in the messages they make.
            Format::Words(_)
                if matches!(
                    event.event_type.as_str(),
                    "token.delta" | "agent.heartbeat" | "stdout.delta" | "stderr.delta"
                ) => {}
            Format::Words(reader) => outln!("{}", reader.line(event)),
        }
        Ok(())
    }
}

/// Prints the stored events after `after` up to `upto`; returns the last seq printed.
async fn print_stored(
    conn: &air_proto::client::Connection,
    session_id: &str,
    types: &Option<Vec<String>>,
    mut after: u64,
    upto: u64,
    format: &mut Format,
) -> Result<u64, Failure> {
    loop {
        let page = conn
            .client
            .events_list(params::EventsList {
                session_id: session_id.to_string(),
                types: types.clone(),
                after_seq: Some(after),
                limit: Some(1000),
                ..Default::default()
            })
            .await?;
        for e in page.events.iter().filter(|e| e.seq <= upto) {
            format.print(e.seq, &e.event)?;
            after = e.seq;
        }
        match page.next_after_seq {
            Some(next) if next < upto => after = next,
            _ => return Ok(after),
        }
    }
}

/// `air events` and `air log`: a session's events, the stored ones, then (with
/// `follow`) each as it happens.
pub async fn events(
    session: Option<String>,
    types: Vec<String>,
    follow: bool,
    mut format: Format,
) -> CmdResult {
    let conn = connect().await?;
    let session_id = crate::session_of(&conn, session).await?;
    let matches = |ty: &str| {
        types.is_empty()
            || types.iter().any(|t| match t.strip_suffix(".*") {
                Some(family) => ty.starts_with(family) && ty[family.len()..].starts_with('.'),
                None => t == ty,
            })
    };
    let types_filter = if types.is_empty() {
        None
    } else {
        Some(types.clone())
    };
    if !follow {
        print_stored(&conn, &session_id, &types_filter, 0, u64::MAX, &mut format).await?;
        return Ok(());
    }
    follow_events(&conn, &session_id, 0, |seq, event| {
        if matches(&event.event_type) {
            format.print(seq, event)?;
        }
        Ok(std::ops::ControlFlow::Continue(()))
    })
    .await?;
    Ok(())
}

/// `air cost`: what a session's model turns used and cost, by task.
pub async fn cost(session: Option<String>, json: bool) -> CmdResult {
    let conn = connect().await?;
    let session_id = crate::session_of(&conn, session).await?;
    let snapshot = conn
        .client
        .session_snapshot(params::Session {
            session_id: session_id.clone(),
        })
        .await
        .map_err(rpc_failure)?;
    let p = &snapshot.projection;
    let dollars = |c: u64| format!("${:.4}", c as f64 / 1e6);
    let tokens = air_proto::report::tokens;
    if json {
        let tasks: Vec<_> = p
            .tasks
            .iter()
            .filter(|t| !t.usage.is_zero())
            .map(|t| serde_json::json!({ "task_id": t.id, "title": t.title, "usage": t.usage }))
            .collect();
        return print_json(&serde_json::json!({
            "session_id": session_id,
            "input_tokens": p.counters.input_tokens,
            "output_tokens": p.counters.output_tokens,
            "cost_micro_usd": p.counters.cost_micro_usd,
            "tasks": tasks,
        }));
    }
    // Every task of the run, and the conversation's turns that used a model.
    let rows: Vec<_> = p
        .tasks
        .iter()
        .filter(|t| !air_proto::conversation::is_any_turn(&t.id) || !t.usage.is_zero())
        .collect();
    let id_w = rows
        .iter()
        .map(|t| t.id.chars().count())
        .max()
        .unwrap_or(4)
        .max(4);
    outln!(
        "{:<id_w$}  {:>9}  {:>9}  {:>9}  title",
        "task",
        "in",
        "out",
        "cost"
    );
    for t in &rows {
        outln!(
            "{:<id_w$}  {:>9}  {:>9}  {:>9}  {}",
            t.id,
            tokens(t.usage.input_tokens),
            tokens(t.usage.output_tokens),
            dollars(t.usage.cost_micro_usd),
            t.title
        );
    }
    outln!(
        "{:<id_w$}  {:>9}  {:>9}  {:>9}",
        "all",
        tokens(p.counters.input_tokens),
        tokens(p.counters.output_tokens),
        dollars(p.counters.cost_micro_usd)
    );
    if p.counters.cost_micro_usd == 0 && p.counters.input_tokens > 0 {
        outln!("(no price is known for the models used: ~/.air/models.yaml `prices:` gives one)");
    }
    Ok(())
}

/// Replays stored events after `*cursor` up to `upto`, a page at a time, advancing the
/// cursor. True when `on_event` asked to stop.
async fn replay_stored(
    conn: &air_proto::client::Connection,
    session_id: &str,
    cursor: &mut u64,
    upto: u64,
    on_event: &mut impl FnMut(u64, &RuntimeEvent) -> Result<std::ops::ControlFlow<()>, Failure>,
) -> Result<bool, Failure> {
    while *cursor < upto {
        let page = conn
            .client
            .events_list(params::EventsList {
                session_id: session_id.to_string(),
                after_seq: Some(*cursor),
                limit: Some(1000),
                ..Default::default()
            })
            .await
            .map_err(rpc_failure)?;
        for e in &page.events {
            if e.seq > upto {
                // The live stream delivers what comes after `upto`.
                return Ok(false);
            }
            *cursor = e.seq;
            if on_event(e.seq, &e.event)?.is_break() {
                return Ok(true);
            }
        }
        match page.next_after_seq {
            Some(next) if !page.events.is_empty() => *cursor = (*cursor).max(next.min(upto)),
            _ => break,
        }
    }
    Ok(false)
}

/// Says to the daemon that this client steers `session` (a person who answers its
/// questions), named `client`.
pub async fn steer(
    conn: &air_proto::client::Connection,
    session: &str,
    client: &str,
) -> Result<(), Failure> {
    conn.client
        .hello(params::Hello {
            hello: air_proto::api::ClientHello {
                client: client.into(),
                version: env!("CARGO_PKG_VERSION").into(),
                protocol_version: air_proto::PROTOCOL_VERSION,
                session_id: Some(session.to_string()),
                mode: air_proto::api::ClientMode::Steering,
            },
        })
        .await
        .map_err(rpc_failure)?;
    Ok(())
}

/// Calls `on_event` for every durable event of a session after `after`, stored ones
/// first, then live ones as they commit, in order and without gaps (a subscriber that
/// falls behind is resynced from the database), until it returns `Break`. Returns the
/// last seq handled.
pub async fn follow_events(
    conn: &air_proto::client::Connection,
    session_id: &str,
    after: u64,
    mut on_event: impl FnMut(u64, &RuntimeEvent) -> Result<std::ops::ControlFlow<()>, Failure>,
) -> Result<u64, Failure> {
    let mut cursor = after;
    if replay_stored(conn, session_id, &mut cursor, u64::MAX, &mut on_event).await? {
        return Ok(cursor);
    }
    loop {
        let mut sub: Subscription<SessionUpdate> = conn
            .client
            .session_subscribe(params::Subscribe {
                session_id: session_id.to_string(),
                from_seq: Some(cursor),
            })
            .await
            .map_err(rpc_failure)?;
        while let Some(update) = sub.next().await {
            // A notification that does not parse: the connection is not trustworthy.
            let update = update.map_err(|e| Failure {
                code: crate::exit::UNREACHABLE,
                message: format!("a bad notification from the daemon: {e}"),
            })?;
            match update {
                update @ (SessionUpdate::Delta { .. } | SessionUpdate::Deltas { .. }) => {
                    for d in update.into_deltas() {
                        if d.durable && d.seq > cursor {
                            cursor = d.seq;
                            if on_event(d.seq, &d.event)?.is_break() {
                                return Ok(cursor);
                            }
                        }
                    }
                }
                SessionUpdate::CaughtUp { .. } => {}
                SessionUpdate::Resync { snapshot, .. } => {
                    // Events between the cursor and the snapshot are in the database.
                    if replay_stored(conn, session_id, &mut cursor, snapshot.seq, &mut on_event)
                        .await?
                    {
                        return Ok(cursor);
                    }
                    cursor = cursor.max(snapshot.seq);
                }
            }
        }
        if !conn.client.is_connected() {
            break;
        }
        // The stream ended but the connection is up: this client fell behind and its
        // subscription buffer overflowed. Pick up from the cursor.
    }
    Err(Failure {
        code: crate::exit::UNREACHABLE,
        message: "the daemon closed the stream (it stopped or restarted)".into(),
    })
}

/// The table of a run's tasks (each with where its change is, in a run whose tasks
/// work on their own branches), its counts, where its work went and its report.
pub(crate) fn print_summary(report: &air_proto::report::RunReport) {
    outln!();
    out!("{}", report.text());
}

/// A duration as a person reads it: `42s`, `3m05s`, `2h10m`.
pub(crate) fn elapsed(d: std::time::Duration) -> String {
    let s = d.as_secs();
    if s < 60 {
        format!("{s}s")
    } else if s < 3600 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{}h{:02}m", s / 3600, (s % 3600) / 60)
    }
}
