//! Skills on disk: finding them, reading their front matter, loading one.

use std::path::Path;

use serde::Deserialize;

use super::SkillRef;
#[derive(Deserialize, Default)]
struct Front {
    name: Option<String>,
    description: Option<String>,
    /// Other keys of the format (license, allowed tools …) are the skill's own.
    #[serde(flatten)]
    _rest: std::collections::BTreeMap<String, serde_json::Value>,
}

/// The most characters of a description agents are shown.
const DESCRIPTION_CHARS: usize = 1_024;
/// The most files of a skill's folders listed when it is loaded.
const FILES_LISTED: usize = 100;
/// The largest `SKILL.md` read.
const MAX_SKILL_BYTES: u64 = 256 * 1024;

/// The skills installed: the user's, then the project's over them by name, sorted by
/// name; and what could not be read, each named by file (and line).
#[cfg(feature = "hooks")]
pub fn discover(air_home: Option<&Path>, shared: &Path) -> (Vec<SkillRef>, Vec<String>) {
    let mut skills: Vec<SkillRef> = Vec::new();
    let mut problems = Vec::new();
    // The trusted capabilities' skills first: the person's own and the project's
    // of the same name win over them.
    let root = shared.parent().and_then(Path::parent).unwrap_or(shared);
    let (capabilities, _) = crate::capability::trusted(air_home, root);
    let tiers = capabilities
        .iter()
        .map(|c| {
            c.manifest
                .adds
                .skills
                .as_ref()
                .map(|rel| (c.within(rel), "capability"))
        })
        .chain([
            air_home.map(|h| (h.join("skills"), "user")),
            Some((shared.join("skills"), "project")),
        ]);
    for (dir, scope) in tiers.flatten() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut dirs: Vec<std::path::PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_dir())
            .collect();
        dirs.sort();
        for d in dirs {
            let file = d.join("SKILL.md");
            if !file.is_file() {
                continue;
            }
            match read(&file, scope) {
                Ok(skill) => {
                    skills.retain(|s| s.name != skill.name);
                    skills.push(skill);
                }
                Err(e) => problems.push(e),
            }
        }
    }
    skills.sort_by(|a, b| a.name.cmp(&b.name));
    (skills, problems)
}

/// One skill from its `SKILL.md`, or what is wrong with it (by file and line).
pub fn read(file: &Path, scope: &str) -> Result<SkillRef, String> {
    let text = read_bounded(file)?;
    let (front, _) = crate::config::split_front_matter(&text);
    let Some((yaml, first)) = front else {
        return Err(format!(
            "{}: no front matter (a `---` block with `name` and `description`)",
            file.display()
        ));
    };
    let front: Front = crate::config::parse_front_matter(file, yaml, first)?;
    let name = front
        .name
        .filter(|n| !n.trim().is_empty())
        .ok_or_else(|| format!("{}: the front matter has no `name`", file.display()))?;
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return Err(format!(
            "{}: `name` {name:?} may hold only letters, digits, `-` and `_`",
            file.display()
        ));
    }
    let description = front
        .description
        .filter(|d| !d.trim().is_empty())
        .ok_or_else(|| {
            format!(
                "{}: the front matter has no `description` (say what the skill does and when to use it)",
                file.display()
            )
        })?;
    let description: String = description
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .take(DESCRIPTION_CHARS)
        .collect();
    Ok(SkillRef {
        name,
        description,
        path: file.display().to_string(),
        scope: scope.to_string(),
    })
}

fn read_bounded(file: &Path) -> Result<String, String> {
    use std::io::Read as _;
    let f = std::fs::File::open(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let mut text = String::new();
    f.take(MAX_SKILL_BYTES)
        .read_to_string(&mut text)
        .map_err(|e| format!("{}: {e}", file.display()))?;
    Ok(text)
}

/// A skill's instructions as an agent loads them: the body of its `SKILL.md`, then
/// the files of its `scripts/`, `references/` and `assets/` by path.
pub fn load(skill: &SkillRef) -> Result<String, String> {
    let file = Path::new(&skill.path);
    let text = read_bounded(file)?;
    let (_, body) = crate::config::split_front_matter(&text);
    let dir = file.parent().unwrap_or(Path::new("."));
    let mut out = format!(
        "# Skill `{}` ({})\n\n{}\n",
        skill.name,
        dir.display(),
        body.trim()
    );
    let mut files = Vec::new();
    for sub in ["scripts", "references", "assets"] {
        collect(&dir.join(sub), dir, &mut files);
    }
    files.sort();
    if !files.is_empty() {
        out.push_str("\n## Its files (read or run them by these paths)\n\n");
        for f in files.iter().take(FILES_LISTED) {
            out.push_str(&format!("- {}\n", dir.join(f).display()));
        }
        if files.len() > FILES_LISTED {
            out.push_str(&format!("- … and {} more\n", files.len() - FILES_LISTED));
        }
    }
    Ok(out)
}

fn collect(dir: &Path, base: &Path, out: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        if out.len() > FILES_LISTED * 2 {
            return;
        }
        let Ok(kind) = e.file_type() else {
            continue;
        };
        let path = e.path();
        if kind.is_dir() {
            collect(&path, base, out);
        } else if kind.is_file() {
            if let Ok(rel) = path.strip_prefix(base) {
                out.push(rel.display().to_string());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skill(root: &Path, name: &str, text: &str) {
        let d = root.join("skills").join(name);
        std::fs::create_dir_all(d.join("scripts")).unwrap();
        std::fs::write(d.join("SKILL.md"), text).unwrap();
        std::fs::write(d.join("scripts").join("run.sh"), "echo hi\n").unwrap();
    }

    #[test]
    fn skills_are_found_in_both_places_the_project_wins_and_broken_ones_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let (home, shared) = (dir.path().join("home"), dir.path().join("shared"));
        skill(&home, "release", "---\nname: release\ndescription: Cut a release. Use when asked to publish.\n---\nTag it.\n");
        skill(&home, "bisect", "---\nname: bisect\ndescription: >\n  Find the commit that broke a test,\n  with git bisect.\nlicense: MIT\n---\nRun git bisect.\n");
        skill(&shared, "release", "---\nname: release\ndescription: The project's own release steps.\n---\nRun make dist.\n");
        skill(
            &shared,
            "broken",
            "---\nname: broken\ndescription: [unclosed\n---\n",
        );
        skill(&shared, "nameless", "---\ndescription: x\n---\n");
        let (skills, problems) = discover(Some(&home), &shared);
        let names: Vec<(&str, &str)> = skills
            .iter()
            .map(|s| (s.name.as_str(), s.scope.as_str()))
            .collect();
        assert_eq!(names, [("bisect", "user"), ("release", "project")]);
        assert_eq!(
            skills[0].description,
            "Find the commit that broke a test, with git bisect."
        );
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].contains("broken/SKILL.md:3"), "{}", problems[0]);
        assert!(problems[1].contains("no `name`"), "{}", problems[1]);
        let body = load(&skills[1]).unwrap();
        assert!(
            body.contains("Run make dist.") && !body.contains("description:"),
            "{body}"
        );
        assert!(body.contains("scripts/run.sh"), "{body}");
    }
}
