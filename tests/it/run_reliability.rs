//! Faults in `storm run`, with real processes and signals: worker processes SIGKILLed or
//! SIGSTOPped mid-run are replaced and the counts stay exact, nothing outlives the run on any
//! exit path, a failed write to stdout fails the run, impossible sizes are rejected, a
//! panicking executor fails the run, and end-of-input survives a broken connection.

use crate::run::{expected_counts, messy_text, parse_counts};
use crate::support::poll_until;
use assert_cmd::cargo::CommandCargoExt;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

/// Generous bound on every wait: a hang fails the test instead of blocking it.
const WAIT: Duration = Duration::from_secs(90);

/// `storm` with an empty configuration folder, no cluster secret, no log level.
fn storm(conf: &Path) -> Command {
    let mut c = Command::cargo_bin("storm").expect("the storm binary");
    c.env("STORM_CONF_DIR", conf)
        .env_remove("STORM_CLUSTER_SECRET")
        .env_remove("STORM_LOG");
    c
}

pub(crate) fn signal(pid: u32, sig: &str) {
    let status = Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()
        .expect("run kill");
    assert!(status.success(), "kill {sig} {pid}");
}

/// Poll `f` until it gives a value; fails the test after `WAIT`.
fn eventually<T>(what: &str, f: impl FnMut() -> Option<T>) -> T {
    crate::support::poll_until(what, WAIT, Duration::from_millis(50), f)
}

/// The `storm worker` children of process `parent`, with their `--slot`.
pub(crate) fn workers_of(parent: u32) -> Vec<(u32, String)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse().ok()) else {
            continue;
        };
        let Some((ppid, state)) = stat_of(pid) else {
            continue;
        };
        if ppid != parent || state == 'Z' {
            continue;
        }
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let args: Vec<String> = cmdline
            .split(|b| *b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        if args.get(1).map(String::as_str) != Some("worker") {
            continue;
        }
        if let Some(i) = args.iter().position(|a| a == "--slot") {
            out.push((pid, args.get(i + 1).cloned().unwrap_or_default()));
        }
    }
    out.sort();
    out
}

/// Parent pid and state letter of a process, from `/proc/PID/stat`.
pub(crate) fn stat_of(pid: u32) -> Option<(u32, char)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = stat.rsplit_once(')')?.1;
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    Some((ppid, state))
}

/// Whether a process has ended (gone, or a zombie nobody reaped yet).
fn ended(pid: u32) -> bool {
    stat_of(pid).is_none_or(|(_, state)| state == 'Z' || state == 'X')
}

/// The `storm-run-*` folders left in `tmp`.
fn leftovers(tmp: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(tmp)
        .expect("the temporary folder")
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("storm-run-"))
        })
        .collect()
}

/// A `storm run` under test: stdin piped; stdout and stderr read by threads from the start
/// (so a large output never blocks the run while the test writes); SIGKILLed if the test
/// fails before it ends.
pub(crate) struct Run {
    child: Option<Child>,
    stdout: Option<std::thread::JoinHandle<Vec<u8>>>,
    stderr: Option<std::thread::JoinHandle<Vec<u8>>>,
    _conf: tempfile::TempDir,
    tmp: tempfile::TempDir,
}

/// Read a pipe to its end on a thread of its own.
fn drain(mut pipe: impl std::io::Read + Send + 'static) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = pipe.read_to_end(&mut bytes);
        bytes
    })
}

impl Run {
    /// Start `storm ARGS`; with `read_stdout` false the test reads stdout itself.
    pub(crate) fn start(args: &[&str], read_stdout: bool) -> Run {
        let conf = tempfile::tempdir().expect("tempdir");
        let tmp = tempfile::tempdir().expect("tempdir");
        let mut child = storm(conf.path())
            .args(args)
            .env("TMPDIR", tmp.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start storm run");
        let stdout = if read_stdout {
            child.stdout.take().map(drain)
        } else {
            None
        };
        let stderr = child.stderr.take().map(drain);
        Run {
            child: Some(child),
            stdout,
            stderr,
            _conf: conf,
            tmp,
        }
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    fn child(&mut self) -> &mut Child {
        self.child.as_mut().expect("the run is still ours")
    }

    /// Its worker processes, once there are `n`.
    pub(crate) fn workers(&self, n: usize) -> Vec<(u32, String)> {
        eventually(&format!("{n} worker processes"), || {
            let w = workers_of(self.pid());
            (w.len() == n).then_some(w)
        })
    }

    /// Wait until the run committed a checkpoint, as the tree nimbus saves in the run's
    /// folder records it (`/storm/checkpoints/ID`): every worker runs by then.
    pub(crate) fn committed(&self) {
        let committed = |tree: &str| {
            tree.match_indices("txid").any(|(i, _)| {
                let digits: String = tree[i..]
                    .chars()
                    .skip_while(|c| !c.is_ascii_digit())
                    .take_while(char::is_ascii_digit)
                    .collect();
                digits.parse::<u64>().is_ok_and(|t| t > 0)
            })
        };
        crate::support::poll_until(
            "a committed checkpoint",
            Duration::from_secs(60),
            Duration::from_millis(50),
            || {
                let dirs = std::fs::read_dir(self.tmp.path()).ok()?;
                dirs.flatten()
                    .filter_map(|d| std::fs::read_to_string(d.path().join("tree.json")).ok())
                    .any(|t| committed(&t))
                    .then_some(())
            },
        );
    }

    /// Write to its stdin (kept open).
    pub(crate) fn write(&mut self, bytes: &[u8]) {
        let stdin = self.child().stdin.as_mut().expect("stdin is piped");
        stdin.write_all(bytes).expect("write stdin");
        stdin.flush().expect("flush stdin");
    }

    /// Write `bytes` to its stdin on a thread of its own, then close it (a run that stops
    /// reading cannot block the test).
    pub(crate) fn feed(&mut self, bytes: Vec<u8>) {
        let mut stdin = self.child().stdin.take().expect("stdin is piped");
        std::thread::spawn(move || {
            let _ = stdin.write_all(&bytes);
        });
    }

    /// Wait at most `wait` for it to end; its exit status and output.
    pub(crate) fn finish_within(&mut self, wait: Duration) -> Output {
        let child = self.child();
        let status =
            crate::support::poll_until("storm run to end", wait, Duration::from_millis(20), || {
                child.try_wait().ok().flatten()
            });
        let collect = |h: Option<std::thread::JoinHandle<Vec<u8>>>| {
            h.map(|h| h.join().expect("pipe reader"))
                .unwrap_or_default()
        };
        Output {
            status,
            stdout: collect(self.stdout.take()),
            stderr: collect(self.stderr.take()),
        }
    }

    /// Close its stdin: the end of its input.
    pub(crate) fn close_stdin(&mut self) {
        drop(self.child().stdin.take());
    }

    /// Close stdin and collect the end of the run (bounded by `WAIT`).
    pub(crate) fn finish(&mut self) -> Output {
        drop(self.child().stdin.take());
        let status = self.wait_status();
        let collect = |h: Option<std::thread::JoinHandle<Vec<u8>>>| {
            h.map(|h| h.join().expect("pipe reader"))
                .unwrap_or_default()
        };
        Output {
            status,
            stdout: collect(self.stdout.take()),
            stderr: collect(self.stderr.take()),
        }
    }

    pub(crate) fn wait_status(&mut self) -> std::process::ExitStatus {
        let child = self.child();
        eventually("storm run to end", || child.try_wait().ok().flatten())
    }

    /// Wait for it to end without closing its pipes; the exit code.
    pub(crate) fn wait(&mut self) -> Option<i32> {
        self.wait_status().code()
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn assert_success(out: &Output) {
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The worker processes of a run have all ended, and its temporary folder is gone.
fn assert_nothing_left(workers: &[(u32, String)], tmp: &Path) {
    for (pid, slot) in workers {
        eventually(&format!("worker {pid} ({slot}) to end"), || {
            ended(*pid).then_some(())
        });
    }
    assert_eq!(leftovers(tmp), Vec::<PathBuf>::new());
}

const WORDCOUNT: &str = "topologies/wordcount.yaml";

/// SIGKILL a worker process while the run waits for input: the supervisor starts it again in
/// its slot, and the run counts every word of the input exactly.
#[test]
fn a_sigkilled_worker_process_is_replaced_and_every_word_is_counted() {
    let text = messy_text(60_000, 3);
    let mut run = Run::start(
        &["run", WORDCOUNT, "--processes", "--workers", "3", "--quiet"],
        true,
    );
    let (victim, slot) = run.workers(3)[0].clone();
    signal(victim, "-KILL");
    eventually("a new worker in the killed one's slot", || {
        workers_of(run.pid())
            .iter()
            .any(|(pid, s)| *s == slot && *pid != victim)
            .then_some(())
    });
    run.write(&text);
    let out = run.finish();
    assert_success(&out);
    assert_eq!(parse_counts(&out.stdout), expected_counts(&text));
}

/// The word count over `workers` worker processes with checkpointed state, checkpoints every
/// `interval_ms`, and `extra` config (`KEY=VALUE`).
fn stateful_wordcount(workers: &str, interval_ms: u64, extra: &[&str]) -> Run {
    let interval = format!("topology.state.checkpoint.interval.ms={interval_ms}");
    let mut args = vec![
        "run",
        WORDCOUNT,
        "--processes",
        "--workers",
        workers,
        "-c",
        "topology.stateful=true",
        "-c",
        &interval,
    ];
    for e in extra {
        args.extend(["-c", e]);
    }
    Run::start(&args, true)
}

/// With checkpointed state, a worker process that hangs (SIGSTOP) while input arrives is
/// killed for its missing heartbeats and restarted; every worker rolls back to the last
/// committed checkpoint, the spouts replay from there, and the totals are exact.
#[test]
fn a_hung_worker_of_a_stateful_run_is_rolled_back_with_exact_totals() {
    let mut run = stateful_wordcount("3", 100, &["nimbus.task.timeout.secs=2"]);
    let (victim, _) = run.workers(3)[0].clone();
    let text = messy_text(20_000, 4);
    let (first, rest) = text.split_at(text.len() / 2);
    run.write(first);
    run.committed();
    signal(victim, "-STOP");
    run.write(rest);
    let out = run.finish();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains("rolls back"), "{stderr}");
    assert_eq!(parse_counts(&out.stdout), expected_counts(&text));
}

/// A worker process lost right as the input ends, while the counts print their totals: the
/// output waits for the commit after it, so the totals print once, exact (a rollback to a
/// checkpoint taken after a count's totals does not print them again).
#[test]
fn a_worker_lost_as_the_input_ends_prints_the_totals_once() {
    for round in 0..3u64 {
        let mut run = stateful_wordcount("2", 50, &[]);
        let (victim, _) = run.workers(2)[(round % 2) as usize].clone();
        let text = messy_text(3_000, round);
        run.write(&text);
        run.committed();
        drop(run.child().stdin.take());
        std::thread::sleep(Duration::from_millis(10 * round));
        signal(victim, "-KILL");
        let out = run.finish();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        // `parse_counts` fails on a word printed twice.
        assert_eq!(
            parse_counts(&out.stdout),
            expected_counts(&text),
            "{stderr}"
        );
    }
}

/// SIGINT while the workers roll back: the run ends (it does not wait for a drain the lost
/// worker's tasks can no longer do).
#[test]
fn an_interrupt_during_a_rollback_ends_the_run() {
    let mut run = stateful_wordcount("2", 100, &["topology.max.spout.pending=4"]);
    let (victim, _) = run.workers(2)[0].clone();
    run.write(&messy_text(200_000, 9));
    run.committed();
    signal(victim, "-KILL");
    // Interrupted once the supervisor has seen the worker die (it reaped it).
    let pid = run.pid();
    poll_until(
        "the lost worker to be reaped",
        WAIT,
        Duration::from_millis(10),
        || (!workers_of(pid).iter().any(|(p, _)| *p == victim)).then_some(()),
    );
    signal(run.pid(), "-INT");
    let out = run.finish();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A worker process SIGKILLed, or SIGSTOPped (then killed for its missing heartbeats), with
/// tuples in flight: what it held times out and is replayed, so every input word reaches the
/// output (at least once: acking is at-least-once).
#[test]
fn a_worker_process_killed_or_stopped_mid_run_loses_no_input() {
    for sig in ["-KILL", "-STOP"] {
        let lost = words_lost_when_a_worker_gets(sig);
        assert!(
            lost.is_empty(),
            "{sig}: {} words lost: {lost:?}",
            lost.len()
        );
    }
}

/// Run `stdin | split | stdout` over two worker processes, signal one halfway through the
/// input; the input words missing from the output.
fn words_lost_when_a_worker_gets(sig: &str) -> Vec<String> {
    let n = 12_000;
    let lines: Vec<String> = (0..n).map(|i| format!("w{i} v{i}\n")).collect();
    let mut run = Run::start(
        &[
            "run",
            "-e",
            "stdin | split x2 | stdout",
            "--processes",
            "--workers",
            "2",
            "--quiet",
            "-c",
            "topology.message.timeout.secs=2",
            "-c",
            "nimbus.task.timeout.secs=2",
        ],
        true,
    );
    let (victim, _) = run.workers(2)[0].clone();
    run.write(lines[..n / 2].concat().as_bytes());
    signal(victim, sig);
    run.write(lines[n / 2..].concat().as_bytes());
    let out = run.finish();
    assert_success(&out);
    let seen: std::collections::BTreeSet<&str> = std::str::from_utf8(&out.stdout)
        .expect("UTF-8 output")
        .lines()
        .collect();
    (0..n)
        .flat_map(|i| [format!("w{i}"), format!("v{i}")])
        .filter(|w| !seen.contains(w.as_str()))
        .collect()
}

/// SIGSTOP a worker process: its heartbeats stop, and after `nimbus.task.timeout.secs` it is
/// killed and replaced; the run then counts every word exactly.
#[test]
fn a_stopped_worker_process_is_killed_for_its_missing_heartbeats_and_replaced() {
    let text = messy_text(60_000, 5);
    let mut run = Run::start(
        &[
            "run",
            WORDCOUNT,
            "--processes",
            "--workers",
            "3",
            "-c",
            "nimbus.task.timeout.secs=2",
        ],
        true,
    );
    let (victim, slot) = run.workers(3)[1].clone();
    signal(victim, "-STOP");
    eventually("a new worker in the stopped one's slot", || {
        workers_of(run.pid())
            .iter()
            .any(|(pid, s)| *s == slot && *pid != victim)
            .then_some(())
    });
    eventually("the stopped worker to be killed", || {
        ended(victim).then_some(())
    });
    run.write(&text);
    let out = run.finish();
    assert_success(&out);
    assert_eq!(parse_counts(&out.stdout), expected_counts(&text));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("missed its heartbeats for 2s"), "{err}");
}

#[test]
fn nothing_outlives_a_run_that_ends_normally() {
    let mut run = Run::start(&["run", WORDCOUNT, "--processes", "--quiet"], true);
    let workers = run.workers(1);
    run.write(b"a b a\n");
    let out = run.finish();
    assert_success(&out);
    let mut lines: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    lines.sort();
    assert_eq!(lines, ["a\t2", "b\t1"]);
    assert_nothing_left(&workers, run.tmp.path());
}

/// `storm run --processes ... | head -1`: the reader goes away, the run ends quietly, and
/// neither its workers nor its folder remain.
#[test]
fn nothing_outlives_a_run_whose_output_is_closed() {
    let mut run = Run::start(
        &[
            "run",
            "-e",
            "generate | stdout",
            "--processes",
            "--workers",
            "2",
            "--quiet",
        ],
        false,
    );
    let workers = run.workers(2);
    let stdout = run.child().stdout.take().expect("stdout is piped");
    let mut first = String::new();
    std::io::BufReader::new(stdout)
        .read_line(&mut first)
        .expect("one line");
    assert!(!first.is_empty());
    // The reader is gone now (as `head -1` exits).
    assert_eq!(run.wait(), Some(0));
    assert_nothing_left(&workers, run.tmp.path());
}

/// A second Ctrl-C while a run drains (here it cannot: a worker is stopped) exits 130 at once,
/// taking every worker, the stopped one too, and the folder with it.
#[test]
fn nothing_outlives_a_run_ended_by_a_second_interrupt() {
    let mut run = Run::start(
        &["run", WORDCOUNT, "--processes", "--workers", "2", "--quiet"],
        true,
    );
    let workers = run.workers(2);
    signal(workers[0].0, "-STOP");
    run.write(b"a b c\n");
    signal(run.pid(), "-INT");
    std::thread::sleep(Duration::from_millis(300));
    signal(run.pid(), "-INT");
    assert_eq!(run.wait(), Some(130));
    assert_nothing_left(&workers, run.tmp.path());
}

/// The first Ctrl-C with a stopped worker: the run drains once the worker is killed for its
/// missing heartbeats and replaced (the replacement of a killed topology drains too), and
/// ends by itself, leaving nothing behind.
#[test]
fn a_first_interrupt_ends_a_run_with_a_stopped_worker() {
    let mut run = Run::start(
        &[
            "run",
            WORDCOUNT,
            "--processes",
            "--workers",
            "2",
            "-c",
            "nimbus.task.timeout.secs=2",
            "-c",
            "topology.message.timeout.secs=2",
        ],
        true,
    );
    let workers = run.workers(2);
    run.write("a b a\n".repeat(1000).as_bytes());
    signal(workers[0].0, "-STOP");
    signal(run.pid(), "-INT");
    let out = run.finish();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.code().is_some(), "ended by a signal: {err}");
    assert!(err.contains("missed its heartbeats"), "{err}");
    assert_nothing_left(&workers, run.tmp.path());
}

/// Even a SIGKILLed run takes its workers with it (they die with their parent).
#[test]
fn worker_processes_die_with_a_killed_run() {
    let mut run = Run::start(
        &["run", WORDCOUNT, "--processes", "--workers", "2", "--quiet"],
        true,
    );
    let workers = run.workers(2);
    let folder = std::env::temp_dir().join(format!("storm-run-{}", run.pid()));
    signal(run.pid(), "-KILL");
    let _ = run.wait();
    for (pid, _) in &workers {
        eventually(&format!("worker {pid} to end"), || {
            ended(*pid).then_some(())
        });
    }
    // A SIGKILLed run cannot remove its folder; the next `--processes` run does.
    let conf = tempfile::tempdir().expect("tempdir");
    let out = storm(conf.path())
        .args([
            "run",
            "-q",
            "--processes",
            "-e",
            "generate(count=10) | discard",
        ])
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!folder.exists(), "{} is left behind", folder.display());
}

/// Standard output on a full device: one clear error, exit 1, in local and --processes modes.
#[test]
fn a_full_stdout_fails_the_run_with_one_error() {
    let text = messy_text(100_000, 9);
    for extra in [&[][..], &["--processes", "--workers", "2"][..]] {
        let conf = tempfile::tempdir().expect("tempdir");
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .expect("open /dev/full");
        let mut child = storm(conf.path())
            .args(["run", WORDCOUNT, "--quiet"])
            .args(extra)
            .stdin(Stdio::piped())
            .stdout(full)
            .stderr(Stdio::piped())
            .spawn()
            .expect("start storm run");
        let mut stdin = child.stdin.take().expect("stdin is piped");
        let text = text.clone();
        let writer = std::thread::spawn(move || {
            let _ = stdin.write_all(&text);
        });
        let out = child.wait_with_output().expect("wait for storm run");
        let _ = writer.join();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{extra:?}: {err}");
        let errors: Vec<&str> = err
            .lines()
            .filter(|l| l.starts_with("error") || l.contains("No space left"))
            .collect();
        assert_eq!(
            errors,
            ["error: component `print`: cannot write to standard output: No space left on device (os error 28)"],
            "{extra:?}: {err}"
        );
    }
}

/// Task ids are 32-bit and every executor is a thread: sizes past the limits are located
/// errors that state the limit.
#[test]
fn sizes_past_the_limits_are_rejected_with_the_limit() {
    let conf = tempfile::tempdir().expect("tempdir");
    let cases: [(&str, &[&str]); 4] = [
        ("stdin | split tasks=4294967295 | stdout", &[]),
        ("stdin | split tasks=4294967294 | stdout", &[]),
        ("stdin | split x2000 | stdout", &[]),
        (
            "stdin | split tasks=4000 | count(word) tasks=4000 | a = split tasks=4000 | b = split tasks=4000 | c = split tasks=4000 | stdout",
            &[],
        ),
    ];
    let mut report = String::new();
    for (text, extra) in cases {
        let out = storm(conf.path())
            .args(["validate", "-e", text])
            .args(extra)
            .output()
            .expect("run validate");
        assert_eq!(out.status.code(), Some(1), "{text}");
        report.push_str(&format!(
            "$ storm validate -e '{text}'\n{}\n",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let out = storm(conf.path())
        .args([
            "validate",
            "-e",
            "stdin | stdout",
            "-c",
            "topology.workers=100000",
        ])
        .output()
        .expect("run validate");
    assert_eq!(out.status.code(), Some(1));
    report.push_str(&format!(
        "$ storm validate -e 'stdin | stdout' -c topology.workers=100000\n{}",
        String::from_utf8_lossy(&out.stderr)
    ));
    insta::assert_snapshot!(report);
}

/// A panic in an executor thread fails the run at once, naming the component, in local and
/// --processes modes (the chaos bolt's `panic_after` is the panic).
#[test]
fn a_panicking_executor_fails_the_run() {
    for extra in [&[][..], &["--processes", "--workers", "2"][..]] {
        let conf = tempfile::tempdir().expect("tempdir");
        let out = assert_cmd::Command::from_std(storm(conf.path()))
            .args([
                "run",
                "-e",
                "generate(count=100000) | chaos(panic_after=10) | discard",
                "--quiet",
            ])
            .args(extra)
            .timeout(WAIT)
            .output()
            .expect("run");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{extra:?}: {err}");
        assert!(
            err.contains("component `chaos` crashed: chaos: panic_after reached"),
            "{extra:?}: {err}"
        );
    }
}

/// Each link of every process loses its first end-of-input buffer with its connection (a
/// test hook in the real transport): the markers are sent again on reconnecting, and the
/// bounded run still ends with exact counts.
#[test]
fn end_of_input_survives_a_broken_connection() {
    let text = messy_text(60_000, 13);
    let conf = tempfile::tempdir().expect("tempdir");
    let out = assert_cmd::Command::from_std(storm(conf.path()))
        .args(["run", WORDCOUNT, "--processes", "--workers", "2", "--quiet"])
        .env("STORM_TEST_LOSE_FIRST_EOS", "1")
        .write_stdin(text.clone())
        .timeout(WAIT)
        .output()
        .expect("run");
    assert_success(&out);
    assert_eq!(parse_counts(&out.stdout), expected_counts(&text));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("lost with its connection"), "{err}");
}

/// Without acking a worker finishes (and its listener closes) while its peers still hold its
/// end-of-input markers: they must not keep trying to re-send them, nor hold the run for the
/// link's linger time.
#[test]
fn finished_peers_are_not_waited_for_to_resend_end_of_input() {
    // 50 000 lines of eight one-letter words: every count task is busy until the end.
    let mut state = 1u64;
    let text: Vec<u8> = (0..50_000)
        .flat_map(|_| {
            let mut line: Vec<u8> = (0..8)
                .flat_map(|_| {
                    state = state
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    [b'a' + ((state >> 33) % 7) as u8, b' ']
                })
                .collect();
            line.push(b'\n');
            line
        })
        .collect();
    let conf = tempfile::tempdir().expect("tempdir");
    let out = assert_cmd::Command::from_std(storm(conf.path()))
        .args(["run", WORDCOUNT, "--processes", "--workers", "3", "--quiet"])
        .args(["-c", "topology.acker.executors=0"])
        .write_stdin(text.clone())
        .timeout(WAIT)
        .output()
        .expect("run");
    assert_success(&out);
    assert_eq!(parse_counts(&out.stdout), expected_counts(&text));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("gave up on the peer worker"), "{err}");
}
