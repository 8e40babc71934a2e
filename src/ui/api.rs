//! Storm's UI REST API documents, field names as Storm's UI REST API spells them, built from
//! [`TopologyView`]s. Figures are all-time (`window` is `:all-time`) except capacity, which is
//! over the time since an earlier request (up to [`CAPACITY_WINDOW`]), as live as the reader.

use super::{pretty_uptime, Action, ComponentView, SupervisorView, TopologyView};
use crate::model::rebalance::Rebalance;
use serde_json::{json, Value};
use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

/// How far back capacity looks (Storm's UI uses its 10-minute window).
const CAPACITY_WINDOW: Duration = Duration::from_secs(600);
/// Samples closer together than this are not kept (one a second at most per component).
const SAMPLE_EVERY: Duration = Duration::from_secs(1);

/// The version reported as `stormVersion`: this program's, and the API it answers.
const VERSION: &str = concat!(
    "storm-rs ",
    env!("CARGO_PKG_VERSION"),
    " (Storm 2.x UI REST API)"
);

/// Execute-time samples taken when a request reads the figures: capacity is the share of
/// the time between the oldest kept sample and now that the executors spent executing.
#[derive(Debug, Default)]
pub(crate) struct CapacityWindow {
    samples: HashMap<(String, String), VecDeque<(Instant, u64)>>,
}

impl CapacityWindow {
    /// Capacity of component `c` of topology `t` now (Storm: executed × execute latency over
    /// the window, per executor). Before a second sample, over the topology's uptime.
    pub(crate) fn capacity(&mut self, t: &TopologyView, c: &ComponentView, now: Instant) -> f64 {
        let exec_ns = c.sum(|x| x.execute_ns);
        let executors = c.executors.max(1) as f64;
        let q = self
            .samples
            .entry((t.id.clone(), c.id.clone()))
            .or_default();
        while q
            .front()
            .is_some_and(|(at, _)| now.duration_since(*at) > CAPACITY_WINDOW)
        {
            q.pop_front();
        }
        // A counter that went back (a restarted worker): start the window again.
        if q.back().is_some_and(|(_, ns)| *ns > exec_ns) {
            q.clear();
        }
        let value = match q.front() {
            Some((at, ns)) if now.duration_since(*at) >= SAMPLE_EVERY => {
                (exec_ns - ns) as f64 / (now.duration_since(*at).as_nanos() as f64 * executors)
            }
            _ => exec_ns as f64 / (t.uptime.as_nanos().max(1) as f64 * executors),
        };
        if q.back()
            .is_none_or(|(at, _)| now.duration_since(*at) >= SAMPLE_EVERY)
        {
            q.push_back((now, exec_ns));
        }
        value
    }
}

/// A latency or capacity as Storm writes it: a string with three decimals.
fn fixed3(x: f64) -> String {
    format!("{x:.3}")
}

/// Storm's upper-case status names.
fn spout_or_bolt(c: &ComponentView) -> &'static str {
    if c.spout {
        "spout"
    } else {
        "bolt"
    }
}

/// `/api/v1/cluster/summary`.
pub(crate) fn cluster_summary(sups: &[SupervisorView], tops: &[TopologyView]) -> Value {
    let total: usize = sups.iter().map(|s| s.slots_total).sum();
    let used: usize = sups.iter().map(|s| s.slots_used).sum();
    json!({
        "stormVersion": VERSION,
        "supervisors": sups.len(),
        "topologies": tops.len(),
        "slotsTotal": total,
        "slotsUsed": used,
        "slotsFree": total.saturating_sub(used),
        "executorsTotal": tops.iter().map(TopologyView::executors).sum::<usize>(),
        "tasksTotal": tops.iter().map(TopologyView::tasks).sum::<usize>(),
        // No resource-aware scheduling here: Storm's resource fields are zero.
        "schedulerDisplayResource": false,
        "totalMem": 0.0,
        "totalCpu": 0.0,
        "availMem": 0.0,
        "availCpu": 0.0,
        "memAssignedPercentUtil": 0.0,
        "cpuAssignedPercentUtil": 0.0,
    })
}

/// `/api/v1/supervisor/summary`.
pub(crate) fn supervisor_summary(sups: &[SupervisorView]) -> Value {
    let list: Vec<Value> = sups
        .iter()
        .map(|s| {
            json!({
                "id": s.id,
                "host": s.host,
                "uptime": pretty_uptime(s.uptime_secs),
                "uptimeSeconds": s.uptime_secs,
                "slotsTotal": s.slots_total,
                "slotsUsed": s.slots_used,
                "totalMem": 0.0,
                "totalCpu": 0.0,
                "usedMem": 0.0,
                "usedCpu": 0.0,
            })
        })
        .collect();
    json!({ "supervisors": list, "schedulerDisplayResource": false })
}

/// `/api/v1/supervisor?id=ID|host=HOST`: the supervisors named and the workers they run.
pub(crate) fn supervisor(sups: &[SupervisorView], tops: &[TopologyView]) -> Value {
    let summary = supervisor_summary(sups);
    let on_them = |w: &Value| {
        sups.iter().any(|s| {
            w["supervisorId"].as_str() == Some(s.id.as_str())
                || w["host"].as_str() == Some(s.host.as_str())
        })
    };
    let workers: Vec<Value> = tops
        .iter()
        .flat_map(workers)
        .filter(|w| on_them(w))
        .collect();
    json!({
        "supervisors": summary["supervisors"],
        "workers": workers,
        "schedulerDisplayResource": false,
    })
}

/// `/api/v1/nimbus/summary`.
pub(crate) fn nimbus_summary(nimbuses: &[super::NimbusView]) -> Value {
    let list: Vec<Value> = nimbuses
        .iter()
        .map(|n| {
            json!({
                "host": n.host,
                "port": n.port,
                "status": if n.leader { "Leader" } else { "Not a Leader" },
                "version": VERSION,
                "nimbusUpTime": pretty_uptime(n.uptime_secs),
                "nimbusUpTimeSeconds": n.uptime_secs,
                "nimbusLogLink": "",
            })
        })
        .collect();
    json!({ "nimbuses": list })
}

/// `/api/v1/history/summary`: the topologies this UI knows (Storm lists those the user ran).
pub(crate) fn history_summary(tops: &[TopologyView]) -> Value {
    json!({ "topo-history": tops.iter().map(|t| t.id.as_str()).collect::<Vec<_>>() })
}

/// `/api/v1/topology/:id/lag`: Storm's `TopologySpoutLag`, an object keyed by spout id, each
/// `{"spoutId", "spoutType": "KAFKA", "spoutLagResult": {TOPIC: {PARTITION: {"topic",
/// "partition", "consumerCommittedOffset", "logHeadOffset", "lag"}}}}` (the fields of
/// storm-kafka-monitor's `KafkaOffsetLagResult`), for each spout that reports a lag.
pub(crate) fn lag(t: &TopologyView) -> Value {
    let mut out = serde_json::Map::new();
    for c in t.components.iter().filter(|c| c.spout && !c.lag.is_empty()) {
        let mut topics = serde_json::Map::new();
        for p in &c.lag {
            let partitions = topics.entry(p.topic.clone()).or_insert_with(|| json!({}));
            partitions[p.partition.to_string()] = json!({
                "topic": p.topic,
                "partition": p.partition,
                "consumerCommittedOffset": p.committed,
                "logHeadOffset": p.head,
                "lag": p.lag,
            });
        }
        out.insert(
            c.id.clone(),
            json!({ "spoutId": c.id, "spoutType": "KAFKA", "spoutLagResult": topics }),
        );
    }
    Value::Object(out)
}

/// `/api/v1/topology/:id/metrics` (`t` holds the counters of window `name`): each component's
/// figures per output stream: `emitted` and `transferred` per stream over all time (as
/// `outputStats`); the others, kept per component, in one `:all` row.
pub(crate) fn metrics(t: &TopologyView, name: &str, only: Option<&str>, sys: bool) -> Value {
    let row = |v: Value| json!([{ "stream_id": ":all", "value": v }]);
    let per_stream = |c: &ComponentView, pick: fn(&(u64, u64)) -> u64, total: u64| {
        if name != super::windows::ALL_TIME {
            return row(json!(total));
        }
        let rows: Vec<Value> = c
            .stream_sums(sys || c.system)
            .iter()
            .map(|(s, v)| json!({ "stream_id": s, "value": pick(v) }))
            .collect();
        Value::Array(rows)
    };
    let (mut spouts, mut bolts) = (Vec::new(), Vec::new());
    for c in t
        .user_components(sys)
        .filter(|c| only.is_none_or(|o| o == c.id))
    {
        let mut m = serde_json::Map::new();
        m.insert("id".into(), json!(c.id));
        let emitted = per_stream(c, |v| v.0, c.sum(|x| x.emitted));
        m.insert("emitted".into(), emitted);
        let transferred = per_stream(c, |v| v.1, c.sum(|x| x.transferred));
        m.insert("transferred".into(), transferred);
        m.insert("acked".into(), row(json!(c.sum(|x| x.acked))));
        m.insert("failed".into(), row(json!(c.sum(|x| x.failed))));
        if c.spout {
            m.insert(
                "complete_ms_avg".into(),
                row(json!(fixed3(c.complete_latency_ms()))),
            );
            spouts.push(Value::Object(m));
        } else {
            let latency = json!(fixed3(c.execute_latency_ms()));
            m.insert("executed".into(), row(json!(c.sum(|x| x.executed))));
            m.insert("executed_ms_avg".into(), row(latency.clone()));
            m.insert("process_ms_avg".into(), row(latency));
            bolts.push(Value::Object(m));
        }
    }
    json!({
        "window": name,
        "window-hint": super::windows::pretty(name),
        "spouts": spouts,
        "bolts": bolts,
    })
}

/// The fields a topology's summary and its page share.
fn topology_head(t: &TopologyView) -> serde_json::Map<String, Value> {
    let secs = t.uptime.as_secs();
    let v = json!({
        "id": t.id,
        "encodedId": t.id,
        "name": t.name,
        "status": t.status,
        "uptime": pretty_uptime(secs),
        "uptimeSeconds": secs,
        "tasksTotal": t.tasks(),
        "workersTotal": t.workers,
        "executorsTotal": t.executors(),
        "replicationCount": 1,
        "schedulerDisplayResource": false,
        "requestedMemOnHeap": 0.0,
        "requestedMemOffHeap": 0.0,
        "requestedTotalMem": 0.0,
        "requestedCpu": 0.0,
        "assignedMemOnHeap": 0.0,
        "assignedMemOffHeap": 0.0,
        "assignedTotalMem": 0.0,
        "assignedCpu": 0.0,
    });
    match v {
        Value::Object(m) => m,
        _ => serde_json::Map::new(),
    }
}

/// `/api/v1/topology/summary`.
pub(crate) fn topology_summary(tops: &[TopologyView]) -> Value {
    let list: Vec<Value> = tops
        .iter()
        .map(|t| Value::Object(topology_head(t)))
        .collect();
    json!({ "topologies": list, "schedulerDisplayResource": false })
}

/// The last error of a component, in Storm's `lastError`/`error*` fields.
fn last_error_fields(c: &ComponentView, now_secs: u64) -> serde_json::Map<String, Value> {
    let mut m = serde_json::Map::new();
    let last = c.errors.last();
    let (host, port) = last
        .and_then(|e| e.worker.rsplit_once(':'))
        .map(|(h, p)| (json!(h), json!(p)))
        .unwrap_or((json!(""), json!("")));
    m.insert("lastError".into(), json!(last.map_or("", |e| &e.error)));
    m.insert("errorHost".into(), host);
    m.insert("errorPort".into(), port);
    m.insert("errorWorkerLogLink".into(), json!(""));
    m.insert(
        "errorTime".into(),
        last.map_or(Value::Null, |e| json!(e.time_secs)),
    );
    m.insert(
        "errorLapsedSecs".into(),
        last.map_or(Value::Null, |e| json!(now_secs.saturating_sub(e.time_secs))),
    );
    m
}

/// One row of a topology's `spouts` table.
fn spout_row(c: &ComponentView, now_secs: u64) -> Value {
    let mut m = last_error_fields(c, now_secs);
    for (k, v) in [
        ("spoutId", json!(c.id)),
        ("encodedSpoutId", json!(c.id)),
        ("executors", json!(c.executors)),
        ("tasks", json!(c.tasks.len())),
        ("emitted", json!(c.sum(|t| t.emitted))),
        ("transferred", json!(c.sum(|t| t.transferred))),
        ("acked", json!(c.sum(|t| t.acked))),
        ("failed", json!(c.sum(|t| t.failed))),
        // Over the trees sampled for it (one in eight, as Storm samples its statistics).
        ("completeLatency", json!(fixed3(c.complete_latency_ms()))),
        ("requestedMemOnHeap", json!(0.0)),
        ("requestedMemOffHeap", json!(0.0)),
        ("requestedCpu", json!(0.0)),
    ] {
        m.insert(k.into(), v);
    }
    Value::Object(m)
}

/// One row of a topology's `bolts` table.
fn bolt_row(c: &ComponentView, capacity: f64, now_secs: u64) -> Value {
    let mut m = last_error_fields(c, now_secs);
    let latency = fixed3(c.execute_latency_ms());
    for (k, v) in [
        ("boltId", json!(c.id)),
        ("encodedBoltId", json!(c.id)),
        ("executors", json!(c.executors)),
        ("tasks", json!(c.tasks.len())),
        ("emitted", json!(c.sum(|t| t.emitted))),
        ("transferred", json!(c.sum(|t| t.transferred))),
        ("executed", json!(c.sum(|t| t.executed))),
        ("acked", json!(c.sum(|t| t.acked))),
        ("failed", json!(c.sum(|t| t.failed))),
        ("capacity", json!(fixed3(capacity))),
        ("executeLatency", json!(latency)),
        // A bolt here acks within `execute`: processing ends when executing does.
        ("processLatency", json!(latency)),
        ("requestedMemOnHeap", json!(0.0)),
        ("requestedMemOffHeap", json!(0.0)),
        ("requestedCpu", json!(0.0)),
    ] {
        m.insert(k.into(), v);
    }
    Value::Object(m)
}

/// Storm's `workerLogLink`: the worker's log on this UI (`/api/v1/log`, Storm's logviewer
/// path); empty for a local run's workers, which keep no log file.
fn log_link(id: &str, on_a_supervisor: bool, port: &str) -> String {
    if !on_a_supervisor {
        return String::new();
    }
    let file = format!("{id}/{port}/{}", crate::cluster::worker_logs::WORKER_LOG);
    let encoded: String = file
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect();
    format!("/api/v1/log?file={encoded}")
}

/// The workers of a topology, with how many tasks of each component they run.
fn workers(t: &TopologyView) -> Vec<Value> {
    type Tasks<'a> = std::collections::BTreeMap<&'a str, usize>;
    let mut by_worker: std::collections::BTreeMap<&str, (&str, Tasks)> = Default::default();
    for c in &t.components {
        for task in &c.tasks {
            let (_, tasks) = by_worker
                .entry(&task.worker)
                .or_insert((&task.supervisor, Tasks::new()));
            *tasks.entry(&c.id).or_default() += 1;
        }
    }
    by_worker
        .into_iter()
        .map(|(w, (supervisor, tasks))| {
            let (host, port) = w.rsplit_once(':').unwrap_or((w, "0"));
            let supervisor_known = !supervisor.is_empty();
            let supervisor = if supervisor.is_empty() {
                host
            } else {
                supervisor
            };
            json!({
                "topologyId": t.id,
                "topologyName": t.name,
                "supervisorId": supervisor,
                "host": host,
                "port": port.parse::<u16>().unwrap_or(0),
                "executorsTotal": tasks.values().sum::<usize>(),
                "componentNumTasks": tasks,
                "uptime": pretty_uptime(t.uptime.as_secs()),
                "uptimeSeconds": t.uptime.as_secs(),
                "assignedMemOnHeap": 0.0,
                "assignedMemOffHeap": 0.0,
                "assignedCpu": 0.0,
                "workerLogLink": log_link(&t.id, supervisor_known, port),
            })
        })
        .collect()
}

/// One row of `topologyStats`: `t`'s figures over the window `name` (`t` already holds the
/// counters of that window), and the seconds the window really covers.
pub(crate) fn topology_stats(t: &TopologyView, name: &str, covered_secs: u64, sys: bool) -> Value {
    let spouts: Vec<&ComponentView> = t.user_components(sys).filter(|c| c.spout).collect();
    let sampled: u64 = spouts.iter().map(|c| c.sum(|x| x.completes_sampled)).sum();
    let complete_us: u64 = spouts.iter().map(|c| c.sum(|x| x.complete_us)).sum();
    let complete_ms = match sampled {
        0 => 0.0,
        n => complete_us as f64 / n as f64 / 1e3,
    };
    json!({
        "windowPretty": super::windows::pretty(name),
        "window": name,
        "windowCoveredSecs": covered_secs,
        "emitted": t.user_components(sys).map(|c| c.sum(|x| x.emitted)).sum::<u64>(),
        "transferred": t.user_components(sys).map(|c| c.sum(|x| x.transferred)).sum::<u64>(),
        "completeLatency": fixed3(complete_ms),
        "acked": spouts.iter().map(|c| c.sum(|x| x.acked)).sum::<u64>(),
        "failed": spouts.iter().map(|c| c.sum(|x| x.failed)).sum::<u64>(),
    })
}

/// `/api/v1/topology/:id` (`sys` adds the system components, as Storm's `?sys=1`): `t` holds
/// the counters of window `name`, `full` those since the start (capacity is over its own
/// window); `stats` are the `topologyStats` rows of every window.
pub(crate) fn topology(
    (t, full): (&TopologyView, &TopologyView),
    (name, stats): (&str, Vec<Value>),
    sys: bool,
    window: &mut CapacityWindow,
    now: Instant,
) -> Value {
    let now_secs = crate::cluster::nimbus::now_secs();
    let mut m = topology_head(t);
    let spouts: Vec<&ComponentView> = t.user_components(sys).filter(|c| c.spout).collect();
    let bolts: Vec<Value> = t
        .user_components(sys)
        .filter(|c| !c.spout)
        .map(|c| {
            let capacity = window.capacity(full, full.component(&c.id).unwrap_or(c), now);
            bolt_row(c, capacity, now_secs)
        })
        .collect();
    for (k, v) in [
        ("msgTimeout", json!(t.msg_timeout_secs)),
        ("window", json!(name)),
        ("windowHint", json!(super::windows::pretty(name))),
        ("configuration", Value::Object(t.configuration.clone())),
        ("debug", json!(t.debug)),
        ("samplingPct", json!(if t.debug { 100.0 } else { 0.0 })),
        ("topologyStats", Value::Array(stats)),
        ("workers", json!(workers(t))),
        (
            "spouts",
            json!(spouts
                .iter()
                .map(|c| spout_row(c, now_secs))
                .collect::<Vec<_>>()),
        ),
        ("bolts", json!(bolts)),
    ] {
        m.insert(k.into(), v);
    }
    Value::Object(m)
}

/// `/api/v1/topology/:id/component/:component`: `t` and `c` hold the counters of window
/// `name`.
pub(crate) fn component(
    (t, full): (&TopologyView, &TopologyView),
    c: &ComponentView,
    name: &str,
    window: &mut CapacityWindow,
    now: Instant,
) -> Value {
    let now_secs = crate::cluster::nimbus::now_secs();
    let capacity = window.capacity(full, full.component(&c.id).unwrap_or(c), now);
    // On a cluster (tasks run on supervisors) an error links the log of its worker.
    let on_cluster = c.tasks.iter().any(|x| !x.supervisor.is_empty());
    let errors: Vec<Value> = c
        .errors
        .iter()
        .map(|e| {
            let (host, port) = e.worker.rsplit_once(':').unwrap_or((&e.worker, ""));
            json!({
                "error": e.error,
                // Seconds since the epoch, as `lastError`'s errorTime and Storm's UI give it.
                "errorTime": e.time_secs,
                "errorHost": host,
                "errorPort": port,
                "errorLapsedSecs": now_secs.saturating_sub(e.time_secs),
                "errorWorkerLogLink": log_link(&t.id, on_cluster && !port.is_empty(), port),
            })
        })
        .collect();
    let summary = json!([{
        "windowPretty": super::windows::pretty(name),
        "window": name,
        "emitted": c.sum(|x| x.emitted),
        "transferred": c.sum(|x| x.transferred),
        "executed": c.sum(|x| x.executed),
        "acked": c.sum(|x| x.acked),
        "failed": c.sum(|x| x.failed),
        "completeLatency": fixed3(c.complete_latency_ms()),
        "executeLatency": fixed3(c.execute_latency_ms()),
        "processLatency": fixed3(c.execute_latency_ms()),
    }]);
    let executors: Vec<Value> = c.tasks.iter().map(|x| executor_row(t, c, x)).collect();
    let mut m = json!({
        "id": c.id,
        "encodedId": c.id,
        "name": t.name,
        "user": "",
        "topologyId": t.id,
        "encodedTopologyId": t.id,
        "topologyStatus": t.status,
        "componentType": spout_or_bolt(c),
        "executors": c.executors,
        "tasks": c.tasks.len(),
        "window": name,
        "windowHint": super::windows::pretty(name),
        "debug": c.debug,
        "samplingPct": if c.debug { 100.0 } else { 0.0 },
        "eventLogLink": "",
        "profilingAndDebuggingCapable": false,
        "profileActionEnabled": false,
        "profilerActive": [],
        "requestedMemOnHeap": 0.0,
        "requestedMemOffHeap": 0.0,
        "requestedCpu": 0.0,
        "schedulerDisplayResource": false,
        "capacity": fixed3(capacity),
        "componentErrors": errors,
        "outputStats": output_stats(c, name),
        "executorStats": executors,
    });
    if let Some(obj) = m.as_object_mut() {
        if c.spout {
            obj.insert("spoutSummary".into(), summary);
        } else {
            obj.insert("boltStats".into(), summary);
            obj.insert("inputStats".into(), json!(input_stats(c)));
        }
    }
    m
}

/// `outputStats`: one row per output stream (system streams left out) over all time; over a
/// shorter window, where per-stream figures are not kept, one `:all` row for every stream.
fn output_stats(c: &ComponentView, window: &str) -> Vec<Value> {
    if window != super::windows::ALL_TIME {
        return vec![json!({
            "stream": ":all",
            "emitted": c.sum(|x| x.emitted),
            "transferred": c.sum(|x| x.transferred),
        })];
    }
    c.stream_sums(c.system)
        .into_iter()
        .map(|(stream, (emitted, transferred))| {
            json!({ "stream": stream, "emitted": emitted, "transferred": transferred })
        })
        .collect()
}

/// A bolt's `inputStats`: one row per subscription. Counters are kept per component, so they
/// are given only when there is a single input (they are all of it).
fn input_stats(c: &ComponentView) -> Vec<Value> {
    let single = c.inputs.len() == 1;
    let figure = |v: u64| if single { json!(v) } else { Value::Null };
    c.inputs
        .iter()
        .map(|i| {
            json!({
                "component": i.component,
                "encodedComponentId": i.component,
                "stream": i.stream,
                "grouping": i.grouping,
                "executed": figure(c.sum(|x| x.executed)),
                "acked": figure(c.sum(|x| x.acked)),
                "failed": figure(c.sum(|x| x.failed)),
                "executeLatency": if single { json!(fixed3(c.execute_latency_ms())) } else { Value::Null },
                "processLatency": if single { json!(fixed3(c.execute_latency_ms())) } else { Value::Null },
            })
        })
        .collect()
}

/// One row of `executorStats` (a task: figures are kept per task).
fn executor_row(t: &TopologyView, c: &ComponentView, x: &super::TaskView) -> Value {
    let (host, port) = x.worker.rsplit_once(':').unwrap_or((&x.worker, "0"));
    let latency = if x.executed == 0 {
        0.0
    } else {
        x.execute_ns as f64 / x.executed as f64 / 1e6
    };
    let uptime = t.uptime.as_secs_f64().max(1e-9);
    let executors_per_task = c.executors.max(1) as f64 / c.tasks.len().max(1) as f64;
    json!({
        "id": format!("[{}-{}]", x.task, x.task),
        "encodedId": format!("[{}-{}]", x.task, x.task),
        "host": host,
        "port": port.parse::<u16>().unwrap_or(0),
        "uptime": pretty_uptime(t.uptime.as_secs()),
        "uptimeSeconds": t.uptime.as_secs(),
        "emitted": x.emitted,
        "transferred": x.transferred,
        "executed": x.executed,
        "acked": x.acked,
        "failed": x.failed,
        "capacity": fixed3(x.execute_ns as f64 / 1e9 / uptime * executors_per_task),
        "executeLatency": fixed3(latency),
        "processLatency": fixed3(latency),
        "completeLatency": fixed3(if x.completes_sampled == 0 {
            0.0
        } else {
            x.complete_us as f64 / x.completes_sampled as f64 / 1e3
        }),
        "workerLogLink": "",
    })
}

/// `/api/v1/topology/:id/visualization`: each component with its type, capacity, latency,
/// transferred count and inputs (the shape Storm's UI draws its graph from).
pub(crate) fn visualization(
    t: &TopologyView,
    sys: bool,
    window: &mut CapacityWindow,
    now: Instant,
) -> Value {
    let mut m = serde_json::Map::new();
    for c in t.user_components(sys) {
        let inputs: Vec<Value> = c
            .inputs
            .iter()
            .filter(|i| sys || !i.component.starts_with("__"))
            .map(|i| {
                json!({
                    ":component": i.component,
                    ":stream": i.stream,
                    ":sani-stream": sanitize(&i.stream),
                    ":grouping": i.grouping,
                })
            })
            .collect();
        let capacity = if c.spout {
            0.0
        } else {
            window.capacity(t, c, now)
        };
        m.insert(
            c.id.clone(),
            json!({
                ":type": spout_or_bolt(c),
                ":capacity": capacity,
                ":latency": c.execute_latency_ms(),
                ":transferred": c.sum(|x| x.transferred),
                ":emitted": c.sum(|x| x.emitted),
                ":executed": c.sum(|x| x.executed),
                ":link": format!("/api/v1/topology/{}/component/{}", t.id, c.id),
                ":inputs": inputs,
            }),
        );
    }
    Value::Object(m)
}

/// A stream name usable as an identifier (Storm's `sani-stream`).
fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

/// The answer to a POST operation.
pub(crate) fn operation(id: &str, action: &Action) -> Value {
    json!({ "topologyOperation": action.name(), "topologyId": id, "status": "success" })
}

/// The body of `POST /topology/:id/rebalance/:wait-time`, as Storm's UI takes it:
/// `{"rebalanceOptions": {"numWorkers": N, "executors": {"component": n}}}`, every part
/// optional (an empty body re-places the topology as it is). Unknown keys are errors.
pub(crate) fn rebalance_options(body: &str) -> Result<Rebalance, String> {
    if body.trim().is_empty() {
        return Ok(Rebalance::default());
    }
    let v: Value = serde_json::from_str(body).map_err(|e| format!("the body is not JSON: {e}"))?;
    // Storm's documented body also carries `callback` and `count` (its UI's own); neither
    // changes a rebalance.
    let top = object(&v, "the body", &["rebalanceOptions", "callback", "count"])?;
    let Some(opts) = top.get("rebalanceOptions") else {
        return Ok(Rebalance::default());
    };
    let opts = object(opts, "rebalanceOptions", &["numWorkers", "executors"])?;
    // A number or a string of one, as Storm's documented sample writes them (`"spout": "5"`).
    let count = |v: &Value, what: &str| {
        v.as_u64()
            .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| format!("{what} must be a whole number, got {v}"))
    };
    let mut r = Rebalance::default();
    if let Some(n) = opts.get("numWorkers") {
        r.workers = Some(count(n, "numWorkers")?);
    }
    if let Some(e) = opts.get("executors") {
        let e = e
            .as_object()
            .ok_or_else(|| "executors must be an object of component: parallelism".to_string())?;
        for (id, n) in e {
            r.executors
                .insert(id.clone(), count(n, &format!("executors.{id}"))?);
        }
    }
    Ok(r)
}

/// A form post's rebalance options (`application/x-www-form-urlencoded`): a
/// `rebalanceOptions` field holding the JSON object, or `numWorkers=N` as a field of its own;
/// `callback` and `count` are ignored as in the JSON body.
pub(crate) fn rebalance_form(pairs: &[(String, String)]) -> Result<Rebalance, String> {
    let mut options = serde_json::Map::new();
    for (k, v) in pairs {
        match k.as_str() {
            "rebalanceOptions" => {
                let opts: Value = serde_json::from_str(v)
                    .map_err(|e| format!("the rebalanceOptions field is not JSON: {e}"))?;
                return rebalance_options(&json!({ "rebalanceOptions": opts }).to_string());
            }
            "numWorkers" => {
                options.insert(k.clone(), json!(v));
            }
            "callback" | "count" => {}
            other => {
                let known = ["rebalanceOptions", "numWorkers", "callback", "count"];
                let hint = crate::syntax::suggest::suggest(other, known.iter().copied())
                    .map(|s| format!("; did you mean `{s}`?"))
                    .unwrap_or_default();
                return Err(format!("unknown form field `{other}`{hint}"));
            }
        }
    }
    rebalance_options(&json!({ "rebalanceOptions": options }).to_string())
}

/// `v` as an object whose keys are all `known` (a suggestion for a misspelt one).
fn object<'a>(
    v: &'a Value,
    what: &str,
    known: &[&str],
) -> Result<&'a serde_json::Map<String, Value>, String> {
    let map = v
        .as_object()
        .ok_or_else(|| format!("{what} must be a JSON object"))?;
    for k in map.keys() {
        if !known.contains(&k.as_str()) {
            let hint = crate::syntax::suggest::suggest(k, known.iter().copied())
                .map(|s| format!("; did you mean `{s}`?"))
                .unwrap_or_default();
            return Err(format!(
                "{what} has an unknown key `{k}` (known: {}){hint}",
                known.join(", ")
            ));
        }
    }
    Ok(map)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rebalance_bodies_read_as_storms() {
        let r =
            rebalance_options(r#"{"rebalanceOptions":{"numWorkers":3,"executors":{"count":2}}}"#)
                .expect("Storm's sample body");
        assert_eq!(r.workers, Some(3));
        assert_eq!(r.executors.get("count"), Some(&2));
        assert_eq!(rebalance_options(""), Ok(Rebalance::default()));
        let e = rebalance_options(r#"{"rebalanceOptions":{"numWorker":3}}"#).expect_err("typo");
        assert!(e.contains("did you mean `numWorkers`"), "{e}");
        assert!(rebalance_options("{").is_err());
        assert!(rebalance_options(r#"{"rebalanceOptions":{"numWorkers":-1}}"#).is_err());
    }
    use crate::ui::TaskView;

    fn topo(exec_ns: u64, uptime: Duration) -> TopologyView {
        TopologyView {
            id: "t-1".into(),
            name: "t".into(),
            status: "ACTIVE".into(),
            uptime,
            workers: 1,
            msg_timeout_secs: 30,
            debug: false,
            configuration: Default::default(),
            components: vec![ComponentView {
                id: "b".into(),
                executors: 2,
                tasks: vec![TaskView {
                    execute_ns: exec_ns,
                    ..Default::default()
                }],
                ..Default::default()
            }],
        }
    }

    #[test]
    fn cluster_workers_and_errors_link_their_logs_and_a_local_runs_do_not() {
        let mut t = topo(0, Duration::from_secs(10));
        let c = &mut t.components[0];
        c.tasks[0].worker = "h:6700".into();
        c.errors.push(super::super::ErrorView {
            error: "boom".into(),
            time_secs: 1,
            worker: "h:6700".into(),
        });
        let local = t.clone();
        t.components[0].tasks[0].supervisor = "sup-1".into();
        let link = "/api/v1/log?file=t-1%2F6700%2Fworker.log";
        let page = |t: &TopologyView| {
            let mut w = CapacityWindow::default();
            component(
                (t, t),
                &t.components[0],
                ":all-time",
                &mut w,
                Instant::now(),
            )
        };
        assert_eq!(workers(&t)[0]["workerLogLink"], link);
        assert_eq!(page(&t)["componentErrors"][0]["errorWorkerLogLink"], link);
        assert_eq!(workers(&local)[0]["workerLogLink"], "");
        assert_eq!(page(&local)["componentErrors"][0]["errorWorkerLogLink"], "");
    }

    #[test]
    fn capacity_is_over_the_time_since_an_earlier_request() {
        let mut w = CapacityWindow::default();
        let t0 = Instant::now();
        // First look: over the uptime (10 s of two executors, 5 s busy).
        let first = topo(5_000_000_000, Duration::from_secs(10));
        let c = &first.components[0];
        assert!((w.capacity(&first, c, t0) - 0.25).abs() < 1e-9);
        // Two seconds later 4 s more execute time on two executors: fully busy since.
        let later = topo(9_000_000_000, Duration::from_secs(12));
        let c = &later.components[0];
        let cap = w.capacity(&later, c, t0 + Duration::from_secs(2));
        assert!((cap - 1.0).abs() < 1e-9, "{cap}");
    }
}
