//! Exactly-once state end to end: a checkpointed word count comes out exact through failures
//! and drops between split and count, and through SIGKILLs of the whole run followed by a
//! restart on the same state dir — the oracle is the word count of the input computed here.

use super::run::{expected_counts, messy_text, parse_counts};
use super::support::stats;
use assert_cmd::Command;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::Duration;

fn storm(conf_dir: &Path) -> Command {
    let mut cmd = super::run::storm(conf_dir);
    cmd.timeout(Duration::from_secs(240));
    cmd
}

/// The word count with a chaos bolt failing 10% and dropping 5% between split and count.
fn chaotic(seed: u64, fail: f64, drop: f64) -> String {
    format!(
        "name chaos
lines = stdin
  | split x2
  | chaos(fail={fail}, drop={drop}, seed={seed}) x2
  | count(word) x2
  | stdout"
    )
}

fn run_chaotic(
    text: Vec<u8>,
    seed: u64,
    fail: f64,
    drop: f64,
) -> (BTreeMap<String, u64>, serde_json::Value) {
    let conf = tempfile::tempdir().expect("tempdir");
    let stats_path = conf.path().join("stats.json");
    let out = storm(conf.path())
        .args(["run", "-e", &chaotic(seed, fail, drop)])
        .args(["-c", "topology.stateful=true"])
        .args(["-c", "topology.message.timeout.secs=1"])
        .args(["-c", "topology.state.checkpoint.interval.ms=200"])
        .arg("--stats")
        .arg(&stats_path)
        .write_stdin(text)
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (parse_counts(&out.stdout), stats(&stats_path))
}

#[test]
fn a_stateful_count_is_exact_through_failures_and_drops() {
    let text = messy_text(40_000, 11);
    let expected = expected_counts(&text);
    let (got, s) = run_chaotic(text, 7, 0.1, 0.05);
    assert_eq!(got, expected, "exactly once, not at least once");
    let lines = s["components"]
        .as_array()
        .and_then(|a| a.iter().find(|c| c["id"] == "lines"))
        .expect("the spout's figures");
    assert!(
        lines["replayed"].as_u64().unwrap_or(0) > 0,
        "failures happened: {lines}"
    );
    assert!(
        lines["timed_out"].as_u64().unwrap_or(0) > 0,
        "drops happened: {lines}"
    );
    assert!(
        s["checkpoints"]["committed"].as_u64().unwrap_or(0) >= 1,
        "{s}"
    );
}

mod fault_schedules {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 6, failure_persistence: None, ..ProptestConfig::default() })]
        /// Whatever fails and drops where, the stateful count is the true count.
        #[test]
        fn random_fault_schedules_end_in_the_exact_count(
            seed in 0u64..1000,
            fail in 0.0f64..0.3,
            drop in 0.0f64..0.05,
            text_seed in 0u64..1000,
        ) {
            let text = messy_text(6_000, text_seed);
            let expected = expected_counts(&text);
            let (got, _) = run_chaotic(text, seed, fail, drop);
            prop_assert_eq!(got, expected);
        }
    }
}

/// A word count reading `spout` (`file(path=…)` or `stdin`) with its state in `dir`,
/// checkpointing every 50 ms, with few trees in flight so a run lasts long enough to be
/// killed in the middle.
fn count_args(spout: &str, dir: &Path) -> Vec<String> {
    let topology =
        format!("name resumable\nlines = {spout}\n  | split x2\n  | count(word) x2\n  | stdout");
    vec![
        "run".into(),
        "-e".into(),
        topology,
        "--state-dir".into(),
        dir.display().to_string(),
        "-c".into(),
        "topology.stateful=true".into(),
        "-c".into(),
        "topology.state.checkpoint.interval.ms=50".into(),
        "-c".into(),
        "topology.max.spout.pending=4".into(),
    ]
}

/// Start the count (`input` on its standard input, if given) and SIGKILL it once `commits`
/// checkpoints were committed (seen in its debug log), while it still runs.
pub(crate) fn kill_after_commits(
    conf: &Path,
    args: &[String],
    commits: usize,
    input: Option<&Path>,
) {
    let stdin = match input {
        Some(f) => Stdio::from(std::fs::File::open(f).expect("input opens")),
        None => Stdio::null(),
    };
    kill_at_commit(spawn_counting(conf, args, stdin, Stdio::null()), commits);
}

/// [`kill_after_commits`] with `text` written to the count's standard input 16 KiB at a time,
/// a few milliseconds apart: a run that reads faster than its checkpoints come is still going
/// at its first commits.
pub(crate) fn kill_fed_slowly(conf: &Path, args: &[String], commits: usize, text: &[u8]) {
    let child = spawn_counting(conf, args, Stdio::piped(), Stdio::null());
    feed_slowly_and_kill(child, commits, text);
}

/// [`kill_fed_slowly`], the run's output kept in the file `out`.
pub(crate) fn kill_fed_slowly_to(
    conf: &Path,
    args: &[String],
    commits: usize,
    text: &[u8],
    out: &Path,
) {
    let out = std::fs::File::create(out).expect("output file");
    let child = spawn_counting(conf, args, Stdio::piped(), Stdio::from(out));
    feed_slowly_and_kill(child, commits, text);
}

/// Write `text` to `child`'s piped standard input 16 KiB at a time, a few milliseconds apart,
/// and SIGKILL it after `commits` commits.
fn feed_slowly_and_kill(mut child: Child, commits: usize, text: &[u8]) {
    let mut stdin = child.stdin.take().expect("stdin piped");
    let text = text.to_vec();
    let feeder = std::thread::spawn(move || {
        for piece in text.chunks(16 * 1024) {
            // Killed mid-way, the run's pipe breaks: the feeding stops there.
            if stdin.write_all(piece).is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(4));
        }
    });
    kill_at_commit(child, commits);
    feeder.join().expect("the feeder ends");
}

/// `storm` with `args`, `stdin` and `stdout`, its checkpoints' debug log on a piped standard
/// error.
fn spawn_counting(conf: &Path, args: &[String], stdin: Stdio, stdout: Stdio) -> Child {
    let bin = assert_cmd::cargo::cargo_bin("storm");
    std::process::Command::new(bin)
        .args(args)
        .env("STORM_CONF_DIR", conf)
        .env("STORM_LOG", "storm::runtime::checkpoint=debug")
        .stdin(stdin)
        .stdout(stdout)
        .stderr(Stdio::piped())
        .spawn()
        .expect("starts")
}

/// SIGKILL `child` once `commits` checkpoints were committed, while it still runs.
fn kill_at_commit(mut child: Child, commits: usize) {
    let stderr = child.stderr.take().expect("stderr piped");
    let mut seen = 0;
    for line in BufReader::new(stderr).lines() {
        let line = line.expect("stderr is text");
        if line.contains("checkpoint committed") {
            seen += 1;
            if seen == commits {
                break;
            }
        }
    }
    assert_eq!(seen, commits, "the run ended before {commits} commits");
    assert!(
        child.try_wait().expect("waits").is_none(),
        "the run must still be going when it is killed"
    );
    child.kill().expect("SIGKILL");
    child.wait().expect("reaped");
}

/// Kill the count three times, each after a few more commits, then let it finish: its totals
/// are the true ones, and the last run went on from where it was, not from the start. Each
/// line goes through `split` as a tuple of its own (partial aggregation off): folded where it
/// is read, the input would be counted before the first commit (the folding run has its own
/// test, `a_folding_word_count_killed_mid_way_resumes_with_exact_totals`).
fn killed_runs_resume_exactly(from_stdin: bool, extra: &[&str], words: usize) {
    let conf = tempfile::tempdir().expect("tempdir");
    let file = conf.path().join("input.txt");
    let text = messy_text(words, 5);
    std::fs::write(&file, &text).expect("input written");
    let dir = conf.path().join("state");
    let spout = match from_stdin {
        true => "stdin".to_string(),
        false => format!("file(path={})", file.display()),
    };
    let mut args = count_args(&spout, &dir);
    args.extend(["-c".into(), "topology.partial.aggregation=false".into()]);
    args.extend(extra.iter().map(|a| a.to_string()));
    let input = from_stdin.then_some(file.as_path());
    for commits in [2, 3, 4] {
        kill_after_commits(conf.path(), &args, commits, input);
    }
    let stats_path = conf.path().join("stats.json");
    let mut last = storm(conf.path());
    last.args(&args).arg("--stats").arg(&stats_path);
    if from_stdin {
        last.pipe_stdin(&file).expect("input opens");
    }
    let out = last.output().expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("resuming `resumable` from checkpoint"),
        "{stderr}"
    );
    assert_eq!(parse_counts(&out.stdout), expected_counts(&text));
    let lines = spout_figures(&stats_path);
    // Replays (trees that timed out while the workers started) are emitted again.
    let emitted =
        lines["emitted"].as_u64().expect("emitted") - lines["replayed"].as_u64().unwrap_or(0);
    let total = lines_in(&text);
    assert!(
        emitted < total,
        "the last run read {emitted} of {total} lines: it started over"
    );
}

/// The `--stats` figures of the spout `lines` in the file at `path`.
fn spout_figures(path: &Path) -> serde_json::Value {
    let s = stats(path);
    let lines = s["components"]
        .as_array()
        .and_then(|a| a.iter().find(|c| c["id"] == "lines"))
        .expect("the spout's figures");
    lines.clone()
}

/// Every line of `text`, empty ones too: the spout emits each.
fn lines_in(text: &[u8]) -> u64 {
    text.split(|&b| b == b'\n').count() as u64
}

#[test]
fn a_run_killed_mid_way_resumes_from_its_state_dir_with_exact_totals() {
    killed_runs_resume_exactly(false, &[], 800_000);
}

#[test]
fn a_stdin_run_killed_mid_way_resumes_on_the_same_input_with_exact_totals() {
    killed_runs_resume_exactly(true, &[], 800_000);
}

/// Over worker processes nimbus (in the `storm run` process) keeps the state dir: a run killed
/// whole, workers and all, goes on from it too.
#[test]
fn a_run_over_worker_processes_killed_mid_way_resumes_from_its_state_dir() {
    // Fewer words: every tree crosses processes, four at a time, so a run takes longer.
    killed_runs_resume_exactly(true, &["--processes", "--workers", "2"], 200_000);
}

/// With state, the spout still counts each chunk's words where it reads them, past `split`,
/// and hands `count` the counts tagged with the checkpoint round they belong to (see
/// `folded_round`). Killed five times after a few commits, fed slowly so that it is still
/// reading then, and resumed: the totals are exact, the last run went on from where the state
/// was, and it folded.
#[test]
fn a_folding_word_count_killed_mid_way_resumes_with_exact_totals() {
    let conf = tempfile::tempdir().expect("tempdir");
    let text = messy_text(4_000_000, 17);
    let args = count_args("stdin", &conf.path().join("state"));
    // Each kill loses the chunks of one round if a chunk is saved in the wrong round: five
    // kills catch that nearly always.
    for commits in [2, 3, 4, 5, 6] {
        kill_fed_slowly(conf.path(), &args, commits, &text);
    }
    let stats_path = conf.path().join("stats.json");
    let out = storm(conf.path())
        .args(&args)
        .arg("--stats")
        .arg(&stats_path)
        .env("STORM_LOG", "warn,storm::components::stdin_file=debug")
        .write_stdin(text.clone())
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("resuming `resumable` from checkpoint"),
        "{stderr}"
    );
    assert!(
        stderr.contains("folded where they were read"),
        "the spout folded nothing: {stderr}"
    );
    assert_eq!(parse_counts(&out.stdout), expected_counts(&text));
    let emitted = spout_figures(&stats_path)["emitted"]
        .as_u64()
        .expect("emitted");
    let total = lines_in(&text);
    assert!(
        emitted < total,
        "the last run read {emitted} of {total} lines: it started over"
    );
}

#[test]
fn a_stateful_count_is_exact_through_failures_across_worker_processes() {
    let conf = tempfile::tempdir().expect("tempdir");
    let text = messy_text(20_000, 3);
    let expected = expected_counts(&text);
    let out = storm(conf.path())
        .args([
            "run",
            "--processes",
            "--workers",
            "2",
            "-e",
            &chaotic(5, 0.1, 0.05),
        ])
        .args(["-c", "topology.stateful=true"])
        .args(["-c", "topology.message.timeout.secs=1"])
        .write_stdin(text)
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(parse_counts(&out.stdout), expected);
}
