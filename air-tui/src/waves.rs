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
    for (child, parent) in phase_order(tasks) {
        children[parent].push(child);
        waiting[child] += 1;
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

/// The order phases impose, which the plan's edges do not name (`(task, what it
/// waits for)`): a phase's milestone review comes after every task of its phase, and
/// a later phase's tasks after the milestone reviews of the phase before it.
fn phase_order(tasks: &[TaskView]) -> Vec<(usize, usize)> {
    use air_proto::task::milestone_phase;
    // The phases in the order their first task appears.
    let mut phases: Vec<&str> = Vec::new();
    for t in tasks {
        let phase = milestone_phase(&t.id).or(t.phase.as_deref());
        if let Some(p) = phase.filter(|p| !phases.contains(p)) {
            phases.push(p);
        }
    }
    let rank = |p: &str| phases.iter().position(|x| *x == p);
    let mut out = Vec::new();
    for (m, review) in tasks.iter().enumerate() {
        let Some(phase) = milestone_phase(&review.id) else {
            continue;
        };
        for (i, t) in tasks.iter().enumerate() {
            if milestone_phase(&t.id).is_some() {
                continue;
            }
            match t.phase.as_deref().and_then(rank) {
                Some(r) if Some(r) == rank(phase) => out.push((m, i)),
                Some(r) if rank(phase).is_some_and(|p| r == p + 1) => out.push((i, m)),
                _ => {}
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(id: &str, phase: &str) -> TaskView {
        serde_json::from_value(serde_json::json!({
            "id": id, "title": id, "task_type": "implementation", "phase": phase,
            "status": "pending", "attempts": 0,
            "created_at": "2026-12-05T00:00:00Z", "updated_at": "2026-12-05T00:00:00Z"
        }))
        .unwrap()
    }

    #[test]
    fn milestone_reviews_come_after_their_phase_and_before_the_next() {
        let tasks = vec![
            task("T1", "core"),
            task("T2", "core"),
            task("T3", "cli"),
            task("core:milestone-1", "core"),
            task("cli:milestone-1", "cli"),
        ];
        let edges = vec![EdgeView {
            task_id: "T2".into(),
            depends_on_task_id: "T1".into(),
            dependency_type: DependencyType::Hard,
        }];
        let names = |w: Vec<Vec<usize>>| -> Vec<Vec<&str>> {
            w.into_iter()
                .map(|l| l.into_iter().map(|i| tasks[i].id.as_str()).collect())
                .collect()
        };
        assert_eq!(
            names(waves(&tasks, &edges)),
            vec![
                vec!["T1"],
                vec!["T2"],
                vec!["core:milestone-1"],
                vec!["T3"],
                vec!["cli:milestone-1"],
            ]
        );
    }
}
