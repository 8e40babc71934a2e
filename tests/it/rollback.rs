//! Global rollback of checkpointed state across worker processes: a stateful word count whose
//! worker process (or whole supervisor with its workers) is SIGKILLed in the middle of the
//! run rolls every worker back to the last committed checkpoint, replays from there, and
//! still prints the exact totals — with `storm run --processes` and attached to a cluster.
//! The oracle is the word count of the input computed here; every process started here is
//! ended by a guard, and every wait is bounded.

use super::cluster::{
    client, eventually, free_port, signal, start_nimbus, two_hosts, workers_of, Daemons,
};
use super::run::{expected_counts, messy_text, parse_counts};
use super::run_reliability::{stat_of, workers_of as workers_of_run};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The longest a whole run may take before it is killed and the test fails.
const RUN_WAIT: Duration = Duration::from_secs(120);
/// Checkpoints committed before the victim is killed.
const MID_WAY_COMMITS: usize = 15;
/// The longest to wait for a run to get to the point where its victim is killed.
const MID_WAY_WAIT: Duration = Duration::from_secs(60);

/// The stateful word count named `name`, two executors of each bolt.
fn topology(name: &str) -> String {
    format!("name {name}\nlines = stdin\n  | split x2\n  | count(word) x2\n  | stdout")
}

/// `storm run -e TOPOLOGY` with exactly-once state, frequent checkpoints and few trees in
/// flight (so a run lasts some seconds), then `extra`.
fn count_args(name: &str, extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = vec!["run".into(), "-e".into(), topology(name)];
    args.extend(extra.iter().map(|s| s.to_string()));
    for c in [
        "topology.stateful=true",
        "topology.state.checkpoint.interval.ms=100",
        "topology.max.spout.pending=4",
    ] {
        args.push("-c".into());
        args.push(c.into());
    }
    args
}

/// A `storm run` child fed `text` on stdin from a thread (then closed), its stdout collected,
/// its stderr collected line by line as it comes (noting the highest checkpoint it logged
/// committed). Killed when dropped, so a failing test leaves nothing behind.
struct Run {
    child: Child,
    fed: Arc<AtomicUsize>,
    total: usize,
    stderr: Arc<Mutex<String>>,
    commits: Arc<AtomicUsize>,
    stdout: Option<JoinHandle<Vec<u8>>>,
    stderr_reader: Option<JoinHandle<()>>,
}

impl Run {
    fn start(conf: &Path, args: &[String], text: Vec<u8>) -> Run {
        let mut child = Command::new(assert_cmd::cargo::cargo_bin("storm"))
            .args(args)
            .env("STORM_CONF_DIR", conf)
            .env("STORM_LOG", "info,storm::runtime::checkpoint=debug")
            .env_remove("STORM_CLUSTER_SECRET")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("storm run starts");
        let total = text.len();
        let fed = Arc::new(AtomicUsize::new(0));
        let mut stdin = child.stdin.take().expect("stdin piped");
        {
            let fed = fed.clone();
            std::thread::spawn(move || {
                for chunk in text.chunks(4096) {
                    if stdin.write_all(chunk).is_err() {
                        return;
                    }
                    fed.fetch_add(chunk.len(), Ordering::Relaxed);
                }
                // Dropping stdin closes it: the end of the input.
            });
        }
        let mut out = child.stdout.take().expect("stdout piped");
        let stdout = std::thread::spawn(move || {
            let mut buf = Vec::new();
            let _ = std::io::Read::read_to_end(&mut out, &mut buf);
            buf
        });
        let stderr = Arc::new(Mutex::new(String::new()));
        let commits = Arc::new(AtomicUsize::new(0));
        let err = child.stderr.take().expect("stderr piped");
        let stderr_reader = {
            let (stderr, commits) = (stderr.clone(), commits.clone());
            std::thread::spawn(move || {
                for line in BufReader::new(err).lines().map_while(Result::ok) {
                    if line.contains("checkpoint committed") {
                        let txid = line
                            .split_once("txid=")
                            .and_then(|(_, t)| t.split_whitespace().next())
                            .and_then(|t| t.parse::<usize>().ok())
                            .unwrap_or(1);
                        commits.fetch_max(txid, Ordering::Relaxed);
                    }
                    let mut s = stderr.lock().expect("stderr lock");
                    s.push_str(&line);
                    s.push('\n');
                }
            })
        };
        Run {
            child,
            fed,
            total,
            stderr,
            commits,
            stdout: Some(stdout),
            stderr_reader: Some(stderr_reader),
        }
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn running(&mut self) -> bool {
        self.child.try_wait().expect("try_wait").is_none()
    }

    fn stderr(&self) -> String {
        self.stderr.lock().expect("stderr lock").clone()
    }

    /// What the run said so far, without its many commit lines.
    fn said(&self) -> String {
        quiet(&self.stderr())
    }

    /// Bytes of the input written to the run so far (the pipe holds at most 64 KiB more than
    /// the run has read).
    fn fed(&self) -> usize {
        self.fed.load(Ordering::Relaxed)
    }

    /// The highest checkpoint (txid) the run, or a worker process sharing its stderr, logged
    /// committed: how many checkpoint rounds it went through.
    fn commits(&self) -> usize {
        self.commits.load(Ordering::Relaxed)
    }

    /// The `submitted NAME as ID` the run prints once it submitted its topology.
    fn submitted_id(&mut self, name: &str) -> String {
        let prefix = format!("submitted {name} as ");
        let deadline = Instant::now() + MID_WAY_WAIT;
        loop {
            let said = self.said();
            if let Some(id) = said
                .lines()
                .find_map(|l| l.split_once(&prefix).map(|(_, id)| id.trim().to_string()))
            {
                return id;
            }
            assert!(self.running(), "the run ended before submitting:\n{said}");
            assert!(Instant::now() < deadline, "no `{prefix}ID` line:\n{said}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Wait until `ready` gives a value while the run goes on; fail if the run ends first.
    fn wait_mid_way<T>(&mut self, what: &str, mut ready: impl FnMut(&Run) -> Option<T>) -> T {
        let deadline = Instant::now() + MID_WAY_WAIT;
        loop {
            if let Some(v) = ready(self) {
                return v;
            }
            assert!(
                self.running(),
                "the run ended before {what} (fed {} of {} bytes, {} commits):\n{}",
                self.fed(),
                self.total,
                self.commits(),
                self.said()
            );
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}:\n{}",
                self.said()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The run is well under way: it committed [`MID_WAY_COMMITS`] checkpoints (about 1.5 s at
    /// one per 100 ms; a run here takes several seconds), or, if it logs no commits, it has
    /// been going for 2 s since `since`.
    fn is_mid_way(&self, since: Instant) -> bool {
        match self.commits() {
            0 => since.elapsed() >= Duration::from_secs(2),
            n => n >= MID_WAY_COMMITS,
        }
    }

    /// Wait for the run to end, killing it and failing after [`RUN_WAIT`]: its exit status,
    /// stdout and stderr.
    fn finish(mut self) -> (ExitStatus, Vec<u8>, String) {
        let deadline = Instant::now() + RUN_WAIT;
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                break status;
            }
            if Instant::now() >= deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!("the run did not end within {RUN_WAIT:?}:\n{}", self.said());
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        let stdout = self
            .stdout
            .take()
            .expect("stdout reader")
            .join()
            .expect("stdout read");
        self.stderr_reader
            .take()
            .expect("stderr reader")
            .join()
            .expect("stderr read");
        (status, stdout, self.stderr())
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// `stderr` without the debug lines of every committed checkpoint, for failure messages.
fn quiet(stderr: &str) -> String {
    stderr
        .lines()
        .filter(|l| !l.contains("checkpoint committed"))
        .map(|l| format!("{l}\n"))
        .collect()
}

fn alive(pid: u32) -> bool {
    // A zombie (killed, not yet reaped) is not alive.
    stat_of(pid).is_some_and(|(_, state)| state != 'Z' && state != 'X')
}

/// SIGKILL `pid`, and wait (bounded) until it is gone.
fn kill_and_wait(pid: u32) {
    signal(pid, "-KILL");
    crate::support::poll_until(
        &format!("pid {pid} to die"),
        Duration::from_secs(10),
        Duration::from_millis(10),
        || (!alive(pid)).then_some(()),
    );
}

fn assert_exact(status: ExitStatus, stdout: &[u8], stderr: &str, text: &[u8]) {
    let stderr = quiet(stderr);
    assert!(
        status.success(),
        "the run must end well after the rollback, got {status}:\n{stderr}"
    );
    assert_eq!(
        parse_counts(stdout),
        expected_counts(text),
        "exact totals after the rollback; stderr:\n{stderr}"
    );
}

/// Wait until `victims` finds what to kill and the run is well under way (see
/// [`Run::is_mid_way`], timed from when the victims were first found), then check the run
/// still goes: the victims, and the checkpoints committed so far.
fn mid_way<T>(run: &mut Run, what: &str, mut victims: impl FnMut() -> Option<T>) -> (T, usize) {
    let mut found: Option<Instant> = None;
    let v = run.wait_mid_way(what, |run| {
        let v = victims()?;
        let since = *found.get_or_insert_with(Instant::now);
        run.is_mid_way(since).then_some(v)
    });
    assert!(
        run.running(),
        "the run must still be going when {what} is killed"
    );
    (v, run.commits())
}

#[test]
fn a_stateful_count_is_exact_when_a_worker_process_is_killed() {
    let conf = tempfile::tempdir().expect("tempdir");
    let text = messy_text(400_000, 17);
    let args = count_args("rb", &["--processes", "--workers", "2"]);
    let mut run = Run::start(conf.path(), &args, text.clone());
    let parent = run.pid();

    let (workers, commits) = mid_way(&mut run, "a worker process", || {
        let w: Vec<u32> = workers_of_run(parent).into_iter().map(|w| w.0).collect();
        (!w.is_empty()).then_some(w)
    });
    let victim = workers[0];
    eprintln!("killing worker {victim} of {workers:?} after {commits} commits");
    kill_and_wait(victim);

    let (status, stdout, stderr) = run.finish();
    assert_exact(status, &stdout, &stderr, &text);
    assert_rolled_back(&stderr, &format!("worker {victim} was killed"));
}

/// The run says it rolled back after `what`.
fn assert_rolled_back(stderr: &str, what: &str) {
    let rolled_back = stderr.lines().any(|l| {
        let l = l.to_lowercase();
        l.contains("roll") && !l.contains("cannot")
    });
    assert!(
        rolled_back,
        "the run says it rolled back after {what}:\n{}",
        quiet(stderr)
    );
}

/// The last checkpoint committed across the topology's workers, as the live tree says.
fn committed_txid(addr: &str, id: &str) -> Option<u64> {
    let line = checkpoint_node(addr, id)?;
    let (_, value) = line.split_once(" = ")?;
    let value: serde_json::Value = serde_json::from_str(value).ok()?;
    value.get("txid")?.as_u64()
}

/// Nimbus (tasks time out after 3 s) and two supervisors on loopback with `slots` slots
/// each: the daemons, nimbus's address, and each supervisor's name and slots.
fn cluster(dir: &Path, slots: usize) -> (Daemons, String, Vec<(&'static str, Vec<String>)>) {
    let mut daemons = Daemons::default();
    let addr = start_nimbus(&mut daemons, &dir.join("nimbus"));
    let mut supervisors = Vec::new();
    for (name, host) in ["supervisor-a", "supervisor-b"]
        .into_iter()
        .zip(two_hosts())
    {
        let ports: Vec<u16> = (0..slots).map(|_| free_port(host)).collect();
        let list = ports
            .iter()
            .map(u16::to_string)
            .collect::<Vec<_>>()
            .join(",");
        daemons.spawn(
            name,
            super::cluster::storm().args([
                "supervisor",
                "--nimbus",
                &addr,
                "--host",
                host,
                "--slots",
                &list,
            ]),
        );
        supervisors.push((name, ports.iter().map(|p| format!("{host}:{p}")).collect()));
    }
    eventually("both supervisors", || {
        let tree = client(&["zk", "dump", "--nimbus", &addr])?;
        (tree
            .lines()
            .filter(|l| l.starts_with("/storm/supervisors/"))
            .count()
            == 2)
            .then_some(())
    });
    (daemons, addr, supervisors)
}

/// The `/storm/checkpoints/ID` line of the live tree, when its value is JSON with a `txid`.
fn checkpoint_node(addr: &str, id: &str) -> Option<String> {
    let tree = client(&["zk", "dump", "--nimbus", addr])?;
    let prefix = format!("/storm/checkpoints/{id} = ");
    let line = tree.lines().find(|l| l.starts_with(&prefix))?;
    let value: serde_json::Value = serde_json::from_str(&line[prefix.len()..]).ok()?;
    value.get("txid").is_some().then(|| line.to_string())
}

/// A thread polling the live tree for a topology's checkpoint node, stopped when dropped.
struct CheckpointWatcher {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Option<String>>>,
}

impl CheckpointWatcher {
    fn start(addr: &str, id: &str) -> CheckpointWatcher {
        let stop = Arc::new(AtomicBool::new(false));
        let (addr, id, done) = (addr.to_string(), id.to_string(), stop.clone());
        let thread = std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                if let Some(line) = checkpoint_node(&addr, &id) {
                    return Some(line);
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            None
        });
        CheckpointWatcher {
            stop,
            thread: Some(thread),
        }
    }

    /// The first checkpoint node line seen.
    fn seen(mut self) -> Option<String> {
        self.stop.store(true, Ordering::Relaxed);
        let thread = self.thread.take().expect("the watcher's thread");
        thread.join().expect("checkpoint watcher")
    }
}

impl Drop for CheckpointWatcher {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

#[test]
fn a_stateful_cluster_run_is_exact_when_a_worker_is_killed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_daemons, addr, supervisors) = cluster(dir.path(), 2);
    let our_slots: Vec<String> = supervisors.iter().flat_map(|(_, s)| s.clone()).collect();

    let text = messy_text(400_000, 23);
    let args = count_args("rbc", &["--nimbus", &addr, "--workers", "2"]);
    let mut run = Run::start(dir.path(), &args, text.clone());
    let id = run.submitted_id("rbc");
    let checkpoints = CheckpointWatcher::start(&addr, &id);

    // Under way: nimbus committed some checkpoints of this generation.
    let ((victim, slot), commits) = mid_way(&mut run, "a worker process", || {
        let txid = committed_txid(&addr, &id)?;
        (txid >= 10).then(|| workers_of(&id, &our_slots).first().cloned())?
    });
    eprintln!("killing worker {victim} on {slot} after {commits} commits");
    kill_and_wait(victim);

    let (status, stdout, stderr) = run.finish();
    let seen = checkpoints.seen();
    eprintln!("checkpoint node seen during the run: {seen:?}");
    assert_exact(status, &stdout, &stderr, &text);
    assert!(
        seen.is_some(),
        "nimbus kept /storm/checkpoints/{id} (JSON with a txid) during the run; worker {victim} on {slot} was killed"
    );
    assert_rolled_back(&stderr, &format!("worker {victim} was killed"));
}

#[test]
fn state_follows_executors_moved_off_a_lost_supervisor() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut daemons, addr, supervisors) = cluster(dir.path(), 3);
    let our_slots: Vec<String> = supervisors.iter().flat_map(|(_, s)| s.clone()).collect();

    let text = messy_text(400_000, 29);
    let args = count_args("rbs", &["--nimbus", &addr, "--workers", "2"]);
    let mut run = Run::start(dir.path(), &args, text.clone());
    let id = run.submitted_id("rbs");

    // The supervisor of the first worker found, with all of its workers, is lost.
    let (slot, commits) = mid_way(&mut run, "a supervisor", || {
        let txid = committed_txid(&addr, &id)?;
        (txid >= 10).then(|| workers_of(&id, &our_slots).first().map(|w| w.1.clone()))?
    });
    let (lost, lost_slots) = supervisors
        .iter()
        .find(|(_, slots)| slots.contains(&slot))
        .expect("the worker's supervisor");
    let (_, kept_slots) = supervisors
        .iter()
        .find(|(name, _)| name != lost)
        .expect("the other supervisor");
    let before: Vec<u32> = workers_of(&id, kept_slots).iter().map(|w| w.0).collect();
    eprintln!("killing {lost} {lost_slots:?} after {commits} commits");
    daemons.kill(lost);
    let victims = workers_of(&id, lost_slots);
    assert!(!victims.is_empty(), "{lost} ran a worker of {id}");
    for (pid, _) in &victims {
        kill_and_wait(*pid);
    }

    // Nimbus moves the lost executors to the other supervisor's free slots (once it misses
    // their heartbeats, or the lost supervisor's session expires), while the run goes on.
    let moved = run.wait_mid_way("the lost executors to move to the other supervisor", |_| {
        workers_of(&id, kept_slots)
            .into_iter()
            .find(|(pid, _)| !before.contains(pid))
    });
    eprintln!("the lost executors moved to worker {moved:?}");

    let (status, stdout, stderr) = run.finish();
    assert_exact(status, &stdout, &stderr, &text);
    assert_rolled_back(&stderr, &format!("{lost} was lost"));
}
