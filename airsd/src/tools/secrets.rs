//! Secrets known by what they are, wherever they are kept: a private key, a token of
//! a form its issuer fixed (GitHub, GitLab, Slack, AWS, Google, npm, the LLM
//! providers), a password in a URL, an auth line of npm's configuration, an
//! `Authorization` header. The file tools ask a person before a page holding one
//! reaches a model, grep leaves such lines out, and a configuration a command needs
//! (git's, npm's) is given to it with them taken out.

use std::sync::OnceLock;

use regex::Regex;

/// The forms, each with what it is called.
fn forms() -> &'static [(Regex, &'static str)] {
    &all().0
}

/// Each form with its name, and all of them as one set.
type Forms = (Vec<(Regex, &'static str)>, Option<regex::RegexSet>);

/// The forms, and all of them as one set: a page is searched once, whatever the
/// number of forms.
fn all() -> &'static Forms {
    static FORMS: OnceLock<Forms> = OnceLock::new();
    FORMS.get_or_init(|| {
        let forms: Vec<(Regex, &'static str)> = [
            (
                r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----",
                "a private key",
            ),
            (
                r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^/\s:@]+:[^/\s@]{3,}@",
                "a password in a URL",
            ),
            (r"\b(AKIA|ASIA)[0-9A-Z]{16}\b", "an AWS access key"),
            (r"\bgh[pousr]_[A-Za-z0-9]{30,}", "a GitHub token"),
            (r"\bgithub_pat_[A-Za-z0-9_]{20,}", "a GitHub token"),
            (r"\bglpat-[A-Za-z0-9_-]{20,}", "a GitLab token"),
            (r"\bxox[abprs]-[A-Za-z0-9-]{10,}", "a Slack token"),
            (r"\bsk-(ant-|proj-|or-)?[A-Za-z0-9_-]{20,}", "an API key"),
            (r"\bAIza[0-9A-Za-z_-]{35}", "a Google API key"),
            (r"\bnpm_[A-Za-z0-9]{36}", "an npm token"),
            (
                r"(?m)^\s*[^#;\n]*:?_(authToken|auth|password)\s*=\s*\S",
                "an npm credential",
            ),
            (
                r"(?i)\bauthorization:\s*(bearer|basic|token)\s+[A-Za-z0-9._~+/=-]{8,}",
                "an authorization header",
            ),
        ]
        .into_iter()
        .filter_map(|(p, what)| Regex::new(p).ok().map(|r| (r, what)))
        .collect();
        let set = regex::RegexSet::new(forms.iter().map(|(r, _)| r.as_str())).ok();
        (forms, set)
    })
}

/// What secret `text` holds, if one.
pub fn find(text: &str) -> Option<&'static str> {
    let (forms, set) = all();
    match set {
        Some(set) => set
            .matches(text)
            .iter()
            .next()
            .and_then(|i| forms.get(i))
            .map(|(_, what)| *what),
        None => forms
            .iter()
            .find(|(r, _)| r.is_match(text))
            .map(|(_, what)| *what),
    }
}

/// `text` with every secret's value taken out (a URL keeps its user, a line its
/// key), so that what reads it still finds its settings.
pub fn redact(text: &str) -> String {
    let mut out = text.to_string();
    for (r, what) in forms() {
        out = r
            .replace_all(&out, |c: &regex::Captures<'_>| {
                let whole = c.get(0).map_or("", |m| m.as_str());
                match *what {
                    "a password in a URL" => match whole.rsplit_once(':') {
                        Some((user, _)) => format!("{user}:hidden-by-air@"),
                        None => "hidden-by-air@".to_string(),
                    },
                    "an npm credential" => match whole.split_once('=') {
                        Some((key, _)) => format!("{key}=hidden-by-air"),
                        None => "hidden-by-air".to_string(),
                    },
                    _ => "hidden-by-air".to_string(),
                }
            })
            .into_owned();
    }
    // An npm credential's value runs to the end of its line.
    out.lines()
        .map(|l| match l.split_once("=hidden-by-air") {
            Some((key, _)) => format!("{key}=hidden-by-air"),
            None => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
        + if text.ends_with('\n') { "\n" } else { "" }
}

/// Whether an environment variable's value carries a secret: a form above, or a
/// setting of a password, secret, token or key in it (`-Ddb.password=…`).
pub fn in_value(value: &str) -> bool {
    static SETTING: OnceLock<Option<Regex>> = OnceLock::new();
    let setting = SETTING.get_or_init(|| {
        Regex::new(r"(?i)(password|passwd|secret|token|api[_.-]?key|credential)[A-Za-z0-9_.-]*\s*[=:]\s*\S").ok()
    });
    find(value).is_some() || setting.as_ref().is_some_and(|r| r.is_match(value))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn secrets_are_known_by_their_form_and_taken_out() {
        for (text, what) in [
            ("-----BEGIN OPENSSH PRIVATE KEY-----\nabc", "a private key"),
            (
                "url = https://me:ghp_abcdefghijklmnopqrstuvwxyz0123456789@github.com/x",
                "a password in a URL",
            ),
            ("key AKIAABCDEFGHIJKLMNOP", "an AWS access key"),
            (
                "//registry.npmjs.org/:_authToken=npm_abc",
                "an npm credential",
            ),
            ("x = sk-ant-api03-abcdefghijklmnopqrstuvwxyz", "an API key"),
            (
                "Authorization: Bearer abcdef123456",
                "an authorization header",
            ),
        ] {
            assert_eq!(find(text), Some(what), "{text}");
        }
        for text in [
            "fn password(user: &str) -> String",
            "password = request.form['password']",
            "https://github.com/rust-lang/rust",
            "git@github.com:me/repo.git",
        ] {
            assert_eq!(find(text), None, "{text}");
        }
        let git = "[remote \"origin\"]\n\turl = https://me:s3cr3t-token@host/r.git\n";
        assert_eq!(
            redact(git),
            "[remote \"origin\"]\n\turl = https://me:hidden-by-air@host/r.git\n"
        );
        let npm = "registry=https://registry.npmjs.org/\n//registry.npmjs.org/:_authToken=npm_secret value\n";
        assert_eq!(
            redact(npm),
            "registry=https://registry.npmjs.org/\n//registry.npmjs.org/:_authToken=hidden-by-air\n"
        );
        assert!(in_value("-Xmx1g -Ddb.password=hunter2"));
        assert!(!in_value("-Xmx1g -Dfile.encoding=UTF-8"));
    }
}
