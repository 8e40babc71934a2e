//! Storm's ZooKeeper layout: where each piece of cluster state lives
//! under `storm.zookeeper.root`, and the JSON each node holds. See docs/coordination.md.

pub(crate) use crate::placement::NodePort;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The subtree roots, created with the cluster state (Storm's `mk-storm-cluster-state`).
pub(crate) const SUBTREES: &[&str] = &[
    "assignments",
    "storms",
    "supervisors",
    "tasks",
    "taskbeats",
    "taskerrors",
];

/// How many errors `/taskerrors/{id}/{task}` keeps (Storm keeps the last 10).
pub(crate) const KEPT_ERRORS: usize = 10;

/// Paths of the cluster state under one root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Layout {
    root: String,
}

impl Layout {
    /// `root` is `storm.zookeeper.root` (e.g. `/storm`); a trailing `/` is ignored.
    pub(crate) fn new(root: &str) -> Layout {
        let trimmed = root.trim_end_matches('/');
        Layout {
            root: if trimmed.is_empty() {
                String::new()
            } else {
                trimmed.to_string()
            },
        }
    }

    /// The root itself (`/` when the configured root is `/`).
    pub(crate) fn root(&self) -> &str {
        if self.root.is_empty() {
            "/"
        } else {
            &self.root
        }
    }

    fn sub(&self, name: &str) -> String {
        format!("{}/{name}", self.root)
    }

    pub(crate) fn assignments(&self) -> String {
        self.sub("assignments")
    }
    pub(crate) fn storms(&self) -> String {
        self.sub("storms")
    }
    pub(crate) fn supervisors(&self) -> String {
        self.sub("supervisors")
    }
    fn tasks(&self) -> String {
        self.sub("tasks")
    }
    fn taskbeats(&self) -> String {
        self.sub("taskbeats")
    }
    fn taskerrors(&self) -> String {
        self.sub("taskerrors")
    }
    fn checkpoints(&self) -> String {
        self.sub("checkpoints")
    }
    /// `/checkpoints/{id}`: a [`CheckpointRecord`] (checkpointed topologies only; the subtree
    /// appears with the first, since Storm's layout has none).
    pub(crate) fn checkpoint(&self, id: &str) -> String {
        format!("{}/{id}", self.checkpoints())
    }

    pub(crate) fn logconfigs(&self) -> String {
        self.sub("logconfigs")
    }
    /// `/logconfigs/{id}`: a topology's log levels set by name (`log_config::LogConfig`;
    /// Storm's node of the same name). Created with the first `set_log_level`.
    pub(crate) fn log_config(&self, id: &str) -> String {
        format!("{}/{id}", self.logconfigs())
    }

    /// `/assignments/{id}`: an [`AssignmentInfo`].
    pub(crate) fn assignment(&self, id: &str) -> String {
        format!("{}/{id}", self.assignments())
    }
    /// `/storms/{id}`: a [`StormBase`].
    pub(crate) fn storm(&self, id: &str) -> String {
        format!("{}/{id}", self.storms())
    }
    /// `/storms/{id}/rebalance`: a rebalance accepted and not yet carried out (its new
    /// submission, when it is due and the status to put back), so a nimbus that takes over
    /// carries it out.
    pub(crate) fn pending_rebalance(&self, id: &str) -> String {
        format!("{}/{id}/rebalance", self.storms())
    }
    /// `/supervisors/{supervisor-id}` (ephemeral): a [`SupervisorInfo`].
    pub(crate) fn supervisor(&self, id: &str) -> String {
        format!("{}/{id}", self.supervisors())
    }
    /// `/tasks/{id}`: no data; one child per task.
    pub(crate) fn topology_tasks(&self, id: &str) -> String {
        format!("{}/{id}", self.tasks())
    }
    /// `/tasks/{id}/{task}`: a [`TaskInfo`].
    pub(crate) fn task(&self, id: &str, task: u32) -> String {
        format!("{}/{id}/{task}", self.tasks())
    }
    /// `/taskbeats/{id}`: no data; created at submission.
    pub(crate) fn topology_beats(&self, id: &str) -> String {
        format!("{}/{id}", self.taskbeats())
    }
    /// `/taskbeats/{id}/{task}`: a [`TaskHeartbeat`].
    pub(crate) fn task_beat(&self, id: &str, task: u32) -> String {
        format!("{}/{id}/{task}", self.taskbeats())
    }
    /// `/taskbeats/{id}/finished`: the slots whose worker finished its executors (a list of
    /// [`NodePort`]), so a nimbus that takes over knows them.
    pub(crate) fn finished_slots(&self, id: &str) -> String {
        format!("{}/{id}/finished", self.taskbeats())
    }
    /// `/taskerrors/{id}`: no data.
    pub(crate) fn topology_errors(&self, id: &str) -> String {
        format!("{}/{id}", self.taskerrors())
    }
    /// `/taskerrors/{id}/{task}`: no data; sequential children `e0000000000`... each a
    /// [`TaskError`].
    pub(crate) fn task_errors(&self, id: &str, task: u32) -> String {
        format!("{}/{id}/{task}", self.taskerrors())
    }
}

/// `/assignments/{id}` (Storm's `Assignment`): where every task runs. `node` in
/// `task_to_node_port` is a supervisor id; `node_host` resolves it to the host name workers
/// connect to.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub(crate) struct AssignmentInfo {
    pub(crate) master_code_dir: String,
    pub(crate) node_host: BTreeMap<String, String>,
    pub(crate) task_to_node_port: BTreeMap<u32, NodePort>,
    pub(crate) task_to_start_time: BTreeMap<u32, u64>,
}

impl AssignmentInfo {
    /// `host:port` of the worker running a task.
    pub(crate) fn task_address(&self, task: u32) -> Option<String> {
        let np = self.task_to_node_port.get(&task)?;
        let host = self.node_host.get(&np.node)?;
        Some(format!("{host}:{}", np.port))
    }

    /// The tasks of one slot, in order.
    pub(crate) fn tasks_of(&self, slot: &NodePort) -> Vec<u32> {
        self.task_to_node_port
            .iter()
            .filter(|(_, s)| *s == slot)
            .map(|(t, _)| *t)
            .collect()
    }
}

/// A topology's status (Storm's `:active`, `:inactive`, `:killed`, `:rebalancing`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum TopologyStatus {
    Active,
    Inactive,
    Killed,
    /// Spouts deactivated until the rebalance's wait is over and its assignment written.
    Rebalancing,
}

/// `/checkpoints/{id}`: the last checkpoint committed across a topology's workers (what
/// every worker restores after a rollback, and a moved executor's new worker restores), and
/// the rollback generation (bumped when a worker is lost; workers of an older one roll back).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub(crate) struct CheckpointRecord {
    pub(crate) txid: u64,
    pub(crate) generation: u64,
    pub(crate) time_secs: u64,
    /// The address of the nimbus whose store holds `txid` (with several nimbuses on
    /// ZooKeeper; another one that leads fetches the state from it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) holder: Option<String>,
    /// The other nimbuses whose stores hold `txid` too: the holder copied the checkpoint to
    /// each of them before recording it, so any of them leads on from its own copy.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) replicas: Vec<String>,
}

/// `/storms/{id}` (Storm's `StormBase`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct StormBase {
    pub(crate) name: String,
    pub(crate) status: TopologyStatus,
    pub(crate) launch_time_secs: u64,
    pub(crate) num_workers: u32,
    /// Executors per component, system components included.
    pub(crate) component_executors: BTreeMap<String, u32>,
}

/// `/tasks/{id}/{task}` (Storm's `TaskInfo`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct TaskInfo {
    pub(crate) component: String,
}

/// `/supervisors/{supervisor-id}` (Storm's `SupervisorInfo`), refreshed by its heartbeat.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SupervisorInfo {
    pub(crate) hostname: String,
    pub(crate) time_secs: u64,
    pub(crate) uptime_secs: u64,
    /// Worker slot ports.
    pub(crate) ports: Vec<u16>,
}

/// `/taskbeats/{id}/{task}` (Storm's `TaskHeartbeat`), written by the worker running it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskHeartbeat {
    pub(crate) time_secs: u64,
    pub(crate) uptime_secs: u64,
    /// Counters the task reports (emitted, acked, failed...).
    #[serde(default)]
    pub(crate) stats: serde_json::Map<String, serde_json::Value>,
    /// Where the worker that wrote it listens for tuples (absent in beats written before it
    /// started listening, and in records written before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) listening: Option<Listening>,
}

/// Where a worker listens: it binds port 0, so its peers learn the port it got from its
/// heartbeats (through nimbus, or the ZooKeeper tree), keyed by its slot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Listening {
    pub(crate) slot: NodePort,
    /// `ip:port` as bound.
    pub(crate) addr: String,
}

/// One child of `/taskerrors/{id}/{task}` (Storm's `TaskError`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct TaskError {
    pub(crate) error: String,
    pub(crate) time_secs: u64,
    /// `host:port` of the worker it happened in (absent in records written before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) worker: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_follow_storms_layout() {
        let l = Layout::new("/storm/");
        assert_eq!(l.assignment("wc-1-5"), "/storm/assignments/wc-1-5");
        assert_eq!(l.task("wc-1-5", 3), "/storm/tasks/wc-1-5/3");
        assert_eq!(l.task_beat("wc-1-5", 3), "/storm/taskbeats/wc-1-5/3");
        assert_eq!(l.task_errors("wc-1-5", 3), "/storm/taskerrors/wc-1-5/3");
        assert_eq!(l.supervisor("s"), "/storm/supervisors/s");
        assert_eq!(Layout::new("/").storms(), "/storms");
        assert_eq!(Layout::new("/").root(), "/");
    }

    #[test]
    fn a_task_error_keeps_its_worker_and_older_records_still_read() {
        let old: TaskError = serde_json::from_str(r#"{"error":"boom","time_secs":7}"#).unwrap();
        assert_eq!(old.worker, None);
        let e = TaskError {
            error: "boom".into(),
            time_secs: 7,
            worker: Some("host1:6700".into()),
        };
        let back: TaskError = serde_json::from_str(&serde_json::to_string(&e).unwrap()).unwrap();
        assert_eq!(back, e);
    }

    #[test]
    fn assignment_json_has_string_task_keys_and_node_port_values() {
        let mut a = AssignmentInfo {
            master_code_dir: "d".into(),
            ..Default::default()
        };
        a.node_host.insert("sup-1".into(), "host1".into());
        let slot = NodePort {
            node: "sup-1".into(),
            port: 6700,
        };
        a.task_to_node_port.insert(2, slot.clone());
        a.task_to_node_port.insert(10, slot.clone());
        a.task_to_start_time.insert(2, 7);
        let text = serde_json::to_string(&a).unwrap();
        assert_eq!(
            text,
            r#"{"master_code_dir":"d","node_host":{"sup-1":"host1"},"task_to_node_port":{"2":"sup-1:6700","10":"sup-1:6700"},"task_to_start_time":{"2":7}}"#
        );
        let back: AssignmentInfo = serde_json::from_str(&text).unwrap();
        assert_eq!(back, a);
        assert_eq!(back.task_address(10).as_deref(), Some("host1:6700"));
        assert_eq!(back.tasks_of(&slot), vec![2, 10]);
    }

    #[test]
    fn node_port_rejects_bad_text() {
        assert!("host".parse::<NodePort>().is_err());
        assert!("host:0".parse::<NodePort>().is_err());
        assert!(":6700".parse::<NodePort>().is_err());
        assert!("host:99999".parse::<NodePort>().is_err());
        assert_eq!(
            "a:b:6700".parse::<NodePort>(),
            Ok(NodePort {
                node: "a:b".into(),
                port: 6700
            })
        );
    }
}
