//! `storm run`: exact results through the local engine at any parallelism, worker count and
//! queue size; ending on end of input, `--duration` and signals; a closed stdout; `--stats`.

use assert_cmd::Command;
use std::collections::BTreeMap;
use std::path::Path;

/// The storm binary with its own (empty) configuration folder and no log level set.
pub fn storm(conf_dir: &Path) -> Command {
    let mut cmd = Command::cargo_bin("storm").expect("the storm binary is built");
    cmd.env("STORM_CONF_DIR", conf_dir).env_remove("STORM_LOG");
    cmd
}

/// `storm run ARGS --stats FILE` on `stdin`, which must succeed (within 240 s): the counts it
/// printed (`word<TAB>n` lines) and its stats.
pub fn counted_run(args: &[&str], stdin: &[u8]) -> (BTreeMap<String, u64>, serde_json::Value) {
    let conf = tempfile::tempdir().expect("tempdir");
    let stats_path = conf.path().join("stats.json");
    let out = storm(conf.path())
        .timeout(std::time::Duration::from_secs(240))
        .arg("run")
        .args(args)
        .arg("--stats")
        .arg(&stats_path)
        .write_stdin(stdin.to_vec())
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        parse_counts(&out.stdout),
        super::support::stats(&stats_path),
    )
}

/// A deterministic text of about `bytes` bytes: words with UTF-8, CRLF and LF line ends,
/// tabs and runs of spaces, and now and then a line with invalid UTF-8.
pub fn messy_text(bytes: usize, seed: u64) -> Vec<u8> {
    let words = [
        "storm", "spout", "bolt", "tuple", "acker", "nimbus", "zoo", "keeper", "é", "ñandú",
        "straße", "øre", "日本", "naïve", "x", "yy",
    ];
    let mut out = Vec::with_capacity(bytes + 100);
    let mut s = seed;
    let mut next = || {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (s >> 33) as usize
    };
    while out.len() < bytes {
        let n = next() % 12;
        for i in 0..n {
            if i > 0 {
                out.extend_from_slice(if next() % 7 == 0 { b"  \t " } else { b" " });
            }
            out.extend_from_slice(words[next() % words.len()].as_bytes());
        }
        if next() % 50 == 0 {
            out.extend_from_slice(b" bad\xff\xfebytes");
        }
        out.extend_from_slice(if next() % 3 == 0 { b"\r\n" } else { b"\n" });
    }
    out
}

/// What `storm run topologies/wordcount.yaml` must print, computed here independently.
pub fn expected_counts(text: &[u8]) -> BTreeMap<String, u64> {
    let mut counts = BTreeMap::new();
    for line in text.split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        for w in String::from_utf8_lossy(line).split_whitespace() {
            *counts.entry(w.to_string()).or_insert(0) += 1;
        }
    }
    counts
}

pub fn parse_counts(stdout: &[u8]) -> BTreeMap<String, u64> {
    let text = String::from_utf8(stdout.to_vec()).expect("stdout is UTF-8");
    let mut counts = BTreeMap::new();
    for line in text.lines() {
        let (w, n) = line.rsplit_once('\t').expect("word<TAB>count");
        let n: u64 = n.parse().expect("a count");
        assert!(
            counts.insert(w.to_string(), n).is_none(),
            "word {w:?} printed twice"
        );
    }
    counts
}

#[test]
fn word_count_is_exact_for_any_parallelism_workers_and_queue_size() {
    let conf = tempfile::tempdir().expect("tempdir");
    let text = messy_text(2_500_000, 7);
    let expected = expected_counts(&text);
    let variants: &[&[&str]] = &[
        &[],
        &["-c", "topology.workers=3"],
        &[
            "-c",
            "topology.workers=2",
            "-c",
            "topology.executor.receive.buffer.size=2",
            "-c",
            "topology.executor.send.buffer.size=2",
            "-c",
            "topology.transfer.buffer.size=2",
            "-c",
            "topology.receiver.buffer.size=2",
        ],
        &[
            "-c",
            "topology.acker.executors=0",
            "-c",
            "topology.workers=2",
        ],
    ];
    for extra in variants {
        let out = storm(conf.path())
            .args(["run", "topologies/wordcount.yaml", "--quiet"])
            .args(*extra)
            .write_stdin(text.clone())
            .output()
            .expect("runs");
        assert!(
            out.status.success(),
            "{extra:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(parse_counts(&out.stdout), expected, "{extra:?}");
    }
}

#[test]
fn the_dsl_pipeline_counts_like_the_yaml_at_other_parallelism() {
    let conf = tempfile::tempdir().expect("tempdir");
    let text = messy_text(300_000, 3);
    let out = storm(conf.path())
        .args([
            "run",
            "-q",
            "-e",
            "stdin x1 | split x3 | count(word) x5 | stdout x2",
        ])
        .write_stdin(text.clone())
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(parse_counts(&out.stdout), expected_counts(&text));
}

#[test]
fn invalid_utf8_is_replaced_and_counted_in_a_warning() {
    let conf = tempfile::tempdir().expect("tempdir");
    let out = storm(conf.path())
        .args(["run", "topologies/wordcount.yaml"])
        .write_stdin(&b"ok \xff\n ok\r\n"[..])
        .output()
        .expect("runs");
    assert!(out.status.success());
    let counts = parse_counts(&out.stdout);
    assert_eq!(counts.get("ok"), Some(&2));
    assert_eq!(counts.get("\u{fffd}"), Some(&1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("1 line(s) had invalid UTF-8"), "{stderr}");
}

#[test]
fn the_filter_example_keeps_only_matching_tuples() {
    let conf = tempfile::tempdir().expect("tempdir");
    let out = storm(conf.path())
        .args([
            "run",
            "-q",
            "-e",
            r#"stdin | split | filter("word contains \"ka\" and not len(word) < 3") | stdout"#,
        ])
        .write_stdin("ka kaka lo kalo\nmika ka\n")
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut lines: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(String::from)
        .collect();
    lines.sort();
    assert_eq!(lines, ["kaka", "kalo", "mika"]);
}

#[test]
fn stdout_prints_values_joined_by_tabs() {
    let conf = tempfile::tempdir().expect("tempdir");
    let out = storm(conf.path())
        .args([
            "run",
            "-q",
            "-e",
            r#"generate(count=2, values=[["a", 1, null, [1, 2]]]) fields=[a, b, c, d] | stdout"#,
        ])
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "a\t1\t\t[1,2]\na\t1\t\t[1,2]\n"
    );
}

#[test]
fn duration_stops_an_unbounded_spout_and_drains() {
    let conf = tempfile::tempdir().expect("tempdir");
    let stats = conf.path().join("stats.json");
    let out = storm(conf.path())
        .args([
            "run",
            "-e",
            "generate | count(word) | stdout",
            "--duration",
            "1s",
            "--summary",
        ])
        .arg("--stats")
        .arg(&stats)
        .timeout(std::time::Duration::from_secs(60))
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The counts were emitted at the end: the drain ran `finish`.
    let counts = parse_counts(&out.stdout);
    assert!(counts.contains_key("nathan"), "{counts:?}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).expect("stats written"))
            .expect("JSON");
    let comps = json["components"].as_array().expect("components");
    let emitted: u64 = comps
        .iter()
        .filter(|c| c["kind"] == "spout")
        .map(|c| c["emitted"].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(
        emitted,
        counts.values().sum::<u64>(),
        "every emitted tuple was counted"
    );
    // The summary table asked for with --summary went to stderr.
    assert!(String::from_utf8_lossy(&out.stderr).contains("component"));
}

#[test]
fn sigint_stops_the_spouts_and_drains_gracefully() {
    let conf = tempfile::tempdir().expect("tempdir");
    let bin = assert_cmd::cargo::cargo_bin("storm");
    let mut child = std::process::Command::new(bin)
        .env("STORM_CONF_DIR", conf.path())
        .args([
            "run",
            "--progress",
            "always",
            "-e",
            "generate(rate=20000) | count(word) | stdout",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawns");
    let stderr = crate::support::await_progress(&mut child, std::time::Duration::from_secs(30));
    let status = std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success());
    let out = child.wait_with_output().expect("ends");
    let stderr = stderr.join().expect("stderr read");
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let counts = parse_counts(&out.stdout);
    assert!(
        counts.values().sum::<u64>() > 0,
        "the drained counts were printed"
    );
}

#[test]
fn a_closed_stdout_ends_the_run_quietly() {
    let conf = tempfile::tempdir().expect("tempdir");
    let bin = assert_cmd::cargo::cargo_bin("storm");
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "'{}' run -q -e 'generate(count=2000000) | stdout' | head -1",
            bin.display()
        ))
        .env("STORM_CONF_DIR", conf.path())
        .output()
        .expect("runs");
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 1);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn an_invalid_topology_does_not_run() {
    let conf = tempfile::tempdir().expect("tempdir");
    storm(conf.path())
        .args(["run", "-e", "stdin | splt | stdout"])
        .assert()
        .code(1)
        .stderr(predicates::str::contains("error"));
}

#[test]
fn ticks_drive_count_with_emit_tick() {
    let conf = tempfile::tempdir().expect("tempdir");
    let out = storm(conf.path())
        .args([
            "run",
            "-q",
            "-e",
            "generate(rate=1000) | count(fields=[word], emit=tick) tick=1 | stdout",
            "--duration",
            "2500ms",
        ])
        .timeout(std::time::Duration::from_secs(60))
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Two ticks (at 1 s and 2 s) and the final totals: "nathan" is printed three times.
    let text = String::from_utf8_lossy(&out.stdout);
    let nathan = text.lines().filter(|l| l.starts_with("nathan\t")).count();
    assert!(nathan >= 3, "{text}");
}

/// `topologies/generate-discard.yaml` (with fewer tuples): each `gen` task's tuples reach the
/// `sink` task chained onto it, acked, with acking on and off.
#[test]
fn the_generate_discard_example_runs_one_chain_per_task() {
    let yaml = std::fs::read_to_string("topologies/generate-discard.yaml").expect("read");
    assert!(yaml.contains("count: 10000000 "), "{yaml}");
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("gd.yaml");
    std::fs::write(&file, yaml.replace("count: 10000000 ", "count: 30000 ")).expect("write");
    let file = file.to_str().expect("UTF-8");
    for acking in [&[][..], &["-c", "topology.acker.executors=0"][..]] {
        let (_, stats) = counted_run(&[&["-q", file][..], acking].concat(), b"");
        let gen = super::support::stats_component(&stats, "gen");
        assert_eq!(gen["emitted"].as_u64(), Some(60_000), "{gen}");
        let sink = super::support::stats_component(&stats, "sink");
        assert_eq!(sink["executed"].as_u64(), Some(60_000), "{sink}");
        assert_eq!(sink["acked"].as_u64(), Some(60_000), "{sink}");
        assert_eq!(stats["lost"], 0, "{stats}");
    }
}

#[test]
fn the_multilang_and_flux_examples_run() {
    // Needs python3 (`.ci/run` says so when it is missing): the run below fails without it.
    assert!(
        std::process::Command::new("python3")
            .arg("--version")
            .output()
            .is_ok(),
        "python3 is needed by this test and is not installed"
    );
    let conf = tempfile::tempdir().expect("tempdir");
    let text = messy_text(20_000, 5);
    let out = storm(conf.path())
        .args(["run", "-q", "topologies/multilang.yaml"])
        .write_stdin(text.clone())
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The Python bolt splits on whitespace too: the same totals as the built-in split.
    assert_eq!(parse_counts(&out.stdout), expected_counts(&text));

    let out = storm(conf.path())
        .args([
            "run",
            "-q",
            "topologies/flux-wordcount.yaml",
            "--duration",
            "2s",
        ])
        .timeout(std::time::Duration::from_secs(120))
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // LogInfoBolt logs TestWordCounter's running counts of TestWordSpout's words.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("log:"), "{stderr}");
    assert!(
        ["nathan", "mike", "jackson", "golda", "bertels"]
            .iter()
            .any(|w| stderr.contains(w)),
        "{stderr}"
    );
}
