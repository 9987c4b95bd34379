//! Memory selection for an agent's context (`airsd::memory::Memory::select`) over a
//! project's learned memory of 10,000 promoted entries: project lessons on 3,000
//! files in 60 modules (some on a directory), references and feedback by topic, and
//! the user's own preferences. 1,000 tasks as a dispatch asks — their files (expected
//! and allowed) and their words (title, description, acceptance) — each timed from
//! the request to the chosen entries and the omitted ones.
//!
//! Run: `cargo bench -p air-tests --bench memory`
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Instant;

use air_proto::memory::{MemoryKind, MemoryProposal};
use airsd::memory::{Memory, CONTEXT_CHARS};

const ENTRIES: usize = 10_000;
const QUERIES: usize = 1_000;

const TOPICS: &[&str] = &[
    "serialization",
    "networking",
    "threading",
    "allocation",
    "logging",
    "parsing",
    "rendering",
    "configuration",
    "caching",
    "scheduling",
    "compression",
    "encryption",
];

fn lcg(x: &mut u64) -> u64 {
    *x = x
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    *x >> 33
}

fn file(seed: &mut u64) -> String {
    format!("src/module{}/file{}.cpp", lcg(seed) % 60, lcg(seed) % 3_000)
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("learned-memory.db");
    let mut memory = Memory::open(&path).unwrap();
    let mut seed = 11u64;
    let mut entries = Vec::with_capacity(ENTRIES);
    for i in 0..ENTRIES {
        let topic = TOPICS[(lcg(&mut seed) as usize) % TOPICS.len()];
        let ident = format!("name{}", lcg(&mut seed) % 2_000);
        let (kind, files) = match i % 10 {
            0 => (MemoryKind::User, vec![]),
            1 => (MemoryKind::Reference, vec![]),
            2 => (MemoryKind::Feedback, vec![]),
            3 => (
                MemoryKind::Project,
                vec![format!("src/module{}", lcg(&mut seed) % 60)],
            ),
            _ => (MemoryKind::Project, vec![file(&mut seed)]),
        };
        entries.push(MemoryProposal {
            kind,
            title: format!("Lesson {i}: {topic} of {ident} needs care"),
            body: format!(
                "When changing the {topic} code around {ident}, rebuild the module and run its tests; the {topic} layer keeps state between calls (entry {i})."
            ),
            files,
            terms: vec![topic.to_string(), ident],
            target: None,
        });
    }
    let t = Instant::now();
    memory
        .import_promoted(&entries, "2026-12-01T10:00:00Z")
        .unwrap();
    let load = t.elapsed();
    let size = std::fs::metadata(&path).unwrap().len();
    println!(
        "learned memory: {ENTRIES} promoted entries loaded in {:.1} s ({:.1} MiB)",
        load.as_secs_f64(),
        size as f64 / (1024.0 * 1024.0)
    );

    let mut times = Vec::with_capacity(QUERIES);
    let (mut chosen, mut omitted) = (0usize, 0usize);
    for _ in 0..QUERIES {
        let files: Vec<String> = (0..4).map(|_| file(&mut seed)).collect();
        let topic = TOPICS[(lcg(&mut seed) as usize) % TOPICS.len()];
        let ident = format!("name{}", lcg(&mut seed) % 2_000);
        let text = format!(
            "Fix the {topic} of {ident} in {} Make the {topic} tests pass after the change; keep the public interface.",
            files[0]
        );
        let t = Instant::now();
        let s = memory.select(&files, &text, CONTEXT_CHARS).unwrap();
        times.push(t.elapsed());
        chosen += s.chosen.len();
        omitted += s.omitted.len();
    }
    times.sort();
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1e3;
    println!(
        "memory selection over {ENTRIES} entries, {QUERIES} tasks: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms (target ≤ 2 ms); {:.1} chosen and {:.1} omitted a task",
        ms(times[QUERIES / 2]),
        ms(times[QUERIES * 99 / 100]),
        ms(times[QUERIES - 1]),
        chosen as f64 / QUERIES as f64,
        omitted as f64 / QUERIES as f64,
    );
}
