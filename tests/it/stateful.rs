//! The stateful built-ins in real runs: with `topology.stateful` and a checkpoint every
//! millisecond into a state dir, `count`, `aggregate`, `top` (split into partial and total
//! rankings), `join` and `dedupe` print what they print stateless, checkpoints commit, and
//! `storm state dump` shows each one's entries.

use std::path::Path;
use std::time::Duration;

fn storm(conf_dir: &Path) -> assert_cmd::Command {
    let mut cmd = super::run::storm(conf_dir);
    cmd.timeout(Duration::from_secs(120));
    cmd
}

/// The sorted lines `storm run -e topology` prints, with `extra` arguments, and its stderr.
fn run(conf: &Path, topology: &str, extra: &[&str]) -> (Vec<String>, String) {
    let out = storm(conf)
        .args(["run", "-e", topology])
        .args(extra)
        .env("STORM_LOG", "storm::runtime::checkpoint=debug")
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{topology}: {stderr}");
    let mut lines: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(String::from)
        .collect();
    lines.sort();
    (lines, stderr)
}

#[test]
fn stateful_built_ins_print_what_they_print_stateless_and_save_their_entries() {
    let conf = tempfile::tempdir().expect("tempdir");
    let csv = conf.path().join("in.csv");
    let rows: String = (0..6000)
        .map(|i| format!("w{},{},{}\n", (i * 7) % 41, i % 13, i))
        .collect();
    std::fs::write(&csv, rows).expect("input written");
    let input = format!(
        "file(path={}, format=csv, fields=[w, n, t], types={{n: int, t: int}})",
        csv.display()
    );
    let topologies = [
        ("c", format!("i = {input} | c = count(fields=[w, n]) x2 | stdout")),
        ("a", format!(
            "i = {input} | [fields w] a = aggregate(by=[w], ops=[count, \"sum(n)\", \"percentile(n, 0.5)\", \"count_distinct(n)\"], approx=true, window={{sliding: 300, every: 100}}) x2 | stdout"
        )),
        ("top", format!("i = {input} | top = top(by=[w], n=3, time=t, window={{tumbling: 500ms}}) x2 | stdout")),
        ("dedupe", format!("i = {input} | [fields n] dedupe = dedupe(key=[n], cache=5) x2 | stdout")),
        // Two inputs interleave differently run to run: the join is whole, not windowed.
        ("j", format!(
            "x = {input}\ny = {input}\nx | j = join(inputs=[{{from: x, key: w}}, {{from: y, key: w}}], select=[x.t, y.n]) | stdout\ny | j"
        )),
    ];
    for (id, topology) in topologies {
        let dir = conf.path().join(format!("state-{id}"));
        let (plain, _) = run(conf.path(), &topology, &[]);
        assert!(!plain.is_empty(), "{topology}: no output");
        let checkpointed = [
            "-c",
            "topology.stateful=true",
            "-c",
            "topology.state.checkpoint.interval.ms=1",
            "--state-dir",
        ];
        let dir_arg = dir.display().to_string();
        let args: Vec<&str> = checkpointed
            .iter()
            .copied()
            .chain([dir_arg.as_str()])
            .collect();
        let (stateful, stderr) = run(conf.path(), &topology, &args);
        let first_difference = stateful.iter().zip(&plain).position(|(a, b)| a != b);
        assert!(
            stateful.len() == plain.len() && first_difference.is_none(),
            "{topology}: {} lines stateful, {} stateless, first difference at {first_difference:?}",
            stateful.len(),
            plain.len()
        );
        assert!(
            stderr.contains("checkpoint committed"),
            "{topology}: {stderr}"
        );
        let dump = storm(conf.path())
            .args(["state", "dump"])
            .arg(&dir)
            .output()
            .expect("runs");
        let dump = String::from_utf8_lossy(&dump.stdout);
        assert!(
            dump.lines().any(|l| l.starts_with(&format!("{id}["))),
            "{id}: {dump}"
        );
    }
}
