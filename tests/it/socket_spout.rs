//! The `socket` spout with real senders on loopback: util-linux `logger` sending RFC 5424 and
//! RFC 3164 messages over TCP (newline and octet-counted framing) and UDP, read into syslog
//! fields; a client that disconnects mid-line loses nothing; malformed syslog goes to the
//! `errors` stream, or is dropped and counted, or with `--strict` ends the run; many lines
//! behind a slow bolt all come out (TCP waits instead of dropping).

use super::http_spout::Run;
use std::collections::BTreeSet;
use std::io::Write;
use std::process::Command;

/// `logger ARGS` to the spout at `addr` (`host:port`).
fn logger(addr: &str, args: &[&str]) {
    let (host, port) = addr.rsplit_once(':').expect("host:port");
    let out = Command::new("logger")
        .args(["--server", host, "--port", port])
        .args(args)
        .output()
        .expect("util-linux logger runs");
    assert!(
        out.status.success(),
        "logger {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn hostname() -> String {
    let out = Command::new("hostname").output().expect("hostname runs");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn run_dsl(topology: &str, extra: &[&str]) -> (Run, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut args = vec!["run".to_string(), "-e".into(), topology.into()];
    args.extend(extra.iter().map(|s| s.to_string()));
    let run = Run::start(&args, dir.path(), &[], 1);
    (run, dir)
}

const FIELDS: &str = "fields=[severity, facility, host, app, procid, msgid, message]";

/// The host name logger puts in a message: its own, up to the first dot for RFC 3164.
fn check_line(line: &str, severity: &str, app: &str, message: &str) {
    let f: Vec<&str> = line.split('\t').collect();
    assert_eq!(f.len(), 7, "{line}");
    assert_eq!((f[0], f[1]), (severity, "local0"), "{line}");
    let host = hostname();
    let short = host.split('.').next().unwrap_or(&host);
    assert!(f[2] == host || f[2] == short, "host {} in {line}", f[2]);
    assert_eq!((f[3], f[6]), (app, message), "{line}");
}

#[test]
fn logger_over_tcp_in_both_formats_is_read_into_syslog_fields() {
    let (run, _dir) = run_dsl(
        &format!("socket(listen=\"127.0.0.1:0\", format=syslog, {FIELDS}) | stdout"),
        &[],
    );
    let addr = run.addr().to_string();
    logger(
        &addr,
        &[
            "--tcp",
            "--rfc5424",
            "-t",
            "app5424",
            "-p",
            "local0.err",
            "--msgid",
            "M1",
            "--id=42",
            "five four two four",
        ],
    );
    logger(
        &addr,
        &[
            "--tcp",
            "--rfc3164",
            "-t",
            "app3164",
            "-p",
            "local0.warning",
            "three one six four",
        ],
    );
    let lines = run.wait_lines(2);
    let five = lines
        .iter()
        .find(|l| l.contains("app5424"))
        .expect("the 5424 message");
    check_line(five, "err", "app5424", "five four two four");
    let f: Vec<&str> = five.split('\t').collect();
    assert_eq!((f[4], f[5]), ("42", "M1"), "{five}");
    let three = lines
        .iter()
        .find(|l| l.contains("app3164"))
        .expect("the 3164 message");
    check_line(three, "warning", "app3164", "three one six four");
    run.interrupt();
}

#[test]
fn logger_octet_counted_over_tcp_and_over_udp() {
    let (run, _dir) = run_dsl(
        &format!("socket(listen=\"127.0.0.1:0\", framing=octet_counted, format=syslog, {FIELDS}) | stdout"),
        &[],
    );
    let addr = run.addr().to_string();
    for i in 0..3 {
        let msg = format!("counted {i}");
        logger(
            &addr,
            &[
                "--tcp",
                "--octet-count",
                "--rfc5424",
                "-t",
                "oc",
                "-p",
                "local0.info",
                &msg,
            ],
        );
    }
    let lines = run.wait_lines(3);
    for i in 0..3 {
        let line = lines
            .iter()
            .find(|l| l.ends_with(&format!("counted {i}")))
            .expect("each message");
        check_line(line, "info", "oc", &format!("counted {i}"));
    }
    run.interrupt();
    let (run, _dir) = run_dsl(
        &format!("socket(listen=\"127.0.0.1:0\", protocol=udp, format=syslog, {FIELDS}) | stdout"),
        &[],
    );
    let addr = run.addr().to_string();
    logger(
        &addr,
        &[
            "--udp",
            "--rfc3164",
            "-t",
            "viaudp",
            "-p",
            "local0.notice",
            "over udp",
        ],
    );
    let lines = run.wait_lines(1);
    check_line(&lines[0], "notice", "viaudp", "over udp");
    run.interrupt();
}

#[test]
fn a_client_that_disconnects_mid_line_loses_nothing() {
    let (run, _dir) = run_dsl("socket(listen=\"127.0.0.1:0\") | stdout", &[]);
    let mut s = std::net::TcpStream::connect(run.addr()).expect("connects");
    s.write_all(b"first\r\nsecond\nthe last, unterminated")
        .expect("sends");
    drop(s);
    let lines = run.wait_lines(3);
    assert_eq!(lines, ["first", "second", "the last, unterminated"]);
    run.interrupt();
}

/// 5,000 lines on four connections behind a slow bolt: the connections wait while the
/// topology is behind, and every line comes out once.
#[test]
fn many_lines_behind_a_slow_bolt_all_come_out() {
    let (run, _dir) = run_dsl(
        "socket(listen=\"127.0.0.1:0\") | chaos(delay=100us) | stdout",
        &["-c", "topology.max.spout.pending=50"],
    );
    let mut want = BTreeSet::new();
    let senders: Vec<_> = (0..4)
        .map(|c| {
            let addr = run.addr().to_string();
            let lines: Vec<String> = (0..1250).map(|i| format!("c{c}-{i}")).collect();
            want.extend(lines.iter().cloned());
            std::thread::spawn(move || {
                let mut s = std::net::TcpStream::connect(addr).expect("connects");
                s.write_all((lines.join("\n") + "\n").as_bytes())
                    .expect("sends");
            })
        })
        .collect();
    for s in senders {
        s.join().expect("sent");
    }
    let got = run.wait_lines(5000);
    assert_eq!(got.len(), 5000);
    assert_eq!(got.into_iter().collect::<BTreeSet<_>>(), want);
    run.interrupt();
}

#[test]
fn malformed_syslog_goes_to_errors_or_is_dropped_counted_or_ends_a_strict_run() {
    let send = |addr: &str, text: &str| {
        let mut s = std::net::TcpStream::connect(addr).expect("connects");
        s.write_all(text.as_bytes()).expect("sends");
    };
    let input =
        "<13>1 2026-12-03T10:00:00Z h app - - - fine\nno priority at all\n<13>Foo 1 nonsense\n";
    // Wired: each bad frame and why, on `errors`.
    let (run, _dir) = run_dsl(
        "s = socket(listen=\"127.0.0.1:0\", format=syslog, fields=[message]) | stdout\ns | [stream=errors] stdout",
        &[],
    );
    send(run.addr(), input);
    let lines = run.wait_lines(3);
    assert!(lines.contains(&"fine".to_string()), "{lines:?}");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("no priority at all\t") && l.contains("<PRI>")),
        "{lines:?}"
    );
    assert!(lines.iter().any(|l| l.contains("RFC 3164")), "{lines:?}");
    run.interrupt();
    // Not wired: dropped, counted and warned about.
    let (run, _dir) = run_dsl(
        "socket(listen=\"127.0.0.1:0\", format=syslog, fields=[message]) | stdout",
        &["--summary"],
    );
    send(run.addr(), input);
    assert_eq!(run.wait_lines(1), ["fine"]);
    super::support::poll_until(
        "the warning about a dropped line",
        std::time::Duration::from_secs(60),
        std::time::Duration::from_millis(20),
        || run.stderr().contains("no priority at all").then_some(()),
    );
    let stderr = run.interrupt();
    assert!(stderr.contains("dropped 2 input(s)"), "{stderr}");
    // Strict: the first one ends the run with an error.
    let dir = tempfile::tempdir().expect("tempdir");
    let mut run = Run::start(
        &[
            "run".into(),
            "--strict".into(),
            "-e".into(),
            "socket(listen=\"127.0.0.1:0\", format=syslog) | stdout".into(),
        ],
        dir.path(),
        &[],
        1,
    );
    send(run.addr(), "garbage\n");
    let status = run.wait_exit();
    assert!(!status.success());
    assert!(run.stderr().contains("topology.strict"), "{}", run.stderr());
}
