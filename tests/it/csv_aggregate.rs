//! A property of CSV reading and aggregation together: for random CSV tables — keys that are
//! words, integers, leading-zero ids and quoted text with commas and quotes; values that are
//! integers, decimals (with and without trailing zeros) and empty cells — storm's `aggregate`
//! per key (`count`, `sum`, `min`, `max`) equals a reference computed here from the cells as a
//! DuckDB or Miller user reads them: integers and decimals are numbers, leading-zero and other
//! text stays text, an empty cell is null and is skipped by `sum`, `min` and `max` (null when a
//! key has no value, as SQL says).

use std::collections::BTreeMap;

use proptest::prelude::*;
use serde_json::Value;

/// A key cell as written in the file, and the value it reads as.
fn key_cells() -> impl Strategy<Value = (String, Value)> {
    prop_oneof![
        Just(("a".to_string(), Value::from("a"))),
        Just(("b b".to_string(), Value::from("b b"))),
        Just(("007".to_string(), Value::from("007"))),
        Just(("7".to_string(), Value::from(7))),
        Just(("-12".to_string(), Value::from(-12))),
        Just(("\"x,y\"".to_string(), Value::from("x,y"))),
        Just(("\"say \"\"hi\"\"\"".to_string(), Value::from("say \"hi\""))),
        Just(("".to_string(), Value::Null)),
    ]
}

/// A value cell as written, and the number it reads as (quarters, so every sum is exact in
/// binary floating point whatever the order of addition), or none for an empty cell.
fn value_cells() -> impl Strategy<Value = (String, Option<Num>)> {
    prop_oneof![
        (-1000i64..1000).prop_map(|i| (i.to_string(), Some(Num::Int(i)))),
        (-4000i64..4000).prop_map(|q| {
            let f = q as f64 / 4.0;
            (format!("{f:.2}"), Some(Num::Float(f)))
        }),
        Just(("".to_string(), None)),
    ]
}

#[derive(Clone, Copy, Debug)]
enum Num {
    Int(i64),
    Float(f64),
}

impl Num {
    fn as_f64(self) -> f64 {
        match self {
            Num::Int(i) => i as f64,
            Num::Float(f) => f,
        }
    }
}

/// One generated row: the key cell (as written, as read) and the value cell (as written, as read).
type Row = ((String, Value), (String, Option<Num>));

/// The reference: per key, the row count and the sum, min and max of its values.
fn reference(rows: &[Row]) -> Vec<String> {
    let mut per_key: BTreeMap<String, (Value, u64, Vec<Num>)> = BTreeMap::new();
    for ((_, key), (_, value)) in rows {
        let entry = per_key
            .entry(key.to_string())
            .or_insert_with(|| (key.clone(), 0, Vec::new()));
        entry.1 += 1;
        entry.2.extend(*value);
    }
    let mut out: Vec<String> = per_key
        .into_values()
        .map(|(key, count, values)| {
            let (sum, min, max) = if values.is_empty() {
                (Value::Null, Value::Null, Value::Null)
            } else {
                let all_int = values.iter().all(|v| matches!(v, Num::Int(_)));
                let sum: f64 = values.iter().map(|v| v.as_f64()).sum();
                let min = values
                    .iter()
                    .map(|v| v.as_f64())
                    .fold(f64::INFINITY, f64::min);
                let max = values
                    .iter()
                    .map(|v| v.as_f64())
                    .fold(f64::NEG_INFINITY, f64::max);
                let num = |f: f64, int: bool| {
                    if int {
                        Value::from(f as i64)
                    } else {
                        Value::from(f)
                    }
                };
                (num(sum, all_int), num(min, all_int), num(max, all_int))
            };
            row(&[key, Value::from(count), sum, min, max])
        })
        .collect();
    out.sort();
    out
}

/// A row as compared: numbers by value (an integral float equals the integer), text quoted.
fn row(values: &[Value]) -> String {
    values
        .iter()
        .map(|v| match v {
            Value::Number(n) => match (n.as_i64(), n.as_f64()) {
                (Some(i), _) => i.to_string(),
                (None, Some(f)) if f.fract() == 0.0 => format!("{}", f as i64),
                _ => n.to_string(),
            },
            other => other.to_string(),
        })
        .collect::<Vec<_>>()
        .join(" | ")
}

fn storm_rows(csv: &str) -> Vec<String> {
    let conf = tempfile::tempdir().expect("tempdir");
    let out = super::run::storm(conf.path())
        .args([
            "run",
            "-e",
            "stdin(format=csv, header=true, fields=[k, v]) \
             | aggregate(by=[k], ops=[count, sum(v), min(v), max(v)]) | stdout(format=json)",
        ])
        .write_stdin(csv.to_string())
        .output()
        .expect("storm runs");
    assert!(
        out.status.success(),
        "storm failed on\n{csv}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut rows: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|line| match serde_json::from_str(line) {
            Ok(Value::Object(o)) => row(&o.into_iter().map(|(_, v)| v).collect::<Vec<_>>()),
            _ => panic!("not a JSON object: {line}"),
        })
        .collect();
    rows.sort();
    rows
}

proptest! {
    // Each case runs the binary: few cases, each a fraction of a second.
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn aggregate_per_key_over_random_csv_equals_the_reference(
        rows in proptest::collection::vec((key_cells(), value_cells()), 1..60)
    ) {
        let mut csv = String::from("k,v\n");
        for ((key, _), (value, _)) in &rows {
            csv += &format!("{key},{value}\n");
        }
        prop_assert_eq!(storm_rows(&csv), reference(&rows));
    }
}
