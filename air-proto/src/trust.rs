//! What a person trusts once per project, pinned by the hash of what it is: a
//! project's hooks and MCP servers, a capability (`~/.air/trust.json`, the person's,
//! never the project's). And the careful reads and writes of the files that
//! declare them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Longest configuration file read.
pub(crate) const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// A configuration file's text; `None` when it is not there. Only a regular file (a
/// project's, `follow` false, never followed through a link; never a FIFO or a
/// device), and not a large one.
pub(crate) fn read_config(p: &Path, follow: bool) -> Result<Option<String>, String> {
    use std::io::Read as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    // Checked on what was opened, never on the name (which a command may swap for a
    // FIFO or a link between a look and the read).
    let mut flags = nix::fcntl::OFlag::O_NONBLOCK;
    if !follow {
        flags |= nix::fcntl::OFlag::O_NOFOLLOW;
    }
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags.bits())
        .open(p)
    {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(nix::libc::ELOOP) => {
            return Err(format!("{}: a link, which is not followed", p.display()))
        }
        Err(e) => return Err(format!("{}: {e}", p.display())),
        Ok(f) => f,
    };
    let meta = file
        .metadata()
        .map_err(|e| format!("{}: {e}", p.display()))?;
    if !meta.is_file() {
        return Err(format!("{}: not a regular file", p.display()));
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(format!(
            "{}: {} bytes; a configuration file holds at most {MAX_FILE_BYTES}",
            p.display(),
            meta.len()
        ));
    }
    let mut text = String::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_string(&mut text)
        .map_err(|e| format!("{}: {e}", p.display()))?;
    Ok(Some(text))
}

/// What a person trusted, per project: the pins of its hooks, and what each hook was
/// (`~/.air/trust.json`, the person's, never the project's).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Trust {
    /// Project root → pins trusted there.
    #[serde(default)]
    pub projects: BTreeMap<String, Vec<String>>,
    /// Project root → the identities of the hooks trusted there, to tell a hook that
    /// changed (it, or a file it runs) from one never trusted.
    #[serde(default)]
    pub identities: BTreeMap<String, Vec<String>>,
}

/// What a person trusts once per project: a hook, an MCP server. Its pin is what it
/// is now (its declaration and the project's files it runs); its identity, its
/// declaration alone, tells one that changed from one never trusted.
pub trait Pinned {
    fn identity(&self) -> String;
    fn pin(&self) -> String;
    fn needs_trust(&self) -> bool;
}

impl<T: Pinned> Pinned for &T {
    fn identity(&self) -> String {
        (*self).identity()
    }
    fn pin(&self) -> String {
        (*self).pin()
    }
    fn needs_trust(&self) -> bool {
        (*self).needs_trust()
    }
}

/// Whether a hook (an MCP server) may run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trusted {
    Yes,
    /// Never trusted in this project.
    No,
    /// Trusted once, and it (or a file it runs) changed since.
    Changed,
}

impl Trust {
    /// The trust file at `path`; none when it is not there.
    pub fn load(path: &Path) -> Result<Trust, String> {
        match std::fs::read_to_string(path) {
            Ok(text) => serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Trust::default()),
            Err(e) => Err(format!("{}: {e}", path.display())),
        }
    }

    /// Whether `item` (a hook, an MCP server) may run in the project at `root`.
    pub fn of(&self, root: &Path, item: &impl Pinned) -> Trusted {
        if !item.needs_trust() {
            return Trusted::Yes;
        }
        let key = root.display().to_string();
        let has = |m: &BTreeMap<String, Vec<String>>, v: &str| {
            m.get(&key).is_some_and(|l| l.iter().any(|x| x == v))
        };
        if has(&self.projects, &item.pin()) {
            Trusted::Yes
        } else if has(&self.identities, &item.identity()) {
            Trusted::Changed
        } else {
            Trusted::No
        }
    }

    pub fn allows(&self, root: &Path, item: &impl Pinned) -> bool {
        self.of(root, item) == Trusted::Yes
    }

    /// Trusts `items` in the project at `root` as they are (one changed since, or a
    /// file it runs, is not).
    pub fn trust<P: Pinned>(&mut self, root: &Path, items: &[P]) {
        let key = root.display().to_string();
        for h in items.iter().filter(|h| h.needs_trust()) {
            for (map, value) in [
                (&mut self.projects, h.pin()),
                (&mut self.identities, h.identity()),
            ] {
                let list = map.entry(key.clone()).or_default();
                if !list.contains(&value) {
                    list.push(value);
                }
            }
        }
    }

    /// Writes the trust file whole (readable by its owner only).
    pub fn save(&self, path: &Path) -> Result<(), String> {
        let text = serde_json::to_string_pretty(self).map_err(|e| e.to_string())?;
        write_private(path, text.as_bytes())
    }
}

/// Writes `path` whole, readable by its owner only: a new file of a fresh name
/// beside it (never opened through a link), synced, then renamed over it.
pub fn write_private(path: &Path, bytes: &[u8]) -> Result<(), String> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    if std::fs::symlink_metadata(path).is_ok_and(|m| !m.is_file()) {
        return Err(format!(
            "{}: not a regular file (a link is not written through)",
            path.display()
        ));
    }
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".{}.{stamp}.tmp", std::process::id()));
    let tmp = dir.join(name);
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .and_then(|mut f| f.write_all(bytes).and_then(|()| f.sync_all()))
        .and_then(|()| std::fs::rename(&tmp, path));
    written.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        format!("{}: {e}", path.display())
    })
}

/// The hash of `parts`, each length-prefixed (so that no two lists share it).
pub(crate) fn hash_parts<'a>(parts: impl IntoIterator<Item = &'a str>) -> String {
    let mut h = Sha256::new();
    for part in parts {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part.as_bytes());
    }
    hex(&h.finalize())
}

/// A pin: an identity and the files it runs, as they are now.
pub(crate) fn pin_of(identity: &str, files: &[(PathBuf, String)]) -> String {
    let mut h = Sha256::new();
    h.update(identity.as_bytes());
    for (path, hash) in files {
        let path = path.display().to_string();
        h.update((path.len() as u64).to_le_bytes());
        h.update(path.as_bytes());
        h.update(hash.as_bytes());
    }
    hex(&h.finalize())
}
