//! `cpp.analyze`: cppcheck over the C and C++ files a task changed (through the
//! compilation database when it lists them), and clang-tidy when installed, judged by
//! what the change adds. A finding counts against the task unless the project had it
//! at its last commit: it stands on a line the change did not make, and the same
//! analysis of a copy of the project as it was at that commit finds it too (a call
//! the change added can make a finding appear in a function nobody touched).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use super::{inside, on_path, relative, shown, step, LONG};
use crate::profiles::cpp::diagnose::{Diagnostic, CPPCHECK_TEMPLATE};
use crate::profiles::cpp::tools::{AnalyzeInput, AnalyzeOutput};
use crate::scheduler::tooljob::shell::Logs;
use crate::scheduler::tooljob::ToolJob;
use crate::tools::exec::RunInput;
use crate::tools::git::Made;
use crate::tools::ToolError;

/// Most findings from before a change set aside one by one in a second analysis.
const MAX_SUPPRESSED: usize = 400;
/// The largest project copied to be analysed as it was at its last commit: files,
/// bytes, and one file's bytes (a larger file is left out of the copy).
const BASE_FILES: usize = 20_000;
const BASE_BYTES: u64 = 256 << 20;
const BASE_FILE_BYTES: u64 = 32 << 20;
/// Most changed files put back as they were.
const BASE_CHANGED: usize = 500;

/// A header, which a compilation database never lists.
fn is_header(file: &str) -> bool {
    let ext = file.rsplit_once('.').map_or("", |(_, e)| e);
    matches!(
        ext.to_ascii_lowercase().as_str(),
        "h" | "hh" | "hpp" | "hxx" | "h++" | "inc" | "inl" | "ipp" | "tpp"
    )
}

/// The files (resolved) a compilation database lists; `None` when it cannot be read
/// (or is a link, or larger than a copied file may be).
fn listed(db: &Path, root: &Path) -> Option<HashSet<PathBuf>> {
    // Read as the project's files are (no link followed, never a FIFO's wait).
    let text = crate::opened::read_small(db, root, BASE_FILE_BYTES)?;
    let entries: Vec<serde_json::Value> = serde_json::from_str(&text).ok()?;
    Some(
        entries
            .iter()
            .filter_map(|e| {
                let file = Path::new(e.get("file")?.as_str()?);
                let dir = Path::new(e.get("directory").and_then(|d| d.as_str()).unwrap_or(""));
                let path = if file.is_absolute() {
                    file.to_path_buf()
                } else {
                    dir.join(file)
                };
                Some(std::fs::canonicalize(&path).unwrap_or(path))
            })
            .collect(),
    )
}

/// Whether cppcheck may analyse `files` through the database at `db` (relative to
/// `root`): it exists and lists each of their sources (a database made before a file
/// was added, or by another build, does not), and there is a source among them or
/// nothing was named. The note says why not, where that matters.
fn use_database(root: &Path, db: &str, files: &[String]) -> (bool, Option<String>) {
    let path = root.join(db);
    if !path.is_file() {
        return (false, None);
    }
    if files.is_empty() {
        return (true, None);
    }
    let sources: Vec<&String> = files.iter().filter(|f| !is_header(f)).collect();
    if sources.is_empty() {
        return (false, None);
    }
    let Some(known) = listed(&path, root) else {
        return (
            false,
            Some(format!(
                "{db} could not be read: the files were analysed alone"
            )),
        );
    };
    let missing: Vec<&str> = sources
        .iter()
        .filter(|f| {
            let p = root.join(f.as_str());
            !known.contains(&std::fs::canonicalize(&p).unwrap_or(p))
        })
        .map(|f| f.as_str())
        .collect();
    if missing.is_empty() {
        (true, None)
    } else {
        (
            false,
            Some(format!(
                "{db} does not list {} (it was made before, or by another build): the files were analysed alone, without its flags; build with cpp_build to bring it up to date",
                missing.join(", ")
            )),
        )
    }
}

/// The cppcheck command; `judging`: findings fail it (without, it vouches for
/// nothing and yields no evidence: the copy of the project as it was is analysed so).
fn cppcheck(db: Option<&str>, files: &[String], judging: bool) -> String {
    let q = air_proto::chain::quoted;
    let mut command = format!(
        "cppcheck --enable=warning,performance,portability --inline-suppr{} --quiet --template={}",
        if judging { " --error-exitcode=1" } else { "" },
        q(CPPCHECK_TEMPLATE)
    );
    match db {
        Some(db) => {
            command.push_str(&format!(" --project={}", q(db)));
            // A header among sources is named too (so the run covers it, through
            // the sources that include it); headers alone are never analysed so.
            for f in files {
                command.push_str(&format!(" --file-filter={}", q(f)));
            }
        }
        // The whole tree, air's own directory aside.
        None if files.is_empty() => command.push_str(" -i .air ."),
        None => {
            for f in files {
                command.push(' ');
                command.push_str(&q(f));
            }
        }
    }
    command
}

/// cppcheck's own complaints (`cppcheck: error: …`, a usage error): not findings in
/// the code, but why the analysis did not happen.
fn own_errors(found: &mut Vec<Diagnostic>, text: &str) -> Vec<String> {
    let said: Vec<String> = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("cppcheck: "))
        .map(str::to_string)
        .collect();
    if !said.is_empty() {
        found.retain(|d| d.file.is_some());
    }
    said
}

/// Whether a finding is on a line the change made (one that cannot be placed
/// counts as made).
fn on_made_line(d: &Diagnostic, made: &BTreeMap<String, Made>, root: &Path) -> bool {
    let (Some(file), Some(line)) = (d.file.as_deref(), d.line) else {
        return true;
    };
    if line == 0 {
        return true;
    }
    // A file the change did not touch (or one outside the project) has only what
    // was there before.
    made.get(&relative(file, root))
        .is_some_and(|m| m.contains(line))
}

/// What a finding is, wherever its line moved to: its file, its check and its message
/// with the numbers taken out.
type Kind = (String, Option<String>, String);

fn kind(d: &Diagnostic, root: &Path) -> Kind {
    let message: String = d
        .message
        .chars()
        .map(|c| if c.is_ascii_digit() { '#' } else { c })
        .collect();
    (
        d.file
            .as_deref()
            .map(|f| relative(f, root))
            .unwrap_or_default(),
        d.code.clone(),
        message,
    )
}

/// A copy of the project as it was at its last commit, under `.air/base/` (which
/// commands read and never write): the working tree (its git directory and air's own
/// aside; links left out), with every file git says changed put back as it was
/// committed (or taken out, if it is new), and the compilation database at `db`
/// pointed at the copy. Every file is read and written following no link, beneath
/// the project and beneath the copy.
fn as_committed(
    launcher: &crate::launcher::Launcher,
    root: &Path,
    db: Option<&str>,
    copies: &Path,
) -> Result<tempfile::TempDir, String> {
    use crate::opened;
    let dirty =
        crate::tools::git::Dirty::read(launcher).ok_or("git could not say which files changed")?;
    let changed = dirty.files();
    if changed.len() > BASE_CHANGED {
        return Err(format!(
            "{} files changed, too many to put back",
            changed.len()
        ));
    }
    let base = crate::scheduler::tooljob::make_base_dir(copies)?;
    let copy = tempfile::Builder::new()
        .prefix("copy-")
        .tempdir_in(&base)
        .map_err(|e| format!("no copy in {}: {e}", base.display()))?;
    let at = std::fs::canonicalize(copy.path()).map_err(|e| e.to_string())?;
    let mut budget = (BASE_FILES, BASE_BYTES);
    copy_tree(root, Path::new(""), &at, &mut budget, 0)?;
    for file in &changed {
        if file
            .split('/')
            .any(|p| p.is_empty() || p == "." || p == "..")
        {
            return Err(format!("`{file}` is no plain path of the project"));
        }
        let target = at.join(file);
        opened::remove(&target, &at).map_err(|e| format!("{file}: {e}"))?;
        if let Some(text) = crate::tools::git::committed(launcher, file).map_err(|e| e.0)? {
            opened::write_new(&target, &at, text.as_bytes()).map_err(|e| format!("{file}: {e}"))?;
        }
    }
    if let Some(db) = db {
        use std::io::Read as _;
        let path = at.join(db);
        let mut text = String::new();
        opened::open_read(&path, &at)
            .and_then(|f| f.take(BASE_FILE_BYTES).read_to_string(&mut text))
            .map_err(|e| format!("{db}: {e}"))?;
        let mut value: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| format!("{db}: {e}"))?;
        rebase(&mut value, &root.to_string_lossy(), &at.to_string_lossy());
        opened::remove(&path, &at).map_err(|e| format!("{db}: {e}"))?;
        opened::write_new(&path, &at, value.to_string().as_bytes())
            .map_err(|e| format!("{db}: {e}"))?;
    }
    Ok(copy)
}

/// Every path under `from` in the strings of `value`, under `to` instead.
fn rebase(value: &mut serde_json::Value, from: &str, to: &str) {
    match value {
        serde_json::Value::String(s) => {
            if s == from {
                *s = to.to_string();
            } else {
                *s = s.replace(&format!("{from}/"), &format!("{to}/"));
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(|v| rebase(v, from, to)),
        serde_json::Value::Object(map) => map.values_mut().for_each(|v| rebase(v, from, to)),
        _ => {}
    }
}

/// Copies the tree at `root`/`rel` into `to`/`rel`: directories and regular files
/// (a link is left out), each file read beneath the project and written beneath the
/// copy following no link, at most the length it had when listed. Past the budget
/// (entries, bytes) the copy is given up.
fn copy_tree(
    root: &Path,
    rel: &Path,
    to: &Path,
    budget: &mut (usize, u64),
    depth: usize,
) -> Result<(), String> {
    use std::io::Read as _;
    if depth > 64 {
        return Err(format!("{} is nested too deep to copy", rel.display()));
    }
    let from = root.join(rel);
    let entries = std::fs::read_dir(&from).map_err(|e| format!("{}: {e}", from.display()))?;
    for entry in entries.flatten() {
        let name = entry.file_name();
        if depth == 0 && (name == ".git" || name == ".air") {
            continue;
        }
        let rel = rel.join(&name);
        let Ok(meta) = std::fs::symlink_metadata(root.join(&rel)) else {
            continue;
        };
        budget.0 = budget
            .0
            .checked_sub(1)
            .ok_or("the project has too many files to copy")?;
        let kind = meta.file_type();
        if kind.is_dir() {
            copy_tree(root, &rel, to, budget, depth + 1)?;
        } else if kind.is_file() && meta.len() <= BASE_FILE_BYTES {
            budget.1 = budget
                .1
                .checked_sub(meta.len())
                .ok_or("the project is too large to copy")?;
            let Ok(file) = crate::opened::open_read(&root.join(&rel), root) else {
                continue;
            };
            if !file.metadata().is_ok_and(|m| m.is_file()) {
                continue;
            }
            let mut bytes = Vec::new();
            file.take(meta.len())
                .read_to_end(&mut bytes)
                .map_err(|e| format!("{}: {e}", rel.display()))?;
            crate::opened::write_new(&to.join(&rel), to, &bytes)
                .map_err(|e| format!("{}: {e}", rel.display()))?;
        }
    }
    Ok(())
}

impl ToolJob {
    pub(in crate::scheduler::tooljob) async fn cpp_analyze(
        &self,
        tool_run_id: &str,
        input: AnalyzeInput,
    ) -> Result<AnalyzeOutput, ToolError> {
        let build = inside("build_dir", input.build_dir.as_deref(), "build")?;
        let root = self.root();
        let files: Vec<String> = match input.files {
            Some(files) => files
                .iter()
                .map(|f| inside("files", Some(f), "."))
                .collect::<Result<_, _>>()?,
            // Named by the task's changes: each checked as a name given would be (no
            // option in disguise, nothing outside).
            None => self
                .changed_c_files()
                .await
                .iter()
                .filter_map(|f| inside("files", Some(f), ".").ok())
                .collect(),
        };
        let db = format!("{build}/compile_commands.json");
        let (with_db, db_note) = {
            let (root, db, files) = (root.clone(), db.clone(), files.clone());
            tokio::task::spawn_blocking(move || use_database(&root, &db, &files))
                .await
                .unwrap_or((false, None))
        };
        let database = with_db.then_some(db.as_str());
        let command = cppcheck(database, &files, true);
        let covered = if files.is_empty() {
            vec![".".to_string()]
        } else {
            files.clone()
        };
        let mut notes: Vec<String> = db_note.into_iter().collect();
        let (out, mut found) = self.step(tool_run_id, command.clone(), &[]).await?;
        let complaints = own_errors(&mut found, &format!("{}\n{}", out.stdout, out.stderr));
        notes.extend(
            complaints
                .iter()
                .map(|c| format!("cppcheck could not analyse: {c}")),
        );
        let mut steps = vec![step(&command, &out)];
        let mut changed_files = out.changed_files.clone();
        let mut analyzers = vec!["cppcheck".to_string()];
        let mut passed = out.exit_code == Some(0);
        // Judged by what the change adds.
        let made = if passed || found.is_empty() || !complaints.is_empty() {
            None
        } else {
            self.made_lines(&found).await
        };
        let (mut new_findings, mut findings_before) = (None, None);
        let mut before: HashSet<(Option<String>, Option<u32>, Option<String>)> = HashSet::new();
        let mut findings = found;
        if let Some(made) = &made {
            // The same analysis of the project as it was tells which of the findings
            // on lines the change did not make were there before it.
            // Without it, every finding counts: what cannot be told is not waved
            // through.
            let mut there = if findings.iter().any(|d| !on_made_line(d, made, &root)) {
                match self
                    .base_findings(tool_run_id, database, &files, &root)
                    .await
                {
                    Ok((base, base_step)) => {
                        steps.push(base_step);
                        base
                    }
                    Err(why) => {
                        notes.push(format!(
                            "the project as it was at its last commit could not be analysed ({why}): every finding counts as this change's"
                        ));
                        HashMap::new()
                    }
                }
            } else {
                HashMap::new()
            };
            let (mut new, mut old): (Vec<&Diagnostic>, Vec<&Diagnostic>) = (Vec::new(), Vec::new());
            for d in &findings {
                // Each finding from before stands for one now.
                let was_there = !on_made_line(d, made, &root)
                    && there.get_mut(&kind(d, &root)).is_some_and(|k| {
                        let left = *k > 0;
                        *k = k.saturating_sub(1);
                        left
                    });
                if was_there {
                    old.push(d);
                } else {
                    new.push(d);
                }
            }
            new_findings = Some(new.len());
            findings_before = Some(old.len());
            before = old
                .iter()
                .map(|d| {
                    (
                        d.file.as_deref().map(|f| relative(f, &root)),
                        d.line,
                        d.code.clone(),
                    )
                })
                .collect();
            let suppress: Vec<String> = old
                .iter()
                .filter_map(|d| {
                    let file = relative(d.file.as_deref()?, &root);
                    Some(format!(
                        "--suppress={}:*{}:{}",
                        d.code.as_deref()?,
                        file,
                        d.line?
                    ))
                })
                .collect();
            if new.is_empty() && suppress.len() == old.len() && suppress.len() <= MAX_SUPPRESSED {
                // Again, with what was there before suppressed one by one, so that
                // the analysis that passes is on record as the evidence.
                let mut again = command.clone();
                for s in &suppress {
                    again.push(' ');
                    again.push_str(&air_proto::chain::quoted(s));
                }
                let (o, f) = self.step(tool_run_id, again.clone(), &[]).await?;
                steps.push(step(&again, &o));
                changed_files.extend(o.changed_files.clone());
                passed = o.exit_code == Some(0);
                notes.push(format!(
                    "{} finding(s) were there before this change (the project had them at its last commit, on lines the change did not make) and do not count against it; none is new",
                    old.len()
                ));
                if !f.is_empty() {
                    notes.push(format!(
                        "{} finding(s) remained once those were set aside",
                        f.len()
                    ));
                }
            } else if new.is_empty() {
                notes.push(format!(
                    "{} finding(s) were there before this change, too many to set aside one by one: analyse fewer files",
                    old.len()
                ));
            } else {
                notes.push(format!(
                    "{} finding(s) are new with this change (marked `new`) and must be fixed; {} were there before it and do not count",
                    new.len(),
                    old.len()
                ));
            }
        } else if !passed && !findings.is_empty() && !crate::tools::git::in_repository(&root) {
            notes.push("not a git repository: what was there before the change cannot be told, so every finding counts".into());
        }
        if on_path("clang-tidy") && with_db && !files.is_empty() {
            let mut tidy = format!("clang-tidy -p {} --quiet", air_proto::chain::quoted(&build));
            for f in &files {
                tidy.push(' ');
                tidy.push_str(&air_proto::chain::quoted(f));
            }
            let (o, f) = self.step(tool_run_id, tidy.clone(), &[]).await?;
            steps.push(step(&tidy, &o));
            changed_files.extend(o.changed_files.clone());
            // clang-tidy's findings, judged by the lines the change made.
            let tidy_passed = if o.exit_code == Some(0) {
                true
            } else {
                match self.made_lines(&f).await {
                    Some(made) if !f.is_empty() => !f.iter().any(|d| on_made_line(d, &made, &root)),
                    _ => false,
                }
            };
            findings.extend(f);
            passed &= tidy_passed;
            analyzers.push("clang-tidy".into());
        } else if !on_path("clang-tidy") {
            notes.push("clang-tidy is not installed here: cppcheck alone analysed".into());
        }
        let mut findings = shown(findings, &root);
        if made.is_some() {
            for f in &mut findings {
                let there = before.contains(&(f.file.clone(), f.line, f.code.clone()));
                f.new = Some(!there);
            }
        }
        Ok(AnalyzeOutput {
            passed: passed && complaints.is_empty(),
            analyzers,
            covered,
            findings,
            steps,
            notes,
            changed_files,
            new_findings,
            findings_before,
        })
    }

    /// The findings of the same cppcheck run on a copy of the project as it was at
    /// its last commit, counted by [`kind`]; and the step that found them.
    async fn base_findings(
        &self,
        tool_run_id: &str,
        db: Option<&str>,
        files: &[String],
        root: &Path,
    ) -> Result<(HashMap<Kind, usize>, crate::profiles::cpp::tools::Step), String> {
        let launcher = self.env.launcher.clone();
        let (r, d) = (root.to_path_buf(), db.map(str::to_string));
        // The copies live in the checkout's `.air/base/`, read-only to every command
        // (a task's worktree is writable to its own).
        let copies = self.env.engine.checkout().to_path_buf();
        let copy =
            tokio::task::spawn_blocking(move || as_committed(&launcher, &r, d.as_deref(), &copies))
                .await
                .map_err(|e| e.to_string())??;
        let at = std::fs::canonicalize(copy.path()).unwrap_or(copy.path().to_path_buf());
        // Only files that were there: a new file has nothing from before.
        let files: Vec<String> = files
            .iter()
            .filter(|f| at.join(f).exists())
            .cloned()
            .collect();
        let command = cppcheck(db, &files, false);
        let ran = self
            .run_step(
                tool_run_id,
                RunInput {
                    command: command.clone(),
                    cwd: Some(at.display().to_string()),
                    timeout_ms: Some(LONG),
                    description: Some(
                        "the same analysis, of the project as it was at its last commit".into(),
                    ),
                    background: false,
                },
                &[],
                Logs::Command,
                Some(self.time_limit_ms.max(LONG)),
                None,
            )
            .await
            .map_err(|e| e.0)?;
        let mut counted = HashMap::new();
        for d in &ran.found {
            *counted.entry(kind(d, &at)).or_insert(0) += 1;
        }
        drop(copy);
        Ok((counted, step(&command, &ran.out)))
    }

    /// What the change made of the files findings are in, against the last commit;
    /// `None` when that cannot be told.
    async fn made_lines(&self, found: &[Diagnostic]) -> Option<BTreeMap<String, Made>> {
        let root = self.root();
        let mut files: Vec<String> = found
            .iter()
            .filter_map(|d| d.file.as_deref())
            .map(|f| relative(f, &root))
            .collect();
        files.sort();
        files.dedup();
        let launcher = self.env.launcher.clone();
        tokio::task::spawn_blocking(move || crate::tools::git::made_lines(&launcher, &files))
            .await
            .ok()?
            .ok()?
    }

    /// The C and C++ files the task's agents changed so far.
    async fn changed_c_files(&self) -> Vec<String> {
        let (session, task) = (self.env.session.clone(), self.task_id.clone());
        tokio::task::spawn_blocking(move || {
            session
                .readers()
                .get()
                .map_err(crate::Error::from)
                .and_then(|conn| {
                    crate::event_store::query::changed_in_task(
                        &conn,
                        &task,
                        &crate::tools::WRITE_TOOLS,
                    )
                })
                .unwrap_or_default()
        })
        .await
        .unwrap_or_default()
        .into_iter()
        .filter(|f| air_proto::gate::is_c_family(f))
        .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_database_is_pointed_at_the_copy() {
        let mut v = serde_json::json!([{
            "directory": "/p/proj/build",
            "command": "cc -I/p/proj/src -I/p/proj2/x -c /p/proj/src/a.c",
            "file": "/p/proj/src/a.c"
        }]);
        rebase(&mut v, "/p/proj", "/tmp/c");
        assert_eq!(v[0]["directory"], "/tmp/c/build");
        assert_eq!(
            v[0]["command"],
            "cc -I/tmp/c/src -I/p/proj2/x -c /tmp/c/src/a.c"
        );
        assert_eq!(v[0]["file"], "/tmp/c/src/a.c");
    }

    #[test]
    fn a_database_is_used_only_when_it_lists_the_sources() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(root.join("build")).unwrap();
        std::fs::write(root.join("a.c"), "int a;\n").unwrap();
        std::fs::write(root.join("b.c"), "int b;\n").unwrap();
        std::fs::write(root.join("a.h"), "int a;\n").unwrap();
        let db = "build/compile_commands.json";
        std::fs::write(
            root.join(db),
            serde_json::json!([{"directory": root.join("build"), "file": "../a.c", "command": "cc -c ../a.c"}]).to_string(),
        )
        .unwrap();
        let s = |v: &[&str]| v.iter().map(|f| f.to_string()).collect::<Vec<_>>();
        assert_eq!(use_database(&root, db, &s(&["a.c", "a.h"])), (true, None));
        assert_eq!(use_database(&root, db, &[]), (true, None));
        // Headers alone: never through the database.
        assert_eq!(use_database(&root, db, &s(&["a.h"])), (false, None));
        // A source it does not list: the files alone, and the answer says why.
        let (with, note) = use_database(&root, db, &s(&["a.c", "b.c"]));
        assert!(!with);
        assert!(note.is_some_and(|n| n.contains("does not list b.c")));
        std::fs::write(root.join(db), "not json").unwrap();
        assert!(!use_database(&root, db, &s(&["a.c"])).0);
    }

    #[test]
    fn the_command_names_every_file_and_judges_only_when_asked() {
        let files = vec!["src/a.c".to_string(), "src/a.h".to_string()];
        let c = cppcheck(Some("build/compile_commands.json"), &files, true);
        assert!(
            c.contains("--file-filter=src/a.c --file-filter=src/a.h"),
            "{c}"
        );
        assert!(c.contains("--error-exitcode=1"));
        let plain = cppcheck(None, &files, false);
        assert!(plain.ends_with(" src/a.c src/a.h"), "{plain}");
        assert!(!plain.contains("--error-exitcode"));
    }
}
