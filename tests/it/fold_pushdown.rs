//! An `aggregate` chained right after a `stdin` spout that reads fields is folded where the
//! lines are read, a chunk at a time: every run gives the rows, the counts of late and unusable
//! values, and the counters a run with the aggregate on a thread of its own gives (chaining
//! off), on input shaped to break folding: times out of order, late by a little and by a lot,
//! missing or not times at all, values that are not numbers, a key missing, keys too many to
//! fold, escapes and cut lines the readers leave to the parser.

use super::support::stats_component as component;
use std::time::Duration;

/// Event lines from 08:00 on, 37 ms apart on average: `(ts, endpoint, latency)` per line, with
/// the times jittered by up to 5 s, every 997th line 10 minutes behind (late for any window
/// here), every 1499th 2 minutes behind (late for a 1-minute window, inside a 5-minute one),
/// every 501st without a usable time, every 333rd latency not a number, every 251st line
/// without an endpoint, lines 9000–10999 each with an endpoint of its own (more keys than a
/// chunk folds), every 4999th endpoint escaped and every 2477th line cut short (in JSON), and
/// every 3001st latency `true` (a kind `min`/`max` keep apart).
fn events(rows: usize) -> Vec<(String, Option<String>, String)> {
    let endpoints = ["/api/a", "/api/b", "/api/c", "/api/d", "/pay"];
    (0..rows)
        .map(|i| {
            let mut ms = 8 * 3_600_000 + i as i64 * 37 + ((i * 7919) % 10_000) as i64 - 5_000;
            if i % 997 == 0 {
                ms -= 600_000;
            } else if i % 1499 == 0 {
                ms -= 120_000;
            }
            let ts = match i % 501 {
                0 => "not a time".to_string(),
                _ => format!(
                    "2026-11-02T{:02}:{:02}:{:02}.{:03}Z",
                    ms / 3_600_000,
                    ms / 60_000 % 60,
                    ms / 1000 % 60,
                    ms % 1000
                ),
            };
            let endpoint = match i {
                _ if i % 251 == 0 => None,
                9000..=10_999 => Some(format!("/u/{i}")),
                _ if i % 4999 == 0 => Some("/caf\\u00e9".to_string()),
                _ => Some(endpoints[(i * 31 / 7) % endpoints.len()].to_string()),
            };
            let latency = match i % 333 {
                0 => "\"n/a\"".to_string(),
                _ if i % 3001 == 0 => "true".to_string(),
                _ => format!("{}.{:03}", (i * 17) % 300, (i * 7) % 1000),
            };
            (ts, endpoint, latency)
        })
        .collect()
}

fn json_lines(rows: usize) -> String {
    let mut text = String::new();
    for (i, (ts, endpoint, latency)) in events(rows).into_iter().enumerate() {
        let endpoint = endpoint.map_or(String::new(), |e| format!(r#""endpoint":"{e}","#));
        let line = format!(r#"{{"ts":"{ts}",{endpoint}"latency_ms":{latency},"user":{i}}}"#);
        match i % 2477 {
            0 => text.push_str(&line[..line.len() / 2]),
            _ => text.push_str(&line),
        }
        text.push('\n');
    }
    text
}

fn csv_lines(rows: usize) -> String {
    let mut text = String::from("ts,endpoint,latency_ms,user\n");
    for (i, (ts, endpoint, latency)) in events(rows).into_iter().enumerate() {
        let endpoint = endpoint.unwrap_or_default().replace("\\u00e9", "é");
        text.push_str(&format!(
            "{ts},{endpoint},{},{i}\n",
            latency.trim_matches('"')
        ));
    }
    text
}

/// One run of `topology` on `text`: its output, the counters of `stdin` and `aggregate`, the
/// aggregate's closing warnings (how many values it left out and why), and the spout's note of
/// the lines it handed over folded.
struct Run {
    rows: String,
    counters: Vec<(String, serde_json::Value)>,
    warnings: Vec<String>,
    folded_note: String,
}

fn run(topology: &str, text: &str, chaining: bool) -> Run {
    let conf = tempfile::tempdir().expect("tempdir");
    let stats_path = conf.path().join("stats.json");
    let out = super::run::storm(conf.path())
        .timeout(Duration::from_secs(240))
        .env("STORM_LOG", "warn,storm::components::stdin_file=debug")
        .args(["run", "-e", topology, "--stats"])
        .arg(&stats_path)
        .args(["-c", &format!("topology.chaining={chaining}")])
        .write_stdin(text.to_string())
        .output()
        .expect("runs");
    assert!(out.status.success(), "{out:?}");
    let stats = super::support::stats(&stats_path);
    let mut counters = Vec::new();
    for (id, keys) in [
        (
            "stdin",
            &["emitted", "transferred", "acked", "failed", "dropped"][..],
        ),
        (
            "aggregate",
            &["executed", "acked", "failed", "emitted", "dropped"][..],
        ),
    ] {
        let c = component(&stats, id);
        for key in keys {
            counters.push((format!("{id}.{key}"), c[*key].clone()));
        }
    }
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let tail = |l: &str| l.split_once("aggregate: ").map(|(_, t)| t.to_string());
    let warnings = stderr
        .lines()
        .filter(|l| l.contains("were skipped") || l.contains("were left out"))
        .filter_map(tail)
        .collect();
    let folded_note = stderr
        .lines()
        .find(|l| l.contains("folded where they were read"))
        .unwrap_or_default()
        .to_string();
    Run {
        rows: String::from_utf8(out.stdout).expect("UTF-8"),
        counters,
        warnings,
        folded_note,
    }
}

/// How many lines the note says were folded.
fn lines_folded(note: &str) -> u64 {
    note.split_once(" chunks (")
        .and_then(|(_, rest)| rest.split_once(" lines)"))
        .and_then(|(n, _)| n.parse().ok())
        .unwrap_or_else(|| panic!("no count of folded lines in {note:?}"))
}

/// The run folded (chaining on) gives what the run one line at a time (chaining off) gives, and
/// folded a good part of its lines but not all (the lines 2 minutes behind keep a sliding
/// window's chunks from folding: most of them). Returns the rows.
fn folded_as_one_by_one(topology: &str, text: &str, lines: u64) -> String {
    let folded = run(topology, text, true);
    let apart = run(topology, text, false);
    assert_eq!(
        folded.rows, apart.rows,
        "{topology}: the same rows in the same order"
    );
    assert_eq!(folded.counters, apart.counters, "{topology}");
    assert_eq!(folded.warnings, apart.warnings, "{topology}");
    assert!(
        apart.folded_note.is_empty(),
        "nothing is folded apart: {}",
        apart.folded_note
    );
    let n = lines_folded(&folded.folded_note);
    assert!(
        n > lines / 5 && n < lines,
        "{topology}: {n} of {lines} lines folded"
    );
    assert!(folded.rows.lines().count() > 10, "{}", folded.rows);
    folded.rows
}

const ROWS: usize = 30_000;

#[test]
fn a_tumbling_window_by_event_time_folded_gives_what_one_line_at_a_time_gives() {
    let text = json_lines(ROWS);
    let topology = "stdin(format=json, fields=[ts, endpoint, latency_ms]) \
        | aggregate(by=[endpoint], window={tumbling: 1m}, time=ts, ops=[count, sum(latency_ms), \
          avg(latency_ms), min(latency_ms), max(latency_ms), first(latency_ms), last(latency_ms)]) \
        | stdout";
    let rows = folded_as_one_by_one(topology, &text, ROWS as u64);
    let warned = run(topology, &text, true).warnings;
    assert_eq!(
        warned.len(),
        2,
        "late and unusable values are counted: {warned:?}"
    );
    assert!(rows.contains("/u/9500\t"), "{rows}");
}

#[test]
fn a_sliding_window_with_a_lag_folded_gives_what_one_line_at_a_time_gives() {
    let topology = "stdin(format=json, fields=[ts, endpoint, latency_ms]) \
        | aggregate(by=[endpoint], window={sliding: 5m, every: 1m}, time=ts, lag=30s, \
          ops=[count, avg(latency_ms), max(latency_ms), last(latency_ms)]) | stdout";
    folded_as_one_by_one(topology, &json_lines(ROWS), ROWS as u64);
}

#[test]
fn csv_windows_and_a_top_folded_give_what_one_line_at_a_time_gives() {
    let text = csv_lines(ROWS);
    let fields = "stdin(format=csv, header=true, fields=[ts, endpoint, latency_ms])";
    let window = format!(
        "{fields} | aggregate(by=[endpoint], window={{tumbling: 2m}}, time=ts, lag=10s, \
         ops=[count, sum(latency_ms), min(latency_ms)]) | stdout"
    );
    folded_as_one_by_one(&window, &text, ROWS as u64);
    let top = format!(
        "{fields} | aggregate = top(n=3, by=[endpoint], score=latency_ms, \
         window={{tumbling: 5m}}, time=ts) | stdout"
    );
    folded_as_one_by_one(&top, &text, ROWS as u64);
}

#[test]
fn a_group_by_without_a_window_folded_gives_what_one_line_at_a_time_gives() {
    let topology = "stdin(format=json, fields=[endpoint, latency_ms, ts]) \
        | aggregate(by=[endpoint, ts], ops=[count, sum(latency_ms), max(latency_ms)]) | stdout";
    // Keyed by the time too: most chunks hold too many keys to fold.
    let text = json_lines(ROWS);
    let folded = run(topology, &text, true);
    let apart = run(topology, &text, false);
    assert_eq!(folded.rows, apart.rows);
    assert_eq!(folded.counters, apart.counters);
    let by_endpoint = "stdin(format=json, fields=[endpoint, latency_ms]) \
        | aggregate(by=[endpoint], ops=[count, avg(latency_ms), first(latency_ms)]) | stdout";
    folded_as_one_by_one(by_endpoint, &text, ROWS as u64);
}

#[test]
fn nothing_is_folded_where_a_late_line_goes_somewhere_or_the_sketch_is_heavy() {
    let text = json_lines(5_000);
    for topology in [
        "stdin(format=json, fields=[ts, endpoint]) \
         | aggregate = aggregate(by=[endpoint], window={tumbling: 1m}, time=ts) | stdout\n\
         aggregate | [stream=late] discard",
        "stdin(format=json, fields=[ts, endpoint, latency_ms]) \
         | aggregate(by=[endpoint], window={tumbling: 1m}, time=ts, \
           ops=[percentile(latency_ms, 0.9)]) | stdout",
    ] {
        let folded = run(topology, &text, true);
        assert_eq!(folded.folded_note, "", "{topology}");
        assert!(!folded.rows.is_empty());
    }
}

/// A word count's run: the counts printed, the counters of every component, and the spout's
/// note of the lines it folded (empty when it folded none).
fn word_count(topology: &str, text: &[u8], chaining: bool) -> (Counts, Vec<(String, u64)>, String) {
    let switch = format!("topology.chaining={chaining}");
    counted(&["-e", topology, "-c", &switch], text)
}

/// [`word_count`] with the topology and settings in `args`.
fn counted(args: &[&str], text: &[u8]) -> (Counts, Vec<(String, u64)>, String) {
    let conf = tempfile::tempdir().expect("tempdir");
    let stats_path = conf.path().join("stats.json");
    let out = super::run::storm(conf.path())
        .timeout(Duration::from_secs(240))
        .env("STORM_LOG", "warn,storm::components::stdin_file=debug")
        .arg("run")
        .args(args)
        .arg("--stats")
        .arg(&stats_path)
        .write_stdin(text.to_vec())
        .output()
        .expect("runs");
    assert!(out.status.success(), "{args:?}: {out:?}");
    let stats = super::support::stats(&stats_path);
    let mut counters = Vec::new();
    for c in stats["components"].as_array().expect("components") {
        let id = c["id"].as_str().expect("an id");
        for key in ["emitted", "transferred", "executed", "acked", "failed"] {
            counters.push((format!("{id}.{key}"), c[key].as_u64().expect("a count")));
        }
        // Each word goes to the count task its grouping gives it, folded or not (a shuffle
        // into `split` spreads lines by chance: its tasks are compared as a whole).
        for t in c["per_task"]
            .as_array()
            .filter(|_| id == "count")
            .into_iter()
            .flatten()
        {
            let executed = t["executed"].as_u64().expect("a count");
            counters.push((format!("count[{}].executed", t["task"]), executed));
        }
    }
    counters.retain(|(k, _)| !k.starts_with("__acker") && !k.starts_with("stdout"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let note = stderr
        .lines()
        .find(|l| l.contains("folded where they were read"))
        .unwrap_or_default()
        .to_string();
    (super::run::parse_counts(&out.stdout), counters, note)
}

type Counts = std::collections::BTreeMap<String, u64>;

/// The word count folded counts what Python-like splitting counts and what the run one tuple
/// at a time counts (partial aggregation off: nothing folded), component by component: with
/// `split` chained onto the spout, and on a thread of its own (chaining off), where the spout
/// folds past it unless `split` reads a named field (known only once it is prepared, on its
/// own thread).
fn counted_as_one_by_one(topology: &str, text: &[u8], expected: &Counts) -> Vec<(String, u64)> {
    let off = ["-e", topology, "-c", "topology.partial.aggregation=false"];
    let (apart, apart_counters, apart_note) = counted(&off, text);
    assert_eq!(&apart, expected, "{topology}: one by one");
    assert_eq!(apart_note, "");
    for chaining in [true, false] {
        let (folded, counters, note) = word_count(topology, text, chaining);
        assert_eq!(&folded, expected, "{topology}: folded, chaining {chaining}");
        assert_eq!(counters, apart_counters, "{topology}, chaining {chaining}");
        match chaining || !topology.contains("field=") {
            true => assert!(lines_folded(&note) > 0, "{topology}: {note:?}"),
            false => assert_eq!(note, "", "{topology}"),
        }
    }
    apart_counters
}

#[test]
fn a_word_count_folded_where_the_lines_are_read_counts_every_word_once() {
    let text = super::run::messy_text(3_000_000, 11);
    let expected = super::run::expected_counts(&text);
    let counters = counted_as_one_by_one("stdin | split | count(word) | stdout", &text, &expected);
    let get = |k: &str| counters.iter().find(|(c, _)| c == k).map(|(_, n)| *n);
    let lines = text.split(|&b| b == b'\n').count() as u64 - 1;
    let words: u64 = expected.values().sum();
    assert_eq!(get("stdin.emitted"), Some(lines));
    assert_eq!(get("stdin.acked"), Some(lines));
    assert_eq!(get("split.executed"), Some(lines));
    assert_eq!(get("split.emitted"), Some(words));
    assert_eq!(get("count.executed"), Some(words));
}

#[test]
fn words_split_by_a_separator_or_from_a_field_of_parsed_lines_fold_the_same_counts() {
    let mut csv = String::from("id,text\n");
    let mut by_comma = String::new();
    let mut expected = Counts::new();
    for i in 0..40_000 {
        let words = ["alpha", "beta", "gamma", "δέλτα", "epsilon"];
        let line: Vec<&str> = (0..i % 6).map(|k| words[(i * 7 + k) % 5]).collect();
        // A quoted cell now and then: its line is the parser's, and its chunk is not folded.
        match i % 97 {
            0 => csv.push_str(&format!("{i},\"{}\"\n", line.join(" "))),
            _ => csv.push_str(&format!("{i},{}\n", line.join(" "))),
        }
        by_comma.push_str(&format!("{},\n", line.join(",")));
        for w in line {
            *expected.entry(w.to_string()).or_default() += 1;
        }
    }
    counted_as_one_by_one(
        "stdin | split(separator=\",\") | count(word) | stdout",
        by_comma.as_bytes(),
        &expected,
    );
    counted_as_one_by_one(
        "stdin(format=csv, header=true, fields=[id, text]) | split(field=text) \
         | count(word) | stdout",
        csv.as_bytes(),
        &expected,
    );
}

#[test]
fn a_count_in_two_tasks_gets_its_words_dealt_and_one_emitting_updates_gets_every_word() {
    let text = super::run::messy_text(300_000, 5);
    let expected = super::run::expected_counts(&text);
    counted_as_one_by_one("stdin | split | count(word) x2 | stdout", &text, &expected);
    let topology = "stdin | split | count(word, emit=update) | filter(\"count == 1\") | stdout";
    let (_, counters, note) = word_count(topology, &text, true);
    assert_eq!(note, "", "updates: nothing folded");
    let executed = counters.iter().find(|(k, _)| k == "count.executed");
    assert_eq!(
        executed.map(|(_, n)| *n),
        Some(expected.values().sum::<u64>())
    );
}

/// `topologies/wordcount.yaml` (Storm's shape: `split` x4 shuffled from the spout, `count` x2 by
/// word) folds too: the spout counts the words and deals them to the two `count` tasks as
/// `split`'s grouping would, and every component counts what it counts with partial
/// aggregation off (nothing folded).
#[test]
fn the_storm_shaped_word_count_folds_past_four_splits_into_two_counts() {
    let text = super::run::messy_text(2_000_000, 13);
    let expected = super::run::expected_counts(&text);
    let yaml = concat!(env!("CARGO_MANIFEST_DIR"), "/topologies/wordcount.yaml");
    let (counts, counters, note) = counted(&[yaml], &text);
    let off = ["-c", "topology.partial.aggregation=false"];
    let (apart, apart_counters, apart_note) = counted(&[&[yaml][..], &off[..]].concat(), &text);
    assert_eq!(counts, expected);
    assert_eq!(apart, expected);
    assert!(lines_folded(&note) > 0, "{note:?}");
    assert_eq!(apart_note, "");
    let totals = |c: &[(String, u64)]| {
        c.iter()
            .filter(|(k, _)| !k.starts_with("print"))
            .cloned()
            .collect::<Vec<_>>()
    };
    assert_eq!(totals(&counters), totals(&apart_counters));
}

/// With exactly-once state the word count still folds where its lines are read (each chunk's
/// counts go to `count`'s gate tagged with their checkpoint round): Storm's shape and the
/// one-liner count every word once, and every component counts what it counts with partial
/// aggregation off (nothing folded). Resumes after a kill: `checkpoints.rs`.
#[test]
fn a_word_count_with_state_folds_and_counts_what_one_tuple_at_a_time_counts() {
    let text = super::run::messy_text(1_500_000, 19);
    let expected = super::run::expected_counts(&text);
    let yaml = concat!(env!("CARGO_MANIFEST_DIR"), "/topologies/wordcount.yaml");
    let dirs = tempfile::tempdir().expect("tempdir");
    for (i, topology) in [
        ["-e", "stdin | split | count(word) x2 | stdout"],
        ["", yaml],
    ]
    .iter()
    .enumerate()
    {
        let mut runs = Vec::new();
        for (j, fold) in ["true", "false"].iter().enumerate() {
            let state = dirs.path().join(format!("state-{i}-{j}"));
            let partial = format!("topology.partial.aggregation={fold}");
            let mut args: Vec<&str> = topology.iter().copied().filter(|a| !a.is_empty()).collect();
            let state = state.display().to_string();
            args.extend(["-c", "topology.stateful=true", "--state-dir", &state]);
            args.extend([
                "-c",
                "topology.state.checkpoint.interval.ms=20",
                "-c",
                &partial,
            ]);
            runs.push(counted(&args, &text));
        }
        let (folded, apart) = (&runs[0], &runs[1]);
        assert_eq!(folded.0, expected, "{topology:?}: folded");
        assert_eq!(apart.0, expected, "{topology:?}: one by one");
        assert!(lines_folded(&folded.2) > 0, "{topology:?}: {:?}", folded.2);
        assert_eq!(apart.2, "", "{topology:?}");
        let totals = |c: &[(String, u64)]| {
            c.iter()
                .filter(|(k, _)| !k.starts_with("print"))
                .cloned()
                .collect::<Vec<_>>()
        };
        assert_eq!(totals(&folded.1), totals(&apart.1), "{topology:?}");
    }
}
