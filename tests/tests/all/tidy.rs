//! The house rules, checked on the source tree (in the spirit of rust-analyzer's
//! `tidy.rs`): every source file says what it is in a `//!` module doc; no non-test
//! source file grows past 1,000 lines (an offender may be listed while it is split,
//! and may only shrink); every decision or seed section the code cites is in `docs/decisions.md`.

use std::path::{Path, PathBuf};

/// Files over the limit today, with their size then: they may not grow, and leave the
/// list once split.
const TOO_LONG: &[(&str, usize)] = &[];

const LIMIT: usize = 1_000;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The workspace's Rust files, relative to its root.
fn sources() -> Vec<(String, String)> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        for e in rd.flatten() {
            let p = e.path();
            let name = e.file_name();
            if name == "target" || name.to_string_lossy().starts_with('.') {
                continue;
            }
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    let root = workspace();
    let mut files = Vec::new();
    for krate in [
        "air-proto",
        "airsd",
        "air-cli",
        "air-tui",
        "worker",
        "tests",
    ] {
        walk(&root.join(krate), &mut files);
    }
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let rel = p.strip_prefix(&root).unwrap().display().to_string();
            (rel, std::fs::read_to_string(&p).unwrap())
        })
        .collect()
}

/// Whether a file is test code (a test binary, a benchmark, a tests module).
fn is_test(rel: &str) -> bool {
    rel.starts_with("tests/tests/")
        || rel.starts_with("tests/benches/")
        || rel.contains("/tests/")
        || rel.ends_with("/tests.rs")
        || rel.contains("/escapes/")
}

#[test]
fn every_source_file_has_a_module_doc() {
    let missing: Vec<String> = sources()
        .into_iter()
        .filter(|(_, text)| {
            let first = text
                .lines()
                .map(str::trim)
                .find(|l| !l.is_empty() && !l.starts_with("#!["));
            !first.is_some_and(|l| l.starts_with("//!"))
        })
        .map(|(rel, _)| rel)
        .collect();
    assert!(
        missing.is_empty(),
        "these files do not begin with a `//!` doc saying what they own:\n{}",
        missing.join("\n")
    );
}

#[test]
fn no_source_file_grows_past_a_thousand_lines() {
    let mut problems = Vec::new();
    for (rel, text) in sources().into_iter().filter(|(r, _)| !is_test(r)) {
        // Lines of the file before its tests module.
        let lines = text
            .lines()
            .take_while(|l| l.trim() != "#[cfg(test)]")
            .count();
        match TOO_LONG.iter().find(|(f, _)| *f == rel) {
            Some((_, was)) if lines > *was => problems.push(format!(
                "{rel}: {lines} lines, more than its {was} when it was listed as too long: split it instead"
            )),
            Some((_, _)) if lines <= LIMIT => problems.push(format!(
                "{rel}: {lines} lines, within the limit now: take it off TOO_LONG"
            )),
            Some(_) => {}
            None if lines > LIMIT => problems.push(format!(
                "{rel}: {lines} lines (limit {LIMIT}): split it by responsibility"
            )),
            None => {}
        }
    }
    for (rel, _) in TOO_LONG {
        if !workspace().join(rel).exists() {
            problems.push(format!("{rel} is gone: take it off TOO_LONG"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Citations in a text: `D-0xx`, `seed 00N §X.Y`, `baseline §X`.
fn citations(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let bytes = text.as_bytes();
    for (i, _) in text.match_indices("D-0") {
        let id = &text[i..(i + 5).min(text.len())];
        if id.len() == 5 && id[2..].bytes().all(|b| b.is_ascii_digit()) {
            let after = bytes.get(i + 5);
            if !after.is_some_and(u8::is_ascii_digit) {
                out.push(id.to_string());
            }
        }
    }
    for prefix in ["seed 00", "baseline §"] {
        for (i, _) in text.match_indices(prefix) {
            let rest = &text[i..];
            let Some(s) = rest.find('§') else { continue };
            if s > 12 {
                continue;
            }
            let num: String = rest[s + '§'.len_utf8()..]
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.')
                .collect();
            let num = num.trim_end_matches('.');
            if !num.is_empty() {
                out.push(format!("{}§{num}", &rest[..s]));
            }
        }
    }
    out
}

#[test]
fn every_decision_the_code_cites_is_on_record() {
    let record = std::fs::read_to_string(workspace().join("docs/decisions.md")).unwrap();
    let listed = citations(&record);
    let mut missing = Vec::new();
    for (rel, text) in sources() {
        for c in citations(&text) {
            if !listed.contains(&c) {
                missing.push(format!("{rel}: cites {c}"));
            }
        }
    }
    missing.sort();
    missing.dedup();
    assert!(
        missing.is_empty(),
        "docs/decisions.md does not list what the code cites:\n{}",
        missing.join("\n")
    );
    assert!(citations("see D-046 and seed 001 §8.2. and baseline §12").len() == 3);
    // Where each decision lives must exist.
    let gone: Vec<String> = record
        .lines()
        .filter(|l| l.starts_with("| "))
        .filter_map(|l| l.rsplit('|').nth(1))
        .flat_map(|place| place.split('`').skip(1).step_by(2))
        .filter(|path| path.contains('/'))
        .flat_map(expand)
        .filter(|path| !workspace().join(path).exists())
        .collect();
    assert!(
        gone.is_empty(),
        "docs/decisions.md places decisions in paths that do not exist: {gone:?}"
    );
}

/// A path with one `{a,b}` group, as the paths it names.
fn expand(path: &str) -> Vec<String> {
    match (path.find('{'), path.find('}')) {
        (Some(open), Some(close)) if open < close => path[open + 1..close]
            .split(',')
            .map(|alt| format!("{}{alt}{}", &path[..open], &path[close + 1..]))
            .collect(),
        _ => vec![path.to_string()],
    }
}
