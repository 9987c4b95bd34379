//! What a shell command would do, read from its syntax tree (brush-parser, a bash
//! parser), not from substrings: the files it writes or deletes (redirections, `cp`,
//! `mv`, `rm`, `tee`, `dd of=`, `sed -i`, `find -delete` …, through pipelines,
//! compound commands, `sh -c '…'`, `$(…)` and backquotes), and the risks that are not
//! paths: code downloaded into an interpreter (`curl … | sh`), force pushes, disk
//! tools, and commands whose effect cannot be read from the text (`eval`, a command
//! in a variable). `sudo` alone is no risk (D-031): what it runs is judged.
//!
//! The walk runs over the tree's serde form, so every compound command (if, for,
//! while, case, subshells, brace groups, functions, coprocesses) is covered without
//! a case of its own.

use std::cell::RefCell;
use std::path::{Path, PathBuf};

use brush_parser::word::{self, TildeExpr, WordPiece};
use serde_json::Value;

use super::error::ToolError;
use super::permission::Risk;

mod git;
mod reach;

pub use git::git_code_key;
use git::{git, tar};
use reach::{protected_marker, reaches};

/// A file or directory the command writes, creates or deletes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    /// Absolute, not yet resolved physically.
    pub path: PathBuf,
    /// What writes it, e.g. `rm`, `>`.
    pub by: String,
    /// A directory tree or a glob (`rm -rf dir`, `cp x dir/*`), not one file.
    pub bulk: bool,
    /// For a destination of `cp`, `mv`, `install`, `ln`: the names of what goes
    /// there, which are the files written when the destination is a directory.
    pub sources: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Analysis {
    pub writes: Vec<Target>,
    /// Risks that are not paths, each with the words that raised it.
    pub risks: Vec<(Risk, String)>,
    /// Write targets that depend on the run time (`> $OUT`, `rm -rf "$DIR"`).
    pub dynamic: Vec<String>,
    /// Literal paths the command names (arguments, `<` inputs): what it may read.
    pub mentions: Vec<PathBuf>,
    /// Ways the command could read what the OS sandbox hides, which its text does
    /// not show (code given to an interpreter, a computed path, other processes'
    /// environments): asked where nothing hides them.
    pub reaches: Vec<String>,
    /// Ways the command reaches the network (`curl`, `git clone`, `pip install` …):
    /// asked where the command has no network of its own.
    pub network: Vec<String>,
}

/// Where paths are read from.
pub struct Env<'a> {
    pub cwd: &'a Path,
    pub home: Option<&'a Path>,
}

/// The walk's state: the home directory, and the working directory as the command
/// changes it (`cd`, `pushd`, `popd`), unknown once it changed to a computed place.
struct Ctx<'a> {
    home: Option<&'a Path>,
    cwd: RefCell<Option<PathBuf>>,
    pushed: RefCell<Vec<Option<PathBuf>>>,
}

impl Ctx<'_> {
    fn cwd(&self) -> Option<PathBuf> {
        self.cwd.borrow().clone()
    }

    /// A path as the command means it: relative to where it is by then (`None`
    /// when that is not known).
    fn absolute(&self, text: &str) -> Option<PathBuf> {
        let p = Path::new(text);
        if p.is_absolute() {
            Some(p.to_path_buf())
        } else {
            self.cwd().map(|c| c.join(p))
        }
    }

    fn set_cwd(&self, to: Option<PathBuf>) {
        *self.cwd.borrow_mut() = to;
    }

    /// Runs `f` with the working directory it had before (a subshell, a pipeline's
    /// part, a command's `-C DIR`), then puts it back.
    fn scoped<T>(&self, f: impl FnOnce() -> T) -> T {
        let saved = (self.cwd(), self.pushed.borrow().clone());
        let out = f();
        self.set_cwd(saved.0);
        *self.pushed.borrow_mut() = saved.1;
        out
    }
}

const INTERPRETERS: &[&str] = &[
    "sh", "bash", "zsh", "dash", "ksh", "fish", "python", "python2", "python3", "perl", "ruby",
    "node", "php", "lua", "pwsh",
];
const SHELLS: &[&str] = &["sh", "bash", "zsh", "dash", "ksh"];
const DOWNLOADERS: &[&str] = &["curl", "wget", "fetch", "aria2c"];
const WRAPPERS: &[&str] = &[
    "sudo", "doas", "env", "nice", "nohup", "time", "command", "builtin", "exec", "stdbuf",
    "ionice", "chrt", "timeout", "unbuffer",
];
const DISK_TOOLS: &[&str] = &[
    "fdisk",
    "sfdisk",
    "cfdisk",
    "gdisk",
    "sgdisk",
    "parted",
    "wipefs",
    "mkswap",
    "blkdiscard",
    "hdparm",
    "cryptsetup",
    "losetup",
];
/// Commands whose non-option arguments are all written or deleted.
const ALL_ARGS: &[&str] = &[
    "rm", "rmdir", "unlink", "shred", "touch", "mkdir", "tee", "truncate", "srm",
];
/// Commands whose last argument is the destination.
const LAST_ARG: &[&str] = &["cp", "mv", "install", "ln", "rsync", "scp"];
/// Commands whose first non-option argument is not a path (a mode, an owner).
const FIRST_IS_NOT_PATH: &[&str] = &["chmod", "chown", "chgrp", "setfacl", "chattr"];

fn options() -> brush_parser::ParserOptions {
    brush_parser::ParserOptions::default()
}

/// Analyzes `command` as bash would parse it.
pub fn analyze(command: &str, env: &Env<'_>) -> Result<Analysis, ToolError> {
    let mut a = Analysis::default();
    let ctx = Ctx {
        home: env.home,
        cwd: RefCell::new(Some(env.cwd.to_path_buf())),
        pushed: RefCell::new(Vec::new()),
    };
    walk_source(command, &ctx, &mut a, 0)?;
    a.writes.dedup();
    a.risks.dedup();
    a.mentions.sort();
    a.mentions.dedup();
    a.reaches.dedup();
    Ok(a)
}

fn walk_source(src: &str, env: &Ctx<'_>, a: &mut Analysis, depth: usize) -> Result<(), ToolError> {
    if depth > 8 {
        a.risks
            .push((Risk::Opaque, "commands nested more than 8 deep".into()));
        return Ok(());
    }
    let mut parser = brush_parser::Parser::new(std::io::BufReader::new(src.as_bytes()), &options());
    let program = parser
        .parse_program()
        .map_err(|e| ToolError(format!("command: cannot be parsed as a shell command: {e}")))?;
    let tree = serde_json::to_value(&program)
        .map_err(|e| ToolError(format!("command: cannot be analyzed: {e}")))?;
    walk(&tree, env, a, depth);
    Ok(())
}

/// Visits every node: pipelines, simple commands and redirections wherever they are.
fn walk(v: &Value, env: &Ctx<'_>, a: &mut Analysis, depth: usize) {
    match v {
        Value::Object(map) => {
            // The tree's maps are sorted by key: what runs in order is visited in
            // order, so a `cd` takes effect on what follows it.
            if let (Some(first), Some(more)) = (map.get("first"), map.get("additional")) {
                walk(first, env, a, depth);
                walk(more, env, a, depth);
                return;
            }
            if let Some(sub) = map.get("Subshell") {
                env.scoped(|| walk(sub, env, a, depth));
                return;
            }
            if let Some(Value::Array(seq)) = map.get("seq") {
                pipeline(seq, a);
                if seq.len() > 1 {
                    // Each part of a pipeline runs in a subshell of its own.
                    for part in seq {
                        env.scoped(|| walk(part, env, a, depth));
                    }
                    return;
                }
            }
            if let Some(simple) = map.get("Simple") {
                simple_command(simple, env, a, depth);
            }
            if let Some(Value::Array(file)) = map.get("File") {
                redirect_file(file, env, a, depth);
            }
            if let Some(Value::Array(both)) = map.get("OutputAndError") {
                if let Some(w) = both
                    .first()
                    .and_then(|w| w.get("value"))
                    .and_then(Value::as_str)
                {
                    write_word(w, ">", env, a, depth);
                }
            }
            for child in map.values() {
                walk(child, env, a, depth);
            }
        }
        Value::Array(items) => {
            for item in items {
                walk(item, env, a, depth);
            }
        }
        _ => {}
    }
}

/// `curl … | sh`: a downloader earlier in the pipeline than an interpreter.
fn pipeline(seq: &[Value], a: &mut Analysis) {
    let names: Vec<String> = seq
        .iter()
        .map(|c| {
            c.get("Simple")
                .map(|s| command_words(s).0)
                .and_then(|words| effective(&words).first().cloned())
                .map(|w| basename(&w))
                .unwrap_or_default()
        })
        .collect();
    if let Some(d) = names.iter().position(|n| DOWNLOADERS.contains(&n.as_str())) {
        if let Some(i) = names[d + 1..]
            .iter()
            .find(|n| INTERPRETERS.contains(&n.as_str()))
        {
            a.risks.push((
                Risk::DownloadsCode,
                format!("{} | {i}: runs code fetched from the network", names[d]),
            ));
        }
    }
}

/// The words of a simple command (the raw texts) and its assignments.
fn command_words(simple: &Value) -> (Vec<String>, Vec<String>) {
    let mut words = Vec::new();
    let mut raw = Vec::new();
    if let Some(w) = simple
        .pointer("/word_or_name/value")
        .and_then(Value::as_str)
    {
        words.push(w.to_string());
    }
    if let Some(Value::Array(suffix)) = simple.get("suffix") {
        for item in suffix {
            // `dd of=x` parses as an assignment word after the name; it is an argument.
            let w = item
                .pointer("/Word/value")
                .or_else(|| item.pointer("/AssignmentWord/1/value"));
            if let Some(w) = w.and_then(Value::as_str) {
                words.push(w.to_string());
            }
        }
    }
    if let Some(Value::Array(prefix)) = simple.get("prefix") {
        for item in prefix {
            if let Some(w) = item
                .pointer("/AssignmentWord/1/value")
                .and_then(Value::as_str)
            {
                raw.push(w.to_string());
            }
        }
    }
    (words, raw)
}

/// The command after wrappers (`sudo`, `env A=1`, `timeout 5`, `nice -n 5`).
fn effective(words: &[String]) -> &[String] {
    let mut i = 0;
    while i < words.len() {
        let name = basename(&words[i]);
        if !WRAPPERS.contains(&name.as_str()) {
            break;
        }
        i += 1;
        // The wrapper's own options and arguments.
        while i < words.len() {
            let w = &words[i];
            let takes_value = matches!(w.as_str(), "-u" | "-g" | "-n" | "-c" | "-p" | "-s" | "-k");
            if w.starts_with('-') {
                i += if takes_value { 2 } else { 1 };
            } else if (w.contains('=') && name == "env")
                || (name == "timeout" && w.chars().next().is_some_and(|c| c.is_ascii_digit()))
            {
                i += 1;
            } else {
                break;
            }
        }
    }
    &words[i.min(words.len())..]
}

fn basename(word: &str) -> String {
    let w = word.trim_matches(|c| c == '"' || c == '\'');
    w.rsplit('/').next().unwrap_or(w).to_string()
}

/// A word's literal value, or `None` when it depends on the run time. Substitutions
/// inside it are analyzed as commands of their own.
fn literal(raw: &str, env: &Ctx<'_>, a: &mut Analysis, depth: usize) -> Option<String> {
    let pieces = match word::parse(raw, &options()) {
        Ok(p) => p,
        Err(_) => return Some(raw.to_string()),
    };
    let mut out = String::new();
    let mut dynamic = false;
    let mut stack: Vec<WordPiece> = pieces.into_iter().rev().map(|p| p.piece).collect();
    while let Some(piece) = stack.pop() {
        match piece {
            WordPiece::Text(t) | WordPiece::SingleQuotedText(t) | WordPiece::AnsiCQuotedText(t) => {
                out.push_str(&t)
            }
            WordPiece::EscapeSequence(t) => out.push_str(t.trim_start_matches('\\')),
            WordPiece::DoubleQuotedSequence(inner)
            | WordPiece::GettextDoubleQuotedSequence(inner) => {
                stack.extend(inner.into_iter().rev().map(|p| p.piece));
            }
            WordPiece::TildeExpansion(TildeExpr::Home) => match env.home {
                Some(h) => out.push_str(&h.display().to_string()),
                None => dynamic = true,
            },
            WordPiece::TildeExpansion(TildeExpr::WorkingDir) => match env.cwd() {
                Some(c) => out.push_str(&c.display().to_string()),
                None => dynamic = true,
            },
            WordPiece::TildeExpansion(_) => dynamic = true,
            WordPiece::ParameterExpansion(expr) => {
                let known = match &expr {
                    word::ParameterExpr::Parameter {
                        parameter: word::Parameter::Named(name),
                        indirect: false,
                    } => match name.as_str() {
                        "HOME" => env.home.map(|h| h.display().to_string()),
                        "PWD" => env.cwd().map(|c| c.display().to_string()),
                        _ => None,
                    },
                    _ => None,
                };
                match known {
                    Some(k) => out.push_str(&k),
                    None => dynamic = true,
                }
            }
            WordPiece::CommandSubstitution(src) | WordPiece::BackquotedCommandSubstitution(src) => {
                if let (true, Some(c)) = (src.trim() == "pwd", env.cwd()) {
                    out.push_str(&c.display().to_string());
                } else {
                    if walk_source(&src, env, a, depth + 1).is_err() {
                        a.risks
                            .push((Risk::Opaque, format!("$({src}) cannot be parsed")));
                    }
                    dynamic = true;
                }
            }
            WordPiece::ArithmeticExpression(_) => dynamic = true,
        }
    }
    if dynamic {
        if let Some(m) = protected_marker(&out) {
            a.risks.push((
                Risk::Opaque,
                format!("`{raw}` is computed when it runs and may name a protected place ({m})"),
            ));
        }
    }
    (!dynamic).then_some(out)
}

fn write_word(raw: &str, by: &str, env: &Ctx<'_>, a: &mut Analysis, depth: usize) {
    match literal(raw, env, a, depth) {
        Some(text) => target(&text, by, false, env, a),
        None => a.dynamic.push(format!("{by} {raw}")),
    }
}

fn target(text: &str, by: &str, bulk: bool, env: &Ctx<'_>, a: &mut Analysis) {
    if text.is_empty() || text == "-" {
        return;
    }
    // A glob writes whatever it matches: judge the directory it starts from.
    let (text, bulk) = match text.find(['*', '?', '[']) {
        Some(i) => {
            let dir = text[..i].rsplit_once('/').map(|(d, _)| d).unwrap_or(".");
            (if dir.is_empty() { "/" } else { dir }, true)
        }
        None => (text, bulk),
    };
    let Some(path) = env.absolute(text) else {
        a.dynamic.push(format!(
            "{by} {text} (in a directory known only when it runs)"
        ));
        return;
    };
    a.writes.push(Target {
        path,
        by: by.to_string(),
        bulk,
        sources: Vec::new(),
    });
}

/// Records a literal word that looks like a path as something the command may read.
fn mention(text: &str, env: &Ctx<'_>, a: &mut Analysis) {
    let text = text.split_once('=').map(|(_, v)| v).unwrap_or(text);
    if !(text.contains('/') || text.starts_with('.') || text.starts_with('~')) {
        return;
    }
    match env.absolute(text) {
        Some(p) => {
            if p.starts_with("/proc")
                && !p.starts_with("/proc/self")
                && (text.contains('*') || p.components().nth(3).is_some())
            {
                a.reaches
                    .push(format!("`{text}`: other processes' files under /proc"));
            }
            a.mentions.push(p)
        }
        None => a.reaches.push(format!(
            "`{text}` read in a directory known only when it runs"
        )),
    }
}

fn redirect_file(file: &[Value], env: &Ctx<'_>, a: &mut Analysis, depth: usize) {
    let kind = file.get(1).and_then(Value::as_str).unwrap_or_default();
    if kind == "Read" {
        if let Some(w) = file
            .get(2)
            .and_then(|t| t.pointer("/Filename/value"))
            .and_then(Value::as_str)
        {
            match literal(w, env, a, depth) {
                Some(text) => mention(&text, env, a),
                None => a
                    .reaches
                    .push(format!("`< {w}` reads a path computed when it runs")),
            }
        }
        return;
    }
    if !matches!(kind, "Write" | "Append" | "Clobber" | "ReadAndWrite") {
        return;
    }
    if let Some(w) = file
        .get(2)
        .and_then(|t| t.pointer("/Filename/value"))
        .and_then(Value::as_str)
    {
        let by = match kind {
            "Append" => ">>",
            _ => ">",
        };
        write_word(w, by, env, a, depth);
    }
}

fn simple_command(simple: &Value, env: &Ctx<'_>, a: &mut Analysis, depth: usize) {
    let (raw_words, assignments) = command_words(simple);
    for w in &assignments {
        let _ = literal(w, env, a, depth);
    }
    let effective = effective(&raw_words);
    let Some(first) = effective.first() else {
        return;
    };
    let Some(name) = literal(first, env, a, depth) else {
        a.risks.push((
            Risk::Opaque,
            format!("the command name `{first}` is computed"),
        ));
        return;
    };
    let name = name.rsplit('/').next().unwrap_or(&name).to_string();
    // Literal arguments (`None` where computed); substitutions are analyzed here.
    let args: Vec<(String, Option<String>)> = effective[1..]
        .iter()
        .map(|raw| (raw.clone(), literal(raw, env, a, depth)))
        .collect();
    if matches!(name.as_str(), "cd" | "pushd" | "popd") {
        for lit in args.iter().filter_map(|(_, l)| l.as_deref()) {
            mention(lit, env, a);
        }
        change_dir(&name, &args, env);
        return;
    }
    match dir_option(&name, &args) {
        // `git -C DIR`, `make -C DIR`, `tar -C DIR`: the rest is relative to DIR.
        Some(dir) => env.scoped(|| {
            env.set_cwd(dir.and_then(|d| env.absolute(&d)));
            command_body(&name, &args, env, a, depth)
        }),
        None => command_body(&name, &args, env, a, depth),
    }
}

/// `cd`, `pushd` and `popd`: where the commands after it run.
fn change_dir(name: &str, args: &[(String, Option<String>)], env: &Ctx<'_>) {
    let operand = args.iter().find(|(_, l)| {
        !l.as_deref()
            .is_some_and(|l| l.starts_with('-') && l.len() > 1)
    });
    match name {
        "popd" => {
            let top = env.pushed.borrow_mut().pop();
            if let Some(top) = top {
                env.set_cwd(top);
            }
        }
        _ => {
            let to = match operand {
                None if name == "cd" => env.home.map(Path::to_path_buf),
                // `pushd` alone swaps the top two; `cd -` goes back: not followed.
                None => None,
                Some((_, Some(l))) if l == "-" => None,
                Some((_, Some(l))) => env.absolute(l),
                Some((_, None)) => None,
            };
            if name == "pushd" {
                let here = env.cwd();
                env.pushed.borrow_mut().push(here);
            }
            env.set_cwd(to);
        }
    }
}

/// The directory a command's own option moves it to: `Some(None)` when that
/// directory is computed.
fn dir_option(name: &str, args: &[(String, Option<String>)]) -> Option<Option<String>> {
    let long = match name {
        "git" => None,
        "make" | "gmake" | "tar" | "bsdtar" => Some("--directory"),
        _ => return None,
    };
    let mut dir: Option<Option<String>> = None;
    let mut i = 0;
    while i < args.len() {
        let lit = args[i].1.as_deref();
        if name == "git" && lit.is_some_and(|l| !l.starts_with('-')) {
            // The subcommand: git's own options are before it.
            break;
        }
        let value = match lit {
            Some("-C") => {
                i += 1;
                Some(args.get(i).and_then(|(_, l)| l.clone()))
            }
            Some(l) if long.is_some_and(|o| l == o) => {
                i += 1;
                Some(args.get(i).and_then(|(_, l)| l.clone()))
            }
            Some(l) if long.is_some_and(|o| l.starts_with(&format!("{o}="))) => {
                Some(l.split_once('=').map(|(_, v)| v.to_string()))
            }
            Some(l) if l.starts_with("-C") && l.len() > 2 && name != "tar" => {
                Some(Some(l[2..].to_string()))
            }
            None => Some(None).filter(|_| i > 0 && matches!(args[i - 1].1.as_deref(), Some("-C"))),
            _ => None,
        };
        if let Some(v) = value {
            // Several compose: each is relative to the one before.
            dir = Some(match (dir, v) {
                (Some(Some(before)), Some(v)) if !v.starts_with('/') => {
                    Some(format!("{before}/{v}"))
                }
                (Some(None), _) | (_, None) => None,
                (_, Some(v)) => Some(v),
            });
        }
        i += 1;
    }
    dir
}

fn command_body(
    name: &str,
    args: &[(String, Option<String>)],
    env: &Ctx<'_>,
    a: &mut Analysis,
    depth: usize,
) {
    let name = name.to_string();
    let plain = |i: usize| args.get(i).and_then(|(_, l)| l.clone());
    for lit in args.iter().filter_map(|(_, l)| l.as_deref()) {
        mention(lit, env, a);
    }
    reaches(&name, args, a);
    let mut operands: Vec<(String, Option<String>)> = Vec::new();
    let mut flags: Vec<String> = Vec::new();
    let mut options_done = false;
    for (raw, lit) in args {
        if !options_done && lit.as_deref() == Some("--") {
            options_done = true;
            continue;
        }
        match lit.as_deref() {
            Some(l) if !options_done && l.starts_with('-') && l.len() > 1 => {
                flags.push(l.to_string())
            }
            _ => operands.push((raw.clone(), lit.clone())),
        }
    }
    let write = |raw: &str, lit: &Option<String>, bulk: bool, a: &mut Analysis| match lit {
        Some(text) => target(text, &name, bulk, env, a),
        None => a.dynamic.push(format!("{name} {raw}")),
    };
    let recursive = flags.iter().any(|l| {
        l == "--recursive" || (!l.starts_with("--") && (l.contains('r') || l.contains('R')))
    });
    match name.as_str() {
        n if ALL_ARGS.contains(&n) => {
            let bulk = n == "rm" && recursive || n == "rmdir";
            let skip = usize::from(
                n == "truncate"
                    && operands.len() > 1
                    && args.iter().any(|(_, l)| l.as_deref() == Some("-s")),
            );
            for (raw, lit) in operands.iter().skip(skip) {
                write(raw, lit, bulk, a);
            }
        }
        n if LAST_ARG.contains(&n) => {
            // `-t DIR` names the destination; otherwise the last operand.
            let t = args.iter().position(|(_, l)| {
                l.as_deref() == Some("-t") || l.as_deref() == Some("--target-directory")
            });
            let names = |sources: &[(String, Option<String>)]| -> Vec<String> {
                sources
                    .iter()
                    .filter_map(|(_, l)| l.as_deref())
                    .filter_map(|l| Path::new(l.trim_end_matches('/')).file_name())
                    .map(|n| n.to_string_lossy().into_owned())
                    .collect()
            };
            let before = a.writes.len();
            let sources = if let Some(i) = t {
                if let Some((raw, lit)) = args.get(i + 1) {
                    write(raw, lit, recursive, a);
                }
                names(&operands)
            } else if operands.len() >= 2 {
                if let Some((raw, lit)) = operands.last() {
                    write(raw, lit, recursive, a);
                }
                names(&operands[..operands.len() - 1])
            } else {
                Vec::new()
            };
            if a.writes.len() > before {
                if let Some(last) = a.writes.last_mut() {
                    last.sources = sources;
                }
            }
            if n == "ln"
                && flags.iter().any(|f| {
                    f == "-s" || f == "--symbolic" || (!f.starts_with("--") && f.contains('s'))
                })
            {
                // A link to a place is a way to write that place later: judged as a
                // write to where it points.
                for (raw, lit) in &operands[..operands.len().saturating_sub(1)] {
                    write(raw, lit, false, a);
                }
            }
            if n == "mv" {
                // What is moved away is deleted where it was.
                for (raw, lit) in &operands[..operands.len().saturating_sub(1)] {
                    write(raw, lit, false, a);
                }
            }
        }
        n if FIRST_IS_NOT_PATH.contains(&n) => {
            for (raw, lit) in operands.iter().skip(1) {
                write(raw, lit, recursive, a);
            }
        }
        "dd" => {
            for (raw, lit) in args {
                if let Some(of) = lit.as_deref().and_then(|l| l.strip_prefix("of=")) {
                    if of.starts_with("/dev/") && !super::permission::DEVICES.contains(&of) {
                        a.risks.push((Risk::DiskTools, format!("dd of={of}")));
                    }
                    write(raw, &Some(of.to_string()), false, a);
                }
            }
        }
        "sed" | "perl" => {
            let in_place = args.iter().any(|(_, l)| {
                l.as_deref().is_some_and(|l| {
                    l.starts_with("-i")
                        || l == "--in-place"
                        || (l.starts_with('-') && !l.starts_with("--") && l.contains('i'))
                })
            });
            if in_place {
                // The first operand is the script unless -e/-f gave it.
                let scripted = args
                    .iter()
                    .any(|(_, l)| matches!(l.as_deref(), Some("-e") | Some("-f")));
                for (raw, lit) in operands.iter().skip(usize::from(!scripted)) {
                    write(raw, lit, false, a);
                }
            }
        }
        "find" => {
            let deletes = args
                .iter()
                .any(|(_, l)| matches!(l.as_deref(), Some("-delete")))
                || args.windows(2).any(|w| {
                    matches!(
                        w[0].1.as_deref(),
                        Some("-exec") | Some("-execdir") | Some("-ok")
                    ) && w[1].1.as_deref().is_some_and(|c| {
                        let c = c.rsplit('/').next().unwrap_or(c);
                        ALL_ARGS.contains(&c)
                            || LAST_ARG.contains(&c)
                            || FIRST_IS_NOT_PATH.contains(&c)
                            || INTERPRETERS.contains(&c)
                    })
                });
            if deletes {
                let starts: Vec<&(String, Option<String>)> = args
                    .iter()
                    .take_while(|(_, l)| {
                        !l.as_deref()
                            .is_some_and(|l| l.starts_with('-') || l == "(" || l == "!")
                    })
                    .collect();
                if starts.is_empty() {
                    target(".", "find", true, env, a);
                }
                for (raw, lit) in starts {
                    write(raw, lit, true, a);
                }
            }
        }
        "xargs" | "parallel" => {
            let cmd = operands
                .first()
                .and_then(|(_, l)| l.clone())
                .unwrap_or_default();
            let cmd = cmd.rsplit('/').next().unwrap_or(&cmd).to_string();
            if ALL_ARGS.contains(&cmd.as_str())
                || LAST_ARG.contains(&cmd.as_str())
                || FIRST_IS_NOT_PATH.contains(&cmd.as_str())
            {
                a.dynamic
                    .push(format!("{name} {cmd} (paths from its input)"));
            }
        }
        "eval" => {
            let text: Option<Vec<String>> = args.iter().map(|(_, l)| l.clone()).collect();
            match text {
                Some(words) if walk_source(&words.join(" "), env, a, depth + 1).is_ok() => {}
                _ => a
                    .risks
                    .push((Risk::Opaque, "eval of a computed string".into())),
            }
        }
        "source" | "." if plain(0).is_none() => {
            a.risks
                .push((Risk::Opaque, format!("{name} of a computed file")));
        }
        n if SHELLS.contains(&n) => {
            if let Some(i) = args.iter().position(|(_, l)| {
                l.as_deref().is_some_and(|l| {
                    l == "-c" || (l.starts_with('-') && !l.starts_with("--") && l.ends_with('c'))
                })
            }) {
                match args.get(i + 1) {
                    Some((_, Some(script))) if walk_source(script, env, a, depth + 1).is_err() => {
                        a.risks.push((
                            Risk::Opaque,
                            format!("{name} -c: the script cannot be parsed"),
                        ));
                    }
                    Some((_, Some(_))) => {}
                    Some((raw, None)) => {
                        if raw.contains("curl") || raw.contains("wget") {
                            a.risks.push((
                                Risk::DownloadsCode,
                                format!("{name} -c {raw}: runs code fetched from the network"),
                            ));
                        } else {
                            a.risks.push((
                                Risk::Opaque,
                                format!("{name} -c {raw}: the script is computed"),
                            ));
                        }
                    }
                    None => {}
                }
            }
        }
        "git" => git(args, env, a),
        "tar" | "bsdtar" => tar(args, env, a),
        n if n.starts_with("mkfs") || DISK_TOOLS.contains(&n) => {
            a.risks.push((
                Risk::DiskTools,
                format!("{n}: partitions or formats a disk"),
            ));
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests;
