//! Hostile and broken clients: random frames, a client that stops reading, a client that
//! disconnects mid-request. Each gets an error or is cut off; everyone else is served.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use air_proto::api::{params, AirApiClient};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

use crate::daemon::Project;

/// One HTTP POST on its own connection; returns the raw response.
fn post(socket: &std::path::Path, body: &[u8]) -> String {
    let mut s = UnixStream::connect(socket).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let head = format!(
        "POST / HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(body).unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

fn frame() -> impl Strategy<Value = Vec<u8>> {
    let method = prop_oneof![
        Just("daemon.status"),
        Just("session.get"),
        Just("session.snapshot"),
        Just("events.list"),
        Just("message.send"),
        Just("session.create"),
        Just("no.such"),
        Just(""),
    ];
    let value = prop_oneof![
        Just(serde_json::json!(null)),
        Just(serde_json::json!(-1)),
        Just(serde_json::json!("x")),
        Just(serde_json::json!({"session_id": 5})),
        Just(serde_json::json!({"session_id": "../x"})),
        Just(serde_json::json!([[], {}, 1e308])),
        Just(serde_json::json!({"limit": 99999})),
    ];
    prop_oneof![
        proptest::collection::vec(any::<u8>(), 0..300),
        (method, value.clone(), value).prop_map(|(m, params, id)| {
            serde_json::to_vec(
                &serde_json::json!({"jsonrpc": "2.0", "id": id, "method": m, "params": params}),
            )
            .unwrap()
        }),
        "[{}\\[\\]\"a-z:,0-9 ]{0,200}".prop_map(String::into_bytes),
    ]
}

#[test]
fn a_thousand_random_frames_get_errors_and_the_daemon_keeps_serving() {
    let p = Project::new();
    assert!(p.air(&["daemon", "start"]).status.success());
    let socket = p.paths().socket();
    let mut runner = TestRunner::new(Config {
        cases: 1000,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&frame(), |body| {
            let reply = post(&socket, &body);
            prop_assert!(
                reply.starts_with("HTTP/1.1 "),
                "no HTTP answer to {:?}: {reply:?}",
                String::from_utf8_lossy(&body)
            );
            Ok(())
        })
        .unwrap();
    // Half a request, then gone.
    let mut s = UnixStream::connect(&socket).unwrap();
    s.write_all(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n{\"jsonr").unwrap();
    drop(s);
    assert!(p
        .curl(r#"{"jsonrpc":"2.0","id":1,"method":"daemon.status"}"#)
        .contains("\"pid\""));
    let log = std::fs::read_to_string(p.paths().daemon_log()).unwrap();
    assert!(!log.contains("panicked"), "{log}");
}

/// A WebSocket client that subscribes and then never reads.
fn stalled_subscriber(socket: &std::path::Path, session: &str) -> UnixStream {
    let mut s = UnixStream::connect(socket).unwrap();
    s.write_all(
        b"GET / HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
          Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
    )
    .unwrap();
    let request = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"session.subscribe","params":{{"session_id":"{session}","from_seq":1}}}}"#
    );
    let payload = request.as_bytes();
    let mask = [1u8, 2, 3, 4];
    let mut frame = vec![0x81u8];
    if payload.len() < 126 {
        frame.push(0x80 | payload.len() as u8);
    } else {
        frame.push(0x80 | 126);
        frame.extend_from_slice(&(payload.len() as u16).to_be_bytes());
    }
    frame.extend_from_slice(&mask);
    frame.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
    s.write_all(&frame).unwrap();
    s
}

#[test]
fn a_client_that_stops_reading_slows_no_one() {
    let p = Project::new();
    crate::rt().block_on(async {
        let mut options = air_proto::client::ConnectOptions::new(p.paths(), "air-tests", "0");
        options.airsd = Some(air_tests::bin("airsd"));
        let writer = air_proto::client::connect(&options).await.unwrap();
        let session = writer
            .client
            .session_create(params::SessionCreate {
                ..Default::default()
            })
            .await
            .unwrap();
        let mut stalled = stalled_subscriber(&p.paths().socket(), &session.id);
        let reader = air_proto::client::connect(&options).await.unwrap();
        let mut sub = reader
            .client
            .session_subscribe(params::Subscribe {
                session_id: session.id.clone(),
                from_seq: Some(1),
            })
            .await
            .unwrap();
        // More events than the stalled client's socket, its connection buffer and its bus
        // queue hold together, from concurrent writers.
        let count = 30_000;
        let writer = std::sync::Arc::new(writer);
        let mut tasks = tokio::task::JoinSet::new();
        for w in 0..64 {
            let (writer, id) = (writer.clone(), session.id.clone());
            tasks.spawn(async move {
                for i in 0..count / 64 + usize::from(w < count % 64) {
                    writer
                        .client
                        .message_send(params::MessageSend {
                            session_id: id.clone(),
                            text: format!("m{w}-{i}"),
                            to: None,
                            env: None,
                        })
                        .await
                        .unwrap();
                }
            });
        }
        tasks.join_all().await;
        let mut seen = 0;
        while seen < count {
            let next = tokio::time::timeout(Duration::from_secs(10), sub.next())
                .await
                .expect("the live reader was slowed");
            seen += next
                .unwrap()
                .unwrap()
                .into_deltas()
                .iter()
                .filter(|d| d.durable)
                .count();
        }
        let status = writer.client.status(params::NoParams {}).await.unwrap();
        assert!(status.clients >= 3);
        // When the stalled client reads again, it is told to resync.
        stalled
            .set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        let mut tail: Vec<u8> = Vec::new();
        let mut buf = vec![0u8; 1 << 16];
        loop {
            assert!(
                std::time::Instant::now() < deadline,
                "no resync reached the stalled client"
            );
            match stalled.read(&mut buf) {
                Ok(0) => panic!("connection closed without a resync"),
                Ok(n) => tail.extend_from_slice(&buf[..n]),
                Err(_) => {}
            }
            let needle: &[u8] = br#""type":"resync","#;
            if tail.windows(needle.len()).any(|w| w == needle) {
                break;
            }
            let keep = tail.len().saturating_sub(64);
            tail.drain(..keep);
        }
    });
}
