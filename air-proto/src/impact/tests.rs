//! The tests of `impact`.

use super::*;
use crate::task::{ContractKind, Contracts, TaskDependency, TaskScope};
use proptest::prelude::*;

fn contract(module: &str, stability: Stability) -> InterfaceContract {
    InterfaceContract {
        module: module.into(),
        kind: ContractKind::Api,
        spec: format!("{module} api"),
        stability,
    }
}

fn task(id: &str, provides: &[(&str, Stability)], requires: &[&str], deps: &[&str]) -> TaskSpec {
    let mut spec = crate::plan::compile("p.md", &format!("## Task {id}: t\n\nDo it.\n"))
        .unwrap()
        .graph
        .tasks
        .remove(0);
    spec.contracts = Contracts {
        provides: Some(provides.iter().map(|(m, s)| contract(m, *s)).collect()),
        requires: Some(
            requires
                .iter()
                .map(|m| contract(m, Stability::Stable))
                .collect(),
        ),
    };
    spec.dependencies = deps
        .iter()
        .map(|d| TaskDependency {
            depends_on_task_id: d.to_string(),
            dependency_type: DependencyType::Hard,
            reason: None,
            source: None,
        })
        .collect();
    spec.scope = TaskScope::default();
    spec
}

fn change(scope: ChangeScope, modules: &[&str]) -> ChangeDescription {
    ChangeDescription {
        scope,
        affected_modules: modules.iter().map(|m| m.to_string()).collect(),
        tasks: Vec::new(),
        summary: "s".into(),
    }
}

fn zones(specs: &[TaskSpec], statuses: &[Stage], c: &ChangeDescription) -> Vec<(Zone, Action)> {
    let nodes: Vec<Node> = specs
        .iter()
        .zip(statuses)
        .map(|(spec, stage)| Node {
            spec,
            stage: *stage,
            changed: &[],
        })
        .collect();
    assess(&nodes, c)
        .into_iter()
        .map(|t| (t.zone, t.action))
        .collect()
}

/// Six tasks: A and B provide the `auth` API (volatile and stable), C requires it
/// volatile from A, D requires it stable, E requires a frozen one, F stands apart.
#[test]
fn a_changed_interface_reaches_those_that_require_it_by_its_stability() {
    use Stability::*;
    let specs = vec![
        task("A", &[("auth", Volatile)], &[], &[]),
        task("B", &[("session", Stable)], &["auth"], &["A"]),
        task("C", &[], &["session"], &["B"]),
        task("D", &[("billing", Frozen)], &[], &[]),
        task("E", &[], &["billing"], &["D"]),
        task("F", &[], &[], &[]),
    ];
    use Stage as S;
    let statuses = [
        S::Completed,
        S::Started,
        S::Completed,
        S::Completed,
        S::Waiting,
        S::Started,
    ];
    let got = zones(
        &specs,
        &statuses,
        &change(ChangeScope::ExternalInterface, &["auth"]),
    );
    assert_eq!(
        got,
        [
            (Zone::Impacted, Action::Revert),
            // Requires A's volatile API: impacted too, and stopped.
            (Zone::Impacted, Action::Cancel),
            // Requires B's stable one: to be verified.
            (Zone::Boundary, Action::Verify),
            (Zone::Safe, Action::Keep),
            (Zone::Safe, Action::Keep),
            (Zone::Safe, Action::Keep),
        ]
    );
    // Only the implementation: the seed alone.
    let got = zones(
        &specs,
        &statuses,
        &change(ChangeScope::Implementation, &["auth"]),
    );
    assert_eq!(got[0].0, Zone::Impacted);
    assert!(got[1..].iter().all(|(z, _)| *z == Zone::Safe), "{got:?}");
    // A frozen interface stops a changed interface's impact at its edge…
    let got = zones(
        &specs,
        &statuses,
        &change(ChangeScope::ExternalInterface, &["billing"]),
    );
    assert_eq!(
        (got[3].0, got[4].0),
        (Zone::Impacted, Zone::Safe),
        "{got:?}"
    );
    // …but not a module replaced: every interface it had goes with it.
    let got = zones(
        &specs,
        &statuses,
        &change(ChangeScope::ModuleReplacement, &["billing"]),
    );
    assert_eq!(
        (got[3].0, got[4].0),
        (Zone::Impacted, Zone::Impacted),
        "{got:?}"
    );
    assert_eq!(got[4].1, Action::Freeze);
    // A global constraint touches everything.
    let got = zones(
        &specs,
        &statuses,
        &change(ChangeScope::GlobalConstraint, &[]),
    );
    assert!(got.iter().all(|(z, _)| *z == Zone::Impacted), "{got:?}");
}

#[test]
fn files_name_a_module_by_path_or_by_folder() {
    assert!(in_module("src/auth/login.rs", "src/auth"));
    assert!(in_module("src/auth/login.rs", "auth"));
    assert!(in_module("./src/Auth/", "src/auth"));
    assert!(!in_module("src/authz/login.rs", "src/auth"));
    assert!(!in_module("src/auth.rs", "auth"));
    assert!(!in_module("src/x.rs", ""));
}

fn stability() -> impl Strategy<Value = Stability> {
    prop_oneof![
        Just(Stability::Stable),
        Just(Stability::Volatile),
        Just(Stability::Frozen)
    ]
}

fn scope() -> impl Strategy<Value = ChangeScope> {
    prop_oneof![
        Just(ChangeScope::Implementation),
        Just(ChangeScope::InternalInterface),
        Just(ChangeScope::ExternalInterface),
        Just(ChangeScope::ModuleReplacement),
        Just(ChangeScope::GlobalConstraint),
    ]
}

/// A random graph of up to eight tasks over four modules, each providing at most one
/// interface and requiring and depending on earlier tasks only.
fn graph() -> impl Strategy<Value = Vec<TaskSpec>> {
    proptest::collection::vec(
        (
            proptest::option::of((0u8..4, stability())),
            proptest::collection::vec(0u8..4, 0..3),
            proptest::collection::vec(any::<bool>(), 8),
        ),
        1..8,
    )
    .prop_map(|rows| {
        rows.iter()
            .enumerate()
            .map(|(i, (provides, requires, deps))| {
                let provides: Vec<(String, Stability)> = provides
                    .iter()
                    .map(|(m, s)| (format!("m{m}"), *s))
                    .collect();
                let provides: Vec<(&str, Stability)> =
                    provides.iter().map(|(m, s)| (m.as_str(), *s)).collect();
                let requires: Vec<String> = requires.iter().map(|m| format!("m{m}")).collect();
                let requires: Vec<&str> = requires.iter().map(String::as_str).collect();
                let deps: Vec<String> = (0..i)
                    .filter(|j| deps[*j])
                    .map(|j| format!("T{j}"))
                    .collect();
                let deps: Vec<&str> = deps.iter().map(String::as_str).collect();
                task(&format!("T{i}"), &provides, &requires, &deps)
            })
            .collect()
    })
}

proptest! {
    /// A task that requires a non-frozen interface an IMPACTED task provides is never
    /// SAFE (unless only the implementation changed); and a wider change (one more
    /// affected module) never makes any task less impacted.
    #[test]
    fn the_classification_is_monotone(
        specs in graph(),
        scope in scope(),
        modules in proptest::collection::vec(0u8..4, 0..3),
        more in 0u8..4,
    ) {
        let names: Vec<String> = modules.iter().map(|m| format!("m{m}")).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        let nodes: Vec<Node> = specs.iter().map(|spec| Node { spec, stage: Stage::Waiting, changed: &[] }).collect();
        let narrow = classify(&nodes, &change(scope, &names));
        for from in &specs {
            if narrow[&from.id].0 != Zone::Impacted || scope == ChangeScope::Implementation {
                continue;
            }
            for c in from.contracts.provides.iter().flatten().filter(|c| c.stability != Stability::Frozen) {
                for to in specs.iter().filter(|t| t.id != from.id && requires(t, c)) {
                    prop_assert_ne!(narrow[&to.id].0, Zone::Safe, "{} requires {:?} of {}", to.id, c.module, from.id);
                }
            }
        }
        let mut wider = names.clone();
        let extra = format!("m{more}");
        wider.push(&extra);
        let wide = classify(&nodes, &change(scope, &wider));
        for (id, (z, _)) in &narrow {
            prop_assert!(wide[id].0.rank() >= z.rank(), "{} was {:?}, now {:?}", id, z, wide[id].0);
        }
    }
}
