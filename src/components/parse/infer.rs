//! Numbers in text formats (csv, tsv, regex, logfmt, kv, combined): a cell written as a
//! canonical integer or decimal is a number; anything else stays the text it was. Canonical
//! means the number prints back as written (bar trailing zeros of a decimal), so ids such as
//! `02134`, `+1`, `1e5`, `0x1F`, ` 5` or `-0` stay text. Byte checks only: a cell that stays
//! text costs no allocation.

use crate::tuple::Value;

/// Most significant digits a decimal may have to become a float: beyond this a float cannot
/// hold every such decimal exactly, so it stays text.
const MAX_DECIMAL_DIGITS: usize = 15;

/// What `cell` reads as: `Some(number)` for a canonical integer or decimal, `None` for text.
pub(crate) fn number(cell: &str) -> Option<Value> {
    let b = cell.as_bytes();
    let digits = b.strip_prefix(b"-").unwrap_or(b);
    let negative = digits.len() != b.len();
    // A cell is short: a plain search beats setting up a vector one.
    let (int, frac) = match digits.iter().position(|&c| c == b'.') {
        Some(i) => (&digits[..i], Some(&digits[i + 1..])),
        None => (digits, None),
    };
    if int.is_empty() || !int.iter().all(u8::is_ascii_digit) || (int.len() > 1 && int[0] == b'0') {
        return None;
    }
    match frac {
        None => {
            if negative && int == b"0" {
                return None;
            }
            cell.parse::<i64>().ok().map(Value::Int)
        }
        Some(frac) => {
            if frac.is_empty() || !frac.iter().all(u8::is_ascii_digit) {
                return None;
            }
            let zero = int == b"0" && frac.iter().all(|&d| d == b'0');
            let significant = if int == b"0" {
                frac.len() - frac.iter().take_while(|&&d| d == b'0').count()
            } else {
                int.len() + frac.len()
            };
            if (negative && zero) || significant > MAX_DECIMAL_DIGITS {
                return None;
            }
            cell.parse::<f64>()
                .ok()
                .filter(|f| f.is_finite())
                .map(Value::Float)
        }
    }
}

/// `value` as read from a text format: a number when its text is one (see [`number`]).
#[inline]
pub(crate) fn infer(value: Value) -> Value {
    match &value {
        Value::Str(s) if may_be_number(s) => number(s).unwrap_or(value),
        _ => value,
    }
}

/// A cell's text as [`infer`] reads it, without making a text value for a number.
#[inline]
pub(crate) fn text(cell: &str) -> Value {
    match may_be_number(cell) {
        true => number(cell).unwrap_or_else(|| Value::str(cell)),
        false => Value::str(cell),
    }
}

/// Whether `cell` is short enough to be a number, and not empty.
#[inline]
fn may_be_number(cell: &str) -> bool {
    !cell.is_empty() && cell.len() <= 24
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_integers_and_decimals_are_numbers() {
        assert_eq!(number("0"), Some(Value::Int(0)));
        assert_eq!(number("42"), Some(Value::Int(42)));
        assert_eq!(number("-7"), Some(Value::Int(-7)));
        assert_eq!(number("54.1"), Some(Value::Float(54.1)));
        assert_eq!(number("-0.5"), Some(Value::Float(-0.5)));
        assert_eq!(number("0.001"), Some(Value::Float(0.001)));
        assert_eq!(number("5.10"), Some(Value::Float(5.1)));
        assert_eq!(
            number("9223372036854775807"),
            Some(Value::Int(i64::MAX)),
            "the largest integer"
        );
    }

    #[test]
    fn text_that_looks_numeric_stays_text() {
        for text in [
            "02134",
            "+1",
            "1e5",
            "0x1F",
            " 5",
            "5 ",
            "-0",
            "-0.0",
            ".5",
            "5.",
            "1,000",
            "1.2.3",
            "-",
            "",
            "9223372036854775808",
            "NaN",
            "inf",
            "00.5",
            "0.1234567890123456",
            "1234567890.123456",
        ] {
            assert_eq!(number(text), None, "{text:?} stays text");
        }
    }

    #[test]
    fn a_number_prints_back_as_written_but_for_trailing_zeros() {
        for text in ["0", "17", "-3", "54.1", "0.25", "-12.5", "123456789.123456"] {
            let mut shown = String::new();
            number(text).unwrap_or(Value::Null).write_plain(&mut shown);
            assert_eq!(shown, text);
        }
        let mut shown = String::new();
        infer(Value::str("5.10")).write_plain(&mut shown);
        assert_eq!(shown, "5.1");
    }

    use proptest::prelude::*;

    proptest! {
        /// Every integer's text reads back as that integer.
        #[test]
        fn integers_read_as_themselves(i in any::<i64>()) {
            prop_assert_eq!(number(&i.to_string()), Some(Value::Int(i)));
        }

        /// A decimal with up to 15 significant digits prints back as written, trailing zeros
        /// of its fraction (and a point with nothing after it) aside.
        #[test]
        fn decimals_print_back(int in 0u64..1_000_000, frac in "[0-9]{1,9}", neg in any::<bool>()) {
            let text = format!("{}{int}.{frac}", if neg { "-" } else { "" });
            let Some(v) = number(&text) else {
                prop_assert!(neg && int == 0 && frac.bytes().all(|d| d == b'0'));
                return Ok(());
            };
            let mut shown = String::new();
            v.write_plain(&mut shown);
            let expected = text.trim_end_matches('0').trim_end_matches('.');
            prop_assert_eq!(shown, expected);
        }
    }
}
