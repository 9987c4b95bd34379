//! The project scan (D-015, baseline §21): metadata of the whole tree — how many files
//! and directories, files by extension, the files that say how a project is built,
//! tested, formatted and checked (`CMakeLists.txt`, `package.json`, `Cargo.toml`,
//! `.clang-format`, CI configuration, …) and a git summary. Never a file's contents.
//!
//! The whole tree, with no exclusions and no depth limit (D-022): build directories and
//! vendored code are part of what the project is. Only the insides of `.git` and of
//! `.air` at the top are not walked: they are git's and air's own databases, not the
//! project's files. Breadth first, so the top of the tree is always seen; a hard time
//! limit (15 s) returns what was found, marked incomplete. A rescan reuses the
//! directories whose mtime did not change (a directory's mtime changes when an entry
//! is added, removed or renamed in it), so it stats directories, not files: every
//! change is seen, not only those at the top.
//!
//! The result is kept in `.air/local/state/scan.json` and the per-directory cache
//! beside it (`scan-cache.json`); `airsd __scan` ([`crate::project::project_profile`]) scans and
//! keeps the detected profile, for `air init`.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// How long a scan may take before it returns what it has.
pub const TIME_LIMIT: Duration = Duration::from_secs(15);

/// How many paths of one kind of special file are kept (the shallowest).
const SPECIAL_KEPT: usize = 20;
/// How close to the moment a directory is read its mtime must be for a change just
/// after to keep the same mtime: a few kernel ticks where mtimes have nanoseconds,
/// two seconds where they are whole seconds (FAT keeps two).
fn racy_window(mtime: i128) -> i128 {
    if mtime % 1_000_000_000 == 0 {
        2_000_000_000
    } else {
        100_000_000
    }
}

/// Files that say how a project is built, tested, formatted or checked, by name.
const SPECIAL: &[&str] = &[
    "CMakeLists.txt",
    "CMakePresets.json",
    "Makefile",
    "GNUmakefile",
    "meson.build",
    "BUILD.bazel",
    "WORKSPACE",
    "conanfile.txt",
    "conanfile.py",
    "vcpkg.json",
    "compile_commands.json",
    ".clang-format",
    ".clang-tidy",
    ".clangd",
    ".editorconfig",
    "Cargo.toml",
    "rust-toolchain.toml",
    "package.json",
    "tsconfig.json",
    "pyproject.toml",
    "setup.py",
    "setup.cfg",
    "requirements.txt",
    "tox.ini",
    "go.mod",
    "pom.xml",
    "build.gradle",
    "build.gradle.kts",
    "Gemfile",
    "Dockerfile",
    ".pre-commit-config.yaml",
    ".gitlab-ci.yml",
    ".travis.yml",
    "azure-pipelines.yml",
    "Jenkinsfile",
    "AIR.md",
    "AGENTS.md",
    "CLAUDE.md",
];

/// Directories whose files are all CI configuration.
const CI_DIRS: &[&str] = &[".github/workflows", ".circleci"];

/// What the scan found.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Scan {
    pub scanned_at: String,
    /// False when the time limit stopped it: the counts are of what it reached.
    pub complete: bool,
    pub elapsed_ms: u64,
    /// How many directories were read again (all of them for a first scan).
    pub dirs_read: u64,
    pub files: u64,
    pub dirs: u64,
    /// Files by extension (lower case, without the dot; `""` for none).
    pub extensions: BTreeMap<String, u64>,
    /// Special files by name (`ci` for CI configuration), their paths, shallowest first.
    pub special: BTreeMap<String, Vec<String>>,
    /// The entries at the top (directories end in `/`).
    pub top_level: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub git: Option<GitSummary>,
}

/// The repository the project is in.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GitSummary {
    pub branch: Option<String>,
    pub head: Option<String>,
    pub head_time: Option<String>,
    pub remote: Option<String>,
}

/// One directory as the last scan read it.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct Dir {
    mtime: i128,
    files: u64,
    ext: Vec<(String, u64)>,
    special: Vec<(String, String)>,
    subdirs: Vec<String>,
}

/// The directories of the last scan, by path relative to the root (`""`: the root).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Cache {
    dirs: HashMap<String, Dir>,
}

fn mtime(meta: &std::fs::Metadata) -> i128 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map(|d| d.as_nanos() as i128)
        .unwrap_or(-1)
}

fn join(rel: &str, name: &str) -> String {
    if rel.is_empty() {
        name.to_string()
    } else {
        format!("{rel}/{name}")
    }
}

/// Reads one directory: its files counted, its subdirectories to walk.
fn read_dir(root: &Path, rel: &str, mtime: i128) -> Dir {
    let path = root.join(rel);
    let mut dir = Dir {
        mtime,
        ..Dir::default()
    };
    let ci = CI_DIRS.contains(&rel);
    let mut ext: HashMap<String, u64> = HashMap::new();
    let Ok(entries) = std::fs::read_dir(&path) else {
        return dir;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Ok(ft) = e.file_type() else { continue };
        if ft.is_dir() {
            // git's and air's own databases.
            if !(name == ".git" || (rel.is_empty() && name == ".air")) {
                dir.subdirs.push(name);
            }
            continue;
        }
        dir.files += 1;
        let e = match name.rsplit_once('.') {
            Some((stem, e)) if !stem.is_empty() => e.to_ascii_lowercase(),
            _ => String::new(),
        };
        *ext.entry(e).or_default() += 1;
        if ci {
            dir.special.push(("ci".into(), join(rel, &name)));
        } else if SPECIAL.contains(&name.as_str()) {
            let kind = match name.as_str() {
                ".gitlab-ci.yml" | ".travis.yml" | "azure-pipelines.yml" | "Jenkinsfile" => {
                    "ci".to_string()
                }
                _ => name.clone(),
            };
            dir.special.push((kind, join(rel, &name)));
        }
    }
    dir.subdirs.sort();
    dir.special.sort();
    dir.ext = ext.into_iter().collect();
    dir.ext.sort();
    dir
}

/// Scans the tree at `root`, reusing `cache`'s unchanged directories, within `limit`.
/// Returns what was found and the cache for the next time.
pub fn scan(root: &Path, cache: &Cache, limit: Duration) -> (Scan, Cache) {
    scan_until(root, cache, limit, &AtomicBool::new(false))
}

/// [`scan`], which also stops (incomplete) once `stop` is set.
pub fn scan_until(root: &Path, cache: &Cache, limit: Duration, stop: &AtomicBool) -> (Scan, Cache) {
    scan_against(root, cache, limit, stop, None)
}

/// The time now as the file system of `dir` keeps it: the mtime of a file written
/// there now (a network file system's clock may differ from this machine's).
fn file_system_now(dir: &Path) -> Option<i128> {
    let probe = dir.join("scan-clock");
    std::fs::write(&probe, b"").ok()?;
    let now = std::fs::metadata(&probe).ok().map(|m| mtime(&m));
    let _ = std::fs::remove_file(&probe);
    now.filter(|n| *n > 0)
}

/// [`scan_until`], judging whether a directory changed too recently to trust against
/// `clock` (a file system's time taken before the walk), else this machine's time.
fn scan_against(
    root: &Path,
    cache: &Cache,
    limit: Duration,
    stop: &AtomicBool,
    clock: Option<i128>,
) -> (Scan, Cache) {
    let start = Instant::now();
    let mut out = Scan {
        scanned_at: air_proto::time::now_iso().to_string(),
        complete: true,
        ..Scan::default()
    };
    let mut next = Cache::default();
    let mut queue: VecDeque<String> = VecDeque::new();
    queue.push_back(String::new());
    while let Some(rel) = queue.pop_front() {
        if start.elapsed() > limit || stop.load(Ordering::Relaxed) {
            out.complete = false;
            break;
        }
        let path = root.join(&rel);
        let Ok(meta) = std::fs::metadata(&path) else {
            continue;
        };
        let m = mtime(&meta);
        let (dir, racy) = match cache.dirs.get(&rel).filter(|d| d.mtime == m) {
            // Unchanged: its entries are as they were.
            Some(d) => (d.clone(), false),
            None => {
                out.dirs_read += 1;
                // Changed again within the same tick of its mtime, it would look
                // unchanged next time: one changed this recently is read again then.
                let read_at = clock.unwrap_or_else(|| {
                    SystemTime::now()
                        .duration_since(UNIX_EPOCH)
                        .map_or(0, |d| d.as_nanos() as i128)
                });
                (read_dir(root, &rel, m), read_at - m < racy_window(m))
            }
        };
        out.dirs += u64::from(!rel.is_empty());
        out.files += dir.files;
        for (e, n) in &dir.ext {
            *out.extensions.entry(e.clone()).or_default() += n;
        }
        for (kind, p) in &dir.special {
            let kept = out.special.entry(kind.clone()).or_default();
            if kept.len() < SPECIAL_KEPT {
                kept.push(p.clone());
            }
        }
        if rel.is_empty() {
            out.top_level = dir.subdirs.iter().map(|d| format!("{d}/")).collect();
            let mut files: Vec<String> = std::fs::read_dir(root)
                .into_iter()
                .flatten()
                .flatten()
                .filter(|e| e.file_type().is_ok_and(|t| !t.is_dir()))
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            files.sort();
            out.top_level.extend(files);
        }
        for sub in &dir.subdirs {
            queue.push_back(join(&rel, sub));
        }
        next.dirs
            .insert(rel, if racy { Dir { mtime: -1, ..dir } } else { dir });
    }
    out.git = git_summary(root);
    out.elapsed_ms = start.elapsed().as_millis() as u64;
    (out, next)
}

/// Branch, head commit and its time, and the `origin` remote, as git says (run as
/// airsd runs git, [`crate::launcher`]: these read no file's content).
pub fn git_summary(root: &Path) -> Option<GitSummary> {
    let launcher = crate::launcher::Launcher::plain(root);
    let git = |args: &[&str]| -> Option<String> {
        launcher
            .git(
                args,
                crate::launcher::Reads::Metadata,
                64 * 1024,
                std::time::Duration::from_secs(10),
            )
            .ok()
            .map(|(text, _)| text.trim().to_string())
            .filter(|s| !s.is_empty())
    };
    git(&["rev-parse", "--is-inside-work-tree"])?;
    Some(GitSummary {
        branch: git(&["rev-parse", "--abbrev-ref", "HEAD"]),
        head: git(&["rev-parse", "--short", "HEAD"]),
        head_time: git(&["log", "-1", "--format=%cI"]),
        remote: git(&["remote", "get-url", "origin"]).map(|u| without_credentials(&u)),
    })
}

/// A remote's URL without the user and password some carry
/// (`https://user:token@host/…`): it is kept and shown to models.
fn without_credentials(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let host_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..host_end].rfind('@') {
        Some(at) => format!("{scheme}://{}", &rest[at + 1..]),
        None => url.to_string(),
    }
}

/// Where the scan and its cache are kept.
pub fn files(paths: &air_proto::layout::ProjectPaths) -> (PathBuf, PathBuf) {
    (
        paths.state().join("scan.json"),
        paths.state().join("scan-cache.json"),
    )
}

/// Scans the project (incrementally when a cache is kept) and keeps the result.
pub fn scan_project(paths: &air_proto::layout::ProjectPaths) -> std::io::Result<Scan> {
    scan_project_until(paths, &AtomicBool::new(false))
}

/// [`scan_project`], stopped by `stop`; a stopped scan keeps nothing.
pub fn scan_project_until(
    paths: &air_proto::layout::ProjectPaths,
    stop: &AtomicBool,
) -> std::io::Result<Scan> {
    let (scan_file, cache_file) = files(paths);
    let cache: Cache = std::fs::read(&cache_file)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    // The project's file system's own time, taken before the walk: a directory
    // changed after it is always read again next time, whatever the clocks say.
    let _ = std::fs::create_dir_all(paths.state());
    let clock = file_system_now(&paths.state());
    let (scan, next) = scan_against(paths.root(), &cache, TIME_LIMIT, stop, clock);
    if stop.load(Ordering::Relaxed) {
        return Err(std::io::Error::other("the scan was stopped"));
    }
    std::fs::create_dir_all(paths.state())?;
    // Each write under a name of its own: two scans at once (a daemon's and `air
    // profile scan`) each leave a whole file.
    let write = |file: &Path, bytes: Vec<u8>| -> std::io::Result<()> {
        air_proto::layout::write_atomic(file, &bytes).map_err(std::io::Error::other)
    };
    write(
        &cache_file,
        serde_json::to_vec(&next).map_err(std::io::Error::other)?,
    )?;
    write(
        &scan_file,
        serde_json::to_vec_pretty(&scan).map_err(std::io::Error::other)?,
    )?;
    Ok(scan)
}

/// The last scan kept, if any.
pub fn last(paths: &air_proto::layout::ProjectPaths) -> Option<Scan> {
    let (scan_file, _) = files(paths);
    serde_json::from_slice(&std::fs::read(scan_file).ok()?).ok()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Writes a file of one byte at `rel`, with its directories.
    pub(crate) fn touch(root: &Path, rel: &str) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, "x").unwrap();
    }

    /// Sets `rel`'s directory's mtime `secs` seconds back.
    fn age(root: &Path, rel: &str, secs: u64) {
        let when = SystemTime::now() - Duration::from_secs(secs);
        std::fs::File::open(root.join(rel))
            .unwrap()
            .set_modified(when)
            .unwrap();
    }

    /// Every directory under `root` (but `.git` and `.air`) made ten seconds old.
    fn age_all(root: &Path, rel: &str) {
        for e in std::fs::read_dir(root.join(rel)).unwrap().flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if e.file_type().unwrap().is_dir() && name != ".git" && name != ".air" {
                age_all(root, &join(rel, &name));
            }
        }
        age(root, rel, 10);
    }

    #[test]
    fn the_whole_tree_is_counted_and_a_rescan_reads_only_what_changed() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for f in [
            "CMakeLists.txt",
            "src/a.cpp",
            "src/b.cpp",
            "src/CMakeLists.txt",
            "include/a.hpp",
            "tests/t.cpp",
            ".github/workflows/ci.yml",
            ".clang-format",
            "build/junk.o",
            "build/deep/more.o",
            "README",
            ".git/HEAD",
            ".air/shared/project.json",
        ] {
            touch(root, f);
        }
        age_all(root, "");
        let (first, cache) = scan(root, &Cache::default(), TIME_LIMIT);
        assert!(first.complete);
        // CMakeLists.txt, .clang-format, README + src 3 + include + tests + ci + build 2;
        // not .git's or .air's.
        assert_eq!(first.files, 11, "{first:?}");
        assert_eq!(first.extensions["cpp"], 3);
        assert_eq!(first.extensions["o"], 2);
        assert_eq!(first.extensions[""], 2, "README, .clang-format");
        assert_eq!(
            first.special["CMakeLists.txt"],
            vec!["CMakeLists.txt", "src/CMakeLists.txt"]
        );
        assert_eq!(first.special["ci"], vec![".github/workflows/ci.yml"]);
        assert!(first.top_level.contains(&"src/".to_string()));
        assert!(!first.top_level.contains(&".air/".to_string()));
        assert_eq!(
            first.dirs, 7,
            "src include tests build build/deep .github .github/workflows"
        );

        let (again, cache) = scan(root, &cache, TIME_LIMIT);
        assert_eq!(again.dirs_read, 0);
        assert_eq!(
            (again.files, &again.extensions),
            (first.files, &first.extensions)
        );

        // A new file deep in the tree is seen by reading only its directory; a removed
        // directory is gone from the counts.
        touch(root, "build/deep/c.cpp");
        age(root, "build/deep", 5);
        let (third, cache) = scan(root, &cache, TIME_LIMIT);
        assert_eq!(third.dirs_read, 1);
        assert_eq!(third.extensions["cpp"], 4);
        std::fs::remove_dir_all(root.join("build")).unwrap();
        age(root, "", 5);
        let (fourth, _) = scan(root, &cache, TIME_LIMIT);
        assert_eq!(fourth.dirs_read, 1, "the top");
        assert_eq!(fourth.extensions.get("o"), None);
        assert_eq!(fourth.files, 9);
        // No time at all: what it has, marked incomplete.
        let (cut, _) = scan(root, &Cache::default(), Duration::ZERO);
        assert!(!cut.complete);
    }

    /// A directory changed again within the tick its mtime keeps (here: its mtime put
    /// back as it was) after a scan read it is read again by the next scan.
    #[test]
    fn a_directory_read_just_after_a_change_is_read_again_next_time() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        touch(root, "src/a.cpp");
        age_all(root, "");
        touch(root, "src/b.cpp");
        let before = std::fs::metadata(root.join("src"))
            .unwrap()
            .modified()
            .unwrap();
        let (first, cache) = scan(root, &Cache::default(), TIME_LIMIT);
        assert_eq!(first.extensions["cpp"], 2);
        touch(root, "src/c.cpp");
        std::fs::File::open(root.join("src"))
            .unwrap()
            .set_modified(before)
            .unwrap();
        let (second, cache) = scan(root, &cache, TIME_LIMIT);
        assert_eq!(second.dirs_read, 1, "src/, changed too recently to trust");
        assert_eq!(second.extensions["cpp"], 3);
        // Once its mtime is old enough, it is trusted again.
        age(root, "src", 5);
        let (third, cache) = scan(root, &cache, TIME_LIMIT);
        assert_eq!(third.dirs_read, 1);
        let (fourth, _) = scan(root, &cache, TIME_LIMIT);
        assert_eq!(fourth.dirs_read, 0);
        assert_eq!(racy_window(3_000_000_000), 2_000_000_000, "whole seconds");
    }

    #[test]
    fn a_remote_is_kept_without_its_credentials() {
        for (url, kept) in [
            (
                "https://user:ghp_secret@github.com/o/r.git",
                "https://github.com/o/r.git",
            ),
            (
                "https://ghp_secret@github.com/o/r",
                "https://github.com/o/r",
            ),
            ("ssh://git@host:22/o/r", "ssh://host:22/o/r"),
            ("https://github.com/o/r@v1", "https://github.com/o/r@v1"),
            ("git@github.com:o/r.git", "git@github.com:o/r.git"),
            ("https://host?x=a@b", "https://host?x=a@b"),
            ("https://u:p@[::1]:8080/r", "https://[::1]:8080/r"),
        ] {
            assert_eq!(without_credentials(url), kept, "{url}");
        }
    }

    /// The racy rule judges by the file system's clock when given one: a directory
    /// that changed just before that clock's now is read again, one long before is
    /// trusted, whatever this machine's clock says.
    #[test]
    fn the_racy_rule_uses_the_file_systems_clock() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        touch(root, "src/a.cpp");
        age_all(root, "");
        let m = mtime(&std::fs::metadata(root.join("src")).unwrap());
        let stop = AtomicBool::new(false);
        // The file system's clock only just past the change (this machine's is 10 s on).
        let (_, racy) = scan_against(root, &Cache::default(), TIME_LIMIT, &stop, Some(m + 1));
        assert_eq!(racy.dirs["src"].mtime, -1);
        let (_, trusted) = scan_against(
            root,
            &Cache::default(),
            TIME_LIMIT,
            &stop,
            Some(m + 10_000_000_000),
        );
        assert_eq!(trusted.dirs["src"].mtime, m);
        assert!(file_system_now(root).is_some_and(|n| n > m));
    }
}
