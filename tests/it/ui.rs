//! The UI of a running topology, through real processes and sockets: Storm's REST API field
//! names (checked against the names Storm's UI REST API documents), Prometheus text read by a
//! Prometheus parser, the operations (deactivate pauses the spouts, activate resumes, kill
//! ends the run), nimbus's UI, the page in a real headless Chromium, and `storm top` in a
//! pseudo-terminal.

use assert_cmd::cargo::CommandCargoExt;
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(60);

/// An endless word count: a rate-limited spout, a counting bolt on two tasks, a sink.
const TOPOLOGY: &str = "\
name: uitest
config:
  topology.workers: 2
spouts:
  - id: words
    type: generate
    args: { rate: 400, values: [[apple], [pear], [plum]] }
bolts:
  - id: count
    type: count
    args: { fields: [word] }
    parallelism: 2
  - id: sink
    type: discard
streams:
  - from: words
    to: count
    grouping: { type: fields, args: [word] }
  - from: count
    to: sink
    grouping: shuffle
";

fn storm() -> Command {
    let mut c = Command::cargo_bin("storm").expect("the storm binary");
    c.env_remove("STORM_CLUSTER_SECRET")
        .env_remove("STORM_UI_TOKEN");
    c
}

use crate::support::Served as UiRun;

/// Start the endless topology with `--ui 127.0.0.1:0` (and `extra` arguments); the address
/// comes from the `ui: http://ADDR/` line on stderr.
fn start_ui_run(extra: &[&str]) -> UiRun {
    start_ui_run_of(TOPOLOGY, extra)
}

pub(crate) fn start_ui_run_of(topology: &str, extra: &[&str]) -> UiRun {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("uitest.yaml");
    std::fs::write(&file, topology).expect("write the topology");
    let mut child = storm()
        .arg("run")
        .arg(&file)
        .args(["--ui", "127.0.0.1:0", "--progress", "never"])
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start storm run --ui");
    let addr = crate::support::ui_address(&mut child, WAIT);
    UiRun {
        child,
        addr,
        _dir: dir,
    }
}

/// One HTTP/1.0 request; the status and the body.
fn http(addr: &str, method: &str, path: &str, headers: &[&str]) -> (u16, String) {
    let mut s = TcpStream::connect(addr).expect("connect to the UI");
    let mut req = format!("{method} {path} HTTP/1.0\r\nHost: {addr}\r\nContent-Length: 0\r\n");
    for h in headers {
        req += h;
        req += "\r\n";
    }
    req += "\r\n";
    s.write_all(req.as_bytes()).expect("send the request");
    super::support::read_http_answer(&mut s)
}

fn get(addr: &str, path: &str) -> Value {
    let (status, body) = http(addr, "GET", path, &[]);
    assert_eq!(status, 200, "GET {path}: {body}");
    serde_json::from_str(&body).expect("JSON")
}

fn post(addr: &str, path: &str, headers: &[&str]) -> (u16, Value) {
    let (status, body) = http(addr, "POST", path, headers);
    (status, serde_json::from_str(&body).expect("JSON"))
}

/// Poll `f` until it gives a value or the wait is over.
fn eventually<T>(what: &str, f: impl FnMut() -> Option<T>) -> T {
    crate::support::poll_until(what, WAIT, Duration::from_millis(200), f)
}

/// Every named field is in the object (Storm's documented names).
fn has_fields(v: &Value, fields: &[&str], what: &str) {
    let obj = v
        .as_object()
        .unwrap_or_else(|| panic!("{what} is not an object: {v}"));
    let missing: Vec<&&str> = fields.iter().filter(|f| !obj.contains_key(**f)).collect();
    assert!(
        missing.is_empty(),
        "{what} lacks Storm's fields {missing:?}: {v}"
    );
}

/// The field names Storm's UI REST API documents for each answer.
mod storm_fields {
    pub const CLUSTER: &[&str] = &[
        "stormVersion",
        "supervisors",
        "topologies",
        "slotsTotal",
        "slotsUsed",
        "slotsFree",
        "executorsTotal",
        "tasksTotal",
        "schedulerDisplayResource",
        "totalMem",
        "totalCpu",
        "availMem",
        "availCpu",
        "memAssignedPercentUtil",
        "cpuAssignedPercentUtil",
    ];
    pub const SUPERVISOR: &[&str] = &[
        "id",
        "host",
        "uptime",
        "uptimeSeconds",
        "slotsTotal",
        "slotsUsed",
        "totalMem",
        "totalCpu",
        "usedMem",
        "usedCpu",
    ];
    pub const TOPOLOGY_SUMMARY: &[&str] = &[
        "id",
        "name",
        "status",
        "uptime",
        "uptimeSeconds",
        "tasksTotal",
        "workersTotal",
        "executorsTotal",
        "replicationCount",
        "requestedMemOnHeap",
        "requestedMemOffHeap",
        "requestedTotalMem",
        "requestedCpu",
        "assignedMemOnHeap",
        "assignedMemOffHeap",
        "assignedTotalMem",
        "assignedCpu",
    ];
    pub const TOPOLOGY: &[&str] = &[
        "id",
        "name",
        "uptime",
        "uptimeSeconds",
        "status",
        "tasksTotal",
        "workersTotal",
        "executorsTotal",
        "msgTimeout",
        "windowHint",
        "schedulerDisplayResource",
        "replicationCount",
        "debug",
        "samplingPct",
        "topologyStats",
        "workers",
        "spouts",
        "bolts",
    ];
    pub const TOPOLOGY_STATS: &[&str] = &[
        "windowPretty",
        "window",
        "emitted",
        "transferred",
        "completeLatency",
        "acked",
        "failed",
    ];
    pub const WORKER: &[&str] = &[
        "supervisorId",
        "host",
        "port",
        "topologyId",
        "topologyName",
        "executorsTotal",
        "componentNumTasks",
        "uptime",
        "uptimeSeconds",
        "workerLogLink",
    ];
    pub const SPOUT: &[&str] = &[
        "spoutId",
        "executors",
        "emitted",
        "completeLatency",
        "transferred",
        "tasks",
        "lastError",
        "errorHost",
        "errorPort",
        "errorTime",
        "errorLapsedSecs",
        "errorWorkerLogLink",
        "acked",
        "failed",
    ];
    pub const BOLT: &[&str] = &[
        "boltId",
        "capacity",
        "processLatency",
        "executeLatency",
        "executors",
        "tasks",
        "acked",
        "failed",
        "lastError",
        "errorHost",
        "errorPort",
        "errorTime",
        "errorLapsedSecs",
        "errorWorkerLogLink",
        "emitted",
        "executed",
        "transferred",
    ];
    pub const COMPONENT: &[&str] = &[
        "id",
        "encodedId",
        "name",
        "executors",
        "tasks",
        "topologyId",
        "topologyStatus",
        "encodedTopologyId",
        "window",
        "componentType",
        "windowHint",
        "debug",
        "samplingPct",
        "eventLogLink",
        "componentErrors",
        "outputStats",
        "executorStats",
    ];
    pub const BOLT_STATS: &[&str] = &[
        "windowPretty",
        "window",
        "transferred",
        "processLatency",
        "acked",
        "failed",
    ];
    pub const INPUT_STATS: &[&str] = &[
        "component",
        "encodedComponentId",
        "executeLatency",
        "processLatency",
        "executed",
        "acked",
        "failed",
        "stream",
    ];
    pub const OUTPUT_STATS: &[&str] = &["transferred", "emitted", "stream"];
    pub const EXECUTOR_STATS: &[&str] = &[
        "id",
        "host",
        "port",
        "uptime",
        "uptimeSeconds",
        "emitted",
        "transferred",
        "acked",
        "failed",
        "workerLogLink",
    ];
    pub const OPERATION: &[&str] = &["topologyOperation", "topologyId", "status"];
}

const JSON: &str = "Content-Type: application/json";

/// The bolt `id`'s row of a topology page.
fn bolt<'a>(t: &'a Value, id: &str) -> &'a Value {
    t["bolts"]
        .as_array()
        .and_then(|b| b.iter().find(|b| b["boltId"] == id))
        .unwrap_or_else(|| panic!("no bolt {id}: {t}"))
}

fn spout_emitted(addr: &str, id: &str) -> u64 {
    get(addr, &format!("/api/v1/topology/{id}"))["spouts"][0]["emitted"]
        .as_u64()
        .expect("emitted is a number")
}

#[test]
fn rest_api_answers_in_storms_field_names_and_counts_move() {
    let run = start_ui_run(&[]);
    let a = run.addr.as_str();

    let cluster = get(a, "/api/v1/cluster/summary");
    has_fields(&cluster, storm_fields::CLUSTER, "cluster summary");
    assert_eq!(cluster["topologies"], 1);
    assert_eq!(cluster["slotsUsed"], 2, "two workers: {cluster}");

    let sups = get(a, "/api/v1/supervisor/summary");
    has_fields(
        &sups["supervisors"][0],
        storm_fields::SUPERVISOR,
        "supervisor",
    );

    let list = get(a, "/api/v1/topology/summary");
    let summary = &list["topologies"][0];
    has_fields(summary, storm_fields::TOPOLOGY_SUMMARY, "topology summary");
    assert_eq!(summary["name"], "uitest");
    assert_eq!(summary["status"], "ACTIVE");
    assert_eq!(summary["workersTotal"], 2);
    let id = summary["id"].as_str().expect("an id").to_string();

    let t = get(a, &format!("/api/v1/topology/{id}"));
    has_fields(&t, storm_fields::TOPOLOGY, "topology");
    has_fields(
        &t["topologyStats"][0],
        storm_fields::TOPOLOGY_STATS,
        "topologyStats",
    );
    has_fields(&t["workers"][0], storm_fields::WORKER, "worker");
    has_fields(&t["spouts"][0], storm_fields::SPOUT, "spout");
    has_fields(bolt(&t, "count"), storm_fields::BOLT, "bolt");
    assert_eq!(t["spouts"][0]["spoutId"], "words");
    assert_eq!(bolt(&t, "count")["tasks"], 2);
    assert!(
        t["bolts"]
            .as_array()
            .expect("bolts")
            .iter()
            .all(|b| b["boltId"] != "__acker"),
        "system components only with sys=1"
    );
    let sys = get(a, &format!("/api/v1/topology/{id}?sys=1"));
    bolt(&sys, "__acker");

    // The counts move while the topology runs.
    let first = spout_emitted(a, &id);
    eventually("the spout to emit more", || {
        (spout_emitted(a, &id) > first).then_some(())
    });
    eventually("count to execute", || {
        let t = get(a, &format!("/api/v1/topology/{id}"));
        (bolt(&t, "count")["executed"].as_u64()? > 0).then_some(())
    });

    let c = get(a, &format!("/api/v1/topology/{id}/component/count"));
    has_fields(&c, storm_fields::COMPONENT, "component");
    has_fields(&c["boltStats"][0], storm_fields::BOLT_STATS, "boltStats");
    has_fields(&c["inputStats"][0], storm_fields::INPUT_STATS, "inputStats");
    has_fields(
        &c["outputStats"][0],
        storm_fields::OUTPUT_STATS,
        "outputStats",
    );
    has_fields(
        &c["executorStats"][0],
        storm_fields::EXECUTOR_STATS,
        "executorStats",
    );
    assert_eq!(c["componentType"], "bolt");
    assert_eq!(c["inputStats"][0]["component"], "words");
    assert_eq!(c["executorStats"].as_array().map(Vec::len), Some(2));
    let s = get(a, &format!("/api/v1/topology/{id}/component/words"));
    assert_eq!(s["componentType"], "spout");
    assert!(s["spoutSummary"][0]["emitted"].as_u64() > Some(0), "{s}");

    let vis = get(a, &format!("/api/v1/topology/{id}/visualization"));
    assert_eq!(vis["words"][":type"], "spout");
    assert_eq!(vis["count"][":inputs"][0][":component"], "words");
    assert_eq!(vis["sink"][":inputs"][0][":component"], "count");
    assert!(vis["count"][":capacity"].is_number(), "{vis}");

    // Errors are located and name what is known.
    let (status, body) = http(
        a,
        "GET",
        &format!("/api/v1/topology/{id}/component/cont"),
        &[],
    );
    assert_eq!(status, 404);
    assert!(body.contains("did you mean `count`"), "{body}");
    let (status, _) = http(a, "GET", "/api/v1/topology/nope", &[]);
    assert_eq!(status, 404);
}

#[test]
fn deactivate_pauses_the_spouts_activate_resumes_and_kill_ends_the_run() {
    let mut run = start_ui_run(&[]);
    let a = run.addr.clone();
    let id = get(&a, "/api/v1/topology/summary")["topologies"][0]["id"]
        .as_str()
        .expect("an id")
        .to_string();
    // A POST from a page of another origin (here another local port) is refused.
    let (status, body) = post(
        &a,
        &format!("/api/v1/topology/{id}/deactivate"),
        &["Origin: http://localhost:1"],
    );
    assert_eq!(status, 403, "{body}");

    // A plain `curl -X POST` (no Content-Type) operates, as with Storm.
    let (status, body) = post(&a, &format!("/api/v1/topology/{id}/deactivate"), &[]);
    assert_eq!(status, 200, "{body}");
    has_fields(&body, storm_fields::OPERATION, "operation");
    assert_eq!(body["topologyOperation"], "deactivate");
    assert_eq!(
        get(&a, "/api/v1/topology/summary")["topologies"][0]["status"],
        "INACTIVE"
    );
    // Paused: two reads a while apart see the same count.
    eventually("the spout to stand still", || {
        let before = spout_emitted(&a, &id);
        std::thread::sleep(Duration::from_millis(500));
        (spout_emitted(&a, &id) == before).then_some(())
    });
    let paused_at = spout_emitted(&a, &id);

    let (status, _) = post(&a, &format!("/api/v1/topology/{id}/activate"), &[JSON]);
    assert_eq!(status, 200);
    eventually("the spout to emit again", || {
        (spout_emitted(&a, &id) > paused_at).then_some(())
    });

    // A rebalance with no options re-places the topology as it is, and it comes back active
    // (the rebalance tests check the rest).
    let (status, body) = post(&a, &format!("/api/v1/topology/{id}/rebalance/0"), &[JSON]);
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["topologyOperation"], "rebalance");
    eventually("the topology to be active again", || {
        let s = get(&a, "/api/v1/topology/summary");
        (s["topologies"][0]["status"] == "ACTIVE").then_some(())
    });
    let (status, body) = post(&a, &format!("/api/v1/topology/{id}/activat"), &[JSON]);
    assert_eq!(status, 404);
    assert!(body["errorMessage"]
        .as_str()
        .is_some_and(|m| m.contains("did you mean `activate`")));

    // During a kill's wait the topology is KILLED and takes no other operation.
    let (status, body) = post(&a, &format!("/api/v1/topology/{id}/kill/2"), &[JSON]);
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        get(&a, "/api/v1/topology/summary")["topologies"][0]["status"],
        "KILLED"
    );
    let (status, body) = post(&a, &format!("/api/v1/topology/{id}/activate"), &[JSON]);
    assert_eq!(status, 400, "{body}");
    let exit = eventually("the run to end", || run.child.try_wait().ok().flatten());
    assert!(
        exit.success(),
        "a killed run drains and ends well: {exit:?}"
    );
}

/// A loopback UI answers only to local host names: a page of another site whose name was made
/// to resolve to 127.0.0.1 (DNS rebinding) is refused, reading or operating. A UI reachable
/// from other hosts needs a token to start at all.
#[test]
fn a_loopback_ui_refuses_foreign_hosts_and_an_open_one_needs_a_token() {
    let run = start_ui_run(&[]);
    let a = run.addr.as_str();
    let raw = |head: &str| {
        let mut s = TcpStream::connect(a).expect("connect to the UI");
        s.write_all(head.as_bytes()).expect("send");
        let mut answer = String::new();
        s.read_to_string(&mut answer).expect("read");
        answer
    };
    let foreign = raw("GET /api/v1/topology/summary HTTP/1.0\r\nHost: evil.example:8080\r\n\r\n");
    assert!(
        foreign.starts_with("HTTP/1.0 403") || foreign.starts_with("HTTP/1.1 403"),
        "{foreign}"
    );
    let rebound = raw(&format!(
        "POST /api/v1/topology/uitest/deactivate HTTP/1.0\r\nHost: {a}\r\nOrigin: http://evil.example:8080\r\nContent-Type: application/json\r\nContent-Length: 0\r\n\r\n"
    ));
    assert!(rebound.contains(" 403 "), "{rebound}");
    let local = raw(&format!(
        "GET /api/v1/topology/summary HTTP/1.0\r\nHost: localhost:{}\r\n\r\n",
        a.rsplit(':').next().unwrap_or_default()
    ));
    assert!(local.contains(" 200 "), "{local}");
    // Storm's JSONP lets any page read the answer: off without a token (see ui_hostile).
    let (status, body) = http(a, "GET", "/api/v1/cluster/summary?callback=show_it", &[]);
    assert_eq!(status, 403, "{body}");
    let (status, _) = http(a, "GET", "/api/v1/topology/uitest/deactivate", &[]);
    assert_eq!(status, 405);
    let (status, body) = http(a, "GET", "/api/v1/topology/uitset", &[]);
    assert_eq!(status, 404);
    assert!(body.contains("did you mean `uitest`"), "{body}");
    assert_eq!(
        get(a, "/api/v1/topology/summary")["topologies"][0]["status"],
        "ACTIVE"
    );

    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("open.yaml");
    std::fs::write(&file, TOPOLOGY).expect("write the topology");
    let out = storm()
        .arg("run")
        .arg(&file)
        .args(["--ui", "0.0.0.0:0", "--progress", "never"])
        .stdin(Stdio::null())
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("without a token"), "{err}");
}

#[test]
fn a_token_guards_the_operations() {
    let run = start_ui_run(&["-c", "ui.token=s3cret"]);
    let a = run.addr.as_str();
    let path = "/api/v1/topology/uitest/deactivate";
    let (status, body) = post(a, path, &[JSON]);
    assert_eq!(status, 403, "{body}");
    let (status, _) = post(a, path, &[JSON, "Authorization: Bearer wrong"]);
    assert_eq!(status, 403);
    let (status, body) = post(a, path, &[JSON, "Authorization: Bearer s3cret"]);
    assert_eq!(status, 200, "{body}");
    // `storm activate --ui` takes the token too.
    let out = storm()
        .args(["activate", "uitest", "--ui", a, "--token", "s3cret"])
        .output()
        .expect("run storm activate");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        get(a, "/api/v1/topology/summary")["topologies"][0]["status"],
        "ACTIVE"
    );
}

#[test]
fn metrics_are_prometheus_text_per_component_and_task() {
    let run = start_ui_run(&[]);
    let a = run.addr.as_str();
    let emitted = |scrape: &prometheus_parse::Scrape| -> f64 {
        scrape
            .samples
            .iter()
            .filter(|s| {
                s.metric == "storm_task_emitted_total" && s.labels.get("component") == Some("words")
            })
            .map(|s| match s.value {
                prometheus_parse::Value::Counter(v) | prometheus_parse::Value::Untyped(v) => v,
                _ => 0.0,
            })
            .sum()
    };
    let scrape = || {
        let (status, body) = http(a, "GET", "/metrics", &[]);
        assert_eq!(status, 200);
        let lines = body.lines().map(|l| Ok(l.to_string()));
        prometheus_parse::Scrape::parse(lines).expect("Prometheus text")
    };
    let first = scrape();
    // Each task of count has its own series; capacity is a gauge per component.
    let count_tasks: std::collections::BTreeSet<&str> = first
        .samples
        .iter()
        .filter(|s| {
            s.metric == "storm_task_executed_total" && s.labels.get("component") == Some("count")
        })
        .filter_map(|s| s.labels.get("task"))
        .collect();
    assert_eq!(count_tasks.len(), 2, "{count_tasks:?}");
    let capacity = first
        .samples
        .iter()
        .find(|s| {
            s.metric == "storm_component_capacity" && s.labels.get("component") == Some("count")
        })
        .expect("a capacity gauge for count");
    assert!(
        matches!(capacity.value, prometheus_parse::Value::Gauge(_)),
        "{capacity:?}"
    );
    assert!(first
        .samples
        .iter()
        .all(|s| s.labels.get("topology") == Some("uitest")));
    let before = emitted(&first);
    eventually("the counter to grow", || {
        (emitted(&scrape()) > before).then_some(())
    });
}

/// Headless Chromium as Debian ships it (installed by .ci/run).
fn chromium() -> Command {
    let program = ["chromium", "chromium-browser"]
        .into_iter()
        .find(|p| {
            Command::new(p)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
        .expect("chromium is installed (.ci/run installs Debian's chromium)");
    let mut c = Command::new(program);
    c.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--no-first-run",
        "--hide-scrollbars",
    ]);
    c
}

/// The page's DOM after it ran its script for a while (virtual time).
fn dump_dom(url: &str, profile: &Path) -> String {
    let out = chromium()
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(["--virtual-time-budget=3000", "--dump-dom", url])
        .stderr(Stdio::null())
        .output()
        .expect("run chromium");
    assert!(out.status.success(), "chromium failed");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A screenshot of `url`; its size in bytes.
fn screenshot(url: &str, profile: &Path, file: &Path) -> usize {
    let out = chromium()
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(["--virtual-time-budget=3000", "--window-size=1200,900"])
        .arg(format!("--screenshot={}", file.display()))
        .arg(url)
        .stderr(Stdio::null())
        .output()
        .expect("run chromium");
    assert!(out.status.success(), "chromium failed");
    let png = std::fs::read(file).expect("the screenshot");
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "a PNG");
    png.len()
}

/// The number in the cell of class `class` in the row of component `id`.
fn cell_count(dom: &str, id: &str, class: &str) -> Option<u64> {
    let row = dom.split(&format!("<tr data-component=\"{id}\"")).nth(1)?;
    let row = row.split("</tr>").next()?;
    let cell = row.split(&format!("class=\"{class}\">")).nth(1)?;
    cell.split('<').next()?.trim().parse().ok()
}

#[test]
fn the_page_shows_components_and_their_counts_change_in_chromium() {
    let run = start_ui_run(&[]);
    let url = format!("http://{}/", run.addr);
    let profile = tempfile::tempdir().expect("tempdir");

    let first = dump_dom(&url, profile.path());
    assert!(first.contains("uitest"), "the topology's name is shown");
    for id in ["words", "count", "sink"] {
        assert!(
            cell_count(&first, id, "emitted").is_some(),
            "a row for {id}:\n{first}"
        );
    }
    // The graph is drawn: a box per component.
    assert!(
        first.contains("data-component=\"count\"></rect>"),
        "{first}"
    );
    let before = cell_count(&first, "words", "emitted").expect("emitted of words");
    eventually("the page to show a higher count", || {
        let dom = dump_dom(&url, profile.path());
        (cell_count(&dom, "words", "emitted")? > before).then_some(())
    });

    // A screenshot with content: far more than the same browser's shot of an empty page.
    let blank = screenshot(
        "about:blank",
        profile.path(),
        &profile.path().join("blank.png"),
    );
    let page = screenshot(&url, profile.path(), &profile.path().join("page.png"));
    assert!(page > 4 * blank, "page {page} bytes, blank {blank} bytes");
}

/// `storm top ARGS` in a pseudo-terminal (script(1)), with `envs`; ended by the guard even
/// when an assertion fails (its pseudo-terminal closing ends top).
struct Top {
    run: UiRun,
    typescript: std::path::PathBuf,
    stdin: std::process::ChildStdin,
}

impl Top {
    fn start(args: &str, envs: &[(&str, &Path)]) -> Top {
        let dir = tempfile::tempdir().expect("tempdir");
        let typescript = dir.path().join("top.out");
        let storm_bin = assert_cmd::cargo::cargo_bin("storm");
        let command = format!(
            "stty rows 30 cols 140; {} top {args} --interval 0.2",
            storm_bin.display()
        );
        let mut script = Command::new("script");
        script
            .args(["-q", "-e", "-c", &command])
            .arg(&typescript)
            .env("TERM", "xterm")
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        for (k, v) in envs {
            script.env(k, v);
        }
        let mut child = script.spawn().expect("script(1) is installed");
        let stdin = child.stdin.take().expect("stdin");
        Top {
            run: UiRun {
                child,
                addr: String::new(),
                _dir: dir,
            },
            typescript,
            stdin,
        }
    }

    /// What a terminal shows after the bytes written so far (vt100 plays them).
    fn screen(&self) -> String {
        let bytes = std::fs::read(&self.typescript).unwrap_or_default();
        let mut term = vt100::Parser::new(30, 140, 0);
        term.process(&bytes);
        term.screen().contents()
    }

    /// Wait until the screen shows every one of `words`; the screen.
    fn wait_for(&self, words: &[&str]) -> String {
        eventually(&format!("top to show {words:?}"), || {
            let text = self.screen();
            words.iter().all(|w| text.contains(w)).then_some(text)
        })
    }

    fn key(&mut self, k: &[u8]) {
        self.stdin.write_all(k).expect("send a key");
        self.stdin.flush().expect("flush");
    }

    /// `q`, then top must end well.
    fn quit(mut self) {
        self.key(b"q");
        let status = eventually("top to quit", || self.run.child.try_wait().ok().flatten());
        let mut err = String::new();
        if let Some(mut e) = self.run.child.stderr.take() {
            let _ = e.read_to_string(&mut err);
        }
        assert!(status.success(), "storm top failed: {err}");
    }
}

#[test]
fn storm_top_draws_the_components_in_a_terminal() {
    let run = start_ui_run(&[]);
    let mut top = Top::start(&format!("--ui {}", run.addr), &[]);
    let seen = top.wait_for(&["words", "count", "sink", "capacity", "sorted by id"]);
    assert!(seen.contains("uitest"), "the topology's name:\n{seen}");
    top.key(b"s");
    top.wait_for(&["sorted by rate"]);
    top.quit();
}

/// A port free right now on loopback.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

#[test]
fn nimbus_serves_the_ui_of_the_cluster_and_storm_deactivate_pauses_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("uitest.yaml");
    std::fs::write(&file, TOPOLOGY).expect("write the topology");
    let slots = format!("{},{}", free_port(), free_port());
    // Nimbus and its UI listen on ports they pick and report.
    let log = dir.path().join("nimbus.log");
    // Dropped in reverse order of declaration: the supervisor (and its workers) first.
    let _nimbus = spawn_daemon(
        storm()
            .args(["nimbus", "--listen", "127.0.0.1:0", "--data"])
            .arg(dir.path().join("nimbus"))
            .args(["-c", "ui.port=0"])
            .stderr(std::fs::File::create(&log).expect("a log file")),
    );
    let nimbus_addr = crate::support::nimbus_addr(&log);
    let ui = crate::support::nimbus_ui_addr(&log);
    let ui_port = ui
        .rsplit_once(':')
        .map(|(_, p)| p.to_string())
        .expect("port");
    eventually("nimbus's UI", || TcpStream::connect(&ui).ok());
    let _supervisor = spawn_daemon(
        storm()
            .args(["supervisor", "--nimbus", &nimbus_addr, "--slots", &slots])
            .stderr(Stdio::null()),
    );
    eventually("the supervisor", || {
        (get(&ui, "/api/v1/supervisor/summary")["supervisors"]
            .as_array()?
            .len()
            == 1)
            .then_some(())
    });
    let submitted = storm()
        .arg("submit")
        .arg(&file)
        .args(["--nimbus", &nimbus_addr])
        .output()
        .expect("storm submit");
    assert!(
        submitted.status.success(),
        "{}",
        String::from_utf8_lossy(&submitted.stderr)
    );
    let id = String::from_utf8_lossy(&submitted.stdout)
        .trim()
        .to_string();

    let t = eventually("heartbeats with counts", || {
        let t = get(&ui, &format!("/api/v1/topology/{id}"));
        (bolt(&t, "count")["executed"].as_u64()? > 0).then_some(t)
    });
    has_fields(&t, storm_fields::TOPOLOGY, "topology");
    assert_eq!(t["status"], "ACTIVE");
    assert_eq!(t["name"], "uitest");
    // A worker names its supervisor by the id the supervisor summary gives it.
    let supervisor = get(&ui, "/api/v1/supervisor/summary")["supervisors"][0]["id"].clone();
    assert!(supervisor.is_string(), "{supervisor}");
    assert!(
        t["workers"]
            .as_array()
            .is_some_and(|w| !w.is_empty() && w.iter().all(|w| w["supervisorId"] == supervisor)),
        "{}",
        t["workers"]
    );
    let cluster = get(&ui, "/api/v1/cluster/summary");
    assert_eq!(
        (
            cluster["supervisors"].as_u64(),
            cluster["topologies"].as_u64()
        ),
        (Some(1), Some(1))
    );

    let out = storm()
        .args(["deactivate", "uitest", "--nimbus", &nimbus_addr])
        .output()
        .expect("storm deactivate");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        get(&ui, &format!("/api/v1/topology/{id}"))["status"],
        "INACTIVE"
    );
    let out = storm()
        .args(["activate", "uitest", "--nimbus", &nimbus_addr])
        .output()
        .expect("storm activate");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        get(&ui, &format!("/api/v1/topology/{id}"))["status"],
        "ACTIVE"
    );
    // storm top --nimbus finds nimbus's UI at the ui.port of conf/storm.yaml.
    let conf = tempfile::tempdir().expect("tempdir");
    std::fs::write(
        conf.path().join("storm.yaml"),
        format!("ui.port: {ui_port}\n"),
    )
    .expect("write storm.yaml");
    let top = Top::start(
        &format!("--nimbus {nimbus_addr}"),
        &[("STORM_CONF_DIR", conf.path())],
    );
    top.wait_for(&["uitest", "count", "words"]);
    top.quit();
    // The workers still run (paused and resumed, not stopped): the spout's count grows.
    let emitted = |t: &Value| t["spouts"][0]["emitted"].as_u64().unwrap_or(0);
    let now = emitted(&get(&ui, &format!("/api/v1/topology/{id}")));
    eventually("the spout to emit after activate", || {
        (emitted(&get(&ui, &format!("/api/v1/topology/{id}"))) > now).then_some(())
    });
}

/// A daemon child, ended like a run when dropped.
/// Start a daemon; its standard error goes where `cmd` says.
fn spawn_daemon(cmd: &mut Command) -> UiRun {
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .spawn()
        .expect("start a daemon");
    UiRun {
        child,
        addr: String::new(),
        _dir: tempfile::tempdir().expect("tempdir"),
    }
}

/// JSON lines parsed, one error in three lines: `parse` emits on `default` and on `errors`.
const TAP_TOPOLOGY: &str = r#"
name: taptest
spouts:
  - id: lines
    type: generate
    args: { rate: 300, values: ['{"n": 1}', 'oops', '{"n": 2}'], fields: [line] }
bolts:
  - id: parse
    type: parse
    args: { format: json, fields: [n] }
  - id: good
    type: discard
  - id: bad
    type: discard
streams:
  - { from: lines, to: parse, grouping: shuffle }
  - { from: parse, to: good, grouping: shuffle }
  - { from: parse, to: bad, stream: errors, grouping: shuffle }
"#;

/// The first `n` lines `storm tap` prints with these arguments.
fn tap_lines(addr: &str, args: &[&str], n: usize) -> Vec<Value> {
    // Ended by the guard once the lines are read (or an assertion fails).
    let mut tap = UiRun {
        child: storm()
            .args(["tap", "taptest", "parse", "--ui", addr])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start storm tap"),
        addr: String::new(),
        _dir: tempfile::tempdir().expect("tempdir"),
    };
    let stdout = tap.child.stdout.take().expect("stdout piped");
    BufReader::new(stdout)
        .lines()
        .take(n)
        .map(|l| serde_json::from_str(&l.expect("a line")).expect("a JSON line"))
        .collect()
}

#[test]
fn tap_shows_the_tuples_of_the_chosen_stream() {
    let run = start_ui_run_of(TAP_TOPOLOGY, &[]);
    let errors = tap_lines(&run.addr, &["--stream", "errors"], 5);
    assert_eq!(errors.len(), 5);
    for e in &errors {
        assert_eq!(e["component"], "parse", "{e}");
        assert_eq!(e["stream"], "errors", "{e}");
        assert_eq!(e["values"][0], "oops", "the unreadable line: {e}");
    }
    let good = tap_lines(&run.addr, &["--stream", "default", "--sample", "0.5"], 5);
    assert_eq!(good.len(), 5);
    for g in &good {
        assert_eq!(g["stream"], "default", "{g}");
        assert!(
            g["values"] == serde_json::json!([1]) || g["values"] == serde_json::json!([2]),
            "{g}"
        );
    }
    // A stream the topology does not have: a clear error, with the near name.
    let out = storm()
        .args([
            "tap", "taptest", "parse", "--ui", &run.addr, "--stream", "error",
        ])
        .output()
        .expect("run storm tap");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no stream `error`") && err.contains("did you mean `errors`"),
        "{err}"
    );
    // A system component emits nothing of the topology's: said, not a silent wait.
    let out = storm()
        .args(["tap", "taptest", "__acker", "--ui", &run.addr])
        .output()
        .expect("run storm tap");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("is a system component"), "{err}");
    // storm top needs a terminal, and says so when it has none.
    let out = storm()
        .args(["top", "--ui", &run.addr])
        .stdin(Stdio::null())
        .output()
        .expect("run storm top");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("draws in a terminal"), "{err}");
}

#[test]
fn topology_debug_prints_every_emit_as_a_json_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("debug.yaml");
    std::fs::write(
        &file,
        "name: debugged\nconfig: { topology.debug: true }\nspouts:\n  - id: words\n    type: generate\n    args: { count: 3, values: [a, b, c] }\nbolts:\n  - id: sink\n    type: discard\nstreams:\n  - { from: words, to: sink, grouping: shuffle }\n",
    )
    .expect("write the topology");
    let out = storm()
        .arg("run")
        .arg(&file)
        .args(["--progress", "never"])
        .output()
        .expect("run storm");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    let mut words: Vec<String> = err
        .lines()
        .filter_map(|l| l.strip_prefix("debug: "))
        .map(|l| serde_json::from_str::<Value>(l).expect("a JSON line"))
        .filter(|v| v["component"] == "words")
        .map(|v| v["values"][0].as_str().unwrap_or("?").to_string())
        .collect();
    words.sort();
    assert_eq!(words, ["a", "b", "c"], "{err}");
}

#[test]
fn a_multilang_bolts_metrics_command_shows_in_prometheus_text() {
    let adapter = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("multilang/python");
    let dir = tempfile::tempdir().expect("tempdir");
    let script = dir.path().join("bolt.py");
    std::fs::write(
        &script,
        format!(
            "import sys\nsys.path.insert(0, {:?})\nimport storm\n\
             class B(storm.BasicBolt):\n    def process(self, t):\n        \
             storm.rpcMetrics('rows', 7)\nB().run()\n",
            adapter.display().to_string()
        ),
    )
    .expect("write the bolt");
    let topology = format!(
        "name: uitest\nspouts:\n  - id: gen\n    type: generate\n    args: {{ rate: 50, values: [x] }}\n\
         bolts:\n  - id: py\n    type: shell\n    command: [python3, {:?}]\n    fields: [out]\n\
         streams:\n  - {{ from: gen, to: py, grouping: shuffle }}\n",
        script.display().to_string()
    );
    let run = start_ui_run_of(&topology, &[]);
    let rows = eventually("the bolt's metric", || {
        let (_, body) = http(&run.addr, "GET", "/metrics", &[]);
        let scrape =
            prometheus_parse::Scrape::parse(body.lines().map(|l| Ok(l.to_string()))).ok()?;
        scrape
            .samples
            .into_iter()
            .find(|s| s.metric == "storm_user_metric" && s.labels.get("name") == Some("rows"))
    });
    assert_eq!(rows.labels.get("component"), Some("py"));
    assert!(
        matches!(rows.value, prometheus_parse::Value::Gauge(v) if v == 7.0),
        "{rows:?}"
    );
}

#[test]
fn processes_mode_serves_the_ui_of_its_worker_processes() {
    let run = start_ui_run(&["--processes"]);
    let a = run.addr.as_str();
    let summary = eventually("the topology", || {
        let list = get(a, "/api/v1/topology/summary");
        list["topologies"].as_array()?.first().cloned()
    });
    has_fields(&summary, storm_fields::TOPOLOGY_SUMMARY, "topology summary");
    let id = summary["id"].as_str().expect("an id").to_string();
    // Figures arrive with the workers' heartbeats.
    let t = eventually("counts from the worker processes", || {
        let t = get(a, &format!("/api/v1/topology/{id}"));
        (bolt(&t, "count")["executed"].as_u64()? > 0).then_some(t)
    });
    assert_eq!(t["workersTotal"], 2, "{t}");
    let ports: std::collections::BTreeSet<u64> = t["workers"]
        .as_array()
        .expect("workers")
        .iter()
        .filter_map(|w| w["port"].as_u64())
        .collect();
    assert_eq!(ports.len(), 2, "two worker processes: {t}");
}

/// A component's page says whether its emits are logged: its own `topology.debug` first,
/// else the topology's.
#[test]
fn a_components_debug_flag_is_its_own() {
    let run = start_ui_run_of(
        "name: dbg\nspouts:\n  - id: gen\n    type: generate\n    args: { rate: 50 }\nbolts:\n  - id: up\n    type: map\n    args: { set: { n: '1' } }\n    config: { topology.debug: true }\n  - id: sink\n    type: discard\nstreams:\n  - { from: gen, to: up }\n  - { from: up, to: sink }\n",
        &[],
    );
    let a = run.addr.as_str();
    let up = get(a, "/api/v1/topology/dbg/component/up");
    assert_eq!(up["debug"], true, "{up}");
    assert_eq!(up["samplingPct"], 100.0, "{up}");
    let sink = get(a, "/api/v1/topology/dbg/component/sink");
    assert_eq!(sink["debug"], false, "{sink}");
}
