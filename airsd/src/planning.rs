//! airsd's side of a planning session: what a planning turn of the Architecture
//! Designer is told (the requirement, its phase, what it may call), and the confirmed
//! plan written to disk by airsd, never by the agent (P0-5): `.air/shared/plan/plan.md`,
//! `task-graph.json`, `requirements.md`, and one `docs/ADR-<n>-<slug>.md` per decision.
//! Every file is compiled and rendered first and written atomically, so a plan that
//! does not compile never reaches the disk.

use std::fmt::Write as _;
use std::path::Path;

use air_proto::planning::{
    check_proposal, PlanningPhase, Proposal, ASK_USER, CLASSIFY, PROPOSE, SETTLE,
};
use air_proto::task::TaskSpec;

/// The task section of a planning turn.
pub fn turn_text(spec: &TaskSpec, phase: PlanningPhase, taken: &[String]) -> String {
    let requirement = air_proto::conversation::named_intent(&spec.description)
        .map_or(spec.description.as_str(), |(_, rest)| rest);
    if air_proto::planning::is_replan(spec) {
        let plan = spec
            .context_refs
            .plan_ref
            .as_deref()
            .unwrap_or(".air/shared/plan/plan.md");
        if phase == PlanningPhase::Classifying {
            return format!(
                "# The requirement changed\n\n{}\n\n## Re-planning, step 1: what the change is\n\nPhase: `classifying`. Dispatch is frozen. Read the plan (`{plan}`), its tasks' contracts (what each provides and requires) and what the session's tasks did, then call {CLASSIFY}: the change's scope, the modules it affects (as the contracts and paths name them), the tasks it touches directly, and a summary. airsd then works out which tasks the change impacts (SAFE, BOUNDARY, IMPACTED), stops the impacted work and takes back its merged changes, lets the safe work go on, and asks you to re-plan only the impacted part.\n",
                requirement.trim()
            );
        }
        return format!(
            "# The requirement changed\n\n{}\n\n## Re-planning, step 2: the impacted part\n\nPhase: `proposing`. Your notes say what the change impacts. Read the plan (`{plan}`), then call {PROPOSE} with the whole plan: the tasks the notes tell you to re-plan changed, removed or replaced as the change needs, new ones added, and every other task exactly as it is (title, description, criteria, scope, dependencies, checks, contracts); and `change`. A plan with errors, or one that changes a task outside the impacted part, comes back to you with why. airsd adds a task that verifies each BOUNDARY task after your re-planned work.\n{PLAN_FORMAT}",
            requirement.trim()
        );
    }
    let mut s = format!(
        "# The requirement\n\n{}\n\n## Where the planning is\n\nPhase: `{}`.\n",
        requirement.trim(),
        phase.as_str()
    );
    let then = match phase {
        PlanningPhase::Discussing => format!(
            "Read what you need of the project, then do one of these, which ends your turn: ask the user what the requirement leaves open ({ASK_USER}); state the requirements the discussion settled for the user to agree to ({SETTLE}); or answer in plain text when the user asked you something. `{PROPOSE}` is refused in this phase."
        ),
        PlanningPhase::Proposing => format!(
            "The requirements are settled. Read what you need of the project, then propose the architecture and the task graph with {PROPOSE}. A plan that does not compile comes back with its errors: fix them and call it again."
        ),
        PlanningPhase::Confirmed => "The plan is confirmed: nothing is left to do.".into(),
        PlanningPhase::Classifying => format!(
            "A requirement changed: say what the change is with {CLASSIFY}."
        ),
    };
    let _ = writeln!(s, "\n{then}");
    if phase == PlanningPhase::Proposing {
        s.push_str(PLAN_FORMAT);
    }
    if phase == PlanningPhase::Proposing && !taken.is_empty() {
        let _ = writeln!(
            s,
            "\nThe session already has tasks {}: the plan's task ids must differ from them.",
            taken.join(", ")
        );
    }
    s
}

/// The plan format, as much of it as a proposal needs (`docs/plan-format.md` in
/// full).
const PLAN_FORMAT: &str = r#"
## The plan format

`plan` is Markdown. Each task is a heading `## Task <id>: <title>` (ids such as `T1`,
unique), then a list of fields, then its description, then labelled sections:

```markdown
# Word counter

What it is for, in a few sentences (every agent reads this).

## Task T1: Count words in a string

- category: logic
- expected_files: `src/count.py`, `tests/test_count.py`
- depends_on: T0 (why)
- verify: `python3 -m unittest discover -s tests`

What to build, for an executor who never saw this discussion.

Acceptance criteria:
- one criterion per item

Provides:
- api count: count_words(text) -> int (stable)
```

Each task's `category` sets the evidence its completion needs, which airsd records
from the commands its executor runs:
- logic, cpp_logic: build_pass, test_pass
- build, cpp_build, config: build_pass
- test: build_pass, test_output
- refactor: build_pass, test_pass, diff_review
- bugfix: build_pass, test_pass, reproduction (its check fails before the fix)
- docs: none
- gui, network, deploy (and cpp_ ones): build_pass and screenshot, pcap or
  deploy_verify, which no tool records: such a task must carry `[no-screenshot]`,
  `[no-pcap]` or `[no-deploy-verify]` at the end of its title
- none given: what the task's change needs (code as logic, docs as docs)

Fields: `category`,
`depends_on`, `soft_depends_on`, `conflicts_with`, `write_area`, `expected_files`,
`allowed_paths`, `verify`, `evidence`, `max_turns`, `soft_timeout`, `hard_timeout`,
`retry_budget`. `Phase <id>: <title>` headings group tasks for a milestone review.
`Provides:` and `Requires:` items read `<kind> <module>: <spec> (<stability>)`, kind
api, schema, file, config or protocol, stability stable, volatile or frozen.
"#;

#[cfg(test)]
mod format_tests {
    /// The plan format's category lines say what the gate requires.
    #[test]
    fn the_category_table_is_the_gate_s() {
        use air_proto::task::TaskCategory::*;
        for c in [
            Logic, CppLogic, Build, CppBuild, Config, Test, Refactor, Bugfix, Docs,
        ] {
            let kinds: Vec<&str> = c.required_evidence().iter().map(|k| k.as_str()).collect();
            let listed = if kinds.is_empty() {
                "none".to_string()
            } else {
                kinds.join(", ")
            };
            let line = super::PLAN_FORMAT
                .lines()
                .find(|l| {
                    l.strip_prefix("- ")
                        .and_then(|l| l.split_once(':'))
                        .is_some_and(|(names, _)| names.split(", ").any(|n| n == c.as_str()))
                })
                .unwrap_or_else(|| panic!("no line for {}", c.as_str()));
            assert!(line.contains(&format!(": {listed}")), "{line} vs {listed}");
        }
    }
}

/// A name for a file from a title: lowercase words joined by `-`.
fn slug(title: &str) -> String {
    let mut out = String::new();
    for word in title
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .take(8)
    {
        if !out.is_empty() {
            out.push('-');
        }
        out.push_str(&word.to_lowercase());
    }
    if out.is_empty() {
        out.push_str("decision");
    }
    out
}

/// The numbers of the ADRs `docs/` already holds (`ADR-0003-….md` is 3).
fn adr_numbers(docs: &Path) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir(docs) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().to_string();
            let rest = name.strip_prefix("ADR-")?;
            rest.split(|c: char| !c.is_ascii_digit())
                .next()
                .and_then(|n| n.parse().ok())
        })
        .collect()
}

/// The files of a confirmed plan, relative to the project root, with their text:
/// every one made before any is written.
pub fn plan_files(
    root: &Path,
    requirement: &str,
    proposal: &Proposal,
    requirements: &[String],
) -> Result<Vec<(String, String)>, String> {
    let compiled = check_proposal(proposal).map_err(|e| {
        format!(
            "the confirmed plan does not compile ({}); nothing was written",
            e.join("; ")
        )
    })?;
    let mut graph = compiled.graph;
    graph.source = Some(".air/shared/plan/plan.md".into());
    let graph_json = serde_json::to_string_pretty(&graph)
        .map_err(|e| format!("cannot encode the task graph: {e}"))?;
    let mut req = format!("# Requirements\n\n{}\n", requirement.trim());
    if requirements.is_empty() {
        req.push_str("\nThe user went ahead before the requirements were stated in full; the plan records what was chosen.\n");
    } else {
        req.push_str("\nSettled with the user:\n\n");
        for r in requirements {
            let _ = writeln!(req, "- {}", r.trim());
        }
    }
    if !proposal.modules.is_empty() {
        req.push_str("\n## Modules\n\n");
        for m in &proposal.modules {
            let _ = writeln!(req, "- **{}**: {}", m.name.trim(), m.responsibility.trim());
        }
    }
    let mut plan = proposal.plan.clone();
    if !plan.ends_with('\n') {
        plan.push('\n');
    }
    let mut files = vec![
        (".air/shared/plan/plan.md".to_string(), plan),
        (
            ".air/shared/plan/task-graph.json".to_string(),
            graph_json + "\n",
        ),
        (".air/shared/plan/requirements.md".to_string(), req),
    ];
    let mut next = adr_numbers(&root.join("docs"))
        .into_iter()
        .max()
        .unwrap_or(0);
    for d in &proposal.decisions {
        next += 1;
        let text = format!(
            "# ADR-{next:04}: {}\n\nStatus: accepted\n\n## Context\n\n{}\n\n## Decision\n\n{}\n",
            d.title.trim(),
            d.context.trim(),
            d.decision.trim()
        );
        files.push((format!("docs/ADR-{next:04}-{}.md", slug(&d.title)), text));
    }
    Ok(files)
}

/// Writes a confirmed plan (see [`plan_files`]); the files written, or why none was.
pub fn write_plan(
    root: &Path,
    requirement: &str,
    proposal: &Proposal,
    requirements: &[String],
) -> Result<Vec<String>, String> {
    let files = plan_files(root, requirement, proposal, requirements)?;
    let mut written = Vec::new();
    for (rel, text) in &files {
        let path = root.join(rel);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        }
        air_proto::layout::write_atomic(&path, text.as_bytes())
            .map_err(|e| format!("cannot write {rel}: {e}"))?;
        written.push(rel.clone());
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use air_proto::planning::ArchitectureDecision;

    fn proposal(plan: &str) -> Proposal {
        Proposal {
            summary: "A library and a command.".into(),
            modules: vec![],
            decisions: vec![ArchitectureDecision {
                title: "Counts kept in memory".into(),
                context: "Inputs are small.".into(),
                decision: "A HashMap; no database.".into(),
            }],
            plan: plan.into(),
            change: None,
        }
    }

    #[test]
    fn a_confirmed_plan_is_written_with_its_graph_requirements_and_adrs() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("docs")).unwrap();
        std::fs::write(dir.path().join("docs/ADR-0002-old.md"), "# old\n").unwrap();
        let p = proposal("## Task T1: Count words\n\nCount them.\n");
        let files = write_plan(
            dir.path(),
            "count words",
            &p,
            &["Words split on spaces.".into()],
        )
        .unwrap();
        assert!(
            files.contains(&"docs/ADR-0003-counts-kept-in-memory.md".to_string()),
            "{files:?}"
        );
        let graph: air_proto::plan::TaskGraph = serde_json::from_str(
            &std::fs::read_to_string(dir.path().join(".air/shared/plan/task-graph.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(graph.tasks[0].id, "T1");
        let req =
            std::fs::read_to_string(dir.path().join(".air/shared/plan/requirements.md")).unwrap();
        assert!(req.contains("- Words split on spaces."), "{req}");
    }

    #[test]
    fn a_plan_that_does_not_compile_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let p = proposal("## Task T1: Count\n\n- depends_on: T9\n\nCount.\n");
        let e = write_plan(dir.path(), "count words", &p, &[]).unwrap_err();
        assert!(e.contains("nothing was written") && e.contains("T9"), "{e}");
        assert!(!dir.path().join(".air").exists());
        assert!(!dir.path().join("docs").exists());
    }
}
