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
        "lines = stdin | split x2 | chaos(fail=0.1, drop=0.02, seed=3) x2 | count(word) x2 | stdout";
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

/// One service's numbers in quarters (exact in floats), for the reference.
#[derive(Default)]
struct Reference {
    count: u64,
    quarters: Vec<i64>,
    any_float: bool,
}

/// CSV rows `service,ms,v`: `ms` a whole or quarter number (exact sums, so a reference can
/// add them in integers) or empty; `v` a number with one decimal (whose float sums depend on
/// the order without exact summation), `n/a` or empty. Many repeated keys.
fn decimal_rows(n: usize) -> (String, BTreeMap<String, Reference>) {
    let mut csv = String::from("service,ms,v\n");
    let mut reference: BTreeMap<String, Reference> = BTreeMap::new();
    let mut s = 29u64;
    for _ in 0..n {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let service = format!("svc{}", (s >> 33) % 40);
        let r = reference.entry(service.clone()).or_default();
        r.count += 1;
        let q = ((s >> 40) % 40_000) as i64;
        let ms = match (s >> 20) % 10 {
            0 => String::new(),
            _ if q % 4 == 0 => format!("{}", q / 4),
            _ => format!("{}.{}", q / 4, ["", "25", "5", "75"][(q % 4) as usize]),
        };
        if !ms.is_empty() {
            r.quarters.push(q);
            r.any_float |= q % 4 != 0;
        }
        let k = (s >> 12) % 100_000;
        let v = match (s >> 8) % 50 {
            0 => "n/a".to_string(),
            1..=4 => String::new(),
            _ => format!("{}.{}", k / 10, k % 10),
        };
        csv.push_str(&format!("{service},{ms},{v}\n"));
    }
    (csv, reference)
}

/// `aggregate` with every op that merges, over two worker processes: with partial states
/// summed on the sending side its rows are, to the last bit of every float, those of a run
/// without, and they agree with a reference computed here; its task in the other worker
/// receives fewer tuples than there are rows.
#[test]
fn summed_aggregates_equal_unsummed_ones_and_the_reference_to_the_bit() {
    let rows = 60_000;
    let (csv, reference) = decimal_rows(rows);
    let topology = "stdin(format=csv, header=true, fields=[service, ms, v]) \
        | aggregate(by=[service], ops=[count, sum(ms), avg(ms), min(ms), max(ms), count_distinct(ms), \
          \"top(2, ms)\", sum(v), avg(v), min(v), max(v), first(v), last(v), \"percentile(v, 0.9)\"]) x2 \
        | stdout(format=json)";
    let sorted = |out: &[u8]| -> Vec<String> {
        let mut lines: Vec<String> = String::from_utf8_lossy(out)
            .lines()
            .map(String::from)
            .collect();
        lines.sort();
        lines
    };
    let (summed, stats) = run(topology, csv.as_bytes(), true, &[]);
    assert!(executed(&stats, "aggregate") < rows as u64, "{stats}");
    let (plain, plain_stats) = run(topology, csv.as_bytes(), false, &[]);
    assert_eq!(executed(&plain_stats, "aggregate"), rows as u64);
    assert_eq!(sorted(&summed), sorted(&plain));
    let got: BTreeMap<String, serde_json::Value> = sorted(&summed)
        .iter()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("a JSON row");
            (v["service"].as_str().unwrap_or("").to_string(), v)
        })
        .collect();
    assert_eq!(got.len(), reference.len());
    for (service, r) in &reference {
        let row = &got[service];
        let total: i64 = r.quarters.iter().sum();
        let sum = total as f64 / 4.0;
        assert_eq!(row["count"].as_u64(), Some(r.count), "{row}");
        match r.any_float {
            true => assert_eq!(
                row["sum_ms"].as_f64().map(f64::to_bits),
                Some(sum.to_bits())
            ),
            false => assert_eq!(row["sum_ms"].as_i64(), Some(total / 4), "{row}"),
        }
        let avg = sum / r.quarters.len() as f64;
        assert_eq!(
            row["avg_ms"].as_f64().map(f64::to_bits),
            Some(avg.to_bits()),
            "{row}"
        );
        let min = r.quarters.iter().min().copied().unwrap_or(0) as f64 / 4.0;
        let max = r.quarters.iter().max().copied().unwrap_or(0) as f64 / 4.0;
        assert_eq!(row["min_ms"].as_f64(), Some(min), "{row}");
        assert_eq!(row["max_ms"].as_f64(), Some(max), "{row}");
        let distinct: std::collections::BTreeSet<i64> = r.quarters.iter().copied().collect();
        assert_eq!(
            row["count_distinct_ms"].as_u64(),
            Some(distinct.len() as u64)
        );
    }
}

/// A `top` without a window takes partial states too: the same ranking as without them.
#[test]
fn a_summed_top_ranks_as_an_unsummed_one() {
    let rows = 30_000;
    let (csv, _) = decimal_rows(rows);
    let topology = "stdin(format=csv, header=true, fields=[service, ms, v]) \
        | top(by=[service], n=5, score=ms) | stdout(format=json)";
    let (summed, stats) = run(topology, csv.as_bytes(), true, &[]);
    let (plain, _) = run(topology, csv.as_bytes(), false, &[]);
    assert_eq!(summed, plain);
    assert_eq!(String::from_utf8_lossy(&summed).lines().count(), 5);
    assert!(executed(&stats, "top") < rows as u64, "{stats}");
}
