//! `cpp.diagnose`: the deterministic reader of compiler and linker output (baseline
//! §20; it replaces D-014's model-based parsing). GCC, Clang, MSVC, GNU ld and lld:
//! each finding with its file, line, column, severity, flag or code, message, and the
//! notes that explain it (include stacks, instantiation chains, `note:` lines, lld's
//! `>>>` references), and a semantic signature that is the same for the same error
//! whichever compiler said it ([`signature`]).
//!
//! Streaming and bounded: lines are fed as the output comes, a line past
//! [`LINE_CAP`] is read by its start, and at most [`MAX_FINDINGS`] findings (each with
//! at most [`MAX_NOTES`] notes) are kept; the rest are counted.

use air_proto::payload::DiagnosticSeverity;

use super::signature::signature;
use crate::profiles::lines::Lines;

/// Longest line kept whole.
pub const LINE_CAP: usize = 4096;
/// Most findings kept from one output.
pub const MAX_FINDINGS: usize = 500;
/// Most notes kept with one finding.
pub const MAX_NOTES: usize = 16;

/// Who said it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tool {
    /// GCC or Clang (the same line format).
    Compiler,
    Msvc,
    /// GNU ld (or gold) through the compiler driver.
    Ld,
    Lld,
    /// cppcheck, with the template `cpp.analyze` gives it ([`CPPCHECK_TEMPLATE`]).
    Cppcheck,
}

/// The line format `cpp.analyze` asks cppcheck for, which this reader reads.
pub const CPPCHECK_TEMPLATE: &str = "{file}:{line}:{column}: cppcheck-{severity}: {message} [{id}]";

impl Tool {
    pub fn as_str(self) -> &'static str {
        match self {
            Tool::Compiler => "compiler",
            Tool::Msvc => "msvc",
            Tool::Ld => "ld",
            Tool::Lld => "lld",
            Tool::Cppcheck => "cppcheck",
        }
    }
}

/// One finding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub severity: DiagnosticSeverity,
    pub file: Option<String>,
    pub line: Option<u32>,
    pub column: Option<u32>,
    /// The warning flag (`-Wunused-variable`) or the code (`C2065`, `LNK2019`).
    pub code: Option<String>,
    pub message: String,
    /// What explains it: include stacks, instantiation chains, notes, references.
    pub notes: Vec<String>,
    /// The same for the same error across compilers ([`signature`]).
    pub signature: String,
    pub tool: Tool,
}

/// The reader of one command's output.
pub struct Parser {
    /// Most findings kept.
    limit: usize,
    lines: Lines,
    findings: Vec<Diagnostic>,
    /// Findings past [`MAX_FINDINGS`], counted.
    pub dropped: usize,
    /// Context seen before the finding it belongs to (`In file included from …`,
    /// `In function …`).
    pending: Vec<String>,
    /// GNU ld's `in function` line, for the undefined references after it.
    ld_function: Option<String>,
}

impl Default for Parser {
    fn default() -> Self {
        Self::with_limit(MAX_FINDINGS)
    }
}

impl Parser {
    /// A reader that keeps at most `limit` findings.
    pub fn with_limit(limit: usize) -> Self {
        Self {
            limit,
            lines: Lines::new(LINE_CAP),
            findings: Vec::new(),
            dropped: 0,
            pending: Vec::new(),
            ld_function: None,
        }
    }

    /// Feeds a chunk of output (stdout and stderr may be fed alike).
    pub fn push(&mut self, data: &[u8]) {
        let mut lines = std::mem::replace(&mut self.lines, Lines::new(0));
        lines.push(data, |line| self.line(line));
        self.lines = lines;
    }

    /// The findings, after the output ended.
    pub fn finish(mut self) -> Vec<Diagnostic> {
        let mut lines = std::mem::replace(&mut self.lines, Lines::new(0));
        lines.finish(|line| self.line(line));
        self.findings
    }

    fn add(&mut self, mut d: Diagnostic) {
        if self.findings.len() >= self.limit {
            self.dropped += 1;
            self.pending.clear();
            return;
        }
        d.notes.append(&mut self.pending);
        d.notes.truncate(MAX_NOTES);
        d.signature = match (d.tool, d.code.as_deref()) {
            (Tool::Cppcheck, Some(id)) => format!("cppcheck:{id}"),
            _ => signature(&d.message, d.code.as_deref(), d.severity),
        };
        self.findings.push(d);
    }

    /// A note for the latest finding.
    fn note(&mut self, text: &str) {
        if let Some(d) = self.findings.last_mut() {
            if d.notes.len() < MAX_NOTES {
                d.notes.push(text.to_string());
            }
        }
    }

    fn line(&mut self, line: &str) {
        // Colours (`-fdiagnostics-color=always`) are not part of what was said.
        let plain;
        let line = if line.contains('\x1b') {
            plain = strip_ansi(line);
            plain.as_str()
        } else {
            line
        };
        let t = line.trim_start();
        if t.is_empty() {
            return;
        }
        // Source excerpts and carets (`  5 | foo();`, `    |   ^~~`).
        let digits = t.bytes().take_while(u8::is_ascii_digit).count();
        if t.starts_with('|') || (digits > 0 && t[digits..].starts_with(" |")) {
            return;
        }
        // Context that comes before its finding.
        if t.starts_with("In file included from ")
            || (t.starts_with("from ") && line.starts_with(' '))
        {
            self.pending
                .push(t.trim_end_matches([',', ':']).to_string());
            if self.pending.len() > MAX_NOTES {
                self.pending.remove(0);
            }
            return;
        }
        // lld: `>>> referenced by a.cpp:5`.
        if let Some(rest) = t.strip_prefix(">>> ") {
            let rest = rest.to_string();
            self.note(&rest);
            return;
        }
        // Every finding has `: ` after its place (or its tool); most lines of a build
        // (progress, the commands it runs) have none.
        if memchr::memmem::find(t.as_bytes(), b": ").is_none() {
            return;
        }
        if let Some(d) = lld(t) {
            return self.add(d);
        }
        if let Some(d) = ld(t, &mut self.ld_function) {
            return self.add(d);
        }
        if let Some(d) = msvc(t) {
            return self.add(d);
        }
        // MSVC's `a.cpp(3): note: see declaration of 'S'`.
        if let Some((head, note)) = t.split_once("): note: ") {
            if head.contains('(') {
                let text = format!("{head}): {note}");
                return self.note(&text);
            }
        }
        match compiler(t) {
            Some(Line::Finding(d)) => self.add(d),
            Some(Line::Note(text)) => self.note(&text),
            Some(Line::Context(text)) => {
                self.pending.push(text);
                if self.pending.len() > MAX_NOTES {
                    self.pending.remove(0);
                }
            }
            None => {}
        }
    }
}

#[cfg(test)]
mod tests;

/// Parses a whole output at once.
pub fn parse(text: &str) -> Vec<Diagnostic> {
    let mut p = Parser::default();
    p.push(text.as_bytes());
    p.finish()
}

fn diagnostic(
    severity: DiagnosticSeverity,
    place: Place,
    code: Option<String>,
    message: String,
    tool: Tool,
) -> Diagnostic {
    Diagnostic {
        severity,
        file: place.file,
        line: place.line,
        column: place.column,
        code,
        message,
        notes: Vec::new(),
        signature: String::new(),
        tool,
    }
}

/// Where a finding is.
#[derive(Default)]
struct Place {
    file: Option<String>,
    line: Option<u32>,
    column: Option<u32>,
}

enum Line {
    Finding(Diagnostic),
    /// A `note:` (or a `required from`) about the finding before it.
    Note(String),
    /// Context for the finding after it (`a.cpp: In function 'int main()':`).
    Context(String),
}

/// `FILE:LINE:COL: ` (or `FILE:LINE: `) at the start of `t`: the place and the rest.
fn place(t: &str) -> Option<(Place, &str)> {
    // The first `:<digits>` after which `: ` or `:<digits>: ` follows.
    let mut search = 0;
    while let Some(off) = t[search..].find(':') {
        let at = search + off;
        let rest = &t[at + 1..];
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 && at > 0 {
            let line: Option<u32> = rest[..digits].parse().ok();
            let after = &rest[digits..];
            if let Some(tail) = after.strip_prefix(": ") {
                return Some((
                    Place {
                        file: Some(t[..at].to_string()),
                        line,
                        column: None,
                    },
                    tail,
                ));
            }
            if let Some(col) = after.strip_prefix(':') {
                let cdigits = col.bytes().take_while(u8::is_ascii_digit).count();
                if cdigits > 0 {
                    if let Some(tail) = col[cdigits..].strip_prefix(": ") {
                        return Some((
                            Place {
                                file: Some(t[..at].to_string()),
                                line,
                                column: col[..cdigits].parse().ok(),
                            },
                            tail,
                        ));
                    }
                }
            }
        }
        search = at + 1;
        if search >= t.len() {
            break;
        }
    }
    None
}

/// GCC's and Clang's lines.
fn compiler(t: &str) -> Option<Line> {
    let (place, rest) = match place(t) {
        Some(found) => found,
        None => {
            // `a.cpp: In function 'int main()':`, `cc1plus: error: …`,
            // `clang: error: …`.
            let (head, rest) = t.split_once(": ")?;
            if rest.starts_with("In ") && rest.ends_with(':') {
                return Some(Line::Context(t.trim_end_matches(':').to_string()));
            }
            if head.contains(' ') {
                return None;
            }
            // The drivers' summaries of what the linker said before
            // (`collect2: error: ld returned 1 exit status`, `clang: error: linker
            // command failed with exit code 1`).
            if rest.ends_with("exit status") || rest.contains("linker command failed") {
                return None;
            }
            let place = Place::default();
            return severity_of(rest).map(|(severity, message)| finding(severity, place, message));
        }
    };
    if let Some(rest) = rest.strip_prefix("cppcheck-") {
        let (word, message) = rest.split_once(": ")?;
        let severity = match word {
            "error" => DiagnosticSeverity::Error,
            "information" => DiagnosticSeverity::Note,
            _ => DiagnosticSeverity::Warning,
        };
        let (message, id) = match message.strip_suffix(']').and_then(|m| m.rsplit_once(" [")) {
            Some((m, id)) => (m, Some(id.to_string())),
            None => (message, None),
        };
        return Some(Line::Finding(diagnostic(
            severity,
            place,
            id,
            message.trim().to_string(),
            Tool::Cppcheck,
        )));
    }
    if let Some(note) = rest.strip_prefix("note: ") {
        return Some(Line::Note(format!(
            "{}:{}: {note}",
            place.file.unwrap_or_default(),
            place.line.unwrap_or_default()
        )));
    }
    // GCC says where an instantiation was required before the error it led to.
    if rest.trim_start().starts_with("required from") || rest.starts_with("In instantiation of") {
        return Some(Line::Context(format!(
            "{}:{}: {}",
            place.file.unwrap_or_default(),
            place.line.unwrap_or_default(),
            rest.trim()
        )));
    }
    let (severity, message) = severity_of(rest)?;
    Some(finding(severity, place, message))
}

fn finding(severity: DiagnosticSeverity, place: Place, message: &str) -> Line {
    // A trailing `[-Wflag]`: Clang's `[-Werror,-Wunused-variable]` and GCC's
    // `[-Werror=unused-variable]` name the same warning, `-Wunused-variable`.
    let (message, code) = match message.strip_suffix(']').and_then(|m| m.rsplit_once(" [")) {
        Some((m, flags)) if flags.starts_with("-W") => {
            let flag = flags
                .rsplit(',')
                .map(|f| match f.strip_prefix("-Werror=") {
                    Some(w) => format!("-W{w}"),
                    None => f.to_string(),
                })
                .find(|f| f != "-Werror");
            (m, flag)
        }
        _ => (message, None),
    };
    Line::Finding(diagnostic(
        severity,
        place,
        code,
        message.trim().to_string(),
        Tool::Compiler,
    ))
}

/// `error: …`, `fatal error: …`, `warning: …`.
fn severity_of(rest: &str) -> Option<(DiagnosticSeverity, &str)> {
    for (word, severity) in [
        ("error: ", DiagnosticSeverity::Error),
        ("fatal error: ", DiagnosticSeverity::Error),
        ("warning: ", DiagnosticSeverity::Warning),
    ] {
        if let Some(m) = rest.strip_prefix(word) {
            return Some((severity, m));
        }
    }
    None
}

/// MSVC: `a.cpp(10,5): error C2065: 'x': undeclared identifier`, and its linker's
/// `a.obj : error LNK2019: unresolved external symbol …`.
fn msvc(t: &str) -> Option<Diagnostic> {
    // `FILE(LINE[,COL]): ` or `OBJECT : `.
    if !t.contains("): ") && !t.contains(" : ") {
        return None;
    }
    let (head, rest) = t.split_once(": ")?;
    let (severity, rest) = if let Some(r) = rest.strip_prefix("error ") {
        (DiagnosticSeverity::Error, r)
    } else if let Some(r) = rest.strip_prefix("fatal error ") {
        (DiagnosticSeverity::Error, r)
    } else if let Some(r) = rest.strip_prefix("warning ") {
        (DiagnosticSeverity::Warning, r)
    } else {
        return None;
    };
    let (code, message) = rest.split_once(": ")?;
    if !(code.starts_with('C') || code.starts_with("LNK"))
        || !code
            .trim_start_matches("LNK")
            .trim_start_matches('C')
            .chars()
            .all(|c| c.is_ascii_digit())
    {
        return None;
    }
    let head = head.trim();
    let place = match head.strip_suffix(')').and_then(|h| h.rsplit_once('(')) {
        Some((file, pos)) => {
            let mut nums = pos.split(',').map(|n| n.trim().parse::<u32>().ok());
            Place {
                file: Some(file.to_string()),
                line: nums.next().flatten(),
                column: nums.next().flatten(),
            }
        }
        None => Place {
            file: Some(head.to_string()),
            ..Place::default()
        },
    };
    Some(diagnostic(
        severity,
        place,
        Some(code.to_string()),
        message.trim().to_string(),
        Tool::Msvc,
    ))
}

/// GNU ld: `/usr/bin/ld: a.o: in function `main':` then
/// `a.cpp:(.text+0x9): undefined reference to `foo()'`, `multiple definition of …`.
/// `line` without its ANSI escape sequences.
fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            if chars.peek() == Some(&'[') {
                chars.next();
                for d in chars.by_ref() {
                    if ('@'..='~').contains(&d) {
                        break;
                    }
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}

fn ld(t: &str, function: &mut Option<String>) -> Option<Diagnostic> {
    // `/usr/bin/ld: cannot find -lfoo: No such file or directory`.
    if let Some(rest) = t.split_once(": cannot find -l").map(|(_, r)| r) {
        let lib = rest.split([':', ' ']).next().unwrap_or("").to_string();
        return Some(diagnostic(
            DiagnosticSeverity::Error,
            Place::default(),
            None,
            format!("cannot find -l{lib}"),
            Tool::Ld,
        ));
    }
    // Every line of GNU ld's quotes a symbol with a backquote.
    if !t.contains('`') {
        return None;
    }
    if let Some(rest) = t.split_once(": in function `").map(|(_, r)| r) {
        *function = Some(rest.trim_end_matches("':").to_string());
        return None;
    }
    let at = t
        .find("undefined reference to `")
        .or_else(|| t.find("multiple definition of `"))?;
    let message = &t[at..];
    // `a.cpp:(.text+0x9): …` or `/usr/bin/ld: a.o: …`.
    let head = t[..t.len() - message.len()].trim_end_matches([':', ' ']);
    let (file, line) = match head.rsplit_once(":(") {
        Some((file, _)) => (
            Some(file.rsplit(": ").next().unwrap_or(file).to_string()),
            None,
        ),
        None => (
            head.rsplit(": ")
                .next()
                .filter(|f| !f.is_empty())
                .map(str::to_string),
            None,
        ),
    };
    let mut d = diagnostic(
        DiagnosticSeverity::Error,
        Place {
            file,
            line,
            column: None,
        },
        None,
        message.to_string(),
        Tool::Ld,
    );
    if let Some(f) = function.as_ref() {
        d.notes.push(format!("in function {f}"));
    }
    Some(d)
}

/// lld: `ld.lld: error: undefined symbol: foo()`, `… duplicate symbol: bar`.
fn lld(t: &str) -> Option<Diagnostic> {
    let rest = t
        .strip_prefix("ld.lld: ")
        .or_else(|| t.strip_prefix("lld: "))
        .or_else(|| t.strip_prefix("ld64.lld: "))?;
    let (severity, message) = severity_of(rest)?;
    Some(diagnostic(
        severity,
        Place::default(),
        None,
        message.trim().to_string(),
        Tool::Lld,
    ))
}
