//! Compaction's figures.
//!
//! 1. The request after compaction of a 150k-token conversation: a conversation of
//!    tool reads, failed builds and what the user said, grown past 150,000 tokens on
//!    a 200,000-token model; airsd's rules and classifier make the Compactor's input
//!    and the text that replaces messages 1…N (the Compactor's summary stands in as
//!    8 KiB of text), and the worker's history puts it in place. The request's size
//!    is measured as sent (the provider's JSON body), against the window.
//! 2. The agent's next turn while a Compactor runs: the real agent loop against the
//!    loopback mock provider, 40 turns of 12 KiB tool answers, once below the
//!    threshold and once over it from turn 5 with a compaction pending (the Compactor
//!    runs elsewhere: its summary comes in three turns later). Each turn's time outside
//!    the model is measured at the provider: from the end of one answer to the next
//!    request's arrival.
//!
//! Run: `cargo bench -p air-tests --bench compaction`
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Mutex;
use std::time::Instant;

use air_proto::event::RuntimeEvent;
use air_proto::ipc::{ToolResult, ToolResultStatus};
use air_proto::message::{ContentBlock, Message, Role};
use airsd::context::compaction::{self, Rules, Stored};
use serde_json::{json, Value};
use worker::agent::{Compacted, Link};
use worker::history::History;

const WINDOW: u64 = 200_000;

fn block_of(kb: usize, line: &str) -> String {
    let mut s = String::with_capacity(kb * 1024 + 80);
    let mut n = 0;
    while s.len() < kb * 1024 {
        n += 1;
        s.push_str(&format!("{n:>6}\t{line}\n"));
    }
    s
}

/// Figure 1.
fn request_after_compaction() {
    let base = vec![Message::user(vec![ContentBlock::text(block_of(
        16,
        "the task, its scope and where the agent works",
    ))])];
    let mut request = base.clone();
    let mut history = History::new(base.clone());
    let mut stored = Vec::new();
    let mut turn = 0;
    let est = |r: &[Message]| serde_json::to_string(r).unwrap().len() as u64 / 4;
    while est(&request) < 150_000 {
        turn += 1;
        let a = Message::assistant(vec![
            ContentBlock::text(format!("Reading part {turn}.")),
            ContentBlock::ToolUse {
                id: format!("t{turn}"),
                name: "fs_read".into(),
                input: json!({"path": format!("src/part{turn}.rs")}),
            },
        ]);
        let answer = if turn % 6 == 0 {
            format!(
                "Exit code 2 after 3.1 s\n{}",
                block_of(4, "error[E0308]: mismatched types")
            )
        } else {
            block_of(14, "fn part() -> u64 { 42 } // source being read")
        };
        let mut said = vec![ContentBlock::ToolResult {
            tool_use_id: format!("t{turn}"),
            content: answer,
            is_error: false,
        }];
        if turn % 10 == 0 {
            said.push(ContentBlock::text(format!(
                "{} keep the public API as it is",
                air_proto::message::USER_SAYS
            )));
        }
        let u = Message::user(said);
        history.assistant(&format!("a{turn}"), &a);
        request.push(a.clone());
        request.push(u);
        stored.push(Stored {
            id: format!("a{turn}"),
            role: Role::Assistant,
            content: a.content,
        });
        for (id, m) in history.unrecorded(&request) {
            stored.push(Stored {
                id,
                role: Role::User,
                content: m.content,
            });
        }
    }
    let before = est(&request);
    // The snapshot ends at the last answer; the agent has gone on one more turn
    // (its answer too) by the time the summary comes.
    let upto = stored.last().unwrap().id.clone();
    let n = stored.len();
    let rules = Rules::built_in();
    let usable = WINDOW - 16_384 - 2_048;
    let t = Instant::now();
    let prepared = compaction::prepare(&rules, None, &stored, 1, (usable as f64 * 0.85) as u64);
    let prepare_ms = t.elapsed().as_secs_f64() * 1e3;
    let summary = block_of(8, "what was done, decided, tried and is left");
    let text = compaction::replacement(n, &summary, &prepared.kept);
    let next = Message::assistant(vec![ContentBlock::ToolUse {
        id: "t-next".into(),
        name: "fs_read".into(),
        input: json!({"path": "src/next.rs"}),
    }]);
    history.assistant("a-next", &next);
    request.push(next);
    request.push(Message::user(vec![ContentBlock::ToolResult {
        tool_use_id: "t-next".into(),
        content: block_of(14, "fn next() {}"),
        is_error: false,
    }]));
    let t = Instant::now();
    assert!(history.compact(&mut request, &upto, &text));
    let swap_ms = t.elapsed().as_secs_f64() * 1e3;
    let after = est(&request);
    println!(
        "compaction: a conversation of {before} tokens ({n} messages, {} of them kept word for word in part) on a {WINDOW}-token window",
        prepared.kept.len()
    );
    println!(
        "  the Compactor's input: {} tokens ({} messages summarised, {prepare_ms:.1} ms to make)",
        prepared.transcript.len() / 4,
        n
    );
    println!(
        "  the request after compaction: {after} tokens = {:.1}% of the window (target ≤ 40%); put in place in {swap_ms:.2} ms",
        after as f64 * 100.0 / WINDOW as f64
    );
}

/// A link whose tools answer at once with 12 KiB and whose compaction, once asked
/// for, comes in three turns later (the Compactor works meanwhile).
struct Bench {
    asked: Mutex<Option<(u32, String)>>,
    told: Mutex<bool>,
}

impl Link for Bench {
    fn event(&self, event: RuntimeEvent) {
        if event.event_type == "context.compaction.requested" {
            let upto = event.payload["upto_message_id"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            *self.asked.lock().unwrap() = Some((0, upto));
        }
    }

    fn compacted(&self) -> Option<Compacted> {
        let mut asked = self.asked.lock().unwrap();
        let (turns, upto) = asked.as_mut()?;
        *turns += 1;
        let mut told = self.told.lock().unwrap();
        if *told || *turns < 3 {
            return None;
        }
        *told = true;
        Some(Compacted {
            upto_message_id: upto.clone(),
            text: Some(block_of(8, "summary")),
            reason: None,
        })
    }

    async fn call_tool(&self, id: &str, _tool: &str, _input: Value, _origin: &str) -> ToolResult {
        ToolResult {
            tool_call_id: id.into(),
            status: ToolResultStatus::Ok,
            output: None,
            content: Some(block_of(12, "let x = compute(); // a line of the file")),
            error: None,
            truncated: false,
            artifact_ref: None,
        }
    }
}

fn turn_reply(n: usize, input_tokens: u64) -> Value {
    json!({"reply": {"events": [
        {"type": "message_start", "message": {"id": format!("m{n}"), "type": "message", "role": "assistant", "content": [], "model": "claude-sonnet-4-5", "stop_reason": null, "usage": {"input_tokens": input_tokens, "output_tokens": 1}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": format!("t{n}"), "name": "fs_read", "input": {}}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": format!("{{\"path\": \"src/f{n}.rs\"}}")}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 20}},
        {"type": "message_stop"}
    ]}})
}

const TURNS: usize = 40;

/// Figure 2: the time outside the model of each turn, in ms (turns 2…).
fn turn_times(rt: &tokio::runtime::Runtime, over_from: Option<usize>) -> Vec<f64> {
    let dir = tempfile::tempdir().unwrap();
    let exchanges: Vec<Value> = (1..=TURNS)
        .map(|n| {
            let tokens = match over_from {
                Some(from) if n >= from => 150_000,
                _ => 10_000,
            };
            turn_reply(n, tokens)
        })
        .collect();
    let recording = json!({"provider": "anthropic", "exchanges": exchanges});
    std::fs::write(dir.path().join("T1-executor-1.json"), recording.to_string()).unwrap();
    let tools: Vec<Value> = ["fs.read"]
        .iter()
        .map(|n| json!({"name": n, "version": 1, "description": n, "category": "filesystem", "input_schema": {"type": "object"}, "output_schema": {"type": "object"}, "permissions": {}, "streaming": false}))
        .collect();
    let control: air_proto::ipc::ControlMessage = serde_json::from_value(json!({
        "type": "agent.start",
        "version": 1,
        "task_spec": {"id": "T1", "type": "execute", "title": "Read", "description": "Read the files.",
            "acceptance_criteria": [], "scope": {}, "dependencies": [],
            "verification": {"commands": [], "required": false, "fallback_allowed": true},
            "constraints": {"max_turns": TURNS + 1, "soft_timeout_ms": 600000, "hard_timeout_ms": 1200000, "retry_budget": 1, "model_policy": "agent_select"},
            "context_refs": {}, "output_contract": "ExecutorResult"},
        "context_pack": {"refs": {},
            "assembled": {"request_id": "r", "system": ["You read files."], "messages": [{"role": "user", "content": [{"type": "text", "text": "Read src/."}]}],
                "included_refs": {}, "token_estimate": {"total": 10, "by_section": {}, "model_id": "x"},
                "budget": {"context_window_tokens": WINDOW, "reserved_output_tokens": 16384, "safety_margin_tokens": 2048, "target_usage_ratio": 0.7},
                "compaction": {"needed": false}}},
        "runtime": {"session_id": "s", "project_id": "p", "agent_id": "T1-executor-1", "permission_template": "executor",
            "agent_type": "executor", "replay": dir.path().display().to_string()},
        "tools": tools
    }))
    .unwrap();
    let air_proto::ipc::ControlMessage::Start(start) = control else {
        panic!("not a start")
    };
    let link = Bench {
        asked: Mutex::new(None),
        told: Mutex::new(false),
    };
    // The replay server is inside the loop; the link sees each turn's tool call the
    // moment its answer is complete, and the next call a turn later.
    let calls = std::sync::Arc::new(Mutex::new(Vec::<Instant>::new()));
    struct Timed<'a> {
        link: &'a Bench,
        calls: std::sync::Arc<Mutex<Vec<Instant>>>,
    }
    impl Link for Timed<'_> {
        fn event(&self, event: RuntimeEvent) {
            self.link.event(event)
        }
        fn compacted(&self) -> Option<Compacted> {
            self.link.compacted()
        }
        async fn call_tool(&self, id: &str, tool: &str, input: Value, origin: &str) -> ToolResult {
            self.calls.lock().unwrap().push(Instant::now());
            self.link.call_tool(id, tool, input, origin).await
        }
    }
    let timed = Timed {
        link: &link,
        calls: calls.clone(),
    };
    rt.block_on(worker::agent::run(&start, &timed));
    if over_from.is_some() {
        assert!(*link.told.lock().unwrap(), "the compaction came in");
    }
    let calls = calls.lock().unwrap();
    calls
        .windows(2)
        .map(|w| (w[1] - w[0]).as_secs_f64() * 1e3)
        .collect()
}

fn stats(v: &[f64]) -> (f64, f64) {
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    let max = v.iter().copied().fold(0.0, f64::max);
    (mean, max)
}

fn main() {
    request_after_compaction();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    // Warm up, then alternate.
    let _ = turn_times(&rt, None);
    let (mut plain, mut compacting) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        plain.extend(turn_times(&rt, None));
        compacting.extend(turn_times(&rt, Some(5)));
    }
    let (pm, px) = stats(&plain);
    let (cm, cx) = stats(&compacting);
    println!(
        "the agent's turn outside the model ({TURNS} turns of 12 KiB tool answers, 5 runs each):"
    );
    println!("  no compaction: mean {pm:.2} ms, max {px:.2} ms");
    println!("  a Compactor at work from turn 5, its summary put in place three turns later: mean {cm:.2} ms, max {cx:.2} ms");
    println!(
        "  difference of the means: {:+.2} ms (target ≤ 5 ms)",
        cm - pm
    );
}
