//! With exactly-once state a spout keeps a thread of its own (nothing is chained onto it), yet
//! a `filter` after a reader of fields is still evaluated where the lines are read, and an
//! `aggregate` that alone receives them is still folded there, its chunks applied in the
//! checkpoint rounds they belong to: killed mid-way and resumed, the totals are the ones
//! counted here, and a run gives what a run one line at a time gives.

use super::checkpoints::kill_fed_slowly;
use super::run::parse_counts;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

/// Per endpoint: lines, the sum and the largest of their latencies.
type Totals = BTreeMap<String, (u64, i64, i64)>;

/// JSON event lines of about `bytes`: a level, a service, a status (a number, null or
/// missing), an endpoint and a whole latency, keys in varying order, every 1009th line cut
/// short (dropped, with a warning). With what a filter on errors of status 500 and up keeps
/// per service, and the totals per endpoint.
fn event_lines(bytes: usize) -> (Vec<u8>, BTreeMap<String, u64>, Totals) {
    let mut text = String::new();
    let (mut kept, mut totals) = (BTreeMap::new(), Totals::new());
    let levels = ["info", "warn", "error", "debug", "error"];
    let endpoints = ["/api/a", "/api/b", "/pay", "/caf\u{e9}"];
    let mut i = 0usize;
    while text.len() < bytes {
        let (level, service) = (levels[i % 5], format!("svc-{}", i % 7));
        let status = [Some(200), Some(503), None, Some(500), Some(499)][(i / 5) % 5];
        let status = status.map_or("null".to_string(), |s| s.to_string());
        let endpoint = endpoints[(i * 31 / 7) % endpoints.len()];
        let latency = ((i * 7919) % 3000) as i64 - 100;
        let shape = i % 3;
        let line = match shape {
            0 => format!(
                r#"{{"level":"{level}","service":"{service}","status":{status},"endpoint":"{endpoint}","latency_ms":{latency}}}"#
            ),
            1 => format!(
                r#"{{"latency_ms":{latency},"endpoint":"{endpoint}","status":{status},"x":[1,2],"service":"{service}","level":"{level}"}}"#
            ),
            _ => format!(
                r#"{{"endpoint":"{endpoint}","service":"{service}","level":"{level}","latency_ms":{latency}}}"#
            ),
        };
        i += 1;
        if i % 1009 == 0 {
            text.push_str(&line[..line.len() / 2]);
            text.push('\n');
            continue;
        }
        text.push_str(&line);
        text.push('\n');
        let status: Option<i64> = match shape {
            // The third shape has no status.
            2 => None,
            _ => status.parse().ok(),
        };
        if level == "error" && status.is_some_and(|s| s >= 500) {
            *kept.entry(service).or_insert(0) += 1;
        }
        let t = totals
            .entry(endpoint.to_string())
            .or_insert((0, 0, i64::MIN));
        *t = (t.0 + 1, t.1 + latency, t.2.max(latency));
    }
    (text.into_bytes(), kept, totals)
}

const FILTERED: &str = r#"name resumable
lines = stdin(format=json, fields=[level, service, status])
  | filter("level == \"error\" and status >= 500")
  | count(service)
  | stdout"#;

const AGGREGATED: &str = "name resumable
lines = stdin(format=json, fields=[endpoint, latency_ms])
  | aggregate(by=[endpoint], ops=[count, sum(latency_ms), max(latency_ms)])
  | stdout";

/// `topology` with its state in `dir`, checkpointing every 50 ms, with few trees in flight.
fn stateful_args(topology: &str, dir: &Path) -> Vec<String> {
    [
        "run",
        "-e",
        topology,
        "--state-dir",
        &dir.display().to_string(),
        "-c",
        "topology.stateful=true",
        "-c",
        "topology.state.checkpoint.interval.ms=50",
        "-c",
        "topology.max.spout.pending=4",
    ]
    .map(String::from)
    .to_vec()
}

/// Run `args` on `text` to the end: its output and standard error, the spout's debug notes
/// in it.
fn run_to_end(conf: &Path, args: &[String], text: &[u8]) -> (String, String) {
    let out = super::run::storm(conf)
        .timeout(Duration::from_secs(240))
        .args(args)
        .env("STORM_LOG", "warn,storm::components::stdin_file=debug")
        .write_stdin(text.to_vec())
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "{stderr}");
    (String::from_utf8(out.stdout).expect("UTF-8"), stderr)
}

/// The aggregate's rows as totals per endpoint.
fn parse_totals(rows: &str) -> Totals {
    rows.lines()
        .map(|l| {
            let cells: Vec<&str> = l.split('\t').collect();
            let [endpoint, count, sum, max] = cells[..] else {
                panic!("not a row of four cells: {l:?}");
            };
            let n = |s: &str| s.parse::<i64>().unwrap_or_else(|_| panic!("{l:?}"));
            let count = u64::try_from(n(count)).expect("a count");
            (endpoint.to_string(), (count, n(sum), n(max)))
        })
        .collect()
}

/// Killed five times after a few commits, fed slowly so that it is still reading then, and
/// resumed: the counts are the ones counted here, and the last run had the filter evaluated
/// where its lines were read.
#[test]
fn a_filter_evaluated_where_lines_are_read_with_state_resumes_with_exact_counts() {
    let conf = tempfile::tempdir().expect("tempdir");
    let (text, kept, _) = event_lines(3_000_000);
    let args = stateful_args(FILTERED, &conf.path().join("state"));
    for commits in [2, 3, 4, 5, 6] {
        kill_fed_slowly(conf.path(), &args, commits, &text);
    }
    let (rows, stderr) = run_to_end(conf.path(), &args, &text);
    assert!(
        stderr.contains("resuming `resumable` from checkpoint"),
        "{stderr}"
    );
    assert!(
        stderr.contains("rejected by the filter after it where they were read"),
        "the spout evaluated no filter: {stderr}"
    );
    assert_eq!(parse_counts(rows.as_bytes()), kept);
}

/// The same for an aggregate folded where its lines are read: each chunk saved in the wrong
/// round would be counted twice or lost by one of the kills.
#[test]
fn an_aggregate_folded_where_lines_are_read_with_state_resumes_with_exact_totals() {
    let conf = tempfile::tempdir().expect("tempdir");
    let (text, _, totals) = event_lines(3_000_000);
    let args = stateful_args(AGGREGATED, &conf.path().join("state"));
    for commits in [2, 3, 4, 5, 6] {
        kill_fed_slowly(conf.path(), &args, commits, &text);
    }
    let (rows, stderr) = run_to_end(conf.path(), &args, &text);
    assert!(
        stderr.contains("resuming `resumable` from checkpoint"),
        "{stderr}"
    );
    assert!(
        stderr.contains("folded where they were read"),
        "the spout folded nothing: {stderr}"
    );
    assert_eq!(parse_totals(&rows), totals);
}

/// A run with state gives, row for row, what a run without state gives one line at a time
/// (partial aggregation off), on windows by event time and on the filtered count; the counts
/// of the filter's tasks and of the count are the same too.
#[test]
fn with_state_a_pushed_filter_and_a_folded_window_give_what_one_line_at_a_time_gives() {
    let (text, kept, _) = event_lines(400_000);
    let window = "stdin(format=json, fields=[ts, endpoint, latency_ms]) \
        | aggregate(by=[endpoint], window={tumbling: 1m}, time=ts, \
          ops=[count, sum(latency_ms), max(latency_ms)]) | stdout";
    let timed = with_times(&text);
    for (topology, input) in [(FILTERED, &text), (window, &timed)] {
        let conf = tempfile::tempdir().expect("tempdir");
        let args = stateful_args(topology, &conf.path().join("state"));
        let (with_state, stderr) = run_to_end(conf.path(), &args, input);
        let one_by_one: Vec<String> = [
            "run",
            "-e",
            topology,
            "-c",
            "topology.partial.aggregation=false",
            "-c",
            "topology.chaining=false",
        ]
        .map(String::from)
        .to_vec();
        let (plain, plain_err) = run_to_end(conf.path(), &one_by_one, input);
        assert_eq!(with_state, plain, "{topology}");
        assert!(with_state.lines().count() > 3, "{with_state}");
        let pushed = stderr.contains("rejected by the filter after it where they were read")
            || stderr.contains("folded where they were read");
        assert!(pushed, "{topology}: nothing done where read: {stderr}");
        assert!(!plain_err.contains("where they were read"), "{plain_err}");
    }
    let conf = tempfile::tempdir().expect("tempdir");
    let args = stateful_args(FILTERED, &conf.path().join("state"));
    let (rows, _) = run_to_end(conf.path(), &args, &text);
    assert_eq!(parse_counts(rows.as_bytes()), kept);
}

/// `text`'s lines each given an event time, 3 ms apart from 08:00 (so a few hundred minutes),
/// put first among its keys.
fn with_times(text: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len() * 2);
    for (i, line) in text.split(|&b| b == b'\n').enumerate() {
        let Some(rest) = line.strip_prefix(b"{") else {
            continue;
        };
        let ms = 8 * 3_600_000 + i as i64 * 3;
        let ts = format!(
            "{{\"ts\":\"2026-11-02T{:02}:{:02}:{:02}.{:03}Z\",",
            ms / 3_600_000,
            ms / 60_000 % 60,
            ms / 1000 % 60,
            ms % 1000
        );
        out.extend_from_slice(ts.as_bytes());
        out.extend_from_slice(rest);
        out.push(b'\n');
    }
    out
}
