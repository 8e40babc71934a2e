//! Keyed state that spills to disk: past `topology.state.memory.limit`, a run with a state dir
//! writes its coldest keys to a file under `DIR/spill/` and reads them back when they come
//! again; its output is the exact one, in the same order, and a run killed and resumed from
//! its checkpoints (which hold the spilled keys too) is still exact.

use assert_cmd::Command;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

/// Key `i` of `n` comes `i % 3 + 1` times, in a shuffled order.
fn keys_file(dir: &Path, n: usize) -> (String, BTreeMap<String, u64>) {
    let mut lines = Vec::new();
    let mut want = BTreeMap::new();
    for i in 0..n {
        let times = i % 3 + 1;
        want.insert(format!("key{i}"), times as u64);
        lines.extend(std::iter::repeat_n(i, times));
    }
    // A fixed shuffle: each key's lines spread over the input.
    let mut s: u64 = 7;
    for i in (1..lines.len()).rev() {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        lines.swap(i, (s >> 33) as usize % (i + 1));
    }
    let text: String = lines.iter().map(|i| format!("key{i}\n")).collect();
    let path = dir.join("keys.txt");
    std::fs::write(&path, text).expect("input written");
    (path.display().to_string(), want)
}

/// The state memory limit of these runs: 250 kB, which a few tens of thousands of keys pass.
const LIMIT: &str = "topology.state.memory.limit=250000";

fn storm(dir: &Path) -> Command {
    let mut c = Command::cargo_bin("storm").expect("the storm binary");
    c.current_dir(dir)
        .env("STORM_CONF_DIR", dir)
        .env("STORM_LOG", "info")
        .timeout(Duration::from_secs(240));
    c
}

/// Run `topology` with the [`LIMIT`] and a state dir: stdout lines, stderr.
fn spilling_run(dir: &Path, topology: &str, extra: &[&str]) -> (Vec<String>, String) {
    let out = storm(dir)
        .args(["run", "-e", topology, "--state-dir", "state"])
        .args(["-c", LIMIT])
        .args(extra)
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    (stdout.lines().map(String::from).collect(), stderr)
}

/// `key TAB n` lines in byte order of the keys, as `count` and a one-op `aggregate` print.
fn expected_lines(want: &BTreeMap<String, u64>) -> Vec<String> {
    want.iter().map(|(k, n)| format!("{k}\t{n}")).collect()
}

#[test]
fn a_count_past_the_limit_spills_and_prints_exact_totals_in_key_order() {
    for stateful in ["false", "true"] {
        let dir = tempfile::tempdir().expect("tempdir");
        let (path, want) = keys_file(dir.path(), 50_000);
        let topology = format!("file({path}) | count | stdout");
        let stateful = format!("topology.stateful={stateful}");
        let (lines, stderr) = spilling_run(dir.path(), &topology, &["-c", &stateful]);
        assert!(stderr.contains("spilling to"), "{stateful}: {stderr}");
        assert_eq!(lines, expected_lines(&want), "{stateful}");
        let left = std::fs::read_dir(dir.path().join("state/spill")).expect("the spill dir");
        assert_eq!(left.count(), 0, "spill files are removed at the end");
    }
}

#[test]
fn an_aggregate_past_the_limit_spills_and_prints_exact_rows_in_key_order() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (path, want) = keys_file(dir.path(), 50_000);
    let topology = format!("file({path}) | aggregate(by=[line], ops=[count]) | stdout");
    let (lines, stderr) = spilling_run(dir.path(), &topology, &["-c", "topology.stateful=true"]);
    assert!(stderr.contains("spilling to"), "{stderr}");
    // Sorted by the key's text: byte order here.
    assert_eq!(lines, expected_lines(&want));
}

/// A `top` reads its spilled groups back and keeps its best `n` as it goes: the same ranking
/// as in memory (ties in key order).
#[test]
fn a_top_past_the_limit_ranks_as_in_memory() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (path, want) = keys_file(dir.path(), 25_000);
    let topology = format!("file({path}) | top(by=[line], n=5) | stdout");
    let (spilled, stderr) = spilling_run(dir.path(), &topology, &[]);
    assert!(stderr.contains("spilling to"), "{stderr}");
    let mut best: Vec<(&String, &u64)> = want.iter().filter(|(_, n)| **n == 3).collect();
    best.truncate(5);
    let expected: Vec<String> = best
        .iter()
        .enumerate()
        .map(|(i, (k, n))| format!("{}\t{k}\t{n}", i + 1))
        .collect();
    assert_eq!(spilled, expected);
}

/// Without a state dir there is nowhere to spill: the limit ends the run as before.
#[test]
fn without_a_state_dir_the_limit_still_ends_the_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (path, _) = keys_file(dir.path(), 25_000);
    let out = storm(dir.path())
        .args(["run", "-e", &format!("file({path}) | count | discard")])
        .args(["-c", LIMIT])
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("keyed state passed"), "{stderr}");
    assert!(stderr.contains("--state-dir"), "{stderr}");
}

/// Killed twice after a few checkpoints, then resumed to the end: the totals of a count
/// whose keys spill are exact (the checkpoints hold the spilled keys as well).
#[test]
fn a_spilling_count_killed_and_resumed_is_exact() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (path, want) = keys_file(dir.path(), 50_000);
    let topology = format!("name spilled\nlines = file({path})\n  | count x2\n  | stdout");
    let stdout = killed_twice_then_resumed(dir.path(), &topology, "spilled");
    let mut got = BTreeMap::new();
    for line in stdout.lines() {
        let (k, n) = line.split_once('\t').expect("key TAB count");
        let n: u64 = n.parse().expect("a count");
        assert!(got.insert(k.to_string(), n).is_none(), "{k} twice");
    }
    assert_eq!(got, want);
}

/// An exact `dedupe` whose keys spill passes the first line of each key, and no other.
#[test]
fn a_dedupe_past_the_limit_spills_and_passes_each_key_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (path, want) = keys_file(dir.path(), 40_000);
    let topology = format!("file({path}) | dedupe | stdout");
    let (lines, stderr) = spilling_run(dir.path(), &topology, &["-c", "topology.stateful=true"]);
    assert!(stderr.contains("spilling to"), "{stderr}");
    let input = std::fs::read_to_string(&path).expect("input");
    let mut seen = std::collections::HashSet::new();
    let firsts: Vec<String> = input
        .lines()
        .filter(|l| seen.insert(l.to_string()))
        .map(String::from)
        .collect();
    assert_eq!(firsts.len(), want.len());
    assert_eq!(lines, firsts);
}

/// The rows a count-windowed `aggregate(by=[line], ops=[count])` prints for the lines of
/// `path`: per window of `size` tuples in order, `key TAB start TAB end TAB n` in key order.
fn windowed_counts(path: &str, size: usize) -> Vec<String> {
    let text = std::fs::read_to_string(path).expect("input read");
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    for (w, chunk) in lines.chunks(size).enumerate() {
        let mut counts: BTreeMap<&str, u64> = BTreeMap::new();
        for l in chunk {
            *counts.entry(l).or_default() += 1;
        }
        let (start, end) = (w * size, (w + 1) * size);
        out.extend(
            counts
                .iter()
                .map(|(k, n)| format!("{k}\t{start}\t{end}\t{n}")),
        );
    }
    out
}

/// A windowed `aggregate` whose panes pass the limit spills them and reads each window back
/// in key order when it closes: every window exact, stateless or checkpointed, and no spill
/// file is left once the panes retire.
#[test]
fn a_windowed_aggregate_past_the_limit_spills_its_panes_and_prints_each_window_exactly() {
    for stateful in ["false", "true"] {
        let dir = tempfile::tempdir().expect("tempdir");
        let (path, _) = keys_file(dir.path(), 40_000);
        let topology = format!(
            "file({path}) | aggregate(by=[line], window={{tumbling: 30000}}, ops=[count]) | stdout"
        );
        let stateful = format!("topology.stateful={stateful}");
        let (lines, stderr) = spilling_run(dir.path(), &topology, &["-c", &stateful]);
        assert!(stderr.contains("spilling to"), "{stateful}: {stderr}");
        assert_eq!(lines, windowed_counts(&path, 30_000), "{stateful}");
        let left = std::fs::read_dir(dir.path().join("state/spill")).expect("the spill dir");
        assert_eq!(left.count(), 0, "spill files are removed at the end");
    }
}

/// A sliding `top` whose panes spill ranks each window as it would in memory.
#[test]
fn a_sliding_top_past_the_limit_ranks_each_window_as_in_memory() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (path, _) = keys_file(dir.path(), 25_000);
    let topology = format!(
        "file({path}) | top(by=[line], n=3, window={{sliding: 25000, every: 12500}}) | stdout"
    );
    let (spilled, stderr) = spilling_run(dir.path(), &topology, &[]);
    assert!(stderr.contains("spilling to"), "{stderr}");
    let out = storm(dir.path())
        .args(["run", "-e", &topology])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0));
    let in_memory: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(String::from)
        .collect();
    assert!(in_memory.len() >= 12, "{in_memory:?}");
    assert_eq!(spilled, in_memory);
}

/// Killed twice after a few checkpoints, then resumed: one window over the whole input, its
/// pane spilled and saved in the checkpoints, is exact.
#[test]
fn a_spilling_window_killed_and_resumed_is_exact() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (path, _) = keys_file(dir.path(), 40_000);
    let topology = format!(
        "name spilled_window\nlines = file({path})\n  | aggregate(by=[line], window={{tumbling: 10000000}}, ops=[count])\n  | stdout"
    );
    let stdout = killed_twice_then_resumed(dir.path(), &topology, "spilled_window");
    let lines: Vec<String> = stdout.lines().map(String::from).collect();
    assert_eq!(lines, windowed_counts(&path, 10_000_000));
}

/// Run the stateful `topology` named `name` under the [`LIMIT`] with a state dir in `dir`,
/// killed after 3 and after 6 committed checkpoints, then to the end: its standard output.
fn killed_twice_then_resumed(dir: &Path, topology: &str, name: &str) -> String {
    let state = dir.join("state");
    let args: Vec<String> = [
        "run",
        "-e",
        topology,
        "--state-dir",
        &state.display().to_string(),
        "-c",
        "topology.stateful=true",
        "-c",
        LIMIT,
        "-c",
        "topology.state.checkpoint.interval.ms=200",
        "-c",
        "topology.max.spout.pending=4",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for commits in [3, 6] {
        super::checkpoints::kill_after_commits(dir, &args, commits, None);
    }
    let out = storm(dir).args(&args).output().expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(&format!("resuming `{name}` from checkpoint")),
        "{stderr}"
    );
    assert!(stderr.contains("spilling to"), "{stderr}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Orders `(time, user, amount)` and users `(time, id, name)` for a join: 30,000 orders over
/// 12,500 users, a tenth of the users missing and a seventh there twice; written as JSON
/// lines to `orders.jsonl` and `users.jsonl` in `dir`.
type Orders = Vec<(i64, u64, u64)>;
type Users = Vec<(i64, u64, String)>;

fn join_inputs(dir: &Path) -> (Orders, Users) {
    let orders: Orders = (0..30_000u64)
        .map(|i| (i as i64, (i * 7919) % 12_500, i))
        .collect();
    let mut users: Users = Vec::new();
    for k in (0..12_500u64).filter(|k| k % 10 != 3) {
        users.push((k as i64 * 2, k, format!("user{k}")));
        if k % 7 == 0 {
            users.push((k as i64 * 2 + 1, k, format!("again{k}")));
        }
    }
    let lines = |rows: Vec<String>| rows.concat();
    let o = lines(
        orders
            .iter()
            .map(|(t, u, a)| format!("{{\"t\":{t},\"user\":{u},\"amount\":{a}}}\n"))
            .collect(),
    );
    let u = lines(
        users
            .iter()
            .map(|(t, k, n)| format!("{{\"t\":{t},\"id\":{k},\"name\":\"{n}\"}}\n"))
            .collect(),
    );
    std::fs::write(dir.join("orders.jsonl"), o).expect("orders written");
    std::fs::write(dir.join("users.jsonl"), u).expect("users written");
    (orders, users)
}

/// Brute force for `join_topology`: per window of `size` ms (or the whole input), oldest
/// first, each user key in the byte order of its text, each order of it (in input order) with
/// each user of it in the same window (in input order), or with an empty name without one.
fn join_expected(orders: &Orders, users: &Users, size: Option<i64>) -> Vec<String> {
    let window = |t: i64| size.map_or(0, |s| t.div_euclid(s) * s);
    // Per window, per key text: the amounts of its orders and the names of its users.
    type Keys<'a> = BTreeMap<String, (Vec<u64>, Vec<&'a str>)>;
    let mut groups: BTreeMap<i64, Keys<'_>> = BTreeMap::new();
    for (t, user, amount) in orders {
        let key = groups.entry(window(*t)).or_default();
        key.entry(user.to_string()).or_default().0.push(*amount);
    }
    for (t, id, name) in users {
        if let Some(keys) = groups.get_mut(&window(*t)) {
            if let Some((_, names)) = keys.get_mut(&id.to_string()) {
                names.push(name);
            }
        }
    }
    let mut want = Vec::new();
    for keys in groups.values() {
        for (amounts, names) in keys.values() {
            for a in amounts {
                if names.is_empty() {
                    want.push(format!("{a}\t"));
                }
                want.extend(names.iter().map(|n| format!("{a}\t{n}")));
            }
        }
    }
    want
}

/// Orders left-joined with their users (whole, or per event-time window of `size` ms).
fn join_topology(dir: &Path, name: &str, size: Option<i64>) -> String {
    let window = size.map_or(String::new(), |s| {
        format!(", window={{tumbling: {s}ms}}, time=t, lag=100s")
    });
    format!(
        "name {name}\n\
         o = file(path={}, format=json, fields=[t, user, amount])\n\
         u = file(path={}, format=json, fields=[t, id, name])\n\
         o | j = join(inputs=[{{from: o, key: user}}, {{from: u, key: id, kind: left}}], \
         select=[o.amount, u.name]{window}) | stdout\n\
         u | j",
        dir.join("orders.jsonl").display(),
        dir.join("users.jsonl").display(),
    )
}

/// A join whose held tuples pass the limit spills them (whole input, and pane by pane of
/// event-time windows) and prints exactly the rows computed here, in the same order,
/// stateless or checkpointed; no spill file is left.
#[test]
fn a_join_past_the_limit_spills_and_prints_exact_rows() {
    for size in [None, Some(10_000)] {
        for stateful in ["false", "true"] {
            let dir = tempfile::tempdir().expect("tempdir");
            let (orders, users) = join_inputs(dir.path());
            let topology = join_topology(dir.path(), "spilled_join", size);
            let stateful = format!("topology.stateful={stateful}");
            let (lines, stderr) = spilling_run(dir.path(), &topology, &["-c", &stateful]);
            assert!(
                stderr.contains("spilling to"),
                "{size:?} {stateful}: {stderr}"
            );
            let want = join_expected(&orders, &users, size);
            assert!(want.len() > 30_000, "{}", want.len());
            assert_eq!(lines, want, "{size:?} {stateful}");
            let left = std::fs::read_dir(dir.path().join("state/spill")).expect("the spill dir");
            assert_eq!(left.count(), 0, "spill files are removed at the end");
        }
    }
}

/// Killed twice after a few checkpoints, then resumed: a join whose tuples spill, restored
/// from checkpoints that hold the spilled tuples too, prints the exact rows.
#[test]
fn a_spilling_join_killed_and_resumed_is_exact() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (orders, users) = join_inputs(dir.path());
    let topology = join_topology(dir.path(), "spilled_join", None);
    let stdout = killed_twice_then_resumed(dir.path(), &topology, "spilled_join");
    let lines: Vec<String> = stdout.lines().map(String::from).collect();
    assert_eq!(lines, join_expected(&orders, &users, None));
}
