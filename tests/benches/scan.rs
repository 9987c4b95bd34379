//! The project scan (`airsd::project::scan`) of a generated tree of 200,000 files in 2,200
//! directories (200 top directories of 10 each of 100 files, C++ sources and headers
//! with a CMakeLists.txt per top directory): a first scan with no cache, beside `find
//! . -printf '%p\n'` over the same tree; then a rescan with nothing changed (in the
//! process, with its cache, as the daemon does; and as `airsd __scan` does it, reading
//! and writing the cache files), and one after a file was added.
//!
//! Run: `cargo bench -p air-tests --bench scan`
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::{Duration, Instant};

use airsd::project::scan::{scan, Cache, TIME_LIMIT};

const TOP: usize = 200;
const SUB: usize = 10;
const FILES: usize = 100;

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn generate(root: &Path) {
    for t in 0..TOP {
        let top = root.join(format!("module{t}"));
        std::fs::create_dir_all(&top).unwrap();
        std::fs::write(top.join("CMakeLists.txt"), "add_library(x)\n").unwrap();
        for s in 0..SUB {
            let dir = top.join(format!("part{s}"));
            std::fs::create_dir_all(&dir).unwrap();
            let first = if s == 0 { 1 } else { 0 };
            for f in first..FILES {
                let ext = if f % 4 == 0 { "hpp" } else { "cpp" };
                std::fs::write(dir.join(format!("file{f}.{ext}")), b"").unwrap();
            }
        }
    }
}

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("tree");
    let made = Instant::now();
    generate(&root);
    let (check, _) = scan(&root, &Cache::default(), TIME_LIMIT);
    println!(
        "generated {} files in {} directories in {:.1} s",
        check.files,
        check.dirs,
        made.elapsed().as_secs_f64()
    );

    let mut full = Vec::new();
    let mut find = Vec::new();
    let mut cache = Cache::default();
    for _ in 0..5 {
        let t = Instant::now();
        let (s, c) = scan(&root, &Cache::default(), TIME_LIMIT);
        full.push(ms(t.elapsed()));
        assert!(s.complete);
        cache = c;
        let t = Instant::now();
        let out = std::process::Command::new("find")
            .arg(".")
            .arg("-printf")
            .arg("%p\n")
            .current_dir(&root)
            .stdout(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(out.success());
        find.push(ms(t.elapsed()));
    }
    let (full, find) = (median(full), median(find));
    println!(
        "first scan: median {full:.0} ms over 5 (target <= 2000 ms); find . -printf: median {find:.0} ms; ratio {:.2}",
        full / find
    );

    let mut again = Vec::new();
    for _ in 0..21 {
        let t = Instant::now();
        let (s, c) = scan(&root, &cache, TIME_LIMIT);
        again.push(ms(t.elapsed()));
        assert_eq!(s.dirs_read, 0);
        cache = c;
    }
    println!(
        "rescan, nothing changed, cache in memory: median {:.1} ms, max {:.1} ms over 21 (target <= 50 ms)",
        median(again.clone()),
        again.iter().cloned().fold(0.0, f64::max)
    );

    // As `airsd __scan` does it: the cache read from its file and written back.
    let paths = air_proto::layout::ProjectPaths::new(&root);
    air_proto::layout::init(&root, "2026-12-02T00:00:00Z").unwrap();
    airsd::project::scan::scan_project(&paths).unwrap();
    let mut from_disk = Vec::new();
    for _ in 0..11 {
        let t = Instant::now();
        let s = airsd::project::scan::scan_project(&paths).unwrap();
        from_disk.push(ms(t.elapsed()));
        assert!(s.dirs_read <= 1, "{}", s.dirs_read);
    }
    println!(
        "rescan, nothing changed, cache read from and written to .air/local/state: median {:.1} ms over 11",
        median(from_disk)
    );

    // `air init` wrote a .gitignore: a cache from after it.
    let (_, cache) = scan(&root, &Cache::default(), TIME_LIMIT);
    std::fs::write(root.join("module7/part3/new.cpp"), b"").unwrap();
    let t = Instant::now();
    let (s, _) = scan(&root, &cache, TIME_LIMIT);
    println!(
        "rescan after one file was added: {:.1} ms, {} directory read again (the file's), {} files",
        ms(t.elapsed()),
        s.dirs_read,
        s.files
    );
}
