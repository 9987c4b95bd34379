//! `fs.glob` and `fs.grep`, on ripgrep's crates: `.gitignore` respected, hidden files
//! and `.git` skipped, binary files skipped, results capped with a note.

use std::path::Path;

use grep_regex::RegexMatcherBuilder;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use serde::{Deserialize, Serialize};

use super::error::ToolError;
use super::fs::FsContext;

/// Most files `fs.glob` lists, and most lines or files `fs.grep` returns, by default.
pub const DEFAULT_LIMIT: usize = 1_000;

#[derive(Clone, Debug, PartialEq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GlobInput {
    /// A glob, e.g. `src/**/*.rs`, matched against paths relative to `path`.
    pub pattern: String,
    /// The directory to search (default: the project root).
    #[serde(default)]
    pub path: Option<String>,
    /// Most paths to list (default 1,000).
    #[serde(default)]
    pub limit: Option<usize>,
}

#[derive(Clone, Debug, PartialEq, Deserialize, Serialize, schemars::JsonSchema)]
pub struct GlobOutput {
    /// Matching files, relative to the project root, newest first.
    pub files: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

fn walker(
    ctx: &FsContext<'_>,
    path: Option<&str>,
) -> Result<(std::path::PathBuf, ignore::WalkBuilder), ToolError> {
    let dir = match path {
        Some(p) => ctx.permit(p, super::permission::Access::Read)?.0,
        None => ctx.root.to_path_buf(),
    };
    if !dir.exists() {
        return Err(ToolError(format!(
            "{}: does not exist",
            path.unwrap_or(".")
        )));
    }
    if pseudo(&dir) {
        return Err(ToolError(format!(
            "{}: the kernel's {}, which the file tools do not search",
            path.unwrap_or("."),
            dir.display()
        )));
    }
    let mut walk = ignore::WalkBuilder::new(&dir);
    walk.hidden(true)
        .git_ignore(true)
        .git_exclude(true)
        .require_git(false)
        .filter_entry(|e| e.file_name() != ".git" && !pseudo(e.path()));
    Ok((dir, walk))
}

/// The kernel's pseudo-file systems and devices: never walked, never searched.
fn pseudo(path: &Path) -> bool {
    ["/proc", "/sys", "/dev"]
        .iter()
        .any(|p| path.starts_with(p))
}

fn walk(
    ctx: &FsContext<'_>,
    path: Option<&str>,
) -> Result<(std::path::PathBuf, ignore::Walk), ToolError> {
    let (dir, builder) = walker(ctx, path)?;
    Ok((dir, builder.build()))
}

fn relative(ctx: &FsContext<'_>, path: &Path) -> String {
    path.strip_prefix(ctx.root)
        .unwrap_or(path)
        .display()
        .to_string()
}

/// `fs.glob`.
pub fn glob(ctx: &FsContext<'_>, input: &GlobInput) -> Result<GlobOutput, ToolError> {
    let matcher = globset::GlobBuilder::new(&input.pattern)
        .literal_separator(true)
        .build()
        .map_err(|e| {
            ToolError(format!(
                "pattern: bad glob `{}`: {}",
                input.pattern,
                e.kind()
            ))
        })?
        .compile_matcher();
    let (dir, walk) = walk(ctx, input.path.as_deref())?;
    let limit = input.limit.unwrap_or(DEFAULT_LIMIT).max(1);
    let deadline = std::time::Instant::now() + super::fs::TOOL_TIME_LIMIT;
    // The newest `limit` matches, held in a heap whose top is the oldest kept: a
    // tree of a million files costs the memory of `limit` names.
    let mut found: std::collections::BinaryHeap<
        std::cmp::Reverse<(std::time::SystemTime, std::cmp::Reverse<String>)>,
    > = std::collections::BinaryHeap::new();
    let mut matched = 0usize;
    let mut stopped = false;
    for (i, entry) in walk.flatten().enumerate() {
        if i % 1024 == 0 && std::time::Instant::now() > deadline {
            stopped = true;
            break;
        }
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        let Ok(rel) = entry.path().strip_prefix(&dir) else {
            continue;
        };
        if matcher.is_match(rel) {
            let modified = entry
                .metadata()
                .ok()
                .and_then(|m| m.modified().ok())
                .unwrap_or(std::time::UNIX_EPOCH);
            matched += 1;
            found.push(std::cmp::Reverse((
                modified,
                std::cmp::Reverse(relative(ctx, entry.path())),
            )));
            if found.len() > limit {
                found.pop();
            }
        }
    }
    let mut found: Vec<(std::time::SystemTime, String)> = found
        .into_iter()
        .map(|std::cmp::Reverse((t, std::cmp::Reverse(f)))| (t, f))
        .collect();
    found.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let mut notes = Vec::new();
    if stopped {
        notes.push(format!(
            "the listing stopped after {} s; these are the newest of what was seen (narrow the pattern or the path)",
            super::fs::TOOL_TIME_LIMIT.as_secs()
        ));
    }
    if matched > limit {
        notes.push(format!(
            "{matched} files match; showing the {limit} newest (narrow the pattern or the path)"
        ));
    }
    if found.is_empty() {
        notes.push("no file matches".into());
    }
    Ok(GlobOutput {
        files: found.into_iter().map(|(_, f)| f).collect(),
        notes,
    })
}

#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
// `content`: matching lines (with context lines when asked) as `file:line:text`;
// `files_with_matches` (the default): the files that match; `count`: how many lines
// match in each file. Said once, in the `output_mode` field's description.
pub enum GrepMode {
    Content,
    #[default]
    FilesWithMatches,
    Count,
}

#[derive(Clone, Debug, PartialEq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GrepInput {
    /// A regular expression (Rust regex syntax, as ripgrep).
    pub pattern: String,
    /// The directory or file to search (default: the project root).
    #[serde(default)]
    pub path: Option<String>,
    /// Only files whose path matches this glob, e.g. `*.rs`.
    #[serde(default)]
    pub glob: Option<String>,
    /// `files_with_matches` (the default), `content` (`file:line:text`) or `count`.
    #[serde(default)]
    pub output_mode: GrepMode,
    /// Lines of context before and after each match (content mode).
    #[serde(default)]
    pub context: Option<usize>,
    /// Match regardless of case.
    #[serde(default)]
    pub case_insensitive: bool,
    /// Most lines (content) or files to return.
    #[serde(default)]
    pub head_limit: Option<usize>,
}

#[derive(Clone, Debug, PartialEq, Deserialize, Serialize, schemars::JsonSchema)]
pub struct GrepOutput {
    /// Content mode: `file:line:text` for matches, `file-line-text` for context.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lines: Vec<String>,
    /// Files-with-matches mode.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
    /// Count mode: (file, matching lines).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub counts: Vec<(String, u64)>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// Collects one file's matches and context lines, up to `keep` lines (the rest of
/// a file cannot change an answer of that size).
struct Collect<'a> {
    file: &'a str,
    lines: Vec<String>,
    matches: u64,
    keep: usize,
    /// Every match counts (count mode): the search goes on past `keep`.
    count_all: bool,
    deadline: std::time::Instant,
}

/// A line as shown: at most [`super::fs::MAX_LINE_CHARS`] characters.
fn shown(bytes: &[u8]) -> String {
    let cut = &bytes[..bytes.len().min(super::fs::MAX_LINE_CHARS * 4)];
    let text = String::from_utf8_lossy(cut);
    let mut out: String = text.chars().take(super::fs::MAX_LINE_CHARS).collect();
    if out.len() < bytes.len() && out.len() < text.len() || cut.len() < bytes.len() {
        out = out.trim_end_matches(['\n', '\r']).to_string();
        out.push_str(" … [line truncated]");
    }
    out
}

impl Collect<'_> {
    fn more(&self) -> bool {
        (self.count_all || self.lines.len() < self.keep)
            && (!self.matches.is_multiple_of(1024) || std::time::Instant::now() < self.deadline)
    }
}

impl Sink for Collect<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, m: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        self.matches += 1;
        if self.lines.len() >= self.keep {
            return Ok(self.more());
        }
        let text = shown(m.bytes());
        self.lines.push(format!(
            "{}:{}:{}",
            self.file,
            m.line_number().unwrap_or(0),
            text.trim_end_matches(['\n', '\r'])
        ));
        Ok(self.more())
    }

    fn context(&mut self, _: &Searcher, c: &SinkContext<'_>) -> Result<bool, Self::Error> {
        let text = shown(c.bytes());
        self.lines.push(format!(
            "{}-{}-{}",
            self.file,
            c.line_number().unwrap_or(0),
            text.trim_end_matches(['\n', '\r'])
        ));
        Ok(self.more())
    }

    fn context_break(&mut self, _: &Searcher) -> Result<bool, Self::Error> {
        self.lines.push("--".into());
        Ok(true)
    }
}

/// `fs.grep`.
pub fn grep(ctx: &FsContext<'_>, input: &GrepInput) -> Result<GrepOutput, ToolError> {
    let matcher = RegexMatcherBuilder::new()
        .case_insensitive(input.case_insensitive)
        .build(&input.pattern)
        .map_err(|e| ToolError(format!("pattern: not a valid regex: {e}")))?;
    let filter = input
        .glob
        .as_deref()
        .map(|g| {
            globset::Glob::new(g)
                .map(|g| g.compile_matcher())
                .map_err(|e| ToolError(format!("glob: bad glob `{g}`: {}", e.kind())))
        })
        .transpose()?;
    let context = if input.output_mode == GrepMode::Content {
        input.context.unwrap_or(0)
    } else {
        0
    };
    let searcher = SearcherBuilder::new()
        .line_number(true)
        .binary_detection(BinaryDetection::quit(0))
        // One enormous line cannot take the daemon's memory: such a file is skipped.
        .heap_limit(Some(16 * 1024 * 1024))
        .before_context(context)
        .after_context(context)
        .build();
    let limit = input.head_limit.unwrap_or(DEFAULT_LIMIT).max(1);
    let (_, mut builder) = walker(ctx, input.path.as_deref())?;
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get().min(8));
    // Every core searches (as rg does); results are put in path order afterwards, so
    // the answer does not depend on which thread came first.
    let found: std::sync::Mutex<Vec<(String, Vec<String>, u64)>> = Default::default();
    let items = std::sync::atomic::AtomicUsize::new(0);
    let deadline = std::time::Instant::now() + super::fs::TOOL_TIME_LIMIT;
    let stopped = std::sync::atomic::AtomicBool::new(false);
    builder.threads(threads).build_parallel().run(|| {
        let mut searcher = searcher.clone();
        let (found, items, filter, matcher, stopped) =
            (&found, &items, &filter, &matcher, &stopped);
        Box::new(move |entry| {
            use ignore::WalkState;
            let Ok(entry) = entry else {
                return WalkState::Continue;
            };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return WalkState::Continue;
            }
            let file = relative(ctx, entry.path());
            // Credential stores are never searched: their content needs a person's yes.
            if ctx.scope.check_read(&file).is_err()
                || ctx.perm.engine.is_credential_path(entry.path())
            {
                return WalkState::Continue;
            }
            if let Some(f) = filter {
                let name = entry.path().file_name().map(Path::new);
                if !f.is_match(&file) && !name.is_some_and(|n| f.is_match(n)) {
                    return WalkState::Continue;
                }
            }
            if std::time::Instant::now() > deadline {
                stopped.store(true, std::sync::atomic::Ordering::Relaxed);
                return WalkState::Quit;
            }
            let mut sink = Collect {
                file: &file,
                lines: Vec::new(),
                matches: 0,
                keep: if input.output_mode == GrepMode::Content {
                    limit
                } else {
                    0
                },
                count_all: input.output_mode == GrepMode::Count,
                deadline,
            };
            // Opened following no link in any component (a directory swapped for a
            // link while the walk went on is not followed), and only a regular file.
            let Ok(opened) = super::opened::open_read(entry.path(), ctx.root) else {
                return WalkState::Continue;
            };
            if !opened.metadata().is_ok_and(|m| m.is_file()) {
                return WalkState::Continue;
            }
            if searcher
                .search_file(matcher, &opened, &mut sink)
                .is_err()
                || sink.matches == 0
                // A hard link to a credential file: known only by its inode, checked
                // on what was opened, for the few files that match.
                || opened.metadata().is_ok_and(|m| ctx.perm.engine.is_credential_inode(&m))
            {
                return WalkState::Continue;
            }
            // A line holding a secret is not shown (fs_read asks for the file).
            let lines: Vec<String> = sink
                .lines
                .into_iter()
                .map(|l| match super::secrets::find(&l) {
                    Some(what) => {
                        format!("[a line holding {what} is left out; fs_read asks for it]")
                    }
                    None => l,
                })
                .collect();
            let matches = sink.matches;
            let n = if input.output_mode == GrepMode::Content {
                lines.len()
            } else {
                1
            };
            found
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push((file, lines, matches));
            // Far past the limit, the rest cannot change the answer's size.
            if items.fetch_add(n, std::sync::atomic::Ordering::Relaxed) + n
                > limit.saturating_mul(4)
            {
                return WalkState::Quit;
            }
            WalkState::Continue
        })
    });
    let mut found = found.into_inner().unwrap_or_else(|p| p.into_inner());
    found.sort_by(|a, b| a.0.cmp(&b.0));
    let mut out = GrepOutput {
        lines: Vec::new(),
        files: Vec::new(),
        counts: Vec::new(),
        notes: Vec::new(),
    };
    let mut capped = false;
    for (file, lines, matches) in found {
        let full = match input.output_mode {
            GrepMode::Content => out.lines.len() >= limit,
            GrepMode::FilesWithMatches => out.files.len() >= limit,
            GrepMode::Count => out.counts.len() >= limit,
        };
        if full {
            capped = true;
            break;
        }
        match input.output_mode {
            GrepMode::Content => {
                let room = limit - out.lines.len();
                if lines.len() > room {
                    capped = true;
                }
                out.lines.extend(lines.into_iter().take(room));
            }
            GrepMode::FilesWithMatches => out.files.push(file),
            GrepMode::Count => out.counts.push((file, matches)),
        }
    }
    if capped {
        out.notes.push(format!(
            "results capped at {limit}; narrow the pattern, the path or the glob, or raise head_limit"
        ));
    }
    if stopped.load(std::sync::atomic::Ordering::Relaxed) {
        out.notes.push(format!(
            "the search stopped after {} s; these are the results found until then (narrow the path or the glob)",
            super::fs::TOOL_TIME_LIMIT.as_secs()
        ));
    }
    if out.lines.is_empty() && out.files.is_empty() && out.counts.is_empty() {
        out.notes.push("no match".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::tools::ReadLedger;

    fn project() -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        for (name, text) in [
            (
                "src/main.rs",
                "fn main() {\n    // TODO: greet\n    println!(\"hi\");\n}\n",
            ),
            ("src/lib.rs", "pub fn todo() {}\n"),
            ("target/debug/junk.rs", "// TODO: ignored build output\n"),
            (".hidden/x.rs", "// TODO hidden\n"),
            ("README.md", "todo list\n"),
        ] {
            let p = root.join(name);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        std::fs::write(root.join(".gitignore"), "target/\n").unwrap();
        std::fs::write(root.join("src/blob.rs"), b"TODO\x00binary").unwrap();
        (dir, root)
    }

    #[test]
    fn glob_respects_gitignore_and_hidden_files() {
        let (_d, root) = project();
        let ledger = ReadLedger::default();
        let ctx = FsContext {
            root: &root,
            agent_id: "a",
            ledger: &ledger,
            scope: &crate::tools::scope::Scope::default(),
            perm: crate::tools::permission::test_permits(&root),
            launcher: crate::launcher::test_launcher(&root),
            overlay: None,
        };
        let mut out = glob(
            &ctx,
            &GlobInput {
                pattern: "**/*.rs".into(),
                path: None,
                limit: None,
            },
        )
        .unwrap();
        out.files.sort();
        assert_eq!(out.files, ["src/blob.rs", "src/lib.rs", "src/main.rs"]);
        let e = glob(
            &ctx,
            &GlobInput {
                pattern: "src/[".into(),
                path: None,
                limit: None,
            },
        )
        .unwrap_err();
        assert!(e.0.contains("bad glob"), "{e}");
        let capped = glob(
            &ctx,
            &GlobInput {
                pattern: "**/*".into(),
                path: None,
                limit: Some(1),
            },
        )
        .unwrap();
        assert_eq!(capped.files.len(), 1);
        assert!(capped.notes[0].contains("showing the 1 newest"));
    }

    #[test]
    fn grep_modes_context_and_caps() {
        let (_d, root) = project();
        let ledger = ReadLedger::default();
        let ctx = FsContext {
            root: &root,
            agent_id: "a",
            ledger: &ledger,
            scope: &crate::tools::scope::Scope::default(),
            perm: crate::tools::permission::test_permits(&root),
            launcher: crate::launcher::test_launcher(&root),
            overlay: None,
        };
        let input = |mode, glob: Option<&str>| GrepInput {
            pattern: "todo".into(),
            path: None,
            glob: glob.map(str::to_string),
            output_mode: mode,
            context: Some(1),
            case_insensitive: true,
            head_limit: None,
        };
        let mut files = grep(&ctx, &input(GrepMode::FilesWithMatches, None))
            .unwrap()
            .files;
        files.sort();
        assert_eq!(
            files,
            ["README.md", "src/lib.rs", "src/main.rs"],
            "gitignored, hidden and binary files are skipped"
        );
        let counts = grep(&ctx, &input(GrepMode::Count, Some("*.rs")))
            .unwrap()
            .counts;
        assert_eq!(counts.len(), 2);
        let lines = grep(&ctx, &input(GrepMode::Content, Some("src/main.rs")))
            .unwrap()
            .lines;
        assert_eq!(
            lines,
            [
                "src/main.rs-1-fn main() {",
                "src/main.rs:2:    // TODO: greet",
                "src/main.rs-3-    println!(\"hi\");"
            ]
        );
        let mut capped = input(GrepMode::Content, None);
        capped.head_limit = Some(1);
        let out = grep(&ctx, &capped).unwrap();
        assert_eq!(out.lines.len(), 1);
        assert!(out.notes[0].contains("capped at 1"));
        // The kernel's pseudo-files (another process's environment) are never
        // searched, nor listed.
        for path in ["/proc/self", "/proc", "/sys/kernel", "/dev"] {
            let mut there = input(GrepMode::Content, None);
            there.path = Some(path.into());
            let e = grep(&ctx, &there).unwrap_err();
            assert!(e.0.contains("which the file tools do not search"), "{e}");
            let e = glob(
                &ctx,
                &GlobInput {
                    pattern: "**".into(),
                    path: Some(path.into()),
                    limit: None,
                },
            )
            .unwrap_err();
            assert!(e.0.contains("which the file tools do not search"), "{e}");
        }
        let mut bad = input(GrepMode::Content, None);
        bad.pattern = "(".into();
        assert!(grep(&ctx, &bad)
            .unwrap_err()
            .0
            .contains("not a valid regex"));
    }
}
