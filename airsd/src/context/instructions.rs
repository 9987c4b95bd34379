//! The instruction files a project keeps for coding agents, read into the context as
//! rules: `AGENTS.md` at the root for every task, and one in a directory for the
//! tasks whose files lie under it (the nearest scope, as Codex reads them);
//! `CLAUDE.md` at the root or in `.claude/` for every task. Each within its share of
//! the context; the rest stays in the file, for the agent to read.
//!
//! Must not: follow a link (an instruction file linked to a secret would put the
//! secret in every request), or walk a whole large tree.

use std::path::{Path, PathBuf};

use super::Rule;

/// Bytes of one file's text the context carries.
pub const SHARE: usize = 6 * 1024;
/// Directory levels searched for nested `AGENTS.md` files.
const DEPTH: usize = 6;
/// Entries of the tree looked at, at most.
const SCANNED: usize = 20_000;

/// The project's instruction files as rules, root ones first.
pub fn load(root: &Path) -> Vec<Rule> {
    let Ok(root) = root.canonicalize() else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = ["AGENTS.md", "CLAUDE.md", ".claude/CLAUDE.md"]
        .iter()
        .map(|n| root.join(n))
        .filter(|p| std::fs::symlink_metadata(p).is_ok_and(|m| m.is_file()))
        .collect();
    let walk = ignore::WalkBuilder::new(&root)
        .max_depth(Some(DEPTH))
        .follow_links(false)
        .hidden(true)
        .build();
    let mut nested: Vec<PathBuf> = walk
        .take(SCANNED)
        .flatten()
        .filter(|e| e.depth() > 1 && e.file_name() == "AGENTS.md")
        .filter(|e| e.file_type().is_some_and(|t| t.is_file()))
        .map(|e| e.into_path())
        .collect();
    nested.sort();
    found.extend(nested);
    found
        .into_iter()
        .filter_map(|path| {
            let text = crate::opened::read_small(&path, &root, 256 * 1024)?;
            let name = path.strip_prefix(&root).ok()?.display().to_string();
            let dir = Path::new(&name)
                .parent()
                .map(|d| d.display().to_string())
                .filter(|d| !d.is_empty() && d != ".claude")
                .unwrap_or_default();
            let mut body = text.trim().to_string();
            if body.len() > SHARE {
                body.truncate(air_proto::text::floor_boundary(&body, SHARE));
                body.push_str(&format!(
                    "\n\n(The rest of {name} is in the file: read it with fs_read.)"
                ));
            }
            Some(Rule {
                paths: if dir.is_empty() {
                    Vec::new()
                } else {
                    vec![format!("{dir}/**")]
                },
                name,
                body,
                scoped: !dir.is_empty(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nearest_instructions_apply_and_links_are_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(
            root.join("AGENTS.md"),
            "Run `make test` before you finish.\n",
        )
        .unwrap();
        std::fs::create_dir_all(root.join(".claude")).unwrap();
        std::fs::write(root.join(".claude/CLAUDE.md"), "Use tabs.\n").unwrap();
        std::fs::create_dir_all(root.join("web/ui")).unwrap();
        std::fs::write(root.join("web/AGENTS.md"), "pnpm only.\n").unwrap();
        std::fs::write(root.join("web/ui/AGENTS.md"), "x".repeat(SHARE + 100)).unwrap();
        // Ignored and linked ones are not read.
        std::fs::write(root.join(".gitignore"), "vendor/\n").unwrap();
        std::fs::create_dir_all(root.join("vendor/lib")).unwrap();
        std::fs::write(root.join("vendor/lib/AGENTS.md"), "not ours\n").unwrap();
        let secret = tempfile::tempdir().unwrap();
        std::fs::write(secret.path().join("s"), "TOKEN=1\n").unwrap();
        std::fs::create_dir_all(root.join("docs")).unwrap();
        std::os::unix::fs::symlink(secret.path().join("s"), root.join("docs/AGENTS.md")).unwrap();
        std::os::unix::fs::symlink(secret.path().join("s"), root.join("CLAUDE.md")).unwrap();
        std::fs::create_dir_all(root.join(".git")).unwrap();
        let rules = load(root);
        let names: Vec<&str> = rules.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "AGENTS.md",
                ".claude/CLAUDE.md",
                "web/AGENTS.md",
                "web/ui/AGENTS.md"
            ]
        );
        assert!(rules[0].paths.is_empty() && !rules[0].scoped);
        assert!(rules[1].paths.is_empty() && !rules[1].scoped);
        assert_eq!(rules[2].paths, ["web/**"]);
        assert!(rules[2].scoped);
        assert!(rules[3].body.ends_with("read it with fs_read.)"));
        assert!(rules[3].body.len() < SHARE + 200);
        assert!(!rules.iter().any(|r| r.body.contains("TOKEN")));
    }
}
