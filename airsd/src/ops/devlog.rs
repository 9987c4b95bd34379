//! The developer log (D-035, baseline §23): everything airsd logs at debug level and
//! its timings, for the people who fix air, encrypted on the way to disk to the
//! maintainers' public key (`resources/developer-log.pub`, an age X25519 recipient),
//! so that nothing private in it is readable on this machine without their key.
//!
//! Lines are gathered in memory and written every few seconds (and when the daemon
//! stops) as one ASCII-armoured age message appended to
//! `~/.air/logs/air.developer.<day>.log`: a file holds a day's messages, each
//! decryptable alone (`age -d -i KEY` on one `BEGIN AGE ENCRYPTED FILE` block), and
//! files older than seven days are removed. Several daemons append to the same file:
//! each message is one `write`. `AIR_DEVELOPER_LOG=off` turns it off;
//! `AIR_DEVELOPER_LOG_RECIPIENT=age1…` encrypts to another key (an organisation's own).
//!
//! Must not: write a line unencrypted, or hold up the thread that logs (a write
//! failure drops the message and is reported once in the daemon's own log).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, SystemTime};

/// The maintainers' key, as shipped.
const SHIPPED_RECIPIENT: &str = include_str!("../../../resources/developer-log.pub");

/// How often gathered lines are written.
const FLUSH_EVERY: Duration = Duration::from_secs(5);
/// Written at once past this many bytes.
const FLUSH_AT: usize = 256 * 1024;
/// Days of files kept.
const KEEP_DAYS: u64 = 7;

struct Inner {
    buffer: Vec<u8>,
    failed: bool,
    /// Bytes of lines dropped because the buffer was at its cap (the writer stalled).
    dropped: u64,
}

/// Most bytes gathered: past this, lines are dropped (and counted) until the writer
/// catches up.
const CAP: usize = 4 * FLUSH_AT;

/// The log's writer; clones share one buffer.
#[derive(Clone)]
pub struct DeveloperLog {
    dir: PathBuf,
    recipient: Arc<age::x25519::Recipient>,
    inner: Arc<Mutex<Inner>>,
    /// Wakes the writer thread when the buffer is full.
    full: Arc<Condvar>,
    /// Held from taking the buffer to writing it: messages land in order, and the
    /// last flush waits for one under way.
    writing: Arc<Mutex<()>>,
}

/// Writes what is gathered when dropped (the daemon's end).
pub struct FlushGuard(DeveloperLog);

impl Drop for FlushGuard {
    fn drop(&mut self) {
        self.0.flush_now();
    }
}

/// The recipient the log is encrypted to: `AIR_DEVELOPER_LOG_RECIPIENT`, else the
/// shipped key.
fn recipient() -> Result<age::x25519::Recipient, String> {
    let text = std::env::var("AIR_DEVELOPER_LOG_RECIPIENT")
        .ok()
        .filter(|v| !v.trim().is_empty())
        .unwrap_or_else(|| SHIPPED_RECIPIENT.to_string());
    text.trim()
        .parse()
        .map_err(|e| format!("the developer log's key `{}`: {e}", text.trim()))
}

/// The log this process opened, for [`flush_open`].
static OPEN: std::sync::OnceLock<DeveloperLog> = std::sync::OnceLock::new();

/// Writes what the open developer log has gathered, if one is open: called before
/// the daemon's lock is released, so that a client that waits for the lock finds the
/// log on disk.
pub fn flush_open() {
    if let Some(log) = OPEN.get() {
        log.flush_now();
    }
}

impl DeveloperLog {
    /// The log under `<air_home>/logs/`, and the guard that writes the rest at the end;
    /// `None` when turned off (`AIR_DEVELOPER_LOG=off`).
    pub fn open(air_home: &Path) -> Result<Option<(DeveloperLog, FlushGuard)>, String> {
        if std::env::var("AIR_DEVELOPER_LOG").is_ok_and(|v| v == "off" || v == "0") {
            return Ok(None);
        }
        let recipient = recipient()?;
        let dir = air_home.join("logs");
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let log = DeveloperLog::to(dir, recipient);
        prune(&log.dir, SystemTime::now());
        log.start_writer()?;
        let _ = OPEN.set(log.clone());
        Ok(Some((log.clone(), FlushGuard(log))))
    }

    /// The thread that encrypts and writes what is gathered.
    fn start_writer(&self) -> Result<(), String> {
        let ticker = self.clone();
        std::thread::Builder::new()
            .name("developer-log".into())
            .spawn(move || loop {
                // Every few seconds, or as soon as the buffer is full: the thread that
                // logs never encrypts or writes.
                let inner = ticker.inner.lock().unwrap_or_else(|p| p.into_inner());
                let _ = ticker
                    .full
                    .wait_timeout_while(inner, FLUSH_EVERY, |i| i.buffer.len() < FLUSH_AT);
                ticker.flush_now();
            })
            .map(|_| ())
            .map_err(|e| format!("cannot start the developer log's writer: {e}"))
    }

    /// A log into `dir` encrypted to `recipient`, with nothing gathered yet and no
    /// writer thread.
    fn to(dir: PathBuf, recipient: age::x25519::Recipient) -> DeveloperLog {
        DeveloperLog {
            dir,
            recipient: Arc::new(recipient),
            inner: Arc::new(Mutex::new(Inner {
                buffer: Vec::new(),
                failed: false,
                dropped: 0,
            })),
            full: Arc::new(Condvar::new()),
            writing: Arc::new(Mutex::new(())),
        }
    }

    /// Today's file.
    pub fn file_for(dir: &Path, now: SystemTime) -> PathBuf {
        let day: String = air_proto::time::iso(now).chars().take(10).collect();
        dir.join(format!("air.developer.{day}.log"))
    }

    /// Encrypts what is gathered and appends it as one message.
    pub fn flush_now(&self) {
        let _writing = self.writing.lock().unwrap_or_else(|p| p.into_inner());
        let taken = {
            let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
            let dropped = std::mem::take(&mut inner.dropped);
            let mut taken = std::mem::take(&mut inner.buffer);
            if dropped > 0 {
                taken.extend_from_slice(
                    format!("[developer log: {dropped} bytes of lines dropped while the writer was behind]\n")
                        .as_bytes(),
                );
            }
            taken
        };
        if taken.is_empty() {
            return;
        }
        let written = encrypt(&self.recipient, &taken).and_then(|message| {
            let path = Self::file_for(&self.dir, SystemTime::now());
            let mut file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .map_err(|e| format!("{}: {e}", path.display()))?;
            file.write_all(&message)
                .map_err(|e| format!("{}: {e}", path.display()))
        });
        if let Err(e) = written {
            let first = {
                let mut i = self.inner.lock().unwrap_or_else(|p| p.into_inner());
                !std::mem::replace(&mut i.failed, true)
            };
            if first {
                // Into the daemon's own log only: this one could not be written.
                tracing::warn!(target: "airsd::ops::devlog", "the developer log cannot be written: {e}");
            }
        }
    }
}

/// One ASCII-armoured age message of `plain` to `recipient`.
pub fn encrypt(recipient: &age::x25519::Recipient, plain: &[u8]) -> Result<Vec<u8>, String> {
    let encryptor =
        age::Encryptor::with_recipients(std::iter::once(recipient as &dyn age::Recipient))
            .map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    let armored = age::armor::ArmoredWriter::wrap_output(&mut out, age::armor::Format::AsciiArmor)
        .map_err(|e| e.to_string())?;
    let mut w = encryptor.wrap_output(armored).map_err(|e| e.to_string())?;
    w.write_all(plain).map_err(|e| e.to_string())?;
    w.finish()
        .and_then(|armor| armor.finish())
        .map_err(|e| e.to_string())?;
    Ok(out)
}

/// Removes the day files older than [`KEEP_DAYS`].
fn prune(dir: &Path, now: SystemTime) {
    let oldest = air_proto::time::iso(now - Duration::from_secs(KEEP_DAYS * 24 * 3600))
        .chars()
        .take(10)
        .collect::<String>();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let day = name
            .strip_prefix("air.developer.")
            .and_then(|r| r.strip_suffix(".log"));
        if day.is_some_and(|d| d.len() == 10 && d < oldest.as_str()) {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

impl std::io::Write for DeveloperLog {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let full = {
            let mut inner = self.inner.lock().unwrap_or_else(|p| p.into_inner());
            if inner.buffer.len() + buf.len() > CAP {
                inner.dropped += buf.len() as u64;
            } else {
                inner.buffer.extend_from_slice(buf);
            }
            inner.buffer.len() >= FLUSH_AT
        };
        if full {
            self.full.notify_one();
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for DeveloperLog {
    type Writer = DeveloperLog;
    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn decrypt(identity: &age::x25519::Identity, armored: &[u8]) -> String {
        let d = age::Decryptor::new(age::armor::ArmoredReader::new(armored)).unwrap();
        let mut r = d
            .decrypt(std::iter::once(identity as &dyn age::Identity))
            .unwrap();
        let mut s = String::new();
        r.read_to_string(&mut s).unwrap();
        s
    }

    #[test]
    fn lines_are_only_on_disk_encrypted_each_message_alone_and_old_days_go() {
        let identity = age::x25519::Identity::generate();
        let dir = tempfile::tempdir().unwrap();
        let logs = dir.path().join("logs");
        std::fs::create_dir_all(&logs).unwrap();
        let old = logs.join("air.developer.2020-01-01.log");
        std::fs::write(&old, "x").unwrap();
        let recent = DeveloperLog::file_for(&logs, SystemTime::now() - Duration::from_secs(86_400));
        std::fs::write(&recent, "y").unwrap();
        prune(&logs, SystemTime::now());
        assert!(!old.exists() && recent.exists());

        let mut log = DeveloperLog::to(logs.clone(), identity.to_public());
        log.write_all(b"DEBUG secret-looking detail 42\n").unwrap();
        log.flush_now();
        log.write_all(b"DEBUG the second message\n").unwrap();
        log.flush_now();
        // A full buffer is written by the writer thread at once, not after its pause.
        let file = DeveloperLog::file_for(&logs, SystemTime::now());
        let before = std::fs::metadata(&file).unwrap().len();
        log.start_writer().unwrap();
        std::thread::sleep(Duration::from_millis(50));
        let big = vec![b'z'; FLUSH_AT];
        let t = std::time::Instant::now();
        log.write_all(&big).unwrap();
        while std::fs::metadata(&file).unwrap().len() == before {
            assert!(
                t.elapsed() < FLUSH_EVERY - Duration::from_secs(1),
                "not woken"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        let text = std::fs::read_to_string(&file).unwrap();
        let all: Vec<&str> = text
            .split_inclusive("-----END AGE ENCRYPTED FILE-----\n")
            .collect();
        assert_eq!(all.len(), 3);
        std::fs::write(&file, all[..2].concat()).unwrap();
        // A writer that falls behind: past the cap, lines are dropped and counted.
        let stalled = DeveloperLog::to(logs.clone(), identity.to_public());
        let mut w = stalled.clone();
        let line = vec![b'y'; 1000];
        for _ in 0..(CAP / 1000 + 10) {
            w.write_all(&line).unwrap();
        }
        let (kept, dropped) = {
            let i = stalled.inner.lock().unwrap();
            (i.buffer.len(), i.dropped)
        };
        assert!(kept <= CAP && dropped >= 10_000, "{kept} {dropped}");
        stalled.flush_now();
        let text = std::fs::read_to_string(&file).unwrap();
        let last = text
            .split_inclusive("-----END AGE ENCRYPTED FILE-----\n")
            .last()
            .unwrap();
        assert!(decrypt(&identity, last.as_bytes()).ends_with(&format!(
            "[developer log: {dropped} bytes of lines dropped while the writer was behind]\n"
        )));
        std::fs::write(&file, all[..2].concat()).unwrap();
        let file = DeveloperLog::file_for(&logs, SystemTime::now());
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(!text.contains("secret-looking"), "{text}");
        let blocks: Vec<&str> = text
            .split_inclusive("-----END AGE ENCRYPTED FILE-----\n")
            .collect();
        assert_eq!(blocks.len(), 2, "{text}");
        assert_eq!(
            decrypt(&identity, blocks[0].as_bytes()),
            "DEBUG secret-looking detail 42\n"
        );
        assert_eq!(
            decrypt(&identity, blocks[1].as_bytes()),
            "DEBUG the second message\n"
        );
        // The shipped key is a valid recipient.
        assert!(SHIPPED_RECIPIENT
            .trim()
            .parse::<age::x25519::Recipient>()
            .is_ok());
    }
}
