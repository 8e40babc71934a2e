//! The `map` bolt in real topologies (DSL and YAML) through `storm run`, its output checked
//! against results computed here; and `storm validate`'s located errors for bad `map`s and
//! typed comparisons.

use assert_cmd::Command;
use std::path::Path;

fn storm(conf_dir: &Path) -> Command {
    let mut cmd = Command::cargo_bin("storm").expect("the storm binary is built");
    cmd.env("STORM_CONF_DIR", conf_dir).env_remove("STORM_LOG");
    cmd
}

/// Deterministic access-log-like lines `METHOD STATUS BYTES PATH`, with some broken ones.
fn log_lines(n: usize) -> Vec<String> {
    let methods = ["GET", "post", "Put"];
    let mut s: u64 = 42;
    let mut next = move || {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        s >> 33
    };
    (0..n)
        .map(|k| {
            let method = methods[(next() % 3) as usize];
            let status = [200, 404, 500, 503][(next() % 4) as usize];
            let bytes = next() % 100_000;
            match k % 17 {
                // A status that is not a number, a size that overflows an i64.
                5 => format!("{method} 5xx {bytes} /Broken"),
                11 => format!("{method} {status} 99999999999999999999 /Huge"),
                _ => format!("{method} {status} {bytes} /Path/{}", next() % 7),
            }
        })
        .collect()
}

/// What the pipeline should print for one line: method lower-cased, status, KiB (integer
/// division), path lower-cased; only statuses ≥ 500 pass.
fn expected(line: &str) -> Option<String> {
    let parts: Vec<&str> = line.split(' ').collect();
    let status: i64 = parts[1].parse().ok()?;
    if status < 500 {
        return None;
    }
    let kib = parts[2]
        .parse::<i64>()
        .ok()
        .map_or(String::new(), |b| (b / 1024).to_string());
    Some(format!(
        "{}\t{status}\t{kib}\t{}",
        parts[0].to_lowercase(),
        parts[3].to_lowercase()
    ))
}

fn sorted_lines(stdout: &[u8]) -> Vec<String> {
    let mut lines: Vec<String> = String::from_utf8_lossy(stdout)
        .lines()
        .map(str::to_string)
        .collect();
    lines.sort();
    lines
}

#[test]
fn a_dsl_map_computes_fields_that_a_filter_then_reads() {
    let conf = tempfile::tempdir().expect("tempdir");
    let lines = log_lines(400);
    let topology = r#"stdin | map(set={
        method: lower(split_part(line, " ", 1)),
        status: int(split_part(line, " ", 2)),
        kib: int(split_part(line, " ", 3)) // 1024,
        path: lower(split_part(line, " ", 4))
    }, drop=[line]) x2 | filter("status >= 500") | stdout"#;
    let mut want: Vec<String> = lines.iter().filter_map(|l| expected(l)).collect();
    want.sort();
    assert!(want.len() > 50, "the input exercises the filter");
    // In one process, and with two workers as processes (the map runs in a worker that
    // resolves its fields from the topology it was sent).
    for mode in [&[][..], &["--processes", "-c", "topology.workers=2"][..]] {
        let out = storm(conf.path())
            .arg("run")
            .args(mode)
            .args(["-e", topology])
            .write_stdin(lines.join("\n") + "\n")
            .output()
            .expect("runs");
        assert!(
            out.status.success(),
            "{mode:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(sorted_lines(&out.stdout), want, "{mode:?}");
    }
}

/// `YYYY-MM-DDTHH:MM:SSZ` of epoch milliseconds (days to civil date, proleptic Gregorian).
fn rfc3339(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

#[test]
fn a_yaml_map_sets_renames_keeps_and_handles_time() {
    let conf = tempfile::tempdir().expect("tempdir");
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("times.yaml");
    std::fs::write(
        &file,
        r#"name: times
spouts:
  - id: lines
    type: stdin
bolts:
  - id: shape
    type: map
    args:
      set:
        line: "int(line)"
        minute: 'format_time(trunc_time(line, 1m), "%Y-%m-%dT%H:%M:%SZ")'
        back: "parse_time(minute)"
        ms: "line % 60000"
      rename: { ms: ms_in_minute }
      keep: [minute, back, ms_in_minute]
  - id: print
    type: stdout
streams:
  - { from: lines, to: shape, grouping: shuffle }
  - { from: shape, to: print, grouping: shuffle }
"#,
    )
    .expect("write");
    let mut s: i64 = 7;
    let times: Vec<i64> = (0..200)
        .map(|_| {
            s = (s * 1_103_515_245 + 12_345) % 2_147_483_648;
            // Spread over 2001..2033, with milliseconds.
            978_307_200_000 + s * 490 + s % 1000
        })
        .chain([0, 59_999, 1_793_606_490_250])
        .collect();
    let input: String = times.iter().map(|t| format!("{t}\n")).collect();
    let out = storm(conf.path())
        .arg("run")
        .arg(&file)
        .write_stdin(input)
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut want: Vec<String> = times
        .iter()
        .map(|t| {
            let minute = t - t.rem_euclid(60_000);
            format!("{}\t{minute}\t{}", rfc3339(minute), t.rem_euclid(60_000))
        })
        .collect();
    want.sort();
    assert_eq!(sorted_lines(&out.stdout), want);
}

#[test]
fn bad_maps_and_typed_comparisons_are_located_errors() {
    let conf = tempfile::tempdir().expect("tempdir");
    let cases = [
        "stdin | map(set={n: len(line)}) | filter('n > \"3\"') | stdout",
        "stdin | split | filter('word >= 500') | stdout",
        "stdin | map(set={x: line * 2, y: lowr(line)}) | stdout",
        "stdin | map(rename={lin: text}, keep=[line, nope], drop=[line]) | stdout",
        "stdin | map(set={t: parse_time(line, \"%Y-%\")}) | stdout",
        "stdin | map(sett={a: 1}) | stdout",
        "stdin | map | stdout",
        "stdin | parse(format=combined) | filter('status == \"503\"') | stdout",
        "stdin(format=csv, columns=[n, name], types={n: int}) | map(set={x: lower(n)}) | stdout",
        "stdin | dedupe | filter('line > 3') | stdout",
    ];
    let mut report = String::new();
    for case in cases {
        let out = storm(conf.path())
            .args(["validate", "-e", case])
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(1), "{case}");
        report += &format!("$ {case}\n{}\n", String::from_utf8_lossy(&out.stderr));
    }
    insta::assert_snapshot!(report);
}

/// A "combined" access log line.
fn combined(k: usize) -> String {
    let status = [200, 304, 500, 503][k % 4];
    let bytes = if k % 5 == 0 {
        "-".to_string()
    } else {
        (k * 997).to_string()
    };
    format!(
        "10.0.0.{} - - [02/Nov/2026:08:{:02}:{:02} +0000] \"GET /p/{} HTTP/1.1\" {status} {bytes} \"-\" \"curl\"",
        k % 250,
        k / 60 % 60,
        k % 60,
        k % 9
    )
}

#[test]
fn parsed_fields_keep_their_types_through_map_and_filter() {
    let conf = tempfile::tempdir().expect("tempdir");
    let lines: Vec<String> = (0..300).map(combined).collect();
    // `status` and `bytes` are integers: compared and divided as numbers with no cast.
    let topology = r#"stdin | parse(format=combined) | map(set={
        kib: bytes // 1024,
        minute: format_time(trunc_time(parse_time(time, "%d/%b/%Y:%H:%M:%S %z"), 1m), "%H:%M")
    }, keep=[status, kib, minute]) | filter("status >= 500") | stdout"#;
    let out = storm(conf.path())
        .args(["run", "-e", topology])
        .write_stdin(lines.join("\n") + "\n")
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut want: Vec<String> = (0..300usize)
        .filter(|k| k % 4 >= 2)
        .map(|k| {
            let status = [200, 304, 500, 503][k % 4];
            let kib = if k % 5 == 0 {
                String::new()
            } else {
                (k * 997 / 1024).to_string()
            };
            format!("{status}\t{kib}\t08:{:02}", k / 60 % 60)
        })
        .collect();
    want.sort();
    assert_eq!(sorted_lines(&out.stdout), want);
}

#[test]
fn untyped_fields_are_not_type_errors() {
    let conf = tempfile::tempdir().expect("tempdir");
    // `generate` fields carry no type: comparing them with numbers is fine.
    storm(conf.path())
        .args([
            "validate",
            "-e",
            "generate(fields=[status], count=1) | filter('status >= 500') | map(set={s: status + 1}) | stdout",
        ])
        .assert()
        .success();
}
