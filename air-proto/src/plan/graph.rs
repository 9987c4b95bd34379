//! The task graph as a graph: Kahn's algorithm for waves and cycle detection, and
//! drawings of the DAG (Mermaid, Graphviz dot, text).

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

use crate::task::{DependencyType, TaskSpec};

use super::TaskGraph;

/// The outcome of layering a graph by its hard dependencies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layering {
    /// Waves in order; each wave lists task ids in plan order. Tasks on or behind a
    /// cycle are in no wave.
    pub waves: Vec<Vec<String>>,
    /// Every cycle found, as the path of ids from a task back to itself
    /// (`["T3", "T5", "T3"]` reads "T3 depends on T5, which depends on T3").
    pub cycles: Vec<Vec<String>>,
}

/// Kahn's algorithm over hard dependencies (edges to unknown ids are ignored; the plan
/// compiler reports them separately).
pub fn layer(tasks: &[TaskSpec]) -> Layering {
    let index: HashMap<&str, usize> = tasks
        .iter()
        .enumerate()
        .map(|(i, t)| (t.id.as_str(), i))
        .collect();
    // deps[i]: the tasks i waits for; dependents[j]: the tasks waiting for j.
    let mut deps: Vec<Vec<usize>> = vec![Vec::new(); tasks.len()];
    let mut dependents: Vec<Vec<usize>> = vec![Vec::new(); tasks.len()];
    for (i, task) in tasks.iter().enumerate() {
        for dep in &task.dependencies {
            if dep.dependency_type != DependencyType::Hard {
                continue;
            }
            if let Some(&j) = index.get(dep.depends_on_task_id.as_str()) {
                if !deps[i].contains(&j) {
                    deps[i].push(j);
                    dependents[j].push(i);
                }
            }
        }
    }
    let mut in_degree: Vec<usize> = deps.iter().map(Vec::len).collect();
    let mut placed = vec![false; tasks.len()];
    let mut waves = Vec::new();
    let mut current: Vec<usize> = (0..tasks.len()).filter(|&i| in_degree[i] == 0).collect();
    while !current.is_empty() {
        let mut next = Vec::new();
        for &i in &current {
            placed[i] = true;
            for &d in &dependents[i] {
                in_degree[d] -= 1;
                if in_degree[d] == 0 {
                    next.push(d);
                }
            }
        }
        next.sort_unstable();
        waves.push(current.iter().map(|&i| tasks[i].id.clone()).collect());
        current = next;
    }
    // Every unplaced task waits for at least one unplaced task, so walking "waits for"
    // edges from any of them must reach a cycle.
    let mut cycles = Vec::new();
    let mut done = placed.clone();
    for start in 0..tasks.len() {
        if done[start] {
            continue;
        }
        let mut path: Vec<usize> = Vec::new();
        let mut on_path: HashMap<usize, usize> = HashMap::new();
        let mut node = start;
        loop {
            if let Some(&pos) = on_path.get(&node) {
                let mut cycle: Vec<String> =
                    path[pos..].iter().map(|&i| tasks[i].id.clone()).collect();
                cycle.push(tasks[node].id.clone());
                cycles.push(cycle);
                break;
            }
            if done[node] {
                break;
            }
            on_path.insert(node, path.len());
            path.push(node);
            match deps[node].iter().find(|&&d| !placed[d]) {
                Some(&d) => node = d,
                None => break,
            }
        }
        for i in path {
            done[i] = true;
        }
    }
    Layering { waves, cycles }
}

/// Formats a cycle as `T3 → T5 → T3`.
pub fn cycle_path(cycle: &[String]) -> String {
    cycle.join(" → ")
}

/// How a drawing colours tasks: task id → status (`completed`, `failed`, …).
pub type Outcomes = BTreeMap<String, String>;

const STATUS_COLOURS: &[(&str, &str, &str)] = &[
    // status, fill, stroke
    ("completed", "#d3f9d8", "#2b8a3e"),
    ("failed", "#ffe3e3", "#c92a2a"),
    ("blocked", "#fff3bf", "#e67700"),
    ("cancelled", "#e9ecef", "#495057"),
    ("running", "#d0ebff", "#1864ab"),
    ("reviewing", "#e5dbff", "#5f3dc4"),
    ("debugging", "#ffe8cc", "#d9480f"),
    ("ready", "#f1f3f5", "#343a40"),
    ("pending", "#ffffff", "#868e96"),
];

fn mermaid_label(text: &str) -> String {
    text.replace('"', "#quot;")
        .replace('<', "#lt;")
        .replace('>', "#gt;")
}

fn node_name(id: &str) -> String {
    // Mermaid and dot node names: keep ids readable but safe.
    let safe: String = id
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    format!("t_{safe}")
}

/// What a drawing shows: tasks (with their phase), edges and phase titles. Built from
/// a compiled plan or from a session's projection.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Drawing {
    /// (id, title, phase), in plan order.
    pub nodes: Vec<(String, String, Option<String>)>,
    /// (depends on, task, type).
    pub edges: Vec<(String, String, DependencyType)>,
    pub phase_titles: BTreeMap<String, String>,
}

impl Drawing {
    pub fn from_graph(graph: &TaskGraph) -> Self {
        Self {
            nodes: graph
                .tasks
                .iter()
                .map(|t| (t.id.clone(), t.title.clone(), t.phase.clone()))
                .collect(),
            edges: graph
                .tasks
                .iter()
                .flat_map(|t| {
                    t.dependencies.iter().map(|d| {
                        (
                            d.depends_on_task_id.clone(),
                            t.id.clone(),
                            d.dependency_type,
                        )
                    })
                })
                .collect(),
            phase_titles: graph
                .phases
                .iter()
                .filter_map(|p| p.title.clone().map(|t| (p.id.clone(), t)))
                .collect(),
        }
    }

    /// A drawing of these tasks (id, title, phase) and edges (from, to, type).
    pub fn new(
        nodes: Vec<(String, String, Option<String>)>,
        edges: Vec<(String, String, DependencyType)>,
    ) -> Self {
        Self {
            nodes,
            edges,
            phase_titles: BTreeMap::new(),
        }
    }

    fn by_phase(&self) -> Vec<PhaseGroup<'_>> {
        let mut groups: Vec<PhaseGroup<'_>> = Vec::new();
        for (id, title, phase) in &self.nodes {
            match groups.iter_mut().find(|(p, _)| p == phase) {
                Some((_, nodes)) => nodes.push((id, title)),
                None => groups.push((phase.clone(), vec![(id, title)])),
            }
        }
        groups
    }
}

/// The nodes (id, title) of one phase, or of no phase.
type PhaseGroup<'a> = (Option<String>, Vec<(&'a str, &'a str)>);

/// A Mermaid flowchart of a plan (see [`mermaid_drawing`]).
pub fn mermaid(graph: &TaskGraph, outcomes: &Outcomes) -> String {
    mermaid_drawing(&Drawing::from_graph(graph), outcomes)
}

/// A Mermaid flowchart: phases as subgraphs, hard edges solid, soft edges dotted,
/// conflict and serialization edges as labelled undirected links, nodes coloured by
/// outcome.
pub fn mermaid_drawing(drawing: &Drawing, outcomes: &Outcomes) -> String {
    let mut out = String::from("flowchart TD\n");
    for (phase, nodes) in drawing.by_phase() {
        let indent = if phase.is_some() { "    " } else { "" };
        if let Some(phase) = &phase {
            let title = drawing
                .phase_titles
                .get(phase)
                .map(|t| format!("{phase}: {t}"))
                .unwrap_or_else(|| phase.clone());
            let _ = writeln!(
                out,
                "    subgraph {}[\"{}\"]",
                node_name(&format!("phase_{phase}")),
                mermaid_label(&title)
            );
        }
        for (id, title) in nodes {
            let _ = writeln!(
                out,
                "{indent}    {}[\"{}: {}\"]",
                node_name(id),
                mermaid_label(id),
                mermaid_label(title)
            );
        }
        if phase.is_some() {
            out.push_str("    end\n");
        }
    }
    for (from, to, kind) in &drawing.edges {
        let (from, to) = (node_name(from), node_name(to));
        let line = match kind {
            DependencyType::Hard => format!("{from} --> {to}"),
            DependencyType::Soft => format!("{from} -.-> {to}"),
            DependencyType::Conflict => format!("{from} <-. conflict .-> {to}"),
            DependencyType::Serialization => format!("{from} <-. serial .-> {to}"),
        };
        let _ = writeln!(out, "    {line}");
    }
    let mut used: Vec<&str> = Vec::new();
    for (id, _, _) in &drawing.nodes {
        if let Some(status) = outcomes.get(id) {
            if let Some((name, ..)) = STATUS_COLOURS.iter().find(|(s, ..)| s == status) {
                let _ = writeln!(out, "    class {} {name}", node_name(id));
                if !used.contains(name) {
                    used.push(name);
                }
            }
        }
    }
    for (name, fill, stroke) in STATUS_COLOURS {
        if used.contains(name) {
            let _ = writeln!(out, "    classDef {name} fill:{fill},stroke:{stroke}");
        }
    }
    out
}

fn dot_string(text: &str) -> String {
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}

/// A Graphviz digraph with the same conventions as [`mermaid`].
pub fn dot(graph: &TaskGraph, outcomes: &Outcomes) -> String {
    let drawing = Drawing::from_graph(graph);
    let mut out = String::from(
        "digraph plan {\n    rankdir=TB;\n    node [shape=box, style=\"rounded,filled\", fillcolor=\"#ffffff\"];\n",
    );
    for (phase, nodes) in drawing.by_phase() {
        let indent = if phase.is_some() { "        " } else { "    " };
        if let Some(phase) = &phase {
            let _ = writeln!(
                out,
                "    subgraph {} {{\n        label={};",
                dot_string(&format!("cluster_{phase}")),
                dot_string(phase)
            );
        }
        for (id, title) in nodes {
            let colour = outcomes
                .get(id)
                .and_then(|s| STATUS_COLOURS.iter().find(|(name, ..)| name == s))
                .map(|(_, fill, stroke)| format!(", fillcolor=\"{fill}\", color=\"{stroke}\""))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "{indent}{} [label={}{colour}];",
                dot_string(id),
                dot_string(&format!("{id}: {title}"))
            );
        }
        if phase.is_some() {
            out.push_str("    }\n");
        }
    }
    for (from, to, kind) in &drawing.edges {
        let style = match kind {
            DependencyType::Hard => "",
            DependencyType::Soft => " [style=dashed]",
            DependencyType::Conflict => {
                " [dir=none, style=dotted, color=\"#c92a2a\", label=\"conflict\"]"
            }
            DependencyType::Serialization => {
                " [dir=none, style=dotted, color=\"#e67700\", label=\"serial\"]"
            }
        };
        let _ = writeln!(
            out,
            "    {} -> {}{style};",
            dot_string(from),
            dot_string(to)
        );
    }
    out.push_str("}\n");
    out
}

/// Waves as text: one line per task with what it waits for.
pub fn text(graph: &TaskGraph, outcomes: &Outcomes) -> String {
    let tasks: HashMap<&str, &TaskSpec> = graph.tasks.iter().map(|t| (t.id.as_str(), t)).collect();
    let mut out = String::new();
    for (n, wave) in graph.waves.iter().enumerate() {
        let _ = writeln!(
            out,
            "wave {} ({} task{})",
            n + 1,
            wave.len(),
            plural(wave.len())
        );
        for id in wave {
            let Some(task) = tasks.get(id.as_str()) else {
                continue;
            };
            let mut line = format!("  {id}  {}", task.title);
            if let Some(status) = outcomes.get(id) {
                let _ = write!(line, "  [{status}]");
            }
            let mut notes = Vec::new();
            for kind in DependencyType::ALL {
                let ids: Vec<&str> = task
                    .dependencies
                    .iter()
                    .filter(|d| d.dependency_type == *kind)
                    .map(|d| d.depends_on_task_id.as_str())
                    .collect();
                if !ids.is_empty() {
                    let label = match kind {
                        DependencyType::Hard => "after",
                        DependencyType::Soft => "preferably after",
                        DependencyType::Conflict => "never with",
                        DependencyType::Serialization => "serialised with",
                    };
                    notes.push(format!("{label} {}", ids.join(", ")));
                }
            }
            if let Some(area) = &task.scope.write_area {
                notes.push(format!("write area {area}"));
            }
            if !notes.is_empty() {
                let _ = write!(line, "  ({})", notes.join("; "));
            }
            out.push_str(&line);
            out.push('\n');
        }
    }
    out
}

pub(crate) fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}
