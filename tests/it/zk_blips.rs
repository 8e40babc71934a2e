//! ZooKeeper blips under a run attached to a cluster of two nimbuses (issue 29, item 4): the
//! ZooKeeper server killed and started again, and the leading nimbus frozen (SIGSTOP) past its
//! session timeout and woken, or then lost for good with its disk. Leadership may move to the
//! other nimbus each time; a stateful word count fed through the run's standard input must
//! still print the exact totals, exit 0 and give its slots back. Every wait polls a condition;
//! every process started here is ended by a guard.

use crate::cluster::{client, eventually, free_port, signal, storm, workers_of, Daemons, WAIT};
use crate::run::{expected_counts, parse_counts};
use crate::run_reliability::Run;
use crate::zookeeper::Ensemble;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Two nimbuses (A leading first) and one supervisor on one ZooKeeper server.
struct Cluster {
    // Held for its guard, dropped first: supervisors and nimbuses end while ZooKeeper
    // still serves.
    daemons: Daemons,
    ensemble: Ensemble,
    nimbuses: [(String, u32); 2],
    slots: Vec<String>,
    logs: tempfile::TempDir,
}

impl Cluster {
    fn start() -> Cluster {
        let ensemble = Ensemble::start(1);
        let zk = ensemble.storm_options();
        let logs = tempfile::tempdir().expect("tempdir");
        let mut daemons = Daemons::default();
        // Each nimbus listens on a port it picks and reports.
        let mut nimbus = |name: &'static str| {
            let data = logs.path().join(format!("{name}-data"));
            let log = logs.path().join(format!("{name}.log"));
            let pid = daemons.spawn_logged(
                name,
                storm()
                    .args(["nimbus", "--listen", "127.0.0.1:0", "--data"])
                    .arg(&data)
                    .args(["-c", "nimbus.task.timeout.secs=10", "-c", "ui.port=0"])
                    .args(&zk)
                    .env("STORM_LOG", "info"),
                &log,
            );
            let addr = crate::support::nimbus_addr(&log);
            eventually("the nimbus to answer", || {
                let out = storm().args(["list", "--nimbus", &addr]).output().ok()?;
                let said = String::from_utf8_lossy(&out.stderr);
                (out.status.success() || said.contains("not the leader")).then_some(())
            });
            (addr, pid)
        };
        let a = nimbus("nimbus-a");
        eventually("nimbus A to lead", || client(&["list", "--nimbus", &a.0]));
        let b = nimbus("nimbus-b");
        let both = format!("{},{}", a.0, b.0);
        let ports: Vec<String> = (0..3).map(|_| free_port("127.0.0.1").to_string()).collect();
        let slots = ports.iter().map(|p| format!("127.0.0.1:{p}")).collect();
        daemons.spawn_logged(
            "supervisor",
            storm()
                .args(["supervisor", "--nimbus", &both, "--host", "127.0.0.1"])
                .args(["--slots", &ports.join(",")])
                .args(&zk),
            &logs.path().join("supervisor.log"),
        );
        Cluster {
            daemons,
            ensemble,
            nimbuses: [a, b],
            slots,
            logs,
        }
    }

    /// Both nimbus addresses, as `--nimbus` takes them.
    fn both(&self) -> String {
        format!("{},{}", self.nimbuses[0].0, self.nimbuses[1].0)
    }

    /// The index of the nimbus that leads, once one does.
    fn leader(&self) -> usize {
        self.until("a nimbus to lead", || {
            (0..2).find(|&i| client(&["list", "--nimbus", &self.nimbuses[i].0]).is_some())
        })
    }

    /// The tree in ZooKeeper, as `storm zk dump --zookeeper` prints it.
    fn dump(&self) -> Option<String> {
        client(&["zk", "dump", "--zookeeper", &self.ensemble.connect()])
    }

    /// The id of the topology named `name`, once submitted.
    fn topology_id(&self, name: &str) -> String {
        let prefix = format!("/storm/storms/{name}-");
        eventually("the topology in the tree", || {
            let tree = self.dump()?;
            let line = tree.lines().find(|l| l.starts_with(&prefix))?;
            let path = line.split(" = ").next()?;
            Some(path.trim_start_matches("/storm/storms/").to_string())
        })
    }

    /// Topology `id`'s checkpoint record in the tree.
    fn record(&self, id: &str) -> Option<serde_json::Value> {
        let tree = self.dump()?;
        let prefix = format!("/storm/checkpoints/{id} = ");
        let record = tree.lines().find_map(|l| l.strip_prefix(&prefix))?;
        serde_json::from_str(record).ok()
    }

    /// The checkpoint topology `id` last committed, as its record in the tree says.
    fn committed(&self, id: &str) -> Option<u64> {
        self.record(id)?["txid"].as_u64()
    }

    /// Wait until topology `id` commits a checkpoint past `after`; the one it committed.
    fn commits_past(&self, id: &str, after: u64) -> u64 {
        self.until(&format!("a checkpoint past {after}"), || {
            self.committed(id).filter(|&t| t > after)
        })
    }

    /// Poll `f` until it gives a value; fail with the daemons' logs after [`WAIT`].
    fn until<T>(&self, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(v) = f() {
                return v;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}\n{}",
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Wait until neither nimbus has led, each saying it lost ZooKeeper, for `span`.
    fn no_leader_for(&self, span: Duration) {
        let mut since: Option<Instant> = None;
        self.until("no nimbus leading for a while", || {
            let none = self.nimbuses.iter().all(|(addr, _)| {
                let out = storm().args(["list", "--nimbus", addr]).output().ok();
                out.is_some_and(|o| String::from_utf8_lossy(&o.stderr).contains("lost ZooKeeper"))
            });
            if !none {
                since = None;
                return None;
            }
            let at = *since.get_or_insert_with(Instant::now);
            (at.elapsed() >= span).then_some(())
        });
    }

    /// What the nimbuses logged, for a failing assertion.
    fn logs(&self) -> String {
        ["nimbus-a", "nimbus-b", "supervisor"]
            .iter()
            .map(|n| {
                let file: PathBuf = self.logs.path().join(format!("{n}.log"));
                let text = std::fs::read_to_string(&file).unwrap_or_default();
                let lines = text.lines().filter(|l| !l.contains("session"));
                let tail: Vec<&str> = lines.rev().take(40).collect();
                let tail: Vec<&str> = tail.into_iter().rev().collect();
                format!("--- {n} ---\n{}", tail.join("\n"))
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// SIGKILL whatever workers of topology `.0` on slots `.1` are left when the test ends.
struct Workers(String, Vec<String>);

impl Drop for Workers {
    fn drop(&mut self) {
        for (pid, _) in workers_of(&self.0, &self.1) {
            signal(pid, "-KILL");
        }
    }
}

/// Lines of words `w0`..`w29`, lines `from..to`.
fn lines(from: usize, to: usize) -> String {
    (from..to)
        .map(|i| format!("w{} w{} w{}\n", i % 30, (i * 7) % 30, (i * 13) % 30))
        .collect()
}

/// The word count attached with `storm run --nimbus A,B`, checkpointed every 100 ms, with
/// the `-c` options `extra`.
fn attached_count(both: &str, stateful: bool, extra: &[&str]) -> Run {
    let topology = "name blip\nlines = stdin\n  | split\n  | count(word) x2\n  | stdout";
    let stateful = format!("topology.stateful={stateful}");
    let mut args = vec![
        "run",
        "-e",
        topology,
        "--nimbus",
        both,
        "--workers",
        "2",
        "-c",
        &stateful,
        "-c",
        "topology.state.checkpoint.interval.ms=100",
    ];
    for e in extra {
        args.extend(["-c", e]);
    }
    Run::start(&args, true)
}

#[test]
fn a_zookeeper_restart_and_a_frozen_leader_never_strand_a_stateful_run() {
    let mut cluster = Cluster::start();
    let mut run = attached_count(&cluster.both(), true, &[]);
    let id = cluster.topology_id("blip");
    let _workers = Workers(id.clone(), cluster.slots.clone());
    let mut text = lines(0, 2000);
    run.write(text.as_bytes());
    let before = cluster.commits_past(&id, 0);

    // (a) ZooKeeper killed and started again: sessions may expire, and leadership move.
    cluster.ensemble.restart(0, false);
    let after_restart = cluster.commits_past(&id, before);
    let more = lines(2000, 4000);
    run.write(more.as_bytes());
    text.push_str(&more);

    // (b) The leader frozen past its session timeout: the other one leads; then woken.
    let frozen = cluster.leader();
    let other = &cluster.nimbuses[1 - frozen].0;
    signal(cluster.nimbuses[frozen].1, "-STOP");
    cluster.until("the other nimbus to lead", || {
        client(&["list", "--nimbus", other])
    });
    signal(cluster.nimbuses[frozen].1, "-CONT");
    cluster.commits_past(&id, after_restart);
    let last = lines(4000, 6000);
    run.write(last.as_bytes());
    text.push_str(&last);

    let out = run.finish();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "exit {:?}: {said}\n{}",
        out.status.code(),
        cluster.logs()
    );
    assert_eq!(
        parse_counts(&out.stdout),
        expected_counts(text.as_bytes()),
        "{said}"
    );
    // The nimbus leading after the freeze went on from its copy of the committed state, or
    // fetched it from the other one.
    let logs = cluster.logs();
    assert!(
        logs.contains("leads on from its replica") || logs.contains("fetched checkpoint"),
        "{logs}"
    );
    // Its slots are given back: no assignment, no worker left.
    eventually("the topology gone from the tree", || {
        let tree = cluster.dump()?;
        (!tree.contains(&format!("/storm/assignments/{id}"))).then_some(())
    });
    eventually("its workers to end", || {
        workers_of(&id, &cluster.slots).is_empty().then_some(())
    });
}

/// The leader lost for good with its disk, after a ZooKeeper restart: frozen past its session
/// (the other nimbus leads), then SIGKILLed and its data folder removed, so nothing can be
/// fetched from it. Each commit was copied to the other nimbus before it was recorded, so the
/// stateful run goes on from that copy: exact totals, exit 0, slots given back.
#[test]
fn a_leader_lost_for_good_with_its_disk_never_strands_a_stateful_run() {
    let mut cluster = Cluster::start();
    let mut run = attached_count(&cluster.both(), true, &[]);
    let id = cluster.topology_id("blip");
    let _workers = Workers(id.clone(), cluster.slots.clone());
    let mut text = lines(0, 2000);
    run.write(text.as_bytes());
    let before = cluster.commits_past(&id, 0);

    // ZooKeeper killed and started again: sessions may expire, and leadership move.
    cluster.ensemble.restart(0, false);
    let after_restart = cluster.commits_past(&id, before);
    let more = lines(2000, 4000);
    run.write(more.as_bytes());
    text.push_str(&more);

    // A commit recorded by the leader names the other nimbus as holding it too.
    let names = ["nimbus-a", "nimbus-b"];
    let lost = cluster.until("a commit copied to the standby", || {
        let record = cluster.record(&id)?;
        let lost = cluster.leader();
        let other = &cluster.nimbuses[1 - lost].0;
        let copied = record["replicas"]
            .as_array()?
            .iter()
            .any(|r| r.as_str() == Some(other));
        let holder = record["holder"].as_str() == Some(&cluster.nimbuses[lost].0);
        let past = record["txid"].as_u64()? > after_restart;
        (copied && holder && past).then_some(lost)
    });
    let other = cluster.nimbuses[1 - lost].0.clone();

    // Frozen past its session (the other one leads), then lost with its disk.
    signal(cluster.nimbuses[lost].1, "-STOP");
    cluster.until("the other nimbus to lead", || {
        client(&["list", "--nimbus", &other])
    });
    cluster.daemons.kill(names[lost]);
    let data = cluster.logs.path().join(format!("{}-data", names[lost]));
    std::fs::remove_dir_all(&data).expect("remove the lost nimbus's data");
    let last = lines(4000, 6000);
    run.write(last.as_bytes());
    text.push_str(&last);

    let out = run.finish();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "exit {:?}: {said}\n{}",
        out.status.code(),
        cluster.logs()
    );
    assert_eq!(
        parse_counts(&out.stdout),
        expected_counts(text.as_bytes()),
        "{said}"
    );
    // The new leader went on from its own copy.
    let log = cluster.logs.path().join(format!("{}.log", names[1 - lost]));
    let log = std::fs::read_to_string(log).unwrap_or_default();
    assert!(
        log.contains("leads on from its replica"),
        "{}",
        cluster.logs()
    );
    cluster.until("the topology gone from the tree", || {
        let tree = cluster.dump()?;
        (!tree.contains(&format!("/storm/assignments/{id}"))).then_some(())
    });
    cluster.until("its workers to end", || {
        workers_of(&id, &cluster.slots).is_empty().then_some(())
    });
}

/// Without state, the leader frozen, then ZooKeeper down (no nimbus can lead) while the
/// input ends: the attached run rides out the elections — even told to retry a command only
/// once — ends with exit 0, and the topology gives its slots back.
#[test]
fn a_stateless_run_rides_out_elections_and_gives_its_slots_back() {
    let mut cluster = Cluster::start();
    let once = [
        "storm.nimbus.retry.times=1",
        "storm.nimbus.retry.interval.millis=100",
    ];
    let mut run = attached_count(&cluster.both(), false, &once);
    let id = cluster.topology_id("blip");
    let _workers = Workers(id.clone(), cluster.slots.clone());
    run.write(lines(0, 2000).as_bytes());
    let running = |cluster: &Cluster| {
        cluster.until("the topology active on its workers", || {
            let listed = client(&["list", "--nimbus", &cluster.both()])?;
            let line = listed.lines().find(|l| l.contains(&id))?.to_string();
            let workers = workers_of(&id, &cluster.slots).len();
            (line.contains("active") && workers == 2).then_some(())
        })
    };
    running(&cluster);
    // A rebalance of the attached run is refused, naming it for what it is.
    let out = storm()
        .args(["rebalance", "blip", "-n", "3", "--nimbus", &cluster.both()])
        .output()
        .expect("storm rebalance");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{said}");
    assert!(
        said.contains("a run attached with `storm run --nimbus` cannot be rebalanced")
            && !said.contains("--processes"),
        "{said}"
    );

    let frozen = cluster.leader();
    let other = &cluster.nimbuses[1 - frozen].0;
    signal(cluster.nimbuses[frozen].1, "-STOP");
    cluster.until("the other nimbus to lead", || {
        client(&["list", "--nimbus", other])
    });
    signal(cluster.nimbuses[frozen].1, "-CONT");
    running(&cluster);
    run.write(lines(2000, 4000).as_bytes());

    // ZooKeeper down: both nimbuses stand by; the input ends meanwhile, and the run's end
    // (it asks nimbus every 100 ms) meets no leader for a second at least.
    cluster.ensemble.kill(0);
    cluster.no_leader_for(Duration::from_secs(1));
    run.close_stdin();
    cluster.no_leader_for(Duration::from_secs(1));
    cluster.ensemble.restart(0, false);

    let out = run.finish();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "exit {:?}: {said}\n{}",
        out.status.code(),
        cluster.logs()
    );
    assert!(!out.stdout.is_empty(), "{said}");
    cluster.until("the topology gone from the tree", || {
        let tree = cluster.dump()?;
        (!tree.contains(&format!("/storm/assignments/{id}"))).then_some(())
    });
    cluster.until("its workers to end", || {
        workers_of(&id, &cluster.slots).is_empty().then_some(())
    });
}

/// A rebalance the leader accepted is recorded before it is answered: with that leader
/// SIGKILLed before the switch, the nimbus that takes over carries it out (the topology ends
/// on the new worker count, active), rather than put the topology back as it was.
#[test]
fn a_rebalance_accepted_by_a_leader_that_dies_is_carried_out_by_the_next() {
    let mut cluster = Cluster::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("steady.yaml");
    let topology = "name: steady\nconfig:\n  topology.workers: 1\n  topology.acker.executors: 0\n\
                    spouts:\n  - id: gen\n    type: generate\n\
                    \x20   args: { count: 100000000, rate: 20, values: [[a], [b]] }\n\
                    bolts:\n  - id: count\n    type: count\n    args: { fields: [word] }\n    parallelism: 2\n\
                    streams:\n  - from: gen\n    to: count\n    grouping: { type: fields, args: [word] }\n";
    std::fs::write(&file, topology).expect("write the topology");
    let both = cluster.both();
    let id = client(&["submit", file.to_str().expect("utf-8"), "--nimbus", &both])
        .expect("submitted")
        .trim()
        .to_string();
    let _workers = Workers(id.clone(), cluster.slots.clone());
    let listed = |workers: usize| {
        let listed = client(&["list", "--nimbus", &both])?;
        let line = listed.lines().find(|l| l.contains(&id))?.to_string();
        let running = workers_of(&id, &cluster.slots).len() == workers;
        (line.contains("active") && running).then_some(line)
    };
    cluster.until("one worker", || listed(1));
    let leader = cluster.leader();
    let out = storm()
        .args([
            "rebalance",
            "steady",
            "-w",
            "5",
            "-n",
            "2",
            "--nimbus",
            &both,
        ])
        .output()
        .expect("storm rebalance");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    cluster.daemons.kill(["nimbus-a", "nimbus-b"][leader]);
    cluster.until("two workers on the new leader", || listed(2));
    let logs = cluster.logs();
    assert!(
        logs.contains("the rebalance the previous leader accepted"),
        "{logs}"
    );
}
