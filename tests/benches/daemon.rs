//! Daemon benchmarks: whole-process CLI latency, cold start, RPC round trips, many
//! concurrent clients, fan-out over the socket, idle memory. Prints figures; asserts
//! only correctness (no errors, every delivery).
//!
//! Run: `cargo build --release --workspace && cargo bench -p air-tests --bench daemon`
#![allow(clippy::unwrap_used, clippy::expect_used)]

use air_tests::release_bin;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use air_proto::api::{params, AirApiClient, SessionUpdate};
use air_proto::client::{connect, ConnectOptions};

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn air(root: &Path, args: &[&str]) -> std::process::Output {
    Command::new(release_bin("air"))
        .args(args)
        .current_dir(root)
        .output()
        .unwrap()
}

/// A client whose subscription buffer holds a whole catch-up (the shared client's is
/// smaller and cuts off a consumer that falls that far behind).
async fn big_buffer_client(socket: &Path, events: usize) -> jsonrpsee_ws_client::WsClient {
    let stream = tokio::net::UnixStream::connect(socket).await.unwrap();
    jsonrpsee_ws_client::WsClientBuilder::default()
        .max_buffer_capacity_per_subscription(events * 2)
        .build_with_stream("ws://localhost/", stream)
        .await
        .unwrap()
}

/// `subscribers` clients catch up on `events` stored events at once; prints the rate.
/// Decoding clients parse every update as `SessionUpdate`; the others only count deltas.
async fn catch_up(
    socket: &Path,
    session: &str,
    from: u64,
    subscribers: usize,
    events: usize,
    decode: bool,
) {
    use jsonrpsee::core::client::SubscriptionClientT;
    let mut subs = tokio::task::JoinSet::new();
    let start = Instant::now();
    for _ in 0..subscribers {
        let client = big_buffer_client(socket, events).await;
        let mut params = jsonrpsee::core::params::ObjectParams::new();
        params.insert("session_id", session).unwrap();
        params.insert("from_seq", from).unwrap();
        let mut sub = client
            .subscribe::<Box<serde_json::value::RawValue>, _>(
                "session.subscribe",
                params,
                "session.unsubscribe",
            )
            .await
            .unwrap();
        subs.spawn(async move {
            let _keep = client;
            let mut n = 0usize;
            while n < events {
                let raw = match sub.next().await {
                    Some(Ok(raw)) => raw,
                    other => panic!("subscription ended early: {other:?}"),
                };
                n += if decode {
                    let update: SessionUpdate = serde_json::from_str(raw.get()).unwrap();
                    update.into_deltas().iter().filter(|d| d.durable).count()
                } else {
                    raw.get().matches(r#"{"type":"delta","#).count()
                };
            }
            n
        });
    }
    let delivered: usize = subs.join_all().await.into_iter().sum();
    let elapsed = start.elapsed();
    assert_eq!(delivered, subscribers * events);
    let how = if decode {
        "every delta decoded"
    } else {
        "clients forwarding without decoding"
    };
    println!(
        "fan-out over the socket, catching up from the database ({how}): {subscribers} clients × {events} events in {:.1} s = {:.0} deliveries/s",
        elapsed.as_secs_f64(),
        delivered as f64 / elapsed.as_secs_f64()
    );
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    assert!(air(&root, &["init", "--no-model"]).status.success());
    let paths = air_proto::layout::ProjectPaths::new(&root);

    // Cold: no daemon → `air status` answers, auto-start included.
    let mut cold = Vec::new();
    for _ in 0..15 {
        let t = Instant::now();
        let out = air(&root, &["status"]);
        cold.push(t.elapsed());
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(air(&root, &["daemon", "stop"]).status.success());
    }
    cold.sort();
    println!("cold `air status` (no daemon; auto-start included), 15 runs: median {:.1} ms, max {:.1} ms", ms(percentile(&cold, 0.5)), ms(*cold.last().unwrap()));

    // Warm: `air status` with the daemon running, whole process.
    assert!(air(&root, &["daemon", "start"]).status.success());
    let mut warm = Vec::new();
    for _ in 0..200 {
        let t = Instant::now();
        let out = air(&root, &["status"]);
        warm.push(t.elapsed());
        assert!(out.status.success());
    }
    warm.sort();
    println!(
        "warm `air status` (daemon running), 200 runs: median {:.2} ms, p99 {:.2} ms",
        ms(percentile(&warm, 0.5)),
        ms(percentile(&warm, 0.99))
    );

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let options = ConnectOptions::new(paths.clone(), "bench", "0");
    rt.block_on(async {
        // RPC round trip, 10,000 sequential calls.
        let conn = connect(&options).await.unwrap();
        let mut rtt = Vec::with_capacity(10_000);
        for _ in 0..10_000 {
            let t = Instant::now();
            conn.client.clients_list(params::NoParams {}).await.unwrap();
            rtt.push(t.elapsed());
        }
        rtt.sort();
        println!("RPC round trip over the socket (WebSocket, clients.list), 10,000 sequential: p50 {:.0} µs, p99 {:.0} µs", us(percentile(&rtt, 0.5)), us(percentile(&rtt, 0.99)));

        // 100 concurrent clients × 1,000 calls each.
        let mut tasks = tokio::task::JoinSet::new();
        let start = Instant::now();
        for _ in 0..100 {
            let options = options.clone();
            tasks.spawn(async move {
                let conn = connect(&options).await.unwrap();
                let mut lat = Vec::with_capacity(1000);
                let mut errors = 0;
                for _ in 0..1000 {
                    let t = Instant::now();
                    if conn.client.clients_list(params::NoParams {}).await.is_err() {
                        errors += 1;
                    }
                    lat.push(t.elapsed());
                }
                (lat, errors)
            });
        }
        let mut all = Vec::new();
        let mut errors = 0;
        for (lat, e) in tasks.join_all().await {
            all.extend(lat);
            errors += e;
        }
        let elapsed = start.elapsed();
        all.sort();
        println!("100 concurrent clients × 1,000 calls: {errors} errors, {:.0} calls/s, p50 {:.2} ms, p99 {:.2} ms", 100_000.0 / elapsed.as_secs_f64(), ms(percentile(&all, 0.5)), ms(percentile(&all, 0.99)));
        assert_eq!(errors, 0);

        // Idle memory with one session.
        let session = conn.client.session_create(params::SessionCreate { title: Some("bench".into()), ..Default::default() }).await.unwrap();
        tokio::time::sleep(Duration::from_millis(200)).await;
        let status = conn.client.status(params::NoParams {}).await.unwrap();
        println!("daemon RSS with one open session: {:.1} MiB", status.rss_bytes.unwrap_or(0) as f64 / 1048576.0);

        // Fan-out over the socket: 10 subscribed clients, 100,000 durable events.
        const SUBSCRIBERS: usize = 10;
        const EVENTS: usize = 100_000;
        let mut subs = tokio::task::JoinSet::new();
        for _ in 0..SUBSCRIBERS {
            let c = connect(&options).await.unwrap();
            let mut sub = c.client.session_subscribe(params::Subscribe { session_id: session.id.clone(), from_seq: Some(session.seq) }).await.unwrap();
            subs.spawn(async move {
                let _keep = c;
                let mut n = 0usize;
                while n < EVENTS {
                    match sub.next().await {
                        Some(Ok(update)) => n += update.into_deltas().iter().filter(|d| d.durable).count(),
                        other => panic!("subscription ended early: {other:?}"),
                    }
                }
                (n, Instant::now())
            });
        }
        let writers = 256;
        let start = Instant::now();
        let mut send = tokio::task::JoinSet::new();
        let conn = Arc::new(conn);
        for w in 0..writers {
            let conn = conn.clone();
            let id = session.id.clone();
            send.spawn(async move {
                for i in 0..EVENTS / writers + usize::from(w < EVENTS % writers) {
                    conn.client.message_send(params::MessageSend { session_id: id.clone(), text: format!("m{w}-{i}"), to: None, env: None }).await.unwrap();
                }
            });
        }
        send.join_all().await;
        let written = start.elapsed();
        let results = subs.join_all().await;
        let done = results.iter().map(|r| r.1).max().unwrap() - start;
        let delivered: usize = results.iter().map(|r| r.0).sum();
        assert_eq!(delivered, SUBSCRIBERS * EVENTS);
        println!(
            "fan-out over the socket: {SUBSCRIBERS} clients × {EVENTS} durable events (message.send from {writers} concurrent callers): written in {:.1} s ({:.0} events/s), all delivered after {:.1} s = {:.0} deliveries/s",
            written.as_secs_f64(),
            EVENTS as f64 / written.as_secs_f64(),
            done.as_secs_f64(),
            delivered as f64 / done.as_secs_f64()
        );

        // The same fan-out when the events are already stored: 10 clients subscribe from
        // the start and are fed from the database, then go live.
        let socket = paths.client_socket();
        catch_up(&socket, &session.id, session.seq, SUBSCRIBERS, EVENTS, true).await;
        // Clients that forward deltas without decoding them (a relay, a logger): what the
        // daemon's fan-out sustains on its own.
        catch_up(&socket, &session.id, session.seq, SUBSCRIBERS, EVENTS, false).await;
    });
    assert!(air(&root, &["daemon", "stop"]).status.success());
}
