//! Values as users of Python, SQL and DuckDB expect them, through real runs: `/` yields a
//! float, `//` floors, `%` takes the divisor's sign; `1` and `1.0` are one key in every
//! keyed component (and reach one task through fields grouping); integers and floats compare
//! exactly; `abs`, `round`, `floor`, `ceil`; a global aggregate over no input has its row.
//! Each defect has a test named after it, and property tests check the arithmetic and the
//! keys against references computed here.

use crate::run::storm;
use proptest::prelude::*;
use std::collections::BTreeMap;

/// Run `dsl` over `input`; its stdout (the run must succeed).
fn run(dsl: &str, input: &str) -> String {
    let conf = tempfile::tempdir().expect("tempdir");
    let out = storm(conf.path())
        .args(["run", "-e", dsl])
        .write_stdin(input.to_string())
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{dsl}: {stderr}");
    String::from_utf8(out.stdout).expect("utf-8")
}

fn sorted(text: &str) -> Vec<String> {
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    lines.sort();
    lines
}

/// `5` and `5.0` in the input, as JSON files have them.
const MIXED: &str = "{\"k\":1,\"v\":2}\n{\"k\":1.0,\"v\":3}\n{\"k\":0,\"v\":1}\n{\"k\":-0.0,\"v\":1}\n{\"k\":2.5,\"v\":1}\n";

#[test]
fn slash_between_integers_yields_a_float() {
    let out = run(
        "stdin(format=json, fields=[lbs, hp]) | map(set={r: lbs / hp}, keep=[r]) | stdout",
        "{\"lbs\":3504,\"hp\":130}\n{\"lbs\":3504.0,\"hp\":130}\n{\"lbs\":7,\"hp\":2}\n{\"lbs\":6,\"hp\":3}\n",
    );
    // Whether a number is written `5` or `5.0` no longer decides the answer.
    assert_eq!(
        out,
        format!("{}\n{}\n3.5\n2\n", 3504.0f64 / 130.0, 3504.0f64 / 130.0)
    );
}

#[test]
fn double_slash_floors_and_percent_takes_the_divisors_sign() {
    let out = run(
        "stdin(format=json, fields=[a, b]) | map(set={q: a // b, m: a % b}, keep=[q, m]) | stdout",
        "{\"a\":-7,\"b\":2}\n{\"a\":7,\"b\":-2}\n{\"a\":-7.5,\"b\":2}\n{\"a\":7,\"b\":2}\n",
    );
    assert_eq!(out, "-4\t1\n-4\t-1\n-4\t0.5\n3\t1\n");
}

#[test]
fn division_by_zero_is_null_for_every_division() {
    let out = run(
        "stdin(format=json, fields=[a, b]) | map(set={d: a / b, q: a // b, m: a % b, ok: is_null(a / b)}, keep=[d, q, m, ok]) | stdout",
        "{\"a\":1,\"b\":0}\n{\"a\":1.5,\"b\":0.0}\n",
    );
    assert_eq!(out, "\t\t\ttrue\n\t\t\ttrue\n");
}

#[test]
fn one_and_one_point_zero_are_one_key_in_count() {
    let out = run("stdin(format=json, fields=[k]) | count(k) | stdout", MIXED);
    // The key as first seen; `-0.0` is `0`.
    assert_eq!(out, "0\t2\n1\t2\n2.5\t1\n");
}

#[test]
fn one_and_one_point_zero_reach_one_task_through_fields_grouping() {
    // Three counting tasks: were `1` and `1.0` placed apart, two rows would say `1`.
    let out = run(
        "stdin(format=json, fields=[k]) | count(k) x3 | stdout",
        MIXED,
    );
    assert_eq!(sorted(&out), ["0\t2", "1\t2", "2.5\t1"]);
}

#[test]
fn one_and_one_point_zero_are_one_key_in_aggregate() {
    let out = run(
        "stdin(format=json, fields=[k, v]) | aggregate(by=[k], ops=[count, sum(v)]) x2 | stdout",
        MIXED,
    );
    assert_eq!(sorted(&out), ["0\t2\t2", "1\t2\t5", "2.5\t1\t1"]);
}

#[test]
fn one_and_one_point_zero_are_one_value_in_count_distinct() {
    let out = run(
        "stdin(format=json, fields=[k]) | aggregate(ops=[count_distinct(k)]) | stdout",
        MIXED,
    );
    assert_eq!(out, "3\n");
}

#[test]
fn one_and_one_point_zero_are_one_key_in_dedupe() {
    let out = run(
        "stdin(format=json, fields=[k, v]) | dedupe(key=[k]) | stdout",
        MIXED,
    );
    assert_eq!(out, "1\t2\n0\t1\n2.5\t1\n");
}

#[test]
fn one_and_one_point_zero_are_one_key_in_top() {
    let out = run(
        "stdin(format=json, fields=[k]) | top(by=[k], n=1) | stdout",
        "{\"k\":2}\n{\"k\":1}\n{\"k\":1.0}\n{\"k\":2.5}\n",
    );
    assert_eq!(out, "1\t1\t2\n");
}

#[test]
fn one_and_one_point_zero_are_one_key_in_join() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (left, right) = (dir.path().join("l.jsonl"), dir.path().join("r.jsonl"));
    std::fs::write(&left, "{\"k\":1,\"a\":\"x\"}\n{\"k\":-0.0,\"a\":\"z\"}\n").expect("write");
    std::fs::write(&right, "{\"k\":1.0,\"b\":\"y\"}\n{\"k\":0,\"b\":\"w\"}\n").expect("write");
    let dsl = format!(
        "l = file(path={}, format=json, fields=[k, a])\n\
         r = file(path={}, format=json, fields=[k, b])\n\
         l | j = join(inputs=[{{from: l, key: k}}, {{from: r, key: k}}], select=[l.a, r.b]) | stdout\n\
         r | j",
        left.display(),
        right.display()
    );
    assert_eq!(sorted(&run(&dsl, "")), ["x\ty", "z\tw"]);
}

#[test]
fn negative_zero_matches_zero_in_lookup() {
    let dir = tempfile::tempdir().expect("tempdir");
    let table = dir.path().join("t.csv");
    std::fs::write(&table, "id,name\n0,zero\n1,one\n").expect("write");
    let out = run(
        &format!(
            "stdin(format=json, fields=[k]) | lookup(path={}, key=id, on=k, select=[name]) | stdout(fields=[name])",
            table.display()
        ),
        "{\"k\":-0.0}\n{\"k\":1.0}\n",
    );
    assert_eq!(out, "zero\none\n");
}

#[test]
fn large_integers_compare_exactly_with_floats() {
    // 2^53 + 1 is not a float: as one it would equal 2^53.
    let input = "{\"k\":9007199254740993}\n{\"k\":9007199254740992.0}\n";
    let out = run(
        "stdin(format=json, fields=[k]) | filter(\"k > 9007199254740992.0\") | stdout",
        input,
    );
    assert_eq!(out, "9007199254740993\n");
    let out = run(
        "stdin(format=json, fields=[k]) | aggregate(ops=[max(k), min(k), count_distinct(k)]) | stdout",
        input,
    );
    assert_eq!(out, "9007199254740993\t9007199254740992\t2\n");
}

#[test]
fn abs_round_floor_and_ceil_are_functions() {
    let out = run(
        "stdin(format=json, fields=[x]) | map(set={a: abs(x), r: round(x), r1: round(x, 1), f: floor(x), c: ceil(x)}, keep=[a, r, r1, f, c]) | stdout",
        "{\"x\":-2.25}\n{\"x\":2.5}\n{\"x\":-7}\n",
    );
    // Halves away from zero, as DuckDB: round(2.5) is 3, round(-2.25, 1) is -2.3.
    assert_eq!(
        out,
        "2.25\t-2\t-2.3\t-3\t-2\n2.5\t3\t2.5\t2\t3\n7\t-7\t-7\t-7\t-7\n"
    );
}

#[test]
fn the_hint_for_a_text_field_used_as_a_number_is_float() {
    let conf = tempfile::tempdir().expect("tempdir");
    let out = storm(conf.path())
        .args(["validate", "-e", "stdin | filter(\"line > 5\") | stdout"])
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    // `int("5.1")` is null: `float` reads decimals too.
    assert!(
        stderr.contains("convert it first: `float(line) > 5`"),
        "{stderr}"
    );
}

#[test]
fn a_global_aggregate_over_empty_input_prints_its_row_as_sql_does() {
    let dsl = "stdin(format=json, fields=[v]) | aggregate(ops=[count, sum(v), min(v), max(v), avg(v), count_distinct(v)]) x2 | stdout(format=json)";
    let out = run(dsl, "");
    assert_eq!(
        out,
        "{\"count\":0,\"sum_v\":null,\"min_v\":null,\"max_v\":null,\"avg_v\":null,\"count_distinct_v\":0}\n"
    );
    // With input, the one row is the answer, and no empty row is added.
    let out = run(
        "stdin(format=json, fields=[v]) | aggregate(ops=[count, sum(v)]) | stdout",
        "{\"v\":2}\n",
    );
    assert_eq!(out, "1\t2\n");
    // Grouped, an empty input has no groups and so no rows, as in SQL.
    let out = run(
        "stdin(format=json, fields=[v]) | aggregate(by=[v], ops=[count]) | stdout",
        "",
    );
    assert_eq!(out, "");
}

/// Python's `divmod` on floats (its documented definition): `None` for a zero divisor.
fn python_divmod(a: f64, b: f64) -> Option<(f64, f64)> {
    if b == 0.0 {
        return None;
    }
    let mut m = a % b;
    let mut div = (a - m) / b;
    if m != 0.0 {
        if (b < 0.0) != (m < 0.0) {
            m += b;
            div -= 1.0;
        }
    } else {
        m = 0.0f64.copysign(b);
    }
    let q = if div != 0.0 {
        let f = div.floor();
        if div - f > 0.5 {
            f + 1.0
        } else {
            f
        }
    } else {
        0.0f64.copysign(a / b)
    };
    Some((q, m))
}

#[derive(Debug, Clone, Copy)]
enum N {
    I(i64),
    F(f64),
}

impl N {
    fn json(self) -> String {
        match self {
            N::I(i) => i.to_string(),
            N::F(x) => serde_json::to_string(&x).expect("a finite float"),
        }
    }
    fn f(self) -> f64 {
        match self {
            N::I(i) => i as f64,
            N::F(x) => x,
        }
    }
}

/// How `stdout` writes a float result, or nothing for null.
fn float_text(x: Option<f64>) -> String {
    x.filter(|x| x.is_finite())
        .map(|x| x.to_string())
        .unwrap_or_default()
}

/// `a / b`, `a // b`, `a % b` as Python computes them, written as `stdout` writes them.
fn reference_row(a: N, b: N) -> String {
    let div = || match (a, b) {
        (_, N::I(0)) => None,
        // Both within 2^53: exact as floats, so IEEE division rounds the exact quotient once.
        _ => Some(a.f() / b.f()).filter(|_| b.f() != 0.0),
    };
    let (q, m) = match (a, b) {
        (N::I(_), N::I(0)) => (String::new(), String::new()),
        (N::I(x), N::I(y)) => {
            let q = (x - x.rem_euclid(y)) / y;
            // rem_euclid is never negative; Python's remainder has the divisor's sign.
            let q = if y < 0 && x.rem_euclid(y) != 0 {
                q - 1
            } else {
                q
            };
            (q.to_string(), (x - q * y).to_string())
        }
        _ => match python_divmod(a.f(), b.f()) {
            Some((q, m)) => (float_text(Some(q)), float_text(Some(m))),
            None => (String::new(), String::new()),
        },
    };
    format!("{}\t{q}\t{m}", float_text(div()))
}

fn number() -> impl Strategy<Value = N> {
    prop_oneof![
        (-1000i64..1000).prop_map(N::I),
        (-(1i64 << 52)..(1i64 << 52)).prop_map(N::I),
        Just(N::I(0)),
        (-1000.0f64..1000.0).prop_map(N::F),
        (-50i64..50).prop_map(|i| N::F(i as f64)),
        Just(N::F(-0.0)),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 8, ..ProptestConfig::default() })]

    /// `/`, `//` and `%` over random integers and floats agree with Python's, computed here.
    #[test]
    fn division_and_remainder_agree_with_python(pairs in prop::collection::vec((number(), number()), 1..60)) {
        let input: String = pairs
            .iter()
            .map(|(a, b)| format!("{{\"a\":{},\"b\":{}}}\n", a.json(), b.json()))
            .collect();
        let out = run(
            "stdin(format=json, fields=[a, b]) | map(set={d: a / b, q: a // b, m: a % b}, keep=[d, q, m]) | stdout",
            &input,
        );
        let want: Vec<String> = pairs.iter().map(|(a, b)| reference_row(*a, *b)).collect();
        let got: Vec<&str> = out.lines().collect();
        prop_assert_eq!(got, want);
    }

    /// Keys are equal exactly when `==` says so: `count` over random integers and floats
    /// (integral ones among them) gives one row per number, whichever way it was written.
    #[test]
    fn count_keys_are_numbers_equal_by_value(keys in prop::collection::vec(number(), 1..80)) {
        let input: String = keys.iter().map(|k| format!("{{\"k\":{}}}\n", k.json())).collect();
        let out = run("stdin(format=json, fields=[k]) | count(k) x2 | stdout", &input);
        // The reference: numbers by value (as a float: every test number is exact as one).
        let mut want: BTreeMap<u64, usize> = BTreeMap::new();
        for k in &keys {
            *want.entry((k.f() + 0.0).to_bits()).or_default() += 1;
        }
        let mut got: BTreeMap<u64, usize> = BTreeMap::new();
        for line in out.lines() {
            let (k, n) = line.split_once('\t').expect("key and count");
            let k: f64 = k.parse().expect("a number");
            let n: usize = n.parse().expect("a count");
            prop_assert!(got.insert((k + 0.0).to_bits(), n).is_none(), "{} twice in {}", k, out);
        }
        prop_assert_eq!(got, want);
    }
}
