//! A `filter` chained right after a `stdin`/`file` spout that reads fields is evaluated where
//! the spout reads its lines, and the lines it rejects are never made tuples: a run gives what
//! Python's `csv` and `json` modules give and what it gives with the filter on a thread of its
//! own (chaining off), and every component counts what it counts then. A spout whose lines also go elsewhere keeps emitting every line.

use super::run::{counted_run, parse_counts};
use super::support::stats_component as component;
use std::collections::BTreeMap;
use std::time::Duration;

const FILTER: &str = r#"level == "error" and status >= 500"#;

/// A CSV file shaped like a real export: a byte-order mark, quoted cells with commas and
/// doubled quotes, empty and decimal statuses, CRLF line ends now and then, and rows with a
/// cell missing (dropped, with a warning). Returns the text and, per service, how many rows
/// the filter keeps.
fn csv_rows(rows: usize) -> (String, BTreeMap<String, u64>) {
    let mut text = String::from("\u{feff}ts,level,service,status,msg\n");
    let mut kept = BTreeMap::new();
    let levels = ["info", "warn", "error", "debug", "error"];
    let statuses = ["200", "404", "500", "503", "", "500.5", "499.9", "502"];
    for i in 0..rows {
        let (level, service) = (levels[i % 5], format!("svc-{}", i % 7));
        let status = statuses[(i / 3) % statuses.len()];
        let msg = match i % 4 {
            0 => "plain".to_string(),
            1 => "\"with, comma\"".to_string(),
            2 => "\"say \"\"hi\"\"\"".to_string(),
            _ => String::new(),
        };
        if i % 997 == 0 {
            text.push_str(&format!("{i},{level},{service}\n"));
            continue;
        }
        let end = if i % 11 == 0 { "\r\n" } else { "\n" };
        text.push_str(&format!("{i},{level},{service},{status},{msg}{end}"));
        let status: Option<f64> = status.parse().ok();
        if level == "error" && status.is_some_and(|s| s >= 500.0) {
            *kept.entry(service).or_insert(0) += 1;
        }
    }
    (text, kept)
}

/// JSON lines: statuses as numbers, null or missing, keys in any order, some lines cut short
/// (dropped, with a warning).
fn json_rows(rows: usize) -> (String, BTreeMap<String, u64>) {
    let mut text = String::new();
    let mut kept = BTreeMap::new();
    let levels = ["info", "warn", "error", "debug", "error"];
    for i in 0..rows {
        let (level, service) = (levels[i % 5], format!("svc-{}", i % 7));
        let status = [Some(200), Some(503), None, Some(500), Some(499)][(i / 5) % 5];
        let line = match (i % 3, status) {
            (0, Some(s)) => format!(r#"{{"level":"{level}","service":"{service}","status":{s}}}"#),
            (1, Some(s)) => {
                format!(r#"{{"status":{s},"x":[1,2],"service":"{service}","level":"{level}"}}"#)
            }
            (_, Some(s)) => {
                format!(r#"{{"service":"{service}","level":"{level}","status":{s},"status":{s}}}"#)
            }
            (_, None) => format!(r#"{{"level":"{level}","service":"{service}","status":null}}"#),
        };
        if i % 1009 == 0 {
            text.push_str(&line[..line.len() / 2]);
            text.push('\n');
            continue;
        }
        text.push_str(&line);
        text.push('\n');
        if level == "error" && status.is_some_and(|s| s >= 500) {
            *kept.entry(service).or_insert(0) += 1;
        }
    }
    (text, kept)
}

/// An oracle sharing no code with storm: Python's own `csv` and `json` modules count, per
/// service, the rows whose level is "error" and whose status is a number of at least 500,
/// passing over the rows storm drops (a cell short, a line cut).
const PYTHON_ORACLE: &str = r#"
import collections, csv, json, sys
path, fmt = sys.argv[1], sys.argv[2]
counts = collections.Counter()
def keep(level, service, status):
    number = isinstance(status, (int, float)) and not isinstance(status, bool)
    if level == "error" and number and status >= 500:
        counts[service] += 1
if fmt == "csv":
    with open(path, newline="", encoding="utf-8-sig") as f:
        for row in csv.DictReader(f):
            if None in row or None in row.values():
                continue
            try:
                status = float(row["status"]) if row["status"] else None
            except ValueError:
                status = row["status"]
            keep(row["level"], row["service"], status)
else:
    for line in open(path, encoding="utf-8"):
        try:
            doc = json.loads(line)
        except ValueError:
            continue
        keep(doc.get("level"), doc.get("service"), doc.get("status"))
for service, n in counts.items():
    print(f"{service}\t{n}")
"#;

/// What [`PYTHON_ORACLE`] counts in `text` read as `format` (`csv` or `json`).
fn python_counts(text: &str, format: &str) -> BTreeMap<String, u64> {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("input");
    std::fs::write(&path, text).expect("written");
    let out = std::process::Command::new("python3")
        .args(["-c", PYTHON_ORACLE])
        .arg(&path)
        .arg(format)
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    parse_counts(&out.stdout)
}

/// Run `topology` (`-e` text, or a file path) on `text` with chaining on or off: its counts
/// and its stats.
fn run(
    topology: &[&str],
    text: &str,
    chaining: bool,
) -> (BTreeMap<String, u64>, serde_json::Value) {
    let chaining = format!("topology.chaining={chaining}");
    let args = [topology, &["-c", chaining.as_str()][..]].concat();
    counted_run(&args, text.as_bytes())
}

/// Run `topology` on `text` with the filter evaluated by the spout (chained) and on its own
/// thread (chaining off): both give `kept` and count alike. The stats of the first.
fn pushed_and_alone(
    topology: &[&str],
    text: &str,
    kept: &BTreeMap<String, u64>,
) -> serde_json::Value {
    let (pushed, pushed_stats) = run(topology, text, true);
    let (alone, alone_stats) = run(topology, text, false);
    assert_eq!(&pushed, kept, "filter run by the spout");
    assert_eq!(&alone, kept, "filter on its own thread");
    assert_eq!(counters(&pushed_stats), counters(&alone_stats));
    pushed_stats
}

/// The counters a run with the filter evaluated by the spout must share with one where the
/// filter runs itself.
fn counters(stats: &serde_json::Value) -> Vec<(String, serde_json::Value)> {
    let mut seen = Vec::new();
    for (id, keys) in [
        (
            "src",
            &["emitted", "transferred", "acked", "failed", "dropped"][..],
        ),
        ("keep", &["executed", "acked", "failed", "emitted"][..]),
        ("count", &["executed", "acked"][..]),
    ] {
        let c = component(stats, id);
        for key in keys {
            seen.push((format!("{id}.{key}"), c[*key].clone()));
        }
    }
    seen
}

fn one_liner(format: &str) -> String {
    format!(
        "src = stdin({format}, fields=[level, service, status]) | keep = filter({FILTER:?}) \
         | count = count(service) | stdout"
    )
}

#[test]
fn a_filter_after_a_csv_reader_gives_and_counts_what_it_does_on_its_own() {
    let (text, kept) = csv_rows(60_000);
    assert_eq!(python_counts(&text, "csv"), kept, "Python's csv module");
    let topology = one_liner("format=csv, header=true");
    let pushed_stats = pushed_and_alone(&["-e", &topology], &text, &kept);
    let src = component(&pushed_stats, "src");
    assert_eq!(src["emitted"].as_u64(), Some(60_000 - 61), "{src}");
    assert_eq!(src["dropped"].as_u64(), Some(61), "{src}");
    let keep = component(&pushed_stats, "keep");
    assert_eq!(
        keep["emitted"].as_u64(),
        Some(kept.values().sum()),
        "{keep}"
    );
}

#[test]
fn a_filter_after_a_json_reader_gives_and_counts_what_it_does_on_its_own() {
    let (text, kept) = json_rows(60_000);
    assert_eq!(python_counts(&text, "json"), kept, "Python's json module");
    let topology = one_liner("format=json");
    let pushed_stats = pushed_and_alone(&["-e", &topology], &text, &kept);
    let src = component(&pushed_stats, "src");
    assert_eq!(src["dropped"].as_u64(), Some(60), "{src}");
}

/// The same file read by the `file` spout, with acking off.
#[test]
fn a_filter_after_a_file_spout_without_acking_counts_what_it_does_on_its_own() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (text, kept) = csv_rows(30_000);
    let path = dir.path().join("events.csv");
    std::fs::write(&path, &text).expect("written");
    let topology = format!(
        "src = file(path={:?}, format=csv, header=true, fields=[level, service, status]) \
         | keep = filter({FILTER:?}) | count = count(service) | stdout",
        path.display().to_string()
    );
    let args = ["-e", topology.as_str(), "-c", "topology.acker.executors=0"];
    let pushed_stats = pushed_and_alone(&args, "", &kept);
    assert_eq!(component(&pushed_stats, "src")["acked"].as_u64(), Some(0));
}

/// A spout whose lines go to a filter and to another bolt: the other bolt still gets every
/// line, so none is dropped at the spout.
#[test]
fn a_spout_that_feeds_a_filter_and_another_bolt_emits_every_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (text, mut expected) = csv_rows(20_000);
    let levels = text.lines().skip(1).filter(|l| l.split(',').count() >= 5);
    for line in levels {
        let level = line.split(',').nth(1).unwrap_or_default();
        *expected.entry(level.to_string()).or_insert(0) += 1;
    }
    let yaml = format!(
        r#"name: two-ways
spouts:
  - id: src
    type: stdin
    args: {{ format: csv, header: true, fields: [level, service, status] }}
bolts:
  - id: keep
    type: filter
    args: {{ where: {FILTER:?} }}
  - id: count
    type: count
    args: {{ fields: [service] }}
  - id: levels
    type: count
    args: {{ fields: [level] }}
  - id: out
    type: stdout
streams:
  - {{ from: src, to: keep, grouping: shuffle }}
  - {{ from: keep, to: count, grouping: shuffle }}
  - {{ from: src, to: levels, grouping: shuffle }}
  - {{ from: count, to: out, grouping: shuffle }}
  - {{ from: levels, to: out, grouping: shuffle }}
"#
    );
    let path = dir.path().join("two-ways.yaml");
    std::fs::write(&path, yaml).expect("written");
    let (got, stats) = run(&[path.to_str().expect("UTF-8 path")], &text, true);
    assert_eq!(got, expected);
    let keep = component(&stats, "keep");
    assert_eq!(
        keep["executed"],
        component(&stats, "src")["emitted"],
        "{keep}"
    );
}

/// With `topology.debug`, every emit of the spout is shown, the lines the filter drops too:
/// then the spout makes each one a tuple.
#[test]
fn a_spout_shows_every_line_it_emits_under_topology_debug() {
    let (text, kept) = csv_rows(30_000);
    let conf = tempfile::tempdir().expect("tempdir");
    let out = super::run::storm(conf.path())
        .timeout(Duration::from_secs(120))
        .args(["run", "-c", "topology.debug=true", "-e"])
        .arg(one_liner("format=csv, header=true"))
        .write_stdin(text.into_bytes())
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(parse_counts(&out.stdout), kept);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let shown = |id: &str| {
        let prefix = format!(r#"debug: {{"component":"{id}","#);
        stderr.lines().filter(|l| l.starts_with(&prefix)).count() as u64
    };
    assert_eq!(
        shown("src"),
        30_000 - 31,
        "every line read but the 31 cut short"
    );
    assert_eq!(shown("keep"), kept.values().sum::<u64>());
}
