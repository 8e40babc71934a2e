//! Readers and writers on real-world-shaped files: a header with a typo or a space after a
//! comma, a byte-order mark, numbers in CSV cells, empty cells, leading-zero ids, values with
//! tabs in TSV output, input of which nothing can be read, `--quiet` and `--strict`. Each test
//! is named after the defect it keeps fixed; the fixtures are in `tests/fixtures/readers/`.

use crate::run::storm;
use std::path::Path;

/// A fixture's bytes.
fn fixture(name: &str) -> Vec<u8> {
    let path = Path::new("tests/fixtures/readers").join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// `storm run [flags] -e dsl` over `input`: (exit code, stdout, stderr).
fn run_with(flags: &[&str], dsl: &str, input: &[u8]) -> (Option<i32>, String, String) {
    let conf = tempfile::tempdir().expect("tempdir");
    let out = storm(conf.path())
        .arg("run")
        .args(flags)
        .args(["-e", dsl])
        .write_stdin(input.to_vec())
        .output()
        .expect("runs");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A run that must succeed: its stdout.
fn run_ok(dsl: &str, input: &[u8]) -> String {
    let (code, out, err) = run_with(&[], dsl, input);
    assert_eq!(code, Some(0), "{dsl}: {err}");
    out
}

const WEATHER: &str =
    "stdin(format=csv, header=true, fields=[date, precipitation, wind, station, note])";

#[test]
fn a_fields_name_the_header_lacks_is_an_error() {
    let (code, out, err) = run_with(
        &[],
        "stdin(format=csv, header=true, fields=[date, wether]) | stdout",
        b"date,weather,wind\n2024-01-01,sun,5\n",
    );
    assert_eq!(code, Some(1), "{err}");
    assert_eq!(out, "", "nothing is read by position");
    assert!(err.contains("the header has no column `wether`"), "{err}");
    assert!(err.contains("did you mean \"weather\"?"), "{err}");
    assert!(err.contains("\"date\", \"weather\", \"wind\""), "{err}");
}

#[test]
fn a_header_space_after_a_comma_is_shown_not_read_by_position() {
    let (code, out, err) = run_with(
        &[],
        "stdin(format=csv, header=true, fields=[date, weather]) | stdout",
        &fixture("spaced_header.csv"),
    );
    assert_eq!((code, out.as_str()), (Some(1), ""), "{err}");
    assert!(
        err.contains("\"·weather\" has a space in its name"),
        "{err}"
    );
    // The name written with its space reads the column.
    let out = run_ok(
        "stdin(format=csv, header=true, fields=[date, ' weather']) | stdout",
        &fixture("spaced_header.csv"),
    );
    assert_eq!(out, "2024-01-01\tsun\n2024-01-02\train\n");
}

#[test]
fn validate_reads_the_header_of_a_file_spout() {
    let conf = tempfile::tempdir().expect("tempdir");
    let path = std::path::absolute("tests/fixtures/readers/spaced_header.csv").expect("path");
    let dsl = format!(
        "file(path=\"{}\", format=csv, header=true, fields=[date, wether]) | stdout",
        path.display()
    );
    let out = storm(conf.path())
        .args(["validate", "-e", &dsl])
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("no column `wether` (did you mean \"·weather\"?)"),
        "{err}"
    );
}

#[test]
fn a_byte_order_mark_is_not_part_of_the_first_column() {
    let out = run_ok(
        &format!("{WEATHER} | stdout(fields=[date])"),
        &fixture("weather.csv"),
    );
    assert_eq!(out.lines().next(), Some("2024-01-01"));
}

#[test]
fn csv_numbers_compare_as_numbers() {
    let out = run_ok(
        &format!(
            "{WEATHER} | aggregate(ops=[max(precipitation), min(precipitation), sum(wind)]) | stdout(format=json)"
        ),
        &fixture("weather.csv"),
    );
    assert_eq!(
        out,
        "{\"max_precipitation\":54.1,\"min_precipitation\":0.5,\"sum_wind\":27.35}\n"
    );
    let out = run_ok(
        &format!("{WEATHER} | filter(\"wind > 5\") | stdout(fields=[date])"),
        &fixture("weather.csv"),
    );
    assert_eq!(out, "2024-01-01\n2024-01-02\n2024-01-04\n");
}

#[test]
fn text_that_looks_numeric_prints_back_as_written() {
    let out = run_ok(
        &format!("{WEATHER} | stdout(format=json, fields=[station, wind, note])"),
        &fixture("weather.csv"),
    );
    assert_eq!(
        out,
        concat!(
            "{\"station\":\"02134\",\"wind\":5.1,\"note\":\"dry, calm\"}\n",
            "{\"station\":\"02135\",\"wind\":12,\"note\":null}\n",
            "{\"station\":\"+1\",\"wind\":3.0,\"note\":\"said \\\"wet\\\"\"}\n",
            "{\"station\":\"1e5\",\"wind\":7.25,\"note\":\"ok\"}\n",
        )
    );
    // `types: str` keeps a column text.
    let out = run_ok(
        "stdin(format=csv, header=true, fields=[wind], types={wind: str}) | stdout(format=json)",
        &fixture("weather.csv"),
    );
    assert!(
        out.starts_with("{\"wind\":\"5.1\"}\n{\"wind\":\"12\"}\n"),
        "{out}"
    );
}

#[test]
fn empty_cell_in_typed_column_is_null_not_a_dropped_row() {
    let out = run_ok(
        "stdin(format=csv, header=true, fields=[hood, pop, area], types={pop: int, area: float}) | stdout(format=json)",
        &fixture("hoods.csv"),
    );
    assert_eq!(
        out,
        concat!(
            "{\"hood\":\"North\",\"pop\":1200,\"area\":3.5}\n",
            "{\"hood\":\"South\",\"pop\":null,\"area\":2.0}\n",
            "{\"hood\":\"East\",\"pop\":800,\"area\":null}\n",
            "{\"hood\":\"West\",\"pop\":950,\"area\":1.25}\n",
        )
    );
}

#[test]
fn a_failed_conversion_names_its_line_and_column() {
    let (code, out, err) = run_with(
        &[],
        "stdin(format=csv, header=true, fields=[hood, pop], types={pop: int}) | stdout",
        b"hood,pop\nNorth,12\nSouth,many\n",
    );
    assert_eq!((code, out.as_str()), (Some(0), "North\t12\n"), "{err}");
    assert!(
        err.contains("dropped line 3, which it cannot read: field `pop`: `many` is not an integer"),
        "{err}"
    );
}

#[test]
fn tsv_output_escapes_tabs_and_newlines() {
    let input = br#"{"a":"tab\there","b":"two\nlines\r","c":"back\\slash","n":2}"#;
    let out = run_ok("stdin(format=json, fields=[a, b, c, n]) | stdout", input);
    assert_eq!(out, "tab\\there\ttwo\\nlines\\r\tback\\\\slash\t2\n");
    // CSV and JSON stay exact.
    let out = run_ok(
        "stdin(format=json, fields=[a, b]) | stdout(format=csv)",
        input,
    );
    assert_eq!(out, "tab\there,\"two\nlines\r\"\n");
    let out = run_ok(
        "stdin(format=json, fields=[a, b]) | stdout(format=json)",
        input,
    );
    assert_eq!(out, "{\"a\":\"tab\\there\",\"b\":\"two\\nlines\\r\"}\n");
}

#[test]
fn nothing_readable_exits_non_zero() {
    let (code, out, err) = run_with(
        &[],
        "stdin(format=json, fields=[a]) | stdout",
        b"a,b\n1,2\n",
    );
    assert_eq!((code, out.as_str()), (Some(1), ""), "{err}");
    assert!(
        err.contains(
            "none of the input could be read (2 unreadable record(s)); first reasons: line 1: invalid JSON"
        ),
        "{err}"
    );
    // Empty input is no error; neither is input of which some lines read.
    assert_eq!(
        run_with(&[], "stdin(format=json, fields=[a]) | stdout", b"").0,
        Some(0)
    );
    let (code, out, _) = run_with(
        &[],
        "stdin(format=json, fields=[a]) | stdout",
        b"{\"a\":1}\nbad\n",
    );
    assert_eq!((code, out.as_str()), (Some(0), "1\n"));
}

#[test]
fn quiet_prints_only_errors() {
    let (code, out, err) = run_with(
        &["--quiet"],
        "stdin(format=json, fields=[a]) | stdout",
        b"{\"a\":1}\nbad\n",
    );
    assert_eq!((code, out.as_str(), err.as_str()), (Some(0), "1\n", ""));
    let (code, _, err) = run_with(
        &["--quiet"],
        "stdin(format=json, fields=[a]) | stdout",
        b"bad\n",
    );
    assert_eq!(code, Some(1));
    assert!(err.starts_with("error: "), "{err}");
    assert!(!err.contains("WARN"), "{err}");
}

#[test]
fn strict_ends_the_run_at_the_first_dropped_line() {
    let input = b"hood,pop\nNorth,12\nSouth,many\nEast,3\n";
    let dsl = "stdin(format=csv, header=true, fields=[hood, pop], types={pop: int}) | stdout";
    for flags in [&["--strict"][..], &["-c", "topology.strict=true"][..]] {
        let (code, _, err) = run_with(flags, dsl, input);
        assert_eq!(code, Some(1), "{flags:?}: {err}");
        assert!(
            err.contains("line 3: field `pop`: `many` is not an integer"),
            "{err}"
        );
    }
}

#[test]
fn a_long_unquoted_cell_is_a_record_longer_than_the_limit() {
    let mut input = b"a,b\n1,".to_vec();
    input.extend(std::iter::repeat_n(b'x', 2 << 20));
    input.extend_from_slice(b"\n2,y\n");
    let dsl = "stdin(format=csv, header=true, fields=[a, b]) | stdout(fields=[a])";
    let (code, out, err) = run_with(&[], dsl, &input);
    assert_eq!((code, out.as_str()), (Some(0), "2\n"), "{err}");
    assert!(err.contains("a record longer than 1 MiB"), "{err}");
    assert!(!err.contains("quoted cell"), "{err}");
    // The limit is configurable.
    let (code, out, err) = run_with(&["-c", "topology.record.max.bytes=4194304"], dsl, &input);
    assert_eq!((code, out.as_str()), (Some(0), "1\n2\n"), "{err}");
}

#[test]
fn json_array_file_streams_each_element() {
    let dsl = "stdin(format=json, fields=[iata, elevation_ft, geo.lat]) | stdout";
    let expected = "JFK\t13\t40.6413\nLAX\t125\t33.9416\nDEN\t5434\t39.8561\n";
    assert_eq!(run_ok(dsl, &fixture("airports.json")), expected);
    // The same array minified on one line.
    let text = String::from_utf8(fixture("airports.json")).expect("utf-8");
    let value: serde_json::Value = serde_json::from_str(&text).expect("json");
    assert_eq!(run_ok(dsl, value.to_string().as_bytes()), expected);
    // A `parse` bolt reads it the same way.
    let out = run_ok(
        "stdin | parse(format=json, fields=[iata, elevation_ft, geo.lat]) | stdout",
        &fixture("airports.json"),
    );
    assert_eq!(out, expected);
}

#[test]
fn json_concatenated_and_pretty_printed_values_are_records() {
    let input = b"{\"a\":1}{\"a\":2} {\"a\":3}\n{\n  \"a\": 4\n}\n{\"a\":5}\n";
    assert_eq!(
        run_ok("stdin(format=json, fields=[a]) | stdout", input),
        "1\n2\n3\n4\n5\n"
    );
    // A JSON line cut short stays an error of its own line; the next line is read.
    let (code, out, err) = run_with(
        &[],
        "stdin(format=json, fields=[a]) | stdout",
        b"{\"a\":1\n{\"a\":2}\n",
    );
    assert_eq!((code, out.as_str()), (Some(0), "2\n"), "{err}");
    assert!(err.contains("dropped line 1"), "{err}");
}

#[test]
fn a_json_array_element_past_the_record_limit_is_dropped_alone() {
    let big = "x".repeat(2000);
    let input = format!("[{{\"a\":\"{big}\"}},{{\"a\":\"small\"}}]");
    let (code, out, err) = run_with(
        &["-c", "topology.record.max.bytes=1000"],
        "stdin(format=json, fields=[a]) | stdout",
        input.as_bytes(),
    );
    assert_eq!((code, out.as_str()), (Some(0), "small\n"), "{err}");
    assert!(err.contains("a record longer than 1000 bytes"), "{err}");
}

#[test]
fn a_json_key_with_a_dot_is_addressable() {
    let out = run_ok(
        "stdin(format=json, fields=[iata, 'geo[\"tz.name\"]']) | filter('`tz.name` == \"America/Denver\"') | stdout",
        &fixture("airports.json"),
    );
    assert_eq!(out, "DEN\tAmerica/Denver\n");
    let out = run_ok(
        "stdin(format=json, fields=['\"c.d\"', 'geo.\"tz.name\"']) | stdout(format=json)",
        b"{\"c.d\":7,\"geo\":{\"tz.name\":\"UTC\"}}\n",
    );
    assert_eq!(out, "{\"c.d\":7,\"tz.name\":\"UTC\"}\n");
}

#[test]
fn strict_ends_the_run_at_a_late_tuple() {
    let base = 1_793_606_400_000i64;
    let input: String = [base, base + 70_000, base + 1_000]
        .iter()
        .map(|t| format!("{{\"ts\":{t},\"k\":\"a\"}}\n"))
        .collect();
    let dsl = "stdin(format=json, fields=[ts, k]) | aggregate(by=[k], window={tumbling: 1m}, time=ts, lag=1s) | stdout";
    let (code, _, err) = run_with(&[], dsl, input.as_bytes());
    assert_eq!(
        code,
        Some(0),
        "without --strict a late tuple is left out: {err}"
    );
    let (code, _, err) = run_with(&["--strict"], dsl, input.as_bytes());
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("a tuple came later than its windows"), "{err}");
}

/// The same for a windowed join: a tuple behind a closed window, with no `late` stream wired,
/// is left out (and warned about) without `--strict`, and ends the run with it.
#[test]
fn strict_ends_the_run_at_a_join_s_late_tuple() {
    let base = 1_793_606_400_000i64;
    let line =
        |t: i64, side: &str| format!("{{\"ts\":{},\"user\":1,\"side\":\"{side}\"}}\n", base + t);
    let input = [
        line(10_000, "o"),
        line(10_000, "l"),
        line(130_000, "o"),
        line(125_000, "l"),
        line(1_000, "o"),
    ]
    .concat();
    let dsl = "s = stdin(format=json, fields=[ts, user, side])\n\
         s | o = filter(\"side == 'o'\")\n\
         s | l = filter(\"side == 'l'\")\n\
         o | [fields user] j = join(inputs=[{from: o, key: user}, {from: l, key: user}], \
         select=[o.ts, l.side], window={tumbling: 1m}, time=ts, lag=1s) | stdout\n\
         l | [fields user] j";
    let pending = ["-c", "topology.max.spout.pending=1"];
    let (code, out, err) = run_with(&pending, dsl, input.as_bytes());
    assert_eq!(
        code,
        Some(0),
        "without --strict a late tuple is left out: {err}"
    );
    assert!(!out.is_empty(), "the first minute joins: {err}");
    let strict = ["--strict", "-c", "topology.max.spout.pending=1"];
    let (code, _, err) = run_with(&strict, dsl, input.as_bytes());
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("a tuple came later than its windows"), "{err}");
}

#[test]
fn a_minified_json_array_larger_than_the_record_limit_streams_in_pieces() {
    // About 4 MiB on one line: read in pieces, each element whole (numbers and `é` are cut
    // across pieces somewhere).
    let n = 40_000;
    let items: Vec<String> = (0..n)
        .map(|i| {
            format!(
                "{{\"id\":{i},\"name\":\"é{}\",\"v\":{}.5}}",
                "x".repeat(i % 90),
                i
            )
        })
        .collect();
    let input = format!("[{}]", items.join(","));
    assert!(input.len() > 3 << 20);
    let out = run_ok(
        "stdin(format=json, fields=[id, name, v]) | aggregate(ops=[count, sum(id), max(v)]) | stdout",
        input.as_bytes(),
    );
    let sum: u64 = (0..n as u64).sum();
    assert_eq!(out, format!("{n}\t{sum}\t{}.5\n", n - 1));
    let names = run_ok(
        "stdin(format=json, fields=[name]) | filter('not starts_with(name, \"é\")') | stdout",
        input.as_bytes(),
    );
    assert_eq!(names, "", "every name read whole");
}

#[test]
fn validate_reads_a_file_spouts_header_relative_to_the_topology_file() {
    let conf = tempfile::tempdir().expect("tempdir");
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("hoods.csv"), fixture("hoods.csv")).expect("write");
    let yaml = "name: hoods\nspouts:\n  - { id: rows, type: file, args: { path: hoods.csv, format: csv, header: true, fields: [hood, popul] } }\nbolts:\n  - { id: print, type: stdout }\nstreams:\n  - { from: rows, to: print }\n";
    let file = dir.path().join("hoods.yaml");
    std::fs::write(&file, yaml).expect("write");
    let out = storm(conf.path())
        .arg("validate")
        .arg(&file)
        .output()
        .expect("runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("the header has no column `popul` (did you mean \"pop\"?)"),
        "{err}"
    );
}
