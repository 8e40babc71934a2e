//! Float sums that do not depend on the order of their terms: `sum` and `avg` keep the exact sum
//! of the floats they add (as a few non-overlapping floats whose total is exact) and round it
//! once, correctly, when asked for their value. So a sum made in any order, or from partial sums
//! made apart and merged (panes, or partial aggregation on the sending side), gives the same
//! float to the last bit: the correctly rounded sum of the terms.
//!
//! Non-finite terms are summed apart (`inf + -inf` is NaN, in any order). A finite sum that
//! overflows the float range is infinite from then on (which infinity may then depend on the
//! order; only sums near 1.8e308 can).

use crate::tuple::Value;
use smallvec::SmallVec;

/// The exact sum of the floats added.
#[derive(Clone, Debug, Default)]
pub(crate) struct ExactSum {
    /// Non-overlapping floats in increasing magnitude whose exact total is the sum of the
    /// finite terms; rarely more than two.
    parts: SmallVec<[f64; 2]>,
    /// The sum of the non-finite terms: 0 while there is none, else ±inf or NaN.
    special: f64,
}

impl ExactSum {
    /// Add `x` exactly.
    #[inline]
    pub(crate) fn add(&mut self, x: f64) {
        if !x.is_finite() {
            self.special += x;
            return;
        }
        let mut x = x;
        let mut kept = 0;
        for j in 0..self.parts.len() {
            let mut y = self.parts[j];
            if x.abs() < y.abs() {
                std::mem::swap(&mut x, &mut y);
            }
            // `hi + lo` is exactly `x + y` (the larger first makes `lo` exact).
            let hi = x + y;
            let lo = y - (hi - x);
            if !hi.is_finite() {
                self.special += hi;
                self.parts.clear();
                return;
            }
            if lo != 0.0 {
                self.parts[kept] = lo;
                kept += 1;
            }
            x = hi;
        }
        self.parts.truncate(kept);
        self.parts.push(x);
    }

    /// Add an integer of any size exactly (in pieces of 32 bits, each exact as a float).
    pub(crate) fn add_int(&mut self, i: i128) {
        let negative = i < 0;
        let magnitude = i.unsigned_abs();
        for shift in [96, 64, 32, 0] {
            let piece = ((magnitude >> shift) & 0xffff_ffff) as f64 * 2f64.powi(shift);
            if piece != 0.0 {
                self.add(if negative { -piece } else { piece });
            }
        }
    }

    /// Add everything `other` holds.
    pub(crate) fn merge(&mut self, other: &ExactSum) {
        for &p in &other.parts {
            self.add(p);
        }
        self.special += other.special;
    }

    /// The sum, correctly rounded to a float (round half to even); 0 for no terms.
    pub(crate) fn value(&self) -> f64 {
        if self.special != 0.0 {
            return self.special;
        }
        let p = &self.parts;
        let Some(mut n) = p.len().checked_sub(1) else {
            return 0.0;
        };
        let mut hi = p[n];
        let mut lo = 0.0;
        // From the largest part down, until a part is not absorbed exactly.
        while n > 0 {
            n -= 1;
            let x = hi;
            let y = p[n];
            hi = x + y;
            lo = y - (hi - x);
            if lo != 0.0 {
                break;
            }
        }
        // A remainder of exactly half an ulp was rounded to even; the parts below it say on
        // which side of the half the exact sum lies.
        if n > 0 && ((lo < 0.0 && p[n - 1] < 0.0) || (lo > 0.0 && p[n - 1] > 0.0)) {
            let y = lo * 2.0;
            let x = hi + y;
            if y == x - hi {
                hi = x;
            }
        }
        // `+ 0.0`: a sum of negative zeros is 0, as a sum started from 0 would be.
        hi + 0.0
    }

    /// The same sum in one form for every order of its terms: its rounded value, then the
    /// rounded value of what remains, and so on (each step takes about 53 bits off).
    fn canonical(&self) -> SmallVec<[f64; 2]> {
        let mut rest = self.clone();
        let mut out = SmallVec::new();
        while out.len() < 64 {
            let hi = rest.value();
            if hi == 0.0 {
                break;
            }
            out.insert(0, hi);
            rest.add(-hi);
        }
        out
    }

    /// As a value: the float itself while it is one part (what a plain float sum saved), else
    /// `[special, part…]`, in one form for one sum.
    pub(crate) fn to_value(&self) -> Value {
        let parts = match self.special == 0.0 {
            true => self.canonical(),
            false => SmallVec::new(),
        };
        match parts.as_slice() {
            [] if self.special == 0.0 => Value::Float(0.0),
            [p] if self.special == 0.0 => Value::Float(*p),
            parts => Value::list(
                std::iter::once(self.special)
                    .chain(parts.iter().copied())
                    .map(Value::Float)
                    .collect(),
            ),
        }
    }

    /// Read back what [`ExactSum::to_value`] wrote.
    pub(crate) fn from_value(v: &Value) -> Option<ExactSum> {
        let mut sum = ExactSum::default();
        match v {
            Value::Float(f) => sum.add(*f),
            Value::Int(i) => sum.add_int(i128::from(*i)),
            Value::List(l) => {
                let (first, parts) = l.split_first()?;
                sum.special = first.as_f64()?;
                for p in parts {
                    sum.add(p.as_f64()?);
                }
            }
            _ => return None,
        }
        Some(sum)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sum_of(xs: &[f64]) -> f64 {
        let mut s = ExactSum::default();
        xs.iter().for_each(|x| s.add(*x));
        s.value()
    }

    #[test]
    fn sums_are_correctly_rounded() {
        assert_eq!(sum_of(&[0.1; 10]), 1.0);
        assert_eq!(sum_of(&[1e100, 1.0, -1e100]), 1.0);
        assert_eq!(sum_of(&[]), 0.0);
        assert_eq!(sum_of(&[-0.0]).to_bits(), 0.0f64.to_bits());
        // 2^53 + 1 + 2^-60: the half is broken upwards by the tiny part.
        let big = 2f64.powi(53);
        assert_eq!(sum_of(&[big, 1.0, 2f64.powi(-60)]), big + 2.0);
        assert_eq!(sum_of(&[big, 1.0]), big);
        assert!(sum_of(&[f64::INFINITY, f64::NEG_INFINITY, 1.0]).is_nan());
        assert_eq!(sum_of(&[f64::INFINITY, 1.0]), f64::INFINITY);
    }

    #[test]
    fn integers_of_any_size_are_added_exactly() {
        let mut s = ExactSum::default();
        s.add_int(i128::from(i64::MAX) * 4);
        s.add_int(-i128::from(i64::MAX) * 4);
        s.add(0.5);
        assert_eq!(s.value(), 0.5);
    }

    fn term() -> impl Strategy<Value = f64> {
        prop_oneof![
            (-1000i32..1000).prop_map(|i| f64::from(i) / 10.0),
            -1e6f64..1e6,
            (-1e300f64..1e300),
            (-1e-300f64..1e-300),
        ]
    }

    proptest! {
        /// Any order, any split into partial sums merged, and a save and read back give the
        /// same bits.
        #[test]
        fn order_and_merging_do_not_change_the_sum(
            xs in proptest::collection::vec(term(), 0..60),
            cut in 0usize..60,
        ) {
            let whole = sum_of(&xs);
            let mut reversed = xs.clone();
            reversed.reverse();
            prop_assert_eq!(sum_of(&reversed).to_bits(), whole.to_bits());
            let cut = cut.min(xs.len());
            let (mut a, mut b) = (ExactSum::default(), ExactSum::default());
            xs[..cut].iter().for_each(|x| a.add(*x));
            xs[cut..].iter().for_each(|x| b.add(*x));
            let b = ExactSum::from_value(&b.to_value()).expect("reads back");
            a.merge(&b);
            prop_assert_eq!(a.value().to_bits(), whole.to_bits());
        }
    }
}
