//! How many agents run at once (D-019: concurrency is dynamic, aware of the
//! provider's rate limits and of the machine's load). The run's concurrency is the
//! most; a provider that asks to slow down (429, 529) halves it at once (a burst of
//! such answers within 30 s halves it once, so one agent's patient retries do not
//! halve it again and again); a machine whose load
//! stays over two per core (for 15 s, not a spike) takes one away at a time, every
//! 15 s while it stays so; after a minute with neither, one
//! comes back at a time, up to the run's own. Each change is recorded
//! (`scheduler.concurrency_changed`), with why. Agents already running are never
//! stopped for it: fewer new ones start.

use super::*;

/// A slow-down within this long of the last is the same burst (one agent's retries
/// after a long `retry-after` too).
const BURST_MS: u64 = 30_000;
/// How long between two steps down for load, or two steps up.
const STEP_MS: u64 = 15_000;
/// How long without a slow-down (and with a light load) before a step up.
const QUIET_MS: u64 = 60_000;
/// Load per core, in thousandths, over which fewer agents start.
const HEAVY: u32 = 2_000;
/// Load per core under which more may start again.
const LIGHT: u32 = 1_000;

/// The dynamic part of the concurrency (transient: a recovered run starts at its
/// own).
#[derive(Clone, Debug, Default)]
pub(super) struct Throttle {
    /// The limit now; `None`: the run's own.
    limit: Option<u32>,
    slowed_ms: Option<u64>,
    changed_ms: u64,
    /// The machine's load per core, in thousandths, as last seen, and since when it
    /// has been heavy.
    load: Option<u32>,
    heavy_since: Option<u64>,
    /// What was last recorded, and why the limit is what it is.
    announced: Option<u32>,
    reason: String,
}

impl Core {
    /// How many agents of the graph may run at once now.
    pub(super) fn concurrency_now(&self) -> u32 {
        let most = self.config.concurrency.max(1);
        self.throttle.limit.unwrap_or(most).clamp(1, most)
    }

    /// A provider asked an agent to slow down.
    pub(super) fn slowed_down(&mut self, now: u64) {
        let burst = self
            .throttle
            .slowed_ms
            .is_some_and(|t| now.saturating_sub(t) < BURST_MS);
        self.throttle.slowed_ms = Some(now);
        if burst {
            return;
        }
        let now_limit = self.concurrency_now();
        let next = (now_limit / 2).max(1);
        if next < now_limit {
            self.throttle.limit = Some(next);
            self.throttle.changed_ms = now;
            self.throttle.reason = "a model provider asked to slow down (rate limit)".into();
        }
    }

    /// The machine's load per core (thousandths) was read.
    pub(super) fn machine_load(&mut self, per_core: u32, now: u64) {
        self.throttle.load = Some(per_core);
        if per_core < HEAVY {
            self.throttle.heavy_since = None;
            return;
        }
        // Heavy for a while, not a moment's spike.
        let since = *self.throttle.heavy_since.get_or_insert(now);
        let now_limit = self.concurrency_now();
        if now.saturating_sub(since) >= STEP_MS
            && now_limit > 1
            && now.saturating_sub(self.throttle.changed_ms) >= STEP_MS
        {
            self.throttle.limit = Some(now_limit - 1);
            self.throttle.changed_ms = now;
            self.throttle.reason = format!(
                "the machine is loaded ({:.1} per core)",
                f64::from(per_core) / 1000.0
            );
        }
    }

    /// Steps back up after a quiet while, and records a change.
    pub(super) fn throttle_decisions(&mut self, now: u64, out: &mut Vec<Decision>) {
        let most = self.config.concurrency.max(1);
        let now_limit = self.concurrency_now();
        let quiet = self
            .throttle
            .slowed_ms
            .is_none_or(|t| now.saturating_sub(t) >= QUIET_MS);
        let light = self.throttle.load.is_none_or(|l| l < LIGHT);
        if now_limit < most
            && quiet
            && light
            && now.saturating_sub(self.throttle.changed_ms) >= STEP_MS
        {
            self.throttle.limit = (now_limit + 1 < most).then_some(now_limit + 1);
            self.throttle.changed_ms = now;
            self.throttle.reason = "recovered: no slow-down and a light load for a while".into();
        }
        let limit = self.concurrency_now();
        let changed = match self.throttle.announced {
            Some(a) => a != limit,
            None => limit != most,
        };
        if changed && self.started && !self.finished {
            self.throttle.announced = Some(limit);
            out.push(Decision::Concurrency {
                concurrency: limit,
                configured: most,
                reason: self.throttle.reason.clone(),
            });
        }
    }
}
