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

/// `storm run` of `topology` with `-c` settings, its stats read back.
fn run_with_stats(topology: &str, settings: &[&str]) -> serde_json::Value {
    let conf = tempfile::tempdir().expect("tempdir");
    let stats_path = conf.path().join("stats.json");
    let mut cmd = storm(conf.path());
    cmd.args(["run", "-q", "-e", topology]);
    for s in settings {
        cmd.args(["-c", s]);
    }
    let out = cmd.arg("--stats").arg(&stats_path).output().expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    crate::support::stats(&stats_path)
}

/// `topology.max.task.parallelism` caps every component's executors and tasks, as Storm caps
/// them when a topology is submitted; unset, what is written holds.
#[test]
fn max_task_parallelism_caps_executors_and_tasks() {
    let topology = "gen = generate(count=1000) | words = split x4 | discard";
    let words = |stats: &serde_json::Value| {
        let c = crate::support::stats_component(stats, "words");
        (c["executors"].as_u64(), c["tasks"].as_u64())
    };
    let capped = run_with_stats(topology, &["topology.max.task.parallelism=2"]);
    assert_eq!(words(&capped), (Some(2), Some(2)));
    let written = run_with_stats(topology, &[]);
    assert_eq!(words(&written), (Some(4), Some(4)));
}

/// `topology.stats.sample.rate` is the share of trees whose complete latency is measured: none
/// at 0, every one at 1.
#[test]
fn the_stats_sample_rate_decides_which_trees_are_timed() {
    let topology = "gen = generate(count=2000) | discard";
    let latency = |stats: &serde_json::Value| {
        crate::support::stats_component(stats, "gen")["complete_latency_ms"].clone()
    };
    let none = run_with_stats(topology, &["topology.stats.sample.rate=0"]);
    assert!(latency(&none).is_null(), "{}", latency(&none));
    let all = run_with_stats(topology, &["topology.stats.sample.rate=1"]);
    assert!(latency(&all)["p50"].as_f64().is_some(), "{}", latency(&all));
}

/// Storm keys whose values are checked but that change nothing here are marked so; a
/// multilang serializer other than JSON, the only one spoken, is refused where it is written.
#[test]
fn checked_keys_without_effect_are_marked_and_another_serializer_is_refused() {
    let conf = tempfile::tempdir().expect("tempdir");
    let out = storm(conf.path())
        .args(["config", "-c", "topology.tuple.compression.enable=true"])
        .output()
        .expect("runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        line_of(&stdout, "topology.tuple.compression.enable").ends_with("(-c)  [no effect]"),
        "{stdout}"
    );
    let unused = storm(conf.path())
        .args([
            "config",
            "--unused",
            "-c",
            "worker.heartbeat.frequency.secs=2",
        ])
        .output()
        .expect("runs");
    let unused = String::from_utf8_lossy(&unused.stdout);
    assert!(
        unused.starts_with("worker.heartbeat.frequency.secs "),
        "{unused}"
    );
    assert!(line_of(&stdout, "topology.max.task.parallelism").ends_with("(default)"));

    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("t.yaml");
    std::fs::write(
        &file,
        "name: t\nconfig:\n  topology.multilang.serializer: com.example.MsgPack\n\
         spouts:\n  - id: s\n    type: generate\nbolts:\n  - id: d\n    type: discard\n\
         streams:\n  - { from: s, to: d, grouping: shuffle }\n",
    )
    .expect("write");
    let out = storm(conf.path())
        .arg("validate")
        .arg(&file)
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("t.yaml:3:")
            && stderr.contains("`topology.multilang.serializer`")
            && stderr.contains("org.apache.storm.multilang.JsonSerializer"),
        "{stderr}"
    );
}
