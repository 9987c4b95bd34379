//! The JUnit XML reports a JVM build writes: Maven's Surefire and Failsafe
//! (`target/surefire-reports/TEST-*.xml`, `target/failsafe-reports/`) and Gradle's
//! (`build/test-results/<task>/TEST-*.xml`), in each module. Where a run's output
//! shows no count (`mvn -q test`; Gradle, which says nothing when every test passed),
//! the reports the run wrote are its count: those that were not there before it
//! started, or were there and changed, read beneath the project following no link,
//! bounded in number and size. A report's time alone does not tell: a checkout or a
//! copy writes an old report with a new time, within the same second as the run.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use super::Count;
use crate::profiles::Activity;

/// Directories walked at most, and their depth; reports read at most, and their size.
const MOST_DIRS: usize = 20_000;
const MOST_DEPTH: usize = 8;
const MOST_REPORTS: usize = 2_000;
const REPORT_BYTES: u64 = 16 << 20;

/// Whether `command` runs a JVM build's tests (Maven's or Gradle's), whose reports
/// are then read.
pub fn runs_jvm_tests(command: &str) -> bool {
    use crate::profiles::Profile as _;
    super::chain::read(command, true).steps.iter().any(|s| {
        crate::profiles::Jvm
            .classify(&crate::profiles::words::tool(&s.argv))
            .contains(&Activity::Test)
    })
}

/// A report file as it was: its inode, size and modification time.
type Stamp = (u64, u64, i64, i64);

/// The reports under a project before a run, to tell which the run wrote.
#[derive(Debug, Default)]
pub struct Before(HashMap<PathBuf, Stamp>);

impl Before {
    /// The reports under `root` now.
    pub fn take(root: &Path) -> Before {
        let mut reports = Vec::new();
        walk(root, 0, &mut 0, &mut reports);
        Before(reports.into_iter().collect())
    }
}

/// The tests the JUnit XML reports under `root` that are not as they were `before`
/// ran and failed; `None` when the run wrote none.
pub fn written_since(root: &Path, before: &Before) -> Option<Count> {
    let mut reports = Vec::new();
    walk(root, 0, &mut 0, &mut reports);
    let mut count: Option<Count> = None;
    for (path, stamp) in reports {
        if before.0.get(&path) == Some(&stamp) {
            continue;
        }
        let Some(xml) = crate::opened::read_small(&path, root, REPORT_BYTES) else {
            continue;
        };
        let Ok((tests, failures, skipped, _)) = crate::profiles::cpp::tools::read_report(&xml)
        else {
            continue;
        };
        let c = count.get_or_insert_with(Count::default);
        c.ran = c.ran.saturating_add(tests.saturating_sub(skipped));
        c.failed = c.failed.saturating_add(failures);
    }
    count
}

fn walk(dir: &Path, depth: usize, dirs: &mut usize, out: &mut Vec<(PathBuf, Stamp)>) {
    if depth > MOST_DEPTH || *dirs >= MOST_DIRS || out.len() >= MOST_REPORTS {
        return;
    }
    *dirs += 1;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let holds_reports = dir
        .file_name()
        .is_some_and(|n| n == "surefire-reports" || n == "failsafe-reports")
        || dir
            .parent()
            .and_then(Path::file_name)
            .is_some_and(|n| n == "test-results");
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        // Links are not followed (`file_type` does not follow them).
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            if name.starts_with('.') || name == "node_modules" {
                continue;
            }
            walk(&entry.path(), depth + 1, dirs, out);
        } else if kind.is_file()
            && holds_reports
            && name.starts_with("TEST-")
            && name.ends_with(".xml")
        {
            let Ok(m) = entry.metadata() else { continue };
            out.push((entry.path(), (m.ino(), m.size(), m.mtime(), m.mtime_nsec())));
            if out.len() >= MOST_REPORTS {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn report(tests: u32, failing: u32) -> String {
        let mut cases = String::new();
        for i in 0..tests {
            if i < failing {
                cases.push_str(&format!("<testcase name=\"t{i}\" classname=\"a.B\"><failure message=\"expected 5\"/></testcase>"));
            } else {
                cases.push_str(&format!("<testcase name=\"t{i}\" classname=\"a.B\"/>"));
            }
        }
        format!(
            "<?xml version=\"1.0\"?><testsuite name=\"a.B\" tests=\"{tests}\">{cases}</testsuite>"
        )
    }

    #[test]
    fn the_reports_a_run_wrote_are_its_count() {
        assert!(runs_jvm_tests("cd api && mvn -q test 2>&1 | tail -5"));
        assert!(runs_jvm_tests("./gradlew test --console=plain"));
        assert!(!runs_jvm_tests("mvn -q compile"));
        assert!(!runs_jvm_tests("pytest"));

        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let put = |rel: &str, text: &str| {
            let p = root.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        };
        // A report from an earlier run does not count, however new its time (a
        // checkout wrote it just now).
        put("old/target/surefire-reports/TEST-a.B.xml", &report(9, 9));
        let since = Before::take(&root);
        assert_eq!(written_since(&root, &since), None);
        put("core/target/surefire-reports/TEST-a.B.xml", &report(3, 1));
        put("app/build/test-results/test/TEST-a.C.xml", &report(2, 0));
        // Not a report: another name, another place.
        put("core/target/surefire-reports/a.B.txt", "Tests run: 7");
        put("core/target/other/TEST-x.xml", &report(5, 0));
        let c = written_since(&root, &since).unwrap();
        assert_eq!((c.ran, c.failed), (5, 1));
        // A report the run wrote again counts.
        std::fs::remove_file(root.join("old/target/surefire-reports/TEST-a.B.xml")).unwrap();
        put("old/target/surefire-reports/TEST-a.B.xml", &report(1, 0));
        let c = written_since(&root, &since).unwrap();
        assert_eq!((c.ran, c.failed), (6, 1));
        std::fs::remove_file(root.join("old/target/surefire-reports/TEST-a.B.xml")).unwrap();
        // A link to reports elsewhere is not followed.
        let elsewhere = tempfile::tempdir().unwrap();
        let far = elsewhere.path().join("target/surefire-reports");
        std::fs::create_dir_all(&far).unwrap();
        std::fs::write(far.join("TEST-z.xml"), report(4, 0)).unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), root.join("linked")).unwrap();
        let c = written_since(&root, &since).unwrap();
        assert_eq!((c.ran, c.failed), (5, 1));
    }
}
