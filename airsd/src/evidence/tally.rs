//! How many tests a command ran and how many failed, read from its output as it
//! streams (both stdout and stderr, line by line, in bounded memory, colours taken
//! out): the summaries of CTest, Maven's Surefire, Gradle (on failure), `dotnet
//! test`, jest, vitest, GoogleTest, cargo-nextest, cargo, pytest, unittest, TAP
//! (`node --test`), mocha, bun, `go test` (`-json`, `-v`, or its packages), the C and
//! C++ frameworks ([`native`]), and the plain `N passed, N failed` line. When a run shows several formats (CTest running
//! GoogleTest binaries verbosely), the outermost runner's count is the one taken.

use crate::profiles::lines::Lines;

mod native;

/// Longest line kept for matching; a longer one is matched on its start.
const LINE_CAP: usize = 4096;

/// Counts, per format.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Count {
    pub ran: u64,
    pub failed: u64,
    /// What was counted is packages whose tests ran (`go test` without `-v`), not
    /// tests.
    pub packages: bool,
}

/// The formats, outermost first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Format {
    Ctest,
    Prove,
    Maven,
    Gradle,
    Dotnet,
    Jest,
    Vitest,
    Gtest,
    Nextest,
    Cargo,
    Pytest,
    Unittest,
    Tap,
    TapLines,
    Mocha,
    Bun,
    GoTests,
    GoPackages,
    Native,
    Plain,
}

const FORMATS: usize = 20;

/// The test summaries seen in a command's output so far.
pub struct Tally {
    streams: [Lines; 2],
    counts: [Option<Count>; FORMATS],
    /// unittest prints `Ran N tests` and then its verdict line.
    unittest_ran: Option<u64>,
    /// TAP prints `# pass N` before `# fail N`; bun `N pass` before `N fail`.
    tap_pass: Option<u64>,
    bun_pass: Option<u64>,
    pending: native::Pending,
}

impl Default for Tally {
    fn default() -> Self {
        Self {
            streams: [Lines::new(LINE_CAP), Lines::new(LINE_CAP)],
            counts: [None; FORMATS],
            unittest_ran: None,
            tap_pass: None,
            bun_pass: None,
            pending: native::Pending::default(),
        }
    }
}

impl Tally {
    /// Feeds a chunk of one stream (0 stdout, 1 stderr).
    pub fn push(&mut self, stream: usize, data: &[u8]) {
        let i = stream.min(1);
        let mut lines = std::mem::replace(&mut self.streams[i], Lines::new(0));
        lines.push(data, |line| self.line(line));
        self.streams[i] = lines;
    }

    /// The count of the outermost runner seen, after the output ended.
    pub fn finish(mut self) -> Option<Count> {
        for i in 0..2 {
            let mut lines = std::mem::replace(&mut self.streams[i], Lines::new(0));
            lines.finish(|line| self.line(line));
        }
        self.native_end();
        self.counts.iter().flatten().next().copied()
    }

    fn add(&mut self, format: Format, ran: u64, failed: u64) {
        let c = self.counts[format as usize].get_or_insert_with(Count::default);
        c.ran = c.ran.saturating_add(ran);
        c.failed = c.failed.saturating_add(failed);
        c.packages = format == Format::GoPackages;
    }

    fn line(&mut self, line: &str) {
        let plain;
        let line = if line.contains('\x1b') {
            plain = uncoloured(line);
            plain.as_str()
        } else {
            line
        };
        // `go test` prints a test's verdict at the start of the line (a subtest's is
        // indented under it): counted before anything is trimmed.
        if let Some(rest) = line.strip_prefix("--- ") {
            if rest.starts_with("PASS: ") {
                return self.add(Format::GoTests, 1, 0);
            }
            if rest.starts_with("FAIL: ") {
                return self.add(Format::GoTests, 1, 1);
            }
        }
        if let Some(rest) = line.strip_prefix("ok  \t") {
            let counted = !rest.contains("[no tests to run]");
            return self.add(Format::GoPackages, u64::from(counted), 0);
        }
        if line.starts_with("FAIL\t") && line.matches('\t').count() >= 2 {
            return self.add(Format::GoPackages, 1, 1);
        }
        let t = line.trim();
        if t.is_empty() {
            return;
        }
        if t.starts_with('{') && t.contains("\"Action\"") {
            return self.go_json(t);
        }
        if self.others(t) {
            return;
        }
        // CTest: `100% tests passed, 0 tests failed out of 3`.
        if let Some(rest) = t.split_once("tests passed, ").map(|(_, r)| r) {
            if let (Some(failed), Some(total)) = (
                number_before(rest, " tests failed out of")
                    .or(number_before(rest, " test failed out of")),
                rest.rsplit(' ').next().and_then(|n| n.parse::<u64>().ok()),
            ) {
                return self.add(Format::Ctest, total, failed);
            }
        }
        if t.starts_with("No tests were found") {
            return self.add(Format::Ctest, 0, 0);
        }
        // GoogleTest: `[==========] 3 tests from 1 test suite ran. (0 ms total)` and
        // `[  FAILED  ] 1 test, listed below:`.
        if let Some(rest) = t.strip_prefix("[==========] ") {
            if rest.contains(" ran.") || rest.contains(" run.") {
                if let Some(n) = first_number(rest) {
                    return self.add(Format::Gtest, n, 0);
                }
            }
        }
        if let Some(rest) = t.strip_prefix("[  FAILED  ] ") {
            if rest.ends_with("listed below:") {
                if let Some(n) = first_number(rest) {
                    return self.add(Format::Gtest, 0, n);
                }
            }
        }
        // cargo: `test result: ok. 3 passed; 0 failed; 0 ignored; …`.
        if let Some(rest) = t.strip_prefix("test result: ") {
            let passed = number_before(rest, " passed").unwrap_or(0);
            let failed = number_before(rest, " failed").unwrap_or(0);
            return self.add(Format::Cargo, passed.saturating_add(failed), failed);
        }
        // unittest: `Ran 3 tests in 0.001s`, then `OK`, `OK (skipped=1)` or
        // `FAILED (failures=1, errors=1)`.
        if let Some(rest) = t.strip_prefix("Ran ") {
            if rest.contains(" test") && rest.contains(" in ") && !rest.contains(" across ") {
                self.unittest_ran = first_number(rest);
                return;
            }
        }
        if let Some(ran) = self.unittest_ran {
            if t == "OK" || t.starts_with("OK (") {
                self.unittest_ran = None;
                let skipped = number_after(t, "skipped=").unwrap_or(0);
                return self.add(Format::Unittest, ran.saturating_sub(skipped), 0);
            }
            if t.starts_with("FAILED (") {
                self.unittest_ran = None;
                let failed = number_after(t, "failures=")
                    .unwrap_or(0)
                    .saturating_add(number_after(t, "errors=").unwrap_or(0));
                return self.add(Format::Unittest, ran, failed.max(1));
            }
        }
        // pytest: `==== 2 failed, 3 passed, 1 skipped in 0.12s ====`, or with `-q`
        // `3 passed in 0.01s`.
        let inner = t.trim_matches('=').trim();
        if inner.contains(" in ")
            && (inner.contains(" passed") || inner.contains(" failed") || inner.contains(" error"))
            && inner.starts_with(|c: char| c.is_ascii_digit())
        {
            let head = inner.rsplit_once(" in ").map_or(inner, |(h, _)| h);
            let passed = number_before(head, " passed").unwrap_or(0);
            let failed = number_before(head, " failed").unwrap_or(0).saturating_add(
                number_before(head, " errors")
                    .or(number_before(head, " error"))
                    .unwrap_or(0),
            );
            return self.add(Format::Pytest, passed.saturating_add(failed), failed);
        }
        // The C and C++ frameworks' summaries, and a project's own runner's.
        if self.native(t, line.starts_with(char::is_whitespace)) {
            return;
        }
        // The plain line: `N passed, N failed` (`, N skipped` may follow; one word
        // with a colon may stand before it).
        let plain = t
            .split_once(": ")
            .map_or(t, |(w, r)| if w.contains(' ') { t } else { r });
        if let Some((p, rest)) = plain.split_once(" passed, ") {
            // `46 tests, 46 passed, 0 failed`: the total may come first.
            let p = p
                .split_once(" tests, ")
                .filter(|(n, _)| n.trim().parse::<u64>().is_ok())
                .map_or(p, |(_, p)| p);
            if let (Ok(passed), Some(failed)) =
                (p.trim().parse::<u64>(), number_before(rest, " failed"))
            {
                if rest.split_once(" failed").is_some_and(|(_, after)| {
                    after.is_empty() || after.starts_with(", ") && after.ends_with("skipped")
                }) {
                    self.add(Format::Plain, passed.saturating_add(failed), failed);
                }
            }
        }
    }
}

impl Tally {
    /// A `go test -json` event: a test's pass or fail (a subtest is counted by its
    /// parent).
    fn go_json(&mut self, t: &str) {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(t) else {
            return;
        };
        let test = v.get("Test").and_then(serde_json::Value::as_str);
        match (v.get("Action").and_then(serde_json::Value::as_str), test) {
            (Some("pass"), Some(name)) if !name.contains('/') => self.add(Format::GoTests, 1, 0),
            (Some("fail"), Some(name)) if !name.contains('/') => self.add(Format::GoTests, 1, 1),
            _ => {}
        }
    }

    /// The summaries of Maven, Gradle, dotnet, jest, vitest, nextest, TAP, mocha and
    /// bun; whether the line was one.
    fn others(&mut self, t: &str) -> bool {
        let bare = t
            .strip_prefix("[INFO] ")
            .or_else(|| t.strip_prefix("[ERROR] "))
            .or_else(|| t.strip_prefix("[WARNING] "))
            .unwrap_or(t);
        // Surefire: `Tests run: 3, Failures: 0, Errors: 0, Skipped: 0` (a class's line
        // ends with its time and name; the module's summary does not).
        if let Some(rest) = bare.strip_prefix("Tests run: ") {
            if !rest.contains("Time elapsed") {
                let run = first_number(rest).unwrap_or(0);
                let failed = spaced_after(rest, "Failures:")
                    .unwrap_or(0)
                    .saturating_add(spaced_after(rest, "Errors:").unwrap_or(0));
                let skipped = spaced_after(rest, "Skipped:").unwrap_or(0);
                self.add(Format::Maven, run.saturating_sub(skipped), failed);
            }
            return true;
        }
        // Gradle, on failure: `3 tests completed, 1 failed`.
        if let Some((n, rest)) = t.split_once(" tests completed, ") {
            if let (Ok(total), Some(failed)) =
                (n.trim().parse::<u64>(), number_before(rest, " failed"))
            {
                self.add(Format::Gradle, total, failed);
                return true;
            }
        }
        // dotnet: `Passed!  - Failed:     0, Passed:     3, Skipped:     0, Total: 3`,
        // or `Test summary: total: 3, failed: 0, succeeded: 3, skipped: 0`.
        if (t.starts_with("Passed!") || t.starts_with("Failed!")) && t.contains("Total:") {
            let failed = spaced_after(t, "Failed:").unwrap_or(0);
            let passed = spaced_after(t, "Passed:").unwrap_or(0);
            self.add(Format::Dotnet, passed.saturating_add(failed), failed);
            return true;
        }
        if let Some(rest) = t.strip_prefix("Test summary: total:") {
            let failed = spaced_after(rest, "failed:").unwrap_or(0);
            let passed = spaced_after(rest, "succeeded:").unwrap_or(0);
            self.add(Format::Dotnet, passed.saturating_add(failed), failed);
            return true;
        }
        // jest: `Tests:       1 failed, 2 passed, 3 total`.
        if let Some(rest) = t.strip_prefix("Tests:") {
            if rest.contains(" total") {
                let failed = number_before(rest, " failed").unwrap_or(0);
                let passed = number_before(rest, " passed").unwrap_or(0);
                self.add(Format::Jest, passed.saturating_add(failed), failed);
                return true;
            }
        }
        // vitest: `Tests  1 failed | 2 passed (3)`.
        if let Some(rest) = t.strip_prefix("Tests ") {
            if rest.ends_with(')') && (rest.contains(" passed") || rest.contains(" failed")) {
                let failed = number_before(rest, " failed").unwrap_or(0);
                let passed = number_before(rest, " passed").unwrap_or(0);
                self.add(Format::Vitest, passed.saturating_add(failed), failed);
                return true;
            }
        }
        // nextest: `Summary [   0.010s] 5 tests run: 4 passed, 1 failed, 0 skipped`.
        if t.starts_with("Summary [") {
            if let Some((head, rest)) = t
                .split_once(" tests run: ")
                .or_else(|| t.split_once(" test run: "))
            {
                let run = head
                    .rsplit(' ')
                    .next()
                    .and_then(|n| n.parse::<u64>().ok())
                    .unwrap_or(0);
                let failed = number_before(rest, " failed").unwrap_or(0);
                let passed = number_before(rest, " passed").unwrap_or(0);
                self.add(
                    Format::Nextest,
                    run.min(passed.saturating_add(failed)),
                    failed,
                );
                return true;
            }
        }
        // TAP (`node --test`): `# pass 3` then `# fail 0`; node's spec reporter
        // prints the same words after `ℹ`.
        let tap = t.strip_prefix("# ").or_else(|| t.strip_prefix("ℹ "));
        if let Some(rest) = tap {
            if let Some(n) = rest
                .strip_prefix("pass ")
                .and_then(|n| n.trim().parse().ok())
            {
                self.tap_pass = Some(n);
                return true;
            }
            if let Some(n) = rest
                .strip_prefix("fail ")
                .and_then(|n| n.trim().parse::<u64>().ok())
            {
                let passed = self.tap_pass.take().unwrap_or(0);
                self.add(Format::Tap, passed.saturating_add(n), n);
                return true;
            }
        }
        // mocha: `3 passing (5ms)`, then `1 failing`.
        if let Some(n) = t
            .strip_suffix(" failing")
            .and_then(|n| n.parse::<u64>().ok())
        {
            self.add(Format::Mocha, n, n);
            return true;
        }
        if let Some((n, rest)) = t.split_once(" passing") {
            if let (Ok(n), true) = (n.parse::<u64>(), rest.is_empty() || rest.starts_with(" (")) {
                self.add(Format::Mocha, n, 0);
                return true;
            }
        }
        // bun: ` 3 pass`, then ` 0 fail`.
        if let Some(n) = t.strip_suffix(" pass").and_then(|n| n.parse().ok()) {
            self.bun_pass = Some(n);
            return true;
        }
        if let Some(n) = t.strip_suffix(" fail").and_then(|n| n.parse::<u64>().ok()) {
            if let Some(passed) = self.bun_pass.take() {
                self.add(Format::Bun, passed.saturating_add(n), n);
                return true;
            }
        }
        false
    }
}

/// A line without its terminal colour and style sequences.
fn uncoloured(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\x1b' {
            out.push(c);
            continue;
        }
        if chars.peek() == Some(&'[') {
            chars.next();
            // Parameters, then one final byte.
            for d in chars.by_ref() {
                if ('@'..='~').contains(&d) {
                    break;
                }
            }
        }
    }
    out
}

/// The number after `key` and any spaces (`Failed:     0` → 0).
fn spaced_after(text: &str, key: &str) -> Option<u64> {
    let (_, tail) = text.split_once(key)?;
    let digits: String = tail
        .trim_start()
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    digits.parse().ok()
}

/// The number right before `word` in `text` (`3 passed` → 3 for ` passed`).
fn number_before(text: &str, word: &str) -> Option<u64> {
    let (head, _) = text.split_once(word)?;
    let digits: String = head
        .chars()
        .rev()
        .take_while(|c| c.is_ascii_digit())
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    digits.parse().ok()
}

/// The number right after `key` (`failures=2` → 2 for `failures=`).
fn number_after(text: &str, key: &str) -> Option<u64> {
    let (_, tail) = text.split_once(key)?;
    let digits: String = tail.chars().take_while(|c| c.is_ascii_digit()).collect();
    digits.parse().ok()
}

fn first_number(text: &str) -> Option<u64> {
    let digits: String = text
        .chars()
        .skip_while(|c| !c.is_ascii_digit())
        .take_while(|c| c.is_ascii_digit())
        .collect();
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tally(stdout: &str, stderr: &str) -> Option<Count> {
        let mut t = Tally::default();
        // In uneven chunks, as a pipe gives them.
        for chunk in stdout.as_bytes().chunks(7) {
            t.push(0, chunk);
        }
        for chunk in stderr.as_bytes().chunks(5) {
            t.push(1, chunk);
        }
        t.finish()
    }

    fn count(ran: u64, failed: u64) -> Option<Count> {
        Some(Count {
            ran,
            failed,
            packages: false,
        })
    }

    #[test]
    fn each_runner_s_summary_is_read() {
        assert_eq!(
            tally("Test project /b\n1/3 Test #1: a ... Passed\n\n100% tests passed, 0 tests failed out of 3\n", ""),
            count(3, 0)
        );
        assert_eq!(
            tally("67% tests passed, 1 tests failed out of 3\n", ""),
            count(3, 1)
        );
        assert_eq!(tally("No tests were found!!!\n", ""), count(0, 0));
        assert_eq!(
            tally("[==========] 4 tests from 2 test suites ran. (1 ms total)\n[  PASSED  ] 3 tests.\n[  FAILED  ] 1 test, listed below:\n[  FAILED  ] Sum.Zero\n", ""),
            count(4, 1)
        );
        assert_eq!(
            tally("test result: ok. 3 passed; 0 failed; 0 ignored\n\ntest result: FAILED. 1 passed; 2 failed; 0 ignored\n", ""),
            count(6, 2)
        );
        assert_eq!(
            tally("", "..\n----\nRan 2 tests in 0.001s\n\nOK\n"),
            count(2, 0)
        );
        assert_eq!(
            tally("", "Ran 3 tests in 0.001s\n\nOK (skipped=1)\n"),
            count(2, 0)
        );
        assert_eq!(
            tally(
                "",
                "Ran 3 tests in 0.001s\n\nFAILED (failures=1, errors=1)\n"
            ),
            count(3, 2)
        );
        assert_eq!(tally("", "Ran 0 tests in 0.000s\n\nOK\n"), count(0, 0));
        assert_eq!(
            tally("===== 2 failed, 3 passed, 1 skipped in 0.12s =====\n", ""),
            count(5, 2)
        );
        assert_eq!(tally("3 passed in 0.01s\n", ""), count(3, 0));
        assert_eq!(tally("results: 4 passed, 0 failed\n", ""), count(4, 0));
        assert_eq!(tally("46 tests, 46 passed, 0 failed\n", ""), count(46, 0));
        assert_eq!(tally("5 tests, 4 passed, 1 failed\n", ""), count(5, 1));
        assert_eq!(tally("hello\nworld\n", ""), None);
    }

    #[test]
    fn every_stack_s_runner_is_read() {
        let packages = |ran, failed| {
            Some(Count {
                ran,
                failed,
                packages: true,
            })
        };
        for (out, want) in [
            // Maven Surefire: the classes' lines are left for the module's summary.
            ("[INFO] Tests run: 2, Failures: 0, Errors: 0, Skipped: 0, Time elapsed: 0.05 s - in a.AppTest\n[INFO] Results:\n[INFO] \n[INFO] Tests run: 2, Failures: 0, Errors: 0, Skipped: 0\n", count(2, 0)),
            ("[ERROR] Tests run: 3, Failures: 1, Errors: 1, Skipped: 1\n", count(2, 2)),
            ("[INFO] Tests run: 0, Failures: 0, Errors: 0, Skipped: 0\n", count(0, 0)),
            ("3 tests completed, 1 failed\n", count(3, 1)),
            ("Passed!  - Failed:     0, Passed:     3, Skipped:     0, Total:     3, Duration: 12 ms - a.dll (net8.0)\n", count(3, 0)),
            ("Failed!  - Failed:     1, Passed:     2, Skipped:     0, Total:     3\n", count(3, 1)),
            ("Test summary: total: 4, failed: 0, succeeded: 4, skipped: 0, duration: 0.7s\n", count(4, 0)),
            ("Tests:       1 failed, 2 passed, 3 total\n", count(3, 1)),
            ("Tests:       1 skipped, 2 passed, 3 total\n", count(2, 0)),
            (" Test Files  1 passed (1)\n      Tests  3 passed (3)\n", count(3, 0)),
            ("\x1b[2m      Tests \x1b[22m \x1b[1m\x1b[31m1 failed\x1b[39m\x1b[22m\x1b[2m | \x1b[22m\x1b[1m\x1b[32m2 passed\x1b[39m\x1b[22m\x1b[90m (3)\x1b[39m\n", count(3, 1)),
            ("     Summary [   0.010s] 5 tests run: 4 passed, 1 failed, 0 skipped\n", count(5, 1)),
            ("TAP version 13\n# tests 3\n# suites 0\n# pass 3\n# fail 0\n", count(3, 0)),
            ("ℹ tests 2\nℹ pass 1\nℹ fail 1\n", count(2, 1)),
            ("# tests 0\n# pass 0\n# fail 0\n", count(0, 0)),
            ("  3 passing (5ms)\n  1 failing\n", count(4, 1)),
            ("  0 passing (1ms)\n", count(0, 0)),
            (" 3 pass\n 0 fail\nRan 3 tests across 1 files. [9.00ms]\n", count(3, 0)),
            ("=== RUN   TestA\n--- PASS: TestA (0.00s)\n=== RUN   TestB\n    --- PASS: TestB/sub (0.00s)\n--- FAIL: TestB (0.00s)\nFAIL\nFAIL\tex.com/m\t0.002s\n", count(2, 1)),
            ("{\"Action\":\"pass\",\"Package\":\"m\",\"Test\":\"TestA\"}\n{\"Action\":\"pass\",\"Package\":\"m\",\"Test\":\"TestA/x\"}\n{\"Action\":\"pass\",\"Package\":\"m\"}\n", count(1, 0)),
            ("ok  \tex.com/m\t0.002s\nok  \tex.com/m/b\t(cached)\n?   \tex.com/m/c\t[no test files]\n", packages(2, 0)),
            ("ok  \tex.com/m\t0.002s [no tests to run]\n", packages(0, 0)),
        ] {
            assert_eq!(tally(out, ""), want, "{out}");
        }
    }

    #[test]
    fn c_and_cpp_frameworks_are_read() {
        for (out, want) in [
            // Unity, Check, Catch2, doctest, Criterion, greatest, acutest, CUnit.
            ("a.c:10:test_a:PASS\n-----------------------\n3 Tests 1 Failures 0 Ignored\nFAIL\n", count(3, 1)),
            ("5 Tests 0 Failures 1 Ignored\nOK\n", count(4, 0)),
            ("Running suite(s): Money\n100%: Checks: 5, Failures: 0, Errors: 0\n", count(5, 0)),
            ("80%: Checks: 5, Failures: 1, Errors: 0\n", count(5, 1)),
            ("All tests passed (12 assertions in 3 test cases)\n", count(3, 0)),
            ("test cases: 3 | 2 passed | 1 failed\nassertions: 9 | 8 passed | 1 failed\n", count(3, 1)),
            ("[doctest] test cases: 4 | 3 passed | 0 failed | 1 skipped\n[doctest] assertions: 7 | 7 passed | 0 failed |\n", count(3, 0)),
            ("[====] Synthesis: Tested: 3 | Passing: 2 | Failing: 1 | Crashing: 0 \n", count(3, 1)),
            ("Total: 3 tests (0 ticks, 0.000 sec), 5 assertions\nPass: 3, fail: 0, skip: 0.\n", count(3, 0)),
            ("Summary:\n  Count of all unit tests:     5\n  Count of run unit tests:     5\n  Count of failed unit tests:  1\n", count(5, 1)),
            ("Run Summary:    Type  Total    Ran Passed Failed Inactive\n              suites      1      1    n/a      0        0\n               tests      6      6      5      1        0\n", count(6, 1)),
            // cmocka, Boost.Test, minctest, prove, a bare TAP stream.
            ("[==========] 3 test(s) run.\n[  PASSED  ] 3 test(s).\n", count(3, 0)),
            ("Running 5 test cases...\n\n*** No errors detected\n", count(5, 0)),
            ("Running 5 test cases...\n*** 2 failures are detected in the test module \"m\"\n", count(5, 2)),
            ("ALL TESTS PASSED (40/40)\n", count(40, 0)),
            ("SOME TESTS FAILED (38/40)\n", count(40, 2)),
            ("t/a.t .. ok\nAll tests successful.\nFiles=2, Tests=14,  0 wallclock secs\nResult: PASS\n", count(14, 0)),
            ("t/a.t .. Failed 1/5 subtests\nFailed 1/5 subtests\nFiles=1, Tests=5,  0 wallclock secs\n", count(5, 1)),
            ("1..4\nok 1 - a\nnot ok 2 - b\nok 3 # SKIP no net\nnot ok 4 - c # TODO later\n", count(2, 1)),
            // A plan not met, a bail-out, a `#` in a failing test's name.
            ("1..5\nok 1\nok 2\n", count(5, 3)),
            ("1..3\nok 1\nBail out! db down\n", count(3, 2)),
            ("1..1\nBail out! no db\n", count(1, 1)),
            ("1..2\nok 1\nnot ok 2 - parses \\# tokens\n", count(2, 1)),
            // The plan may come last.
            ("ok 1\nok 2\n1..2\n", count(2, 0)),
            // A project's own runner, in either order, one line after the other.
            ("Testing failing allocations: OK\nTests failed: 0\nTests passed: 349\n", count(349, 0)),
            ("Tests passed: 7\nTests failed: 2\n", count(9, 2)),
            // Lines that only look like summaries.
            ("1 - Create a string: PASSED\nok 1 - no plan before\nPassed: 3\n", None),
            ("Passed: 7\nFailed: 0\n", None),
            ("Tests passed: 5\ndownloading fixtures\nTests failed: 0\n", None),
            ("Succeeded: 12\nFail: 0\n", None),
        ] {
            assert_eq!(tally(out, ""), want, "{out}");
        }
    }

    #[test]
    fn the_outermost_runner_counts_once() {
        // CTest running a GoogleTest binary verbosely: CTest's count stands.
        let out = "[==========] 5 tests from 1 test suite ran.\n[  PASSED  ] 5 tests.\n100% tests passed, 0 tests failed out of 1\n";
        assert_eq!(tally(out, ""), count(1, 0));
    }

    #[test]
    fn counts_that_overflow_saturate() {
        let c = tally(
            "test result: ok. 18446744073709551615 passed; 1 failed; 0 ignored\n",
            "",
        )
        .unwrap();
        assert_eq!((c.ran, c.failed), (u64::MAX, 1));
    }

    #[test]
    fn long_lines_stay_bounded() {
        let mut t = Tally::default();
        t.push(0, &vec![b'x'; 1 << 20]);
        t.push(0, b"\n3 passed in 0.1s\n");
        assert_eq!(t.finish(), count(3, 0));
    }
}
