//! Submitted topologies: their text validated again where it arrives (nimbus, workers), and the
//! placement of runs that have a home worker (`storm run --processes` and `--nimbus`), whose
//! `stdin` and `stdout` executors stay in the `storm run` process.

use crate::cluster::coordination::layout::AssignmentInfo;
use crate::cluster::coordination::znode_store::{CoordinationStore, StoreError};
use crate::cluster::nimbus::cluster_state::{ClusterError, ClusterState};
use crate::cluster::protocol::rpc::Submission;
use crate::model::plan::Plan;
use crate::model::Topology;
use crate::placement::{executors_of, place_with_home, Dead, Executor};
use crate::topology::{load_inline, load_text, LoadError, LoadOptions};
use std::path::Path;

/// Validate a submission's text as `storm validate` would; errors come back rendered.
pub(crate) fn load_submission(sub: &Submission) -> Result<Topology, String> {
    let opts = LoadOptions {
        overrides: sub.overrides.clone(),
        filter: None,
    };
    let loaded = if sub.path == "<-e>" {
        load_inline(&sub.text, &opts)
    } else {
        load_text(sub.text.clone(), Path::new(&sub.path), &opts)
    };
    match loaded {
        Ok(mut l) => {
            for (id, &n) in &sub.parallelism {
                let c = l
                    .topology
                    .components
                    .iter_mut()
                    .find(|c| c.id == *id)
                    .ok_or_else(|| {
                        format!("a rebalance names component `{id}`, not in the file")
                    })?;
                if n == 0 || n > c.tasks {
                    return Err(format!(
                        "a rebalance gives `{id}` {n} executors, for {} task(s)",
                        c.tasks
                    ));
                }
                c.parallelism = n;
            }
            within_cluster_bounds(&l.topology).map(|()| l.topology)
        }
        Err(LoadError::Unreadable(reason)) => Err(reason),
        Err(LoadError::Invalid {
            source,
            diagnostics,
        }) => Err(crate::syntax::diag::render_all(&diagnostics, &source)),
    }
}

/// The most tasks (acker tasks included) a cluster topology may have: nimbus keeps one entry
/// per task in its tree, so this bounds its memory and scheduling time whatever is submitted.
const MAX_TASKS: u64 = 100_000;
/// The most workers a cluster topology may ask for.
const MAX_WORKERS: u64 = 10_000;

/// Refuse a topology too large for nimbus to schedule: more than [`MAX_WORKERS`] workers or
/// [`MAX_TASKS`] tasks. Counted from the configuration as written (no narrowing casts), before
/// any per-task structure is built.
fn within_cluster_bounds(topology: &Topology) -> Result<(), String> {
    let workers = topology.config.get_u64("topology.workers").unwrap_or(1);
    if workers > MAX_WORKERS {
        return Err(format!(
            "topology.workers is {workers}; a cluster topology may use at most {MAX_WORKERS}"
        ));
    }
    let ackers = topology
        .config
        .get_u64("topology.acker.executors")
        .unwrap_or(workers.max(1));
    let (_, user_tasks) = topology.executor_and_task_counts();
    let tasks = user_tasks.saturating_add(ackers);
    if tasks > MAX_TASKS {
        return Err(format!(
            "the topology has {tasks} tasks ({user_tasks} of components, {ackers} of ackers); \
             a cluster topology may have at most {MAX_TASKS}"
        ));
    }
    Ok(())
}

/// `storm run --processes`: the executors of `stdin` spouts and `stdout` sinks go to
/// the home supervisor's slot, the others round-robin over the first `topology.workers` slots
/// of the other supervisors (`placement::place_with_home`).
pub(crate) fn home_assign<S: CoordinationStore>(
    state: &ClusterState<S>,
    id: &str,
    topology: &Topology,
    plan: &Plan,
    home: &str,
    now: u64,
) -> Result<bool, ClusterError> {
    if state.assignment(id)?.is_some() {
        return Ok(false);
    }
    let pinned = |e: &Executor| {
        topology
            .component(plan.component_of_task(e.first))
            .is_some_and(|c| c.ctype.is_console())
    };
    let workers = topology.config.workers().max(1) as usize;
    let placed = place_with_home(
        &executors_of(plan),
        pinned,
        &state.available_slots(id)?,
        home,
        workers,
    )
    .ok_or_else(|| StoreError::BadArguments("no worker slots for the run".into()))?;
    let mut info = AssignmentInfo {
        master_code_dir: format!("{}/nimbus/stormdist/{id}", state.local_dir),
        ..Default::default()
    };
    for (exec, slot) in placed {
        info.node_host.insert(slot.node.clone(), slot.host.clone());
        for task in exec.tasks() {
            info.task_to_node_port.insert(task, slot.node_port());
            info.task_to_start_time.insert(task, now);
        }
    }
    state.store().put(
        &state.layout().assignment(id),
        &serde_json::to_vec(&info).unwrap_or_default(),
    )?;
    Ok(true)
}

/// Move the work of dead slots of a run with a home worker: each dead slot's executors go
/// together to one free live slot of another supervisor (a fresh worker); the home slot's stay
/// where they are. Returns whether the assignment changed (nothing moves while no free slot is
/// live).
pub(crate) fn home_reassign<S: CoordinationStore>(
    state: &ClusterState<S>,
    id: &str,
    home: &str,
    dead: &[Dead],
    now: u64,
) -> Result<bool, ClusterError> {
    let Some(mut info) = state.assignment(id)? else {
        return Ok(false);
    };
    let used: std::collections::BTreeSet<_> = info.task_to_node_port.values().cloned().collect();
    // A supervisor with a dead slot may be dead itself (its session not expired yet): its free
    // slots come last.
    let suspect = |node: &str| {
        dead.iter().any(|d| match d {
            Dead::Slot(s) => s.node == node,
            Dead::Supervisor(n) => n == node,
        })
    };
    let mut candidates: Vec<_> = crate::placement::sort_slots(&state.available_slots(id)?)
        .into_iter()
        .filter(|s| s.node != home && !used.contains(&s.node_port()))
        .filter(|s| !dead.iter().any(|d| d.covers(&s.node_port())))
        .collect();
    candidates.sort_by_key(|s| suspect(&s.node));
    let mut free = candidates.into_iter();
    let mut moved = std::collections::BTreeMap::new();
    for (task, slot) in info.task_to_node_port.iter_mut() {
        if slot.node == home || !dead.iter().any(|d| d.covers(slot)) {
            continue;
        }
        let to = match moved.get(slot) {
            Some(to) => to,
            None => match free.next() {
                Some(s) => {
                    info.node_host.insert(s.node.clone(), s.host.clone());
                    moved.entry(slot.clone()).or_insert(s.node_port())
                }
                None => continue,
            },
        };
        *slot = to.clone();
        info.task_to_start_time.insert(*task, now);
    }
    if moved.is_empty() {
        return Ok(false);
    }
    let live: std::collections::BTreeSet<String> = info
        .task_to_node_port
        .values()
        .map(|s| s.node.clone())
        .collect();
    info.node_host.retain(|node, _| live.contains(node));
    state.store().put(
        &state.layout().assignment(id),
        &serde_json::to_vec(&info).unwrap_or_default(),
    )?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::coordination::layout::{NodePort, SupervisorInfo};
    use crate::cluster::coordination::tree::SharedTree;
    use crate::cluster::nimbus::simulation::tests::wordcount;
    use std::time::Duration;

    #[test]
    fn absurd_sizes_are_refused_before_any_plan_is_built() {
        let sub = |text: &str, overrides: &[&str]| Submission {
            path: "<-e>".into(),
            text: text.into(),
            overrides: overrides.iter().map(|s| s.to_string()).collect(),
            home: None,
            resources: String::new(),
            parallelism: Default::default(),
        };
        // Validation states the limit (the nimbus bound behind it is the second line of defence).
        let err =
            load_submission(&sub("stdin | split tasks=4294967294 | stdout", &[])).unwrap_err();
        assert!(
            err.contains("4294967294") && err.contains("at most"),
            "{err}"
        );
        let err =
            load_submission(&sub("stdin | stdout", &["topology.workers=4294967296"])).unwrap_err();
        assert!(
            err.contains("topology.workers") && err.contains("4294967296"),
            "{err}"
        );
        let err = load_submission(&sub("stdin | stdout", &["topology.acker.executors=200000"]))
            .unwrap_err();
        assert!(err.contains("200000") && err.contains("at most"), "{err}");
        assert!(load_submission(&sub("stdin | split tasks=1000 | stdout", &[])).is_ok());
    }

    /// A cluster state with these supervisors (id, ports), each on host `host-ID`.
    fn with_supervisors(supervisors: &[(&str, Vec<u16>)]) -> ClusterState<SharedTree> {
        let tree = SharedTree::new();
        let state = ClusterState::new(tree.clone(), "/storm").unwrap();
        for (id, ports) in supervisors {
            let session = tree.open_session(Duration::from_secs(60));
            let info = SupervisorInfo {
                hostname: format!("host-{id}"),
                time_secs: 0,
                uptime_secs: 0,
                ports: ports.clone(),
            };
            state.supervisor_heartbeat(session, id, &info).unwrap();
        }
        state
    }

    #[test]
    fn home_runs_stdin_and_stdout_and_the_rest_round_robins_over_the_workers() {
        let mut state =
            with_supervisors(&[("home", vec![7000]), ("procs", vec![7001, 7002, 7003])]);
        let topo = wordcount(&[("topology.workers", 2.into())]);
        let plan = Plan::new(&topo);
        let id = state.submit(&topo, &plan, 5).unwrap();
        assert!(home_assign(&state, &id, &topo, &plan, "home", 5).unwrap());
        // A second call keeps the assignment as it is.
        assert!(!home_assign(&state, &id, &topo, &plan, "home", 6).unwrap());
        let a = state.assignment(&id).unwrap().unwrap();
        let slot = |node: &str, port| NodePort {
            node: node.into(),
            port,
        };
        for (task, component) in plan.task_to_component() {
            let at = &a.task_to_node_port[&task];
            if component == "lines" || component == "print" {
                assert_eq!(*at, slot("home", 7000), "{component}");
            } else {
                assert!(
                    *at == slot("procs", 7001) || *at == slot("procs", 7002),
                    "{at}"
                );
            }
        }
        let used: std::collections::BTreeSet<_> = a.task_to_node_port.values().collect();
        assert_eq!(used.len(), 3);
        assert_eq!(a.node_host["home"], "host-home");
    }

    /// A dead slot's executors move together to one free slot, preferably of a supervisor
    /// with no dead slot; the home slot's and the live slot's stay.
    #[test]
    fn a_dead_slots_work_moves_whole_to_a_free_slot_of_a_sound_supervisor() {
        let mut state = with_supervisors(&[
            ("home", vec![7000]),
            ("a", vec![7001, 7002]),
            ("b", vec![7003, 7004]),
        ]);
        let topo = wordcount(&[("topology.workers", 2.into())]);
        let plan = Plan::new(&topo);
        let id = state.submit(&topo, &plan, 5).unwrap();
        assert!(home_assign(&state, &id, &topo, &plan, "home", 5).unwrap());
        let before = state.assignment(&id).unwrap().unwrap();
        let lost = before
            .task_to_node_port
            .values()
            .find(|s| s.node == "a")
            .cloned()
            .expect("work on supervisor a");
        let dead = [Dead::Slot(lost.clone())];
        assert!(home_reassign(&state, &id, "home", &dead, 9).unwrap());
        let after = state.assignment(&id).unwrap().unwrap();
        let mut moved_to = std::collections::BTreeSet::new();
        for (task, at) in &before.task_to_node_port {
            let now = &after.task_to_node_port[task];
            if *at == lost {
                moved_to.insert(now.clone());
                assert_eq!(after.task_to_start_time[task], 9);
            } else {
                assert_eq!(now, at, "task {task} stays");
            }
        }
        assert_eq!(moved_to.len(), 1, "moved whole: {moved_to:?}");
        let to = moved_to.into_iter().next().unwrap();
        assert_eq!(to.node, "b", "not onto the suspect supervisor a");
        assert!(
            !before.task_to_node_port.values().any(|s| *s == to),
            "a free slot"
        );
        assert_eq!(after.node_host["b"], "host-b");
        // Nothing dead: nothing moves.
        assert!(!home_reassign(&state, &id, "home", &[], 10).unwrap());
    }
}
