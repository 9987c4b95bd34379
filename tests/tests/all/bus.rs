//! The event bus: one order for every subscriber under concurrent publishers, and a
//! slow subscriber coalesced, then resynced, with nothing lost.

use std::sync::Arc;

use air_proto::payload as p;
use air_proto::projection::Projection;
use air_tests::event;
use airsd::bus::{BusConfig, Delta, EventBus, Recv};

fn token(i: usize, message: &str) -> Arc<air_proto::event::RuntimeEvent> {
    Arc::new(event(
        "s",
        "token.delta",
        &p::TokenDelta {
            message_id: message.into(),
            block_index: 0,
            kind: p::DeltaKind::Text,
            text: format!("{i},"),
            agent_id: None,
        },
    ))
}

fn heartbeat(turn: u32) -> Arc<air_proto::event::RuntimeEvent> {
    Arc::new(event(
        "s",
        "agent.heartbeat",
        &p::AgentHeartbeat {
            agent_id: "A1".into(),
            state: None,
            turn: Some(turn),
            input_tokens: None,
            output_tokens: None,
            model_silent_ms: None,
            tools_running: None,
        },
    ))
}

fn durable(i: u64) -> (u64, Arc<air_proto::event::RuntimeEvent>) {
    (
        i,
        Arc::new(event(
            "s",
            "task.created",
            &p::TaskCreated {
                task: air_tests::task_spec(&format!("T{i}"), &[]),
            },
        )),
    )
}

fn drain(sub: &mut airsd::bus::Subscription) -> (Vec<Delta>, Option<&'static str>) {
    let mut out = Vec::new();
    loop {
        match sub.try_recv() {
            Some(Recv::Delta(d)) => out.push(d),
            Some(Recv::Resync) => return (out, Some("resync")),
            Some(Recv::Closed) => return (out, Some("closed")),
            None => return (out, None),
        }
    }
}

#[test]
fn every_subscriber_sees_one_order_even_with_concurrent_publishers() {
    let config = BusConfig {
        capacity: 10_000,
        coalesce_at: 10_000,
        coalesce_window: 16,
    };
    let bus = Arc::new(EventBus::new(Projection::new("s"), 0, config));
    let mut subs: Vec<_> = (0..3).map(|_| bus.subscribe()).collect();
    std::thread::scope(|scope| {
        for t in 0..4 {
            let bus = bus.clone();
            scope.spawn(move || {
                for i in 0..500 {
                    bus.publish_ephemeral(token(i, &format!("m{t}")));
                }
            });
        }
        let bus = bus.clone();
        scope.spawn(move || {
            for i in 1..=200 {
                bus.publish_durable([durable(i)]);
            }
        });
    });
    let streams: Vec<Vec<(u64, String)>> = subs
        .iter_mut()
        .map(|s| {
            drain(s)
                .0
                .into_iter()
                .map(|d| (d.seq, d.event.id.clone()))
                .collect()
        })
        .collect();
    assert_eq!(streams[0].len(), 2200);
    assert_eq!(streams[0], streams[1]);
    assert_eq!(streams[0], streams[2]);
    assert!(
        streams[0].windows(2).all(|w| w[0].0 <= w[1].0),
        "seq never goes back"
    );
    assert_eq!(bus.seq(), 200);
}

#[test]
fn a_slow_subscriber_gets_coalesced_deltas_with_nothing_lost() {
    let config = BusConfig {
        capacity: 64,
        coalesce_at: 8,
        coalesce_window: 64,
    };
    let bus = EventBus::new(Projection::new("s"), 0, config);
    let mut slow = bus.subscribe();
    let mut fast = bus.subscribe();
    let mut fast_seen = Vec::new();
    for i in 0..1000 {
        bus.publish_ephemeral(token(i, if i % 2 == 0 { "a" } else { "b" }));
        bus.publish_ephemeral(heartbeat(i as u32));
        fast_seen.extend(drain(&mut fast).0);
    }
    assert_eq!(
        fast_seen.len(),
        2000,
        "a subscriber that keeps up sees every event"
    );
    let (got, end) = drain(&mut slow);
    assert_eq!(end, None, "coalescing kept it under capacity: no resync");
    assert!(got.len() < 64, "{} deltas queued", got.len());
    let text = |m: &str| -> String {
        got.iter()
            .filter(|d| d.event.event_type == "token.delta" && d.event.payload["message_id"] == m)
            .map(|d| d.event.payload["text"].as_str().unwrap().to_string())
            .collect()
    };
    let want = |parity: usize| -> String {
        (0..1000)
            .filter(|i| i % 2 == parity)
            .map(|i| format!("{i},"))
            .collect()
    };
    assert_eq!(
        text("a"),
        want(0),
        "concatenated text is complete and in order"
    );
    assert_eq!(text("b"), want(1));
    let last_hb = got
        .iter()
        .rev()
        .find(|d| d.event.event_type == "agent.heartbeat")
        .unwrap();
    assert_eq!(last_hb.event.payload["turn"], 999, "latest heartbeat wins");
}

#[test]
fn merges_never_cross_a_durable_event() {
    let config = BusConfig {
        capacity: 1000,
        coalesce_at: 0,
        coalesce_window: 1000,
    };
    let bus = EventBus::new(Projection::new("s"), 0, config);
    let mut sub = bus.subscribe();
    bus.publish_ephemeral(token(1, "a"));
    bus.publish_durable([durable(1)]);
    bus.publish_ephemeral(token(2, "a"));
    bus.publish_ephemeral(token(3, "a"));
    let (got, _) = drain(&mut sub);
    let texts: Vec<String> = got
        .iter()
        .map(|d| {
            d.event
                .payload
                .get("text")
                .and_then(|t| t.as_str())
                .unwrap_or("D")
                .to_string()
        })
        .collect();
    assert_eq!(texts, vec!["1,", "D", "2,3,"]);
    assert_eq!(got[2].seq, 1);
}

#[test]
fn a_stalled_subscriber_is_told_to_resync_and_slows_no_one() {
    let config = BusConfig {
        capacity: 100,
        coalesce_at: 50,
        coalesce_window: 16,
    };
    let bus = EventBus::new(Projection::new("s"), 0, config);
    let mut stalled = bus.subscribe();
    let mut live = bus.subscribe();
    let mut seen = 0;
    for i in 1..=1000u64 {
        bus.publish_durable([durable(i)]);
        seen += drain(&mut live).0.len();
    }
    assert_eq!(seen, 1000);
    assert_eq!(
        bus.subscriber_count(),
        1,
        "the lagging subscriber was dropped from the bus"
    );
    let (_, end) = drain(&mut stalled);
    assert_eq!(end, Some("resync"));
    // A resync is a fresh snapshot plus a new subscription, consistent with each other.
    let (seq, mut again) = bus.subscribe_with(|p, seq| {
        assert_eq!(p.tasks.len(), 1000);
        seq
    });
    assert_eq!(seq, 1000);
    bus.publish_durable([durable(1001)]);
    assert!(matches!(again.try_recv(), Some(Recv::Delta(d)) if d.seq == 1001));
}

#[test]
fn closing_the_bus_ends_subscriptions_after_what_is_queued() {
    let bus = EventBus::new(Projection::new("s"), 0, BusConfig::default());
    let mut sub = bus.subscribe();
    bus.publish_durable([durable(1)]);
    bus.close();
    let (got, end) = drain(&mut sub);
    assert_eq!((got.len(), end), (1, Some("closed")));
    drop(sub);
    assert_eq!(bus.subscriber_count(), 0);
}

#[test]
fn async_receivers_wake_up() {
    crate::rt().block_on(async {
        let bus = Arc::new(EventBus::new(Projection::new("s"), 0, BusConfig::default()));
        let mut sub = bus.subscribe();
        let publisher = bus.clone();
        let t = std::thread::spawn(move || {
            for i in 1..=100 {
                publisher.publish_durable([durable(i)]);
            }
        });
        let mut batch = Vec::new();
        while batch.len() < 100 {
            assert!(sub.recv_many(&mut batch).await.is_none());
        }
        t.join().unwrap();
        assert_eq!(batch.last().unwrap().seq, 100);
    });
}
