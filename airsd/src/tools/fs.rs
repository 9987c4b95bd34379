//! File tools with Claude Code's semantics: `fs.read` (numbered lines, offsets,
//! truncation with a note, binary files refused), `fs.write` (create or overwrite; an
//! existing file must have been read by this agent and be unchanged since), `fs.edit`
//! and `fs.multi_edit` (exact replacements, unique unless `replace_all`, all or
//! nothing, a unified diff back). Files are written atomically, and bytes outside an
//! edit are kept as they were (CRLF, encodings).

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::error::ToolError;

fn err(message: impl Into<String>) -> ToolError {
    ToolError(message.into())
}

/// Lines `fs.read` returns when no limit is given.
pub const DEFAULT_READ_LINES: u64 = 2_000;
/// Characters of one line `fs.read` shows.
pub const MAX_LINE_CHARS: usize = 2_000;
/// Bytes of text `fs.read` returns at most.
pub const MAX_READ_BYTES: usize = 256 * 1024;
/// The largest file the writing tools read whole to change (an edit, a rewrite).
pub const MAX_EDIT_BYTES: u64 = 64 * 1024 * 1024;
/// How long one file tool may work (reading, searching, listing) before it stops
/// with what it has, so no call holds its agent or a thread of airsd for long.
pub const TOOL_TIME_LIMIT: std::time::Duration = std::time::Duration::from_secs(30);

/// What each agent has read, by file and content hash: writes to an existing file need
/// a read of its current content first.
#[derive(Default)]
pub struct ReadLedger {
    seen: Mutex<HashMap<(String, PathBuf), [u8; 32]>>,
    /// The run's recent writes through these tools: when, by whom, which file (noted
    /// before the file changes), so a command's changes can be told from another
    /// agent's write made while it ran.
    writes: Mutex<std::collections::VecDeque<(std::time::Instant, String, PathBuf)>>,
    /// The run's commands, while one may still overlap another.
    commands: Mutex<Vec<CommandSpan>>,
}

/// Writes the ledger remembers, at most.
const WRITES_KEPT: usize = 4_096;

/// A command of the run: its agent, when it started, when it ended.
type CommandSpan = (u64, String, std::time::Instant, Option<std::time::Instant>);

impl ReadLedger {
    /// Notes that `agent` starts a command; the answer names it to
    /// [`ReadLedger::command_ended`] and [`ReadLedger::overlapped`].
    pub fn command_started(&self, agent: &str) -> u64 {
        let mut c = self.commands.lock().unwrap_or_else(|p| p.into_inner());
        let id = c.last().map_or(0, |l| l.0 + 1);
        // What ended before every running command started can overlap nothing more.
        let oldest_running = c.iter().filter(|x| x.3.is_none()).map(|x| x.2).min();
        c.retain(|x| match (x.3, oldest_running) {
            (Some(end), Some(oldest)) => end >= oldest,
            (Some(_), None) => false,
            (None, _) => true,
        });
        c.push((id, agent.to_string(), std::time::Instant::now(), None));
        id
    }

    pub fn command_ended(&self, id: u64) {
        let mut c = self.commands.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(x) = c.iter_mut().find(|x| x.0 == id) {
            x.3 = Some(std::time::Instant::now());
        }
    }

    /// Whether another agent's command ran at some moment while command `id` did.
    pub fn overlapped(&self, id: u64) -> bool {
        let c = self.commands.lock().unwrap_or_else(|p| p.into_inner());
        let Some((_, agent, start, end)) = c.iter().find(|x| x.0 == id).cloned() else {
            return false;
        };
        let end = end.unwrap_or_else(std::time::Instant::now);
        c.iter().any(|(i, a, s, e)| {
            *i != id && *a != agent && *s <= end && e.is_none_or(|e| e >= start)
        })
    }

    /// Notes that `agent` is about to write `path`.
    pub fn writing(&self, agent: &str, path: &Path) {
        let mut w = self.writes.lock().unwrap_or_else(|p| p.into_inner());
        if w.len() >= WRITES_KEPT {
            w.pop_front();
        }
        w.push_back((
            std::time::Instant::now(),
            agent.to_string(),
            path.to_path_buf(),
        ));
    }

    /// The files agents other than `agent` wrote through these tools since `t0`.
    pub fn written_by_others_since(&self, agent: &str, t0: std::time::Instant) -> Vec<PathBuf> {
        let w = self.writes.lock().unwrap_or_else(|p| p.into_inner());
        w.iter()
            .filter(|(at, who, _)| *at >= t0 && who != agent)
            .map(|(_, _, p)| p.clone())
            .collect()
    }

    fn record(&self, agent: &str, path: &Path, hash: [u8; 32]) {
        self.seen
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert((agent.to_string(), path.to_path_buf()), hash);
    }

    fn get(&self, agent: &str, path: &Path) -> Option<[u8; 32]> {
        self.seen
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&(agent.to_string(), path.to_path_buf()))
            .copied()
    }

    /// Forgets an agent (it ended).
    pub fn forget(&self, agent: &str) {
        self.seen
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|(a, _), _| a != agent);
    }
}

/// Where the tools work and for whom.
pub struct FsContext<'a> {
    /// The project root, resolved (`std::fs::canonicalize`).
    pub root: &'a Path,
    pub agent_id: &'a str,
    pub ledger: &'a ReadLedger,
    /// The task's scope.
    pub scope: &'a super::scope::Scope,
    /// The PermissionEngine's say for this call.
    pub perm: &'a super::permission::Permits<'a>,
    /// How airsd runs its own programs (git) for the project.
    pub launcher: &'a crate::launcher::Launcher,
    /// A file's text as the person's editor has it (unsaved changes included): what
    /// the tools read of that file instead of the disk's bytes, once every check of
    /// the file on disk passed.
    pub overlay: Option<&'a Overlay>,
}

/// A file's text as an editor has it ([`FsContext::overlay`]).
#[derive(Clone, Debug)]
pub struct Overlay {
    /// The file, resolved as [`FsContext::resolve`] resolves it.
    pub path: PathBuf,
    pub bytes: Vec<u8>,
}

fn sha256(bytes: &[u8]) -> [u8; 32] {
    Sha256::digest(bytes).into()
}

fn hex(hash: &[u8; 32]) -> String {
    hash.iter().map(|b| format!("{b:02x}")).collect()
}

impl FsContext<'_> {
    /// Resolves `path` (relative to the project, or absolute) physically: symlinks and
    /// `..` are resolved on the real file system (for a new file, on its nearest
    /// existing ancestor), so nothing escapes by a link. What may be done with the
    /// result is the PermissionEngine's decision ([`FsContext::permit`]).
    pub fn resolve(&self, path: &str) -> Result<PathBuf, ToolError> {
        resolve_in(self.root, path)
    }

    /// Resolves `path` and checks the access with the task's scope and the
    /// PermissionEngine (which may back the file up first, or raise a question).
    pub fn permit(
        &self,
        path: &str,
        access: super::permission::Access,
    ) -> Result<(PathBuf, String), ToolError> {
        let resolved = self.resolve(path)?;
        let shown = self.shown(&resolved);
        match access {
            super::permission::Access::Read => self.scope.check_read(&shown)?,
            super::permission::Access::Write => self.scope.check_write(&shown)?,
        }
        self.perm.check(&resolved, access)?;
        Ok((resolved, shown))
    }

    pub(crate) fn shown(&self, path: &Path) -> String {
        path.strip_prefix(self.root)
            .map(|p| p.display().to_string())
            .unwrap_or_else(|_| path.display().to_string())
    }

    /// The editor's text of `path` when it is the overlay's file.
    fn overlaid(&self, path: &Path) -> Option<&[u8]> {
        self.overlay
            .filter(|o| o.path == path)
            .map(|o| o.bytes.as_slice())
    }

    /// The current content of `path`: the editor's text, else the file's bytes.
    fn current(&self, path: &Path, shown: &str) -> Result<Vec<u8>, ToolError> {
        match self.overlaid(path) {
            Some(bytes) => Ok(bytes.to_vec()),
            None => read_nofollow(path, self.root, shown),
        }
    }

    /// Checks that this agent read the current content of an existing file.
    fn check_read(&self, path: &Path, current: &[u8]) -> Result<(), ToolError> {
        let shown = self.shown(path);
        match self.ledger.get(self.agent_id, path) {
            None => Err(err(format!(
                "{shown}: read the file with fs_read before changing it"
            ))),
            Some(hash) if hash != sha256(current) => Err(err(format!(
                "{shown}: the file changed since you read it; read it again"
            ))),
            Some(_) => Ok(()),
        }
    }
}

/// Resolves `path` (relative to `root`, or absolute) as [`FsContext::resolve`] does.
pub fn resolve_in(root: &Path, path: &str) -> Result<PathBuf, ToolError> {
    if path.is_empty() {
        return Err(err("path: empty"));
    }
    let joined = if Path::new(path).is_absolute() {
        PathBuf::from(path)
    } else {
        root.join(path)
    };
    let mut existing = joined.as_path();
    let mut rest: Vec<&std::ffi::OsStr> = Vec::new();
    let real = loop {
        match std::fs::canonicalize(existing) {
            Ok(real) => break real,
            Err(_) => {
                let Some(name) = existing.file_name() else {
                    return Err(err(format!(
                        "{path}: `..` after a missing directory cannot be resolved"
                    )));
                };
                rest.push(name);
                existing = existing
                    .parent()
                    .ok_or_else(|| err(format!("{path}: cannot be resolved")))?;
            }
        }
    };
    let mut resolved = real;
    for name in rest.iter().rev() {
        match Path::new(name).components().next() {
            Some(Component::Normal(_)) => resolved.push(name),
            _ => return Err(err(format!("{path}: `..` after a missing directory"))),
        }
    }
    Ok(resolved)
}

#[derive(Clone, Debug, PartialEq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadInput {
    /// The file, relative to the project root or absolute.
    pub path: String,
    /// First line to show (1-based).
    #[serde(default)]
    pub offset: Option<u64>,
    /// Most lines to show (default 2,000).
    #[serde(default)]
    pub limit: Option<u64>,
}

#[derive(Clone, Debug, PartialEq, Deserialize, Serialize, schemars::JsonSchema)]
pub struct ReadOutput {
    pub path: String,
    /// The lines, each as `number<TAB>text`.
    pub content: String,
    pub total_lines: u64,
    pub first_line: u64,
    pub last_line: u64,
    /// What was left out or changed in the showing, for the agent to know.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    pub sha256: String,
}

/// `fs.read`: streams the file, holding only the page asked for; the whole file is
/// hashed (for the read-before-write rule) and its lines counted on the way.
pub fn read(ctx: &FsContext<'_>, input: &ReadInput) -> Result<ReadOutput, ToolError> {
    use std::io::BufRead;
    let (path, shown) = ctx.permit(&input.path, super::permission::Access::Read)?;
    let meta = std::fs::metadata(&path).map_err(|e| err(format!("{shown}: {e}")))?;
    if meta.is_dir() {
        return Err(err(format!(
            "{shown}: is a directory; use fs_glob to list files"
        )));
    }
    let (file, opened) = open_regular(&path, ctx.root, &shown)?;
    // What was opened is judged too: a hard link to a credential put in the path's
    // place after the check is known by its inode.
    ctx.perm
        .check_opened(&path, &opened, super::permission::Access::Read)?;
    let deadline = std::time::Instant::now() + TOOL_TIME_LIMIT;
    // A small file in one read; a large one in 64 KiB pieces.
    let capacity = usize::try_from(meta.len().clamp(4096, 64 * 1024)).unwrap_or(64 * 1024);
    // The file as the person's editor has it, when it serves the file: checked on
    // disk above, read from the editor.
    let mut reader: Box<dyn BufRead> = match ctx.overlaid(&path) {
        Some(bytes) => Box::new(std::io::Cursor::new(bytes)),
        None => Box::new(std::io::BufReader::with_capacity(capacity + 1, file)),
    };
    let first = input.offset.unwrap_or(1).max(1);
    let limit = input.limit.unwrap_or(DEFAULT_READ_LINES).max(1);
    let mut hasher = Sha256::new();
    let mut content = String::new();
    let mut notes = Vec::new();
    let mut capped = false;
    let mut invalid = false;
    let mut total = 0u64;
    let mut last = first.saturating_sub(1);
    let mut seen_bytes = 0u64;
    let mut line = Vec::new();
    loop {
        line.clear();
        // A line is read in pieces of at most a page's size, so one endless line
        // (a file of no newlines) holds no more than that.
        let mut taken = 0usize;
        let mut ended = false;
        loop {
            let buf = reader
                .fill_buf()
                .map_err(|e| err(format!("{shown}: {e}")))?;
            if buf.is_empty() {
                ended = true;
                break;
            }
            if seen_bytes < 8192 && buf[..buf.len().min(8192 - seen_bytes as usize)].contains(&0) {
                return Err(err(format!(
                    "{shown}: a binary file ({} bytes); it cannot be shown as text",
                    meta.len()
                )));
            }
            let (chunk, newline) = match buf.iter().position(|&b| b == b'\n') {
                Some(i) => (&buf[..=i], true),
                None => (buf, false),
            };
            let n = chunk.len();
            hasher.update(chunk);
            seen_bytes += n as u64;
            let room = (MAX_LINE_CHARS * 4 + 2).saturating_sub(line.len());
            line.extend_from_slice(&chunk[..n.min(room)]);
            taken += n;
            reader.consume(n);
            if newline {
                break;
            }
            if std::time::Instant::now() > deadline {
                return Err(err(format!(
                    "{shown}: reading stopped after {} s ({seen_bytes} bytes read); read a smaller part with offset and limit, or use shell_run",
                    TOOL_TIME_LIMIT.as_secs()
                )));
            }
        }
        if taken == 0 && ended {
            break;
        }
        total += 1;
        if total.is_multiple_of(4096) && std::time::Instant::now() > deadline {
            return Err(err(format!(
                "{shown}: reading stopped after {} s at line {total}; the file is too large to read whole here",
                TOOL_TIME_LIMIT.as_secs()
            )));
        }
        let n = total;
        if n < first || n >= first + limit || capped {
            if ended {
                break;
            }
            continue;
        }
        let text = match std::str::from_utf8(&line) {
            Ok(t) => std::borrow::Cow::Borrowed(t),
            Err(e) if e.error_len().is_none() && line.len() > MAX_LINE_CHARS * 4 => {
                // A character cut where the kept part of a long line ends.
                String::from_utf8_lossy(&line[..e.valid_up_to()])
            }
            Err(_) => {
                invalid = true;
                String::from_utf8_lossy(&line)
            }
        };
        let text = text.trim_end_matches('\n').trim_end_matches('\r');
        let mut shown_line: String = text.chars().take(MAX_LINE_CHARS).collect();
        if shown_line.len() < text.len() || taken > line.len() {
            shown_line.push_str(" … [line truncated]");
        }
        let entry = format!("{n}\t{shown_line}\n");
        if content.len() + entry.len() > MAX_READ_BYTES {
            notes.push(format!(
                "output capped at {} KiB; continue with offset {n}",
                MAX_READ_BYTES / 1024
            ));
            capped = true;
        } else {
            content.push_str(&entry);
            last = n;
        }
        if ended {
            break;
        }
    }
    if invalid {
        notes.insert(0, "the file is not valid UTF-8; invalid bytes are shown as \u{FFFD} (edits keep the original bytes)".to_string());
    }
    let hash: [u8; 32] = hasher.finalize().into();
    ctx.ledger.record(ctx.agent_id, &path, hash);
    if total == 0 {
        notes.push("the file is empty".into());
    } else if first > total {
        notes.push(format!("the file has only {total} lines"));
    } else if last < total && !capped {
        notes.push(format!(
            "showing lines {first}–{last} of {total}; continue with offset {}",
            last + 1
        ));
    }
    // A secret in the page (a key, a token, a password in a URL): a person says
    // whether it reaches the model, whatever file holds it.
    if let Some(what) = super::secrets::find(&content) {
        ctx.perm.check_secret(&path, what)?;
    }
    Ok(ReadOutput {
        path: shown,
        content,
        total_lines: total,
        first_line: first,
        last_line: last,
        notes,
        sha256: hex(&hash),
    })
}

#[derive(Clone, Debug, PartialEq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WriteInput {
    /// The file, relative to the project root or absolute.
    pub path: String,
    /// The whole new content.
    pub content: String,
}

#[derive(Clone, Debug, PartialEq, Deserialize, Serialize, schemars::JsonSchema)]
pub struct WriteOutput {
    pub path: String,
    pub created: bool,
    pub bytes: u64,
    /// What changed, for an existing file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
}

/// Writes `bytes` to `path` atomically, in the directory that was judged (see
/// [`super::opened::write_atomic`]).
fn write_atomic(path: &Path, root: &Path, bytes: &[u8], shown: &str) -> Result<(), ToolError> {
    super::opened::write_atomic(path, root, bytes).map_err(|e| {
        if e.raw_os_error() == Some(libc::ELOOP) {
            err(format!(
                "{shown}: a directory on its way {}; refused",
                super::opened::SWAPPED
            ))
        } else {
            err(format!("{shown}: {e}"))
        }
    })
}

fn unified_diff(shown: &str, old: &[u8], new: &[u8]) -> String {
    let (old, new) = (String::from_utf8_lossy(old), String::from_utf8_lossy(new));
    similar::TextDiff::from_lines(old.as_ref(), new.as_ref())
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{shown}"), &format!("b/{shown}"))
        .to_string()
}

/// Opens a resolved path for reading: without following a symlink in its last
/// component (a path that became a link after it was checked is refused), without
/// waiting (a FIFO does not block), and only if it is a regular file of a real file
/// system: devices, FIFOs, sockets and the kernel's pseudo-files (`/proc`, `/sys`)
/// are refused, whatever their name.
pub(crate) fn open_regular(
    path: &Path,
    root: &Path,
    shown: &str,
) -> Result<(std::fs::File, std::fs::Metadata), ToolError> {
    use std::os::unix::fs::FileTypeExt as _;
    if path.starts_with("/proc") || path.starts_with("/sys") {
        return Err(err(format!(
            "{shown}: a file of the kernel's /proc or /sys, which the file tools do not read"
        )));
    }
    let refuse = |t: std::fs::FileType| -> Result<(), ToolError> {
        let kind = if t.is_file() || t.is_symlink() {
            return Ok(());
        } else if t.is_dir() {
            "a directory"
        } else if t.is_fifo() {
            "a FIFO (named pipe)"
        } else if t.is_socket() {
            "a socket"
        } else if t.is_char_device() {
            "a character device"
        } else if t.is_block_device() {
            "a block device"
        } else {
            "not a regular file"
        };
        Err(err(format!(
            "{shown}: {kind}; the file tools read and write regular files only"
        )))
    };
    // Before opening (a socket cannot be opened, a device may act when it is), and
    // again on what was opened.
    if let Ok(m) = std::fs::symlink_metadata(path) {
        refuse(m.file_type())?;
    }
    // No component may be a link now (the path was resolved when it was judged).
    let f = super::opened::open_read(path, root).map_err(|e| {
        if e.raw_os_error() == Some(libc::ELOOP) {
            err(format!("{shown}: {}; refused", super::opened::SWAPPED))
        } else {
            err(format!("{shown}: {e}"))
        }
    })?;
    let meta = f.metadata().map_err(|e| err(format!("{shown}: {e}")))?;
    refuse(meta.file_type())?;
    // A pseudo-file system reached some other way (a bind mount, a link) is refused
    // just the same.
    if let Ok(fs) = nix::sys::statfs::fstatfs(&f) {
        let t = fs.filesystem_type();
        if t == nix::sys::statfs::PROC_SUPER_MAGIC || t == nix::sys::statfs::SYSFS_MAGIC {
            return Err(err(format!(
                "{shown}: a file of the kernel's /proc or /sys, which the file tools do not read"
            )));
        }
    }
    Ok((f, meta))
}

/// Reads a whole regular file (see [`open_regular`]) to change it, up to
/// [`MAX_EDIT_BYTES`].
pub(crate) fn read_nofollow(path: &Path, root: &Path, shown: &str) -> Result<Vec<u8>, ToolError> {
    use std::io::Read as _;
    let (f, meta) = open_regular(path, root, shown)?;
    if meta.len() > MAX_EDIT_BYTES {
        return Err(err(format!(
            "{shown}: {} MiB, more than the file tools change at once ({} MiB); use shell_run",
            meta.len() / (1024 * 1024),
            MAX_EDIT_BYTES / (1024 * 1024)
        )));
    }
    let mut bytes = Vec::new();
    f.take(MAX_EDIT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| err(format!("{shown}: {e}")))?;
    if bytes.len() as u64 > MAX_EDIT_BYTES {
        return Err(err(format!(
            "{shown}: grew past {} MiB while it was read; use shell_run",
            MAX_EDIT_BYTES / (1024 * 1024)
        )));
    }
    Ok(bytes)
}

/// `fs.write`.
pub fn write(ctx: &FsContext<'_>, input: &WriteInput) -> Result<WriteOutput, ToolError> {
    let path = ctx.resolve(&input.path)?;
    let shown = ctx.shown(&path);
    ctx.scope.check_write(&shown)?;
    // The read-before-write rule first: a refused write never asks a person.
    let old = match ctx.current(&path, &shown) {
        Ok(old) => {
            ctx.check_read(&path, &old)?;
            Some(old)
        }
        Err(_) if std::fs::symlink_metadata(&path).is_err() => None,
        Err(e) => return Err(e),
    };
    ctx.perm.check(&path, super::permission::Access::Write)?;
    if path.is_dir() {
        return Err(err(format!("{shown}: is a directory")));
    }
    let bytes = input.content.as_bytes();
    ctx.ledger.writing(ctx.agent_id, &path);
    write_atomic(&path, ctx.root, bytes, &shown)?;
    ctx.ledger.record(ctx.agent_id, &path, sha256(bytes));
    Ok(WriteOutput {
        diff: old.as_ref().map(|o| unified_diff(&shown, o, bytes)),
        path: shown,
        created: old.is_none(),
        bytes: bytes.len() as u64,
    })
}

/// One exact replacement.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Edit {
    /// As fs_edit's.
    pub old_string: String,
    /// As fs_edit's.
    pub new_string: String,
    /// As fs_edit's.
    #[serde(default)]
    pub replace_all: bool,
}

#[derive(Clone, Debug, PartialEq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EditInput {
    /// The file, relative to the project root or absolute.
    pub path: String,
    /// The exact text to replace, as the file holds it.
    pub old_string: String,
    /// What replaces it.
    pub new_string: String,
    /// Replace every occurrence (otherwise `old_string` must occur exactly once).
    #[serde(default)]
    pub replace_all: bool,
}

#[derive(Clone, Debug, PartialEq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MultiEditInput {
    /// The file, relative to the project root or absolute.
    pub path: String,
    /// Applied in order, each to the result of the one before; all or nothing.
    pub edits: Vec<Edit>,
}

#[derive(Clone, Debug, PartialEq, Deserialize, Serialize, schemars::JsonSchema)]
pub struct EditOutput {
    pub path: String,
    pub replacements: u64,
    pub diff: String,
}

fn find_all(haystack: &[u8], needle: &[u8]) -> Vec<usize> {
    if needle.is_empty() || needle.len() > haystack.len() {
        return Vec::new();
    }
    let mut at = Vec::new();
    let mut i = 0;
    while i + needle.len() <= haystack.len() {
        if &haystack[i..i + needle.len()] == needle {
            at.push(i);
            i += needle.len();
        } else {
            i += 1;
        }
    }
    at
}

/// Applies one edit to `bytes`, returning the new bytes and the number of replacements.
/// A file with CRLF line ends matches an `old_string` written with LF ones.
fn apply(bytes: &[u8], edit: &Edit, n: usize, shown: &str) -> Result<(Vec<u8>, u64), ToolError> {
    let which = if n == 0 {
        String::new()
    } else {
        format!("edit {n}: ")
    };
    if edit.old_string.is_empty() {
        return Err(err(format!(
            "{shown}: {which}old_string is empty (use fs_write to create a file)"
        )));
    }
    if edit.old_string == edit.new_string {
        return Err(err(format!(
            "{shown}: {which}old_string and new_string are the same"
        )));
    }
    let crlf = bytes.windows(2).any(|w| w == b"\r\n");
    let mut old = edit.old_string.as_bytes().to_vec();
    let mut new = edit.new_string.as_bytes().to_vec();
    let mut at = find_all(bytes, &old);
    if at.is_empty() && crlf && !edit.old_string.contains('\r') {
        old = edit.old_string.replace('\n', "\r\n").into_bytes();
        new = edit.new_string.replace('\n', "\r\n").into_bytes();
        at = find_all(bytes, &old);
    }
    match at.len() {
        0 => {
            // Copied from fs_read with its prefixes, or with escapes for tabs and
            // quotes: say so, as that is what a model most often gets wrong.
            let numbered = edit
                .old_string
                .lines()
                .next()
                .and_then(|l| l.split_once('\t'))
                .is_some_and(|(n, _)| {
                    !n.trim().is_empty() && n.trim().chars().all(|c| c.is_ascii_digit())
                });
            let hint = if numbered {
                " (it starts with a line number and a tab from fs_read; leave those out)"
            } else if edit.old_string.contains("\\t") || edit.old_string.contains("\\\"") {
                " (it holds `\\t` or `\\\"` escapes; use the characters themselves)"
            } else {
                ""
            };
            return Err(err(format!(
                "{shown}: {which}old_string was not found; it must match the file exactly, whitespace and indentation included{hint}"
            )));
        }
        1 => {}
        n if !edit.replace_all => {
            return Err(err(format!(
                "{shown}: {which}old_string occurs {n} times; give more context to make it unique, or set replace_all"
            )));
        }
        _ => {}
    }
    let mut out = Vec::with_capacity(bytes.len() + at.len() * new.len());
    let mut from = 0;
    for &i in &at {
        out.extend_from_slice(&bytes[from..i]);
        out.extend_from_slice(&new);
        from = i + old.len();
    }
    out.extend_from_slice(&bytes[from..]);
    Ok((out, at.len() as u64))
}

/// `fs.multi_edit` (and `fs.edit`, a list of one).
pub fn multi_edit(ctx: &FsContext<'_>, input: &MultiEditInput) -> Result<EditOutput, ToolError> {
    let path = ctx.resolve(&input.path)?;
    let shown = ctx.shown(&path);
    ctx.scope.check_write(&shown)?;
    if input.edits.is_empty() {
        return Err(err(format!("{shown}: edits: empty")));
    }
    let original = ctx.current(&path, &shown)?;
    ctx.check_read(&path, &original)?;
    let mut bytes = original.clone();
    let mut replacements = 0;
    for (i, edit) in input.edits.iter().enumerate() {
        let n = if input.edits.len() == 1 { 0 } else { i + 1 };
        let (next, count) = apply(&bytes, edit, n, &shown)?;
        bytes = next;
        replacements += count;
    }
    ctx.perm.check(&path, super::permission::Access::Write)?;
    ctx.ledger.writing(ctx.agent_id, &path);
    write_atomic(&path, ctx.root, &bytes, &shown)?;
    ctx.ledger.record(ctx.agent_id, &path, sha256(&bytes));
    Ok(EditOutput {
        diff: unified_diff(&shown, &original, &bytes),
        path: shown,
        replacements,
    })
}

/// `fs.edit`.
pub fn edit(ctx: &FsContext<'_>, input: &EditInput) -> Result<EditOutput, ToolError> {
    multi_edit(
        ctx,
        &MultiEditInput {
            path: input.path.clone(),
            edits: vec![Edit {
                old_string: input.old_string.clone(),
                new_string: input.new_string.clone(),
                replace_all: input.replace_all,
            }],
        },
    )
}

#[cfg(test)]
mod tests;
