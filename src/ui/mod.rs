//! The operator's view of running topologies: Storm's UI REST API under `/api/v1/`, Prometheus
//! text at `/metrics`, and the web page at `/`, served by `storm run --ui` and by nimbus.
//!
//! A [`Source`] (a local run, or nimbus) hands out [`TopologyView`]s built from the counters
//! the executors already keep; nothing is computed until a request comes, so the UI costs
//! nothing while nobody looks.

mod api;
pub(crate) mod client;
pub(crate) mod cluster;
pub(crate) mod local;
mod prometheus;
pub(crate) mod server;
mod windows;

use crate::runtime::metrics::UserMetric;
use std::collections::BTreeMap;
use std::time::Duration;

/// Where the UI listens when `--ui` names no address, and nimbus's default `ui.port`.
pub(crate) const DEFAULT_ADDR: &str = "127.0.0.1:8080";
pub(crate) const DEFAULT_PORT: u16 = 8080;

/// What the UI can read and steer: a local run or a cluster.
pub(crate) trait Source: Send + Sync + 'static {
    /// The supervisors (a local run has one, this process).
    fn supervisors(&self) -> Vec<SupervisorView>;
    /// Every topology known, with its figures as of now.
    fn topologies(&self) -> Vec<TopologyView>;
    /// Carry out an operation on topology `id`.
    fn act(&self, id: &str, action: &Action) -> anyhow::Result<()>;
    /// The nimbuses this UI knows of (a local run: none, as it has no nimbus).
    fn nimbuses(&self) -> Vec<NimbusView> {
        Vec::new()
    }

    /// The log levels set by name for topology `id` and in effect now (Storm's
    /// `namedLoggerLevels`).
    fn log_config(&self, _id: &str) -> anyhow::Result<crate::log_config::LogConfig> {
        anyhow::bail!("this UI keeps no log levels")
    }

    /// Carry out `changes` on topology `id`'s log levels: its processes' log filters change
    /// (a local run at once, a cluster's workers at their next heartbeat). The levels now.
    fn change_log_config(
        &self,
        _id: &str,
        _changes: &[crate::log_config::Change],
    ) -> anyhow::Result<crate::log_config::LogConfig> {
        anyhow::bail!("this UI cannot change log levels")
    }

    /// A piece of a worker's log (`TOPOLOGY-ID/PORT/worker.log`, Storm's logviewer names).
    fn worker_log(
        &self,
        _file: &str,
        _start: Option<u64>,
        _length: Option<u64>,
    ) -> anyhow::Result<crate::cluster::worker_logs::LogChunk> {
        Err(crate::cluster::worker_logs::LogError::NotFound(
            "a run in one process keeps no worker log files: what it logs is on its own \
             standard error"
                .into(),
        )
        .into())
    }

    /// Listen to what `component` of topology `id` emits: JSON lines, on `stream` only when
    /// given, one in `every` (the sample rate's inverse).
    fn tap(
        &self,
        _id: &str,
        _component: &str,
        _stream: Option<&str>,
        _every: u64,
    ) -> anyhow::Result<crossbeam_channel::Receiver<String>> {
        anyhow::bail!(
            "tap is served by the UI of a run in one process (`storm run FILE --ui`, without \
             --processes); on worker processes and clusters, `topology.debug: true` logs a \
             component's emits"
        )
    }
}

/// A nimbus, as `/nimbus/summary` shows it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct NimbusView {
    host: String,
    /// Its port for clients (unknown: `None`, shown as null).
    port: Option<u16>,
    leader: bool,
    uptime_secs: u64,
}

/// An operation of the REST API's POSTs (and of `storm activate|deactivate|kill`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Action {
    Activate,
    Deactivate,
    Kill {
        wait_secs: u64,
    },
    /// Deactivate, wait (at most `wait_secs`), re-place with new worker and executor counts,
    /// and return to the status before.
    Rebalance {
        wait_secs: u64,
        options: crate::model::rebalance::Rebalance,
    },
}

impl Action {
    /// The name Storm's REST API gives the operation (`topologyOperation`).
    fn name(&self) -> &'static str {
        match self {
            Action::Activate => "activate",
            Action::Deactivate => "deactivate",
            Action::Kill { .. } => "kill",
            Action::Rebalance { .. } => "rebalance",
        }
    }
}

/// One supervisor, as the cluster summary shows it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SupervisorView {
    id: String,
    host: String,
    uptime_secs: u64,
    slots_total: usize,
    slots_used: usize,
}

/// A topology and its components' figures at one moment.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TopologyView {
    id: String,
    name: String,
    /// Storm's status names: `ACTIVE`, `INACTIVE`, `REBALANCING`, `KILLED`.
    status: String,
    uptime: Duration,
    workers: usize,
    msg_timeout_secs: u64,
    debug: bool,
    /// The topology's configuration, secrets left out (`/topology/:id`'s `configuration`).
    configuration: serde_json::Map<String, serde_json::Value>,
    components: Vec<ComponentView>,
}

/// One component (spout or bolt) with its tasks' counters.
#[derive(Debug, Clone, PartialEq, Default)]
struct ComponentView {
    id: String,
    spout: bool,
    /// A system component (`__acker`): shown only when asked (`?sys=1`).
    system: bool,
    /// Its emits are logged (`topology.debug`, the topology's or its own `config`).
    debug: bool,
    executors: usize,
    tasks: Vec<TaskView>,
    /// The components and streams it reads, with the grouping.
    inputs: Vec<InputView>,
    /// Reported errors, oldest first (at most a few).
    errors: Vec<ErrorView>,
    /// User metrics (a multilang child's `metrics` command), over its tasks.
    metrics: BTreeMap<String, UserMetric>,
    /// The output streams it declares.
    outputs: Vec<String>,
    /// Spouts reading partitions (`kafka`): how far behind each partition it is, by topic and
    /// partition (each partition as the task reading it last reported).
    lag: Vec<crate::components::PartitionLag>,
}

/// One task's counters since it started.
#[derive(Debug, Clone, PartialEq, Default)]
struct TaskView {
    task: u32,
    /// `host:port` of its worker.
    worker: String,
    /// The id of the supervisor running its worker (empty in a local run).
    supervisor: String,
    emitted: u64,
    transferred: u64,
    executed: u64,
    acked: u64,
    failed: u64,
    execute_ns: u64,
    /// Spouts: sampled complete latencies summed (µs), and how many were sampled.
    complete_us: u64,
    completes_sampled: u64,
    errors: u64,
    dropped: u64,
    /// Emitted and transferred per output stream, by stream name (streams emitted on only).
    streams: BTreeMap<String, (u64, u64)>,
}

/// A subscription of a component: whom it reads, which stream, how grouped.
#[derive(Debug, Clone, PartialEq)]
struct InputView {
    component: String,
    stream: String,
    grouping: String,
}

/// A reported error.
#[derive(Debug, Clone, PartialEq)]
struct ErrorView {
    error: String,
    time_secs: u64,
    worker: String,
}

impl ComponentView {
    /// The sum of one counter over the component's tasks.
    fn sum(&self, f: impl Fn(&TaskView) -> u64) -> u64 {
        self.tasks.iter().map(f).sum()
    }

    /// Mean complete latency in ms of the sampled trees (0 before any completed).
    fn complete_latency_ms(&self) -> f64 {
        let n = self.sum(|t| t.completes_sampled);
        match n {
            0 => 0.0,
            n => self.sum(|t| t.complete_us) as f64 / n as f64 / 1e3,
        }
    }

    /// Emitted and transferred on each output stream, summed over the tasks: every declared
    /// stream (zeros before its first tuple) and every stream counted; system streams
    /// (`__ack_ack`, ...) only with `sys`.
    fn stream_sums(&self, sys: bool) -> BTreeMap<String, (u64, u64)> {
        let mut out: BTreeMap<String, (u64, u64)> =
            self.outputs.iter().map(|s| (s.clone(), (0, 0))).collect();
        for t in &self.tasks {
            for (s, (e, x)) in &t.streams {
                let sum = out.entry(s.clone()).or_default();
                sum.0 += e;
                sum.1 += x;
            }
        }
        out.retain(|s, _| sys || !s.starts_with("__"));
        out
    }

    /// Mean execute latency in ms (0 before anything ran).
    fn execute_latency_ms(&self) -> f64 {
        let executed = self.sum(|t| t.executed);
        if executed == 0 {
            0.0
        } else {
            self.sum(|t| t.execute_ns) as f64 / executed as f64 / 1e6
        }
    }
}

impl TopologyView {
    fn executors(&self) -> usize {
        self.user_components(true).map(|c| c.executors).sum()
    }

    fn tasks(&self) -> usize {
        self.user_components(true).map(|c| c.tasks.len()).sum()
    }

    /// The components, system ones only with `sys`.
    fn user_components(&self, sys: bool) -> impl Iterator<Item = &ComponentView> {
        self.components.iter().filter(move |c| sys || !c.system)
    }

    fn component(&self, id: &str) -> Option<&ComponentView> {
        self.components.iter().find(|c| c.id == id)
    }
}

/// Storm's way of showing a duration: `1d 2h 3m 4s`, leading zero units left out.
fn pretty_uptime(secs: u64) -> String {
    let (d, h, m, s) = (secs / 86400, secs / 3600 % 24, secs / 60 % 60, secs % 60);
    if d > 0 {
        format!("{d}d {h}h {m}m {s}s")
    } else if h > 0 {
        format!("{h}h {m}m {s}s")
    } else if m > 0 {
        format!("{m}m {s}s")
    } else {
        format!("{s}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uptime_reads_as_storms() {
        assert_eq!(pretty_uptime(0), "0s");
        assert_eq!(pretty_uptime(365), "6m 5s");
        assert_eq!(pretty_uptime(3600 * 3), "3h 0m 0s");
        assert_eq!(pretty_uptime(86400 + 61), "1d 0h 1m 1s");
    }
}

/// What a source knows of each task, to be laid out per component by [`components_of`].
#[derive(Debug, Default)]
struct TaskFigures {
    tasks: BTreeMap<u32, TaskView>,
    errors: BTreeMap<u32, Vec<ErrorView>>,
    metrics: BTreeMap<u32, crate::runtime::metrics::UserMetrics>,
    lag: BTreeMap<u32, Vec<crate::components::PartitionLag>>,
}

/// The lag of a component's tasks, one entry per partition (a partition two tasks report,
/// as after a rebalance, as the later task in order reports it), sorted.
fn lag_of(
    tasks: impl Iterator<Item = u32>,
    figures: &TaskFigures,
) -> Vec<crate::components::PartitionLag> {
    let mut by_partition = BTreeMap::new();
    for t in tasks {
        for p in figures.lag.get(&t).into_iter().flatten() {
            by_partition.insert((p.topic.clone(), p.partition), p.clone());
        }
    }
    by_partition.into_values().collect()
}

/// The components of a topology with the figures of their tasks (tasks not reported are left
/// out), in the plan's order, and their inputs from the topology's streams.
fn components_of(
    topology: &crate::model::Topology,
    plan: &crate::model::plan::Plan,
    figures: &TaskFigures,
) -> Vec<ComponentView> {
    plan.components
        .iter()
        .map(|c| {
            let tasks: Vec<TaskView> = c
                .tasks
                .clone()
                .filter_map(|t| figures.tasks.get(&t).cloned())
                .collect();
            let mut errors: Vec<ErrorView> = c
                .tasks
                .clone()
                .flat_map(|t| figures.errors.get(&t).cloned().unwrap_or_default())
                .collect();
            errors.sort_by_key(|e| e.time_secs);
            let keep = errors
                .len()
                .saturating_sub(crate::runtime::metrics::RECENT_ERRORS);
            errors.drain(..keep);
            let mut metrics = crate::runtime::metrics::UserMetrics::default();
            for t in c.tasks.clone() {
                if let Some(m) = figures.metrics.get(&t) {
                    metrics.merge(m);
                }
            }
            ComponentView {
                id: c.id.clone(),
                spout: topology.component(&c.id).is_some_and(|s| s.is_spout()),
                system: c.id.starts_with("__"),
                debug: topology
                    .component(&c.id)
                    .and_then(|s| s.config.get("topology.debug"))
                    .and_then(|v| v.as_bool())
                    .unwrap_or_else(|| topology.config.debug()),
                executors: c.executors.len(),
                tasks,
                inputs: topology
                    .streams
                    .iter()
                    .filter(|s| s.to == c.id)
                    .map(|s| InputView {
                        component: s.from.clone(),
                        stream: s.stream.clone(),
                        grouping: s.grouping.name().to_string(),
                    })
                    .collect(),
                errors,
                metrics: metrics.by_name,
                lag: lag_of(c.tasks.clone(), figures),
                outputs: topology
                    .component(&c.id)
                    .map(|s| s.outputs.keys().cloned().collect())
                    .unwrap_or_default(),
            }
        })
        .collect()
}

/// A configuration as the UI shows it: every key but those holding secrets (the cluster
/// secret, any `*.password`, and tokens such as `ui.token`).
fn shown_configuration(
    config: &crate::config::Config,
) -> serde_json::Map<String, serde_json::Value> {
    match config.to_json() {
        serde_json::Value::Object(m) => m
            .into_iter()
            .filter(|(k, _)| {
                !crate::components::shell::context::is_secret_key(k, config)
                    && !k.ends_with(".token")
            })
            .collect(),
        _ => serde_json::Map::new(),
    }
}
