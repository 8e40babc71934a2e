//! A regular file is read straight into the chunks the spout gets (stdin redirected from it,
//! or a `file` spout), where a pipe is read through a buffer and copied: both give the same
//! lines, values and counts, on input shaped to cross the reads: CRLF and a last line without
//! its end, invalid UTF-8, lines longer than a read, a JSON line long enough to go in pieces.

use std::io::Write;
use std::process::{Command, Stdio};

/// Text whose lines cross 256 KiB reads every way: short and long lines, CRLF, bytes that
/// are not UTF-8, a 700 KB line, and no line end at the very end.
fn crossing_text() -> Vec<u8> {
    let mut text = Vec::new();
    for i in 0..60_000u32 {
        let words = ["storm", "bolt", "ñandú", "日本", "x"];
        let n = (i % 9) as usize;
        let line: Vec<&str> = (0..n).map(|k| words[(i as usize + k) % 5]).collect();
        text.extend_from_slice(line.join(" ").as_bytes());
        if i % 101 == 0 {
            text.extend_from_slice(b" bad\xff\xfe");
        }
        if i == 30_000 {
            text.extend_from_slice("long ".repeat(140_000).as_bytes());
        }
        text.extend_from_slice(if i % 3 == 0 { b"\r\n" } else { b"\n" });
    }
    text.extend_from_slice(b"last words");
    text
}

/// JSON lines with a line of 700 KB (longer than a read) and one of 3 MB (read in pieces,
/// and past `topology.record.max.bytes`: dropped with a warning) among them.
fn json_text() -> Vec<u8> {
    let mut text = Vec::new();
    for i in 0..40_000u32 {
        let pad = match i {
            10_000 => "o".repeat(700_000),
            20_000 => "p".repeat(3_000_000),
            _ => "q".repeat((i % 50) as usize),
        };
        writeln!(text, r#"{{"k":"k{}","n":{i},"pad":"{pad}"}}"#, i % 7).expect("writes");
    }
    text
}

/// `storm run -e topology` with stdin from `input`: a regular file, or a pipe fed its bytes;
/// the file is read straight into chunks (its reader says so at `debug`), the pipe is not.
fn run(topology: &str, path: &std::path::Path, regular: bool) -> Vec<u8> {
    let conf = tempfile::tempdir().expect("tempdir");
    let mut cmd = Command::new(assert_cmd::cargo::cargo_bin("storm"));
    cmd.env("STORM_CONF_DIR", conf.path())
        .env(
            "STORM_LOG",
            "error,storm::components::stdin_file::owned_reads=debug",
        )
        .args(["run", "-e", topology])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let out = match regular {
        true => cmd
            .stdin(std::fs::File::open(path).expect("opens"))
            .output()
            .expect("runs"),
        false => {
            cmd.stdin(Stdio::piped());
            let mut child = cmd.spawn().expect("starts");
            let bytes = std::fs::read(path).expect("reads");
            let mut stdin = child.stdin.take().expect("a stdin");
            let feeder = std::thread::spawn(move || stdin.write_all(&bytes));
            let out = child.wait_with_output().expect("runs");
            feeder.join().expect("fed").expect("written");
            out
        }
    };
    assert!(out.status.success(), "{topology}: {out:?}");
    let straight = String::from_utf8_lossy(&out.stderr).contains("straight into chunks");
    assert_eq!(straight, regular, "{topology}: {out:?}");
    out.stdout
}

/// The same output from the file as stdin, from it through a pipe, and from a `file` spout.
fn same_either_way(topology: &str, text: &[u8]) -> Vec<u8> {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("input");
    std::fs::write(&path, text).expect("writes");
    let from_file = run(topology, &path, true);
    let from_pipe = run(topology, &path, false);
    assert_eq!(from_file, from_pipe, "{topology}");
    let spout = format!("file(path={:?}", path.display().to_string());
    let as_file_spout = topology.replacen("stdin(", &format!("{spout}, "), 1);
    let as_file_spout = as_file_spout.replacen("stdin |", &format!("{spout}) |"), 1);
    assert_eq!(
        run(&as_file_spout, &path, true),
        from_file,
        "{as_file_spout}"
    );
    from_file
}

#[test]
fn lines_read_from_a_regular_file_are_the_lines_read_from_a_pipe() {
    let text = crossing_text();
    let lines = same_either_way("stdin | stdout", &text);
    let expected: Vec<u8> = String::from_utf8_lossy(&text)
        .split('\n')
        .flat_map(|l| [l.strip_suffix('\r').unwrap_or(l).as_bytes(), b"\n"].concat())
        .collect();
    assert_eq!(lines, expected);
    let counts = same_either_way("stdin | split | count(word) | stdout", &text);
    let counts = crate::run::parse_counts(&counts);
    assert_eq!(counts, crate::run::expected_counts(&text));
}

#[test]
fn json_read_from_a_regular_file_gives_the_values_of_a_pipe_even_in_pieces() {
    let text = json_text();
    let rows = same_either_way("stdin(format=json, fields=[k, n]) | stdout", &text);
    let rows = rows.split(|&b| b == b'\n').filter(|l| !l.is_empty());
    assert_eq!(
        rows.count(),
        39_999,
        "every line but the one past the record limit"
    );
    same_either_way(
        "stdin(format=json, fields=[k, n]) | aggregate(by=[k], ops=[count, sum(n)]) | stdout",
        &text,
    );
}
