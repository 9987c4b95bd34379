//! The event store: durable events commit then publish, ephemeral ones are never
//! written, bad events are refused naming what and where, batches are whole, and one
//! bad request does not fail its neighbours in a group commit.

use air_proto::event::{EventSource, RuntimeEvent};
use air_proto::payload as p;
use air_proto::projection::TaskStatus;
use air_tests::{event, task_spec};
use airsd::bus::Recv;
use airsd::SessionConfig;
use serde_json::json;

use crate::{new_session, rt};

fn count(session: &airsd::Session, sql: &str) -> i64 {
    session
        .readers()
        .get()
        .unwrap()
        .query_row(sql, [], |r| r.get(0))
        .unwrap()
}

#[test]
fn durable_events_commit_then_publish() {
    rt().block_on(async {
        let (_dir, session) = new_session(SessionConfig::default());
        let (snap, mut sub) = session.subscribe();
        assert_eq!(snap.seq, 1, "session.created is event 1");
        assert_eq!(
            snap.session.as_ref().unwrap().title.as_deref(),
            Some("test")
        );
        let sid = session.id().to_string();
        let a = session
            .store()
            .append(event(
                &sid,
                "task.created",
                &p::TaskCreated {
                    task: task_spec("T1", &[]),
                },
            ))
            .await
            .unwrap();
        assert_eq!((a.seq, a.durable), (2, true));
        match sub.recv().await {
            Recv::Delta(d) => {
                assert_eq!(
                    (d.seq, d.durable, d.event.event_type.as_str()),
                    (2, true, "task.created")
                );
                assert_eq!(
                    d.event.project_id.as_deref(),
                    Some(crate::PROJECT_ID),
                    "the store fills project_id"
                );
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(count(&session, "SELECT COUNT(*) FROM events"), 2);
        assert_eq!(
            count(
                &session,
                "SELECT COUNT(*) FROM tasks WHERE id = 'T1' AND status = 'pending'"
            ),
            1
        );
        let row: (String, String, String) = session
            .readers()
            .get()
            .unwrap()
            .query_row(
                "SELECT task_id, route_json, source_kind FROM events WHERE seq = 2",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .unwrap();
        assert_eq!(row, ("T1".into(), "[]".into(), "scheduler".into()));
    });
}

#[test]
fn ephemeral_events_are_published_never_written() {
    rt().block_on(async {
        let (_dir, session) = new_session(SessionConfig::default());
        let mut sub = session.bus().subscribe();
        let sid = session.id().to_string();
        let hb = event(
            &sid,
            "agent.heartbeat",
            &p::AgentHeartbeat {
                agent_id: "A1".into(),
                state: Some("THINKING".into()),
                turn: Some(1),
                input_tokens: None,
                output_tokens: None,
                model_silent_ms: None,
                tools_running: None,
            },
        );
        let a = session.store().append(hb).await.unwrap();
        assert_eq!((a.seq, a.durable), (1, false));
        assert!(matches!(sub.recv().await, Recv::Delta(d) if !d.durable && d.seq == 1));
        assert_eq!(count(&session, "SELECT COUNT(*) FROM events"), 1);
    });
}

#[test]
fn bad_events_are_refused_with_what_and_where() {
    rt().block_on(async {
        let (_dir, session) = new_session(SessionConfig::default());
        let sid = session.id().to_string();
        let store = session.store();
        let err = store
            .append(RuntimeEvent::new(
                "task.exploded",
                &sid,
                EventSource::system(),
                json!({}),
            ))
            .await
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown event type `task.exploded` (not in the event registry)"
        );

        let mut e = event(
            &sid,
            "task.created",
            &p::TaskCreated {
                task: task_spec("T1", &[]),
            },
        );
        e.version = 2;
        let err = store.append(e).await.unwrap_err().to_string();
        assert!(err.contains("version 2 is not supported"), "{err}");

        let e = event(
            "other-session",
            "task.created",
            &p::TaskCreated {
                task: task_spec("T1", &[]),
            },
        );
        let err = store.append(e).await.unwrap_err().to_string();
        assert!(err.contains("does not match this session"), "{err}");

        let e = RuntimeEvent::new(
            "task.created",
            &sid,
            EventSource::system(),
            json!({"task": {"id": "T1"}}),
        );
        let err = store.append(e).await.unwrap_err().to_string();
        assert!(
            err.starts_with("event `task.created`: payload.task.type: missing field `type`"),
            "{err}"
        );

        let err = store
            .append(event(
                &sid,
                "task.started",
                &p::TaskStatusChanged {
                    task_id: "T9".into(),
                    ..Default::default()
                },
            ))
            .await
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "event `task.started`: payload.task_id: task `T9` does not exist"
        );
        assert_eq!(err.kind(), air_proto::error::ErrorKind::InvalidInput);

        let mut e = event(
            &sid,
            "tool.completed",
            &p::ToolCompleted {
                tool_run_id: "R1".into(),
                output: None,
                duration_ms: None,
            },
        );
        e.timestamp = "yesterday".into();
        let err = store.append(e).await.unwrap_err().to_string();
        assert!(
            err.contains("timestamp: `yesterday` is not an RFC 3339 timestamp"),
            "{err}"
        );

        // Timestamps are stored in one canonical form (UTC, microseconds).
        let mut e = event(
            &sid,
            "task.created",
            &p::TaskCreated {
                task: task_spec("T0", &[]),
            },
        );
        e.timestamp = "2026-11-30T12:00:00+02:00".into();
        store.append(e).await.unwrap();
        assert_eq!(
            session.snapshot().task("T0").unwrap().created_at,
            "2026-11-30T10:00:00.000000Z"
        );

        // Nothing of the refused events was stored, and the sequence has no gap.
        let a = store
            .append(event(
                &sid,
                "task.created",
                &p::TaskCreated {
                    task: task_spec("T1", &[]),
                },
            ))
            .await
            .unwrap();
        assert_eq!(a.seq, 3);
        assert_eq!(count(&session, "SELECT COUNT(*) FROM events"), 3);
    });
}

#[test]
fn a_batch_commits_whole_or_not_at_all() {
    rt().block_on(async {
        let (_dir, session) = new_session(SessionConfig::default());
        let sid = session.id().to_string();
        let store = session.store();
        let before = session.snapshot();
        let err = store
            .append_batch(vec![
                event(&sid, "task.created", &p::TaskCreated { task: task_spec("T1", &[]) }),
                event(&sid, "task.started", &p::TaskStatusChanged { task_id: "T9".into(), ..Default::default() }),
            ])
            .await
            .unwrap_err();
        assert!(err.to_string().contains("task `T9` does not exist"));
        assert_eq!(count(&session, "SELECT COUNT(*) FROM tasks"), 0);
        assert_eq!(session.snapshot(), before);

        // A dependency may name a task created later in the same batch.
        let seqs = store
            .append_batch(vec![
                event(&sid, "task.created", &p::TaskCreated { task: task_spec("T2", &["T3"]) }),
                event(&sid, "task.created", &p::TaskCreated { task: task_spec("T3", &[]) }),
            ])
            .await
            .unwrap();
        assert_eq!(seqs, vec![2, 3]);
        // But not a task that never comes.
        let err = store
            .append_batch(vec![event(&sid, "task.created", &p::TaskCreated { task: task_spec("T4", &["T2", "nope"]) })])
            .await
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "event `task.created`: payload.task.dependencies[1].depends_on_task_id: task `T4` depends on `nope`, which does not exist"
        );
        let err = store.append(event(&sid, "task.created", &p::TaskCreated { task: task_spec("T2", &[]) })).await.unwrap_err();
        assert_eq!(err.kind(), air_proto::error::ErrorKind::Conflict);
        assert!(err.to_string().contains("task `T2` already exists"), "{err}");

        let hb = event(&sid, "task.progress", &p::TaskProgress { task_id: "T2".into(), message: None, fraction: None });
        let err = store.append_batch(vec![hb]).await.unwrap_err().to_string();
        assert!(err.contains("`task.progress` is ephemeral"), "{err}");
    });
}

#[test]
fn one_bad_request_does_not_fail_its_neighbours_in_a_group_commit() {
    rt().block_on(async {
        let (_dir, session) = new_session(SessionConfig::default());
        let session = std::sync::Arc::new(session);
        let sid = session.id().to_string();
        let mut set = tokio::task::JoinSet::new();
        for i in 0..200 {
            let e = if i % 10 == 5 {
                event(
                    &sid,
                    "agent.failed",
                    &p::AgentFailed {
                        agent_id: format!("ghost{i}"),
                        reason: "x".into(),
                        exit_code: None,
                        failure: None,
                    },
                )
            } else {
                event(
                    &sid,
                    "task.created",
                    &p::TaskCreated {
                        task: task_spec(&format!("T{i}"), &[]),
                    },
                )
            };
            let session = session.clone();
            set.spawn(async move { session.store().append(e).await });
        }
        let results = set.join_all().await;
        let mut ok: Vec<u64> = results
            .iter()
            .filter_map(|r| r.as_ref().ok().map(|a| a.seq))
            .collect();
        assert_eq!(ok.len(), 180);
        ok.sort();
        assert_eq!(
            ok,
            (2..182).collect::<Vec<u64>>(),
            "acknowledged seqs are dense"
        );
        assert_eq!(count(&session, "SELECT COUNT(*) FROM tasks"), 180);
        assert_eq!(count(&session, "SELECT MAX(seq) FROM events"), 181);
    });
}

#[test]
fn task_status_events_update_task_and_attempts() {
    rt().block_on(async {
        let (_dir, session) = new_session(SessionConfig::default());
        let sid = session.id().to_string();
        let store = session.store();
        store
            .append(event(
                &sid,
                "task.created",
                &p::TaskCreated {
                    task: task_spec("T1", &[]),
                },
            ))
            .await
            .unwrap();
        for (ty, agent) in [
            ("task.ready", None),
            ("task.started", Some("A1")),
            ("task.reviewing", Some("R1")),
            ("task.started", Some("A2")),
            ("task.failed", None),
        ] {
            let pl = p::TaskStatusChanged {
                task_id: "T1".into(),
                agent_id: agent.map(String::from),
                reason: (ty == "task.failed").then(|| "budget".to_string()),
                ..Default::default()
            };
            store.append(event(&sid, ty, &pl)).await.unwrap();
        }
        let snap = session.snapshot();
        let t = snap.task("T1").unwrap();
        assert_eq!(
            (
                t.status,
                t.attempts,
                t.agent_id.as_deref(),
                t.reason.as_deref()
            ),
            (TaskStatus::Failed, 2, Some("A2"), Some("budget"))
        );
        assert_eq!(
            count(
                &session,
                "SELECT COUNT(*) FROM task_attempts WHERE task_id = 'T1'"
            ),
            2
        );
        assert_eq!(
            count(
                &session,
                "SELECT COUNT(*) FROM task_attempts WHERE ended_at IS NULL"
            ),
            0
        );
        let err = store
            .append(event(
                &sid,
                "task.started",
                &p::TaskStatusChanged {
                    task_id: "T1".into(),
                    attempt: Some(1),
                    ..Default::default()
                },
            ))
            .await
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("attempt 1 of task `T1` already exists"),
            "{err}"
        );
        assert_eq!(session.rehydrate().unwrap(), session.snapshot());
    });
}

#[test]
fn a_permission_request_is_answered_once() {
    rt().block_on(async {
        let (_dir, session) = new_session(SessionConfig::default());
        let sid = session.id().to_string();
        let store = session.store();
        let req = p::PermissionRequested {
            request_id: "P1".into(),
            action: "write /etc/hosts".into(),
            tool: Some("fs.write".into()),
            tool_run_id: None,
            agent_id: None,
            task_id: None,
            risk: Some("system_sensitive".into()),
            reason: None,
        };
        store
            .append(event(&sid, "permission.requested", &req))
            .await
            .unwrap();
        assert_eq!(session.snapshot().permission_requests.len(), 1);
        let answer = |who: &str| p::PermissionDecisionRecorded {
            request_id: Some("P1".into()),
            decision: p::PermissionDecision::Allow,
            decided_by: who.into(),
            scope: None,
            reason: None,
        };
        store
            .append(event(
                &sid,
                "permission.decision.recorded",
                &answer("client:1"),
            ))
            .await
            .unwrap();
        let err = store
            .append(event(
                &sid,
                "permission.decision.recorded",
                &answer("client:2"),
            ))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("already answered"), "{err}");
        assert!(session.snapshot().permission_requests.is_empty());
        assert_eq!(session.rehydrate().unwrap(), session.snapshot());
    });
}

#[test]
fn drafts_are_dropped_when_the_message_completes() {
    rt().block_on(async {
        let (_dir, session) = new_session(SessionConfig::default());
        let sid = session.id().to_string();
        let store = session.store();
        store
            .put_draft(
                "M1",
                Some("A1"),
                None,
                &json!([{"type": "text", "text": "Hel"}]),
            )
            .await
            .unwrap();
        store
            .put_draft(
                "M1",
                Some("A1"),
                None,
                &json!([{"type": "text", "text": "Hello"}]),
            )
            .await
            .unwrap();
        assert_eq!(count(&session, "SELECT COUNT(*) FROM message_drafts"), 1);
        let msg = p::MessageCreated {
            message_id: "M1".into(),
            content: json!([{"type": "text", "text": "Hello world"}]),
            agent_id: Some("A1".into()),
            task_id: None,
            client: None,
            model: Some("m".into()),
            usage: Some(p::Usage {
                input_tokens: 10,
                output_tokens: 3,
                ..Default::default()
            }),
        };
        store
            .append(event(&sid, "assistant.message.created", &msg))
            .await
            .unwrap();
        assert_eq!(count(&session, "SELECT COUNT(*) FROM message_drafts"), 0);
        store
            .put_ui_state("tui.selection", &json!({"task": "T1"}))
            .await
            .unwrap();
        assert_eq!(count(&session, "SELECT COUNT(*) FROM ui_state"), 1);
        let snap = session.snapshot();
        assert_eq!(snap.messages[0].preview, "Hello world");
        assert_eq!(
            (snap.counters.input_tokens, snap.counters.output_tokens),
            (10, 3)
        );
    });
}

#[test]
fn a_reopened_session_continues_where_it_stopped() {
    let dir;
    let before;
    {
        let (d, session) = new_session(SessionConfig::default());
        dir = d;
        rt().block_on(async {
            for e in air_tests::work_unit(session.id(), 1) {
                session.store().append(e).await.unwrap();
            }
        });
        before = session.snapshot();
        session.close();
    }
    let paths = air_proto::layout::ProjectPaths::new(dir.path());
    let session = airsd::Session::open(&paths, "s-test", SessionConfig::default()).unwrap();
    assert_eq!(session.snapshot(), before);
    rt().block_on(async {
        let a = session
            .store()
            .append(event(
                "s-test",
                "task.created",
                &p::TaskCreated {
                    task: task_spec("T9", &[]),
                },
            ))
            .await
            .unwrap();
        assert_eq!(a.seq, before.seq + 1);
    });
}

#[test]
fn numbers_the_database_cannot_hold_are_refused_naming_the_field() {
    rt().block_on(async {
        let (_dir, session) = new_session(SessionConfig::default());
        let sid = session.id().to_string();
        let store = session.store();
        store
            .append(event(
                &sid,
                "tool.started",
                &p::ToolStarted {
                    tool_run_id: "R1".into(),
                    tool: "fs.read".into(),
                    input: json!({}),
                    agent_id: None,
                    task_id: None,
                    origin_message_id: None,
                },
            ))
            .await
            .unwrap();
        let err = store
            .append(event(
                &sid,
                "tool.completed",
                &p::ToolCompleted {
                    tool_run_id: "R1".into(),
                    output: None,
                    duration_ms: Some(u64::MAX),
                },
            ))
            .await
            .unwrap_err();
        assert_eq!(err.kind(), air_proto::error::ErrorKind::InvalidInput);
        assert!(
            err.to_string()
                .contains("payload.duration_ms: 18446744073709551615 is out of range"),
            "{err}"
        );
        let huge = p::MessageCreated {
            message_id: "M1".into(),
            content: json!("hi"),
            agent_id: None,
            task_id: None,
            client: None,
            model: None,
            usage: Some(p::Usage {
                input_tokens: 5_000_000_000_000_000_000,
                output_tokens: 1,
                ..Default::default()
            }),
        };
        let err = store
            .append(event(&sid, "assistant.message.created", &huge))
            .await
            .unwrap_err();
        assert!(
            err.to_string().contains("payload.usage.input_tokens"),
            "{err}"
        );

        store
            .append(event(
                &sid,
                "task.created",
                &p::TaskCreated {
                    task: task_spec("T1", &[]),
                },
            ))
            .await
            .unwrap();
        let start = |attempt: Option<u32>| {
            event(
                &sid,
                "task.started",
                &p::TaskStatusChanged {
                    task_id: "T1".into(),
                    attempt,
                    ..Default::default()
                },
            )
        };
        let err = store.append(start(Some(u32::MAX))).await.unwrap_err();
        assert!(err.to_string().contains("payload.attempt"), "{err}");
        // An explicit earlier attempt number never moves the counter back.
        store.append(start(Some(3))).await.unwrap();
        store.append(start(Some(1))).await.unwrap();
        store.append(start(None)).await.unwrap();
        assert_eq!(session.snapshot().task("T1").unwrap().attempts, 4);
        assert_eq!(session.rehydrate().unwrap(), session.snapshot());
    });
}

#[test]
fn session_ids_cannot_escape_the_sessions_directory() {
    let dir = tempfile::tempdir().unwrap();
    air_proto::layout::init(dir.path(), "t").unwrap();
    let paths = air_proto::layout::ProjectPaths::new(dir.path());
    for bad in ["", "../escape", "/abs", ".hidden", "a/b", "-x", "sp ace"] {
        let err = airsd::Session::create(
            &paths,
            crate::PROJECT_ID,
            bad,
            &Default::default(),
            SessionConfig::default(),
        )
        .err()
        .unwrap();
        assert!(
            matches!(err, airsd::Error::BadSessionId(_)),
            "{bad:?}: {err}"
        );
    }
    assert!(!dir.path().join(".air/escape").exists());
}

#[test]
fn a_session_whose_creation_did_not_finish_is_reported_not_reused() {
    let (dir, session) = new_session(SessionConfig::default());
    let paths = air_proto::layout::ProjectPaths::new(dir.path());
    // A crash while building a session leaves only the temporary file: harmless.
    std::fs::create_dir_all(paths.session_dir("s2")).unwrap();
    std::fs::write(
        paths.session_dir("s2").join("session.db.creating"),
        b"partial",
    )
    .unwrap();
    let s2 = airsd::Session::create(
        &paths,
        crate::PROJECT_ID,
        "s2",
        &Default::default(),
        SessionConfig::default(),
    )
    .unwrap();
    assert_eq!(s2.snapshot().seq, 1);
    assert!(!paths.session_dir("s2").join("session.db.creating").exists());
    // A database without its session row is refused, not silently numbered from 1.
    let db = session.db_path().to_path_buf();
    session.close();
    let conn = rusqlite::Connection::open(&db).unwrap();
    conn.execute("DELETE FROM session_meta", []).unwrap();
    drop(conn);
    let err = airsd::Session::open(&paths, "s-test", SessionConfig::default())
        .err()
        .unwrap();
    assert!(
        matches!(err, airsd::Error::IncompleteSession { .. }),
        "{err}"
    );
}

/// A run's session is created with its start and its tasks in the same new file:
/// numbered after `session.created`, in the projection as soon as it opens, and
/// nothing is created when one of them cannot be recorded.
#[test]
fn a_session_is_created_with_its_first_events_or_not_at_all() {
    let dir = tempfile::tempdir().unwrap();
    air_proto::layout::init(dir.path(), "t").unwrap();
    let paths = air_proto::layout::ProjectPaths::new(dir.path());
    let created = |id: &str| airsd::session::created_event(id, &Default::default()).unwrap();
    let task = |id: &str| {
        RuntimeEvent::of(
            id,
            EventSource::scheduler(),
            &p::TaskCreated {
                task: task_spec("T1", &[]),
            },
        )
        .unwrap()
    };
    let said = RuntimeEvent::of(
        "with",
        EventSource::new(air_proto::event::SourceKind::Main),
        &air_proto::events::UserMessageCreated(p::MessageCreated {
            message_id: "m1".into(),
            content: serde_json::json!([{"type": "text", "text": "hi"}]),
            agent_id: None,
            task_id: None,
            client: Some("air (pid 7)".into()),
            model: None,
            usage: None,
        }),
    )
    .unwrap()
    .via("client");
    let s = airsd::Session::create_with(
        &paths,
        crate::PROJECT_ID,
        "with",
        created("with"),
        vec![task("with"), said],
        SessionConfig::default(),
    )
    .unwrap();
    assert_eq!(s.snapshot().seq, 3);
    assert!(s.snapshot().task("T1").is_some());
    assert_eq!(s.snapshot().messages.len(), 1);
    // Its projection is made from the events, not read back: the same as read back.
    assert_eq!(s.rehydrate().unwrap(), s.snapshot());
    let ended = RuntimeEvent::of(
        "with",
        EventSource::scheduler(),
        &air_proto::events::TaskReady(p::TaskStatusChanged {
            task_id: "T1".into(),
            ..Default::default()
        }),
    )
    .unwrap();
    // Its writer commits to it (the schema is first read then).
    crate::rt().block_on(s.store().append(ended)).unwrap();
    assert_eq!(s.rehydrate().unwrap(), s.snapshot());
    assert_eq!(s.snapshot().seq, 4);
    // A first event of another session, an ephemeral one, or no session.created
    // first: refused, and no session.db is left.
    let delta = RuntimeEvent::of(
        "bad",
        EventSource::scheduler(),
        &p::TokenDelta {
            message_id: "m".into(),
            block_index: 0,
            kind: p::DeltaKind::Text,
            text: "x".into(),
            agent_id: None,
        },
    )
    .unwrap();
    for (first, more) in [
        (created("bad"), vec![task("other")]),
        (created("bad"), vec![delta]),
        (task("bad"), vec![]),
    ] {
        assert!(airsd::Session::create_with(
            &paths,
            crate::PROJECT_ID,
            "bad",
            first,
            more,
            SessionConfig::default()
        )
        .is_err());
        assert!(!paths.session_db("bad").exists());
    }
}
