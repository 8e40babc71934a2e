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
