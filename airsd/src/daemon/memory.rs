//! `memory.*`: the project's learned memory through airsd (clients never open its
//! database). Promoting, forgetting and the Curator's archiving are recorded as
//! `memory.promoted` and `memory.archived` in the project's newest session, so that
//! whoever watches it sees them; the store itself is the record of what the memory
//! holds.

use air_proto::api::{CuratorReport, MemoryView};
use air_proto::event::{EventSource, RuntimeEvent};
use air_proto::events::Event;
use air_proto::memory::{MemoryEntry, MemoryStatus};
use air_proto::payload as p;

use super::state::DaemonState;
use crate::error::{Error, Result};
use crate::memory::apply::{self, Places};
use crate::memory::{curator, Memory};

/// What `memory.list` returns when no limit is given.
const LIST_DEFAULT: u32 = 100;

impl DaemonState {
    fn air_home(&self) -> Option<std::path::PathBuf> {
        self.shell.as_ref().and_then(|s| s.air_home.clone())
    }

    /// Runs `f` on the project's memory, off the async threads.
    async fn with_memory<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Memory, &Places<'_>) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let path = self.paths.learned_memory();
        let root = self.paths.root().to_path_buf();
        let shared = self.paths.shared();
        let home = self.air_home();
        tokio::task::spawn_blocking(move || {
            let mut m = Memory::open(&path)?;
            f(
                &mut m,
                &Places {
                    root: &root,
                    shared,
                    air_home: home.as_deref(),
                },
            )
        })
        .await
        .map_err(|e| Error::Internal(format!("blocking task: {e}")))?
    }

    pub async fn memory_list(
        &self,
        status: Option<MemoryStatus>,
        kind: Option<air_proto::memory::MemoryKind>,
        limit: Option<u32>,
    ) -> Result<Vec<MemoryEntry>> {
        if !self.paths.learned_memory().exists() {
            return Ok(Vec::new());
        }
        let limit = limit.unwrap_or(LIST_DEFAULT).clamp(1, 10_000);
        self.with_memory(move |m, _| m.list(status, kind, limit))
            .await
    }

    /// A project with no learned memory has no entry `id` (and none is created).
    fn has_memory(&self, id: &str) -> Result<()> {
        if self.paths.learned_memory().exists() {
            Ok(())
        } else {
            found(None, id).map(drop)
        }
    }

    pub async fn memory_show(&self, id: String) -> Result<MemoryView> {
        self.has_memory(&id)?;
        self.with_memory(move |m, places| {
            let entry = found(m.get(&id)?, &id)?;
            Ok(apply::view(entry, places))
        })
        .await
    }

    /// Promotes an entry at the user's word: a memory is shown to agents from now on;
    /// a skill draft or patch is written first, and not promoted if it cannot be.
    pub async fn memory_promote(&self, id: String) -> Result<MemoryView> {
        self.has_memory(&id)?;
        let view = self
            .with_memory(move |m, places| {
                let entry = found(m.get(&id)?, &id)?;
                let written = apply::write(&entry, places).map_err(|why| {
                    Error::Refused(format!("memory {id} was not promoted: {why}"))
                })?;
                let now = air_proto::time::now_iso();
                let entry = found(m.set_status(&id, MemoryStatus::Promoted, None, &now)?, &id)?;
                let mut view = apply::view(entry, places);
                view.path = written.map(|p| p.display().to_string()).or(view.path);
                // Written: nothing is left to diff.
                view.diff = None;
                view.problem = None;
                Ok(view)
            })
            .await?;
        self.memory_events(&[p::MemoryPromoted {
            memory_id: view.entry.id.clone(),
            kind: view.entry.kind,
            title: view.entry.title.clone(),
            by: "user".into(),
            path: view.path.clone(),
        }])
        .await;
        Ok(view)
    }

    /// Removes an entry at the user's word.
    pub async fn memory_forget(&self, id: String) -> Result<MemoryEntry> {
        self.has_memory(&id)?;
        let entry = self
            .with_memory(move |m, _| found(m.forget(&id)?, &id))
            .await?;
        self.memory_events(&[p::MemoryArchived {
            memory_id: entry.id.clone(),
            title: entry.title.clone(),
            reason: "forgotten at the user's word".into(),
            by: "user".into(),
            deleted: true,
        }])
        .await;
        Ok(entry)
    }

    /// The Curator's pass, now.
    pub async fn memory_curate(&self) -> Result<CuratorReport> {
        let (report, archived) = self
            .with_memory(|m, places| {
                let (skills, _) = air_proto::skills::discover(places.air_home, &places.shared);
                curator::pass(m, &skills, places.root, std::time::SystemTime::now())
            })
            .await?;
        let events: Vec<p::MemoryArchived> = archived
            .into_iter()
            .map(|(e, reason)| p::MemoryArchived {
                memory_id: e.id,
                title: e.title,
                reason,
                by: "curator".into(),
                deleted: false,
            })
            .collect();
        self.memory_events(&events).await;
        Ok(report)
    }

    /// Runs the Curator's pass when it is due (airsd's timer asks hourly).
    pub async fn curate_if_due(&self) {
        // Nothing learned and no skill installed: nothing to curate (and no store to
        // create).
        let (path, home, shared) = (
            self.paths.learned_memory(),
            self.air_home(),
            self.paths.shared(),
        );
        let worth = tokio::task::spawn_blocking(move || {
            path.exists()
                || !air_proto::skills::discover(home.as_deref(), &shared)
                    .0
                    .is_empty()
        })
        .await
        .unwrap_or(false);
        if !worth {
            return;
        }
        let due = self
            .with_memory(|m, _| curator::due(m, std::time::SystemTime::now()))
            .await;
        match due {
            Ok(true) => match self.memory_curate().await {
                Ok(r) => tracing::info!(
                    stale = r.stale.len(),
                    unused = r.unused.len(),
                    overlapping = r.overlapping_skills.len(),
                    "the Curator's weekly pass"
                ),
                Err(e) => tracing::warn!("the Curator's pass failed: {e}"),
            },
            Ok(false) => {}
            Err(e) => tracing::warn!("cannot read the learned memory: {e}"),
        }
    }

    /// Records memory events in the project's newest session, together (none: the
    /// store alone holds them).
    async fn memory_events<E: Event>(&self, events: &[E]) {
        if events.is_empty() {
            return;
        }
        let recorded = async {
            let Some(newest) = self.list_sessions().await?.into_iter().next() else {
                return Ok(());
            };
            let session = self.session(&newest.id).await?;
            let built = events
                .iter()
                .map(|e| RuntimeEvent::of(&newest.id, EventSource::system(), e))
                .collect::<std::result::Result<Vec<_>, _>>()
                .map_err(|e| Error::Internal(format!("{} payload: {e}", E::TYPE)))?;
            session.store().append_batch(built).await.map(drop)
        }
        .await;
        if let Err(e) = recorded {
            tracing::warn!("{} was not recorded: {e}", E::TYPE);
        }
    }
}

fn found(entry: Option<MemoryEntry>, id: &str) -> Result<MemoryEntry> {
    entry.ok_or_else(|| Error::NotFound(format!("no memory {id} in this project")))
}
