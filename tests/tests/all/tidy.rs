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
        // The whole file: a module's tests live beside it (`x/tests.rs`).
        let lines = text.lines().count();
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

#[test]
fn air_prints_to_stdout_only_through_its_writer() {
    // `println!` panics when the reader of a pipe went away (`air events | head -1`);
    // air-cli's own writer ends with success instead.
    let mut offenders = Vec::new();
    for (rel, text) in sources() {
        if !rel.starts_with("air-cli/src/") || rel.ends_with("/stdout.rs") {
            continue;
        }
        for (n, line) in text.lines().enumerate() {
            let code = line.trim_start();
            if code.starts_with("//") {
                continue;
            }
            let bare = |m: &str| {
                code.match_indices(m)
                    .any(|(i, _)| !code[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_'))
            };
            if bare("println!(") || bare("print!(") || code.contains("io::stdout()") {
                offenders.push(format!("{rel}:{}: {code}", n + 1));
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "air-cli prints through `outln!`/`out!` (crate::stdout), not these:\n{}",
        offenders.join("\n")
    );
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

/// The module path of a library source file (`air-proto/src/plan/graph.rs` →
/// `air-proto`, `[plan, graph]`); `None` for binaries, tests and benches.
fn module_of(rel: &str) -> Option<(String, Vec<String>)> {
    let (krate, rest) = rel.split_once("/src/")?;
    if is_test(rel) || rest == "main.rs" || rest.starts_with("bin/") {
        return None;
    }
    let rest = rest.strip_suffix(".rs")?;
    let mut parts: Vec<String> = rest.split('/').map(str::to_string).collect();
    if parts.last().is_some_and(|l| l == "mod" || l == "lib") {
        parts.pop();
    }
    Some((krate.to_string(), parts))
}

/// The crate paths a file names: every `use` tree (expanded) and every inline
/// `crate::…` path, relative ones (`super::`, `self::`) resolved, as segments.
fn paths_named(module: &[String], text: &str) -> Vec<Vec<String>> {
    // Only the code before a tests module, without comments.
    let code: String = text
        .split("\n#[cfg(test)]")
        .next()
        .unwrap_or("")
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    // `use` statements begin a line (after any visibility) and end at their `;`.
    let mut trees = Vec::new();
    let mut offset = 0;
    for line in code.split_inclusive('\n') {
        let t = line.trim_start();
        let t = ["pub(crate) ", "pub(super) ", "pub "]
            .iter()
            .find_map(|v| t.strip_prefix(v))
            .unwrap_or(t);
        if let Some(body) = t.strip_prefix("use ") {
            let start = offset + (line.len() - body.len());
            if let Some(end) = code[start..].find(';') {
                trees.push(
                    code[start..start + end]
                        .split_whitespace()
                        .collect::<String>(),
                );
            }
        }
        offset += line.len();
    }
    let mut out = Vec::new();
    for tree in trees {
        for path in expand_tree(&tree) {
            out.extend(resolve(module, &path));
        }
    }
    let inline = ["crate::", "super::"]
        .iter()
        .flat_map(|p| code.match_indices(p))
        .map(|(i, _)| i);
    for i in inline {
        if code[..i].ends_with(|c: char| c.is_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        let path: String = code[i..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
            .collect();
        out.extend(resolve(module, &path));
    }
    out
}

/// `a::{b, c::{d}}` → `a::b`, `a::c::d`.
fn expand_tree(tree: &str) -> Vec<String> {
    let Some(open) = tree.find('{') else {
        return vec![tree.split(" as ").next().unwrap_or(tree).to_string()];
    };
    let prefix = &tree[..open];
    let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[start..]);
    parts
        .into_iter()
        .filter(|p| !p.is_empty())
        .flat_map(|p| {
            let p = p
                .strip_prefix("self")
                .map_or(p.to_string(), |r| r.to_string());
            expand_tree(&p)
                .into_iter()
                .map(|e| format!("{prefix}{e}"))
                .collect::<Vec<_>>()
        })
        .collect()
}

/// A path's segments from the crate root, when it is a path of this crate.
fn resolve(module: &[String], path: &str) -> Option<Vec<String>> {
    let mut segs: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
    let mut base: Vec<String> = match segs.first()? {
        &"crate" => Vec::new(),
        &"super" | &"self" => module.to_vec(),
        _ => return None,
    };
    if segs[0] == "crate" {
        segs.remove(0);
    }
    while let Some(s) = segs.first() {
        match *s {
            "super" => {
                base.pop();
            }
            "self" => {}
            _ => break,
        }
        segs.remove(0);
    }
    base.extend(segs.iter().map(|s| s.to_string()));
    Some(base)
}

/// Imports between sibling modules (`a::x` naming `a::y`), which must form no cycle:
/// a module and its parent may name each other (`use super::*`, `pub use child::…`).
fn sibling_edges(
) -> std::collections::BTreeMap<String, std::collections::BTreeSet<(String, String)>> {
    let sources = sources();
    let known: std::collections::BTreeSet<(String, Vec<String>)> = sources
        .iter()
        .filter_map(|(rel, _)| module_of(rel))
        .collect();
    let mut edges: std::collections::BTreeMap<
        String,
        std::collections::BTreeSet<(String, String)>,
    > = Default::default();
    for (rel, text) in &sources {
        let Some((krate, module)) = module_of(rel) else {
            continue;
        };
        for path in paths_named(&module, text) {
            // The module the path lands in: its longest prefix that is a module.
            let target = (0..=path.len())
                .rev()
                .map(|n| path[..n].to_vec())
                .find(|p| known.contains(&(krate.clone(), p.clone())))
                .unwrap_or_default();
            let common = module
                .iter()
                .zip(&target)
                .take_while(|(a, b)| a == b)
                .count();
            if common < module.len() && common < target.len() {
                let parent = format!("{krate}::{}", module[..common].join("::"));
                edges
                    .entry(parent)
                    .or_default()
                    .insert((module[common].clone(), target[common].clone()));
            }
        }
    }
    edges
}

#[test]
fn no_import_cycle_among_sibling_modules() {
    let mut cycles = Vec::new();
    for (parent, edges) in sibling_edges() {
        let nodes: std::collections::BTreeSet<&String> =
            edges.iter().flat_map(|(a, b)| [a, b]).collect();
        // A cycle exists through `a` when `a` is reachable from one of its targets.
        for a in &nodes {
            let mut stack: Vec<(&String, Vec<&String>)> = edges
                .iter()
                .filter(|(x, _)| x == *a)
                .map(|(_, y)| (y, vec![*a, y]))
                .collect();
            let mut seen = std::collections::BTreeSet::new();
            while let Some((n, path)) = stack.pop() {
                if n == *a {
                    let shown: Vec<&str> = path.iter().map(|s| s.as_str()).collect();
                    cycles.push(format!("{parent}: {}", shown.join(" → ")));
                    break;
                }
                if !seen.insert(n) {
                    continue;
                }
                for (_, y) in edges.iter().filter(|(x, _)| x == n) {
                    let mut p = path.clone();
                    p.push(y);
                    stack.push((y, p));
                }
            }
        }
    }
    cycles.sort();
    cycles.dedup();
    assert!(
        cycles.is_empty(),
        "import cycles between sibling modules (each shown from one of its modules):\n{}",
        cycles.join("\n")
    );
}

/// The cycle check reads what it should: use trees, relative paths, inline paths.
#[test]
fn the_import_reader_resolves_paths() {
    let m = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    assert_eq!(
        expand_tree("crate::{a::X,b::{c,d::Y as Z},self}"),
        ["crate::a::X", "crate::b::c", "crate::b::d::Y", "crate::"]
    );
    assert_eq!(
        resolve(&m(&["tools", "fs"]), "super::scope::Scope"),
        Some(m(&["tools", "scope", "Scope"]))
    );
    assert_eq!(resolve(&m(&["a"]), "std::fs"), None);
    let named = paths_named(
        &m(&["tools", "fs"]),
        "//! crate::nope\nuse super::error::ToolError;\nfn f(s: &super::scope::Scope) { crate::x::y(); }\n#[cfg(test)]\nmod tests { use crate::z; }\n",
    );
    assert!(
        named.contains(&m(&["tools", "error", "ToolError"])),
        "{named:?}"
    );
    assert!(
        named.contains(&m(&["tools", "scope", "Scope"])),
        "{named:?}"
    );
    assert!(named.contains(&m(&["x", "y"])), "{named:?}");
    assert!(
        !named.iter().any(|p| p[0] == "nope" || p[0] == "z"),
        "{named:?}"
    );
}

/// What the model reads that a row of the refusals' table names as where it was told:
/// one tool's description and schema (`fs_read`), one role's prompt as airsd sends it
/// (`the reviewer's prompt`: that role's and no other's), or the texts a task's or a
/// turn's message is made from.
fn told_in(place: &str) -> Result<String, String> {
    use air_proto::event::AgentType;
    let mut out = String::new();
    let tool = |name: &str| -> Option<String> {
        let mut defs: Vec<(String, String, String)> = airsd::tools::definitions()
            .into_iter()
            .map(|d| {
                (
                    airsd::tools::provider_name(&d.name),
                    d.description,
                    d.input_schema.to_string(),
                )
            })
            .collect();
        for phase in air_proto::planning::PlanningPhase::ALL {
            for d in air_proto::planning::designer_tools(*phase) {
                defs.push((d.name.clone(), d.description, d.input_schema.to_string()));
            }
        }
        for output in [
            worker::submit::Output::Task,
            worker::submit::Output::Review,
            worker::submit::Output::Milestone,
            worker::submit::Output::Debugging,
            worker::submit::Output::Consult,
        ] {
            let t = worker::submit::tool_for(output);
            defs.push((t.name.clone(), t.description, t.input_schema.to_string()));
        }
        defs.into_iter()
            .find(|(n, _, _)| n == name)
            .map(|(_, d, s)| format!("{d} {s}"))
    };
    let roles: &[(&str, &[AgentType])] = &[
        ("the reviewer's prompt", &[AgentType::Reviewer]),
        ("the main agent's prompt", &[AgentType::Main]),
        ("the debugger's prompt", &[AgentType::Debugger]),
        ("the executor's prompt", &[AgentType::Executor]),
    ];
    if let Some(t) = tool(place) {
        out.push_str(&t);
    } else if let Some((_, rs)) = roles.iter().find(|(p, _)| *p == place) {
        // Each role named must be told: the sentence in every one of their prompts.
        let texts: Vec<&str> = rs
            .iter()
            .map(|r| airsd::context::role_prompt(*r, false, false))
            .collect();
        return Ok(texts.join("\u{0}"));
    } else if place.starts_with("the executor's and the debugger's prompt") {
        return Ok([AgentType::Executor, AgentType::Debugger]
            .iter()
            .map(|r| airsd::context::role_prompt(*r, false, false))
            .collect::<Vec<_>>()
            .join("\u{0}"));
    } else if place == "the planning prompt" {
        out.push_str(
            &std::fs::read_to_string(workspace().join("resources/prompts/planning.md")).unwrap(),
        );
    } else if place.starts_with("the task's") || place.ends_with("turn's text") {
        for f in [
            "airsd/src/context.rs",
            "airsd/src/context/talk.rs",
            "airsd/src/planning.rs",
            "airsd/src/scheduler/shell/dispatch.rs",
        ] {
            out.push_str(&std::fs::read_to_string(workspace().join(f)).unwrap());
        }
    } else {
        return Err(format!("`{place}` names nothing the model reads"));
    }
    Ok(out)
}

/// `docs/tools.md`'s table of refusals holds: each refusal's text is in airsd's or the
/// worker's code, and the sentence that tells the model beforehand is in what the
/// model that meets it reads — the tool it calls, or its own role's prompt (a
/// sentence in another role's prompt tells it nothing), or its task's text.
#[test]
fn each_refusal_is_told_before_it_happens() {
    let squash = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let doc = std::fs::read_to_string(workspace().join("docs/tools.md")).unwrap();
    let section = doc
        .split("### What airsd refuses, and where the model was told")
        .nth(1)
        .expect("docs/tools.md has its table of refusals");
    let code: String = sources()
        .into_iter()
        .filter(|(rel, _)| {
            rel.starts_with("airsd/src")
                || rel.starts_with("worker/src")
                || rel == "air-proto/src/planning.rs"
                || rel == "air-proto/src/gate.rs"
        })
        .filter(|(rel, _)| !is_test(rel))
        .map(|(_, text)| text)
        .collect();
    let mut rows = 0;
    let mut problems = Vec::new();
    for line in section.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.trim_matches('|').split(" | ").map(str::trim).collect();
        let [refusal, place, sentence] = cells[..] else {
            problems.push(format!("a row without three cells: {line}"));
            continue;
        };
        let refusal = refusal.trim_matches('`');
        let sentence = squash(sentence.trim_matches('"'));
        if !code.contains(refusal) {
            problems.push(format!("no code answers `{refusal}`"));
        }
        match told_in(place) {
            // Each of the texts it names (one per role) says it.
            Ok(told) => {
                if !told.split('\u{0}').all(|t| squash(t).contains(&sentence)) {
                    problems.push(format!("{place} does not say \"{sentence}\""));
                }
            }
            Err(e) => problems.push(e),
        }
        rows += 1;
    }
    assert!(rows >= 20, "only {rows} rows in the table");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
