//! Configuration layering and rules through `storm config` and `storm validate`: each value's
//! origin, storm.yaml from `$STORM_CONF_DIR`, `-c` read as YAML, humantime durations.

use crate::validate::storm;

fn line_of<'a>(stdout: &'a str, key: &str) -> &'a str {
    stdout
        .lines()
        .find(|l| l.starts_with(&format!("{key} ")))
        .unwrap_or("")
}

#[test]
fn each_value_says_where_it_came_from() {
    let conf = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        conf.path().join("storm.yaml"),
        "# mine\ntopology.workers: 3\nnimbus.task.timeout.secs: 2m\nmy.key: [1, 2]\n",
    )
    .expect("write");
    let out = storm(conf.path())
        .args([
            "config",
            "topologies/wordcount.yaml",
            "-c",
            "topology.debug=true",
        ])
        .output()
        .expect("runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let storm_yaml = conf.path().join("storm.yaml").display().to_string();
    assert!(line_of(&stdout, "topology.workers").ends_with("(topologies/wordcount.yaml:3)"));
    assert!(line_of(&stdout, "topology.debug").contains("= true"));
    assert!(line_of(&stdout, "topology.debug").ends_with("(-c)"));
    let timeout = line_of(&stdout, "nimbus.task.timeout.secs");
    assert!(timeout.contains("= 120"), "{timeout}");
    assert!(timeout.ends_with(&format!("({storm_yaml}:3)")), "{timeout}");
    assert!(line_of(&stdout, "my.key").contains("[1,2]"));
    assert!(line_of(&stdout, "topology.receiver.buffer.size").ends_with("(default)"));
}

#[test]
fn config_without_a_file_prints_the_defaults() {
    let conf = tempfile::tempdir().expect("tempdir");
    let out = storm(conf.path()).arg("config").output().expect("runs");
    assert_eq!(out.status.code(), Some(0));
    insta::assert_snapshot!(String::from_utf8_lossy(&out.stdout));
}

#[test]
fn a_rule_broken_in_storm_yaml_names_file_and_line() {
    let conf = tempfile::tempdir().expect("tempdir");
    let path = conf.path().join("storm.yaml");
    std::fs::write(
        &path,
        "topology.workers: 1\ntopology.receiver.buffer.size: 1000\n",
    )
    .expect("write");
    let out = storm(conf.path()).arg("config").output().expect("runs");
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr.trim(),
        format!(
            "error: `topology.receiver.buffer.size` ({}:2): must be a power of two: 512 or 1024",
            path.display()
        )
    );
}

#[test]
fn command_line_overrides_are_checked_and_read_as_yaml() {
    let conf = tempfile::tempdir().expect("tempdir");
    let out = storm(conf.path())
        .args([
            "validate",
            "topologies/wordcount.yaml",
            "-c",
            "topology.executor.send.buffer.size=100",
        ])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "topologies/wordcount.yaml: error: `topology.executor.send.buffer.size` must be a power of two: 64 or 128 (set in -c)"
    );
    let out = storm(conf.path())
        .args([
            "config",
            "-c",
            "topology.message.timeout.secs=1m 30s",
            "-c",
            "supervisor.slots.ports=[7000]",
        ])
        .output()
        .expect("runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(line_of(&stdout, "topology.message.timeout.secs").contains("= 90"));
    assert!(line_of(&stdout, "supervisor.slots.ports").contains("= [7000]"));
}

#[test]
fn a_duration_key_in_a_topology_accepts_humantime() {
    let conf = tempfile::tempdir().expect("tempdir");
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("t.yaml");
    std::fs::write(
        &file,
        "name: t\nconfig:\n  topology.message.timeout.secs: 1m 30s\nspouts:\n  - {id: s, type: stdin}\nbolts:\n  - {id: p, type: stdout}\nstreams:\n  - {from: s, to: p}\n",
    )
    .expect("write");
    let out = storm(conf.path())
        .arg("config")
        .arg(&file)
        .output()
        .expect("runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        line_of(&stdout, "topology.message.timeout.secs").contains("= 90"),
        "{stdout}"
    );
}

#[test]
fn secrets_are_not_printed() {
    let conf = tempfile::tempdir().expect("tempdir");
    let out = storm(conf.path())
        .args(["config", "-c", "storm.cluster.secret=hunter2"])
        .output()
        .expect("runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains("hunter2"));
    assert!(line_of(&stdout, "storm.cluster.secret").contains("\"<hidden>\""));
}

#[test]
fn a_malformed_override_is_a_usage_error() {
    let conf = tempfile::tempdir().expect("tempdir");
    let out = storm(conf.path())
        .args([
            "validate",
            "topologies/wordcount.yaml",
            "-c",
            "topology.workers",
        ])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("expected KEY=VALUE"));
}
