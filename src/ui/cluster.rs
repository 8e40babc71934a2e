//! The UI's view of a cluster, served by nimbus (`ui.port`): every topology in the
//! coordination tree, its figures from the tasks' latest heartbeats, its errors from
//! `/taskerrors`; activate, deactivate and kill go through nimbus as `storm` commands do.

use super::{
    components_of, Action, ErrorView, Source, SupervisorView, TaskFigures, TaskView, TopologyView,
};
use crate::cluster::coordination::layout::{TaskHeartbeat, TopologyStatus};
use crate::cluster::nimbus::Nimbus;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

/// Nimbus, seen by the UI.
pub(crate) struct ClusterUi(pub(crate) Arc<Nimbus>);

/// A counter of a task's heartbeat (0 when the worker does not report it).
fn stat(beat: &TaskHeartbeat, key: &str) -> u64 {
    beat.stats.get(key).and_then(|v| v.as_u64()).unwrap_or(0)
}

/// One task's figures from its heartbeat.
fn task_view(
    task: u32,
    (worker, supervisor): (String, String),
    beat: &TaskHeartbeat,
    plan: &crate::model::plan::Plan,
) -> TaskView {
    TaskView {
        task,
        worker,
        supervisor,
        emitted: stat(beat, "emitted"),
        transferred: stat(beat, "transferred"),
        executed: stat(beat, "executed"),
        acked: stat(beat, "acked"),
        failed: stat(beat, "failed"),
        execute_ns: stat(beat, "execute_ns"),
        complete_us: stat(beat, "complete_us"),
        completes_sampled: stat(beat, "completes_sampled"),
        errors: stat(beat, "errors"),
        dropped: stat(beat, "dropped"),
        streams: streams_of(beat, plan),
    }
}

/// The per-stream counters of a heartbeat (`"streams": {"ID": [emitted, transferred]}`), by
/// stream name.
fn streams_of(
    beat: &TaskHeartbeat,
    plan: &crate::model::plan::Plan,
) -> std::collections::BTreeMap<String, (u64, u64)> {
    let Some(streams) = beat.stats.get("streams").and_then(|v| v.as_object()) else {
        return Default::default();
    };
    streams
        .iter()
        .filter_map(|(id, v)| {
            let id = id.parse::<crate::model::plan::StreamId>().ok()?;
            let pair = v.as_array()?;
            let (e, t) = (pair.first()?.as_u64()?, pair.get(1)?.as_u64()?);
            Some((plan.stream_name(id).to_string(), (e, t)))
        })
        .collect()
}

/// The lag a spout task reported in its heartbeat (`"lag": [PartitionLag…]`; none if absent
/// or unreadable).
fn lag_of(beat: &TaskHeartbeat) -> Vec<crate::components::PartitionLag> {
    beat.stats
        .get("lag")
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default()
}

impl ClusterUi {
    /// The view of topology `id`, or why it cannot be read.
    fn topology(&self, id: &str) -> anyhow::Result<Option<TopologyView>> {
        let known = self.0.known(id)?;
        let state = self.0.state();
        let Some(base) = state.storm_base(id)? else {
            return Ok(None);
        };
        let assignment = state.assignment(id)?;
        let beats = state.task_heartbeats(id)?;
        let mut figures = TaskFigures::default();
        for c in &known.plan.components {
            for task in c.tasks.clone() {
                let worker = assignment
                    .as_ref()
                    .and_then(|a| a.task_address(task))
                    .unwrap_or_default();
                let supervisor = assignment
                    .as_ref()
                    .and_then(|a| a.task_to_node_port.get(&task))
                    .map(|np| np.node.clone())
                    .unwrap_or_default();
                if let Some(beat) = beats.get(&task) {
                    figures.lag.insert(task, lag_of(beat));
                    figures.tasks.insert(
                        task,
                        task_view(task, (worker.clone(), supervisor), beat, &known.plan),
                    );
                }
                let errors = state.task_errors(id, task)?;
                figures.errors.insert(
                    task,
                    errors
                        .into_iter()
                        .map(|e| ErrorView {
                            error: e.error,
                            time_secs: e.time_secs,
                            // Where it happened; older records: where the task runs now.
                            worker: e.worker.unwrap_or_else(|| worker.clone()),
                        })
                        .collect(),
                );
            }
        }
        let slots: BTreeSet<_> = assignment
            .iter()
            .flat_map(|a| a.task_to_node_port.values().cloned())
            .collect();
        let status = match base.status {
            TopologyStatus::Active => "ACTIVE",
            TopologyStatus::Inactive => "INACTIVE",
            TopologyStatus::Killed => "KILLED",
            TopologyStatus::Rebalancing => "REBALANCING",
        };
        Ok(Some(TopologyView {
            id: id.to_string(),
            name: base.name,
            status: status.into(),
            uptime: Duration::from_secs(self.0.now_secs().saturating_sub(base.launch_time_secs)),
            workers: slots.len(),
            msg_timeout_secs: known.topology.config.message_timeout().as_secs(),
            debug: known.topology.config.debug(),
            configuration: super::shown_configuration(&known.topology.config),
            components: components_of(&known.topology, &known.plan, &figures),
        }))
    }
}

impl Source for ClusterUi {
    fn worker_log(
        &self,
        file: &str,
        start: Option<u64>,
        length: Option<u64>,
    ) -> anyhow::Result<crate::cluster::worker_logs::LogChunk> {
        self.0.worker_log(file, start, length)
    }

    fn log_config(&self, id: &str) -> anyhow::Result<crate::log_config::LogConfig> {
        Ok(self.0.log_config(id)?.1)
    }

    /// Kept by nimbus under `/logconfigs/ID`; the workers install them at their next
    /// heartbeat.
    fn change_log_config(
        &self,
        id: &str,
        changes: &[crate::log_config::Change],
    ) -> anyhow::Result<crate::log_config::LogConfig> {
        Ok(self.0.set_log_config(id, changes)?.1)
    }

    fn nimbuses(&self) -> Vec<super::NimbusView> {
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_string())
            .unwrap_or_default();
        vec![super::NimbusView {
            host,
            port: None,
            leader: self.0.leads(),
            uptime_secs: self.0.uptime().as_secs(),
        }]
    }

    fn supervisors(&self) -> Vec<SupervisorView> {
        let state = self.0.state();
        let Ok(sups) = state.supervisors() else {
            return Vec::new();
        };
        let mut used: std::collections::BTreeMap<String, BTreeSet<u16>> = Default::default();
        for id in state.topology_ids().unwrap_or_default() {
            if let Ok(Some(a)) = state.assignment(&id) {
                for np in a.task_to_node_port.values() {
                    used.entry(np.node.clone()).or_default().insert(np.port);
                }
            }
        }
        sups.into_iter()
            .map(|(id, info)| SupervisorView {
                slots_used: used.get(&id).map_or(0, BTreeSet::len),
                id,
                host: info.hostname,
                uptime_secs: info.uptime_secs,
                slots_total: info.ports.len(),
            })
            .collect()
    }

    fn topologies(&self) -> Vec<TopologyView> {
        let ids = self.0.state().topology_ids().unwrap_or_default();
        ids.iter()
            .filter_map(|id| match self.topology(id) {
                Ok(t) => t,
                Err(e) => {
                    tracing::debug!("ui: cannot read topology {id}: {e:#}");
                    None
                }
            })
            .collect()
    }

    fn act(&self, id: &str, action: &Action) -> anyhow::Result<()> {
        match action {
            Action::Activate => self.0.set_active(id, true).map(drop),
            Action::Deactivate => self.0.set_active(id, false).map(drop),
            Action::Kill { wait_secs } => {
                let name = self
                    .0
                    .state()
                    .storm_base(id)?
                    .map(|b| b.name)
                    .ok_or_else(|| anyhow::anyhow!("no topology {id}"))?;
                self.0.kill(&name, Some(*wait_secs)).map(drop)
            }
            Action::Rebalance { wait_secs, options } => {
                self.0.rebalance(id, Some(*wait_secs), options).map(drop)
            }
        }
    }
}
