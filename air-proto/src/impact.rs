//! What a requirement change touches (seed 001 §14, phase 2): every task of the
//! graph classified SAFE, BOUNDARY or IMPACTED from the change the Architecture
//! Designer described (its scope, the modules it affects, the tasks it names), the
//! interfaces tasks provide and require, and the files each task works on or
//! changed; and what that means for each task where it stands (phase 3).
//!
//! Seeds are IMPACTED: the tasks the change names, and those that provide an
//! interface of an affected module or work on its files. From each, the impact goes
//! to the tasks that require what it provides: through a volatile interface they are
//! IMPACTED too, through a stable one BOUNDARY (to be verified), and a frozen one
//! stops it. A change of the implementation only changes no interface, so nothing
//! goes further than its seeds; a module replaced breaks every interface it had; a
//! global constraint touches every task. A task that depends on an impacted one with
//! no interface between them is BOUNDARY: what it was built on changed.
//!
//! The classification is monotone: a wider change never makes a task less impacted.

use std::collections::{BTreeMap, VecDeque};

use serde::{Deserialize, Serialize};

use crate::planning::{ChangeDescription, ChangeScope};
use crate::task::{DependencyType, InterfaceContract, Stability, TaskSpec};

/// Where a task stands, as what is done with it depends on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Not started (pending, ready).
    Waiting,
    /// An agent works on it (running, in review, being debugged).
    Started,
    Completed,
    /// Ended without completing (failed, blocked, cancelled).
    Ended,
}

wire_enum! {
    /// How much a change touches a task, in increasing order.
    pub enum Zone {
        Safe = "safe",
        Boundary = "boundary",
        Impacted = "impacted",
    }
}

impl Zone {
    fn rank(self) -> u8 {
        match self {
            Zone::Safe => 0,
            Zone::Boundary => 1,
            Zone::Impacted => 2,
        }
    }
}

wire_enum! {
    /// What is done with a task, by its zone and where it stands (seed 001 §14's
    /// table).
    pub enum Action {
        /// SAFE: goes on as it is (completed work stays merged; running work runs).
        Keep = "keep",
        /// IMPACTED and running: its agent is stopped now, and it is re-planned.
        Cancel = "cancel",
        /// IMPACTED and completed: its merged change is taken out (its branch is
        /// kept), and it is re-planned.
        Revert = "revert",
        /// BOUNDARY and completed: kept, and a task verifies it after the change.
        Verify = "verify",
        /// BOUNDARY and running: it finishes, then is verified after the change.
        WaitAndAssess = "wait_and_assess",
        /// IMPACTED or BOUNDARY and not started: held until the re-plan.
        Freeze = "freeze",
        /// Ended without completing: nothing to do.
        Nothing = "nothing",
    }
}

/// One task's place in the impact of a change.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TaskImpact {
    pub task_id: String,
    pub zone: Zone,
    pub action: Action,
    /// Why it is in its zone (for SAFE: none).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub why: String,
}

/// A task of the graph as the classification reads it.
#[derive(Clone, Debug)]
pub struct Node<'a> {
    pub spec: &'a TaskSpec,
    pub stage: Stage,
    /// The files its agents changed so far.
    pub changed: &'a [String],
}

/// Every task's zone and why, by id.
pub fn classify(
    nodes: &[Node<'_>],
    change: &ChangeDescription,
) -> BTreeMap<String, (Zone, String)> {
    let mut zones: BTreeMap<String, (Zone, String)> = nodes
        .iter()
        .map(|n| (n.spec.id.clone(), (Zone::Safe, String::new())))
        .collect();
    let mut queue: VecDeque<usize> = VecDeque::new();
    let raise =
        |zones: &mut BTreeMap<String, (Zone, String)>, id: &str, z: Zone, why: String| -> bool {
            match zones.get_mut(id) {
                Some(cur) if z.rank() > cur.0.rank() => {
                    *cur = (z, why);
                    true
                }
                _ => false,
            }
        };
    for (i, n) in nodes.iter().enumerate() {
        if let Some(why) = seed(n, change) {
            raise(&mut zones, &n.spec.id, Zone::Impacted, why);
            queue.push_back(i);
        }
    }
    // What an impacted (or boundary) task provides reaches those that require it.
    while let Some(i) = queue.pop_front() {
        let from = &nodes[i];
        let zone = zones.get(&from.spec.id).map_or(Zone::Safe, |z| z.0);
        for (j, to) in nodes.iter().enumerate() {
            if i == j {
                continue;
            }
            let mut next: Option<(Zone, String)> = None;
            let mut linked = false;
            for c in from.spec.contracts.provides.iter().flatten() {
                if !requires(to.spec, c) {
                    continue;
                }
                linked = true;
                let Some(z) = carried(zone, c.stability, change.scope) else {
                    continue;
                };
                let why = format!(
                    "requires {} {} `{}` from {}, which is {}",
                    c.stability.as_str(),
                    c.kind.as_str(),
                    c.module,
                    from.spec.id,
                    zone.as_str()
                );
                if next.as_ref().is_none_or(|(n, _)| z.rank() > n.rank()) {
                    next = Some((z, why));
                }
            }
            // Built on it with no interface between them: to be verified.
            if !linked && zone == Zone::Impacted && depends_hard(to.spec, &from.spec.id) {
                next = Some((
                    Zone::Boundary,
                    format!("depends on {}, which is impacted", from.spec.id),
                ));
            }
            if let Some((z, why)) = next {
                if raise(&mut zones, &to.spec.id, z, why) {
                    queue.push_back(j);
                }
            }
        }
    }
    zones
}

/// Why `n` is a seed of the change, if it is.
fn seed(n: &Node<'_>, change: &ChangeDescription) -> Option<String> {
    if change.scope == ChangeScope::GlobalConstraint {
        return Some("the change is a global constraint".into());
    }
    if change.tasks.iter().any(|t| t == &n.spec.id) {
        return Some("the change names it".into());
    }
    for m in &change.affected_modules {
        if let Some(c) = n
            .spec
            .contracts
            .provides
            .iter()
            .flatten()
            .find(|c| same_module(&c.module, m))
        {
            return Some(format!(
                "provides {} `{}` of affected module `{m}`",
                c.kind.as_str(),
                c.module
            ));
        }
        let scope = &n.spec.scope;
        let files = scope
            .write_area
            .iter()
            .chain(scope.expected_files.iter().flatten())
            .chain(scope.allowed_paths.iter().flatten())
            .chain(n.changed.iter());
        for f in files {
            if in_module(f, m) {
                return Some(format!("works on `{f}` in affected module `{m}`"));
            }
        }
    }
    None
}

/// What reaches a task that requires an interface of a task in `zone`, by the
/// interface's stability; `None`: nothing.
fn carried(zone: Zone, stability: Stability, scope: ChangeScope) -> Option<Zone> {
    // Only the implementation changed: no interface did (a task built on a seed is
    // still verified, by the dependency rule).
    if scope == ChangeScope::Implementation {
        return None;
    }
    let stability = if scope == ChangeScope::ModuleReplacement {
        Stability::Volatile
    } else {
        stability
    };
    match (zone, stability) {
        (_, Stability::Frozen) | (Zone::Safe, _) => None,
        (Zone::Impacted, Stability::Volatile) => Some(Zone::Impacted),
        _ => Some(Zone::Boundary),
    }
}

/// Whether `spec` requires what `c` is.
fn requires(spec: &TaskSpec, c: &InterfaceContract) -> bool {
    spec.contracts
        .requires
        .iter()
        .flatten()
        .any(|r| r.kind == c.kind && same_module(&r.module, &c.module))
}

fn depends_hard(spec: &TaskSpec, on: &str) -> bool {
    spec.dependencies
        .iter()
        .any(|d| d.depends_on_task_id == on && d.dependency_type == DependencyType::Hard)
}

fn norm(s: &str) -> String {
    s.trim()
        .trim_start_matches("./")
        .trim_end_matches('/')
        .to_ascii_lowercase()
}

fn same_module(a: &str, b: &str) -> bool {
    let (a, b) = (norm(a), norm(b));
    !a.is_empty() && a == b
}

/// Whether the file (or folder) `f` is in module `m`: under it as a path, or, for a
/// module named by one word, in a folder of that name.
fn in_module(f: &str, m: &str) -> bool {
    let (f, m) = (norm(f), norm(m));
    if m.is_empty() || f.is_empty() {
        return false;
    }
    if f == m || f.starts_with(&format!("{m}/")) {
        return true;
    }
    !m.contains('/') && f.split('/').rev().skip(1).any(|part| part == m)
}

/// What is done with a task of `zone` that stands at `stage`.
pub fn action(zone: Zone, stage: Stage) -> Action {
    match (zone, stage) {
        (Zone::Safe, _) => Action::Keep,
        (_, Stage::Ended) => Action::Nothing,
        (Zone::Impacted, Stage::Completed) => Action::Revert,
        (Zone::Impacted, Stage::Started) => Action::Cancel,
        (Zone::Boundary, Stage::Completed) => Action::Verify,
        (Zone::Boundary, Stage::Started) => Action::WaitAndAssess,
        (_, Stage::Waiting) => Action::Freeze,
    }
}

/// The impact of `change` on `nodes`, in their order.
pub fn assess(nodes: &[Node<'_>], change: &ChangeDescription) -> Vec<TaskImpact> {
    let zones = classify(nodes, change);
    nodes
        .iter()
        .map(|n| {
            let (zone, why) = zones
                .get(&n.spec.id)
                .cloned()
                .unwrap_or((Zone::Safe, String::new()));
            TaskImpact {
                task_id: n.spec.id.clone(),
                zone,
                action: action(zone, n.stage),
                why,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests;
