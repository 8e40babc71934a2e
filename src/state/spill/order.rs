//! Order bytes: the key of a spilled entry in its on-disk table. Compared as bytes they sort
//! keys as the component's end-of-input output does, and two keys give the same bytes exactly
//! when they are equal (`1` and `1.0` are one key, as in memory), so the table both finds a
//! key and lists the keys in output order.

use crate::state::codec;
use crate::tuple::numeric::float_as_int;
use crate::tuple::Value;

/// Classes of a value in [`value_order`]: numbers below −2^63, other numbers, numbers from 2^63
/// on, NaN, strings, and everything else.
const LOW: u8 = 0x10;
const NUM: u8 = 0x11;
const HIGH: u8 = 0x12;
const NAN: u8 = 0x13;
const STR: u8 = 0x20;
const OTHER: u8 = 0x30;

/// `v` with every float that equals an integer as that integer (how `Value`'s `Eq` and `Hash`
/// see it) and one NaN, in lists and maps too.
fn canonical(v: &Value) -> std::borrow::Cow<'_, Value> {
    use std::borrow::Cow;
    match v {
        Value::Float(f) => match float_as_int(*f) {
            Some(i) => Cow::Owned(Value::Int(i)),
            None if f.is_nan() => Cow::Owned(Value::Float(f64::NAN)),
            None => Cow::Borrowed(v),
        },
        Value::List(items) if items.iter().any(has_float) => Cow::Owned(Value::List(Box::new(
            items.iter().map(|i| canonical(i).into_owned()).collect(),
        ))),
        Value::Map(m) if m.values().any(has_float) => Cow::Owned(Value::Map(Box::new(
            m.iter()
                .map(|(k, v)| (k.clone(), canonical(v).into_owned()))
                .collect(),
        ))),
        _ => Cow::Borrowed(v),
    }
}

fn has_float(v: &Value) -> bool {
    match v {
        Value::Float(_) => true,
        Value::List(items) => items.iter().any(has_float),
        Value::Map(m) => m.values().any(has_float),
        _ => false,
    }
}

/// A float's bits turned so that unsigned big-endian order is numeric order.
fn float_bits(f: f64) -> [u8; 8] {
    let bits = f.to_bits();
    let turned = if bits >> 63 == 1 {
        !bits
    } else {
        bits | (1 << 63)
    };
    turned.to_be_bytes()
}

fn int_bits(i: i64) -> [u8; 8] {
    ((i as u64) ^ (1 << 63)).to_be_bytes()
}

/// Order bytes of one value as `count` sorts its keys: numbers by value (integers and floats
/// together), strings by their bytes after every number, other values after strings (by their
/// encoding). Nothing follows the value: use [`escaped`] to put it before another.
pub(crate) fn value_order(v: &Value, out: &mut Vec<u8>) {
    match v {
        Value::Str(s) => str_order(s, out),
        Value::Int(i) => {
            out.push(NUM);
            out.extend_from_slice(&int_bits(*i));
        }
        Value::Float(f) if f.is_nan() => out.push(NAN),
        Value::Float(f) => match float_as_int(*f) {
            Some(i) => value_order(&Value::Int(i), out),
            None if *f < -TWO_POW_63 => {
                out.push(LOW);
                out.extend_from_slice(&float_bits(*f));
            }
            None if *f >= TWO_POW_63 => {
                out.push(HIGH);
                out.extend_from_slice(&float_bits(*f));
            }
            // Within one integer, by the float itself: after the integer (a prefix of it).
            None => {
                out.push(NUM);
                out.extend_from_slice(&int_bits(f.floor() as i64));
                out.extend_from_slice(&float_bits(*f));
            }
        },
        other => {
            out.push(OTHER);
            codec::encode(&canonical(other), out);
        }
    }
}

const TWO_POW_63: f64 = 9_223_372_036_854_775_808.0;

/// Order bytes of a string key (as [`value_order`] gives for `Value::Str`).
pub(crate) fn str_order(s: &str, out: &mut Vec<u8>) {
    out.push(STR);
    out.extend_from_slice(s.as_bytes());
}

/// Append `bytes` so that what follows cannot change their order: 0 and 1 are escaped
/// (0 → 1 1, 1 → 1 2) and a 0 ends them, below every escaped byte.
fn escaped(bytes: &[u8], out: &mut Vec<u8>) {
    for &b in bytes {
        match b {
            0 | 1 => out.extend_from_slice(&[1, b + 1]),
            _ => out.push(b),
        }
    }
    out.push(0);
}

/// Order bytes of a key of several values, compared value by value as `count` does.
pub(crate) fn values_order(values: &[Value], out: &mut Vec<u8>) {
    let mut one = Vec::new();
    for v in values {
        one.clear();
        value_order(v, &mut one);
        escaped(&one, out);
    }
}

/// Order bytes of a key of several values as `aggregate` sorts its rows: by the plain text of
/// the values (each followed by U+001F), then each value's type; its encoding last, so keys of
/// the same text and types stay apart.
pub(crate) fn text_order(values: &[Value], rank: impl Fn(&Value) -> u8, out: &mut Vec<u8>) {
    let mut text = String::new();
    let canon: Vec<std::borrow::Cow<'_, Value>> = values.iter().map(canonical).collect();
    for v in &canon {
        v.write_plain(&mut text);
        text.push('\u{1f}');
    }
    escaped(text.as_bytes(), out);
    let ranks: Vec<u8> = canon.iter().map(|v| rank(v)).collect();
    escaped(&ranks, out);
    for v in &canon {
        codec::encode(v, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn order(v: &Value) -> Vec<u8> {
        let mut out = Vec::new();
        value_order(v, &mut out);
        out
    }

    fn number() -> impl Strategy<Value = Value> {
        prop_oneof![
            any::<i64>().prop_map(Value::Int),
            (-5i64..5).prop_map(Value::Int),
            any::<f64>().prop_map(Value::Float),
            (-5.0f64..5.0).prop_map(Value::Float),
            (-5i64..5).prop_map(|i| Value::Float(i as f64)),
        ]
    }

    proptest! {
        /// Numbers' order bytes sort as the numbers and are equal exactly when they are.
        #[test]
        fn number_bytes_sort_as_numbers(a in number(), b in number()) {
            let (x, y) = (a.as_num().expect("a number"), b.as_num().expect("a number"));
            prop_assert_eq!(order(&a).cmp(&order(&b)), x.order(y), "{:?} {:?}", a, b);
        }

        /// Strings sort by their bytes, after every number; keys of several values sort
        /// value by value.
        #[test]
        fn strings_and_pairs_sort_as_count_sorts(a in "[a-c\u{0}\u{1}]{0,4}", b in "[a-c\u{0}\u{1}]{0,4}", n in number()) {
            prop_assert_eq!(order(&Value::str(&a)).cmp(&order(&Value::str(&b))), a.cmp(&b));
            prop_assert!(order(&n) < order(&Value::str(&a)));
            let pair = |s: &str, v: &Value| {
                let mut out = Vec::new();
                values_order(&[Value::str(s), v.clone()], &mut out);
                out
            };
            let want = a.cmp(&b).then_with(|| order(&n).cmp(&order(&Value::Int(0))));
            prop_assert_eq!(pair(&a, &n).cmp(&pair(&b, &Value::Int(0))), want);
        }
    }

    #[test]
    fn equal_keys_give_equal_bytes() {
        assert_eq!(order(&Value::Int(1)), order(&Value::Float(1.0)));
        assert_eq!(order(&Value::Int(0)), order(&Value::Float(-0.0)));
        let list = |v: Value| Value::list(vec![v]);
        assert_eq!(order(&list(Value::Int(2))), order(&list(Value::Float(2.0))));
        let rank = |_: &Value| 0u8;
        let (mut a, mut b) = (Vec::new(), Vec::new());
        text_order(&[Value::Int(3)], rank, &mut a);
        text_order(&[Value::Float(3.0)], rank, &mut b);
        assert_eq!(a, b);
    }
}
