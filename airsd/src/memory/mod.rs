//! The project's learned memory (D-020, D-024): typed entries in
//! `.air/local/learned-memory.db` — what the user wants, how the project works, what
//! the user said of air's work, where to look — with the skill drafts and
//! corrections the ExperienceMiner proposes. A proposal already kept is counted
//! (`seen`), not kept twice. Agents' contexts get the promoted entries that concern
//! their task: by its files (an entry's file, or a directory above it) and by its
//! telling words (SQLite FTS5, as the debug knowledge), the user's own preferences
//! always in the running, within a budget; what did not fit is named as omitted.
//! The Curator's marks (stale, unused) and the skills' use counts are kept here too.

use std::collections::HashMap;
use std::path::Path;

use air_proto::memory::{key_of, MemoryEntry, MemoryKind, MemoryProposal, MemoryStatus};
use rusqlite::{params, Connection, OptionalExtension as _};

use crate::error::{Error, Result};
use crate::learning::fts;

pub mod apply;
pub mod curator;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS entries (
    rowid           INTEGER PRIMARY KEY,
    id              TEXT NOT NULL UNIQUE,
    key             TEXT NOT NULL UNIQUE,
    kind            TEXT NOT NULL
        CHECK (kind IN ('user', 'project', 'feedback', 'reference', 'skill', 'patch')),
    status          TEXT NOT NULL CHECK (status IN ('candidate', 'promoted', 'archived')),
    title           TEXT NOT NULL,
    body            TEXT NOT NULL,
    files           TEXT NOT NULL,
    terms           TEXT NOT NULL,
    target          TEXT,
    source          TEXT NOT NULL,
    seen            INTEGER NOT NULL,
    debug_record_id TEXT,
    verified        INTEGER NOT NULL,
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL,
    uses            INTEGER NOT NULL DEFAULT 0,
    last_used_at    TEXT,
    note            TEXT
);
CREATE INDEX IF NOT EXISTS entries_status ON entries (status, kind, uses DESC, updated_at DESC);
-- The files and directories each entry concerns, for the task's files to find it.
CREATE TABLE IF NOT EXISTS entry_files (
    path            TEXT NOT NULL,
    entry           INTEGER NOT NULL REFERENCES entries (rowid) ON DELETE CASCADE,
    PRIMARY KEY (path, entry)
) WITHOUT ROWID;
CREATE VIRTUAL TABLE IF NOT EXISTS entries_fts USING fts5(
    title, body, terms, content='entries', content_rowid='rowid', tokenize='unicode61'
);
CREATE TRIGGER IF NOT EXISTS entries_ai AFTER INSERT ON entries BEGIN
    INSERT INTO entries_fts (rowid, title, body, terms) VALUES (new.rowid, new.title, new.body, new.terms);
END;
CREATE TRIGGER IF NOT EXISTS entries_ad AFTER DELETE ON entries BEGIN
    INSERT INTO entries_fts (entries_fts, rowid, title, body, terms)
    VALUES ('delete', old.rowid, old.title, old.body, old.terms);
END;
CREATE TRIGGER IF NOT EXISTS entries_au AFTER UPDATE OF title, body, terms ON entries BEGIN
    INSERT INTO entries_fts (entries_fts, rowid, title, body, terms)
    VALUES ('delete', old.rowid, old.title, old.body, old.terms);
    INSERT INTO entries_fts (rowid, title, body, terms) VALUES (new.rowid, new.title, new.body, new.terms);
END;
INSERT INTO entries_fts (entries_fts, rank) VALUES ('rank', 'bm25(4.0, 1.0, 2.0)');
-- How often each skill was loaded, for the Curator.
CREATE TABLE IF NOT EXISTS skill_uses (
    name            TEXT PRIMARY KEY,
    uses            INTEGER NOT NULL,
    last_used_at    TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS meta (
    key             TEXT PRIMARY KEY,
    value           TEXT NOT NULL
) WITHOUT ROWID;
";

const COLUMNS: &str = "id, kind, status, title, body, files, terms, target, source, seen, \
     debug_record_id, verified, created_at, updated_at, uses, last_used_at, note";

/// The most characters of entries one context is given.
pub const CONTEXT_CHARS: usize = 6_000;
/// The most entries one context is given.
const CONTEXT_ENTRIES: usize = 12;
/// The most entries weighed for one context (the rest are not named as omitted).
const CANDIDATES: usize = 48;
/// The most files of a task looked up (each with the directories above it).
const FILES_LOOKED_UP: usize = 64;

/// What was chosen for a context, and what concerned the task but did not fit.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Selection {
    pub chosen: Vec<MemoryEntry>,
    /// `(id, title)` of each entry left out.
    pub omitted: Vec<(String, String)>,
}

/// A proposal kept: the entry as it now stands, and whether it is new.
#[derive(Clone, Debug, PartialEq)]
pub struct Kept {
    pub entry: MemoryEntry,
    pub new: bool,
}

/// The learned memory of one project.
pub struct Memory {
    conn: Connection,
}

impl Memory {
    /// Opens (creating when missing) the project's database at `path`.
    pub fn open(path: &Path) -> Result<Memory> {
        Ok(Memory {
            conn: fts::open(path, SCHEMA)?,
        })
    }

    /// Keeps a proposal: a new candidate, or the entry of the same kind and title
    /// (or target) counted once more, its files and words joined. An archived entry
    /// proposed again is a candidate again; a promoted one stays promoted.
    pub fn propose(
        &mut self,
        p: &MemoryProposal,
        source: &str,
        debug_record_id: Option<&str>,
        now: &str,
    ) -> Result<Kept> {
        let tx = self.conn.transaction()?;
        let kept = propose_in(&tx, p, source, debug_record_id, now)?;
        tx.commit()?;
        Ok(kept)
    }
}

/// [`Memory::propose`] within a transaction.
fn propose_in(
    tx: &Connection,
    p: &MemoryProposal,
    source: &str,
    debug_record_id: Option<&str>,
    now: &str,
) -> Result<Kept> {
    let key = key_of(p.kind, &p.title, p.target.as_deref());
    let found: Option<(i64, String)> = tx
        .query_row(
            "SELECT rowid, id FROM entries WHERE key = ?1",
            [&key],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    let new = found.is_none();
    let id = match found {
        Some((rowid, id)) => {
            let old = get_by(tx, "rowid = ?1", params![rowid])?
                .ok_or_else(|| Error::Internal(format!("memory {id} vanished")))?;
            let files = joined(&old.files, &p.files);
            let terms = joined(&old.terms, &p.terms);
            // A newer skill draft or patch replaces the older text: it is what the
            // user will be shown.
            let body = if p.kind.is_memory() {
                &old.body
            } else {
                &p.body
            };
            tx.execute(
                "UPDATE entries SET seen = seen + 1, files = ?2, terms = ?3, body = ?4,
                         updated_at = ?5,
                         status = CASE status WHEN 'archived' THEN 'candidate' ELSE status END,
                         debug_record_id = COALESCE(?6, debug_record_id)
                     WHERE rowid = ?1",
                params![
                    rowid,
                    serde_json::to_string(&files).unwrap_or_default(),
                    terms.join(" "),
                    body,
                    now,
                    debug_record_id
                ],
            )?;
            index_files(tx, rowid, &files)?;
            id
        }
        None => {
            let id = format!("mem-{}", air_proto::ids::new_id());
            let files = joined(&[], &p.files);
            tx.execute(
                "INSERT INTO entries (id, key, kind, status, title, body, files, terms, target,
                         source, seen, debug_record_id, verified, created_at, updated_at)
                     VALUES (?1, ?2, ?3, 'candidate', ?4, ?5, ?6, ?7, ?8, ?9, 1, ?10, 0, ?11, ?11)",
                params![
                    id,
                    key,
                    p.kind.as_str(),
                    p.title.trim(),
                    p.body.trim(),
                    serde_json::to_string(&files).unwrap_or_default(),
                    joined(&[], &p.terms).join(" "),
                    p.target,
                    source,
                    debug_record_id,
                    now,
                ],
            )?;
            let rowid = tx.last_insert_rowid();
            index_files(tx, rowid, &files)?;
            fts::count_words(
                tx,
                &format!("{} {} {}", p.title, p.body, p.terms.join(" ")),
                1,
            )?;
            id
        }
    };
    let entry = get_by(tx, "id = ?1", params![id])?
        .ok_or_else(|| Error::Internal(format!("memory {id} was not kept")))?;
    Ok(Kept { entry, new })
}

impl Memory {
    /// One entry.
    pub fn get(&self, id: &str) -> Result<Option<MemoryEntry>> {
        get_by(&self.conn, "id = ?1", params![id])
    }

    /// Entries, newest first, filtered by status and kind.
    pub fn list(
        &self,
        status: Option<MemoryStatus>,
        kind: Option<MemoryKind>,
        limit: u32,
    ) -> Result<Vec<MemoryEntry>> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT {COLUMNS} FROM entries
             WHERE (?1 IS NULL OR status = ?1) AND (?2 IS NULL OR kind = ?2)
             ORDER BY updated_at DESC, rowid DESC LIMIT ?3"
        ))?;
        let rows = stmt.query_map(
            params![status.map(|s| s.as_str()), kind.map(|k| k.as_str()), limit],
            entry_of,
        )?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }

    /// Sets an entry's status (promoted, archived), with why; the entry as it now is.
    pub fn set_status(
        &self,
        id: &str,
        status: MemoryStatus,
        note: Option<&str>,
        now: &str,
    ) -> Result<Option<MemoryEntry>> {
        self.conn.execute(
            "UPDATE entries SET status = ?2, note = ?3, updated_at = ?4 WHERE id = ?1",
            params![id, status.as_str(), note, now],
        )?;
        self.get(id)
    }

    /// Marks the entries learned from a debugging record whose fix a build or tests
    /// proved, and promotes those that are candidates; the promoted ones.
    pub fn verify_debug(&self, debug_record_id: &str, now: &str) -> Result<Vec<MemoryEntry>> {
        let ids: Vec<String> = {
            let mut stmt = self.conn.prepare_cached(
                "SELECT id FROM entries WHERE debug_record_id = ?1 AND status = 'candidate'
                     AND kind IN ('user', 'project', 'feedback', 'reference')",
            )?;
            let rows = stmt.query_map([debug_record_id], |r| r.get(0))?;
            rows.collect::<rusqlite::Result<_>>()?
        };
        self.conn.execute(
            "UPDATE entries SET verified = 1 WHERE debug_record_id = ?1",
            [debug_record_id],
        )?;
        let mut promoted = Vec::new();
        for id in ids {
            if let Some(e) = self.set_status(&id, MemoryStatus::Promoted, None, now)? {
                promoted.push(e);
            }
        }
        Ok(promoted)
    }

    /// Removes an entry (the user's word only); the entry it was.
    pub fn forget(&self, id: &str) -> Result<Option<MemoryEntry>> {
        let Some(entry) = self.get(id)? else {
            return Ok(None);
        };
        fts::count_words(
            &self.conn,
            &format!("{} {} {}", entry.title, entry.body, entry.terms.join(" ")),
            -1,
        )?;
        self.conn
            .execute("DELETE FROM entries WHERE id = ?1", [id])?;
        Ok(Some(entry))
    }

    /// The promoted memories that concern a task — its files (or a directory above
    /// one), its words, and the user's own preferences — best first, as many as fit
    /// in `max_chars`; the others are named as omitted.
    pub fn select(&self, files: &[String], text: &str, max_chars: usize) -> Result<Selection> {
        let mut score: HashMap<i64, f64> = HashMap::new();
        {
            let mut by_path = self
                .conn
                .prepare_cached("SELECT entry FROM entry_files WHERE path = ?1")?;
            for f in files.iter().take(FILES_LOOKED_UP) {
                let f = normal(f);
                let mut weight = 10.0;
                let mut at = Some(f.as_str());
                while let Some(p) = at.filter(|p| !p.is_empty()) {
                    for rowid in by_path.query_map([p], |r| r.get::<_, i64>(0))? {
                        *score.entry(rowid?).or_default() += weight;
                    }
                    weight = 5.0;
                    at = p.rfind('/').map(|i| &p[..i]);
                }
            }
        }
        // How many entries there are, near enough (entries are rarely forgotten),
        // without counting them.
        let total: u64 =
            self.conn
                .query_row("SELECT COALESCE(MAX(rowid), 0) FROM entries", [], |r| {
                    r.get(0)
                })?;
        if let Some(query) = fts::telling_query(&self.conn, text, total, 1)? {
            let mut stmt = self.conn.prepare_cached(
                "SELECT rowid FROM entries_fts WHERE entries_fts MATCH ?1 ORDER BY rank LIMIT 24",
            )?;
            for (i, rowid) in stmt.query_map([query], |r| r.get::<_, i64>(0))?.enumerate() {
                *score.entry(rowid?).or_default() += 4.0 - i as f64 * 0.05;
            }
        }
        {
            let mut stmt = self.conn.prepare_cached(
                "SELECT rowid FROM entries WHERE status = 'promoted' AND kind = 'user'
                 ORDER BY uses DESC, updated_at DESC LIMIT 12",
            )?;
            for rowid in stmt.query_map([], |r| r.get::<_, i64>(0))? {
                *score.entry(rowid?).or_default() += 1.0;
            }
        }
        // The best candidates by score, read at once.
        let mut ranked: Vec<(i64, f64)> = score.into_iter().collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        ranked.truncate(CANDIDATES);
        let mut found: Vec<(f64, MemoryEntry)> = Vec::new();
        if !ranked.is_empty() {
            let ids = ranked
                .iter()
                .map(|(r, _)| r.to_string())
                .collect::<Vec<_>>()
                .join(",");
            let mut stmt = self.conn.prepare(&format!(
                // By rowid alone (a filter on status would have SQLite walk its index
                // of every promoted entry instead); the rest is judged here.
                "SELECT rowid, {COLUMNS} FROM entries WHERE rowid IN ({ids})"
            ))?;
            let rows = stmt.query_map([], |r| {
                let rowid: i64 = r.get(0)?;
                Ok((rowid, entry_at(r, 1)?))
            })?;
            for row in rows {
                let (rowid, e) = row?;
                if e.status != MemoryStatus::Promoted || !e.kind.is_memory() {
                    continue;
                }
                let s = ranked
                    .iter()
                    .find(|(r, _)| *r == rowid)
                    .map_or(0.0, |(_, s)| *s);
                found.push((s, e));
            }
        }
        // The best first: by score, a proven lesson before an unproven one, then the
        // one seen most, then the newest.
        found.sort_by(|(a, x), (b, y)| {
            b.total_cmp(a)
                .then(y.verified.cmp(&x.verified))
                .then(y.seen.cmp(&x.seen))
                .then(y.updated_at.cmp(&x.updated_at))
        });
        let mut out = Selection::default();
        let mut used = 0;
        for (_, e) in found {
            let size = e.title.len() + e.body.len() + 8;
            if out.chosen.len() < CONTEXT_ENTRIES && used + size <= max_chars {
                used += size;
                out.chosen.push(e);
            } else {
                out.omitted.push((e.id, e.title));
            }
        }
        Ok(out)
    }

    /// Counts that these entries were put in a context.
    pub fn mark_used(&self, ids: &[String], now: &str) -> Result<()> {
        let mut stmt = self.conn.prepare_cached(
            "UPDATE entries SET uses = uses + 1, last_used_at = ?2 WHERE id = ?1",
        )?;
        for id in ids {
            stmt.execute(params![id, now])?;
        }
        Ok(())
    }

    /// Counts that a skill was loaded.
    pub fn skill_used(&self, name: &str, now: &str) -> Result<()> {
        self.conn.execute(
            "INSERT INTO skill_uses (name, uses, last_used_at) VALUES (?1, 1, ?2)
             ON CONFLICT (name) DO UPDATE SET uses = uses + 1, last_used_at = ?2",
            params![name, now],
        )?;
        Ok(())
    }

    /// When each skill was last loaded, and how often.
    pub fn skill_uses(&self) -> Result<HashMap<String, (u32, String)>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT name, uses, last_used_at FROM skill_uses")?;
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, (r.get(1)?, r.get(2)?))))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// A value the store keeps about itself (the Curator's last pass).
    pub fn meta(&self, key: &str) -> Result<Option<String>> {
        Ok(self
            .conn
            .query_row("SELECT value FROM meta WHERE key = ?1", [key], |r| r.get(0))
            .optional()?)
    }

    pub fn set_meta(&self, key: &str, value: &str) -> Result<()> {
        self.conn.execute(
            "INSERT INTO meta (key, value) VALUES (?1, ?2)
             ON CONFLICT (key) DO UPDATE SET value = ?2",
            params![key, value],
        )?;
        Ok(())
    }

    /// Many proposals in one transaction, promoted (for benchmarks and imports).
    pub fn import_promoted(&mut self, entries: &[MemoryProposal], now: &str) -> Result<()> {
        let tx = self.conn.transaction()?;
        for p in entries {
            let kept = propose_in(&tx, p, "import", None, now)?;
            tx.execute(
                "UPDATE entries SET status = 'promoted' WHERE id = ?1",
                [&kept.entry.id],
            )?;
        }
        tx.commit()?;
        Ok(())
    }
}

/// A relative path as entries keep it: no `./`, no trailing `/`.
fn normal(path: &str) -> String {
    path.trim()
        .trim_start_matches("./")
        .trim_end_matches('/')
        .to_string()
}

/// `old` with the new values not in it, in order.
fn joined(old: &[String], new: &[String]) -> Vec<String> {
    let mut out: Vec<String> = old.to_vec();
    for v in new {
        let v = normal(v);
        if !v.is_empty() && !out.contains(&v) {
            out.push(v);
        }
    }
    out
}

fn index_files(conn: &Connection, rowid: i64, files: &[String]) -> Result<()> {
    let mut stmt =
        conn.prepare_cached("INSERT OR IGNORE INTO entry_files (path, entry) VALUES (?1, ?2)")?;
    for f in files {
        stmt.execute(params![f, rowid])?;
    }
    Ok(())
}

fn get_by(
    conn: &Connection,
    filter: &str,
    args: impl rusqlite::Params,
) -> Result<Option<MemoryEntry>> {
    let mut stmt = conn.prepare_cached(&format!("SELECT {COLUMNS} FROM entries WHERE {filter}"))?;
    Ok(stmt.query_row(args, entry_of).optional()?)
}

fn entry_of(row: &rusqlite::Row<'_>) -> rusqlite::Result<MemoryEntry> {
    entry_at(row, 0)
}

/// An entry from `row`'s columns [`COLUMNS`], starting at column `at`.
fn entry_at(row: &rusqlite::Row<'_>, at: usize) -> rusqlite::Result<MemoryEntry> {
    let text = |i: usize| -> rusqlite::Result<String> { row.get(at + i) };
    let bad = |i: usize, what: &str| {
        rusqlite::Error::FromSqlConversionFailure(
            i,
            rusqlite::types::Type::Text,
            format!("not a memory {what}").into(),
        )
    };
    let kind = MemoryKind::parse(&text(1)?).ok_or_else(|| bad(at + 1, "kind"))?;
    let status = MemoryStatus::parse(&text(2)?).ok_or_else(|| bad(at + 2, "status"))?;
    let files: Vec<String> = serde_json::from_str(&text(5)?).unwrap_or_default();
    Ok(MemoryEntry {
        id: row.get(at)?,
        kind,
        status,
        title: row.get(at + 3)?,
        body: row.get(at + 4)?,
        files,
        terms: text(6)?.split_whitespace().map(str::to_string).collect(),
        target: row.get(at + 7)?,
        source: row.get(at + 8)?,
        seen: row.get(at + 9)?,
        debug_record_id: row.get(at + 10)?,
        verified: row.get(at + 11)?,
        created_at: row.get(at + 12)?,
        updated_at: row.get(at + 13)?,
        uses: row.get(at + 14)?,
        last_used_at: row.get(at + 15)?,
        note: row.get(at + 16)?,
    })
}

/// The section of an agent's context that holds its memories.
pub fn section_text(chosen: &[MemoryEntry]) -> String {
    let mut text = String::from(
        "## What was learned before\n\nAir's memory of this user and project, kept from earlier work (follow it unless the task or the user says otherwise; if one no longer holds, say so in your result):\n",
    );
    for e in chosen {
        let proven = if e.verified {
            " (proven: a build or tests passed after that fix)"
        } else {
            ""
        };
        text.push_str(&format!(
            "\n- **{}** [{}]{proven}: {}",
            e.title,
            e.kind.as_str(),
            e.body.trim().replace('\n', "\n  ")
        ));
    }
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proposal(kind: MemoryKind, title: &str, body: &str, files: &[&str]) -> MemoryProposal {
        MemoryProposal {
            kind,
            title: title.into(),
            body: body.into(),
            files: files.iter().map(|f| f.to_string()).collect(),
            terms: vec![],
            target: None,
        }
    }

    const NOW: &str = "2026-12-02T10:00:00Z";

    #[test]
    fn a_proposal_made_again_is_counted_and_joined_not_kept_twice() {
        let dir = tempfile::tempdir().unwrap();
        let mut m = Memory::open(&dir.path().join("learned-memory.db")).unwrap();
        let a = proposal(
            MemoryKind::Project,
            "Build with ninja",
            "Use `ninja -C build`.",
            &["CMakeLists.txt"],
        );
        let first = m.propose(&a, "session_end", None, NOW).unwrap();
        assert!(first.new);
        let mut b = proposal(
            MemoryKind::Project,
            "build with Ninja!",
            "other words",
            &["./cmake/"],
        );
        b.terms = vec!["generator".into()];
        let again = m.propose(&b, "nudge", None, NOW).unwrap();
        assert!(!again.new);
        assert_eq!(again.entry.id, first.entry.id);
        assert_eq!(again.entry.seen, 2);
        assert_eq!(
            again.entry.body, "Use `ninja -C build`.",
            "a memory keeps its first text"
        );
        assert_eq!(again.entry.files, ["CMakeLists.txt", "cmake"]);
        assert!(!again.entry.awaits_user());
        let third = m.propose(&a, "nudge", None, NOW).unwrap();
        assert!(
            third.entry.awaits_user(),
            "seen three times: the user is asked"
        );
        assert_eq!(m.list(None, None, 10).unwrap().len(), 1);
        // Archived, then proposed again: a candidate again.
        m.set_status(&first.entry.id, MemoryStatus::Archived, Some("stale"), NOW)
            .unwrap();
        let back = m.propose(&a, "nudge", None, NOW).unwrap();
        assert_eq!(back.entry.status, MemoryStatus::Candidate);
        assert!(m.forget(&first.entry.id).unwrap().is_some());
        assert!(m.get(&first.entry.id).unwrap().is_none());
        assert!(m.list(None, None, 10).unwrap().is_empty());
    }

    #[test]
    fn a_context_gets_promoted_entries_by_file_directory_and_word_within_budget() {
        let dir = tempfile::tempdir().unwrap();
        let mut m = Memory::open(&dir.path().join("learned-memory.db")).unwrap();
        let promote = |m: &mut Memory, p: MemoryProposal| {
            let id = m.propose(&p, "user", None, NOW).unwrap().entry.id;
            m.set_status(&id, MemoryStatus::Promoted, None, NOW)
                .unwrap();
            id
        };
        let by_file = promote(
            &mut m,
            proposal(
                MemoryKind::Project,
                "stats.cpp needs <numeric>",
                "std::accumulate lives in <numeric>.",
                &["src/stats.cpp"],
            ),
        );
        let by_dir = promote(
            &mut m,
            proposal(
                MemoryKind::Project,
                "Networking code logs with spdlog",
                "No printf under src/net.",
                &["src/net"],
            ),
        );
        let by_word = promote(
            &mut m,
            proposal(
                MemoryKind::Reference,
                "The protocol grammar",
                "The wire grammar of frobnicator packets is in docs/frob.md.",
                &[],
            ),
        );
        let user = promote(
            &mut m,
            proposal(
                MemoryKind::User,
                "Answers in British English",
                "colour, not color",
                &[],
            ),
        );
        // A candidate, and an unrelated promoted entry, are not given.
        m.propose(
            &proposal(
                MemoryKind::Project,
                "stats.cpp candidate",
                "unconfirmed",
                &["src/stats.cpp"],
            ),
            "nudge",
            None,
            NOW,
        )
        .unwrap();
        promote(
            &mut m,
            proposal(MemoryKind::Project, "GUI uses Qt", "Qt widgets", &["gui"]),
        );
        let files = vec![
            "src/stats.cpp".to_string(),
            "./src/net/socket.cpp".to_string(),
        ];
        let s = m
            .select(&files, "Parse frobnicator packets", CONTEXT_CHARS)
            .unwrap();
        let ids: Vec<&str> = s.chosen.iter().map(|e| e.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                by_file.as_str(),
                by_dir.as_str(),
                by_word.as_str(),
                user.as_str()
            ]
        );
        assert!(s.omitted.is_empty());
        // A small budget: the best fits, the rest are named.
        let s = m.select(&files, "Parse frobnicator packets", 80).unwrap();
        assert_eq!(s.chosen.len(), 1);
        assert_eq!(s.omitted.len(), 3);
        let text = section_text(&s.chosen);
        assert!(text.contains("stats.cpp needs <numeric>"), "{text}");
        m.mark_used(std::slice::from_ref(&by_file), NOW).unwrap();
        assert_eq!(m.get(&by_file).unwrap().unwrap().uses, 1);
    }

    #[test]
    fn a_debugging_lesson_is_promoted_by_its_evidence() {
        let dir = tempfile::tempdir().unwrap();
        let mut m = Memory::open(&dir.path().join("learned-memory.db")).unwrap();
        let p = proposal(
            MemoryKind::Project,
            "Link stats with m",
            "target_link_libraries(stats m)",
            &[],
        );
        let kept = m.propose(&p, "debug", Some("ev-1"), NOW).unwrap();
        assert!(
            !kept.entry.awaits_user(),
            "debug lessons wait for evidence, not the user"
        );
        let promoted = m.verify_debug("ev-1", NOW).unwrap();
        assert_eq!(promoted.len(), 1);
        assert!(promoted[0].verified);
        assert_eq!(promoted[0].status, MemoryStatus::Promoted);
    }
}
