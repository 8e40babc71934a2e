//! Typed, layered configuration: Storm's dotted keys, each value remembering the layer
//! it came from, with typed accessors for the keys the runtime reads.

pub mod layers;
pub(crate) mod reporters;
pub(crate) mod rules;
pub(crate) mod storm_keys;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// Where a configuration value came from, lowest layer first.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Origin {
    /// `conf/defaults.yaml`, compiled into the binary.
    Default,
    /// `conf/storm.yaml` or `$STORM_CONF_DIR/storm.yaml`, with the line.
    StormYaml { path: PathBuf, line: usize },
    /// The topology file's `config:`, with the line.
    Topology { path: PathBuf, line: usize },
    /// `-c KEY=VALUE` on the command line.
    CommandLine,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub value: serde_json::Value,
    pub(crate) origin: Origin,
}

/// Default `topology.max.spout.pending` when acking is on and none is set: bounds the lines a
/// replaying spout keeps, and so memory.
pub(crate) const DEFAULT_MAX_SPOUT_PENDING: u64 = 4096;

/// The effective configuration.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Config {
    pub entries: BTreeMap<String, Entry>,
}

impl Config {
    pub(crate) fn get(&self, key: &str) -> Option<&serde_json::Value> {
        self.entries
            .get(key)
            .map(|e| &e.value)
            .filter(|v| !v.is_null())
    }

    pub fn set(&mut self, key: impl Into<String>, value: serde_json::Value, origin: Origin) {
        self.entries.insert(key.into(), Entry { value, origin });
    }

    pub(crate) fn get_u64(&self, key: &str) -> Option<u64> {
        self.get(key).and_then(|v| v.as_u64())
    }

    /// `topology.stats.sample.rate`: the share of trees whose complete latency is measured.
    pub(crate) fn stats_sample_rate(&self) -> f64 {
        self.get("topology.stats.sample.rate")
            .and_then(|v| v.as_f64())
            .map_or(0.05, |r| r.clamp(0.0, 1.0))
    }

    pub(crate) fn get_bool(&self, key: &str) -> Option<bool> {
        self.get(key).and_then(|v| v.as_bool())
    }

    /// A duration key: a number of seconds, or humantime text (`30s`, `1m 30s`).
    pub(crate) fn get_duration(&self, key: &str) -> Option<Duration> {
        duration_of(self.get(key)?)
    }

    /// All values as a plain JSON object (for the multilang handshake's `conf`).
    pub(crate) fn to_json(&self) -> serde_json::Value {
        serde_json::Value::Object(
            self.entries
                .iter()
                .map(|(k, e)| (k.clone(), e.value.clone()))
                .collect(),
        )
    }

    pub fn workers(&self) -> u32 {
        self.get_u64("topology.workers").unwrap_or(1).max(1) as u32
    }

    /// `None` = one acker per worker; `Some(0)` = acking disabled.
    pub(crate) fn acker_executors(&self) -> Option<u32> {
        self.get_u64("topology.acker.executors").map(|v| v as u32)
    }

    pub(crate) fn max_spout_pending(&self) -> Option<u64> {
        self.get_u64("topology.max.spout.pending")
    }

    /// The trees a spout task keeps open at most when acking is on: the set value, else
    /// [`DEFAULT_MAX_SPOUT_PENDING`].
    pub(crate) fn max_spout_pending_or_default(&self) -> u64 {
        self.max_spout_pending()
            .unwrap_or(DEFAULT_MAX_SPOUT_PENDING)
    }

    pub(crate) fn message_timeout(&self) -> Duration {
        self.get_duration("topology.message.timeout.secs")
            .unwrap_or(Duration::from_secs(30))
    }

    pub(crate) fn message_timeouts_enabled(&self) -> bool {
        self.get_bool("topology.enable.message.timeouts")
            .unwrap_or(true)
    }

    pub(crate) fn tick_freq(&self) -> Option<Duration> {
        self.get_duration("topology.tick.tuple.freq.secs")
    }

    pub(crate) fn receiver_buffer_size(&self) -> usize {
        self.get_u64("topology.receiver.buffer.size").unwrap_or(8) as usize
    }

    pub(crate) fn transfer_buffer_size(&self) -> usize {
        self.get_u64("topology.transfer.buffer.size")
            .unwrap_or(1024) as usize
    }

    pub(crate) fn executor_receive_buffer_size(&self) -> usize {
        self.get_u64("topology.executor.receive.buffer.size")
            .unwrap_or(1024) as usize
    }

    pub fn debug(&self) -> bool {
        self.get_bool("topology.debug").unwrap_or(false)
    }

    /// `topology.stateful`: every stateful built-in keeps state unless it says otherwise.
    pub(crate) fn stateful(&self) -> bool {
        self.get_bool("topology.stateful").unwrap_or(false)
    }

    /// `topology.state.provider`: `memory` (the default) or `embedded`.
    pub(crate) fn state_provider(&self) -> &str {
        self.get("topology.state.provider")
            .and_then(|v| v.as_str())
            .unwrap_or("memory")
    }

    /// `topology.state.dir`, or `./storm-state/NAME` when unset.
    pub(crate) fn state_dir(&self, topology: &str) -> PathBuf {
        match self.get("topology.state.dir").and_then(|v| v.as_str()) {
            Some(dir) => PathBuf::from(dir),
            None => PathBuf::from("storm-state").join(topology),
        }
    }

    /// `topology.state.checkpoint.interval.ms` (Storm's default: one second).
    pub(crate) fn checkpoint_interval(&self) -> Duration {
        Duration::from_millis(
            self.get_u64("topology.state.checkpoint.interval.ms")
                .unwrap_or(1000)
                .max(1),
        )
    }

    pub(crate) fn zookeeper_root(&self) -> String {
        self.get("storm.zookeeper.root")
            .and_then(|v| v.as_str())
            .unwrap_or("/storm")
            .to_string()
    }

    pub(crate) fn slots_ports(&self) -> Vec<u16> {
        self.get("supervisor.slots.ports")
            .and_then(|v| v.as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|p| p.as_u64())
                    .filter_map(|p| u16::try_from(p).ok())
                    .collect()
            })
            .unwrap_or_else(|| vec![6700, 6701, 6702, 6703])
    }

    pub(crate) fn nimbus_task_timeout(&self) -> Duration {
        self.get_duration("nimbus.task.timeout.secs")
            .unwrap_or(Duration::from_secs(30))
    }
}

/// Seconds as a number, or humantime text.
pub(crate) fn duration_of(v: &serde_json::Value) -> Option<Duration> {
    match v {
        serde_json::Value::Number(n) => n
            .as_f64()
            .filter(|f| f.is_finite() && *f >= 0.0)
            .map(Duration::from_secs_f64),
        serde_json::Value::String(s) => humantime::parse_duration(s.trim()).ok().or_else(|| {
            s.trim()
                .parse::<f64>()
                .ok()
                .filter(|f| f.is_finite() && *f >= 0.0)
                .map(Duration::from_secs_f64)
        }),
        _ => None,
    }
}
