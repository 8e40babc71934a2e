//! The rules of the configuration keys: what values each known Storm key accepts. A value that breaks its
//! rule is reported whatever layer it came from; duration keys also accept humantime text.

use super::{duration_of, Config, Origin};
use serde_json::Value;
use std::collections::HashSet;

/// What a key accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rule {
    /// An integer ≥ min; `nullable` allows null (= unset).
    Int {
        min: u64,
        nullable: bool,
    },
    /// Seconds (a number or humantime text) of at least one second.
    Duration {
        nullable: bool,
    },
    Bool,
    /// A power of two ≥ 1 (Storm's ring buffers).
    PowerOfTwo,
    /// An absolute path in the coordination tree.
    AbsolutePath,
    /// A list of TCP ports, 1–65535, without duplicates.
    Ports,
    /// A string, or null.
    OptionalString,
    /// A string.
    String,
    /// A number from 0 to 1 (a sampling rate).
    Fraction,
    /// A TCP port, 1–65535.
    Port,
    /// A TCP port to listen on, 1–65535, or 0: a free one, which the daemon reports.
    ListenPort,
    /// One of a fixed set of strings.
    OneOf(&'static [&'static str]),
    /// Environment variables: a map of names to strings, numbers or booleans, or null.
    Environment,
    /// A list of host names (or `host:port`), or null.
    Hosts,
    /// A list of configuration keys.
    Keys,
    /// `topology.metrics.reporters`: Storm 2.x's list of `{class, …}` maps, or null.
    Reporters,
}

/// The rule of every key that has one.
pub(crate) const RULES: &[(&str, Rule)] = &[
    (
        "topology.workers",
        Rule::Int {
            min: 1,
            nullable: false,
        },
    ),
    (
        "topology.acker.executors",
        Rule::Int {
            min: 0,
            nullable: true,
        },
    ),
    (
        "topology.max.spout.pending",
        Rule::Int {
            min: 1,
            nullable: true,
        },
    ),
    (
        "topology.max.task.parallelism",
        Rule::Int {
            min: 1,
            nullable: true,
        },
    ),
    (
        "topology.message.timeout.secs",
        Rule::Duration { nullable: false },
    ),
    ("topology.enable.message.timeouts", Rule::Bool),
    (
        "topology.tick.tuple.freq.secs",
        Rule::Duration { nullable: true },
    ),
    ("topology.receiver.buffer.size", Rule::PowerOfTwo),
    // A count of batches in the transfer queue (Storm 2.x's default is 1000): no ring buffer.
    (
        "topology.transfer.buffer.size",
        Rule::Int {
            min: 1,
            nullable: false,
        },
    ),
    ("topology.executor.receive.buffer.size", Rule::PowerOfTwo),
    ("topology.executor.send.buffer.size", Rule::PowerOfTwo),
    ("topology.debug", Rule::Bool),
    ("topology.metrics.reporters", Rule::Reporters),
    ("topology.strict", Rule::Bool),
    (
        "topology.record.max.bytes",
        Rule::Int {
            min: 1,
            nullable: false,
        },
    ),
    (
        "topology.shellbolt.max.pending",
        Rule::Int {
            min: 1,
            nullable: false,
        },
    ),
    (
        "topology.subprocess.timeout.secs",
        Rule::Duration { nullable: true },
    ),
    // The multilang protocol is spoken in JSON only: another serializer would be silently
    // ignored, so it is refused.
    (
        "topology.multilang.serializer",
        Rule::OneOf(&["org.apache.storm.multilang.JsonSerializer"]),
    ),
    (
        "topology.sleep.spout.wait.strategy.time.ms",
        Rule::Int {
            min: 0,
            nullable: false,
        },
    ),
    ("topology.stats.sample.rate", Rule::Fraction),
    // No effect here (storm does not compress tuples), but typed as in Storm, so a Flux file
    // that sets it wrongly is rejected as Storm would reject it.
    ("topology.tuple.compression.enable", Rule::Bool),
    ("topology.environment", Rule::Environment),
    // Checkpointed state (stateful bolts, resumable runs).
    ("topology.stateful", Rule::Bool),
    ("topology.chaining", Rule::Bool),
    ("topology.partial.aggregation", Rule::Bool),
    ("topology.state.provider", Rule::OneOf(STATE_PROVIDERS)),
    ("topology.state.dir", Rule::OptionalString),
    ("topology.state.guarantee", Rule::OneOf(STATE_GUARANTEES)),
    (
        "topology.state.checkpoint.interval.ms",
        Rule::Int {
            min: 1,
            nullable: false,
        },
    ),
    // Bytes of keyed state a process may hold (null: half of physical memory; 0: no limit).
    (
        "topology.state.memory.limit",
        Rule::Int {
            min: 0,
            nullable: true,
        },
    ),
    ("storm.zookeeper.root", Rule::AbsolutePath),
    ("storm.zookeeper.servers", Rule::Hosts),
    ("storm.zookeeper.port", Rule::Port),
    (
        "storm.zookeeper.session.timeout",
        Rule::Int {
            min: 1,
            nullable: false,
        },
    ),
    (
        "storm.zookeeper.connection.timeout",
        Rule::Int {
            min: 1,
            nullable: false,
        },
    ),
    ("nimbus.seeds", Rule::Hosts),
    ("storm.cluster.secret", Rule::OptionalString),
    ("storm.secret.keys", Rule::Keys),
    ("supervisor.slots.ports", Rule::Ports),
    (
        "supervisor.worker.timeout.secs",
        Rule::Duration { nullable: false },
    ),
    (
        "supervisor.heartbeat.frequency.secs",
        Rule::Duration { nullable: false },
    ),
    (
        "worker.heartbeat.frequency.secs",
        Rule::Duration { nullable: false },
    ),
    (
        "task.heartbeat.frequency.secs",
        Rule::Duration { nullable: false },
    ),
    (
        "nimbus.task.timeout.secs",
        Rule::Duration { nullable: false },
    ),
    (
        "nimbus.monitor.freq.secs",
        Rule::Duration { nullable: false },
    ),
    ("nimbus.thrift.port", Rule::Port),
    ("storm.log.dir", Rule::OptionalString),
    (
        "worker.log.max.bytes",
        Rule::Int {
            min: 1,
            nullable: false,
        },
    ),
    (
        "worker.log.keep.files",
        Rule::Int {
            min: 0,
            nullable: false,
        },
    ),
    (
        "logviewer.cleanup.age.mins",
        Rule::Int {
            min: 1,
            nullable: false,
        },
    ),
    (
        "logviewer.cleanup.interval.secs",
        Rule::Int {
            min: 1,
            nullable: false,
        },
    ),
    // Nimbus's UI (Storm's `ui.port`); `ui.host` and `ui.token` are ours.
    ("ui.port", Rule::ListenPort),
    ("ui.host", Rule::String),
    ("ui.token", Rule::OptionalString),
];

/// The values of `topology.state.provider`: state in this process only, or in an embedded
/// crash-safe database under `topology.state.dir`.
const STATE_PROVIDERS: &[&str] = &["memory", "embedded"];

/// The values of `topology.state.guarantee`: what a stateful topology promises its state.
/// `exactly_once` refuses spouts that cannot rewind to a checkpoint; `at_least_once` accepts
/// them (their tuples may reach the state again after a failure).
const STATE_GUARANTEES: &[&str] = &["exactly_once", "at_least_once"];

pub(crate) fn rule_of(key: &str) -> Option<Rule> {
    RULES.iter().find(|(k, _)| *k == key).map(|(_, r)| *r)
}

/// A value that breaks its key's rule.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Violation {
    pub(crate) key: String,
    pub(crate) origin: Origin,
    /// What is wrong, without the key (`must be a power of two: 512 or 1024`).
    pub(crate) message: String,
}

/// Check one value against its key's rule (keys without a rule accept anything).
pub(crate) fn check_value(key: &str, value: &Value) -> Result<(), String> {
    let Some(rule) = rule_of(key) else {
        return Ok(());
    };
    match rule {
        Rule::Int { nullable: true, .. }
        | Rule::Duration { nullable: true }
        | Rule::OptionalString
        | Rule::Environment
        | Rule::Hosts
        | Rule::Reporters
            if value.is_null() =>
        {
            Ok(())
        }
        // The CSV folder is checked when the reporters start (it may default under
        // storm.local.dir, known only then).
        Rule::Reporters => super::reporters::parse(Some(value), Some("."))
            .map(|_| ())
            .map_err(|e| format!("{e:#}")),
        Rule::Int { min, .. } => match value.as_i64() {
            Some(n) if n >= 0 && n as u64 >= min => Ok(()),
            Some(n) => Err(format!("must be ≥ {min} (got {n})")),
            None => Err(format!("must be an integer ≥ {min} (got {})", show(value))),
        },
        Rule::Duration { .. } => check_duration(value),
        Rule::Bool => match value {
            Value::Bool(_) => Ok(()),
            _ => Err(format!(
                "must be a boolean, true or false (got {})",
                show(value)
            )),
        },
        Rule::PowerOfTwo => check_power_of_two(value),
        Rule::AbsolutePath => match value.as_str() {
            Some(p) if p.starts_with('/') => Ok(()),
            _ => Err(format!(
                "must be an absolute path like `/storm` (got {})",
                show(value)
            )),
        },
        Rule::OptionalString => match value {
            Value::String(_) => Ok(()),
            _ => Err(format!("must be a string (got {})", show(value))),
        },
        Rule::String => match value {
            Value::String(_) => Ok(()),
            _ => Err(format!("must be a string (got {})", show(value))),
        },
        Rule::Fraction => check_fraction(value),
        Rule::Port => check_port(value),
        Rule::ListenPort if value.as_u64() == Some(0) => Ok(()),
        Rule::ListenPort => {
            check_port(value).map_err(|e| e.replace("1–65535", "1–65535, or 0 for a free one"))
        }
        Rule::OneOf(names) => match value.as_str() {
            Some(s) if names.contains(&s) => Ok(()),
            None => Err(format!(
                "must be a string, one of: {} (got {})",
                names.join(", "),
                show(value)
            )),
            Some(_) => Err(format!(
                "must be one of: {} (got {})",
                names.join(", "),
                show(value)
            )),
        },
        Rule::Ports => check_ports(value),
        Rule::Environment => check_environment(value),
        Rule::Hosts => check_hosts(value),
        Rule::Keys => match value.as_array() {
            Some(keys) if keys.iter().all(Value::is_string) => Ok(()),
            _ => Err(format!(
                "must be a list of configuration keys like `[ui.token, my.api.key]` (got {})",
                show(value)
            )),
        },
    }
}

/// A duration of at least a second.
fn check_duration(value: &Value) -> Result<(), String> {
    match duration_of(value) {
        Some(d) if d.as_secs_f64() >= 1.0 => Ok(()),
        Some(_) => Err(format!("must be at least 1 second (got {})", show(value))),
        None => Err(format!(
            "must be a duration: seconds or humantime like `1m 30s` (got {})",
            show(value)
        )),
    }
}

/// A power of two; the nearest ones named when it is not.
fn check_power_of_two(value: &Value) -> Result<(), String> {
    match value.as_i64() {
        Some(n) if n >= 1 && (n as u64).is_power_of_two() => Ok(()),
        Some(n) if n < 1 => Err(format!("must be a power of two ≥ 1 (got {n})")),
        Some(n) => {
            let n = n as u64;
            let above = n.next_power_of_two();
            Err(format!("must be a power of two: {} or {above}", above / 2))
        }
        None => Err(format!(
            "must be an integer, a power of two (got {})",
            show(value)
        )),
    }
}

/// A number between 0 and 1.
fn check_fraction(value: &Value) -> Result<(), String> {
    match value.as_f64() {
        Some(f) if (0.0..=1.0).contains(&f) => Ok(()),
        Some(_) => Err(format!("must be between 0 and 1 (got {})", show(value))),
        None => Err(format!(
            "must be a number between 0 and 1 (got {})",
            show(value)
        )),
    }
}

/// A TCP port number.
fn check_port(value: &Value) -> Result<(), String> {
    match value.as_u64() {
        Some(1..=65535) => Ok(()),
        _ => Err(format!(
            "must be a port number, 1–65535 (got {})",
            show(value)
        )),
    }
}

fn check_hosts(value: &Value) -> Result<(), String> {
    let hosts = value.as_array().ok_or_else(|| {
        format!(
            "must be a list of host names like `[zk1, zk2]` (got {})",
            show(value)
        )
    })?;
    for h in hosts {
        match h.as_str() {
            Some(s) if !s.trim().is_empty() => {}
            _ => return Err(format!("must list host names as strings (got {})", show(h))),
        }
    }
    Ok(())
}

fn check_environment(value: &Value) -> Result<(), String> {
    let Some(map) = value.as_object() else {
        return Err(format!(
            "must be a map of environment variable names to values (got {})",
            show(value)
        ));
    };
    for (name, v) in map {
        if name.is_empty() || name.contains(['=', '\0']) {
            return Err(format!("names an invalid environment variable \"{name}\""));
        }
        let ok = match v {
            Value::String(s) => !s.contains('\0'),
            Value::Number(_) | Value::Bool(_) | Value::Null => true,
            Value::Array(_) | Value::Object(_) => false,
        };
        if !ok {
            return Err(format!(
                "sets {name} to {}: a value must be a string, a number or a boolean",
                show(v)
            ));
        }
    }
    Ok(())
}

fn check_ports(value: &Value) -> Result<(), String> {
    let Some(list) = value.as_array() else {
        return Err(format!("must be a list of ports (got {})", show(value)));
    };
    let mut seen = HashSet::new();
    for p in list {
        match p.as_u64() {
            Some(n @ 1..=65535) => {
                if !seen.insert(n) {
                    return Err(format!("lists port {n} twice"));
                }
            }
            _ => return Err(format!("ports must be 1–65535 (got {})", show(p))),
        }
    }
    Ok(())
}

fn show(v: &Value) -> String {
    match v {
        Value::String(s) => format!("\"{s}\""),
        other => other.to_string(),
    }
}

/// Every rule broken in an effective configuration.
pub(crate) fn check(config: &Config) -> Vec<Violation> {
    config
        .entries
        .iter()
        .filter_map(|(key, entry)| {
            check_value(key, &entry.value)
                .err()
                .map(|message| Violation {
                    key: key.clone(),
                    origin: entry.origin.clone(),
                    message,
                })
        })
        .collect()
}

/// Rewrite duration keys given as humantime text to whole or fractional seconds, so the
/// runtime and multilang components see Storm's numbers. Run after `check`.
pub(crate) fn normalize(config: &mut Config) {
    for (key, entry) in config.entries.iter_mut() {
        if let Some(Rule::Duration { .. }) = rule_of(key) {
            if let (Value::String(_), Some(d)) = (&entry.value, duration_of(&entry.value)) {
                entry.value = if d.subsec_nanos() == 0 {
                    Value::from(d.as_secs())
                } else {
                    serde_json::Number::from_f64(d.as_secs_f64())
                        .map(Value::Number)
                        .unwrap_or(Value::Null)
                };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn environment_is_a_map_of_scalars() {
        let env = |v: Value| check_value("topology.environment", &v);
        assert!(env(serde_json::json!({"A": "x", "B": 2, "C": true})).is_ok());
        assert!(env(Value::Null).is_ok());
        assert_eq!(
            env(serde_json::json!(["A"])),
            Err("must be a map of environment variable names to values (got [\"A\"])".into())
        );
        assert_eq!(
            env(serde_json::json!({"A=B": "x"})),
            Err("names an invalid environment variable \"A=B\"".into())
        );
        assert_eq!(
            env(serde_json::json!({"A": [1]})),
            Err("sets A to [1]: a value must be a string, a number or a boolean".into())
        );
    }

    #[test]
    fn state_keys_have_their_rules() {
        assert!(check_value("topology.stateful", &json!(true)).is_ok());
        assert_eq!(
            check_value("topology.stateful", &json!("yes")),
            Err("must be a boolean, true or false (got \"yes\")".into())
        );
        assert!(check_value("topology.state.provider", &json!("embedded")).is_ok());
        assert!(check_value("topology.state.provider", &json!("memory")).is_ok());
        assert_eq!(
            check_value("topology.state.provider", &json!("redis")),
            Err("must be one of: memory, embedded (got \"redis\")".into())
        );
        assert!(check_value("topology.state.dir", &Value::Null).is_ok());
        assert!(check_value("topology.state.dir", &json!("/tmp/s")).is_ok());
        assert!(check_value("topology.state.dir", &json!(3)).is_err());
        let interval = |v: Value| check_value("topology.state.checkpoint.interval.ms", &v);
        assert!(interval(json!(1)).is_ok());
        assert_eq!(interval(json!(0)), Err("must be ≥ 1 (got 0)".into()));
        assert!(interval(Value::Null).is_err());
    }

    #[test]
    fn power_of_two_names_the_nearest_values() {
        let err = check_value("topology.executor.receive.buffer.size", &json!(1000));
        assert_eq!(err, Err("must be a power of two: 512 or 1024".to_string()));
        assert!(check_value("topology.executor.receive.buffer.size", &json!(2048)).is_ok());
        // The transfer queue's count of batches is any count, as Storm 2.x's 1000.
        assert!(check_value("topology.transfer.buffer.size", &json!(1000)).is_ok());
        assert!(check_value("topology.transfer.buffer.size", &json!(0)).is_err());
        assert!(check_value("topology.receiver.buffer.size", &json!(0)).is_err());
    }

    #[test]
    fn durations_accept_seconds_and_humantime() {
        assert!(check_value("topology.message.timeout.secs", &json!(90)).is_ok());
        assert!(check_value("topology.message.timeout.secs", &json!("1m 30s")).is_ok());
        assert!(check_value("topology.message.timeout.secs", &json!("soon")).is_err());
        assert!(check_value("topology.message.timeout.secs", &json!(0)).is_err());
        assert!(check_value("topology.tick.tuple.freq.secs", &Value::Null).is_ok());
    }

    #[test]
    fn ranges_paths_and_ports() {
        assert!(check_value("topology.workers", &json!(0)).is_err());
        assert!(check_value("topology.acker.executors", &json!(0)).is_ok());
        assert!(check_value("topology.max.spout.pending", &json!(0)).is_err());
        assert!(check_value("storm.zookeeper.root", &json!("storm")).is_err());
        assert_eq!(
            check_value("supervisor.slots.ports", &json!([6700, 6700])),
            Err("lists port 6700 twice".to_string())
        );
        assert!(check_value("supervisor.slots.ports", &json!([0])).is_err());
        assert!(check_value("some.user.key", &json!({"any": 1})).is_ok());
    }

    #[test]
    fn wrong_types_name_the_expected_type() {
        let cases = [
            ("topology.debug", json!("not-a-boolean"), "a boolean"),
            ("topology.receiver.buffer.size", json!("big"), "an integer"),
            ("topology.workers", json!("two"), "an integer"),
            ("topology.multilang.serializer", json!(5), "a string"),
            ("topology.stats.sample.rate", json!("often"), "a number"),
            ("topology.stats.sample.rate", json!(1.5), "between 0 and 1"),
            ("nimbus.thrift.port", json!(70000), "a port number"),
            ("ui.port", json!("eighty"), "a port number"),
            ("worker.heartbeat.frequency.secs", json!([1]), "a duration"),
            (
                "topology.sleep.spout.wait.strategy.time.ms",
                json!(1.5),
                "an integer",
            ),
        ];
        for (key, value, expected) in cases {
            let err = check_value(key, &value).expect_err(key);
            assert!(err.contains(expected), "{key}: {err}");
        }
        assert!(check_value("topology.stats.sample.rate", &json!(0)).is_ok());
    }

    /// `ui.port` may be 0 (a free port, which nimbus reports); a port others connect to may not.
    #[test]
    fn a_port_to_listen_on_may_be_zero_and_others_may_not() {
        assert!(check_value("ui.port", &json!(0)).is_ok());
        assert_eq!(
            check_value("ui.port", &json!(70000)),
            Err("must be a port number, 1–65535, or 0 for a free one (got 70000)".to_string())
        );
        assert!(check_value("nimbus.thrift.port", &json!(0)).is_err());
        assert!(check_value("storm.zookeeper.port", &json!(0)).is_err());
    }

    #[test]
    fn normalize_turns_humantime_into_seconds() {
        let mut c = Config::default();
        c.set(
            "topology.message.timeout.secs",
            json!("1m 30s"),
            Origin::CommandLine,
        );
        normalize(&mut c);
        assert_eq!(c.get_u64("topology.message.timeout.secs"), Some(90));
    }
}
