//! Windowed aggregation end to end: tumbling and sliding windows by event time and by count,
//! out-of-order input inside the lag, late tuples, the end-of-input flush, and the same answers
//! at parallelism 2 over three workers — each against counts computed here.

use crate::run::storm;
use std::collections::BTreeMap;

fn rfc3339(ms: i64) -> String {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms as u64);
    humantime::format_rfc3339_millis(t).to_string()
}

fn run(dsl: &str, input: &str, extra: &[&str]) -> Vec<String> {
    let conf = tempfile::tempdir().expect("tempdir");
    let out = storm(conf.path())
        .args(["run", "-e", dsl])
        .args(extra)
        .write_stdin(input.to_string())
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{dsl}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut lines: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(String::from)
        .collect();
    lines.sort();
    lines
}

/// Events a minute apart-ish, some out of order by up to 4 s, with keys.
fn events() -> Vec<(i64, &'static str)> {
    let base = 1_793_606_400_000i64; // 2026-11-02T08:00:00Z
    (0..600)
        .map(|i: i64| {
            let jitter = if i % 7 == 3 { -4000 } else { 0 };
            (base + i * 1700 + jitter, ["a", "b", "c"][(i % 3) as usize])
        })
        .collect()
}

fn as_json(evs: &[(i64, &str)], iso: bool) -> String {
    evs.iter()
        .map(|(t, k)| match iso {
            true => format!("{{\"ts\":\"{}\",\"k\":\"{k}\"}}\n", rfc3339(*t)),
            false => format!("{{\"ts\":{t},\"k\":\"{k}\"}}\n"),
        })
        .collect()
}

/// Brute force: for windows of `size` every `every` (ms), each window's count per key.
fn expected(evs: &[(i64, &str)], size: i64, every: i64) -> Vec<String> {
    let mut m: BTreeMap<(i64, &str), u64> = BTreeMap::new();
    for (t, k) in evs {
        let mut s = t.div_euclid(every) * every;
        while s > t - size {
            *m.entry((s, k)).or_default() += 1;
            s -= every;
        }
    }
    let mut v: Vec<String> = m
        .iter()
        .map(|((s, k), n)| format!("{k}\t{}\t{}\t{n}", rfc3339(*s), rfc3339(s + size)))
        .collect();
    v.sort();
    v
}

#[test]
fn tumbling_event_time_windows_with_out_of_order_input_inside_the_lag() {
    let evs = events();
    let dsl = "stdin(format=json, fields=[ts, k]) | aggregate(by=[k], window={tumbling: 1m}, time=ts, lag=5s) | stdout";
    assert_eq!(
        run(dsl, &as_json(&evs, true), &[]),
        expected(&evs, 60_000, 60_000)
    );
    // Epoch milliseconds, parallelism 2, three workers: the same.
    let dsl = "stdin(format=json, fields=[ts, k]) | aggregate(by=[k], window={tumbling: 1m}, time=ts, lag=5s) x2 | stdout";
    assert_eq!(
        run(dsl, &as_json(&evs, false), &["-c", "topology.workers=3"]),
        expected(&evs, 60_000, 60_000)
    );
}

#[test]
fn sliding_event_time_windows() {
    let evs = events();
    let dsl = "stdin(format=json, fields=[ts, k]) | aggregate(by=[k], window={sliding: 2m, every: 30s}, time=ts, lag=5s) | stdout";
    assert_eq!(
        run(dsl, &as_json(&evs, true), &[]),
        expected(&evs, 120_000, 30_000)
    );
}

#[test]
fn tuples_beyond_the_lag_go_to_the_late_stream() {
    let base = 1_793_606_400_000i64;
    let evs = [
        (base, "a"),
        (base + 70_000, "a"),
        (base + 1_000, "a"),
        (base + 130_000, "a"),
    ];
    let dsl = "stdin(format=json, fields=[ts, k]) | w = aggregate(by=[k], window={tumbling: 1m}, time=ts, lag=1s) | stdout\nw | [stream=late] l = stdout(format=json)";
    let got = run(dsl, &as_json(&evs, false), &[]);
    let late = format!("{{\"ts\":{},\"k\":\"a\"}}", base + 1_000);
    let want = {
        let mut v = vec![
            format!("a\t{}\t{}\t1", rfc3339(base), rfc3339(base + 60_000)),
            format!(
                "a\t{}\t{}\t1",
                rfc3339(base + 60_000),
                rfc3339(base + 120_000)
            ),
            format!(
                "a\t{}\t{}\t1",
                rfc3339(base + 120_000),
                rfc3339(base + 180_000)
            ),
            late,
        ];
        v.sort();
        v
    };
    assert_eq!(got, want);
}

#[test]
fn count_windows_and_the_end_of_input_flush() {
    let input: String = (0..25).map(|i| format!("{i}\n")).collect();
    let dsl = "stdin | parse(format=regex, pattern=\"(?P<n>\\\\d+)\", types={n: int}) | aggregate(window={tumbling: 10}, ops=[count, sum(n)]) | stdout";
    let got = run(dsl, &input, &[]);
    // Windows of tuples [0,10), [10,20), and the last, open one flushed at the end.
    assert_eq!(got, ["0\t10\t10\t45", "10\t20\t10\t145", "20\t30\t5\t110"]);
}

/// Brute force for `top`: counts per (window, key), the `n` best of each window (ties in key
/// order), as `stdout` prints them.
fn top_expected(evs: &[(i64, &str)], n: usize, size: i64, every: i64) -> Vec<String> {
    let mut per: BTreeMap<i64, BTreeMap<&str, u64>> = BTreeMap::new();
    for (t, k) in evs {
        let mut s = t.div_euclid(every) * every;
        while s > t - size {
            *per.entry(s).or_default().entry(k).or_default() += 1;
            s -= every;
        }
    }
    let mut want: Vec<String> = Vec::new();
    for (s, counts) in &per {
        let mut ranked: Vec<(&&str, &u64)> = counts.iter().collect();
        ranked.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        for (i, (k, c)) in ranked.iter().take(n).enumerate() {
            want.push(format!(
                "{}\t{}\t{}\t{k}\t{c}",
                rfc3339(*s),
                rfc3339(s + size),
                i + 1
            ));
        }
    }
    want.sort();
    want
}

/// Events over many keys of skewed frequency (a few keys lead, many trail), some out of order
/// by up to 4 s.
fn skewed_events() -> Vec<(i64, &'static str)> {
    const KEYS: [&str; 12] = [
        "k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7", "k8", "k9", "k10", "k11",
    ];
    let base = 1_793_606_400_000i64;
    (0..3000i64)
        .map(|i| {
            let jitter = if i % 7 == 3 { -4000 } else { 0 };
            // A small linear congruential mix, folded so low keys come more often.
            let r = (i * 7919 + 13) % 144;
            let key = KEYS[(r as f64).sqrt() as usize % 12];
            (base + i * 170 + jitter, key)
        })
        .collect()
}

/// `top`: per sliding window, the n best keys by count, ranked; and overall by a summed score.
#[test]
fn top_n_per_sliding_window_and_overall() {
    let evs = events();
    let dsl = "stdin(format=json, fields=[ts, k]) | top(n=2, by=[k], window={sliding: 2m, every: 1m}, time=ts, lag=5s) | stdout";
    let got = run(dsl, &as_json(&evs, true), &[]);
    assert_eq!(got, top_expected(&evs, 2, 120_000, 60_000));
    let got = run(
        "stdin | parse(format=csv, columns=[k, v], types={v: int}) | top(n=2, by=[k], score=v) | stdout",
        "a,5\nb,7\na,4\nc,1\n",
        &[],
    );
    assert_eq!(got, ["1\ta\t9", "2\tb\t7"]);
}

/// `top` with three tasks runs as partial rankings (fields-grouped on the key) merged by one
/// total ranking: the same rows as one task, in one process and over three workers.
#[test]
fn top_n_with_parallelism_ranks_as_one_task_would() {
    let evs = skewed_events();
    let want = top_expected(&evs, 3, 120_000, 60_000);
    let dsl = "stdin(format=json, fields=[ts, k]) | top(n=3, by=[k], window={sliding: 2m, every: 1m}, time=ts, lag=5s) x3 | stdout";
    assert_eq!(run(dsl, &as_json(&evs, false), &[]), want);
    assert_eq!(
        run(dsl, &as_json(&evs, true), &["-c", "topology.workers=3"]),
        want
    );
    assert_eq!(
        run(
            dsl,
            &as_json(&evs, false),
            &["--processes", "-c", "topology.workers=3"]
        ),
        want
    );
    // Overall, by a summed score, at parallelism 4.
    let input: String = (0..200)
        .map(|i| format!("k{},{}\n", i % 17, i % 5))
        .collect();
    let mut sums: BTreeMap<String, i64> = BTreeMap::new();
    for i in 0..200 {
        *sums.entry(format!("k{}", i % 17)).or_default() += i % 5;
    }
    let mut ranked: Vec<(&String, &i64)> = sums.iter().collect();
    ranked.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let mut want: Vec<String> = ranked
        .iter()
        .take(4)
        .enumerate()
        .map(|(i, (k, v))| format!("{}\t{k}\t{v}", i + 1))
        .collect();
    want.sort();
    let got = run(
        "stdin | parse(format=csv, columns=[k, v], types={v: int}) | top(n=4, by=[k], score=v) x4 | stdout",
        &input,
        &["-c", "topology.workers=3"],
    );
    assert_eq!(got, want);
}

/// A split `top` shows as its two halves: `validate` counts them, `graph` draws the partial
/// rankings grouped by the key into the one total task.
#[test]
fn a_split_top_shows_its_partial_and_total_rankings() {
    let conf = tempfile::tempdir().expect("tempdir");
    let dsl = "stdin(format=json, fields=[ts, k]) | top(n=3, by=[k], window={tumbling: 1m}, time=ts) x3 | stdout";
    storm(conf.path())
        .args(["validate", "-e", dsl])
        .assert()
        .success()
        .stdout("ok: <-e> (1 spouts, 3 bolts, 6 executors, 6 tasks)\n");
    let out = storm(conf.path())
        .args(["graph", "-e", dsl])
        .output()
        .expect("runs");
    insta::assert_snapshot!(String::from_utf8_lossy(&out.stdout));
    // Windows of tuples are counted by each task: refused, at the parallelism.
    storm(conf.path())
        .args([
            "validate",
            "-e",
            "stdin | top(n=3, by=[line], window={tumbling: 10}) x3 | stdout",
        ])
        .assert()
        .failure()
        .stderr(predicates::str::contains(
            "1:52: error: a `top` with windows of tuples runs as one task",
        ));
}

/// `join`: inner and left joins of two inputs on a key, against the rows computed here; and
/// with tumbling windows of tuples, only tuples of the same window meet.
#[test]
fn inner_and_left_joins() {
    let dir = tempfile::tempdir().expect("tempdir");
    let users: Vec<(u32, String)> = (0..20).map(|i| (i, format!("user{i}"))).collect();
    let orders: Vec<(u32, u32)> = (0..60).map(|i| ((i * 7) % 25, i)).collect();
    let mut csv = String::from("id,name\n");
    for (id, name) in &users {
        csv += &format!("{id},{name}\n");
    }
    std::fs::write(dir.path().join("users.csv"), csv).expect("write");
    let jsonl: String = orders
        .iter()
        .map(|(u, a)| format!("{{\"user\":{u},\"amount\":{a}}}\n"))
        .collect();
    std::fs::write(dir.path().join("orders.jsonl"), jsonl).expect("write");
    let topology = |inputs: &str, select: &str| {
        format!(
            "u = file(path={}, format=csv, header=true, fields=[id, name])\n\
             o = file(path={}, format=json, fields=[user, amount])\n\
             o | j = join(inputs={inputs}, select={select}) | stdout\nu | j",
            dir.path().join("users.csv").display(),
            dir.path().join("orders.jsonl").display()
        )
    };
    // Orders with their user's name: inner join, orders on the left.
    let got = run(
        &topology(
            "[{from: o, key: user}, {from: u, key: id}]",
            "[o.amount, u.name]",
        ),
        "",
        &[],
    );
    let mut want: Vec<String> = orders
        .iter()
        .filter_map(|(u, a)| {
            users
                .iter()
                .find(|(id, _)| id == u)
                .map(|(_, n)| format!("{a}\t{n}"))
        })
        .collect();
    want.sort();
    assert_eq!(got, want);
    // Users with their orders, users without any kept with a null amount: left join.
    let got = run(
        &topology(
            "[{from: u, key: id}, {from: o, key: user, kind: left}]",
            "[u.name, o.amount]",
        ),
        "",
        &[],
    );
    let mut want: Vec<String> = Vec::new();
    for (id, name) in &users {
        let theirs: Vec<&(u32, u32)> = orders.iter().filter(|(u, _)| u == id).collect();
        if theirs.is_empty() {
            want.push(format!("{name}\t"));
        }
        want.extend(theirs.iter().map(|(_, a)| format!("{name}\t{a}")));
    }
    want.sort();
    assert_eq!(got, want);
}
