//! Runs end when asked: SIGINT in the first moments of a stateful `--processes` run (while
//! its workers start, join their first generation and restore) ends it, its input still open.

use crate::run_reliability::{signal, Run};
use std::os::unix::process::ExitStatusExt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// 20 trials, the signal 0 to 380 ms after the start (so in every phase of the start: before
/// the handlers, while the workers launch, while they join, while they run): each run ends by
/// itself, with exit 0 (drained), or 130 or the signal itself (it came before storm could catch it), though
/// its standard input stays open.
#[test]
fn an_early_interrupt_ends_a_stateful_run_over_processes() {
    for trial in 0..20u64 {
        let mut run = Run::start(
            &[
                "run",
                "topologies/wordcount.yaml",
                "--processes",
                "--workers",
                "2",
                "-c",
                "topology.stateful=true",
                // A drain that cannot end is given up at this timeout plus the workers'
                // heartbeat timeout and a grace: well within the test's wait, even when the
                // start takes seconds on a loaded machine.
                "-c",
                "topology.message.timeout.secs=5",
            ],
            true,
        );
        // The signal's moment is what this test varies.
        std::thread::sleep(Duration::from_millis(20 * trial));
        signal(run.pid(), "-INT");
        let status = run.wait_status();
        let ended = matches!(status.code(), Some(0) | Some(130)) || status.signal() == Some(2);
        assert!(ended, "trial {trial}: {status:?}");
    }
}

/// A tuple over the 64 MiB frame limit between workers (a 70 MB line) fails the run at once
/// with an error that gives its size and the limit, instead of breaking the link and being
/// replayed for ever.
#[test]
fn a_tuple_over_the_frame_limit_fails_the_run_with_a_clear_error() {
    let mut run = Run::start(
        &[
            "run",
            "-e",
            "stdin | split | count(word) | stdout",
            "--processes",
            "--workers",
            "2",
        ],
        true,
    );
    let mut line = vec![b'x'; 70_000_000];
    line.push(b'\n');
    run.write(&line);
    let out = run.finish();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("takes 70000048 bytes, over the limit of 64 MiB"),
        "{stderr}"
    );
}

/// A shell spout whose child (its pid written to `child.pid`) emits three tuples, starts a
/// grandchild in its process group (its pid written to `grandchild.pid`), then hangs in
/// `next` (saying so with a file `hanging`).
const HANGING_SPOUT: &str = r#"
import os, subprocess, sys, time
sys.path.insert(0, os.environ["STORM_TEST_MULTILANG"])
import storm
class Hang(storm.Spout):
    def initialize(self, conf, context):
        with open("child.pid", "w") as f:
            f.write(str(os.getpid()))
        self.n = 0
        child = subprocess.Popen(["sleep", "300"])
        with open("grandchild.pid", "w") as f:
            f.write(str(child.pid))
    def nextTuple(self):
        self.n += 1
        if self.n > 3:
            open("hanging", "w").close()
            time.sleep(100000)
        storm.emit(["w%d" % self.n], id=self.n)
Hang().run()
"#;

/// `storm run` of [`HANGING_SPOUT`] into `stdout`, the spout written to `dir` (where the run
/// starts), its configuration folder `conf`.
fn hanging_spout_run(dir: &std::path::Path, conf: &std::path::Path) -> std::process::Command {
    let spout = dir.join("spout.py");
    std::fs::write(&spout, HANGING_SPOUT).expect("write spout");
    let topology = format!("shell(python3, {}) fields=[word] | stdout", spout.display());
    let multilang = concat!(env!("CARGO_MANIFEST_DIR"), "/multilang/python");
    let mut run = std::process::Command::new(assert_cmd::cargo::cargo_bin("storm"));
    run.env("STORM_CONF_DIR", conf)
        .env("STORM_TEST_MULTILANG", multilang)
        .current_dir(dir)
        .args(["run", "-e", &topology]);
    run
}

/// The first Ctrl-C ends a run whose shell spout child hangs in `next` (it is killed after a
/// grace of 2 s, not at the subprocess timeout, here 600 s), and what the child started in
/// its process group ends with it.
#[test]
fn the_first_interrupt_ends_a_run_whose_spout_child_hangs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let conf = tempfile::tempdir().expect("tempdir");
    let mut child = hanging_spout_run(dir.path(), conf.path())
        // Without the stop's grace, only this timeout would end the turn.
        .args(["-c", "topology.subprocess.timeout.secs=600"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start storm run");
    let mut stdout = std::io::BufReader::new(child.stdout.take().expect("piped"));
    let mut first = String::new();
    std::io::BufRead::read_line(&mut stdout, &mut first).expect("a first tuple");
    assert_eq!(first, "w1\n");
    crate::support::poll_until(
        "the child to hang in `next`",
        Duration::from_secs(90),
        Duration::from_millis(20),
        || dir.path().join("hanging").exists().then_some(()),
    );
    signal(child.id(), "-INT");
    let status = crate::support::poll_until(
        "storm run to end",
        Duration::from_secs(90),
        Duration::from_millis(50),
        || child.try_wait().ok().flatten(),
    );
    let mut stderr = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut e, &mut stderr);
    }
    assert!(status.success(), "{status:?}: {stderr}");
    assert!(
        stderr.contains("the child gave no answer within 2s; killing it"),
        "{stderr}"
    );
    let pid = pid_in(dir.path(), "grandchild.pid");
    crate::support::poll_until(
        "the grandchild to end",
        Duration::from_secs(10),
        Duration::from_millis(20),
        || {
            crate::run_reliability::stat_of(pid)
                .is_none_or(|(_, state)| state == 'Z')
                .then_some(())
        },
    );
}

/// Two worker processes whose `split`s feed each other's `count`s, acking off (so nothing
/// but the queues paces `stdin`): each run ends by itself with every count exact. Before,
/// a worker's receive thread waited for its full `split` queue, which stopped what the other
/// worker's `split` sent its `count`; with both workers there, each `split` waited on the
/// other for ever (about one run in ten of a 50 MB input). Small queues make the workers
/// congested at once, so the spouts are held and released many times.
#[test]
fn workers_feeding_each_other_with_acking_off_end_with_exact_counts() {
    let (input, expected) = word_corpus(30_000, 12);
    for trial in 0..4 {
        let mut run = Run::start(
            &[
                "run",
                "-e",
                "stdin | split x2 | count(word) x2 | stdout",
                "--processes",
                "--workers",
                "2",
                "-c",
                "topology.acker.executors=0",
                "-c",
                "topology.executor.receive.buffer.size=16",
                "-c",
                "topology.receiver.buffer.size=1",
            ],
            true,
        );
        run.feed(input.clone());
        let out = run.finish_within(Duration::from_secs(60));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "trial {trial}: {stderr}");
        let mut got: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_string)
            .collect();
        got.sort();
        assert_eq!(got.len(), expected.len(), "trial {trial}: distinct words");
        assert!(got == expected, "trial {trial}: the counts differ");
    }
}

/// `lines` lines of `words` words each, drawn from a few thousand, and the `word\tcount`
/// lines a word count of them prints, sorted.
fn word_corpus(lines: usize, words: usize) -> (Vec<u8>, Vec<String>) {
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    let mut counts = std::collections::BTreeMap::<String, u64>::new();
    let mut text = String::new();
    for _ in 0..lines {
        for w in 0..words {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let word = format!("w{}", (state >> 33) % 4000);
            if w > 0 {
                text.push(' ');
            }
            text.push_str(&word);
            *counts.entry(word).or_default() += 1;
        }
        text.push('\n');
    }
    let mut expected: Vec<String> = counts.iter().map(|(w, n)| format!("{w}\t{n}")).collect();
    expected.sort();
    (text.into_bytes(), expected)
}

/// A shell bolt whose child hangs on its first tuple (writing `hanging` next to it first),
/// until its worker process is gone.
const HANGING_BOLT: &str = r#"
import os, sys, time
sys.path.insert(0, os.environ["STORM_TEST_MULTILANG"])
import storm
class Hang(storm.BasicBolt):
    def process(self, tup):
        open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "hanging"), "w").close()
        worker = os.getppid()
        while os.getppid() == worker:
            time.sleep(0.1)
        sys.exit(0)
Hang().run()
"#;

/// The first interrupt ends a run over processes whose worker cannot end its drain (a shell
/// bolt's child hangs, and the subprocess timeout is 600 s): once a replaced worker would have
/// drained too (message timeout + heartbeat timeout + 10 s), with an error and exit 1. Before,
/// the run went on until the subprocess timeout.
#[test]
fn the_first_interrupt_ends_a_run_over_processes_whose_worker_cannot_drain() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bolt = dir.path().join("bolt.py");
    std::fs::write(&bolt, HANGING_BOLT).expect("write bolt");
    let topology = format!(
        "stdin | shell(python3, {}) fields=[word] | stdout",
        bolt.display()
    );
    let multilang = concat!(env!("CARGO_MANIFEST_DIR"), "/multilang/python");
    let conf = tempfile::tempdir().expect("tempdir");
    let mut child = assert_cmd::cargo::CommandCargoExt::cargo_bin("storm")
        .map(|mut c: std::process::Command| {
            c.env("STORM_CONF_DIR", conf.path())
                .env("STORM_TEST_MULTILANG", multilang)
                .env_remove("STORM_LOG")
                .current_dir(dir.path())
                .args(["run", "-e", &topology, "--processes", "--workers", "1"])
                // Acking off: the tuple the child holds never times out at its spout.
                .args(["-c", "topology.acker.executors=0"])
                .args(["-c", "topology.subprocess.timeout.secs=600"])
                .args(["-c", "topology.message.timeout.secs=2"])
                // Long enough that a worker slowed by a loaded machine is not replaced before
                // the drain's deadline: a replaced worker drains at once (the held tuple was
                // lost with the old one), and the run would rightly end with 0.
                .args(["-c", "nimbus.task.timeout.secs=5"])
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped());
            c
        })
        .expect("the storm binary")
        .spawn()
        .expect("start storm run");
    let mut stdin = child.stdin.take().expect("piped");
    std::io::Write::write_all(&mut stdin, b"a\n").expect("write stdin");
    crate::support::poll_until(
        "the child to hang on its tuple",
        Duration::from_secs(90),
        Duration::from_millis(20),
        || dir.path().join("hanging").exists().then_some(()),
    );
    let interrupted = std::time::Instant::now();
    signal(child.id(), "-INT");
    let status = crate::support::poll_until(
        "storm run to end",
        Duration::from_secs(60),
        Duration::from_millis(50),
        || child.try_wait().ok().flatten(),
    );
    let took = interrupted.elapsed();
    let mut stderr = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut e, &mut stderr);
    }
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("did not end their drain"), "{stderr}");
    assert!(
        took >= Duration::from_secs(10),
        "ended after {took:?}: {stderr}"
    );
    drop(stdin);
}

/// The pid a test child wrote to `file` in `dir`.
fn pid_in(dir: &std::path::Path, file: &str) -> u32 {
    std::fs::read_to_string(dir.join(file))
        .expect("a pid file")
        .trim()
        .parse()
        .expect("a pid")
}

/// A run SIGKILLed, so that none of its own clean-up runs, still takes its multilang child
/// with it (the kernel kills the child when storm dies) and what the child started (the guard
/// kills the child's process group). The child here hangs in `next` and never reads its stdin
/// again, so the pipe closing would not end it; its `sleep 300` reads nothing at all.
#[test]
fn a_sigkilled_run_takes_its_multilang_children_and_theirs_with_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let conf = tempfile::tempdir().expect("tempdir");
    let mut storm = hanging_spout_run(dir.path(), conf.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start storm run");
    crate::support::poll_until(
        "the child to hang in `next`",
        Duration::from_secs(90),
        Duration::from_millis(20),
        || dir.path().join("hanging").exists().then_some(()),
    );
    let child = pid_in(dir.path(), "child.pid");
    let grandchild = pid_in(dir.path(), "grandchild.pid");
    signal(storm.id(), "-KILL");
    let _ = storm.wait();
    let ended = std::time::Instant::now() + Duration::from_secs(10);
    let gone = |pid| crate::run_reliability::stat_of(pid).is_none_or(|(_, s)| s == 'Z');
    let (child_gone, grandchild_gone) = loop {
        let both = (gone(child), gone(grandchild));
        if both == (true, true) || std::time::Instant::now() > ended {
            break both;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // End whatever survived before asserting, so a failure leaves nothing running.
    for (pid, dead) in [(child, child_gone), (grandchild, grandchild_gone)] {
        if !dead {
            signal(pid, "-KILL");
        }
    }
    assert!(
        child_gone,
        "the multilang child {child} outlived a SIGKILLed storm run"
    );
    assert!(
        grandchild_gone,
        "what the multilang child started ({grandchild}) outlived a SIGKILLed storm run"
    );
}

/// `storm run -e "stdin | stdout"` with `extra` flags, its standard output piped and never
/// read; its standard input fed from a thread. Returns the run, and the bytes fed so far.
fn run_with_an_unread_output(extra: &[&str]) -> (std::process::Child, Arc<AtomicUsize>) {
    let conf = tempfile::tempdir().expect("tempdir").keep();
    let mut run = std::process::Command::new(assert_cmd::cargo::cargo_bin("storm"));
    run.env("STORM_CONF_DIR", &conf)
        .env_remove("STORM_CLUSTER_SECRET")
        .args([
            "run",
            "-e",
            "stdin | stdout",
            "-c",
            "topology.message.timeout.secs=1",
        ])
        .args(extra)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = run.spawn().expect("start storm run");
    let mut stdin = child.stdin.take().expect("piped");
    let fed = Arc::new(AtomicUsize::new(0));
    let counted = fed.clone();
    std::thread::spawn(move || {
        let chunk: String = (0..1000).map(|i| format!("line {i}\n")).collect();
        while std::io::Write::write_all(&mut stdin, chunk.as_bytes()).is_ok() {
            counted.fetch_add(chunk.len(), Ordering::Relaxed);
        }
    });
    (child, fed)
}

/// Interrupt `run` once its output is blocked: it took in more than its input and output
/// pipes hold, then stopped taking in more for a second (its queues behind the blocked
/// output are full); how long it took to end, its status and its standard error.
fn interrupt_when_blocked(
    run: std::process::Child,
    fed: &AtomicUsize,
) -> (Duration, std::process::ExitStatus, String) {
    // SIGKILLed should the test fail before it ends.
    struct Guard(std::process::Child);
    impl Drop for Guard {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let mut run = Guard(run);
    let mut last = (0, std::time::Instant::now());
    crate::support::poll_until(
        "storm run to stop taking in its input",
        Duration::from_secs(120),
        Duration::from_millis(50),
        || {
            let now = fed.load(Ordering::Relaxed);
            if now != last.0 {
                last = (now, std::time::Instant::now());
            }
            (now > 128 << 10 && last.1.elapsed() >= Duration::from_secs(1)).then_some(())
        },
    );
    let interrupted = std::time::Instant::now();
    signal(run.0.id(), "-INT");
    let status = crate::support::poll_until(
        "storm run to end",
        Duration::from_secs(120),
        Duration::from_millis(50),
        || run.0.try_wait().ok().flatten(),
    );
    let mut stderr = String::new();
    if let Some(mut e) = run.0.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut e, &mut stderr);
    }
    (interrupted.elapsed(), status, stderr)
}

/// A run whose output nobody reads (its stdout pipe full, the writing thread blocked) still
/// ends after the first interrupt: its drain is given up after the message timeout and the
/// grace, and when the run still has not ended the grace after that, it exits 1 saying why.
/// Before, it waited for a reader for ever.
#[test]
fn the_first_interrupt_ends_a_run_whose_output_is_not_read() {
    let (run, fed) = run_with_an_unread_output(&[]);
    let (took, status, stderr) = interrupt_when_blocked(run, &fed);
    assert_eq!(status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("the run did not end after its drain was given up"),
        "{stderr}"
    );
    // The message timeout (1 s), the grace (5 s), the grace again.
    assert!(took >= Duration::from_secs(10), "{took:?}");
}

/// An attached run (`--nimbus`) whose output nobody reads ends too after the first interrupt:
/// the topology is killed on the cluster with the message timeout to drain, after which nimbus
/// removes it and the home worker stops where it is, saying that what it held is dropped.
#[test]
fn the_first_interrupt_ends_an_attached_run_whose_output_is_not_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut daemons = crate::cluster::Daemons::default();
    let log = dir.path().join("nimbus.log");
    daemons.spawn_logged(
        "nimbus",
        crate::cluster::storm()
            .args(["nimbus", "--listen", "127.0.0.1:0", "--data"])
            .arg(dir.path().join("nimbus")),
        &log,
    );
    let addr = crate::support::nimbus_addr(&log);
    let extra = ["--nimbus", &addr, "-c", "nimbus.task.timeout.secs=2"];
    let (run, fed) = run_with_an_unread_output(&extra);
    let (took, status, stderr) = interrupt_when_blocked(run, &fed);
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("the output may be incomplete"), "{stderr}");
    // The kill's wait (the 1 s message timeout), then a heartbeat or two; the backstop (the
    // message timeout, the task timeout and two graces of 5 s) is never needed.
    assert!(took < Duration::from_secs(13), "{took:?}");
}
