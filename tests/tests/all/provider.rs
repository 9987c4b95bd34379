//! The Anthropic adapter of `air-worker` against the loopback mock provider, which
//! speaks the real wire protocol: a streamed turn with text, thinking and a tool call
//! folded into canonical blocks; the request's shape; and each fault (429 with
//! retry-after, 529, a stream cut off, malformed SSE, an error event, a slow stream,
//! a key refused) ending in success or a clear failure, never a hang.

use std::time::{Duration, Instant};

use air_proto::message::{ContentBlock, Message, StopReason};
use air_tests::mock_provider::{text_events, Exchange, Expect, MockProvider, Reply};
use serde_json::json;
use worker::provider::anthropic::Anthropic;
use worker::provider::{
    Adapter as _, Delta, ProviderError, RetryPolicy, Timeouts, ToolSpec, TurnRequest,
};

fn request() -> TurnRequest {
    TurnRequest {
        model: "claude-test".into(),
        system: vec![
            "You are the executor.".into(),
            "Project rules: be brief.".into(),
        ],
        messages: vec![Message::user(vec![ContentBlock::text("Add a README.")])],
        tools: vec![ToolSpec {
            name: "fs_read".into(),
            description: "Read a file".into(),
            input_schema: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
        }],
        max_tokens: 1024,
        thinking: Default::default(),
        reasoning: false,
    }
}

fn fast_retries() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 4,
        base_delay: Duration::from_millis(20),
        max_delay: Duration::from_millis(100),
        max_retry_after: Duration::from_secs(5),
    }
}

fn client(mock: &MockProvider) -> Anthropic {
    Anthropic::new(
        &mock.url,
        "sk-test-key",
        Timeouts {
            connect: Duration::from_secs(2),
            first_byte: Duration::from_secs(5),
            idle: Duration::from_millis(800),
            stall: Duration::from_millis(1_500),
        },
        fast_retries(),
    )
    .unwrap()
}

fn tool_turn() -> Vec<serde_json::Value> {
    serde_json::from_value(json!([
        {"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [], "model": "claude-test", "stop_reason": null, "usage": {"input_tokens": 120, "output_tokens": 1, "cache_read_input_tokens": 100}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "Read it "}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "first."}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "sig=="}},
        {"type": "content_block_stop", "index": 0},
        {"type": "ping"},
        {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Let me "}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "look."}},
        {"type": "content_block_stop", "index": 1},
        {"type": "content_block_start", "index": 2, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "fs_read", "input": {}}},
        {"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": "{\"path\": "}},
        {"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": "\"README.md\"}"}},
        {"type": "content_block_stop", "index": 2},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use", "stop_sequence": null}, "usage": {"output_tokens": 42}},
        {"type": "message_stop"}
    ]))
    .unwrap()
}

#[test]
fn a_streamed_turn_becomes_canonical_blocks() {
    crate::rt().block_on(async {
        let mock = MockProvider::start(vec![Exchange {
            request: None,
            expect: Expect {
                contains: vec!["Add a README.".into()],
                tools: vec!["fs_read".into()],
            },
            reply: Reply::Events(tool_turn()),
        }])
        .await;
        let mut deltas = Vec::new();
        let turn = client(&mock)
            .turn(&request(), &mut |d| {
                deltas.push(format!("{d:?}"));
            })
            .await
            .unwrap();
        assert!(mock.mismatches().is_empty(), "{:?}", mock.mismatches());
        assert_eq!(
            turn.content,
            vec![
                ContentBlock::Thinking {
                    thinking: "Read it first.".into(),
                    signature: "sig==".into()
                },
                ContentBlock::text("Let me look."),
                ContentBlock::ToolUse {
                    id: "toolu_1".into(),
                    name: "fs_read".into(),
                    input: json!({"path": "README.md"})
                },
            ]
        );
        assert_eq!(turn.stop_reason, Some(StopReason::ToolUse));
        assert_eq!(
            (
                turn.usage.input_tokens,
                turn.usage.output_tokens,
                turn.usage.cache_read_input_tokens
            ),
            (120, 42, 100)
        );
        assert_eq!(turn.attempts, 1);
        assert_eq!(deltas.len(), 6, "{deltas:?}");
        // The request as the API takes it.
        let r = &mock.received()[0];
        assert_eq!(r.header("x-api-key"), Some("sk-test-key"));
        assert_eq!(r.header("anthropic-version"), Some("2023-06-01"));
        assert_eq!(r.body["stream"], true);
        assert_eq!(r.body["max_tokens"], 1024);
        assert_eq!(r.body["system"][1]["cache_control"]["type"], "ephemeral");
        assert!(r.body["system"][0].get("cache_control").is_none());
        assert_eq!(r.body["tools"][0]["input_schema"]["type"], "object");
        assert_eq!(r.body["messages"][0]["content"][0]["text"], "Add a README.");
    });
}

/// Thinking goes out in each protocol's own terms: Anthropic's budget with the
/// interleaved-thinking beta, OpenAI's reasoning effort; and not at all unless set.
#[test]
fn thinking_is_asked_for_in_each_protocols_terms() {
    use air_proto::models::{Effort, Thinking};
    let thinking = Thinking {
        budget_tokens: Some(4096),
        effort: Some(Effort::Medium),
    };
    let mut r = request();
    r.thinking = thinking;
    let offline = || {
        Anthropic::new(
            "http://127.0.0.1:9",
            "k",
            Timeouts::default(),
            fast_retries(),
        )
        .unwrap()
    };
    let anthropic = offline().body(&r);
    assert_eq!(
        anthropic["thinking"],
        json!({"type": "enabled", "budget_tokens": 4096})
    );
    assert!(anthropic.get("reasoning").is_none());
    let responses = worker::provider::responses::OpenAiResponses::new(
        "http://127.0.0.1:9/v1",
        None,
        Timeouts::default(),
        fast_retries(),
    )
    .unwrap()
    .body(&r);
    assert_eq!(responses["reasoning"], json!({"effort": "medium"}));
    assert!(responses.get("thinking").is_none());
    let chat = worker::provider::openai::OpenAiChat::new(
        "http://127.0.0.1:9/v1",
        None,
        Timeouts::default(),
        fast_retries(),
    )
    .unwrap()
    .body(&r);
    assert_eq!(chat["reasoning_effort"], "medium");
    let plain = offline().body(&request());
    assert!(plain.get("thinking").is_none(), "{plain}");
    assert!(plain.get("include").is_none(), "{plain}");
    // Another protocol's reasoning is not sent to Anthropic.
    let mut foreign = request();
    foreign.messages.push(Message::assistant(vec![
        ContentBlock::Thinking {
            thinking: "t".into(),
            signature: format!("{}{{}}", worker::provider::RESPONSES_REASONING),
        },
        ContentBlock::text("ok"),
    ]));
    let sent = offline().body(&foreign);
    assert_eq!(
        sent["messages"][1]["content"],
        json!([{"type": "text", "text": "ok"}])
    );
    // The header goes with the budget, to the wire.
    crate::rt().block_on(async {
        let mock = MockProvider::start(vec![Exchange {
            request: None,
            expect: Expect::default(),
            reply: Reply::Events(tool_turn()),
        }])
        .await;
        let c = client(&mock);
        let mut sink = |_: Delta<'_>| {};
        c.turn(&r, &mut sink).await.unwrap();
        let got = &mock.received()[0];
        assert_eq!(
            got.header("anthropic-beta"),
            Some("interleaved-thinking-2025-05-14")
        );
        assert_eq!(got.body["thinking"]["budget_tokens"], 4096);
    });
}

#[test]
fn transient_faults_are_retried_and_the_turn_succeeds() {
    crate::rt().block_on(async {
        let mut cut = tool_turn();
        cut.truncate(9);
        let mock = MockProvider::start(vec![
            Exchange {
                request: None,
                expect: Expect::default(),
                reply: Reply::Status {
                    status: 429,
                    retry_after: Some(1),
                    error_type: None,
                },
            },
            Exchange {
                request: None,
                expect: Expect::default(),
                reply: Reply::Status {
                    status: 529,
                    retry_after: None,
                    error_type: None,
                },
            },
            Exchange {
                request: None,
                expect: Expect::default(),
                reply: Reply::Dropped(cut),
            },
            Exchange {
                request: None,
                expect: Expect::default(),
                reply: Reply::Events(text_events("done")),
            },
        ])
        .await;
        let t0 = Instant::now();
        let mut restarts = 0;
        let turn = client(&mock)
            .turn(&request(), &mut |d| {
                if matches!(d, Delta::Restart { .. }) {
                    restarts += 1;
                }
            })
            .await
            .unwrap();
        assert_eq!(turn.content, vec![ContentBlock::text("done")]);
        assert_eq!(turn.attempts, 4);
        assert_eq!(restarts, 3);
        assert_eq!(mock.received().len(), 4);
        // retry-after: 1 was honoured.
        assert!(t0.elapsed() >= Duration::from_secs(1), "{:?}", t0.elapsed());
    });
}

#[test]
fn faults_that_cannot_pass_fail_clearly_and_quickly() {
    crate::rt().block_on(async {
        // A refused key is not retried.
        let mock = MockProvider::start(vec![Exchange { request: None, expect: Expect::default(), reply: Reply::Status { status: 401, retry_after: None, error_type: None } }]).await;
        let e = client(&mock).turn(&request(), &mut |_| {}).await.unwrap_err();
        assert!(matches!(e, ProviderError::Status { status: 401, .. }), "{e}");
        assert_eq!(mock.received().len(), 1);

        // Malformed SSE is a protocol error, named.
        let mock = MockProvider::start(vec![Exchange { request: None, expect: Expect::default(), reply: Reply::Malformed("event: message_start\ndata: {not json\n\n".into()) }]).await;
        let e = client(&mock).turn(&request(), &mut |_| {}).await.unwrap_err().to_string();
        assert!(e.contains("malformed stream") && e.contains("message_start"), "{e}");

        // An overloaded error inside the stream is retried until the budget ends.
        let overloaded = json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}});
        let mock = MockProvider::start(
            (0..4).map(|_| Exchange { request: None, expect: Expect::default(), reply: Reply::Events(vec![overloaded.clone()]) }).collect(),
        )
        .await;
        let e = client(&mock).turn(&request(), &mut |_| {}).await.unwrap_err();
        assert!(matches!(&e, ProviderError::Exhausted { attempts: 4, .. }), "{e}");
        assert!(e.to_string().contains("overloaded_error"), "{e}");

        // A stream that goes silent times out (idle 800 ms) instead of hanging.
        let mut slow = text_events("late");
        slow.truncate(2);
        let mock = MockProvider::start(vec![
            Exchange { request: None, expect: Expect::default(), reply: Reply::Slow { events: slow, gap_ms: 2_000 } },
            Exchange { request: None, expect: Expect::default(), reply: Reply::Events(text_events("on time")) },
        ])
        .await;
        let t0 = Instant::now();
        let turn = client(&mock).turn(&request(), &mut |_| {}).await.unwrap();
        assert_eq!(turn.content, vec![ContentBlock::text("on time")]);
        assert!(t0.elapsed() < Duration::from_secs(3), "{:?}", t0.elapsed());

        // A stream that stalls after its start, pinging every 100 ms (never silent),
        // is cut at the stall limit (1.5 s) and tried again, not left to run on.
        let mut started = text_events("stalled");
        started.truncate(1);
        let mock = MockProvider::start(vec![
            Exchange { request: None, expect: Expect::default(), reply: Reply::Pinging { events: started, every_ms: 100, for_ms: 20_000 } },
            Exchange { request: None, expect: Expect::default(), reply: Reply::Events(text_events("went on")) },
        ])
        .await;
        let t0 = Instant::now();
        let turn = client(&mock).turn(&request(), &mut |_| {}).await.unwrap();
        assert_eq!(turn.content, vec![ContentBlock::text("went on")]);
        assert_eq!(turn.attempts, 2);
        assert!(t0.elapsed() < Duration::from_secs(4), "{:?}", t0.elapsed());
        let mut started = text_events("stalled");
        started.truncate(1);
        let mock = MockProvider::start(
            (0..4).map(|_| Exchange { request: None, expect: Expect::default(), reply: Reply::Pinging { events: started.clone(), every_ms: 100, for_ms: 20_000 } }).collect(),
        )
        .await;
        let e = client(&mock).turn(&request(), &mut |_| {}).await.unwrap_err().to_string();
        assert!(e.contains("nothing of the answer (only keep-alives, or an event that never ended) for 1.5 s"), "{e}");

        // A request that does not match the recording is refused and reported.
        let mock = MockProvider::start(vec![Exchange { request: None,
            expect: Expect { contains: vec!["Something else".into()], tools: vec![] },
            reply: Reply::Events(text_events("x")),
        }])
        .await;
        let e = client(&mock).turn(&request(), &mut |_| {}).await.unwrap_err();
        assert!(matches!(e, ProviderError::Status { status: 400, .. }), "{e}");
        assert_eq!(mock.mismatches(), vec!["request 1: the request does not contain \"Something else\"".to_string()]);

        // No key: a configuration error before any request.
        assert!(matches!(
            Anthropic::new(&mock.url, "", Timeouts::default(), RetryPolicy::default()),
            Err(ProviderError::Config(_))
        ));
    });
}

/// A local model server that is not running refuses the connection: that fails at
/// once (no retries, which would only make the person wait), naming the provider
/// the person configured and where it was looked for.
#[test]
fn a_local_provider_that_is_not_running_fails_at_once_by_name() {
    crate::rt().block_on(async {
        let port = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let client = worker::provider::openai::OpenAiChat::new(
            &format!("http://127.0.0.1:{port}/v1"),
            None,
            Timeouts::default(),
            RetryPolicy::default(),
        )
        .unwrap();
        let mut restarts = 0;
        let e = client
            .turn(&request(), &mut |d| {
                if matches!(d, Delta::Restart { .. }) {
                    restarts += 1;
                }
            })
            .await
            .unwrap_err();
        assert!(matches!(e, ProviderError::Refused { .. }), "{e:?}");
        assert!(!e.retryable());
        assert_eq!(restarts, 0);
        let said = e.named("ollama").to_string();
        assert_eq!(
            said,
            format!("ollama: nothing answers at http://127.0.0.1:{port} (connection refused); is ollama running there?")
        );
    });
}

/// OpenAI Chat Completions (and compatible endpoints): canonical blocks converted at
/// the boundary, streamed tool-call arguments folded back, usage from the last chunk.
#[test]
fn openai_chat_converts_at_the_boundary_and_folds_tool_calls() {
    use worker::provider::openai::OpenAiChat;
    crate::rt().block_on(async {
        let chunks: Vec<serde_json::Value> = serde_json::from_value(json!([
            {"id": "c1", "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Reading "}, "finish_reason": null}]},
            {"id": "c1", "choices": [{"index": 0, "delta": {"content": "it."}, "finish_reason": null}]},
            {"id": "c1", "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "fs_read", "arguments": ""}}]}, "finish_reason": null}]},
            {"id": "c1", "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "{\"path\":"}}]}, "finish_reason": null}]},
            {"id": "c1", "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "\"a.rs\"}"}}]}, "finish_reason": "tool_calls"}]},
            {"id": "c1", "choices": [], "usage": {"prompt_tokens": 77, "completion_tokens": 12, "prompt_tokens_details": {"cached_tokens": 64}}}
        ]))
        .unwrap();
        let mock = MockProvider::start(vec![
            Exchange { request: None, expect: Expect::default(), reply: Reply::Status { status: 503, retry_after: None, error_type: None } },
            Exchange { request: None,
                expect: Expect { contains: vec!["\"role\":\"tool\"".into(), "call_0".into()], tools: vec!["fs_read".into()] },
                reply: Reply::Chunks(chunks),
            },
        ])
        .await;
        let client = OpenAiChat::new(&format!("{}/v1", mock.url), Some("sk-openai"), Timeouts::default(), fast_retries()).unwrap();
        // A conversation with an earlier tool round, to see the conversion.
        let mut req = request();
        req.messages.push(Message::assistant(vec![
            ContentBlock::Thinking { thinking: "private".into(), signature: "s".into() },
            ContentBlock::text("Listing."),
            ContentBlock::ToolUse { id: "call_0".into(), name: "fs_glob".into(), input: json!({"pattern": "*.rs"}) },
        ]));
        req.messages.push(Message::user(vec![
            ContentBlock::ToolResult { tool_use_id: "call_0".into(), content: "a.rs".into(), is_error: false },
            ContentBlock::text("Go on."),
        ]));
        let turn = client.turn(&req, &mut |_| {}).await.unwrap();
        assert!(mock.mismatches().is_empty(), "{:?}", mock.mismatches());
        assert_eq!(turn.attempts, 2);
        assert_eq!(
            turn.content,
            vec![
                ContentBlock::text("Reading it."),
                ContentBlock::ToolUse { id: "call_1".into(), name: "fs_read".into(), input: json!({"path": "a.rs"}) },
            ]
        );
        assert_eq!(turn.stop_reason, Some(StopReason::ToolUse));
        assert_eq!((turn.usage.input_tokens, turn.usage.output_tokens, turn.usage.cache_read_input_tokens), (13, 12, 64), "the cached part kept apart");
        let r = &mock.received()[1];
        assert_eq!(r.path, "/v1/chat/completions");
        assert_eq!(r.header("authorization"), Some("Bearer sk-openai"));
        let m = r.body["messages"].as_array().unwrap();
        assert_eq!(m[0], json!({"role": "system", "content": "You are the executor.\n\nProject rules: be brief."}));
        assert_eq!(m[2]["tool_calls"][0]["function"]["arguments"], "{\"pattern\":\"*.rs\"}");
        assert_eq!(m[2]["content"], "Listing.");
        assert!(!r.body.to_string().contains("private"), "thinking is not sent to another protocol");
        assert_eq!(m[3], json!({"role": "tool", "tool_call_id": "call_0", "content": "a.rs"}));
        assert_eq!(m[4], json!({"role": "user", "content": "Go on."}));
        assert_eq!(r.body["tools"][0]["function"]["name"], "fs_read");
        assert_eq!(r.body["stream_options"]["include_usage"], true);
    });
}

/// The OpenAI Responses API: canonical blocks become input items at the boundary
/// (instructions, input_text, function_call, function_call_output); the semantic
/// events fold back into blocks with the usage; an error event is retried; an
/// incomplete response is a turn cut at the output limit.
#[test]
fn openai_responses_converts_at_the_boundary_and_folds_events() {
    use worker::provider::responses::OpenAiResponses;
    crate::rt().block_on(async {
        let events: Vec<serde_json::Value> = serde_json::from_value(json!([
            {"type": "response.created", "sequence_number": 0, "response": {"id": "resp_1", "status": "in_progress", "output": []}},
            {"type": "response.output_item.added", "sequence_number": 1, "output_index": 0, "item": {"type": "reasoning", "id": "rs_1", "summary": []}},
            {"type": "response.reasoning_summary_text.delta", "sequence_number": 2, "output_index": 0, "item_id": "rs_1", "delta": "Thinking."},
            {"type": "response.output_item.done", "sequence_number": 2, "output_index": 0, "item": {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Thinking."}], "encrypted_content": "gAAA-sealed", "status": "completed"}},
            {"type": "response.output_item.added", "sequence_number": 3, "output_index": 1, "item": {"type": "message", "id": "msg_1", "role": "assistant", "content": []}},
            {"type": "response.output_text.delta", "sequence_number": 4, "output_index": 1, "item_id": "msg_1", "content_index": 0, "delta": "Reading "},
            {"type": "response.output_text.delta", "sequence_number": 5, "output_index": 1, "item_id": "msg_1", "content_index": 0, "delta": "it."},
            {"type": "response.output_item.added", "sequence_number": 6, "output_index": 2, "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "fs_read", "arguments": ""}},
            {"type": "response.function_call_arguments.delta", "sequence_number": 7, "output_index": 2, "item_id": "fc_1", "delta": "{\"path\":"},
            {"type": "response.function_call_arguments.delta", "sequence_number": 8, "output_index": 2, "item_id": "fc_1", "delta": "\"a.rs\"}"},
            {"type": "response.output_item.done", "sequence_number": 9, "output_index": 2, "item": {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "fs_read", "arguments": "{\"path\":\"a.rs\"}"}},
            {"type": "response.completed", "sequence_number": 10, "response": {"id": "resp_1", "status": "completed", "usage": {"input_tokens": 90, "output_tokens": 14, "input_tokens_details": {"cached_tokens": 64}}}}
        ]))
        .unwrap();
        let mock = MockProvider::start(vec![
            Exchange { request: None,
                expect: Expect::default(),
                reply: Reply::Events(vec![json!({"type": "error", "code": "rate_limit_exceeded", "message": "slow down"})]),
            },
            Exchange { request: None,
                expect: Expect { contains: vec!["function_call_output".into(), "call_0".into()], tools: vec!["fs_read".into()] },
                reply: Reply::Events(events),
            },
            Exchange { request: None,
                expect: Expect::default(),
                reply: Reply::Events(vec![
                    json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "message", "content": []}}),
                    json!({"type": "response.output_text.delta", "output_index": 0, "delta": "Half an ans"}),
                    json!({"type": "response.incomplete", "response": {"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}}}),
                ]),
            },
            Exchange { request: None,
                expect: Expect::default(),
                reply: Reply::Events(vec![json!({"type": "response.failed", "response": {"status": "failed", "error": {"code": "invalid_prompt", "message": "no"}}})]),
            },
        ])
        .await;
        let client = OpenAiResponses::new(&format!("{}/v1", mock.url), Some("sk-openai"), Timeouts::default(), fast_retries()).unwrap();
        let mut req = request();
        req.reasoning = true;
        let earlier = json!({"type": "reasoning", "id": "rs_0", "summary": [], "encrypted_content": "gAAA-earlier"});
        req.messages.push(Message::assistant(vec![
            ContentBlock::Thinking { thinking: "private".into(), signature: "s".into() },
            ContentBlock::Thinking { thinking: String::new(), signature: format!("{}{earlier}", worker::provider::RESPONSES_REASONING) },
            ContentBlock::text("Listing."),
            ContentBlock::ToolUse { id: "call_0".into(), name: "fs_glob".into(), input: json!({"pattern": "*.rs"}) },
        ]));
        req.messages.push(Message::user(vec![
            ContentBlock::ToolResult { tool_use_id: "call_0".into(), content: "a.rs".into(), is_error: false },
            ContentBlock::text("Go on."),
        ]));
        let mut thinking = String::new();
        let turn = client
            .turn(&req, &mut |d| {
                if let Delta::Thinking { text, .. } = d {
                    thinking.push_str(text)
                }
            })
            .await
            .unwrap();
        assert!(mock.mismatches().is_empty(), "{:?}", mock.mismatches());
        assert_eq!(turn.attempts, 2, "the rate-limit error event was retried");
        assert_eq!(thinking, "Thinking.");
        assert_eq!(
            turn.content,
            vec![
                ContentBlock::Thinking {
                    thinking: "Thinking.".into(),
                    signature: format!(
                        "{}{}",
                        worker::provider::RESPONSES_REASONING,
                        json!({"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "Thinking."}], "encrypted_content": "gAAA-sealed"})
                    ),
                },
                ContentBlock::text("Reading it."),
                ContentBlock::ToolUse { id: "call_1".into(), name: "fs_read".into(), input: json!({"path": "a.rs"}) },
            ]
        );
        assert_eq!(turn.stop_reason, Some(StopReason::ToolUse));
        assert_eq!((turn.usage.input_tokens, turn.usage.output_tokens, turn.usage.cache_read_input_tokens), (26, 14, 64), "the cached part kept apart");
        let r = &mock.received()[1];
        assert_eq!(r.path, "/v1/responses");
        assert_eq!(r.header("authorization"), Some("Bearer sk-openai"));
        assert_eq!(r.body["instructions"], "You are the executor.\n\nProject rules: be brief.");
        assert_eq!(r.body["store"], false);
        let input = r.body["input"].as_array().unwrap();
        assert_eq!(input[0], json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Add a README."}]}));
        // The reasoning kept from before goes back as it came, before what it led to.
        assert_eq!(input[1], earlier);
        assert_eq!(input[2], json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Listing."}]}));
        assert_eq!(input[3], json!({"type": "function_call", "call_id": "call_0", "name": "fs_glob", "arguments": "{\"pattern\":\"*.rs\"}"}));
        assert_eq!(input[4], json!({"type": "function_call_output", "call_id": "call_0", "output": "a.rs"}));
        assert_eq!(input[5]["content"][0]["text"], "Go on.");
        assert_eq!(r.body["include"], json!(["reasoning.encrypted_content"]));
        assert!(!r.body.to_string().contains("private"), "thinking is not sent to another protocol");
        assert_eq!(r.body["tools"][0], json!({"type": "function", "name": "fs_read", "description": "Read a file", "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}));

        let cut = client.turn(&request(), &mut |_| {}).await.unwrap();
        assert_eq!(cut.stop_reason, Some(StopReason::MaxTokens));
        assert_eq!(cut.content, vec![ContentBlock::text("Half an ans")]);
        let failed = client.turn(&request(), &mut |_| {}).await.unwrap_err().to_string();
        assert!(failed.contains("no (in the stream, invalid_prompt)"), "{failed}");
        assert_eq!(mock.received().len(), 4, "a refused prompt is not retried");
    });
}

/// A provider (or a proxy before one) that streams without end is stopped at the
/// turn's bound with a clear error, whether it sends events or one endless line.
#[test]
fn an_endless_answer_is_stopped_at_its_bound() {
    use worker::provider::MAX_TURN_BYTES;
    crate::rt().block_on(async {
        let piece = "x".repeat(16 * 1024);
        let pieces = (MAX_TURN_BYTES / (16 * 1024) + 64) as usize;
        let events = air_tests::mock_provider::text_pieces((0..pieces).map(|_| piece.clone()));
        let line = format!(
            "event: message_start\ndata: {}",
            "y".repeat(MAX_TURN_BYTES as usize + 1024 * 1024)
        );
        for reply in [Reply::Events(events), Reply::Malformed(line)] {
            let mock = MockProvider::start(vec![Exchange {
                request: None,
                expect: Expect::default(),
                reply,
            }])
            .await;
            let t0 = Instant::now();
            let once = Anthropic::new(
                &mock.url,
                "sk-test-key",
                Timeouts {
                    connect: Duration::from_secs(2),
                    first_byte: Duration::from_secs(5),
                    idle: Duration::from_secs(10),
                    // An event that never ends is no progress, but the bound comes
                    // first even on a slow machine.
                    stall: Duration::from_secs(120),
                },
                RetryPolicy {
                    max_attempts: 1,
                    ..fast_retries()
                },
            )
            .unwrap();
            let e = once
                .turn(&request(), &mut |_| {})
                .await
                .unwrap_err()
                .to_string();
            assert!(e.contains("streamed past 64 MiB"), "{e}");
            assert_eq!(mock.received().len(), 1, "not retried");
            eprintln!("stopped in {:?}", t0.elapsed());
        }
    });
}
