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
    // Three tasks over three workers, as processes: the same.
    let dsl = "stdin(format=json, fields=[ts, k]) | aggregate(by=[k], window={sliding: 2m, every: 30s}, time=ts, lag=5s) x3 | stdout";
    assert_eq!(
        run(
            dsl,
            &as_json(&evs, false),
            &["--processes", "-c", "topology.workers=3"]
        ),
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
    // Two tasks over three workers: the one key is windowed by one task, which sees the same.
    let dsl2 = "stdin(format=json, fields=[ts, k]) | w = aggregate(by=[k], window={tumbling: 1m}, time=ts, lag=1s) x2 | stdout\nw | [stream=late] l = stdout(format=json)";
    assert_eq!(
        run(dsl2, &as_json(&evs, false), &["-c", "topology.workers=3"]),
        got
    );
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

/// A join's event time is the lowest of its inputs' latest times (less the lag), as Storm's
/// watermark is the lowest over the input streams: a slower input holds windows open instead
/// of making its tuples late. A tuple behind a window that closed goes to the `late` stream,
/// with the input it came from. One stdin feeds both sides; `max.spout.pending` 1 makes each
/// tuple's whole tree finish before the next is read, so the order below is the order joined.
#[test]
fn a_join_waits_for_its_slowest_input_and_sends_late_tuples_to_the_late_stream() {
    let base = 1_793_606_400_000i64;
    let line = |t: i64, side: &str, v: &str| {
        format!(
            "{{\"ts\":{},\"user\":1,\"side\":\"{side}\",\"v\":\"{v}\"}}\n",
            base + t
        )
    };
    let input = [
        line(130_000, "o", "b"),
        // Not late: `l` has not been heard from, so nothing has closed.
        line(5_000, "o", "a"),
        line(10_000, "l", "q"),
        // Both inputs past the first minute: it closes, joining `a` with `q`.
        line(125_000, "l", "p"),
        // Behind the closed first minute.
        line(1_000, "o", "c"),
    ]
    .concat();
    let dsl = |tasks: u32| {
        format!(
            "s = stdin(format=json, fields=[ts, user, side, v])\n\
             s | o = filter(\"side == \\\"o\\\"\")\n\
             s | l = filter(\"side == \\\"l\\\"\")\n\
             o | [fields user] j = join(inputs=[{{from: o, key: user}}, {{from: l, key: user}}], \
             select=[o.ts, l.v], window={{tumbling: 1m}}, time=ts, lag=1s) x{tasks} | stdout\n\
             l | [fields user] j\n\
             j | [stream=late] late = stdout(format=json)"
        )
    };
    let late = serde_json::json!({
        "from": "o",
        "late_tuple": {"ts": base + 1_000, "user": 1, "side": "o", "v": "c"},
    });
    let one_at_a_time = ["-c", "topology.max.spout.pending=1"];
    let over_three = [
        "-c",
        "topology.max.spout.pending=1",
        "-c",
        "topology.workers=3",
    ];
    for (tasks, extra) in [(1, &one_at_a_time[..]), (3, &over_three[..])] {
        let got = run(&dsl(tasks), &input, extra);
        assert_eq!(got.len(), 3, "x{tasks}: {got:?}");
        assert_eq!(got[0], format!("{}\tq", base + 5_000), "x{tasks}");
        assert_eq!(got[1], format!("{}\tp", base + 130_000), "x{tasks}");
        let got_late: serde_json::Value = serde_json::from_str(&got[2]).expect("a JSON line");
        assert_eq!(got_late, late, "x{tasks}");
    }
}

/// With two input components, an aggregate's event time is the lowest of their latest times
/// (less the lag): `b`'s first tuple, far behind `a`'s, is not late, since nothing closed
/// before `b` was heard from. `max.spout.pending` 1 makes the order read the order aggregated.
#[test]
fn an_aggregate_over_two_inputs_waits_for_the_slower_one() {
    let base = 1_793_606_400_000i64;
    let line =
        |t: i64, side: &str| format!("{{\"ts\":{},\"k\":\"x\",\"side\":\"{side}\"}}\n", base + t);
    let input = [
        line(130_000, "a"),
        line(5_000, "b"),
        line(125_000, "b"),
        line(1_000, "a"),
    ]
    .concat();
    let dsl = "s = stdin(format=json, fields=[ts, k, side])\n\
               s | a = filter(\"side == \\\"a\\\"\")\n\
               s | b = filter(\"side == \\\"b\\\"\")\n\
               a | w = aggregate(by=[k], window={tumbling: 1m}, time=ts, lag=1s) | stdout\n\
               b | w\n\
               w | [stream=late] late = stdout(format=json)";
    let got = run(dsl, &input, &["-c", "topology.max.spout.pending=1"]);
    let mut want = vec![
        format!("x\t{}\t{}\t1", rfc3339(base), rfc3339(base + 60_000)),
        format!(
            "x\t{}\t{}\t2",
            rfc3339(base + 120_000),
            rfc3339(base + 180_000)
        ),
        format!("{{\"ts\":{},\"k\":\"x\",\"side\":\"a\"}}", base + 1_000),
    ];
    want.sort();
    assert_eq!(got, want);
}

/// With a `watermark` interval the watermark moves only that often (Storm's
/// `withWatermarkInterval`): a tuple is late only behind the last watermark, not behind the
/// newest event time. An hour-long interval never moves within this run, so the tuple the
/// lag alone makes late is counted in its window; without the interval it is late.
#[test]
fn a_watermark_interval_moves_the_watermark_only_that_often() {
    let base = 1_793_606_400_000i64;
    let evs = [
        (base, "a"),
        (base + 70_000, "a"),
        (base + 1_000, "a"),
        (base + 130_000, "a"),
    ];
    let dsl = |extra: &str| {
        format!(
            "stdin(format=json, fields=[ts, k]) | w = aggregate(by=[k], window={{tumbling: 1m}}, \
             time=ts, lag=1s{extra}) | stdout\nw | [stream=late] l = stdout(format=json)"
        )
    };
    let minute = |m: i64, n: u32| {
        let start = base + m * 60_000;
        format!("a\t{}\t{}\t{n}", rfc3339(start), rfc3339(start + 60_000))
    };
    let got = run(&dsl(", watermark=1h"), &as_json(&evs, false), &[]);
    assert_eq!(got, [minute(0, 2), minute(1, 1), minute(2, 1)]);
    let late = format!("{{\"ts\":{},\"k\":\"a\"}}", base + 1_000);
    let mut without = vec![minute(0, 1), minute(1, 1), minute(2, 1), late];
    without.sort();
    assert_eq!(run(&dsl(""), &as_json(&evs, false), &[]), without);
}

#[test]
fn count_windows_and_the_end_of_input_flush() {
    let input: String = (0..25).map(|i| format!("{i}\n")).collect();
    let dsl = "stdin | parse(format=regex, pattern=\"(?P<n>\\\\d+)\", types={n: int}) | aggregate(window={tumbling: 10}, ops=[count, sum(n)]) | stdout";
    let got = run(dsl, &input, &[]);
    // Windows of tuples [0,10), [10,20), and the last, open one flushed at the end.
    assert_eq!(got, ["0\t10\t10\t45", "10\t20\t10\t145", "20\t30\t5\t110"]);
    // Sliding by count, three tasks over three workers: without `by` every tuple goes to one
    // task (a global grouping), which counts as a single task would.
    let dsl = "stdin | parse(format=regex, pattern=\"(?P<n>\\\\d+)\", types={n: int}) | aggregate(window={sliding: 10, every: 5}, ops=[count, sum(n)]) x3 | stdout";
    let got = run(dsl, &input, &["-c", "topology.workers=3"]);
    // Brute force: windows [s, s + 10) of tuple positions, s a multiple of 5, holding a tuple.
    let mut want: Vec<String> = (-5..25)
        .step_by(5)
        .map(|s: i64| {
            let ns: Vec<i64> = (s.max(0)..(s + 10).min(25)).collect();
            format!("{s}\t{}\t{}\t{}", s + 10, ns.len(), ns.iter().sum::<i64>())
        })
        .collect();
    want.sort();
    assert_eq!(got, want);
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

/// Brute force for a windowed join of orders `(t, user, amount)` with logins `(t, user, name)`:
/// for every window of `size` every `every` ms holding an order, each order with each login of
/// its user in the same window (`left`: an order without one kept with an empty name).
fn join_expected(
    orders: &[(i64, u32, u32)],
    logins: &[(i64, u32, String)],
    size: i64,
    every: i64,
    left: bool,
) -> Vec<String> {
    let windows_of = |t: i64| {
        let last = t.div_euclid(every) * every;
        (0..size / every).map(move |i| last - i * every)
    };
    let mut want = Vec::new();
    for &(t, user, amount) in orders {
        for s in windows_of(t) {
            let names: Vec<&String> = logins
                .iter()
                .filter(|(lt, u, _)| *u == user && *lt >= s && *lt < s + size)
                .map(|(_, _, n)| n)
                .collect();
            if names.is_empty() && left {
                want.push(format!("{amount}\t"));
            }
            want.extend(names.iter().map(|n| format!("{amount}\t{n}")));
        }
    }
    want.sort();
    want
}

/// `join` on sliding event-time windows: inner and left, against the rows computed here; and
/// the same at parallelism 3 (each input grouped by the key) over three workers.
#[test]
fn inner_and_left_joins_on_sliding_windows() {
    let dir = tempfile::tempdir().expect("tempdir");
    let base = 1_793_606_400_000i64;
    let orders: Vec<(i64, u32, u32)> = (0..120)
        .map(|i| (base + i64::from(i) * 7_300, (i * 7) % 11, i))
        .collect();
    let logins: Vec<(i64, u32, String)> = (0..50)
        .map(|i| (base + i64::from(i) * 17_900, (i * 3) % 13, format!("n{i}")))
        .collect();
    let o: String = orders
        .iter()
        .map(|(t, u, a)| format!("{{\"ts\":{t},\"user\":{u},\"amount\":{a}}}\n"))
        .collect();
    let l: String = logins
        .iter()
        .map(|(t, u, n)| {
            format!(
                "{{\"ts\":\"{}\",\"user\":{u},\"name\":\"{n}\"}}\n",
                rfc3339(*t)
            )
        })
        .collect();
    std::fs::write(dir.path().join("orders.jsonl"), o).expect("write");
    std::fs::write(dir.path().join("logins.jsonl"), l).expect("write");
    let topology = |kind: &str, tasks: u32| {
        format!(
            "o = file(path={}, format=json, fields=[ts, user, amount])\n\
             l = file(path={}, format=json, fields=[ts, user, name])\n\
             o | [fields user] j = join(inputs=[{{from: o, key: user}}, {{from: l, key: user, kind: {kind}}}], \
             select=[o.amount, l.name], window={{sliding: 2m, every: 30s}}, time=ts, lag=1h) x{tasks} | stdout\n\
             l | [fields user] j",
            dir.path().join("orders.jsonl").display(),
            dir.path().join("logins.jsonl").display()
        )
    };
    for (kind, left) in [("inner", false), ("left", true)] {
        let want = join_expected(&orders, &logins, 120_000, 30_000, left);
        assert!(want.len() > orders.len(), "windows overlap: {}", want.len());
        assert_eq!(run(&topology(kind, 1), "", &[]), want, "{kind}");
        assert_eq!(
            run(&topology(kind, 3), "", &["-c", "topology.workers=3"]),
            want,
            "{kind} x3"
        );
    }
}

/// Events as (time, key, value), a window's size and step, the lag (all ms), and the tasks.
type Run = (Vec<(i64, u8, i64)>, i64, i64, i64, u32);

/// Random timestamped events: a rising clock, each event up to `lag` ms behind it (so none is
/// late), over three keys with a value; with a window of `steps` × `every` ms and the tasks.
fn random_runs() -> impl Strategy<Value = Run> {
    (1i64..5, 1i64..4, 0i64..3, 1u32..=4)
        .prop_flat_map(|(steps, every_s, lag_s, tasks)| {
            let (every, lag) = (every_s * 1000, lag_s * 1000);
            let ev = proptest::collection::vec((0i64..1500, 0u8..3, 0i64..=lag, -5i64..50), 1..80);
            (ev, Just(every * steps), Just(every), Just(lag), Just(tasks))
        })
        .prop_map(|(raw, size, every, lag, tasks)| {
            let base = 1_793_606_400_000i64;
            let mut clock = base;
            let events = raw
                .into_iter()
                .map(|(step, key, behind, v)| {
                    clock += step;
                    (clock - behind, key, v)
                })
                .collect();
            (events, size, every, lag, tasks)
        })
}

/// Brute force: per window holding an event and per key, the count and the sum of `v`.
fn count_and_sum(events: &[(i64, u8, i64)], size: i64, every: i64) -> Vec<String> {
    let mut m: BTreeMap<(i64, u8), (u64, i64)> = BTreeMap::new();
    for &(t, k, v) in events {
        let mut s = t.div_euclid(every) * every;
        while s > t - size {
            let e = m.entry((s, k)).or_default();
            e.0 += 1;
            e.1 += v;
            s -= every;
        }
    }
    let mut rows: Vec<String> = m
        .iter()
        .map(|((s, k), (n, sum))| {
            format!("k{k}\t{}\t{}\t{n}\t{sum}", rfc3339(*s), rfc3339(s + size))
        })
        .collect();
    rows.sort();
    rows
}

use proptest::prelude::*;

proptest! {
    // Each case runs the binary: few cases, each a fraction of a second.
    #![proptest_config(ProptestConfig::with_cases(12))]

    /// The runtime's windowed aggregation, at a random parallelism over as many workers, equals
    /// brute force on random streams, window sizes, slides and lags.
    #[test]
    fn windowed_aggregation_at_any_parallelism_equals_brute_force(
        (events, size, every, lag, tasks) in random_runs()
    ) {
        let input: String = events
            .iter()
            .map(|(t, k, v)| format!("{{\"ts\":{t},\"k\":\"k{k}\",\"v\":{v}}}\n"))
            .collect();
        let window = if size == every {
            format!("{{tumbling: {size}ms}}")
        } else {
            format!("{{sliding: {size}ms, every: {every}ms}}")
        };
        let dsl = format!(
            "stdin(format=json, fields=[ts, k, v]) | aggregate(by=[k], ops=[count, sum(v)], window={window}, time=ts, lag={lag}ms) x{tasks} | stdout"
        );
        let workers = format!("topology.workers={tasks}");
        let got = run(&dsl, &input, &["-c", &workers]);
        prop_assert_eq!(got, count_and_sum(&events, size, every));
    }
}

/// `dedupe` over three tasks and three workers: exact (each key grouped to one task), and with a
/// bounded cache (every tuple grouped to one task by a constant field, whose cache forgets the
/// least recently seen key first) — against the first-seen rule computed here.
#[test]
fn dedupe_exact_and_cached_at_parallelism_over_three_workers() {
    let keys: Vec<u32> = (0..300).map(|i| (i * i + 3 * i) % 37).collect();
    let input: String = keys
        .iter()
        .enumerate()
        .map(|(i, k)| format!("k{k},{i},g\n"))
        .collect();
    let mut seen = std::collections::HashSet::new();
    let mut want: Vec<String> = keys
        .iter()
        .enumerate()
        .filter(|(_, k)| seen.insert(**k))
        .map(|(i, _)| i.to_string())
        .collect();
    want.sort();
    let dsl = "stdin | parse(format=csv, columns=[k, i, g]) | [fields k] dedupe(key=[k]) x3 | stdout(fields=[i])";
    assert_eq!(run(dsl, &input, &["-c", "topology.workers=3"]), want);
    // A least-recently-seen cache of 5 keys.
    let mut cache: Vec<u32> = Vec::new();
    let mut want: Vec<String> = Vec::new();
    for (i, k) in keys.iter().enumerate() {
        match cache.iter().position(|c| c == k) {
            Some(at) => {
                cache.remove(at);
            }
            None => {
                want.push(i.to_string());
                if cache.len() == 5 {
                    cache.remove(0);
                }
            }
        }
        cache.push(*k);
    }
    want.sort();
    let dsl = "stdin | parse(format=csv, columns=[k, i, g]) | [fields g] dedupe(key=[k], cache=5) x3 | stdout(fields=[i])";
    assert_eq!(run(dsl, &input, &["-c", "topology.workers=3"]), want);
}

/// `lookup` over two tasks and three workers: every task reads the table again when it changes.
#[test]
fn lookup_tasks_over_three_workers_reload_a_changed_table() {
    use std::io::Write;
    let dir = tempfile::tempdir().expect("tempdir");
    let table = dir.path().join("users.csv");
    std::fs::write(&table, "id,name\n1,ann\n2,bob\n").expect("write");
    let dsl = format!(
        "stdin(format=json, fields=[user]) | lookup(path={}, key=id, on=user, select=[name]) x2 | stdout",
        table.display()
    );
    let mut live = crate::support::Live::spawn(
        std::process::Command::new(assert_cmd::cargo::cargo_bin("storm"))
            .args(["run", "-c", "topology.workers=3", "-e", &dsl])
            .env("STORM_CONF_DIR", dir.path())
            // The reloads are logged at info.
            .env("STORM_LOG", "info"),
    );
    // Shuffled over both tasks: enough tuples that each task sees some, before and after.
    for _ in 0..20 {
        writeln!(live.stdin(), "{{\"user\":1}}").expect("write");
    }
    live.stdin().flush().expect("flush");
    live.wait_for("the first rows out", |out, _| out.lines().count() >= 20);
    std::fs::write(&table, "id,name\n1,anna\n").expect("rewrite");
    live.wait_for("both tasks to reload the table", |_, err| {
        err.matches("reloaded").count() >= 2
    });
    for _ in 0..20 {
        writeln!(live.stdin(), "{{\"user\":1}}").expect("write");
    }
    let (status, text, _) = live.finish();
    assert!(status.success());
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 40);
    assert!(lines[..20].iter().all(|l| *l == "1\tann"), "{text}");
    assert!(lines[20..].iter().all(|l| *l == "1\tanna"), "{text}");
}

/// `finish: true` on a Python bolt of two tasks over three workers: each task is told of the
/// end of its input and emits its own total; together they are the whole count.
#[test]
fn a_python_bolt_with_finish_at_parallelism_over_three_workers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let adapter = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("multilang/python");
    std::fs::write(
        dir.path().join("total.py"),
        format!(
            "import sys\nsys.path.insert(0, {:?})\nimport storm\n\n\
             class Total(storm.BasicBolt):\n    n = 0\n    def process(self, tup):\n        self.n += len(tup.values[0].split())\n\
             \x20   def finish(self):\n        storm.emit([self.n])\n\nTotal().run()\n",
            adapter.display().to_string()
        ),
    )
    .expect("write bolt");
    let path = dir.path().join("total.yaml");
    std::fs::write(
        &path,
        "name: total\nspouts:\n  - { id: lines, type: stdin }\nbolts:\n  - { id: total, type: shell, command: [python3, total.py], fields: [words], finish: true, parallelism: 2 }\n  - { id: print, type: stdout }\nstreams:\n  - { from: lines, to: total, grouping: shuffle }\n  - { from: total, to: print }\n",
    )
    .expect("write topology");
    let text: String = (0..200).map(|i| "w ".repeat(i % 5) + "\n").collect();
    let out = storm(dir.path())
        .current_dir(dir.path())
        .args(["run", "-q", "-c", "topology.workers=3"])
        .arg(&path)
        .write_stdin(text.clone())
        .output()
        .expect("storm runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let totals: Vec<usize> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.parse().expect("a number"))
        .collect();
    assert_eq!(totals.len(), 2, "one total per task");
    assert_eq!(
        totals.iter().sum::<usize>(),
        text.split_whitespace().count()
    );
}

/// `aggregate`'s `top(N, F)`: per key and tumbling window, the N most frequent values with
/// their counts (ties in text order), at parallelism 2 over three workers, against counts
/// computed here.
#[test]
fn aggregate_top_values_per_key_and_window() {
    let base = 1_793_606_400_000i64;
    let events: Vec<(i64, String, String)> = (0..400i64)
        .map(|i| {
            let path = format!("/p{}", (i * i) % 7);
            (base + i * 900, format!("k{}", i % 3), path)
        })
        .collect();
    let input: String = events
        .iter()
        .map(|(t, k, p)| format!("{{\"ts\":{t},\"k\":\"{k}\",\"path\":\"{p}\"}}\n"))
        .collect();
    let mut per: BTreeMap<(String, i64), BTreeMap<&str, i64>> = BTreeMap::new();
    for (t, k, p) in &events {
        let start = t.div_euclid(60_000) * 60_000;
        *per.entry((k.clone(), start))
            .or_default()
            .entry(p)
            .or_default() += 1;
    }
    let mut want: Vec<String> = per
        .iter()
        .map(|((k, s), counts)| {
            let mut ranked: Vec<(&&str, &i64)> = counts.iter().collect();
            ranked.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
            let pairs: Vec<String> = ranked
                .iter()
                .take(2)
                .map(|(p, n)| format!("[\"{p}\",{n}]"))
                .collect();
            format!(
                "{k}\t{}\t{}\t[{}]",
                rfc3339(*s),
                rfc3339(s + 60_000),
                pairs.join(",")
            )
        })
        .collect();
    want.sort();
    let dsl = "stdin(format=json, fields=[ts, k, path]) | aggregate(by=[k], window={tumbling: 1m}, time=ts, ops=[\"top(2, path)\"]) x2 | stdout";
    assert_eq!(run(dsl, &input, &["-c", "topology.workers=3"]), want);
}

/// A windowed aggregate declares its fields in the order of its rows: `by`, `window_start`,
/// `window_end`, then the ops. So JSON output, a CSV header and `stdout(fields=...)` name
/// each value by what it is.
#[test]
fn windowed_aggregate_rows_are_named_by_their_fields() {
    let input = "a,0\na,9999\na,10000\na,19999\n";
    let agg = "stdin(format=csv, columns=[k, t], types={t: int}) | aggregate(by=[k], ops=[count], window={tumbling: 10s}, time=t)";
    let json = run(&format!("{agg} | stdout(format=json)"), input, &[]);
    assert_eq!(
        json,
        [
            r#"{"k":"a","window_start":"1970-01-01T00:00:00.000Z","window_end":"1970-01-01T00:00:10.000Z","count":2}"#,
            r#"{"k":"a","window_start":"1970-01-01T00:00:10.000Z","window_end":"1970-01-01T00:00:20.000Z","count":2}"#,
        ]
    );
    let picked = run(
        &format!("{agg} | stdout(fields=[window_end, count])"),
        input,
        &[],
    );
    assert_eq!(
        picked,
        ["1970-01-01T00:00:10.000Z\t2", "1970-01-01T00:00:20.000Z\t2"]
    );
    let by_count = run(
        "stdin | aggregate(by=[line], ops=[count], window={tumbling: 2}) | stdout(format=csv, header=true)",
        "x\nx\nx\n",
        &[],
    );
    assert_eq!(by_count[0].split(',').count(), 4, "{by_count:?}");
    assert!(
        by_count.contains(&"line,window_start,window_end,count".to_string()),
        "{by_count:?}"
    );
}

/// A `lookup` whose `select` or `key` names a column the table does not have fails at start,
/// naming the columns it has (a misspelt column would otherwise be nulls on every row).
#[test]
fn lookup_of_a_column_the_table_lacks_is_an_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let csv = dir.path().join("t.csv");
    std::fs::write(&csv, "id,name\n1,ann\n").expect("write");
    let json = dir.path().join("t.jsonl");
    std::fs::write(&json, "{\"id\":1,\"name\":\"ann\"}\n{\"id\":2}\n").expect("write");
    for (table, key, select, missing) in [
        (&csv, "id", "nme", "nme"),
        (&csv, "uid", "name", "uid"),
        (&json, "id", "nam", "nam"),
    ] {
        let dsl = format!(
            "stdin | lookup(path={}, key={key}, on=line, select=[{select}]) | stdout",
            table.display()
        );
        let out = storm(dir.path())
            .args(["run", "-e", &dsl])
            .write_stdin("1\n")
            .output()
            .expect("runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{dsl}: {err}");
        assert!(
            err.contains(&format!("the table has no column `{missing}`")),
            "{dsl}: {err}"
        );
    }
    // A JSON row may lack a column another row has: that is a null, not an error.
    let dsl = format!(
        "stdin | lookup(path={}, key=id, on=line, select=[name]) | stdout",
        json.display()
    );
    assert_eq!(run(&dsl, "1\n2\n", &[]), ["1\tann", "2\t"]);
}

/// `emit: update` sends a key's row when it changes, and not when a tuple leaves it as it was.
#[test]
fn update_rows_are_sent_only_when_they_change() {
    let out = run(
        "stdin(format=csv, columns=[k, v], types={v: int}) | aggregate(by=[k], ops=[max(v)], emit=update) | stdout",
        "a,1\nb,2\na,3\na,3\nb,5\na,2\n",
        &[],
    );
    assert_eq!(out, ["a\t1", "a\t3", "b\t2", "b\t5"]);
}

/// Event times with offsets are moved to UTC, with or without a fraction of a second.
#[test]
fn event_times_with_offsets_fall_in_their_utc_windows() {
    let input = "{\"k\":\"a\",\"ts\":\"2026-11-02T10:00:05.000+02:00\"}\n{\"k\":\"a\",\"ts\":\"2026-11-02T03:00:06-05:00\"}\n{\"k\":\"a\",\"ts\":\"2026-11-02T08:00:07Z\"}\n";
    let out = run(
        "stdin(format=json, fields=[k, ts]) | aggregate(by=[k], ops=[count], window={tumbling: 10s}, time=ts) | stdout",
        input,
        &[],
    );
    assert_eq!(
        out,
        ["a\t2026-11-02T08:00:00.000Z\t2026-11-02T08:00:10.000Z\t3"]
    );
}

/// JSON lines as editors and tools write them: a byte-order mark before the first record and
/// blank lines between records are not records; floats keep every digit; `count as n` names
/// the count in the DSL as it does in YAML.
#[test]
fn json_lines_with_a_bom_blank_lines_and_exact_floats() {
    let input = "\u{feff}{\"k\":\"a\",\"v\":-943305.0469559873}\n\n{\"k\":\"a\",\"v\":1.5e-300}\n";
    let out = run(
        "stdin(format=json, fields=[k, v]) | stdout(format=json)",
        input,
        &[],
    );
    assert_eq!(
        out,
        [
            r#"{"k":"a","v":-943305.0469559873}"#,
            r#"{"k":"a","v":1.5e-300}"#,
        ]
    );
    let counted = run(
        "stdin(format=json, fields=[k, v]) | aggregate(by=[k], ops=[count as n]) | stdout(format=json)",
        input,
        &[],
    );
    assert_eq!(counted, [r#"{"k":"a","n":2}"#]);
}

/// Window bounds are times as text: arithmetic on them is refused at validate (with the way to
/// do it), and `parse_time` turns them back into epoch milliseconds.
#[test]
fn window_bounds_are_text_to_the_type_checker() {
    let agg = "stdin(format=csv, columns=[k, t], types={t: int}) | aggregate(by=[k], ops=[count], window={tumbling: 10s}, time=t)";
    let conf = tempfile::tempdir().expect("tempdir");
    let out = storm(conf.path())
        .args([
            "validate",
            "-e",
            &format!("{agg} | filter(\"window_end - window_start > 0\") | stdout"),
        ])
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("parse_time(window_end)"), "{err}");
    let rows = run(
        &format!("{agg} | map(set={{d: \"parse_time(window_end) - parse_time(window_start)\"}}) | stdout(fields=[k, d])"),
        "a,1000\n",
        &[],
    );
    assert_eq!(rows, ["a\t10000"]);
}
