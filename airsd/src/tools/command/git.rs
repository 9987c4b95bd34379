//! What `git` commands do to the configuration that makes git run code or send
//! data elsewhere (`git config`, `git -c`, `git remote add|set-url`), and what
//! `tar` extraction writes.

use std::path::PathBuf;

use super::{Analysis, Ctx, Risk, Target};

/// Keys of git's configuration that make it run code or send data elsewhere
/// (lower case; a trailing `.` is a prefix).
const GIT_CODE_KEYS: &[&str] = &[
    "core.hookspath",
    "core.fsmonitor",
    "core.sshcommand",
    "core.pager",
    "core.editor",
    "core.askpass",
    "core.gitproxy",
    "core.worktree",
    "core.alternaterefscommand",
    "sequence.editor",
    "diff.external",
    "diff.",
    "merge.",
    "filter.",
    "credential.",
    "remote.",
    "url.",
    "include.",
    "includeif.",
    "alias.",
    "pager.",
    "gpg.",
    "uploadpack.",
    "receive.",
    "ssh.",
    "http.proxy",
    "https.proxy",
    "interactive.difffilter",
    "difftool.",
    "mergetool.",
    "browser.",
    "web.browser",
    "man.",
    "instaweb.",
    "submodule.",
    "protocol.",
    "trailer.",
];

/// Whether git running with `key` set would run code or send data elsewhere.
pub fn git_code_key(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    let k = k.split_once('=').map(|(k, _)| k).unwrap_or(&k);
    GIT_CODE_KEYS.iter().any(|c| match c.strip_suffix('.') {
        Some(prefix) => k.starts_with(prefix) && k[prefix.len()..].starts_with('.'),
        None => k == *c,
    })
}

/// The repository's configuration file, as git would find it from where the
/// command runs.
fn repo_config(env: &Ctx<'_>) -> Option<PathBuf> {
    let cwd = env.cwd()?;
    cwd.ancestors()
        .map(|d| d.join(".git"))
        .find(|g| g.exists())
        .map(|g| if g.is_dir() { g.join("config") } else { g })
}

/// `git …`: its global options, then what its subcommand does.
pub(super) fn git(args: &[(String, Option<String>)], env: &Ctx<'_>, a: &mut Analysis) {
    let mut i = 0;
    while i < args.len() {
        match args[i].1.as_deref() {
            Some("-C") | Some("--git-dir") | Some("--work-tree") | Some("--namespace") => i += 2,
            Some("-c") | Some("--config-env") => {
                if let Some(kv) = args.get(i + 1).and_then(|(_, l)| l.as_deref()) {
                    if git_code_key(kv) {
                        a.risks.push((
                            Risk::CodeConfig,
                            format!("git -c {kv}: makes git run code or send data elsewhere"),
                        ));
                    }
                }
                i += 2;
            }
            Some(l) if l.starts_with("--exec-path=") => {
                a.risks.push((
                    Risk::CodeConfig,
                    format!("git {l}: runs git's programs from elsewhere"),
                ));
                i += 1;
            }
            Some(l) if l.starts_with('-') => i += 1,
            _ => break,
        }
    }
    let sub = args
        .get(i)
        .and_then(|(_, l)| l.as_deref())
        .unwrap_or_default();
    let rest = args.get(i + 1..).unwrap_or_default();
    let lits: Vec<&str> = rest.iter().filter_map(|(_, l)| l.as_deref()).collect();
    match sub {
        "push" => {
            let force = lits.iter().any(|l| {
                *l == "-f"
                    || *l == "--force"
                    || l.starts_with("--force-with-lease")
                    || *l == "--mirror"
                    || *l == "--delete"
                    || (l.starts_with('+') && l.len() > 1)
            });
            if force {
                a.risks.push((
                    Risk::ForcePush,
                    "git push rewriting or deleting remote history".into(),
                ));
            }
        }
        "config" => git_config(rest, env, a),
        "remote"
            if matches!(
                lits.first(),
                Some(&"add") | Some(&"set-url") | Some(&"rename")
            ) =>
        {
            a.risks.push((
                Risk::CodeConfig,
                format!(
                    "git remote {}: changes where git sends and fetches",
                    lits.first().copied().unwrap_or_default()
                ),
            ));
            if let Some(c) = repo_config(env) {
                a.writes.push(Target {
                    path: c,
                    by: "git remote".into(),
                    bulk: false,
                    sources: Vec::new(),
                });
            }
        }
        _ => {}
    }
}

/// `git config …`: a write of a key that runs code asks; any write is a write of the
/// configuration file it changes.
fn git_config(rest: &[(String, Option<String>)], env: &Ctx<'_>, a: &mut Analysis) {
    const WRITE_FLAGS: &[&str] = &[
        "--add",
        "--unset",
        "--unset-all",
        "--replace-all",
        "--rename-section",
        "--remove-section",
        "-e",
        "--edit",
    ];
    const READ_FLAGS: &[&str] = &[
        "--get",
        "--get-all",
        "--get-regexp",
        "--get-urlmatch",
        "--get-color",
        "--get-colorbool",
        "-l",
        "--list",
        "--show-origin",
        "--show-scope",
    ];
    const WRITE_SUBS: &[&str] = &["set", "unset", "rename-section", "remove-section", "edit"];
    const READ_SUBS: &[&str] = &["get", "list"];
    let mut file: Option<Option<PathBuf>> = None;
    let mut operands: Vec<Option<&str>> = Vec::new();
    let mut write_flag = false;
    let mut read_flag = false;
    let mut i = 0;
    while i < rest.len() {
        let lit = rest[i].1.as_deref();
        match lit {
            Some("--global") => file = Some(env.home.map(|h| h.join(".gitconfig"))),
            Some("--system") => file = Some(Some(PathBuf::from("/etc/gitconfig"))),
            Some("--local") | Some("--worktree") => file = None,
            Some("-f") | Some("--file") => {
                i += 1;
                file = Some(
                    rest.get(i)
                        .and_then(|(_, l)| l.as_deref())
                        .and_then(|f| env.absolute(f)),
                );
            }
            Some(l) if l.starts_with("--file=") => file = Some(env.absolute(&l["--file=".len()..])),
            Some(l) if WRITE_FLAGS.contains(&l) => write_flag = true,
            Some(l) if READ_FLAGS.contains(&l) => read_flag = true,
            Some("--type") | Some("--default") | Some("--comment") | Some("--value") => i += 1,
            Some(l) if l.starts_with('-') => {}
            other => operands.push(other),
        }
        i += 1;
    }
    let sub = operands.first().copied().flatten();
    let (write, key) = if sub.is_some_and(|s| WRITE_SUBS.contains(&s)) {
        (true, operands.get(1).copied().flatten())
    } else if sub.is_some_and(|s| READ_SUBS.contains(&s)) || read_flag {
        (false, None)
    } else {
        (write_flag || operands.len() >= 2, sub)
    };
    if !write {
        return;
    }
    match key {
        Some(k) if git_code_key(k) => a.risks.push((
            Risk::CodeConfig,
            format!("git config {k}: makes git run code or send data elsewhere"),
        )),
        Some(_) => {}
        None => a.risks.push((
            Risk::CodeConfig,
            "git config of a key known only when it runs".into(),
        )),
    }
    match file.unwrap_or_else(|| repo_config(env)) {
        Some(path) => a.writes.push(Target {
            path,
            by: "git config".into(),
            bulk: false,
            sources: Vec::new(),
        }),
        None => a
            .dynamic
            .push("git config (a file known only when it runs)".into()),
    }
}

/// `tar`: extracting writes the whole directory it extracts into.
pub(super) fn tar(args: &[(String, Option<String>)], env: &Ctx<'_>, a: &mut Analysis) {
    let extracts = args.iter().enumerate().any(|(i, (_, l))| {
        l.as_deref().is_some_and(|l| {
            l == "--extract"
                || l == "--get"
                || (l.starts_with('-') && !l.starts_with("--") && l.contains('x'))
                || (i == 0 && !l.starts_with('-') && l.contains('x'))
        })
    });
    if extracts {
        match env.cwd() {
            Some(dir) => a.writes.push(Target {
                path: dir,
                by: "tar".into(),
                bulk: true,
                sources: Vec::new(),
            }),
            None => a
                .dynamic
                .push("tar (extracting in a directory known only when it runs)".into()),
        }
    }
}
