//! The summaries of the test frameworks of C and C++ (and of hand-written test
//! programs): Unity, Check, Catch2, doctest, Criterion, greatest, acutest, CUnit,
//! cmocka, Boost.Test, minctest, Perl's `prove`, a bare TAP stream with its plan, and
//! the two-line `Tests passed: N` / `Tests failed: N` a project's own runner prints.

use super::{first_number, number_before, spaced_after, Format, Tally};

/// What a framework printed before its count was whole.
#[derive(Default)]
pub(super) struct Pending {
    /// `Tests passed: N` and `Tests failed: N`, on consecutive lines in either order.
    passed: Option<u64>,
    failed: Option<u64>,
    /// acutest's `Count of run unit tests: N`, before its failed line.
    acutest_run: Option<u64>,
    /// CUnit's `Run Summary:` header was seen; its `tests` row follows.
    cunit: bool,
    /// Boost.Test's `Running N test cases...`.
    boost: Option<u64>,
    /// A bare TAP stream: its plan (`1..N`), its test lines, and whether it bailed out.
    tap_plan: Option<u64>,
    tap_ok: u64,
    tap_not_ok: u64,
    tap_left: u64,
    tap_bailed: bool,
}

/// Whether the words before a colon name passing tests (`Tests passed`) or failing
/// ones (`Tests failed`); anything else (a bare `Passed`) is not a test count.
fn verdict_word(word: &str) -> Option<bool> {
    let w = word.to_ascii_lowercase();
    let w = w
        .strip_prefix("tests ")
        .or_else(|| w.strip_prefix("test "))?;
    match w {
        "passed" | "passing" | "succeeded" => Some(true),
        "failed" | "failing" => Some(false),
        _ => None,
    }
}

/// A TAP test line's directive (after its first `#` that is not escaped), upper
/// case: `SKIP …`, `TODO …`.
fn directive(rest: &str) -> String {
    let mut prev = ' ';
    for (i, c) in rest.char_indices() {
        if c == '#' && prev != '\\' {
            return rest[i + 1..].trim_start().to_ascii_uppercase();
        }
        prev = c;
    }
    String::new()
}

/// A whole number and nothing else.
fn whole(text: &str) -> Option<u64> {
    let t = text.trim();
    (!t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()))
        .then(|| t.parse().ok())
        .flatten()
}

impl Tally {
    /// Whether the line was one of these frameworks' summaries.
    pub(super) fn native(&mut self, t: &str, indented: bool) -> bool {
        // Unity: `3 Tests 1 Failures 0 Ignored`.
        if let Some((n, rest)) = t.split_once(" Tests ") {
            if let (Some(total), Some(failed), Some(ignored)) = (
                whole(n),
                number_before(rest, " Failures"),
                number_before(rest, " Ignored"),
            ) {
                self.add(Format::Native, total.saturating_sub(ignored), failed);
                return true;
            }
        }
        // Check: `100%: Checks: 5, Failures: 0, Errors: 0`.
        if let Some((_, rest)) = t.split_once("%: Checks: ") {
            let failed = spaced_after(rest, "Failures:")
                .unwrap_or(0)
                .saturating_add(spaced_after(rest, "Errors:").unwrap_or(0));
            self.add(Format::Native, first_number(rest).unwrap_or(0), failed);
            return true;
        }
        // Catch2 and doctest: `test cases: 3 | 2 passed | 1 failed | 0 skipped`, or
        // Catch2's `All tests passed (12 assertions in 3 test cases)`.
        let bare = t.strip_prefix("[doctest] ").unwrap_or(t);
        if let Some(rest) = bare.strip_prefix("test cases:") {
            let total = first_number(rest).unwrap_or(0);
            let skipped = number_before(rest, " skipped").unwrap_or(0);
            let failed = number_before(rest, " failed").unwrap_or(0);
            self.add(Format::Native, total.saturating_sub(skipped), failed);
            return true;
        }
        if let Some(rest) = t.strip_prefix("All tests passed (") {
            if let Some(n) = number_before(rest, " test case") {
                self.add(Format::Native, n, 0);
                return true;
            }
        }
        // Criterion: `[====] Synthesis: Tested: 3 | Passing: 2 | Failing: 1 | Crashing: 0`.
        if let Some((_, rest)) = t.split_once("Synthesis: Tested:") {
            let failed = spaced_after(rest, "Failing:")
                .unwrap_or(0)
                .saturating_add(spaced_after(rest, "Crashing:").unwrap_or(0));
            self.add(Format::Native, first_number(rest).unwrap_or(0), failed);
            return true;
        }
        // greatest: `Pass: 3, fail: 0, skip: 0.`
        if let Some(rest) = t.strip_prefix("Pass: ") {
            if let (Some(passed), Some(failed)) = (first_number(rest), spaced_after(rest, "fail:"))
            {
                self.add(Format::Native, passed.saturating_add(failed), failed);
                return true;
            }
        }
        // acutest: `Count of run unit tests: 5`, then `Count of failed unit tests: 1`.
        if let Some(rest) = t.strip_prefix("Count of run unit tests:") {
            self.pending.acutest_run = whole(rest);
            return true;
        }
        if let Some(rest) = t.strip_prefix("Count of failed unit tests:") {
            if let (Some(run), Some(failed)) = (self.pending.acutest_run.take(), whole(rest)) {
                self.add(Format::Native, run, failed);
            }
            return true;
        }
        // CUnit: `Run Summary:    Type  Total    Ran Passed Failed Inactive`, then its
        // `tests` row.
        if t.starts_with("Run Summary:") && t.contains("Ran") {
            self.pending.cunit = true;
            return true;
        }
        if self.pending.cunit {
            if let Some(rest) = t.strip_prefix("tests ") {
                let n: Vec<u64> = rest
                    .split_whitespace()
                    .filter_map(|w| w.parse().ok())
                    .collect();
                if let [_total, ran, _passed, failed, ..] = n[..] {
                    self.pending.cunit = false;
                    self.add(Format::Native, ran, failed);
                    return true;
                }
            }
        }
        // Boost.Test: `Running 5 test cases...`, then `*** No errors detected` or
        // `*** 2 failures are detected in the test module "m"`.
        if let Some(rest) = t.strip_prefix("Running ") {
            if rest.ends_with("...") && rest.contains(" test case") {
                self.pending.boost = first_number(rest);
                return true;
            }
        }
        if let Some(rest) = t.strip_prefix("*** ") {
            if let Some(ran) = self.pending.boost {
                if rest.starts_with("No errors detected") {
                    self.pending.boost = None;
                    self.add(Format::Native, ran, 0);
                    return true;
                }
                if rest.contains(" detected") && rest.contains("failure") {
                    self.pending.boost = None;
                    let failed = first_number(rest).unwrap_or(1).min(ran.max(1));
                    self.add(Format::Native, ran.max(failed), failed);
                    return true;
                }
            }
        }
        // minctest: `ALL TESTS PASSED (40/40)` or `SOME TESTS FAILED (38/40)`.
        for head in ["ALL TESTS PASSED (", "SOME TESTS FAILED ("] {
            if let Some((good, all)) = t
                .strip_prefix(head)
                .and_then(|r| r.strip_suffix(')'))
                .and_then(|r| r.split_once('/'))
            {
                if let (Some(good), Some(all)) = (whole(good), whole(all)) {
                    self.add(Format::Native, all, all.saturating_sub(good));
                    return true;
                }
            }
        }
        // prove: `Files=2, Tests=14,  0 wallclock secs …`, after `Failed 1/5 subtests`.
        if let Some(rest) = t.strip_prefix("Files=") {
            if let Some(n) = spaced_after(rest, "Tests=") {
                self.add(Format::Prove, n, 0);
                return true;
            }
        }
        if let Some(rest) = t.strip_prefix("Failed ") {
            if let Some((n, _)) = rest
                .strip_suffix(" subtests")
                .and_then(|r| r.split_once('/'))
            {
                if let Some(n) = whole(n) {
                    self.add(Format::Prove, 0, n);
                    return true;
                }
            }
        }
        // A bare TAP stream: `1..N`, then `ok 1 - name` and `not ok 2 - name` (a
        // skipped test's directive says `# SKIP`, a failing TODO test's `# TODO`),
        // judged once the output ended against its plan.
        if !indented {
            if let Some(("1", n)) = t.split_once("..") {
                if let Some(n) = whole(n.split_whitespace().next().unwrap_or("")) {
                    self.pending.tap_plan = Some(n);
                    return true;
                }
            }
            if t.starts_with("Bail out!") {
                self.pending.tap_bailed = true;
                return true;
            }
            let line = t
                .strip_prefix("not ok")
                .map(|r| (false, r))
                .or_else(|| t.strip_prefix("ok").map(|r| (true, r)))
                .filter(|(_, r)| r.is_empty() || r.starts_with(' '));
            if let Some((ok, rest)) = line {
                let d = directive(rest);
                if d.starts_with("SKIP") || (d.starts_with("TODO") && !ok) {
                    self.pending.tap_left += 1;
                } else if ok {
                    self.pending.tap_ok += 1;
                } else {
                    self.pending.tap_not_ok += 1;
                }
                return true;
            }
        }
        // A project's own runner: `Tests passed: 349` and `Tests failed: 0`, one line
        // after the other.
        if let Some((word, n)) = t.split_once(':') {
            if let (Some(pass), Some(n)) = (verdict_word(word.trim()), whole(n)) {
                if pass {
                    self.pending.passed = Some(n);
                } else {
                    self.pending.failed = Some(n);
                }
                if let (Some(p), Some(f)) = (self.pending.passed, self.pending.failed) {
                    self.pending.passed = None;
                    self.pending.failed = None;
                    self.add(Format::Native, p.saturating_add(f), f);
                }
                return true;
            }
        }
        self.pending.passed = None;
        self.pending.failed = None;
        false
    }

    /// A bare TAP stream's count, once its output ended: each test line as it said,
    /// and each test its plan named that never reported failed (a run that bailed
    /// out failed).
    pub(super) fn native_end(&mut self) {
        let p = &self.pending;
        let Some(planned) = p.tap_plan else {
            return;
        };
        let seen = p.tap_ok + p.tap_not_ok + p.tap_left;
        let missing = planned.saturating_sub(seen);
        let mut failed = p.tap_not_ok + missing;
        let mut ran = p.tap_ok + failed;
        if p.tap_bailed && failed == 0 {
            failed = 1;
            ran = ran.max(1);
        }
        self.add(Format::TapLines, ran, failed);
    }
}
