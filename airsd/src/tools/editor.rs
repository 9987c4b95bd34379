//! An editor that serves a session's files (`editor.serve`, from `air acp` when the
//! editor offers its file system): the file tools read a file of the project's
//! checkout as the editor has it, unsaved changes included, and an agent's write is
//! put into the editor too, so that it lands in the buffer the person has open
//! instead of changing under it. airsd still does every check and its own write: the
//! editor is asked only for the text of a file the checks then judge, and told of a
//! write already made.
//!
//! One editor serves a session at a time (the latest to ask); it stops when its
//! subscription ends. An editor that does not answer in [`ANSWER_TIME`] is passed
//! over: the file on disk counts.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use air_proto::api::{EditorRequest, EditorRequestKind};
use tokio::sync::{mpsc, oneshot};

/// How long an editor has to answer.
pub const ANSWER_TIME: Duration = Duration::from_secs(10);

/// Requests waiting to be sent to one editor.
const QUEUE: usize = 64;

type Answer = Result<Option<String>, String>;

struct Served {
    conn: u64,
    /// The checkout the editor has open (canonical).
    root: PathBuf,
    read: bool,
    write: bool,
    requests: mpsc::Sender<EditorRequest>,
    waiting: HashMap<String, oneshot::Sender<Answer>>,
}

/// The editor serving one session's files, if any.
#[derive(Default)]
pub struct Editors {
    served: Mutex<Option<Served>>,
    /// Held from a served file's write on disk until the editor saved it: the
    /// editor's save of one write never lands after the next one.
    writing: tokio::sync::Mutex<()>,
    /// Held shared by each command of the session while it runs, and alone while the
    /// editor is asked about a file: no command of the session can swap the file for
    /// a link (to a credential, to `~/.bashrc`) while the editor reads or saves it.
    commands: tokio::sync::RwLock<()>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Editors {
    /// Connection `conn`'s editor serves the files of `root` from now on; its
    /// requests come out of the receiver.
    pub fn serve(
        &self,
        conn: u64,
        root: &Path,
        read: bool,
        write: bool,
    ) -> mpsc::Receiver<EditorRequest> {
        let (requests, rx) = mpsc::channel(QUEUE);
        *lock(&self.served) = Some(Served {
            conn,
            root: root.to_path_buf(),
            read,
            write,
            requests,
            waiting: HashMap::new(),
        });
        rx
    }

    /// Held across a write of a file the editor serves, on disk and into the editor.
    pub async fn writing(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.writing.lock().await
    }

    /// Held by a command of the session while it runs.
    pub async fn command(&self) -> tokio::sync::RwLockReadGuard<'_, ()> {
        self.commands.read().await
    }

    /// No command of the session runs, and none starts while this is held; `None`
    /// when one runs (the editor is then not asked: the file on disk counts).
    pub fn quiet(&self) -> Option<tokio::sync::RwLockWriteGuard<'_, ()>> {
        self.commands.try_write().ok()
    }

    /// Connection `conn`'s editor stops serving (when it still does).
    pub fn withdraw(&self, conn: u64) {
        let mut served = lock(&self.served);
        if served.as_ref().is_some_and(|s| s.conn == conn) {
            *served = None;
        }
    }

    /// Connection `conn`'s answer to its request `id`; false when nothing waits for it.
    pub fn answer(&self, conn: u64, id: &str, answer: Answer) -> bool {
        let waiter = lock(&self.served)
            .as_mut()
            .filter(|s| s.conn == conn)
            .and_then(|s| s.waiting.remove(id));
        waiter.is_some_and(|w| w.send(answer).is_ok())
    }

    /// Whether an editor serves reads (`write`: writes) of `path` for a tool working
    /// in `root`: the checkout the editor has open (not a task's worktree), a file
    /// inside it.
    pub fn serves(&self, root: &Path, path: &Path, write: bool) -> bool {
        lock(&self.served).as_ref().is_some_and(|s| {
            (if write { s.write } else { s.read }) && s.root == root && path.starts_with(&s.root)
        })
    }

    /// The text of `path` as the editor has it, for a tool working in `root`; `None`
    /// when no editor serves it, or it could not say (the file on disk then counts).
    pub async fn read(&self, root: &Path, path: &Path) -> Option<String> {
        if !self.serves(root, path, false) {
            return None;
        }
        match self.ask(EditorRequestKind::Read, path, None).await {
            Some(Ok(Some(text))) => Some(text),
            Some(Ok(None)) => None,
            Some(Err(why)) => {
                tracing::debug!(path = %path.display(), %why, "the editor did not read the file");
                None
            }
            None => None,
        }
    }

    /// Puts `content`, already written to `path` by a tool working in `root`, into
    /// the editor; why not when it could not (`Ok` when no editor serves writes of it).
    pub async fn wrote(&self, root: &Path, path: &Path, content: &str) -> Result<(), String> {
        if !self.serves(root, path, true) {
            return Ok(());
        }
        match self
            .ask(EditorRequestKind::Write, path, Some(content.to_string()))
            .await
        {
            Some(Ok(_)) | None => Ok(()),
            Some(Err(why)) => Err(why),
        }
    }

    async fn ask(
        &self,
        kind: EditorRequestKind,
        path: &Path,
        content: Option<String>,
    ) -> Option<Answer> {
        // Only text paths reach an editor.
        let shown = path.to_str()?.to_string();
        let request_id = air_proto::ids::new_id();
        let (tx, rx) = oneshot::channel();
        let (conn, requests) = {
            let mut served = lock(&self.served);
            let s = served.as_mut()?;
            s.waiting.insert(request_id.clone(), tx);
            (s.conn, s.requests.clone())
        };
        let deadline_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64)
            .saturating_add(ANSWER_TIME.as_millis() as u64);
        let request = EditorRequest {
            request_id: request_id.clone(),
            kind,
            path: shown,
            content,
            deadline_ms,
        };
        let answer = match requests.try_send(request) {
            Ok(()) => match tokio::time::timeout(ANSWER_TIME, rx).await {
                Ok(a) => a.map_err(|_| "the editor stopped serving".to_string()),
                Err(_) => {
                    // An editor that let a write wait this long may still save it
                    // later, over a newer one: it serves no more.
                    if kind == EditorRequestKind::Write {
                        self.withdraw(conn);
                    }
                    Err(format!(
                        "the editor did not answer in {} s",
                        ANSWER_TIME.as_secs()
                    ))
                }
            },
            Err(_) => Err("the editor has too many requests open".into()),
        };
        if let Some(s) = lock(&self.served).as_mut() {
            s.waiting.remove(&request_id);
        }
        Some(answer.and_then(|a| a))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[tokio::test]
    async fn the_editor_is_not_asked_while_a_command_of_the_session_runs() {
        let editors = Editors::default();
        let running = editors.command().await;
        assert!(editors.quiet().is_none());
        drop(running);
        let quiet = editors.quiet();
        assert!(quiet.is_some());
        // A command waits until the editor was asked.
        assert!(
            tokio::time::timeout(Duration::from_millis(20), editors.command())
                .await
                .is_err()
        );
        drop(quiet);
        let _again = editors.command().await;
    }

    #[tokio::test]
    async fn an_editor_answers_what_it_serves_and_only_that() {
        let editors = std::sync::Arc::new(Editors::default());
        let root = Path::new("/p");
        assert_eq!(editors.read(root, &root.join("a.rs")).await, None);
        let mut rx = editors.serve(7, root, true, false);
        let served = editors.clone();
        let editor = tokio::spawn(async move {
            while let Some(req) = rx.recv().await {
                let answer = if req.path.ends_with("a.rs") {
                    Ok(Some("unsaved".to_string()))
                } else {
                    Err("not open".to_string())
                };
                // Another connection cannot answer for it.
                assert!(!served.answer(8, &req.request_id, Ok(None)));
                assert!(served.answer(7, &req.request_id, answer));
            }
        });
        assert_eq!(
            editors.read(root, &root.join("a.rs")).await.as_deref(),
            Some("unsaved")
        );
        assert_eq!(editors.read(root, &root.join("b.rs")).await, None);
        // Outside its checkout, in a task's worktree, and writes it does not serve:
        // not asked.
        assert_eq!(editors.read(root, Path::new("/etc/passwd")).await, None);
        let worktree = root.join(".air/local/worktrees/T1");
        assert_eq!(editors.read(&worktree, &worktree.join("a.rs")).await, None);
        assert_eq!(editors.wrote(root, &root.join("a.rs"), "x").await, Ok(()));
        editors.withdraw(8);
        assert!(editors.serves(root, &root.join("a.rs"), false));
        editors.withdraw(7);
        assert!(!editors.serves(root, &root.join("a.rs"), false));
        editor.abort();
    }
}
