//! What a command could reach that its text does not show: code given to an
//! interpreter, computed reads, other processes' files, sockets, ssh — asked where
//! the sandbox's namespaces do not hide those places — and the names of protected
//! places, which ask whatever the sandbox.

use super::{Analysis, Risk};

/// Parts of a path that name a place commands must not reach: credential stores,
/// air's own state and rules, git's configuration, other processes.
const PROTECTED_MARKERS: &[&str] = &[
    "id_rsa",
    "id_dsa",
    "id_ecdsa",
    "id_ed25519",
    ".ssh/",
    ".aws/",
    ".gnupg",
    ".netrc",
    ".git-credentials",
    ".docker/config.json",
    ".kube/",
    ".config/gcloud",
    ".password-store",
    "keyrings",
    ".air/local",
    "airsd.sock",
    "session.db",
    "permissions.yaml",
    ".git/config",
    ".git/hooks",
    "/environ",
    "/etc/shadow",
];

/// The protected place a text names, if it names one.
pub(super) fn protected_marker(text: &str) -> Option<&'static str> {
    if let Some(m) = PROTECTED_MARKERS.iter().copied().find(|m| text.contains(m)) {
        return Some(m);
    }
    // A `.env` file (not `.envrc`, nor a shareable example).
    text.match_indices("/.env").find_map(|(i, _)| {
        let rest = &text[i + "/.env".len()..];
        let end = rest
            .chars()
            .next()
            .is_none_or(|c| matches!(c, '\'' | '"' | ' ' | ')' | ',' | '.'));
        let example = [".example", ".sample", ".template", ".dist"]
            .iter()
            .any(|x| rest.starts_with(x));
        (end && !example).then_some("/.env")
    })
}

/// Interpreters that take code on their command line, and the options that give it.
const INLINE_CODE: &[(&str, &[&str])] = &[
    ("python", &["-c"]),
    ("python2", &["-c"]),
    ("python3", &["-c"]),
    ("pypy", &["-c"]),
    ("pypy3", &["-c"]),
    ("perl", &["-e", "-E"]),
    ("ruby", &["-e"]),
    ("node", &["-e", "--eval", "-p", "--print"]),
    ("nodejs", &["-e", "--eval", "-p", "--print"]),
    ("deno", &["eval"]),
    ("bun", &["-e", "--eval"]),
    ("php", &["-r"]),
    ("lua", &["-e"]),
    ("Rscript", &["-e"]),
    ("awk", &[]),
    ("osascript", &["-e"]),
    ("tclsh", &[]),
];

/// Commands that read the files they are given.
const READERS: &[&str] = &[
    "cat", "tac", "head", "tail", "less", "more", "cp", "mv", "ln", "tar", "rsync", "scp",
    "base64", "xxd", "od", "hexdump", "strings", "grep", "egrep", "fgrep", "rg", "sed", "awk",
    "cut", "sort", "uniq", "diff", "cmp", "zip", "gzip", "zcat", "bzip2", "xz", "openssl", "gpg",
    "sqlite3", "curl", "wget", "nc", "socat", "install", "dd", "source", ".", "python", "python3",
    "node", "perl", "ruby", "jq", "yq", "file", "stat", "find", "ls",
];

/// Programs whose work is the network.
const NETWORK_PROGRAMS: &[&str] = &[
    "curl", "wget", "nc", "ncat", "netcat", "socat", "telnet", "ftp", "tftp", "aria2c", "http",
    "https", "ssh", "scp", "sftp", "rsync", "nmap", "dig", "nslookup", "host",
];

/// Subcommands that reach the network, by program.
const NETWORK_SUBCOMMANDS: &[(&str, &[&str])] = &[
    (
        "git",
        &[
            "clone",
            "fetch",
            "pull",
            "push",
            "ls-remote",
            "submodule",
            "remote",
        ],
    ),
    ("pip", &["install", "download", "index", "search"]),
    ("pip3", &["install", "download", "index", "search"]),
    ("uv", &["pip", "add", "sync", "lock", "tool", "run"]),
    ("poetry", &["install", "add", "update", "lock", "publish"]),
    (
        "npm",
        &[
            "install", "i", "ci", "add", "update", "publish", "view", "exec", "x",
        ],
    ),
    ("npx", &[]),
    ("pnpm", &["install", "i", "add", "update", "dlx", "publish"]),
    ("yarn", &["install", "add", "upgrade", "dlx", "npm"]),
    ("bun", &["install", "add", "x"]),
    (
        "cargo",
        &[
            "install", "fetch", "update", "publish", "search", "add", "login",
        ],
    ),
    ("go", &["get", "install", "mod"]),
    ("gem", &["install", "update", "push"]),
    ("bundle", &["install", "update"]),
    ("mvn", &[]),
    (
        "dotnet",
        &[
            "restore", "build", "test", "run", "add", "new", "pack", "publish", "tool", "workload",
        ],
    ),
    ("gradle", &[]),
    ("apt", &["install", "update", "upgrade"]),
    ("apt-get", &["install", "update", "upgrade"]),
    ("brew", &["install", "update", "upgrade"]),
    ("docker", &["pull", "push", "login", "run", "build"]),
];

/// How `name args…` reaches the network, if it does.
fn network(name: &str, args: &[&str]) -> Option<String> {
    if NETWORK_PROGRAMS.contains(&name) {
        return Some(format!("`{name}` reaches the network"));
    }
    let (_, subs) = NETWORK_SUBCOMMANDS.iter().find(|(n, _)| *n == name)?;
    if subs.is_empty() {
        return Some(format!("`{name}` reaches the network"));
    }
    let sub = args.iter().find(|a| !a.starts_with('-'))?;
    subs.contains(sub)
        .then(|| format!("`{name} {sub}` reaches the network"))
}

/// Records how a command could read what the OS sandbox hides without naming it.
pub(super) fn reaches(name: &str, args: &[(String, Option<String>)], a: &mut Analysis) {
    let lits = || args.iter().filter_map(|(_, l)| l.as_deref());
    if let Some((_, opts)) = INLINE_CODE.iter().find(|(n, _)| *n == name) {
        let inline = if opts.is_empty() {
            true
        } else {
            lits().any(|l| {
                opts.contains(&l)
                    || opts.iter().any(|o| {
                        o.len() == 2
                            && l.starts_with('-')
                            && !l.starts_with("--")
                            && l.ends_with(&o[1..])
                    })
            })
        };
        if inline {
            a.reaches
                .push(format!("`{name}` runs code given on its command line"));
            // Code that names a protected place asks, sandbox or not.
            if let Some(m) = lits().find_map(protected_marker) {
                a.risks.push((
                    Risk::Opaque,
                    format!("`{name}` runs code given on its command line that names a protected place ({m})"),
                ));
            }
        }
    }
    if READERS.contains(&name) {
        if let Some((raw, _)) = args.iter().find(|(_, l)| l.is_none()) {
            a.reaches.push(format!(
                "`{name}` reads a path computed when it runs ({raw})"
            ));
        }
    }
    if matches!(name, "ssh" | "scp" | "sftp")
        || (name == "rsync" && lits().any(|l| l.split('/').next().is_some_and(|h| h.contains(':'))))
    {
        a.reaches.push(format!(
            "`{name}` reaching this machine or another over ssh"
        ));
    }
    if let Some(what) = network(name, &lits().collect::<Vec<_>>()) {
        a.network.push(what);
    }
    if name == "ps" && lits().any(|l| !l.starts_with("--") && l.contains('e') && l.len() <= 6) {
        a.reaches
            .push("`ps` showing other processes' environments".into());
    }
    if lits().any(|l| l.starts_with("--unix-socket") || l == "-U" || l.starts_with("UNIX-")) {
        a.reaches.push(format!("`{name}` connecting to a socket"));
    }
}
