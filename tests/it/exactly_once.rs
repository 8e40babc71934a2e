//! Exactly-once is exact or refused: a stateful run fed by `generate` keeps exact totals when a
//! worker process is SIGKILLed (the spout rewinds to its committed position); a spout that
//! cannot rewind is refused in a stateful topology unless the topology asks for at-least-once.

use crate::run_reliability::{signal, Run};
use std::collections::BTreeMap;

/// Two `generate` tasks of 150,000 random words each, counted with checkpointed state.
const GENERATED: &str = "generate(count=150000) x2 | count(word) x2 | stdout";

/// `word count` lines as a map; a word printed twice fails the test.
fn totals(stdout: &[u8]) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for line in String::from_utf8_lossy(stdout).lines() {
        let (word, n) = line.split_once('\t').expect("word TAB count");
        let n: u64 = n.parse().expect("a count");
        assert!(out.insert(word.to_string(), n).is_none(), "{word} twice");
    }
    out
}

fn stateful_run(extra: &[&str]) -> Run {
    let mut args = vec![
        "run",
        "-e",
        GENERATED,
        "--processes",
        "--workers",
        "2",
        "-c",
        "topology.stateful=true",
        "-c",
        "topology.state.checkpoint.interval.ms=100",
    ];
    args.extend_from_slice(extra);
    Run::start(&args, true)
}

/// The generator under a worker SIGKILL, 10 trials (each worker in turn, two runs at a time:
/// they mostly wait): every total equals the one of a run without a kill, and the run says it
/// rolled back.
#[test]
fn generated_input_stays_exact_when_a_worker_is_sigkilled() {
    let mut clean = stateful_run(&[]);
    let out = clean.finish();
    assert!(out.status.success());
    let expected = totals(&out.stdout);
    assert_eq!(expected.values().sum::<u64>(), 300_000);
    let mut rolled_back = 0;
    for pair in 0..5 {
        let runs: Vec<(usize, Run)> = (0..2).map(|i| (pair * 2 + i, stateful_run(&[]))).collect();
        for (trial, run) in &runs {
            let victim = run.workers(2)[trial % 2].0;
            run.committed();
            signal(victim, "-KILL");
        }
        for (trial, mut run) in runs {
            let out = run.finish();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "trial {trial}: {stderr}");
            // A kill that lands once the worker's share is done needs no rollback; the
            // totals are exact either way.
            rolled_back += usize::from(stderr.contains("rolls back"));
            assert_eq!(totals(&out.stdout), expected, "trial {trial}: {stderr}");
        }
    }
    assert!(rolled_back > 0, "no trial killed a worker mid-run");
}

/// With `topology.state.guarantee: at_least_once`, a stateful topology may read a spout that
/// cannot rewind: `storm run` says so when it starts, and its summary counts the replays.
#[test]
fn an_at_least_once_topology_runs_and_says_its_guarantee() {
    let conf = tempfile::tempdir().expect("tempdir");
    let out = crate::validate::storm(conf.path())
        .args([
            "run",
            "-e",
            "shell(python3, multilang/examples/sentences.py) fields=[sentence] \
             | split(field=sentence) | count(word) stateful=true | stdout",
            "-c",
            "topology.state.guarantee=at_least_once",
            "--duration",
            "1s",
        ])
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("storm: state guarantee: at least once (topology.state.guarantee): spout `shell` cannot rewind"),
        "{stderr}"
    );
    assert!(
        stderr.contains("state guarantee: at least once; spouts replayed "),
        "{stderr}"
    );
}
