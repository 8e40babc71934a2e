//! Hostile HTTP clients against the UI of a local run and of nimbus: framing attacks, huge
//! lengths and heads, pipelining without reading, trickled bodies, many idle connections and
//! the fd limit. Each time the process lives and a probe on a fresh connection is answered.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(60);
/// How long a probe may take to be answered while the attack goes on.
const PROBE_WAIT: Duration = Duration::from_secs(10);

const TOPOLOGY: &str = "\
name: hostile
spouts:
  - id: words
    type: generate
    args: { rate: 100, values: [[apple], [pear]] }
bolts:
  - id: sink
    type: discard
streams:
  - { from: words, to: sink, grouping: shuffle }
";

use crate::support::Served;

impl Served {
    /// The process is still running.
    fn alive(&mut self) {
        let status = self.child.try_wait().expect("wait on the child");
        assert!(status.is_none(), "the process ended: {status:?}");
    }

    fn threads(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/task", self.child.id()))
            .map(|d| d.count())
            .unwrap_or(0)
    }
}

fn storm_bin() -> std::path::PathBuf {
    assert_cmd::cargo::cargo_bin("storm")
}

/// `storm run --ui 127.0.0.1:0` of the endless topology, optionally under `prlimit` with this
/// many file descriptors.
fn local_run(nofile: Option<u32>) -> Served {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("hostile.yaml");
    std::fs::write(&file, TOPOLOGY).expect("write the topology");
    let mut cmd = match nofile {
        Some(n) => {
            let mut c = Command::new("prlimit");
            c.arg(format!("--nofile={n}:{n}"))
                .arg("--")
                .arg(storm_bin());
            c
        }
        None => Command::new(storm_bin()),
    };
    let mut child = cmd
        .env_remove("STORM_CLUSTER_SECRET")
        .arg("run")
        .arg(&file)
        .args(["--ui", "127.0.0.1:0", "--progress", "never"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start storm run --ui");
    let addr = crate::support::ui_address(&mut child, WAIT);
    Served {
        child,
        addr,
        _dir: dir,
    }
}

/// `storm nimbus` with its UI on a port it picks and reports, optionally under `prlimit` with
/// this many file descriptors.
fn nimbus(nofile: Option<u32>) -> Served {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("nimbus.log");
    let mut cmd = match nofile {
        Some(n) => {
            let mut c = Command::new("prlimit");
            c.arg(format!("--nofile={n}:{n}"))
                .arg("--")
                .arg(storm_bin());
            c
        }
        None => Command::new(storm_bin()),
    };
    let child = cmd
        .env_remove("STORM_CLUSTER_SECRET")
        .args(["nimbus", "--listen", "127.0.0.1:0"])
        .arg("--data")
        .arg(dir.path().join("nimbus"))
        .args(["-c", "ui.port=0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).expect("a log file"))
        .spawn()
        .expect("start storm nimbus");
    let served = Served {
        child,
        addr: crate::support::nimbus_ui_addr(&log),
        _dir: dir,
    };
    wait_for_probe(&served.addr, WAIT);
    served
}

/// One GET of the cluster summary on a fresh connection: whether it was answered 200.
fn probe(addr: &str) -> bool {
    let Ok(sock) = addr.parse::<SocketAddr>() else {
        return false;
    };
    let Ok(mut s) = TcpStream::connect_timeout(&sock, Duration::from_secs(1)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    let req = format!("GET /api/v1/cluster/summary HTTP/1.0\r\nHost: {addr}\r\n\r\n");
    if s.write_all(req.as_bytes()).is_err() {
        return false;
    }
    let mut answer = String::new();
    let _ = s.read_to_string(&mut answer);
    answer.starts_with("HTTP/1.1 200")
}

fn wait_for_probe(addr: &str, wait: Duration) {
    crate::support::poll_until(
        "a probe of the UI to be answered",
        wait,
        Duration::from_millis(50),
        || probe(addr).then_some(()),
    );
}

/// Send `raw` on a fresh connection (write errors ignored: the server may close early) and
/// return the status it answered, if any.
fn status_of(addr: &str, raw: &[u8]) -> Option<u16> {
    let mut s = TcpStream::connect(addr).expect("connect");
    let _ = s.set_read_timeout(Some(Duration::from_secs(15)));
    let _ = s.write_all(raw);
    let mut answer = Vec::new();
    let _ = s.read_to_end(&mut answer);
    let text = String::from_utf8_lossy(&answer);
    text.split_whitespace().nth(1).and_then(|s| s.parse().ok())
}

/// Each framing or size attack gets its refusal, and the process answers a probe after it.
fn framing_attacks(served: &mut Served) {
    let a = served.addr.clone();
    let post = |extra: &str| {
        format!("POST /api/v1/topology/hostile/deactivate HTTP/1.1\r\nHost: {a}\r\n{extra}\r\n")
            .into_bytes()
    };
    let long_line = format!(
        "GET / HTTP/1.1\r\nHost: {a}\r\nX-Long: {}\r\n\r\n",
        "a".repeat(1024 * 1024)
    );
    let many: String = (0..100).map(|i| format!("X-{i}: 1\r\n")).collect();
    let cases: Vec<(&str, Vec<u8>, u16)> = vec![
        (
            "a length of 14 nines",
            post("Content-Length: 99999999999999\r\n"),
            413,
        ),
        (
            "u64::MAX",
            post("Content-Length: 18446744073709551615\r\n"),
            413,
        ),
        (
            "a length past u64",
            post("Content-Length: 999999999999999999999999\r\n"),
            413,
        ),
        (
            "CL+TE",
            post("Content-Length: 4\r\nTransfer-Encoding: chunked\r\n"),
            400,
        ),
        (
            "two lengths",
            post("Content-Length: 0\r\nContent-Length: 4\r\n"),
            400,
        ),
        ("a negative length", post("Content-Length: -1\r\n"), 400),
        ("a 1 MiB header line", long_line.into_bytes(), 431),
        (
            "100 header lines",
            format!("GET / HTTP/1.1\r\nHost: {a}\r\n{many}\r\n").into_bytes(),
            431,
        ),
        ("garbage", b"\x00\x01\x02 what\r\n\r\n".to_vec(), 400),
    ];
    for (what, raw, want) in cases {
        assert_eq!(status_of(&a, &raw), Some(want), "{what}");
        served.alive();
        wait_for_probe(&a, PROBE_WAIT);
    }
}

#[test]
fn framing_and_size_attacks_are_refused_and_the_local_ui_lives() {
    let mut run = local_run(None);
    framing_attacks(&mut run);
}

#[test]
fn framing_and_size_attacks_are_refused_and_nimbus_lives() {
    let mut n = nimbus(None);
    framing_attacks(&mut n);
}

/// Responses to requests sent in one write come back in order, each whole.
#[test]
fn pipelined_requests_are_answered_in_order() {
    let run = local_run(None);
    let a = &run.addr;
    let paths = ["/app.js", "/style.css", "/api/v1/cluster/summary", "/"];
    let mut req = String::new();
    for p in paths.iter().cycle().take(12) {
        req += &format!("GET {p} HTTP/1.1\r\nHost: {a}\r\n\r\n");
    }
    req += &format!("GET /style.css HTTP/1.1\r\nHost: {a}\r\nConnection: close\r\n\r\n");
    let mut s = TcpStream::connect(a).expect("connect");
    s.write_all(req.as_bytes()).expect("send");
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).expect("read");
    let mut kinds = Vec::new();
    let mut rest = raw.as_slice();
    while !rest.is_empty() {
        let end = rest
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .expect("a whole head");
        let head = String::from_utf8_lossy(&rest[..end]).to_string();
        let field = |name: &str| {
            head.lines()
                .find_map(|l| l.strip_prefix(name))
                .map(|v| v.trim().to_string())
                .unwrap_or_else(|| panic!("no {name} in {head}"))
        };
        let len: usize = field("Content-Length:").parse().expect("a length");
        kinds.push(field("Content-Type:"));
        rest = &rest[end + 4 + len..];
    }
    let want: Vec<&str> = [
        "text/javascript",
        "text/css",
        "application/json",
        "text/html",
    ]
    .iter()
    .cycle()
    .take(12)
    .chain(["text/css"].iter())
    .copied()
    .collect();
    assert_eq!(kinds.len(), want.len(), "{kinds:?}");
    for (got, want) in kinds.iter().zip(&want) {
        assert!(got.starts_with(want), "{kinds:?}");
    }
}

/// Clients that pipeline thousands of requests and never read, and clients that trickle a
/// body a byte at a time, do not keep others from being answered.
#[test]
fn clients_that_never_read_or_trickle_do_not_freeze_the_ui() {
    let mut run = local_run(None);
    let a = run.addr.clone();
    let stop = Arc::new(AtomicBool::new(false));
    let mut hogs = Vec::new();
    for _ in 0..3 {
        let a = a.clone();
        let stop = stop.clone();
        hogs.push(std::thread::spawn(move || {
            let Ok(mut s) = TcpStream::connect(&a) else {
                return;
            };
            let one = format!("GET /api/v1/topology/summary HTTP/1.1\r\nHost: {a}\r\n\r\n");
            let many = one.repeat(200);
            let _ = s.set_write_timeout(Some(Duration::from_millis(200)));
            while !stop.load(Ordering::Relaxed) {
                if let Err(e) = s.write_all(many.as_bytes()) {
                    if e.kind() != std::io::ErrorKind::WouldBlock
                        && e.kind() != std::io::ErrorKind::TimedOut
                    {
                        return;
                    }
                }
            }
        }));
    }
    for _ in 0..3 {
        let a = a.clone();
        let stop = stop.clone();
        hogs.push(std::thread::spawn(move || {
            let Ok(mut s) = TcpStream::connect(&a) else {
                return;
            };
            let head = format!(
                "POST /api/v1/topology/hostile/rebalance/0 HTTP/1.1\r\nHost: {a}\r\n\
                 Content-Length: 60000\r\n\r\n"
            );
            let _ = s.write_all(head.as_bytes());
            while !stop.load(Ordering::Relaxed) {
                if s.write_all(b"{").is_err() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
        }));
    }
    for _ in 0..5 {
        wait_for_probe(&a, PROBE_WAIT);
    }
    run.alive();
    stop.store(true, Ordering::Relaxed);
    for h in hogs {
        let _ = h.join();
    }
    wait_for_probe(&a, PROBE_WAIT);
}

/// Hundreds of idle connections neither stop new ones from being answered nor take a thread
/// each.
#[test]
fn many_idle_connections_are_shed_and_take_no_thread_each() {
    let mut run = local_run(None);
    let a = run.addr.clone();
    wait_for_probe(&a, PROBE_WAIT);
    let before = run.threads();
    let idle: Vec<TcpStream> = (0..400)
        .filter_map(|_| TcpStream::connect(&a).ok())
        .collect();
    assert!(idle.len() >= 300, "only {} connections opened", idle.len());
    wait_for_probe(&a, PROBE_WAIT);
    run.alive();
    let after = run.threads();
    assert!(
        after < before + 8,
        "threads went from {before} to {after} with {} idle connections",
        idle.len()
    );
    drop(idle);
    wait_for_probe(&a, PROBE_WAIT);
}

/// At the file-descriptor limit the server closes idle connections to make room and keeps
/// answering (accept backs off rather than failing for good).
#[test]
fn at_the_fd_limit_the_ui_keeps_answering() {
    fd_limit(local_run(Some(128)));
}

/// The same at nimbus's UI.
#[test]
fn at_the_fd_limit_nimbus_keeps_answering() {
    fd_limit(nimbus(Some(128)));
}

fn fd_limit(mut run: Served) {
    let a = run.addr.clone();
    wait_for_probe(&a, PROBE_WAIT);
    let sock: SocketAddr = a.parse().expect("an address");
    let idle: Vec<TcpStream> = (0..400)
        .filter_map(|_| TcpStream::connect_timeout(&sock, Duration::from_millis(500)).ok())
        .collect();
    assert!(idle.len() >= 200, "only {} connections opened", idle.len());
    wait_for_probe(&a, PROBE_WAIT);
    run.alive();
    drop(idle);
    wait_for_probe(&a, PROBE_WAIT);
    run.alive();
}

/// One HTTP/1.0 request with extra header lines: the status and the body.
fn request(addr: &str, path: &str, headers: &[&str]) -> (u16, String) {
    let mut s = TcpStream::connect(addr).expect("connect");
    let mut req = format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\n");
    for h in headers {
        req += &format!("{h}\r\n");
    }
    s.write_all(format!("{req}\r\n").as_bytes()).expect("send");
    let mut raw = String::new();
    s.read_to_string(&mut raw).expect("read");
    let (head, body) = raw.split_once("\r\n\r\n").expect("an HTTP answer");
    let status = head.split_whitespace().nth(1).and_then(|s| s.parse().ok());
    (status.expect("a status"), body.to_string())
}

/// A UI open to other hosts wants its token on every read (the page's own files aside);
/// JSONP wants it in the query; a browser's cross-site read is refused.
#[test]
fn an_open_ui_wants_its_token_on_reads_and_cross_site_reads_are_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("hostile.yaml");
    std::fs::write(&file, TOPOLOGY).expect("write the topology");
    let mut child = Command::new(storm_bin())
        .env_remove("STORM_CLUSTER_SECRET")
        .arg("run")
        .arg(&file)
        .args(["--ui", "0.0.0.0:0", "--progress", "never"])
        .args(["-c", "ui.token=s3cret"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start storm run --ui");
    let printed = crate::support::ui_address(&mut child, WAIT);
    let port = printed.rsplit(':').next().unwrap_or_default().to_string();
    let run = Served {
        child,
        addr: format!("127.0.0.1:{port}"),
        _dir: dir,
    };
    let a = run.addr.as_str();
    let bearer = "Authorization: Bearer s3cret";
    for path in [
        "/api/v1/cluster/summary",
        "/api/v1/topology/hostile",
        "/metrics",
        "/api/v1/topology/hostile/tap/words",
    ] {
        assert_eq!(request(a, path, &[]).0, 403, "{path} without the token");
        assert_eq!(
            request(a, path, &["Authorization: Bearer wrong"]).0,
            403,
            "{path} with a wrong token"
        );
    }
    for path in ["/api/v1/cluster/summary", "/metrics"] {
        assert_eq!(request(a, path, &[bearer]).0, 200, "{path} with the token");
    }
    assert_eq!(request(a, "/", &[]).0, 200, "the page itself is open");
    assert_eq!(request(a, "/app.js", &[]).0, 200);
    // JSONP: the token in the query, as a script tag cannot send a header.
    let (status, body) = request(a, "/api/v1/cluster/summary?callback=show", &[]);
    assert_eq!(status, 403, "{body}");
    let (status, body) = request(a, "/api/v1/cluster/summary?callback=show&token=s3cret", &[]);
    assert_eq!(status, 200, "{body}");
    assert!(
        body.starts_with("show({") && body.ends_with("});"),
        "{body}"
    );
    let (status, _) = request(
        a,
        "/api/v1/cluster/summary",
        &[bearer, "Sec-Fetch-Site: cross-site"],
    );
    assert_eq!(status, 403);
}

/// A loopback UI without a token: no JSONP, no cross-site reads; same-origin reads answered.
#[test]
fn a_loopback_ui_answers_no_jsonp_and_no_cross_site_read() {
    let run = local_run(None);
    let a = run.addr.as_str();
    let (status, body) = request(a, "/api/v1/cluster/summary?callback=show", &[]);
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("JSONP"), "{body}");
    let cross = ["Sec-Fetch-Site: cross-site", "Origin: http://localhost:9"];
    assert_eq!(request(a, "/api/v1/cluster/summary", &cross).0, 403);
    let same = ["Sec-Fetch-Site: same-origin"];
    assert_eq!(request(a, "/api/v1/cluster/summary", &same).0, 200);
}
