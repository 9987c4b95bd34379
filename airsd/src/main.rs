//! `airsd`: the daemon binary. A thin shell over the `airsd` library.

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("--version" | "-V") => {
            println!("airsd {}", env!("CARGO_PKG_VERSION"));
            ExitCode::SUCCESS
        }
        Some("--help" | "-h") | None => {
            println!(
                "airsd {}: the per-project air daemon\n\n\
                 This version provides the session store (event log, bus, projections)\n\
                 used by air; the socket server that clients attach to is not part of it yet.\n\n\
                 Options:\n  -V, --version  print the version\n  -h, --help     print this help",
                env!("CARGO_PKG_VERSION")
            );
            if args.is_empty() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            }
        }
        Some(other) => {
            eprintln!("airsd: unknown argument `{other}` (try --help)");
            ExitCode::from(2)
        }
    }
}
