//! `air chat`: talk to the Main Agent. `-p` (print mode, as `claude -p`) sends one
//! message, PROMPT or else all of stdin, and prints the answer on stdout (progress on
//! stderr, on a terminal only); at a terminal without `-p` the conversation opens in
//! the terminal UI; otherwise each line of stdin is one message. The conversation
//! lives in airsd: `--session ID` continues one.
//!
//! Exit codes: 0 answered (and any work it started completed), 1 the work failed, 2
//! usage error, 3 the work needs a human (blocked, cancelled, a permission denied), 4
//! the daemon could not be reached.

use std::collections::BTreeMap;
use std::io::{BufRead, IsTerminal};
use std::ops::ControlFlow;
use std::path::PathBuf;

use air_proto::api::{params, AirApiClient};
use air_proto::client::Connection;
use air_proto::conversation::{in_conversation, is_turn};
use air_proto::events as ev;
use air_proto::projection::TaskStatus;
use clap::Args;

use crate::args::{ModeArg, OnAskArg};
use crate::output::follow_events;
use crate::run_cmd::BLOCKED;
use crate::{connect, exit, rpc_failure, CmdResult, Failure};

pub const CHAT_EXIT_CODES: &str = "Exit codes:\n  0  answered, and the work it started completed\n  1  the work failed\n  2  usage error\n  3  the work needs a human: blocked, cancelled, or a permission was denied\n  4  the daemon could not be reached or started";

#[derive(Args, Debug)]
pub struct ChatArgs {
    /// The message to send. With -p and no PROMPT, the whole of stdin is the
    /// message; at a terminal without -p, the conversation opens with it sent.
    #[arg(value_name = "PROMPT")]
    pub prompt: Option<String>,
    /// Print mode: send one message (PROMPT, else stdin), print the answer on stdout
    /// and exit.
    #[arg(short = 'p', long = "print")]
    pub print: bool,
    /// Do the work at once in the foreground (each message as `/direct …`): an
    /// executor with the tools, its answer on stdout.
    #[arg(long)]
    pub direct: bool,
    /// Continue the conversation of this session: its id or the start of it
    /// (default: a new one).
    #[arg(long, short = 's', value_name = "ID")]
    pub session: Option<String>,
    /// Print the session's events as NDJSON instead of the answer.
    #[arg(long)]
    pub json: bool,
    /// What asks first: default (risky commands, and work the Main Agent hands on),
    /// accept_edits (risky commands only), plan (read-only: every write and command
    /// refused) or bypass_permissions (only what always asks; docs/tools.md).
    #[arg(long, value_enum, value_name = "MODE", conflicts_with = "session")]
    pub permission_mode: Option<ModeArg>,
    /// A permission request with nobody to ask: deny it, fail the task, or queue it
    /// for `air approve` (default deny).
    #[arg(long, value_enum, value_name = "POLICY", conflicts_with = "session")]
    pub on_ask: Option<OnAskArg>,
    /// The model every agent uses: `provider/model` or a model name.
    #[arg(long, value_name = "MODEL", conflicts_with = "session")]
    pub model: Option<String>,
    /// The provider every agent uses, with its default model unless --model names one.
    #[arg(long, value_name = "NAME", conflicts_with = "session")]
    pub provider: Option<String>,
    /// Save every provider exchange into DIR, to replay it with --replay.
    #[arg(
        long,
        value_name = "DIR",
        env = "AIR_RECORD",
        conflicts_with = "session"
    )]
    pub record: Option<PathBuf>,
    /// Answer from the recording in DIR instead of a live provider (no key needed).
    #[arg(long, value_name = "DIR", conflicts_with_all = ["session", "model", "provider"])]
    pub replay: Option<PathBuf>,
    /// Start the work the Main Agent hands on without asking (in the default
    /// permission mode it asks first; without a terminal and without --yes the work
    /// is not started).
    #[arg(long, short = 'y')]
    pub yes: bool,
}

/// What `air chat` does with its arguments and its terminal.
#[derive(Debug, PartialEq, Eq)]
enum Mode {
    /// One message, its answer on stdout.
    Print(String),
    /// Each line of stdin is a message.
    Lines,
    /// The conversation in the terminal UI, with this message sent first.
    Attach(Option<String>),
}

/// `-p` answers one message, from PROMPT or else all of stdin; at a terminal without
/// `-p`, the conversation opens in the terminal UI; otherwise a PROMPT is answered
/// once and without one each line of stdin is a message.
fn mode(args: &ChatArgs, stdin_terminal: bool, stdout_terminal: bool) -> Result<Mode, Failure> {
    match (&args.prompt, args.print) {
        (Some(p), true) => Ok(Mode::Print(p.clone())),
        (None, true) if stdin_terminal => Err(Failure {
            code: exit::USAGE,
            message: "-p: give the message, as `air chat -p \"PROMPT\"` or on stdin (`echo PROMPT | air chat -p`)".into(),
        }),
        (None, true) => {
            let mut text = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
                .map_err(|e| Failure::from(format!("cannot read the message from stdin: {e}")))?;
            if text.trim().is_empty() {
                return Err(Failure {
                    code: exit::USAGE,
                    message: "-p: stdin held no message (give it as `air chat -p \"PROMPT\"`)".into(),
                });
            }
            Ok(Mode::Print(text.trim_end().to_string()))
        }
        (prompt, false) if stdin_terminal && stdout_terminal && !args.json => {
            Ok(Mode::Attach(prompt.clone()))
        }
        (Some(p), false) => Ok(Mode::Print(p.clone())),
        (None, false) if stdin_terminal => Err(Failure {
            code: exit::USAGE,
            message: "give the message: `air chat -p \"PROMPT\"`, one message per line on stdin, or `air chat` at a terminal for the conversation".into(),
        }),
        (None, false) => Ok(Mode::Lines),
    }
}

pub async fn run(args: ChatArgs) -> CmdResult {
    let stdin = std::io::stdin();
    let mode = mode(&args, stdin.is_terminal(), crate::stdout::is_terminal())?;
    let conn = connect().await?;
    // A new session takes a `-p` prompt with its start: recorded with it, steered by
    // this connection, answered at once.
    let (session, first) = match (&args.session, &mode) {
        (Some(s), _) => (crate::session_of(&conn, Some(s.clone())).await?, None),
        (None, Mode::Print(prompt)) => {
            let info = start(&conn, &args, Some(lane(&args, prompt))).await?;
            (info.id, info.message)
        }
        (None, _) => (start(&conn, &args, None).await?.id, None),
    };
    if let Mode::Attach(first) = mode {
        if let Some(text) = first {
            send(&conn, &session, &lane(&args, &text)).await?;
        }
        drop(conn);
        return crate::attach(Some(session), None, true).await;
    }
    if mode == Mode::Lines && !args.json {
        eprintln!("air: session {session}");
    }
    // Attached to the session as a person who answers: its questions wait for us.
    if first.is_none() {
        crate::output::steer(&conn, &session, "air chat").await?;
    }
    // Confirmations are asked on the terminal only when stdin is not the messages.
    let confirm = if args.yes {
        Confirm::Yes
    } else if matches!(mode, Mode::Print(_)) && stdin.is_terminal() {
        Confirm::Ask
    } else {
        Confirm::No
    };
    // `--on-ask deny`: this client is attached, so nobody else's policy answers; it
    // refuses the agents' questions itself.
    let deny_asks = matches!(args.on_ask, Some(OnAskArg::Deny | OnAskArg::Fail));
    let mut worst = exit::OK;
    if let Some(sent) = first {
        // From the message on, as when it is sent after the start.
        let after = sent.seq.saturating_sub(1);
        worst = follow(&conn, &session, after, sent, args.json, confirm, deny_asks).await?;
    } else if let Mode::Print(prompt) = &mode {
        worst = say(
            &conn,
            &session,
            &lane(&args, prompt),
            args.json,
            confirm,
            deny_asks,
        )
        .await?;
    } else {
        for line in stdin.lock().lines() {
            let line = line.map_err(|e| Failure::from(format!("cannot read stdin: {e}")))?;
            if line.trim().is_empty() {
                continue;
            }
            worst = worst.max(
                say(
                    &conn,
                    &session,
                    &lane(&args, &line),
                    args.json,
                    confirm,
                    deny_asks,
                )
                .await?,
            );
        }
    }
    match worst {
        exit::OK => Ok(()),
        code => Err(Failure {
            code,
            message: if code == BLOCKED {
                format!("the work needs a human (`air attach -s {session}` shows it)")
            } else {
                format!("the work failed (`air attach -s {session}` shows it)")
            },
        }),
    }
}

/// Sends one message to the session's conversation; an error when it is refused.
async fn send(
    conn: &Connection,
    session: &str,
    text: &str,
) -> Result<air_proto::api::MessageSent, Failure> {
    let sent = conn
        .client
        .message_send(params::MessageSend {
            session_id: session.to_string(),
            text: text.to_string(),
            to: None,
            env: Some(air_proto::env::ClientEnv::current()),
        })
        .await
        .map_err(rpc_failure)?;
    match sent.unanswered {
        Some(why) => Err(Failure::from(why)),
        None => Ok(sent),
    }
}

/// A message as `--direct` sends it: `/direct …`, done at once in the foreground.
fn lane(args: &ChatArgs, text: &str) -> String {
    if args.direct {
        format!("/direct {text}")
    } else {
        text.to_string()
    }
}

/// Starts the conversation's session, with its first message when there is one (this
/// connection then steers it).
async fn start(
    conn: &Connection,
    args: &ChatArgs,
    message: Option<String>,
) -> Result<air_proto::api::SessionInfo, Failure> {
    let mut params = crate::args::Conversation {
        title: None,
        on_ask: args.on_ask,
        permission_mode: args.permission_mode,
        provider: args.provider.as_deref(),
        model: args.model.as_deref(),
        record: args.record.as_deref(),
        replay: args.replay.as_deref(),
    }
    .params()?;
    let plain = params.clone();
    let with_first = message.is_some();
    params.steer = message.is_some().then_some(true);
    params.message = message;
    match conn.client.conversation_start(params).await {
        // A daemon of an earlier build does not take the first message with the
        // start: it is then sent after it (the answer has no `message`).
        Err(jsonrpsee::core::client::Error::Call(e)) if with_first && from_earlier_build(&e) => {
            conn.client
                .conversation_start(plain)
                .await
                .map_err(rpc_failure)
        }
        answer => answer.map_err(rpc_failure),
    }
}

/// Whether `conversation.start` was refused for its first message by a daemon of an
/// earlier build (which knows neither `message` nor `steer`).
fn from_earlier_build(e: &jsonrpsee::types::ErrorObjectOwned) -> bool {
    e.code() == jsonrpsee::types::error::INVALID_PARAMS_CODE
        && (e.message().contains("unknown field `message`")
            || e.message().contains("unknown field `steer`"))
}

/// How work the Main Agent hands on is confirmed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Confirm {
    /// `--yes`.
    Yes,
    /// On the terminal.
    Ask,
    /// Not started: there is nobody to ask.
    No,
}

/// The user's answer to "start this task?", and why when it is no.
fn confirmation(how: Confirm, action: &str) -> (bool, Option<String>) {
    match how {
        Confirm::Yes => (true, Some("--yes".into())),
        Confirm::No => (
            false,
            Some("there was no terminal to confirm it on (air chat --yes starts such work without asking)".into()),
        ),
        Confirm::Ask => {
            eprint!("air: {action}? [y/N] ");
            let mut line = String::new();
            let yes = std::io::stdin().read_line(&mut line).is_ok()
                && matches!(line.trim(), "y" | "Y" | "yes");
            (yes, (!yes).then(|| "the user declined it".into()))
        }
    }
}

/// What one message set going, as its events tell it.
#[derive(Default)]
struct Exchange {
    /// The last text each turn wrote, by turn, in the order the turns began.
    answers: Vec<(String, String)>,
    /// The tasks of the task graph created since the message, and how they stand.
    work: BTreeMap<String, TaskStatus>,
    /// The conversation's own tasks (turns, the direct lane) that ended unanswered,
    /// with why.
    unanswered: Vec<(String, TaskStatus, String)>,
}

impl Exchange {
    fn event(&mut self, event: &air_proto::event::RuntimeEvent, progress: bool) {
        let task = event.payload.get("task_id").and_then(|t| t.as_str());
        match event.event_type.as_str() {
            ev::AssistantMessageCreated::TYPE => {
                let Some(turn) = task.filter(|t| in_conversation(t)) else {
                    return;
                };
                let text = event
                    .payload
                    .get("content")
                    .map(air_proto::message::text_of)
                    .unwrap_or_default();
                if text.trim().is_empty() {
                    return;
                }
                match self.answers.iter_mut().find(|(t, _)| t == turn) {
                    Some((_, said)) => *said = text,
                    None => self.answers.push((turn.to_string(), text)),
                }
            }
            ev::TaskCreated::TYPE => {
                let id = event.payload["task"]["id"].as_str().unwrap_or_default();
                if !id.is_empty() && !is_turn(id) {
                    self.work.insert(id.to_string(), TaskStatus::Pending);
                    if progress {
                        let title = event.payload["task"]["title"].as_str().unwrap_or_default();
                        eprintln!("air: task {id} — {title}");
                    }
                }
            }
            ev::ToolStarted::TYPE if progress => {
                let tool = event
                    .payload
                    .get("tool")
                    .and_then(|t| t.as_str())
                    .unwrap_or("?");
                eprintln!("  {} · {tool}", task.unwrap_or("?"));
            }
            ty => {
                let (Some(status), Some(id)) = (TaskStatus::from_event_type(ty), task) else {
                    return;
                };
                if in_conversation(id)
                    && matches!(
                        status,
                        TaskStatus::Failed | TaskStatus::Blocked | TaskStatus::Cancelled
                    )
                {
                    let why = event.payload["reason"]
                        .as_str()
                        .unwrap_or("no reason given");
                    self.unanswered
                        .push((id.to_string(), status, why.to_string()));
                }
                if let Some(s) = self.work.get_mut(id) {
                    *s = status;
                    if progress {
                        eprintln!("air: task {id} {}", status.as_str());
                    }
                }
            }
        }
    }

    /// The exit code of what the message started.
    fn code(&self) -> u8 {
        let any = |s: TaskStatus| {
            self.work.values().any(|w| *w == s) || self.unanswered.iter().any(|u| u.1 == s)
        };
        if any(TaskStatus::Failed) {
            exit::FAILED
        } else if any(TaskStatus::Blocked) || any(TaskStatus::Cancelled) {
            BLOCKED
        } else {
            exit::OK
        }
    }
}

/// Sends one message and follows what it starts until the session's run is idle
/// again, answering the confirmations it asks for as `confirm` says; prints the
/// answers (or, with `json`, every event). Returns the exit code of the work.
async fn say(
    conn: &Connection,
    session: &str,
    text: &str,
    json: bool,
    confirm: Confirm,
    deny_asks: bool,
) -> Result<u8, Failure> {
    let after = conn
        .client
        .session_snapshot(params::Session {
            session_id: session.to_string(),
        })
        .await
        .map_err(rpc_failure)?
        .seq;
    let sent = send(conn, session, text).await?;
    follow(conn, session, after, sent, json, confirm, deny_asks).await
}

/// Follows what a sent message started, from the session's events after `after`, as
/// [`say`] does.
async fn follow(
    conn: &Connection,
    session: &str,
    after: u64,
    sent: air_proto::api::MessageSent,
    json: bool,
    confirm: Confirm,
    deny_asks: bool,
) -> Result<u8, Failure> {
    let progress = !json && std::io::stderr().is_terminal();
    let mut exchange = Exchange::default();
    let mut cursor = after;
    let mut waits = None;
    loop {
        let mut asked: Option<(String, String, bool)> = None;
        let mut done = false;
        cursor = follow_events(conn, session, cursor, |seq, event| {
            if json {
                outln!("{}", serde_json::to_string(event)?);
            }
            exchange.event(event, progress);
            // The Architecture Designer waits for the user: the next message answers.
            if let Some(w) = planning_wait(event).filter(|_| seq > sent.seq) {
                waits = Some(w);
                return Ok(ControlFlow::Break(()));
            }
            let starts =
                event.payload["tool"].as_str() == Some(air_proto::conversation::TASK_START);
            if event.event_type == ev::PermissionRequested::TYPE && (starts || deny_asks) {
                let id = event.payload["request_id"].as_str().unwrap_or_default();
                let action = event.payload["action"].as_str().unwrap_or_default();
                asked = Some((id.to_string(), action.to_string(), starts));
                return Ok(ControlFlow::Break(()));
            }
            done = seq > sent.seq && event.event_type == ev::RunCompleted::TYPE;
            Ok(if done {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            })
        })
        .await?;
        if done || waits.is_some() {
            break;
        }
        let Some((request_id, action, starts)) = asked else {
            break;
        };
        let (allow, reason) = if starts {
            confirmation(confirm, &action)
        } else {
            (
                false,
                Some("nobody to ask: `air chat --on-ask deny` refuses what asks".into()),
            )
        };
        if starts && !allow && confirm == Confirm::No {
            eprintln!("air: not started: {action} (in the default permission mode it needs a confirmation: --yes, or answer in `air attach -s {session}`)");
        }
        // Answered first by someone else (another terminal): that answer stands.
        let _ = conn
            .client
            .permission_respond(params::PermissionRespond {
                session_id: session.to_string(),
                request_id,
                decision: if allow {
                    air_proto::payload::PermissionDecision::Allow
                } else {
                    air_proto::payload::PermissionDecision::Deny
                },
                reason,
            })
            .await;
    }
    if !json {
        let answers: Vec<&str> = exchange.answers.iter().map(|(_, a)| a.trim()).collect();
        outln!("{}", answers.join("\n\n"));
        for (task, status, why) in &exchange.unanswered {
            eprintln!("air: {task} {}: {why}", status.as_str());
        }
        if let Some(w) = &waits {
            outln!("{w}");
            eprintln!("air: the Architecture Designer waits for your answer: say it in the next message (`air chat -s {session} -p \"…\"`, or `air attach -s {session}`)");
        }
    }
    Ok(exchange.code())
}

/// What a planning event asks of the user, as text, when it asks something.
pub(crate) fn planning_wait(event: &air_proto::event::RuntimeEvent) -> Option<String> {
    use crate::plan_new::de;
    use air_proto::payload as p;
    match event.event_type.as_str() {
        ev::QuestionsAsked::TYPE => {
            let pl: p::QuestionsAsked = de(&event.payload)?;
            Some(
                pl.questions
                    .iter()
                    .map(|q| format!("[{}] {}", q.id, q.text))
                    .collect::<Vec<_>>()
                    .join("\n"),
            )
        }
        ev::RequirementsSettled::TYPE => {
            let pl = de::<p::RequirementsSettled>(&event.payload).filter(|pl| !pl.user_agreed)?;
            Some(format!(
                "The requirements, as the designer states them (agree, or say what to change):\n{}",
                pl.requirements
                    .iter()
                    .map(|r| format!("  - {r}"))
                    .collect::<Vec<_>>()
                    .join("\n")
            ))
        }
        ev::PlanProposed::TYPE => {
            let pl: p::PlanProposed = de(&event.payload)?;
            Some(crate::plan_new::shown(&pl))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    /// The refusal of a daemon that does not know the first message's fields is told
    /// from other refusals: the params check's own words for a field a struct lacks.
    #[test]
    fn a_daemon_of_an_earlier_build_is_told_by_its_refusal() {
        use jsonrpsee::types::error::INVALID_PARAMS_CODE;
        use jsonrpsee::types::ErrorObjectOwned;
        let said = air_proto::api::params::decode::<air_proto::api::params::SessionCreate>(
            "session.create",
            Some(r#"{"message": "hi"}"#),
        )
        .unwrap_err();
        let refused = |m: &str| ErrorObjectOwned::owned(INVALID_PARAMS_CODE, m, None::<()>);
        assert!(super::from_earlier_build(&refused(&said)), "{said}");
        assert!(!super::from_earlier_build(&refused(
            "conversation.start: `message` must not be empty"
        )));
        assert!(!super::from_earlier_build(&ErrorObjectOwned::owned(
            -32004,
            said.as_str(),
            None::<()>
        )));
    }

    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Chat {
        #[command(flatten)]
        args: ChatArgs,
    }

    fn args(line: &[&str]) -> ChatArgs {
        Chat::try_parse_from([&["chat"], line].concat())
            .map_err(|e| e.to_string())
            .unwrap()
            .args
    }

    #[test]
    fn print_is_a_flag_and_the_prompt_is_the_argument() {
        // As `claude -p` takes them, flags on either side of the prompt.
        for line in [
            &["-p", "--direct", "fix it"][..],
            &["-p", "fix it", "--direct"],
            &["--direct", "fix it", "--print"],
        ] {
            let a = args(line);
            assert!(a.direct, "{line:?}");
            assert_eq!(
                mode(&a, true, true).ok(),
                Some(Mode::Print("fix it".into()))
            );
        }
        // At a terminal, without -p: the conversation, with the prompt sent first.
        assert_eq!(
            mode(&args(&["hello"]), true, true).ok(),
            Some(Mode::Attach(Some("hello".into())))
        );
        assert_eq!(mode(&args(&[]), true, true).ok(), Some(Mode::Attach(None)));
        // Output to a pipe: the answer, printed.
        assert_eq!(
            mode(&args(&["hello"]), true, false).ok(),
            Some(Mode::Print("hello".into()))
        );
        // Messages on a pipe, one per line.
        assert_eq!(mode(&args(&[]), false, false).ok(), Some(Mode::Lines));
        // -p at a terminal with no message says how to give one.
        let e = mode(&args(&["-p"]), true, true).err().unwrap();
        assert_eq!(e.code, exit::USAGE);
        assert!(e.message.contains("air chat -p"), "{}", e.message);
    }
}
