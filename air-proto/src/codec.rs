//! The NDJSON codec of the worker pipe: one JSON message per line.
//!
//! [`NdjsonDecoder`] is sans-I/O: feed it whatever bytes a read returned (a message may
//! arrive in many pieces, or many messages in one piece) and take complete messages out.
//! A line longer than the cap is reported once and skipped up to its newline, so memory
//! stays bounded whatever the peer sends. Every failure names the 1-based line number and,
//! for a well-formed JSON line that is not a valid message, the JSON path.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// Default cap on one line (16 MiB).
pub const DEFAULT_MAX_LINE: usize = 16 * 1024 * 1024;

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {kind}")]
pub struct DecodeError {
    /// 1-based line number.
    pub line: u64,
    pub kind: DecodeErrorKind,
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DecodeErrorKind {
    #[error("line is longer than the {max}-byte limit")]
    LineTooLong { max: usize },
    #[error("line is not valid UTF-8 (at byte {valid_up_to})")]
    InvalidUtf8 { valid_up_to: usize },
    #[error("invalid JSON at column {column}: {message}")]
    InvalidJson { column: usize, message: String },
    #[error("invalid message at `{path}`: {message}")]
    InvalidMessage { path: String, message: String },
}

impl DecodeError {
    /// The `protocol.error` body that tells the peer what was wrong.
    pub fn to_protocol_error(&self) -> ProtocolError {
        let (code, path) = match &self.kind {
            DecodeErrorKind::LineTooLong { .. } => (ProtocolErrorCode::LineTooLong, None),
            DecodeErrorKind::InvalidUtf8 { .. } => (ProtocolErrorCode::InvalidUtf8, None),
            DecodeErrorKind::InvalidJson { .. } => (ProtocolErrorCode::InvalidJson, None),
            DecodeErrorKind::InvalidMessage { path, .. } => {
                (ProtocolErrorCode::InvalidMessage, Some(path.clone()))
            }
        };
        ProtocolError {
            code,
            message: self.to_string(),
            line: Some(self.line),
            path,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum EncodeError {
    #[error("cannot serialize message: {0}")]
    Json(#[from] serde_json::Error),
    #[error("message is {len} bytes, over the {max}-byte line limit")]
    TooLong { len: usize, max: usize },
}

/// Serializes `message` as one line (with the trailing `\n`). JSON escapes newlines in
/// strings, so a message is always exactly one line.
pub fn encode<T: Serialize>(message: &T, max_line: usize) -> Result<Vec<u8>, EncodeError> {
    let mut out = serde_json::to_vec(message)?;
    if out.len() > max_line {
        return Err(EncodeError::TooLong {
            len: out.len(),
            max: max_line,
        });
    }
    out.push(b'\n');
    Ok(out)
}

/// Parses one line (without its newline) as a `T`, naming the JSON path on failure.
pub fn decode_line<T: DeserializeOwned>(line_no: u64, line: &[u8]) -> Result<T, DecodeError> {
    let err = |kind| DecodeError {
        line: line_no,
        kind,
    };
    if let Err(e) = std::str::from_utf8(line) {
        return Err(err(DecodeErrorKind::InvalidUtf8 {
            valid_up_to: e.valid_up_to(),
        }));
    }
    let mut de = serde_json::Deserializer::from_slice(line);
    let value = serde_path_to_error::deserialize::<_, T>(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if inner.is_data() {
            let message = strip_position(&inner);
            let path = full_path(&path, &message);
            err(DecodeErrorKind::InvalidMessage { path, message })
        } else {
            err(DecodeErrorKind::InvalidJson {
                column: inner.column(),
                message: strip_position(&inner),
            })
        }
    })?;
    de.end().map_err(|e| {
        err(DecodeErrorKind::InvalidJson {
            column: e.column(),
            message: strip_position(&e),
        })
    })?;
    Ok(value)
}

/// The path of the offending field: serde reports a missing field at the path of the
/// object that lacks it, so the field's own name is appended.
pub fn full_path(path: &str, message: &str) -> String {
    let missing = message
        .strip_prefix("missing field `")
        .and_then(|rest| rest.split('`').next());
    match missing {
        Some(field) if path == "." || path.is_empty() => field.to_string(),
        Some(field) => format!("{path}.{field}"),
        None => path.to_string(),
    }
}

/// serde_json appends " at line L column C"; the line is always 1 here, so drop it.
fn strip_position(e: &serde_json::Error) -> String {
    let text = e.to_string();
    match text.rfind(" at line ") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}

/// Incremental NDJSON decoder.
#[derive(Debug)]
pub struct NdjsonDecoder {
    buf: Vec<u8>,
    /// Start of the first byte not yet returned.
    start: usize,
    /// Bytes of `buf` already searched for a newline.
    scanned: usize,
    max_line: usize,
    /// Number of the line currently being assembled.
    line_no: u64,
    /// Skipping the rest of an over-long line.
    discarding: bool,
}

impl Default for NdjsonDecoder {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_LINE)
    }
}

impl NdjsonDecoder {
    pub fn new(max_line: usize) -> Self {
        Self {
            buf: Vec::new(),
            start: 0,
            scanned: 0,
            max_line,
            line_no: 1,
            discarding: false,
        }
    }

    /// Appends bytes read from the peer.
    pub fn push(&mut self, bytes: &[u8]) {
        if self.start > 0 && self.start == self.buf.len() {
            self.buf.clear();
            self.start = 0;
            self.scanned = 0;
        } else if self.start > 64 * 1024 && self.start * 2 > self.buf.len() {
            self.buf.drain(..self.start);
            self.scanned -= self.start;
            self.start = 0;
        }
        self.buf.extend_from_slice(bytes);
    }

    /// Bytes buffered but not yet returned as a line.
    pub fn buffered(&self) -> usize {
        self.buf.len() - self.start
    }

    /// The next complete message, an error for a bad line, or `None` when more bytes are
    /// needed. Blank lines are skipped.
    pub fn next_message<T: DeserializeOwned>(&mut self) -> Option<Result<T, DecodeError>> {
        loop {
            let (line_no, range) = match self.next_line()? {
                Ok(line) => line,
                Err(e) => return Some(Err(e)),
            };
            let line = trim_cr(&self.buf[range]);
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            return Some(decode_line(line_no, line));
        }
    }

    /// At end of input: the unterminated last line, if any, as a message.
    pub fn finish<T: DeserializeOwned>(&mut self) -> Option<Result<T, DecodeError>> {
        let rest = std::mem::take(&mut self.buf);
        let from = self.start;
        self.start = 0;
        self.scanned = 0;
        if std::mem::take(&mut self.discarding) {
            return None;
        }
        let line = trim_cr(&rest[from..]);
        if line.iter().all(u8::is_ascii_whitespace) {
            return None;
        }
        let line_no = self.line_no;
        self.line_no += 1;
        if line.len() > self.max_line {
            return Some(Err(DecodeError {
                line: line_no,
                kind: DecodeErrorKind::LineTooLong { max: self.max_line },
            }));
        }
        Some(decode_line(line_no, line))
    }

    fn next_line(&mut self) -> Option<Result<(u64, std::ops::Range<usize>), DecodeError>> {
        loop {
            let from = self.scanned.max(self.start);
            match self.buf[from..].iter().position(|&b| b == b'\n') {
                Some(offset) => {
                    let end = from + offset;
                    let range = self.start..end;
                    self.start = end + 1;
                    self.scanned = self.start;
                    let line_no = self.line_no;
                    self.line_no += 1;
                    if self.discarding {
                        self.discarding = false;
                        continue;
                    }
                    if trim_cr(&self.buf[range.clone()]).len() > self.max_line {
                        return Some(Err(DecodeError {
                            line: line_no,
                            kind: DecodeErrorKind::LineTooLong { max: self.max_line },
                        }));
                    }
                    return Some(Ok((line_no, range)));
                }
                None => {
                    if self.discarding
                        || self.buf.len() - self.start > self.max_line.saturating_add(1)
                    {
                        // Drop what we have of the over-long line; report it once.
                        let report = !self.discarding;
                        self.discarding = true;
                        self.buf.clear();
                        self.start = 0;
                        self.scanned = 0;
                        if report {
                            return Some(Err(DecodeError {
                                line: self.line_no,
                                kind: DecodeErrorKind::LineTooLong { max: self.max_line },
                            }));
                        }
                        return None;
                    }
                    self.scanned = self.buf.len();
                    return None;
                }
            }
        }
    }
}

fn trim_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// A peer sent something that is not a valid message. Names the line and the JSON path.
#[serde_with::skip_serializing_none]
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProtocolError {
    pub code: ProtocolErrorCode,
    pub message: String,
    /// 1-based line number on the pipe.
    pub line: Option<u64>,
    /// JSON path of the offending value, e.g. `control.task_spec.title`.
    pub path: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProtocolErrorCode {
    LineTooLong,
    InvalidUtf8,
    InvalidJson,
    InvalidMessage,
    UnexpectedMessage,
}
