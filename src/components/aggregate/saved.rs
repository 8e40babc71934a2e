//! An op's running state as a typed value, for checkpoints, and back: exactly, so a resumed
//! aggregate goes on as if never stopped. `count` is its integer; `sum` its integer or float
//! (null before a number); `avg` `[sum, n]`; `min`, `max`, `first`, `last` the value kept (null
//! before one); `count_distinct` the list of values seen; `top(n, f)` `[value, count]` pairs;
//! the sketches (`approx` distinct counts, `percentile`) their fields as serde writes them
//! (maps and lists of numbers), null while empty.

use super::exact::ExactSum;
use super::ops::{Hll, Kind, State};
use crate::tuple::Value;
use sketches_ddsketch::DDSketch;

/// `state` as a value.
pub(crate) fn encode(state: &State) -> Value {
    match state {
        // Their state is their result (null before a value).
        State::Count(_) | State::Extreme { .. } | State::First(_) | State::Last(_) => state.value(),
        State::Sum { seen: false, .. } => Value::Null,
        State::Sum {
            int,
            float,
            is_float,
            ..
        } => match (*is_float, i64::try_from(*int)) {
            (false, Ok(i)) => Value::Int(i),
            (false, Err(_)) => Value::str(&int.to_string()),
            (true, _) if *int == 0 => float.to_value(),
            (true, _) => Value::list(vec![Value::str(&int.to_string()), float.to_value()]),
        },
        State::Avg { sum, n } => Value::list(vec![sum.to_value(), Value::Int(*n as i64)]),
        State::Distinct(set) => {
            let mut all: Vec<Value> = set.iter().cloned().collect();
            all.sort_by_cached_key(Value::plain_text);
            Value::list(all)
        }
        State::Approx(h) => sorted_tmpset(serialized(h.as_ref())),
        State::Percentile { sketch, .. } if sketch.count() == 0 => Value::Null,
        State::Percentile { sketch, .. } => serialized(sketch.as_ref()),
        State::Frequent { counts, .. } => {
            let mut all: Vec<Value> = counts
                .iter()
                .map(|(v, c)| Value::list(vec![v.clone(), Value::Int(*c)]))
                .collect();
            all.sort_by_cached_key(Value::plain_text);
            Value::list(all)
        }
    }
}

/// The state of an op of `kind` saved as `v`; an error says what was expected.
pub(crate) fn decode(kind: Kind, v: &Value) -> Result<State, String> {
    let mut state = State::new(kind);
    let bad = |what: &str| format!("{what} expected, found {}", shown(v));
    match (&mut state, v) {
        (_, Value::Null) if !matches!(kind, Kind::Count | Kind::Avg) => {}
        (State::Count(n), Value::Int(i)) if *i >= 0 => *n = *i,
        (State::Count(_), _) => return Err(bad("a count")),
        (State::Sum { .. }, v) => state = decode_sum(v).ok_or_else(|| bad("a sum"))?,
        (State::Avg { sum, n }, Value::List(l)) => match l.as_slice() {
            [s, Value::Int(c)] if *c >= 0 => {
                *sum = ExactSum::from_value(s).ok_or_else(|| bad("[sum, n]"))?;
                *n = *c as u64;
            }
            _ => return Err(bad("[sum, n]")),
        },
        (State::Avg { .. }, _) => return Err(bad("[sum, n]")),
        (State::Extreme { best: k, .. } | State::First(k) | State::Last(k), v) => {
            *k = Some(v.clone())
        }
        (State::Distinct(set), Value::List(l)) => set.extend(l.iter().cloned()),
        (State::Distinct(_), _) => return Err(bad("a list of values")),
        (State::Approx(h), v) => **h = deserialized::<Hll>(v)?,
        (State::Percentile { sketch, .. }, v) => **sketch = deserialized::<DDSketch>(v)?,
        (State::Frequent { counts, .. }, Value::List(l)) => {
            for pair in l.iter() {
                match pair {
                    Value::List(p) if matches!(p.as_slice(), [_, Value::Int(_)]) => {
                        if let [v, Value::Int(c)] = p.as_slice() {
                            counts.insert(v.clone(), *c);
                        }
                    }
                    _ => return Err(bad("[value, count] pairs")),
                }
            }
        }
        (State::Frequent { .. }, _) => return Err(bad("[value, count] pairs")),
    }
    Ok(state)
}

/// A `sum` saved by [`encode`]: an integer (as a number, or as text past 64 bits), the exact
/// float sum, or `[integer text, float sum]`.
fn decode_sum(v: &Value) -> Option<State> {
    let int = |v: &Value| match v {
        Value::Int(i) => Some(i128::from(*i)),
        Value::Str(s) => s.parse().ok(),
        _ => None,
    };
    let (int, float, is_float) = match v {
        Value::Int(_) | Value::Str(_) => (int(v)?, ExactSum::default(), false),
        Value::List(l) => match l.as_slice() {
            [i @ Value::Str(_), f] => (int(i)?, ExactSum::from_value(f)?, true),
            _ => (0, ExactSum::from_value(v)?, true),
        },
        _ => (0, ExactSum::from_value(v)?, true),
    };
    Some(State::Sum {
        int,
        float,
        is_float,
        seen: true,
    })
}

/// A value for messages, cut short.
fn shown(v: &Value) -> String {
    let text = v.to_json().to_string();
    match text.char_indices().nth(60) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text,
    }
}

/// A sketch's fields as a value (through serde's tree, which keeps floats exactly).
fn serialized(s: &impl serde::Serialize) -> Value {
    serde_json::to_value(s).map_or(Value::Null, |j| Value::from_json(&j))
}

/// The sketch's buffer of pending hashes is a set: sorted, the same sketch saves the same.
fn sorted_tmpset(mut v: Value) -> Value {
    if let Value::Map(m) = &mut v {
        if let Some(Value::List(l)) = m.get_mut("tmpset") {
            l.sort_by_key(|h| match h {
                Value::Int(i) => *i,
                _ => i64::MIN,
            });
        }
    }
    v
}

fn deserialized<T: serde::de::DeserializeOwned>(v: &Value) -> Result<T, String> {
    serde_json::from_value(v.to_json()).map_err(|e| format!("an unreadable sketch ({e})"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const KINDS: &[Kind] = &[
        Kind::Count,
        Kind::Sum,
        Kind::Avg,
        Kind::Min,
        Kind::Max,
        Kind::CountDistinct,
        Kind::ApproxDistinct,
        Kind::First,
        Kind::Last,
        Kind::Percentile(0.9),
        Kind::Top(3),
    ];

    fn value() -> impl Strategy<Value = Value> {
        prop_oneof![
            (-50i64..50).prop_map(Value::Int),
            (-50.0f64..50.0).prop_map(Value::Float),
            (0u8..8).prop_map(|c| Value::str(&format!("s{c}"))),
            Just(Value::Null),
            Just(Value::Int(i64::MAX)),
        ]
    }

    proptest! {
        /// Saved and read back at any point, an op's state gives the same values as the
        /// original from then on, and merges the same.
        #[test]
        fn states_round_trip_exactly(
            kind in prop::sample::select(KINDS),
            before in proptest::collection::vec(value(), 0..40),
            after in proptest::collection::vec(value(), 0..40),
        ) {
            let mut original = State::new(kind);
            for v in &before {
                original.add(Some(v));
            }
            let saved = encode(&original);
            let mut copy = decode(kind, &saved).expect("decodes");
            prop_assert_eq!(encode(&copy), saved);
            for v in &after {
                original.add(Some(v));
                copy.add(Some(v));
            }
            prop_assert_eq!(copy.value(), original.value());
            let (mut a, mut b) = (State::new(kind), State::new(kind));
            a.merge(&original);
            b.merge(&copy);
            prop_assert_eq!(encode(&a), encode(&b));
        }
    }

    /// A sketch past its sparse form (dense registers) saves and goes on exactly too.
    #[test]
    fn dense_distinct_sketches_round_trip() {
        let mut original = State::new(Kind::ApproxDistinct);
        for i in 0..30_000 {
            original.add(Some(&Value::Int(i)));
        }
        let mut copy = decode(Kind::ApproxDistinct, &encode(&original)).expect("decodes");
        for i in 20_000..40_000 {
            original.add(Some(&Value::Int(i)));
            copy.add(Some(&Value::Int(i)));
        }
        assert_eq!(copy.value(), original.value());
        assert_eq!(encode(&copy), encode(&original));
    }

    #[test]
    fn unreadable_states_are_errors_that_say_what_was_expected() {
        assert_eq!(
            decode(Kind::Count, &Value::str("x")).err(),
            Some("a count expected, found \"x\"".to_string())
        );
        assert!(decode(Kind::Avg, &Value::Int(1)).is_err());
        let e = decode(Kind::Percentile(0.5), &Value::Int(3))
            .err()
            .unwrap_or_default();
        assert!(e.starts_with("an unreadable sketch"), "{e}");
        assert!(decode(Kind::Top(2), &Value::str("x")).is_err());
    }
}
