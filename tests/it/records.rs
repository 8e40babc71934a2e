//! Records end to end: each format through a real run, with the awkward inputs — invalid UTF-8,
//! quoted CSV over several lines, JSON escapes and nesting, lines that do not parse — and the
//! `errors` stream that keeps them.

use crate::run::storm;

fn run(dsl: &str, input: &[u8]) -> (String, String) {
    let conf = tempfile::tempdir().expect("tempdir");
    let out = storm(conf.path())
        .args(["run", "-e", dsl])
        .write_stdin(input.to_vec())
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{dsl}: {stderr}");
    (String::from_utf8(out.stdout).expect("utf-8"), stderr)
}

#[test]
fn json_lines_with_escapes_nesting_and_invalid_utf8() {
    let mut input = Vec::new();
    input.extend_from_slice(br#"{"a":"tab\there","n":{"x":[1,2.5,null]},"k":1,"k":2}"#);
    input.push(b'\n');
    input.extend_from_slice(b"{\"a\":\"bad \xff byte\",\"n\":{\"x\":3}}\n");
    input.extend_from_slice(b"{\"a\": \xff}\n");
    let (out, _) = run(
        "stdin | p = parse(format=json, fields=[a, n.x, k]) | stdout(format=json)\np | [stream=errors] e = stdout(fields=[reason])",
        &input,
    );
    // Two stdout tasks write: the order between them is not fixed.
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3, "{out}");
    assert!(
        lines.contains(&r#"{"a":"tab\there","x":[1,2.5,null],"k":2}"#),
        "{out}"
    );
    assert!(
        lines.contains(&"{\"a\":\"bad \u{fffd} byte\",\"x\":3,\"k\":null}"),
        "{out}"
    );
    assert!(lines.iter().any(|l| l.starts_with("invalid JSON")), "{out}");
}

#[test]
fn csv_records_over_several_lines_and_bad_cells() {
    let input = "id,note,n\n1,\"a, \"\"quoted\"\"\nnote\",3\n2,plain,x\n3,short\n";
    let (out, _) = run(
        "stdin(format=csv, header=true, fields=[note, n], types={n: int}) | stdout(format=json)\nstdin | [stream=errors] stdout(fields=[reason])",
        input.as_bytes(),
    );
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines.contains(&r#"{"note":"a, \"quoted\"\nnote","n":3}"#),
        "{out}"
    );
    assert!(lines.contains(&"field `n`: `x` is not an integer"), "{out}");
    assert!(
        lines.contains(&"2 cells where the header has 3 columns"),
        "{out}"
    );
    assert_eq!(lines.len(), 3, "{out}");
}

#[test]
fn logfmt_kv_and_tsv() {
    let (out, _) = run(
        r#"stdin | parse(format=logfmt, fields=[level, msg, dur], types={dur: float}) | stdout"#,
        b"level=warn msg=\"disk \\\"almost\\\" full\" dur=1.5\nmsg=x\n",
    );
    assert_eq!(out, "warn\tdisk \"almost\" full\t1.5\n\tx\t\n");
    let (out, _) = run(
        r#"stdin | parse(format=kv, separator=":", pair_separator=";", fields=[b, a]) | stdout"#,
        b"a:1;b:two words\n",
    );
    assert_eq!(out, "two words\t1\n");
    let (out, _) = run(
        r#"stdin | parse(format=tsv, columns=[x, y]) | stdout(format=csv, header=true, fields=[y, x])"#,
        b"1\ta,b\n",
    );
    assert_eq!(out, "y,x\n\"a,b\",1\n");
}

#[test]
fn bad_parse_arguments_are_located_errors() {
    let conf = tempfile::tempdir().expect("tempdir");
    for (dsl, says) in [
        (
            "stdin | parse(format=xml) | stdout",
            "unknown format `xml`; formats: json, csv",
        ),
        ("stdin | parse(format=json) | stdout", "needs `fields`"),
        (
            "stdin | parse(format=regex, pattern=\"(\") | stdout",
            "invalid regex",
        ),
        (
            "stdin | parse(format=json, fields=[a], types={a: number}) | stdout",
            "not a type",
        ),
        (
            "stdin | parse(format=json, fields=[a]) | count(b) | stdout",
            "does not declare field `b`",
        ),
        (
            "stdin | parse(format=csv, header=true) | stdout",
            "needs `fields`",
        ),
        (
            "stdin | stdout(format=yaml)",
            "must be one of: tsv, json, csv",
        ),
        (
            "stdin | stdout(fields=[nope])",
            "does not declare field `nope`",
        ),
    ] {
        crate::newcomer::validate_fails_saying(conf.path(), dsl, says);
    }
}

/// Parsing spreads over workers: the same answer with three workers and two parse tasks.
#[test]
fn parse_across_workers_gives_the_same_counts() {
    let mut input = String::new();
    for i in 0..3000 {
        input += &format!("{{\"svc\":\"s{}\",\"n\":{i}}}\n", i % 7);
    }
    let dsl = "stdin | parse(format=json, fields=[svc]) x2 | count(svc) x2 | stdout";
    let conf = tempfile::tempdir().expect("tempdir");
    let out = storm(conf.path())
        .args(["run", "-e", dsl, "-c", "topology.workers=3"])
        .write_stdin(input)
        .output()
        .expect("runs");
    let mut lines: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(String::from)
        .collect();
    lines.sort();
    let want: Vec<String> = (0..7)
        .map(|k| format!("s{k}\t{}", (0..3000).filter(|i| i % 7 == k).count()))
        .collect();
    assert_eq!(lines, want);
}

/// `aggregate` at parallelism 2 over three workers: every op equals the answer computed here.
#[test]
fn aggregate_ops_across_workers_equal_a_direct_computation() {
    let mut input = String::new();
    let mut per: std::collections::BTreeMap<String, Vec<i64>> = Default::default();
    for i in 0..4000i64 {
        let k = format!("k{}", i % 5);
        let v = (i * 37) % 101;
        input += &format!("{{\"k\":\"{k}\",\"v\":{v},\"s\":\"x{}\"}}\n", i % 13);
        per.entry(k).or_default().push(v);
    }
    input += "{\"k\":\"k0\",\"v\":null}\n";
    let dsl = "stdin(format=json, fields=[k, v, s]) | aggregate(by=[k], ops=[count, sum(v), avg(v), min(v), max(v) as top, count_distinct(s), first(v), last(v)]) x2 | stdout";
    let conf = tempfile::tempdir().expect("tempdir");
    let out = storm(conf.path())
        .args(["run", "-e", dsl, "-c", "topology.workers=3"])
        .write_stdin(input)
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut got: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(String::from)
        .collect();
    got.sort();
    let want: Vec<String> = per
        .iter()
        .map(|(k, v)| {
            let sum: i64 = v.iter().sum();
            // The null v of the extra k0 line counts as a row, not as a value.
            let count = v.len() + usize::from(k == "k0");
            let avg = sum as f64 / v.len() as f64;
            let (min, max) = (
                v.iter().min().copied().unwrap_or(0),
                v.iter().max().copied().unwrap_or(0),
            );
            let (first, last) = (v[0], v[v.len() - 1]);
            format!("{k}\t{count}\t{sum}\t{avg}\t{min}\t{max}\t13\t{first}\t{last}")
        })
        .collect();
    assert_eq!(got, want);
}

/// `emit: update` emits each change once and nothing more at the end: a streaming dedupe.
#[test]
fn aggregate_update_emits_each_change_once() {
    let (out, _) = run(
        "stdin | aggregate(by=[line], emit=update) | filter(\"count == 1\") | stdout(fields=[line])",
        b"a\nb\na\nc\nb\na\n",
    );
    assert_eq!(out, "a\nb\nc\n");
}

/// `dedupe`: exact, and with a bounded cache (least recently seen forgotten first).
#[test]
fn dedupe_exact_and_cached() {
    let input = "a\nb\na\nc\nb\nd\na\n";
    let (out, _) = run("stdin | dedupe | stdout", input.as_bytes());
    assert_eq!(out, "a\nb\nc\nd\n");
    // A cache of 2: after c and b, `a` was the least recently seen and is forgotten.
    let (out, _) = run("stdin | dedupe(cache=2) | stdout", input.as_bytes());
    let mut seen: Vec<&str> = Vec::new();
    let mut want = String::new();
    for line in input.lines() {
        if let Some(i) = seen.iter().position(|s| *s == line) {
            seen.remove(i);
        } else {
            want += line;
            want.push('\n');
            if seen.len() == 2 {
                seen.remove(0);
            }
        }
        seen.push(line);
    }
    assert_eq!(out, want);
    // By key fields, through two tasks.
    let (out, _) = run(
        "stdin | parse(format=csv, columns=[k, v]) | [fields k] dedupe(key=[k]) x2 | stdout(fields=[v])",
        b"x,1\ny,2\nx,3\n",
    );
    let mut lines: Vec<&str> = out.lines().collect();
    lines.sort();
    assert_eq!(lines, ["1", "2"]);
}

/// `lookup`: rows matched by text form, nulls where none matches, and a changed table file
/// loaded again while the run goes on.
#[test]
fn lookup_matches_by_text_and_reloads_a_changed_table() {
    let dir = tempfile::tempdir().expect("tempdir");
    let table = dir.path().join("users.csv");
    std::fs::write(&table, "id,name\n1,ann\n2,bob\n").expect("write");
    let dsl = format!(
        "stdin(format=json, fields=[user]) | lookup(path={}, key=id, on=user, select=[name]) | stdout",
        table.display()
    );
    let (out, _) = run(&dsl, b"{\"user\":1}\n{\"user\":3}\n{\"user\":\"2\"}\n");
    assert_eq!(out, "1\tann\n3\t\n2\tbob\n");
    // A live run: the table changes under it.
    let conf = tempfile::tempdir().expect("tempdir");
    let mut live = crate::support::Live::spawn(
        std::process::Command::new(assert_cmd::cargo::cargo_bin("storm"))
            .args(["run", "-e", &dsl])
            .env("STORM_CONF_DIR", conf.path())
            // The reload is logged at info.
            .env("STORM_LOG", "info"),
    );
    use std::io::Write;
    writeln!(live.stdin(), "{{\"user\":1}}").expect("write");
    live.stdin().flush().expect("flush");
    live.wait_for("the first row out", |out, _| out.lines().count() >= 1);
    std::fs::write(&table, "id,name\n1,anna\n").expect("rewrite");
    live.wait_for("the table reloaded", |_, err| err.contains("reloaded"));
    writeln!(live.stdin(), "{{\"user\":1}}").expect("write");
    let (status, out, _) = live.finish();
    assert!(status.success());
    assert_eq!(out, "1\tann\n1\tanna\n");
}

/// A CSV file with a header, read without `header: true`: the fields would take the cells at
/// their positions (the time as `level`, the level as `service`) and a filter on them would
/// keep nothing, with exit status 0. The run refuses it and says what to write; so it does a
/// header read as data, and the same file with `header: true` gives the right rows.
#[test]
fn a_csv_header_read_without_header_true_is_refused_with_what_to_write() {
    let conf = tempfile::tempdir().expect("tempdir");
    let with_header = "ts,level,service,status,msg\n1,error,a,500,x\n2,info,b,200,y\n";
    let fields = "fields=[level, service, status]";
    let mut refusals = Vec::new();
    for (args, input) in [
        (format!("format=csv, {fields}"), with_header),
        (
            format!("format=csv, {fields}"),
            "level,service,status\nerror,a,500\n",
        ),
    ] {
        let dsl = format!("stdin({args}) | filter(\"level == \\\"error\\\"\") | stdout");
        let out = storm(conf.path())
            .args(["run", "-e", &dsl])
            .write_stdin(input)
            .output()
            .expect("runs");
        assert!(!out.status.success(), "{dsl}: refused");
        assert!(out.stdout.is_empty(), "nothing printed: {out:?}");
        refusals.push(String::from_utf8_lossy(&out.stderr).trim().to_string());
    }
    insta::assert_snapshot!(refusals.join("\n"));
    let (out, _) = run(
        &format!("stdin(format=csv, header=true, {fields}) | filter(\"level == \\\"error\\\"\") | stdout"),
        with_header.as_bytes(),
    );
    assert_eq!(out, "error\ta\t500\n");
}
