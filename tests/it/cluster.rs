//! The cluster with real processes on loopback: `storm run --processes` gives local mode's
//! output; nimbus and two supervisors run a submitted topology, show it in the live tree,
//! survive a SIGKILLed worker and a nimbus restart, kill it, and run an attached word count. Every process started here is
//! ended by a guard, even when a test fails.

use assert_cmd::cargo::CommandCargoExt;
use assert_cmd::Command as TestCommand;
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub(crate) const WAIT: Duration = Duration::from_secs(60);

pub(crate) fn storm() -> Command {
    let mut c = Command::cargo_bin("storm").expect("the storm binary");
    c.env_remove("STORM_CLUSTER_SECRET");
    c
}

/// A port free right now on `host`.
pub(crate) fn free_port(host: &str) -> u16 {
    let l = TcpListener::bind((host, 0)).expect("bind a free port");
    l.local_addr().expect("local address").port()
}

/// Loopback hosts for two supervisors: 127.0.0.2 and 127.0.0.3 where they can be bound
/// (Linux), else 127.0.0.1 twice.
pub(crate) fn two_hosts() -> [&'static str; 2] {
    let ok = ["127.0.0.2", "127.0.0.3"]
        .iter()
        .all(|h| TcpListener::bind((*h, 0)).is_ok());
    if ok {
        ["127.0.0.2", "127.0.0.3"]
    } else {
        ["127.0.0.1", "127.0.0.1"]
    }
}

/// Processes started by a test: SIGTERM (supervisors then end their workers), a bounded wait,
/// then SIGKILL, when the guard goes away.
#[derive(Default)]
pub(crate) struct Daemons {
    children: Vec<(&'static str, Child)>,
}

impl Daemons {
    pub(crate) fn spawn(&mut self, name: &'static str, cmd: &mut Command) -> u32 {
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start a daemon");
        let pid = child.id();
        self.children.push((name, child));
        pid
    }

    /// Start a daemon whose standard error goes to `log` (read when a test fails).
    pub(crate) fn spawn_logged(
        &mut self,
        name: &'static str,
        cmd: &mut Command,
        log: &Path,
    ) -> u32 {
        let file = std::fs::File::create(log).expect("a log file");
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(file)
            .spawn()
            .expect("start a daemon");
        let pid = child.id();
        self.children.push((name, child));
        pid
    }

    /// SIGKILL one daemon and reap it.
    pub(crate) fn kill(&mut self, name: &str) {
        if let Some(i) = self.children.iter().position(|(n, _)| *n == name) {
            let (_, mut child) = self.children.remove(i);
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Stop one daemon gracefully and wait for it.
    fn stop(&mut self, name: &str) {
        if let Some(i) = self.children.iter().position(|(n, _)| *n == name) {
            let (_, child) = self.children.remove(i);
            end(child);
        }
    }
}

pub(crate) fn signal(pid: u32, sig: &str) {
    let _ = Command::new("kill")
        .args([sig, &pid.to_string()])
        .stderr(Stdio::null())
        .status();
}

fn end(mut child: Child) {
    signal(child.id(), "-TERM");
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
}

impl Drop for Daemons {
    fn drop(&mut self) {
        // Supervisors first, so their workers end while nimbus still answers.
        self.children.sort_by_key(|(n, _)| *n == "nimbus");
        for (_, child) in self.children.drain(..) {
            end(child);
        }
    }
}

/// Run a client command; its stdout when it succeeds.
pub(crate) fn client(args: &[&str]) -> Option<String> {
    let out = storm().args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Poll `f` until it gives a value or the wait is over.
pub(crate) fn eventually<T>(what: &str, f: impl FnMut() -> Option<T>) -> T {
    crate::support::poll_until(what, WAIT, Duration::from_millis(200), f)
}

/// Worker processes of a topology in one of `slots` (this test's own: topology ids repeat
/// across tests started in the same second), found by their command line (`storm worker ...
/// --topology ID --slot HOST:PORT`), with their slot.
pub(crate) fn workers_of(id: &str, slots: &[String]) -> Vec<(u32, String)> {
    let mut out = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return out;
    };
    for entry in dir.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let args: Vec<String> = cmdline
            .split(|b| *b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        let is_worker = args.get(1).is_some_and(|a| a == "worker");
        let topo = args.windows(2).any(|w| w[0] == "--topology" && w[1] == id);
        if is_worker && topo {
            if let Some(w) = args.windows(2).find(|w| w[0] == "--slot") {
                if slots.contains(&w[1]) {
                    out.push((pid, w[1].clone()));
                }
            }
        }
    }
    out
}

pub(crate) const SUBMITTED: &str = "\
name: cluster-count
config:
  topology.workers: 2
  topology.acker.executors: 0
spouts:
  - id: gen
    type: generate
    args: { count: 24000, rate: 4000, values: [[a], [b], [c]] }
bolts:
  - id: count
    type: count
    args: { fields: [word] }
    parallelism: 2
  - id: sink
    type: log
streams:
  - from: gen
    to: count
    grouping: { type: fields, args: [word] }
  - from: count
    to: sink
    grouping: global
";

/// Start nimbus on a port it picks (and its UI too), its standard error in `data`.log; the
/// address it listens on, once it answers.
pub(crate) fn start_nimbus(daemons: &mut Daemons, data: &Path) -> String {
    start_nimbus_at(daemons, "127.0.0.1:0", data)
}

/// Start nimbus listening on `listen` (port 0, or the address a restarted nimbus had); the
/// address it reports, once it answers.
pub(crate) fn start_nimbus_at(daemons: &mut Daemons, listen: &str, data: &Path) -> String {
    let log = data.with_extension("log");
    daemons.spawn_logged(
        "nimbus",
        storm()
            .args(["nimbus", "--listen", listen, "--data"])
            .arg(data)
            .args(["-c", "nimbus.task.timeout.secs=3", "-c", "ui.port=0"]),
        &log,
    );
    let addr = crate::support::nimbus_addr(&log);
    eventually("nimbus to answer", || client(&["list", "--nimbus", &addr]));
    addr
}

#[test]
fn nimbus_and_two_supervisors_run_a_topology_through_a_killed_worker_and_a_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("count.yaml");
    std::fs::write(&file, SUBMITTED).expect("write the topology");
    let data = dir.path().join("nimbus");
    let mut daemons = Daemons::default();
    let addr = start_nimbus(&mut daemons, &data);
    let mut our_slots = Vec::new();
    for (i, host) in two_hosts().into_iter().enumerate() {
        let ports = [free_port(host), free_port(host)];
        our_slots.extend(ports.iter().map(|port| format!("{host}:{port}")));
        let slots = format!("{},{}", ports[0], ports[1]);
        daemons.spawn(
            if i == 0 {
                "supervisor-a"
            } else {
                "supervisor-b"
            },
            storm().args([
                "supervisor",
                "--nimbus",
                &addr,
                "--host",
                host,
                "--slots",
                &slots,
            ]),
        );
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

    let id = client(&[
        "submit",
        file.to_str().expect("utf-8 path"),
        "--nimbus",
        &addr,
    ])
    .expect("submit succeeds");
    let id = id.trim().to_string();
    assert!(id.starts_with("cluster-count-1-"), "{id}");

    // The live tree shows the assignment over both supervisors, and task heartbeats.
    let tree = eventually("task heartbeats", || {
        let tree = client(&["zk", "dump", "--nimbus", &addr])?;
        tree.contains(&format!("/storm/taskbeats/{id}/"))
            .then_some(tree)
    });
    let assignment = tree
        .lines()
        .find(|l| l.starts_with(&format!("/storm/assignments/{id} = ")))
        .expect("an assignment line");
    for host in two_hosts() {
        assert!(assignment.contains(&format!("\"{host}\"")), "{assignment}");
    }
    assert!(tree.contains(&format!(
        "/storm/storms/{id} = {{\"name\":\"cluster-count\",\"status\":\"active\""
    )));

    // SIGKILL one worker mid-run: its supervisor starts it again and the run still completes.
    let (victim, slot) = eventually("two worker processes", || {
        let w = workers_of(&id, &our_slots);
        (w.len() == 2).then(|| w[0].clone())
    });
    signal(victim, "-KILL");
    eventually("the worker restarted", || {
        workers_of(&id, &our_slots)
            .iter()
            .any(|(pid, s)| *s == slot && *pid != victim)
            .then_some(())
    });
    let listed = eventually("the run to finish", || {
        let list = client(&["list", "--nimbus", &addr])?;
        list.contains(" finished ").then_some(list)
    });
    assert!(listed.contains(&id), "{listed}");

    // A restarted nimbus carries on with the same topology.
    daemons.stop("nimbus");
    start_nimbus_at(&mut daemons, &addr, &data);
    let listed = client(&["list", "--nimbus", &addr]).expect("list after the restart");
    assert!(listed.contains(&id), "{listed}");
    let tree = client(&["zk", "dump", "--nimbus", &addr]).expect("dump after the restart");
    assert!(
        tree.contains(&format!("/storm/assignments/{id} = ")),
        "{tree}"
    );

    // Kill: deactivated, then removed after the (shortened) wait.
    client(&["kill", "cluster-count", "--wait", "0", "--nimbus", &addr]).expect("kill succeeds");
    eventually("the topology to be removed", || {
        let tree = client(&["zk", "dump", "--nimbus", &addr])?;
        (!tree.contains(&id)).then_some(())
    });

    // An attached run on the same cluster prints what local mode prints.
    let text = word_text();
    let attached = run_sorted(&text, &["--nimbus", &addr, "--workers", "2"]);
    assert_eq!(attached, run_sorted(&text, &[]));
    let listed = client(&["list", "--nimbus", &addr]).expect("list");
    assert!(!listed.contains("wordcount"), "{listed}");
}

fn word_text() -> String {
    (0..4000)
        .map(|i| {
            format!(
                "the quick brown fox {} jumps over the lazy dog {}\n",
                i % 97,
                i % 13
            )
        })
        .collect()
}

/// `storm run topologies/wordcount.yaml` with `extra` flags over `text`: its sorted output.
fn run_sorted(text: &str, extra: &[&str]) -> Vec<String> {
    let out = TestCommand::cargo_bin("storm")
        .expect("the storm binary")
        .env_remove("STORM_CLUSTER_SECRET")
        .args(["run", "topologies/wordcount.yaml", "--quiet"])
        .args(extra)
        .write_stdin(text.to_string())
        .timeout(WAIT)
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{extra:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut lines: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    lines.sort();
    lines
}

#[test]
fn word_count_over_processes_equals_local_mode() {
    let text = word_text();
    let local = run_sorted(&text, &[]);
    assert!(local.len() > 100, "{}", local.len());
    let dir = tempfile::tempdir().expect("tempdir");
    let stats = dir.path().join("stats.json");
    let stats_arg = stats.to_str().expect("utf-8 path");
    let processes = run_sorted(
        &text,
        &["--processes", "--workers", "3", "--stats", stats_arg],
    );
    assert_eq!(processes, local);
    // The figures count the tasks of every worker process, not only this one's.
    let stats: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).expect("stats")).expect("json");
    let split = stats["components"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["id"] == "split"))
        .expect("split's figures");
    assert_eq!(split["executed"], 4000);
    assert_eq!(split["emitted"], 44000);
}

/// Workers listen on ports the system gives them and report those: a run over processes works
/// while the ports naming its slots (6700 and on) are taken by something else, and each
/// worker says where it listens, on none of them.
#[test]
fn worker_processes_listen_on_the_ports_they_report_not_on_their_slots() {
    let slots = 6700..6704;
    // Where another program holds one of them already, it is taken all the same.
    let _held: Vec<TcpListener> = slots
        .clone()
        .filter_map(|p| TcpListener::bind(("127.0.0.1", p)).ok())
        .collect();
    let text = word_text();
    let out = TestCommand::cargo_bin("storm")
        .expect("the storm binary")
        .env_remove("STORM_CLUSTER_SECRET")
        .env("STORM_LOG", "info")
        .args(["run", "topologies/wordcount.yaml", "--quiet"])
        .args(["--processes", "--workers", "3"])
        .write_stdin(text.clone())
        .timeout(WAIT)
        .output()
        .expect("run");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let mut lines: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect();
    lines.sort();
    assert_eq!(lines, run_sorted(&text, &[]));
    let ports: Vec<u16> = err
        .lines()
        .filter(|l| l.contains("worker 127.0.0.1:"))
        .filter_map(|l| l.split_once(": listening on ")?.1.split_whitespace().next())
        .filter_map(|a| a.rsplit_once(':')?.1.parse().ok())
        .collect();
    assert_eq!(ports.len(), 4, "three workers and the home one:\n{err}");
    assert!(ports.iter().all(|p| !slots.contains(p)), "{ports:?}");
}

#[test]
fn an_unreachable_nimbus_is_a_clear_error() {
    let port = free_port("127.0.0.1");
    let out = storm()
        .args(["list", "--nimbus", &format!("127.0.0.1:{port}")])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with(&format!("error: cannot reach nimbus at 127.0.0.1:{port}: ")),
        "{err}"
    );
}

/// Regression: the transfer thread dropped a batch each time its buffers passed 1 MiB, so runs
/// across workers without acking lost tuples at the end.
#[test]
fn a_run_across_worker_processes_without_acking_loses_no_tuple() {
    let out = TestCommand::cargo_bin("storm")
        .expect("the storm binary")
        .env_remove("STORM_CLUSTER_SECRET")
        .args([
            "run",
            "-e",
            "generate(count=200000) | stdout",
            "--processes",
            "--quiet",
        ])
        .args([
            "-c",
            "topology.acker.executors=0",
            "-c",
            "topology.workers=2",
        ])
        .timeout(WAIT)
        .output()
        .expect("run");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.stdout.iter().filter(|b| **b == b'\n').count(), 200_000);
}

/// A worker process whose component cannot start fails the run (exit 1, the reason on stderr),
/// as the same failure does in local mode.
#[test]
fn a_failing_worker_process_fails_the_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("bad.yaml");
    let topology = "\
name: bad
spouts:
  - id: lines
    type: stdin
bolts:
  - id: ext
    type: shell
    command: [/nonexistent/program]
    fields: [word]
  - id: out
    type: stdout
streams:
  - from: lines
    to: ext
    grouping: shuffle
  - from: ext
    to: out
    grouping: shuffle
";
    std::fs::write(&file, topology).expect("write the topology");
    let out = TestCommand::cargo_bin("storm")
        .expect("the storm binary")
        .env_remove("STORM_CLUSTER_SECRET")
        .arg("run")
        .arg(&file)
        .arg("--processes")
        .write_stdin("a b\n")
        .timeout(WAIT)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("cannot start `/nonexistent/program`"), "{err}");
    assert!(err.contains("the worker process on port"), "{err}");
}

/// With a cluster secret, nimbus answers only clients that prove it.
#[test]
fn nimbus_with_a_secret_answers_only_clients_that_know_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut daemons = Daemons::default();
    let log = dir.path().join("nimbus.log");
    daemons.spawn_logged(
        "nimbus",
        storm()
            .env("STORM_CLUSTER_SECRET", "s3cret")
            .args(["nimbus", "--listen", "127.0.0.1:0", "--data"])
            .arg(dir.path().join("nimbus"))
            .args(["-c", "ui.port=0"]),
        &log,
    );
    let addr = crate::support::nimbus_addr(&log);
    let with = |secret: Option<&str>| {
        let mut c = storm();
        if let Some(s) = secret {
            c.env("STORM_CLUSTER_SECRET", s);
        }
        c.args(["list", "--nimbus", &addr]).output().expect("run")
    };
    eventually("nimbus to answer its own", || {
        with(Some("s3cret")).status.success().then_some(())
    });
    let none = with(None);
    assert_eq!(none.status.code(), Some(1));
    let err = String::from_utf8_lossy(&none.stderr);
    assert!(err.contains("STORM_CLUSTER_SECRET"), "{err}");
    let wrong = with(Some("guess"));
    assert_eq!(wrong.status.code(), Some(1));
    let err = String::from_utf8_lossy(&wrong.stderr);
    assert!(err.contains("did not accept our cluster secret"), "{err}");
    // Client commands take the secret with `-c` too, as the daemons do.
    for args in [
        vec!["list", "--nimbus", &addr],
        vec!["kill", "nothing-here", "--nimbus", &addr],
        vec!["activate", "nothing-here", "--nimbus", &addr],
    ] {
        let out = storm()
            .args(&args)
            .args(["-c", "storm.cluster.secret=s3cret"])
            .output()
            .expect("run");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !err.contains("cluster secret") && !err.contains("unexpected argument"),
            "{args:?}: {err}"
        );
        if args[0] == "list" {
            assert!(out.status.success(), "{err}");
        } else {
            assert!(
                err.contains("no running topology named `nothing-here` (none is running)"),
                "{err}"
            );
        }
    }
}
