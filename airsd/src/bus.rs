//! The EventBus: in-process publish/subscribe of one session's events, in one order for
//! every subscriber.
//!
//! The bus owns a state `S` (the session's projection) and applies each event to it
//! under the same lock that hands the event to the subscribers, so a snapshot taken
//! together with a subscription ([`EventBus::subscribe_with`]) is exactly the state the
//! first delivered delta applies to.
//!
//! Each subscriber has its own bounded queue. Publishing never waits for a subscriber:
//! when a queue passes `coalesce_at`, ephemeral events of coalescable types are merged
//! into an earlier queued event of the same key (registry [`Coalesce`] rules); when it
//! reaches `capacity`, the subscriber is cut off and told to resync from a fresh
//! snapshot. So a stalled subscriber costs the writer and the other subscribers nothing.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use air_proto::event::RuntimeEvent;
use air_proto::registry::{self, Coalesce};
use serde_json::value::RawValue;
use serde_json::Value;
use tokio::sync::Notify;

/// State the bus keeps in step with the events it publishes.
pub trait BusState: Send + 'static {
    fn apply(&mut self, seq: u64, event: &RuntimeEvent, durable: bool);
}

impl BusState for air_proto::projection::Projection {
    fn apply(&mut self, seq: u64, event: &RuntimeEvent, durable: bool) {
        air_proto::projection::Projection::apply(self, seq, event, durable);
    }
}

/// One delivered event. `seq` is the event's sequence number if it is durable, else the
/// number of the last durable event before it (ephemeral events do not advance it).
#[derive(Clone, Debug)]
pub struct Delta {
    pub seq: u64,
    pub durable: bool,
    pub event: Arc<RuntimeEvent>,
    /// The delta's wire form, encoded once and shared by every subscriber that sends it.
    pub wire: Arc<OnceLock<Box<RawValue>>>,
}

impl Delta {
    pub fn new(seq: u64, durable: bool, event: Arc<RuntimeEvent>) -> Self {
        Self {
            seq,
            durable,
            event,
            wire: Arc::default(),
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub struct BusConfig {
    /// Queue length at which a subscriber is cut off and told to resync.
    pub capacity: usize,
    /// Queue length from which coalescable ephemeral events are merged.
    pub coalesce_at: usize,
    /// How far back from the tail a merge partner is searched.
    pub coalesce_window: usize,
}

impl Default for BusConfig {
    fn default() -> Self {
        Self {
            capacity: 16_384,
            coalesce_at: 1_024,
            coalesce_window: 256,
        }
    }
}

/// What a subscriber receives.
#[derive(Debug)]
pub enum Recv {
    Delta(Delta),
    /// The subscriber fell too far behind; events were dropped. Take a new snapshot.
    Resync,
    /// The bus was closed (the session is shutting down).
    Closed,
}

pub struct EventBus<S> {
    inner: Mutex<Inner<S>>,
    config: BusConfig,
}

struct Inner<S> {
    state: S,
    seq: u64,
    subscribers: Vec<Arc<Queue>>,
    closed: bool,
}

struct Queue {
    items: Mutex<QueueState>,
    notify: Notify,
    dropped: AtomicBool,
}

#[derive(Default)]
struct QueueState {
    items: VecDeque<Delta>,
    /// Index in `items` just after the last durable delta (merges never cross it).
    merge_floor: usize,
    lagged: bool,
    closed: bool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the lock leaves consistent data here (no multi-step updates
    // that can be cut half way), so keep going rather than poison every later caller.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl<S: BusState> EventBus<S> {
    pub fn new(state: S, seq: u64, config: BusConfig) -> Self {
        Self {
            inner: Mutex::new(Inner {
                state,
                seq,
                subscribers: Vec::new(),
                closed: false,
            }),
            config,
        }
    }

    /// The sequence number of the last durable event published.
    pub fn seq(&self) -> u64 {
        lock(&self.inner).seq
    }

    /// Reads the state.
    pub fn read<R>(&self, f: impl FnOnce(&S, u64) -> R) -> R {
        let inner = lock(&self.inner);
        f(&inner.state, inner.seq)
    }

    /// Runs `f` on the state and subscribes, atomically: the first delta the subscription
    /// delivers is the first event after what `f` saw.
    pub fn subscribe_with<R>(&self, f: impl FnOnce(&S, u64) -> R) -> (R, Subscription) {
        let mut inner = lock(&self.inner);
        let queue = Arc::new(Queue {
            items: Mutex::new(QueueState {
                closed: inner.closed,
                ..QueueState::default()
            }),
            notify: Notify::new(),
            dropped: AtomicBool::new(false),
        });
        inner.subscribers.push(queue.clone());
        let r = f(&inner.state, inner.seq);
        (r, Subscription { queue })
    }

    pub fn subscribe(&self) -> Subscription {
        self.subscribe_with(|_, _| ()).1
    }

    /// Number of live subscribers.
    pub fn subscriber_count(&self) -> usize {
        let mut inner = lock(&self.inner);
        inner
            .subscribers
            .retain(|q| !q.dropped.load(Ordering::Relaxed));
        inner.subscribers.len()
    }

    /// Publishes committed durable events, in sequence order.
    pub fn publish_durable(&self, events: impl IntoIterator<Item = (u64, Arc<RuntimeEvent>)>) {
        let mut inner = lock(&self.inner);
        for (seq, event) in events {
            inner.state.apply(seq, &event, true);
            inner.seq = seq;
            self.fan_out(&mut inner, Delta::new(seq, true, event));
        }
    }

    /// Publishes an ephemeral event. Returns the seq it was labelled with.
    pub fn publish_ephemeral(&self, event: Arc<RuntimeEvent>) -> u64 {
        let mut inner = lock(&self.inner);
        let seq = inner.seq;
        inner.state.apply(seq, &event, false);
        self.fan_out(&mut inner, Delta::new(seq, false, event));
        seq
    }

    /// Ends every subscription (each receives `Closed` after what is queued).
    pub fn close(&self) {
        let mut inner = lock(&self.inner);
        inner.closed = true;
        for q in inner.subscribers.drain(..) {
            lock(&q.items).closed = true;
            q.notify.notify_one();
        }
    }

    fn fan_out(&self, inner: &mut Inner<S>, delta: Delta) {
        let config = &self.config;
        let mut any_gone = false;
        for q in &inner.subscribers {
            if q.dropped.load(Ordering::Relaxed) {
                any_gone = true;
                continue;
            }
            let mut st = lock(&q.items);
            if st.lagged {
                any_gone = true;
                continue;
            }
            if st.items.len() >= config.coalesce_at
                && !delta.durable
                && merge(&mut st, &delta, config)
            {
                continue;
            }
            if st.items.len() >= config.capacity {
                st.items.clear();
                st.merge_floor = 0;
                st.lagged = true;
                any_gone = true;
            } else {
                st.items.push_back(delta.clone());
                if delta.durable {
                    st.merge_floor = st.items.len();
                }
            }
            drop(st);
            q.notify.notify_one();
        }
        if any_gone {
            inner
                .subscribers
                .retain(|q| !q.dropped.load(Ordering::Relaxed) && !lock(&q.items).lagged);
        }
    }
}

/// Tries to fold `delta` into a queued event of the same type and key.
fn merge(st: &mut QueueState, delta: &Delta, config: &BusConfig) -> bool {
    let Some(spec) = registry::lookup(&delta.event.event_type) else {
        return false;
    };
    let key: &[&str] = match spec.coalesce {
        Coalesce::Never => return false,
        Coalesce::Concat { key, .. } | Coalesce::Latest { key } => key,
    };
    let new = &delta.event;
    let floor = st
        .merge_floor
        .max(st.items.len().saturating_sub(config.coalesce_window));
    let len = st.items.len();
    let Some(pos) = (floor..len).rev().find(|&i| {
        let old = &st.items[i].event;
        old.event_type == new.event_type
            && key.iter().all(|k| old.payload.get(k) == new.payload.get(k))
    }) else {
        return false;
    };
    let merged = match spec.coalesce {
        Coalesce::Concat { text, .. } => {
            let old = &st.items[pos].event;
            let mut event = (**new).clone();
            let joined = format!(
                "{}{}",
                old.payload.get(text).and_then(Value::as_str).unwrap_or(""),
                new.payload.get(text).and_then(Value::as_str).unwrap_or("")
            );
            if let Some(obj) = event.payload.as_object_mut() {
                obj.insert(text.to_string(), Value::String(joined));
            }
            Arc::new(event)
        }
        _ => new.clone(),
    };
    st.items[pos] = Delta::new(delta.seq, false, merged);
    true
}

/// A subscriber's end. Dropping it unsubscribes.
pub struct Subscription {
    queue: Arc<Queue>,
}

impl Subscription {
    /// The next delta, waiting for one.
    pub async fn recv(&mut self) -> Recv {
        loop {
            {
                let mut st = lock(&self.queue.items);
                if let Some(d) = st.items.pop_front() {
                    st.merge_floor = st.merge_floor.saturating_sub(1);
                    return Recv::Delta(d);
                }
                if st.lagged {
                    return Recv::Resync;
                }
                if st.closed {
                    return Recv::Closed;
                }
            }
            self.queue.notify.notified().await;
        }
    }

    /// Moves every queued delta into `out`, waiting until there is at least one. Returns
    /// `None` when `out` was filled, or `Resync`/`Closed` when that is what comes next.
    pub async fn recv_many(&mut self, out: &mut Vec<Delta>) -> Option<Recv> {
        self.recv_up_to(out, usize::MAX).await
    }

    /// Like [`Subscription::recv_many`], but moves at most `max` deltas; the rest stay
    /// in this subscriber's bounded queue (so a consumer that then blocks is still cut
    /// off by the queue's bound rather than holding a large batch of its own).
    pub async fn recv_up_to(&mut self, out: &mut Vec<Delta>, max: usize) -> Option<Recv> {
        loop {
            {
                let mut st = lock(&self.queue.items);
                if !st.items.is_empty() {
                    let n = st.items.len().min(max.max(1));
                    out.extend(st.items.drain(..n));
                    st.merge_floor = st.merge_floor.saturating_sub(n);
                    return None;
                }
                if st.lagged {
                    return Some(Recv::Resync);
                }
                if st.closed {
                    return Some(Recv::Closed);
                }
            }
            self.queue.notify.notified().await;
        }
    }

    /// A queued delta if there is one, without waiting.
    pub fn try_recv(&mut self) -> Option<Recv> {
        let mut st = lock(&self.queue.items);
        if let Some(d) = st.items.pop_front() {
            st.merge_floor = st.merge_floor.saturating_sub(1);
            return Some(Recv::Delta(d));
        }
        if st.lagged {
            return Some(Recv::Resync);
        }
        if st.closed {
            return Some(Recv::Closed);
        }
        None
    }

    /// Deltas waiting in this subscriber's queue.
    pub fn pending(&self) -> usize {
        lock(&self.queue.items).items.len()
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.queue.dropped.store(true, Ordering::Relaxed);
    }
}
