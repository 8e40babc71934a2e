//! Faults around nimbus and supervisors, with real processes, sockets and signals: absurd
//! submissions, floods of connections (large announced requests, slow senders, no file
//! descriptors left), supervisors that cannot serve their slots or claim another's, workers
//! that keep dying, an unreachable nimbus, and bad topology input (devices, empty topologies,
//! include cycles, thousands of errors). Every process started here is ended by a guard.

use assert_cmd::cargo::CommandCargoExt;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const WAIT: Duration = Duration::from_secs(60);

fn storm() -> Command {
    let mut c = Command::cargo_bin("storm").expect("the storm binary");
    c.env_remove("STORM_CLUSTER_SECRET").env_remove("STORM_LOG");
    c
}

fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    l.local_addr().expect("local address").port()
}

/// Daemons of one test, each with its standard error in a file; SIGTERM, a bounded wait, then
/// SIGKILL when the guard goes away (supervisors before nimbus).
struct Daemons {
    dir: PathBuf,
    children: Vec<(String, Child)>,
}

impl Daemons {
    fn new(dir: &Path) -> Daemons {
        Daemons {
            dir: dir.to_path_buf(),
            children: Vec::new(),
        }
    }

    fn spawn(&mut self, name: &str, cmd: &mut Command) -> u32 {
        let log = std::fs::File::create(self.log_path(name)).expect("create a log file");
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start a daemon");
        let pid = child.id();
        self.children.push((name.to_string(), child));
        pid
    }

    /// Stop one daemon gracefully and wait for it.
    fn stop(&mut self, name: &str) {
        if let Some(i) = self.children.iter().position(|(n, _)| n == name) {
            let (_, child) = self.children.remove(i);
            end(child);
        }
    }

    fn log_path(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.log"))
    }

    fn log(&self, name: &str) -> String {
        std::fs::read_to_string(self.log_path(name)).unwrap_or_default()
    }
}

fn end(mut child: Child) {
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
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
        self.children.sort_by_key(|(n, _)| n == "nimbus");
        for (_, child) in self.children.drain(..) {
            end(child);
        }
    }
}

fn eventually<T>(what: &str, f: impl FnMut() -> Option<T>) -> T {
    crate::support::poll_until(what, WAIT, Duration::from_millis(100), f)
}

fn client(args: &[&str]) -> Option<String> {
    let out = storm().args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Start nimbus on a port it picks; its address and pid, once it answers.
fn start_nimbus(daemons: &mut Daemons, data: &Path) -> (String, u32) {
    start_nimbus_at(daemons, "nimbus", "127.0.0.1:0", data)
}

/// Start nimbus listening on `listen` (port 0, or the address a restarted nimbus had); the
/// address it reports and its pid, once it answers.
fn start_nimbus_at(daemons: &mut Daemons, name: &str, listen: &str, data: &Path) -> (String, u32) {
    let pid = daemons.spawn(
        name,
        storm()
            .env("STORM_LOG", "info")
            .args(["nimbus", "--listen", listen, "--data"])
            .arg(data)
            .args(["-c", "nimbus.task.timeout.secs=3", "-c", "ui.port=0"]),
    );
    let addr = crate::support::nimbus_addr(&daemons.log_path(name));
    eventually("nimbus to answer", || client(&["list", "--nimbus", &addr]));
    (addr, pid)
}

/// One request in nimbus's wire format (nimbus greets with `STRM`; then a 4-byte big-endian
/// length and JSON each way), written by hand so the test does not share the client's code;
/// the answer's JSON.
fn raw_request(addr: &str, request: &serde_json::Value) -> serde_json::Value {
    let mut s = TcpStream::connect(addr).expect("connect to nimbus");
    s.set_read_timeout(Some(WAIT)).expect("timeout");
    let mut greeting = [0u8; 4];
    s.read_exact(&mut greeting).expect("a greeting");
    assert_eq!(&greeting, b"STRM");
    let body = serde_json::to_vec(request).expect("json");
    s.write_all(&(body.len() as u32).to_be_bytes())
        .expect("send");
    s.write_all(&body).expect("send");
    let mut len = [0u8; 4];
    s.read_exact(&mut len).expect("an answer");
    let mut answer = vec![0u8; u32::from_be_bytes(len) as usize];
    s.read_exact(&mut answer).expect("the whole answer");
    serde_json::from_slice(&answer).expect("a JSON answer")
}

/// Peak resident memory of a process (the kernel's `VmHWM`), in MiB.
fn peak_rss_mib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .expect("VmHWM");
    kib / 1024
}

#[test]
fn nimbus_refuses_an_absurd_submission_and_keeps_answering() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut daemons = Daemons::new(dir.path());
    let (addr, pid) = start_nimbus(&mut daemons, &dir.path().join("nimbus"));
    let answer = raw_request(
        &addr,
        &serde_json::json!({"op": "submit", "path": "<-e>",
            "text": "stdin | split tasks=4294967294 | stdout"}),
    );
    let error = answer["error"].as_str().expect("an error answer");
    // Refused with the limit it breaks (validation's per-component bound, or nimbus's own).
    assert!(
        error.contains("4294967294") && error.contains("at most"),
        "{error}"
    );
    assert!(client(&["list", "--nimbus", &addr]).is_some());
    assert!(peak_rss_mib(pid) < 200, "{} MiB", peak_rss_mib(pid));
}

#[test]
fn nimbus_holds_little_for_announced_requests_and_cuts_slow_senders() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut daemons = Daemons::new(dir.path());
    let (addr, pid) = start_nimbus(&mut daemons, &dir.path().join("nimbus"));
    // 30 connections each announce a 16 MiB request and send 6 MiB of it (180 MiB in all):
    // nimbus takes in at most its budget and refuses the rest.
    let chunk = vec![b' '; 6 << 20];
    let held: Vec<TcpStream> = (0..30)
        .filter_map(|_| {
            let mut s = TcpStream::connect(&addr).ok()?;
            s.set_write_timeout(Some(WAIT)).ok()?;
            s.write_all(&(16u32 << 20).to_be_bytes()).ok()?;
            let _ = s.write_all(&chunk);
            Some(s)
        })
        .collect();
    assert_eq!(held.len(), 30);
    assert!(client(&["list", "--nimbus", &addr]).is_some());
    let peak = peak_rss_mib(pid);
    assert!(peak < 150, "nimbus peaked at {peak} MiB");
    drop(held);
    // A sender that trickles one byte every 200 ms is cut off, however long it keeps going.
    let mut slow = TcpStream::connect(&addr).expect("connect");
    slow.write_all(&(1000u32).to_be_bytes())
        .expect("send the length");
    let cut = (0..300).any(|_| {
        std::thread::sleep(Duration::from_millis(200));
        slow.write_all(b" ").is_err()
    });
    assert!(cut, "nimbus kept a trickling connection for a minute");
}

#[test]
fn nimbus_without_file_descriptors_backs_off_and_logs_little() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut daemons = Daemons::new(dir.path());
    let data = dir.path().join("nimbus");
    let storm_exe = storm().get_program().to_owned();
    // The shell lowers the open-files limit, then becomes nimbus.
    daemons.spawn(
        "nimbus",
        Command::new("sh")
            .arg("-c")
            .arg(r#"ulimit -n 40 && exec "$0" nimbus --listen 127.0.0.1:0 --data "$1""#)
            .arg(&storm_exe)
            .arg(&data)
            .env_remove("STORM_CLUSTER_SECRET"),
    );
    let addr = crate::support::nimbus_addr(&daemons.log_path("nimbus"));
    eventually("nimbus to answer", || client(&["list", "--nimbus", &addr]));
    // Connections that send nothing hold a descriptor each until the limit is reached.
    let mut held = Vec::new();
    for _ in 0..60 {
        if let Ok(s) = TcpStream::connect(&addr) {
            held.push(s);
        }
    }
    eventually("accept failures", || {
        daemons
            .log("nimbus")
            .contains("accept failed")
            .then_some(())
    });
    std::thread::sleep(Duration::from_secs(2));
    let failures = daemons.log("nimbus").matches("accept failed").count();
    assert!(
        failures <= 2,
        "{failures} accept failures logged:\n{}",
        daemons.log("nimbus")
    );
    drop(held);
    eventually("nimbus to answer again", || {
        client(&["list", "--nimbus", &addr])
    });
}

#[test]
fn a_supervisor_that_cannot_serve_its_slots_exits_with_a_clear_error() {
    // A host that does not resolve, and an address of another machine (TEST-NET-1), which
    // workers cannot listen on here.
    for (host, expected) in [
        (
            "no-such-host.invalid",
            "no-such-host.invalid: cannot resolve",
        ),
        (
            "192.0.2.1",
            "--host 192.0.2.1: workers cannot listen on 192.0.2.1",
        ),
    ] {
        let out = assert_cmd::Command::from_std(storm())
            .args(["supervisor", "--nimbus", "127.0.0.1:1", "--host", host])
            .args(["--slots", "6700"])
            .timeout(WAIT)
            .output()
            .expect("run the supervisor");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{stderr}");
        assert!(stderr.contains(expected), "{stderr}");
    }
}

#[test]
fn nimbus_refuses_a_second_supervisor_claiming_the_same_slots_until_the_first_is_gone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut daemons = Daemons::new(dir.path());
    let (addr, _) = start_nimbus(&mut daemons, &dir.path().join("nimbus"));
    let slot = free_port().to_string();
    let supervisor = |daemons: &mut Daemons, name: &str| {
        daemons.spawn(
            name,
            storm()
                .args(["supervisor", "--nimbus", &addr, "--host", "127.0.0.1"])
                .args(["--slots", &slot]),
        )
    };
    let first = supervisor(&mut daemons, "first");
    eventually("the first supervisor to register", || {
        let tree = client(&["zk", "dump", "--nimbus", &addr])?;
        tree.contains(&format!("/storm/supervisors/127.0.0.1-{first} ="))
            .then_some(())
    });
    let second = supervisor(&mut daemons, "second");
    eventually("the second supervisor to be refused", || {
        let log = daemons.log("second");
        (log.contains("slot conflict") && log.contains(&format!("127.0.0.1:{slot}"))).then_some(())
    });
    let tree = client(&["zk", "dump", "--nimbus", &addr]).expect("dump");
    assert_eq!(tree.matches("/storm/supervisors/").count(), 1, "{tree}");
    // Once the first is gone, the second takes its slots over.
    daemons.stop("first");
    eventually("the second supervisor to register", || {
        let tree = client(&["zk", "dump", "--nimbus", &addr])?;
        let second_in = tree.contains(&format!("/storm/supervisors/127.0.0.1-{second} ="));
        (second_in && tree.matches("/storm/supervisors/").count() == 1).then_some(())
    });
}

const ONE_WORKER: &str = "\
name: failing-slot
config:
  topology.workers: 1
  topology.acker.executors: 0
spouts:
  - id: gen
    type: generate
    args: { count: 1000000, rate: 100, values: [[a]] }
bolts:
  - id: sink
    type: discard
streams:
  - from: gen
    to: sink
";

/// The topology's id from `storm list`, and its status.
fn listed(addr: &str, name: &str) -> Option<(String, String)> {
    let out = client(&["list", "--nimbus", addr])?;
    let line = out.lines().find(|l| l.starts_with(name))?;
    let cols: Vec<&str> = line.split_whitespace().collect();
    Some((cols.get(1)?.to_string(), cols.get(2)?.to_string()))
}

#[test]
fn a_slot_whose_workers_keep_dying_backs_off_is_reported_and_its_work_moves() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("t.yaml");
    std::fs::write(&file, ONE_WORKER).expect("write");
    let mut daemons = Daemons::new(dir.path());
    let (addr, _) = start_nimbus(&mut daemons, &dir.path().join("nimbus"));
    let bad = free_port();
    // Every worker this supervisor starts fails as it starts (a test hook of `storm worker`).
    daemons.spawn(
        "bad",
        storm()
            .env("STORM_LOG", "warn")
            .env("STORM_TEST_WORKER_FAILS", "1")
            .args(["supervisor", "--nimbus", &addr, "--host", "127.0.0.1"])
            .args(["--slots", &bad.to_string()]),
    );
    eventually("the supervisor to register", || {
        let tree = client(&["zk", "dump", "--nimbus", &addr])?;
        tree.contains("/storm/supervisors/").then_some(())
    });
    let file_arg = file.to_str().expect("utf-8 path");
    client(&["submit", file_arg, "--nimbus", &addr]).expect("submit");
    let (id, _) = eventually("the topology to be failing", || {
        listed(&addr, "failing-slot").filter(|(_, status)| status == "failing")
    });
    let tree = client(&["zk", "dump", "--nimbus", &addr]).expect("dump");
    assert!(
        tree.contains(&format!("/storm/taskerrors/{id}/")) && tree.contains("keeps failing"),
        "{tree}"
    );
    // The restarts were spaced out, doubling.
    let log = daemons.log("bad");
    for delay in [
        "restarting in 500ms",
        "restarting in 1s",
        "restarting in 2s",
    ] {
        assert!(log.contains(delay), "{delay}:\n{log}");
    }
    // A healthy slot appears: the work moves there and runs.
    let good = free_port();
    daemons.spawn(
        "good",
        storm()
            .args(["supervisor", "--nimbus", &addr, "--host", "127.0.0.1"])
            .args(["--slots", &good.to_string()]),
    );
    eventually("the work to run on the healthy slot", || {
        let (_, status) = listed(&addr, "failing-slot")?;
        let tree = client(&["zk", "dump", "--nimbus", &addr])?;
        // The errors name the bad slot for good (where they happened): not an assignment.
        let placed: String = tree
            .lines()
            .filter(|l| !l.starts_with("/storm/taskerrors/"))
            .collect();
        let moved =
            placed.contains(&format!(":{good}\"")) && !placed.contains(&format!(":{bad}\""));
        (status == "active" && moved && tree.contains(&format!("/storm/taskbeats/{id}/")))
            .then_some(())
    });
}

#[test]
fn an_unreachable_nimbus_is_retried_with_back_off_in_a_plain_log() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut daemons = Daemons::new(dir.path());
    let nowhere = format!("127.0.0.1:{}", free_port());
    daemons.spawn(
        "supervisor",
        storm()
            .env_remove("NO_COLOR")
            .args(["supervisor", "--nimbus", &nowhere, "--host", "127.0.0.1"])
            .args(["--slots", &free_port().to_string()]),
    );
    eventually("three retries", || {
        daemons
            .log("supervisor")
            .contains("retrying in 800ms")
            .then_some(())
    });
    let log = daemons.log("supervisor");
    let first = log.find("retrying in 200ms").expect("a first retry");
    let second = log.find("retrying in 400ms").expect("a doubled retry");
    assert!(first < second, "{log}");
    assert!(
        !log.contains('\u{1b}'),
        "colour codes in a log file:\n{log}"
    );
}

#[test]
fn a_lost_tree_with_submissions_left_is_reported() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("nimbus");
    let kept = data.join("stormdist").join("wc-1-100");
    std::fs::create_dir_all(&kept).expect("mkdir");
    std::fs::write(kept.join("submission.json"), "{}").expect("write");
    let mut daemons = Daemons::new(dir.path());
    start_nimbus(&mut daemons, &data);
    let log = daemons.log("nimbus");
    assert!(
        log.contains("tree.json is missing") && log.contains("(wc-1-100)"),
        "{log}"
    );
}

/// A worker's listener on a free loopback port, with a short handshake timeout.
fn worker_listener(
    handshake: Duration,
) -> (
    storm::net::listener::ListenerHandle,
    crossbeam_channel::Receiver<Vec<u8>>,
) {
    let (tx, rx) = crossbeam_channel::bounded(64);
    let addr = "127.0.0.1:0".parse().expect("addr");
    let check = storm::runtime::wire::check;
    let handle = storm::net::listener::spawn(0, addr, None, handshake, check, tx).expect("listen");
    (handle, rx)
}

/// Read until the peer closes (true) or the wait runs out (false).
fn closed_by_peer(s: &mut TcpStream) -> bool {
    s.set_read_timeout(Some(WAIT)).expect("timeout");
    let mut buf = [0u8; 64];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) => return e.kind() == std::io::ErrorKind::ConnectionReset,
        }
    }
}

#[test]
fn a_worker_closes_connections_that_send_no_frame() {
    let (handle, _rx) = worker_listener(Duration::from_millis(300));
    let mut silent = TcpStream::connect(handle.addr).expect("connect");
    assert!(closed_by_peer(&mut silent));
    // Half a frame header is no better.
    let mut half = TcpStream::connect(handle.addr).expect("connect");
    half.write_all(&[0, 0, 0, 4, 2]).expect("send");
    assert!(closed_by_peer(&mut half));
}

#[test]
fn a_worker_bounds_the_memory_of_partial_frames_and_keeps_serving() {
    let (handle, rx) = worker_listener(Duration::from_secs(5));
    let addr = handle.addr;
    // Three peers each announce a 60 MiB frame and send 50 MiB of it: 150 MiB together, over
    // the listener's budget for all connections, so at least one is closed.
    let senders: Vec<_> = (0..3)
        .map(|_| {
            std::thread::spawn(move || {
                let mut s = TcpStream::connect(addr).expect("connect");
                let mut header = (60u32 << 20).to_be_bytes().to_vec();
                header.extend_from_slice(&[16, 0, 0, 0, 0]);
                let chunk = vec![0u8; 1 << 20];
                let sent =
                    s.write_all(&header).is_ok() && (0..50).all(|_| s.write_all(&chunk).is_ok());
                // Closed while sending, or after: either way the listener let go of it.
                let cut = !sent || {
                    s.set_read_timeout(Some(Duration::from_millis(500)))
                        .expect("timeout");
                    match s.read(&mut [0u8; 8]) {
                        Ok(n) => n == 0,
                        Err(e) => e.kind() == std::io::ErrorKind::ConnectionReset,
                    }
                };
                (cut, s)
            })
        })
        .collect();
    let results: Vec<(bool, TcpStream)> = senders
        .into_iter()
        .map(|t| t.join().expect("sender"))
        .collect();
    assert!(results.iter().any(|(cut, _)| *cut), "no connection was cut");
    // A well-behaved peer still gets through.
    let mut good = TcpStream::connect(addr).expect("connect");
    let mut eos = Vec::new();
    storm::runtime::wire::encode(
        &storm::runtime::message::Message::Eos { from: 1, to: 2 },
        &mut eos,
    );
    good.write_all(&eos).expect("send");
    let got = rx.recv_timeout(WAIT).expect("the frame arrives");
    assert_eq!(got, eos);
}

#[test]
fn a_damaged_stored_submission_slows_its_workers_down_and_is_reported() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("t.yaml");
    std::fs::write(&file, ONE_WORKER).expect("write");
    let data = dir.path().join("nimbus");
    let mut daemons = Daemons::new(dir.path());
    let (addr, _) = start_nimbus(&mut daemons, &data);
    daemons.spawn(
        "supervisor",
        storm()
            .env("STORM_LOG", "warn")
            .args(["supervisor", "--nimbus", &addr, "--host", "127.0.0.1"])
            .args(["--slots", &free_port().to_string()]),
    );
    let file_arg = file.to_str().expect("utf-8 path");
    let id = client(&["submit", file_arg, "--nimbus", &addr]).expect("submit");
    let id = id.trim().to_string();
    // Nimbus stops; its stored copy of the submission is damaged; it starts again.
    daemons.stop("nimbus");
    let stored = data.join("stormdist").join(&id).join("submission.json");
    std::fs::write(&stored, "{\"path\": 12").expect("damage the submission");
    start_nimbus_at(&mut daemons, "nimbus-again", &addr, &data);
    eventually("the topology to be failing", || {
        listed(&addr, "failing-slot").filter(|(_, status)| status == "failing")
    });
    let log = daemons.log("supervisor");
    for delay in [
        "restarting in 500ms",
        "restarting in 1s",
        "restarting in 2s",
    ] {
        assert!(log.contains(delay), "{delay}:\n{log}");
    }
    let tree = client(&["zk", "dump", "--nimbus", &addr]).expect("dump");
    assert!(tree.contains("keeps failing"), "{tree}");
}

const CRASHING: &str = "\
name: crashing
config:
  topology.workers: 1
spouts:
  - id: gen
    type: generate
    args: {rate: 200}
bolts:
  - id: boom
    type: chaos
    args: {panic_after: 20}
  - id: sink
    type: discard
streams:
  - {from: gen, to: boom}
  - {from: boom, to: sink}
";

/// A component that crashes in a worker has its error filed under its own task in
/// `/taskerrors` (where the UI's component page reads it), not under another task of the worker.
#[test]
fn a_crash_is_filed_under_the_crashing_components_task() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("t.yaml");
    std::fs::write(&file, CRASHING).expect("write");
    let mut daemons = Daemons::new(dir.path());
    let (addr, _) = start_nimbus(&mut daemons, &dir.path().join("nimbus"));
    let slot = free_port();
    daemons.spawn(
        "sup",
        storm()
            .env("STORM_LOG", "warn")
            .args(["supervisor", "--nimbus", &addr, "--host", "127.0.0.1"])
            .args(["--slots", &slot.to_string()]),
    );
    eventually("the supervisor to register", || {
        let tree = client(&["zk", "dump", "--nimbus", &addr])?;
        tree.contains("/storm/supervisors/").then_some(())
    });
    let file_arg = file.to_str().expect("utf-8 path");
    client(&["submit", file_arg, "--nimbus", &addr]).expect("submit");
    // Tasks go to components in the order of their ids: __acker 1, boom 2, gen 3, sink 4.
    let (id, _) = eventually("the topology to be listed", || listed(&addr, "crashing"));
    let filed = eventually("the crash under boom's task", || {
        let tree = client(&["zk", "dump", "--nimbus", &addr])?;
        let prefix = format!("/storm/taskerrors/{id}/2/");
        tree.lines()
            .find(|l| {
                // The worker's own report, not the supervisor's "keeps failing" for the slot.
                l.starts_with(&prefix)
                    && l.contains("component `boom`")
                    && !l.contains("keeps failing")
            })
            .map(str::to_string)
    });
    assert!(filed.contains("crashed"), "{filed}");
    // With the worker it happened in: the UI's errorHost and errorPort.
    assert!(
        filed.contains(&format!("\"worker\":\"127.0.0.1:{slot}\"")),
        "{filed}"
    );
}
