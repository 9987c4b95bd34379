//! The ArtifactStore (D-043, D-054, baseline §15): files a session keeps as evidence
//! or record, under `<project>/.air/local/sessions/<session-id>/artifacts/`
//! (`command-runs/<id>/`, `tool-runs/<id>/`, `builds/`, `tests/`, `screenshots/` …),
//! each with an `artifacts` row (`artifact.created`): type, size, sha256, original
//! name, and what it belongs to. Files are written to a temporary name and renamed
//! into place only when complete, so a crash never leaves half an artifact behind a
//! row; logs are gzip-compressed when large, already-compressed kinds are not.

use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use air_proto::result::{ArtifactRef, ArtifactType};
use sha2::{Digest, Sha256};

/// Logs larger than this are stored gzip-compressed.
pub const COMPRESS_OVER: u64 = 64 * 1024;

/// A session's artifact directory.
#[derive(Clone, Debug)]
pub struct ArtifactStore {
    dir: PathBuf,
    project_id: String,
    session_id: String,
}

/// A file being written into the store.
pub struct Pending {
    tmp: PathBuf,
    /// Where it goes, relative to the artifacts directory.
    rel: String,
    file: BufWriter<std::fs::File>,
    bytes: u64,
}

impl Pending {
    pub fn write(&mut self, data: &[u8]) -> std::io::Result<()> {
        self.bytes += data.len() as u64;
        self.file.write_all(data)
    }

    pub fn len(&self) -> u64 {
        self.bytes
    }

    pub fn is_empty(&self) -> bool {
        self.bytes == 0
    }

    /// Drops an unwanted file.
    pub fn discard(self) {
        drop(self.file);
        let _ = std::fs::remove_file(&self.tmp);
    }
}

/// A stored file: its reference and where it is.
#[derive(Clone, Debug)]
pub struct Stored {
    pub artifact: ArtifactRef,
    /// Relative to the artifacts directory.
    pub rel: String,
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A file's size and sha256 (hex).
fn digest(path: &Path) -> std::io::Result<(u64, String)> {
    let mut hasher = Sha256::new();
    let mut size = 0u64;
    let mut f = std::fs::File::open(path)?;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        size += n as u64;
        hasher.update(&buf[..n]);
    }
    Ok((size, hex(&hasher.finalize())))
}

/// The directories a command's logs are kept under, by what the command was.
pub const COMMAND_LOG_DIRS: [&str; 3] = ["command-runs", "builds", "tests"];

impl ArtifactStore {
    pub fn new(dir: impl Into<PathBuf>, project_id: &str, session_id: &str) -> ArtifactStore {
        ArtifactStore {
            dir: dir.into(),
            project_id: project_id.to_string(),
            session_id: session_id.to_string(),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where a command run's kept `name` (`stdout.log`, `stderr.log`) is, relative to
    /// the store: under the directory of what the command was (D-054: `builds/` for
    /// a build of `cpp.build`, `tests/` for a test run of `cpp.test`,
    /// `command-runs/` for the rest), compressed or not.
    pub fn command_log(&self, command_run_id: &str, name: &str) -> String {
        let mut first = None;
        for kind in COMMAND_LOG_DIRS {
            let rel = format!("{kind}/{command_run_id}/{name}");
            let gz = format!("{rel}.gz");
            if self.dir.join(&gz).exists() {
                return gz;
            }
            if self.dir.join(&rel).exists() {
                return rel;
            }
            first.get_or_insert(rel);
        }
        first.unwrap_or_default()
    }

    pub fn uri(&self, id: &str) -> String {
        format!(
            "artifact://project/{}/session/{}/{id}",
            self.project_id, self.session_id
        )
    }

    /// Starts a file at `rel` (e.g. `command-runs/<id>/stdout.log`).
    pub fn create(&self, rel: &str) -> std::io::Result<Pending> {
        let path = self.dir.join(rel);
        let parent = path
            .parent()
            .ok_or_else(|| std::io::Error::other(format!("{rel}: no directory")))?;
        std::fs::create_dir_all(parent)?;
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let tmp = parent.join(format!(".{name}.partial"));
        let file = BufWriter::with_capacity(64 * 1024, std::fs::File::create(&tmp)?);
        Ok(Pending {
            tmp,
            rel: rel.to_string(),
            file,
            bytes: 0,
        })
    }

    /// Completes a file: compressed when it is a large log, hashed, renamed into
    /// place. The caller records `artifact.created` with the result.
    pub fn finish(
        &self,
        pending: Pending,
        kind: ArtifactType,
        log: bool,
    ) -> std::io::Result<Stored> {
        let Pending {
            tmp,
            rel,
            file,
            bytes,
        } = pending;
        let file = file.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        drop(file);
        let (source, rel) = if log && bytes > COMPRESS_OVER {
            let gz_tmp = tmp.with_extension("gz.partial");
            let mut input = std::fs::File::open(&tmp)?;
            let out = std::fs::File::create(&gz_tmp)?;
            let mut enc =
                flate2::write::GzEncoder::new(BufWriter::new(out), flate2::Compression::fast());
            std::io::copy(&mut input, &mut enc)?;
            let out = enc.finish()?.into_inner().map_err(|e| e.into_error())?;
            out.sync_all()?;
            let _ = std::fs::remove_file(&tmp);
            (gz_tmp, format!("{rel}.gz"))
        } else {
            (tmp, rel)
        };
        let (size, sha256) = digest(&source)?;
        let dest = self.dir.join(&rel);
        std::fs::rename(&source, &dest)?;
        if let Some(parent) = dest.parent() {
            if let Ok(d) = std::fs::File::open(parent) {
                let _ = d.sync_all();
            }
        }
        Ok(Stored {
            artifact: self.reference(kind, size, sha256),
            rel,
        })
    }

    fn reference(&self, kind: ArtifactType, size: u64, sha256: String) -> ArtifactRef {
        let id = air_proto::ids::new_id();
        ArtifactRef {
            uri: self.uri(&id),
            id,
            artifact_type: kind,
            size_bytes: Some(size),
            sha256: Some(sha256),
            created_at: air_proto::time::now_iso(),
        }
    }

    /// The reference of a complete file already in place (written by a process of
    /// its own, like a worker's stderr).
    pub fn describe(&self, rel: &str, kind: ArtifactType) -> std::io::Result<Stored> {
        let (size, sha256) = digest(&self.dir.join(rel))?;
        Ok(Stored {
            artifact: self.reference(kind, size, sha256),
            rel: rel.to_string(),
        })
    }

    /// Reads a stored file's bytes `[offset, offset + limit)`, gunzipping `.gz` ones.
    pub fn read(&self, rel: &str, offset: u64, limit: u64) -> std::io::Result<(Vec<u8>, bool)> {
        let path = self.dir.join(rel);
        let file = std::fs::File::open(&path)?;
        let mut reader: Box<dyn Read> = if rel.ends_with(".gz") {
            Box::new(flate2::read::GzDecoder::new(std::io::BufReader::new(file)))
        } else {
            Box::new(std::io::BufReader::new(file))
        };
        std::io::copy(&mut (&mut reader).take(offset), &mut std::io::sink())?;
        let mut out = Vec::new();
        (&mut reader).take(limit).read_to_end(&mut out)?;
        let mut probe = [0u8; 1];
        let more = reader.read(&mut probe)? > 0;
        Ok((out, more))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn large_logs_are_compressed_and_read_back_whole() {
        let dir = tempfile::tempdir().unwrap();
        let store = ArtifactStore::new(dir.path(), "P", "S");
        let mut p = store.create("command-runs/c1/stdout.log").unwrap();
        let line = b"0123456789abcdef\n";
        for _ in 0..10_000 {
            p.write(line).unwrap();
        }
        let s = store.finish(p, ArtifactType::Other, true).unwrap();
        assert_eq!(s.rel, "command-runs/c1/stdout.log.gz");
        assert!(s
            .artifact
            .uri
            .starts_with("artifact://project/P/session/S/"));
        assert!(s.artifact.size_bytes.unwrap() < 170_000 / 10);
        let (bytes, more) = store.read(&s.rel, 17, 34).unwrap();
        assert_eq!(bytes, b"0123456789abcdef\n0123456789abcdef\n");
        assert!(more);
        // No partial file is left behind.
        let names: Vec<_> = std::fs::read_dir(dir.path().join("command-runs/c1"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("stdout.log.gz")]);

        let mut p = store.create("tool-runs/t1/out.txt").unwrap();
        p.write(b"small").unwrap();
        let s = store.finish(p, ArtifactType::Other, true).unwrap();
        assert_eq!(s.rel, "tool-runs/t1/out.txt");
        assert_eq!(
            store.read(&s.rel, 0, 100).unwrap(),
            (b"small".to_vec(), false)
        );
    }
}
