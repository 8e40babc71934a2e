//! Operator chaining: chained runs give what unchained runs give (with acking, failures and
//! replays, at parallelism 1 and 2), every component still shows in the stats and in
//! `storm tap`-style counters, `storm graph` marks the chains, and the switches validate.

use super::run::{counted_run, expected_counts, messy_text};
use super::support::stats_component as component;
use assert_cmd::Command;
use std::path::Path;
use std::time::Duration;

fn storm(conf_dir: &Path) -> Command {
    let mut cmd = super::run::storm(conf_dir);
    cmd.timeout(Duration::from_secs(240));
    cmd
}

/// The word count with a filter and `split` chained onto the spout (at parallelism 1) and
/// `stdout` after `count`, at parallelism `p` from `split` on. `count` emits every total at
/// the end, so `stdout` keeps a thread of its own there.
fn pipeline(p: u32) -> String {
    format!(
        "lines = stdin | keep = filter(\"len(line) > 0\") | split x{p} \
         | count(word) x{p} | out = stdout x{p}"
    )
}

/// Run `topology` on `text` with `chaining` on or off: its counts and its stats.
fn run(
    topology: &str,
    text: &[u8],
    chaining: bool,
    extra: &[&str],
) -> (std::collections::BTreeMap<String, u64>, serde_json::Value) {
    let chaining = format!("topology.chaining={chaining}");
    let args = [&["-e", topology, "-c", chaining.as_str()][..], extra].concat();
    counted_run(&args, text)
}

#[test]
fn a_chained_run_counts_what_an_unchained_one_counts_at_parallelism_one_and_two() {
    let text = messy_text(200_000, 3);
    let expected = expected_counts(&text);
    for p in [1, 2] {
        let topology = pipeline(p);
        let (chained, stats) = run(&topology, &text, true, &[]);
        let (unchained, _) = run(&topology, &text, false, &[]);
        assert_eq!(chained, expected, "chained, parallelism {p}");
        assert_eq!(unchained, expected, "unchained, parallelism {p}");
        // Each chained component still counts its own work.
        let lines = component(&stats, "lines")["emitted"].as_u64().unwrap_or(0);
        let keep = component(&stats, "keep");
        assert_eq!(keep["executed"].as_u64(), Some(lines), "{keep}");
        assert!(keep["acked"].as_u64().unwrap_or(0) >= lines, "{keep}");
        let words: u64 = expected.values().sum();
        assert_eq!(component(&stats, "count")["executed"].as_u64(), Some(words));
        assert!(component(&stats, "out")["executed"].as_u64().unwrap_or(0) > 0);
    }
}

#[test]
fn failures_inside_a_chain_are_replayed_until_every_word_is_counted() {
    let text = messy_text(40_000, 5);
    let expected = expected_counts(&text);
    let topology =
        "lines = stdin | split | chaos(fail=0.1, drop=0.05, seed=3) | count(word) | stdout";
    let (got, stats) = run(
        topology,
        &text,
        true,
        &["-c", "topology.message.timeout.secs=1"],
    );
    for (word, n) in &expected {
        let seen = got.get(word).copied().unwrap_or(0);
        assert!(seen >= *n, "{word}: counted {seen}, true total {n}");
    }
    let lines = component(&stats, "lines");
    assert!(lines["replayed"].as_u64().unwrap_or(0) > 0, "{lines}");
    assert_eq!(lines["lost"], 0, "{lines}");
}

/// A tree the chain completes on the spout's thread (a line the filter drops) is acked there:
/// the acker hears of none of them (it does, chaining off). Trees that leave the chain still
/// reach it, and every line is acked either way.
#[test]
fn trees_completed_inside_a_chain_never_reach_the_acker() {
    let text: String = (0..20_000)
        .map(|i| if i % 2 == 0 { "ab\n" } else { "abcd efgh\n" })
        .collect();
    let acker_heard = |stats: &serde_json::Value| component(stats, "__acker")["executed"].as_u64();
    let lines_acked = |stats: &serde_json::Value| {
        let lines = component(stats, "lines");
        assert_eq!(lines["emitted"].as_u64(), Some(20_000), "{lines}");
        lines["acked"].as_u64()
    };
    let dropped =
        "lines = stdin | keep = filter(\"len(line) > 100\") | split | count(word) | stdout";
    let (got, stats) = run(dropped, text.as_bytes(), true, &[]);
    assert!(got.is_empty(), "{got:?}");
    assert_eq!(lines_acked(&stats), Some(20_000));
    assert_eq!(acker_heard(&stats), Some(0), "chained");
    let (_, stats) = run(dropped, text.as_bytes(), false, &[]);
    assert_eq!(lines_acked(&stats), Some(20_000));
    assert!(acker_heard(&stats) > Some(0), "unchained");

    let half = "lines = stdin | keep = filter(\"len(line) > 2\") | split | count(word) | stdout";
    let (got, stats) = run(half, text.as_bytes(), true, &[]);
    let expected: std::collections::BTreeMap<String, u64> =
        [("abcd".to_string(), 10_000), ("efgh".to_string(), 10_000)].into();
    assert_eq!(got, expected);
    assert_eq!(lines_acked(&stats), Some(20_000));
    assert!(acker_heard(&stats) > Some(0), "the kept lines' trees");
}

#[test]
fn storm_graph_marks_chained_edges() {
    let conf = tempfile::tempdir().expect("tempdir");
    let graph = |args: &[&str]| {
        let out = storm(conf.path())
            .arg("graph")
            .args(args)
            .output()
            .expect("runs");
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).expect("UTF-8")
    };
    let dot = graph(&["-e", "stdin | split | count(word) | stdout"]);
    assert!(
        dot.contains(r#""stdin" -> "split" [label="shuffle, chained", style=bold];"#),
        "{dot}"
    );
    assert!(
        dot.contains(r#""split" -> "count" [label="fields(word)"];"#),
        "a keyed edge ends a chain: {dot}"
    );
    assert!(
        dot.contains(r#""count" -> "stdout" [label="shuffle"];"#),
        "count emits every total at once: {dot}"
    );
    let mermaid = graph(&[
        "--format",
        "mermaid",
        "-e",
        r#"stdin | split chain=false | filter("len(word) > 1") | stdout"#,
    ]);
    assert!(mermaid.contains(r#"c0 -->|"shuffle"| c1"#), "{mermaid}");
    assert!(
        mermaid.contains(r#"c2 ==>|"shuffle, chained"| c3"#),
        "{mermaid}"
    );
    let off = graph(&[
        "-c",
        "topology.chaining=false",
        "-e",
        "stdin | split | count(word) | stdout",
    ]);
    assert!(!off.contains("chained"), "{off}");
}

#[test]
fn the_chaining_switches_are_checked_where_they_are_written() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("t.yaml");
    std::fs::write(
        &file,
        "name: t\nconfig:\n  topology.chaining: false\nspouts:\n  - { id: s, type: stdin }\n\
         bolts:\n  - { id: b, type: stdout, chain: false }\n\
         streams:\n  - { from: s, to: b, grouping: shuffle }\n",
    )
    .expect("write");
    storm(dir.path())
        .arg("validate")
        .arg(&file)
        .assert()
        .success();
    std::fs::write(
        &file,
        "name: t\nspouts:\n  - { id: s, type: stdin }\n\
         bolts:\n  - { id: b, type: stdout, chain: 3 }\n\
         streams:\n  - { from: s, to: b, grouping: shuffle }\n",
    )
    .expect("write");
    let out = storm(dir.path())
        .arg("validate")
        .arg(&file)
        .output()
        .expect("runs");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("`chain` must be true or false"), "{err}");
    assert!(err.contains("t.yaml:5:"), "located: {err}");
}

/// Event-time CSV rows: 30 minutes of 7 endpoints, decimals, now and then an empty latency
/// cell, and a few rows out of order within a minute.
fn timed_csv() -> String {
    let mut csv = String::from("ts,endpoint,latency\n");
    for i in 0..30_000u32 {
        let (minute, second) = (i / 1000, (i % 1000) * 60 / 1000);
        let second = if i % 97 == 5 { second / 2 } else { second };
        let latency = match i % 53 {
            0 => String::new(),
            _ => format!("{}.{}", i % 100, i % 7),
        };
        csv += &format!(
            "2026-11-02T08:{minute:02}:{second:02}Z,/e{},{latency}\n",
            i % 7
        );
    }
    csv
}

/// What the per-minute aggregate must print for `csv`: per endpoint and minute, the count of
/// rows, and the count, sum and largest of the latencies given.
fn minute_totals(csv: &str) -> std::collections::BTreeMap<(String, String), (u64, u64, f64, f64)> {
    let mut totals = std::collections::BTreeMap::new();
    for row in csv.lines().skip(1) {
        let cells: Vec<&str> = row.split(',').collect();
        let minute = format!("{}:00.000Z", &cells[0][..16]);
        let t = totals
            .entry((cells[1].to_string(), minute))
            .or_insert((0, 0, 0.0, f64::MIN));
        t.0 += 1;
        if let Ok(v) = cells[2].parse::<f64>() {
            t.1 += 1;
            t.2 += v;
            t.3 = t.3.max(v);
        }
    }
    totals
}

/// A keyed bolt right after a spout that reads fields on its reader threads, one task each,
/// runs on the spout's thread: the rows are those of a run with chaining off, line for line,
/// and each matches a count done here; every tree completes on that thread, so the acker hears
/// of none; `storm graph` marks the edge. With two tasks the key decides, and the edge stays.
#[test]
fn a_keyed_bolt_after_a_spout_reading_fields_runs_fused_with_the_same_rows() {
    let csv = timed_csv();
    let topology = "stdin(format=csv, header=true, fields=[ts, endpoint, latency]) \
        | aggregate(by=[endpoint], window={tumbling: 1m}, time=ts, \
                    ops=[count, sum(latency), max(latency), avg(latency)]) | stdout";
    let run = |chaining: bool| {
        let conf = tempfile::tempdir().expect("tempdir");
        let stats_path = conf.path().join("stats.json");
        let out = storm(conf.path())
            .args(["run", "-e", topology, "--stats"])
            .arg(&stats_path)
            .args(["-c", &format!("topology.chaining={chaining}")])
            .write_stdin(csv.clone())
            .output()
            .expect("runs");
        assert!(out.status.success(), "{out:?}");
        let stdout = String::from_utf8(out.stdout).expect("UTF-8");
        (stdout, super::support::stats(&stats_path))
    };
    let (fused, stats) = run(true);
    let (apart, apart_stats) = run(false);
    assert_eq!(fused, apart, "the same rows in the same order");
    let want = minute_totals(&csv);
    assert_eq!(fused.lines().count(), want.len(), "{fused}");
    for line in fused.lines() {
        let c: Vec<&str> = line.split('\t').collect();
        let (n, given, sum, max) = want[&(c[0].to_string(), c[1].to_string())];
        assert_eq!(c[3].parse::<u64>().ok(), Some(n), "{line}");
        let got_sum: f64 = c[4].parse().expect("a sum");
        assert!((got_sum - sum).abs() < 1e-6 * sum.max(1.0), "{line}: {sum}");
        assert_eq!(c[5].parse::<f64>().ok(), Some(max), "{line}");
        let avg: f64 = c[6].parse().expect("an average");
        assert!(
            (avg - sum / given as f64).abs() < 1e-9 * avg.max(1.0),
            "{line}"
        );
    }
    let acker = |s: &serde_json::Value| component(s, "__acker")["executed"].as_u64();
    assert_eq!(
        acker(&stats),
        Some(0),
        "fused: every tree ends on the spout's thread"
    );
    assert!(
        acker(&apart_stats) > Some(0),
        "apart: the acker tracks them"
    );
    let stdin = component(&stats, "stdin");
    assert_eq!(stdin["acked"].as_u64(), Some(30_000), "{stdin}");
    assert_eq!(
        component(&stats, "aggregate")["executed"].as_u64(),
        Some(30_000)
    );

    let conf = tempfile::tempdir().expect("tempdir");
    let graph = |topology: &str| {
        let out = storm(conf.path())
            .args(["graph", "-e", topology])
            .output()
            .expect("runs");
        String::from_utf8(out.stdout).expect("UTF-8")
    };
    let dot = graph(topology);
    assert!(
        dot.contains(r#""stdin" -> "aggregate" [label="fields(endpoint), chained", style=bold];"#),
        "{dot}"
    );
    let dot = graph(&topology.replace("| stdout", "x2 | stdout"));
    assert!(
        dot.contains(r#"[label="fields(endpoint)"]"#),
        "two tasks: {dot}"
    );
}
