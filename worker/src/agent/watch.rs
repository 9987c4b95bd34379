//! The patrol within an agent's own turns (D-008): a model that makes the same call
//! with the same input again and again (or goes round the same few calls), or whose
//! turns bring nothing it had not seen, is in a loop. It is told once; a loop after
//! that stops it, and its task goes on without it (to the debugger, for an
//! executor's work).
//!
//! What a call brought is told by its answer with what changes on every run taken
//! out (ids, timings), so running a check again after an edit is new information
//! when the check says something else, and the same read of an unchanged file is not.

use std::collections::HashSet;
use std::hash::{Hash, Hasher};

use serde_json::Value;

/// The same call answered the same, or the same cycle of up to [`LONGEST_CYCLE`] such
/// calls, this many times in a row is a loop.
pub const REPEATS: usize = 3;
/// Turns in a row that brought nothing new: a loop.
pub const STALE_TURNS: u32 = 4;
/// The longest cycle of calls looked for.
const LONGEST_CYCLE: usize = 3;

/// What the patrol makes of a turn.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Fine,
    /// A loop, the first: the agent is told why.
    Tell(String),
    /// A loop after it was told: the agent stops, with why.
    Stop(String),
}

/// One call's name (as the model knows it), for the reason given.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Call {
    tool: String,
    signature: u64,
}

#[derive(Debug, Default)]
pub struct Watch {
    /// Every call, in order; a loop is looked for from `from` on.
    calls: Vec<Call>,
    from: usize,
    /// The (call, answer) pairs seen, and the texts said.
    seen: HashSet<(u64, u64)>,
    said: HashSet<u64>,
    /// This turn's calls so far brought something new.
    news: bool,
    turn_calls: usize,
    /// Turns in a row with nothing new.
    stale: u32,
    told: bool,
}

impl Watch {
    /// A call the model made this turn and what came back (`answer`: its
    /// [`fingerprint`]).
    pub fn call(&mut self, tool: &str, input: &Value, answer: u64) {
        let signature = hash(&(tool, canonical(input)));
        // A repeat is the same call answered the same: polling something that
        // changes is not one.
        self.calls.push(Call {
            tool: tool.to_string(),
            signature: hash(&(signature, answer)),
        });
        self.turn_calls += 1;
        if self.seen.insert((signature, answer)) {
            self.news = true;
        }
    }

    /// A compaction replaced what the agent had seen with a summary: reading it
    /// again is new information, and the count starts over.
    pub fn forget(&mut self) {
        self.seen.clear();
        self.said.clear();
        self.stale = 0;
        self.from = self.calls.len();
    }

    /// The turn ended, the model having said `said` besides its calls.
    pub fn turn(&mut self, said: &str) -> Verdict {
        let said = said.trim();
        let news = self.news || (!said.is_empty() && self.said.insert(hash(&said)));
        let calls = std::mem::take(&mut self.turn_calls);
        self.news = false;
        self.stale = if news { 0 } else { self.stale + 1 };
        let looped = match self.repeated().filter(|_| calls > 0) {
            Some((n, cycle)) if n >= REPEATS => Some(match cycle.as_slice() {
                [one] => format!(
                    "you called {} with the same input {n} times in a row, and it answered the same",
                    one.tool
                ),
                many => format!(
                    "you went round the same {} calls ({}) with the same inputs {n} times in a row",
                    many.len(),
                    many.iter().map(|c| c.tool.as_str()).collect::<Vec<_>>().join(", ")
                ),
            }),
            _ if self.stale >= STALE_TURNS => Some(format!(
                "your last {} turns brought nothing you had not seen: the same calls gave the same answers",
                self.stale
            )),
            _ => None,
        };
        let Some(why) = looped else {
            return Verdict::Fine;
        };
        if self.told {
            return Verdict::Stop(why);
        }
        self.told = true;
        self.from = self.calls.len();
        self.stale = 0;
        Verdict::Tell(why)
    }

    /// How many times in a row the last cycle of calls (one to [`LONGEST_CYCLE`] long)
    /// repeats at the end, and the cycle; the most repeated.
    fn repeated(&self) -> Option<(usize, Vec<Call>)> {
        let calls = &self.calls[self.from..];
        let mut best: Option<(usize, Vec<Call>)> = None;
        for len in 1..=LONGEST_CYCLE.min(calls.len()) {
            let cycle = &calls[calls.len() - len..];
            // A cycle of one call repeated is a shorter cycle.
            if len > 1 && cycle.iter().all(|c| c.signature == cycle[0].signature) {
                continue;
            }
            let mut n = 1;
            while calls.len() >= (n + 1) * len
                && calls[calls.len() - (n + 1) * len..calls.len() - n * len]
                    .iter()
                    .zip(cycle)
                    .all(|(a, b)| a.signature == b.signature)
            {
                n += 1;
            }
            if best.as_ref().is_none_or(|(m, _)| n > *m) {
                best = Some((n, cycle.to_vec()));
            }
        }
        best
    }
}

/// What an answer said, with what differs on every run taken out: for an answer
/// with structured output, its fields but ids, times and durations; for text, its
/// words with the numbers left out.
pub fn fingerprint(ok: bool, output: Option<&Value>, text: &str) -> u64 {
    match output {
        Some(o) => hash(&(ok, canonical(&steady(o)))),
        None => {
            let words: String = text
                .chars()
                .map(|c| if c.is_ascii_digit() { '#' } else { c })
                .collect();
            hash(&(ok, words))
        }
    }
}

/// `v` without the fields that change on every run.
fn steady(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| !volatile(k))
                .map(|(k, v)| (k.clone(), steady(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(steady).collect()),
        other => other.clone(),
    }
}

fn volatile(key: &str) -> bool {
    key == "id"
        || key.ends_with("_id")
        || key.ends_with("_ms")
        || key.ends_with("_at")
        || matches!(key, "duration" | "elapsed" | "took" | "timestamp")
}

/// `v` as text with every object's keys in order (the same input however the model
/// ordered it).
fn canonical(v: &Value) -> String {
    fn write(v: &Value, out: &mut String) {
        match v {
            Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                out.push('{');
                for k in keys {
                    out.push_str(&Value::String(k.clone()).to_string());
                    out.push(':');
                    if let Some(x) = m.get(k) {
                        write(x, out);
                    }
                    out.push(',');
                }
                out.push('}');
            }
            Value::Array(a) => {
                out.push('[');
                for x in a {
                    write(x, out);
                    out.push(',');
                }
                out.push(']');
            }
            other => out.push_str(&other.to_string()),
        }
    }
    let mut out = String::new();
    write(v, &mut out);
    out
}

fn hash(v: &impl Hash) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    v.hash(&mut h);
    h.finish()
}

#[cfg(test)]
mod tests;
