//! Test helper: writes work units into a session as fast as it can from many concurrent
//! producers, printing `acked <seq>` after each acknowledged batch, until killed.
//!
//! Usage: air-test-event-writer <project-dir> <session-id>

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use air_proto::layout::ProjectPaths;
use air_proto::payload::SessionCreated;
use airsd::{Session, SessionConfig};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let (Some(dir), Some(session_id)) = (args.get(1), args.get(2)) else {
        return Err("usage: air-test-event-writer <project-dir> <session-id>".into());
    };
    let paths = ProjectPaths::new(dir);
    let session = Session::create(
        &paths,
        "00000000-0000-4000-8000-000000000000",
        session_id,
        &SessionCreated::default(),
        SessionConfig::default(),
    )?;
    let session = Arc::new(session);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let counter = Arc::new(AtomicU64::new(0));
    rt.block_on(async {
        let mut tasks = Vec::new();
        for _ in 0..32 {
            let session = session.clone();
            let counter = counter.clone();
            tasks.push(tokio::spawn(async move {
                loop {
                    let n = counter.fetch_add(1, Ordering::Relaxed);
                    let events = air_tests::work_unit(session.id(), n);
                    match session.store().append_batch(events).await {
                        Ok(seqs) => {
                            let last = seqs.last().copied().unwrap_or(0);
                            let mut out = std::io::stdout().lock();
                            let _ = writeln!(out, "acked {} {}", n, last);
                            let _ = out.flush();
                        }
                        Err(e) => {
                            eprintln!("append failed: {e}");
                            std::process::exit(1);
                        }
                    }
                }
            }));
        }
        for t in tasks {
            let _ = t.await;
        }
    });
    Ok(())
}
