//! The agents' commands in the editor's terminals (`terminal/*`, when the editor
//! offers them): a command still runs in airsd's sandbox, and the editor's terminal
//! shows it as it runs. For each command the relay makes a FIFO in a folder of its
//! own (0700, under `$XDG_RUNTIME_DIR`, which no sandboxed command may write; without
//! it no terminal is used) and asks the editor to run
//! `/bin/sh -c 'cat OUT; exit "$(cat STATUS)"'`; the
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
    /// Where the folder of its FIFOs is made when a command is shown (none: no
    /// terminal is used); each writer removes its files, and the folder with the last
    /// of them.
    base: Option<PathBuf>,
    runs: Mutex<HashMap<String, Mirror>>,
}

/// The script the editor runs for a command: its output as it comes, then its status.
pub const SCRIPT: &str = r#"cat "$0"; exit "$(cat "$1" 2>/dev/null || echo 1)""#;

impl Terminals {
    /// Terminals in a fresh private folder, or none (the editor then sees the output
    /// when the command ends).
    pub fn new() -> Terminals {
        Terminals {
            base: private_base(),
            runs: Mutex::new(HashMap::new()),
        }
    }

    /// The folder of this relay's FIFOs, made (0700) when it is not there: ours
    /// only when no one else may enter it.
    fn dir(&self) -> Option<PathBuf> {
        use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _};
        let dir = self
            .base
            .as_ref()?
            .join(format!("air-acp-{}", std::process::id()));
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
            "/bin/sh".to_string(),
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
        let data = shown(data);
        let data = data.as_str();
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
        // What `exit` takes: a signal's death as 128 + its number would be, a code
        // out of range as a failure.
        let code = match code {
            0..=255 => code,
            c if c < 0 => 128 + (-c).min(127),
            _ => 1,
        };
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
            .custom_flags((nix::fcntl::OFlag::O_NONBLOCK | nix::fcntl::OFlag::O_NOFOLLOW).bits())
            .open(fifo)
        {
            // What was opened is the FIFO made, not what a name was swapped for.
            Ok(f) => {
                use std::os::unix::fs::FileTypeExt as _;
                if !f.metadata().is_ok_and(|m| m.file_type().is_fifo()) {
                    return None;
                }
                break f;
            }
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
    if let Some(base) = private_base() {
        let _ = std::fs::remove_dir_all(base.join(format!("air-acp-{}", std::process::id())));
    }
}

/// `$XDG_RUNTIME_DIR` when it is this user's own and no command writes there (not
/// the temporary directory, which sandboxed commands may write): the FIFOs cannot be
/// swapped for links by a command of an agent.
fn private_base() -> Option<PathBuf> {
    use std::os::unix::fs::MetadataExt as _;
    let base = PathBuf::from(std::env::var_os("XDG_RUNTIME_DIR")?);
    let m = std::fs::symlink_metadata(&base).ok()?;
    let tmp = std::env::temp_dir();
    (base.is_absolute()
        && m.is_dir()
        && m.uid() == nix::unistd::geteuid().as_raw()
        && m.mode() & 0o077 == 0
        && !base.starts_with(&tmp)
        && !tmp.starts_with(&base))
    .then_some(base)
}

/// A command's output as a terminal may show it: colours kept, every other escape
/// sequence and control character left out (no title, clipboard, link or cursor
/// tricks from what a command printed).
fn shown(data: &str) -> String {
    let mut out = String::with_capacity(data.len());
    let mut chars = data.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\t' | '\n' | '\r' => out.push(c),
            '\u{1b}' => {
                // SGR (`ESC [ digits ; … m`) is kept; anything else is dropped whole.
                let mut seq = String::from(c);
                if chars.peek() == Some(&'[') {
                    seq.push('[');
                    chars.next();
                    while let Some(&n) = chars.peek() {
                        if n.is_ascii_digit() || n == ';' {
                            seq.push(n);
                            chars.next();
                        } else {
                            break;
                        }
                    }
                    if chars.peek() == Some(&'m') {
                        chars.next();
                        seq.push('m');
                        out.push_str(&seq);
                    }
                }
            }
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_colours_reach_the_editors_terminal() {
        let said =
            super::shown("a\u{1b}[31mred\u{1b}[0m\u{1b}]52;c;eA==\u{7}b\u{1b}[2J\u{9b}c\r\n");
        assert_eq!(said, "a\u{1b}[31mred\u{1b}[0m]52;c;eA==bJc\r\n");
        assert!(!said.contains('\u{7}'));
    }
}
