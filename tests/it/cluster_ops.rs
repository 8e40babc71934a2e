//! The operator's commands on nimbus + a supervisor with real processes: `storm set_log_level`
//! changes what a worker logs and the change ends with its timeout; worker logs are kept by
//! the supervisor (rotated), served at Storm's logviewer path and printed by `storm logs`;
//! `storm monitor` polls a component's throughput on one stream (and `set_log_level` through
//! a local run's UI).
//! Every process started here is ended by a guard, even when a test fails.

use crate::cluster::{client, eventually, free_port, storm, Daemons};
use std::io::Write;
use std::path::{Path, PathBuf};

/// Nimbus (its UI on a free port) and one supervisor with `slots` slots, both keeping worker
/// logs under `logs`; nimbus's address and its UI's.
fn cluster(
    daemons: &mut Daemons,
    dir: &Path,
    logs: &Path,
    slots: usize,
    extra: &[&str],
) -> (String, String) {
    let log_dir = format!("storm.log.dir={}", logs.display());
    let log = dir.join("nimbus.log");
    daemons.spawn_logged(
        "nimbus",
        storm()
            .env_remove("STORM_LOG")
            .args(["nimbus", "--listen", "127.0.0.1:0", "--data"])
            .arg(dir.join("nimbus"))
            .args(["-c", "nimbus.task.timeout.secs=3", "-c", &log_dir])
            .args(["-c", "ui.port=0"]),
        &log,
    );
    let addr = crate::support::nimbus_addr(&log);
    let ui = crate::support::nimbus_ui_addr(&log);
    eventually("nimbus to answer", || client(&["list", "--nimbus", &addr]));
    let ports: Vec<String> = (0..slots)
        .map(|_| free_port("127.0.0.1").to_string())
        .collect();
    daemons.spawn(
        "supervisor",
        storm()
            .env_remove("STORM_LOG")
            .args(["supervisor", "--nimbus", &addr, "--host", "127.0.0.1"])
            .args(["--slots", &ports.join(","), "-c", &log_dir])
            .args(extra),
    );
    eventually("the supervisor", || {
        let tree = client(&["zk", "dump", "--nimbus", &addr])?;
        tree.contains("/storm/supervisors/").then_some(())
    });
    (addr, ui)
}

/// Submit `file`; the topology's id.
fn submit(file: &Path, nimbus: &str) -> String {
    let out = storm()
        .arg("submit")
        .arg(file)
        .args(["--nimbus", nimbus])
        .output()
        .expect("storm submit");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Every worker log of topology `id` under `logs`, rotated ones included, concatenated.
fn worker_output(logs: &Path, id: &str) -> String {
    let mut text = String::new();
    let Ok(ports) = std::fs::read_dir(logs.join("workers-artifacts").join(id)) else {
        return text;
    };
    for port in ports.flatten() {
        for f in std::fs::read_dir(port.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            text += &std::fs::read_to_string(f.path()).unwrap_or_default();
        }
    }
    text
}

/// A topology whose python bolt (on Storm's `storm.py`) logs each tuple at DEBUG
/// (`storm.logDebug`) and appends it to `seen`.
fn debug_logging_topology(dir: &Path, seen: &Path) -> PathBuf {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/storm/multilang");
    std::fs::copy(fixtures.join("storm.py"), dir.join("storm.py")).expect("copy storm.py");
    std::fs::write(
        dir.join("debugger.py"),
        "import sys\nimport storm\n\n\
         class Debugger(storm.BasicBolt):\n\
         \x20   def initialize(self, conf, context):\n\
         \x20       self.out = open(sys.argv[1], 'a')\n\n\
         \x20   def process(self, tup):\n\
         \x20       storm.logDebug('seen %s' % tup.values[0])\n\
         \x20       self.out.write('%s\\n' % tup.values[0])\n\
         \x20       self.out.flush()\n\n\
         Debugger().run()\n",
    )
    .expect("write the bolt");
    let file = dir.join("debugged.yaml");
    std::fs::write(
        &file,
        format!(
            "name: debugged\n\
             spouts:\n  - id: words\n    type: generate\n    args: {{ rate: 40, values: [[a]] }}\n\
             bolts:\n  - id: debugger\n    type: shell\n    command: [python3, debugger.py, {}]\n    fields: [word]\n\
             streams:\n  - from: words\n    to: debugger\n    grouping: shuffle\n",
            seen.display()
        ),
    )
    .expect("write the topology");
    file
}

fn lines_of(path: &Path) -> usize {
    std::fs::read_to_string(path)
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

#[test]
fn set_log_level_turns_a_workers_debug_on_and_its_timeout_turns_it_off() {
    let dir = tempfile::tempdir().expect("tempdir");
    let sources = tempfile::tempdir().expect("tempdir");
    let seen = dir.path().join("seen.txt");
    let logs = dir.path().join("logs");
    let file = debug_logging_topology(sources.path(), &seen);
    let mut daemons = Daemons::default();
    let (addr, _) = cluster(&mut daemons, dir.path(), &logs, 1, &[]);
    let id = submit(&file, &addr);
    eventually("tuples through the bolt", || {
        (lines_of(&seen) > 0).then_some(())
    });
    assert!(
        !worker_output(&logs, &id).contains("seen a"),
        "DEBUG is off at start"
    );

    let out = storm()
        .args(["set_log_level", "debugged", "--nimbus", &addr])
        .args(["-l", "storm::components::shell=DEBUG:6"])
        .output()
        .expect("storm set_log_level");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("storm::components::shell=DEBUG ("), "{said}");

    // The level holds 6 s from when nimbus took it: time enough for a heartbeat to bring it
    // to the worker on a loaded machine.
    eventually("the worker logging at DEBUG", || {
        worker_output(&logs, &id).contains("seen a").then_some(())
    });
    let text = eventually("the level's timeout", || {
        let t = worker_output(&logs, &id);
        t.contains("timed out after 6s").then_some(t)
    });
    assert!(
        text.contains("log levels set: storm::components::shell=DEBUG"),
        "{text}"
    );
    // Once it timed out, tuples keep coming and none is logged.
    let at_revert = lines_of(&seen);
    eventually("40 more tuples", || {
        (lines_of(&seen) > at_revert + 40).then_some(())
    });
    let text = worker_output(&logs, &id);
    let after = text
        .split("timed out after 6s")
        .nth(1)
        .expect("the timeout line");
    assert!(!after.contains("seen a"), "{after}");

    // Nimbus lists nothing once the timeout passed; -r answers with what is left.
    let out = storm()
        .args(["set_log_level", "debugged", "--nimbus", &addr, "-r", "ROOT"])
        .output()
        .expect("storm set_log_level -r");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains("none (every logger at its starting level)"),
        "{said}"
    );

    // Refused before anything is sent: Java logger names name nothing here.
    let out = storm()
        .args(["set_log_level", "debugged", "--nimbus", &addr])
        .args(["-l", "org.apache.storm=DEBUG"])
        .output()
        .expect("storm set_log_level");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("module path"));
    let out = storm()
        .args(["set_log_level", "debuged", "--nimbus", &addr, "-r", "ROOT"])
        .output()
        .expect("storm set_log_level");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("did you mean `debugged`"));
}

/// A GET of the UI at `addr`: status and body as text.
fn get_text(addr: &str, path: &str, host: &str) -> (u16, String) {
    let mut s = std::net::TcpStream::connect(addr).expect("connect to the UI");
    write!(s, "GET {path} HTTP/1.0\r\nHost: {host}\r\n\r\n").expect("send");
    super::support::read_http_answer(&mut s)
}

const LOGGED: &str = "\
name: logged
config:
  topology.workers: 2
  topology.acker.executors: 0
spouts:
  - id: words
    type: generate
    args: { rate: 200, values: [[alpha], [beta]] }
bolts:
  - id: sink
    type: log
streams:
  - from: words
    to: sink
    grouping: shuffle
";

#[test]
fn worker_logs_are_kept_rotated_served_at_the_logviewer_path_and_printed_by_storm_logs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let logs = dir.path().join("logs");
    let file = dir.path().join("logged.yaml");
    std::fs::write(&file, LOGGED).expect("write the topology");
    let mut daemons = Daemons::default();
    let rotation = [
        "-c",
        "worker.log.max.bytes=4000",
        "-c",
        "worker.log.keep.files=2",
    ];
    let (addr, ui) = cluster(&mut daemons, dir.path(), &logs, 2, &rotation);
    let id = submit(&file, &addr);

    // The worker rows link their logs; the sink's worker writes each tuple into its log.
    let page = eventually("two workers with their log links", || {
        let (status, body) = get_text(&ui, &format!("/api/v1/topology/{id}"), &ui);
        let page: serde_json::Value = serde_json::from_str(&body).ok()?;
        (status == 200 && page["workers"].as_array()?.len() == 2).then_some(page)
    });
    let sink_worker = page["workers"]
        .as_array()
        .expect("workers")
        .iter()
        .find(|w| w["componentNumTasks"]["sink"].as_u64().is_some())
        .expect("the sink's worker")
        .clone();
    let port = sink_worker["port"].as_u64().expect("a port");
    let link = sink_worker["workerLogLink"]
        .as_str()
        .expect("a link")
        .to_string();
    assert_eq!(link, format!("/api/v1/log?file={id}%2F{port}%2Fworker.log"));
    let worker_dir = logs
        .join("workers-artifacts")
        .join(&id)
        .join(port.to_string());
    eventually("the sink's log rotated twice", || {
        worker_dir.join("worker.log.2").exists().then_some(())
    });
    let (status, tail) = eventually("the log read through the link", || {
        let (status, tail) = get_text(&ui, &format!("{link}&length=300"), &ui);
        (tail.contains("sink:")).then_some((status, tail))
    });
    assert_eq!(status, 200, "{tail}");
    assert!(tail.len() <= 300, "{} bytes", tail.len());
    assert!(
        !worker_dir.join("worker.log.3").exists(),
        "keeps 2 rotated files"
    );
    let current = std::fs::metadata(worker_dir.join("worker.log")).expect("the log");
    assert!(current.len() <= 4000 + 64 * 1024, "{}", current.len());
    let rotated = std::fs::read_to_string(worker_dir.join("worker.log.1")).expect("worker.log.1");
    assert!(rotated.contains("sink:") && rotated.len() <= 4000 + 64 * 1024);

    // Only worker logs can be named; other hosts' pages are refused as everywhere.
    let (status, body) = get_text(&ui, "/api/v1/log?file=..%2F..%2Fetc%2Fpasswd", &ui);
    assert_eq!(status, 400, "{body}");
    let (status, body) = get_text(&ui, &format!("/api/v1/log?file={id}%2F1%2Fworker.log"), &ui);
    assert_eq!(status, 404, "{body}");
    let (status, _) = get_text(&ui, &link, "evil.example");
    assert_eq!(status, 403);

    // `storm logs NAME` prints every worker's log; with a component, only its workers'.
    let out = storm()
        .args(["logs", "logged", "--nimbus", &addr, "--length", "500"])
        .output()
        .expect("storm logs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(text.matches("==> ").count(), 2, "{text}");
    let out = storm()
        .args(["logs", "logged", "sink", "--nimbus", &addr])
        .output()
        .expect("storm logs sink");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let header = format!("==> {id}/{port}/worker.log (127.0.0.1:{port}) <==");
    assert_eq!(text.matches("==> ").count(), 1, "{text}");
    assert!(
        text.starts_with(&header) && text.contains("sink:"),
        "{text}"
    );
    // `storm monitor` reads nimbus's UI (its ui.port) on a cluster.
    let ui_port = format!("ui.port={}", ui.rsplit(':').next().unwrap_or("0"));
    let (code, out, err) = monitor(&[
        "logged", "-m", "words", "-i", "1", "--count", "1", "--nimbus", &addr, "-c", &ui_port,
    ]);
    assert_eq!(code, Some(0), "{err}");
    let line = out.lines().nth(1).expect("a line");
    assert!(line.starts_with("logged\twords\t1\tdefault\t"), "{line}");
    let emitted: u64 = line
        .split('\t')
        .nth(5)
        .and_then(|e| e.parse().ok())
        .expect("emitted");
    assert!(emitted > 0, "{line}");

    let out = storm()
        .args(["logs", "logged", "snk", "--nimbus", &addr])
        .output()
        .expect("storm logs snk");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("did you mean `sink`"));
}

const TWO_STREAMS: &str = r#"
name: streams
spouts:
  - id: lines
    type: generate
    args: { rate: 200, values: [["{\"n\": 1}"], ["{\"n\": 2}"], ["oops"]] }
    fields: [line]
bolts:
  - id: parse
    type: parse
    args: { format: json, fields: [n] }
  - id: good
    type: discard
  - id: bad
    type: discard
streams:
  - from: lines
    to: parse
    grouping: shuffle
  - from: parse
    to: good
    grouping: shuffle
  - from: parse
    to: bad
    stream: errors
    grouping: shuffle
"#;

/// `storm monitor` with `args`; its exit code, stdout and stderr.
fn monitor(args: &[&str]) -> (Option<i32>, String, String) {
    let out = storm()
        .arg("monitor")
        .args(args)
        .output()
        .expect("storm monitor");
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code(), text(&out.stdout), text(&out.stderr))
}

#[test]
fn monitor_polls_a_components_throughput_on_one_stream_of_a_local_run() {
    let run = crate::ui::start_ui_run_of(TWO_STREAMS, &[]);
    let ui = run.addr.as_str();
    let (code, out, err) = monitor(&[
        "streams", "-m", "parse", "-s", "errors", "-i", "1", "--count", "2", "--ui", ui,
    ]);
    assert_eq!(code, Some(0), "{err}");
    // Every line past the header counts tuples on `errors` (one line in three is not JSON).
    for line in out.lines().skip(1) {
        let cells: Vec<&str> = line.split('\t').collect();
        assert_eq!(cells[3], "errors", "{line}");
        assert!(cells[5].parse::<u64>().expect("emitted") > 0, "{line}");
        assert!(cells[7].parse::<f64>().expect("throughput") > 0.0, "{line}");
    }
    insta::with_settings!({filters => vec![(r"\t[0-9]+(\.[0-9])?", "\t[N]")]}, {
        insta::assert_snapshot!(out, @r"
        topology	component	parallelism	stream	time-diff ms	emitted	transferred	throughput (Avg. Tuple/s)
        streams	parse	[N]	errors	[N]	[N]	[N]	[N]
        streams	parse	[N]	errors	[N]	[N]	[N]	[N]
        ");
    });

    // The per-stream counters behind it: both streams of `parse`, two good lines in three.
    let (_, body) = get_text(ui, "/api/v1/topology/streams/component/parse", ui);
    let page: serde_json::Value = serde_json::from_str(&body).expect("JSON");
    let rows = page["outputStats"].as_array().expect("outputStats");
    let count = |s: &str| {
        rows.iter()
            .find(|r| r["stream"] == s)
            .and_then(|r| r["emitted"].as_u64())
            .unwrap_or_else(|| panic!("no stream {s}: {page}"))
    };
    let (good, bad) = (count("default"), count("errors"));
    assert!(bad > 0 && good >= bad, "{page}");
    let total: u64 = page["boltStats"][0]["emitted"].as_u64().expect("emitted");
    assert!(total >= good + bad, "{page}");

    // `storm set_log_level --ui` changes a local run's levels through its UI.
    let out = storm()
        .args([
            "set_log_level",
            "streams",
            "--ui",
            ui,
            "-l",
            "storm::runtime=INFO:60",
        ])
        .output()
        .expect("storm set_log_level --ui");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(said.contains("log levels of streams (streams-1-"), "{said}");
    assert!(said.contains("storm::runtime=INFO ("), "{said}");
    let (_, body) = get_text(ui, "/api/v1/topology/streams/logconfig", ui);
    let levels: serde_json::Value = serde_json::from_str(&body).expect("JSON");
    let set = &levels["namedLoggerLevels"]["storm::runtime"];
    assert_eq!(
        (&set["target_level"], &set["timeout"]),
        (&"INFO".into(), &60.into()),
        "{levels}"
    );
    assert!(
        set["timeout_epoch"].as_u64().expect("an epoch") > 0,
        "{levels}"
    );
    assert!(set["reset_level"].is_null(), "{levels}");

    // Unknown names: a clear error with what there is.
    let (code, _, err) = monitor(&["streams", "-m", "pars", "-i", "1", "--ui", ui]);
    assert_eq!(code, Some(1));
    assert!(
        err.contains("no component `pars`; did you mean `parse`?"),
        "{err}"
    );
    let (code, _, err) = monitor(&["streams", "-m", "parse", "-s", "error", "--ui", ui]);
    assert_eq!(code, Some(1));
    assert!(
        err.contains(
            "no output stream `error` (its streams: default, errors); did you mean `errors`?"
        ),
        "{err}"
    );
}
