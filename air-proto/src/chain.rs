//! A shell command read as the steps it runs, and whether its exit status vouches for
//! each of them. `cmake --build build && ctest` exiting 0 means both steps passed;
//! `ctest || true`, `ctest; echo done` or `ctest &` exiting 0 says nothing about
//! ctest. A pipeline counts only under `pipefail` (the shell tool runs bash with it).
//!
//! Conservative by design: anything this reader does not follow (a subshell, a
//! function, a control structure at the top level) makes the status vouch for
//! nothing, and the steps are still named for the test tallies.

/// Assignments that change which program a command's name runs, or what bash runs
/// first: a step after one is not the step its words say.
pub const RUNS_ELSEWHERE: &[&str] = &["PATH=", "BASH_ENV=", "ENV=", "LD_PRELOAD="];

/// One step: its words, quotes removed, with leading assignments and wrappers
/// (`env`, `timeout 60`, `nice`, `time`, `sudo`, `command`, `stdbuf`) taken off, and
/// the directory it runs in (relative to where the command started; `None` once a
/// `cd` went somewhere computed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    pub argv: Vec<String>,
    pub dir: Option<String>,
}

/// What a command's text says.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Chain {
    pub steps: Vec<Step>,
    /// Whether exit 0 means every step exited 0: its steps are joined only by `&&`
    /// (and `|`, under pipefail).
    pub vouches: bool,
    /// When it does not vouch: the first part that lets it end 0 when a step failed,
    /// as a person would name it (`` `||` ``, `` `;` ``, a subshell …).
    pub breaker: Option<String>,
}

#[derive(Debug, PartialEq)]
enum Token {
    Word(String),
    /// `&&`
    And,
    /// `|`
    Pipe,
    /// Anything after which the status no longer vouches (`||`, `;`, `&`, a newline,
    /// a parenthesis, a redirection into a command's input from a here-document …),
    /// named for a refusal.
    Break(&'static str),
}

/// Splits the text into words and operators, honouring quotes, escapes and `$(…)`.
fn lex(text: &str) -> Vec<Token> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = text.chars().peekable();
    let flush = |word: &mut String, in_word: &mut bool, out: &mut Vec<Token>| {
        if *in_word {
            out.push(Token::Word(std::mem::take(word)));
            *in_word = false;
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                for d in chars.by_ref() {
                    if d == '\'' {
                        break;
                    }
                    word.push(d);
                }
            }
            '"' => {
                in_word = true;
                while let Some(d) = chars.next() {
                    match d {
                        '"' => break,
                        '\\' => {
                            if let Some(e) = chars.next() {
                                word.push(e);
                            }
                        }
                        _ => word.push(d),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next() {
                    // A line continuation joins the lines.
                    Some('\n') | None => {}
                    Some(e) => word.push(e),
                }
            }
            '$' if chars.peek() == Some(&'(') => {
                // A command substitution is part of the word it is in.
                in_word = true;
                word.push('$');
                let mut depth = 0usize;
                for d in chars.by_ref() {
                    word.push(d);
                    match d {
                        '(' => depth += 1,
                        ')' => {
                            depth = depth.saturating_sub(1);
                            if depth == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                }
            }
            '`' => {
                in_word = true;
                word.push('`');
                for d in chars.by_ref() {
                    word.push(d);
                    if d == '`' {
                        break;
                    }
                }
            }
            '#' if !in_word => {
                // A comment runs to the end of the line.
                for d in chars.by_ref() {
                    if d == '\n' {
                        out.push(Token::Break("a second line"));
                        break;
                    }
                }
            }
            ' ' | '\t' => flush(&mut word, &mut in_word, &mut out),
            '&' => {
                flush(&mut word, &mut in_word, &mut out);
                if chars.peek() == Some(&'&') {
                    chars.next();
                    out.push(Token::And);
                } else if chars.peek() == Some(&'>') {
                    // `&>file`: a redirection, not a background job.
                    chars.next();
                    out.push(Token::Word("&>".into()));
                } else {
                    out.push(Token::Break("`&` (a background job)"));
                }
            }
            '|' => {
                flush(&mut word, &mut in_word, &mut out);
                if chars.peek() == Some(&'|') {
                    chars.next();
                    out.push(Token::Break("`||`"));
                } else {
                    if chars.peek() == Some(&'&') {
                        chars.next();
                    }
                    out.push(Token::Pipe);
                }
            }
            ';' | '\n' | '(' | ')' => {
                flush(&mut word, &mut in_word, &mut out);
                out.push(Token::Break(match c {
                    ';' => "`;`",
                    '\n' => "a second line",
                    _ => "a subshell `( … )`",
                }));
            }
            '>' | '<' => {
                // Redirections: the operator and its target are left out of the
                // words; `2>&1` and `>>` stay one operator, and a file descriptor
                // before it is part of it.
                if in_word && !word.is_empty() && word.chars().all(|d| d.is_ascii_digit()) {
                    word.clear();
                    in_word = false;
                }
                flush(&mut word, &mut in_word, &mut out);
                let mut op = String::from(c);
                while let Some(&d) = chars.peek() {
                    if matches!(d, '>' | '<' | '&' | '-') || d.is_ascii_digit() && op.ends_with('&')
                    {
                        op.push(d);
                        chars.next();
                    } else {
                        break;
                    }
                }
                if op == "<<" || op == "<<-" {
                    // A here-document: its body is not this reader's.
                    out.push(Token::Break("a here-document"));
                }
                out.push(Token::Word(op));
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    flush(&mut word, &mut in_word, &mut out);
    out
}

/// Words that run the rest of the line as the command: how many of their own
/// arguments (at most) come first.
fn wrapper(word: &str) -> bool {
    matches!(
        word,
        "env" | "time" | "nice" | "sudo" | "command" | "exec" | "stdbuf" | "timeout" | "nohup"
    )
}

/// Builtins that change the shell's state for the steps after them.
const SHELL_STATE: &[&str] = &[
    "trap", "set", "shopt", "hash", "enable", "alias", "export", "declare", "typeset", "unset",
    "source", ".", "eval", "builtin", "function",
];

fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !name.starts_with(|c: char| c.is_ascii_digit())
    })
}

/// The words of one step with its redirections, assignments and wrappers removed.
fn program_words(words: Vec<String>) -> Vec<String> {
    let mut argv: Vec<String> = Vec::new();
    let mut skip_target = false;
    for w in words {
        if skip_target {
            skip_target = false;
            continue;
        }
        if w.starts_with('>') || w.starts_with('<') || w.starts_with("&>") || w.ends_with('>') {
            // `2>&1` carries its target; `>` and `<` take the next word.
            if !w.contains('&') || w == "&>" || w == "&>>" {
                skip_target = true;
            }
            continue;
        }
        argv.push(w);
    }
    // Leading assignments and wrappers.
    let mut i = 0;
    while i < argv.len() {
        let w = &argv[i];
        if is_assignment(w) {
            i += 1;
            continue;
        }
        if wrapper(w) {
            let name = w.clone();
            i += 1;
            // Their options, and `timeout`'s duration. One that asks the wrapper
            // something (`command -v make`, `env --version`) runs nothing.
            if argv[i.min(argv.len())..]
                .iter()
                .take_while(|a| a.starts_with('-'))
                .any(|a| matches!(a.as_str(), "-v" | "-V" | "--version" | "--help" | "-h"))
            {
                return Vec::new();
            }
            while i < argv.len() && (argv[i].starts_with('-') || is_assignment(&argv[i])) {
                let takes_value = matches!(argv[i].as_str(), "-n" | "-u" | "-s" | "-k");
                i += 1;
                if takes_value {
                    i += 1;
                }
            }
            if name == "timeout" && i < argv.len() {
                i += 1;
            }
            continue;
        }
        break;
    }
    argv.split_off(i.min(argv.len()))
}

/// Reads a command. `pipefail`: the shell fails a pipeline when any part fails.
pub fn read(command: &str, pipefail: bool) -> Chain {
    read_placed(command, pipefail, None)
}

/// [`read`], for a command that started in `start` (relative to the project root)
/// of the project at `root` (an absolute path): a `cd` to an absolute path inside
/// the project is followed as the relative one it is. Step directories stay relative
/// to `start`.
pub fn read_placed(command: &str, pipefail: bool, place: Option<(&str, &str)>) -> Chain {
    let tokens = lex(command);
    let mut chain = Chain {
        steps: Vec::new(),
        vouches: true,
        breaker: None,
    };
    let mut dir: Option<String> = Some(String::new());
    let mut words: Vec<String> = Vec::new();
    let breaks = |chain: &mut Chain, why: String| {
        if chain.vouches {
            chain.vouches = false;
            chain.breaker = Some(why);
        }
    };
    let end_step = |words: &mut Vec<String>, chain: &mut Chain, dir: &mut Option<String>| {
        // Steps that change what the later ones run or how the status is kept
        // (`trap 'exit 0' EXIT`, `set +o pipefail`, `hash -p /bin/true make`, a PATH of
        // its own): the status vouches for nothing after them.
        if let Some(w) = words.first().filter(|w| SHELL_STATE.contains(&w.as_str())) {
            breaks(
                chain,
                format!("`{w}`, which changes the shell for what follows"),
            );
        }
        if let Some(w) = words
            .iter()
            .take_while(|w| is_assignment(w))
            .find(|w| RUNS_ELSEWHERE.iter().any(|v| w.starts_with(v)))
        {
            let name = w.split('=').next().unwrap_or_default();
            breaks(chain, format!("`{name}=…`, which changes what runs"));
        }
        let argv = program_words(std::mem::take(words));
        if argv.is_empty() {
            return;
        }
        if argv[0] == "cd" || argv[0] == "pushd" {
            *dir = match (argv.get(1), dir.as_ref()) {
                (Some(to), _) if to.contains('$') || to.contains('`') || to.starts_with('~') => {
                    None
                }
                (Some(to), _) if to.starts_with('/') => place.and_then(|(root, start)| {
                    let rel = inside(root, to)?;
                    // From `start` back up to the root, then down.
                    let up = start.split('/').filter(|p| !p.is_empty()).count();
                    Some(join(&"../".repeat(up), &rel))
                }),
                (Some(to), Some(d)) => Some(join(d, to)),
                _ => None,
            };
            return;
        }
        chain.steps.push(Step {
            argv,
            dir: dir.clone(),
        });
    };
    for t in tokens {
        match t {
            Token::Word(w) => words.push(w),
            Token::And => end_step(&mut words, &mut chain, &mut dir),
            Token::Pipe => {
                if !pipefail {
                    breaks(&mut chain, "a pipe `|` without pipefail".into());
                }
                end_step(&mut words, &mut chain, &mut dir);
            }
            Token::Break(why) => {
                breaks(&mut chain, why.to_string());
                end_step(&mut words, &mut chain, &mut dir);
            }
        }
    }
    end_step(&mut words, &mut chain, &mut dir);
    chain
}

/// `to` (absolute) relative to `root`, when it is `root` or under it.
fn inside(root: &str, to: &str) -> Option<String> {
    let root = root.trim_end_matches('/');
    let rest = to.strip_prefix(root)?;
    if !(rest.is_empty() || rest.starts_with('/')) {
        return None;
    }
    let rel = join("", rest);
    (!rel.starts_with("..")).then_some(rel)
}

/// `base/to`, with `.` and `..` folded (`..` past the start leaves the project's
/// view: `None` is not needed here, the path just keeps its `..`).
fn join(base: &str, to: &str) -> String {
    let mut parts: Vec<&str> = base.split('/').filter(|p| !p.is_empty()).collect();
    for p in to.split('/') {
        match p {
            "" | "." => {}
            ".." if parts.last().is_some_and(|l| *l != "..") => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    parts.join("/")
}

/// A word for the shell, quoted when it needs to be.
pub fn quoted(word: &str) -> String {
    if !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:+,@%".contains(c))
    {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// `path` as seen from the project root, for a step that ran in `dir` (relative to
/// where the command started) when the command started in `start` (relative to the
/// root). `None` when it cannot be told.
pub fn from_root(start: &str, dir: Option<&str>, path: &str) -> Option<String> {
    if path.starts_with('/') || path.starts_with('~') || path.contains('$') {
        return None;
    }
    let at = join(start, dir?);
    let joined = join(&at, path);
    (!joined.starts_with("..")).then_some(joined)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(c: &Chain) -> Vec<String> {
        c.steps.iter().map(|s| s.argv.join(" ")).collect()
    }

    #[test]
    fn and_chains_and_pipelines_under_pipefail_vouch_for_every_step() {
        let c = read(
            "cd build && cmake --build . && ctest --output-on-failure",
            true,
        );
        assert!(c.vouches);
        assert_eq!(argv(&c), ["cmake --build .", "ctest --output-on-failure"]);
        assert_eq!(c.steps[0].dir.as_deref(), Some("build"));
        let c = read("ctest 2>&1 | tee log.txt", true);
        assert!(c.vouches);
        assert_eq!(argv(&c), ["ctest", "tee log.txt"]);
        assert!(!read("ctest | tee log.txt", false).vouches);
        let c = read(
            "FOO=1 timeout 60 env -u X python3 -m pytest -q > out.txt",
            true,
        );
        assert_eq!(argv(&c), ["python3 -m pytest -q"]);
        assert!(c.vouches);
    }

    #[test]
    fn anything_that_swallows_a_failure_vouches_for_nothing() {
        for text in [
            "ctest || true",
            "ctest; echo done",
            "ctest &",
            "(ctest)",
            "ctest\necho done",
            "if ctest; then echo ok; fi",
            "cat <<EOF\nx\nEOF",
        ] {
            assert!(!read(text, true).vouches, "{text}");
        }
        // Quoted operators are words.
        let c = read("python3 -c 'print(1); print(2)' && echo \"a || b\"", true);
        assert!(c.vouches);
        assert_eq!(c.steps.len(), 2);
        let c = read(
            "make -C \"$(pwd)/build\" && echo ok # a comment; here",
            true,
        );
        assert!(c.vouches, "{c:?}");
        assert_eq!(c.steps[0].argv[2], "$(pwd)/build");
    }

    #[test]
    fn what_changes_the_shell_or_asks_a_wrapper_vouches_for_nothing() {
        for text in [
            "trap 'exit 0' EXIT && cmake --build build",
            "set +o pipefail && cmake --build build | cat",
            "hash -p /bin/true make && make",
            "PATH=/tmp/fake make",
            "export PATH=/tmp/fake && make",
        ] {
            assert!(!read(text, true).vouches, "{text}");
        }
        assert_eq!(
            read("set +e && make", true).breaker.as_deref(),
            Some("`set`, which changes the shell for what follows")
        );
        assert_eq!(read("make || true", true).breaker.as_deref(), Some("`||`"));
        assert!(read("command -v make", true).steps.is_empty());
        assert!(read("env --version make", true).steps.is_empty());
        assert_eq!(argv(&read("CC=clang make", true)), ["make"]);
    }

    #[test]
    fn a_cd_into_the_project_by_its_absolute_path_is_followed() {
        let c = read_placed("cd /p/proj/sub && make", true, Some(("/p/proj", "")));
        assert_eq!(c.steps[0].dir.as_deref(), Some("sub"));
        let c = read_placed("cd /p/proj && make", true, Some(("/p/proj/", "")));
        assert_eq!(c.steps[0].dir.as_deref(), Some(""));
        // Started in `a/b`: the root is two levels up.
        let c = read_placed("cd /p/proj/sub && make", true, Some(("/p/proj", "a/b")));
        assert_eq!(c.steps[0].dir.as_deref(), Some("../../sub"));
        assert_eq!(from_root("a/b", Some("../../sub"), "."), Some("sub".into()));
        for elsewhere in [
            "cd /p/project && make",
            "cd /p/proj/../x && make",
            "cd /tmp && make",
        ] {
            let c = read_placed(elsewhere, true, Some(("/p/proj", "")));
            assert_eq!(c.steps[0].dir, None, "{elsewhere}");
        }
        assert_eq!(read("cd /p/proj && make", true).steps[0].dir, None);
    }

    #[test]
    fn paths_are_read_from_the_project_root() {
        assert_eq!(from_root("", Some("build"), "../src"), Some("src".into()));
        assert_eq!(
            from_root("sub", Some(""), "a.cpp"),
            Some("sub/a.cpp".into())
        );
        assert_eq!(from_root("", Some(""), "../x"), None);
        assert_eq!(from_root("", None, "a.cpp"), None);
        assert_eq!(from_root("", Some(""), "/etc/x"), None);
    }
}
