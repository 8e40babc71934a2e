//! The aggregations `aggregate` computes (`ops: [count, sum(latency), percentile(latency, 0.99)
//! as p99]`): how an op is written and named, and its running state per key. Nulls are skipped
//! (as SQL skips them); a value an op cannot use (a string summed) is skipped and counted, so the
//! bolt can warn about it.
//!
//! `top(n, f)` gives the `n` most frequent values of `f` as a list of `[value, count]` pairs,
//! most frequent first, ties in the values' text order: `[["/a", 3], ["/b", 2]]`.

use super::exact::ExactSum;
use crate::tuple::Value;
use hyperloglogplus::{HyperLogLog, HyperLogLogPlus};
use sketches_ddsketch::{Config, DDSketch};

/// A HyperLogLog++ sketch of values; one fixed hasher, so the sketches of panes merge (and a
/// sketch saved by one run goes on in the next).
pub(crate) type Hll = HyperLogLogPlus<Value, FixedSip>;

/// Builds the standard library's SipHash with fixed keys (as `BuildHasherDefault` does); a
/// unit type serde can write, so a sketch can be saved.
#[derive(Clone, Copy, Debug, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct FixedSip;

impl std::hash::BuildHasher for FixedSip {
    type Hasher = std::collections::hash_map::DefaultHasher;
    fn build_hasher(&self) -> Self::Hasher {
        std::collections::hash_map::DefaultHasher::new()
    }
}

/// Precision 14: 16 Ki registers (about 12 KiB), a standard error of about 0.8%.
const HLL_PRECISION: u8 = 14;
use std::collections::{HashMap, HashSet};

/// One op as written: its kind, the field it reads, and its output name.
#[derive(Debug, Clone, PartialEq)]
pub struct OpSpec {
    pub(crate) kind: Kind,
    pub(crate) field: Option<String>,
    pub(crate) name: String,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Kind {
    Count,
    Sum,
    Avg,
    Min,
    Max,
    CountDistinct,
    /// `count_distinct` with `approx: true`: HyperLogLog++, bounded memory.
    ApproxDistinct,
    First,
    Last,
    Percentile(f64),
    /// The `n` most frequent values.
    Top(usize),
}

/// The op names, for help and did-you-mean.
const OPS: &[&str] = &[
    "count",
    "sum",
    "avg",
    "min",
    "max",
    "count_distinct",
    "first",
    "last",
    "percentile",
    "top",
];

impl OpSpec {
    /// Read `count`, `sum(f)`, `percentile(f, 0.99)`, each optionally followed by `as NAME`
    /// (`as` in any case).
    pub(crate) fn parse(text: &str) -> Result<OpSpec, String> {
        let text = text.trim();
        let (call, alias) = split_alias(text);
        if let Some(a) = alias {
            if a.is_empty() {
                return Err(format!("`{text}`: `as` needs a name after it"));
            }
            if !a.chars().all(|c| c.is_alphanumeric() || c == '_') {
                return Err(format!("`{a}` is not a field name (letters, digits, `_`)"));
            }
        }
        let (name, args) = match call.split_once('(') {
            None => (call, Vec::new()),
            Some((n, rest)) => {
                let inner = rest
                    .strip_suffix(')')
                    .ok_or_else(|| {
                        format!(
                            "`{call}`: a `)` is missing (in a YAML list, quote an op that holds a comma: \"percentile(f, 0.99)\")"
                        )
                    })?;
                (n.trim(), inner.split(',').map(str::trim).collect())
            }
        };
        let field = |i: usize| -> Result<String, String> {
            args.get(i)
                .filter(|a| !a.is_empty())
                .map(|a| a.to_string())
                .ok_or_else(|| format!("`{name}` needs a field: `{name}(FIELD)`"))
        };
        let (kind, field, arity) = match name {
            "count" => (Kind::Count, None, 0),
            "sum" => (Kind::Sum, Some(field(0)?), 1),
            "avg" => (Kind::Avg, Some(field(0)?), 1),
            "min" => (Kind::Min, Some(field(0)?), 1),
            "max" => (Kind::Max, Some(field(0)?), 1),
            "count_distinct" => (Kind::CountDistinct, Some(field(0)?), 1),
            "first" => (Kind::First, Some(field(0)?), 1),
            "last" => (Kind::Last, Some(field(0)?), 1),
            "percentile" => {
                let p: f64 = args
                    .get(1)
                    .and_then(|p| p.parse().ok())
                    .filter(|p| (0.0..=1.0).contains(p))
                    .ok_or_else(|| "`percentile(FIELD, P)` needs P between 0 and 1".to_string())?;
                (Kind::Percentile(p), Some(field(0)?), 2)
            }
            "top" => {
                let n: usize = args
                    .first()
                    .and_then(|n| n.parse().ok())
                    .filter(|n| *n >= 1)
                    .ok_or_else(|| "`top(N, FIELD)` needs N, a whole number ≥ 1".to_string())?;
                (Kind::Top(n), Some(field(1)?), 2)
            }
            other => {
                let close = OPS.iter().find(|o| strsim::jaro_winkler(o, other) > 0.8);
                let hint = close
                    .map(|c| format!(" (did you mean `{c}`?)"))
                    .unwrap_or_default();
                return Err(format!(
                    "unknown op `{other}`{hint}; ops: {}",
                    OPS.join(", ")
                ));
            }
        };
        if args.len() > arity && !(arity == 0 && args.iter().all(|a| a.is_empty())) {
            return Err(format!("`{name}` takes {arity} argument(s)"));
        }
        let name = match alias {
            Some(a) => a.to_string(),
            None => default_name(kind, field.as_deref()),
        };
        Ok(OpSpec { kind, field, name })
    }
}

/// `count`, `sum_latency`, `p99_latency`, `p99.9_latency`…
fn default_name(kind: Kind, field: Option<&str>) -> String {
    let f = field.unwrap_or_default();
    match kind {
        Kind::Count => "count".into(),
        Kind::Sum => format!("sum_{f}"),
        Kind::Avg => format!("avg_{f}"),
        Kind::Min => format!("min_{f}"),
        Kind::Max => format!("max_{f}"),
        Kind::CountDistinct | Kind::ApproxDistinct => format!("count_distinct_{f}"),
        Kind::First => format!("first_{f}"),
        Kind::Last => format!("last_{f}"),
        Kind::Percentile(p) => {
            // 100·P as written (`0.9999` → `99.99`), without the float's noise digits.
            let pct = format!("{:.6}", p * 100.0);
            let pct = pct.trim_end_matches('0').trim_end_matches('.');
            format!("p{pct}_{f}")
        }
        Kind::Top(_) => format!("top_{f}"),
    }
}

/// The running state of one op for one key.
#[derive(Clone)]
pub(crate) enum State {
    Count(i64),
    /// Integers add up as integers (wide enough never to overflow), floats exactly apart;
    /// the result is an integer when every number was one and it fits, else the correctly
    /// rounded float of the exact total (the same in any order).
    Sum {
        int: i128,
        float: ExactSum,
        is_float: bool,
        seen: bool,
    },
    Avg {
        sum: ExactSum,
        n: u64,
    },
    /// `min`/`max`: the best value of the kind of the first (numbers, strings or booleans
    /// compare only among themselves; other kinds are skipped), and in `others` the best of
    /// each other kind seen, first seen first, so that a partial state merged later keeps
    /// exactly what its values would have kept (see `partial.rs`).
    Extreme {
        best: Option<Value>,
        max: bool,
        others: Vec<Value>,
    },
    Distinct(HashSet<Value>),
    Approx(Box<Hll>),
    First(Option<Value>),
    Last(Option<Value>),
    Percentile {
        sketch: Box<DDSketch>,
        p: f64,
    },
    /// How often each value came, for `top(n, f)`.
    Frequent {
        counts: HashMap<Value, i64>,
        n: usize,
    },
}

impl State {
    pub(crate) fn new(kind: Kind) -> State {
        match kind {
            Kind::Count => State::Count(0),
            Kind::Sum => State::Sum {
                int: 0,
                float: ExactSum::default(),
                is_float: false,
                seen: false,
            },
            Kind::Avg => State::Avg {
                sum: ExactSum::default(),
                n: 0,
            },
            Kind::Min => State::Extreme {
                best: None,
                max: false,
                others: Vec::new(),
            },
            Kind::Max => State::Extreme {
                best: None,
                max: true,
                others: Vec::new(),
            },
            Kind::CountDistinct => State::Distinct(HashSet::new()),
            Kind::ApproxDistinct => match Hll::new(HLL_PRECISION, Default::default()) {
                Ok(h) => State::Approx(Box::new(h)),
                // A constant precision in range never fails; exact counting is the fallback.
                Err(_) => State::Distinct(HashSet::new()),
            },
            Kind::First => State::First(None),
            Kind::Last => State::Last(None),
            Kind::Percentile(p) => State::Percentile {
                sketch: Box::new(DDSketch::new(Config::defaults())),
                p,
            },
            Kind::Top(n) => State::Frequent {
                counts: HashMap::new(),
                n,
            },
        }
    }

    /// Take one value (`None` for `count`, which reads no field). `false`: the value could not
    /// be used (not a number where one is needed).
    pub(crate) fn add(&mut self, v: Option<&Value>) -> bool {
        if let State::Count(n) = self {
            *n += 1;
            return true;
        }
        let Some(v) = v.filter(|v| !matches!(v, Value::Null)) else {
            return true;
        };
        match self {
            State::Count(_) => true,
            State::Sum {
                int,
                float,
                is_float,
                seen,
            } => add_to_sum(int, float, is_float, seen, v),
            State::Avg { sum, n } => match v.as_f64() {
                Some(f) => {
                    sum.add(f);
                    *n += 1;
                    true
                }
                None => false,
            },
            State::Extreme { best, max, others } => keep_extreme(best, *max, others, v),
            State::Distinct(set) => {
                if !set.contains(v) {
                    set.insert(v.clone());
                }
                true
            }
            State::Approx(h) => {
                h.insert(v);
                true
            }
            State::First(f) => {
                if f.is_none() {
                    *f = Some(v.clone());
                }
                true
            }
            State::Last(l) => {
                *l = Some(v.clone());
                true
            }
            State::Percentile { sketch, .. } => match v.as_f64() {
                Some(f) if f.is_finite() => {
                    sketch.add(f);
                    true
                }
                _ => false,
            },
            State::Frequent { counts, .. } => {
                match counts.get_mut(v) {
                    Some(c) => *c += 1,
                    None => {
                        counts.insert(v.clone(), 1);
                    }
                }
                true
            }
        }
    }

    /// Fold another partial result of the same op into this one (a pane into its window;
    /// `other` is the later pane, which matters for `first` and `last`).
    pub(crate) fn merge(&mut self, other: &State) {
        match (self, other) {
            (State::Count(a), State::Count(b)) => *a += b,
            (
                State::Sum {
                    int,
                    float,
                    is_float,
                    seen,
                },
                State::Sum {
                    int: i2,
                    float: f2,
                    is_float: if2,
                    seen: s2,
                },
            ) => {
                *int = int.wrapping_add(*i2);
                float.merge(f2);
                *is_float |= *if2;
                *seen |= *s2;
            }
            (State::Avg { sum, n }, State::Avg { sum: s2, n: n2 }) => {
                sum.merge(s2);
                *n += n2;
            }
            (State::Extreme { .. }, State::Extreme { best: None, .. }) => {}
            (
                me @ State::Extreme { .. },
                State::Extreme {
                    best: Some(b),
                    others,
                    ..
                },
            ) => {
                for v in std::iter::once(b).chain(others) {
                    me.add(Some(v));
                }
            }
            (State::Distinct(a), State::Distinct(b)) => a.extend(b.iter().cloned()),
            (State::Approx(a), State::Approx(b)) => {
                let _ = a.merge(b.as_ref());
            }
            (State::First(a @ None), State::First(b)) => *a = b.clone(),
            (State::Last(a), State::Last(b @ Some(_))) => *a = b.clone(),
            (State::Percentile { sketch, .. }, State::Percentile { sketch: s2, .. }) => {
                let _ = sketch.merge(s2);
            }
            (State::Frequent { counts, .. }, State::Frequent { counts: c2, .. }) => {
                for (v, c) in c2 {
                    *counts.entry(v.clone()).or_default() += c;
                }
            }
            _ => {}
        }
    }

    /// The op's result now.
    pub(crate) fn value(&self) -> Value {
        match self {
            State::Count(n) => Value::Int(*n),
            State::Sum { seen: false, .. } => Value::Null,
            State::Sum {
                int,
                float,
                is_float,
                ..
            } => match (*is_float, i64::try_from(*int)) {
                (false, Ok(i)) => Value::Int(i),
                _ => {
                    let mut total = float.clone();
                    total.add_int(*int);
                    Value::Float(total.value())
                }
            },
            State::Avg { n: 0, .. } => Value::Null,
            State::Avg { sum, n } => Value::Float(sum.value() / *n as f64),
            State::Extreme { best, .. } | State::First(best) | State::Last(best) => {
                best.clone().unwrap_or(Value::Null)
            }
            State::Distinct(set) => Value::Int(set.len() as i64),
            State::Approx(h) => Value::Int(h.as_ref().clone().count().round() as i64),
            State::Percentile { sketch, p } => {
                match sketch.quantile(sketch_quantile(*p, sketch.count() as u64)) {
                    Ok(Some(q)) => Value::Float(q),
                    _ => Value::Null,
                }
            }
            State::Frequent { counts, n } => most_frequent(counts, *n),
        }
    }
}

/// An op's call and its `as` name: the last word `as` (any case) after the call's `)` or
/// name, `sum(x) as` giving an empty name (an error the caller reports).
fn split_alias(text: &str) -> (&str, Option<&str>) {
    let words: Vec<(usize, &str)> = text
        .split_whitespace()
        .map(|w| (w.as_ptr() as usize - text.as_ptr() as usize, w))
        .collect();
    let Some(at) = words
        .iter()
        .skip(1)
        .rposition(|(_, w)| w.eq_ignore_ascii_case("as"))
        .map(|i| words[i + 1].0)
    else {
        return (text, None);
    };
    (text[..at].trim(), Some(text[at + 2..].trim()))
}

/// The quantile to ask the sketch for, so that it answers with the value at the nearest rank
/// (`ceil(p·n)`, counting from 1) of `n` values: the sketch itself takes rank
/// `floor(q·(n − 1))` counting from 0, which for a small `n` or a high `p` is a rank or two
/// lower. Half a rank above the wanted one keeps float error from rounding it down.
fn sketch_quantile(p: f64, n: u64) -> f64 {
    if n <= 1 || p <= 0.0 {
        return p.clamp(0.0, 1.0);
    }
    let rank = ((p * n as f64).ceil() as u64).clamp(1, n) - 1;
    if rank >= n - 1 {
        return 1.0;
    }
    ((rank as f64 + 0.5) / (n - 1) as f64).min(1.0)
}

/// The `n` most frequent values as `[value, count]` pairs, most frequent first, ties in the
/// values' text order.
fn most_frequent(counts: &HashMap<Value, i64>, n: usize) -> Value {
    let mut all: Vec<(String, &Value, i64)> = counts
        .iter()
        .map(|(v, c)| (v.plain_text(), v, *c))
        .collect();
    all.sort_by(|a, b| b.2.cmp(&a.2).then_with(|| a.0.cmp(&b.0)));
    let pairs = all
        .into_iter()
        .take(n)
        .map(|(_, v, c)| Value::List(Box::new(vec![v.clone(), Value::Int(c)])))
        .collect();
    Value::List(Box::new(pairs))
}

/// Order of two values of comparable kinds: numbers by value (exactly, NaN above all),
/// strings by bytes, booleans.
fn compare(a: &Value, b: &Value) -> Option<std::cmp::Ordering> {
    match (a, b) {
        (Value::Str(x), Value::Str(y)) => Some(x.as_str().cmp(y.as_str())),
        (Value::Bool(x), Value::Bool(y)) => Some(x.cmp(y)),
        _ => Some(a.as_num()?.order(b.as_num()?)),
    }
}

/// `sum`'s step: an integer to the integers, any other number to the floats. `false` for a
/// value that is not a number.
#[inline]
fn add_to_sum(
    int: &mut i128,
    float: &mut ExactSum,
    is_float: &mut bool,
    seen: &mut bool,
    v: &Value,
) -> bool {
    match v {
        // Wrapping only past 2^64 integers at the extreme: never, in practice.
        Value::Int(i) => *int = int.wrapping_add(i128::from(*i)),
        _ => match v.as_f64() {
            Some(f) => {
                *is_float = true;
                float.add(f);
            }
            None => return false,
        },
    }
    // Seen once a number is added: a sum of no numbers is null, as an average is.
    *seen = true;
    true
}

/// `min`/`max`'s step: keep `v` if it beats the best so far. `false` for a value that does not
/// compare with it.
#[inline]
fn keep_extreme(best: &mut Option<Value>, max: bool, others: &mut Vec<Value>, v: &Value) -> bool {
    let beats = |v: &Value, b: &Value| {
        compare(v, b).map(|o| (o == std::cmp::Ordering::Greater) == max && o.is_ne())
    };
    let better = match best {
        None => true,
        Some(b) => match beats(v, b) {
            Some(better) => better,
            None => {
                // Of another kind: skipped, but the best of its kind is kept aside (values
                // that compare with nothing, lists and maps, are not).
                if compare(v, v).is_none() {
                    return false;
                }
                match others.iter_mut().find_map(|o| Some((beats(v, o)?, o))) {
                    Some((true, o)) => *o = v.clone(),
                    Some((false, _)) => {}
                    None => others.push(v.clone()),
                }
                return false;
            }
        },
    };
    if better {
        *best = Some(v.clone());
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against the nearest rank of the sorted values: within the sketch's 1%, for small and
    /// large inputs and every usual percentile.
    #[test]
    fn percentiles_are_the_value_at_the_nearest_rank() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::SmallRng::seed_from_u64(3);
        for n in [1usize, 2, 3, 4, 5, 10, 37, 216, 1000, 20_000] {
            let mut values: Vec<f64> = (0..n).map(|_| rng.random_range(0.5..900.0)).collect();
            let mut state = State::new(Kind::Percentile(0.5));
            for v in &values {
                state.add(Some(&Value::Float(*v)));
            }
            values.sort_by(f64::total_cmp);
            for p in [0.0, 0.01, 0.25, 0.5, 0.9, 0.95, 0.99, 0.999, 1.0] {
                if let State::Percentile { p: at, .. } = &mut state {
                    *at = p;
                }
                let rank = ((p * n as f64).ceil() as usize).clamp(1, n);
                let want = values[rank - 1];
                let Value::Float(got) = state.value() else {
                    panic!("no value for n={n} p={p}")
                };
                assert!(
                    (got - want).abs() <= want * 0.0101,
                    "n={n} p={p}: {got} is not within 1% of {want} (rank {rank})"
                );
            }
        }
        let mut four = State::new(Kind::Percentile(0.9));
        for v in 1..=4 {
            four.add(Some(&Value::Int(v)));
        }
        let Value::Float(got) = four.value() else {
            panic!("no value")
        };
        assert!((got - 4.0).abs() <= 0.04, "p90 of 1..4 is 4, not {got}");
    }

    #[test]
    fn ops_read_and_name() {
        let p = OpSpec::parse("percentile(latency_ms, 0.99)").expect("ok");
        assert_eq!(p.name, "p99_latency_ms");
        assert_eq!(p.kind, Kind::Percentile(0.99));
        assert_eq!(
            OpSpec::parse("percentile(x, 0.999)").expect("ok").name,
            "p99.9_x"
        );
        assert_eq!(
            OpSpec::parse("sum(bytes) as total").expect("ok").name,
            "total"
        );
        assert_eq!(OpSpec::parse("count").expect("ok").name, "count");
        assert!(OpSpec::parse("sum").is_err());
        assert!(OpSpec::parse("percentile(x, 2)").is_err());
        assert_eq!(
            OpSpec::parse("sum(line) AS total").expect("ok").name,
            "total"
        );
        for (p, name) in [
            ("0.99", "p99_x"),
            ("0.999", "p99.9_x"),
            ("0.9999", "p99.99_x"),
            ("0.123456", "p12.3456_x"),
            ("0.00001", "p0.001_x"),
            ("1", "p100_x"),
            ("0.5", "p50_x"),
        ] {
            let op = OpSpec::parse(&format!("percentile(x, {p})")).expect("ok");
            assert_eq!(op.name, name);
        }
        let e = OpSpec::parse("sum(line) as").expect_err("no name");
        assert!(e.contains("`as` needs a name"), "{e}");
        let e = OpSpec::parse("averge(x)").expect_err("unknown");
        assert!(e.contains("did you mean `avg`"), "{e}");
    }

    #[test]
    fn states_skip_nulls_and_keep_integers() {
        let mut s = State::new(Kind::Sum);
        for v in [Value::Int(2), Value::Null, Value::Int(3)] {
            assert!(s.add(Some(&v)));
        }
        assert_eq!(s.value(), Value::Int(5));
        assert!(s.add(Some(&Value::Float(0.5))));
        assert_eq!(s.value(), Value::Float(5.5));
        assert!(!s.add(Some(&Value::str("x"))));
        let mut none = State::new(Kind::Sum);
        assert!(!none.add(Some(&Value::str("x"))));
        assert_eq!(none.value(), Value::Null, "a sum of no numbers is null");
        let mut s = State::new(Kind::Sum);
        s.add(Some(&Value::Int(i64::MAX)));
        s.add(Some(&Value::Int(1)));
        assert_eq!(s.value(), Value::Float(i64::MAX as f64 + 1.0));
        let mut m = State::new(Kind::Max);
        for v in [3, 9, 4] {
            m.add(Some(&Value::Int(v)));
        }
        assert_eq!(m.value(), Value::Int(9));
        let mut d = State::new(Kind::CountDistinct);
        for v in ["a", "b", "a"] {
            d.add(Some(&Value::str(v)));
        }
        assert_eq!(d.value(), Value::Int(2));
        assert_eq!(State::new(Kind::Avg).value(), Value::Null);
    }

    #[test]
    fn approximate_distinct_counts_are_within_two_percent_and_merge() {
        let mut a = State::new(Kind::ApproxDistinct);
        let mut b = State::new(Kind::ApproxDistinct);
        for i in 0..60_000 {
            a.add(Some(&Value::Int(i)));
            b.add(Some(&Value::Int(i + 30_000)));
        }
        let Value::Int(n) = a.value() else {
            panic!("an integer")
        };
        assert!((n - 60_000).abs() < 1_200, "{n}");
        a.merge(&b);
        let Value::Int(n) = a.value() else {
            panic!("an integer")
        };
        assert!((n - 90_000).abs() < 1_800, "{n}");
    }

    #[test]
    fn top_gives_the_most_frequent_values_with_their_counts_and_merges() {
        let op = OpSpec::parse("top(2, path)").expect("ok");
        assert_eq!((op.kind, op.name.as_str()), (Kind::Top(2), "top_path"));
        assert!(OpSpec::parse("top(path)").is_err());
        assert!(OpSpec::parse("top(0, path)").is_err());
        let mut a = State::new(Kind::Top(2));
        let mut b = State::new(Kind::Top(2));
        for v in ["/a", "/b", "/a", "/c"] {
            a.add(Some(&Value::str(v)));
        }
        for v in ["/c", "/c", "/b"] {
            b.add(Some(&Value::str(v)));
        }
        let pair = |v: &str, c: i64| Value::List(Box::new(vec![Value::str(v), Value::Int(c)]));
        assert_eq!(
            a.value(),
            Value::List(Box::new(vec![pair("/a", 2), pair("/b", 1)]))
        );
        a.merge(&b);
        assert_eq!(
            a.value(),
            Value::List(Box::new(vec![pair("/c", 3), pair("/a", 2)]))
        );
    }

    #[test]
    fn percentiles_are_within_the_sketch_accuracy() {
        let mut s = State::new(Kind::Percentile(0.9));
        for i in 1..=1000 {
            s.add(Some(&Value::Int(i)));
        }
        let Value::Float(q) = s.value() else {
            panic!("a float")
        };
        assert!((q - 900.0).abs() / 900.0 < 0.02, "{q}");
    }
}
