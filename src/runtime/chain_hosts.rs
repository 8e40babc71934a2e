//! Where chained executors run: each executor of a chained bolt runs on the thread of the
//! executor it is paired with upstream (the one holding the tasks at the same indexes), when
//! both are in the same worker; a chain of chains runs on the thread of its head.

use crate::model::plan::Plan;

/// For each executor (indexed like `Plan::executors()`), the executor whose thread it runs on,
/// or `None` when it has a thread of its own.
pub(crate) fn hosts(
    plan: &Plan,
    exec_of_task: &[Option<usize>],
    worker_of_exec: &[usize],
) -> Vec<Option<usize>> {
    let executors = plan.executors();
    let direct: Vec<Option<usize>> = executors
        .iter()
        .enumerate()
        .map(|(i, (component, tasks))| {
            let up = plan.chains.upstream_of(component)?;
            let first = *plan.component(component)?.tasks.start();
            let paired = *plan.component(up)?.tasks.start() + (tasks.start() - first);
            let j = (*exec_of_task.get(paired as usize)?)?;
            (worker_of_exec.get(j) == worker_of_exec.get(i)).then_some(j)
        })
        .collect();
    (0..executors.len())
        .map(|i| {
            let mut host = direct[i]?;
            // Up to the head of the chain; a chain is acyclic, the bound keeps it finite anyway.
            for _ in 0..executors.len() {
                match direct[host] {
                    Some(up) => host = up,
                    None => break,
                }
            }
            Some(host)
        })
        .collect()
}
