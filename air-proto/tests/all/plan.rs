//! The plan compiler against the example plan and against plans with every kind of
//! error.

use air_proto::plan::graph::{self, Outcomes};
use air_proto::plan::{compile, OnAsk, PermissionMode};
use air_proto::task::{ContractKind, DependencyType, EvidenceType, ModelPolicy, TaskCategory};

fn example() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/wordcount/plan.md");
    std::fs::read_to_string(path).unwrap()
}

#[test]
fn the_example_plan_compiles_with_every_field() {
    let compiled = compile("plan.md", &example()).unwrap();
    assert!(compiled.warnings.is_empty(), "{:?}", compiled.warnings);
    let g = compiled.graph;
    assert_eq!(g.title.as_deref(), Some("Word counting library and CLI"));
    assert!(g
        .overview
        .as_deref()
        .unwrap()
        .contains("Standard library only"));
    assert_eq!(g.settings.concurrency, Some(2));
    assert_eq!(
        g.settings.permission_mode,
        Some(PermissionMode::AcceptEdits)
    );
    assert_eq!(g.settings.on_ask, Some(OnAsk::Deny));
    assert_eq!(g.settings.budgets.max_cost, Some(5.0));
    assert_eq!(g.settings.budgets.max_time_ms, Some(7_200_000));
    assert_eq!(g.phases.len(), 2);
    assert_eq!(g.phases[0].id, "core");
    assert_eq!(
        g.phases[1].title.as_deref(),
        Some("Command line and documentation")
    );
    let ids: Vec<_> = g.tasks.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, ["T1", "T2", "T3", "T4", "T5"]);
    assert_eq!(
        g.waves,
        vec![vec!["T1"], vec!["T2"], vec!["T3", "T4"], vec!["T5"]]
    );

    let t1 = &g.tasks[0];
    assert_eq!(t1.title, "Count words in a string");
    assert_eq!(t1.category, Some(TaskCategory::Logic));
    assert_eq!(t1.phase.as_deref(), Some("core"));
    assert_eq!(t1.scope.write_area.as_deref(), Some("library"));
    assert_eq!(
        t1.scope.expected_files.as_deref().unwrap(),
        ["wordcount/counter.py", "wordcount/__init__.py"]
    );
    assert_eq!(t1.scope.allowed_paths.as_deref().unwrap(), ["wordcount/**"]);
    assert_eq!(t1.acceptance_criteria.len(), 3);
    assert!(t1.acceptance_criteria[0].starts_with("count_words(\"The cat, the hat\")"));
    assert!(t1.description.starts_with("Add `count_words(text: str)"));
    let provides = t1.contracts.provides.as_ref().unwrap();
    assert_eq!(provides[0].kind, ContractKind::Api);
    assert_eq!(provides[0].module, "wordcount");
    assert_eq!(
        t1.verification.commands.as_deref().unwrap(),
        [
            "python3 -m compileall -q wordcount",
            "python3 -m unittest discover -s tests"
        ]
    );
    assert!(t1.verification.required);
    assert_eq!(
        t1.verification.evidence_types.as_deref().unwrap(),
        [EvidenceType::BuildPass, EvidenceType::TestPass]
    );
    assert_eq!(t1.constraints.max_turns, 40);
    assert_eq!(t1.constraints.soft_timeout_ms, 600_000);
    assert_eq!(t1.constraints.hard_timeout_ms, 1_800_000);
    assert_eq!(t1.constraints.retry_budget, 2);
    assert_eq!(t1.constraints.model_policy, ModelPolicy::SchedulerForced);
    assert_eq!(t1.context_refs.plan_ref.as_deref(), Some("plan.md#T1"));

    let t2 = &g.tasks[1];
    assert_eq!(t2.dependencies[0].depends_on_task_id, "T1");
    assert_eq!(
        t2.dependencies[0].reason.as_deref(),
        Some("builds on count_words")
    );
    assert_eq!(t2.verification.commands.as_ref().unwrap().len(), 2);
    assert!(t2.contracts.requires.is_some());

    let t3 = &g.tasks[2];
    assert_eq!(t3.title, "Command-line tool");
    assert_eq!(t3.phase.as_deref(), Some("cli"));
    assert_eq!(t3.constraints.hard_timeout_ms, 1_200_000);
    assert_eq!(
        t3.verification.evidence_types.as_deref().unwrap(),
        [EvidenceType::TestPass],
        "[no-build-pass] removes build_pass"
    );

    let t4 = &g.tasks[3];
    let kinds: Vec<_> = t4.dependencies.iter().map(|d| d.dependency_type).collect();
    assert_eq!(
        kinds,
        [
            DependencyType::Hard,
            DependencyType::Hard,
            DependencyType::Soft
        ]
    );
    assert_eq!(
        t4.scope.preserved_paths.as_deref().unwrap(),
        ["tests/test_smoke.py"]
    );

    let t5 = &g.tasks[4];
    assert_eq!(t5.dependencies[1].dependency_type, DependencyType::Conflict);
    assert!(t5.verification.evidence_types.is_none());
    assert!(!t5.verification.required);

    // The graph survives JSON (task-graph.json) unchanged.
    let json = serde_json::to_string(&g).unwrap();
    assert_eq!(
        serde_json::from_str::<air_proto::plan::TaskGraph>(&json).unwrap(),
        g
    );
}

#[test]
fn every_error_is_reported_in_one_pass_with_line_and_field() {
    let plan = "\
---
concurrency: 0
colour: blue
---
# Broken

## Task T1: First

- type: execute
- colour: red
- depends_on: T9
- allowed_paths: `src/[oops`
- soft_timeout: 600

## Task T1: Again

## Task T3: Loop

- depends_on: T5

## Task T5: Back

- depends_on: T3
- evidence: no-smell
";
    let errors = compile("broken.md", plan).unwrap_err();
    let text = errors.to_string();
    let expected = [
        "broken.md:2: concurrency: concurrency must be at least 1",
        "broken.md:3: colour: unknown front matter key `colour`",
        "broken.md:10: colour: unknown field `colour`",
        "broken.md:11: depends_on: unknown task `T9`",
        "broken.md:12: allowed_paths: bad glob `src/[oops`",
        "broken.md:13: soft_timeout: `600` needs a unit",
        "broken.md:15: id: duplicate task id `T1` (first defined at line 7)",
        "broken.md:17: depends_on: dependency cycle: T3 → T5 → T3",
        "broken.md:24: evidence: `no-smell` opts out of an unknown evidence type",
    ];
    for line in expected {
        assert!(text.contains(line), "missing {line:?} in:\n{text}");
    }
    assert_eq!(errors.errors.len(), expected.len(), "{text}");
    let lines: Vec<u32> = errors.errors.iter().map(|e| e.line).collect();
    let mut sorted = lines.clone();
    sorted.sort();
    assert_eq!(lines, sorted, "errors come in line order");
}

#[test]
fn a_mistyped_name_is_answered_with_the_one_meant() {
    let plan = "\
---
concurency: 2
---
## Task T1: First

- depend_on: T2
- Allowed-Path: src/**
- acceptance: it works

## Task T2: Second
";
    let text = compile("typo.md", plan).unwrap_err().to_string();
    for line in [
        "typo.md:2: concurency: unknown front matter key `concurency`: did you mean `concurrency`?",
        "typo.md:6: depend_on: unknown field `depend_on`: did you mean `depends_on`?",
        "typo.md:7: Allowed-Path: unknown field `Allowed-Path`: did you mean `allowed_paths`?",
        "typo.md:8: acceptance: `acceptance` is a section, not a field",
    ] {
        assert!(text.contains(line), "missing {line:?} in:\n{text}");
    }
    // Each is close to one name: that one is said, not the list of all.
    assert!(!text.contains("the fields are"), "{text}");
}

#[test]
fn an_empty_plan_is_an_error() {
    let errors = compile("empty.md", "# Nothing here\n\nJust prose.\n").unwrap_err();
    assert_eq!(errors.errors.len(), 1);
    assert!(errors
        .to_string()
        .starts_with("empty.md:1: the plan has no tasks"));
}

#[test]
fn malformed_yaml_front_matter_names_its_line() {
    let errors = compile(
        "y.md",
        "---\ntitle: a\nconcurrency: [1\n---\n## Task T1: x\n",
    )
    .unwrap_err();
    assert!(errors.to_string().contains("y.md:"), "{errors}");
    assert!(
        errors.to_string().contains("front matter: not valid YAML"),
        "{errors}"
    );
}

#[test]
fn sub_headings_work_as_section_labels() {
    let plan = "\
## Task A: With headings

Some description.

### Acceptance criteria

- it works

### Verify

```
make check
```

### Notes

Kept in the description.
";
    let g = compile("h.md", plan).unwrap().graph;
    let a = &g.tasks[0];
    assert_eq!(a.acceptance_criteria, ["it works"]);
    assert_eq!(a.verification.commands.as_deref().unwrap(), ["make check"]);
    assert!(a.description.contains("Some description."));
    assert!(a.description.contains("### Notes"));
    assert!(a.description.contains("Kept in the description."));
}

#[test]
fn drawings_show_every_task_and_edge() {
    let g = compile("plan.md", &example()).unwrap().graph;
    let mut outcomes = Outcomes::new();
    outcomes.insert("T1".into(), "completed".into());
    outcomes.insert("T3".into(), "failed".into());
    let mermaid = graph::mermaid(&g, &outcomes);
    assert!(mermaid.starts_with("flowchart TD\n"));
    assert!(mermaid.contains("t_T1 --> t_T2"));
    assert!(mermaid.contains("t_T3 -.-> t_T4"));
    assert!(mermaid.contains("t_T4 <-. conflict .-> t_T5"));
    assert!(mermaid.contains("class t_T3 failed"));
    assert!(mermaid.contains("classDef completed"));
    assert!(!mermaid.contains("classDef running"));
    let dot = graph::dot(&g, &outcomes);
    assert!(dot.contains("\"T1\" -> \"T2\";"));
    assert!(dot.contains("subgraph \"cluster_core\""));
    let text = graph::text(&g, &Outcomes::new());
    assert!(text.starts_with("wave 1 (1 task)\n  T1  Count words in a string"));
    assert!(text.contains("T5  README usage section  (after T3; never with T4)"));
}

#[test]
fn layering_finds_every_cycle_and_leaves_tasks_behind_them_out() {
    let g = compile(
        "c.md",
        "## Task A: a\n\n## Task B: b\n\n- depends_on: A, C\n\n## Task C: c\n\n- depends_on: B\n\n## Task D: d\n\n- depends_on: C\n\n## Task E: e\n\n- depends_on: E2\n\n## Task E2: e2\n\n- depends_on: E\n",
    )
    .unwrap_err();
    let text = g.to_string();
    assert!(text.contains("dependency cycle: B → C → B"), "{text}");
    assert!(text.contains("dependency cycle: E → E2 → E"), "{text}");
    assert_eq!(
        g.errors.len(),
        2,
        "D waits behind a cycle but is not one: {text}"
    );
}

#[test]
fn the_format_document_lists_every_field_and_holds_the_example() {
    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../docs/plan-format.md"
    ))
    .unwrap();
    for (name, what) in air_proto::plan::FIELDS
        .iter()
        .chain(air_proto::plan::FRONT_MATTER_KEYS)
    {
        let row = format!("| `{name}` | {what} |");
        assert!(
            doc.contains(&row),
            "docs/plan-format.md lacks the row {row}"
        );
    }
    assert!(
        doc.contains(&format!("````markdown\n{}````", example())),
        "docs/plan-format.md must hold examples/wordcount/plan.md verbatim"
    );
}

#[test]
fn a_check_may_declare_the_evidence_it_yields_and_no_tool_s_evidence_is_refused() {
    let plan = "# P\n\n## Task A: smoke [no-deploy-verify]\n\n- category: cpp_deploy\n- verify: `make check` [test_pass]\n\nShip it.\n\nAcceptance criteria:\n- it ships\n\nVerify:\n- `./smoke.sh` [smoke_test]\n- `make`\n";
    let compiled = compile("p.md", plan).unwrap();
    let v = &compiled.graph.tasks[0].verification;
    let declared: Vec<(String, EvidenceType)> = v
        .declared
        .iter()
        .flatten()
        .map(|d| (d.command.clone(), d.evidence_type))
        .collect();
    assert_eq!(
        declared,
        [
            ("make check".to_string(), EvidenceType::TestPass),
            ("./smoke.sh".to_string(), EvidenceType::SmokeTest)
        ]
    );
    assert_eq!(
        v.commands.as_deref().unwrap(),
        ["make check", "./smoke.sh", "make"]
    );
    // Without its marker, cpp_deploy requires deploy_verify, which no tool records
    // yet: the task could never complete, so the plan is refused, naming the marker.
    let e = compile("p.md", &plan.replace(" [no-deploy-verify]", "")).unwrap_err();
    let e: Vec<String> = e
        .errors
        .iter()
        .map(|d| d.display("p.md").to_string())
        .collect();
    assert!(
        e.iter().any(
            |e| e.contains("requires deploy_verify, which no tool of air records yet")
                && e.contains("[no-deploy-verify]")
        ),
        "{e:?}"
    );
    for (bad, says) in [
        (
            "- verify: `x` [teapot]",
            "`[teapot]` is not an evidence type",
        ),
        (
            "- verify: `x` [screenshot]",
            "`[screenshot]` cannot be declared",
        ),
    ] {
        let plan =
            format!("# P\n\n## Task A: a\n\n{bad}\n\nDo it.\n\nAcceptance criteria:\n- done\n");
        let e = compile("p.md", &plan).unwrap_err().to_string();
        assert!(e.contains("p.md:5: verify:") && e.contains(says), "{e}");
    }
}
