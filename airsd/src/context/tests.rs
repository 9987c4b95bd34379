//! The tests of `context`.

use super::*;
use air_proto::result::WorkerStatus;

fn spec(id: &str, files: &[&str]) -> TaskSpec {
    let mut plan = format!("# P\n\n### Task {id}: title of {id}\n\n- verify: `make test`\n");
    if !files.is_empty() {
        let list: Vec<String> = files.iter().map(|f| format!("`{f}`")).collect();
        plan.push_str(&format!("- expected_files: {}\n", list.join(", ")));
    }
    plan.push_str("\nDo the thing.\n\nAcceptance criteria:\n- it works\n");
    let compiled = air_proto::plan::compile("plan.md", &plan).unwrap();
    compiled.graph.tasks.into_iter().next().unwrap()
}

fn request<'a>(
    spec: &'a TaskSpec,
    neighbours: &'a [Neighbour],
    budget: BudgetPolicy,
) -> Request<'a> {
    Request {
        role: AgentType::Executor,
        spec,
        notes: &[],
        previous: None,
        neighbours,
        tools: &[],
        model_id: "test-model",
        budget,
        diff: None,
        task_changes: &[],
        environment: None,
        conversation: None,
        skills: &[],
        memory: None,
    }
}

fn sources() -> Sources {
    Sources {
        project: Some(air_proto::project_profile::ProjectProfile {
            origin: air_proto::project_profile::ProfileOrigin::Confirmed,
            languages: Some(vec!["Rust".into()]),
            build: Some(vec!["cargo build".into()]),
            test: None,
            source_dirs: None,
            test_dirs: None,
            conventions: None,
            confirmed_at: None,
        }),
        plan_title: Some("A plan".into()),
        overview: Some("Build a small thing. ".repeat(40)),
        rules: vec![
            Rule {
                name: ".air/shared/rules/style.md".into(),
                paths: Vec::new(),
                body: "Use tabs.".into(),
                scoped: false,
            },
            Rule {
                name: ".air/shared/rules/web.md".into(),
                paths: vec!["web/**".into()],
                body: "Never inline scripts.".into(),
                scoped: false,
            },
        ],
    }
}

fn neighbour(id: &str, relation: Relation, summary: &str) -> Neighbour {
    Neighbour {
        spec: spec(id, &["lib/a.py"]),
        status: TaskStatus::Completed,
        relation,
        result: Some(WorkerResult::new(
            id,
            "a",
            AgentType::Executor,
            WorkerStatus::Completed,
            summary.into(),
        )),
    }
}

#[test]
fn layers_sections_and_estimates() {
    let t = spec("T2", &["src/main.rs"]);
    let n = [
        neighbour(
            "T1",
            Relation::Dependency(DependencyType::Hard),
            "Added count.",
        ),
        neighbour("T3", Relation::Dependent, "n/a"),
    ];
    let c = assemble(&sources(), &request(&t, &n, budget(200_000, 64_000, None)));
    assert_eq!(c.system.len(), 3, "system, role, rules");
    assert!(c.system[2].contains("Use tabs."));
    assert!(!c.system[2].contains("Never inline"));
    assert_eq!(
        c.summary.included_refs.rules,
        [".air/shared/rules/style.md"]
    );
    assert_eq!(c.summary.omissions.len(), 1);
    assert!(c.summary.omissions[0].reason.contains("web/**"));
    let ContentBlock::Text { text } = &c.messages[0].content[0] else {
        panic!("text")
    };
    for part in [
        "# Task T2",
        "make test",
        "`src/main.rs`",
        "Build a small thing",
        "T1 \"title of T1\" (completed; this task depends on it)",
        "it depends on this task",
        "Added count.",
        "Left out of this context",
        "## The project\n\nAs the user confirmed it:\n- Languages: Rust\n- Build: `cargo build`\n- Tests: unknown\n",
    ] {
        assert!(text.contains(part), "{part} missing from {text}");
    }
    let e = &c.summary.token_estimate;
    assert_eq!(e.total, e.by_section.values().sum::<u64>());
    assert_eq!(e.by_section["system"], estimate(SYSTEM));
    assert_eq!(
        e.by_section["role"],
        estimate(role_prompt(AgentType::Executor, false, false))
    );
    assert_eq!(
        e.by_section["plan"],
        estimate(&format!(
            "## The plan\n\nA plan\n\n{}\n",
            "Build a small thing. ".repeat(40).trim()
        ))
    );
    assert!(!c.summary.compaction.needed);
    assert_eq!(c.summary.included_refs.summaries, ["result:T1"]);
    assert_eq!(c.summary.included_refs.tasks, ["T2", "T1", "T3"]);
}

#[test]
fn optional_sections_go_first_then_compaction_is_requested() {
    let t = spec("T2", &[]);
    let n = [neighbour(
        "T1",
        Relation::Dependency(DependencyType::Hard),
        &"long summary ".repeat(400),
    )];
    let full = assemble(&sources(), &request(&t, &n, budget(200_000, 64_000, None)));
    let full_total = full.summary.token_estimate.total;
    // A window whose threshold the full context just misses: the neighbours go
    // first, then the parents' results.
    let by = &full.summary.token_estimate.by_section;
    let without_neighbours = full_total - by["neighbours"];
    // The smallest window whose threshold holds `threshold` (the float ratio may
    // round one token below it).
    let window = |threshold: u64| {
        let mut w =
            ((threshold as f64 / TARGET_USAGE).ceil() as u64) + RESERVED_OUTPUT + SAFETY_MARGIN;
        while budget(w, 64_000, None).threshold() < threshold {
            w += 1;
        }
        w
    };
    let c = assemble(
        &sources(),
        &request(&t, &n, budget(window(without_neighbours), 64_000, None)),
    );
    let gone: Vec<&str> = c
        .summary
        .omissions
        .iter()
        .map(|o| o.reference.as_str())
        .collect();
    assert_eq!(gone, ["neighbours"]);
    assert!(!c.summary.compaction.needed);
    assert!(c.summary.token_estimate.total <= c.summary.budget.threshold());

    // A tiny window: every optional section goes, and compaction is requested.
    let c = assemble(&sources(), &request(&t, &n, budget(6_500, 4_096, None)));
    let gone: Vec<&str> = c
        .summary
        .omissions
        .iter()
        .map(|o| o.reference.as_str())
        .collect();
    assert_eq!(gone, ["neighbours", "parents", "plan", "project"]);
    assert!(c.summary.compaction.needed);
    assert!(c
        .summary
        .compaction
        .reason
        .as_deref()
        .unwrap_or("")
        .contains("threshold"));
    let ContentBlock::Text { text } = &c.messages[0].content[0] else {
        panic!("text")
    };
    assert!(!text.contains("long summary"));
    assert!(text.contains("- parents: left out to fit the budget"));
}

#[test]
fn rule_files_with_front_matter() {
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join(".air/shared/rules");
    std::fs::create_dir_all(&rules).unwrap();
    std::fs::write(
        rules.join("b.md"),
        "---\npaths: [\"src/**\"]\n---\n# B\nbody b\n",
    )
    .unwrap();
    std::fs::write(rules.join("a.md"), "plain rule\n").unwrap();
    std::fs::write(rules.join("notes.txt"), "ignored").unwrap();
    let got = Sources::load_rules(dir.path(), &rules).unwrap();
    assert_eq!(got.len(), 2);
    assert_eq!(got[0].name, ".air/shared/rules/a.md");
    assert_eq!(got[1].paths, ["src/**"]);
    assert_eq!(got[1].body, "# B\nbody b");

    std::fs::write(rules.join("c.md"), "---\npaths: 3\n---\n").unwrap();
    let e = Sources::load_rules(dir.path(), &rules).unwrap_err();
    assert!(e.contains("c.md"), "{e}");
    std::fs::write(rules.join("c.md"), "---\nwhen: always\n---\n").unwrap();
    let e = Sources::load_rules(dir.path(), &rules).unwrap_err();
    assert!(e.contains("c.md") && e.contains("when"), "{e}");
    std::fs::write(rules.join("c.md"), "---\npaths: [\"src/[\"]\n---\n").unwrap();
    let e = Sources::load_rules(dir.path(), &rules).unwrap_err();
    assert!(e.contains("bad glob"), "{e}");
}

/// What every role reads — the prompts, its task's text, its tools' descriptions
/// and schemas — names no design document of air's (decision ids, seed
/// sections), and the plan's headings sit under the plan's section.
#[test]
fn no_role_reads_an_internal_reference() {
    // A decision id (`D-046`), a section sign, a seed's number.
    let internal = |text: &str| -> Vec<String> {
        let b = text.as_bytes();
        let mut found = Vec::new();
        for (i, w) in text.char_indices() {
            let digits = |at: usize| {
                b.get(at..at + 3)
                    .is_some_and(|d| d.iter().all(u8::is_ascii_digit))
            };
            if w == '§'
                || (text[i..].starts_with("D-") && digits(i + 2))
                || (text[i..].starts_with("seed ") && digits(i + 5))
            {
                found.push(text[i..].chars().take(12).collect());
            }
        }
        found
    };
    let mut t = spec("T1", &["src/a.rs"]);
    t.contracts.provides = Some(vec![air_proto::task::InterfaceContract {
        module: "a".into(),
        kind: air_proto::task::ContractKind::Api,
        spec: "f() -> u32".into(),
        stability: air_proto::task::Stability::Frozen,
    }]);
    let sources = Sources {
        overview: Some("# A plan\n\nIt builds a thing.\n\n## Notes\n\nMore.".into()),
        ..Sources::default()
    };
    for (role, task_type) in [
        (AgentType::Executor, air_proto::task::TaskType::Execute),
        (AgentType::Reviewer, air_proto::task::TaskType::Execute),
        (AgentType::Debugger, air_proto::task::TaskType::Execute),
        (
            AgentType::ArchitectureDesigner,
            air_proto::task::TaskType::Execute,
        ),
        (
            AgentType::ArchitectureDesigner,
            air_proto::task::TaskType::Review,
        ),
        (AgentType::Main, air_proto::task::TaskType::Execute),
    ] {
        t.task_type = task_type;
        let tools = crate::tools::offered(role);
        let environment = Environment {
            root: "/p".into(),
            os: "linux".into(),
            date: "2026-12-01".into(),
            tree: Worktree::Git {
                branch: Some("main".into()),
                dirty: vec!["src/a.rs".into()],
            },
            mode: air_proto::plan::PermissionMode::Default,
        };
        let mut req = request(&t, &[], budget(200_000, 64_000, None));
        req.role = role;
        req.tools = &tools;
        req.environment = Some(&environment);
        let c = assemble(&sources, &req);
        let text = format!(
            "{}\n{}\n{}",
            c.system.join("\n"),
            serde_json::to_string(&c.messages).unwrap(),
            serde_json::to_string(&tools).unwrap()
        );
        let found = internal(&text);
        assert!(found.is_empty(), "{role:?}: {found:?}");
        let user = serde_json::to_string(&c.messages).unwrap();
        assert!(user.contains("## The plan\\n\\n### A plan"), "{user}");
        assert!(user.contains("#### Notes"), "{user}");
        if role == AgentType::Executor {
            assert!(
                user.contains("A frozen interface must stay exactly as stated"),
                "{user}"
            );
            assert!(
                user.contains("## Environment\\n\\n- Project root: /p"),
                "{user}"
            );
        }
    }
}

#[test]
fn headings_nest_outside_code_fences_only() {
    let text =
        "# Title\n\n````md\n```\n# not a heading\n```\n````\n## Part\n~~~\n# code\n~~~\n#tag\n";
    assert_eq!(
        nest_headings(text, 2),
        "### Title\n\n````md\n```\n# not a heading\n```\n````\n#### Part\n~~~\n# code\n~~~\n#tag\n"
    );
}
