//! The ExperienceMiner beside the scheduler (D-024), in a run that learns
//! (`learn`): started when a debugger leaves a record, when an agent has taken ten
//! turns or made ten tool calls since it was last mined (the nudge counter), when an
//! agent reports a skill or rules file wrong, and when the run ends. One works at a
//! time, the others wait their turn; none holds a task slot or anyone up. What it
//! proposes is kept in the project's learned memory (`memory.candidate.created`): a
//! lesson proposed again is counted; a debugging lesson whose fix airsd saw a build
//! or tests pass after is promoted on that evidence (`memory.promoted`).

use std::collections::VecDeque;

use super::*;
use crate::context::compaction::{self, Rules, Stored};
use crate::memory::Memory;
use air_proto::memory::{MemoryEntry, MinerOutput};

/// Turns, or tool calls, of an agent between two nudges.
const NUDGE_TURNS: u32 = 10;
const NUDGE_TOOLS: u32 = 10;
/// Turns an ExperienceMiner may take.
const MINER_TURNS: u32 = 4;
/// The most bytes of a skill or rules file a miner correcting it is shown.
const TARGET_BYTES: u64 = 64 * 1024;

/// Why a miner is started.
#[derive(Clone, Debug)]
pub(super) enum Trigger {
    /// A debugger left this record (`debug.record.created`, its event id).
    Debug(Box<p::DebugRecordCreated>, String),
    /// The session's turns or tool calls reached the nudge counter: the agents that
    /// took them (id, task, what it is).
    Nudge(Vec<Touched>),
    /// An agent reported a skill or rules file wrong.
    Outdated(Box<p::OutdatedReported>),
    /// The run ended.
    SessionEnd,
}

impl Trigger {
    fn source(&self) -> &'static str {
        match self {
            Trigger::Debug(..) => "debug",
            Trigger::Nudge(_) => "nudge",
            Trigger::Outdated(_) => "outdated",
            Trigger::SessionEnd => "session_end",
        }
    }
}

/// An agent that took turns since the last nudge.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Touched {
    agent_id: String,
    task_id: String,
    /// Its role and its task's title.
    title: String,
}

/// A miner at work.
pub(super) struct Mining {
    source: &'static str,
    task_id: Option<String>,
    debug_record_id: Option<String>,
    /// Whether the debugging record's fix was proven (a build or tests passed).
    verified: bool,
    output: Option<MinerOutput>,
    /// What the worker said when it handed back no proposals.
    failure: Option<String>,
}

/// The shell's learning: what waits to be mined, who is mining, the nudge counters.
#[derive(Default)]
pub(super) struct Learning {
    queue: VecDeque<Trigger>,
    running: HashMap<String, Mining>,
    /// The session's turns and tool calls since the last nudge, and the agents that
    /// took them; per agent, its messages mined so far.
    counts: (u32, u32),
    touched: Vec<Touched>,
    mined_upto: HashMap<String, usize>,
}

/// What a miner is started on.
struct Material {
    text: String,
    task_id: Option<String>,
    debug_record_id: Option<String>,
    verified: bool,
}

impl Shell {
    /// Whether `agent_id` is an ExperienceMiner at work.
    pub(super) fn is_miner(&self, agent_id: &str) -> bool {
        self.learning.running.contains_key(agent_id)
    }

    /// Something worth learning from happened: it waits its turn.
    pub(super) async fn learn_from(&mut self, trigger: Trigger) {
        if !self.ctx.run.learn {
            return;
        }
        // A nudge already waiting takes these agents too: it reads their messages
        // when it starts.
        if let Trigger::Nudge(agents) = &trigger {
            let waiting = self.learning.queue.iter_mut().find_map(|t| match t {
                Trigger::Nudge(w) => Some(w),
                _ => None,
            });
            if let Some(waiting) = waiting {
                for a in agents {
                    if !waiting.contains(a) {
                        waiting.push(a.clone());
                    }
                }
                return;
            }
        }
        self.learning.queue.push_back(trigger);
        self.next_miner().await;
    }

    /// Counts an agent's turn (or tool call): at ten turns or ten tool calls of the
    /// session's agents since the last nudge, what they said is mined (a
    /// conversation's many short turns count together).
    pub(super) async fn nudge(&mut self, agent_id: &str, turn: bool) {
        if !self.ctx.run.learn || self.is_side(agent_id) {
            return;
        }
        let Some(d) = self.dispatches.get(agent_id) else {
            return;
        };
        let touched = Touched {
            agent_id: agent_id.to_string(),
            task_id: d.task_id.clone(),
            title: format!(
                "{} on task {}: {}",
                d.role.as_str(),
                d.task_id,
                d.spec.title
            ),
        };
        let learning = &mut self.learning;
        if !learning.touched.contains(&touched) {
            learning.touched.push(touched);
        }
        if turn {
            learning.counts.0 += 1;
        } else {
            learning.counts.1 += 1;
        }
        if learning.counts.0 >= NUDGE_TURNS || learning.counts.1 >= NUDGE_TOOLS {
            learning.counts = (0, 0);
            let agents = std::mem::take(&mut learning.touched);
            self.learn_from(Trigger::Nudge(agents)).await;
        }
    }

    /// Starts the next miner when none is at work.
    async fn next_miner(&mut self) {
        while self.learning.running.is_empty() {
            let Some(trigger) = self.learning.queue.pop_front() else {
                return;
            };
            if let Err(why) = self.start_miner(trigger).await {
                tracing::warn!("the ExperienceMiner was not started: {why}");
            }
        }
    }

    async fn start_miner(&mut self, trigger: Trigger) -> std::result::Result<(), String> {
        let source = trigger.source();
        let Some(material) = self.material(&trigger).await? else {
            return Ok(());
        };
        let (known, skills) = self.known().await;
        let choice = self
            .ctx
            .models
            .choice(AgentType::ExperienceMiner, None)
            .cloned();
        let (budget, model_id) = side::budget_on(choice.as_ref());
        let context = crate::context::mining::miner_context(
            &material.text,
            &known,
            &skills,
            budget,
            &model_id,
        );
        let session = self.ctx.session.clone();
        let started = tokio::task::spawn_blocking(move || {
            let conn = session.readers().get()?;
            crate::event_store::query::side_agents(&conn, AgentType::ExperienceMiner, None)
        })
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())?
        .0;
        let miner_id = format!("miner-{}", started + 1);
        let mut spec = air_proto::conversation::turn_spec(
            0,
            &format!("Learn from {}", source.replace('_', " ")),
            "Propose what is worth remembering from the material.",
            None,
            &[],
        );
        spec.id = material.task_id.clone().unwrap_or_else(|| "session".into());
        spec.task_type = air_proto::task::TaskType::MineExperience;
        spec.output_contract = air_proto::task::OutputContract::ExperienceMinerResult;
        spec.constraints.max_turns = MINER_TURNS;
        self.start_side(side::SideStart {
            agent_id: miner_id.clone(),
            agent_type: AgentType::ExperienceMiner,
            task_id: material.task_id.clone(),
            spec,
            context,
            choice,
        })
        .await?;
        self.learning.running.insert(
            miner_id,
            Mining {
                source,
                task_id: material.task_id,
                debug_record_id: material.debug_record_id,
                verified: material.verified,
                output: None,
                failure: None,
            },
        );
        Ok(())
    }

    /// What the memory holds (newest first) and the skills installed.
    async fn known(&self) -> (Vec<MemoryEntry>, Vec<air_proto::skills::SkillRef>) {
        let path = self.ctx.paths.learned_memory();
        let known = if path.exists() {
            tokio::task::spawn_blocking(move || Memory::open(&path)?.list(None, None, 200))
                .await
                .ok()
                .and_then(|r| {
                    r.map_err(|e| tracing::warn!("cannot read the memory: {e}"))
                        .ok()
                })
                .unwrap_or_default()
        } else {
            Vec::new()
        };
        (known, self.skills().await)
    }

    /// The material a miner learns from; `None` when there is nothing new.
    async fn material(
        &mut self,
        trigger: &Trigger,
    ) -> std::result::Result<Option<Material>, String> {
        let session = self.ctx.session.clone();
        let read = |agent: String| {
            let session = session.clone();
            async move {
                tokio::task::spawn_blocking(move || -> crate::error::Result<_> {
                    let conn = session.readers().get()?;
                    let messages = crate::event_store::query::agent_messages(&conn, &agent)?;
                    let evidence = crate::event_store::query::evidence_types_of(&conn, &agent)?;
                    Ok((messages, evidence))
                })
                .await
                .map_err(|e| e.to_string())?
                .map_err(|e| e.to_string())
            }
        };
        Ok(Some(match trigger {
            Trigger::Debug(record, event_id) => {
                let (messages, evidence) = read(record.agent_id.clone()).await?;
                let verified = evidence
                    .iter()
                    .any(|e| e == "build_pass" || e == "test_pass");
                let mut text = format!(
                    "# What a debugger found\n\nTask {} — symptom: {}\n\nRoot cause: {}\n\nAnalysis: {}\n\nFixed: {}; the files it changed: {}; {}\n",
                    record.task_id,
                    record.symptom.trim(),
                    record.root_cause.as_deref().unwrap_or("(none named)"),
                    record.analysis.trim(),
                    if record.fixed { "yes" } else { "no" },
                    if record.changed_files.is_empty() { "none".into() } else { record.changed_files.join(", ") },
                    if verified {
                        "verified: airsd saw a build or tests pass after the fix"
                    } else {
                        "not verified: airsd saw no build or test pass after it"
                    }
                );
                text.push_str("\n## The debugger's messages\n\n");
                text.push_str(&transcript(&messages, 0));
                Material {
                    text,
                    task_id: Some(record.task_id.clone()),
                    debug_record_id: Some(event_id.clone()),
                    verified,
                }
            }
            Trigger::Nudge(agents) => {
                let mut text = String::from("# A stretch of the session's work\n");
                let mut tasks: Vec<&str> = Vec::new();
                for a in agents {
                    let (messages, _) = read(a.agent_id.clone()).await?;
                    let from = self
                        .learning
                        .mined_upto
                        .get(&a.agent_id)
                        .copied()
                        .unwrap_or(0);
                    if from >= messages.len() {
                        continue;
                    }
                    self.learning
                        .mined_upto
                        .insert(a.agent_id.clone(), messages.len());
                    text.push_str(&format!(
                        "\n## The {}, messages {} to {}\n\n{}",
                        a.title,
                        from + 1,
                        messages.len(),
                        transcript(&messages, from)
                    ));
                    if !tasks.contains(&a.task_id.as_str()) {
                        tasks.push(&a.task_id);
                    }
                }
                if tasks.is_empty() {
                    return Ok(None);
                }
                Material {
                    text,
                    // One task's work is that task's; several are the session's.
                    task_id: (tasks.len() == 1).then(|| tasks[0].to_string()),
                    debug_record_id: None,
                    verified: false,
                }
            }
            Trigger::Outdated(report) => {
                let now = self.target_text(&report.target).await;
                Material {
                    text: format!(
                        "# A skill or rules file was reported wrong\n\nTarget: `{}`\n\nWhat the agent found (task {}): {}\n\n## Its text now\n\n{}\n\nPropose a `patch` with this target and the whole corrected text, if the report holds.",
                        report.target,
                        report.task_id.as_deref().unwrap_or("-"),
                        report.problem.trim(),
                        now
                    ),
                    task_id: report.task_id.clone(),
                    debug_record_id: None,
                    verified: false,
                }
            }
            Trigger::SessionEnd => Material {
                text: self.session_story().await?,
                task_id: None,
                debug_record_id: None,
                verified: false,
            },
        }))
    }

    /// The current text of a skill or a project rules file, bounded.
    async fn target_text(&self, target: &str) -> String {
        let path = match target.split_once(':') {
            Some(("skill", name)) => self
                .skills()
                .await
                .into_iter()
                .find(|s| s.name == name.trim())
                .map(|s| PathBuf::from(s.path)),
            Some(("rules", rel)) => {
                let root = self.ctx.paths.root();
                let p = root.join(rel.trim());
                p.canonicalize()
                    .ok()
                    .filter(|c| root.canonicalize().is_ok_and(|r| c.starts_with(r)))
            }
            _ => None,
        };
        let Some(path) = path else {
            return "(no such skill or project file is found now)".into();
        };
        match std::fs::File::open(&path) {
            Ok(f) => {
                use std::io::Read as _;
                let mut text = String::new();
                let _ = f.take(TARGET_BYTES).read_to_string(&mut text);
                format!("`{}`:\n\n~~~~\n{text}\n~~~~", path.display())
            }
            Err(e) => format!("(cannot read {}: {e})", path.display()),
        }
    }

    /// What the session was: what the user said, and each task with how it ended.
    async fn session_story(&self) -> std::result::Result<String, String> {
        let session = self.ctx.session.clone();
        // The core's statuses: the run's last events may not be in the view yet.
        let statuses = self.core.statuses();
        tokio::task::spawn_blocking(move || -> crate::error::Result<String> {
            let conn = session.readers().get()?;
            let said = crate::event_store::query::conversation(&conn, 100)?;
            let summaries = crate::event_store::query::result_summaries(&conn)?;
            let tasks = session.bus().read(|p, _| {
                p.tasks
                    .iter()
                    .map(|t| {
                        let summary = summaries
                            .iter()
                            .rev()
                            .find(|(id, _)| *id == t.id)
                            .map(|(_, s)| s.clone())
                            .or_else(|| t.reason.clone())
                            .unwrap_or_default();
                        let status = statuses
                            .iter()
                            .find(|(id, _)| *id == t.id)
                            .map_or(t.status, |(_, s)| *s);
                        format!("- {} {}: {} — {summary}", t.id, t.title, status.as_str())
                    })
                    .collect::<Vec<_>>()
            });
            let mut text = String::from("# The session that just ended\n");
            let user: Vec<String> = said
                .iter()
                .filter(|m| m.user)
                .map(|m| format!("- {}", air_proto::message::text_of(&m.content).trim()))
                .collect();
            if !user.is_empty() {
                text.push_str("\n## What the user said\n\n");
                text.push_str(&user.join("\n"));
                text.push('\n');
            }
            text.push_str("\n## The tasks and how they ended\n\n");
            text.push_str(&tasks.join("\n"));
            text.push('\n');
            Ok(text)
        })
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())
    }

    /// A miner's result: what it proposes, kept until it exits.
    pub(super) fn miner_result(
        &mut self,
        miner_id: &str,
        result: &air_proto::result::WorkerResult,
    ) {
        let output = (result.status == air_proto::result::WorkerStatus::Completed)
            .then(|| serde_json::from_value::<MinerOutput>(result.result.clone()).ok())
            .flatten();
        if let Some(m) = self.learning.running.get_mut(miner_id) {
            if output.is_none() {
                m.failure = Some(format!(
                    "the ExperienceMiner ended {}: {}",
                    serde_json::to_value(result.status)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_string))
                        .unwrap_or_default(),
                    result.summary
                ));
            }
            m.output = output;
        }
    }

    /// A miner exited: what it proposed is kept and recorded; the next one starts.
    pub(super) async fn miner_exited(&mut self, miner_id: &str, exit: Exit) -> Result<()> {
        self.keep_stderr(miner_id)?;
        self.workers.remove(miner_id);
        self.agents.store(self.workers.len(), Ordering::Relaxed);
        let last_error = self.last_error.remove(miner_id);
        let Some(m) = self.learning.running.remove(miner_id) else {
            return Ok(());
        };
        let Some(output) = m.output else {
            let reason = m
                .failure
                .or(last_error)
                .unwrap_or_else(|| format!("the ExperienceMiner ended without a result ({exit})"));
            self.record(vec![self.event(&p::AgentFailed {
                agent_id: miner_id.to_string(),
                reason,
                exit_code: exit.code,
                failure: Some(AgentFailure::Crash),
            })?])
            .await?;
            self.next_miner().await;
            return Ok(());
        };
        let mut result = air_proto::result::WorkerResult::new(
            m.task_id.as_deref().unwrap_or("session"),
            miner_id,
            AgentType::ExperienceMiner,
            air_proto::result::WorkerStatus::Completed,
            format!("proposed {} memories", output.memories.len()),
        );
        result.result = serde_json::to_value(&output).unwrap_or_default();
        let mut events = vec![self.event(&p::AgentCompleted {
            agent_id: miner_id.to_string(),
            exit_code: exit.code,
            result: Some(result),
            gate: None,
        })?];
        events.extend(
            self.keep_proposals(
                miner_id,
                m.source,
                &output,
                m.debug_record_id.as_deref(),
                m.verified,
            )
            .await?,
        );
        self.record(events).await?;
        self.next_miner().await;
        Ok(())
    }

    /// Keeps what a miner proposed in the learned memory, and promotes the lessons of
    /// a proven debugging record; the events that say so. A memory that cannot be
    /// written is logged: learning never stops the run.
    pub(super) async fn keep_proposals(
        &self,
        miner_id: &str,
        source: &'static str,
        output: &MinerOutput,
        record: Option<&str>,
        verified: bool,
    ) -> Result<Vec<RuntimeEvent>> {
        let path = self.ctx.paths.learned_memory();
        let proposals = output.memories.clone();
        let record = record.map(str::to_string);
        let kept = tokio::task::spawn_blocking(move || -> crate::error::Result<_> {
            let mut memory = Memory::open(&path)?;
            let now = air_proto::time::now_iso();
            let mut kept = Vec::new();
            for p in &proposals {
                kept.push(memory.propose(p, source, record.as_deref(), &now)?);
            }
            let promoted = match (&record, verified) {
                (Some(r), true) => memory.verify_debug(r, &now)?,
                _ => Vec::new(),
            };
            Ok((kept, promoted))
        })
        .await
        .map_err(|e| Error::Internal(e.to_string()))?;
        let mut events = Vec::new();
        match kept {
            Ok((kept, promoted)) => {
                for k in kept {
                    events.push(self.event(&p::MemoryCandidateCreated {
                        memory_id: k.entry.id.clone(),
                        kind: k.entry.kind,
                        title: k.entry.title.clone(),
                        target: k.entry.target.clone(),
                        source: source.to_string(),
                        agent_id: miner_id.to_string(),
                        seen: k.entry.seen,
                        ask_user: k.entry.awaits_user(),
                    })?);
                }
                for e in promoted {
                    events.push(self.event(&p::MemoryPromoted {
                        memory_id: e.id,
                        kind: e.kind,
                        title: e.title,
                        by: "evidence".into(),
                        path: None,
                    })?);
                }
            }
            Err(e) => tracing::warn!("what the ExperienceMiner proposed was not kept: {e}"),
        }
        Ok(events)
    }

    /// Counts a loaded skill's use, for the Curator.
    pub(super) fn skill_loaded(&self, payload: &Value) {
        let Ok(loaded) = serde_json::from_value::<p::SkillLoaded>(payload.clone()) else {
            return;
        };
        let path = self.ctx.paths.learned_memory();
        tokio::task::spawn_blocking(move || {
            let now = air_proto::time::now_iso();
            if let Err(e) = Memory::open(&path).and_then(|m| m.skill_used(&loaded.name, &now)) {
                tracing::warn!("cannot count the skill's use: {e}");
            }
        });
    }
}

/// An agent's messages from `from` on, as the Compactor's transcript shows them.
fn transcript(messages: &[crate::event_store::query::StoredMessage], from: usize) -> String {
    let stored: Vec<Stored> = messages.iter().skip(from).map(Stored::from).collect();
    compaction::prepare(&Rules::built_in(), None, &stored, from + 1, u64::MAX / 8).transcript
}
