//! The execution plan computed once from a validated topology: task ids, executors and interned
//! stream ids. The scheduler, the coordination tree and the runtime all read this one plan, so
//! a task id means the same thing everywhere (Storm: `mk-task-component-assignments`).

use crate::model::{Topology, DEFAULT_STREAM};
use std::collections::BTreeMap;
use std::ops::RangeInclusive;

/// Storm's acker bolt id.
pub(crate) const ACKER_ID: &str = "__acker";
/// Storm's system component (source of tick tuples).
pub(crate) const SYSTEM_ID: &str = "__system";
/// The task id tick tuples and other system tuples come from (Storm: -1; ids here start at 1).
pub const SYSTEM_TASK: u32 = 0;

/// Interned stream ids. `DEFAULT` is always 0; the system streams follow; user streams after.
pub type StreamId = u16;
pub mod streams {
    use super::StreamId;
    pub const DEFAULT: StreamId = 0;
    pub const TICK: StreamId = 1;
    pub const ACK_INIT: StreamId = 2;
    pub const ACK_ACK: StreamId = 3;
    pub(crate) const ACK_FAIL: StreamId = 4;
    /// Partial counts or op states summed on the sending side: `[key…, n]` or
    /// `[key…, state…, unusable]` (see `model::partials`).
    pub(crate) const PARTIAL: StreamId = 5;
    /// A chunk of lines folded where they were read, for the bolt that folded them (see
    /// `Bolt::reader_fold`).
    pub(crate) const FOLDED: StreamId = 6;
    /// Names of the fixed ids above, in order.
    pub(crate) const SYSTEM: &[&str] = &[
        "default",
        "__tick",
        "__ack_init",
        "__ack_ack",
        "__ack_fail",
        "__partial",
        "__folded",
    ];
}

/// One component's tasks and executors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ComponentTasks {
    pub(crate) id: String,
    /// Task ids, consecutive.
    pub tasks: RangeInclusive<u32>,
    /// Executors as contiguous task ranges, in task order.
    pub(crate) executors: Vec<RangeInclusive<u32>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// In lexicographic order of component id, system components included.
    pub(crate) components: Vec<ComponentTasks>,
    /// Interned stream names (index = StreamId).
    pub(crate) stream_names: Vec<String>,
    /// Acker executors (0 = acking off).
    pub(crate) ackers: u32,
    /// Which bolts run fused onto the component before them.
    pub(crate) chains: super::chains::Chains,
    /// Which bolts take partial counts, summed by the components before them.
    pub(crate) partials: super::partials::Partials,
}

impl Plan {
    pub fn new(topology: &Topology) -> Plan {
        let workers = topology.config.workers();
        let ackers = topology.config.acker_executors().unwrap_or(workers);
        let mut sizes: BTreeMap<&str, (u32, u32)> = topology
            .components
            .iter()
            .map(|c| (c.id.as_str(), (c.parallelism, c.tasks)))
            .collect();
        if ackers > 0 {
            sizes.insert(ACKER_ID, (ackers, ackers));
        }
        let mut next = 1u32;
        let components = sizes
            .into_iter()
            .map(|(id, (parallelism, tasks))| {
                let first = next;
                next += tasks;
                ComponentTasks {
                    id: id.to_string(),
                    tasks: first..=first + tasks - 1,
                    executors: executor_ranges(first, tasks, parallelism),
                }
            })
            .collect();

        let mut stream_names: Vec<String> = streams::SYSTEM.iter().map(|s| s.to_string()).collect();
        let mut seen: std::collections::BTreeSet<String> = stream_names.iter().cloned().collect();
        let mut declared: Vec<&String> = topology
            .components
            .iter()
            .flat_map(|c| c.outputs.keys())
            .chain(topology.streams.iter().map(|s| &s.stream))
            .collect();
        declared.sort();
        for s in declared {
            if seen.insert(s.clone()) {
                stream_names.push(s.clone());
            }
        }
        debug_assert_eq!(stream_names[streams::DEFAULT as usize], DEFAULT_STREAM);
        Plan {
            components,
            stream_names,
            ackers,
            chains: super::chains::Chains::of(topology),
            partials: super::partials::Partials::of(topology),
        }
    }

    pub fn stream_id(&self, name: &str) -> Option<StreamId> {
        self.stream_names
            .iter()
            .position(|s| s == name)
            .map(|i| i as StreamId)
    }

    pub(crate) fn stream_name(&self, id: StreamId) -> &str {
        self.stream_names
            .get(id as usize)
            .map(|s| s.as_str())
            .unwrap_or("?")
    }

    pub fn component(&self, id: &str) -> Option<&ComponentTasks> {
        self.components.iter().find(|c| c.id == id)
    }

    /// The component a task belongs to (`__system` for `SYSTEM_TASK`).
    pub(crate) fn component_of_task(&self, task: u32) -> &str {
        if task == SYSTEM_TASK {
            return SYSTEM_ID;
        }
        self.components
            .iter()
            .find(|c| c.tasks.contains(&task))
            .map(|c| c.id.as_str())
            .unwrap_or("?")
    }

    /// Every task id with its component, in task order.
    pub(crate) fn task_to_component(&self) -> BTreeMap<u32, &str> {
        self.components
            .iter()
            .flat_map(|c| c.tasks.clone().map(move |t| (t, c.id.as_str())))
            .collect()
    }

    /// All executors in task order, with their component.
    pub(crate) fn executors(&self) -> Vec<(&str, RangeInclusive<u32>)> {
        let mut all: Vec<(&str, RangeInclusive<u32>)> = self
            .components
            .iter()
            .flat_map(|c| c.executors.iter().map(move |e| (c.id.as_str(), e.clone())))
            .collect();
        all.sort_by_key(|(_, r)| *r.start());
        all
    }

    pub(crate) fn total_tasks(&self) -> u32 {
        self.components
            .iter()
            .map(|c| c.tasks.end() - c.tasks.start() + 1)
            .sum()
    }
}

/// Split `count` tasks starting at `first` into `executors` contiguous ranges whose sizes differ
/// by at most one, larger first (Storm's `partition-fixed`).
pub(crate) fn executor_ranges(first: u32, count: u32, executors: u32) -> Vec<RangeInclusive<u32>> {
    let executors = executors.clamp(1, count.max(1));
    let base = count / executors;
    let extra = count % executors;
    let mut start = first;
    (0..executors)
        .map(|i| {
            let len = base + u32::from(i < extra);
            let r = start..=start + len - 1;
            start += len;
            r
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn executors_split_tasks_evenly_larger_first() {
        assert_eq!(executor_ranges(1, 5, 2), vec![1..=3, 4..=5]);
        assert_eq!(executor_ranges(4, 3, 3), vec![4..=4, 5..=5, 6..=6]);
        assert_eq!(executor_ranges(1, 4, 4).len(), 4);
    }
}
