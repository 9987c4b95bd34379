//! `air-mock-provider RECORDING.json [PROJECT_DIR]`: serves a recording (the fixture
//! format of the tests, or a file `air run --record` wrote) on a loopback port, prints
//! its URL, and logs each request that does not match to stderr until it is killed.
//! Point `ANTHROPIC_BASE_URL` (or `OPENAI_BASE_URL` with `/v1`) at it.

use std::time::Duration;

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (file, root) = match args.as_slice() {
        [file] => (file.clone(), None),
        [file, root] => (file.clone(), Some(root.clone())),
        _ => {
            eprintln!("usage: air-mock-provider RECORDING.json [PROJECT_DIR]");
            return std::process::ExitCode::from(2);
        }
    };
    let recording = match worker::replay::Recording::load(std::path::Path::new(&file)) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("air-mock-provider: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("air-mock-provider: {e}");
            return std::process::ExitCode::from(1);
        }
    };
    rt.block_on(async move {
        let server = match worker::replay::Server::start(recording.exchanges, root).await {
            Ok(s) => s,
            Err(e) => {
                eprintln!("air-mock-provider: cannot listen: {e}");
                return std::process::ExitCode::from(1);
            }
        };
        println!("{}", server.url);
        let mut reported = 0;
        loop {
            tokio::time::sleep(Duration::from_millis(200)).await;
            let m = server.mismatches();
            for line in &m[reported..] {
                eprintln!("{line}");
            }
            reported = m.len();
        }
    })
}
