//! Numbers as users of Python and SQL expect them: integers and floats compare exactly
//! (no rounding of a large integer to a float), a float with an integral value is the same
//! key as that integer, `-0.0` is `0`, and every NaN is one value, greater than any number
//! (as DuckDB orders it). Also the arithmetic whose rules differ from Rust's: `/` that always
//! yields a float, floor division `//` and a remainder `%` with the divisor's sign.

use std::cmp::Ordering;

/// 2^63 as a float: the first float above every `i64`.
const TWO_POW_63: f64 = 9_223_372_036_854_775_808.0;

/// The integer a float is equal to, when it has an integral value in `i64`'s range
/// (`-0.0` is `0`).
#[inline]
pub(crate) fn float_as_int(x: f64) -> Option<i64> {
    // Every float in [-2^63, 2^63) converts exactly once it has no fraction.
    (x.fract() == 0.0 && (-TWO_POW_63..TWO_POW_63).contains(&x)).then_some(x as i64)
}

/// Order of an integer and a float, exactly. NaN is above every number.
pub(crate) fn cmp_int_float(i: i64, x: f64) -> Ordering {
    if x.is_nan() || x >= TWO_POW_63 {
        return Ordering::Less;
    }
    if x < -TWO_POW_63 {
        return Ordering::Greater;
    }
    let whole = x.trunc();
    // In range and without fraction: exact.
    match i.cmp(&(whole as i64)) {
        Ordering::Equal => 0.0f64.partial_cmp(&(x - whole)).unwrap_or(Ordering::Equal),
        other => other,
    }
}

/// Order of two floats: `-0.0` equals `0.0`, NaN equals NaN and is above every number.
pub(crate) fn cmp_floats(a: f64, b: f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
    }
}

/// A number, exact when an integer.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Num {
    Int(i64),
    Float(f64),
}

impl Num {
    /// The total order of numbers described in the module comment.
    pub(crate) fn order(self, other: Num) -> Ordering {
        match (self, other) {
            (Num::Int(a), Num::Int(b)) => a.cmp(&b),
            (Num::Int(a), Num::Float(b)) => cmp_int_float(a, b),
            (Num::Float(a), Num::Int(b)) => cmp_int_float(b, a).reverse(),
            (Num::Float(a), Num::Float(b)) => cmp_floats(a, b),
        }
    }

    pub(crate) fn as_f64(self) -> f64 {
        match self {
            Num::Int(i) => i as f64,
            Num::Float(x) => x,
        }
    }
}

/// The bits a float hashes as when it is not an integer's value: one NaN for all.
#[inline]
pub(crate) fn float_key_bits(x: f64) -> u64 {
    if x.is_nan() {
        f64::NAN.to_bits()
    } else {
        x.to_bits()
    }
}

/// `a / b` as a float (Python's true division), correctly rounded for integers of any size;
/// `None` for a zero divisor.
pub(crate) fn true_div(a: Num, b: Num) -> Option<f64> {
    if b.as_f64() == 0.0 {
        return None;
    }
    Some(match (a, b) {
        (Num::Int(x), Num::Int(y)) => int_div(x, y),
        _ => a.as_f64() / b.as_f64(),
    })
}

/// The float nearest `x / y` (`y` not zero).
fn int_div(x: i64, y: i64) -> f64 {
    let (ux, uy) = (x.unsigned_abs(), y.unsigned_abs());
    if ux >> 53 == 0 && uy >> 53 == 0 {
        // Both exact as floats: IEEE division rounds the exact quotient once.
        return x as f64 / y as f64;
    }
    if ux == 0 {
        return 0.0;
    }
    // Scale the dividend so the integer quotient has at least 55 bits, then keep one more
    // bit saying whether anything was left over: converting that to a float rounds as the
    // exact quotient would (the leftover breaks what would look like a tie).
    let bits = |n: u64| 64 - n.leading_zeros() as i32;
    let shift = (55 + bits(uy) - bits(ux)).max(0);
    let scaled = u128::from(ux) << shift;
    let (q, r) = (scaled / u128::from(uy), scaled % u128::from(uy));
    let with_sticky = (q << 1) | u128::from(r != 0);
    // A power of two: scaling by it is exact.
    let magnitude = with_sticky as f64 * 2f64.powi(-(shift + 1));
    if (x < 0) != (y < 0) {
        -magnitude
    } else {
        magnitude
    }
}

/// `a // b` on integers: the quotient rounded toward negative infinity; `None` for a zero
/// divisor or a result out of range.
pub(crate) fn floor_div_int(a: i64, b: i64) -> Option<i64> {
    let q = a.checked_div(b)?;
    let r = a.checked_rem(b)?;
    Some(if r != 0 && ((r < 0) != (b < 0)) {
        q - 1
    } else {
        q
    })
}

/// `a % b` on integers with the sign of `b` (Python's); `None` for a zero divisor.
pub(crate) fn py_mod_int(a: i64, b: i64) -> Option<i64> {
    if b == 0 {
        return None;
    }
    // i64::MIN % -1 overflows in Rust; the remainder is 0.
    let r = a.checked_rem(b).unwrap_or(0);
    Some(if r != 0 && ((r < 0) != (b < 0)) {
        r + b
    } else {
        r
    })
}

/// `a % b` on floats with the sign of `b` (Python's); `None` for a zero divisor.
pub(crate) fn py_mod_float(a: f64, b: f64) -> Option<f64> {
    float_divmod(a, b).map(|(_, m)| m)
}

/// `a // b` on floats: floored, as a float (Python's); `None` for a zero divisor.
pub(crate) fn floor_div_float(a: f64, b: f64) -> Option<f64> {
    float_divmod(a, b).map(|(q, _)| q)
}

/// Python's `divmod` of floats: the remainder from `fmod` moved to the divisor's sign (a zero
/// one too), and the quotient `(a - remainder) / b` snapped to the whole number it is meant
/// to be.
fn float_divmod(a: f64, b: f64) -> Option<(f64, f64)> {
    if b == 0.0 {
        return None;
    }
    let mut m = a % b;
    let mut div = (a - m) / b;
    if m == 0.0 {
        m = 0.0f64.copysign(b);
    } else if (m < 0.0) != (b < 0.0) {
        m += b;
        div -= 1.0;
    }
    let q = if div == 0.0 {
        0.0f64.copysign(a / b)
    } else {
        // `div` is whole but for rounding: take the nearest whole number.
        let whole = div.floor();
        if div - whole > 0.5 {
            whole + 1.0
        } else {
            whole
        }
    };
    Some((q, m))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_integers_compare_exactly_with_floats() {
        let two_53 = 9_007_199_254_740_992i64;
        assert_eq!(cmp_int_float(two_53 + 1, two_53 as f64), Ordering::Greater);
        assert_eq!(cmp_int_float(two_53, two_53 as f64), Ordering::Equal);
        assert_eq!(cmp_int_float(i64::MAX, TWO_POW_63), Ordering::Less);
        assert_eq!(cmp_int_float(i64::MIN, -TWO_POW_63), Ordering::Equal);
        assert_eq!(cmp_int_float(3, 3.5), Ordering::Less);
        assert_eq!(cmp_int_float(-3, -3.5), Ordering::Greater);
        assert_eq!(cmp_int_float(0, -0.0), Ordering::Equal);
        assert_eq!(cmp_int_float(i64::MAX, f64::NAN), Ordering::Less);
    }

    #[test]
    fn integral_floats_are_integers() {
        assert_eq!(float_as_int(1.0), Some(1));
        assert_eq!(float_as_int(-0.0), Some(0));
        assert_eq!(float_as_int(1.5), None);
        assert_eq!(float_as_int(TWO_POW_63), None);
        assert_eq!(float_as_int(-TWO_POW_63), Some(i64::MIN));
        assert_eq!(float_as_int(f64::NAN), None);
        assert_eq!(float_as_int(f64::INFINITY), None);
    }

    #[test]
    fn division_follows_python() {
        assert_eq!(floor_div_int(7, 2), Some(3));
        assert_eq!(floor_div_int(-7, 2), Some(-4));
        assert_eq!(floor_div_int(7, -2), Some(-4));
        assert_eq!(floor_div_int(i64::MIN, -1), None);
        assert_eq!(py_mod_int(-7, 2), Some(1));
        assert_eq!(py_mod_int(7, -2), Some(-1));
        assert_eq!(py_mod_int(i64::MIN, -1), Some(0));
        assert_eq!(py_mod_float(-7.5, 2.0), Some(0.5));
        assert_eq!(floor_div_float(-7.5, 2.0), Some(-4.0));
        assert_eq!(true_div(Num::Int(1), Num::Int(2)), Some(0.5));
        assert_eq!(true_div(Num::Int(1), Num::Int(0)), None);
        assert_eq!(true_div(Num::Int(i64::MIN), Num::Int(-1)), Some(TWO_POW_63));
        // 2^53 + 1 is not a float; its half is 2^52 + 0.5, which is.
        assert_eq!(
            true_div(Num::Int((1 << 53) + 1), Num::Int(2)),
            Some(4_503_599_627_370_496.5)
        );
    }

    use crate::tuple::Value;
    use proptest::prelude::*;
    use std::hash::{Hash, Hasher};

    fn hash_of(v: &Value) -> u64 {
        // Fixed keys: the same value hashes alike on every call.
        let mut h = std::hash::DefaultHasher::new();
        v.hash(&mut h);
        h.finish()
    }

    /// Integers near and far, floats with and without fractions, the two zeros and NaN.
    fn number() -> impl Strategy<Value = Value> {
        prop_oneof![
            any::<i64>().prop_map(Value::Int),
            (-3i64..3).prop_map(|i| Value::Int((1 << 53) + i)),
            (-1000i64..1000).prop_map(Value::Int),
            (-1000i64..1000).prop_map(|i| Value::Float(i as f64)),
            (-3i64..3).prop_map(|i| Value::Float(((1i64 << 53) + i) as f64)),
            any::<f64>().prop_map(Value::Float),
            (-1000.0f64..1000.0).prop_map(Value::Float),
            Just(Value::Float(-0.0)),
            Just(Value::Float(f64::NAN)),
            Just(Value::Float(TWO_POW_63)),
        ]
    }

    /// The order of two numbers by a long way round: integers and the floor of a float in
    /// i128 (exact for every float below 2^126), then the float's fraction.
    fn reference(a: &Value, b: &Value) -> Ordering {
        // (class, floor in i128, has a fraction, the float itself): within one floor, the
        // integer comes first and floats with a fraction follow in their own (exact) order.
        let key = |v: &Value| -> (u8, i128, bool, f64) {
            match v {
                Value::Int(i) => (0, i128::from(*i), false, 0.0),
                Value::Float(x) if x.is_nan() => (1, 0, false, 0.0),
                // Past i128: the saturated bucket, ordered within by the float itself.
                Value::Float(x) if x.abs() >= 2f64.powi(126) => {
                    (0, if *x > 0.0 { i128::MAX } else { i128::MIN }, true, *x)
                }
                Value::Float(x) if x.fract() == 0.0 => (0, *x as i128, false, 0.0),
                Value::Float(x) => (0, x.floor() as i128, true, *x),
                _ => (2, 0, false, 0.0),
            }
        };
        let (ka, kb) = (key(a), key(b));
        ka.0.cmp(&kb.0)
            .then(ka.1.cmp(&kb.1))
            .then(ka.2.cmp(&kb.2))
            .then(ka.3.partial_cmp(&kb.3).unwrap_or(Ordering::Equal))
    }

    proptest! {
        /// Keys: `==` on values is the numbers' order saying equal, equal values hash alike,
        /// and that order is the exact one.
        #[test]
        fn equality_hash_and_order_agree(a in number(), b in number()) {
            let (x, y) = (a.as_num().unwrap_or(Num::Int(0)), b.as_num().unwrap_or(Num::Int(0)));
            let order = x.order(y);
            prop_assert_eq!(order, reference(&a, &b), "{:?} vs {:?}", a, b);
            prop_assert_eq!(a == b, order.is_eq());
            if a == b {
                prop_assert_eq!(hash_of(&a), hash_of(&b));
            }
        }
    }
}
