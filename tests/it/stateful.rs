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

/// A run that ends cleanly commits what its finish step left (the windows it emitted at the
/// end of input are closed in the saved state): run again on the same state dir with more
/// input, it emits only the windows the new lines make, never the old ones again.
#[test]
fn a_finished_run_commits_its_end_of_input_flush() {
    let conf = tempfile::tempdir().expect("tempdir");
    let csv = conf.path().join("in.csv");
    let state = conf.path().join("state");
    // Windows of 10 s: [0, 10) closes when 12000 comes; [10, 20) only at the end of input.
    std::fs::write(&csv, "a,1000\na,5000\nb,12000\nb,15000\n").expect("input written");
    let topology = format!(
        "file(path={}, format=csv, columns=[k, t], types={{t: int}}) | aggregate(by=[k], ops=[count], window={{tumbling: 10s}}, time=t) | stdout",
        csv.display()
    );
    let extra = [
        "--state-dir",
        state.to_str().expect("utf-8 path"),
        "-c",
        "topology.stateful=true",
        "-c",
        "topology.state.checkpoint.interval.ms=1",
    ];
    let (first, _) = run(conf.path(), &topology, &extra);
    assert_eq!(
        first,
        [
            "a\t1970-01-01T00:00:00.000Z\t1970-01-01T00:00:10.000Z\t2",
            "b\t1970-01-01T00:00:10.000Z\t1970-01-01T00:00:20.000Z\t2",
        ]
    );
    let mut more = std::fs::OpenOptions::new()
        .append(true)
        .open(&csv)
        .expect("input opened");
    std::io::Write::write_all(&mut more, b"c,25000\n").expect("appended");
    let (second, stderr) = run(conf.path(), &topology, &extra);
    assert!(stderr.contains("resuming"), "{stderr}");
    assert_eq!(
        second,
        ["c\t1970-01-01T00:00:20.000Z\t1970-01-01T00:00:30.000Z\t1"]
    );
}

/// `topology.state.dir` written in a topology file is relative to the file's folder, as every
/// path in it is (not to wherever `storm run` was started).
#[test]
fn a_state_dir_set_in_the_file_is_relative_to_the_file() {
    let conf = tempfile::tempdir().expect("tempdir");
    let sub = conf.path().join("jobs");
    std::fs::create_dir(&sub).expect("mkdir");
    std::fs::write(sub.join("in.txt"), "a\nb\na\n").expect("input");
    std::fs::write(
        sub.join("job.yaml"),
        "name: job\nconfig:\n  topology.state.provider: embedded\n  topology.state.dir: kept\n  topology.stateful: true\nspouts:\n  - {id: lines, type: file, args: {path: in.txt}}\nbolts:\n  - {id: tally, type: count, args: {fields: [line]}}\n  - {id: out, type: stdout}\nstreams:\n  - {from: lines, to: tally, grouping: {type: fields, args: [line]}}\n  - {from: tally, to: out}\n",
    )
    .expect("topology");
    let elsewhere = conf.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).expect("mkdir");
    let out = storm(conf.path())
        .current_dir(&elsewhere)
        .arg("run")
        .arg(sub.join("job.yaml"))
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(sub.join("kept").is_dir(), "the state dir beside the file");
    assert!(!elsewhere.join("kept").exists(), "not in the working dir");
}
