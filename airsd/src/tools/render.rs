//! Each tool's answer as the model reads it: plain text, rendered by the tool from its
//! structured output (which stays in the record and the TUI). A file's lines arrive as
//! a reader sees them, never JSON-escaped, so what the model copies into an edit is
//! what the file holds; a command's answer starts with how it ended.

use serde::de::DeserializeOwned;
use serde_json::Value;
use std::fmt::Write as _;

use super::{exec, fs, git, provider_name, search};
use crate::profiles::cpp::tools as cpp;

/// The output fields whose text the rendering carries (left out of the structured
/// output sent beside it).
pub const RENDERED: &[&str] = &["content", "diff", "stdout", "stderr", "text"];

/// The text of `tool`'s `output`; `None` when the output is not the tool's own form
/// (the model then reads the JSON).
pub fn text(tool: &str, output: &Value) -> Option<String> {
    fn typed<T: DeserializeOwned>(v: &Value) -> Option<T> {
        serde_json::from_value(v.clone()).ok()
    }
    Some(match tool {
        "fs.read" => read(&typed(output)?),
        "fs.glob" => glob(&typed(output)?),
        "fs.grep" => grep(&typed(output)?),
        "git.status" => status(&typed(output)?),
        "git.diff" => diff(&typed(output)?),
        "fs.write" => write(&typed(output)?),
        "fs.edit" | "fs.multi_edit" => edit(&typed(output)?),
        "shell.run" | "shell.stop" => run(&typed(output)?),
        "shell.output" => page(&typed(output)?),
        "todo.write" => todo(&typed(output)?),
        "cpp.build" => cpp_build(&typed(output)?),
        "cpp.test" => cpp_test(&typed(output)?),
        "cpp.analyze" => cpp_analyze(&typed(output)?),
        "cpp.intelligence" => cpp_intelligence(&typed(output)?),
        "cpp.diagnose" => {
            findings_text(&typed::<crate::profiles::cpp::tools::DiagnoseOutput>(output)?.findings)
        }
        // An MCP tool's answer (and the search's) is its text, made by airsd.
        t if t == air_proto::mcp::SEARCH_TOOL || air_proto::mcp::is_tool_name(t) => {
            output.get("content")?.as_str()?.to_string()
        }
        _ => return None,
    })
}

fn todo(o: &super::todo::TodoOutput) -> String {
    let mut out = format!(
        "Todo list kept: {} done, {} in progress, {} pending.\n",
        o.completed, o.in_progress, o.pending
    );
    for t in &o.todos {
        let mark = match t.status {
            air_proto::todo::TodoStatus::Completed => "[x]",
            air_proto::todo::TodoStatus::InProgress => "[>]",
            air_proto::todo::TodoStatus::Pending => "[ ]",
        };
        let _ = writeln!(out, "{mark} {}", t.content);
    }
    out
}

fn notes(out: &mut String, notes: &[String]) {
    for n in notes {
        let _ = writeln!(out, "[{n}]");
    }
}

fn read(o: &fs::ReadOutput) -> String {
    let mut out = o.content.clone();
    notes(&mut out, &o.notes);
    out
}

fn glob(o: &search::GlobOutput) -> String {
    let mut out = String::new();
    if o.files.is_empty() {
        out.push_str("No files match.\n");
    }
    for f in &o.files {
        out.push_str(f);
        out.push('\n');
    }
    notes(&mut out, &o.notes);
    out
}

fn grep(o: &search::GrepOutput) -> String {
    let mut out = String::new();
    for l in o.lines.iter().chain(&o.files) {
        out.push_str(l);
        out.push('\n');
    }
    for (file, n) in &o.counts {
        let _ = writeln!(out, "{file}: {n}");
    }
    if out.is_empty() {
        out.push_str("No matches.\n");
    }
    notes(&mut out, &o.notes);
    out
}

fn status(o: &git::StatusOutput) -> String {
    let mut out = String::new();
    if let Some(b) = &o.branch {
        let _ = writeln!(out, "On branch {b}");
    }
    if o.entries.is_empty() {
        out.push_str("Nothing changed: the working tree is clean.\n");
    }
    for e in &o.entries {
        out.push_str(e);
        out.push('\n');
    }
    out
}

fn diff(o: &git::DiffOutput) -> String {
    if o.diff.trim().is_empty() {
        "No changes.\n".into()
    } else {
        o.diff.clone()
    }
}

fn write(o: &fs::WriteOutput) -> String {
    let mut out = format!(
        "{} {} ({} bytes).\n",
        if o.created { "Created" } else { "Replaced" },
        o.path,
        o.bytes
    );
    if let Some(d) = o.diff.as_deref().filter(|d| !d.is_empty()) {
        out.push_str(d);
    }
    out
}

fn edit(o: &fs::EditOutput) -> String {
    let mut out = format!(
        "Edited {}: {} replacement{}. The file now differs as follows (no need to read it again):\n",
        o.path,
        o.replacements,
        if o.replacements == 1 { "" } else { "s" }
    );
    out.push_str(&o.diff);
    out
}

fn run(o: &exec::RunOutput) -> String {
    let mut out = match (o.exit_code, o.signal) {
        _ if o.running => "Running in the background".to_string(),
        _ if o.timed_out => "Timed out: the command was killed".to_string(),
        _ if o.cancelled => "Cancelled: the command was killed".to_string(),
        (Some(code), _) => format!("Exit code {code}"),
        (None, Some(s)) => format!("Killed by signal {s}"),
        (None, None) => "Ended without an exit code".to_string(),
    };
    let _ = writeln!(
        out,
        " after {:.1} s (command_run_id {}).",
        o.duration_ms as f64 / 1000.0,
        o.command_run_id
    );
    for (name, text, bytes) in [
        ("stdout", &o.stdout, o.stdout_bytes),
        ("stderr", &o.stderr, o.stderr_bytes),
    ] {
        if bytes == 0 {
            continue;
        }
        let _ = writeln!(out, "--- {name} ({bytes} bytes) ---");
        out.push_str(text);
        if !text.ends_with('\n') {
            out.push('\n');
        }
    }
    if o.stdout_bytes == 0 && o.stderr_bytes == 0 {
        out.push_str("(no output)\n");
    }
    if o.truncated {
        let _ = writeln!(
            out,
            "[the output was cut to its start and end; read the rest with {} (command_run_id {}, from the byte offset the cut names), or run a narrower command]",
            provider_name("shell.output"),
            o.command_run_id
        );
    }
    if !o.changed_files.is_empty() {
        let shown = o.changed_files.len().min(exec::CHANGED_SHOWN);
        let more = o.changed_files.len() - shown;
        let _ = writeln!(
            out,
            "[files this command changed: {}{}; change files with the edit tools, which keep them in the task's record]",
            o.changed_files[..shown].join(", "),
            if more > 0 {
                format!(" and {more} more (git_status lists them)")
            } else {
                String::new()
            }
        );
    }
    notes(&mut out, &o.notes);
    out
}

fn page(o: &exec::OutputOutput) -> String {
    let mut out = o.text.clone();
    if !out.ends_with('\n') && !out.is_empty() {
        out.push('\n');
    }
    match (o.next_offset, o.running) {
        (Some(next), _) => {
            let _ = writeln!(out, "[more follows: continue with offset {next}]");
        }
        (None, true) => {
            let next = o.offset + o.text.len() as u64;
            let _ = writeln!(
                out,
                "[the command still runs: what it prints next starts at offset {next}]"
            );
        }
        (None, false) => out.push_str("[end of the output]\n"),
    }
    out
}

/// Findings, one a line: `file:line:column: severity [signature]: message`.
fn findings_text(findings: &[cpp::Finding]) -> String {
    let mut out = String::new();
    if findings.is_empty() {
        out.push_str("No findings.\n");
    }
    for f in findings {
        let place = match (&f.file, f.line, f.column) {
            (Some(file), Some(l), Some(c)) => format!("{file}:{l}:{c}"),
            (Some(file), Some(l), None) => format!("{file}:{l}"),
            (Some(file), None, _) => file.clone(),
            _ => "(no place)".into(),
        };
        let when = match f.new {
            Some(true) => " (new)",
            Some(false) => " (there before)",
            None => "",
        };
        let _ = writeln!(
            out,
            "- {place}: {}{when} [{}]: {}",
            f.severity, f.signature, f.message
        );
        for n in f.notes.iter().take(4) {
            let _ = writeln!(out, "    {n}");
        }
    }
    out
}

/// The steps a tool ran, each with how it ended (no durations: the answer reads the
/// same each time the same thing happens).
fn steps_text(out: &mut String, steps: &[cpp::Step]) {
    for s in steps {
        let ended = match s.exit_code {
            Some(c) => format!("exited {c}"),
            None => "did not finish".into(),
        };
        let _ = writeln!(
            out,
            "- `{}` {ended} (command_run_id {})",
            s.command, s.command_run_id
        );
    }
}

fn cpp_build(o: &cpp::BuildOutput) -> String {
    let mut out = format!(
        "Build {} ({}{}{}).\n",
        if o.passed { "passed" } else { "FAILED" },
        o.build_system,
        o.generator
            .as_deref()
            .map(|g| format!(", {g}"))
            .unwrap_or_default(),
        o.build_dir
            .as_deref()
            .map(|d| format!(", in {d}"))
            .unwrap_or_default(),
    );
    if let Some(db) = &o.compile_commands {
        let _ = writeln!(out, "Compilation database: {db}");
    }
    for r in &o.repaired {
        let _ = writeln!(out, "Repaired: {r}");
    }
    steps_text(&mut out, &o.steps);
    if !o.findings.is_empty() {
        out.push_str("Findings (errors first):\n");
        out.push_str(&findings_text(&o.findings));
    }
    if !o.passed && !o.output_tail.is_empty() {
        let _ = writeln!(out, "The end of its output:\n{}", o.output_tail);
    }
    out
}

fn cpp_test(o: &cpp::TestOutput) -> String {
    let mut out = format!(
        "Tests {} ({}): {} ran, {} failed, {} skipped (command_run_id {}).\n",
        if o.passed { "passed" } else { "FAILED" },
        o.runner,
        o.tests,
        o.failures,
        o.skipped,
        o.command_run_id
    );
    for f in &o.failed {
        let place = match (&f.file, f.line) {
            (Some(file), Some(l)) => format!(" at {file}:{l}"),
            _ => String::new(),
        };
        let _ = writeln!(
            out,
            "- {}{place}: {}",
            f.name,
            f.message.as_deref().unwrap_or("")
        );
    }
    notes(&mut out, &o.notes);
    if !o.passed && o.failed.is_empty() && !o.output_tail.is_empty() {
        let _ = writeln!(out, "The end of its output:\n{}", o.output_tail);
    }
    out
}

fn cpp_analyze(o: &cpp::AnalyzeOutput) -> String {
    let mut out = format!(
        "Analysis {} ({} over {}).\n",
        if o.passed { "passed" } else { "FAILED" },
        o.analyzers.join(" and "),
        o.covered.join(", ")
    );
    steps_text(&mut out, &o.steps);
    out.push_str(&findings_text(&o.findings));
    notes(&mut out, &o.notes);
    out
}

fn cpp_intelligence(o: &cpp::IntelligenceOutput) -> String {
    let mut out = format!(
        "clangd checked {}: compile flags {} (command_run_id {}).\n",
        o.file,
        if o.compile_flags_found {
            "found in the compilation database"
        } else {
            "not found (guessed; its findings may be wrong)"
        },
        o.command_run_id
    );
    out.push_str(&findings_text(&o.findings));
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn a_read_is_the_lines_as_they_are() {
        let out = json!({"path": "a.py", "content": "1\tdef f():\n2\t\treturn \"x\"\n",
            "total_lines": 2, "first_line": 1, "last_line": 2, "sha256": "00"});
        let text = text("fs.read", &out).unwrap();
        assert_eq!(text, "1\tdef f():\n2\t\treturn \"x\"\n");
    }

    #[test]
    fn a_command_starts_with_how_it_ended() {
        let out = json!({"command_run_id": "c1", "exit_code": 1, "timed_out": false,
            "cancelled": false, "duration_ms": 1200, "stdout": "", "stderr": "boom\n",
            "stdout_bytes": 0, "stderr_bytes": 5, "truncated": false, "sandbox": "none"});
        let text = text("shell.run", &out).unwrap();
        assert!(
            text.starts_with(
                "Exit code 1 after 1.2 s (command_run_id c1).\n--- stderr (5 bytes) ---\nboom\n"
            ),
            "{text}"
        );
        assert!(!text.contains("shell.output"), "{text}");
    }

    /// The figure: a 1,000-line file's fs_read answer is the file plus its line
    /// numbers (a number and a tab each line), nothing more — no escapes, no hash.
    #[test]
    fn a_thousand_line_read_costs_the_file_and_its_line_numbers() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let body: String = (1..=1000)
            .map(|i| {
                format!(
                    "\tif x == \"{i}\": return '{}'  # \\ note\n",
                    "y".repeat(i % 40)
                )
            })
            .collect();
        std::fs::write(root.join("big.py"), &body).unwrap();
        let ledger = crate::tools::ReadLedger::default();
        let ctx = crate::tools::FsContext {
            root: &root,
            agent_id: "a",
            ledger: &ledger,
            scope: &crate::tools::scope::Scope::default(),
            perm: crate::tools::permission::test_permits(&root),
            launcher: crate::launcher::test_launcher(&root),
            overlay: None,
        };
        let out = crate::tools::call(
            &ctx,
            air_proto::event::AgentType::Executor,
            "fs.read",
            json!({"path": "big.py"}),
        )
        .unwrap();
        let shown = text("fs.read", &out).unwrap();
        let numbers: usize = (1..=1000).map(|i: usize| i.to_string().len() + 1).sum();
        println!(
            "fs_read of a 1,000-line file of {} bytes: {} bytes (the file plus {numbers} bytes of line numbers; as JSON it was {} bytes)",
            body.len(),
            shown.len(),
            out.to_string().len()
        );
        assert_eq!(shown.len(), body.len() + numbers);
        assert!(
            shown.starts_with("1\t\tif x == \"1\": return 'y'  # \\ note\n"),
            "{}",
            &shown[..200]
        );
    }
}
