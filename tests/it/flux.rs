//! Flux files as Storm's own examples write them: the testing classes, the shell wrappers with
//! `addComponentConfig`, list-valued and indexed property substitution, resource hints. The
//! fixtures under `tests/fixtures/valid/flux-*` exercise what Storm's Flux examples and Flux's
//! test topologies do, with no JVM class.

use crate::validate::storm;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

const VALID: &str = "tests/fixtures/valid";

/// The words of Storm's `TestWordSpout`.
const TEST_WORDS: [&str; 5] = ["nathan", "mike", "jackson", "golda", "bertels"];

/// Run a fixture from its folder (shell commands are relative to it); stdout and stderr.
fn run(file: &str, extra: &[&str]) -> (String, String) {
    let conf = tempfile::tempdir().expect("tempdir");
    let out = storm(conf.path())
        .current_dir(VALID)
        .arg("run")
        .arg(file)
        .args(extra)
        .timeout(Duration::from_secs(120))
        .output()
        .expect("runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{file}: {stderr}");
    (stdout, stderr)
}

/// `LogInfoBolt` lines of one component on stderr (`COMPONENT:TASK [values]`), as JSON lists.
fn logged(stderr: &str, component: &str) -> Vec<Vec<serde_json::Value>> {
    stderr
        .lines()
        .filter_map(|l| l.strip_prefix(component)?.strip_prefix(':'))
        .filter_map(|l| l.split_once(' '))
        .filter(|(task, _)| task.bytes().all(|b| b.is_ascii_digit()))
        .map(|(_, values)| serde_json::from_str(values).expect("logged values are JSON"))
        .collect()
}

/// Per word, the counts a logger saw, in order.
fn counts_by_word(lines: &[Vec<serde_json::Value>]) -> BTreeMap<String, Vec<u64>> {
    let mut by_word: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for l in lines {
        let word = l[0].as_str().expect("a word").to_string();
        by_word
            .entry(word)
            .or_default()
            .push(l[1].as_u64().expect("a count"));
    }
    by_word
}

/// Storm's simple word count: TestWordSpout, TestWordCounter on a fields grouping,
/// LogInfoBolt. Each word is counted by one counter task, so its logged counts are 1, 2, 3, …
#[test]
fn testing_spout_counter_and_logger_run() {
    let (_, stderr) = run("flux-testing-words.yaml", &["--duration", "2s"]);
    let by_word = counts_by_word(&logged(&stderr, "logger"));
    assert!(!by_word.is_empty(), "{stderr}");
    for (word, counts) in by_word {
        assert!(TEST_WORDS.contains(&word.as_str()), "{word}");
        let expected: Vec<u64> = (1..=counts.len() as u64).collect();
        assert_eq!(counts, expected, "{word}");
    }
}

/// Flux's diamond: one fan-out, one fan-in, every grouping kind on the way. The figures obey
/// the graph: each of `left` and `right` executes every tuple of `top`, and `bottom` every
/// tuple of both.
#[test]
fn diamond_fans_out_and_in() {
    let dir = tempfile::tempdir().expect("tempdir");
    let stats = dir.path().join("stats.json");
    let stats_arg = stats.display().to_string();
    let (_, stderr) = run(
        "flux-diamond.yaml",
        &["--duration", "2s", "--stats", &stats_arg],
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).expect("stats written"))
            .expect("JSON");
    let figure = |id: &str, what: &str| -> u64 {
        json["components"]
            .as_array()
            .expect("components")
            .iter()
            .find(|c| c["id"] == id)
            .and_then(|c| c[what].as_u64())
            .unwrap_or_else(|| panic!("{id}.{what} in {json}"))
    };
    assert!(figure("source", "emitted") > 0);
    assert_eq!(figure("top", "executed"), figure("source", "emitted"));
    assert_eq!(figure("left", "executed"), figure("top", "emitted"));
    assert_eq!(figure("right", "executed"), figure("top", "emitted"));
    assert_eq!(
        figure("bottom", "executed"),
        figure("left", "emitted") + figure("right", "emitted")
    );
    assert_eq!(
        logged(&stderr, "bottom").len() as u64,
        figure("bottom", "executed")
    );
}

/// Flux's shell example with `addComponentConfig` on both wrappers: Python children split six
/// sentences, Storm's TestWordCounter counts, and the last count logged for each word is its
/// number of occurrences in those sentences.
#[test]
fn shell_wrappers_with_component_config_run_to_the_end() {
    let (_, stderr) = run("flux-shell.yaml", &[]);
    // The sentences `multilang/examples/sentences.py 6` emits.
    let sentences = [
        "the cow jumped over the moon",
        "an apple a day keeps the doctor away",
        "four score and seven years ago",
        "snow white and the seven dwarfs",
        "i am at two with nature",
        "the cow jumped over the moon",
    ];
    let mut expected: BTreeMap<String, u64> = BTreeMap::new();
    for w in sentences.iter().flat_map(|s| s.split_whitespace()) {
        *expected.entry(w.to_string()).or_default() += 1;
    }
    let last: BTreeMap<String, u64> = counts_by_word(&logged(&stderr, "log"))
        .into_iter()
        .map(|(w, counts)| (w, counts.iter().copied().max().unwrap_or(0)))
        .collect();
    assert_eq!(last, expected, "{stderr}");
}

/// `addComponentConfig` reaches the shell child's configuration: a list value stays a list, the
/// component's `config:` wins over it, the topology's `config:` lies under both.
#[test]
fn add_component_config_reaches_the_shell_child() {
    let (stdout, stderr) = run("flux-component-config.yaml", &[]);
    let line =
        "by addComponentConfig\t[\"a\", \"b\"]\tby the component's config\tfrom the topology";
    assert_eq!(stdout, format!("{line}\n{line}\n"), "{stderr}");
}

/// Flux's substitution test: `${key}` of a list-valued property gives a list, `${key[i]}` its
/// element, quoted or not; `${ENV-NAME}` the environment.
#[test]
fn list_valued_and_indexed_properties_substitute_as_flux() {
    let conf = tempfile::tempdir().expect("tempdir");
    let out = storm(conf.path())
        .current_dir(VALID)
        .env("HOME", "/home/flux-test")
        .args([
            "config",
            "flux-substitution.yaml",
            "--filter",
            "flux-lists.properties",
        ])
        .output()
        .expect("runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let value = |key: &str| -> String {
        let line = stdout
            .lines()
            .find(|l| l.split_whitespace().next() == Some(key))
            .unwrap_or_else(|| panic!("{key} in {stdout}"));
        let after = line.split_once(" = ").map_or("", |(_, v)| v);
        after
            .rsplit_once(" (")
            .map_or(after, |(v, _)| v)
            .trim()
            .to_string()
    };
    assert_eq!(value("words.list"), r#"["nathan","mike","golda"]"#);
    assert_eq!(value("words.first"), r#""nathan""#);
    assert_eq!(value("words.second"), r#""mike""#);
    assert_eq!(value("words.home"), r#""/home/flux-test""#);
    let validated = storm(conf.path())
        .current_dir(VALID)
        .args([
            "validate",
            "flux-substitution.yaml",
            "--filter",
            "flux-lists.properties",
        ])
        .output()
        .expect("runs");
    assert_eq!(
        String::from_utf8_lossy(&validated.stdout),
        "ok: flux-substitution.yaml (1 spouts, 1 bolts, 3 executors, 3 tasks)\n"
    );
}

/// Resource hints are accepted with one located warning each; the topology still runs.
#[test]
fn resource_hints_are_accepted_with_a_warning() {
    let conf = tempfile::tempdir().expect("tempdir");
    let file = Path::new(VALID).join("flux-resource-hints.yaml");
    let out = storm(conf.path())
        .arg("validate")
        .arg(&file)
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0));
    insta::assert_snapshot!(String::from_utf8_lossy(&out.stderr));
    let (_, stderr) = run("flux-resource-hints.yaml", &["--duration", "2s"]);
    assert!(!logged(&stderr, "logger").is_empty(), "{stderr}");
}
