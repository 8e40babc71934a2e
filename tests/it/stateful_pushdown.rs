//! With exactly-once state a spout keeps a thread of its own (nothing is chained onto it), yet
//! a `filter` after a reader of fields is still evaluated where the lines are read, and an
//! `aggregate` that alone receives them is still folded there, its chunks applied in the
//! checkpoint rounds they belong to: killed mid-way and resumed, the totals are the ones
//! counted here, and a run gives what a run one line at a time gives.

use super::checkpoints::{kill_fed_slowly, kill_fed_slowly_to};
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

/// `topology` with state, fed `text` slowly and killed five times after 2 to 6 commits, then
/// run to the end on the same state dir: its output, after checking that it resumed and that
/// its spout left the note `done_ahead` (what it did where it read the lines).
fn killed_and_resumed(topology: &str, text: &[u8], done_ahead: &str) -> String {
    let conf = tempfile::tempdir().expect("tempdir");
    let args = stateful_args(topology, &conf.path().join("state"));
    for commits in [2, 3, 4, 5, 6] {
        kill_fed_slowly(conf.path(), &args, commits, text);
    }
    let (rows, stderr) = run_to_end(conf.path(), &args, text);
    assert!(
        stderr.contains("resuming `resumable` from checkpoint"),
        "{stderr}"
    );
    assert!(
        stderr.contains(done_ahead),
        "nothing done where the lines were read: {stderr}"
    );
    rows
}

/// Killed five times after a few commits, fed slowly so that it is still reading then, and
/// resumed: the counts are the ones counted here, and the last run had the filter evaluated
/// where its lines were read.
#[test]
fn a_filter_evaluated_where_lines_are_read_with_state_resumes_with_exact_counts() {
    let (text, kept, _) = event_lines(3_000_000);
    let note = "rejected by the filter after it where they were read";
    let rows = killed_and_resumed(FILTERED, &text, note);
    assert_eq!(parse_counts(rows.as_bytes()), kept);
}

/// The same for an aggregate folded where its lines are read: each chunk saved in the wrong
/// round would be counted twice or lost by one of the kills.
#[test]
fn an_aggregate_folded_where_lines_are_read_with_state_resumes_with_exact_totals() {
    let (text, _, totals) = event_lines(3_000_000);
    let rows = killed_and_resumed(AGGREGATED, &text, "folded where they were read");
    assert_eq!(parse_totals(&rows), totals);
}

/// A run with state gives, row for row, what a run without state gives one line at a time
/// (partial aggregation and chaining off), twice over: the filtered count, and on lines out
/// of order by up to half a second with every 997th 20 s behind, 1-second tumbling windows,
/// 3-second windows sliding every second with a lag, and a group-by's first and last. A chunk
/// folded where it was read must be applied after the lines before it (the first chunk is
/// never folded): ahead of them, it moved the watermark past their windows.
#[test]
fn with_state_a_pushed_filter_and_folded_windows_give_what_one_line_at_a_time_gives() {
    let (text, kept, _) = event_lines(400_000);
    let timed = with_times(&event_lines(4_000_000).0);
    let fields = "stdin(format=json, fields=[ts, endpoint, latency_ms])";
    let tumbling = format!(
        "{fields} | aggregate(by=[endpoint], window={{tumbling: 1s}}, time=ts, \
         ops=[count, sum(latency_ms), max(latency_ms)]) | stdout"
    );
    let sliding = format!(
        "{fields} | aggregate(by=[endpoint], window={{sliding: 3s, every: 1s}}, time=ts, \
         lag=200ms, ops=[count, avg(latency_ms), last(latency_ms)]) | stdout"
    );
    let ends = format!(
        "{fields} | aggregate(by=[endpoint], ops=[count, first(latency_ms), last(latency_ms)]) \
         | stdout"
    );
    let jobs = [
        (FILTERED, &text),
        (tumbling.as_str(), &timed),
        (sliding.as_str(), &timed),
        (ends.as_str(), &timed),
    ];
    for (topology, input) in jobs {
        let conf = tempfile::tempdir().expect("tempdir");
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
        assert!(!plain_err.contains("where they were read"), "{plain_err}");
        assert!(plain.lines().count() > 3, "{plain}");
        for attempt in 0..2 {
            let dir = conf.path().join(format!("state-{attempt}"));
            let args = stateful_args(topology, &dir);
            let (with_state, stderr) = run_to_end(conf.path(), &args, input);
            assert_eq!(with_state, plain, "{topology}, attempt {attempt}");
            assert_eq!(late_note(&stderr), late_note(&plain_err), "{topology}");
            let pushed = stderr.contains("rejected by the filter after it where they were read")
                || stderr.contains("folded where they were read");
            assert!(pushed, "{topology}: nothing done where read: {stderr}");
        }
    }
    let conf = tempfile::tempdir().expect("tempdir");
    let args = stateful_args(FILTERED, &conf.path().join("state"));
    let (rows, _) = run_to_end(conf.path(), &args, &text);
    assert_eq!(parse_counts(rows.as_bytes()), kept);
}

/// The aggregate's warning of lines later than their windows, from its count on.
fn late_note(stderr: &str) -> Option<String> {
    stderr
        .lines()
        .find(|l| l.contains("came later than their windows"))
        .and_then(|l| l.split_once("aggregate: "))
        .map(|(_, note)| note.to_string())
}

/// `text`'s lines each given an event time, first among its keys: 1 ms apart from 08:00,
/// moved by up to half a second either way, every 997th line 20 s behind.
fn with_times(text: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len() * 2);
    for (i, line) in text.split(|&b| b == b'\n').enumerate() {
        let Some(rest) = line.strip_prefix(b"{") else {
            continue;
        };
        let mut ms = 8 * 3_600_000 + i as i64 + ((i * 7919) % 1000) as i64 - 500;
        if i % 997 == 0 {
            ms -= 20_000;
        }
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

/// Windows by event time with state, folded where the lines are read, killed after a few
/// commits three times and resumed: every window row any run printed is the row a run
/// without state prints (a resume may print again what a killed run printed after its last
/// commit, never another value), none is missing, and the late lines left out over all the
/// runs are the ones a run without state leaves out.
#[test]
fn folded_windows_with_state_killed_and_resumed_print_the_rows_of_a_run_without_state() {
    let conf = tempfile::tempdir().expect("tempdir");
    let timed = with_times(&event_lines(3_000_000).0);
    let topology = "name resumable
lines = stdin(format=json, fields=[ts, endpoint, latency_ms])
  | aggregate(by=[endpoint], window={tumbling: 1s}, time=ts, ops=[count, sum(latency_ms)])
  | stdout";
    let plain_args: Vec<String> = ["run", "-e", topology].map(String::from).to_vec();
    let (plain, plain_err) = run_to_end(conf.path(), &plain_args, &timed);
    let args = stateful_args(topology, &conf.path().join("state"));
    let mut printed: Vec<String> = Vec::new();
    let mut late = 0;
    for commits in [2, 4, 6] {
        let out = conf.path().join(format!("out-{commits}"));
        kill_fed_slowly_to(conf.path(), &args, commits, &timed, &out);
        printed.extend(
            std::fs::read_to_string(&out)
                .expect("the killed run's output")
                .lines()
                .map(String::from),
        );
    }
    let (last, stderr) = run_to_end(conf.path(), &args, &timed);
    assert!(
        stderr.contains("resuming `resumable` from checkpoint"),
        "{stderr}"
    );
    assert!(stderr.contains("folded where they were read"), "{stderr}");
    printed.extend(last.lines().map(String::from));
    let all: std::collections::BTreeSet<String> = printed.into_iter().collect();
    let expected: std::collections::BTreeSet<String> = plain.lines().map(String::from).collect();
    assert_eq!(all, expected);
    // The last run's note counts the late lines of this run and of those before it.
    if let Some(note) = late_note(&stderr) {
        let n = |s: &str| {
            s.split_whitespace()
                .next()
                .and_then(|w| w.parse::<u64>().ok())
        };
        late += n(&note).unwrap_or(0);
        late += note
            .split_once(" (")
            .and_then(|(_, more)| n(more))
            .unwrap_or(0);
    }
    let plain_late = late_note(&plain_err)
        .and_then(|n| n.split_whitespace().next()?.parse::<u64>().ok())
        .expect("the run without state left late lines out");
    assert_eq!(late, plain_late, "{stderr}");
}
