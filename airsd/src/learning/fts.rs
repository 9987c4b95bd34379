//! What the project's full-text stores (the debug knowledge, the learned memory)
//! share: free text cut into the words their SQLite FTS5 indexes hold, and a query
//! made of the words that say most. Each store keeps, beside its index, how many of
//! its entries hold each word (a `terms` table); a search looks for the words few
//! entries hold — an identifier, a file, a signature, not "error" or "build" — so
//! that it ranks within FTS5's own top-N instead of over every entry.

use rusqlite::{Connection, OptionalExtension as _};

use crate::error::Result;

/// The `terms` table a store keeps beside its index.
pub const TERMS_SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS terms (
    term        TEXT PRIMARY KEY,
    docs        INTEGER NOT NULL
) WITHOUT ROWID;
";

/// Opens (creating when missing, with `schema` and the `terms` table) a store whose
/// schema is version 1; one written by a newer air is refused.
pub fn open(path: &std::path::Path, schema: &str) -> Result<Connection> {
    let conn = Connection::open(path)?;
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    conn.pragma_update(None, "foreign_keys", "ON")?;
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if version == 0 {
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.execute_batch(&format!(
            "BEGIN IMMEDIATE; {schema} {TERMS_SCHEMA} PRAGMA user_version = 1; COMMIT;"
        ))?;
    } else if version > 1 {
        return Err(crate::error::Error::Refused(format!(
            "{} was written by a newer air (schema {version}; this one reads 1)",
            path.display()
        )));
    }
    Ok(conn)
}

/// Words a search looks for, at most.
const TELLING_WORDS: usize = 8;

/// The words of free text as the index holds them (letters and digits, lower case),
/// each once, at most `max`; words of one or two characters and common ones say
/// nothing.
pub fn words(text: &str, max: usize) -> Vec<String> {
    const COMMON: &[&str] = &[
        "the", "and", "for", "not", "with", "was", "this", "that", "from", "are", "but", "has",
        "have", "had", "its", "into", "been", "were", "when", "then", "than", "failed",
    ];
    let mut words: Vec<String> = Vec::new();
    for w in text.split(|c: char| !c.is_alphanumeric()) {
        let w = w.to_lowercase();
        if w.chars().count() < 3 || COMMON.contains(&w.as_str()) || words.contains(&w) {
            continue;
        }
        words.push(w);
        if words.len() == max {
            break;
        }
    }
    words
}

/// Counts an entry's words in `terms` (`by` is 1 for a new entry, -1 for one gone).
pub fn count_words(conn: &Connection, text: &str, by: i64) -> Result<()> {
    let mut count = conn.prepare_cached(
        "INSERT INTO terms (term, docs) VALUES (?1, MAX(?2, 0))
         ON CONFLICT (term) DO UPDATE SET docs = MAX(docs + ?2, 0)",
    )?;
    for w in words(text, usize::MAX) {
        count.execute(rusqlite::params![w, by])?;
    }
    Ok(())
}

/// The FTS5 query for `text` over a store of `total` entries: its telling words,
/// any of them, quoted (so that nothing in the text is FTS syntax); `None` when no
/// word of it is in any entry. The `always` rarest words are looked for however
/// common they are; the others only when few entries hold them.
pub fn telling_query(
    conn: &Connection,
    text: &str,
    total: u64,
    always: usize,
) -> Result<Option<String>> {
    let words = words(text, 64);
    if words.is_empty() {
        return Ok(None);
    }
    let mut counted: Vec<(String, u64)> = Vec::with_capacity(words.len());
    {
        let mut stmt = conn.prepare_cached("SELECT docs FROM terms WHERE term = ?1")?;
        for w in words {
            let doc: Option<u64> = stmt.query_row([&w], |r| r.get(0)).optional()?;
            // A word no entry holds finds nothing.
            if let Some(doc) = doc.filter(|d| *d > 0) {
                counted.push((w, doc));
            }
        }
    }
    counted.sort_by_key(|(_, doc)| *doc);
    // Words in more than one entry of twenty say little; next to rare ones, words
    // twenty times as common as the rarest say little too.
    let rarest = counted.first().map_or(0, |(_, doc)| *doc);
    let common = (total / 20).min(rarest.saturating_mul(20)).max(50);
    let telling: Vec<String> = counted
        .iter()
        .enumerate()
        .filter(|(i, (_, doc))| *doc <= common || *i < always)
        .take(TELLING_WORDS)
        .map(|(_, (w, _))| format!("\"{w}\""))
        .collect();
    Ok((!telling.is_empty()).then(|| telling.join(" OR ")))
}

/// Text on one line, cut to `max` characters.
pub fn one_line(text: &str, max: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match flat.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &flat[..at]),
        None => flat,
    }
}
