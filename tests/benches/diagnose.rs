//! The C and C++ diagnostics reader (`cpp.diagnose`) on a 50 MB build log: the
//! progress lines and compiler calls of a large build with, between them, the real
//! output of GCC, Clang and the linkers (the reader's test fixtures) repeated with
//! other files and lines, read in 64 KiB chunks as a command's output streams.
//!
//! Run: `cargo bench -p air-tests --bench diagnose`
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fmt::Write as _;
use std::time::Instant;

use airsd::profiles::cpp::diagnose::Parser;

const SIZE: usize = 50 * 1024 * 1024;
const RUNS: usize = 5;

fn log() -> String {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../airsd/src/profiles/cpp/fixtures");
    let compilers: Vec<String> = ["gcc.txt", "clang.txt", "ld.txt", "lld.txt"]
        .iter()
        .map(|f| std::fs::read_to_string(dir.join(f)).unwrap())
        .collect();
    let mut s = String::with_capacity(SIZE + 4096);
    let mut n = 0usize;
    while s.len() < SIZE {
        n += 1;
        let _ = writeln!(
            s,
            "[{n}/90000] Building CXX object src/CMakeFiles/core.dir/module{n}/file{n}.cpp.o"
        );
        let _ = writeln!(s, "/usr/bin/c++ -DNDEBUG -I/src/include -O2 -std=c++17 -Wall -MD -MT src/CMakeFiles/core.dir/file{n}.cpp.o -o src/CMakeFiles/core.dir/file{n}.cpp.o -c /src/src/file{n}.cpp");
        if n.is_multiple_of(4) {
            // A compiler's findings, with this file's name and shifted lines.
            let text = &compilers[(n / 4) % compilers.len()];
            s.push_str(&text.replace("errs.cpp", &format!("src/file{n}.cpp")));
        }
    }
    s
}

fn main() {
    let text = log();
    let bytes = text.as_bytes();
    let mb = bytes.len() as f64 / (1024.0 * 1024.0);
    for (what, limit) in [
        (
            "as kept (the first 500 findings)",
            airsd::profiles::cpp::diagnose::MAX_FINDINGS,
        ),
        ("every finding kept, each with its signature", usize::MAX),
    ] {
        let mut rates = Vec::new();
        let mut found = 0;
        for _ in 0..RUNS {
            let t = Instant::now();
            let mut p = Parser::with_limit(limit);
            for chunk in bytes.chunks(64 * 1024) {
                p.push(chunk);
            }
            let dropped = p.dropped;
            found = p.finish().len() + dropped;
            rates.push(mb / t.elapsed().as_secs_f64());
        }
        rates.sort_by(f64::total_cmp);
        println!(
            "diagnostics of a {mb:.0} MiB build log, {what}: median {:.0} MB/s (min {:.0}, max {:.0}; {RUNS} runs; {found} findings); target ≥ 200 MB/s",
            rates[RUNS / 2],
            rates[0],
            rates[RUNS - 1]
        );
    }
}
