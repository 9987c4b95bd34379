//! The agent loop (D-006): the conversation with the model, turn after turn. Each
//! turn streams (token deltas to airsd as they come, the finished assistant message
//! recorded); each tool call the model makes goes to airsd as a `tool.call`, and its
//! answer comes back as a `tool_result`; the loop ends when the model calls
//! `submit_result` with a result that fits the contract, or honestly — `failed` or
//! `blocked` with the reason — when turns run out or the provider cannot be reached.
//! It never makes up a success.

use air_proto::events as ev;
use std::future::Future;

use air_proto::event::{AgentType, EventSource, RuntimeEvent};
use air_proto::ipc::{AgentStart, ToolResult, ToolResultStatus};
use air_proto::message::{ContentBlock, Message, StopReason};
use air_proto::models::ResolvedModel;
use air_proto::payload as p;
use air_proto::result::{WorkerResult, WorkerStatus};
use serde_json::Value;

use crate::model::Talker;
use crate::provider::{Delta, ToolSpec, TurnRequest};
use crate::replay::Recorder;
use crate::submit;

/// Results refused by airsd's evidence gate that the agent is told about before the
/// next one goes to airsd as it is (and airsd refuses it there).
const MAX_REFUSALS: u32 = 2;

/// Turns left at which the agent is warned that its budget ends.
const TURNS_WARNED: u32 = 3;

/// What the loop needs from its surroundings: sending events to airsd and calling
/// its tools (the real worker speaks NDJSON on its pipes; tests may do otherwise).
pub trait Link: Sync {
    fn event(&self, event: RuntimeEvent);
    /// The loop moved on: its state, the turn, and the tokens used so far (the real
    /// worker reports it in its heartbeats, at once when the state changes).
    fn progress(&self, _state: LoopState, _turn: u32, _tokens: (u64, u64)) {}
    /// The loop waits on its model's answer and nothing of it has come since `since`
    /// (a delta of the answer moves it on); `None`: it is not waiting on its model.
    fn model_silent_since(&self, _since: Option<std::time::Instant>) {}
    /// Waits while a person holds the agent (`agent.pause`); the loop calls it before
    /// each model call and each tool call.
    fn hold(&self) -> impl Future<Output = ()> + Send {
        async {}
    }
    /// What the user said to this agent since the last call (`agent.message`), for
    /// the model's next turn.
    fn inbox(&self) -> Vec<String> {
        Vec::new()
    }
    /// airsd's word on a compaction this agent asked for, given once.
    fn compacted(&self) -> Option<Compacted> {
        None
    }
    /// airsd said the agent's soft timeout passed: (time so far, hard timeout) in
    /// milliseconds, given once.
    fn time_notice(&self) -> Option<(u64, u64)> {
        None
    }
    /// Asks airsd for `extra_ms` more before the hard timeout, saying why; the answer
    /// is the time granted (0: refused) and airsd's word on it.
    fn ask_for_time(
        &self,
        _extra_ms: u64,
        _reason: String,
    ) -> impl Future<Output = (u64, String)> + Send {
        async { (0, "this agent cannot ask airsd for time".to_string()) }
    }
    fn call_tool(
        &self,
        tool_call_id: &str,
        tool: &str,
        input: Value,
        origin_message_id: &str,
    ) -> impl Future<Output = ToolResult> + Send;
}

impl<L: Link> crate::own::Reach for L {
    fn record(&self, event: RuntimeEvent) {
        self.event(event);
    }

    fn more_time(
        &self,
        extra_ms: u64,
        reason: String,
    ) -> impl Future<Output = (u64, String)> + Send {
        self.ask_for_time(extra_ms, reason)
    }
}

/// A Compactor's end for this agent (`agent.compacted`): the text that stands for its
/// messages up to `upto_message_id`, or why there is none.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Compacted {
    pub upto_message_id: String,
    pub text: Option<String>,
    pub reason: Option<String>,
}

/// Turns an agent waits before asking again after a compaction failed.
const COMPACTION_BACKOFF: u32 = 5;

use crate::own::{more_time_tool, skill_tool, time_told};
pub use crate::own::{MORE_TIME, SKILL_LOAD};

mod choose;
mod states;
mod told;
mod watch;
use states::{writes, Machine, Step};
use told::{before_told, debug_record, gate_refusals, here, looped};
/// The same call this many times in a row is a loop: told the first time, stopped
/// the next.
pub use watch::REPEATS as LOOP_REPEATS;

/// Where an agent's loop is (D-006), per agent type: the executor LOADING →
/// THINKING → ACTING → OBSERVING (again and again) → FINALIZING; the reviewer and the
/// Architecture Designer LOADING → REVIEWING → DECIDING; the debugger GATHERING →
/// ANALYZING → FIXING → RECORDING, or ESCALATING when it cannot fix.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoopState {
    Loading,
    Thinking,
    Acting,
    Observing,
    Finalizing,
    Reviewing,
    Deciding,
    Gathering,
    Analyzing,
    Fixing,
    Recording,
    Escalating,
    /// The Main Agent, its message classified as work: writing what to hand on.
    Delegating,
    /// The designer planning, the Compactor or the miner reading what they work from.
    Reading,
    /// The designer planning: asking, stating or proposing; the miner: proposing.
    Proposing,
    /// The Compactor writing its summary.
    Summarizing,
}

impl LoopState {
    pub fn as_str(self) -> &'static str {
        match self {
            LoopState::Loading => "LOADING",
            LoopState::Thinking => "THINKING",
            LoopState::Acting => "ACTING",
            LoopState::Observing => "OBSERVING",
            LoopState::Finalizing => "FINALIZING",
            LoopState::Reviewing => "REVIEWING",
            LoopState::Deciding => "DECIDING",
            LoopState::Gathering => "GATHERING",
            LoopState::Analyzing => "ANALYZING",
            LoopState::Fixing => "FIXING",
            LoopState::Recording => "RECORDING",
            LoopState::Escalating => "ESCALATING",
            LoopState::Delegating => "DELEGATING",
            LoopState::Reading => "READING",
            LoopState::Proposing => "PROPOSING",
            LoopState::Summarizing => "SUMMARIZING",
        }
    }
}

/// `text` with every tool named as the model knows it (`fs_read`, not airsd's
/// `fs.read`): a refusal that names a tool the model was never given is a riddle.
pub fn model_names(text: &str, names: &[(String, String)]) -> String {
    let mut out = text.to_string();
    for (wire, internal) in names {
        if wire == internal || !out.contains(internal.as_str()) {
            continue;
        }
        let mut next = String::with_capacity(out.len());
        let mut rest = out.as_str();
        let mut before: Option<char> = None;
        while let Some(at) = rest.find(internal.as_str()) {
            let prev = rest[..at].chars().next_back().or(before);
            let tail = &rest[at + internal.len()..];
            let mut ahead = tail.chars();
            let (after, then) = (ahead.next(), ahead.next());
            // Part of a longer name or path (`my.fs.read`, `docs/git.diff.md`,
            // `fs.reader`) is left alone.
            let joins = |c: char| matches!(c, '.' | '/' | '-');
            let word = |c: char| c.is_alphanumeric() || c == '_';
            let before_ok = !prev.is_some_and(|c| word(c) || joins(c));
            let after_ok = match (after, then) {
                (Some(c), _) if word(c) => false,
                (Some(c), Some(d)) if joins(c) && word(d) => false,
                _ => true,
            };
            next.push_str(&rest[..at]);
            let whole = before_ok && after_ok;
            next.push_str(if whole { wire } else { internal });
            before = internal.chars().next_back();
            rest = &rest[at + internal.len()..];
        }
        next.push_str(rest);
        out = next;
    }
    out
}

/// The request made for the model an agent fell back on: its name and room, no
/// thinking, and the earlier model's thinking left out (signed for that model only).
fn falls_back(request: &mut TurnRequest, to: &ResolvedModel) {
    request.model = to.model.clone();
    request.max_tokens = crate::model::max_tokens(to);
    request.thinking = to.thinking;
    for m in &mut request.messages {
        m.content.retain(|b| {
            !matches!(
                b,
                ContentBlock::Thinking { .. } | ContentBlock::RedactedThinking { .. }
            )
        });
    }
    // A turn that only thought keeps its place in the conversation.
    for m in &mut request.messages {
        if m.content.is_empty() {
            m.content
                .push(ContentBlock::text("(thought without answering)"));
        }
    }
}

/// Sends `event` to airsd as this agent's.
fn emit<E: air_proto::events::Event>(
    link: &impl Link,
    session: &str,
    source: &EventSource,
    event: &E,
) {
    if let Ok(e) = RuntimeEvent::of(session, source.clone(), event) {
        link.event(e);
    }
}

/// An honest end without a submission.
fn ended(start: &AgentStart, role: AgentType, status: WorkerStatus, why: String) -> WorkerResult {
    WorkerResult::new(
        &start.task_spec.id,
        &start.runtime.agent_id,
        role,
        status,
        why,
    )
}

/// Runs the agent to its result.
pub async fn run(start: &AgentStart, link: &impl Link) -> WorkerResult {
    let role = start.runtime.agent_type.unwrap_or(AgentType::Executor);
    // The worker runs in the project directory, which recordings call ${PROJECT}.
    let root = std::env::current_dir()
        .ok()
        .map(|p| p.display().to_string());
    let talker = match Talker::open(start, role, root.clone()).await {
        Ok(t) => t,
        Err(e) => return ended(start, role, WorkerStatus::Blocked, e),
    };
    let record = start.runtime.record.clone().or_else(|| {
        std::env::var("AIR_RECORD")
            .ok()
            .filter(|d| !d.is_empty() && start.runtime.replay.is_none())
    });
    let recorder = match record {
        Some(dir) => match Recorder::new(
            std::path::Path::new(&dir),
            &start.runtime.agent_id,
            talker.resolved.kind,
            root,
        ) {
            Ok(r) => Some(r),
            Err(e) => {
                return ended(
                    start,
                    role,
                    WorkerStatus::Blocked,
                    format!("cannot record the conversation: {e}"),
                )
            }
        },
        None => None,
    };
    run_with(start, link, talker, role, recorder).await
}

async fn run_with(
    start: &AgentStart,
    link: &impl Link,
    mut talker: Talker,
    role: AgentType,
    mut recorder: Option<Recorder>,
) -> WorkerResult {
    let session = start.runtime.session_id.clone();
    let agent_id = start.runtime.agent_id.clone();
    let task_id = start.task_spec.id.clone();
    let source = EventSource::agent(agent_id.as_str(), role);
    // Provider-side names (`fs.read` goes out as `fs_read`) and back.
    let mut names = Vec::new();
    let mut tools: Vec<ToolSpec> = start
        .tools
        .iter()
        .map(|d| {
            let wire = d.name.replace('.', "_");
            names.push((wire.clone(), d.name.clone()));
            ToolSpec {
                name: wire,
                description: d.description.clone(),
                input_schema: d.input_schema.clone(),
            }
        })
        .collect();
    // A planning turn of the Architecture Designer ends with its call of ask_user,
    // settle_requirements or propose_plan that airsd accepted, or with plain text.
    let planning = role == AgentType::ArchitectureDesigner
        && air_proto::planning::is_planning(&start.task_spec.id);
    let consulted = role == AgentType::ArchitectureDesigner
        && start.task_spec.task_type == air_proto::task::TaskType::Execute
        && !planning;
    // The Main Agent proposing the project's profile hands back a form (D-015).
    let proposing = role == AgentType::Main
        && start.task_spec.output_contract == air_proto::task::OutputContract::ProjectProfile;
    let output = if proposing {
        submit::Output::Profile
    } else {
        submit::Output::of(role, consulted)
    };
    // The Main Agent ends its turn with its answer, not a form; so does the direct
    // lane's executor (D-005).
    let main = role == AgentType::Main && !proposing;
    let direct =
        start.runtime.permission_template == air_proto::context::PermissionTemplate::MainDirect;
    let mut talk = crate::converse::Turn::of(start);
    if main {
        tools.extend(talk.tools());
    } else if !direct && !planning {
        tools.push(submit::tool_for(output));
    }
    // A task that lets its agent choose its model offers the choice.
    tools.extend(choose::tool(start, role, &talker));
    // The skills airsd found installed: the model loads one's instructions by name.
    let skills = start.context_pack.skills.clone().unwrap_or_default();
    if !skills.is_empty() {
        tools.push(skill_tool());
        tools.push(crate::own::report_tool());
    }
    let Some(context) = start.context_pack.assembled.as_deref() else {
        return ended(
            start,
            role,
            WorkerStatus::Blocked,
            "agent.start carried no assembled context (context_pack.assembled)".into(),
        );
    };
    let mut request = TurnRequest {
        model: talker.resolved.model.clone(),
        system: context.system.clone(),
        messages: context.messages.clone(),
        tools,
        // The answer's room, and the thinking's on top, within what the model gives.
        max_tokens: crate::model::max_tokens(&talker.resolved),
        thinking: talker.resolved.thinking,
        reasoning: talker.resolved.capability.reasoning,
    };
    let threshold = context.summary.budget.threshold();
    // A compaction asked for and not yet answered; the first turn it may be asked
    // for (again).
    let mut compaction_pending = false;
    let mut compaction_from = 0u32;
    let mut history = crate::history::History::new(request.messages.clone());
    let mut seen = submit::Seen::default();
    // What the task's earlier agents changed counts as the task's changes.
    for f in start.context_pack.task_changes.iter().flatten() {
        seen.earlier(f);
    }
    // Results airsd's evidence gate refused, each told to the agent.
    let mut refusals = 0u32;
    let max_turns = match start.task_spec.constraints.max_turns {
        0 => air_proto::plan::DEFAULT_MAX_TURNS,
        n => n,
    };
    // Plain text ends the turn: the answer is for the user.
    let talking = main || direct || planning;
    // Where the agent type's own loop is, and the patrol of its turns.
    let mut machine = Machine::of(role, !planning, start);
    let mut watch = watch::Watch::default();
    let mut state = LoopState::Loading;
    let mut tokens = (0u64, 0u64);
    link.progress(state, 0, tokens);
    // A bugfix task: airsd runs its check before the model begins, so that the bug
    // is on record before anything changes.
    if role == AgentType::Executor
        && !direct
        && air_proto::gate::task_evidence(&start.task_spec)
            .contains(&air_proto::task::EvidenceType::Reproduction)
    {
        let answer = link
            .call_tool(
                &format!("{agent_id}:before"),
                air_proto::gate::BEFORE_TOOL,
                serde_json::json!({}),
                "",
            )
            .await;
        if let Some(out) = answer.output.as_ref() {
            seen.ran
                .extend(submit::runs_in(&serde_json::json!({}), out));
        }
        let told = ContentBlock::text(before_told(&answer));
        match request.messages.last_mut() {
            Some(last) if last.role == air_proto::message::Role::User => last.content.push(told),
            _ => request.messages.push(Message::user(vec![told])),
        }
    }
    for turn_no in 0..max_turns {
        // Before the model's turn: what the loop is doing now.
        machine.step(Step::Turn);
        state = machine.state();
        link.hold().await;
        // What the user said to this task meanwhile reaches the model now.
        let said = link.inbox();
        if !said.is_empty() {
            let told = said
                .iter()
                .map(|t| format!("{} {}", air_proto::message::USER_SAYS, t.trim()))
                .collect::<Vec<_>>()
                .join("\n\n");
            match request.messages.last_mut() {
                Some(last) if last.role == air_proto::message::Role::User => {
                    last.content.push(ContentBlock::text(told));
                }
                _ => request
                    .messages
                    .push(Message::user(vec![ContentBlock::text(told)])),
            }
        }
        // The soft timeout passed: the model is told, and may ask for more time.
        if let Some((elapsed, hard)) = link.time_notice() {
            let told = ContentBlock::text(time_told(elapsed, hard));
            match request.messages.last_mut() {
                Some(last) if last.role == air_proto::message::Role::User => {
                    last.content.push(told);
                }
                _ => request.messages.push(Message::user(vec![told])),
            }
            if !request.tools.iter().any(|t| t.name == MORE_TIME) {
                request.tools.push(more_time_tool());
            }
        }
        // A Compactor finished: its summary stands for the messages it covered, and
        // the originals can be read back.
        if let Some(c) = link.compacted() {
            compaction_pending = false;
            match c.text {
                Some(text) if history.compact(&mut request.messages, &c.upto_message_id, &text) => {
                    compaction_from = turn_no;
                    watch.forget();
                    if !request
                        .tools
                        .iter()
                        .any(|t| t.name == crate::history::RECALL)
                    {
                        request.tools.push(crate::history::recall_tool());
                    }
                }
                _ => compaction_from = turn_no + COMPACTION_BACKOFF,
            }
        }
        // What the loop gives the model this turn is kept in the session, so the
        // whole conversation can be compacted and read back.
        history.sync_base(&request.messages);
        for (id, m) in history.unrecorded(&request.messages) {
            emit(
                link,
                &session,
                &source,
                &ev::ContextMessageCreated(p::MessageCreated {
                    message_id: id,
                    content: serde_json::to_value(&m.content).unwrap_or_default(),
                    agent_id: Some(agent_id.clone()),
                    task_id: Some(task_id.clone()),
                    client: None,
                    model: None,
                    usage: None,
                }),
            );
        }
        link.progress(state, turn_no + 1, tokens);
        let message_id = air_proto::ids::new_id();
        let talker_provider = talker.resolved.provider.clone();
        link.model_silent_since(Some(std::time::Instant::now()));
        let mut deltas = |d: Delta<'_>| {
            link.model_silent_since(Some(std::time::Instant::now()));
            let (kind, index, text) = match d {
                Delta::Text { index, text } => (p::DeltaKind::Text, index, text),
                Delta::Thinking { index, text } => (p::DeltaKind::Thinking, index, text),
                Delta::InputJson { index, json } => (p::DeltaKind::InputJson, index, json),
                // The provider asks to slow down: airsd runs fewer agents for a while.
                Delta::Restart {
                    slow_down: true, ..
                } => {
                    emit(
                        link,
                        &session,
                        &source,
                        &p::RateLimited {
                            agent_id: agent_id.clone(),
                            provider: talker_provider.clone(),
                        },
                    );
                    return;
                }
                Delta::Restart { .. } => return,
            };
            emit(
                link,
                &session,
                &source,
                &p::TokenDelta {
                    message_id: message_id.clone(),
                    block_index: u32::try_from(index).unwrap_or(u32::MAX),
                    kind,
                    text: text.to_string(),
                    agent_id: Some(agent_id.clone()),
                },
            );
        };
        // A provider that keeps failing (after its retries) hands the turn to the
        // next model configured for this agent type; no tool ran for the failed
        // turn, so none runs twice.
        let mut turn = loop {
            let e = match talker.turn(&request, &mut deltas).await {
                Ok(t) => break t,
                Err(e) => e,
            };
            link.model_silent_since(None);
            let kind = recorder.as_ref().map(Recorder::kind);
            let Some(fallback) = talker.fall_back(&e.to_string(), kind) else {
                let mut result = ended(
                    start,
                    role,
                    WorkerStatus::Blocked,
                    format!("the model could not be reached: {e}"),
                );
                result.result =
                    serde_json::json!({ air_proto::result::MODEL_UNREACHABLE: e.to_string() });
                return result;
            };
            falls_back(&mut request, &talker.resolved);
            emit(
                link,
                &session,
                &source,
                &p::ModelFallback {
                    agent_id: agent_id.clone(),
                    task_id: Some(task_id.clone()),
                    from_model: fallback.from,
                    to_model: fallback.to,
                    reason: fallback.reason,
                },
            );
        };
        link.model_silent_since(None);
        let model = talker.resolved.model.as_str();
        if let Some(r) = recorder.as_mut() {
            let wire = std::mem::take(&mut turn.wire);
            if let Err(e) = r.push(&talker.body(&request), &wire) {
                return ended(
                    start,
                    role,
                    WorkerStatus::Blocked,
                    format!("cannot record the conversation: {e}"),
                );
            }
        }
        emit(
            link,
            &session,
            &source,
            &ev::AssistantMessageCreated(p::MessageCreated {
                message_id: message_id.clone(),
                content: serde_json::to_value(&turn.content).unwrap_or_default(),
                agent_id: Some(agent_id.clone()),
                task_id: Some(task_id.clone()),
                client: None,
                model: Some(model.to_string()),
                usage: Some(p::Usage {
                    input_tokens: turn.usage.input_tokens,
                    output_tokens: turn.usage.output_tokens,
                    cache_read_input_tokens: Some(turn.usage.cache_read_input_tokens),
                    cache_creation_input_tokens: Some(turn.usage.cache_creation_input_tokens),
                    cost_micro_usd: talker.cost(&turn.usage),
                }),
            }),
        );
        tokens.0 += turn.usage.input_tokens;
        tokens.1 += turn.usage.output_tokens;
        let assistant = Message::assistant(turn.content);
        history.assistant(&message_id, &assistant);
        // The conversation outgrew its budget: a Compactor is asked to summarise its
        // messages so far (the agent goes on meanwhile; airsd dispatches it).
        let used = turn.usage.context_tokens();
        if !compaction_pending && turn_no >= compaction_from && threshold > 0 && used > threshold {
            if let Some(upto) = history.snapshot_end() {
                compaction_pending = true;
                emit(link, &session, &source, &p::CompactionRequested {
                    agent_id: Some(agent_id.clone()),
                    task_id: Some(task_id.clone()),
                    reason: format!(
                        "the conversation took {used} input tokens on turn {}, over the threshold of {threshold}",
                        turn_no + 1
                    ),
                    estimated_tokens: used,
                    threshold_tokens: threshold,
                    context_window_tokens: context.summary.budget.context_window_tokens,
                    upto_message_id: Some(upto.to_string()),
                });
            }
        }
        let mut answers = Vec::new();
        // The agent chose another model this turn.
        let mut moved = false;
        for (id, name, input) in assistant.tool_uses() {
            if main && crate::converse::Turn::handles(name) {
                let answer = talk.call(name, input);
                if talk.delegating() {
                    machine.step(Step::Delegating);
                }
                if machine.state() != state {
                    state = machine.state();
                    link.progress(state, turn_no + 1, tokens);
                }
                for change in talk.take_changes() {
                    let Ok(Value::Object(mut body)) = serde_json::to_value(&change) else {
                        continue;
                    };
                    body.insert("turn".into(), Value::String(task_id.clone()));
                    emit(link, &session, &source, &ev::RequirementChanged(body));
                }
                here(&mut answers, &mut watch, (id, name, input), answer);
                continue;
            }
            if name == choose::SELECT_MODEL {
                let (answer, event) = choose::select(&mut talker, start, &source, input);
                if let Some(e) = event {
                    link.event(e);
                    moved = true;
                }
                here(&mut answers, &mut watch, (id, name, input), answer);
                continue;
            }
            let own = crate::own::Own {
                link,
                skills: &skills,
                history: &history,
                session: session.as_str(),
                source: &source,
                agent_id: agent_id.as_str(),
                task_id: task_id.as_str(),
            };
            if let Some((content, is_error)) = own.answer(name, input).await {
                let answer = if is_error { Err(content) } else { Ok(content) };
                here(&mut answers, &mut watch, (id, name, input), answer);
                continue;
            }
            if name == submit::SUBMIT && !main {
                match submit::accept_as(output, role, &task_id, &agent_id, input, &seen) {
                    Ok(result) => {
                        // airsd's evidence gate, asked first: the agent is told in this
                        // turn what airsd's records do not show (airsd judges again
                        // when the result comes, and decides).
                        let asks =
                            matches!(output, submit::Output::Task | submit::Output::Debugging)
                                && refusals < MAX_REFUSALS;
                        if asks {
                            let refused = gate_refusals(link, id, &result, &message_id).await;
                            if !refused.is_empty() {
                                refusals += 1;
                                let told = format!(
                                    "not accepted: airsd's records of this attempt do not show what this result needs:\n- {}\nDo what is missing (airsd records the evidence of the commands you run) and submit again, or submit `failed` or `blocked` saying why.",
                                    refused.join("\n- ")
                                );
                                here(&mut answers, &mut watch, (id, name, input), Err(told));
                                continue;
                            }
                        }
                        let mut fixed = false;
                        if role == AgentType::Debugger {
                            let record = debug_record(start, &result, &seen);
                            fixed = record.fixed;
                            if let Ok(e) =
                                RuntimeEvent::of(session.as_str(), source.clone(), &record)
                            {
                                link.event(e);
                            }
                        }
                        machine.step(Step::Submitted { fixed });
                        link.progress(machine.state(), turn_no + 1, tokens);
                        return result;
                    }
                    Err(why) => here(&mut answers, &mut watch, (id, name, input), Err(why)),
                }
                continue;
            }
            // A tool this agent was not offered still goes to airsd, which decides
            // every call and records it (`fs_write` is `fs.write`): refused there.
            let tool: String = match names.iter().find(|(wire, _)| wire == name) {
                Some((_, t)) => t.clone(),
                None => {
                    // The designer's own tools have no namespace.
                    let t = if air_proto::planning::is_designer_tool(name)
                        || name.starts_with("mcp__")
                    {
                        name.to_string()
                    } else {
                        name.replacen('_', ".", 1)
                    };
                    // Its refusal names it as the model does.
                    names.push((name.to_string(), t.clone()));
                    t
                }
            };
            let tool = tool.as_str();
            // Where its loop is, the agent type may not call this yet (a debugger's
            // write before any evidence).
            if let Err(why) = machine.allows(tool) {
                let why = model_names(&why, &names);
                here(&mut answers, &mut watch, (id, name, input), Err(why));
                continue;
            }
            machine.step(Step::Calling { tool });
            if machine.state() != state {
                state = machine.state();
                link.progress(state, turn_no + 1, tokens);
            }
            link.hold().await;
            let answer = link.call_tool(id, tool, input.clone(), &message_id).await;
            machine.step(Step::Called {
                tool,
                input,
                answer: &answer,
            });
            watch.call(
                name,
                input,
                watch::fingerprint(
                    answer.status == ToolResultStatus::Ok,
                    answer.output.as_ref(),
                    answer
                        .error
                        .as_ref()
                        .map(|e| e.message.as_str())
                        .or(answer.content.as_deref())
                        .unwrap_or(""),
                ),
            );
            if planning
                && air_proto::planning::is_designer_tool(tool)
                && answer.status == ToolResultStatus::Ok
            {
                link.progress(LoopState::Finalizing, turn_no + 1, tokens);
                let said = assistant.texts().join("\n");
                return crate::converse::planning_end(
                    start,
                    Some((tool, input)),
                    said.trim().to_string(),
                );
            }
            // The MCP tools a search found are the agent's to call from now on.
            if tool == "mcp.search" {
                for d in answer
                    .output
                    .as_ref()
                    .and_then(|o| o.get("tools"))
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|d| {
                        serde_json::from_value::<air_proto::tool::ToolDefinition>(d.clone()).ok()
                    })
                    .filter(|d| d.name.starts_with("mcp__"))
                {
                    if !request.tools.iter().any(|t| t.name == d.name) {
                        names.push((d.name.clone(), d.name.clone()));
                        request.tools.push(ToolSpec {
                            name: d.name,
                            description: d.description,
                            input_schema: d.input_schema,
                        });
                    }
                }
            }
            // What ran is what a passed check may cite; what the calls changed is
            // the result's changed files.
            if let Some(out) = answer.output.as_ref() {
                if writes(tool) {
                    if let Some(path) = out.get("path").and_then(Value::as_str) {
                        seen.changed(path);
                    }
                }
                for path in out
                    .get("changed_files")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                {
                    seen.changed(path);
                }
            }
            // Every command airsd ran for the call may be cited: a shell_run's, and
            // each step of a cpp_build, cpp_test or cpp_analyze.
            if let Some(out) = answer.output.as_ref() {
                seen.ran.extend(submit::runs_in(input, out));
            }
            answers.push(match answer.status {
                // The tool's own text when it rendered one; its JSON otherwise.
                ToolResultStatus::Ok => ContentBlock::ToolResult {
                    tool_use_id: id.to_string(),
                    content: answer
                        .content
                        .or_else(|| answer.output.map(|o| o.to_string()))
                        .unwrap_or_default(),
                    is_error: false,
                },
                ToolResultStatus::Error => ContentBlock::ToolResult {
                    tool_use_id: id.to_string(),
                    content: model_names(
                        &answer.error.map(|e| e.message).unwrap_or_default(),
                        &names,
                    ),
                    is_error: true,
                },
            });
        }
        if !answers.is_empty() {
            machine.step(Step::Answered);
            if machine.state() != state {
                state = machine.state();
                link.progress(state, turn_no + 1, tokens);
            }
        }
        let stopped = turn.stop_reason;
        let said = assistant.texts().join("\n");
        request.messages.push(assistant);
        // As after a fallback: the request is the new model's from the next turn.
        if moved {
            falls_back(&mut request, &talker.resolved);
        }
        if answers.is_empty() && talking && stopped != Some(StopReason::MaxTokens) {
            // Plain text is the answer (the Main Agent's: chat when unclassified).
            link.progress(LoopState::Finalizing, turn_no + 1, tokens);
            if planning {
                return crate::converse::planning_end(start, None, said.trim().to_string());
            }
            if direct {
                return crate::converse::direct_end(start, said.trim().to_string(), &seen.changed);
            }
            return talk.end(start, said.trim().to_string());
        }
        // A model that answers the profile in plain JSON rather than through the form
        // is taken at its word (loose acceptance, D-015).
        if answers.is_empty() && proposing && stopped != Some(StopReason::MaxTokens) {
            let input = submit::json_in(&said)
                .filter(|v| !air_proto::project_profile::read_proposal(v).is_empty());
            if let Some(input) = input {
                if let Ok(result) =
                    submit::accept_as(output, role, &task_id, &agent_id, &input, &seen)
                {
                    link.progress(LoopState::Finalizing, turn_no + 1, tokens);
                    return result;
                }
            }
        }
        // The patrol of the agent's own turns: a loop is told once, then stops it.
        match watch.turn(&said) {
            watch::Verdict::Fine => {}
            watch::Verdict::Tell(why) => {
                looped(link, start, &source, turn_no + 1, &why, false);
                answers.push(ContentBlock::text(format!(
                    "airsd's patrol: {why}. That is a loop, and nothing new is coming of it. Stop and change your approach: read what the answers say, try something else, or submit `failed` or `blocked` saying where you are stuck. If the loop goes on, airsd stops you and hands the task on."
                )));
            }
            watch::Verdict::Stop(why) => {
                looped(link, start, &source, turn_no + 1, &why, true);
                return ended(
                    start,
                    role,
                    WorkerStatus::Failed,
                    format!(
                        "stopped in a loop on turn {}: {why}, after being told once",
                        turn_no + 1
                    ),
                );
            }
        }
        if answers.is_empty() {
            if stopped == Some(StopReason::MaxTokens) {
                answers.push(ContentBlock::text(
                    "Your answer was cut off at the output limit. Go on in smaller steps.",
                ));
            } else if proposing {
                answers.push(ContentBlock::text(
                    "Call submit_result with the profile (leave out what you cannot tell).",
                ));
            } else {
                answers.push(ContentBlock::text(
                    "Call submit_result to hand back your result (completed, failed or blocked, with the reason).",
                ));
            }
        }
        // Near the end of the turn budget, the agent is told, once a turn.
        let left = max_turns.saturating_sub(turn_no + 1);
        if (1..=TURNS_WARNED).contains(&left) && talking {
            answers.push(ContentBlock::text(format!(
                "{left} turn{} left of {max_turns}: answer the user now with what you have.",
                if left == 1 { "" } else { "s" }
            )));
        } else if (1..=TURNS_WARNED).contains(&left) && proposing {
            answers.push(ContentBlock::text(format!(
                "{left} turn{} left of {max_turns}: call submit_result now with what you can tell.",
                if left == 1 { "" } else { "s" }
            )));
        } else if (1..=TURNS_WARNED).contains(&left) {
            answers.push(ContentBlock::text(format!(
                "{left} turn{} left of {max_turns}: finish and call submit_result now, or submit `failed` or `blocked` saying where you stopped.",
                if left == 1 { "" } else { "s" }
            )));
        }
        request.messages.push(Message::user(answers));
    }
    ended(
        start,
        role,
        WorkerStatus::Failed,
        format!("ran out of turns ({max_turns}) before submitting a result"),
    )
}

#[cfg(test)]
mod tests;
