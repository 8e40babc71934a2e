//! Partial aggregation: a `count` fed across worker processes gets sums made on the sending
//! side, and its totals are exactly those of a run without them and of a reference, with
//! acking on (no tree times out or is replayed), through failures and replays, and for keys
//! of several fields.

use super::run::{expected_counts, messy_text, parse_counts};
use super::support::{stats, stats_component as component};
use assert_cmd::Command;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

fn storm(conf_dir: &Path) -> Command {
    let mut cmd = super::run::storm(conf_dir);
    cmd.timeout(Duration::from_secs(240));
    cmd
}

/// Run `topology` over two worker processes on `input`, partial aggregation on or off: its
/// standard output and its stats.
fn run(
    topology: &str,
    input: &[u8],
    partial: bool,
    extra: &[&str],
) -> (Vec<u8>, serde_json::Value) {
    let conf = tempfile::tempdir().expect("tempdir");
    let stats_path = conf.path().join("stats.json");
    let out = storm(conf.path())
        .args(["run", "-e", topology, "--processes", "--workers", "2", "-c"])
        .arg(format!("topology.partial.aggregation={partial}"))
        .args(extra)
        .arg("--stats")
        .arg(&stats_path)
        .write_stdin(input)
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (out.stdout, stats(&stats_path))
}

fn executed(stats: &serde_json::Value, id: &str) -> u64 {
    component(stats, id)["executed"].as_u64().unwrap_or(0)
}

#[test]
fn summed_counts_equal_unsummed_ones_and_the_reference_with_every_tree_completed() {
    let text = messy_text(400_000, 11);
    let expected = expected_counts(&text);
    let words: u64 = expected.values().sum();
    let topology = "lines = stdin | split x2 | count(word) x2 | stdout";
    let (out, summed) = run(topology, &text, true, &[]);
    assert_eq!(parse_counts(&out), expected);
    // Half the words go to the count task of the other worker: those arrive as sums.
    assert!(executed(&summed, "count") < words, "{summed}");
    let lines = component(&summed, "lines");
    for key in ["replayed", "timed_out", "lost", "failed"] {
        assert_eq!(lines[key], 0, "{key}: {lines}");
    }
    let (out, plain) = run(topology, &text, false, &[]);
    assert_eq!(parse_counts(&out), expected);
    assert_eq!(executed(&plain, "count"), words);
}

#[test]
fn failed_and_lost_tuples_before_a_summed_count_are_replayed_until_counted() {
    let text = messy_text(40_000, 5);
    let expected = expected_counts(&text);
    let topology =
        "lines = stdin | split x2 | chaos(fail=0.1, drop=0.05, seed=3) x2 | count(word) x2 | stdout";
    let (out, stats) = run(
        topology,
        &text,
        true,
        &["-c", "topology.message.timeout.secs=2"],
    );
    let got = parse_counts(&out);
    for (word, n) in &expected {
        let seen = got.get(word).copied().unwrap_or(0);
        assert!(seen >= *n, "{word}: counted {seen}, true total {n}");
    }
    let lines = component(&stats, "lines");
    assert!(lines["replayed"].as_u64().unwrap_or(0) > 0, "{lines}");
    assert_eq!(lines["lost"], 0, "{lines}");
}

#[test]
fn keys_of_several_fields_are_summed_exactly() {
    let mut csv = String::from("service,level,ms\n");
    let mut expected: BTreeMap<(String, String), u64> = BTreeMap::new();
    let mut s = 17u64;
    for _ in 0..30_000 {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let service = ["api", "web", "db", "queue, \"main\""][(s >> 33) as usize % 4];
        let level = ["info", "warn", "error", ""][(s >> 40) as usize % 4];
        let quoted = service.replace('"', "\"\"");
        csv.push_str(&format!("\"{quoted}\",{level},{}\n", (s >> 50) % 1000));
        *expected
            .entry((service.to_string(), level.to_string()))
            .or_default() += 1;
    }
    let topology =
        "stdin(format=csv, header=true, fields=[service, level, ms]) | filter(\"ms >= 0\") x2 \
        | count(service, level) x2 | stdout(format=json)";
    let (summed, stats) = run(topology, csv.as_bytes(), true, &[]);
    let rows = |out: &[u8]| -> BTreeMap<(String, String), u64> {
        String::from_utf8_lossy(out)
            .lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).expect("a JSON row");
                let text = |k: &str| v[k].as_str().unwrap_or("").to_string();
                (
                    (text("service"), text("level")),
                    v["count"].as_u64().unwrap_or(0),
                )
            })
            .collect()
    };
    assert_eq!(rows(&summed), expected);
    assert!(executed(&stats, "count") < 30_000, "{stats}");
    let (plain, _) = run(topology, csv.as_bytes(), false, &[]);
    assert_eq!(rows(&plain), expected);
}
