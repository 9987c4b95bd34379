//! How many tests a command ran and how many failed, read from its output as it
//! streams (both stdout and stderr, line by line, in bounded memory): CTest's
//! summary, GoogleTest's, pytest's, unittest's, cargo's, and the plain `N passed,
//! N failed` line. When a run shows several formats (CTest running GoogleTest
//! binaries verbosely), the outermost runner's count is the one taken.

use crate::profiles::lines::Lines;

/// Longest line kept for matching; a longer one is matched on its start.
const LINE_CAP: usize = 4096;

/// Counts, per format.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Count {
    pub ran: u64,
    pub failed: u64,
}

/// The formats, outermost first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Format {
    Ctest,
    Gtest,
    Cargo,
    Pytest,
    Unittest,
    Plain,
}

const FORMATS: usize = 6;

/// The test summaries seen in a command's output so far.
pub struct Tally {
    streams: [Lines; 2],
    counts: [Option<Count>; FORMATS],
    /// unittest prints `Ran N tests` and then its verdict line.
    unittest_ran: Option<u64>,
}

impl Default for Tally {
    fn default() -> Self {
        Self {
            streams: [Lines::new(LINE_CAP), Lines::new(LINE_CAP)],
            counts: [None; FORMATS],
            unittest_ran: None,
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
        self.counts.iter().flatten().next().copied()
    }

    fn add(&mut self, format: Format, ran: u64, failed: u64) {
        let c = self.counts[format as usize].get_or_insert_with(Count::default);
        c.ran = c.ran.saturating_add(ran);
        c.failed = c.failed.saturating_add(failed);
    }

    fn line(&mut self, line: &str) {
        let t = line.trim();
        if t.is_empty() {
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
            if rest.contains(" ran.") {
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
            if rest.contains(" test") {
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
        // The plain line: `N passed, N failed` (`, N skipped` may follow; one word
        // with a colon may stand before it).
        let plain = t
            .split_once(": ")
            .map_or(t, |(w, r)| if w.contains(' ') { t } else { r });
        if let Some((p, rest)) = plain.split_once(" passed, ") {
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
        Some(Count { ran, failed })
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
        assert_eq!(tally("hello\nworld\n", ""), None);
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
