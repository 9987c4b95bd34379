//! The tests of `agent::watch`.

use super::*;
use proptest::prelude::*;
use serde_json::json;

fn run(w: &mut Watch, tool: &str, input: Value, output: Value) -> Verdict {
    let answer = fingerprint(true, Some(&output), "");
    w.call(tool, &input, answer);
    w.turn("")
}

#[test]
fn a_model_that_repeats_one_call_forever_is_told_once_then_stopped() {
    let mut w = Watch::default();
    let mut verdicts = Vec::new();
    for n in 0..10 {
        // The run's id and duration differ each time; nothing else does.
        let v = run(
            &mut w,
            "shell_run",
            json!({"command": "npm test 2>&1 | tail -30"}),
            json!({"exit_code": 1, "stdout": "1 failing", "command_run_id": format!("c{n}"), "duration_ms": n * 7}),
        );
        let stop = matches!(v, Verdict::Stop(_));
        verdicts.push(v);
        if stop {
            break;
        }
    }
    assert_eq!(verdicts.len(), 2 * REPEATS, "{verdicts:?}");
    assert!(
        matches!(&verdicts[REPEATS - 1], Verdict::Tell(why) if why.contains("shell_run with the same input 3 times")),
        "{verdicts:?}"
    );
    assert!(verdicts[..REPEATS - 1].iter().all(|v| *v == Verdict::Fine));
}

#[test]
fn fixing_and_testing_in_turn_is_not_a_loop() {
    let mut w = Watch::default();
    for n in 0..20 {
        let edit = run(
            &mut w,
            "fs_edit",
            json!({"path": "src/a.rs", "old": format!("v{n}"), "new": format!("v{}", n + 1)}),
            json!({"path": "src/a.rs", "replacements": 1}),
        );
        assert_eq!(edit, Verdict::Fine);
        // The same failure each time: the edit was new, so the turns are not stale.
        let test = run(
            &mut w,
            "shell_run",
            json!({"command": "cargo test"}),
            json!({"exit_code": 101, "stdout": "test a ... FAILED", "command_run_id": format!("r{n}")}),
        );
        assert_eq!(test, Verdict::Fine, "round {n}");
    }
}

#[test]
fn going_round_two_calls_is_a_loop() {
    let mut w = Watch::default();
    let mut first = None;
    for n in 0..12 {
        let (tool, input) = if n % 2 == 0 {
            ("fs_read", json!({"path": "a.c"}))
        } else {
            ("fs_read", json!({"path": "b.c"}))
        };
        let v = run(
            &mut w,
            tool,
            input,
            json!({"content": format!("file {}", n % 2)}),
        );
        if v != Verdict::Fine {
            first = Some((n, v));
            break;
        }
    }
    // Stale turns are told first here (the answers repeat from the third turn on),
    // unless the cycle is: either way a loop, found within six calls.
    let (n, v) = first.unwrap();
    assert!(n < 2 * REPEATS, "{n}");
    assert!(matches!(v, Verdict::Tell(_)), "{v:?}");
}

#[test]
fn turns_that_only_say_what_was_said_are_stale() {
    let mut w = Watch::default();
    assert_eq!(w.turn("Let me think."), Verdict::Fine);
    let mut v = Verdict::Fine;
    for _ in 0..STALE_TURNS {
        v = w.turn("Let me think.");
    }
    assert!(
        matches!(v, Verdict::Tell(ref why) if why.contains("nothing you had not seen")),
        "{v:?}"
    );
}

#[test]
fn the_order_of_an_input_s_fields_does_not_make_it_another_call() {
    assert_eq!(
        canonical(&json!({"a": 1, "b": {"c": 2, "d": [1, {"e": 3, "f": 4}]}})),
        canonical(
            &serde_json::from_str::<Value>(r#"{"b":{"d":[1,{"f":4,"e":3}],"c":2},"a":1}"#).unwrap()
        )
    );
    // Numbers in a text answer are left out; other words are not.
    assert_eq!(
        fingerprint(false, None, "run 12 refused after 3.4 s"),
        fingerprint(false, None, "run 99 refused after 0.1 s")
    );
    assert_ne!(
        fingerprint(false, None, "no such file a.c"),
        fingerprint(false, None, "no such file b.c")
    );
}

proptest! {
    /// Calls whose inputs never repeat are never a loop, whatever they answer.
    #[test]
    fn new_calls_are_never_a_loop(answers in proptest::collection::vec(0u8..3, 1..60)) {
        let mut w = Watch::default();
        for (n, a) in answers.iter().enumerate() {
            w.call("shell_run", &json!({"command": format!("step {n}")}), u64::from(*a));
            prop_assert_eq!(w.turn(""), Verdict::Fine);
        }
    }

    /// Whatever came before, a call repeated forever is stopped within 2 × REPEATS
    /// turns of its start, after being told once (or stopped at once when a loop
    /// was told before).
    #[test]
    fn a_repeat_is_stopped_whatever_came_before(
        before in proptest::collection::vec((0u8..4, 0u8..3), 0..30),
    ) {
        let mut w = Watch::default();
        let mut told = false;
        for (input, answer) in &before {
            w.call("fs_read", &json!({"path": format!("f{input}")}), u64::from(*answer));
            match w.turn("") {
                Verdict::Tell(_) => told = true,
                Verdict::Stop(_) => return Ok(()),
                Verdict::Fine => {}
            }
        }
        let mut stopped = None;
        for n in 1..=2 * REPEATS {
            w.call("shell_run", &json!({"command": "true"}), 7);
            match w.turn("") {
                Verdict::Stop(_) => { stopped = Some(n); break; }
                Verdict::Tell(_) => { prop_assert!(!told); told = true; }
                Verdict::Fine => {}
            }
        }
        prop_assert!(stopped.is_some());
    }
}

#[test]
fn polling_what_changes_is_not_a_loop_and_a_compaction_starts_over() {
    let mut w = Watch::default();
    for n in 0..6 {
        let v = run(
            &mut w,
            "shell_output",
            json!({"command_run_id": "c1"}),
            json!({"text": format!("started {n} workers")}),
        );
        assert_eq!(v, Verdict::Fine, "a server's output that moves: {n}");
    }
    // After a compaction, reading again what the summary stands for is new.
    let mut w = Watch::default();
    for _ in 0..2 {
        run(
            &mut w,
            "fs_read",
            json!({"path": "a.c"}),
            json!({"content": "x"}),
        );
    }
    w.forget();
    assert_eq!(
        run(
            &mut w,
            "fs_read",
            json!({"path": "a.c"}),
            json!({"content": "x"})
        ),
        Verdict::Fine
    );
}
