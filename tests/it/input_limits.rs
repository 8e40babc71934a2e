//! Bounded reading of topology input through the real CLI: a device is cut off at the size
//! limit, a file with nothing to run and a Flux include cycle are located errors, and thousands
//! of errors on one long line are reported as the first hundred with a short excerpt each.

use assert_cmd::Command;
use std::time::Duration;

fn storm() -> Command {
    let mut c = Command::cargo_bin("storm").expect("the storm binary");
    c.env_remove("STORM_LOG").timeout(Duration::from_secs(60));
    c
}

#[test]
fn a_device_is_read_only_up_to_the_size_limit() {
    let out = storm()
        .args(["validate", "/dev/zero"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("/dev/zero: too large for a topology file"),
        "{stderr}"
    );
}

#[test]
fn a_topology_with_nothing_to_run_is_a_located_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("empty.yaml"), "name: nothing\n").expect("write");
    let out = storm()
        .current_dir(dir.path())
        .args(["validate", "empty.yaml"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    insta::assert_snapshot!(String::from_utf8_lossy(&out.stderr), @r"
    empty.yaml:1:7: error: the topology has no spouts or bolts
      |
    1 | name: nothing
      |       ^^^^^^^
      = help: a topology needs at least one spout (`spouts:`)
    ");
}

#[test]
fn a_flux_include_cycle_is_a_located_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        dir.path().join("a.yaml"),
        "name: a\nincludes:\n  - resource: false\n    file: b.yaml\n",
    )
    .expect("write");
    std::fs::write(
        dir.path().join("b.yaml"),
        "name: b\nincludes:\n  - resource: false\n    file: a.yaml\n",
    )
    .expect("write");
    let out = storm()
        .current_dir(dir.path())
        .args(["validate", "a.yaml"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("a.yaml:4:11: error: include cycle: ./b.yaml includes ./a.yaml"),
        "{stderr}"
    );
}

/// One line of flow YAML with `n` spouts of an unknown type: `n` errors on one long line.
fn many_errors(n: usize) -> String {
    let spouts: Vec<String> = (0..n)
        .map(|i| format!("{{id: s{i}, type: nope{i}}}"))
        .collect();
    format!("{{name: many, spouts: [{}]}}\n", spouts.join(", "))
}

#[test]
fn thousands_of_errors_are_cut_to_the_first_hundred_with_short_excerpts() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("many.yaml"), many_errors(2000)).expect("write");
    let out = storm()
        .current_dir(dir.path())
        .args(["validate", "many.yaml"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.matches(": error: ").count(), 100);
    assert!(stderr.lines().all(|l| l.chars().count() < 200));
    let tail: Vec<&str> = stderr.lines().rev().take(6).collect();
    let tail: Vec<&str> = tail.into_iter().rev().collect();
    insta::assert_snapshot!(tail.join("\n"));
    // The JSON form holds the same hundred, then one entry counting the rest.
    let out = storm()
        .current_dir(dir.path())
        .args(["validate", "--format", "json", "many.yaml"])
        .output()
        .expect("run");
    let json: serde_json::Value = serde_json::from_slice(&out.stderr).expect("JSON");
    let entries = json.as_array().expect("an array");
    assert_eq!(entries.len(), 101);
    assert!(entries[100]["message"]
        .as_str()
        .is_some_and(|m| m.starts_with("and ") && m.ends_with(" more errors")));
}
