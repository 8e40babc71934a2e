//! Java's `hashCode` for tuple values, so fields grouping places a key on the task Storm would
//! (Storm: `TupleUtils.chooseTaskIndex` = `floorMod(Arrays.asList(keys).hashCode(), numTasks)`).
//! Strings hash over UTF-16 code units as `String.hashCode`; integers as `Long.hashCode`
//! (multilang and JSON numbers are Longs in Storm); floats as `Double.hashCode`.
//!
//! `key_hash`, which fields grouping uses, departs from Java in one way: a float with an
//! integral value (`1.0`, `-0.0`) hashes as the integer it equals, since `1` and `1.0` are one
//! key and must reach one task (in Java `Double.hashCode(1.0)` differs from `Long.hashCode(1)`).
//! Partial key grouping keeps Java's hashes exactly: it spreads every key over two tasks
//! anyway, and so places keys on the tasks Storm's would.

use crate::tuple::Value;

/// `String.hashCode`: `s[0]*31^(n-1) + ... + s[n-1]` over UTF-16 code units, wrapping.
pub fn string_hash(s: &str) -> i32 {
    // One pass over the UTF-8 bytes, decoding a character only where one starts with a byte
    // over 0x7F (`encode_utf16` after an `is_ascii` check was two passes for most words).
    let bytes = s.as_bytes();
    let mut h: i32 = 0;
    let mut i = 0;
    // Four ASCII bytes at a time: h*31^4 + (b0*31^3 + b1*31^2 + b2*31 + b3). The bracket does
    // not depend on h, so the chain of multiplies is a quarter as long.
    while let Some(&[b0, b1, b2, b3]) = bytes.get(i..i + 4) {
        if (b0 | b1 | b2 | b3) >= 0x80 {
            break;
        }
        let quad = i32::from(b0) * 29_791 + i32::from(b1) * 961 + i32::from(b2) * 31;
        h = h.wrapping_mul(923_521).wrapping_add(quad + i32::from(b3));
        i += 4;
    }
    while i < bytes.len() {
        let b = bytes[i];
        if b < 0x80 {
            h = h.wrapping_mul(31).wrapping_add(i32::from(b));
            i += 1;
            continue;
        }
        let Some(c) = s.get(i..).and_then(|rest| rest.chars().next()) else {
            break;
        };
        let mut units = [0u16; 2];
        for &unit in c.encode_utf16(&mut units).iter() {
            h = h.wrapping_mul(31).wrapping_add(i32::from(unit));
        }
        i += c.len_utf8();
    }
    h
}

/// `Long.hashCode`.
fn long_hash(v: i64) -> i32 {
    (v ^ ((v as u64) >> 32) as i64) as i32
}

/// `Double.hashCode` (with Java's canonical NaN).
fn double_hash(v: f64) -> i32 {
    let bits = if v.is_nan() {
        0x7ff8_0000_0000_0000u64
    } else {
        v.to_bits()
    };
    (bits ^ (bits >> 32)) as i32
}

/// `hashCode` of one value as its Java counterpart would give it.
pub(crate) fn value_hash(v: &Value) -> i32 {
    hash(v, false)
}

/// `hashCode` of one value as a key: as Java's, but a float with an integral value hashes as
/// the integer it equals (see the module comment).
pub(crate) fn key_hash(v: &Value) -> i32 {
    hash(v, true)
}

fn hash(v: &Value, integral_as_long: bool) -> i32 {
    let hash = |v: &Value| hash(v, integral_as_long);
    match v {
        Value::Null => 0,
        Value::Bool(true) => 1231,
        Value::Bool(false) => 1237,
        Value::Int(i) => long_hash(*i),
        Value::Float(f) => match crate::tuple::numeric::float_as_int(*f) {
            Some(i) if integral_as_long => long_hash(i),
            _ => double_hash(*f),
        },
        Value::Str(s) => string_hash(s),
        Value::List(l) => l
            .iter()
            .fold(1i32, |h, v| h.wrapping_mul(31).wrapping_add(hash(v))),
        // AbstractMap.hashCode: sum of (key.hashCode ^ value.hashCode).
        Value::Map(m) => m.iter().fold(0i32, |acc, (k, v)| {
            acc.wrapping_add(string_hash(k) ^ hash(v))
        }),
    }
}

/// `List.hashCode`: `31*h + e.hashCode`, starting from 1.
fn list_hash<'a>(items: impl IntoIterator<Item = &'a Value>) -> i32 {
    items
        .into_iter()
        .fold(1i32, |h, v| h.wrapping_mul(31).wrapping_add(value_hash(v)))
}

/// The task index Storm's fields grouping chooses for these key values.
pub(crate) fn choose_index<'a>(
    keys: impl IntoIterator<Item = &'a Value>,
    num_tasks: usize,
) -> usize {
    floor_mod(list_hash(keys), num_tasks)
}

/// Java's `Math.floorMod(h, n)` for a task count `n` (at least 1).
#[inline]
pub(crate) fn floor_mod(h: i32, n: usize) -> usize {
    let n = n.max(1);
    if n.is_power_of_two() {
        // floorMod by a power of two is a mask of the two's-complement bits (no division).
        return (h as u32 as usize) & (n - 1);
    }
    i64::from(h).rem_euclid(n as i64) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    // Known vectors from Java: "hello".hashCode() == 99162322, "".hashCode() == 0,
    // "nathan".hashCode() == -1052620332, Arrays.asList("nathan").hashCode() == -1052620301.
    #[test]
    fn strings_hash_as_java() {
        assert_eq!(string_hash("straße ñ😀x"), {
            "straße ñ😀x"
                .encode_utf16()
                .fold(0i32, |h, u| h.wrapping_mul(31).wrapping_add(i32::from(u)))
        });
        assert_eq!(string_hash(""), 0);
        assert_eq!(string_hash("hello"), 99162322);
        assert_eq!(string_hash("nathan"), -1052620332);
        assert_eq!(list_hash([&Value::str("nathan")]), -1052620301);
        // "é".hashCode() == 233; "😀" is a surrogate pair: 55357*31 + 56832 == 1772899.
        assert_eq!(string_hash("é"), 233);
        assert_eq!(string_hash("😀"), 1772899);
    }

    #[test]
    fn numbers_hash_as_java() {
        assert_eq!(long_hash(1), 1);
        assert_eq!(long_hash(-1), 0);
        assert_eq!(long_hash(1 << 32), 1);
        assert_eq!(double_hash(1.0), 1072693248);
        assert_eq!(double_hash(1.5), 1073217536);
        assert_eq!(value_hash(&Value::Float(1.0)), 1072693248);
        // As a key, an integral float is the integer (a departure from Java, on purpose).
        assert_eq!(key_hash(&Value::Float(1.0)), key_hash(&Value::Int(1)));
        assert_eq!(key_hash(&Value::Float(-0.0)), key_hash(&Value::Int(0)));
        let nested = |x: Value| Value::list(vec![Value::str("a"), x]);
        assert_eq!(
            key_hash(&nested(Value::Float(7.0))),
            key_hash(&nested(Value::Int(7)))
        );
        assert_eq!(key_hash(&Value::Float(2.5)), double_hash(2.5));
        assert_eq!(value_hash(&Value::Bool(true)), 1231);
    }

    #[test]
    fn floor_mod_handles_negative_hashes() {
        // floorMod(-1052620301, 4) == 3 in Java.
        assert_eq!(choose_index([&Value::str("nathan")], 4), 3);
    }

    proptest::proptest! {
        /// `String.hashCode` is defined over UTF-16 code units: any text, any script.
        #[test]
        fn string_hash_is_javas_over_utf16(text in "\\PC{0,24}|[ -~]{0,40}|[a-z]{0,9}é[a-z]{0,9}") {
            let expected = text
                .encode_utf16()
                .fold(0i32, |h, u| h.wrapping_mul(31).wrapping_add(i32::from(u)));
            proptest::prop_assert_eq!(string_hash(&text), expected);
        }

        /// Fields grouping sends numerically equal keys to one task: an integral float hashes
        /// as its integer, and -0.0 as 0.
        #[test]
        fn an_integral_float_key_hashes_as_its_integer(i in -(1i64 << 53)..(1i64 << 53)) {
            proptest::prop_assert_eq!(
                key_hash(&Value::Float(i as f64)),
                key_hash(&Value::Int(i))
            );
            proptest::prop_assert_eq!(key_hash(&Value::Float(-0.0)), key_hash(&Value::Int(0)));
        }

        /// The task index is Java's `Math.floorMod(hash, n)` for every n, masked or divided.
        #[test]
        fn choose_index_is_floor_mod(word in "\\PC{0,12}", n in 1usize..70) {
            let h = i64::from(list_hash([&Value::str(&word)]));
            let expected = (((h % n as i64) + n as i64) % n as i64) as usize;
            proptest::prop_assert_eq!(choose_index([&Value::str(&word)], n), expected);
        }
    }
}
