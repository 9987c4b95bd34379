//! A step's words as the profiles read them: the runners that only start a tool
//! from the project's environment (`uv run`, `npx`, `.venv/bin/`), and the options
//! that change only how a tool reports, each profile's as data.
//!
//! Must not: treat an option as quiet unless it is known to change only what is
//! printed (or how fast): `make -q` runs nothing, `tsc -v` prints a version.

/// Options that change only how a tool reports or how fast it runs, one pattern
/// each: `-v` (that word), `--color=*` (any word starting `--color=`), `-j _` (`-j`
/// and the next word), `--parallel #` (and the next word when it is a number).
pub type Quiet = &'static [&'static str];

/// `args` with the options `quiet` names taken out.
pub fn strip(args: &[String], quiet: Quiet) -> Vec<String> {
    let mut out = Vec::with_capacity(args.len());
    let mut i = 0;
    'words: while i < args.len() {
        let a = &args[i];
        for pattern in quiet {
            let (word, value) = match pattern.split_once(' ') {
                Some((w, v)) => (w, Some(v)),
                None => (*pattern, None),
            };
            let hit = match word.strip_suffix('*') {
                Some(prefix) => a.starts_with(prefix) && a.len() > prefix.len(),
                None => a == word,
            };
            if !hit {
                continue;
            }
            i += 1;
            match value {
                Some("_") => i += 1,
                Some("#") if args.get(i).is_some_and(|n| n.parse::<u32>().is_ok()) => i += 1,
                _ => {}
            }
            continue 'words;
        }
        out.push(a.clone());
        i += 1;
    }
    // `cmd --` with nothing after it passes nothing on.
    if out.last().is_some_and(|a| a == "--") {
        out.pop();
    }
    out
}

/// A step's words with the options `quiet` names taken out after its program.
pub fn without(argv: &[String], quiet: Quiet) -> Vec<String> {
    let mut out: Vec<String> = argv.iter().take(1).cloned().collect();
    out.extend(strip(argv.get(1..).unwrap_or_default(), quiet));
    out
}

/// Runners that start a tool from the project's environment and add nothing of
/// their own to what it does: the words before the tool (the runner and its
/// options) and the options of theirs that take a value.
const RUNNERS: &[(&str, &str, &[&str])] = &[
    (
        "uv",
        "run",
        &[
            "--with",
            "--python",
            "-p",
            "--extra",
            "--group",
            "--package",
            "--env-file",
            "--project",
            "--directory",
        ],
    ),
    ("poetry", "run", &["-C", "--directory", "-P", "--project"]),
    ("pdm", "run", &["-p", "--project"]),
    ("pipenv", "run", &[]),
    ("hatch", "run", &[]),
    ("rye", "run", &[]),
    ("npx", "", &["-p", "--package"]),
    ("bunx", "", &[]),
    ("pnpm", "exec", &["-C", "--dir"]),
    ("npm", "exec", &["-w", "--workspace"]),
    ("yarn", "exec", &[]),
];

/// Directories a project's environment keeps its tools in, with the tools that, run
/// from there, are the tool of that name. Only those: a `make` the project put in
/// `.venv/bin` is the project's own program, not make.
const TOOL_DIRS: &[(&str, &[&str])] = &[
    (".venv/bin", PYTHON_TOOLS),
    ("venv/bin", PYTHON_TOOLS),
    ("env/bin", PYTHON_TOOLS),
    ("node_modules/.bin", NODE_TOOLS),
];
const PYTHON_TOOLS: &[&str] = &[
    "python", "python3", "pytest", "py.test", "tox", "nox", "ruff", "mypy", "flake8", "pylint",
    "pyright", "pyflakes",
];
const NODE_TOOLS: &[&str] = &[
    "vitest", "jest", "mocha", "ava", "jasmine", "c8", "nyc", "tsc", "vue-tsc", "eslint", "biome",
    "vite", "webpack", "rollup", "esbuild", "tsup",
];

/// The tool a step runs once its runner is taken off (`uv run --with x pytest -q` →
/// `pytest -q`; `.venv/bin/pytest` → `pytest`; `npx vitest` → `vitest`;
/// `python3 -m pytest` → `pytest`): the same tool from the project's environment.
pub fn tool(argv: &[String]) -> Vec<String> {
    let mut argv = argv.to_vec();
    for _ in 0..3 {
        let Some(first) = argv.first() else {
            return argv;
        };
        // A tool from the project's environment, by its path.
        if let Some((dir, name)) = first.rsplit_once('/') {
            let dir = dir.trim_start_matches("./");
            let known = TOOL_DIRS.iter().any(|(d, tools)| {
                (dir == *d || dir.ends_with(&format!("/{d}")))
                    && (tools.contains(&name) || d.ends_with("bin") && is_python(name))
            });
            if known {
                argv[0] = name.to_string();
                continue;
            }
        }
        let Some((_, sub, valued)) = RUNNERS.iter().find(|(r, _, _)| *r == first.as_str()) else {
            break;
        };
        let mut i = 1;
        if !sub.is_empty() {
            if argv.get(1).map(String::as_str) != Some(sub) {
                break;
            }
            i = 2;
        }
        while let Some(a) = argv.get(i) {
            if a == "--" {
                i += 1;
                break;
            }
            if !a.starts_with('-') {
                break;
            }
            i += if valued.contains(&a.as_str()) { 2 } else { 1 };
        }
        if i >= argv.len() {
            break;
        }
        argv.drain(..i);
    }
    if is_python(super::program(&argv)) {
        // `python3 -m pytest` is pytest; `python3.11` and `python` are the project's
        // Python.
        if argv.len() >= 3 && argv[1] == "-m" && matches!(argv[2].as_str(), "pytest" | "py.test") {
            argv.drain(..2);
        } else {
            argv[0] = "python".into();
        }
    }
    argv
}

/// `python3`, `python`, `python3.11`, `pypy3`.
pub fn is_python(name: &str) -> bool {
    let rest = name
        .strip_prefix("python")
        .or_else(|| name.strip_prefix("pypy"));
    rest.is_some_and(|r| r.chars().all(|c| c.is_ascii_digit() || c == '.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn quiet_options_go_with_their_values() {
        let quiet: Quiet = &["-v", "--color=*", "-j _", "--parallel #", "-j*"];
        for (given, want) in [
            ("make -v test", "make test"),
            ("make -j 4 test --color=always", "make test"),
            ("make -j4 test", "make test"),
            ("cmake --build b --parallel", "cmake --build b"),
            ("cmake --build b --parallel 8", "cmake --build b"),
            ("cmake --build b --parallel x", "cmake --build b x"),
            ("npm test --", "npm test"),
            ("make --color test", "make --color test"),
        ] {
            assert_eq!(strip(&words(given), quiet), words(want), "{given}");
        }
    }

    #[test]
    fn runners_and_environments_come_off() {
        for (given, want) in [
            ("uv run --with pytest-cov pytest -q", "pytest -q"),
            ("poetry run pytest", "pytest"),
            (".venv/bin/pytest tests", "pytest tests"),
            ("./node_modules/.bin/vitest run", "vitest run"),
            ("npx --yes vitest run", "vitest run"),
            ("pnpm exec vitest", "vitest"),
            ("uv run python -m pytest", "pytest"),
            ("python3 -m pytest -x", "pytest -x"),
            (".venv/bin/python3 -m unittest", "python -m unittest"),
            // Not runners: a script of the project's, a runner with nothing to run.
            ("bin/pytest", "bin/pytest"),
            (".venv/bin/make test", ".venv/bin/make test"),
            ("node_modules/.bin/sh -c x", "node_modules/.bin/sh -c x"),
            ("uv run", "uv run"),
            ("uv sync", "uv sync"),
            ("pnpm test", "pnpm test"),
        ] {
            assert_eq!(tool(&words(given)), words(want), "{given}");
        }
    }
}
