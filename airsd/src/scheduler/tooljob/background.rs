//! Commands an agent started in the background (`shell.run` with `background: true`):
//! a server, a watcher. Each runs as any command does (judged, confined, its output
//! kept and its end recorded with its evidence) but the call answers at once; it
//! runs until `shell.stop`, its timeout (by default the task's), or the end of the
//! agent that started it, whichever comes first. `shell.output` reads what it printed
//! so far.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use crate::tools::exec::RunOutput;
use crate::tools::ToolError;

/// Bytes of each stream a running background command keeps in memory for
/// `shell.output` (all of it is in its logs once it ends).
pub const LIVE_CAP: usize = 1 << 20;
/// Background commands remembered at once (the oldest ended ones go first).
const KEPT: usize = 64;
/// Background commands one agent may have running at once.
pub const PER_AGENT: usize = 4;

/// One background command while it runs, and its answer once it ended.
pub struct Live {
    /// The agent that started it: only that agent stops it.
    pub agent_id: String,
    stop: AtomicBool,
    out: Mutex<[Vec<u8>; 2]>,
    bytes: [AtomicU64; 2],
    ended: Mutex<Option<RunOutput>>,
    /// Its command_run_id, once it started.
    id: Mutex<Option<String>>,
    changed: tokio::sync::Notify,
    started: Mutex<Option<tokio::sync::oneshot::Sender<Result<String, ToolError>>>>,
}

impl Live {
    /// A command about to start for `agent_id`; `started` hears its command_run_id
    /// once its start is on record (or why it did not start).
    pub fn new(
        agent_id: &str,
        started: tokio::sync::oneshot::Sender<Result<String, ToolError>>,
    ) -> Arc<Live> {
        Arc::new(Live {
            agent_id: agent_id.to_string(),
            stop: AtomicBool::new(false),
            out: Mutex::new([Vec::new(), Vec::new()]),
            bytes: [AtomicU64::new(0), AtomicU64::new(0)],
            ended: Mutex::new(None),
            id: Mutex::new(None),
            changed: tokio::sync::Notify::new(),
            started: Mutex::new(Some(started)),
        })
    }

    /// Says the command started (its id) or could not (why); once.
    pub fn started(&self, result: Result<String, ToolError>) {
        if let Ok(id) = &result {
            *self.id.lock().unwrap_or_else(|p| p.into_inner()) = Some(id.clone());
        }
        let sender = self
            .started
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(s) = sender {
            let _ = s.send(result);
        }
    }

    /// A chunk of stream `i` (0 stdout, 1 stderr).
    pub fn push(&self, i: usize, data: &[u8]) {
        let i = i.min(1);
        self.bytes[i].fetch_add(data.len() as u64, Ordering::Relaxed);
        {
            let mut out = self.out.lock().unwrap_or_else(|p| p.into_inner());
            let room = LIVE_CAP.saturating_sub(out[i].len());
            out[i].extend_from_slice(&data[..data.len().min(room)]);
        }
        self.changed.notify_waiters();
    }

    /// Its answer, once it ended.
    pub fn end(&self, out: RunOutput) {
        *self.ended.lock().unwrap_or_else(|p| p.into_inner()) = Some(out);
        self.changed.notify_waiters();
    }

    /// Its end, when it ended some other way than by running to its end (it could
    /// not be run, or its call went away): recorded once, as a failure.
    pub fn fail(&self, why: &str) {
        let mut ended = self.ended.lock().unwrap_or_else(|p| p.into_inner());
        if ended.is_none() {
            *ended = Some(RunOutput {
                command_run_id: self
                    .id
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .clone()
                    .unwrap_or_default(),
                cancelled: true,
                notes: vec![why.to_string()],
                ..RunOutput::default()
            });
        }
        drop(ended);
        self.changed.notify_waiters();
    }

    pub fn ended(&self) -> Option<RunOutput> {
        self.ended.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Asks it to stop (its process group is killed at the next check).
    pub fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    pub fn stopping(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// What stream `i` printed from byte `offset`, at most `limit` bytes, and
    /// whether more of it is kept; with how many bytes it printed in all.
    pub fn read(&self, i: usize, offset: u64, limit: u64) -> (Vec<u8>, bool, u64) {
        let out = self.out.lock().unwrap_or_else(|p| p.into_inner());
        let kept = &out[i.min(1)];
        let start = usize::try_from(offset)
            .unwrap_or(usize::MAX)
            .min(kept.len());
        let end = start
            .saturating_add(usize::try_from(limit).unwrap_or(usize::MAX))
            .min(kept.len());
        (
            kept[start..end].to_vec(),
            end < kept.len(),
            self.bytes[i.min(1)].load(Ordering::Relaxed),
        )
    }

    /// Waits until it prints something or ends, at most `for_at_most`.
    pub async fn settle(&self, for_at_most: std::time::Duration) {
        let _ = tokio::time::timeout(for_at_most, self.changed.notified()).await;
    }
}

/// Marks its command ended when dropped, if nothing else did.
pub struct EndGuard(pub Arc<Live>);

impl Drop for EndGuard {
    fn drop(&mut self) {
        self.0.fail("its run ended without an answer");
    }
}

/// The background commands of a run, by command_run_id.
#[derive(Default)]
pub struct Background {
    runs: Mutex<Vec<(String, Arc<Live>)>>,
}

impl Background {
    pub fn insert(&self, id: &str, live: Arc<Live>) {
        let mut runs = self.runs.lock().unwrap_or_else(|p| p.into_inner());
        if runs.len() >= KEPT {
            if let Some(i) = runs.iter().position(|(_, l)| l.ended().is_some()) {
                runs.remove(i);
            }
        }
        runs.push((id.to_string(), live));
    }

    pub fn get(&self, id: &str) -> Option<Arc<Live>> {
        self.runs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .find(|(i, _)| i == id)
            .map(|(_, l)| l.clone())
    }

    /// Whether any of the run's background commands still runs.
    pub fn any_running(&self) -> bool {
        self.runs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .any(|(_, l)| l.ended().is_none())
    }

    /// The commands still running, by agent (for a count in a note).
    pub fn running_of(&self, agent: &str) -> usize {
        self.runs
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .filter(|(_, l)| l.agent_id == agent && l.ended().is_none())
            .count()
    }
}
