//! Live deltas over the socket: many clients see one order, a late client catches up
//! from the database, and a cursor survives a `kill -9` of the daemon.

use std::time::Duration;

use air_proto::api::{params, AirApiClient, SessionUpdate};
use air_proto::client::{connect, ConnectOptions, Connection};
use air_tests::bin;
use jsonrpsee::core::client::Subscription;

use crate::daemon::Project;

fn options(p: &Project) -> ConnectOptions {
    let mut o = ConnectOptions::new(p.paths(), "air-tests", "0");
    o.airsd = Some(bin("airsd"));
    o
}

async fn client(p: &Project) -> Connection {
    connect(&options(p)).await.unwrap()
}

/// Collects durable deltas until `count` have arrived (skipping resyncs and markers).
async fn durable(
    sub: &mut Subscription<SessionUpdate>,
    count: usize,
) -> Vec<(u64, air_proto::event::RuntimeEvent)> {
    let mut got = Vec::new();
    while got.len() < count {
        let next = tokio::time::timeout(Duration::from_secs(10), sub.next())
            .await
            .expect("deltas stalled");
        for d in next.expect("stream ended").unwrap().into_deltas() {
            if d.durable {
                got.push((d.seq, d.event));
            }
        }
    }
    got
}

#[test]
fn three_clients_see_identical_deltas_and_a_late_one_catches_up() {
    let p = Project::new();
    crate::rt().block_on(async {
        let a = client(&p).await;
        assert!(a.started_daemon);
        let session = a
            .client
            .session_create(params::SessionCreate {
                title: Some("deltas".into()),
                ..Default::default()
            })
            .await
            .unwrap();
        let mut subs = Vec::new();
        for _ in 0..3 {
            let c = client(&p).await;
            let sub = c
                .client
                .session_subscribe(params::Subscribe {
                    session_id: session.id.clone(),
                    from_seq: Some(session.seq),
                })
                .await
                .unwrap();
            subs.push((c, sub));
        }
        assert!(
            a.client
                .clients_list(params::NoParams {})
                .await
                .unwrap()
                .len()
                >= 4,
            "every handshake is listed"
        );
        for i in 0..60 {
            a.client
                .message_send(params::MessageSend {
                    session_id: session.id.clone(),
                    text: format!("message {i}"),
                    to: None,
                    env: None,
                })
                .await
                .unwrap();
        }
        let mut streams = Vec::new();
        for (_, sub) in subs.iter_mut() {
            streams.push(durable(sub, 60).await);
        }
        assert_eq!(streams[0], streams[1]);
        assert_eq!(streams[0], streams[2]);
        let seqs: Vec<u64> = streams[0].iter().map(|s| s.0).collect();
        assert_eq!(seqs, (2..62).collect::<Vec<u64>>());

        // A late client asking from seq 1 gets the same events, whole, from the database.
        let late = client(&p).await;
        let mut sub = late
            .client
            .session_subscribe(params::Subscribe {
                session_id: session.id.clone(),
                from_seq: Some(1),
            })
            .await
            .unwrap();
        assert_eq!(durable(&mut sub, 60).await, streams[0]);
        match tokio::time::timeout(Duration::from_secs(5), sub.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap()
        {
            SessionUpdate::CaughtUp { seq } => assert_eq!(seq, 61),
            other => panic!("{other:?}"),
        }
        // Live continues after the catch-up, with no duplicate.
        a.client
            .message_send(params::MessageSend {
                session_id: session.id.clone(),
                text: "after".into(),
                to: None,
                env: None,
            })
            .await
            .unwrap();
        assert_eq!(durable(&mut sub, 1).await[0].0, 62);

        // No cursor: the subscription starts with a snapshot.
        let mut fresh = late
            .client
            .session_subscribe(params::Subscribe {
                session_id: session.id.clone(),
                from_seq: None,
            })
            .await
            .unwrap();
        match fresh.next().await.unwrap().unwrap() {
            SessionUpdate::Resync { snapshot, .. } => {
                assert_eq!(snapshot.seq, 62);
                assert_eq!(snapshot.projection.counters.messages, 61);
            }
            other => panic!("{other:?}"),
        }
    });
}

#[test]
fn a_cursor_survives_kill_9_of_the_daemon() {
    let p = Project::new();
    crate::rt().block_on(async {
        let a = client(&p).await;
        let session = a
            .client
            .session_create(params::SessionCreate {
                ..Default::default()
            })
            .await
            .unwrap();
        let mut sub = a
            .client
            .session_subscribe(params::Subscribe {
                session_id: session.id.clone(),
                from_seq: Some(1),
            })
            .await
            .unwrap();
        // A burst of durable events; the daemon dies in the middle of it.
        let writer = client(&p).await;
        let mut acked = Vec::new();
        for i in 0..40 {
            let sent = writer
                .client
                .message_send(params::MessageSend {
                    session_id: session.id.clone(),
                    text: format!("m{i}"),
                    to: None,
                    env: None,
                })
                .await
                .unwrap();
            acked.push(sent.seq);
        }
        let burst = {
            let id = session.id.clone();
            tokio::spawn(async move {
                let mut more = Vec::new();
                for i in 40..400 {
                    match writer
                        .client
                        .message_send(params::MessageSend {
                            session_id: id.clone(),
                            text: format!("m{i}"),
                            to: None,
                            env: None,
                        })
                        .await
                    {
                        Ok(sent) => more.push(sent.seq),
                        Err(_) => break,
                    }
                }
                more
            })
        };
        let seen_before = durable(&mut sub, 40).await;
        let pid = p.daemon_pid().unwrap();
        std::process::Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status()
            .unwrap();
        acked.extend(burst.await.unwrap());
        let mut seen: Vec<(u64, String)> =
            seen_before.into_iter().map(|(s, e)| (s, e.id)).collect();
        while let Ok(Some(Ok(update))) =
            tokio::time::timeout(Duration::from_millis(500), sub.next()).await
        {
            let deltas = update.into_deltas();
            if deltas.is_empty() {
                break;
            }
            seen.extend(
                deltas
                    .into_iter()
                    .filter(|d| d.durable)
                    .map(|d| (d.seq, d.event.id)),
            );
        }
        let cursor = seen.last().unwrap().0;

        // A new daemon starts; the client resumes from its cursor.
        let b = client(&p).await;
        assert!(b.started_daemon);
        let mut resumed = b
            .client
            .session_subscribe(params::Subscribe {
                session_id: session.id.clone(),
                from_seq: Some(cursor),
            })
            .await
            .unwrap();
        loop {
            match tokio::time::timeout(Duration::from_secs(10), resumed.next())
                .await
                .unwrap()
                .unwrap()
                .unwrap()
            {
                SessionUpdate::CaughtUp { .. } => break,
                update @ (SessionUpdate::Delta { .. } | SessionUpdate::Deltas { .. }) => seen
                    .extend(
                        update
                            .into_deltas()
                            .into_iter()
                            .filter(|d| d.durable)
                            .map(|d| (d.seq, d.event.id)),
                    ),
                other => panic!("{other:?}"),
            }
        }
        let seqs: Vec<u64> = seen.iter().map(|s| s.0).collect();
        let last = *seqs.last().unwrap();
        assert_eq!(
            seqs,
            (2..=last).collect::<Vec<u64>>(),
            "no gap, no duplicate"
        );
        for seq in &acked {
            assert!(*seq <= last, "acknowledged seq {seq} lost (last {last})");
        }
        let snapshot = b
            .client
            .session_snapshot(params::Session {
                session_id: session.id.clone(),
            })
            .await
            .unwrap();
        assert_eq!(snapshot.seq, last);
        assert_eq!(snapshot.projection.counters.messages, last - 1);
        // The new daemon's projection (hydrated from the state tables) equals the event
        // log replayed through the reducer.
        let mut replayed = air_proto::projection::Projection::new(session.id.clone());
        let mut after = 0;
        loop {
            let page = b
                .client
                .events_list(params::EventsList {
                    session_id: session.id.clone(),
                    after_seq: Some(after),
                    limit: Some(1000),
                    ..Default::default()
                })
                .await
                .unwrap();
            for e in &page.events {
                replayed.apply(e.seq, &e.event, true);
                after = e.seq;
            }
            if page.next_after_seq.is_none() {
                break;
            }
        }
        assert_eq!(
            serde_json::to_value(&replayed).unwrap(),
            serde_json::to_value(&snapshot.projection).unwrap()
        );
    });
}
