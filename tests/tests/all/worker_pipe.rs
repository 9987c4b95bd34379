//! The real `air-worker` on real pipes: NDJSON framing, protocol errors and the D-039
//! exit codes.

use std::io::Write;
use std::process::{Command, Output, Stdio};

use air_proto::codec::NdjsonDecoder;
use air_proto::ipc::{IpcBody, IpcMessage, ProtocolErrorCode};
use air_tests::bin;

fn run_worker(input: &[u8]) -> (Output, Vec<IpcMessage>) {
    let mut child = Command::new(bin("air-worker"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // Write in small pieces: the worker must reassemble lines across reads.
    for chunk in input.chunks(7) {
        if stdin.write_all(chunk).is_err() {
            break; // the worker may exit before reading everything
        }
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let mut dec = NdjsonDecoder::default();
    dec.push(&out.stdout);
    let mut messages = Vec::new();
    while let Some(m) = dec.next_message::<IpcMessage>() {
        messages.push(m.expect("worker stdout carries valid protocol messages only"));
    }
    (out, messages)
}

fn fixture(name: &str) -> Vec<u8> {
    let path = format!(
        "{}/../air-proto/tests/fixtures/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    let value: serde_json::Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let mut line = serde_json::to_vec(&value).unwrap();
    line.push(b'\n');
    line
}

#[test]
fn a_malformed_line_gets_a_protocol_error_naming_line_and_path() {
    let mut input = b"\n".to_vec();
    let mut bad: serde_json::Value =
        serde_json::from_slice(&fixture("ipc_control_start.json")).unwrap();
    bad["control"]["task_spec"]["constraints"]
        .as_object_mut()
        .unwrap()
        .remove("max_turns");
    input.extend(serde_json::to_vec(&bad).unwrap());
    input.push(b'\n');
    let (out, messages) = run_worker(&input);
    assert_eq!(out.status.code(), Some(2), "protocol error exits 2");
    let [msg] = messages.as_slice() else {
        panic!("{messages:?}")
    };
    match &msg.body {
        IpcBody::ProtocolError(e) => {
            assert_eq!(e.code, ProtocolErrorCode::InvalidMessage);
            assert_eq!(e.line, Some(2));
            assert_eq!(
                e.path.as_deref(),
                Some("control.task_spec.constraints.max_turns")
            );
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn garbage_and_over_long_lines_are_protocol_errors() {
    let (out, messages) = run_worker(b"\xff\xfe not json\n");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        matches!(&messages[0].body, IpcBody::ProtocolError(e) if e.code == ProtocolErrorCode::InvalidUtf8 && e.line == Some(1))
    );

    let (out, messages) = run_worker(b"{\"kind\": \"control\"");
    assert_eq!(
        out.status.code(),
        Some(4),
        "an unterminated line at EOF: the parent went away"
    );
    assert!(messages.is_empty());
}

#[test]
fn cancel_and_a_closed_stdin_exit_4() {
    let (out, messages) = run_worker(&fixture("ipc_control_cancel.json"));
    assert_eq!(out.status.code(), Some(4));
    assert!(messages.is_empty());
    let (out, _) = run_worker(b"");
    assert_eq!(out.status.code(), Some(4));
}

#[test]
fn a_message_a_worker_never_accepts_is_refused() {
    let (out, messages) = run_worker(&fixture("ipc_tool_result.json"));
    assert_eq!(out.status.code(), Some(2));
    match &messages[0].body {
        IpcBody::ProtocolError(e) => {
            assert_eq!(e.code, ProtocolErrorCode::UnexpectedMessage);
            assert_eq!(messages[0].header.correlation_id.as_deref(), Some("p-3"));
        }
        other => panic!("{other:?}"),
    }
}
