//! airsd's network proxy for commands. A sandboxed command lives in its own network
//! namespace with loopback only; its launcher listens there on
//! [`crate::sandbox::PROXY_LISTEN`] and hands each connection it accepts to airsd, over a Unix socket in
//! airsd's abstract namespace that it reached before it left airsd's network (no
//! command can reach it: abstract sockets belong to a network namespace). airsd
//! speaks HTTP (`CONNECT`, and plain requests in absolute form) and SOCKS5 on the
//! connection, decides the host, and only then connects it to the world.
//!
//! A host is allowed when permissions.yaml lists it (`allow_domains`), when a person
//! allowed it (or its package registries' group) earlier in the run; any other host
//! is a question for a person, recorded as the command's `permission.requested`
//! (headless, the run's `on_ask` policy denies it at once). Questions about one host
//! are asked once however many connections wait on them.

use std::collections::{HashMap, HashSet};
use std::os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use crate::tools::permission::{Ask, Risk};

/// Who asks a person about a command's connection (the command's tool call).
pub trait Asks: Send + Sync {
    fn ask<'a>(
        &'a self,
        ask: Ask,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), String>> + Send + 'a>>;
}

/// How long a connection's first bytes may take, and connecting upstream.
const HANDSHAKE: Duration = Duration::from_secs(30);
/// The largest request head read.
const MOST_HEAD: usize = 16 * 1024;

/// Headers for the proxy alone (and the connection's own), never passed on.
const HOP_BY_HOP: &[&str] = &[
    "connection",
    "proxy-connection",
    "proxy-authorization",
    "proxy-authenticate",
    "keep-alive",
    "te",
    "trailer",
    "upgrade",
];

/// Package registries, offered to a person as one group each.
pub const GROUPS: &[(&str, &[&str])] = &[
    (
        "Rust (crates.io)",
        &[
            "crates.io",
            "index.crates.io",
            "static.crates.io",
            "static.rust-lang.org",
        ],
    ),
    ("Python (PyPI)", &["pypi.org", "files.pythonhosted.org"]),
    (
        "JavaScript (npm, Yarn)",
        &["registry.npmjs.org", "registry.yarnpkg.com"],
    ),
    (
        "Go modules",
        &[
            "proxy.golang.org",
            "sum.golang.org",
            "storage.googleapis.com",
        ],
    ),
    (
        "Java (Maven Central, Gradle)",
        &[
            "repo.maven.apache.org",
            "repo1.maven.org",
            "plugins.gradle.org",
            "services.gradle.org",
            "downloads.gradle.org",
        ],
    ),
    (".NET (NuGet)", &["api.nuget.org"]),
    ("Ruby (RubyGems)", &["rubygems.org", "index.rubygems.org"]),
];

/// Whether `host` is named by `pattern`: the same name, or `*.domain` / `.domain`
/// for its subdomains (and the domain itself), or `*` for any.
pub fn matches(pattern: &str, host: &str) -> bool {
    let p = pattern.trim().to_ascii_lowercase();
    if p == "*" {
        return true;
    }
    let p = p.trim_end_matches('.');
    match p.strip_prefix("*.").or_else(|| p.strip_prefix('.')) {
        // `*.` or `.` names no domain (not every host).
        Some("") => false,
        Some(domain) => host == domain || host.ends_with(&format!(".{domain}")),
        None => !p.is_empty() && p != "*" && host == p,
    }
}

/// Whether `host` (as [`normal`] makes it) is a host name or an address literal: what
/// a question may name.
fn well_formed(host: &str) -> bool {
    host.len() <= 253
        && !host.is_empty()
        && (host.parse::<std::net::IpAddr>().is_ok()
            || host
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '.' || c == '_'))
}

/// The questions one command may raise; past them its connections are refused
/// without asking (a command naming hosts by the thousand floods nobody).
const MOST_QUESTIONS: usize = 10;
/// A command's connections through the proxy at once.
const MOST_CONNECTIONS: usize = 64;

/// A host as asked for: lowercase, no trailing dot, IPv6 without brackets.
fn normal(host: &str) -> String {
    host.trim()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .trim_end_matches('.')
        .to_ascii_lowercase()
}

/// A question's answer, once it comes, shared by the connections waiting on it.
type Answer = Arc<tokio::sync::OnceCell<Result<(), String>>>;

/// The network decisions of one run.
#[derive(Debug, Default)]
pub struct NetPolicy {
    /// permissions.yaml `allow_domains`.
    allowed: Vec<String>,
    /// Hosts and groups a person allowed in this run.
    granted: Mutex<HashSet<String>>,
    /// Questions under way, by key: later connections wait for the same answer.
    pending: Mutex<HashMap<String, Answer>>,
}

impl NetPolicy {
    pub fn new(allowed: Vec<String>) -> NetPolicy {
        NetPolicy {
            allowed,
            ..NetPolicy::default()
        }
    }

    fn granted(&self, key: &str) -> bool {
        self.granted
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(key)
    }

    /// Whether a command may connect to `host:port`, asking a person through `asker`
    /// when nothing decides it yet.
    pub async fn decide(&self, host: &str, port: u16, asker: &dyn Asks) -> Result<(), String> {
        let host = normal(host);
        if !well_formed(&host) {
            return Err("not a host name".into());
        }
        if self.allowed.iter().any(|p| matches(p, &host)) {
            return Ok(());
        }
        let group = GROUPS
            .iter()
            .find(|(_, hosts)| hosts.iter().any(|h| matches(h, &host)));
        let key = match group {
            Some((name, _)) => format!("network:group:{name}"),
            None => format!("network:{host}"),
        };
        if self.granted(&key) {
            return Ok(());
        }
        let cell = {
            let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
            pending.entry(key.clone()).or_default().clone()
        };
        let (action, reason) = match group {
            Some((name, hosts)) => (
                format!("connect to the package registries of {name} ({})", hosts.join(", ")),
                format!("a command asked for {host}:{port}; the registries of one ecosystem are allowed together for this run"),
            ),
            None => (
                format!("connect to {host}:{port}"),
                "a command's connection out of its sandbox: each host is a person's to allow (or list it in permissions.yaml allow_domains)".to_string(),
            ),
        };
        let answer = cell
            .get_or_init(|| async {
                asker
                    .ask(Ask {
                        key: key.clone(),
                        action,
                        risk: Risk::Network,
                        reason,
                    })
                    .await
            })
            .await
            .clone();
        self.pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&key);
        if answer.is_ok() {
            self.granted
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(key);
        }
        answer
    }
}

/// What a command's connections are judged and asked with. A host or group refused
/// to a command stays refused for the rest of it: a package manager retrying, or
/// opening its hundredth connection, does not ask the person again.
#[derive(Clone)]
pub struct CommandNet {
    policy: Arc<NetPolicy>,
    asker: Arc<dyn Asks>,
    refused: Arc<Mutex<HashMap<String, String>>>,
    asked: Arc<std::sync::atomic::AtomicUsize>,
}

impl CommandNet {
    pub fn new(policy: Arc<NetPolicy>, asker: Arc<dyn Asks>) -> CommandNet {
        CommandNet {
            policy,
            asker,
            refused: Arc::default(),
            asked: Arc::default(),
        }
    }

    /// Forgets the hosts refused and the questions counted: for a program that lives
    /// across calls (an MCP server), whose each call is a new command.
    pub fn reset(&self) {
        self.refused
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
        self.asked.store(0, std::sync::atomic::Ordering::SeqCst);
    }

    /// Whether this command may connect to `host:port`.
    pub async fn decide(&self, host: &str, port: u16) -> Result<(), String> {
        self.policy.decide(host, port, self).await
    }
}

impl Asks for CommandNet {
    fn ask<'a>(
        &'a self,
        ask: Ask,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), String>> + Send + 'a>> {
        Box::pin(async move {
            let before = self
                .refused
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get(&ask.key)
                .cloned();
            if let Some(why) = before {
                return Err(why);
            }
            let key = ask.key.clone();
            let n = self.asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let answer = if n >= MOST_QUESTIONS {
                Err(format!(
                    "this command already asked about {MOST_QUESTIONS} hosts; no more questions"
                ))
            } else {
                self.asker.ask(ask).await
            };
            if let Err(why) = &answer {
                self.refused
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(key, why.clone());
            }
            answer
        })
    }
}

/// The proxy of one run: its control socket and the commands it serves now. Dropped,
/// it stops taking connections.
pub struct Proxy {
    name: String,
    commands: Arc<Mutex<HashMap<String, CommandNet>>>,
    accepting: tokio::task::AbortHandle,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.accepting.abort();
    }
}

/// A command's registration: its token is good while this lives.
pub struct Registered {
    token: String,
    commands: Arc<Mutex<HashMap<String, CommandNet>>>,
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.commands
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&self.token);
    }
}

impl Proxy {
    /// Starts the proxy's control socket, in airsd's abstract namespace (on the
    /// current runtime).
    pub fn start() -> std::io::Result<Proxy> {
        use std::os::linux::net::SocketAddrExt as _;
        let name = format!("air-proxy-{}", air_proto::ids::new_id());
        let addr = std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes())?;
        let std_listener = std::os::unix::net::UnixListener::bind_addr(&addr)?;
        std_listener.set_nonblocking(true)?;
        let listener = tokio::net::UnixListener::from_std(std_listener)?;
        let commands: Arc<Mutex<HashMap<String, CommandNet>>> = Arc::default();
        let served = commands.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((conn, _)) = listener.accept().await else {
                    // Out of descriptors, most likely: let some close.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                };
                let commands = served.clone();
                tokio::spawn(async move {
                    control(conn, &commands).await;
                });
            }
        });
        Ok(Proxy {
            name,
            commands,
            accepting: task.abort_handle(),
        })
    }

    /// The launcher's `--net` argument for a registration: `TOKEN@NAME`.
    pub fn address(&self, registered: &Registered) -> String {
        format!("{}@{}", registered.token, self.name)
    }

    /// Registers a command about to start; its connections are judged by `net`.
    pub fn register(&self, net: CommandNet) -> Registered {
        let token = air_proto::ids::new_id();
        self.commands
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(token.clone(), net);
        Registered {
            token,
            commands: self.commands.clone(),
        }
    }
}

/// One launcher's control connection: its token, then a connection's descriptor per
/// message, each served beside it.
async fn control(mut conn: tokio::net::UnixStream, commands: &Mutex<HashMap<String, CommandNet>>) {
    // Only this user's launchers.
    let me = nix::unistd::geteuid().as_raw();
    match conn.peer_cred() {
        Ok(c) if c.uid() == me => {}
        _ => return,
    }
    let mut token = Vec::new();
    while token.len() < 128 {
        let mut byte = [0u8; 1];
        match tokio::time::timeout(HANDSHAKE, conn.read(&mut byte)).await {
            Ok(Ok(1)) if byte[0] == b'\n' => break,
            Ok(Ok(1)) => token.push(byte[0]),
            _ => return,
        }
    }
    let token = String::from_utf8_lossy(&token).into_owned();
    let Some(net) = commands
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(&token)
        .cloned()
    else {
        return;
    };
    let room = Arc::new(tokio::sync::Semaphore::new(MOST_CONNECTIONS));
    loop {
        let fd = conn.as_raw_fd();
        let got = conn
            .async_io(tokio::io::Interest::READABLE, || receive(fd))
            .await;
        let fds = match got {
            Ok(Some(fds)) => fds,
            Ok(None) | Err(_) => return,
        };
        for owned in fds {
            // Past its share, a command's connection is closed at once.
            let Ok(permit) = room.clone().try_acquire_owned() else {
                continue;
            };
            let std = std::net::TcpStream::from(owned);
            if std.set_nonblocking(true).is_err() {
                continue;
            }
            let net = net.clone();
            tokio::spawn(async move {
                let Ok(stream) = tokio::net::TcpStream::from_std(std) else {
                    return;
                };
                serve(stream, &net).await;
                drop(permit);
            });
        }
    }
}

/// One message of the control connection: the descriptors it carries; `None` at its
/// end.
fn receive(fd: std::os::fd::RawFd) -> std::io::Result<Option<Vec<OwnedFd>>> {
    let mut buf = [0u8; 1];
    let mut space = nix::cmsg_space!([std::os::fd::RawFd; 4]);
    let mut iov = [std::io::IoSliceMut::new(&mut buf)];
    let msg = nix::sys::socket::recvmsg::<()>(
        fd,
        &mut iov,
        Some(&mut space),
        nix::sys::socket::MsgFlags::MSG_CMSG_CLOEXEC | nix::sys::socket::MsgFlags::MSG_DONTWAIT,
    )
    .map_err(|e| std::io::Error::from_raw_os_error(e as i32))?;
    if msg.bytes == 0 {
        return Ok(None);
    }
    let mut out = Vec::new();
    if let Ok(cmsgs) = msg.cmsgs() {
        for c in cmsgs {
            if let nix::sys::socket::ControlMessageOwned::ScmRights(got) = c {
                for fd in got {
                    // SAFETY: the kernel just gave this process the descriptor;
                    // nothing else owns it.
                    #[allow(unsafe_code)]
                    out.push(unsafe { OwnedFd::from_raw_fd(fd) });
                }
            }
        }
    }
    Ok(Some(out))
}

/// Serves one connection of a command: SOCKS5 when it starts with version 5, HTTP
/// otherwise.
async fn serve(client: tokio::net::TcpStream, net: &CommandNet) {
    let mut first = [0u8; 1];
    match tokio::time::timeout(HANDSHAKE, client.peek(&mut first)).await {
        Ok(Ok(1)) => {}
        _ => return,
    }
    if first[0] == 5 {
        socks5(client, net).await;
    } else {
        http(client, net).await;
    }
}

/// Whether a command may be connected to `ip` at all, whatever name led there: not
/// the link-local block (a cloud's metadata service answers there), nor an address
/// that names no one host.
fn reachable(ip: std::net::IpAddr) -> bool {
    use std::net::IpAddr;
    let ip = match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(ip),
        v4 => v4,
    };
    match ip {
        IpAddr::V4(v4) => {
            !(v4.is_link_local() || v4.is_unspecified() || v4.is_multicast() || v4.is_broadcast())
        }
        IpAddr::V6(v6) => {
            let link_local = (v6.segments()[0] & 0xffc0) == 0xfe80;
            !(link_local || v6.is_unspecified() || v6.is_multicast())
        }
    }
}

/// Connects to `host:port` within the handshake's time, to an address that was
/// checked (the one connected to: a name that resolves again differently changes
/// nothing).
async fn connect(host: &str, port: u16) -> Result<tokio::net::TcpStream, String> {
    let found = match tokio::time::timeout(HANDSHAKE, tokio::net::lookup_host((host, port))).await {
        Ok(Ok(addrs)) => addrs.collect::<Vec<_>>(),
        Ok(Err(e)) => return Err(format!("cannot reach {host}:{port}: {e}")),
        Err(_) => return Err(format!("cannot reach {host}:{port}: no answer in time")),
    };
    let usable: Vec<std::net::SocketAddr> = found
        .iter()
        .copied()
        .filter(|a| reachable(a.ip()))
        .collect();
    if usable.is_empty() && !found.is_empty() {
        return Err(format!(
            "{host} resolves to an address commands may not reach (link-local, unspecified or multicast)"
        ));
    }
    let mut last = format!("cannot reach {host}:{port}: no address");
    for addr in usable {
        match tokio::time::timeout(HANDSHAKE, tokio::net::TcpStream::connect(addr)).await {
            Ok(Ok(s)) => return Ok(s),
            Ok(Err(e)) => last = format!("cannot reach {host}:{port}: {e}"),
            Err(_) => last = format!("cannot reach {host}:{port}: no answer in time"),
        }
    }
    Err(last)
}

async fn http(mut client: tokio::net::TcpStream, net: &CommandNet) {
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    // The whole head within the handshake's time, not each read of it.
    let deadline = tokio::time::Instant::now() + HANDSHAKE;
    let mut searched = 0;
    let end = loop {
        if let Some(i) = head[searched..].windows(4).position(|w| w == b"\r\n\r\n") {
            break searched + i + 4;
        }
        searched = head.len().saturating_sub(3);
        if head.len() > MOST_HEAD {
            let _ = client
                .write_all(
                    b"HTTP/1.1 431 Request Header Fields Too Large\r\nConnection: close\r\n\r\n",
                )
                .await;
            return;
        }
        match tokio::time::timeout_at(deadline, client.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) | Err(_) => return,
            Ok(Ok(n)) => head.extend_from_slice(&buf[..n]),
        }
    };
    let text = String::from_utf8_lossy(&head[..end]).into_owned();
    let mut line = text.lines().next().unwrap_or_default().split_whitespace();
    let (method, target, version) = (
        line.next().unwrap_or_default().to_string(),
        line.next().unwrap_or_default().to_string(),
        line.next().unwrap_or("HTTP/1.1").to_string(),
    );
    let refuse = |status: &str, why: &str| {
        format!(
            "{version} {status}\r\nContent-Type: text/plain\r\nConnection: close\r\nX-Air-Refused: {}\r\n\r\nair: {why}\n",
            why.replace(['\r', '\n'], " ")
        )
    };
    let (host, port, rest) = if method.eq_ignore_ascii_case("CONNECT") {
        match split_host_port(&target, 443) {
            Some((h, p)) => (h, p, None),
            None => {
                let _ = client
                    .write_all(refuse("400 Bad Request", "CONNECT needs host:port").as_bytes())
                    .await;
                return;
            }
        }
    } else {
        let Some(after) = target.strip_prefix("http://") else {
            let _ = client
                .write_all(
                    refuse(
                        "400 Bad Request",
                        "this is a proxy: ask for http://host/… or CONNECT host:port",
                    )
                    .as_bytes(),
                )
                .await;
            return;
        };
        let (authority, path) = match after.find('/') {
            Some(i) => (&after[..i], &after[i..]),
            None => (after, "/"),
        };
        let authority = authority.rsplit('@').next().unwrap_or(authority);
        let Some((h, p)) = split_host_port(authority, 80) else {
            let _ = client
                .write_all(refuse("400 Bad Request", "no host in the URL").as_bytes())
                .await;
            return;
        };
        // The request goes on in origin form, for this host alone: its `Host` must
        // name it, the proxy's own headers stay here, and the connection closes
        // after it (a second request on it would name a host nobody judged).
        let after_line = head
            .windows(2)
            .position(|w| w == b"\r\n")
            .map(|i| i + 2)
            .unwrap_or(end)
            .min(end);
        let mut rewritten = format!("{method} {path} {version}\r\n").into_bytes();
        let fields = String::from_utf8_lossy(&head[after_line..end]).into_owned();
        let wanted = normal(&h);
        for field in fields.split("\r\n").filter(|f| !f.is_empty()) {
            let name = field.split(':').next().unwrap_or_default().trim();
            if HOP_BY_HOP.iter().any(|n| n.eq_ignore_ascii_case(name)) {
                continue;
            }
            if name.eq_ignore_ascii_case("host") {
                let value = field.split_once(':').map(|(_, v)| v).unwrap_or_default();
                let named = split_host_port(value, p).map(|(hh, _)| normal(&hh));
                if named.as_deref() != Some(wanted.as_str()) {
                    let _ = client
                        .write_all(
                            refuse(
                                "400 Bad Request",
                                "the Host header names another host than the request",
                            )
                            .as_bytes(),
                        )
                        .await;
                    return;
                }
            }
            rewritten.extend_from_slice(field.as_bytes());
            rewritten.extend_from_slice(b"\r\n");
        }
        rewritten.extend_from_slice(b"Connection: close\r\n\r\n");
        rewritten.extend_from_slice(&head[end..]);
        (h, p, Some(rewritten))
    };
    if let Err(why) = net.decide(&host, port).await {
        let _ = client
            .write_all(
                refuse(
                    "403 Forbidden",
                    &format!("network access to {host} was not given: {why}"),
                )
                .as_bytes(),
            )
            .await;
        return;
    }
    let mut upstream = match connect(&host, port).await {
        Ok(u) => u,
        Err(why) => {
            let _ = client
                .write_all(refuse("502 Bad Gateway", &why).as_bytes())
                .await;
            return;
        }
    };
    match rest {
        None => {
            if client
                .write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                .await
                .is_err()
            {
                return;
            }
            // Anything the client sent after its CONNECT's head goes on.
            if head.len() > end && upstream.write_all(&head[end..]).await.is_err() {
                return;
            }
        }
        Some(request) => {
            if upstream.write_all(&request).await.is_err() {
                return;
            }
        }
    }
    let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
}

/// `host:port` (or `[v6]:port`, or a host alone with `default`).
fn split_host_port(s: &str, default: u16) -> Option<(String, u16)> {
    let s = s.trim();
    if let Some(rest) = s.strip_prefix('[') {
        let (h, after) = rest.split_once(']')?;
        let port = match after.strip_prefix(':') {
            Some(p) => p.parse().ok()?,
            None => default,
        };
        return Some((h.to_string(), port));
    }
    match s.rsplit_once(':') {
        Some((h, p)) if !h.contains(':') => Some((h.to_string(), p.parse().ok()?)),
        Some(_) => None,
        None if !s.is_empty() => Some((s.to_string(), default)),
        None => None,
    }
}

/// A SOCKS5 request's host and port, read within the handshake's time; `Err` with the
/// reply to send (if any) otherwise.
async fn socks5_request(client: &mut tokio::net::TcpStream) -> Result<(String, u16), Option<u8>> {
    let mut hello = [0u8; 2];
    client.read_exact(&mut hello).await.map_err(|_| None)?;
    let mut methods = vec![0u8; usize::from(hello[1])];
    client.read_exact(&mut methods).await.map_err(|_| None)?;
    // No authentication.
    if !methods.contains(&0) {
        let _ = client.write_all(&[5, 0xff]).await;
        return Err(None);
    }
    client.write_all(&[5, 0]).await.map_err(|_| None)?;
    let mut req = [0u8; 4];
    client.read_exact(&mut req).await.map_err(|_| None)?;
    let host = match req[3] {
        1 => {
            let mut a = [0u8; 4];
            client.read_exact(&mut a).await.map_err(|_| None)?;
            std::net::Ipv4Addr::from(a).to_string()
        }
        4 => {
            let mut a = [0u8; 16];
            client.read_exact(&mut a).await.map_err(|_| None)?;
            std::net::Ipv6Addr::from(a).to_string()
        }
        3 => {
            let mut n = [0u8; 1];
            client.read_exact(&mut n).await.map_err(|_| None)?;
            let mut name = vec![0u8; usize::from(n[0])];
            client.read_exact(&mut name).await.map_err(|_| None)?;
            String::from_utf8_lossy(&name).into_owned()
        }
        _ => return Err(Some(8)),
    };
    let mut port = [0u8; 2];
    client.read_exact(&mut port).await.map_err(|_| None)?;
    if req[1] != 1 {
        // Only CONNECT: no UDP, no listening.
        return Err(Some(7));
    }
    Ok((host, u16::from_be_bytes(port)))
}

async fn socks5(mut client: tokio::net::TcpStream, net: &CommandNet) {
    let reply = |code: u8| [5, code, 0, 1, 0, 0, 0, 0, 0, 0];
    let (host, port) = match tokio::time::timeout(HANDSHAKE, socks5_request(&mut client)).await {
        Ok(Ok(asked)) => asked,
        Ok(Err(Some(code))) => {
            let _ = client.write_all(&reply(code)).await;
            return;
        }
        Ok(Err(None)) | Err(_) => return,
    };
    if net.decide(&host, port).await.is_err() {
        let _ = client.write_all(&reply(2)).await;
        return;
    }
    let mut upstream = match connect(&host, port).await {
        Ok(u) => u,
        Err(_) => {
            let _ = client.write_all(&reply(5)).await;
            return;
        }
    };
    if client.write_all(&reply(0)).await.is_err() {
        return;
    }
    let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
}

#[cfg(test)]
mod tests;
