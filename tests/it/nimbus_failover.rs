//! Client commands through a nimbus election: two nimbuses on a real ZooKeeper server, the
//! leader SIGKILLed, and `storm submit` / `storm rebalance` retrying across the addresses
//! (`storm.nimbus.retry.*`) until the standby leads; a connection cut before any answer is
//! named as such, never blamed on a cluster secret.

use crate::cluster::{client, eventually, storm, Daemons};
use crate::zookeeper::{start_nimbus, Ensemble};
use std::net::TcpListener;

const TOPOLOGY: &str = "\
name: failover
config:
  topology.acker.executors: 0
spouts:
  - id: gen
    type: generate
    args: { count: 100000000, rate: 50, values: [[a], [b]] }
bolts:
  - id: count
    type: count
    args: { fields: [word] }
streams:
  - from: gen
    to: count
    grouping: { type: fields, args: [word] }
";

/// Two nimbuses on one ZooKeeper server, A leading: (ensemble, daemons, A, B).
fn two_nimbuses() -> (Ensemble, Daemons, String, String) {
    let ensemble = Ensemble::start(1);
    let zk = ensemble.storm_options();
    let mut daemons = Daemons::default();
    let (a, _) = start_nimbus(&mut daemons, "nimbus-a", &zk);
    eventually("nimbus A to lead", || client(&["list", "--nimbus", &a]));
    let (b, _) = start_nimbus(&mut daemons, "nimbus-b", &zk);
    eventually("nimbus B to stand by", || {
        let out = storm().args(["list", "--nimbus", &b]).output().ok()?;
        String::from_utf8_lossy(&out.stderr)
            .contains("not the leader")
            .then_some(())
    });
    (ensemble, daemons, a, b)
}

#[test]
fn a_submit_right_after_the_leader_dies_goes_through_the_standby() {
    let (_ensemble, mut daemons, a, b) = two_nimbuses();
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("failover.yaml");
    std::fs::write(&file, TOPOLOGY).expect("write the topology");
    daemons.kill("nimbus-a");
    // One submit, no loop around it: the command itself rides out the election.
    let out = storm()
        .args(["submit", file.to_str().expect("utf-8 path")])
        .args(["--nimbus", &format!("{a},{b}")])
        .output()
        .expect("storm submit");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    let id = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let listed = client(&["list", "--nimbus", &b]).expect("B lists");
    assert!(listed.contains(&id), "{listed}");
}

#[test]
fn a_rebalance_sent_to_a_dead_leader_is_not_reported_accepted() {
    let (_ensemble, mut daemons, a, b) = two_nimbuses();
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("failover.yaml");
    std::fs::write(&file, TOPOLOGY).expect("write the topology");
    let id = client(&["submit", file.to_str().expect("utf-8 path"), "--nimbus", &a])
        .expect("submit to A");
    daemons.kill("nimbus-a");
    let out = storm()
        .args(["rebalance", "failover", "-w", "30", "--nimbus", &a])
        .args(["-c", "storm.nimbus.retry.times=1"])
        .args(["-c", "storm.nimbus.retry.interval.millis=100"])
        .output()
        .expect("storm rebalance");
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(!said.contains("rebalancing"), "{said}");
    assert!(
        said.contains(&format!("no leading nimbus among {a} after 2 round(s)"))
            && said.contains(&format!("cannot reach nimbus at {a}")),
        "{said}"
    );
    // Through nimbus.seeds (no --nimbus), the standby takes it once it leads, and says so.
    let out = storm()
        .args(["rebalance", "failover", "-w", "30"])
        .args(["-c", &format!("nimbus.seeds=[\"{a}\",\"{b}\"]")])
        .output()
        .expect("storm rebalance");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("rebalancing failover"), "{said}");
    let listed = client(&["list", "--nimbus", &b]).expect("B lists");
    assert!(
        listed
            .lines()
            .any(|l| l.contains(id.trim()) && l.contains("rebalancing")),
        "{listed}"
    );
}

#[test]
fn a_connection_cut_before_the_answer_is_named_and_not_blamed_on_a_secret() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("address").to_string();
    // A "nimbus" that greets (as nimbus without a secret does), reads the request and closes
    // without answering, as a dying one does.
    let cutter = std::thread::spawn(move || {
        for _ in 0..2 {
            let Ok((mut conn, _)) = listener.accept() else {
                return;
            };
            let _ = std::io::Write::write_all(&mut conn, b"STRM");
            let mut head = [0u8; 4];
            let _ = std::io::Read::read_exact(&mut conn, &mut head);
        }
    });
    let out = storm()
        .args(["kill", "whatever", "--nimbus", &addr])
        .args(["-c", "storm.nimbus.retry.times=1"])
        .args(["-c", "storm.nimbus.retry.interval.millis=50"])
        .output()
        .expect("storm kill");
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains(&format!(
            "nimbus at {addr} closed the connection before answering"
        )),
        "{said}"
    );
    assert!(
        !said.contains("secret") && !said.contains("killed"),
        "{said}"
    );
    cutter.join().expect("the cutting thread");
}
