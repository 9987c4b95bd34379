//! What project a recording was made in. Recording (`--record DIR`) writes
//! `DIR/project-files.json`: a hash of each file of the project as its agents see it.
//! Replaying (`--replay DIR`) compares the project with it first, and refuses a
//! project that differs, naming the files: a replay follows the recorded path only in
//! the project it was recorded in, and would otherwise fail later with a secondary
//! reason after changing files.

use std::collections::BTreeMap;
use std::path::Path;

use sha2::{Digest, Sha256};

use crate::error::{Error, Result};

use air_proto::ipc::RECORDING_MANIFEST as MANIFEST;

/// Most files hashed: past it the manifest says it is incomplete and nothing is
/// compared (a recording is made of a small project).
const MOST_FILES: usize = 20_000;

#[derive(serde::Serialize, serde::Deserialize)]
struct Manifest {
    version: u32,
    /// Whether every file was hashed.
    complete: bool,
    /// Relative path → sha256 of its content (`link:TARGET` for a symbolic link).
    files: BTreeMap<String, String>,
}

/// The project's files as agents see them: what git does not ignore (also outside a
/// repository), without `.git/`, `.air/`, `.gitignore` (`air init` adds a line to
/// it), recording directories, and `also_skip`. Links are not followed.
fn files(root: &Path, also_skip: &[&Path]) -> (BTreeMap<String, String>, bool) {
    let mut out = BTreeMap::new();
    let skip: Vec<std::path::PathBuf> = also_skip.iter().map(|p| p.to_path_buf()).collect();
    let walk = ignore::WalkBuilder::new(root)
        .hidden(false)
        .parents(false)
        .require_git(false)
        .follow_links(false)
        .filter_entry(move |e| {
            let name = e.file_name();
            let is_dir = e.file_type().is_some_and(|t| t.is_dir());
            !(name == ".git"
                || name == ".air"
                || (e.depth() == 1 && name == ".gitignore")
                || skip.iter().any(|s| s == e.path())
                || (is_dir && e.path().join(MANIFEST).exists()))
        })
        .build();
    for entry in walk.flatten() {
        let Some(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            continue;
        }
        let Ok(rel) = entry.path().strip_prefix(root) else {
            continue;
        };
        if out.len() >= MOST_FILES {
            return (out, false);
        }
        let hash = if kind.is_symlink() {
            match std::fs::read_link(entry.path()) {
                Ok(t) => format!("link:{}", t.display()),
                Err(_) => continue,
            }
        } else {
            match std::fs::read(entry.path()) {
                Ok(bytes) => format!("{:x}", Sha256::digest(&bytes)),
                Err(_) => continue,
            }
        };
        out.insert(rel.to_string_lossy().replace('\\', "/"), hash);
    }
    (out, true)
}

/// Writes the manifest of `root` into the recording directory `dir` (made if needed).
pub fn write(root: &Path, dir: &Path) -> Result<()> {
    let (files, complete) = files(root, &[dir]);
    let manifest = Manifest {
        version: 1,
        complete,
        files,
    };
    let io = |source| Error::Io {
        path: dir.to_path_buf(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(io)?;
    let text = serde_json::to_string_pretty(&manifest)
        .map_err(|e| Error::Internal(format!("the recording's manifest: {e}")))?;
    std::fs::write(dir.join(MANIFEST), text + "\n").map_err(io)
}

/// Refuses to replay `dir` in `root` when the project differs from the one it was
/// recorded in (a recording without a manifest is not checked).
pub fn check(root: &Path, dir: &Path, record: Option<&Path>) -> Result<()> {
    let Ok(text) = std::fs::read_to_string(dir.join(MANIFEST)) else {
        return Ok(());
    };
    let manifest: Manifest = serde_json::from_str(&text).map_err(|e| {
        Error::Refused(format!(
            "{}: not a recording's manifest ({e}); record the run again",
            dir.join(MANIFEST).display()
        ))
    })?;
    if !manifest.complete {
        return Ok(());
    }
    let skip: Vec<&Path> = record.into_iter().chain(std::iter::once(dir)).collect();
    let (now, complete) = files(root, &skip);
    if !complete {
        return Ok(());
    }
    let mut changed = Vec::new();
    let mut gone = Vec::new();
    for (path, hash) in &manifest.files {
        match now.get(path) {
            Some(h) if h == hash => {}
            Some(_) => changed.push(path.as_str()),
            None => gone.push(path.as_str()),
        }
    }
    let added: Vec<&str> = now
        .keys()
        .filter(|p| !manifest.files.contains_key(*p))
        .map(String::as_str)
        .collect();
    if changed.is_empty() && gone.is_empty() && added.is_empty() {
        return Ok(());
    }
    let list = |v: &[&str]| {
        let mut s = v.iter().take(5).copied().collect::<Vec<_>>().join(", ");
        if v.len() > 5 {
            s.push_str(&format!(" and {} more", v.len() - 5));
        }
        s
    };
    let mut parts = Vec::new();
    if !changed.is_empty() {
        parts.push(format!("changed since it was recorded: {}", list(&changed)));
    }
    if !added.is_empty() {
        parts.push(format!("not there when it was recorded: {}", list(&added)));
    }
    if !gone.is_empty() {
        parts.push(format!("missing: {}", list(&gone)));
    }
    Err(Error::Refused(format!(
        "this project differs from the one the recording in {} was made in ({}): a recording replays only that project; replay it in a fresh copy of it (for an example: cp -r examples/NAME /tmp/NAME && cd /tmp/NAME && air init)",
        dir.display(),
        parts.join("; ")
    )))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_replay_refuses_a_project_that_differs_and_names_the_files() {
        let root = tempfile::tempdir().unwrap();
        let r = root.path();
        std::fs::create_dir_all(r.join("src")).unwrap();
        std::fs::write(r.join("src/a.py"), "a = 1\n").unwrap();
        std::fs::write(r.join("README.md"), "hi\n").unwrap();
        std::fs::write(r.join(".gitignore"), "build/\n").unwrap();
        std::fs::create_dir_all(r.join("build")).unwrap();
        std::fs::write(r.join("build/out.o"), "x").unwrap();
        let rec = r.join("recording");
        write(r, &rec).unwrap();
        // The same project, with what is ignored, air's own files and .gitignore
        // changed: it replays.
        std::fs::write(r.join("build/out.o"), "y").unwrap();
        std::fs::create_dir_all(r.join(".air/local")).unwrap();
        std::fs::write(r.join(".gitignore"), "build/\n.air/local/\n").unwrap();
        check(r, &rec, None).unwrap();
        // A changed file, a new one, a missing one: refused, each named.
        std::fs::write(r.join("src/a.py"), "a = 2\n").unwrap();
        std::fs::write(r.join("src/b.py"), "b = 1\n").unwrap();
        std::fs::remove_file(r.join("README.md")).unwrap();
        let e = check(r, &rec, None).unwrap_err().to_string();
        assert!(e.contains("changed since it was recorded: src/a.py"), "{e}");
        assert!(
            e.contains("not there when it was recorded: src/b.py"),
            "{e}"
        );
        assert!(e.contains("missing: README.md"), "{e}");
        // A recording without a manifest is not checked.
        std::fs::remove_file(rec.join(MANIFEST)).unwrap();
        check(r, &rec, None).unwrap();
    }
}
