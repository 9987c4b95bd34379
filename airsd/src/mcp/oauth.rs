//! OAuth for HTTP servers that ask for it: `air mcp login NAME` (through
//! `airsd __mcp-login`) runs the browser flow once; the tokens are kept in
//! `~/.air/mcp-credentials.json` (readable by its owner only), per server and URL,
//! and refreshed before they expire (and on a 401) by the connection, which writes
//! the new ones back.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationRequest, CredentialRefreshGuard, CredentialStore,
    OAuthState, StoredCredentials,
};

/// The file the tokens are kept in.
pub fn credentials_file(air_home: &Path) -> PathBuf {
    air_home.join("mcp-credentials.json")
}

/// Writes to the file one at a time within airsd.
static WRITING: Mutex<()> = Mutex::new(());

/// One server's entry of the credentials file.
struct FileStore {
    path: PathBuf,
    key: String,
}

fn key(name: &str, url: &str) -> String {
    format!("{name} {url}")
}

fn read_all(path: &Path) -> Result<serde_json::Map<String, serde_json::Value>, String> {
    match std::fs::read_to_string(path) {
        Ok(t) => serde_json::from_str(&t).map_err(|e| format!("{}: {e}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(serde_json::Map::new()),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

fn write_all(path: &Path, all: &serde_json::Map<String, serde_json::Value>) -> Result<(), String> {
    let text = serde_json::to_string_pretty(all).map_err(|e| e.to_string())?;
    air_proto::hooks::write_private(path, text.as_bytes())
}

impl FileStore {
    fn change(&self, value: Option<serde_json::Value>) -> Result<(), AuthError> {
        let _one = WRITING.lock().unwrap_or_else(|p| p.into_inner());
        let mut all = read_all(&self.path).map_err(AuthError::CredentialStoreError)?;
        match value {
            Some(v) => all.insert(self.key.clone(), v),
            None => all.remove(&self.key),
        };
        write_all(&self.path, &all).map_err(AuthError::CredentialStoreError)
    }
}

#[async_trait::async_trait]
impl CredentialStore for FileStore {
    async fn load(&self) -> Result<Option<StoredCredentials>, AuthError> {
        let all = read_all(&self.path).map_err(AuthError::CredentialStoreError)?;
        match all.get(&self.key) {
            None => Ok(None),
            Some(v) => serde_json::from_value(v.clone()).map(Some).map_err(|e| {
                AuthError::CredentialStoreError(format!("{}: {e}", self.path.display()))
            }),
        }
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), AuthError> {
        let v = serde_json::to_value(&credentials)
            .map_err(|e| AuthError::CredentialStoreError(e.to_string()))?;
        self.change(Some(v))
    }

    async fn clear(&self) -> Result<(), AuthError> {
        self.change(None)
    }

    /// One refresh of a server's tokens at a time: within airsd (the connection's
    /// requests), and across processes (two runs, `air mcp list`) by a lock on the
    /// file beside the tokens. A refresh token that rotates is used once.
    async fn acquire_refresh_guard(&self) -> Result<Option<CredentialRefreshGuard>, AuthError> {
        let inner = {
            let mut locks = LOCKS.lock().unwrap_or_else(|p| p.into_inner());
            locks.entry(self.key.clone()).or_default().clone()
        };
        let held = inner.lock_owned().await;
        let lock_file = self.path.with_extension("json.lock");
        let file = tokio::task::spawn_blocking(move || {
            let f = std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&lock_file)
                .map_err(|e| format!("{}: {e}", lock_file.display()))?;
            nix::fcntl::Flock::lock(f, nix::fcntl::FlockArg::LockExclusive)
                .map_err(|(_, e)| format!("{}: {e}", lock_file.display()))
        })
        .await
        .map_err(|e| AuthError::CredentialStoreError(e.to_string()))?
        .map_err(AuthError::CredentialStoreError)?;
        Ok(Some(CredentialRefreshGuard::new((held, file))))
    }
}

/// The refresh locks of airsd, by server.
static LOCKS: std::sync::LazyLock<
    Mutex<std::collections::HashMap<String, std::sync::Arc<tokio::sync::Mutex<()>>>>,
> = std::sync::LazyLock::new(Default::default);

/// Whether tokens are kept for the server.
pub fn has_tokens(air_home: &Path, name: &str, url: &str) -> bool {
    read_all(&credentials_file(air_home)).is_ok_and(|all| all.contains_key(&key(name, url)))
}

/// Forgets the server's tokens.
pub fn forget(air_home: &Path, name: &str, url: &str) -> Result<(), String> {
    let path = credentials_file(air_home);
    let _one = WRITING.lock().unwrap_or_else(|p| p.into_inner());
    let mut all = read_all(&path)?;
    if all.remove(&key(name, url)).is_some() {
        write_all(&path, &all)?;
    }
    Ok(())
}

/// The authorization of a server whose tokens are kept (they refresh themselves),
/// or `None` when there are none.
pub async fn manager(
    air_home: Option<&Path>,
    name: &str,
    url: &str,
) -> Result<Option<AuthorizationManager>, String> {
    let Some(home) = air_home else {
        return Ok(None);
    };
    if !has_tokens(home, name, url) {
        return Ok(None);
    }
    let mut m = AuthorizationManager::new(url)
        .await
        .map_err(|e| format!("OAuth discovery for {url} failed: {e}"))?;
    m.set_credential_store(FileStore {
        path: credentials_file(home),
        key: key(name, url),
    });
    match m.initialize_from_store().await {
        Ok(true) => Ok(Some(m)),
        Ok(false) => Err(format!(
            "its OAuth tokens no longer fit its authorization server: `air mcp login {name}`"
        )),
        Err(e) => Err(format!(
            "its OAuth tokens cannot be used ({e}): `air mcp login {name}`"
        )),
    }
}

/// The browser flow: the URL to open is handed to `show`; the redirect comes back
/// to a listener on 127.0.0.1; the tokens are kept.
pub async fn login(
    air_home: &Path,
    name: &str,
    url: &str,
    show: impl Fn(&str),
) -> Result<(), String> {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    crate::tls();
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .map_err(|e| format!("cannot listen for the redirect: {e}"))?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    let redirect = format!("http://127.0.0.1:{port}/callback");
    let mut m = AuthorizationManager::new(url)
        .await
        .map_err(|e| format!("OAuth discovery for {url} failed: {e}"))?;
    m.set_credential_store(FileStore {
        path: credentials_file(air_home),
        key: key(name, url),
    });
    let mut state = OAuthState::Unauthorized(m);
    state
        .start_authorization(AuthorizationRequest::new(redirect.clone()).with_client_name("air"))
        .await
        .map_err(|e| format!("cannot start the authorization: {e}"))?;
    let to_open = state
        .get_authorization_url()
        .await
        .map_err(|e| format!("no authorization URL: {e}"))?;
    show(&to_open);
    let wait = async {
        loop {
            let (mut conn, _) = listener.accept().await.map_err(|e| e.to_string())?;
            // The whole head, before answering (a connection closed with a request
            // still unread is reset, and the browser shows an error), for a while at
            // most: one idle connection does not stop the sign-in.
            let mut buf = Vec::new();
            let read_head = async {
                let mut chunk = [0u8; 2048];
                while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < 16 * 1024 {
                    match conn.read(&mut chunk).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    }
                }
            };
            if tokio::time::timeout(std::time::Duration::from_secs(10), read_head)
                .await
                .is_err()
            {
                continue;
            }
            let head = String::from_utf8_lossy(&buf).to_string();
            let Some(path) = head
                .lines()
                .next()
                .and_then(|l| l.strip_prefix("GET "))
                .and_then(|l| l.split_whitespace().next())
            else {
                continue;
            };
            if path != "/callback" && !path.starts_with("/callback?") {
                let _ = conn
                    .write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n")
                    .await;
                continue;
            }
            let page = "air: signed in; you may close this page.";
            let _ = conn
                .write_all(
                    format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{page}",
                        page.len()
                    )
                    .as_bytes(),
                )
                .await;
            let _ = conn.shutdown().await;
            return Ok::<String, String>(format!("http://127.0.0.1:{port}{path}"));
        }
    };
    let back = tokio::time::timeout(std::time::Duration::from_secs(600), wait)
        .await
        .map_err(|_| "nobody signed in within 10 minutes".to_string())??;
    state
        .handle_callback_url(&back)
        .await
        .map_err(|e| format!("the sign-in did not complete: {e}"))?;
    Ok(())
}
