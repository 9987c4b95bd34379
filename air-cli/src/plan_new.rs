//! `air plan new "REQUIREMENT"`: planning from a requirement in a plain terminal or a
//! pipe. The Architecture Designer's questions are printed and answered from
//! `--answers FILE` (YAML, by question id) or from stdin; the requirements it states
//! and the plan it proposes are shown and answered the same way (`--yes` agrees and
//! confirms). airsd writes the confirmed plan under `.air/shared/plan/`; `--out FILE`
//! copies it there without running it, otherwise the run is followed to its end.
//!
//! Exit codes: 0 planned (and run, when it ran, completed), 1 the run failed, 2 usage
//! error, 3 a question or a confirmation went unanswered (never guessed), or the run
//! needs a human, 4 the daemon could not be reached.

use std::collections::BTreeMap;
use std::io::{BufRead, IsTerminal};
use std::ops::ControlFlow;
use std::path::PathBuf;

use air_proto::api::{params, AirApiClient};
use air_proto::client::Connection;
use air_proto::events as ev;
use air_proto::payload as p;
use air_proto::planning::{PlanDecision, Proposal};
use clap::Args;

use crate::args::{absolute, usage, ModeArg, OnAskArg};
use crate::output::follow_events;
use crate::run_cmd::BLOCKED;
use crate::{connect, exit, rpc_failure, CmdResult, Failure};

pub const PLAN_NEW_EXIT_CODES: &str = "Exit codes:\n  0  planned (and, when it ran, the run completed)\n  1  the run failed\n  2  usage error\n  3  a question or a confirmation went unanswered, or the run needs a human\n  4  the daemon could not be reached or started";

#[derive(Args, Debug)]
pub struct PlanNewArgs {
    /// What to build, in your words.
    pub requirement: String,
    /// Answers to the designer's questions: YAML, question id to answer
    /// (`storage: sqlite`).
    #[arg(long, value_name = "FILE")]
    pub answers: Option<PathBuf>,
    /// Agree to the stated requirements, confirm the proposal and start the run
    /// without asking; a question with no answer still stops the command (exit 3).
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Write the confirmed plan to FILE (as well as `.air/shared/plan/plan.md`) and
    /// do not run it.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// What asks first: default (risky commands, and work the Main Agent hands on),
    /// accept_edits (risky commands only), plan (read-only: every write and command
    /// refused) or bypass_permissions (only what always asks; docs/tools.md).
    #[arg(long, value_enum, value_name = "MODE")]
    pub permission_mode: Option<ModeArg>,
    /// A permission request with nobody to ask: deny it, fail the task, or queue it.
    #[arg(long, value_enum, value_name = "POLICY")]
    pub on_ask: Option<OnAskArg>,
    /// The model every agent uses: `provider/model` or a model name.
    #[arg(long, value_name = "MODEL")]
    pub model: Option<String>,
    /// The provider every agent uses, with its default model unless --model names one.
    #[arg(long, value_name = "NAME")]
    pub provider: Option<String>,
    /// Save every provider exchange into DIR, to replay it with --replay.
    #[arg(long, value_name = "DIR", env = "AIR_RECORD")]
    pub record: Option<PathBuf>,
    /// Answer from the recording in DIR instead of a live provider (no key needed).
    #[arg(long, value_name = "DIR", conflicts_with_all = ["model", "provider"])]
    pub replay: Option<PathBuf>,
}

/// What the session waits for, as its events tell it.
enum Wait {
    Asked(p::QuestionsAsked),
    Settled(p::RequirementsSettled),
    Proposed(Box<p::PlanProposed>),
    /// `task.start` for the confirmed plan: the request id and what it asks.
    Start(String, String),
    Ended(p::RunCompleted),
}

/// Lines of stdin, read as they are needed (none on a terminal with --yes).
struct Input {
    lines: Option<std::io::Lines<std::io::StdinLock<'static>>>,
    terminal: bool,
}

impl Input {
    fn new(yes: bool) -> Input {
        let stdin = std::io::stdin();
        let terminal = stdin.is_terminal();
        Input {
            lines: (!yes).then(|| stdin.lock().lines()),
            terminal,
        }
    }

    /// The next line after showing `prompt` (on a terminal), or `None` at the end.
    fn ask(&mut self, prompt: &str) -> Option<String> {
        let lines = self.lines.as_mut()?;
        if self.terminal {
            eprint!("{prompt} ");
        }
        match lines.next() {
            Some(Ok(line)) => Some(line.trim().to_string()),
            _ => {
                self.lines = None;
                None
            }
        }
    }
}

pub async fn run(args: PlanNewArgs) -> CmdResult {
    if args.requirement.trim().is_empty() {
        return Err(usage("the requirement is empty: say what to build".into()));
    }
    let mut file_answers = BTreeMap::new();
    if let Some(path) = &args.answers {
        let shown = path.display().to_string();
        let text =
            std::fs::read_to_string(path).map_err(|e| usage(format!("--answers {shown}: {e}")))?;
        file_answers = air_proto::planning::answers_from_yaml(&shown, &text).map_err(usage)?;
    }
    let out = args.out.as_deref().map(absolute).transpose()?;
    let conn = connect().await?;
    let session = conn
        .client
        .conversation_start(
            crate::args::Conversation {
                title: Some(format!("plan: {}", args.requirement.trim())),
                on_ask: args.on_ask,
                permission_mode: args.permission_mode,
                provider: args.provider.as_deref(),
                model: args.model.as_deref(),
                record: args.record.as_deref(),
                replay: args.replay.as_deref(),
            }
            .params()?,
        )
        .await
        .map_err(rpc_failure)?
        .id;
    eprintln!("air: session {session}");
    // Attached as the person who answers: the designer's questions wait for us.
    crate::output::steer(&conn, &session, "air plan new").await?;
    conn.client
        .message_send(params::MessageSend {
            session_id: session.clone(),
            text: format!("/plan {}", args.requirement.trim()),
            to: None,
            env: Some(air_proto::env::ClientEnv::current()),
        })
        .await
        .map_err(rpc_failure)?;
    let mut input = Input::new(args.yes);
    let mut flow = Flow {
        conn: &conn,
        session: &session,
        ended: None,
        said: String::new(),
        summary: String::new(),
    };
    let outcome = flow
        .plan(&args, &file_answers, &mut input, out.as_deref())
        .await;
    if let Err(f) = &outcome {
        if f.code == BLOCKED {
            // Nothing waits for an answer that will not come.
            let _ = conn
                .client
                .run_cancel(params::RunCancel {
                    session_id: session.clone(),
                    task_id: None,
                    reason: Some(format!("air plan new: {}", f.message)),
                })
                .await;
        }
    }
    outcome
}

struct Flow<'a> {
    conn: &'a Connection,
    session: &'a str,
    /// How the designer's latest turn ended, when not with an answer.
    ended: Option<(String, air_proto::projection::TaskStatus, String)>,
    /// The designer's latest words.
    said: String,
    /// The Main Agent's latest words (its summary of the run).
    summary: String,
}

fn unanswered(what: String) -> Failure {
    Failure {
        code: BLOCKED,
        message: format!(
            "{what} (air plan new never guesses: give it in --answers FILE or on stdin)"
        ),
    }
}

impl Flow<'_> {
    async fn plan(
        &mut self,
        args: &PlanNewArgs,
        file: &BTreeMap<String, String>,
        input: &mut Input,
        out: Option<&str>,
    ) -> CmdResult {
        let mut cursor = 0;
        let mut words = 0;
        loop {
            let (next, wait) = self.next(cursor).await?;
            cursor = next;
            match wait {
                Wait::Asked(a) if a.questions.is_empty() => {
                    // The designer's turn ended without an answer (its model could
                    // not be reached, it crashed): said, not retried in a loop.
                    if let Some((turn, status, why)) =
                        self.ended.take().filter(|e| e.0 == a.task_id)
                    {
                        return Err(Failure {
                            code: if status == air_proto::projection::TaskStatus::Failed {
                                exit::FAILED
                            } else {
                                BLOCKED
                            },
                            message: format!(
                                "the Architecture Designer's turn {turn} ended {}: {why}",
                                status.as_str()
                            ),
                        });
                    }
                    outln!("{}", self.said.trim());
                    if args.yes {
                        // Words again after going ahead: the designer is not getting
                        // on, and --yes has nothing more to say.
                        words += 1;
                        if words > 2 {
                            return Err(unanswered(format!(
                                "{} keeps answering in words instead of asking or proposing",
                                a.task_id
                            )));
                        }
                        self.answer(&a.task_id, BTreeMap::new(), None, true).await?;
                        continue;
                    }
                    let Some(line) = input.ask("air: your answer:").filter(|l| !l.is_empty())
                    else {
                        return Err(unanswered(format!("{} waits for your answer", a.task_id)));
                    };
                    self.answer(&a.task_id, BTreeMap::new(), Some(line), false)
                        .await?;
                }
                Wait::Asked(a) => {
                    if !self.said.trim().is_empty() {
                        outln!("{}", self.said.trim());
                    }
                    let mut answers = BTreeMap::new();
                    for q in &a.questions {
                        let options = if q.options.is_empty() {
                            String::new()
                        } else {
                            format!(" ({})", q.options.join(" / "))
                        };
                        outln!("[{}] {}{options}", q.id, q.text);
                        let given = file
                            .get(&q.id)
                            .filter(|v| !v.trim().is_empty())
                            .cloned()
                            .or_else(|| input.ask(&format!("air: [{}]", q.id)))
                            .filter(|v| !v.is_empty());
                        match given {
                            Some(v) => {
                                outln!("  → {v}");
                                answers.insert(q.id.clone(), v);
                            }
                            None => {
                                return Err(unanswered(format!(
                                    "question `{}` was not answered: {}",
                                    q.id, q.text
                                )))
                            }
                        }
                    }
                    self.answer(&a.task_id, answers, None, false).await?;
                }
                Wait::Settled(s) => {
                    outln!("The requirements, as the designer states them:");
                    for r in &s.requirements {
                        outln!("  - {r}");
                    }
                    if args.yes {
                        self.answer(&s.task_id, BTreeMap::new(), None, true).await?;
                        continue;
                    }
                    let Some(line) = input.ask("air: agree? [Y/n, or say what to change]") else {
                        return Err(unanswered(
                            "the stated requirements were not agreed to".into(),
                        ));
                    };
                    match line.as_str() {
                        "" | "y" | "Y" | "yes" => {
                            self.answer(&s.task_id, BTreeMap::new(), None, true).await?
                        }
                        "n" | "N" | "no" => {
                            let Some(what) = input.ask("air: what should change?") else {
                                return Err(unanswered("what should change was not said".into()));
                            };
                            self.answer(&s.task_id, BTreeMap::new(), Some(what), false)
                                .await?
                        }
                        _ => {
                            self.answer(&s.task_id, BTreeMap::new(), Some(line), false)
                                .await?
                        }
                    }
                }
                Wait::Proposed(pl) => {
                    out!("{}", shown(&pl));
                    let (decision, note) = if args.yes {
                        (PlanDecision::Confirm, None)
                    } else {
                        match input.ask("air: [c]onfirm, [r]eject, or say what to change:") {
                            None => {
                                return Err(unanswered("the proposal was not confirmed".into()))
                            }
                            Some(l) if matches!(l.as_str(), "" | "c" | "confirm" | "y" | "yes") => {
                                (PlanDecision::Confirm, None)
                            }
                            Some(l) if matches!(l.as_str(), "r" | "reject") => (
                                PlanDecision::Reject,
                                input.ask("air: why not?").filter(|w| !w.is_empty()),
                            ),
                            Some(l) => (PlanDecision::Change, Some(l)),
                        }
                    };
                    self.conn
                        .client
                        .planning_decide(params::PlanningDecide {
                            session_id: self.session.to_string(),
                            task_id: Some(pl.task_id.clone()),
                            decision,
                            note,
                            run: Some(out.is_none()),
                        })
                        .await
                        .map_err(rpc_failure)?;
                    if decision == PlanDecision::Confirm {
                        self.written(out).await?;
                        if out.is_some() {
                            return Ok(());
                        }
                    }
                }
                Wait::Start(request_id, action) => {
                    let yes = args.yes
                        || input
                            .ask(&format!("air: {action}? [y/N]"))
                            .is_some_and(|l| matches!(l.as_str(), "y" | "Y" | "yes"));
                    let _ = self
                        .conn
                        .client
                        .permission_respond(params::PermissionRespond {
                            session_id: self.session.to_string(),
                            request_id,
                            decision: if yes {
                                p::PermissionDecision::Allow
                            } else {
                                p::PermissionDecision::Deny
                            },
                            reason: Some(if args.yes {
                                "--yes".into()
                            } else if yes {
                                "confirmed on the terminal".into()
                            } else {
                                "not confirmed (air plan new --yes starts it without asking)".into()
                            }),
                        })
                        .await;
                }
                Wait::Ended(end) => {
                    if !self.summary.trim().is_empty() {
                        outln!("{}", self.summary.trim());
                    }
                    return match end.outcome {
                        p::RunOutcome::Completed => Ok(()),
                        p::RunOutcome::Failed => Err(Failure {
                            code: exit::FAILED,
                            message: format!(
                                "the run failed (`air attach -s {}` shows it)",
                                self.session
                            ),
                        }),
                        _ => {
                            let cause = self.first_stop().await;
                            Err(Failure {
                                code: BLOCKED,
                                message: format!(
                                    "the run ended {} ({}; `air attach -s {}` shows it)",
                                    end.outcome.as_str(),
                                    end.reason
                                        .or(cause)
                                        .unwrap_or_else(|| "no reason given".into()),
                                    self.session
                                ),
                            })
                        }
                    };
                }
            }
        }
    }

    /// The run's end as `air run` prints it, then the cause of a run that did not
    /// complete: the task that stopped first (those after it wait on it).
    async fn first_stop(&self) -> Option<String> {
        use air_proto::api::AirApiClient as _;
        use air_proto::projection::TaskStatus as S;
        let snapshot = self
            .conn
            .client
            .session_snapshot(air_proto::api::params::Session {
                session_id: self.session.to_string(),
            })
            .await
            .ok()?;
        let report = air_proto::report::RunReport::from_projection(&snapshot.projection)?;
        crate::output::print_summary(&report);
        report
            .tasks
            .iter()
            .filter(|t| matches!(t.status, S::Failed | S::Blocked) && t.reason.is_some())
            .min_by(|a, b| a.updated_at.cmp(&b.updated_at))
            .map(|t| {
                let why = t.reason.as_deref().unwrap_or_default();
                format!(
                    "{} {}: {}",
                    t.id,
                    t.status.as_str(),
                    why.lines().next().unwrap_or_default()
                )
            })
    }

    /// Follows the session's events from `cursor` until it waits for the user or its
    /// run ends.
    async fn next(&mut self, cursor: u64) -> Result<(u64, Wait), Failure> {
        let mut wait = None;
        let (said, summary, ended) = (&mut self.said, &mut self.summary, &mut self.ended);
        let progress = std::io::stderr().is_terminal();
        let cursor = follow_events(self.conn, self.session, cursor, |_, e| {
            let pl = &e.payload;
            let task = pl.get("task_id").and_then(|t| t.as_str()).unwrap_or("");
            wait = match e.event_type.as_str() {
                ev::QuestionsAsked::TYPE => de(pl).map(Wait::Asked),
                // Agreed in the user's words: nothing waits.
                ev::RequirementsSettled::TYPE => de::<p::RequirementsSettled>(pl)
                    .filter(|s| !s.user_agreed)
                    .map(Wait::Settled),
                ev::PlanProposed::TYPE => de(pl).map(|x| Wait::Proposed(Box::new(x))),
                ev::PermissionRequested::TYPE
                    if pl["tool"].as_str() == Some(air_proto::conversation::TASK_START) =>
                {
                    Some(Wait::Start(
                        pl["request_id"].as_str().unwrap_or_default().to_string(),
                        pl["action"].as_str().unwrap_or_default().to_string(),
                    ))
                }
                ev::RunCompleted::TYPE => de(pl).map(Wait::Ended),
                // A planning turn that ended without an answer (its model could not
                // be reached): said before the wait for words it leads to.
                ev::AgentCompleted::TYPE => {
                    let result = &pl["result"];
                    let turn = result["task_id"].as_str().unwrap_or_default();
                    let status = match result["status"].as_str() {
                        Some("failed") => Some(air_proto::projection::TaskStatus::Failed),
                        Some("blocked") => Some(air_proto::projection::TaskStatus::Blocked),
                        _ => None,
                    };
                    if let Some(status) = status.filter(|_| air_proto::planning::is_planning(turn))
                    {
                        let why = result["summary"].as_str().unwrap_or("no reason given");
                        *ended = Some((turn.to_string(), status, why.to_string()));
                    }
                    None
                }
                ev::AssistantMessageCreated::TYPE => {
                    let text = pl
                        .get("content")
                        .map(air_proto::message::text_of)
                        .unwrap_or_default();
                    if !text.trim().is_empty() {
                        if air_proto::planning::is_planning(task) {
                            *said = text;
                        } else if air_proto::conversation::is_turn(task) {
                            *summary = text;
                        }
                    }
                    None
                }
                ev::TaskCreated::TYPE if progress => {
                    let id = pl["task"]["id"].as_str().unwrap_or_default();
                    if !air_proto::conversation::in_conversation(id) {
                        eprintln!(
                            "air: task {id} — {}",
                            pl["task"]["title"].as_str().unwrap_or_default()
                        );
                    }
                    None
                }
                ty => {
                    if let Some(status) = air_proto::projection::TaskStatus::from_event_type(ty) {
                        use air_proto::projection::TaskStatus as S;
                        if air_proto::planning::is_planning(task)
                            && matches!(status, S::Failed | S::Blocked | S::Cancelled)
                        {
                            let why = pl["reason"].as_str().unwrap_or("no reason given");
                            *ended = Some((task.to_string(), status, why.to_string()));
                        }
                        if progress
                            && status.is_terminal()
                            && !air_proto::conversation::in_conversation(task)
                        {
                            eprintln!("air: task {task} {}", status.as_str());
                        }
                    }
                    None
                }
            };
            Ok(if wait.is_some() {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            })
        })
        .await?;
        match wait {
            Some(w) => Ok((cursor, w)),
            None => Err(Failure::from(format!(
                "session {}'s events ended before the planning did",
                self.session
            ))),
        }
    }

    async fn answer(
        &self,
        turn: &str,
        answers: BTreeMap<String, String>,
        note: Option<String>,
        go_ahead: bool,
    ) -> CmdResult {
        self.conn
            .client
            .planning_answer(params::PlanningAnswer {
                session_id: self.session.to_string(),
                task_id: Some(turn.to_string()),
                answers: Some(answers),
                note,
                go_ahead: Some(go_ahead),
            })
            .await
            .map_err(rpc_failure)?;
        Ok(())
    }

    /// Waits for airsd to write the confirmed plan; copies it to `out`.
    async fn written(&mut self, out: Option<&str>) -> CmdResult {
        let mut written: Option<p::PlanConfirmed> = None;
        follow_events(self.conn, self.session, 0, |_, e| {
            if e.event_type == ev::PlanConfirmed::TYPE {
                written = serde_json::from_value(e.payload.clone()).ok();
            }
            Ok(
                if written.as_ref().is_some_and(|w| w.error.is_none())
                    || e.event_type == ev::RunCompleted::TYPE
                {
                    ControlFlow::Break(())
                } else {
                    ControlFlow::Continue(())
                },
            )
        })
        .await?;
        let Some(w) = written.filter(|w| w.error.is_none()) else {
            return Ok(());
        };
        eprintln!("air: the plan is written: {}", w.files.join(", "));
        if let Some(out) = out {
            let root = crate::project()?;
            let plan = root.root().join(".air/shared/plan/plan.md");
            std::fs::copy(&plan, out)
                .map_err(|e| Failure::from(format!("cannot write {out}: {e}")))?;
            eprintln!("air: and to {out} (not run: `air run --plan {out}` runs it)");
        }
        Ok(())
    }
}

pub(crate) fn de<T: serde::de::DeserializeOwned>(v: &serde_json::Value) -> Option<T> {
    serde_json::from_value(v.clone()).ok()
}

/// A proposal as the user reads it: the architecture, the decisions, the graph in
/// waves with each task's scope and evidence.
pub fn shown(pl: &p::PlanProposed) -> String {
    use std::fmt::Write as _;
    let Proposal {
        summary,
        modules,
        decisions,
        ..
    } = &pl.proposal;
    let mut s = format!("\nThe proposal ({}):\n\n{}\n", pl.task_id, summary.trim());
    if !modules.is_empty() {
        s.push_str("\nModules:\n");
        for m in modules {
            let _ = writeln!(s, "  - {}: {}", m.name, m.responsibility);
        }
    }
    if !decisions.is_empty() {
        s.push_str("\nDecisions (each an ADR once confirmed):\n");
        for d in decisions {
            let _ = writeln!(s, "  - {}: {}", d.title, d.decision);
        }
    }
    match air_proto::planning::check_proposal(&pl.proposal) {
        Ok(compiled) => {
            s.push('\n');
            s.push_str(&air_proto::plan::graph::text(
                &compiled.graph,
                &Default::default(),
            ));
            for t in &compiled.graph.tasks {
                let files = t.scope.expected_files.clone().unwrap_or_default();
                let evidence: Vec<&str> = t
                    .verification
                    .evidence_types
                    .iter()
                    .flatten()
                    .map(|e| e.as_str())
                    .collect();
                let _ = writeln!(
                    s,
                    "  {}: files {}; evidence {}",
                    t.id,
                    if files.is_empty() {
                        "—".into()
                    } else {
                        files.join(", ")
                    },
                    if evidence.is_empty() {
                        "—".into()
                    } else {
                        evidence.join(", ")
                    }
                );
            }
        }
        Err(e) => {
            let _ = writeln!(s, "\n(the plan does not compile here: {})", e.join("; "));
        }
    }
    s.push('\n');
    s
}
