//! Capabilities (baseline §10): a folder with a `capability.yaml` manifest that adds
//! MCP servers, skills, hooks and rules, and says what it needs (network domains,
//! environment variables, dependencies as DependencySpecs, which `air doctor`
//! checks and `air setup` installs). Installed for the person
//! (`~/.air/capabilities/<name>/`) or the project (`.air/shared/capabilities/<name>/`)
//! with `air capability add PATH|GIT`, which trusts it as it is: its pin is the hash
//! of every file of the folder. Changed since, it adds nothing until trusted again
//! (`air capability trust`). docs/capabilities.md.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::dependency::DependencySpec;
use crate::trust::{hash_parts, hex, pin_of, read_config, Pinned, Trust, Trusted};

/// The manifest's file name.
pub const MANIFEST: &str = "capability.yaml";
/// Most files a capability holds, and most bytes in all.
pub const MOST_FILES: usize = 2_000;
pub const MOST_BYTES: u64 = 50 * 1024 * 1024;

/// What a capability adds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Adds {
    /// MCP servers, as `mcp.yaml` declares them (`servers:`), by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub mcp_servers: BTreeMap<String, Value>,
    /// A folder of skills (each a folder with a `SKILL.md`), within the capability.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skills: Option<String>,
    /// A hooks file (`hooks.yaml`'s form), within the capability.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hooks: Option<String>,
    /// A folder of rules (Markdown files, as `.air/shared/rules/`), within the
    /// capability.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rules: Option<String>,
}

/// What a capability needs.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Needs {
    /// Hosts its servers and commands reach (allowed in runs while it is trusted,
    /// as `permissions.yaml` `allow_domains`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub network: Vec<String>,
    /// Variables it expects in the environment (`air doctor` says which are unset).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<String>,
    /// What must be installed (D-045): `air doctor` checks, `air setup` installs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dependencies: Vec<DependencySpec>,
}

/// A manifest as written.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    pub name: String,
    pub version: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub adds: Adds,
    #[serde(default)]
    pub needs: Needs,
}

/// Where a capability is installed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    User,
    Project,
}

impl Scope {
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::User => "user",
            Scope::Project => "project",
        }
    }
}

/// An installed capability.
#[derive(Clone, Debug, PartialEq)]
pub struct Capability {
    pub manifest: Manifest,
    pub dir: PathBuf,
    pub scope: Scope,
    /// The hash of every file of its folder, as it is now.
    pub tree: String,
}

impl Pinned for Capability {
    fn identity(&self) -> String {
        hash_parts(["capability", self.scope.as_str(), &self.manifest.name])
    }

    fn pin(&self) -> String {
        pin_of(
            &self.identity(),
            &[(PathBuf::from("tree"), self.tree.clone())],
        )
    }

    fn needs_trust(&self) -> bool {
        true
    }
}

impl Capability {
    /// A path the manifest names, within the capability's folder.
    pub fn within(&self, rel: &str) -> PathBuf {
        self.dir.join(rel)
    }

    /// Its MCP servers, as `mcp.yaml` declares them.
    pub fn mcp_yaml(&self) -> Option<String> {
        if self.manifest.adds.mcp_servers.is_empty() {
            return None;
        }
        let doc = serde_json::json!({ "servers": self.manifest.adds.mcp_servers });
        serde_json::to_string(&doc).ok()
    }
}

/// Whether `name` may name a capability (its folder): letters, digits, `-`, `_`,
/// `.`, at most 64, not starting with `.`.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// A relative path inside the capability: no `..`, not absolute, no control
/// characters.
fn inside(rel: &str, field: &str) -> Result<(), String> {
    let p = Path::new(rel);
    if rel.is_empty()
        || p.is_absolute()
        || p.components()
            .any(|c| !matches!(c, std::path::Component::Normal(_)))
        || rel.chars().any(char::is_control)
    {
        return Err(format!(
            "{field}: `{rel}`: a path inside the capability's folder"
        ));
    }
    Ok(())
}

/// Every file of the folder `dir` (relative, sorted) with its bytes' hash; a link,
/// a device or a FIFO anywhere in it is refused, as are more than [`MOST_FILES`]
/// files or [`MOST_BYTES`] bytes.
pub fn tree(dir: &Path) -> Result<(String, Vec<(String, u64)>), String> {
    let mut files: Vec<(String, u64, String)> = Vec::new();
    let mut total = 0u64;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let entries = std::fs::read_dir(&d).map_err(|e| format!("{}: {e}", d.display()))?;
        for e in entries {
            let e = e.map_err(|e| format!("{}: {e}", d.display()))?;
            let path = e.path();
            let meta =
                std::fs::symlink_metadata(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            let rel = path
                .strip_prefix(dir)
                .map_err(|e| e.to_string())?
                .to_string_lossy()
                .into_owned();
            if rel == ".git" || rel.starts_with(".git/") {
                continue;
            }
            if meta.is_dir() {
                stack.push(path);
            } else if meta.is_file() {
                total += meta.len();
                if files.len() >= MOST_FILES || total > MOST_BYTES {
                    return Err(format!(
                        "{}: more than {MOST_FILES} files or {MOST_BYTES} bytes",
                        dir.display()
                    ));
                }
                let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
                files.push((rel, meta.len(), hex(&Sha256::digest(&bytes))));
            } else {
                return Err(format!(
                    "{}: a link or special file; a capability holds only files and folders",
                    path.display()
                ));
            }
        }
    }
    files.sort();
    let mut h = Sha256::new();
    for (rel, _, hash) in &files {
        h.update((rel.len() as u64).to_le_bytes());
        h.update(rel.as_bytes());
        h.update(hash.as_bytes());
    }
    Ok((
        hex(&h.finalize()),
        files.into_iter().map(|(r, n, _)| (r, n)).collect(),
    ))
}

/// The capability in the folder `dir`, its manifest checked (what it names is in the
/// folder; its servers are read where MCP servers are, [`crate::mcp::load`]).
pub fn read(dir: &Path, scope: Scope) -> Result<Capability, String> {
    let file = dir.join(MANIFEST);
    let text = read_config(&file, false)?
        .ok_or_else(|| format!("{}: no {MANIFEST} (a capability's manifest)", dir.display()))?;
    let manifest: Manifest =
        serde_path_to_error::deserialize(yaml_serde::Deserializer::from_str(&text))
            .map_err(|e| format!("{}: {}: {}", file.display(), e.path(), e.inner()))?;
    let shown = file.display();
    if !valid_name(&manifest.name) {
        return Err(format!(
            "{shown}: name: `{}`: letters, digits, `-`, `_` and `.` (at most 64)",
            manifest.name
        ));
    }
    if manifest.version.trim().is_empty() || manifest.version.chars().any(char::is_control) {
        return Err(format!("{shown}: version: give one (`1.0.0`)"));
    }
    for (field, rel) in [
        ("adds.skills", &manifest.adds.skills),
        ("adds.hooks", &manifest.adds.hooks),
        ("adds.rules", &manifest.adds.rules),
    ] {
        if let Some(rel) = rel {
            inside(rel, &format!("{shown}: {field}"))?;
            if std::fs::symlink_metadata(dir.join(rel)).is_err() {
                return Err(format!(
                    "{shown}: {field}: `{rel}` is not in the capability"
                ));
            }
        }
    }
    for host in &manifest.needs.network {
        if host.is_empty()
            || host
                .chars()
                .any(|c| c.is_whitespace() || c.is_control() || c == '/')
        {
            return Err(format!("{shown}: needs.network: `{host}`: a host name (`api.example.com`, `*.example.com`)"));
        }
    }
    let (tree, _) = tree(dir)?;
    Ok(Capability {
        manifest,
        dir: dir.to_path_buf(),
        scope,
        tree,
    })
}

/// Where the person's capabilities are installed.
pub fn user_dir(air_home: &Path) -> PathBuf {
    air_home.join("capabilities")
}

/// Where the project's are.
pub fn project_dir(root: &Path) -> PathBuf {
    root.join(".air").join("shared").join("capabilities")
}

/// What a trust of a capability is kept under: the project's root for a project's,
/// air's home for the person's (trusted once, for every project).
pub fn trust_key(c: &Capability, air_home: Option<&Path>, root: &Path) -> PathBuf {
    match (c.scope, air_home) {
        (Scope::User, Some(h)) => h.to_path_buf(),
        _ => root.to_path_buf(),
    }
}

/// Every capability installed, with whether a person trusted it as it is now, and
/// what could not be read (passed over, named).
#[derive(Clone, Debug, Default)]
pub struct Installed {
    pub capabilities: Vec<(Capability, Trusted)>,
    pub warnings: Vec<String>,
}

impl Installed {
    /// The capabilities that add what they declare: those trusted as they are.
    pub fn trusted(&self) -> impl Iterator<Item = &Capability> {
        self.capabilities
            .iter()
            .filter(|(_, t)| *t == Trusted::Yes)
            .map(|(c, _)| c)
    }
}

/// The capabilities installed for the person and the project at `root`. A folder
/// without a manifest is passed over with a warning; a project's capability named as
/// one of the person's is passed over too (the person's is the one used).
pub fn installed(air_home: Option<&Path>, root: &Path, trust: &Trust) -> Installed {
    let mut out = Installed::default();
    let tiers = [
        air_home.map(|h| (user_dir(h), Scope::User)),
        Some((project_dir(root), Scope::Project)),
    ];
    for (dir, scope) in tiers.into_iter().flatten() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut dirs: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_dir()))
            .collect();
        dirs.sort();
        for d in dirs {
            match read(&d, scope) {
                Ok(c) => {
                    if out
                        .capabilities
                        .iter()
                        .any(|(o, _)| o.manifest.name == c.manifest.name)
                    {
                        out.warnings.push(format!(
                            "{}: capability `{}` is installed for you too: yours is used",
                            d.display(),
                            c.manifest.name
                        ));
                        continue;
                    }
                    let key = trust_key(&c, air_home, root);
                    let t = trust.of(&key, &c);
                    out.capabilities.push((c, t));
                }
                Err(e) => out.warnings.push(format!("{e}: passed over")),
            }
        }
    }
    out
}

/// The trusted capabilities of the project at `root`, read with the person's trust
/// (`air_home/trust.json`); warnings for what was passed over.
///
/// The answer is kept while nothing it was read from changed: the trust file and
/// every entry of the capabilities' folders, by inode, size and change time (which
/// no write can keep as it was), so that an agent's every start does not hash the
/// folders again.
pub fn trusted(air_home: Option<&Path>, root: &Path) -> (Vec<Capability>, Vec<String>) {
    type Kept = Vec<(String, Vec<Stamp>, (Vec<Capability>, Vec<String>))>;
    static KEPT: std::sync::Mutex<Kept> = std::sync::Mutex::new(Vec::new());
    let any = air_home.is_some_and(|h| user_dir(h).is_dir()) || project_dir(root).is_dir();
    if !any {
        return (Vec::new(), Vec::new());
    }
    let key = format!("{:?}\0{}", air_home, root.display());
    let mut places: Vec<PathBuf> = vec![project_dir(root)];
    if let Some(h) = air_home {
        places.push(user_dir(h));
        places.push(h.join("trust.json"));
    }
    let now: Vec<Stamp> = places.iter().flat_map(|p| stamps(p)).collect();
    let mut kept = KEPT.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, _, answer)) = kept.iter().find(|(k, s, _)| *k == key && *s == now) {
        return answer.clone();
    }
    let answer = read_trusted(air_home, root);
    kept.retain(|(k, _, _)| *k != key);
    if kept.len() >= 8 {
        kept.remove(0);
    }
    kept.push((key, now, answer.clone()));
    answer
}

/// What a file or folder entry is now: its path, inode, size and change time.
type Stamp = (PathBuf, u64, u64, i64, i64);

/// The stamps of `path` and of everything under it (links not followed).
fn stamps(path: &Path) -> Vec<Stamp> {
    use std::os::unix::fs::MetadataExt as _;
    let mut out = Vec::new();
    let mut stack = vec![path.to_path_buf()];
    while let Some(p) = stack.pop() {
        let Ok(m) = std::fs::symlink_metadata(&p) else {
            continue;
        };
        out.push((p.clone(), m.ino(), m.size(), m.ctime(), m.ctime_nsec()));
        if m.is_dir() && out.len() < 4 * MOST_FILES {
            if let Ok(entries) = std::fs::read_dir(&p) {
                stack.extend(entries.filter_map(|e| e.ok().map(|e| e.path())));
            }
        }
    }
    out.sort();
    out
}

/// [`trusted`], read afresh.
fn read_trusted(air_home: Option<&Path>, root: &Path) -> (Vec<Capability>, Vec<String>) {
    let trust = match air_home {
        Some(h) => match Trust::load(&h.join("trust.json")) {
            Ok(t) => t,
            Err(e) => return (Vec::new(), vec![format!("{e}: no capability is used")]),
        },
        None => Trust::default(),
    };
    let mut found = installed(air_home, root, &trust);
    for (c, t) in &found.capabilities {
        match t {
            Trusted::Yes => {}
            Trusted::No => found.warnings.push(format!(
                "capability `{}` ({}): nobody trusted it: it adds nothing (`air capability trust`)",
                c.manifest.name,
                c.dir.display()
            )),
            Trusted::Changed => found.warnings.push(format!(
                "capability `{}` ({}): changed since it was trusted: it adds nothing until trusted again (`air capability trust`)",
                c.manifest.name,
                c.dir.display()
            )),
        }
    }
    let warnings = found.warnings.clone();
    (found.trusted().cloned().collect(), warnings)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn write(dir: &Path, rel: &str, text: &str) {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    #[test]
    fn a_capability_is_read_checked_and_pinned_by_every_file() {
        let d = tempfile::tempdir().unwrap();
        let cap = d.path().join("gh");
        write(&cap, MANIFEST, "name: gh\nversion: 1.0.0\nadds:\n  mcp_servers:\n    gh:\n      command: gh-mcp\n  skills: skills\n  rules: rules\nneeds:\n  network: [api.github.com]\n  env: [GITHUB_TOKEN]\n  dependencies:\n    - id: gh\n      kind: executable\n      required_for: [gh]\n      severity: optional\n      detect: {executable: gh}\n      risk: none\n");
        write(
            &cap,
            "skills/triage/SKILL.md",
            "---\nname: triage\ndescription: Triage issues.\n---\nDo it.\n",
        );
        write(&cap, "rules/style.md", "Be brief.\n");
        let c = read(&cap, Scope::User).unwrap();
        assert_eq!(c.manifest.needs.dependencies.len(), 1);
        let pin = c.pin();
        write(&cap, "rules/style.md", "Be long.\n");
        assert_ne!(read(&cap, Scope::User).unwrap().pin(), pin);
        // Paths outside, unknown fields and links are refused, by name.
        write(
            &cap,
            MANIFEST,
            "name: gh\nversion: 1\nadds:\n  hooks: ../x\n",
        );
        assert!(read(&cap, Scope::User).unwrap_err().contains("adds.hooks"));
        write(&cap, MANIFEST, "name: gh\nversion: 1\nadds:\n  toolz: []\n");
        assert!(read(&cap, Scope::User).unwrap_err().contains("toolz"));
        write(&cap, MANIFEST, "name: gh\nversion: 1\n");
        std::os::unix::fs::symlink("/etc/passwd", cap.join("link")).unwrap();
        assert!(read(&cap, Scope::User).unwrap_err().contains("link"));
    }
}
