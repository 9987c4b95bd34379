//! The daemon's log file, rotated by size while it runs: past `max_bytes` the file is
//! renamed to `.1` (older ones shift up, at most `keep` are kept) and a new one started.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

pub struct RotatingLog {
    path: PathBuf,
    file: File,
    written: u64,
    max_bytes: u64,
    keep: usize,
}

impl RotatingLog {
    pub fn open(path: &Path, max_bytes: u64, keep: usize) -> io::Result<Self> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        let written = file.metadata()?.len();
        let mut log = Self {
            path: path.to_path_buf(),
            file,
            written,
            max_bytes,
            keep,
        };
        if log.written > max_bytes {
            log.rotate()?;
        }
        Ok(log)
    }

    fn numbered(&self, n: usize) -> PathBuf {
        let mut name = self.path.as_os_str().to_owned();
        name.push(format!(".{n}"));
        PathBuf::from(name)
    }

    fn rotate(&mut self) -> io::Result<()> {
        self.file.flush()?;
        let _ = std::fs::remove_file(self.numbered(self.keep));
        for n in (1..self.keep).rev() {
            let _ = std::fs::rename(self.numbered(n), self.numbered(n + 1));
        }
        std::fs::rename(&self.path, self.numbered(1))?;
        self.file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)?;
        self.written = 0;
        Ok(())
    }
}

impl Write for RotatingLog {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.written > 0 && self.written + buf.len() as u64 > self.max_bytes {
            self.rotate()?;
        }
        let n = self.file.write(buf)?;
        self.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotates_by_size_and_keeps_a_bounded_number() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("airsd.log");
        let mut log = RotatingLog::open(&path, 100, 2).unwrap();
        // tracing writes each event as one buffer, so a line never straddles two files.
        for i in 0..50 {
            log.write_all(format!("line {i:04} of the log\n").as_bytes())
                .unwrap();
        }
        log.flush().unwrap();
        assert!(std::fs::metadata(&path).unwrap().len() <= 100);
        assert!(dir.path().join("airsd.log.1").exists());
        assert!(dir.path().join("airsd.log.2").exists());
        assert!(
            !dir.path().join("airsd.log.3").exists(),
            "at most `keep` old files"
        );
        let last = std::fs::read_to_string(&path).unwrap();
        assert!(last.contains("line 0049"));
    }
}
