//! The cluster state as Nimbus reads and writes it (Storm's `StormClusterState` and
//! Nimbus's submission steps): supervisors registering, topologies
//! submitted (`/taskbeats/{id}`, `/tasks`, `/storms`), scheduled (`/assignments`), activated,
//! re-assigned after failures, and task heartbeats and errors.

use crate::cluster::coordination::layout::{
    AssignmentInfo, CheckpointRecord, Layout, NodePort, StormBase, SupervisorInfo, TaskError,
    TaskHeartbeat, TaskInfo, TopologyStatus, KEPT_ERRORS, SUBTREES,
};
use crate::cluster::coordination::znode_store::{
    child_path, CoordinationStore, CreateMode, SessionId, StoreError,
};
use crate::model::plan::Plan;
use crate::model::Topology;
use crate::placement::{self, executors_of, Dead, Schedule, ScheduleError, Slot};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

#[derive(Debug, thiserror::Error)]
pub(crate) enum ClusterError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Schedule(#[from] ScheduleError),
    #[error("{path} holds data that is not what Storm writes there: {source}")]
    Corrupt {
        path: String,
        source: serde_json::Error,
    },
    #[error("no topology {0}")]
    NoTopology(String),
}

/// Nimbus's view of the coordination tree.
#[derive(Debug)]
pub(crate) struct ClusterState<S: CoordinationStore> {
    store: S,
    layout: Layout,
    /// Submissions so far: the COUNTER of `NAME-COUNTER-TIMESTAMP`.
    submitted: u64,
    /// `storm.local.dir`, the base of `master_code_dir`.
    pub(crate) local_dir: String,
}

impl<S: CoordinationStore> ClusterState<S> {
    /// Open the cluster state under `root`, creating the subtree roots (Storm's
    /// `mk-storm-cluster-state`). The submission counter continues from the topologies present.
    pub(crate) fn new(store: S, root: &str) -> Result<ClusterState<S>, ClusterError> {
        let layout = Layout::new(root);
        for sub in SUBTREES {
            store.create_all(&child_path(layout.root(), sub))?;
        }
        let submitted = store
            .children(&layout.storms(), None)?
            .iter()
            .filter_map(|id| id.rsplit('-').nth(1)?.parse::<u64>().ok())
            .max()
            .unwrap_or(0);
        Ok(ClusterState {
            store,
            layout,
            submitted,
            local_dir: "storm-local".into(),
        })
    }

    pub(crate) fn store(&self) -> &S {
        &self.store
    }

    pub(crate) fn layout(&self) -> &Layout {
        &self.layout
    }

    fn read<T: DeserializeOwned>(&self, path: &str) -> Result<Option<T>, ClusterError> {
        match self.store.get_data(path, None) {
            Ok((data, _)) => {
                serde_json::from_slice(&data)
                    .map(Some)
                    .map_err(|source| ClusterError::Corrupt {
                        path: path.to_string(),
                        source,
                    })
            }
            Err(StoreError::NoNode(_)) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    fn write<T: Serialize>(&self, path: &str, value: &T) -> Result<(), ClusterError> {
        self.store.put(path, &json_bytes(value))?;
        Ok(())
    }

    /// A supervisor's heartbeat: its ephemeral `/supervisors/{id}` node, created or refreshed.
    pub(crate) fn supervisor_heartbeat(
        &self,
        session: SessionId,
        id: &str,
        info: &SupervisorInfo,
    ) -> Result<(), ClusterError> {
        let path = self.layout.supervisor(id);
        let data = json_bytes(info);
        match self
            .store
            .create(&path, &data, CreateMode::Ephemeral(session))
        {
            Ok(_) => Ok(()),
            Err(StoreError::NodeExists(_)) => self.refresh_supervisor(session, &path, &data),
            Err(e) => Err(e.into()),
        }
    }

    /// Update a supervisor's node; one left by an earlier session of the supervisor (held
    /// by a nimbus that died) is replaced by one of `session`, so it does not vanish when that
    /// old session ends.
    fn refresh_supervisor(
        &self,
        session: SessionId,
        path: &str,
        data: &[u8],
    ) -> Result<(), ClusterError> {
        let (_, stat) = self.store.get_data(path, None)?;
        if stat.ephemeral_owner == Some(session) {
            self.store.set_data(path, data, None)?;
            return Ok(());
        }
        match self.store.delete(path, Some(stat.version)) {
            Ok(()) | Err(StoreError::NoNode(_)) => {}
            Err(e) => return Err(e.into()),
        }
        self.store
            .create(path, data, CreateMode::Ephemeral(session))?;
        Ok(())
    }

    pub(crate) fn supervisors(&self) -> Result<BTreeMap<String, SupervisorInfo>, ClusterError> {
        let mut out = BTreeMap::new();
        for id in self.store.children(&self.layout.supervisors(), None)? {
            if let Some(info) = self.read(&self.layout.supervisor(&id))? {
                out.insert(id, info);
            }
        }
        Ok(out)
    }

    /// Ids of the topologies in `/storms`.
    pub(crate) fn topology_ids(&self) -> Result<Vec<String>, ClusterError> {
        Ok(self.store.children(&self.layout.storms(), None)?)
    }

    pub(crate) fn storm_base(&self, id: &str) -> Result<Option<StormBase>, ClusterError> {
        self.read(&self.layout.storm(id))
    }

    pub(crate) fn assignment(&self, id: &str) -> Result<Option<AssignmentInfo>, ClusterError> {
        self.read(&self.layout.assignment(id))
    }

    pub(crate) fn checkpoint_record(
        &self,
        id: &str,
    ) -> Result<Option<CheckpointRecord>, ClusterError> {
        self.read(&self.layout.checkpoint(id))
    }

    /// `/checkpoints/{id}` with its data version.
    pub(crate) fn checkpoint_record_at(
        &self,
        id: &str,
    ) -> Result<Option<(CheckpointRecord, i32)>, ClusterError> {
        let path = self.layout.checkpoint(id);
        match self.store.get_data(&path, None) {
            Ok((data, stat)) => serde_json::from_slice(&data)
                .map(|r| Some((r, stat.version)))
                .map_err(|source| ClusterError::Corrupt { path, source }),
            Err(StoreError::NoNode(_)) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Write `/checkpoints/{id}` only while it is at `version` (`None`: only while there is
    /// none), so a nimbus that no longer leads cannot overwrite what the leader recorded;
    /// returns the new version.
    pub(crate) fn swap_checkpoint_record(
        &self,
        id: &str,
        record: &CheckpointRecord,
        version: Option<i32>,
    ) -> Result<i32, ClusterError> {
        let path = self.layout.checkpoint(id);
        let data = json_bytes(record);
        match version {
            Some(v) => Ok(self.store.set_data(&path, &data, Some(v))?.version),
            None => {
                if let Some(parent) = crate::cluster::coordination::znode_store::parent_path(&path)
                {
                    self.store.create_all(parent)?;
                }
                self.store.create(&path, &data, CreateMode::Persistent)?;
                Ok(0)
            }
        }
    }

    /// `/logconfigs/{id}`: the log levels set for the topology (none set: empty).
    pub(crate) fn log_config(
        &self,
        id: &str,
    ) -> Result<crate::log_config::LogConfig, ClusterError> {
        Ok(self.read(&self.layout.log_config(id))?.unwrap_or_default())
    }

    /// Write `/logconfigs/{id}` (its parent appears with the first).
    pub(crate) fn set_log_config(
        &self,
        id: &str,
        config: &crate::log_config::LogConfig,
    ) -> Result<(), ClusterError> {
        self.store.create_all(&self.layout.logconfigs())?;
        self.write(&self.layout.log_config(id), config)
    }

    /// Submission as Nimbus does it (its steps 1-3): a new id `NAME-COUNTER-TIMESTAMP`,
    /// `/taskbeats/{id}`, one `/tasks/{id}/{task}` per task of the plan, and the storm base,
    /// still inactive. Schedule with [`Self::assign`], then [`Self::activate`].
    pub(crate) fn submit(
        &mut self,
        topology: &Topology,
        plan: &Plan,
        now_secs: u64,
    ) -> Result<String, ClusterError> {
        self.submitted += 1;
        let id = format!("{}-{}-{now_secs}", topology.name, self.submitted);
        self.store.create_all(&self.layout.topology_beats(&id))?;
        self.store.create_all(&self.layout.topology_tasks(&id))?;
        for (task, component) in plan.task_to_component() {
            let info = TaskInfo {
                component: component.to_string(),
            };
            self.write(&self.layout.task(&id, task), &info)?;
        }
        let base = StormBase {
            name: topology.name.clone(),
            status: TopologyStatus::Inactive,
            launch_time_secs: now_secs,
            num_workers: topology.config.workers(),
            component_executors: executor_counts(plan),
        };
        self.write(&self.layout.storm(&id), &base)?;
        Ok(id)
    }

    /// The slots of live supervisors not used by other topologies.
    pub(crate) fn available_slots(&self, id: &str) -> Result<Vec<Slot>, ClusterError> {
        let mut taken: BTreeSet<NodePort> = BTreeSet::new();
        for other in self.store.children(&self.layout.assignments(), None)? {
            if other != id {
                if let Some(a) = self.assignment(&other)? {
                    taken.extend(a.task_to_node_port.into_values());
                }
            }
        }
        Ok(self
            .supervisors()?
            .into_iter()
            .flat_map(|(node, info)| {
                info.ports.into_iter().map(move |port| Slot {
                    node: node.clone(),
                    host: info.hostname.clone(),
                    port,
                })
            })
            .filter(|s| !taken.contains(&s.node_port()))
            .collect())
    }

    /// Schedule a topology (step 4 of a submission): read the current assignment, place the executors
    /// on the available slots, record start times of the tasks that moved, and write the
    /// assignment only when it changed. Returns whether it was written.
    pub(crate) fn assign(
        &self,
        id: &str,
        plan: &Plan,
        workers: u32,
        now_secs: u64,
    ) -> Result<bool, ClusterError> {
        self.reschedule(id, plan, workers, &[], now_secs)
    }

    /// Re-assignment after failures (step 6 of a submission): the executors of the dead slots or
    /// supervisors move; the others keep their slots and start times.
    pub(crate) fn reassign(
        &self,
        id: &str,
        plan: &Plan,
        workers: u32,
        dead: &[Dead],
        now_secs: u64,
    ) -> Result<bool, ClusterError> {
        self.reschedule(id, plan, workers, dead, now_secs)
    }

    fn reschedule(
        &self,
        id: &str,
        plan: &Plan,
        workers: u32,
        dead: &[Dead],
        now_secs: u64,
    ) -> Result<bool, ClusterError> {
        let existing = self.assignment(id)?.unwrap_or_default();
        let current = Schedule::from_tasks(&executors_of(plan), &existing.task_to_node_port);
        let slots = self.available_slots(id)?;
        let placed = placement::reassign(plan, &slots, workers, &current, dead)?;
        let task_to_node_port = placed.task_to_node_port();
        let task_to_start_time = task_to_node_port
            .iter()
            .map(|(task, slot)| {
                let kept = existing.task_to_node_port.get(task) == Some(slot);
                let start = kept
                    .then(|| existing.task_to_start_time.get(task).copied())
                    .flatten()
                    .unwrap_or(now_secs);
                (*task, start)
            })
            .collect();
        let node_host = hosts_of(&slots, &placed.slots());
        let info = AssignmentInfo {
            master_code_dir: format!("{}/nimbus/stormdist/{id}", self.local_dir),
            node_host,
            task_to_node_port,
            task_to_start_time,
        };
        if info == existing {
            return Ok(false);
        }
        self.write(&self.layout.assignment(id), &info)?;
        Ok(true)
    }

    /// A rebalance's assignment: `plan`'s executors scheduled afresh over `workers` slots
    /// (the topology's own slots count as free), and the worker count in `/storms/{id}`.
    pub(crate) fn rebalance_assign(
        &self,
        id: &str,
        plan: &Plan,
        workers: u32,
        now_secs: u64,
    ) -> Result<(), ClusterError> {
        let slots = self.available_slots(id)?;
        let placed = placement::schedule(plan, &slots, workers, &Schedule::default())?;
        let task_to_node_port = placed.task_to_node_port();
        let node_host = hosts_of(&slots, &placed.slots());
        let info = AssignmentInfo {
            master_code_dir: format!("{}/nimbus/stormdist/{id}", self.local_dir),
            node_host,
            task_to_start_time: task_to_node_port.keys().map(|t| (*t, now_secs)).collect(),
            task_to_node_port,
        };
        self.write(&self.layout.assignment(id), &info)?;
        let path = self.layout.storm(id);
        let mut base: StormBase = self
            .read(&path)?
            .ok_or_else(|| ClusterError::NoTopology(id.to_string()))?;
        base.num_workers = workers;
        base.component_executors = executor_counts(plan);
        self.write(&path, &base)
    }

    /// Set a topology's status in `/storms/{id}`.
    pub(crate) fn set_status(&self, id: &str, status: TopologyStatus) -> Result<(), ClusterError> {
        let path = self.layout.storm(id);
        let mut base: StormBase = self
            .read(&path)?
            .ok_or_else(|| ClusterError::NoTopology(id.to_string()))?;
        if base.status != status {
            base.status = status;
            self.write(&path, &base)?;
        }
        Ok(())
    }

    /// Activation (step 5 of a submission): only the status in `/storms/{id}` changes.
    pub(crate) fn activate(&self, id: &str) -> Result<(), ClusterError> {
        self.set_status(id, TopologyStatus::Active)
    }

    /// A task's heartbeat, written by its worker.
    pub(crate) fn task_heartbeat(
        &self,
        id: &str,
        task: u32,
        beat: &TaskHeartbeat,
    ) -> Result<(), ClusterError> {
        self.write(&self.layout.task_beat(id, task), beat)
    }

    /// The last heartbeat of one task, if any.
    pub(crate) fn task_heartbeat_of(
        &self,
        id: &str,
        task: u32,
    ) -> Result<Option<TaskHeartbeat>, ClusterError> {
        self.read(&self.layout.task_beat(id, task))
    }

    pub(crate) fn task_heartbeats(
        &self,
        id: &str,
    ) -> Result<BTreeMap<u32, TaskHeartbeat>, ClusterError> {
        let mut out = BTreeMap::new();
        let kids = match self.store.children(&self.layout.topology_beats(id), None) {
            Ok(k) => k,
            Err(StoreError::NoNode(_)) => return Ok(out),
            Err(e) => return Err(e.into()),
        };
        for name in kids {
            let Ok(task) = name.parse::<u32>() else {
                continue;
            };
            if let Some(beat) = self.read(&self.layout.task_beat(id, task))? {
                out.insert(task, beat);
            }
        }
        Ok(out)
    }

    /// The rebalance of topology `id` accepted and not yet carried out, as recorded.
    pub(crate) fn pending_rebalance<T: DeserializeOwned>(
        &self,
        id: &str,
    ) -> Result<Option<T>, ClusterError> {
        self.read(&self.layout.pending_rebalance(id))
    }

    /// Record the rebalance of topology `id` accepted (`None`: carried out or dropped).
    pub(crate) fn set_pending_rebalance<T: Serialize>(
        &self,
        id: &str,
        pending: Option<&T>,
    ) -> Result<(), ClusterError> {
        let path = self.layout.pending_rebalance(id);
        match pending {
            Some(p) => self.write(&path, p),
            None => match self.store.delete(&path, None) {
                Ok(()) | Err(StoreError::NoNode(_)) => Ok(()),
                Err(e) => Err(e.into()),
            },
        }
    }

    /// The slots of topology `id` whose worker finished, as recorded.
    pub(crate) fn finished_slots(&self, id: &str) -> Result<BTreeSet<NodePort>, ClusterError> {
        Ok(self
            .read(&self.layout.finished_slots(id))?
            .unwrap_or_default())
    }

    /// Record the slots of topology `id` whose worker finished (none: the record goes).
    pub(crate) fn set_finished_slots(
        &self,
        id: &str,
        slots: &BTreeSet<NodePort>,
    ) -> Result<(), ClusterError> {
        let path = self.layout.finished_slots(id);
        if slots.is_empty() {
            match self.store.delete(&path, None) {
                Ok(()) | Err(StoreError::NoNode(_)) => return Ok(()),
                Err(e) => return Err(e.into()),
            }
        }
        self.write(&path, slots)
    }

    /// The slots of a topology whose tasks all stopped heart-beating (Storm's `alive-tasks`):
    /// no task of the slot has a heartbeat newer than `timeout_secs`, and the slot's tasks
    /// started longer ago than that (a worker just launched gets its grace period).
    pub(crate) fn dead_slots(
        &self,
        id: &str,
        now_secs: u64,
        timeout_secs: u64,
    ) -> Result<Vec<Dead>, ClusterError> {
        let Some(assignment) = self.assignment(id)? else {
            return Ok(Vec::new());
        };
        let beats = self.task_heartbeats(id)?;
        let fresh = |t: u64| now_secs.saturating_sub(t) < timeout_secs;
        let slots: BTreeSet<NodePort> = assignment.task_to_node_port.values().cloned().collect();
        Ok(slots
            .into_iter()
            .filter(|slot| {
                assignment.tasks_of(slot).iter().all(|task| {
                    let beat = beats.get(task).is_some_and(|b| fresh(b.time_secs));
                    let young = assignment
                        .task_to_start_time
                        .get(task)
                        .is_some_and(|t| fresh(*t));
                    !beat && !young
                })
            })
            .map(Dead::Slot)
            .collect())
    }

    /// The topology ids with an assignment; the watcher fires when one is added or removed
    /// (how a supervisor learns of new work without polling).
    #[cfg(test)]
    fn watch_assignments(
        &self,
        watch: Option<crate::cluster::coordination::znode_store::Watcher>,
    ) -> Result<Vec<String>, ClusterError> {
        Ok(self.store.children(&self.layout.assignments(), watch)?)
    }

    /// One assignment; the watcher fires when it changes or is deleted.
    #[cfg(test)]
    fn watch_assignment(
        &self,
        id: &str,
        watch: crate::cluster::coordination::znode_store::Watcher,
    ) -> Result<Option<AssignmentInfo>, ClusterError> {
        let path = self.layout.assignment(id);
        match self.store.exists(&path, Some(watch))? {
            Some(_) => self.read(&path),
            None => Ok(None),
        }
    }

    /// Record a task's error as a sequential child, keeping the last [`KEPT_ERRORS`]
    /// (Storm's `report-task-error`).
    pub(crate) fn report_error(
        &self,
        id: &str,
        task: u32,
        error: &TaskError,
    ) -> Result<(), ClusterError> {
        let dir = self.layout.task_errors(id, task);
        self.store.create_all(&dir)?;
        self.store.create(
            &format!("{dir}/e"),
            &json_bytes(error),
            CreateMode::PersistentSequential,
        )?;
        let mut kids = self.store.children(&dir, None)?;
        kids.sort();
        let excess = kids.len().saturating_sub(KEPT_ERRORS);
        for old in &kids[..excess] {
            self.store.delete(&child_path(&dir, old), None)?;
        }
        Ok(())
    }

    /// A topology's errors, oldest first.
    pub(crate) fn task_errors(&self, id: &str, task: u32) -> Result<Vec<TaskError>, ClusterError> {
        let dir = self.layout.task_errors(id, task);
        let mut kids = match self.store.children(&dir, None) {
            Ok(k) => k,
            Err(StoreError::NoNode(_)) => return Ok(Vec::new()),
            Err(e) => return Err(e.into()),
        };
        kids.sort();
        let mut out = Vec::new();
        for k in kids {
            out.extend(self.read(&child_path(&dir, &k))?);
        }
        Ok(out)
    }

    /// Forget a killed topology everywhere (Storm's `remove-storm!`).
    pub(crate) fn remove_topology(&self, id: &str) -> Result<(), ClusterError> {
        self.store.delete_all(&self.layout.topology_tasks(id))?;
        self.store.delete_all(&self.layout.topology_beats(id))?;
        self.store.delete_all(&self.layout.topology_errors(id))?;
        self.store.delete_all(&self.layout.assignment(id))?;
        self.store.delete_all(&self.layout.storm(id))?;
        self.store.delete_all(&self.layout.checkpoint(id))?;
        self.store.delete_all(&self.layout.log_config(id))?;
        Ok(())
    }
}

fn json_bytes<T: Serialize>(value: &T) -> Vec<u8> {
    // The layout types are plain data (string keys, numbers): serialising cannot fail.
    serde_json::to_vec(value).unwrap_or_default()
}

/// The host of each supervisor that `used` slots are on.
fn hosts_of(slots: &[Slot], used: &BTreeSet<NodePort>) -> BTreeMap<String, String> {
    slots
        .iter()
        .filter(|s| used.iter().any(|np| np.node == s.node))
        .map(|s| (s.node.clone(), s.host.clone()))
        .collect()
}

/// Each component's executor count, as `/storms/{id}` records it.
fn executor_counts(plan: &Plan) -> BTreeMap<String, u32> {
    plan.components
        .iter()
        .map(|c| {
            let n = u32::try_from(c.executors.len()).unwrap_or(u32::MAX);
            (c.id.clone(), n)
        })
        .collect()
}

#[cfg(test)]
#[path = "cluster_state_tests.rs"]
mod tests;
