//! The arguments both roles share: `brokers`, the librdkafka `options` passed through, and the
//! bounded wait for the cluster at start.

use serde_json::Value as Json;
use std::time::Duration;

/// How long the start waits for the brokers to answer (and a topic to be known).
pub(crate) const START_TIMEOUT: Duration = Duration::from_secs(10);

type Args = serde_json::Map<String, Json>;

/// `brokers` as librdkafka's `bootstrap.servers`: a list of `host:port`, or one comma string.
pub(crate) fn brokers(args: &Args) -> Result<String, String> {
    let list: Vec<String> = match args.get("brokers") {
        None => return Err("needs `brokers` (e.g. `brokers: [localhost:9092]`)".into()),
        Some(Json::String(s)) => s.split(',').map(|b| b.trim().to_string()).collect(),
        Some(Json::Array(items)) => items
            .iter()
            .map(|i| match i {
                Json::String(s) => Ok(s.trim().to_string()),
                other => Err(format!("`brokers` holds {other}, not a `host:port`")),
            })
            .collect::<Result<_, _>>()?,
        Some(other) => return Err(format!("`brokers` must be a list or a string, not {other}")),
    };
    if list.is_empty() || list.iter().any(String::is_empty) {
        return Err("`brokers` has an empty entry".into());
    }
    Ok(list.join(","))
}

/// `options`: librdkafka properties given as they are (`{"session.timeout.ms": 6000}`).
pub(crate) fn options(args: &Args) -> Result<Vec<(String, String)>, String> {
    let Some(map) = args.get("options") else {
        return Ok(Vec::new());
    };
    let Json::Object(map) = map else {
        return Err("`options` must be a map of librdkafka properties".into());
    };
    map.iter()
        .map(|(k, v)| match v {
            Json::String(s) => Ok((k.clone(), s.clone())),
            Json::Number(n) => Ok((k.clone(), n.to_string())),
            Json::Bool(b) => Ok((k.clone(), b.to_string())),
            other => Err(format!(
                "`options.{k}` must be a string, number or bool, not {other}"
            )),
        })
        .collect()
}

/// A client configuration for `brokers` with `options` over the given defaults.
pub(crate) fn client_config(
    args: &Args,
    defaults: &[(&str, &str)],
) -> Result<rdkafka::ClientConfig, String> {
    let mut config = rdkafka::ClientConfig::new();
    config.set("bootstrap.servers", brokers(args)?);
    for (k, v) in defaults {
        config.set(*k, *v);
    }
    for (k, v) in options(args)? {
        config.set(k, v);
    }
    // librdkafka's own log lines go through `tracing` at their level.
    config.set_log_level(rdkafka::config::RDKafkaLogLevel::Warning);
    Ok(config)
}

/// A string-or-list argument as a list (`topics`).
pub(crate) fn strings(args: &Args, key: &str) -> Result<Vec<String>, String> {
    match args.get(key) {
        None => Ok(Vec::new()),
        Some(Json::String(s)) => Ok(s.split(',').map(|t| t.trim().to_string()).collect()),
        Some(Json::Array(items)) => items
            .iter()
            .map(|i| {
                i.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| format!("`{key}` must be a list of names"))
            })
            .collect(),
        Some(_) => Err(format!("`{key}` must be a list of names")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(j: Json) -> Args {
        j.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn brokers_are_a_list_or_a_comma_string() {
        let list = args(serde_json::json!({"brokers": ["a:1", "b:2"]}));
        assert_eq!(brokers(&list), Ok("a:1,b:2".into()));
        let text = args(serde_json::json!({"brokers": "a:1, b:2"}));
        assert_eq!(brokers(&text), Ok("a:1,b:2".into()));
        let empty = args(serde_json::json!({"brokers": "a:1,,b"}));
        assert!(brokers(&empty).is_err());
        assert!(brokers(&args(serde_json::json!({}))).is_err());
    }

    #[test]
    fn options_are_passed_as_text() {
        let a = args(serde_json::json!({"options": {"linger.ms": 5, "enable.idempotence": true}}));
        assert_eq!(
            options(&a),
            Ok(vec![
                ("linger.ms".into(), "5".into()),
                ("enable.idempotence".into(), "true".into())
            ])
        );
        let bad = args(serde_json::json!({"options": {"x": [1]}}));
        assert!(options(&bad).is_err());
    }
}
