//! Each task of a run in its own worktree (`docs/worktrees.md`): made from the
//! session's integration branch when the task's first agent starts, every tool and
//! command of the task's agents confined to it, each executor's or debugger's attempt
//! committed on the task's branch when it ends (its changed files and diff read from
//! there), the branch merged into the integration branch when the task completes, and
//! the integration branch landed in the checkout when the run ends. A project that
//! is not a git repository, or has no commit yet, keeps the shared checkout.
//!
//! Must not: run a task's agents in the checkout when its worktree could not be made
//! (the agent fails instead), or merge a conflict.

use std::path::PathBuf;

use super::*;
use crate::workspace::{self, Workspace};

/// Bytes of a task's diff kept as its `diffs/` artifact and shown to its reviewer.
const DIFF_CAP: usize = 512 * 1024;

/// A task's worktree and what its tool calls run with there.
pub(super) struct Space {
    pub ws: Workspace,
    /// Its `workspace.created` id.
    pub id: String,
    /// The tool environment of the task's agents: the worktree as their project.
    pub env: crate::scheduler::tooljob::ToolEnv,
    /// Nothing but airsd has touched the worktree since it was checked out or its
    /// last attempt committed whole: no `git status` is needed to say it is clean.
    pub clean: bool,
    /// The branch's diff against `.0` (the base then), as the last attempt's commit
    /// left it: its reviewer is shown it with no second `git diff`.
    pub last_diff: Option<(String, String, bool)>,
}

/// The worktrees of a run's tasks.
#[derive(Default)]
pub(super) struct Spaces {
    /// The session's integration branch once known: `Some(None)` when tasks share
    /// the checkout (no git repository, no commit).
    pub(super) integration: Option<Option<String>>,
    pub(super) by_task: HashMap<String, Space>,
    /// Worktrees being made ahead, beside the loop, for tasks ready to start: taken
    /// when their agent is dispatched.
    premade: HashMap<String, tokio::task::JoinHandle<Made>>,
    /// The merge queue's jobs that may not have ended, each with whether it is
    /// removing its merged worktree (all that is left of it then).
    pub(super) jobs: Vec<(
        std::sync::Arc<std::sync::atomic::AtomicBool>,
        tokio::task::JoinHandle<()>,
    )>,
}

/// A worktree made (and whether an earlier attempt's was continued), `None` when
/// only an existing one was asked for and there is none.
type Made = std::result::Result<Option<(Workspace, bool)>, String>;

/// How many worktrees are made ahead at most: enough to keep dispatching off git's
/// path, few enough that a run that stops leaves few unused.
const AHEAD: usize = 4;

/// Removes a worktree made ahead for a task that did not start in it (one continued
/// from an earlier attempt stays).
async fn discard(
    main: std::sync::Arc<crate::launcher::Launcher>,
    worktrees: std::path::PathBuf,
    task: String,
    ahead: tokio::task::JoinHandle<Made>,
) {
    let Ok(Ok(Some((ws, false)))) = ahead.await else {
        return;
    };
    let removed =
        tokio::task::spawn_blocking(move || workspace::forget(&main, &ws, &worktrees)).await;
    if !matches!(removed, Ok(Ok(()))) {
        tracing::warn!(
            task,
            "cannot remove the worktree made for a task that did not start"
        );
    }
}

/// Makes (or continues, or with `existing_only` only finds) the worktree of `task`.
fn make(
    main: &crate::launcher::Launcher,
    worktrees: &std::path::Path,
    session: &str,
    task: &str,
    integration: &str,
    existing_only: bool,
) -> Made {
    let there = workspace::left(main, worktrees, session, task);
    if existing_only && !there.any() {
        return Ok(None);
    }
    workspace::create(main, worktrees, session, task, integration)
        .map(|ws| Some((ws, there.worktree)))
}

impl Spaces {
    pub fn get(&self, task_id: &str) -> Option<&Space> {
        self.by_task.get(task_id)
    }
}

/// Whether a dispatch's agent works in its task's worktree: an executor, a debugger
/// or a reviewer of a task, and a milestone review; never a planning turn, the
/// direct lane or the side agents.
fn works_in_space(d: &Dispatch) -> bool {
    if air_proto::planning::phase_of(&d.spec).is_some()
        || air_proto::conversation::is_direct(&d.task_id)
    {
        return false;
    }
    match d.role {
        AgentType::Executor | AgentType::Debugger | AgentType::Reviewer => true,
        AgentType::ArchitectureDesigner => air_proto::task::milestone_phase(&d.task_id).is_some(),
        _ => false,
    }
}

impl Shell {
    pub(super) fn worktrees_dir(&self) -> PathBuf {
        self.ctx.paths.workspaces()
    }

    /// The tool environment of a task's agents: its worktree's, or the run's.
    pub(super) fn env_of(&self, task_id: &str) -> crate::scheduler::tooljob::ToolEnv {
        self.spaces
            .get(task_id)
            .map(|s| s.env.clone())
            .unwrap_or_else(|| self.tools.clone())
    }

    /// Where a task's agents work: its worktree, or the checkout.
    pub(super) fn task_root(&self, task_id: &str) -> PathBuf {
        self.spaces
            .get(task_id)
            .map(|s| s.ws.path.clone())
            .unwrap_or_else(|| self.ctx.paths.root().to_path_buf())
    }

    /// Makes (or continues) the worktree of the dispatch's task when its agent works
    /// in one; `Err` when it cannot be made: the agent must not start in the
    /// checkout instead.
    pub(super) async fn space_for(&mut self, d: &Dispatch) -> std::result::Result<(), String> {
        if !works_in_space(d) || self.spaces.by_task.contains_key(&d.task_id) {
            return Ok(());
        }
        self.open_space(&d.task_id, false).await.map(|_| ())
    }

    /// Opens a task's worktree: made, or continued as an earlier attempt (or airsd,
    /// before it was restarted) left it. With `existing_only`, only one that is there
    /// (its worktree, or its branch): false when the task has none, or the run's
    /// tasks share the checkout.
    pub(super) async fn open_space(
        &mut self,
        task_id: &str,
        existing_only: bool,
    ) -> std::result::Result<bool, String> {
        let main = self.tools.launcher.clone();
        let worktrees = self.worktrees_dir();
        let session = self.session_id().to_string();
        let integration = match &self.spaces.integration {
            Some(known) => known.clone(),
            None if self.ctx.run.worktrees == Some(false) => {
                self.spaces.integration = Some(None);
                None
            }
            None => {
                let (main, worktrees, session) = (main.clone(), worktrees.clone(), session.clone());
                let found = tokio::task::spawn_blocking(move || {
                    if !crate::tools::git::in_repository(main.root()) {
                        return Ok(None);
                    }
                    workspace::integration(&main, &worktrees, &session)
                })
                .await
                .map_err(|e| e.to_string())?;
                // Decided once, for the whole run: a repository git cannot read is
                // no repository to branch from, unless the run's tasks had worktrees
                // already (then nothing starts in the checkout instead).
                // A run recorded as working in worktrees never falls back to the
                // checkout.
                let strict = self.ctx.run.worktrees == Some(true);
                let found = match found {
                    Ok(None) if strict => {
                        return Err("the run's tasks work in worktrees, but the project has no git commit to branch from now".into());
                    }
                    Ok(found) => found,
                    Err(e) if strict || self.recorded_workspace(None).await.is_some() => {
                        return Err(format!("the session's integration branch: {e}"));
                    }
                    Err(e) => {
                        tracing::warn!("the run's tasks share the checkout: {e}");
                        None
                    }
                };
                if found.is_none() {
                    tracing::info!(
                        "not a git repository with a commit: the run's tasks share the checkout"
                    );
                }
                self.spaces.integration = Some(found.clone());
                found
            }
        };
        let Some(integration) = integration else {
            return Ok(false);
        };
        let task = task_id.to_string();
        // One made ahead is awaited (never made twice at once), and moved to the
        // integration branch as it is now (what was merged meanwhile: the task's
        // dependencies, the phase before). One whose making failed is made now.
        let ahead = match self.spaces.premade.remove(task_id) {
            Some(h) => h.await.ok().and_then(std::result::Result::ok),
            None => None,
        };
        let made = {
            let (main, worktrees) = (main.clone(), worktrees.clone());
            tokio::task::spawn_blocking(move || match ahead {
                Some(Some((mut ws, false))) => {
                    let now = workspace::branch_head(&main, &integration)?
                        .ok_or_else(|| format!("no branch {integration}"))?;
                    workspace::restart_at(&main, &worktrees, &mut ws, &now)?;
                    Ok(Some((ws, false)))
                }
                Some(Some(continued)) => Ok(Some(continued)),
                _ => make(
                    &main,
                    &worktrees,
                    &session,
                    &task,
                    &integration,
                    existing_only,
                ),
            })
            .await
            .map_err(|e| e.to_string())?
        }
        .map_err(|e| format!("the task's worktree could not be made: {e}"))?;
        let Some((made, continued)) = made else {
            return Ok(false);
        };
        tracing::info!(
            task = task_id,
            path = %made.path.display(),
            base = %made.base,
            continued,
            "the task's worktree"
        );
        let engine = Arc::new(self.ctx.engine.rooted(&made.path));
        let launcher = Arc::new(made.launcher(&main, engine.views(&[], &[], &[])));
        let env = crate::scheduler::tooljob::ToolEnv {
            engine,
            launcher,
            ..self.tools.clone()
        };
        // A task has one recorded worktree while it lasts: one continued, or made
        // again where it was (airsd stopped after removing it), keeps its record.
        let known = if continued || existing_only {
            self.recorded_workspace(Some(task_id)).await
        } else {
            None
        };
        let id = match known {
            Some(id) => id,
            None => {
                let id = air_proto::ids::new_id();
                let e = self
                    .event(&p::WorkspaceCreated {
                        workspace_id: id.clone(),
                        path: made.path.display().to_string(),
                        task_id: Some(task_id.to_string()),
                        branch: Some(made.branch.clone()),
                        base_ref: Some(made.base.clone()),
                    })
                    .map_err(|e| e.to_string())?;
                self.push(vec![e]);
                id
            }
        };
        self.spaces.by_task.insert(
            task_id.to_string(),
            Space {
                ws: made,
                id,
                env,
                // A worktree continued as an earlier attempt left it may hold
                // anything; one checked out now holds its branch.
                clean: !continued,
                last_diff: None,
            },
        );
        Ok(true)
    }

    /// Starts making, beside the loop, the worktrees of the next tasks ready to start
    /// (in plan order) that have none, up to [`AHEAD`] at once; only once the run is
    /// known to work in worktrees.
    pub(super) fn make_ahead(&mut self) {
        let Some(Some(integration)) = self.spaces.integration.clone() else {
            return;
        };
        let statuses = self.core.statuses();
        // One made for a task that is no longer ready to start (cancelled, blocked,
        // planned again) is taken away.
        let stale: Vec<String> = self
            .spaces
            .premade
            .keys()
            .filter(|id| {
                !statuses
                    .iter()
                    .any(|(t, s)| t == *id && *s == TaskStatus::Ready)
            })
            .cloned()
            .collect();
        for id in stale {
            if let Some(ahead) = self.spaces.premade.remove(&id) {
                let (main, worktrees) = (self.tools.launcher.clone(), self.worktrees_dir());
                tokio::spawn(discard(main, worktrees, id, ahead));
            }
        }
        if self.spaces.premade.len() >= AHEAD {
            return;
        }
        let next: Vec<String> = statuses
            .into_iter()
            .filter(|(id, status)| {
                *status == TaskStatus::Ready
                    && !self.spaces.by_task.contains_key(id)
                    && !self.spaces.premade.contains_key(id)
                    && !air_proto::conversation::in_conversation(id)
                    && !id.starts_with(air_proto::conversation::REVIEW_PREFIX)
                    && air_proto::task::milestone_phase(id).is_none()
            })
            .map(|(id, _)| id)
            .take(AHEAD - self.spaces.premade.len())
            .collect();
        for task in next {
            let (main, worktrees, session, integration) = (
                self.tools.launcher.clone(),
                self.worktrees_dir(),
                self.session_id().to_string(),
                integration.clone(),
            );
            let t = task.clone();
            let handle = tokio::task::spawn_blocking(move || {
                make(&main, &worktrees, &session, &t, &integration, false)
            });
            self.spaces.premade.insert(task, handle);
        }
    }

    /// At the end of the run: the worktrees made ahead for tasks that never started
    /// are taken away again (their branches hold nothing of their own).
    pub(super) async fn drop_unused(&mut self) {
        // The merge queue's last removals first: told before the run ends. A job
        // still merging (its task was cancelled) is not waited for.
        for (removing, job) in std::mem::take(&mut self.spaces.jobs) {
            if removing.load(std::sync::atomic::Ordering::SeqCst) {
                let _ = job.await;
            }
        }
        let (main, worktrees) = (self.tools.launcher.clone(), self.worktrees_dir());
        for (task, ahead) in std::mem::take(&mut self.spaces.premade) {
            discard(main.clone(), worktrees.clone(), task, ahead).await;
        }
    }

    /// After a restart: the worktrees recorded merged but not removed (airsd stopped
    /// between a merge's recorded end and its worktree's removal) are removed now, and
    /// recorded so, once.
    pub(super) async fn finish_removals(&mut self) {
        let session = self.ctx.session.clone();
        let left: Vec<(String, String)> = tokio::task::spawn_blocking(move || {
            let Ok(conn) = session.readers().get() else {
                return Vec::new();
            };
            let Ok(mut stmt) = conn.prepare(
                "SELECT w.id, w.path FROM workspaces w WHERE w.status = 'active'
                 AND EXISTS (SELECT 1 FROM events e WHERE e.type = 'workspace.merged'
                     AND json_extract(e.payload_json, '$.workspace_id') = w.id)",
            ) else {
                return Vec::new();
            };
            stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
                .map(|rows| rows.flatten().collect())
                .unwrap_or_default()
        })
        .await
        .unwrap_or_default();
        for (id, path) in left {
            let (main, worktrees) = (self.tools.launcher.clone(), self.worktrees_dir());
            let at = std::path::PathBuf::from(&path);
            // Only a worktree in the session's own place.
            if !at.starts_with(&worktrees) {
                continue;
            }
            let removed = tokio::task::spawn_blocking(move || {
                if std::fs::symlink_metadata(&at).is_err() {
                    return Ok(());
                }
                let ws = Workspace {
                    path: at,
                    branch: String::new(),
                    base: String::new(),
                    git_dir: PathBuf::new(),
                };
                workspace::remove(&main, &ws, &worktrees)
            })
            .await
            .map_err(|e| e.to_string())
            .and_then(|r| r);
            self.removed(id, true, removed, &path);
        }
    }

    /// Records a worktree's removal (`merged`: after its merge, else with nothing to
    /// merge), or says why it could not be removed (`what` names it).
    pub(super) fn removed(
        &mut self,
        workspace_id: String,
        merged: bool,
        result: std::result::Result<(), String>,
        what: &str,
    ) {
        match result {
            Ok(()) => {
                if let Ok(e) = self.event(&ev::WorkspaceRemoved(p::WorkspaceChanged {
                    workspace_id,
                    reason: Some(if merged { "merged" } else { "nothing changed" }.into()),
                    files: Vec::new(),
                })) {
                    self.push(vec![e]);
                }
            }
            Err(e) => tracing::warn!(what, "cannot remove a merged worktree: {e}"),
        }
    }

    /// The id of the task's recorded worktree that is still there, if any; without a
    /// task, of any worktree the session ever recorded.
    pub(super) async fn recorded_workspace(&self, task_id: Option<&str>) -> Option<String> {
        let (session, task) = (self.ctx.session.clone(), task_id.map(str::to_string));
        tokio::task::spawn_blocking(move || {
            let conn = session.readers().get().ok()?;
            conn.query_row(
                "SELECT id FROM workspaces WHERE ?1 IS NULL OR (task_id = ?1 AND status = 'active') ORDER BY seq DESC LIMIT 1",
                [task],
                |r| r.get::<_, String>(0),
            )
            .ok()
        })
        .await
        .ok()
        .flatten()
    }

    /// At the end of an executor's or a debugger's attempt: what it left in the
    /// worktree committed on the task's branch, and the task's change (the branch
    /// against its base) as the result's changed files and its `diffs/` artifact.
    /// `None` when the task has no worktree.
    pub(super) async fn attempt_change(
        &mut self,
        agent_id: &str,
        result: &air_proto::result::WorkerResult,
    ) -> Option<std::result::Result<Vec<String>, String>> {
        let space = self.spaces.get(&result.task_id)?;
        let (main, worktrees, ws) = (
            self.tools.launcher.clone(),
            self.worktrees_dir(),
            space.ws.clone(),
        );
        let message = format!("{}: the work of {agent_id}", result.task_id);
        let read = tokio::task::spawn_blocking(move || {
            let head = workspace::commit_attempt(&main, &ws, &worktrees, &message)?;
            tracing::debug!(path = %ws.path.display(), ?head, "the attempt is committed");
            let files = workspace::changed(&main, &ws)?;
            let diff = workspace::diff(&main, &ws, DIFF_CAP)?;
            Ok::<_, String>((files, diff))
        })
        .await
        .map_err(|e| e.to_string())
        .and_then(|r| r);
        let (files, (diff, cut)) = match read {
            Ok(r) => r,
            Err(e) => {
                if let Some(space) = self.spaces.by_task.get_mut(&result.task_id) {
                    space.clean = false;
                    space.last_diff = None;
                }
                return Some(Err(e));
            }
        };
        if let Some(space) = self.spaces.by_task.get_mut(&result.task_id) {
            space.clean = true;
            space.last_diff = Some((space.ws.base.clone(), diff.clone(), cut));
        }
        let rel = format!(
            "diffs/{}-{agent_id}.diff",
            workspace::task_part(&result.task_id)
        );
        let stored = self.tools.artifacts.create(&rel).and_then(|mut pending| {
            pending.write(diff.as_bytes())?;
            if cut {
                pending.write(b"\n[cut: the diff is longer]\n")?;
            }
            self.tools
                .artifacts
                .finish(pending, air_proto::result::ArtifactType::Diff, false)
        });
        match stored {
            Ok(stored) => {
                let uri = stored.artifact.uri.clone();
                if let Ok(e) = self.event(&p::ArtifactCreated {
                    artifact: stored.artifact,
                    path: Some(stored.rel),
                    original_name: Some(format!("{}.diff", result.task_id)),
                    task_id: Some(result.task_id.clone()),
                    agent_id: Some(agent_id.to_string()),
                    tool_run_id: None,
                    command_run_id: None,
                    entity_type: Some("task_diff".into()),
                    entity_id: Some(result.task_id.clone()),
                }) {
                    self.push(vec![e]);
                }
                self.diff_refs.insert(agent_id.to_string(), uri);
            }
            Err(e) => tracing::warn!(task = %result.task_id, "cannot keep the task's diff: {e}"),
        }
        Some(Ok(files))
    }

    /// The task's change as its reviewer sees it: the branch against its base; for
    /// a milestone review, the phase's files as merged against the checkout's last
    /// commit. `None` when the task has no worktree.
    pub(super) async fn space_diff(
        &self,
        d: &Dispatch,
        phase_files: Option<&[String]>,
    ) -> Option<crate::context::ReviewDiff> {
        use crate::context::ReviewDiff;
        let space = self.spaces.get(&d.task_id)?;
        let (main, ws) = (self.tools.launcher.clone(), space.ws.clone());
        let files: Option<Vec<String>> = phase_files.map(<[String]>::to_vec);
        // The last attempt's diff, when the branch is still as that attempt left it
        // (its base unmoved, nothing merged into it since).
        let kept = match (&files, &space.last_diff) {
            (None, Some((base, diff, cut))) if *base == ws.base => Some((diff.clone(), *cut)),
            _ => None,
        };
        let made = match kept {
            Some(kept) => Ok(Ok(kept)),
            None => {
                tokio::task::spawn_blocking(move || match files {
                    Some(files) => workspace::diff_of(&main, "HEAD", &ws.base, &files, DIFF_CAP),
                    None => workspace::diff(&main, &ws, DIFF_CAP),
                })
                .await
            }
        };
        Some(match made {
            Ok(Ok((d, _))) if d.trim().is_empty() => ReviewDiff::NoChanges,
            Ok(Ok((d, true))) => ReviewDiff::Diff(
                format!(
                    "{d}\n[the diff is cut here, at {} KiB: read the files it did not reach]\n",
                    DIFF_CAP >> 10
                ),
                0,
            ),
            Ok(Ok((d, false))) => ReviewDiff::Diff(d, 0),
            Ok(Err(e)) => ReviewDiff::Unavailable(e),
            Err(e) => ReviewDiff::Unavailable(e.to_string()),
        })
    }

    /// A task that completed: its branch merged into the integration branch, its
    /// worktree removed. A conflict keeps both and ends the task blocked, the files
    /// named (the status and the reason to record instead come back).
    pub(super) async fn merge_completed(&mut self, task_id: &str) -> Option<(TaskStatus, String)> {
        // After a restart the task's worktree is found again where it was left: its
        // merge happens once (a branch merged already has nothing to merge).
        if !self.spaces.by_task.contains_key(task_id) {
            if let Err(e) = self.open_space(task_id, true).await {
                return Some((
                    TaskStatus::Blocked,
                    format!("its worktree could not be opened to merge it: {e}"),
                ));
            }
        }
        let Some(space) = self.spaces.by_task.remove(task_id) else {
            // A task whose recorded worktree is gone is not complete without it.
            return self.recorded_workspace(Some(task_id)).await.map(|_| {
                (
                    TaskStatus::Blocked,
                    "its worktree is recorded but no longer there: its change cannot be merged"
                        .to_string(),
                )
            });
        };
        let Some(Some(integration)) = self.spaces.integration.clone() else {
            return None;
        };
        let (main, worktrees, ws) = (
            self.tools.launcher.clone(),
            self.worktrees_dir(),
            space.ws.clone(),
        );
        let title = self
            .core
            .task_title(task_id)
            .unwrap_or_default()
            .chars()
            .take(72)
            .collect::<String>();
        let message = format!("air: merge {task_id} {title}");
        let merged = {
            let (main, worktrees, ws, integration) = (
                main.clone(),
                worktrees.clone(),
                ws.clone(),
                integration.clone(),
            );
            tokio::task::spawn_blocking(move || {
                workspace::merge(&main, &worktrees, &ws, &integration, &message)
            })
            .await
            .map_err(|e| e.to_string())
            .and_then(|r| r)
        };
        let reason = match merged {
            Ok(workspace::Merged::Conflict { files }) => {
                let reason = format!(
                    "its change conflicts with what was merged into {integration} before it, in {}; its branch {} and worktree {} are kept",
                    files.join(", "),
                    ws.branch,
                    ws.path.display()
                );
                self.spaces.by_task.insert(task_id.to_string(), space);
                return Some((TaskStatus::Blocked, reason));
            }
            Err(e) => {
                let reason = format!(
                    "its change could not be merged into {integration}: {e}; its branch {} is kept",
                    ws.branch
                );
                self.spaces.by_task.insert(task_id.to_string(), space);
                return Some((TaskStatus::Blocked, reason));
            }
            Ok(workspace::Merged::Nothing) => None,
            Ok(workspace::Merged::Already) => Some((
                format!("into {integration} before airsd was restarted"),
                Vec::new(),
            )),
            Ok(workspace::Merged::Merged { commit, files }) => Some((
                format!("{commit} into {integration}: {}", files.join(", ")),
                files,
            )),
        };
        let mut events = Vec::new();
        let merged = reason.is_some();
        if let Some((reason, files)) = reason {
            if let Ok(e) = self.event(&ev::WorkspaceMerged(p::WorkspaceChanged {
                workspace_id: space.id.clone(),
                reason: Some(reason),
                files,
            })) {
                events.push(e);
            }
        }
        let removed =
            tokio::task::spawn_blocking(move || workspace::remove(&main, &ws, &worktrees))
                .await
                .map_err(|e| e.to_string())
                .and_then(|r| r);
        match removed {
            Ok(()) => {
                if let Ok(e) = self.event(&ev::WorkspaceRemoved(p::WorkspaceChanged {
                    workspace_id: space.id.clone(),
                    reason: Some(if merged { "merged" } else { "nothing changed" }.into()),
                    files: Vec::new(),
                })) {
                    events.push(e);
                }
            }
            Err(e) => tracing::warn!(task = task_id, "cannot remove the merged worktree: {e}"),
        }
        self.push(events);
        None
    }

    /// At the end of the run: the integration branch landed in the checkout where it
    /// touches none of the person's edits, or kept and why.
    pub(super) async fn land(&self) -> Option<p::Landing> {
        let Some(Some(integration)) = self.spaces.integration.clone() else {
            return None;
        };
        let when = self.ctx.run.land.unwrap_or(air_proto::plan::Land::Clean);
        if when == air_proto::plan::Land::Never {
            return Some(p::Landing {
                reason: Some(format!(
                    "the run does not land (`land: never`); land it with `git merge {integration}`"
                )),
                integration_branch: integration,
                landed: false,
                branch: None,
                files: Vec::new(),
            });
        }
        let (engine, main) = (self.ctx.engine.clone(), self.tools.launcher.clone());
        let always = when == air_proto::plan::Land::Always;
        let landed = tokio::task::spawn_blocking(move || {
            workspace::land_checkout(&engine, &main, &integration, always)
        })
        .await;
        Some(landed.unwrap_or_else(|e| {
            p::Landing {
                integration_branch: self
                    .spaces
                    .integration
                    .clone()
                    .flatten()
                    .unwrap_or_default(),
                landed: false,
                branch: None,
                files: Vec::new(),
                reason: Some(format!("landing stopped: {e}")),
            }
        }))
    }
}
