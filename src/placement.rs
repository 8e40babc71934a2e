//! Where executors run: every placement algorithm, pure, below both the runtime and the
//! cluster that use them.
//!
//! - [`Placement::round_robin`]: local mode and in-process workers, executors in task order
//!   over the workers.
//! - `schedule` / `reassign`: Nimbus's even scheduler (Storm 0.x
//!   `compute-new-task->node+port`), from the plan's executors, the free slots and the current
//!   placement to a new placement. Slots are grouped by supervisor, the supervisors with the
//!   most free slots first, and interleaved across supervisors (Storm's `sortSlots`); the first
//!   `topology.workers` are used, and executors go round-robin over them in task-id order.
//!   Re-assignment keeps healthy slots whose load fits an even spread and moves the rest.
//! - `place_with_home`: runs with a home worker (`storm run --processes`, `--nimbus`), whose
//!   console executors stay in the `storm run` process.

use crate::model::plan::Plan;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// A worker slot: a supervisor (by id) and one of its ports (Storm's `node+port`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodePort {
    pub(crate) node: String,
    pub(crate) port: u16,
}

impl std::fmt::Display for NodePort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.node, self.port)
    }
}

impl std::str::FromStr for NodePort {
    type Err = String;
    fn from_str(s: &str) -> Result<NodePort, String> {
        let (node, port) = s
            .rsplit_once(':')
            .ok_or_else(|| format!("`{s}` is not NODE:PORT"))?;
        let port = port
            .parse::<u16>()
            .ok()
            .filter(|p| *p > 0)
            .ok_or_else(|| format!("`{s}`: `{port}` is not a port (1-65535)"))?;
        if node.is_empty() {
            return Err(format!("`{s}`: the node is empty"));
        }
        Ok(NodePort {
            node: node.to_string(),
            port,
        })
    }
}

impl Serialize for NodePort {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for NodePort {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<NodePort, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// Which worker runs each executor (indexed like `Plan::executors()`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    pub(crate) worker_of_exec: Vec<usize>,
    pub(crate) workers: usize,
}

impl Placement {
    /// Executors in task order, round-robin over the workers (at least one).
    pub fn round_robin(plan: &Plan, workers: usize) -> Placement {
        let workers: Vec<usize> = (0..workers.max(1)).collect();
        Placement {
            worker_of_exec: round_robin(plan.executors().len(), &workers)
                .copied()
                .collect(),
            workers: workers.len(),
        }
    }

    /// The executors (component, tasks) that worker `w` runs.
    pub(crate) fn executors_of<'p>(
        &self,
        plan: &'p Plan,
        w: usize,
    ) -> impl Iterator<Item = (&'p str, std::ops::RangeInclusive<u32>)> + use<'_, 'p> {
        plan.executors()
            .into_iter()
            .enumerate()
            .filter(move |(exec, _)| self.worker_of_exec.get(*exec) == Some(&w))
            .map(|(_, e)| e)
    }
}

/// Round-robin: the targets of `items` items in turn, item `i` getting `targets[i % len]`
/// (nothing when there are no targets).
fn round_robin<T>(items: usize, targets: &[T]) -> impl Iterator<Item = &T> {
    targets
        .iter()
        .cycle()
        .take(if targets.is_empty() { 0 } else { items })
}

/// A slot offered by a live supervisor: its id, host and one of its ports.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Slot {
    pub(crate) node: String,
    pub(crate) host: String,
    pub(crate) port: u16,
}

impl Slot {
    pub(crate) fn node_port(&self) -> NodePort {
        NodePort {
            node: self.node.clone(),
            port: self.port,
        }
    }
}

/// An executor: a contiguous range of task ids (Storm's `[start-task end-task]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Executor {
    pub(crate) first: u32,
    last: u32,
}

impl Executor {
    pub(crate) fn tasks(self) -> std::ops::RangeInclusive<u32> {
        self.first..=self.last
    }
}

/// Every executor of a plan, in task-id order.
pub(crate) fn executors_of(plan: &Plan) -> Vec<Executor> {
    plan.executors()
        .into_iter()
        .map(|(_, r)| Executor {
            first: *r.start(),
            last: *r.end(),
        })
        .collect()
}

/// Where each executor runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Schedule {
    executors: BTreeMap<Executor, NodePort>,
}

impl Schedule {
    /// The placement per task (what `/assignments/{id}` records).
    pub(crate) fn task_to_node_port(&self) -> BTreeMap<u32, NodePort> {
        self.executors
            .iter()
            .flat_map(|(e, slot)| e.tasks().map(move |t| (t, slot.clone())))
            .collect()
    }

    /// Rebuild a placement from a per-task one: an executor is placed when all its tasks are
    /// on one slot.
    pub(crate) fn from_tasks(executors: &[Executor], tasks: &BTreeMap<u32, NodePort>) -> Schedule {
        let executors = executors
            .iter()
            .filter_map(|e| {
                let slot = tasks.get(&e.first)?;
                e.tasks()
                    .all(|t| tasks.get(&t) == Some(slot))
                    .then(|| (*e, slot.clone()))
            })
            .collect();
        Schedule { executors }
    }

    /// The slots in use.
    pub(crate) fn slots(&self) -> BTreeSet<NodePort> {
        self.executors.values().cloned().collect()
    }

    fn by_slot(&self) -> BTreeMap<NodePort, Vec<Executor>> {
        let mut m: BTreeMap<NodePort, Vec<Executor>> = BTreeMap::new();
        for (e, s) in &self.executors {
            m.entry(s.clone()).or_default().push(*e);
        }
        m
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ScheduleError {
    #[error("no worker slots are available for {0} executors (are any supervisors running?)")]
    NoSlots(usize),
}

/// Something that stopped heart-beating: one worker slot, or a whole supervisor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Dead {
    Slot(NodePort),
    Supervisor(String),
}

impl Dead {
    pub(crate) fn covers(&self, slot: &NodePort) -> bool {
        match self {
            Dead::Slot(s) => s == slot,
            Dead::Supervisor(node) => &slot.node == node,
        }
    }
}

/// Storm's `EvenScheduler.sortSlots`: group the slots by supervisor id, each group sorted by
/// port; order the groups by their number of slots, most first, supervisors with as many slots
/// staying in id order (Storm's stable sort over a `TreeMap`); then interleave the groups, so
/// consecutive slots are on different supervisors: `[h1:p1 h2:p1 h1:p2 h2:p2]` for two
/// supervisors with two slots each, `[h2:p1 h1:p1 h2:p2 h1:p2 h2:p3]` when `h2` has three.
pub(crate) fn sort_slots(slots: &[Slot]) -> Vec<Slot> {
    let mut groups: BTreeMap<&str, Vec<&Slot>> = BTreeMap::new();
    for s in slots {
        groups.entry(s.node.as_str()).or_default().push(s);
    }
    let mut columns: Vec<Vec<&Slot>> = groups.into_values().collect();
    for column in &mut columns {
        column.sort_by_key(|s| s.port);
    }
    // A stable sort: equal sizes keep supervisor id order.
    columns.sort_by_key(|c| std::cmp::Reverse(c.len()));
    interleave(&columns)
}

/// Storm's `ServerUtils.interleaveAll`: the first of every column, then the second of every
/// column that has one, and so on.
fn interleave(columns: &[Vec<&Slot>]) -> Vec<Slot> {
    let longest = columns.iter().map(Vec::len).max().unwrap_or(0);
    let mut out = Vec::with_capacity(columns.iter().map(Vec::len).sum());
    for i in 0..longest {
        for col in columns {
            if let Some(s) = col.get(i) {
                out.push((*s).clone());
            }
        }
    }
    out
}

/// Storm's `integer-partitions`: `n` items over `k` slots as evenly as possible, as a count of
/// slots per size.
fn even_sizes(n: usize, k: usize) -> BTreeMap<usize, usize> {
    let mut m = BTreeMap::new();
    if k == 0 {
        return m;
    }
    let (base, extra) = (n / k, n % k);
    if extra > 0 {
        m.insert(base + 1, extra);
    }
    if k > extra {
        *m.entry(base).or_default() += k - extra;
    }
    m
}

/// Place the executors of `plan` on the `slots` offered (free slots plus the ones this topology
/// already uses), keeping what `existing` placed where it can.
pub(crate) fn schedule(
    plan: &Plan,
    slots: &[Slot],
    workers: u32,
    existing: &Schedule,
) -> Result<Schedule, ScheduleError> {
    schedule_executors(&executors_of(plan), slots, workers, existing)
}

/// [`schedule`] over an explicit executor list (sorted by first task).
fn schedule_executors(
    executors: &[Executor],
    slots: &[Slot],
    workers: u32,
    existing: &Schedule,
) -> Result<Schedule, ScheduleError> {
    if executors.is_empty() {
        return Ok(Schedule::default());
    }
    let offered: BTreeSet<NodePort> = slots.iter().map(Slot::node_port).collect();
    let wanted: BTreeSet<Executor> = executors.iter().copied().collect();
    // Healthy placements: still-offered slots, executors still in the plan.
    let alive: BTreeMap<NodePort, Vec<Executor>> = existing
        .by_slot()
        .into_iter()
        .filter(|(slot, _)| offered.contains(slot))
        .map(|(slot, execs)| {
            (
                slot,
                execs
                    .into_iter()
                    .filter(|e| wanted.contains(e))
                    .collect::<Vec<_>>(),
            )
        })
        .filter(|(_, execs)| !execs.is_empty())
        .collect();
    let total = (workers as usize).min(offered.len()).min(executors.len());
    if total == 0 {
        return Err(ScheduleError::NoSlots(executors.len()));
    }
    let keep: BTreeMap<NodePort, Vec<Executor>> = if alive.len() == total {
        alive
    } else {
        // Storm's `keeper-slots`: keep a slot only while its load fits the even spread.
        let mut sizes = even_sizes(executors.len(), total);
        alive
            .into_iter()
            .filter(|(_, execs)| match sizes.get_mut(&execs.len()) {
                Some(n) if *n > 0 => {
                    *n -= 1;
                    true
                }
                _ => false,
            })
            .collect()
    };
    let free: Vec<Slot> = slots
        .iter()
        .filter(|s| !keep.contains_key(&s.node_port()))
        .cloned()
        .collect();
    let mut targets: Vec<NodePort> = sort_slots(&free)
        .into_iter()
        .take(total.saturating_sub(keep.len()))
        .map(|s| s.node_port())
        .collect();
    if targets.is_empty() {
        // Every slot to use is kept: spread any leftover executors over the kept slots.
        targets = keep.keys().cloned().collect();
    }
    let mut placed = Schedule::default();
    for (slot, execs) in &keep {
        for e in execs {
            placed.executors.insert(*e, slot.clone());
        }
    }
    let moving: Vec<Executor> = executors
        .iter()
        .filter(|e| !placed.executors.contains_key(e))
        .copied()
        .collect();
    for (e, slot) in moving.iter().zip(round_robin(moving.len(), &targets)) {
        placed.executors.insert(*e, slot.clone());
    }
    Ok(placed)
}

/// Re-assignment after failures (Storm's nimbus reacting to missed heartbeats): the dead slots
/// and supervisors are withdrawn, the executors they ran move, the others stay.
pub(crate) fn reassign(
    plan: &Plan,
    slots: &[Slot],
    workers: u32,
    existing: &Schedule,
    dead: &[Dead],
) -> Result<Schedule, ScheduleError> {
    let is_dead = |np: &NodePort| dead.iter().any(|d| d.covers(np));
    let live: Vec<Slot> = slots
        .iter()
        .filter(|s| !is_dead(&s.node_port()))
        .cloned()
        .collect();
    let healthy = Schedule {
        executors: existing
            .executors
            .iter()
            .filter(|(_, s)| !is_dead(s))
            .map(|(e, s)| (*e, s.clone()))
            .collect(),
    };
    schedule(plan, &live, workers, &healthy)
}

/// Placement for a run with a home worker: executors that `pinned` names (the console ones,
/// `stdin` spouts and `stdout` sinks) go to `home`'s slot, the others round-robin (in the
/// [`sort_slots`] order) over the first `workers` slots of the other supervisors; with no
/// other slot, everything goes home, and with no home slot, everything goes to the others.
/// `None` when some executor has no slot at all.
pub(crate) fn place_with_home(
    executors: &[Executor],
    pinned: impl Fn(&Executor) -> bool,
    slots: &[Slot],
    home: &str,
    workers: usize,
) -> Option<Vec<(Executor, Slot)>> {
    let slots = sort_slots(slots);
    let home_slot = slots.iter().find(|s| s.node == home);
    let others: Vec<&Slot> = slots
        .iter()
        .filter(|s| s.node != home)
        .take(workers.max(1))
        .collect();
    let mut away = round_robin(executors.len(), &others);
    let mut placed = Vec::with_capacity(executors.len());
    for e in executors {
        let slot = match home_slot {
            Some(h) if pinned(e) || others.is_empty() => h,
            _ => *away.next()?,
        };
        placed.push((*e, slot.clone()));
    }
    Some(placed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::plan::{executor_ranges, ComponentTasks};
    use proptest::prelude::*;

    /// A plan of one component with `tasks` tasks in `executors` executors (acking off).
    fn plan(tasks: u32, executors: u32) -> Plan {
        Plan {
            components: vec![ComponentTasks {
                id: "c".into(),
                tasks: 1..=tasks,
                executors: executor_ranges(1, tasks, executors),
            }],
            stream_names: vec!["default".into()],
            ackers: 0,
            chains: Default::default(),
            partials: Default::default(),
        }
    }

    fn slot(host: &str, port: u16) -> Slot {
        Slot {
            node: host.into(),
            host: host.into(),
            port,
        }
    }

    fn np(node: &str, port: u16) -> NodePort {
        NodePort {
            node: node.into(),
            port,
        }
    }

    fn placement(s: &Schedule) -> Vec<(u32, String)> {
        s.task_to_node_port()
            .into_iter()
            .map(|(t, np)| (t, np.to_string()))
            .collect()
    }

    #[test]
    fn example_more_tasks_than_slots_alternates_hosts() {
        let slots = [slot("host1", 1), slot("host2", 1)];
        let s = schedule(&plan(4, 4), &slots, 2, &Schedule::default()).unwrap();
        assert_eq!(
            placement(&s),
            [
                (1, "host1:1"),
                (2, "host2:1"),
                (3, "host1:1"),
                (4, "host2:1")
            ]
            .map(|(t, n)| (t, n.to_string()))
        );
    }

    #[test]
    fn example_fewer_tasks_than_slots_uses_one_slot_per_host() {
        let slots = [
            slot("host2", 2),
            slot("host1", 2),
            slot("host2", 1),
            slot("host1", 1),
        ];
        let s = schedule(&plan(2, 2), &slots, 2, &Schedule::default()).unwrap();
        assert_eq!(
            placement(&s),
            [(1, "host1:1"), (2, "host2:1")].map(|(t, n)| (t, n.to_string()))
        );
    }

    #[test]
    fn slots_interleave_across_hosts_with_uneven_port_counts() {
        let slots = [slot("b", 1), slot("a", 2), slot("a", 1), slot("a", 3)];
        let order: Vec<String> = sort_slots(&slots)
            .iter()
            .map(|s| format!("{}:{}", s.host, s.port))
            .collect();
        assert_eq!(order, ["a:1", "b:1", "a:2", "a:3"]);
    }

    /// Storm's `SchedulerModelTest.testSortSlots`: the supervisor with more free slots comes first.
    #[test]
    fn supervisors_with_more_free_slots_come_first() {
        let s = |n: &str, p| slot(n, p);
        let order = |slots: &[Slot]| -> Vec<String> {
            sort_slots(slots)
                .iter()
                .map(|s| format!("{}:{}", s.node, s.port))
                .collect()
        };
        let two_and_three = [
            s("supervisor1", 6700),
            s("supervisor1", 6701),
            s("supervisor2", 6700),
            s("supervisor2", 6701),
            s("supervisor2", 6702),
        ];
        assert_eq!(
            order(&two_and_three),
            [
                "supervisor2:6700",
                "supervisor1:6700",
                "supervisor2:6701",
                "supervisor1:6701",
                "supervisor2:6702"
            ]
        );
    }

    /// Every line of the vectors Java printed with Storm's own `sortSlots` and `interleaveAll`
    /// (tests/fixtures/java/SortSlotsVectors.java): `IN -> OUT`.
    #[test]
    fn slot_order_matches_storms_sort_slots() {
        let text = include_str!("../tests/fixtures/java/sort_slots_vectors.txt");
        let parse = |list: &str| -> Vec<Slot> {
            list.split(',')
                .map(|s| {
                    let (node, port) = s.rsplit_once(':').expect("NODE:PORT");
                    slot(node, port.parse().expect("port"))
                })
                .collect()
        };
        let mut cases = 0;
        for line in text.lines() {
            let (input, output) = line.split_once(" -> ").expect("IN -> OUT");
            assert_eq!(sort_slots(&parse(input)), parse(output), "{line}");
            cases += 1;
        }
        assert!(cases >= 60, "only {cases} cases");
    }

    #[test]
    fn executors_move_as_a_whole() {
        // 5 tasks in 2 executors ([1-3], [4-5]) on two slots.
        let slots = [slot("h1", 1), slot("h2", 1)];
        let s = schedule(&plan(5, 2), &slots, 2, &Schedule::default()).unwrap();
        assert_eq!(
            placement(&s),
            [
                (1, "h1:1"),
                (2, "h1:1"),
                (3, "h1:1"),
                (4, "h2:1"),
                (5, "h2:1")
            ]
            .map(|(t, n)| (t, n.to_string()))
        );
    }

    #[test]
    fn a_dead_supervisor_moves_only_its_executors() {
        let slots = [slot("h1", 1), slot("h1", 2), slot("h2", 1), slot("h2", 2)];
        let p = plan(4, 4);
        let first = schedule(&p, &slots, 2, &Schedule::default()).unwrap();
        let again = reassign(&p, &slots, 2, &first, &[Dead::Supervisor("h2".into())]).unwrap();
        assert_eq!(
            placement(&again),
            [(1, "h1:1"), (2, "h1:2"), (3, "h1:1"), (4, "h1:2")].map(|(t, n)| (t, n.to_string()))
        );
    }

    #[test]
    fn a_dead_slot_moves_to_a_free_slot_and_the_rest_stays() {
        let slots = [slot("h1", 1), slot("h1", 2), slot("h2", 1), slot("h2", 2)];
        let p = plan(6, 6);
        let first = schedule(&p, &slots, 3, &Schedule::default()).unwrap();
        // h1:1 gets 1,4; h2:1 gets 2,5; h1:2 gets 3,6.
        let again = reassign(&p, &slots, 3, &first, &[Dead::Slot(np("h2", 1))]).unwrap();
        assert_eq!(again.executors.len(), 6);
        for t in [1, 4] {
            assert_eq!(again.task_to_node_port()[&t], np("h1", 1));
        }
        for t in [3, 6] {
            assert_eq!(again.task_to_node_port()[&t], np("h1", 2));
        }
        for t in [2, 5] {
            assert_eq!(again.task_to_node_port()[&t], np("h2", 2));
        }
    }

    #[test]
    fn no_slots_is_an_error_and_no_executors_is_empty() {
        assert_eq!(
            schedule(&plan(3, 3), &[], 2, &Schedule::default()),
            Err(ScheduleError::NoSlots(3))
        );
        let empty = Plan {
            components: vec![],
            stream_names: vec![],
            ackers: 0,
            chains: Default::default(),
            partials: Default::default(),
        };
        assert_eq!(
            schedule(&empty, &[slot("h", 1)], 1, &Schedule::default()),
            Ok(Schedule::default())
        );
    }

    #[test]
    fn from_tasks_round_trips_and_skips_split_executors() {
        let slots = [slot("h1", 1), slot("h2", 1)];
        let p = plan(6, 3);
        let s = schedule(&p, &slots, 2, &Schedule::default()).unwrap();
        let execs = executors_of(&p);
        assert_eq!(Schedule::from_tasks(&execs, &s.task_to_node_port()), s);
        let mut split = s.task_to_node_port();
        split.insert(2, np("h9", 9));
        assert_eq!(Schedule::from_tasks(&execs, &split).executors.len(), 2);
    }

    #[test]
    fn a_home_run_without_other_slots_runs_home_and_without_any_slot_fails() {
        let execs = executors_of(&plan(3, 3));
        let home = [slot("home", 7000)];
        let placed = place_with_home(&execs, |_| false, &home, "home", 2).unwrap();
        assert!(placed.iter().all(|(_, s)| s == &home[0]));
        assert_eq!(place_with_home(&execs, |_| true, &[], "home", 2), None);
    }

    proptest! {
        #[test]
        fn even_and_complete(
            ports in proptest::collection::vec(1usize..4, 1..4),
            tasks in 1u32..40,
            executors in 1u32..40,
            workers in 1u32..12,
        ) {
            let slots: Vec<Slot> = ports
                .iter()
                .enumerate()
                .flat_map(|(h, n)| (0..*n).map(move |p| slot(&format!("h{h}"), 6700 + p as u16)))
                .collect();
            let p = plan(tasks, executors);
            let execs = executors_of(&p);
            let s = schedule(&p, &slots, workers, &Schedule::default()).unwrap();
            // Every task exactly once.
            let tasks_placed: Vec<u32> = s.task_to_node_port().keys().copied().collect();
            prop_assert_eq!(tasks_placed, (1..=tasks).collect::<Vec<_>>());
            prop_assert_eq!(s.executors.len(), execs.len());
            // Slots used = min(workers, slots, executors).
            let used = (workers as usize).min(slots.len()).min(execs.len());
            prop_assert_eq!(s.slots().len(), used);
            // Loads differ by at most one executor.
            let loads: Vec<usize> = s.by_slot().values().map(Vec::len).collect();
            let (lo, hi) = (loads.iter().min().copied(), loads.iter().max().copied());
            prop_assert!(hi.unwrap_or(0) - lo.unwrap_or(0) <= 1, "loads {:?}", loads);
            // Scheduling again over the same slots changes nothing.
            let again = schedule(&p, &slots, workers, &s).unwrap();
            prop_assert_eq!(again, s);
        }

        /// A run with a home worker: pinned executors on the home slot, the others spread
        /// evenly, in executor order, over the first `workers` other slots in `sort_slots` order
        /// (home only when there is no other slot); every executor placed once.
        #[test]
        fn home_runs_pin_console_executors_and_spread_the_rest(
            ports in proptest::collection::vec(1usize..4, 1..4),
            home_ports in 0usize..2,
            executors in 1u32..30,
            pinned_every in 1u32..5,
            workers in 1usize..6,
        ) {
            let mut slots: Vec<Slot> = ports
                .iter()
                .enumerate()
                .flat_map(|(h, n)| (0..*n).map(move |p| slot(&format!("h{h}"), 6700 + p as u16)))
                .collect();
            slots.extend((0..home_ports).map(|p| slot("home", 6700 + p as u16)));
            let execs = executors_of(&plan(executors, executors));
            let pinned = |e: &Executor| e.first % pinned_every == 0;
            let placed = place_with_home(&execs, pinned, &slots, "home", workers)
                .expect("there are slots");
            let others: Vec<Slot> = sort_slots(&slots)
                .into_iter()
                .filter(|s| s.node != "home")
                .take(workers)
                .collect();
            prop_assert_eq!(placed.iter().map(|(e, _)| *e).collect::<Vec<_>>(), execs);
            let mut k = 0;
            for (e, s) in &placed {
                if home_ports > 0 && pinned(e) {
                    prop_assert_eq!(&s.node, "home");
                } else {
                    prop_assert_eq!(s, &others[k % others.len()]);
                    k += 1;
                }
            }
        }
    }
}
