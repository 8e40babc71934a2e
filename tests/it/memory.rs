//! Keyed state under a memory bound, through the real CLI: past `topology.state.memory.limit`
//! a run ends with an error naming the component, the task and its key count (exit 1), and
//! under it (or with the bound off) the same run completes.

use assert_cmd::Command;
use std::time::Duration;

fn storm() -> Command {
    let mut c = Command::cargo_bin("storm").expect("the storm binary");
    c.env_remove("STORM_LOG").timeout(Duration::from_secs(120));
    c
}

/// A file of `n` distinct lines, and the directory that holds it.
fn distinct_keys(n: usize) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let text: String = (0..n).map(|i| format!("key{i}\n")).collect();
    let path = dir.path().join("keys.txt");
    std::fs::write(&path, text).expect("write");
    (dir, path.display().to_string())
}

/// Run `bolt` over 100k distinct keys with the bound `limit` (and `config`): exit code and
/// stderr.
fn run_bounded(bolt: &str, limit: &str, config: &[&str]) -> (Option<i32>, String) {
    let (_dir, path) = distinct_keys(100_000);
    let mut cmd = storm();
    cmd.current_dir(_dir.path())
        .args(["run", "-e", &format!("file({path}) | {bolt} | discard")])
        .args(["-c", &format!("topology.state.memory.limit={limit}")]);
    for c in config {
        cmd.args(["-c", c]);
    }
    let out = cmd.output().expect("run");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

#[test]
fn a_count_past_the_memory_limit_ends_the_run_naming_component_task_and_keys() {
    let (code, stderr) = run_bounded("count", "1000000", &[]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("component `count`: count (task "),
        "{stderr}"
    );
    assert!(
        stderr.contains("keyed state passed topology.state.memory.limit (1000000 bytes) at "),
        "{stderr}"
    );
    assert!(stderr.contains(" keys in this task"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn a_dedupe_past_the_memory_limit_ends_the_run() {
    let (code, stderr) = run_bounded("dedupe", "1000000", &[]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("component `dedupe`: dedupe (task "),
        "{stderr}"
    );
}

#[test]
fn a_stateful_count_past_the_memory_limit_ends_the_run() {
    let (code, stderr) = run_bounded("count", "1000000", &["topology.stateful=true"]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("keyed state passed"), "{stderr}");
}

#[test]
fn the_same_run_completes_with_the_bound_off_or_large_enough() {
    for limit in ["0", "1000000000"] {
        let (code, stderr) = run_bounded("count", limit, &[]);
        assert_eq!(code, Some(0), "limit {limit}: {stderr}");
    }
}

#[test]
fn a_negative_limit_is_refused() {
    let (code, stderr) = run_bounded("count", "-5", &[]);
    assert_eq!(code, Some(1));
    assert!(
        stderr.contains("`topology.state.memory.limit` must be ≥ 0 (got -5)"),
        "{stderr}"
    );
}

#[test]
fn an_aggregate_past_the_memory_limit_ends_the_run() {
    let (code, stderr) = run_bounded("aggregate(by=[line], ops=[count])", "1000000", &[]);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.contains("component `aggregate`: aggregate (task "),
        "{stderr}"
    );
}

/// A windowed event-time join whose second input sends nothing (its stdin left open) emits
/// its first window while the run goes on: with `idle`, the silent input stops holding the
/// watermark back.
#[test]
fn a_join_with_a_silent_input_closes_windows_after_idle() {
    use std::io::{BufRead, Write};
    // A whole minute, so the first window holds the first tuple alone.
    let base: i64 = 1_700_000_040_000;
    let dsl = "s = stdin(format=json, fields=[ts, user, side])\n\
               s | o = filter(\"side == \\\"o\\\"\")\n\
               s | l = filter(\"side == \\\"l\\\"\")\n\
               o | j = join(inputs=[{from: o, key: user}, {from: l, key: user, kind: left}], \
               select=[o.ts, o.user], window={tumbling: 1m}, time=ts, lag=1s, idle=1s) | stdout\n\
               l | j";
    let bin = assert_cmd::cargo::cargo_bin("storm");
    let mut child = std::process::Command::new(bin)
        .args(["run", "-e", dsl])
        .env_remove("STORM_LOG")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn storm");
    let mut stdin = child.stdin.take().expect("stdin");
    for (ts, user) in [(base + 5_000, 1), (base + 70_000, 2), (base + 130_000, 3)] {
        writeln!(stdin, r#"{{"ts": {ts}, "user": {user}, "side": "o"}}"#).expect("write");
    }
    stdin.flush().expect("flush");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    // The input stays open: only `idle` can close the first window.
    let first = rx.recv_timeout(Duration::from_secs(60));
    let _ = child.kill();
    let _ = child.wait();
    drop(stdin);
    let first = first.expect("a window closed while the silent input stayed open");
    assert_eq!(first, format!("{}\t1", base + 5_000));
}

#[test]
fn idle_without_event_time_is_refused() {
    let out = storm()
        .args([
            "validate",
            "-e",
            "stdin | aggregate(window={tumbling: 1m}, idle=5s) | stdout",
        ])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("`idle` goes with event time: name the `time` field"),
        "{stderr}"
    );
}

#[test]
fn validate_warns_of_a_lag_that_holds_windows_for_ever() {
    let out = storm()
        .args([
            "validate",
            "-e",
            "stdin(format=json, fields=[ts, k]) | aggregate(by=[k], window={tumbling: 1m}, time=ts, lag=100y) | stdout",
        ])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(0));
    insta::assert_snapshot!(String::from_utf8_lossy(&out.stderr), @r"
    <-e>:1:92: warning: `lag` of 100y keeps each window open that long after it ends: up to 52596001 windows of every key are held in memory at once
      |
    1 | stdin(format=json, fields=[ts, k]) | aggregate(by=[k], window={tumbling: 1m}, time=ts, lag=100y) | stdout
      |                                                                                            ^^^^
      = help: a lag of at most a day and 1000 windows keeps memory bounded; tuples later than the lag go to the `late` stream
    ");
}

#[test]
fn validate_warns_of_a_join_lag_of_many_windows_and_not_of_a_short_one() {
    let dsl = |lag: &str| {
        format!(
            "s = stdin(format=json, fields=[ts, user])\n\
             s | o = filter(\"user > 0\")\n\
             s | l = filter(\"user < 0\")\n\
             o | j = join(inputs=[{{from: o, key: user}}, {{from: l, key: user}}], \
             select=[o.ts], window={{tumbling: 1s}}, time=ts, lag={lag}) | stdout\n\
             l | j"
        )
    };
    let stderr = |lag: &str| {
        let out = storm()
            .args(["validate", "-e", &dsl(lag)])
            .output()
            .expect("run");
        assert_eq!(out.status.code(), Some(0));
        String::from_utf8_lossy(&out.stderr).to_string()
    };
    let long = stderr("2h");
    assert!(
        long.contains("warning: `lag` of 2h keeps each window open that long after it ends: up to 7201 windows"),
        "{long}"
    );
    assert!(!stderr("5s").contains("warning"));
}

#[test]
fn a_join_without_a_window_past_the_memory_limit_ends_the_run() {
    let (_dir, path) = distinct_keys(100_000);
    let dsl = format!(
        "s = file({path})\n\
         s | a = filter(\"true\")\n\
         s | b = filter(\"true\")\n\
         a | j = join(inputs=[{{from: a, key: line}}, {{from: b, key: line}}], select=[a.line]) | discard\n\
         b | j"
    );
    let out = storm()
        .current_dir(_dir.path())
        .args([
            "run",
            "-e",
            &dsl,
            "-c",
            "topology.state.memory.limit=1000000",
        ])
        .output()
        .expect("run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("component `j`: join (task "), "{stderr}");
}
