//! The project's debug knowledge (baseline §16): every record a debugger leaves
//! (`debug.record.created`) is kept in `.air/local/debug-records.db` with what airsd
//! knows of it — the error signatures of the failed attempt, the evidence its
//! commands left — and searched by SQLite's full-text index (FTS5, ranked by BM25)
//! over symptom, error signature, root cause and fix. A debugger is told the best
//! matches for the failure it is handed; `air debug search` asks the same. Local
//! first: sharing it is a separate, explicit step.

use std::path::Path;

use air_proto::api::DebugRecord;
use rusqlite::{params, Connection};

use crate::error::Result;
use crate::learning::fts::{self, one_line};

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS records (
    rowid       INTEGER PRIMARY KEY,
    id          TEXT NOT NULL UNIQUE,
    created_at  TEXT NOT NULL,
    session_id  TEXT NOT NULL,
    task_id     TEXT NOT NULL,
    agent_id    TEXT NOT NULL,
    symptom     TEXT NOT NULL,
    signature   TEXT NOT NULL,
    analysis    TEXT NOT NULL,
    root_cause  TEXT,
    fix         TEXT NOT NULL,
    fixed       INTEGER NOT NULL,
    evidence    TEXT NOT NULL
);
CREATE VIRTUAL TABLE IF NOT EXISTS records_fts USING fts5(
    symptom, signature, root_cause, fix, analysis,
    content='records', content_rowid='rowid', tokenize='unicode61'
);
CREATE TRIGGER IF NOT EXISTS records_ai AFTER INSERT ON records BEGIN
    INSERT INTO records_fts (rowid, symptom, signature, root_cause, fix, analysis)
    VALUES (new.rowid, new.symptom, new.signature, COALESCE(new.root_cause, ''), new.fix, new.analysis);
END;
INSERT INTO records_fts (records_fts, rank) VALUES ('rank', 'bm25(2.0, 4.0, 2.0, 1.0, 0.5)');
";

/// The debug knowledge of one project.
pub struct DebugRecords {
    conn: Connection,
}

impl DebugRecords {
    /// Opens (creating when missing) the project's database at `path`.
    pub fn open(path: &Path) -> Result<DebugRecords> {
        Ok(DebugRecords {
            conn: fts::open(path, SCHEMA)?,
        })
    }

    /// Keeps a record (once: the same id again changes nothing).
    pub fn insert(&self, r: &DebugRecord) -> Result<()> {
        put(&self.conn, r)
    }

    /// Many records in one transaction (for imports and benchmarks).
    pub fn insert_all(&mut self, records: &[DebugRecord]) -> Result<()> {
        let tx = self.conn.transaction()?;
        for r in records {
            put(&tx, r)?;
        }
        tx.commit()?;
        Ok(())
    }

    /// The records that best match `text`, best first (fixed ones before others
    /// that match as well). The text's words that say most — those few records
    /// hold: an identifier, a file, a signature, not "error" or "build" — are looked
    /// for, any of them.
    pub fn search(&self, text: &str, limit: u32) -> Result<Vec<DebugRecord>> {
        let Some(query) = fts::telling_query(&self.conn, text, self.size()?, 2)? else {
            return Ok(Vec::new());
        };
        let mut stmt = self.conn.prepare_cached(
            "SELECT r.id, r.created_at, r.session_id, r.task_id, r.agent_id, r.symptom, r.signature,
                    r.analysis, r.root_cause, r.fix, r.fixed, r.evidence, f.rank
             FROM (SELECT rowid, rank FROM records_fts WHERE records_fts MATCH ?1
                   ORDER BY rank LIMIT ?3) f
             JOIN records r ON r.rowid = f.rowid
             ORDER BY f.rank + (CASE WHEN r.fixed THEN 0.0 ELSE 1.0 END) LIMIT ?2",
        )?;
        // The best by the words alone, then the fixed ones first among them.
        let pool = limit.saturating_mul(8).max(32);
        let rows = stmt.query_map(params![query, limit, pool], |row| {
            let evidence: String = row.get(11)?;
            let rank: f64 = row.get(12)?;
            Ok(DebugRecord {
                id: row.get(0)?,
                created_at: row.get(1)?,
                session_id: row.get(2)?,
                task_id: row.get(3)?,
                agent_id: row.get(4)?,
                symptom: row.get(5)?,
                signature: row.get(6)?,
                analysis: row.get(7)?,
                root_cause: row.get(8)?,
                fix: row.get(9)?,
                fixed: row.get(10)?,
                evidence: evidence.split_whitespace().map(str::to_string).collect(),
                // BM25 is lower for better matches; shown the other way round.
                score: -rank,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }

    /// How many records the project has, near enough, without counting them (none is
    /// ever removed).
    fn size(&self) -> Result<u64> {
        Ok(self
            .conn
            .query_row("SELECT COALESCE(MAX(rowid), 0) FROM records", [], |r| {
                r.get(0)
            })?)
    }

    /// How many records the project has.
    pub fn count(&self) -> Result<u64> {
        Ok(self
            .conn
            .query_row("SELECT COUNT(*) FROM records", [], |r| r.get(0))?)
    }
}

fn put(conn: &Connection, r: &DebugRecord) -> Result<()> {
    let added = conn.execute(
        "INSERT OR IGNORE INTO records (id, created_at, session_id, task_id, agent_id, symptom,
             signature, analysis, root_cause, fix, fixed, evidence)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
        params![
            r.id,
            r.created_at,
            r.session_id,
            r.task_id,
            r.agent_id,
            r.symptom,
            r.signature,
            r.analysis,
            r.root_cause,
            r.fix,
            r.fixed,
            r.evidence.join(" "),
        ],
    )?;
    if added == 0 {
        return Ok(());
    }
    let text = [
        r.symptom.as_str(),
        &r.signature,
        r.root_cause.as_deref().unwrap_or_default(),
        &r.fix,
        &r.analysis,
    ]
    .join(" ");
    fts::count_words(conn, &text, 1)
}

/// The note a debugger is given: the best matches for the failure it is handed.
pub fn note_for(hits: &[DebugRecord]) -> Option<String> {
    if hits.is_empty() {
        return None;
    }
    let mut note = String::from(
        "Debugging records of this project that may apply (earlier debuggers' findings; check them against this failure before relying on them):",
    );
    for h in hits {
        let cause = h.root_cause.as_deref().unwrap_or("(no root cause named)");
        let verified = if h
            .evidence
            .iter()
            .any(|e| e == "build_pass" || e == "test_pass")
        {
            "; verified: a build or tests passed after the fix"
        } else if h.fixed {
            "; fixed, without a passing build or test on record"
        } else {
            "; not fixed"
        };
        note.push_str(&format!(
            "\n- {} (task {}): symptom: {}; root cause: {cause}; fix: {}{verified}",
            h.created_at.chars().take(10).collect::<String>(),
            h.task_id,
            one_line(&h.symptom, 200),
            one_line(&h.fix, 200),
        ));
    }
    Some(note)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(id: &str, symptom: &str, signature: &str, cause: &str, fixed: bool) -> DebugRecord {
        DebugRecord {
            id: id.into(),
            created_at: "2026-12-01T10:00:00Z".into(),
            session_id: "s".into(),
            task_id: "T1".into(),
            agent_id: "T1-debugger-1".into(),
            symptom: symptom.into(),
            signature: signature.into(),
            analysis: format!("looked at it: {cause}"),
            root_cause: Some(cause.into()),
            fix: "src/stats.cpp".into(),
            fixed,
            evidence: if fixed {
                vec!["build_pass".into()]
            } else {
                vec![]
            },
            score: 0.0,
        }
    }

    #[test]
    fn records_are_found_by_any_of_their_words_fixed_ones_first() {
        let dir = tempfile::tempdir().unwrap();
        let db = DebugRecords::open(&dir.path().join("debug-records.db")).unwrap();
        db.insert(&record(
            "r1",
            "`ctest` failed",
            "undeclared-identifier:std::accumulate",
            "missing #include <numeric>",
            true,
        ))
        .unwrap();
        db.insert(&record(
            "r2",
            "`make` failed",
            "undefined-reference:stats::mean",
            "the library was not linked",
            false,
        ))
        .unwrap();
        db.insert(&record(
            "r3",
            "`ctest` failed",
            "undeclared-identifier:std::accumulate",
            "an include was missing",
            false,
        ))
        .unwrap();
        db.insert(&record("r1", "again", "again", "again", false))
            .unwrap();
        assert_eq!(db.count().unwrap(), 3, "the same id is kept once");
        let hits = db
            .search(
                "error: 'accumulate' is not a member of 'std' (undeclared)",
                5,
            )
            .unwrap();
        let ids: Vec<&str> = hits.iter().map(|h| h.id.as_str()).collect();
        assert_eq!(
            ids,
            ["r1", "r3"],
            "fixed first; the link error does not match"
        );
        assert!(hits[0].score > 0.0);
        let hits = db.search("undefined reference to stats::mean", 5).unwrap();
        assert_eq!(hits[0].id, "r2");
        assert!(
            db.search("a an of", 5).unwrap().is_empty(),
            "no word to search by"
        );
        // Quotes, operators and FTS syntax in the text are only words.
        assert!(db.search("\"NEAR(x y)\" OR * AND ^col:", 5).is_ok());
        let note = note_for(&db.search("accumulate", 1).unwrap()).unwrap();
        assert!(
            note.contains("root cause: missing #include <numeric>") && note.contains("verified"),
            "{note}"
        );
    }
}
