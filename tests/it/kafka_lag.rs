//! The kafka spout's lag per partition, as the UI (`/api/v1/topology/:id/lag`, Storm's
//! `TopologySpoutLag`) and `/metrics` show it, against librdkafka's mock cluster: the group's
//! offsets are committed by the Python client, the spout reads on without acking anything (a
//! `chaos` bolt drops every tuple), and the committed offsets, log heads and lags the UI shows
//! equal what the Python client reads (`committed()`, `get_watermark_offsets`), in a local run
//! and a `--processes` run (figures through the workers' heartbeats).

use super::kafka::Mock;
use super::support::{poll_until, read_http_answer};
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(90);

/// One GET to the UI: its status and body.
fn get(addr: &str, path: &str) -> (u16, String) {
    let mut s = std::net::TcpStream::connect(addr).expect("connect to the UI");
    let req = format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n");
    s.write_all(req.as_bytes()).expect("send the request");
    read_http_answer(&mut s)
}

fn get_json(addr: &str, path: &str) -> Value {
    let (status, body) = get(addr, path);
    assert_eq!(status, 200, "GET {path}: {body}");
    serde_json::from_str(&body).expect("JSON")
}

/// Each partition's (low, high) watermarks, read by the Python client.
fn watermarks(mock: &Mock, topic: &str) -> BTreeMap<i32, (i64, i64)> {
    mock.client("watermarks", &[topic], "")
        .lines()
        .map(|l| {
            let f: Vec<i64> = l
                .split('\t')
                .map(|x| x.parse().expect("a number"))
                .collect();
            (f[0] as i32, (f[1], f[2]))
        })
        .collect()
}

/// The lag document Storm's UI would give for spout `in` reading `topic`, from the Python
/// client's committed offsets and watermarks.
fn expected_lag(mock: &Mock, group: &str, topic: &str) -> Value {
    let committed = mock.committed(group, topic);
    let mut partitions = serde_json::Map::new();
    for (p, (low, high)) in watermarks(mock, topic) {
        let c = committed.get(&p).copied().filter(|c| *c >= 0).unwrap_or(-1);
        let from = if c >= 0 { c } else { low };
        partitions.insert(
            p.to_string(),
            serde_json::json!({"topic": topic, "partition": p, "consumerCommittedOffset": c,
                               "logHeadOffset": high, "lag": high - from}),
        );
    }
    serde_json::json!({"in": {"spoutId": "in", "spoutType": "KAFKA",
                              "spoutLagResult": {topic: partitions}}})
}

/// `storm run --ui` of `kafka(topic, group) → chaos(drop everything) → discard`, with `extra`
/// arguments; nothing is acked (the message timeout is long).
fn start(mock: &Mock, (topic, group): (&str, &str), extra: &[&str]) -> super::support::Served {
    let dir = tempfile::tempdir().expect("tempdir");
    let yaml = format!(
        "name: lagging
spouts:
  - id: in
    type: kafka
    parallelism: 2
    args: {{brokers: \"{}\", topics: [{topic}], group: {group}, lag_interval: 0.2s}}
bolts:
  - id: drop
    type: chaos
    args: {{drop: 1.0}}
  - id: out
    type: discard
streams:
  - {{from: in, to: drop}}
  - {{from: drop, to: out}}
",
        mock.brokers
    );
    let file = dir.path().join("lagging.yaml");
    std::fs::write(&file, yaml).expect("writes the topology");
    let mut child = Command::new(assert_cmd::cargo::cargo_bin("storm"))
        .arg("run")
        .arg(&file)
        .args(["--ui", "127.0.0.1:0", "--progress", "never"])
        .args(["-c", "topology.message.timeout.secs=600"])
        .args(extra)
        .env("STORM_CONF_DIR", dir.path())
        .env_remove("STORM_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("storm run starts");
    let addr = super::support::ui_address(&mut child, WAIT);
    super::support::Served {
        child,
        addr,
        _dir: dir,
    }
}

/// Produce `n` records, commit part of each partition with the Python client, run
/// `kafka → chaos(drop everything) → discard` with `extra` arguments, and compare the UI's
/// lag and `/metrics` with the Python client's figures.
fn lag_equals_the_python_clients(extra: &[&str]) {
    let mock = Mock::start();
    let (topic, group) = ("lagging", "glag");
    let records: Vec<String> = (0..400).map(|i| format!("k{}\tv{i}", i % 13)).collect();
    mock.produce(topic, &records);
    let marks = watermarks(&mock, topic);
    assert!(
        marks.len() > 1,
        "the topic has several partitions: {marks:?}"
    );
    // Partition p committed at a share p/8 of its records (the first at its start).
    let commits: String = marks
        .iter()
        .map(|(p, (low, high))| format!("{p}\t{}\n", low + (high - low) * i64::from(*p) / 8))
        .collect();
    mock.client("commit", &[group, topic], &commits);
    let run = start(&mock, (topic, group), extra);
    let id = poll_until("the topology", WAIT, Duration::from_millis(200), || {
        let list = get_json(&run.addr, "/api/v1/topology/summary");
        list["topologies"][0]["id"].as_str().map(String::from)
    });
    let want = expected_lag(&mock, group, topic);
    let path = format!("/api/v1/topology/{id}/lag");
    let deadline = std::time::Instant::now() + WAIT;
    let got = loop {
        let got = get_json(&run.addr, &path);
        if got == want || std::time::Instant::now() > deadline {
            assert_eq!(got, want, "the UI's lag is the Python client's");
            break got;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    // Nothing was acked: the commits are the Python client's still, and every record is lag.
    assert_eq!(want, expected_lag(&mock, group, topic), "no commit moved");
    let (_, metrics) = get(&run.addr, "/metrics");
    for (p, (low, high)) in marks {
        let part = &got["in"]["spoutLagResult"][topic][p.to_string()];
        let lag = part["lag"].as_i64().expect("a lag");
        let from = low + (high - low) * i64::from(p) / 8;
        assert_eq!(lag, high - from, "partition {p}");
        let labels = format!(
            "{{topology=\"lagging\",component=\"in\",topic=\"{topic}\",partition=\"{p}\"}}"
        );
        for (name, value) in [
            ("storm_kafka_lag", lag),
            ("storm_kafka_log_head_offset", high),
            (
                "storm_kafka_committed_offset",
                part["consumerCommittedOffset"].as_i64().expect("an offset"),
            ),
        ] {
            let line = format!("{name}{labels} {value}");
            assert!(
                metrics.lines().any(|l| l == line),
                "no `{line}` in:\n{metrics}"
            );
        }
    }
}

#[test]
fn the_lag_of_a_local_run_equals_what_the_python_client_reads() {
    lag_equals_the_python_clients(&[]);
}

#[test]
fn the_lag_of_a_processes_run_equals_what_the_python_client_reads() {
    lag_equals_the_python_clients(&["--processes", "--workers", "2"]);
}
