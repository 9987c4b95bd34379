//! Everything `air` prints on stdout goes through here. A reader that went away
//! (`air events | head -1`) ends `air` at once with success: output nobody reads any
//! more is not an error. SIGPIPE keeps Rust's default (ignored): `air` also writes to
//! the daemon's socket, where a closed peer must be an error to handle, not a signal
//! that kills.

use std::io::Write;

/// Writes `args` to stdout, exiting when it cannot be written.
pub fn write(args: std::fmt::Arguments<'_>) {
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_fmt(args) {
        gone(&e);
    }
}

/// Writes bytes to stdout as they are, exiting when they cannot be written.
pub fn write_bytes(bytes: &[u8]) {
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(bytes).and_then(|()| out.flush()) {
        gone(&e);
    }
}

/// Flushes stdout before `air` exits.
pub fn flush() {
    if let Err(e) = std::io::stdout().lock().flush() {
        gone(&e);
    }
}

/// Whether stdout is a terminal (someone sees what is printed as it is printed).
pub fn is_terminal() -> bool {
    std::io::IsTerminal::is_terminal(&std::io::stdout())
}

/// Stdout as an `io::Write` for code that takes a writer, with the same rule.
pub struct Out;

impl Write for Out {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        write_bytes(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        flush();
        Ok(())
    }
}

/// A stdout that cannot be written: a closed pipe ends `air` with success, any other
/// error with failure, said on stderr.
pub fn gone(e: &std::io::Error) -> ! {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        std::process::exit(0);
    }
    eprintln!("air: cannot write to stdout: {e}");
    std::process::exit(i32::from(crate::exit::FAILED));
}

/// `println!` that ends `air` quietly when the reader has gone.
macro_rules! outln {
    () => { $crate::stdout::write(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::stdout::write(format_args!("{}\n", format_args!($($arg)*))) };
}

/// `print!` that ends `air` quietly when the reader has gone.
macro_rules! out {
    ($($arg:tt)*) => { $crate::stdout::write(format_args!($($arg)*)) };
}
