//! What a Storm operator reaches for, through real processes: metrics reporters sending to
//! Debian's Graphite (carbon-cache, read back from its whisper files), CSV files and stderr,
//! and `/metrics` scraped by Debian's Prometheus.

use crate::cluster::{free_port, storm};
use crate::support::{poll_until, ui_address};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(90);
const EVERY: Duration = Duration::from_millis(250);

/// A daemon child, ended (SIGTERM, then SIGKILL) when dropped.
struct Daemon(Child);

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.0.id().to_string()])
            .status();
        for _ in 0..100 {
            if let Ok(Some(_)) = self.0.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Whether something listens on `127.0.0.1:port`.
fn listening(port: u16) -> bool {
    TcpStream::connect(("127.0.0.1", port)).is_ok()
}

/// Debian's carbon-cache on a free line-receiver port, its configuration and whisper files under
/// `dir`, one-second points kept for an hour. Fails (never skips) when it is not installed.
fn start_carbon(dir: &Path) -> (Daemon, u16) {
    let (line, pickle, query) = (
        free_port("127.0.0.1"),
        free_port("127.0.0.1"),
        free_port("127.0.0.1"),
    );
    let d = dir.display();
    let conf = format!(
        "[cache]\nSTORAGE_DIR = {d}/storage\nLOCAL_DATA_DIR = {d}/storage/whisper\n\
         WHITELISTS_DIR = {d}/storage/lists\nLOG_DIR = {d}/log\nPID_DIR = {d}/storage\n\
         ENABLE_LOGROTATION = False\nENABLE_TAGS = False\nUSER =\n\
         LINE_RECEIVER_INTERFACE = 127.0.0.1\nLINE_RECEIVER_PORT = {line}\nENABLE_UDP_LISTENER = False\n\
         PICKLE_RECEIVER_INTERFACE = 127.0.0.1\nPICKLE_RECEIVER_PORT = {pickle}\n\
         CACHE_QUERY_INTERFACE = 127.0.0.1\nCACHE_QUERY_PORT = {query}\n\
         MAX_CACHE_SIZE = inf\nMAX_UPDATES_PER_SECOND = inf\nMAX_CREATES_PER_MINUTE = inf\n"
    );
    for sub in ["conf", "storage", "log"] {
        std::fs::create_dir_all(dir.join(sub)).expect("make carbon's folders");
    }
    std::fs::write(dir.join("conf/carbon.conf"), conf).expect("write carbon.conf");
    std::fs::write(
        dir.join("conf/storage-schemas.conf"),
        "[all]\npattern = .*\nretentions = 1s:1h\n",
    )
    .expect("write storage-schemas.conf");
    let child = Command::new("carbon-cache")
        .arg(format!("--config={d}/conf/carbon.conf"))
        .args(["--nodaemon", "start"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("carbon-cache (Debian's graphite-carbon) must be installed: apt-get install graphite-carbon");
    let carbon = Daemon(child);
    poll_until("carbon-cache to listen", WAIT, EVERY, || {
        listening(line).then_some(())
    });
    (carbon, line)
}

/// Every whisper file under `dir` whose name ends with `suffix`.
fn whisper_files(dir: &Path, suffix: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                todo.push(p);
            } else if p.to_string_lossy().ends_with(suffix) {
                found.push(p);
            }
        }
    }
    found
}

/// The values a whisper file holds (its empty points left out), read with `whisper-fetch`.
fn whisper_values(file: &Path) -> Vec<f64> {
    let out = Command::new("whisper-fetch")
        .arg("--from=0")
        .arg(file)
        .output()
        .expect("whisper-fetch (Debian's graphite-carbon) must be installed");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().nth(1)?.parse().ok())
        .collect()
}

#[test]
fn reporters_send_to_graphite_csv_files_and_stderr() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (_carbon, port) = start_carbon(&dir.path().join("carbon"));
    let csv_dir = dir.path().join("csv");
    let file = dir.path().join("reported.yaml");
    std::fs::write(
        &file,
        format!(
            "name: reported\n\
             config:\n  topology.metrics.reporters:\n\
             \x20   - class: org.apache.storm.metrics2.reporters.GraphiteStormReporter\n\
             \x20     graphite.host: 127.0.0.1\n      graphite.port: {port}\n\
             \x20     graphite.prefixed.with: ittest\n      report.period: 1\n\
             \x20     report.period.units: SECONDS\n\
             \x20   - class: csv\n      csv.log.dir: {}\n\
             \x20     filter: {{ expression: 'gen' }}\n\
             \x20   - class: console\n      report.period: 1\n      report.period.units: MINUTES\n\
             spouts:\n  - id: gen\n    type: generate\n    args: {{ count: 5000, values: [[a], [b]] }}\n\
             bolts:\n  - id: sink\n    type: discard\n\
             streams:\n  - from: gen\n    to: sink\n    grouping: shuffle\n",
            csv_dir.display()
        ),
    )
    .expect("write the topology");
    let out = storm()
        .arg("run")
        .arg(&file)
        .args(["--progress", "never"])
        .stdin(Stdio::null())
        .output()
        .expect("run storm");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "storm run failed:\n{stderr}");

    // Console: the last reading, on stderr, names the spout's emits with Storm's layout.
    let line = stderr
        .lines()
        .find(|l| l.contains(".gen.") && l.contains("-__emit-count = "))
        .unwrap_or_else(|| panic!("no console reading of gen's emits:\n{stderr}"));
    assert!(
        line.trim().starts_with("storm.topology.reported-1-"),
        "{line}"
    );
    assert!(line.ends_with("= 5000"), "{line}");

    // CSV: one file per metric, only those the filter keeps, the last row the final count.
    let names: Vec<String> = std::fs::read_dir(&csv_dir)
        .expect("the csv reporter's folder")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names
            .iter()
            .all(|n| n.contains(".gen.") && n.ends_with(".csv")),
        "{names:?}"
    );
    let emits = names
        .iter()
        .find(|n| n.ends_with("-__emit-count.csv"))
        .unwrap_or_else(|| panic!("no emit-count file in {names:?}"));
    let text = std::fs::read_to_string(csv_dir.join(emits)).expect("read the csv file");
    assert!(text.starts_with("t,count\n"), "{text}");
    assert!(text.trim_end().ends_with(",5000"), "{text}");

    // Graphite: the final count lands in carbon's whisper file for the spout's emits.
    let whisper = dir
        .path()
        .join("carbon/storage/whisper/ittest/storm/topology");
    poll_until(
        "gen's emit count in carbon's whisper files",
        WAIT,
        EVERY,
        || {
            let files = whisper_files(&whisper, "-__emit-count.wsp");
            let gen = files
                .iter()
                .find(|f| f.to_string_lossy().contains("/gen/"))?;
            whisper_values(gen).contains(&5000.0).then_some(())
        },
    );
}

#[test]
fn a_bad_reporter_is_refused_before_the_run_starts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("bad.yaml");
    std::fs::write(
        &file,
        "name: bad\nconfig:\n  topology.metrics.reporters:\n    - class: graphite\n\
         spouts:\n  - id: gen\n    type: generate\n    args: { count: 1, values: [[a]] }\n\
         bolts:\n  - id: sink\n    type: discard\n\
         streams:\n  - from: gen\n    to: sink\n    grouping: shuffle\n",
    )
    .expect("write the topology");
    let out = storm().arg("run").arg(&file).output().expect("run storm");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("topology.metrics.reporters[0]: `graphite.host` is missing"),
        "{stderr}"
    );
}

/// One HTTP/1.0 GET: the body when the status is 200.
fn get(addr: &str, path: &str) -> Option<String> {
    let mut s = TcpStream::connect(addr).ok()?;
    let req = format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n");
    s.write_all(req.as_bytes()).ok()?;
    let mut raw = String::new();
    s.read_to_string(&mut raw).ok()?;
    let (head, body) = raw.split_once("\r\n\r\n")?;
    (head.split_whitespace().nth(1) == Some("200")).then(|| body.to_string())
}

#[test]
fn prometheus_scrapes_the_metrics_of_a_local_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("scraped.yaml");
    std::fs::write(
        &file,
        "name: scraped\n\
         spouts:\n  - id: words\n    type: generate\n    args: { rate: 200, values: [[a], [b]] }\n\
         bolts:\n  - id: sink\n    type: discard\n\
         streams:\n  - from: words\n    to: sink\n    grouping: shuffle\n",
    )
    .expect("write the topology");
    let mut child = storm()
        .arg("run")
        .arg(&file)
        .args(["--ui", "127.0.0.1:0", "--progress", "never"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start storm run --ui");
    let ui = ui_address(&mut child, WAIT);
    let _run = Daemon(child);

    let prom_port = free_port("127.0.0.1");
    let config = dir.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n\
             scrape_configs:\n  - job_name: storm\n    static_configs:\n      - targets: ['{ui}']\n"
        ),
    )
    .expect("write prometheus.yml");
    let prom = Command::new("prometheus")
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.path().join("tsdb").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{prom_port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("prometheus (Debian's package) must be installed: apt-get install prometheus");
    let _prom = Daemon(prom);

    let addr = format!("127.0.0.1:{prom_port}");
    let query = "/api/v1/query?query=storm_task_emitted_total%7Bcomponent%3D%22words%22%7D";
    let value = poll_until("the spout's emits in Prometheus", WAIT, EVERY, || {
        let body: serde_json::Value = serde_json::from_str(&get(&addr, query)?).ok()?;
        let v = body["data"]["result"][0]["value"][1]
            .as_str()?
            .parse::<f64>()
            .ok()?;
        (v > 0.0).then_some(v)
    });
    assert!(value > 0.0);
    let body = get(&addr, "/api/v1/query?query=up%7Bjob%3D%22storm%22%7D").expect("query up");
    assert!(body.contains("\"1\""), "the UI's target is up: {body}");
}

/// One HTTP/1.0 POST of a JSON body: the status and the body.
fn post_json(addr: &str, path: &str, body: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).expect("connect to the UI");
    let req = format!(
        "POST {path} HTTP/1.0\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).expect("send the request");
    super::support::read_http_answer(&mut s)
}

#[test]
fn logconfig_changes_what_a_local_run_logs() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("logged.yaml");
    std::fs::write(
        &file,
        "name: logged\n\
         spouts:\n  - id: words\n    type: generate\n    args: { rate: 50, values: [[a]] }\n\
         bolts:\n  - id: sink\n    type: discard\n\
         streams:\n  - from: words\n    to: sink\n    grouping: shuffle\n",
    )
    .expect("write the topology");
    let mut child = storm()
        .arg("run")
        .arg(&file)
        .args(["--ui", "127.0.0.1:0", "--progress", "never"])
        .env_remove("STORM_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start storm run --ui");
    let stderr = child.stderr.take().expect("stderr piped");
    let _run = Daemon(child);
    let (tx, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            let _ = tx.send(line);
        }
    });
    let next_line = |what: &str| {
        lines
            .recv_timeout(WAIT)
            .unwrap_or_else(|_| panic!("stderr ended or stalled waiting for {what}"))
    };
    let ui = loop {
        let line = next_line("the UI address");
        if let Some(rest) = line.strip_prefix("ui: http://") {
            break rest.trim_end_matches('/').to_string();
        }
    };
    let topologies = get(&ui, "/api/v1/topology/summary").expect("the topology summary");
    let summary: serde_json::Value = serde_json::from_str(&topologies).expect("JSON");
    let id = summary["topologies"][0]["id"]
        .as_str()
        .expect("an id")
        .to_string();
    let path = format!("/api/v1/topology/{id}/logconfig");

    // At ERROR the run's own info line about the change is not written; at INFO it is, and it
    // is the first such line (so the ERROR one was held back).
    let (status, body) = post_json(
        &ui,
        &path,
        r#"{"namedLoggerLevels": {"storm": {"target_level": "ERROR"}}}"#,
    );
    assert_eq!(status, 200, "{body}");
    let (status, body) = post_json(
        &ui,
        &path,
        r#"{"namedLoggerLevels": {"storm": {"target_level": "INFO"}}}"#,
    );
    assert_eq!(status, 200, "{body}");
    let line = loop {
        let line = next_line("the info line of the change");
        if line.contains("log levels set") {
            break line;
        }
    };
    assert!(line.contains("INFO") && !line.contains("ERROR"), "{line}");

    // A logger that cannot be a module path is refused, and nothing changes.
    let (status, body) = post_json(
        &ui,
        &path,
        r#"{"namedLoggerLevels": {"org.apache.storm": {"target_level": "DEBUG"}}}"#,
    );
    assert_ne!(status, 200, "{body}");
    assert!(body.contains("module path"), "{body}");
}

#[test]
fn each_worker_process_reports_its_own_tasks() {
    let dir = tempfile::tempdir().expect("tempdir");
    let csv_dir = dir.path().join("csv");
    let file = dir.path().join("workers.yaml");
    std::fs::write(
        &file,
        format!(
            "name: workers\nconfig:\n  topology.workers: 2\n  topology.metrics.reporters:\n\
             \x20   - class: org.apache.storm.metrics2.reporters.CsvStormReporter\n\
             \x20     csv.log.dir: {}\n\
             spouts:\n  - id: gen\n    type: generate\n    args: {{ count: 3000, values: [[a], [b]] }}\n\
             bolts:\n  - id: sink\n    type: discard\n    parallelism: 2\n\
             streams:\n  - from: gen\n    to: sink\n    grouping: shuffle\n",
            csv_dir.display()
        ),
    )
    .expect("write the topology");
    let out = storm()
        .arg("run")
        .arg(&file)
        .args(["--processes", "--progress", "never"])
        .stdin(Stdio::null())
        .output()
        .expect("run storm --processes");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let names: Vec<String> = std::fs::read_dir(&csv_dir)
        .expect("the csv reporter's folder")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    // The worker port is the part before `-METRIC`: two workers, two ports, none of them 0.
    let ports: std::collections::BTreeSet<&str> = names
        .iter()
        .filter_map(|n| n.rsplit_once("-__")?.0.rsplit('.').next())
        .collect();
    assert_eq!(ports.len(), 2, "{ports:?}");
    assert!(!ports.contains("0"), "{ports:?}");
    let emits = names
        .iter()
        .find(|n| n.contains(".gen.") && n.ends_with("-__emit-count.csv"))
        .unwrap_or_else(|| panic!("no emit-count file for gen in {names:?}"));
    let text = std::fs::read_to_string(csv_dir.join(emits)).expect("read the csv file");
    assert!(text.trim_end().ends_with(",3000"), "{text}");
}
