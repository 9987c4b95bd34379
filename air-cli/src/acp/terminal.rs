//! The agents' commands in the editor's terminals (`terminal/*`, when the editor
//! offers them): a command still runs in airsd's sandbox, and the editor's terminal
//! shows it as it runs. For each command the relay makes a FIFO in a folder of its
//! own (0700) and asks the editor to run `sh -c 'cat OUT; exit "$(cat STATUS)"'`; the
//! command's output goes into the first FIFO as it comes, its exit status into the
//! second once it ended, and the tool call embeds the terminal.

use std::collections::HashMap;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Most output waiting for the editor's terminal to read it, per command.
const MOST_WAITING: usize = 4 * 1024 * 1024;

/// What goes to a command's terminal.
enum Piece {
    Output(Vec<u8>),
    /// The command ended with this status (its terminal's process exits with it).
    Ended(i32),
}

/// One command shown in a terminal.
struct Mirror {
    to: std::sync::mpsc::Sender<Piece>,
    waiting: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

/// The terminals of one connection.
pub struct Terminals {
    /// Where the folder of its FIFOs is made when a command is shown; each writer
    /// removes its files, and the folder with the last of them.
    base: PathBuf,
    runs: Mutex<HashMap<String, Mirror>>,
}

/// The script the editor runs for a command: its output as it comes, then its status.
pub const SCRIPT: &str = r#"cat "$0"; exit "$(cat "$1" 2>/dev/null || echo 1)""#;

impl Terminals {
    /// Terminals in a fresh private folder, or none (the editor then sees the output
    /// when the command ends).
    pub fn new() -> Terminals {
        Terminals {
            base: std::env::var_os("XDG_RUNTIME_DIR")
                .map(PathBuf::from)
                .filter(|d| d.is_dir())
                .unwrap_or_else(std::env::temp_dir),
            runs: Mutex::new(HashMap::new()),
        }
    }

    /// The folder of this relay's FIFOs, made (0700) when it is not there: ours
    /// only when no one else may enter it.
    fn dir(&self) -> Option<PathBuf> {
        use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _};
        let dir = self.base.join(format!("air-acp-{}", std::process::id()));
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Ok(()) => Some(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let m = std::fs::symlink_metadata(&dir).ok()?;
                (m.is_dir() && m.uid() == nix::unistd::geteuid().as_raw() && m.mode() & 0o077 == 0)
                    .then_some(dir)
            }
            Err(_) => None,
        }
    }

    /// A terminal for the command `run`: the FIFO made and its writer started; the
    /// program and arguments the editor runs to show it.
    pub fn open(&self, run: &str) -> Option<(String, Vec<String>)> {
        let dir = self.dir()?;
        let dir = &dir;
        let safe: String = run
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
            .take(64)
            .collect();
        let fifo = dir.join(format!("{safe}.out"));
        let status = dir.join(format!("{safe}.status"));
        for f in [&fifo, &status] {
            nix::unistd::mkfifo(
                f,
                nix::sys::stat::Mode::S_IRUSR | nix::sys::stat::Mode::S_IWUSR,
            )
            .ok()?;
        }
        let (to, from) = std::sync::mpsc::channel::<Piece>();
        let waiting = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let left = waiting.clone();
        let (f2, s2) = (fifo.clone(), status.clone());
        std::thread::spawn(move || write_out(from, &left, &f2, &s2));
        let mut runs = self.runs.lock().unwrap_or_else(|p| p.into_inner());
        runs.insert(run.to_string(), Mirror { to, waiting });
        Some((
            "sh".to_string(),
            vec![
                "-c".to_string(),
                SCRIPT.to_string(),
                fifo.display().to_string(),
                status.display().to_string(),
            ],
        ))
    }

    /// A chunk of the command's output.
    pub fn output(&self, run: &str, data: &str) {
        let runs = self.runs.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(m) = runs.get(run) {
            // An editor that does not read its terminal does not make the relay
            // hold all of a command's output.
            let before = m
                .waiting
                .fetch_add(data.len(), std::sync::atomic::Ordering::SeqCst);
            if before + data.len() <= MOST_WAITING {
                let _ = m.to.send(Piece::Output(data.as_bytes().to_vec()));
            } else {
                m.waiting
                    .fetch_sub(data.len(), std::sync::atomic::Ordering::SeqCst);
            }
        }
    }

    /// The command ended with `code`: its terminal's process exits with it.
    pub fn ended(&self, run: &str, code: i32) {
        let m = self
            .runs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(run);
        if let Some(m) = m {
            let _ = m.to.send(Piece::Ended(code));
        }
    }
}

/// How long the editor's terminal has to open its FIFO.
const READER_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

/// The FIFO at `fifo` opened for writing once the editor's terminal opened it for
/// reading (a FIFO's data is lost when no end is open), for [`READER_WAIT`] at most.
fn writer(fifo: &Path) -> Option<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let until = std::time::Instant::now() + READER_WAIT;
    let file = loop {
        match std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits())
            .open(fifo)
        {
            Ok(f) => break f,
            Err(_) if std::time::Instant::now() < until => {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Err(_) => return None,
        }
    };
    // Writes wait for the reader from here on.
    let flags = nix::fcntl::fcntl(&file, nix::fcntl::FcntlArg::F_GETFL).ok()?;
    let mut flags = nix::fcntl::OFlag::from_bits_truncate(flags);
    flags.remove(nix::fcntl::OFlag::O_NONBLOCK);
    nix::fcntl::fcntl(&file, nix::fcntl::FcntlArg::F_SETFL(flags)).ok()?;
    Some(file)
}

/// The writer of one command's FIFO: the output as it comes, then the status file,
/// then the FIFO closed (the editor's `cat` ends) and both names removed.
fn write_out(
    from: std::sync::mpsc::Receiver<Piece>,
    waiting: &std::sync::atomic::AtomicUsize,
    fifo: &Path,
    status: &Path,
) {
    let mut file = writer(fifo);
    let mut code = 1;
    for piece in from {
        match piece {
            Piece::Output(bytes) => {
                if let Some(f) = file.as_mut() {
                    if f.write_all(&bytes).is_err() {
                        file = None;
                    }
                }
                waiting.fetch_sub(bytes.len(), std::sync::atomic::Ordering::SeqCst);
            }
            Piece::Ended(c) => {
                code = c;
                break;
            }
        }
    }
    drop(file);
    // Its status once its output ended (the terminal reads it after the output).
    if let Some(mut f) = writer(status) {
        let _ = f.write_all(code.to_string().as_bytes());
    }
    let _ = std::fs::remove_file(fifo);
    let _ = std::fs::remove_file(status);
    // The folder goes with its last command (not while another is shown).
    if let Some(dir) = fifo.parent() {
        let _ = std::fs::remove_dir(dir);
    }
}

/// Removes what is left of this relay's FIFOs (when it ends).
pub fn clean_up() {
    let base = std::env::var_os("XDG_RUNTIME_DIR")
        .map(PathBuf::from)
        .filter(|d| d.is_dir())
        .unwrap_or_else(std::env::temp_dir);
    let _ = std::fs::remove_dir_all(base.join(format!("air-acp-{}", std::process::id())));
}
