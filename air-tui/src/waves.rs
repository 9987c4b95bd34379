//! The waves of a task graph: each task in the wave after its latest hard dependency,
//! the order the list and the graph show tasks in.

use air_proto::projection::{EdgeView, TaskView};
use air_proto::task::DependencyType;

/// The waves of the tasks (indices into `tasks`, in plan order within a wave).
pub fn waves(tasks: &[TaskView], edges: &[EdgeView]) -> Vec<Vec<usize>> {
    // Longest path over hard edges, in topological order (linear in tasks and edges;
    // tasks on a cycle, which a plan cannot have, keep the level reached).
    let index: std::collections::HashMap<&str, usize> = tasks
        .iter()
        .enumerate()
        .map(|(i, t)| (t.id.as_str(), i))
        .collect();
    let mut children = vec![Vec::new(); tasks.len()];
    let mut waiting = vec![0usize; tasks.len()];
    for e in edges
        .iter()
        .filter(|e| e.dependency_type == DependencyType::Hard)
    {
        if let (Some(&child), Some(&parent)) = (
            index.get(e.task_id.as_str()),
            index.get(e.depends_on_task_id.as_str()),
        ) {
            children[parent].push(child);
            waiting[child] += 1;
        }
    }
    let mut level = vec![0usize; tasks.len()];
    let mut ready: std::collections::VecDeque<usize> =
        (0..tasks.len()).filter(|&i| waiting[i] == 0).collect();
    while let Some(parent) = ready.pop_front() {
        for &child in &children[parent] {
            level[child] = level[child].max(level[parent] + 1);
            waiting[child] -= 1;
            if waiting[child] == 0 {
                ready.push_back(child);
            }
        }
    }
    let depth = level.iter().max().map_or(0, |m| m + 1);
    let mut out = vec![Vec::new(); depth];
    for (i, l) in level.iter().enumerate() {
        out[*l].push(i);
    }
    out
}
