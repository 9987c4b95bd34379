//! The conversation's entry: a user message is recorded and a turn of the Main Agent
//! answers it, in the session's run (started for it, or continued when it had ended).

use std::sync::Arc;

use air_proto::api::params::{ConversationStart, RunStart};
use air_proto::api::{MessageSent, SessionCreate, SessionInfo};
use air_proto::event::{EventSource, RuntimeEvent, SourceKind};
use air_proto::events as ev;
use air_proto::payload::{MessageCreated, RunContinued, RunStarted};
use rusqlite::OptionalExtension as _;

use super::state::DaemonState;
use crate::error::{Error, Result};
use crate::scheduler::shell::{self, Control};
use crate::Session;

use air_proto::conversation::CONVERSATION_PLAN;

impl DaemonState {
    /// Starts a conversation in a new session with these settings (as `run.start` has
    /// them, without a plan): `run.started` is recorded, and the first message starts
    /// the scheduling. A first message given here (`message`) is in the session's file
    /// from its creation, and its turn starts at once; with `steer`, the connection
    /// `by` steers the session before its run can ask anything.
    pub async fn start_conversation(
        &self,
        mut req: ConversationStart,
        by: Caller,
    ) -> Result<SessionInfo> {
        let env = req.env.clone();
        let first = req.message.take();
        let steer = req.steer.take().unwrap_or(false);
        if first.as_deref().is_some_and(|t| t.trim().is_empty()) {
            return Err(Error::invalid(
                "conversation.start",
                "message",
                "must not be empty",
            ));
        }
        if steer && !by.conn.is_some_and(|c| self.is_client(c)) {
            return Err(Error::invalid(
                "conversation.start",
                "steer",
                "this connection has not said hello: a client steers after its hello",
            ));
        }
        let config = self.shell_config_for(None, env.as_ref())?;
        // A first message the person's hooks judge is said after the start, as
        // `message.send` says it, so that they judge it before it is recorded.
        if let Some(text) = first.as_deref().filter(|_| self.prompt_hooked(&config)) {
            req.steer = Some(steer);
            let mut info = Box::pin(self.start_conversation(req, by.clone())).await?;
            info.message = Some(self.converse(&info.id, text, None, by.name).await?);
            return Ok(info);
        }
        let run = self.conversation_settings(&config, req)?;
        // Every agent must be able to reach a model before anything is recorded.
        let models = crate::agents::models::for_run(&config.worker, &conversation_tasks(), &run)
            .await
            .map_err(Error::Refused)?;
        // Nothing else starts a run of the session before this one: a message sent to
        // it meanwhile waits, then goes through this run.
        let id = air_proto::ids::new_id();
        let gate = self.run_gate(&id);
        let _one_at_a_time = gate.lock().await;
        let message_id = air_proto::ids::new_id();
        let mut recorded = Vec::new();
        // The run's files are read while the session's file is written.
        let prep = async {
            match first {
                Some(_) => Some(self.prepare_run(&run, &config).await),
                None => None,
            }
        };
        let created = self.create_session_as(
            id,
            SessionCreate {
                title: run.title.clone(),
                plan_ref: None,
            },
            |id| {
                recorded.push(event(id, &run)?);
                if let Some(text) = &first {
                    recorded.push(user_message(id, &message_id, text, None, by.name.clone())?);
                }
                Ok(recorded.clone())
            },
        );
        let (prep, created) = tokio::join!(prep, created);
        let mut info = created?;
        self.remember_env(&info.id, env);
        let prep = match prep {
            None => None,
            Some(Ok(prep)) => Some(prep),
            Some(Err(e)) => return Err(self.not_started(&info.id, e).await),
        };
        if let Some(conn) = by.conn.filter(|_| steer) {
            self.steer(conn, &info.id);
        }
        let Some(prep) = prep else {
            return Ok(info);
        };
        let session = self.session(&info.id).await?;
        let mut core = crate::scheduler::core::Core::new(self.scheduler_config(run.concurrency));
        core.apply_events(&recorded, super::runs::now_ms());
        let seq = info.seq;
        self.launch_run(session, run, core, config, models, prep);
        info.message = Some(MessageSent {
            message_id,
            seq,
            unanswered: None,
        });
        Ok(info)
    }

    /// Resolves the models of a conversation in the daemon's own settings, so that the
    /// first one (most often in those settings) finds the answer kept.
    pub async fn warm_models(&self) {
        let Ok(config) = self.shell_config_for(None, None) else {
            return;
        };
        let Ok(run) = self.conversation_settings(&config, ConversationStart::default()) else {
            return;
        };
        if let Err(e) =
            crate::agents::models::for_run(&config.worker, &conversation_tasks(), &run).await
        {
            tracing::debug!("the models were not resolved ahead: {e}");
        }
    }

    fn conversation_settings(
        &self,
        config: &shell::ShellConfig,
        req: ConversationStart,
    ) -> Result<RunStarted> {
        if let Some(e) = &config.config_error {
            return Err(Error::Refused(format!(
                "cannot talk to the agents until the configuration is fixed: {e}"
            )));
        }
        let as_run = RunStart {
            plan: CONVERSATION_PLAN.into(),
            plan_text: String::new(),
            title: req.title,
            concurrency: req.concurrency,
            on_ask: req.on_ask,
            permission_mode: req.permission_mode,
            max_cost: req.max_cost,
            max_tokens: req.max_tokens,
            max_time_ms: req.max_time_ms,
            model: req.model,
            record: req.record,
            replay: req.replay,
            learn: req.learn,
            // The work a conversation hands on lands where the person talks to it,
            // in the checkout, as each task ends.
            worktrees: Some(false),
            land: None,
            env: None,
        };
        self.run_settings(config, &as_run, &Default::default())
    }

    /// A user message (`message.send`): recorded with who sent it, and answered by a
    /// turn of the Main Agent. A running scheduler records it itself; otherwise the
    /// session's run is started (with the user's defaults) or continued for it.
    pub async fn converse(
        &self,
        session_id: &str,
        text: &str,
        to: Option<String>,
        client: Option<String>,
    ) -> Result<MessageSent> {
        if text.trim().is_empty() {
            return Err(Error::invalid("message.send", "text", "must not be empty"));
        }
        let gate = self.run_gate(session_id);
        let one_at_a_time = gate.lock().await;
        let session = self.session(session_id).await?;
        // `@T2 …` is said to task T2 when the session has one.
        let to = to.or_else(|| {
            let named = addressed(text)?;
            session
                .bus()
                .read(|p, _| p.tasks.iter().any(|t| t.id == named))
                .then(|| named.to_string())
        });
        if let Some(to) = &to {
            let known = session
                .bus()
                .read(|p, _| p.tasks.iter().any(|t| t.id == *to));
            if !known {
                return Err(Error::invalid(
                    "message.send",
                    "to",
                    format!("session {session_id} has no task `{to}`"),
                ));
            }
        }
        // The person's hooks may refuse a message to the conversation. A word to a
        // task of the graph that is still open is not one; a word to a turn, or to a
        // task that ended, goes to the Main Agent and is.
        let to_open_task = to.as_deref().is_some_and(|t| {
            !air_proto::conversation::in_conversation(t)
                && session
                    .bus()
                    .read(|p, _| p.task(t).is_some_and(|x| !x.status.is_terminal()))
        });
        if !to_open_task && session.bus().read(|p, _| p.run.is_some()) {
            self.prompt_hooks(&session, text).await?;
        }
        let message_id = air_proto::ids::new_id();
        let message = user_message(session_id, &message_id, text, to, client.clone())?;
        // A session without a run (made by `session.create`) keeps the message as a
        // record; a conversation starts with `conversation.start`.
        if session.bus().read(|p, _| p.run.is_none()) {
            drop(one_at_a_time);
            let appended = session.store().append(message).await?;
            return Ok(MessageSent {
                message_id,
                seq: appended.seq,
                unanswered: Some(format!(
                    "session {session_id} has no conversation or run, so no agent answers: start one with conversation.start (`air chat`)"
                )),
            });
        }
        let recorded = self
            .record_in_run(&session, session_id, message, client)
            .await?;
        drop(one_at_a_time);
        match recorded {
            None => self.sent(&session, message_id).await,
            Some(seq) => Ok(MessageSent {
                message_id,
                seq,
                unanswered: None,
            }),
        }
    }

    /// Records a client's event for a conversation's scheduler to fold: through the
    /// running scheduler (`None`: it recorded it), or, when none runs, by starting
    /// the session's run again (continued if it had ended) with it (`Some(seq)`).
    /// The caller holds the session's run gate.
    pub(super) async fn record_in_run(
        &self,
        session: &Arc<Session>,
        session_id: &str,
        message: RuntimeEvent,
        client: Option<String>,
    ) -> Result<Option<u64>> {
        if let Some(handle) = self.run_handle(session_id) {
            let sent = self
                .control_run(session_id, Control::Record(Box::new(message.clone())))
                .await;
            if let Ok(true) = sent {
                return Ok(None);
            }
            // The run ended meanwhile: it is continued below, once its scheduler is
            // gone. Otherwise the store refused the event.
            let ended = session.bus().read(|p, _| {
                p.run
                    .as_ref()
                    .is_some_and(|r| r.status == air_proto::projection::RunState::Ended)
            });
            if !ended {
                return Err(Error::Refused(format!(
                    "{} was not recorded in session {session_id}; see airsd's log",
                    message.event_type
                )));
            }
            handle.wait().await;
        }
        let config = self.shell_config_for(Some(session_id), None)?;
        let recovered = {
            let session = session.clone();
            let core_config = self.scheduler_config(air_proto::plan::DEFAULT_CONCURRENCY);
            tokio::task::spawn_blocking(move || shell::recover(&session, core_config))
                .await
                .map_err(|e| Error::Internal(format!("recovery: {e}")))??
        };
        let mut events = Vec::new();
        let (started, mut core) = match recovered {
            Some(r) => {
                if r.core.is_finished() {
                    events.push(event(
                        session_id,
                        &RunContinued {
                            task_ids: Vec::new(),
                            by: client,
                            budgets: Default::default(),
                        },
                    )?);
                }
                (r.started, r.core)
            }
            None => {
                return Err(Error::NotFound(format!(
                    "session {session_id} has no run to answer in"
                )))
            }
        };
        // The run's own tasks keep their models (a plan run a message continues).
        let mut specs = core.specs();
        specs.extend(conversation_tasks());
        let models = crate::agents::models::for_run(&config.worker, &specs, &started)
            .await
            .map_err(Error::Refused)?;
        // The run's files are read before anything is recorded: a message its run
        // cannot answer is refused, not kept for a later start to answer.
        let prep = self.prepare_run(&started, &config).await?;
        events.push(message);
        core.apply_events(&events, super::runs::now_ms());
        let seqs = session.store().append_batch(events).await?;
        self.launch_run(session.clone(), started, core, config, models, prep);
        Ok(Some(seqs.last().copied().unwrap_or_default()))
    }

    /// The answer for a message a running scheduler recorded.
    async fn sent(&self, session: &Arc<Session>, message_id: String) -> Result<MessageSent> {
        let (session, id) = (session.clone(), message_id.clone());
        let seq = tokio::task::spawn_blocking(move || -> Result<Option<u64>> {
            let conn = session.readers().get()?;
            Ok(conn
                .query_row("SELECT seq FROM messages WHERE id = ?1", [&id], |r| {
                    r.get(0)
                })
                .optional()?)
        })
        .await
        .map_err(|e| Error::Internal(format!("reading the message: {e}")))??;
        Ok(MessageSent {
            message_id,
            seq: seq.unwrap_or_default(),
            unanswered: None,
        })
    }
}

impl DaemonState {
    /// A page of the conversation (`conversation.list`).
    pub async fn conversation_page(
        &self,
        q: air_proto::api::params::ConversationList,
    ) -> Result<air_proto::api::ConversationPage> {
        let limit = q.limit.unwrap_or(100);
        if !(1..=500).contains(&limit) {
            return Err(Error::invalid(
                "conversation.list",
                "limit",
                "must be between 1 and 500",
            ));
        }
        if q.after_seq.is_some() && q.before_seq.is_some() {
            return Err(Error::invalid(
                "conversation.list",
                "before_seq",
                "give after_seq or before_seq, not both",
            ));
        }
        let session = self.session(&q.session_id).await?;
        tokio::task::spawn_blocking(move || {
            let conn = session.readers().get()?;
            crate::event_store::query::conversation_page(&conn, q.after_seq, q.before_seq, limit)
        })
        .await
        .map_err(|e| Error::Internal(format!("reading the conversation: {e}")))?
    }
}

/// The task a message names first thing (`@T2 use argparse`), if it does.
fn addressed(text: &str) -> Option<&str> {
    let rest = text.trim_start().strip_prefix('@')?;
    let word = rest.split(char::is_whitespace).next()?;
    let id = word.trim_end_matches([':', ',']);
    (!id.is_empty()).then_some(id)
}

/// The tasks whose agents a conversation may start, for the models check: a turn of
/// the Main Agent, and a task it hands on (executor, reviewer, debugger).
fn conversation_tasks() -> Vec<air_proto::task::TaskSpec> {
    vec![air_proto::conversation::turn_spec(1, "", "", None, &[])]
}

/// Who called a method: the connection and its name (`air (pid 42)`).
#[derive(Clone, Debug, Default)]
pub struct Caller {
    /// `None` for a call made in the daemon's own process.
    pub conn: Option<u64>,
    pub name: Option<String>,
}

/// A person's message, as a client sent it.
fn user_message(
    session_id: &str,
    message_id: &str,
    text: &str,
    to: Option<String>,
    client: Option<String>,
) -> Result<RuntimeEvent> {
    Ok(RuntimeEvent::of(
        session_id,
        EventSource::new(SourceKind::Main),
        &ev::UserMessageCreated(MessageCreated {
            message_id: message_id.to_string(),
            content: serde_json::json!([{ "type": "text", "text": text }]),
            agent_id: None,
            task_id: to,
            client,
            model: None,
            usage: None,
        }),
    )
    .map_err(|e| Error::Internal(e.to_string()))?
    .via("client"))
}

fn event<E: ev::Event>(session: &str, event: &E) -> Result<RuntimeEvent> {
    RuntimeEvent::of(session, EventSource::scheduler(), event)
        .map_err(|e| Error::Internal(format!("{} payload: {e}", E::TYPE)))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_message_addresses_a_task_by_its_first_word() {
        assert_eq!(super::addressed("@T2 use argparse"), Some("T2"));
        assert_eq!(super::addressed("  @T2: use argparse"), Some("T2"));
        assert_eq!(super::addressed("@T2, then"), Some("T2"));
        assert_eq!(super::addressed("tell @T2"), None);
        assert_eq!(super::addressed("@ T2"), None);
        assert_eq!(super::addressed("@:"), None);
    }
}
