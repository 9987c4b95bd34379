//! The attached terminal: connect (starting the daemon if needed), pick the session,
//! take its snapshot, follow its deltas, draw, and turn keys into API calls. A lost
//! connection is said on screen and retried; the state restarts from a fresh snapshot
//! with the user's place kept. Detaching stops nothing. The terminal is restored on
//! every way out: detach, error, SIGTERM, panic.

use air_proto::client::said;
use std::io::Write as _;
use std::path::PathBuf;
use std::time::Duration;

use crate::pointer::Pointer as _;
use air_proto::api::{params, AirApiClient, ClientMode, SessionUpdate};
use air_proto::client::{ConnectOptions, Connection};
use air_proto::payload::PermissionDecision;
use jsonrpsee::core::client::Subscription;
use ratatui::backend::CrosstermBackend;
use ratatui::crossterm::event::{
    self, DisableBracketedPaste, DisableMouseCapture, EnableBracketedPaste, EnableMouseCapture,
    Event, KeyCode, KeyEventKind, KeyModifiers, MouseButton, MouseEventKind,
};
use ratatui::crossterm::execute;
use ratatui::crossterm::terminal::{
    disable_raw_mode, enable_raw_mode, EnterAlternateScreen, LeaveAlternateScreen,
};
use ratatui::Terminal;
use tokio::sync::mpsc;

use crate::app::{App, Command, Key, Link, Mouse, Picked, Picker, PickerRow};
use crate::theme::{Palette, Theme};

/// The `ui_state` key the TUI keeps its place under.
const UI_KEY: &str = "attach";

/// Stored events put in the log at attach.
const HISTORY: u64 = 500;

/// How `air attach` was asked to run.
pub struct Options {
    pub connect: ConnectOptions,
    /// The session to attach to; default: the newest with a run going, else the
    /// newest.
    pub session: Option<String>,
    /// A theme name (built in, or `~/.air/themes/NAME.json`); default: `attach.theme`
    /// in `~/.air/config.yaml`, else dark.
    pub theme: Option<String>,
    pub air_home: Option<PathBuf>,
    /// Open on the conversation, its input box focused.
    pub chat: bool,
    /// No model answers (why): the first-run screen comes first, with how to set
    /// one, the sessions and these examples.
    pub no_model: Option<(String, Vec<crate::app::ExampleRow>)>,
}

/// How `attach` ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Attached {
    /// Detached from this session.
    Session(String),
    /// The first-run screen chose to watch this shipped example.
    Example(PathBuf),
}

/// Puts the terminal back as it was (raw mode off, main screen) when dropped.
struct Screen;

impl Screen {
    fn enter(mouse: bool) -> std::io::Result<Screen> {
        enable_raw_mode()?;
        // A paste arrives whole, not as keys (an Enter in it does not send it).
        execute!(
            std::io::stdout(),
            EnterAlternateScreen,
            EnableBracketedPaste
        )?;
        if mouse {
            execute!(std::io::stdout(), EnableMouseCapture)?;
        }
        Ok(Screen)
    }
}

fn restore() {
    let _ = disable_raw_mode();
    let _ = execute!(
        std::io::stdout(),
        DisableBracketedPaste,
        DisableMouseCapture,
        LeaveAlternateScreen
    );
    let _ = std::io::stdout().flush();
}

impl Drop for Screen {
    fn drop(&mut self) {
        restore();
    }
}

fn key_of(e: &event::KeyEvent) -> Option<Key> {
    if e.kind == KeyEventKind::Release {
        return None;
    }
    Some(match e.code {
        KeyCode::Char(c) if e.modifiers.contains(KeyModifiers::CONTROL) => Key::Ctrl(c),
        KeyCode::Char(c) => Key::Char(c),
        KeyCode::Up => Key::Up,
        KeyCode::Down => Key::Down,
        KeyCode::PageUp => Key::PageUp,
        KeyCode::PageDown => Key::PageDown,
        KeyCode::Home => Key::Home,
        KeyCode::End => Key::End,
        KeyCode::Tab => Key::Tab,
        KeyCode::Enter => Key::Enter,
        KeyCode::Esc => Key::Esc,
        KeyCode::Backspace => Key::Backspace,
        _ => return None,
    })
}

/// What the terminal sends.
enum Input {
    Key(Key),
    Mouse(Mouse),
    Paste(String),
    Resize,
}

/// Stops and restarts the input thread, so that a program run in this terminal
/// (`$EDITOR`) gets every key typed into it.
#[derive(Clone, Default)]
struct InputGate {
    /// Asked to stop reading.
    hold: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// The reader has stopped.
    parked: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl InputGate {
    /// Stops the reader (waits until it has, at most half a second).
    fn stop(&self) {
        use std::sync::atomic::Ordering;
        self.hold.store(true, Ordering::SeqCst);
        let end = std::time::Instant::now() + Duration::from_millis(500);
        while !self.parked.load(Ordering::SeqCst) && std::time::Instant::now() < end {
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    fn go(&self) {
        self.hold.store(false, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Reads the terminal on its own thread (crossterm's reads block); parks while the
/// gate holds it.
fn read_input(tx: mpsc::Sender<Input>, gate: InputGate) {
    use std::sync::atomic::Ordering;
    loop {
        if gate.hold.load(Ordering::SeqCst) {
            gate.parked.store(true, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(10));
            continue;
        }
        gate.parked.store(false, Ordering::SeqCst);
        match event::poll(Duration::from_millis(50)) {
            Ok(true) => {}
            Ok(false) if tx.is_closed() => return,
            Ok(false) => continue,
            Err(_) => return,
        }
        // This terminal UI has ended: the key is left for the next reader (the TUI
        // the first-run screen opens after it).
        if tx.is_closed() {
            return;
        }
        let input = match event::read() {
            Ok(Event::Key(k)) => match key_of(&k) {
                Some(key) => Input::Key(key),
                None => continue,
            },
            Ok(Event::Resize(..)) => Input::Resize,
            Ok(Event::Paste(text)) => Input::Paste(text),
            Ok(Event::Mouse(m)) => {
                let (x, y) = (m.column, m.row);
                match m.kind {
                    MouseEventKind::Down(MouseButton::Left) => Input::Mouse(Mouse::Click { x, y }),
                    MouseEventKind::ScrollUp => Input::Mouse(Mouse::ScrollUp { x, y }),
                    MouseEventKind::ScrollDown => Input::Mouse(Mouse::ScrollDown { x, y }),
                    _ => continue,
                }
            }
            Ok(_) => continue,
            Err(_) => return,
        };
        if tx.blocking_send(input).is_err() {
            return;
        }
    }
}

/// Stored events after `after` (at most `limit`), those before `below`, for the log.
async fn stored(
    conn: &Connection,
    session: &str,
    after: u64,
    limit: u32,
    below: u64,
) -> Option<Vec<(u64, air_proto::event::RuntimeEvent)>> {
    let page = conn
        .client
        .events_list(params::EventsList {
            session_id: session.to_string(),
            after_seq: Some(after),
            limit: Some(limit),
            ..Default::default()
        })
        .await
        .ok()?;
    Some(
        page.events
            .into_iter()
            .filter(|e| e.seq < below)
            .map(|e| (e.seq, e.event))
            .collect(),
    )
}

/// The clients attached to `session`.
async fn attached(conn: &Connection, session: &str) -> Vec<air_proto::api::ClientInfo> {
    let mut all = conn
        .client
        .clients_list(params::NoParams {})
        .await
        .unwrap_or_default();
    all.retain(|c| c.session_id.as_deref() == Some(session));
    all
}

/// Every stored message of the conversation up to `upto`, a page at a time.
async fn conversation(
    conn: &Connection,
    session: &str,
    upto: u64,
) -> Vec<air_proto::api::ConversationMessage> {
    let mut out = Vec::new();
    let mut after = 0;
    loop {
        let Ok(page) = conn
            .client
            .conversation_list(params::ConversationList {
                session_id: session.to_string(),
                after_seq: Some(after),
                before_seq: None,
                limit: Some(500),
            })
            .await
        else {
            return out;
        };
        out.extend(page.messages.into_iter().filter(|m| m.seq <= upto));
        match page.next_after_seq {
            Some(next) if next > after && next <= upto => after = next,
            _ => return out,
        }
    }
}

/// Opens `full` (shown to the user as `path`) in `$VISUAL` or `$EDITOR` (else `vi`)
/// in this terminal, the TUI stepping aside until it exits.
fn edit(
    terminal: &mut Terminal<CrosstermBackend<std::io::Stdout>>,
    gate: &InputGate,
    mouse: bool,
    full: &std::path::Path,
    path: &str,
) -> String {
    let editor = std::env::var("VISUAL")
        .or_else(|_| std::env::var("EDITOR"))
        .ok()
        .filter(|e| !e.trim().is_empty())
        .unwrap_or_else(|| "vi".into());
    // The editor gets every key: the input thread stops reading until it exits.
    gate.stop();
    restore();
    // The editor may carry arguments (`code --wait`): run it through the shell, the
    // path passed as an argument, never spliced into the command.
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{editor} \"$1\""))
        .arg("sh")
        .arg(full)
        .status();
    let _ = enable_raw_mode();
    let _ = execute!(
        std::io::stdout(),
        EnterAlternateScreen,
        ratatui::crossterm::terminal::Clear(ratatui::crossterm::terminal::ClearType::All)
    );
    if mouse {
        let _ = execute!(std::io::stdout(), EnableMouseCapture);
    }
    gate.go();
    // A new terminal object: it knows the screen is blank, so the next frame is drawn
    // whole. (`Terminal::clear` asks the terminal where its cursor is first; the
    // answer goes to the input thread's read, the query times out, and nothing is
    // redrawn.)
    if let Ok(fresh) = Terminal::new(CrosstermBackend::new(std::io::stdout())) {
        *terminal = fresh;
    }
    match status {
        Ok(s) if s.success() => format!("edited {path}"),
        Ok(s) => format!("{editor} exited {s}"),
        Err(e) => format!("cannot start {editor}: {e}"),
    }
}

/// Opens `text` in `$EDITOR`: written to `air-attach-<pid>-<name>` in the temp
/// directory (the name reduced to letters, digits, `.`, `-`, `_`).
fn edit_text(
    terminal: &mut Terminal<CrosstermBackend<std::io::Stdout>>,
    gate: &InputGate,
    mouse: bool,
    name: &str,
    text: &str,
) -> String {
    let name: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let path = std::env::temp_dir().join(format!("air-attach-{}-{name}", std::process::id()));
    if let Err(e) = std::fs::write(&path, text) {
        return format!("cannot write {}: {e}", path.display());
    }
    let shown = path.display().to_string();
    edit(terminal, gate, mouse, &path, &shown)
}

/// Bytes of a command's output read into the viewer at most.
const OUTPUT_BYTES: u64 = 8 << 20;

/// A command's whole output, read from its stored logs (`stdout.log`, then
/// `stderr.log`) over the API. `None` when nothing is stored for it (yet).
async fn read_output(
    conn: &Connection,
    session: &str,
    command_run_id: &str,
    command: &str,
) -> Result<Option<crate::app::Viewer>, String> {
    let mut logs = conn
        .client
        .artifact_list(params::ArtifactList {
            session_id: session.to_string(),
            task_id: None,
            command_run_id: Some(command_run_id.to_string()),
        })
        .await
        .map_err(|e| format!("cannot list the output of {command_run_id}: {}", said(&e)))?;
    logs.sort_by_key(|a| a.original_name.as_deref() != Some("stdout.log"));
    if logs.is_empty() {
        return Ok(None);
    }
    let mut text = String::new();
    let mut left = OUTPUT_BYTES;
    for log in &logs {
        let name = log.original_name.as_deref().unwrap_or(&log.id);
        if logs.len() > 1 {
            text.push_str(&format!("── {name} ──\n"));
        }
        let mut offset = 0;
        loop {
            let chunk = conn
                .client
                .artifact_read(params::ArtifactRead {
                    session_id: session.to_string(),
                    artifact_id: log.id.clone(),
                    offset: Some(offset),
                    limit: None,
                })
                .await
                .map_err(|e| format!("cannot read {name} of {command_run_id}: {}", said(&e)))?;
            if chunk.encoding == "utf8" {
                text.push_str(&chunk.data);
            } else {
                text.push_str(&format!("({} bytes that are not text)\n", chunk.bytes));
            }
            offset += chunk.bytes;
            left = left.saturating_sub(chunk.bytes);
            if chunk.eof || chunk.bytes == 0 {
                break;
            }
            if left == 0 {
                text.push_str(&format!(
                    "\n… (the first {} MiB shown)\n",
                    OUTPUT_BYTES >> 20
                ));
                break;
            }
        }
        if !text.ends_with('\n') {
            text.push('\n');
        }
    }
    Ok(Some(crate::app::Viewer::new(
        format!("$ {command}"),
        format!("{command_run_id}.log"),
        &text,
        false,
    )))
}

/// Puts `text` on the clipboard with OSC 52 (terminals and tmux with
/// `set-clipboard` pass it on; nothing needs installing).
fn copy(text: &str) -> String {
    use base64::Engine as _;
    let encoded = base64::engine::general_purpose::STANDARD.encode(text);
    let mut out = std::io::stdout();
    let _ = write!(out, "\x1b]52;c;{encoded}\x07");
    let _ = out.flush();
    format!("copied {text}")
}

/// The session to attach to, or the picker to choose it with.
enum Choice {
    Session(String),
    Pick(Picker),
}

async fn choose_session(
    conn: &Connection,
    wanted: Option<&str>,
    no_model: Option<(String, Vec<crate::app::ExampleRow>)>,
) -> Result<Choice, String> {
    let sessions = conn
        .client
        .session_list(params::NoParams {})
        .await
        .map_err(|e| format!("cannot list the sessions: {}", said(&e)))?;
    if let Some(id) = wanted {
        return air_proto::api::find_session(&sessions, id).map(|s| Choice::Session(s.id.clone()));
    }
    if sessions.len() <= 1 && no_model.is_none() {
        return sessions
            .first()
            .map(|s| Choice::Session(s.id.clone()))
            .ok_or_else(|| {
                "this project has no sessions yet: start one with `air run --plan FILE`".into()
            });
    }
    let running: Vec<String> = conn
        .client
        .status(params::NoParams {})
        .await
        .map(|s| s.runs.into_iter().map(|r| r.session_id).collect())
        .unwrap_or_default();
    let rows = sessions
        .into_iter()
        .map(|s| PickerRow {
            state: if running.contains(&s.id) {
                "running".into()
            } else {
                s.outcome()
            },
            title: s.title.clone().or(s.plan_ref.clone()).unwrap_or_default(),
            created_at: s.created_at.to_string(),
            id: s.id,
        })
        .collect();
    Ok(Choice::Pick(match no_model {
        Some((why, examples)) => Picker::first_run(rows, examples, why),
        None => Picker::new(rows),
    }))
}

/// Connects and subscribes; the snapshot and the subscription after it.
/// A connection with its snapshot and the subscription after it, or why not.
type Followed = Result<
    (
        Connection,
        air_proto::api::Snapshot,
        Subscription<SessionUpdate>,
    ),
    String,
>;

async fn follow(options: &ConnectOptions, session: &str) -> Followed {
    let conn = air_proto::client::connect(options)
        .await
        .map_err(|e| e.to_string())?;
    let snapshot = conn
        .client
        .session_snapshot(params::Session {
            session_id: session.to_string(),
        })
        .await
        .map_err(|e| format!("snapshot: {}", said(&e)))?;
    let sub = conn
        .client
        .session_subscribe(params::Subscribe {
            session_id: session.to_string(),
            from_seq: Some(snapshot.seq),
        })
        .await
        .map_err(|e| format!("subscribe: {}", said(&e)))?;
    Ok((conn, snapshot, sub))
}

async fn perform(conn: &Connection, session: &str, command: Command) -> Option<String> {
    let c = &conn.client;
    let s = session.to_string();
    // A message: nothing to say unless it went unanswered or unsent.
    if let Command::Send { text } = command {
        return match c
            .message_send(params::MessageSend {
                session_id: s,
                text,
                to: None,
                env: Some(air_proto::env::ClientEnv::current()),
            })
            .await
        {
            Ok(sent) => sent.unanswered,
            Err(e) => Some(format!("not sent: {}", said(&e))),
        };
    }
    let result = match command {
        Command::Detach | Command::Send { .. } => return None,
        Command::Approve { request_id } => c
            .permission_respond(params::PermissionRespond {
                session_id: s,
                request_id: request_id.clone(),
                decision: PermissionDecision::Allow,
                reason: None,
            })
            .await
            .map(|_| format!("approved {request_id}")),
        Command::Deny { request_id } => c
            .permission_respond(params::PermissionRespond {
                session_id: s,
                request_id: request_id.clone(),
                decision: PermissionDecision::Deny,
                reason: None,
            })
            .await
            .map(|_| format!("denied {request_id}")),
        Command::GoAhead { task_id } => c
            .planning_answer(params::PlanningAnswer {
                session_id: s,
                task_id: Some(task_id.clone()),
                answers: None,
                note: None,
                go_ahead: Some(true),
            })
            .await
            .map(|_| format!("{task_id}: go ahead")),
        Command::DecidePlan { task_id, decision } => c
            .planning_decide(params::PlanningDecide {
                session_id: s,
                task_id: Some(task_id.clone()),
                decision,
                note: None,
                run: None,
            })
            .await
            .map(|_| format!("{task_id}: {}", decision.as_str())),
        Command::CancelTask { task_id } => c
            .run_cancel(params::RunCancel {
                session_id: s,
                task_id: Some(task_id.clone()),
                reason: Some("cancelled from air attach".into()),
            })
            .await
            .map(|_| format!("cancelling {task_id}")),
        Command::CancelRun => c
            .run_cancel(params::RunCancel {
                session_id: s,
                task_id: None,
                reason: Some("cancelled from air attach".into()),
            })
            .await
            .map(|_| "cancelling the run".to_string()),
        Command::Retry { task_ids } => c
            .run_continue(params::RunContinue {
                session_id: s,
                task_ids: (!task_ids.is_empty()).then_some(task_ids),
                env: Some(air_proto::env::ClientEnv::current()),
                ..Default::default()
            })
            .await
            .map(|info| match info.reopened.is_empty() {
                true => "nothing to retry".to_string(),
                false => format!("retrying {}", info.reopened.join(", ")),
            }),
        // Done in this terminal, not by airsd.
        Command::Edit { .. }
        | Command::Copy { .. }
        | Command::EditText { .. }
        | Command::ShowOutput { .. }
        | Command::ShowEvents { .. } => return None,
        Command::Pause => c
            .run_pause(params::RunPause {
                session_id: s,
                task_id: None,
            })
            .await
            .map(|_| "pausing the run".to_string()),
        Command::PauseTask { task_id } => c
            .run_pause(params::RunPause {
                session_id: s,
                task_id: Some(task_id.clone()),
            })
            .await
            .map(|_| format!("pausing {task_id} after its current step")),
        Command::ResumeTask { task_id } => c
            .run_resume(params::RunPause {
                session_id: s,
                task_id: Some(task_id.clone()),
            })
            .await
            .map(|_| format!("resuming {task_id}")),
        Command::Resume => c
            .run_resume(params::RunPause {
                session_id: s,
                task_id: None,
            })
            .await
            .map(|_| "resuming the run".to_string()),
    };
    Some(match result {
        Ok(done) => done,
        Err(e) => format!("refused: {}", said(&e)),
    })
}

/// Runs the attached terminal until the user detaches. Returns the session it was
/// attached to.
pub async fn attach(mut options: Options) -> Result<Attached, String> {
    let palette = Palette::detect(&|k| std::env::var(k).ok());
    let config = match options.air_home.as_deref() {
        Some(home) => crate::keymap::AttachConfig::load(home)?,
        None => crate::keymap::AttachConfig::default(),
    };
    let keymap = crate::keymap::Keymap::with(&config.keys)?;
    let theme_name = options
        .theme
        .clone()
        .or(config.theme.clone())
        .unwrap_or_else(|| "dark".into());
    let theme = Theme::load(&theme_name, options.air_home.as_deref(), palette)?;
    options.connect.mode = ClientMode::Steering;
    options.connect.client = "air attach".into();
    let conn = air_proto::client::connect(&options.connect)
        .await
        .map_err(|e| e.to_string())?;
    let choice = choose_session(&conn, options.session.as_deref(), options.no_model.take()).await?;
    drop(conn);
    // SIGTERM ends the TUI the normal way (the terminal restored), from the picker on.
    let mut sigterm = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| format!("cannot handle signals: {e}"))?;
    // The terminal: restored on panic (before the message prints) and on every exit.
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        restore();
        previous(info);
    }));
    let mouse = config.mouse.unwrap_or(true);
    let _screen = Screen::enter(mouse).map_err(|e| format!("cannot set up the terminal: {e}"))?;
    let mut terminal = Terminal::new(CrosstermBackend::new(std::io::stdout()))
        .map_err(|e| format!("cannot set up the terminal: {e}"))?;
    let (input_tx, mut input) = mpsc::channel(64);
    let gate = InputGate::default();
    {
        let gate = gate.clone();
        std::thread::spawn(move || read_input(input_tx, gate));
    }
    let session = match choice {
        Choice::Session(id) => id,
        Choice::Pick(mut picker) => loop {
            terminal
                .draw(|f| crate::picker_view::render_picker(f, &picker, &theme))
                .map_err(|e| format!("cannot draw: {e}"))?;
            let next = tokio::select! {
                next = input.recv() => next,
                _ = sigterm.recv() => return Err("terminated".into()),
            };
            match next {
                Some(Input::Key(k)) => match picker.key(k) {
                    Some(Picked::Session(id)) => break id,
                    Some(Picked::Example(dir)) => return Ok(Attached::Example(dir)),
                    Some(Picked::Quit) => return Err("no session chosen".into()),
                    None => {}
                },
                Some(Input::Resize | Input::Mouse(_) | Input::Paste(_)) => {}
                None => return Err("the terminal closed".into()),
            }
        },
    };
    options.connect.session_id = Some(session.clone());
    let root = options.connect.paths.root().to_path_buf();
    let (mut conn, snapshot, mut sub) = follow(&options.connect, &session).await?;
    let seq = snapshot.seq;
    let mut app = App::new(snapshot);
    app.now = Some(std::time::SystemTime::now());
    app.keymap = keymap;
    let log_rows = |terminal: &Terminal<CrosstermBackend<std::io::Stdout>>, app: &App| {
        terminal.size().map_or(5, |s| {
            let areas =
                crate::view::areas(ratatui::layout::Rect::new(0, 0, s.width, s.height), app);
            usize::from(areas.log.height.saturating_sub(2))
        })
    };
    app.ui.log_rows = log_rows(&terminal, &app);
    // Where the user was last time.
    if let Ok(Some(saved)) = conn
        .client
        .ui_state_get(params::UiStateGet {
            session_id: session.clone(),
            key: UI_KEY.into(),
        })
        .await
    {
        app.restore_ui(&saved);
    }
    let mut saved = app.saved_ui();
    // What happened before: the last events, for the log (more are a scroll away in
    // `air events`).
    if let Some(events) = stored(
        &conn,
        &session,
        seq.saturating_sub(HISTORY),
        HISTORY as u32,
        seq + 1,
    )
    .await
    {
        app.history(&events);
    }
    // The whole conversation, however long ago it began.
    let said = conversation(&conn, &session, seq).await;
    app.history_of_chat(&said);
    if options.chat {
        app.open_chat();
    }
    app.clients = attached(&conn, &session).await;
    // Deltas only mark the screen stale; it is drawn on the next frame (30 a second at
    // most), so a fast stream costs one draw per frame, not one per delta. Keys draw
    // at once.
    let mut tick = tokio::time::interval(Duration::from_millis(33));
    let mut ticks: u64 = 0;
    let mut dirty = true;
    let mut connected = true;
    // Why the connection was lost, and the reconnect under way.
    let mut lost = String::new();
    let mut reconnecting: Option<tokio::task::JoinHandle<Followed>> = None;
    let draw = |terminal: &mut Terminal<CrosstermBackend<std::io::Stdout>>, app: &App| {
        terminal
            .draw(|f| crate::view::render(f, app, &theme))
            .map(drop)
            .map_err(|e| format!("cannot draw: {e}"))
    };
    draw(&mut terminal, &app)?;
    loop {
        tokio::select! {
            update = sub.next(), if connected => {
                match update {
                    Some(Ok(u)) => app.update(u),
                    Some(Err(e)) => {
                        connected = false;
                        lost = format!("a bad notification: {e}");
                        app.link = Link::Reconnecting { attempt: 0, reason: lost.clone() };
                    }
                    None => {
                        connected = false;
                        lost = "the daemon closed the connection".into();
                        app.link = Link::Reconnecting { attempt: 0, reason: lost.clone() };
                    }
                }
                dirty = true;
            }
            key = input.recv() => {
                match key {
                    Some(Input::Key(k)) => {
                        if let Some(command) = app.key(k) {
                            match command {
                                Command::Detach => break,
                                Command::Edit { path } => {
                                    app.ui.toast = Some(edit(&mut terminal, &gate, mouse, &root.join(&path), &path));
                                }
                                Command::EditText { name, text } => {
                                    app.ui.toast = Some(edit_text(&mut terminal, &gate, mouse, &name, &text));
                                }
                                Command::Copy { text } => app.ui.toast = Some(copy(&text)),
                                Command::ShowEvents { from, to } if connected => {
                                    let limit = u32::try_from(to - from + 1).unwrap_or(u32::MAX).min(500);
                                    match stored(&conn, &session, from.saturating_sub(1), limit, to + 1).await {
                                        Some(events) => {
                                            let text: String = events
                                                .iter()
                                                .map(|(seq, e)| {
                                                    let json = serde_json::to_string_pretty(e).unwrap_or_default();
                                                    format!("── seq {seq} · {}\n{json}\n", e.event_type)
                                                })
                                                .collect();
                                            app.ui.viewer = Some(crate::app::Viewer::new(
                                                format!("events {from}–{to} as stored"),
                                                format!("events-{from}-{to}.json"),
                                                &text,
                                                false,
                                            ));
                                        }
                                        None => app.ui.toast = Some("the events could not be read".into()),
                                    }
                                }
                                Command::ShowOutput { command_run_id, command } if connected => {
                                    match read_output(&conn, &session, &command_run_id, &command).await {
                                        Ok(Some(viewer)) => app.ui.viewer = Some(viewer),
                                        // Not stored yet (it runs): what has streamed so far.
                                        Ok(None) => app.show_streamed_output(),
                                        Err(e) => app.ui.toast = Some(e),
                                    }
                                }
                                other if connected => {
                                    app.ui.toast = perform(&conn, &session, other).await;
                                }
                                _ => {
                                    app.ui.toast = Some("not connected: the action was not sent".into());
                                }
                            }
                        }
                    }
                    Some(Input::Mouse(m)) => {
                        if let Ok(size) = terminal.size() {
                            app.mouse(m, ratatui::layout::Rect::new(0, 0, size.width, size.height));
                        }
                    }
                    Some(Input::Paste(text)) => app.paste(&text),
                    Some(Input::Resize) => app.ui.log_rows = log_rows(&terminal, &app),
                    None => break,
                }
                draw(&mut terminal, &app)?;
                dirty = false;
            }
            _ = tick.tick() => {
                ticks += 1;
                if ticks.is_multiple_of(3) {
                    // The spinner's pace, and the running tasks' clocks.
                    app.frame += 1;
                    app.now = Some(std::time::SystemTime::now());
                    dirty = true;
                }
                if dirty {
                    draw(&mut terminal, &app)?;
                    dirty = false;
                }
                // The user read back to the top of the log: the page before it.
                if let (true, Some((after, limit))) = (connected, app.older_page()) {
                    let oldest = app.oldest_seq.unwrap_or(0);
                    if let Some(events) = stored(&conn, &session, after, limit, oldest).await {
                        app.history(&events);
                        dirty = true;
                    }
                    app.ui.want_older = false;
                }
                // Every 2 s: who is attached.
                if connected && ticks.is_multiple_of(60) {
                    let now = attached(&conn, &session).await;
                    if now != app.clients {
                        app.clients = now;
                        dirty = true;
                    }
                }
                // Every 5 s: keep the user's place if it moved.
                if connected && ticks.is_multiple_of(150) {
                    let now = app.saved_ui();
                    if now != saved {
                        let _ = conn.client.ui_state_put(params::UiStatePut { session_id: session.clone(), key: UI_KEY.into(), value: now.clone() }).await;
                        saved = now;
                    }
                }
                // A resync or a reconnect left a gap in the log: its stored events.
                if let (true, Some((after, upto))) = (connected, app.gap) {
                    app.gap = None;
                    let wanted = upto.saturating_sub(after);
                    let limit = wanted.min(1000);
                    let from = upto.saturating_sub(limit);
                    if let Some(events) = stored(&conn, &session, from, limit as u32, upto + 1).await {
                        app.catch_up(&events, upto, wanted - limit);
                        dirty = true;
                    }
                }
                // Lost: try again every 400 ms, off the loop, so keys still work.
                if !connected && reconnecting.is_none() && ticks.is_multiple_of(12) {
                    let (mut options, session) = (options.connect.clone(), session.clone());
                    // Stopped on purpose: wait for a daemon someone starts, start none.
                    if options.paths.daemon_stopped().exists() {
                        options.airsd = None;
                        if app.link != Link::Stopped {
                            app.link = Link::Stopped;
                            dirty = true;
                        }
                    }
                    reconnecting = Some(tokio::spawn(async move { follow(&options, &session).await }));
                }
            }
            joined = async {
                match reconnecting.as_mut() {
                    Some(h) => h.await,
                    None => std::future::pending().await,
                }
            }, if reconnecting.is_some() => {
                reconnecting = None;
                let attempt = match &app.link {
                    Link::Reconnecting { attempt, .. } => attempt + 1,
                    Link::Connected | Link::Stopped => 1,
                };
                match joined.map_err(|e| e.to_string()).and_then(|r| r) {
                    Ok((c, snapshot, s)) => {
                        conn = c;
                        sub = s;
                        app.reset(snapshot);
                        app.link = Link::Connected;
                        app.note("— reconnected; the state is fresh from a snapshot");
                        connected = true;
                    }
                    Err(_) if app.link == Link::Stopped => {}
                    Err(e) => {
                        app.link = Link::Reconnecting {
                            attempt,
                            reason: format!("{lost}; {e}").chars().take(160).collect(),
                        };
                    }
                }
                dirty = true;
            }
            _ = sigterm.recv() => break,
        }
    }
    if connected {
        let _ = conn
            .client
            .ui_state_put(params::UiStatePut {
                session_id: session.clone(),
                key: UI_KEY.into(),
                value: app.saved_ui(),
            })
            .await;
    }
    drop(terminal);
    Ok(Attached::Session(session))
}
