//! How a command that ran stands to a check the task names: matched by what it
//! runs, not by its spelling.

/// How airsd reads the commands of an attempt to tell whether one ran a check.
#[derive(Clone, Debug)]
pub struct Reading {
    /// Whether the shell failed a pipeline when any part failed.
    pub pipefail: bool,
    /// The project root (absolute): a `cd` into it by its absolute path is followed.
    pub root: Option<String>,
    /// A step's words with the options that change only how it reports taken out
    /// (`-v`, `--color=never`), as the language profiles know them.
    pub canonical: fn(&[String]) -> Vec<String>,
}

impl Default for Reading {
    fn default() -> Self {
        Self {
            pipefail: true,
            root: None,
            canonical: <[String]>::to_vec,
        }
    }
}

impl PartialEq for Reading {
    fn eq(&self, other: &Self) -> bool {
        self.pipefail == other.pipefail && self.root == other.root
    }
}

/// Whether `ran` (started at the project root) ran `wanted`, read as
/// [`Reading::default`] reads.
pub fn runs(ran: &str, wanted: &str) -> bool {
    compare(ran, Some(""), wanted, &Reading::default()) == Match::Runs
}

/// How a command that ran stands to a check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Match {
    /// It ran the check, and its exit status is the check's.
    Runs,
    /// It ran the check's program, but not the check, or not so that its status
    /// tells: what differed, for the refusal.
    Differs(String),
    /// It did not run the check's program at all.
    Unrelated,
}

/// Whether `ran`, which started in `start_dir` (relative to the project root;
/// `None`: outside it), ran the check `wanted` (written to run at the project root).
///
/// A check is matched by what runs, not by its spelling: each of its steps must be
/// a step of `ran`, in order, in the same directory, with the same words once the
/// options that only change how it reports are taken out ([`Reading::canonical`]);
/// and `ran`'s exit status must vouch for every step (`&&`, and `|` under
/// pipefail). So `cd sub && make test -v 2>&1 | tail -30`, `timeout 60 make test`
/// and `CI=1 make test > log` run `cd sub && make test`; `make test || true`, `make
/// test -k one` and `make test` in another directory do not.
pub fn compare(ran: &str, start_dir: Option<&str>, wanted: &str, reading: &Reading) -> Match {
    use crate::chain;
    let want = chain::read(wanted, true);
    if want.steps.is_empty() {
        return Match::Unrelated;
    }
    let canon = reading.canonical;
    let place = match (reading.root.as_deref(), start_dir) {
        (Some(root), Some(start)) => Some((root, start)),
        _ => None,
    };
    let read = chain::read_placed(ran, reading.pipefail, place);
    // Each step of `ran`: the directory it ran in, from the project root, and its
    // words.
    let steps: Vec<(Option<String>, Vec<String>)> = read
        .steps
        .iter()
        .map(|s| {
            let dir = start_dir
                .zip(s.dir.as_deref())
                .and_then(|(start, d)| chain::from_root(start, Some(d), "."));
            (dir, canon(&s.argv))
        })
        .collect();
    let mut at = 0;
    for w in &want.steps {
        let wdir = w
            .dir
            .as_deref()
            .and_then(|d| chain::from_root("", Some(d), "."));
        let words = canon(&w.argv);
        match steps[at..]
            .iter()
            .position(|(d, a)| *a == words && *d == wdir)
        {
            Some(i) => at += i + 1,
            None => return differs(&steps, wdir.as_deref(), &words),
        }
    }
    match read.breaker {
        Some(why) if !read.vouches => {
            Match::Differs(format!("{why} lets it end 0 when the check fails"))
        }
        _ => Match::Runs,
    }
}

/// What differs between the steps of a command and the check step it lacks.
fn differs(steps: &[(Option<String>, Vec<String>)], dir: Option<&str>, words: &[String]) -> Match {
    let program = words.first();
    let Some((ran_dir, ran)) = steps.iter().rev().find(|(_, a)| a.first() == program) else {
        return Match::Unrelated;
    };
    if ran == words {
        let place = |d: Option<&str>| match d {
            Some("") => "the project root".to_string(),
            Some(d) => format!("`{d}`"),
            None => "a directory airsd cannot place (outside the project, or named by a variable)"
                .to_string(),
        };
        return Match::Differs(format!(
            "it ran in {} where the check runs in {}",
            place(ran_dir.as_deref()),
            place(dir)
        ));
    }
    let missing: Vec<&str> = words[1..]
        .iter()
        .filter(|w| !ran[1..].contains(w))
        .map(String::as_str)
        .collect();
    let added: Vec<&str> = ran[1..]
        .iter()
        .filter(|w| !words[1..].contains(w))
        .map(String::as_str)
        .collect();
    let mut parts = Vec::new();
    if !added.is_empty() {
        parts.push(format!("adds `{}`", added.join(" ")));
    }
    if !missing.is_empty() {
        parts.push(format!("leaves out `{}`", missing.join(" ")));
    }
    if parts.is_empty() {
        parts.push("puts its words in another order".to_string());
    }
    Match::Differs(format!(
        "`{}` {}, which changes what it runs",
        ran.join(" "),
        parts.join(" and ")
    ))
}
