//! What a multilang child is told about where it runs: the handshake's `conf` (the topology
//! configuration with Storm's `topology.name` and `storm.id`, never a secret), its `context`
//! map, shaped as Storm's `TopologyContext.toJSONString` sends it (every task's component, this
//! task and component, its output streams, Storm's system streams among them, and their fields
//! and targets, and its input sources with their groupings and fields), and the environment
//! variables `topology.environment` asks for.

use crate::components::TaskContext;
use crate::config::Config;
use crate::model::plan::{SYSTEM_ID, SYSTEM_TASK};
use crate::model::Grouping;
use serde_json::{json, Map, Value};
use std::sync::OnceLock;

/// The environment variable that may carry the cluster secret: never passed on to a child.
pub(crate) const SECRET_ENV: &str = "STORM_CLUSTER_SECRET";

/// Keys never given to user code whatever `storm.secret.keys` says: the UI's token (it allows
/// kill and rebalance) and the cluster secret.
const ALWAYS_SECRET: &[&str] = &["ui.token", "storm.cluster.secret"];

/// Configuration keys that hold secrets: those above, those `storm.secret.keys` lists (and
/// that list itself), and any `*.secret` or `*.password`. They are never given to user code.
pub(crate) fn is_secret_key(key: &str, config: &Config) -> bool {
    let listed = config
        .get("storm.secret.keys")
        .and_then(Value::as_array)
        .is_some_and(|keys| keys.iter().any(|k| k.as_str() == Some(key)));
    listed
        || key == "storm.secret.keys"
        || ALWAYS_SECRET.contains(&key)
        || key.ends_with(".secret")
        || key.ends_with(".password")
}

/// The handshake's `conf`: every configuration key but the secrets, plus what Storm's worker
/// adds to the topology configuration: `topology.name` and `storm.id`, and the component's
/// `tick:` as `topology.tick.tuple.freq.secs`; `storm.zookeeper.servers` and `nimbus.seeds`
/// are lists (empty when unset), as Storm's are.
pub(crate) fn handshake_conf(ctx: &TaskContext) -> Value {
    let mut conf: Map<String, Value> = ctx
        .config
        .entries
        .iter()
        .filter(|(k, _)| !is_secret_key(k, &ctx.config))
        .map(|(k, e)| (k.clone(), e.value.clone()))
        .collect();
    conf.insert(
        "topology.name".into(),
        Value::from(ctx.topology.name.as_str()),
    );
    conf.insert("storm.id".into(), Value::from(storm_id(ctx)));
    // Lists in Storm's conf: an unset one is an empty list to a child, never null.
    for key in ["storm.zookeeper.servers", "nimbus.seeds"] {
        if conf.get(key).is_none_or(Value::is_null) {
            conf.insert(key.into(), Value::Array(Vec::new()));
        }
    }
    // A component's own `tick:` is its Storm component config's tick frequency.
    if let Some(tick) = ctx.spec().and_then(|c| c.tick) {
        let secs = tick.as_secs_f64();
        let value = if secs.fract() == 0.0 {
            Value::from(tick.as_secs())
        } else {
            Value::from(secs)
        };
        conf.insert("topology.tick.tuple.freq.secs".into(), value);
    }
    Value::Object(conf)
}

/// The topology id: `storm.id` when the configuration has one, else, as Storm names a
/// topology it launches, `NAME-1-SECONDS`, the seconds being when this process first asked
/// (so every task of a local run tells the same id).
fn storm_id(ctx: &TaskContext) -> String {
    if let Some(id) = ctx.config.get("storm.id").and_then(|v| v.as_str()) {
        return id.to_string();
    }
    static LAUNCH: OnceLock<u64> = OnceLock::new();
    let secs = LAUNCH.get_or_init(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0)
    });
    format!("{}-1-{secs}", ctx.topology.name)
}

/// The variables `topology.environment` (Storm's key: a map of name to value) sets in every
/// child's environment, as Storm's `ShellProcess` does. Values that are not strings are
/// written as JSON (`8`, `true`); the cluster secret's variable is never set this way.
pub(crate) fn child_environment(config: &Config) -> Result<Vec<(String, String)>, String> {
    const KEY: &str = "topology.environment";
    let Some(value) = config.get(KEY) else {
        return Ok(Vec::new());
    };
    crate::config::rules::check_value(KEY, value).map_err(|e| format!("`{KEY}` {e}"))?;
    let vars = value
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(name, _)| name.as_str() != SECRET_ENV)
        .map(|(name, v)| {
            let text = match v {
                Value::String(s) => s.clone(),
                Value::Null => String::new(),
                other => other.to_string(),
            };
            (name.clone(), text)
        })
        .collect();
    Ok(vars)
}

/// Storm's system streams on a user component (`StormCommon.addAcker`, `addMetricStreams`,
/// `addSystemStreams`, `addEventLogger`), with their fields: bolts ack and fail through the
/// acker, spouts start trees; every component has the metrics and system streams, and the
/// event-logger stream unless `topology.eventlogger.executors` is 0.
fn system_streams(is_spout: bool, config: &Config) -> Vec<(&'static str, &'static [&'static str])> {
    let mut streams: Vec<(&'static str, &'static [&'static str])> = if is_spout {
        vec![("__ack_init", &["id", "init-val", "spout-task"][..])]
    } else {
        vec![
            ("__ack_ack", &["id", "ack-val"][..]),
            ("__ack_fail", &["id"][..]),
            ("__ack_reset_timeout", &["id"][..]),
        ]
    };
    streams.push(("__metrics", &["task-info", "data-points"][..]));
    streams.push(("__system", &["event"][..]));
    if config
        .get_u64("topology.eventlogger.executors")
        .is_none_or(|n| n > 0)
    {
        streams.push((
            "__eventlog",
            &["component-id", "message-id", "ts", "values"][..],
        ));
    }
    streams
}

/// Storm's `groupingToJSONableMap`: the Thrift union's field name upper-cased as `type`, plus
/// `fields` for fields groupings. Storm models a global grouping as a fields grouping on no
/// fields, and a partial-key grouping as a custom serialized one.
fn grouping_json(g: &Grouping) -> Value {
    match g {
        Grouping::Shuffle => json!({ "type": "SHUFFLE" }),
        Grouping::Fields(f) => json!({ "type": "FIELDS", "fields": f }),
        Grouping::Global => json!({ "type": "FIELDS", "fields": [] }),
        Grouping::All => json!({ "type": "ALL" }),
        Grouping::None => json!({ "type": "NONE" }),
        Grouping::Direct => json!({ "type": "DIRECT" }),
        Grouping::LocalOrShuffle => json!({ "type": "LOCAL_OR_SHUFFLE" }),
        Grouping::PartialKey(f) => json!({ "type": "CUSTOM_SERIALIZED", "fields": f }),
    }
}

/// The `context` object of the handshake for the task `ctx` describes.
pub fn context_json(ctx: &TaskContext) -> Value {
    let mut tasks = Map::new();
    // Storm's task->component includes the system task (-1 → __system), the source of ticks.
    tasks.insert("-1".to_string(), Value::from(SYSTEM_ID));
    for (task, component) in ctx.plan.task_to_component() {
        if task != SYSTEM_TASK {
            tasks.insert(task.to_string(), Value::from(component));
        }
    }

    let outputs = ctx.spec().map(|c| c.outputs.clone()).unwrap_or_default();
    let is_spout = ctx.spec().is_some_and(|c| c.is_spout());
    let mut streams: Vec<&str> = outputs.keys().map(String::as_str).collect();
    let mut output_fields: Map<String, Value> =
        outputs.iter().map(|(s, f)| (s.clone(), json!(f))).collect();
    for (stream, fields) in system_streams(is_spout, &ctx.config) {
        if !outputs.contains_key(stream) {
            streams.push(stream);
            output_fields.insert(stream.to_string(), json!(fields));
        }
    }

    let mut targets: Map<String, Value> = Map::new();
    for s in ctx.topology.outputs_of(&ctx.component) {
        let per_stream = targets
            .entry(s.stream.clone())
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(m) = per_stream {
            m.insert(s.to.clone(), grouping_json(&s.grouping));
        }
    }

    let mut source_grouping: Map<String, Value> = Map::new();
    let mut source_fields: Map<String, Value> = Map::new();
    for s in ctx.topology.inputs_of(&ctx.component) {
        if let Value::Object(m) = source_grouping
            .entry(s.from.clone())
            .or_insert_with(|| Value::Object(Map::new()))
        {
            m.insert(s.stream.clone(), grouping_json(&s.grouping));
        }
        let fields = ctx
            .topology
            .component(&s.from)
            .and_then(|c| c.output_fields(&s.stream))
            .map(|f| json!(f))
            .unwrap_or_else(|| json!([]));
        if let Value::Object(m) = source_fields
            .entry(s.from.clone())
            .or_insert_with(|| Value::Object(Map::new()))
        {
            m.insert(s.stream.clone(), fields);
        }
    }

    json!({
        "task->component": tasks,
        "taskid": ctx.task_id,
        "componentid": ctx.component,
        "streams": streams,
        "stream->outputfields": output_fields,
        "stream->target->grouping": targets,
        "source->stream->grouping": source_grouping,
        "source->stream->fields": source_fields,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groupings_use_storm_type_names() {
        assert_eq!(
            grouping_json(&Grouping::Fields(vec!["word".into()])),
            json!({"type": "FIELDS", "fields": ["word"]})
        );
        assert_eq!(
            grouping_json(&Grouping::Global),
            json!({"type": "FIELDS", "fields": []})
        );
        assert_eq!(
            grouping_json(&Grouping::LocalOrShuffle),
            json!({"type": "LOCAL_OR_SHUFFLE"})
        );
    }
}
