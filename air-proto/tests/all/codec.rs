//! The NDJSON codec of the worker pipe: partial reads, the line cap enforced without
//! buffering the long line, errors naming the line and the JSON path (and property
//! tests of arbitrary splits).

use air_proto::codec::{encode, DecodeErrorKind, NdjsonDecoder};
use air_proto::ipc::{IpcMessage, ProtocolErrorCode};
use proptest::prelude::*;
use serde_json::{json, Value};

fn log_line(i: usize) -> Vec<u8> {
    let msg = json!({"id": i.to_string(), "kind": "log", "direction": "worker_to_parent", "timestamp": "t", "session_id": "s", "agent_id": "a", "level": "info", "message": format!("message {i}\nwith a newline")});
    let parsed: IpcMessage = serde_json::from_value(msg).unwrap();
    encode(&parsed, 1 << 20).unwrap()
}

fn drain(dec: &mut NdjsonDecoder) -> Vec<Result<Value, air_proto::codec::DecodeError>> {
    let mut out = Vec::new();
    while let Some(m) = dec.next_message::<Value>() {
        out.push(m);
    }
    out
}

proptest! {
    /// However the bytes are cut into reads, the same messages come out.
    #[test]
    fn partial_reads_give_the_same_messages(cuts in proptest::collection::vec(1usize..64, 1..50)) {
        let stream: Vec<u8> = (0..20).flat_map(log_line).collect();
        let mut dec = NdjsonDecoder::new(1 << 20);
        let mut got = Vec::new();
        let mut pos = 0;
        let mut i = 0;
        while pos < stream.len() {
            let n = cuts[i % cuts.len()].min(stream.len() - pos);
            dec.push(&stream[pos..pos + n]);
            pos += n;
            i += 1;
            while let Some(m) = dec.next_message::<IpcMessage>() {
                got.push(m.unwrap());
            }
        }
        prop_assert_eq!(got.len(), 20);
        for (i, m) in got.iter().enumerate() {
            prop_assert_eq!(&m.header.id, &i.to_string());
        }
        prop_assert!(dec.finish::<IpcMessage>().is_none());
    }

    /// Arbitrary bytes never panic the decoder.
    #[test]
    fn garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let mut dec = NdjsonDecoder::new(64);
        dec.push(&bytes);
        while let Some(m) = dec.next_message::<IpcMessage>() {
            if let Err(e) = m {
                let pe = e.to_protocol_error();
                prop_assert!(pe.line.is_some());
            }
        }
        let _ = dec.finish::<IpcMessage>();
    }
}

#[test]
fn over_long_line_is_reported_once_and_skipped() {
    let mut dec = NdjsonDecoder::new(32);
    dec.push(br#"{"a":1}"#);
    dec.push(b"\n");
    dec.push(&[b'x'; 20]);
    assert!(dec.next_message::<Value>().unwrap().is_ok());
    assert!(dec.next_message::<Value>().is_none());
    dec.push(&[b'x'; 40]);
    let err = dec.next_message::<Value>().unwrap().unwrap_err();
    assert_eq!(err.line, 2);
    assert_eq!(err.kind, DecodeErrorKind::LineTooLong { max: 32 });
    assert_eq!(err.to_protocol_error().code, ProtocolErrorCode::LineTooLong);
    // The rest of the long line is dropped without growing the buffer.
    for _ in 0..100 {
        dec.push(&[b'y'; 1000]);
        assert!(dec.next_message::<Value>().is_none());
        assert!(dec.buffered() <= 1000);
    }
    dec.push(b"yyy\n{\"b\":2}\n");
    let next = dec.next_message::<Value>().unwrap().unwrap();
    assert_eq!(next, json!({"b": 2}));
}

#[test]
fn a_long_line_arriving_whole_is_rejected() {
    let mut dec = NdjsonDecoder::new(8);
    dec.push(b"{\"k\": \"0123456789\"}\n{}\n");
    let got = drain(&mut dec);
    assert!(
        matches!(got[0], Err(ref e) if e.kind == DecodeErrorKind::LineTooLong { max: 8 } && e.line == 1)
    );
    assert_eq!(got[1].as_ref().unwrap(), &json!({}));
}

#[test]
fn malformed_lines_name_line_and_path() {
    let mut dec = NdjsonDecoder::default();
    dec.push(b"\n{\"id\":\"x\",\n");
    let mut bad =
        serde_json::to_value(serde_json::from_slice::<Value>(&log_line(0)).unwrap()).unwrap();
    bad["level"] = "loud".into();
    dec.push(&serde_json::to_vec(&bad).unwrap());
    dec.push(b"\r\n\xff\xfe\n");
    let a = dec.next_message::<IpcMessage>().unwrap().unwrap_err();
    assert_eq!(a.line, 2, "blank line 1 is skipped but counted");
    assert!(matches!(a.kind, DecodeErrorKind::InvalidJson { .. }), "{a}");
    assert_eq!(a.to_protocol_error().code, ProtocolErrorCode::InvalidJson);
    let b = dec.next_message::<IpcMessage>().unwrap().unwrap_err();
    assert_eq!(b.line, 3);
    match &b.kind {
        DecodeErrorKind::InvalidMessage { path, message } => {
            assert_eq!(path, "level");
            assert!(message.contains("loud"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    let pe = b.to_protocol_error();
    assert_eq!(
        (pe.code, pe.line, pe.path.as_deref()),
        (ProtocolErrorCode::InvalidMessage, Some(3), Some("level"))
    );
    let c = dec.next_message::<IpcMessage>().unwrap().unwrap_err();
    assert_eq!(c.line, 4);
    assert!(matches!(
        c.kind,
        DecodeErrorKind::InvalidUtf8 { valid_up_to: 0 }
    ));
}

#[test]
fn trailing_data_after_a_message_is_an_error() {
    let err = air_proto::codec::decode_line::<Value>(1, b"{} {}").unwrap_err();
    assert!(
        matches!(err.kind, DecodeErrorKind::InvalidJson { .. }),
        "{err}"
    );
}

#[test]
fn an_unterminated_last_line_is_decoded_at_eof() {
    let mut dec = NdjsonDecoder::default();
    dec.push(b"{\"a\":1}\n{\"b\":");
    assert!(dec.next_message::<Value>().unwrap().is_ok());
    assert!(dec.next_message::<Value>().is_none());
    dec.push(b"2}");
    assert_eq!(dec.finish::<Value>().unwrap().unwrap(), json!({"b": 2}));
}

#[test]
fn encode_refuses_a_message_over_the_limit() {
    let big = json!({"data": "x".repeat(100)});
    assert!(encode(&big, 50).is_err());
    let line = encode(&json!({"s": "a\nb"}), 50).unwrap();
    assert_eq!(line.iter().filter(|&&b| b == b'\n').count(), 1);
}

#[test]
fn every_example_in_docs_ipc_is_a_valid_message() {
    let doc =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/ipc.md")).unwrap();
    let mut n = 0;
    let mut in_block = false;
    for (i, line) in doc.lines().enumerate() {
        match line {
            "```json" => in_block = true,
            "```" => in_block = false,
            _ if in_block => {
                air_proto::codec::decode_line::<IpcMessage>(i as u64 + 1, line.as_bytes())
                    .unwrap_or_else(|e| panic!("docs/ipc.md:{}: {e}", i + 1));
                n += 1;
            }
            _ => {}
        }
    }
    assert!(n >= 10, "only {n} examples found");
}

#[test]
fn the_cap_counts_content_not_the_line_ending() {
    let mut dec = NdjsonDecoder::new(8);
    dec.push(b"\"123456\"\r\n");
    assert_eq!(
        dec.next_message::<Value>().unwrap().unwrap(),
        json!("123456")
    );
    dec.push(b"\"1234567890\"");
    let err = dec.finish::<Value>().unwrap().unwrap_err();
    assert_eq!(err.kind, DecodeErrorKind::LineTooLong { max: 8 });
    assert_eq!(err.line, 2);
}
