//! Storm's UI REST API as Storm's users drive it: the documented rebalance body and form
//! posts without a Content-Type, the stats windows, a live complete latency, the topology's
//! configuration (secrets left out), and the endpoints Storm 2.x has (nimbus, history,
//! supervisor, metrics, logconfig).

use serde_json::Value;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(60);

const TOPOLOGY: &str = "\
name: resty
config:
  topology.workers: 2
  db.password: hunter2
spouts:
  - id: words
    type: generate
    args: { rate: 200, values: [[apple], [pear], [plum]] }
bolts:
  - id: count
    type: count
    args: { fields: [word] }
    parallelism: 2
  - id: sink
    type: discard
streams:
  - { from: words, to: count, grouping: { type: fields, args: [word] } }
  - { from: count, to: sink, grouping: shuffle }
";

use crate::support::Served as Run;

fn start(extra: &[&str]) -> Run {
    crate::ui::start_ui_run_of(TOPOLOGY, extra)
}

use crate::rebalance::{get, http};

fn eventually<T>(what: &str, f: impl FnMut() -> Option<T>) -> T {
    crate::support::poll_until(what, WAIT, Duration::from_millis(200), f)
}

/// Storm's documented rebalance body (`callback`, `count`, counts as strings) and a form post,
/// both without a Content-Type, as operators' `curl -X POST` scripts send them.
#[test]
fn storms_rebalance_body_and_form_posts_are_accepted() {
    let run = start(&[]);
    let a = run.addr.as_str();
    let path = "/api/v1/topology/resty/rebalance/0";
    let body = r#"{"rebalanceOptions": {"numWorkers": 1, "executors": {"count": "1"}}, "callback": "foo", "count": "1"}"#;
    let (status, v) = http(a, "POST", path, &[], body);
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["topologyOperation"], "rebalance");
    eventually("one worker after the rebalance", || {
        let t = get(a, "/api/v1/topology/resty");
        (t["workersTotal"] == 1 && t["status"] == "ACTIVE").then_some(())
    });
    let form = "rebalanceOptions=%7B%22numWorkers%22%3A2%7D&callback=foo";
    let (status, v) = http(
        a,
        "POST",
        path,
        &["Content-Type: application/x-www-form-urlencoded"],
        form,
    );
    assert_eq!(status, 200, "{v}");
    eventually("two workers after the form post", || {
        let t = get(a, "/api/v1/topology/resty");
        (t["workersTotal"] == 2 && t["status"] == "ACTIVE").then_some(())
    });
    let (status, v) = http(
        a,
        "POST",
        path,
        &["Content-Type: application/x-www-form-urlencoded"],
        "numWorker=2",
    );
    assert_eq!(status, 400, "{v}");
    assert!(
        v["errorMessage"]
            .as_str()
            .is_some_and(|e| e.contains("did you mean `numWorkers`")),
        "{v}"
    );
}

/// The topology page: its configuration without secrets, Storm's four windows with
/// `?window=`, a complete latency measured while it runs, and what the version is.
#[test]
fn the_topology_page_has_configuration_windows_and_a_live_complete_latency() {
    let run = start(&["-c", "ui.token=s3cret"]);
    let a = run.addr.as_str();
    let t = get(a, "/api/v1/topology/resty");
    let conf = t["configuration"].as_object().expect("configuration");
    assert_eq!(conf.get("topology.workers"), Some(&Value::from(2)), "{t}");
    for secret in ["ui.token", "db.password", "storm.cluster.secret"] {
        assert!(!conf.contains_key(secret), "{secret} shown: {t}");
    }
    let windows: Vec<&str> = t["topologyStats"]
        .as_array()
        .expect("topologyStats")
        .iter()
        .filter_map(|s| s["window"].as_str())
        .collect();
    assert_eq!(windows, ["600", "10800", "86400", ":all-time"]);
    let t = get(a, "/api/v1/topology/resty?window=600");
    assert_eq!(
        (t["window"].as_str(), t["windowHint"].as_str()),
        (Some("600"), Some("10m 0s"))
    );
    let (status, v) = http(a, "GET", "/api/v1/topology/resty?window=60", &[], "");
    assert_eq!(status, 400, "{v}");
    let c = get(a, "/api/v1/topology/resty/component/words?window=10800");
    assert_eq!(c["window"], "10800", "{c}");
    eventually("a measured complete latency", || {
        let t = get(a, "/api/v1/topology/resty");
        let spout = t["spouts"][0]["completeLatency"]
            .as_str()?
            .parse::<f64>()
            .ok()?;
        let all = t["topologyStats"][3]["completeLatency"]
            .as_str()?
            .parse::<f64>()
            .ok()?;
        (spout > 0.0 && all > 0.0).then_some(())
    });
    let version = get(a, "/api/v1/cluster/summary")["stormVersion"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        version.starts_with("storm-rs ") && version.contains("Storm 2.x UI REST API"),
        "{version}"
    );
}

/// Storm 2.x's other endpoints answer in its shapes.
#[test]
fn nimbus_history_supervisor_metrics_and_logconfig_endpoints_answer() {
    let run = start(&[]);
    let a = run.addr.as_str();
    let nimbuses = get(a, "/api/v1/nimbus/summary");
    assert!(nimbuses["nimbuses"].is_array(), "{nimbuses}");
    let history = get(a, "/api/v1/history/summary");
    let id = get(a, "/api/v1/topology/summary")["topologies"][0]["id"]
        .as_str()
        .expect("an id")
        .to_string();
    assert_eq!(history["topo-history"][0].as_str(), Some(id.as_str()));
    let (status, _) = http(a, "GET", "/api/v1/supervisor", &[], "");
    assert_eq!(status, 400);
    let sup = &get(a, "/api/v1/supervisor/summary")["supervisors"][0];
    let host = sup["host"].as_str().expect("a host").to_string();
    let one = get(a, &format!("/api/v1/supervisor?host={host}"));
    assert_eq!(
        one["supervisors"].as_array().map(Vec::len),
        Some(1),
        "{one}"
    );
    assert!(one["workers"].is_array(), "{one}");

    let m = eventually("metrics with emits", || {
        let m = get(a, "/api/v1/topology/resty/metrics");
        (m["spouts"][0]["emitted"][0]["value"].as_u64()? > 0).then_some(m)
    });
    assert_eq!(m["spouts"][0]["id"], "words", "{m}");
    assert_eq!(m["window"], ":all-time");
    let bolts: Vec<&str> = m["bolts"]
        .as_array()
        .expect("bolts")
        .iter()
        .filter_map(|b| b["id"].as_str())
        .collect();
    assert_eq!(bolts, ["count", "sink"], "{m}");
    let only = get(a, "/api/v1/topology/resty/metrics?component_id=count");
    assert_eq!(only["spouts"].as_array().map(Vec::len), Some(0), "{only}");

    let path = "/api/v1/topology/resty/logconfig";
    assert_eq!(get(a, path)["namedLoggerLevels"], serde_json::json!({}));
    let body = r#"{"namedLoggerLevels": {"ROOT": {"target_level": "debug", "timeout": 30}}}"#;
    let (status, v) = http(a, "POST", path, &[], body);
    assert_eq!(status, 200, "{v}");
    let got = get(a, path);
    assert_eq!(
        got["namedLoggerLevels"]["ROOT"]["target_level"], "DEBUG",
        "{got}"
    );
    assert_eq!(got["namedLoggerLevels"]["ROOT"]["timeout"], 30, "{got}");
    assert_eq!(
        got["applied"], true,
        "a local run changes its log filter: {got}"
    );
    let bad = r#"{"namedLoggerLevels": {"ROOT": {"target_level": "LOUD"}}}"#;
    assert_eq!(http(a, "POST", path, &[], bad).0, 400);
    let clear = r#"{"namedLoggerLevels": {"ROOT": {}}}"#;
    assert_eq!(http(a, "POST", path, &[], clear).0, 200);
    assert_eq!(get(a, path)["namedLoggerLevels"], serde_json::json!({}));
}
