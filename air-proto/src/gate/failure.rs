//! What a debugger investigates (seed 001 §4: it gathers evidence before it fixes):
//! the checks that failed and the files the failure names. Its worker's loop and
//! airsd's own gate read the debugger's calls against it.

use crate::result::{VerificationStatus, WorkerResult};
use crate::task::TaskSpec;

/// What a debugger investigates: the checks that failed (or, unknown, the task's)
/// and the files the failure names.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Failure {
    pub checks: Vec<String>,
    pub files: Vec<String>,
}

impl Failure {
    /// The failure of `spec`'s attempt that ended with `previous`, and the notes
    /// airsd gave its debugger.
    pub fn of(spec: &TaskSpec, previous: Option<&WorkerResult>, notes: &[String]) -> Failure {
        let failed: Vec<String> = previous
            .into_iter()
            .flat_map(|r| &r.verification)
            .filter(|v| v.status == VerificationStatus::Failed)
            .map(|v| v.name.clone())
            .collect();
        // The task's checks the failed ones ran (a result names a check by the command
        // that ran it, wrapped as its agent wrapped it), and those that are none of them.
        let task = spec.verification.commands.clone().unwrap_or_default();
        let checks = if failed.is_empty() {
            task
        } else {
            let mut checks: Vec<String> = task
                .iter()
                .filter(|c| failed.iter().any(|f| f == *c || super::runs(f, c)))
                .cloned()
                .collect();
            // Failed checks that name none of the task's (a summary's words, not a
            // command): the task's checks still show the failure.
            if checks.is_empty() {
                checks.clone_from(&task);
            }
            for f in failed {
                if !task.iter().any(|c| f == *c || super::runs(&f, c)) {
                    checks.push(f);
                }
            }
            checks
        };
        // The files the failure names: what the failed attempt changed, and the paths
        // its words and airsd's notes name.
        let mut files: Vec<String> = Vec::new();
        let mut add = |p: &str| {
            let p = p.trim_start_matches("./");
            if !p.is_empty() && !files.iter().any(|f| f == p) {
                files.push(p.to_string());
            }
        };
        if let Some(r) = previous {
            r.changed_files.iter().for_each(|f| add(f));
        }
        let mut texts: Vec<&str> = Vec::new();
        if let Some(r) = previous {
            texts.push(&r.summary);
            texts.extend(r.verification.iter().filter_map(|v| v.notes.as_deref()));
        }
        texts.extend(notes.iter().map(String::as_str));
        for t in texts {
            paths_in(t).into_iter().for_each(|p| add(&p));
        }
        Failure { checks, files }
    }

    /// Whether a read of `path` bears on the failure: a file it names (a failure
    /// that names no file and no check is borne on by any read).
    pub fn reads(&self, path: &str) -> bool {
        let path = path.trim_start_matches("./");
        (self.files.is_empty() && self.checks.is_empty())
            || self
                .files
                .iter()
                .any(|f| f == path || path.ends_with(&format!("/{f}")))
    }
}

/// A command that runs nothing that could show a failure.
pub fn idle(command: &str) -> bool {
    command.split(['&', '|', ';']).all(|step| {
        let word = step.split_whitespace().next().unwrap_or("");
        matches!(
            word,
            "" | "true" | ":" | "false" | "echo" | "printf" | "sleep" | "exit" | "pwd" | "cd"
        )
    })
}

/// Project paths named in `text`: words with a folder or an extension, without a
/// `:line:col`, quotes or trailing punctuation, and not URLs.
fn paths_in(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for word in text
        .split(|c: char| c.is_whitespace() || matches!(c, '`' | '\'' | '"' | '(' | ')' | ',' | ';'))
    {
        if word.contains("://") || word.starts_with('-') {
            continue;
        }
        let word = word.split(':').next().unwrap_or("");
        let word = word.trim_end_matches(['.', ',', ';', '!', '?']);
        let named = word.rsplit_once('.').is_some_and(|(stem, ext)| {
            !stem.is_empty()
                && (1..=5).contains(&ext.len())
                && ext.chars().all(|c| c.is_ascii_alphanumeric())
                && ext.chars().any(|c| c.is_ascii_alphabetic())
        });
        if named && !word.starts_with('/') && !word.contains("..") {
            out.push(word.to_string());
        }
    }
    out
}
