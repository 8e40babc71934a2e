//! The `http` spout with real clients on loopback: Python's http.client posting NDJSON, JSON
//! arrays and CSV on kept-alive connections (with a bearer token from the environment, headers
//! and the client's address as fields); curl for the edges (health, 404/405/413). Overload:
//! several clients against a small queue see 429s, retry, and every record answered 200 comes
//! out exactly once. `ack: true` behind a `chaos` bolt failing some: 500s seen, retried, every
//! record of a request answered 200 came out. Slowloris: 300 connections holding half a request
//! do not stop a new client being served. `--processes` with two tasks sharing one port.

use super::support::poll_until;
use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A `storm run` serving a network spout: its stdout lines, its stderr, and the addresses its
/// tasks said they listen on (`… listening on SCHEME://ADDR…`).
pub(crate) struct Run {
    child: Child,
    lines: Arc<Mutex<Vec<String>>>,
    stderr: Arc<Mutex<String>>,
    stdout_reader: Option<std::thread::JoinHandle<()>>,
    stderr_reader: Option<std::thread::JoinHandle<()>>,
    pub(crate) addrs: Vec<String>,
}

impl Run {
    /// Start `storm ARGS` in `dir`, with `env`; wait for `listeners` addresses (none: do not
    /// wait).
    pub(crate) fn start(
        args: &[String],
        dir: &Path,
        env: &[(&str, &str)],
        listeners: usize,
    ) -> Run {
        let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("storm"));
        cmd.args(args)
            .current_dir(dir)
            .env("STORM_CONF_DIR", dir)
            .env_remove("STORM_LOG")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("storm runs");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let into = lines.clone();
        let out = child.stdout.take().expect("stdout piped");
        let stdout_reader = std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                into.lock().unwrap_or_else(|e| e.into_inner()).push(line);
            }
        });
        let stderr = Arc::new(Mutex::new(String::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let err = child.stderr.take().expect("stderr piped");
        let said = stderr.clone();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                if let Some((_, rest)) = line.split_once("listening on ") {
                    let addr = rest.split_once("://").map_or(rest, |(_, a)| a);
                    let addr = addr.split('/').next().unwrap_or(addr).to_string();
                    let _ = tx.send(addr);
                }
                let mut s = said.lock().unwrap_or_else(|e| e.into_inner());
                s.push_str(&line);
                s.push('\n');
            }
        });
        let mut run = Run {
            child,
            lines,
            stderr,
            stdout_reader: Some(stdout_reader),
            stderr_reader: Some(reader),
            addrs: Vec::new(),
        };
        for _ in 0..listeners {
            match rx.recv_timeout(Duration::from_secs(120)) {
                Ok(a) => run.addrs.push(a),
                Err(_) => panic!("the run did not listen; it said:\n{}", run.stderr()),
            }
        }
        run
    }

    pub(crate) fn addr(&self) -> &str {
        &self.addrs[0]
    }

    pub(crate) fn lines(&self) -> Vec<String> {
        self.lines.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub(crate) fn stderr(&self) -> String {
        self.stderr
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Wait for at least `n` output lines.
    pub(crate) fn wait_lines(&self, n: usize) -> Vec<String> {
        poll_until(
            &format!("{n} output lines"),
            Duration::from_secs(120),
            Duration::from_millis(20),
            || {
                let l = self.lines();
                (l.len() >= n).then_some(l)
            },
        )
    }

    /// Wait for the run to end on its own; its status (all its stderr read by then).
    pub(crate) fn wait_exit(&mut self) -> std::process::ExitStatus {
        let status = poll_until(
            "the run to end",
            Duration::from_secs(120),
            Duration::from_millis(20),
            || self.child.try_wait().ok().flatten(),
        );
        if let Some(r) = self.stderr_reader.take() {
            let _ = r.join();
        }
        status
    }

    /// SIGINT: the run drains and exits 0; its stderr.
    pub(crate) fn interrupt(self) -> String {
        self.finish().1
    }

    /// SIGINT: the run drains and exits 0; all its output lines and its stderr.
    pub(crate) fn finish(mut self) -> (Vec<String>, String) {
        crate::cluster::signal(self.child.id(), "-INT");
        let status = self.child.wait().expect("reaped");
        // Its output read to the end (a worker process still holding it is not waited for).
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let readers = [&self.stdout_reader, &self.stderr_reader];
        while readers
            .iter()
            .any(|r| r.as_ref().is_some_and(|r| !r.is_finished()))
            && std::time::Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(10));
        }
        let stderr = self.stderr();
        assert!(status.success(), "{status:?}: {stderr}");
        (self.lines(), stderr)
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn client_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/http/client.py")
}

/// One request for the Python client.
pub(crate) fn request(id: &str, body: &str, headers: &[(&str, &str)]) -> String {
    let headers: BTreeMap<&str, &str> = headers.iter().copied().collect();
    serde_json::json!({"id": id, "body": body, "headers": headers}).to_string()
}

/// Run the Python client: `client.py HOST PORT PATH MODE ARGS…` with `requests` on stdin.
pub(crate) fn client(addr: &str, path: &str, mode: &[&str], requests: &[String]) -> String {
    let (host, port) = addr.rsplit_once(':').expect("host:port");
    let mut child = Command::new("python3")
        .arg(client_script())
        .args([host, port, path])
        .args(mode)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 runs");
    let mut stdin = child.stdin.take().expect("stdin piped");
    stdin
        .write_all((requests.join("\n") + "\n").as_bytes())
        .expect("writes");
    drop(stdin);
    let out = child.wait_with_output().expect("client ends");
    assert!(
        out.status.success(),
        "client.py failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `curl` a URL: the status and the body.
pub(crate) fn curl(args: &[&str]) -> (u16, String) {
    let out = Command::new("curl")
        .args(["-s", "-w", "\n%{http_code}"])
        .args(args)
        .output()
        .expect("curl runs");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", &text));
    (code.trim().parse().unwrap_or(0), body.to_string())
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let file = dir.join(name);
    std::fs::write(&file, text).expect("writes");
    file.display().to_string()
}

/// The health path answers 200, another path 404, a GET on the records' path 405.
fn check_edges(addr: &str, auth: &str) {
    let (code, _) = curl(&[&format!("http://{addr}/health")]);
    assert_eq!(code, 200);
    let (code, _) = curl(&[&format!("http://{addr}/elsewhere")]);
    assert_eq!(code, 404);
    let (code, _) = curl(&[
        "-H",
        &format!("Authorization: {auth}"),
        &format!("http://{addr}/events"),
    ]);
    assert_eq!(code, 405, "GET on the records' path");
}

/// NDJSON, a JSON array and a pretty-printed value on one kept-alive connection, with the
/// token from the environment, a header and the client's address as fields; unreadable
/// lines counted in the answer; 401 without the token, which is never printed.
#[test]
fn records_posted_on_a_kept_alive_connection_come_out_with_headers_and_address() {
    let dir = tempfile::tempdir().expect("tempdir");
    let yaml = "name: ingest
spouts:
  - id: in
    type: http
    args:
      listen: 127.0.0.1:0
      path: /events
      token: {env: INGEST_TOKEN}
      format: json
      fields: [http_header_x_service, n, http_remote]
bolts:
  - id: out
    type: stdout
streams:
  - {from: in, to: out}
";
    let file = write(dir.path(), "t.yaml", yaml);
    let secret = "s3cret-token-value";
    let run = Run::start(
        &["run".into(), file],
        dir.path(),
        &[("INGEST_TOKEN", secret)],
        1,
    );
    let auth = format!("Bearer {secret}");
    let h = [("Authorization", auth.as_str()), ("X-Service", "api")];
    let requests = [
        request("ndjson", "{\"n\": 1}\n{\"n\": 2}\n", &h),
        request("array", "[{\"n\": 3}, {\"n\": 4}]", &h),
        request("pretty", "{\n  \"n\": 5\n}\n", &h),
        request("mixed", "{\"n\": 6}\nnot json\n", &h),
        request("bad", "nope\n", &h),
        request("no-token", "{\"n\": 7}\n", &[("X-Service", "api")]),
    ];
    let answers = client(run.addr(), "/events", &["once"], &requests);
    let status: BTreeMap<&str, &str> = answers
        .lines()
        .map(|l| {
            let mut f = l.splitn(3, ' ');
            (f.next().unwrap_or(""), f.next().unwrap_or(""))
        })
        .collect();
    let want: BTreeMap<&str, &str> = [
        ("ndjson", "200"),
        ("array", "200"),
        ("pretty", "200"),
        ("mixed", "200"),
        ("bad", "400"),
        ("no-token", "401"),
    ]
    .into_iter()
    .collect();
    assert_eq!(status, want, "{answers}");
    assert!(
        answers.contains("\"accepted\":1,\"rejected\":1"),
        "{answers}"
    );
    let lines = run.wait_lines(6);
    let mut ns: Vec<String> = Vec::new();
    for l in &lines {
        let f: Vec<&str> = l.split('\t').collect();
        assert_eq!(f.len(), 3, "{l}");
        assert_eq!(f[0], "api", "{l}");
        assert!(f[2].starts_with("127.0.0.1:"), "{l}");
        ns.push(f[1].to_string());
    }
    ns.sort();
    assert_eq!(ns, ["1", "2", "3", "4", "5", "6"]);
    check_edges(run.addr(), &auth);
    let stderr = run.interrupt();
    assert!(!stderr.contains(secret), "the token was printed: {stderr}");
}

/// CSV bodies each with their header line, on one connection, from a DSL topology.
#[test]
fn csv_bodies_are_read_each_with_its_header() {
    let dir = tempfile::tempdir().expect("tempdir");
    let topology =
        "http(listen=\"127.0.0.1:0\", format=csv, header=true, fields=[name, n]) | stdout";
    let run = Run::start(
        &["run".into(), "-e".into(), topology.into()],
        dir.path(),
        &[],
        1,
    );
    let requests = [
        request("a", "name,n\nx,1\ny,2\n", &[]),
        request("b", "name,n\nz,3\n", &[]),
    ];
    let answers = client(run.addr(), "/", &["once"], &requests);
    assert_eq!(answers.matches(" 200 ").count(), 2, "{answers}");
    let mut lines = run.wait_lines(3);
    lines.sort();
    assert_eq!(lines, ["x\t1", "y\t2", "z\t3"]);
    run.interrupt();
}

/// `n` requests of `per` JSON records each: the requests and every record's id.
fn numbered(n: usize, per: usize) -> (Vec<String>, BTreeSet<String>) {
    let mut ids = BTreeSet::new();
    let requests = (0..n)
        .map(|i| {
            let body: String = (0..per)
                .map(|j| {
                    let id = format!("r{i}-{j}");
                    ids.insert(id.clone());
                    format!("{{\"id\": \"{id}\"}}\n")
                })
                .collect();
            request(&format!("q{i}"), &body, &[])
        })
        .collect();
    (requests, ids)
}

/// Eight clients against a queue of 50 records and a slow bolt: 429s are seen; retried, every
/// request is answered 200 in the end, and the records out are exactly those sent.
#[test]
fn overload_is_answered_429_and_nothing_accepted_is_lost() {
    let dir = tempfile::tempdir().expect("tempdir");
    let topology =
        "http(listen=\"127.0.0.1:0\", path=/in, format=json, fields=[id], queue=50) | chaos(delay=1ms) | stdout";
    let run = Run::start(
        &[
            "run".into(),
            "-e".into(),
            topology.into(),
            "-c".into(),
            "topology.max.spout.pending=20".into(),
        ],
        dir.path(),
        &[],
        1,
    );
    let (requests, ids) = numbered(150, 10);
    let summary = client(run.addr(), "/in", &["until-ok", "8"], &requests);
    let summary: serde_json::Value = serde_json::from_str(summary.trim()).expect("json summary");
    let too_many = summary["statuses"]["429"].as_u64().unwrap_or(0);
    assert!(too_many > 0, "no 429 under overload: {summary}");
    assert_eq!(
        summary["ok"].as_array().map(Vec::len),
        Some(150),
        "{summary}"
    );
    let lines = run.wait_lines(ids.len());
    let got: Vec<&str> = lines.iter().map(String::as_str).collect();
    let unique: BTreeSet<String> = got.iter().map(|s| s.to_string()).collect();
    assert_eq!(unique, ids, "the records out are the records sent");
    assert_eq!(got.len(), ids.len(), "each once");
    run.interrupt();
}

/// `ack: true` behind `chaos` failing a fifth of the tuples: some requests are answered 500;
/// retried until 200, and every record of every request came out (at least once).
#[test]
fn with_ack_a_failed_tree_is_a_500_and_a_200_means_its_records_came_out() {
    let dir = tempfile::tempdir().expect("tempdir");
    let topology =
        "http(listen=\"127.0.0.1:0\", path=/in, format=json, fields=[id], ack=true) | chaos(fail=0.2, seed=7) | stdout";
    let run = Run::start(
        &["run".into(), "-e".into(), topology.into()],
        dir.path(),
        &[],
        1,
    );
    let (requests, ids) = numbered(60, 5);
    let summary = client(run.addr(), "/in", &["until-ok", "4"], &requests);
    let summary: serde_json::Value = serde_json::from_str(summary.trim()).expect("json summary");
    assert!(
        summary["statuses"]["500"].as_u64().unwrap_or(0) > 0,
        "no 500 with failures: {summary}"
    );
    assert_eq!(
        summary["ok"].as_array().map(Vec::len),
        Some(60),
        "{summary}"
    );
    // Every request was answered 200, so each of its records reached stdout before that.
    let got: BTreeSet<String> = run.lines().into_iter().collect();
    let missing: Vec<&String> = ids.difference(&got).collect();
    assert!(missing.is_empty(), "answered 200 but not out: {missing:?}");
    run.interrupt();
}

/// 300 connections that send half a request and wait do not stop a new client being served;
/// a body over `max_body` is answered 413.
#[test]
fn slowloris_connections_do_not_stop_others_and_big_bodies_are_413() {
    let dir = tempfile::tempdir().expect("tempdir");
    let topology = "http(listen=\"127.0.0.1:0\", max_body=1KB) | stdout";
    let run = Run::start(
        &["run".into(), "-e".into(), topology.into()],
        dir.path(),
        &[],
        1,
    );
    let mut held = Vec::new();
    for _ in 0..300 {
        let mut s = std::net::TcpStream::connect(run.addr()).expect("connects");
        s.write_all(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n")
            .expect("sends half a head");
        held.push(s);
    }
    let url = format!("http://{}/", run.addr());
    let (code, body) = curl(&["--data-binary", "hello", &url]);
    assert_eq!(code, 200, "{body}");
    assert_eq!(run.wait_lines(1), ["hello"]);
    let big = "x".repeat(2048);
    let (code, body) = curl(&["--data-binary", &big, &url]);
    assert_eq!(code, 413, "{body}");
    drop(held);
    run.interrupt();
}

/// Two tasks in two worker processes share one port: every request is answered and its
/// records come out.
#[test]
fn two_tasks_in_two_processes_share_the_port() {
    let dir = tempfile::tempdir().expect("tempdir");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let addr = format!("127.0.0.1:{port}");
    let topology = format!("http(listen=\"{addr}\", path=/in) x2 | stdout");
    let run = Run::start(
        &[
            "run".into(),
            "-e".into(),
            topology,
            "--processes".into(),
            "--workers".into(),
            "2".into(),
        ],
        dir.path(),
        &[],
        0,
    );
    poll_until(
        "the spout to answer its health path",
        Duration::from_secs(120),
        Duration::from_millis(50),
        || (curl(&[&format!("http://{addr}/health")]).0 == 200).then_some(()),
    );
    let mut want = BTreeSet::new();
    for i in 0..40 {
        let line = format!("line-{i}");
        let (code, body) = curl(&["--data-binary", &line, &format!("http://{addr}/in")]);
        assert_eq!(code, 200, "{body}");
        want.insert(line);
    }
    let got: BTreeSet<String> = run.wait_lines(40).into_iter().collect();
    assert_eq!(got, want);
    run.interrupt();
}

/// Exactly once end to end: a stateful `http(ack, idempotency_header) | file` run SIGKILLed at
/// random moments 8 times while a client posts 200 requests of 10 records, each with its own
/// key, sending each again until it is answered 200; every restart listens on the same port
/// with the same state dir. Each record is then in exactly one published file: a request
/// answered 200 was committed, one that was not is taken again without the records of it
/// that were.
#[test]
fn with_idempotency_keys_a_stateful_run_is_exact_through_sigkills() {
    use rand::{Rng, SeedableRng};
    let dir = tempfile::tempdir().expect("tempdir");
    let args = |listen: &str| -> Vec<String> {
        let topology = format!(
            "http(listen=\"{listen}\", path=/in, format=json, fields=[id, service], ack=true, \
             idempotency_header=Idempotency-Key) | chaos(delay=2ms, fail=0.02, seed=3) \
             | file(\"out/{{service}}/part.jsonl\", rotate={{records: 90}}) stateful=true"
        );
        ["run", "-e", &topology, "--state-dir", "state"]
            .iter()
            .map(|s| s.to_string())
            .chain([
                "-c".into(),
                "topology.state.checkpoint.interval.ms=100".into(),
            ])
            .collect()
    };
    let mut run = Run::start(&args("127.0.0.1:0"), dir.path(), &[], 1);
    let addr = run.addr().to_string();
    let (n, per) = (200, 10);
    let requests: Vec<String> = (0..n)
        .map(|r| {
            let body: String = (0..per)
                .map(|i| {
                    format!(
                        "{{\"id\": {}, \"service\": \"svc{}\"}}\n",
                        r * per + i,
                        i % 3
                    )
                })
                .collect();
            let key = format!("req-{r}");
            request(&key, &body, &[("Idempotency-Key", &key)])
        })
        .collect();
    let to = addr.clone();
    let posting = std::thread::spawn(move || client(&to, "/in", &["until-ok", "4"], &requests));
    let mut rng = rand::rngs::StdRng::seed_from_u64(5);
    for _ in 0..8 {
        std::thread::sleep(Duration::from_millis(rng.random_range(100..900)));
        drop(run);
        run = Run::start(&args(&addr), dir.path(), &[], 1);
    }
    let summary = posting.join().expect("the client ends");
    let summary: serde_json::Value = serde_json::from_str(summary.trim()).expect("json summary");
    assert_eq!(summary["ok"].as_array().map(Vec::len), Some(n), "{summary}");
    eprintln!("answers: {}", summary["statuses"]);
    run.interrupt();
    let mut counts = BTreeMap::new();
    let published = super::file_sink::files(&dir.path().join("out"));
    for p in published.values() {
        super::file_sink::ids(&std::fs::read_to_string(p).expect("reads"), &mut counts);
    }
    let twice: Vec<_> = counts.iter().filter(|(_, c)| **c > 1).collect();
    assert!(twice.is_empty(), "published more than once: {twice:?}");
    assert_eq!(counts.len(), n * per, "every record published");
}
