//! The JavaScript and TypeScript profile: npm, pnpm, yarn and bun, their scripts read
//! from `package.json` (what `npm run build` runs is what the script says), tsc and
//! the bundlers as builds, vitest, jest, mocha, `node --test` and `bun test` as
//! tests, eslint and biome as analyses.

use std::path::Path;

use air_proto::dependency::{DependencySeverity, DependencySpec};

use super::words::{strip, without, Quiet};
use super::{operands, present, program, Activity, Profile};

pub struct Node;

const MANAGERS: &[&str] = &["npm", "pnpm", "yarn", "bun"];

/// A manager's own commands: a first word that is none of these names a script for
/// pnpm, yarn and bun (`pnpm build`).
const BUILTINS: &[&str] = &[
    "install",
    "i",
    "add",
    "remove",
    "rm",
    "uninstall",
    "ci",
    "update",
    "up",
    "upgrade",
    "init",
    "create",
    "publish",
    "pack",
    "link",
    "unlink",
    "outdated",
    "list",
    "ls",
    "why",
    "audit",
    "config",
    "set",
    "get",
    "exec",
    "dlx",
    "x",
    "info",
    "view",
    "login",
    "logout",
    "cache",
    "store",
    "prune",
    "dedupe",
    "version",
    "help",
    "start",
    "restart",
    "stop",
    "import",
    "patch",
    "workspace",
    "workspaces",
    "env",
    "bin",
    "root",
    "prefix",
    "whoami",
];

const QUIET_MANAGER: Quiet = &[
    "--silent",
    "-s",
    "--loglevel _",
    "--loglevel=*",
    "--color=*",
    "--no-color",
    "--reporter=*",
    "--verbose",
];
/// What a test runner takes after `--` or by itself that changes only its report.
const QUIET_RUNNER: Quiet = &[
    "--verbose",
    "--silent",
    "--color",
    "--colors",
    "--no-color",
    "--no-colors",
    "--ci",
    "--run",
    "--reporter=verbose",
    "--reporter=dot",
    "--reporter=default",
    "--reporter=basic",
    "--reporter=spec",
    "--reporter=tap",
    "--test-reporter=spec",
    "--test-reporter=tap",
    "--test-reporter=dot",
    "--runInBand",
    "-i",
    "--no-cache",
    "--no-watch",
    "--watch=false",
];

const BUNDLERS: &[&str] = &[
    "vite", "webpack", "rollup", "esbuild", "tsup", "parcel", "next", "nuxt",
];

/// A test runner's step: it runs tests unless it only lists them or watches.
fn runner(name: &str, args: &[String]) -> Vec<Activity> {
    let inert = args.iter().any(|a| {
        matches!(
            a.as_str(),
            "--version"
                | "-v"
                | "--help"
                | "-h"
                | "--listTests"
                | "--list"
                | "--watch"
                | "-w"
                | "--watchAll"
        )
    });
    if inert {
        return Vec::new();
    }
    match name {
        // `vitest` in a non-interactive shell runs once; `vitest watch` waits.
        "vitest"
            if args
                .first()
                .is_some_and(|a| matches!(a.as_str(), "watch" | "dev" | "list" | "bench")) =>
        {
            Vec::new()
        }
        "vitest" | "jest" | "mocha" | "ava" | "jasmine" | "c8" | "nyc" => {
            vec![Activity::Test, Activity::Load]
        }
        _ => Vec::new(),
    }
}

impl Node {
    /// The script a manager's step runs, by name (`npm run build`, `pnpm build`,
    /// `npm test`), when the step runs one.
    fn script_name(argv: &[String]) -> Option<String> {
        let manager = program(argv);
        if !MANAGERS.contains(&manager) {
            return None;
        }
        let args = strip(&argv[1..], QUIET_MANAGER);
        let ops = operands(&args);
        let first = ops.first()?;
        match first.as_str() {
            "test" | "t" | "tst" if manager != "bun" => Some("test".into()),
            "run" | "run-script" | "rum" | "urn" => ops.get(1).cloned(),
            name if manager != "npm" && !BUILTINS.contains(&name) && name != "test" => {
                Some(name.to_string())
            }
            _ => None,
        }
    }
}

impl Profile for Node {
    fn name(&self) -> &'static str {
        "node"
    }

    fn detect(&self, root: &Path) -> Vec<String> {
        present(root, &["package.json", "tsconfig.json", "deno.json"])
    }

    fn classify(&self, argv: &[String]) -> Vec<Activity> {
        let name = program(argv);
        let args = &argv[argv.len().min(1)..];
        match name {
            "node" => {
                // `node --test [files]`: the built-in runner.
                if args
                    .iter()
                    .take_while(|a| a.starts_with('-'))
                    .any(|a| a == "--test")
                {
                    vec![Activity::Test, Activity::Load]
                } else {
                    Vec::new()
                }
            }
            "bun" if args.first().is_some_and(|a| a == "test") => {
                vec![Activity::Test, Activity::Load]
            }
            // `npm test` is the project's test script, whatever it says; it is a test
            // run when its output shows tests ran.
            m if MANAGERS.contains(&m) => match Self::script_name(argv).as_deref() {
                Some("test") => vec![Activity::Test],
                _ => Vec::new(),
            },
            "tsc" | "vue-tsc" => {
                if args.iter().any(|a| {
                    matches!(
                        a.as_str(),
                        "-v" | "--version"
                            | "-h"
                            | "--help"
                            | "--init"
                            | "-w"
                            | "--watch"
                            | "--showConfig"
                            | "--listFilesOnly"
                    )
                }) {
                    Vec::new()
                } else {
                    vec![Activity::Build]
                }
            }
            b if BUNDLERS.contains(&b) => {
                if args.first().is_some_and(|a| a == "build")
                    || matches!(b, "webpack" | "rollup" | "esbuild" | "tsup")
                        && !args.iter().any(|a| {
                            a.starts_with("--watch")
                                || a == "-w"
                                || a == "--version"
                                || a == "--help"
                        })
                {
                    vec![Activity::Build]
                } else {
                    Vec::new()
                }
            }
            "eslint"
                if !args
                    .iter()
                    .any(|a| a == "--fix" || a == "--version" || a == "-v" || a == "--help") =>
            {
                vec![Activity::Analysis {
                    paths: operands(args),
                }]
            }
            "biome"
                if args
                    .first()
                    .is_some_and(|a| a == "check" || a == "lint" || a == "ci")
                    && !args.iter().any(|a| {
                        a.starts_with("--write") || a.starts_with("--apply") || a == "--fix"
                    }) =>
            {
                vec![Activity::Analysis {
                    paths: operands(&args[1..]),
                }]
            }
            r => runner(r, args),
        }
    }

    fn quiet(&self, argv: &[String]) -> Option<Vec<String>> {
        let name = program(argv);
        if MANAGERS.contains(&name) {
            let mut out = vec![argv[0].clone()];
            let args = strip(&argv[1..], QUIET_MANAGER);
            // What follows `--` goes to the script: its runner's report options too.
            match args.iter().position(|a| a == "--") {
                Some(i) => {
                    out.extend_from_slice(&args[..i]);
                    let rest = strip(&args[i + 1..], QUIET_RUNNER);
                    if !rest.is_empty() {
                        out.push("--".into());
                        out.extend(rest);
                    }
                }
                None => out.extend(args),
            }
            // `npm run test` is `npm test`.
            if out.len() >= 3 && out[1] == "run" && out[2] == "test" && name != "bun" {
                out.remove(1);
            }
            return Some(out);
        }
        if matches!(name, "vitest" | "jest" | "mocha" | "node") {
            let mut out = without(argv, QUIET_RUNNER);
            // `vitest run` is what `vitest` does without a terminal.
            if name == "vitest" && out.get(1).is_some_and(|a| a == "run") {
                out.remove(1);
            }
            return Some(out);
        }
        None
    }

    fn script(&self, argv: &[String], (root, dir): (&Path, &Path)) -> Option<String> {
        let name = Self::script_name(argv)?;
        let text = crate::opened::read_small(&dir.join("package.json"), root, 1 << 20)?;
        let json: serde_json::Value = serde_json::from_str(&text).ok()?;
        json.get("scripts")?
            .get(&name)?
            .as_str()
            .map(str::to_string)
    }

    fn dependencies(&self) -> Vec<DependencySpec> {
        use air_proto::dependency::{executable, Packages};
        let packages = Packages {
            debian: "nodejs npm",
            fedora: "nodejs npm",
            arch: "nodejs npm",
            macos: "node",
        };
        vec![executable(
            "node",
            &["nodejs"],
            DependencySeverity::Required,
            packages,
        )]
    }
}
