//! The `http` sink against a real HTTP server on loopback: a Python child
//! (`tests/fixtures/http_sink/receiver.py`) that fails a fraction of requests with 500, 429
//! (`Retry-After`) and 503-after-taking, and delays others. Every record arrives at least
//! once; keeping one batch per idempotency key, exactly once; a 4xx sends the records to the
//! `errors` stream; a stateful sink SIGKILLed and restarted keeps its keys; the token reaches
//! the server and never the logs.

use super::support::poll_until;
use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The receiver, up until dropped (its standard input closes).
struct Receiver {
    child: Child,
    port: u16,
    log: PathBuf,
}

impl Receiver {
    fn start(dir: &Path, flaky: bool) -> Receiver {
        let log = dir.join("received.jsonl");
        let script =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/http_sink/receiver.py");
        let mut child = Command::new("python3")
            .arg(script)
            .arg(&log)
            .arg(if flaky { "flaky" } else { "steady" })
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("python3 runs the receiver");
        let mut line = String::new();
        let out = child.stdout.take().expect("stdout piped");
        BufReader::new(out)
            .read_line(&mut line)
            .expect("reads the port");
        let port = line
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("the receiver said {line:?}"));
        Receiver { child, port, log }
    }

    /// Every batch taken: (key, authorization, content type, body). A line the receiver is
    /// still writing (no line end yet) is left for the next look.
    fn batches(&self) -> Vec<(String, Option<String>, String, String)> {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let complete = text.rfind('\n').map_or("", |end| &text[..end]);
        complete
            .lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).expect("a log line");
                let s = |k: &str| v[k].as_str().map(str::to_string);
                (
                    s("key").unwrap_or_default(),
                    s("auth"),
                    s("type").unwrap_or_default(),
                    s("body").unwrap_or_default(),
                )
            })
            .collect()
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.wait();
    }
}

/// `n` JSON records, one a line.
fn input(dir: &Path, n: usize) -> PathBuf {
    let path = dir.join("in.jsonl");
    let text: String = (0..n)
        .map(|i| format!("{{\"id\":{i},\"service\":\"s{}\"}}\n", i % 3))
        .collect();
    std::fs::write(&path, text).expect("writes the input");
    path
}

fn topology(dir: &Path, input: &Path, sink_args: &str, extra: &str) -> PathBuf {
    let yaml = format!(
        "name: http-sink
spouts:
  - {{id: in, type: file, args: {{path: \"{}\", format: json, fields: [id, service]}}}}
bolts:
  - {{id: out, type: http, args: {sink_args}}}
{extra}streams:
  - {{from: in, to: out}}
",
        input.display()
    );
    let file = dir.join("topology.yaml");
    std::fs::write(&file, yaml).expect("writes the topology");
    file
}

fn storm(args: &[&str], dir: &Path) -> std::process::Output {
    Command::new(assert_cmd::cargo::cargo_bin("storm"))
        .args(args)
        .current_dir(dir)
        .env_remove("STORM_LOG")
        .stdin(Stdio::null())
        .output()
        .expect("storm runs")
}

/// The ids in NDJSON bodies, counted.
fn ids(bodies: impl Iterator<Item = String>) -> BTreeMap<i64, usize> {
    let mut out = BTreeMap::new();
    for b in bodies {
        for line in b.lines() {
            let v: serde_json::Value = serde_json::from_str(line).expect("a whole JSON record");
            *out.entry(v["id"].as_i64().expect("an id")).or_insert(0) += 1;
        }
    }
    out
}

/// Through 500s, 429s with `Retry-After`, 503s after the batch was taken and slow answers:
/// every record arrives at least once, some more than once (a retried batch the server had
/// taken), and exactly once keeping the first batch of each idempotency key.
#[test]
fn every_record_arrives_and_keys_make_it_exactly_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let rx = Receiver::start(dir.path(), true);
    let n = 3000;
    let inp = input(dir.path(), n);
    let args = format!(
        "{{url: \"http://127.0.0.1:{}/in\", batch: {{max_records: 40, timeout: 50ms}}, concurrency: 4, retry: {{attempts: 30, initial: 20ms, max: 500ms}}}}",
        rx.port
    );
    let file = topology(dir.path(), &inp, &args, "");
    let out = storm(&["run", &file.display().to_string()], dir.path());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let batches = rx.batches();
    let all = ids(batches.iter().map(|b| b.3.clone()));
    assert_eq!(all.len(), n, "every record at least once");
    let dupes = all.values().filter(|c| **c > 1).count();
    assert!(
        dupes > 0,
        "the 503-after-taking answers made no retry of a taken batch"
    );
    let mut seen = BTreeSet::new();
    let once = ids(batches
        .iter()
        .filter(|b| seen.insert(b.0.clone()))
        .map(|b| b.3.clone()));
    assert_eq!(once.len(), n);
    assert!(
        once.values().all(|c| *c == 1),
        "one batch per key holds each record once"
    );
    assert!(batches
        .iter()
        .all(|b| b.2 == "application/x-ndjson" && !b.0.is_empty()));
}

/// A 4xx answer is not retried: the batch's records go to the sink's `errors` stream, with
/// the status and the server's reason.
#[test]
fn a_4xx_sends_the_records_to_the_errors_stream() {
    let dir = tempfile::tempdir().expect("tempdir");
    let rx = Receiver::start(dir.path(), false);
    let inp = input(dir.path(), 25);
    let args = format!(
        "{{url: \"http://127.0.0.1:{}/reject\", batch: {{max_records: 10}}}}",
        rx.port
    );
    let extra = "  - {id: bad, type: stdout, args: {format: tsv}}\n";
    let file = topology(dir.path(), &inp, &args, extra);
    let yaml = std::fs::read_to_string(&file).expect("reads")
        + "  - {from: out, to: bad, stream: errors}\n";
    std::fs::write(&file, yaml).expect("writes");
    let out = storm(&["run", &file.display().to_string()], dir.path());
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines.len(),
        25,
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        lines
            .iter()
            .all(|l| l.ends_with("\tHTTP 400: bad record shape")),
        "{stdout}"
    );
    // Batches are sent concurrently: their errors come out in any order, each record once.
    let mut ids: Vec<i64> = lines
        .iter()
        .filter_map(|l| l.split('\t').next())
        .filter_map(|r| serde_json::from_str::<serde_json::Value>(r).ok())
        .filter_map(|v| v["id"].as_i64())
        .collect();
    ids.sort_unstable();
    assert_eq!(ids, (0..25).collect::<Vec<i64>>(), "{stdout}");
    assert!(rx.batches().is_empty());
}

/// `token: ${VAR}` is read from the environment and sent as a bearer token; it appears in no
/// log line, even at debug level. An unset variable is a clear error.
#[test]
fn the_token_comes_from_the_environment_and_is_never_logged() {
    let dir = tempfile::tempdir().expect("tempdir");
    let rx = Receiver::start(dir.path(), false);
    let inp = input(dir.path(), 5);
    let args = format!(
        "{{url: \"http://127.0.0.1:{}/in\", token: \"${{STORM_HTTP_TEST_TOKEN}}\", headers: {{X-Team: ops}}}}",
        rx.port
    );
    let file = topology(dir.path(), &inp, &args, "");
    let out = Command::new(assert_cmd::cargo::cargo_bin("storm"))
        .args(["run", &file.display().to_string()])
        .env("STORM_HTTP_TEST_TOKEN", "t0ps3cr3t")
        .env("STORM_LOG", "debug")
        .output()
        .expect("storm runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let logs =
        String::from_utf8_lossy(&out.stderr).to_string() + &String::from_utf8_lossy(&out.stdout);
    assert!(!logs.contains("t0ps3cr3t"), "the token was printed");
    let batches = rx.batches();
    assert!(!batches.is_empty());
    assert!(batches
        .iter()
        .all(|b| b.1.as_deref() == Some("Bearer t0ps3cr3t")));
    let out = storm(&["run", &file.display().to_string()], dir.path());
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("the environment variable `STORM_HTTP_TEST_TOKEN` is not set"),
        "{err}"
    );
}

/// With `stateful: true`, a run SIGKILLed mid-way and resumed from its state dir sends again
/// the batches of its last checkpoint under the same keys: keeping one batch per key, each
/// record arrives exactly once.
#[test]
fn a_stateful_sink_keeps_its_keys_across_sigkills() {
    let dir = tempfile::tempdir().expect("tempdir");
    let rx = Receiver::start(dir.path(), true);
    let n = 4000;
    let inp = input(dir.path(), n);
    let args = format!(
        "{{url: \"http://127.0.0.1:{}/in\", batch: {{max_records: 25}}, retry: {{attempts: 50, initial: 20ms, max: 300ms}}}}",
        rx.port
    );
    let extra = "  - {id: slow, type: chaos, args: {delay: 1ms}}\n";
    let file = topology(dir.path(), &inp, &args, extra);
    let yaml = std::fs::read_to_string(&file)
        .expect("reads")
        .replace(
            "  - {from: in, to: out}\n",
            "  - {from: in, to: slow}\n  - {from: slow, to: out}\n",
        )
        .replace("type: http, args:", "type: http, stateful: true, args:");
    std::fs::write(&file, yaml).expect("writes");
    let state = dir.path().join("state");
    let run = |kill: bool| {
        let mut child = Command::new(assert_cmd::cargo::cargo_bin("storm"))
            .args([
                "run",
                &file.display().to_string(),
                "--state-dir",
                &state.display().to_string(),
            ])
            .args(["-c", "topology.state.checkpoint.interval.ms=200"])
            .env_remove("STORM_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("storm runs");
        if kill {
            // Once some batches arrived (a checkpoint committed), kill.
            let before = rx.batches().len();
            poll_until(
                "batches to arrive",
                Duration::from_secs(60),
                Duration::from_millis(20),
                || (rx.batches().len() > before + 3).then_some(()),
            );
            let _ = child.kill();
        }
        child.wait_with_output().expect("waits")
    };
    for _ in 0..3 {
        run(true);
    }
    let out = run(false);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let batches = rx.batches();
    let mut seen = BTreeSet::new();
    let once = ids(batches
        .iter()
        .filter(|b| seen.insert(b.0.clone()))
        .map(|b| b.3.clone()));
    assert_eq!(once.len(), n, "every record");
    let twice: Vec<_> = once.iter().filter(|(_, c)| **c > 1).collect();
    assert!(
        twice.is_empty(),
        "records in two keys: {:?}",
        &twice[..twice.len().min(5)]
    );
}
