//! `storm rebalance` and `POST /api/v1/topology/:id/rebalance/:wait-time`, through real
//! processes and sockets: a word count rebalanced from one worker to three and back ends with
//! the totals the test computes from the same text; the REST answers to good and bad bodies;
//! the command's usage errors.

use assert_cmd::cargo::CommandCargoExt;
use serde_json::Value;
use std::collections::BTreeMap;
use std::io::Write;
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(90);
const JSON: &str = "Content-Type: application/json";

fn storm() -> Command {
    let mut c = Command::cargo_bin("storm").expect("the storm binary");
    c.env_remove("STORM_CLUSTER_SECRET")
        .env_remove("STORM_UI_TOKEN");
    c
}

/// A `storm run --ui 127.0.0.1:0` child with its stdout in a file; killed when dropped.
struct Run {
    child: Child,
    addr: String,
    stdout: PathBuf,
    _dir: tempfile::TempDir,
}

impl Drop for Run {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(topology: &str, extra: &[&str]) -> Run {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("t.yaml");
    std::fs::write(&file, topology).expect("write the topology");
    let stdout = dir.path().join("stdout.txt");
    let out = std::fs::File::create(&stdout).expect("create the stdout file");
    let mut child = storm()
        .arg("run")
        .arg(&file)
        .args(["--ui", "127.0.0.1:0", "--progress", "never"])
        .args(extra)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(Stdio::piped())
        .spawn()
        .expect("start storm run --ui");
    let addr = crate::support::ui_address(&mut child, WAIT);
    Run {
        child,
        addr,
        stdout,
        _dir: dir,
    }
}

/// One HTTP/1.0 request with a body; the status and the answer as JSON.
pub(crate) fn http(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[&str],
    body: &str,
) -> (u16, Value) {
    let mut s = TcpStream::connect(addr).expect("connect to the UI");
    let mut req = format!(
        "{method} {path} HTTP/1.0\r\nHost: {addr}\r\nContent-Length: {}\r\n",
        body.len()
    );
    for h in headers {
        req += h;
        req += "\r\n";
    }
    req += "\r\n";
    req += body;
    s.write_all(req.as_bytes()).expect("send the request");
    let (status, body) = super::support::read_http_answer(&mut s);
    let body = body.as_str();
    let v = serde_json::from_str(body).unwrap_or_else(|e| panic!("{path}: not JSON ({e}): {body}"));
    (status, v)
}

pub(crate) fn get(addr: &str, path: &str) -> Value {
    let (status, v) = http(addr, "GET", path, &[], "");
    assert_eq!(status, 200, "GET {path}: {v}");
    v
}

fn summary(addr: &str) -> Value {
    get(addr, "/api/v1/topology/summary")["topologies"][0].clone()
}

fn eventually<T>(what: &str, f: impl FnMut() -> Option<T>) -> T {
    crate::support::poll_until(what, WAIT, Duration::from_millis(100), f)
}

fn rebalance(args: &[&str]) -> Output {
    storm()
        .arg("rebalance")
        .args(args)
        .output()
        .expect("run storm rebalance")
}

fn emitted(addr: &str) -> u64 {
    get(addr, "/api/v1/topology/wc")["spouts"][0]["emitted"]
        .as_u64()
        .expect("the spout's emitted count")
}

/// Lines of words made up by a small generator, the same every time.
fn lines() -> Vec<String> {
    const SYLLABLES: &[&str] = &["ka", "lo", "mi", "su", "te", "ron", "vi", "pa"];
    let mut x: u64 = 7;
    let mut next = || {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (x >> 33) as usize
    };
    (0..13)
        .map(|_| {
            (0..3 + next() % 5)
                .map(|_| {
                    (0..1 + next() % 3)
                        .map(|_| SYLLABLES[next() % SYLLABLES.len()])
                        .collect::<String>()
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

#[test]
fn a_word_count_rebalanced_to_three_workers_and_back_keeps_exact_totals() {
    const COUNT: usize = 24_000;
    let lines = lines();
    let values: Vec<Value> = lines.iter().map(|l| Value::from(vec![l.clone()])).collect();
    let topology = format!(
        "name: wc\nconfig:\n  topology.workers: 1\nspouts:\n  - id: text\n    type: generate\n    \
         args: {{ count: {COUNT}, rate: 2000, values: {} }}\nbolts:\n  - id: split\n    type: split\n    \
         tasks: 4\n  - id: count\n    type: count\n    args: {{ fields: [word] }}\n    tasks: 4\n  \
         - id: out\n    type: stdout\nstreams:\n  - {{ from: text, to: split, grouping: shuffle }}\n  \
         - {{ from: split, to: count, grouping: {{ type: fields, args: [word] }} }}\n  \
         - {{ from: count, to: out, grouping: shuffle }}\n",
        Value::from(values)
    );
    // The oracle: the same lines in turn, their words counted here.
    let mut expected: BTreeMap<String, u64> = BTreeMap::new();
    for i in 0..COUNT {
        for w in lines[i % lines.len()].split_whitespace() {
            *expected.entry(w.to_string()).or_default() += 1;
        }
    }
    let mut run = start(&topology, &[]);
    let a = run.addr.clone();
    eventually("the spout to emit", || (emitted(&a) > 0).then_some(()));
    assert_eq!(summary(&a)["workersTotal"], 1);
    let out = rebalance(&[
        "wc", "--ui", &a, "-n", "3", "-e", "count=3", "-e", "split=2",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let after = eventually("three workers", || {
        let s = summary(&a);
        (s["workersTotal"] == 3 && s["status"] == "ACTIVE").then_some(s)
    });
    // 1 spout + 2 split + 3 count + 1 out + 1 acker (its count is fixed).
    assert_eq!(after["executorsTotal"], 8, "{after}");
    assert_eq!(after["tasksTotal"], 11, "{after}");
    let at_second = emitted(&a);
    assert!(
        at_second < COUNT as u64,
        "the run must still be going at the second rebalance ({at_second} emitted)"
    );
    let out = rebalance(&[
        "wc", "--ui", &a, "-w", "30", "-n", "1", "-e", "count=1", "-e", "split=1",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    eventually("one worker again", || {
        let s = summary(&a);
        (s["workersTotal"] == 1 && s["executorsTotal"] == 5).then_some(())
    });
    let status = eventually("the run to end", || run.child.try_wait().ok().flatten());
    assert!(status.success(), "the run failed: {status}");
    let text = std::fs::read_to_string(&run.stdout).expect("read the run's stdout");
    let mut got: BTreeMap<String, u64> = BTreeMap::new();
    for line in text.lines() {
        let (w, n) = line.split_once('\t').expect("word TAB count");
        let n: u64 = n.parse().expect("a count");
        assert!(
            got.insert(w.to_string(), n).is_none(),
            "`{w}` counted twice"
        );
    }
    assert_eq!(got, expected);
}

/// An endless rate-limited word count; acking off, so a rebalance waits its whole wait.
const ENDLESS: &str = "\
name: endless
config:
  topology.workers: 1
  topology.acker.executors: 0
spouts:
  - id: words
    type: generate
    args: { rate: 200, values: [[apple], [pear], [plum]] }
bolts:
  - id: count
    type: count
    args: { fields: [word] }
    tasks: 3
  - id: sink
    type: discard
streams:
  - { from: words, to: count, grouping: { type: fields, args: [word] } }
  - { from: count, to: sink, grouping: shuffle }
";

#[test]
fn the_rest_api_rebalances_and_refuses_bad_bodies() {
    let run = start(ENDLESS, &["-c", "ui.token=s3cret"]);
    let a = run.addr.as_str();
    let auth = "Authorization: Bearer s3cret";
    let path = "/api/v1/topology/endless/rebalance/3";
    let bad = |body: &str| {
        let (status, v) = http(a, "POST", path, &[JSON, auth], body);
        assert_eq!(status, 400, "{body}: {v}");
        v["errorMessage"]
            .as_str()
            .expect("an errorMessage")
            .to_string()
    };
    assert!(bad("{").contains("not JSON"));
    let e = bad(r#"{"rebalanceOptions": {"numWorker": 2}}"#);
    assert!(e.contains("did you mean `numWorkers`"), "{e}");
    let e = bad(r#"{"rebalanceOptions": {"executors": {"cuont": 2}}}"#);
    assert!(
        e.contains("no component `cuont`") && e.contains("did you mean `count`"),
        "{e}"
    );
    let e = bad(r#"{"rebalanceOptions": {"executors": {"count": 4}}}"#);
    assert!(e.contains("1 to 3"), "{e}");
    let e = bad(r#"{"rebalanceOptions": {"numWorkers": 0}}"#);
    assert!(e.contains("at least 1"), "{e}");
    // No more workers than a run may start with, and no wait beyond a week (the run would
    // otherwise be stuck rebalancing, or run out of memory).
    let e = bad(r#"{"rebalanceOptions": {"numWorkers": 100000}}"#);
    assert!(e.contains("at most 256 workers"), "{e}");
    let (status, v) = http(
        a,
        "POST",
        "/api/v1/topology/endless/rebalance/18446744073709551615",
        &[JSON, auth],
        "",
    );
    assert_eq!(status, 400, "{v}");
    assert!(
        v["errorMessage"]
            .as_str()
            .is_some_and(|m| m.contains("longer than a week")),
        "{v}"
    );
    let (status, v) = http(
        a,
        "POST",
        "/api/v1/topology/endless/rebalance/soon",
        &[JSON, auth],
        "",
    );
    assert_eq!(status, 400, "{v}");
    // No token: refused as the other operations are.
    let good = r#"{"rebalanceOptions": {"numWorkers": 2, "executors": {"count": 3}}}"#;
    let (status, v) = http(a, "POST", path, &[JSON], good);
    assert_eq!(status, 403, "{v}");
    assert_eq!(summary(a)["workersTotal"], 1);

    let (status, v) = http(a, "POST", path, &[JSON, auth], good);
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["topologyOperation"], "rebalance");
    assert_eq!(v["status"], "success");
    assert!(v["topologyId"]
        .as_str()
        .is_some_and(|id| id.starts_with("endless-")));
    // Acking off: nothing says the tuples are done, so the spouts stay deactivated the whole
    // wait (3 s), and the status says so meanwhile.
    assert_eq!(summary(a)["status"], "REBALANCING");
    let (status, v) = http(a, "POST", path, &[JSON, auth], good);
    assert_eq!(
        status, 400,
        "a second rebalance while one is under way: {v}"
    );
    let deactivate = "/api/v1/topology/endless/deactivate";
    let (status, v) = http(a, "POST", deactivate, &[JSON, auth], "");
    assert_eq!(status, 400, "deactivate while rebalancing: {v}");
    let s = eventually("the rebalance to end", || {
        let s = summary(a);
        (s["status"] == "ACTIVE").then_some(s)
    });
    assert_eq!(s["workersTotal"], 2, "{s}");
    assert_eq!(s["executorsTotal"], 5, "{s}");
    let count = &get(a, "/api/v1/topology/endless")["bolts"]
        .as_array()
        .expect("bolts")
        .iter()
        .find(|b| b["boltId"] == "count")
        .cloned()
        .expect("the count bolt");
    assert_eq!(count["executors"], 3, "{count}");
    // A deactivated topology stays deactivated after a rebalance.
    let (status, _) = http(a, "POST", deactivate, &[JSON, auth], "");
    assert_eq!(status, 200);
    let (status, v) = http(
        a,
        "POST",
        "/api/v1/topology/endless/rebalance/0",
        &[JSON, auth],
        "",
    );
    assert_eq!(status, 200, "{v}");
    let s = eventually("the rebalance to end", || {
        let s = summary(a);
        (s["status"] != "REBALANCING").then_some(s)
    });
    assert_eq!(s["status"], "INACTIVE", "{s}");
}

#[test]
fn storm_rebalance_says_what_is_wrong() {
    let usage = |args: &[&str], needle: &str| {
        let out = rebalance(args);
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    };
    usage(
        &["t", "--ui", "127.0.0.1:1", "-e", "count"],
        "COMPONENT=PARALLELISM",
    );
    usage(
        &["t", "--ui", "127.0.0.1:1", "-e", "count=many"],
        "not a whole number",
    );
    usage(&["t", "--ui", "127.0.0.1:1", "-n", "0"], "-n");
    // One retry round, soon: the error is the same as after the default back-off's 25 s.
    let out = rebalance(&[
        "t",
        "--nimbus",
        "127.0.0.1:1",
        "-c",
        "storm.nimbus.retry.times=1",
        "-c",
        "storm.nimbus.retry.interval.millis=10",
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("127.0.0.1:1"));

    let run = start(ENDLESS, &[]);
    let a = run.addr.as_str();
    let failing = |args: &[&str], needle: &str| {
        let out = rebalance(args);
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
    };
    failing(&["nosuch", "--ui", a, "-w", "0"], "no topology `nosuch`");
    failing(
        &["endless", "--ui", a, "-w", "0", "-e", "cont=2"],
        "did you mean `count`",
    );
    failing(
        &["endless", "--ui", a, "-w", "0", "-e", "count=9"],
        "1 to 3",
    );
    assert_eq!(summary(a)["status"], "ACTIVE");
}

/// An endless topology for the cluster: one worker at first, `count` on two tasks.
const CLUSTER: &str = "\
name: rebal-cluster
config:
  topology.workers: 1
spouts:
  - id: words
    type: generate
    args: { rate: 300, values: [[apple], [pear], [plum]] }
bolts:
  - id: count
    type: count
    args: { fields: [word] }
    tasks: 2
  - id: sink
    type: discard
streams:
  - { from: words, to: count, grouping: { type: fields, args: [word] } }
  - { from: count, to: sink, grouping: shuffle }
";

/// The distinct slots of topology `id`'s assignment, as the tree shows it.
fn assigned_slots(addr: &str, id: &str) -> Option<std::collections::BTreeSet<String>> {
    let tree = crate::cluster::client(&["zk", "dump", "--nimbus", addr])?;
    let prefix = format!("/storm/assignments/{id} = ");
    let line = tree.lines().find_map(|l| l.strip_prefix(&prefix))?;
    let a: Value = serde_json::from_str(line).ok()?;
    Some(
        a["task_to_node_port"]
            .as_object()?
            .values()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect(),
    )
}

#[test]
fn a_cluster_rebalance_writes_the_new_assignment_and_the_topology_runs_on() {
    use crate::cluster::{client, free_port, storm as cluster_storm, workers_of, Daemons};
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("t.yaml");
    std::fs::write(&file, CLUSTER).expect("write the topology");
    let mut daemons = Daemons::default();
    let log = dir.path().join("nimbus.log");
    daemons.spawn_logged(
        "nimbus",
        cluster_storm()
            .args(["nimbus", "--listen", "127.0.0.1:0", "--data"])
            .arg(dir.path().join("nimbus"))
            .args(["-c", "ui.port=0"]),
        &log,
    );
    let addr = crate::support::nimbus_addr(&log);
    let ui = crate::support::nimbus_ui_addr(&log);
    eventually("nimbus to answer", || client(&["list", "--nimbus", &addr]));
    let ports = [free_port("127.0.0.1"), free_port("127.0.0.1")];
    let slots: Vec<String> = ports.iter().map(|p| format!("127.0.0.1:{p}")).collect();
    daemons.spawn(
        "supervisor",
        cluster_storm().args([
            "supervisor",
            "--nimbus",
            &addr,
            "--host",
            "127.0.0.1",
            "--slots",
            &format!("{},{}", ports[0], ports[1]),
        ]),
    );
    let id = client(&[
        "submit",
        file.to_str().expect("utf-8 path"),
        "--nimbus",
        &addr,
    ])
    .expect("submit succeeds")
    .trim()
    .to_string();
    let before = eventually("one assigned slot", || {
        assigned_slots(&addr, &id).filter(|s| s.len() == 1)
    });
    let old = eventually("one worker process", || {
        let w = workers_of(&id, &slots);
        (w.len() == 1).then(|| w[0].0)
    });

    let out = rebalance(&[
        "rebal-cluster",
        "--nimbus",
        &addr,
        "-w",
        "4",
        "-n",
        "2",
        "-e",
        "count=2",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // During the wait `storm list` says so.
    let listed = client(&["list", "--nimbus", &addr]).expect("storm list");
    assert!(listed.contains(" rebalancing "), "{listed}");
    let after = eventually("two assigned slots", || {
        assigned_slots(&addr, &id).filter(|s| s.len() == 2)
    });
    assert_ne!(after, before);
    let listed = eventually("active over two workers", || {
        let l = client(&["list", "--nimbus", &addr])?;
        l.lines()
            .any(|r| r.contains(&id) && r.contains(" active ") && r.contains(" 2 "))
            .then_some(l)
    });
    assert!(listed.contains(&id), "{listed}");
    eventually("two new worker processes", || {
        let w = workers_of(&id, &slots);
        (w.len() == 2 && w.iter().all(|(pid, _)| *pid != old)).then_some(())
    });
    // Nimbus's UI shows the new counts, and the spout's figures move on.
    let page = |path: &str| {
        let (status, v) = http(&ui, "GET", path, &[], "");
        (status == 200).then_some(v)
    };
    let count = eventually("count on two executors", || {
        let t = page(&format!("/api/v1/topology/{id}"))?;
        let c = t["bolts"]
            .as_array()?
            .iter()
            .find(|b| b["boltId"] == "count")?
            .clone();
        (t["workersTotal"] == 2 && c["executors"] == 2).then_some(c)
    });
    assert_eq!(count["tasks"], 2, "{count}");
    // The coordination tree records the new counts too.
    let tree = client(&["zk", "dump", "--nimbus", &addr]).expect("storm zk dump");
    let storm = tree
        .lines()
        .find(|l| l.starts_with(&format!("/storm/storms/{id} = ")))
        .unwrap_or_default();
    assert!(
        storm.contains("\"num_workers\":2") && storm.contains("\"count\":2"),
        "{storm}"
    );
    let emitted =
        || page(&format!("/api/v1/topology/{id}")).and_then(|t| t["spouts"][0]["emitted"].as_u64());
    let first = eventually("the spout to report", || emitted().filter(|e| *e > 0));
    eventually("the spout to emit on", || emitted().filter(|e| *e > first));

    // Back to one worker through nimbus's UI (Storm's REST body); a bad one is refused.
    let path = format!("/api/v1/topology/{id}/rebalance/0");
    let (status, v) = http(
        &ui,
        "POST",
        &path,
        &[JSON],
        r#"{"rebalanceOptions": {"executors": {"cnt": 1}}}"#,
    );
    assert_eq!(status, 400, "{v}");
    let body = r#"{"rebalanceOptions": {"numWorkers": 1, "executors": {"count": 1}}}"#;
    let (status, v) = http(&ui, "POST", &path, &[JSON], body);
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["topologyOperation"], "rebalance");
    eventually("one assigned slot again", || {
        assigned_slots(&addr, &id).filter(|s| s.len() == 1)
    });
    eventually("one worker process again", || {
        (workers_of(&id, &slots).len() == 1).then_some(())
    });
}

/// A spout that is done at once, a slow bolt with a backlog; acking off.
const BACKLOG: &str = "\
name: backlog
config:
  topology.acker.executors: 0
spouts:
  - id: g
    type: generate
    args: { count: 400, rate: 100000, values: [[a], [b]] }
bolts:
  - id: slow
    type: chaos
    args: { delay: 10ms }
    tasks: 2
  - id: count
    type: count
  - id: print
    type: stdout
streams:
  - { from: g, to: slow, grouping: shuffle }
  - { from: slow, to: count, grouping: shuffle }
  - { from: count, to: print, grouping: shuffle }
";

#[test]
fn a_rebalance_without_a_wait_hands_queued_tuples_to_the_new_executors() {
    let mut run = start(BACKLOG, &[]);
    let a = run.addr.clone();
    let executed = |id: &str| {
        get(&a, "/api/v1/topology/backlog")["bolts"]
            .as_array()
            .and_then(|b| b.iter().find(|b| b["boltId"] == id).cloned())
            .and_then(|b| b["executed"].as_u64())
            .expect("the bolt's executed count")
    };
    let emitted = || get(&a, "/api/v1/topology/backlog")["spouts"][0]["emitted"].as_u64();
    eventually("the spout to be done", || {
        (emitted() == Some(400)).then_some(())
    });
    // 400 tuples at 10 ms each on one executor: most are still queued.
    let before = executed("slow");
    assert!(before < 400, "the backlog is there ({before} executed)");
    let out = rebalance(&["backlog", "--ui", &a, "-w", "0", "-n", "2", "-e", "slow=2"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The spout's end of input was queued behind the tuples: the run ends only if it moved too.
    let status = eventually("the run to end", || run.child.try_wait().ok().flatten());
    assert!(status.success(), "the run failed: {status}");
    let text = std::fs::read_to_string(&run.stdout).expect("read the run's stdout");
    let mut lines: Vec<&str> = text.lines().collect();
    lines.sort();
    assert_eq!(lines, ["a\t200", "b\t200"]);
}

#[test]
fn a_shell_bolt_rebalanced_to_two_executors_keeps_its_child_and_the_totals() {
    const COUNT: usize = 3000;
    let examples = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("multilang/examples");
    let topology = format!(
        "name: shell\nconfig:\n  topology.shellbolt.max.pending: 100\nspouts:\n  - id: text\n    \
         type: generate\n    args: {{ count: {COUNT}, rate: 600, values: [[\"the dog barks\"], \
         [\"the cat\"]] }}\nbolts:\n  - id: split\n    type: shell\n    command: [python3, split.py]\n    \
         cwd: {}\n    fields: [word]\n    tasks: 2\n  - id: count\n    type: count\n    \
         args: {{ fields: [word] }}\n  - id: out\n    type: stdout\nstreams:\n  \
         - {{ from: text, to: split, grouping: shuffle }}\n  \
         - {{ from: split, to: count, grouping: {{ type: fields, args: [word] }} }}\n  \
         - {{ from: count, to: out, grouping: global }}\n",
        examples.display()
    );
    let mut run = start(&topology, &[]);
    let a = run.addr.clone();
    let emitted = || get(&a, "/api/v1/topology/shell")["spouts"][0]["emitted"].as_u64();
    eventually("the spout to emit", || emitted().filter(|e| *e > 0));
    let out = rebalance(&["shell", "--ui", &a, "-n", "2", "-e", "split=2"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    eventually("two workers", || {
        (summary(&a)["workersTotal"] == 2).then_some(())
    });
    assert!(
        emitted().is_some_and(|e| e < COUNT as u64),
        "the run must still be going after the rebalance"
    );
    let status = eventually("the run to end", || run.child.try_wait().ok().flatten());
    assert!(status.success(), "the run failed: {status}");
    let text = std::fs::read_to_string(&run.stdout).expect("read the run's stdout");
    let mut lines: Vec<&str> = text.lines().collect();
    lines.sort();
    let half = COUNT / 2;
    let expected = [
        format!("barks\t{half}"),
        format!("cat\t{half}"),
        format!("dog\t{half}"),
        format!("the\t{COUNT}"),
    ];
    assert_eq!(lines, expected);
}
